-- CLAIM_FOLLOWS (services/matchmaking/src/store/redis.rs; arguments by name: `CLAIM_FOLLOWS_ARGS`)
-- KEYS: only two routing keys, never there (they name the store's slot on a cluster): the keys are
-- named from the arguments, after the prefix MM (`mm:`, or `mm:{mm}:` on a cluster) (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
-- A: lease_ms (how long a claim holds), max (matches claimed at most).
--
-- Returns match id, record for each claimed match.
local now = tnow()
local out = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', MM .. 'follow', '-inf', fmt(now), 'LIMIT', 0, tonumber(A.max))) do
  redis.call('ZADD', MM .. 'follow', fmt(now + tonumber(A.lease_ms)), id)
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGET', MM .. 'follow:d', id) or ''
end
return out
