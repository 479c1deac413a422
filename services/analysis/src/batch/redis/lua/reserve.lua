-- RESERVE (services/analysis/src/batch/redis/mod.rs; arguments by name: `RESERVE_ARGS`)
-- KEYS: a cluster's ledger of jobs, in a slot of its own: the job ids by expiry (a sorted set,
-- `an:{an}:jobs`) and the positions each holds (a hash, `an:{an}:held`).
-- A: id (the new job's), positions (its positions), ttl (ms), max_jobs, max_positions.
--
-- Reserves a new job's place under the caps before the job is made in its slot group: `ok`
-- (also when the id holds its place already: a retry), `jobs` (the ledger holds max_jobs), or
-- `positions` with the count held (they would not fit). Entries past their time are settled by
-- the caller first (SETTLE), never dropped here: a job's expiry moves on in its own group, which
-- this script cannot read.
if redis.call('ZSCORE', KEYS[1], A.id) then return {'ok', ''} end
if redis.call('ZCARD', KEYS[1]) >= tonumber(A.max_jobs) then return {'jobs', ''} end
local held = 0
for _, n in ipairs(redis.call('HVALS', KEYS[2])) do held = held + tonumber(n) end
if held + tonumber(A.positions) > tonumber(A.max_positions) then return {'positions', tostring(held)} end
redis.call('ZADD', KEYS[1], tnow() + tonumber(A.ttl), A.id)
redis.call('HSET', KEYS[2], A.id, A.positions)
return {'ok', ''}
