-- SUBMIT (services/analysis/src/batch/redis/mod.rs; arguments by name: `SUBMIT_ARGS`)
-- KEYS: the group's (see PRELUDE); key names below are relative to its prefix Q.
-- A: rid (the request key), fp (the fingerprint, 16 hex digits), id (the new job's id, `job-` and
-- 32 hex digits drawn by the caller from the OS's random source; used only for a new job: a
-- retry under a known request id answers the stored id, whatever it was), games, positions, ttl (ms),
-- max_jobs, max_positions, depth, nodes (the per-ply limit: one of them 0), hash (MiB), owner
-- (the caller's digest in hex), items (the work items, one per game in order, as a packed list:
-- `unpk`, so that a job of any number of games fits), trace (the `traceparent` of the call, or
-- empty: the workers continue its trace), engine (the engine the job asked for, by the server's
-- name; empty: the built-in one), ledger (`1` on a cluster: the caps are a ledger's, see
-- RESERVE), reserved (with the ledger: `1` when the job's place is reserved there; else a new
-- job is not made and the answer is `unreserved`).
--
-- The caps (max_jobs, max_positions) are checked here on one Redis, where this group is the only
-- one; on a cluster the ledger checks them before the job is made.
-- The job's request id known under this very id is this call's own job, made by an earlier
-- run of the same call whose reply was lost: `new`, as the first run answered.
-- Checks come first: a refused job writes nothing.
local rid, fp = A.rid, A.fp
local known = redis.call('GET', Q .. 'rid:' .. rid)
if known and known == A.id and redis.call('HGET', Q .. 'j:' .. known, 'fp') == fp then
  return {'new', known}
end
if known and redis.call('EXISTS', Q .. 'j:' .. known) == 1 then
  if redis.call('HGET', Q .. 'j:' .. known, 'fp') ~= fp then return {'conflict', known} end
  return {'duplicate', known}
end
local now = tnow()
for _, old in ipairs(redis.call('ZRANGEBYSCORE', Q .. 'jobs', '-inf', now)) do
  redis.call('HDEL', Q .. 'held', old)
end
redis.call('ZREMRANGEBYSCORE', Q .. 'jobs', '-inf', now)
if A.ledger ~= '1' then
  if redis.call('ZCARD', Q .. 'jobs') >= tonumber(A.max_jobs) then return {'jobs', ''} end
  local held = 0
  for _, n in ipairs(redis.call('HVALS', Q .. 'held')) do held = held + tonumber(n) end
  if held + tonumber(A.positions) > tonumber(A.max_positions) then return {'positions', tostring(held)} end
elseif A.reserved ~= '1' then
  return {'unreserved', ''}
end
local id = A.id
local J = Q .. 'j:' .. id
-- 128 random bits never meet an existing job; should they, nothing is written.
if redis.call('EXISTS', J) == 1 then return {'taken', id} end
redis.call('HSET', J, 'rid', rid, 'fp', fp, 'games', A.games, 'positions', A.positions, 'done', 0,
  'pos', 0, 'cancelled', 0, 'started', 0, 'ttl', A.ttl, 'depth', A.depth, 'nodes', A.nodes,
  'hash', A.hash, 'owner', A.owner, 'trace', A.trace or '', 'engine', A.engine or '')
redis.call('SET', Q .. 'rid:' .. rid, id)
redis.call('HSET', Q .. 'held', id, A.positions)
renew(id)
for i, item in ipairs(unpk(A.items)) do
  redis.call('XADD', WORK, '*', 'job', id, 'game', tostring(i - 1), 'item', item)
end
return {'new', id}
