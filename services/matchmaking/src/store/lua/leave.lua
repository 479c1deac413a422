-- LEAVE (services/matchmaking/src/store/redis.rs; arguments by name: `LEAVE_ARGS`)
-- KEYS: only two routing keys, never there (they name the store's slot on a cluster): the keys are
-- named from the arguments, after the prefix MM (`mm:`, or `mm:{mm}:` on a cluster) (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
-- A: player, session (the place that leaves; empty: any).
--
-- A player being matched is marked gone instead: they are not put back into the pool if the
-- match cannot be created.
local who = redis.call('HGET', MM .. 'who', A.player)
if not who then return 0 end
local w = split(who, F)
-- An offer's accept under way: it took the player out of the pool already.
if w[1] == 'o' then return 0 end
if w[1] == 'm' then
  redis.call('HSET', MM .. 'who', A.player, 'm' .. F .. w[2] .. F .. 'gone')
  return 0
end
if A.session ~= '' and w[3] ~= A.session then return 0 end
drop(w[2], A.player)
redis.call('HDEL', MM .. 'who', A.player)
return 1
