-- SUBMIT (services/analysis/src/batch/redis/mod.rs)
-- KEYS: none: the keys are named from the job id in the arguments (`an:j:<id>`, …) and the stream names.
--
-- ARGV: request key, fingerprint, games, positions, ttl ms, max jobs, max positions, depth,
-- nodes, hash MiB, owner, then one item per game. Checks come first: a refused job writes
-- nothing.
local rid, fp = ARGV[1], ARGV[2]
local known = redis.call('GET', 'an:rid:' .. rid)
if known and redis.call('EXISTS', 'an:j:' .. known) == 1 then
  if redis.call('HGET', 'an:j:' .. known, 'fp') ~= fp then return {'conflict', known} end
  return {'duplicate', known}
end
local now = now_ms()
for _, old in ipairs(redis.call('ZRANGEBYSCORE', 'an:jobs', '-inf', now)) do
  redis.call('HDEL', 'an:held', old)
end
redis.call('ZREMRANGEBYSCORE', 'an:jobs', '-inf', now)
if redis.call('ZCARD', 'an:jobs') >= tonumber(ARGV[6]) then return {'jobs', ''} end
local held = 0
for _, n in ipairs(redis.call('HVALS', 'an:held')) do held = held + tonumber(n) end
if held + tonumber(ARGV[4]) > tonumber(ARGV[7]) then return {'positions', tostring(held)} end
local id = 'job-' .. fp .. '-' .. redis.call('INCR', 'an:seq')
local J = 'an:j:' .. id
redis.call('HSET', J, 'rid', rid, 'fp', fp, 'games', ARGV[3], 'positions', ARGV[4], 'done', 0,
  'pos', 0, 'cancelled', 0, 'started', 0, 'ttl', ARGV[5], 'depth', ARGV[8], 'nodes', ARGV[9],
  'hash', ARGV[10], 'owner', ARGV[11])
redis.call('SET', 'an:rid:' .. rid, id)
redis.call('HSET', 'an:held', id, ARGV[4])
renew(id)
for i = 12, #ARGV do
  redis.call('XADD', WORK, '*', 'job', id, 'game', tostring(i - 12), 'item', ARGV[i])
end
return {'new', id}
