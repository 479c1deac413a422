-- APPLY (services/matchmaking/src/store/redis.rs)
-- KEYS: none: the keys are named from the arguments (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
--
-- ARGV: match id, TTL ms, then per write: player, key, old (empty: none), new.
local function unfollow()
  redis.call('ZREM', 'mm:follow', ARGV[1])
  redis.call('HDEL', 'mm:follow:d', ARGV[1])
end
if redis.call('EXISTS', 'mm:rated:' .. ARGV[1]) == 1 then unfollow() return 'already' end
for i = 3, #ARGV, 4 do
  local cur = redis.call('HGET', 'mm:r:' .. ARGV[i], ARGV[i + 1]) or ''
  if cur ~= ARGV[i + 2] then return 'conflict' end
end
for i = 3, #ARGV, 4 do redis.call('HSET', 'mm:r:' .. ARGV[i], ARGV[i + 1], ARGV[i + 3]) end
redis.call('SET', 'mm:rated:' .. ARGV[1], '1', 'PX', ARGV[2])
unfollow()
return 'done'
