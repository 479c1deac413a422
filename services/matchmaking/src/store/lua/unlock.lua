-- UNLOCK (services/matchmaking/src/store/redis.rs)
-- KEYS: none: the keys are named from the arguments (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
--
-- ARGV: pool, fence.
local M = pk(ARGV[1], 'm')
if redis.call('HGET', M, 'fence') == ARGV[2] then redis.call('HSET', M, 'until', '0') end
return 1
