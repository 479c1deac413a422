-- LEAVE (services/matchmaking/src/store/redis.rs)
-- KEYS: none: the keys are named from the arguments (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
--
-- ARGV: player, session (empty: any). A player being matched is marked gone instead: they are
-- not put back into the pool if the match cannot be created.
local who = redis.call('HGET', 'mm:who', ARGV[1])
if not who then return 0 end
local w = split(who, F)
if w[1] == 'm' then
  redis.call('HSET', 'mm:who', ARGV[1], 'm' .. F .. w[2] .. F .. 'gone')
  return 0
end
if ARGV[2] ~= '' and w[3] ~= ARGV[2] then return 0 end
drop(w[2], ARGV[1])
redis.call('HDEL', 'mm:who', ARGV[1])
return 1
