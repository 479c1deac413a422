-- CLAIM_FOLLOWS (services/matchmaking/src/store/redis.rs; arguments by name: `CLAIM_FOLLOWS_ARGS`)
-- KEYS: none: the keys are named from the arguments (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
-- A: lease_ms (how long a claim holds), max (matches claimed at most).
--
-- Returns match id, record for each claimed match.
local now = tnow()
local out = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', 'mm:follow', '-inf', fmt(now), 'LIMIT', 0, tonumber(A.max))) do
  redis.call('ZADD', 'mm:follow', fmt(now + tonumber(A.lease_ms)), id)
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGET', 'mm:follow:d', id) or ''
end
return out
