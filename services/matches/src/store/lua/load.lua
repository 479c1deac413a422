-- LOAD (services/matches/src/store/redis.rs)
-- KEYS: the match's six keys (`keys(id)`): 1–3 a bughouse match's state hash, events list and done hash; 4–6 a single board's (the script uses whichever exists).
-- ARGV: none.
local S, E, D = pick()
if not S then return {'missing'} end
return state(S, E, 'ok')
