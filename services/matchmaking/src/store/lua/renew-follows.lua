-- RENEW_FOLLOWS (services/matchmaking/src/store/redis.rs; arguments by name: `RENEW_FOLLOWS_ARGS`)
-- KEYS: only two routing keys, never there (they name the store's slot on a cluster): the keys are
-- named from the arguments, after the prefix MM (`mm:`, or `mm:{mm}:` on a cluster) (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
-- A: lease_ms (the renewed lease), match_ids (the matches this replica follows; any number).
local deadline = fmt(tnow() + tonumber(A.lease_ms))
for _, id in ipairs(A.match_ids) do redis.call('ZADD', MM .. 'follow', 'XX', deadline, id) end
return 1
