-- RENEW_FOLLOWS (services/matchmaking/src/store/redis.rs)
-- KEYS: none: the keys are named from the arguments (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
--
-- ARGV: lease ms, match ids.
local deadline = fmt(tnow() + tonumber(ARGV[1]))
for i = 2, #ARGV do redis.call('ZADD', 'mm:follow', 'XX', deadline, ARGV[i]) end
return 1
