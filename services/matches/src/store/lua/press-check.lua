-- PRESS_CHECK (services/matches/src/store/redis.rs; arguments by name: `PRESS_CHECK_ARGS`)
-- KEYS: none.
--
-- Runs the press arithmetic alone (A: plan, the 13 plan values; now), for the test that checks
-- it against the core's [`PressPlan::apply`].
local r = press(A.plan, tonumber(A.now))
if not r then return {'late'} end
local out = {}
for i = 1, #r do out[i] = fmt(r[i]) end
return out
