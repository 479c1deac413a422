-- CREATE (services/clock/src/store/redis.rs; arguments by name: `CREATE_ARGS`)
-- KEYS: 1 the clock's state hash, 2 its events list (`keys(id)`).
-- A: ttl (ms), fields (the record's fields: field, value, …).
local S, E = KEYS[1], KEYS[2]
if redis.call('EXISTS', S) == 1 then return state(S, E, 'exists') end
redis.call('DEL', E)
redis.call('HSET', S, unpack(A.fields))
redis.call('PEXPIRE', S, A.ttl)
index(S, ID)
return state(S, E, 'created')
