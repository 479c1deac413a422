-- REFUSE (services/analysis/src/batch/redis/mod.rs; arguments by name: `REFUSE_ARGS`)
-- KEYS: the group's (see PRELUDE); key names below are relative to its prefix Q.
-- A: worker (the remote worker), refusal (the refusal's id).
--
-- Refuses the worker for work (`<Q>refusals`, field the worker, value the refusal id) and ends
-- its live leases, their games back in the work stream. Returns how many leases were ended.
redis.call('HSET', Q .. 'refusals', A.worker, A.refusal)
local n = 0
for _, id in ipairs(redis.call('SMEMBERS', Q .. 'wl:' .. A.worker)) do
  n = n + release(id)
end
redis.call('DEL', Q .. 'wl:' .. A.worker)
return n
