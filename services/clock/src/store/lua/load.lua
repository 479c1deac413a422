-- LOAD (services/clock/src/store/redis.rs)
-- KEYS: 1 the clock's state hash, 2 its events list (`keys(id)`).
-- ARGV: none.
local S, E = KEYS[1], KEYS[2]
if redis.call('EXISTS', S) == 0 then return {'missing'} end
return state(S, E, 'ok')
