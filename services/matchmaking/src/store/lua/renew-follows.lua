-- RENEW_FOLLOWS (services/matchmaking/src/store/redis.rs; arguments by name: `RENEW_FOLLOWS_ARGS`)
-- KEYS: none: the keys are named from the arguments (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
-- A: lease_ms (the renewed lease), match_ids (the matches this replica follows; any number).
local deadline = fmt(tnow() + tonumber(A.lease_ms))
for _, id in ipairs(A.match_ids) do redis.call('ZADD', 'mm:follow', 'XX', deadline, id) end
return 1
