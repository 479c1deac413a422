-- PRESS_CHECK (services/matches/src/store/redis.rs)
-- KEYS: the match's six keys (`keys(id)`): 1–3 a bughouse match's state hash, events list and done hash; 4–6 a single board's (the script uses whichever exists).
--
-- Runs the press arithmetic alone (ARGV: the 13 plan values, then `now`), for the test that
-- checks it against the core's [`PressPlan::apply`].
local r = press(ARGV, tonumber(ARGV[14]))
if not r then return {'late'} end
local out = {}
for i = 1, #r do out[i] = fmt(r[i]) end
return out
