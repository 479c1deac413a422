-- CLAIM (services/clocked/src/lua.rs): claims entries of the deadline index due by
-- now + ahead, earliest first. Needs BASICS (tnow, fmt).
-- KEYS: 1 the deadline index.
-- ARGV: 1 lease (ms, counted from each entry's time, or now if later), 2 max entries, 3 ahead (ms).
-- Returns {now, id, at, id, at, …}.
local now = tnow()
local lease = tonumber(ARGV[1])
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now + tonumber(ARGV[3]), 'WITHSCORES',
  'LIMIT', 0, tonumber(ARGV[2]))
local out = {fmt(now)}
for i = 1, #due, 2 do
  local at = tonumber(due[i + 1])
  redis.call('ZADD', KEYS[1], math.max(at, now) + lease, due[i])
  out[#out + 1] = due[i]
  out[#out + 1] = fmt(at)
end
return out
