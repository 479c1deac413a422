-- REFUSE (services/analysis/src/batch/redis/mod.rs; arguments by name: `REFUSE_ARGS`)
-- KEYS: none: the keys are named from the arguments (`an:wl:<worker>`, …).
-- A: worker (the remote worker), refusal (the refusal's id).
--
-- Refuses the worker for work (`an:refusals`, field the worker, value the refusal id) and ends
-- its live leases, their games back in the work stream. Returns how many leases were ended.
redis.call('HSET', 'an:refusals', A.worker, A.refusal)
local n = 0
for _, id in ipairs(redis.call('SMEMBERS', 'an:wl:' .. A.worker)) do
  n = n + release(id)
end
redis.call('DEL', 'an:wl:' .. A.worker)
return n
