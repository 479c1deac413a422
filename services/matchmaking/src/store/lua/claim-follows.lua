-- CLAIM_FOLLOWS (services/matchmaking/src/store/redis.rs)
-- KEYS: none: the keys are named from the arguments (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
--
-- ARGV: lease ms, max. Returns match id, record for each claimed match.
local now = tnow()
local out = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', 'mm:follow', '-inf', fmt(now), 'LIMIT', 0, tonumber(ARGV[2]))) do
  redis.call('ZADD', 'mm:follow', fmt(now + tonumber(ARGV[1])), id)
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGET', 'mm:follow:d', id) or ''
end
return out
