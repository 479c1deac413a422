-- CREATE (services/clock/src/store/redis.rs)
-- KEYS: 1 the clock's state hash, 2 its events list (`keys(id)`).
--
-- ARGV: TTL ms, then field, value, ….
local S, E = KEYS[1], KEYS[2]
if redis.call('EXISTS', S) == 1 then return state(S, E, 'exists') end
redis.call('DEL', E)
redis.call('HSET', S, unpack(ARGV, 2))
redis.call('PEXPIRE', S, ARGV[1])
index(S, ID)
return state(S, E, 'created')
