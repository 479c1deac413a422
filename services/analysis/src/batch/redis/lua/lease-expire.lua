-- LEASE_EXPIRE (services/analysis/src/batch/redis/mod.rs; arguments by name: `LEASE_EXPIRE_ARGS`)
-- KEYS: the group's (see PRELUDE); key names below are relative to its prefix Q.
-- A: limit (the most leases ended by one call).
--
-- Ends the remote leases past their expiry (by Redis's clock), their games back in the work
-- stream. Returns how many were ended.
local n = 0
for _, id in ipairs(redis.call('ZRANGEBYSCORE', Q .. 'leases', '-inf', tnow(), 'LIMIT', 0, tonumber(A.limit))) do
  n = n + release(id)
end
return n
