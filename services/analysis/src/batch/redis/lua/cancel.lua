-- CANCEL (services/analysis/src/batch/redis/mod.rs; arguments by name: `CANCEL_ARGS`)
-- KEYS: none: the keys are named from the job id in the arguments (`an:j:<id>`, …) and the stream names.
-- A: job (its id), owner (the caller's digest in hex).
--
-- 1 when it was cancelled now, 0 when it had ended or was cancelled before, -1 when it is
-- unknown or another owner's.
local J = 'an:j:' .. A.job
if redis.call('HGET', J, 'owner') ~= A.owner then return -1 end
local h = redis.call('HMGET', J, 'games', 'done', 'cancelled')
if tonumber(h[2]) >= tonumber(h[1]) or h[3] == '1' then return 0 end
redis.call('HSET', J, 'cancelled', 1)
renew(A.job)
return 1
