-- CANCEL (services/analysis/src/batch/redis/mod.rs; arguments by name: `CANCEL_ARGS`)
-- KEYS: the group's (see PRELUDE); key names below are relative to its prefix Q.
-- A: job (its id), owner (the caller's digest in hex).
--
-- 1 when it was cancelled now, 0 when it had ended or was cancelled before, -1 when it is
-- unknown or another owner's.
local J = Q .. 'j:' .. A.job
if redis.call('HGET', J, 'owner') ~= A.owner then return -1 end
local h = redis.call('HMGET', J, 'games', 'done', 'cancelled')
if tonumber(h[2]) >= tonumber(h[1]) or h[3] == '1' then return 0 end
redis.call('HSET', J, 'cancelled', 1)
renew(A.job)
return 1
