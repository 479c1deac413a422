-- WORK_RECORD (services/analysis/src/batch/redis/mod.rs; arguments by name: `WORK_RECORD_ARGS`)
-- KEYS: the group's (see PRELUDE); key names below are relative to its prefix Q.
-- A: lease (its id), worker (the remote worker submitting), positions (of the game), result
-- (the game's result, checked and encoded).
--
-- Records a remote worker's result once. `unknown`: no such lease of this worker; `refused`:
-- the worker is refused for work (checked here, at the moment of recording, so that a result
-- racing its worker's refusal is not written); `taken`: it expired and another worker took its
-- game, or its job was cancelled or is gone; `duplicate`: its result, or another's for the game,
-- was recorded before (nothing changes); `recorded`. A lease that expired whose game waits in
-- the stream undelivered is still accepted (the waiting entry is deleted).
local L = Q .. 'lease:' .. A.lease
local h = redis.call('HMGET', L, 'job', 'game', 'worker', 'state', 'requeued')
if not h[1] or h[3] ~= A.worker then return 'unknown' end
if h[4] == 'accepted' then return 'duplicate' end
if redis.call('HEXISTS', Q .. 'refusals', A.worker) == 1 then return 'refused' end
local J = Q .. 'j:' .. h[1]
if redis.call('EXISTS', J) == 0 or redis.call('HGET', J, 'cancelled') == '1' then return 'taken' end
if h[4] == 'expired' then
  if redis.call('HEXISTS', J .. ':r', h[2]) == 1 then return 'taken' end
  local e = h[5]
  if not e or e == '' then return 'taken' end
  if #redis.call('XRANGE', WORK, e, e) == 0 then return 'taken' end
  if #redis.call('XPENDING', WORK, GROUP, e, e, 1) > 0 then return 'taken' end
  redis.call('XDEL', WORK, e)
end
local fresh = store(h[1], h[2], tonumber(A.positions), A.result)
redis.call('HSET', L, 'state', 'accepted')
redis.call('ZREM', Q .. 'leases', A.lease)
redis.call('SREM', Q .. 'wl:' .. A.worker, A.lease)
if fresh == 1 then return 'recorded' end
return 'duplicate'
