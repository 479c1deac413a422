-- LOCK (services/matchmaking/src/store/redis.rs; arguments by name: `LOCK_ARGS`)
-- KEYS: two routing keys (see PRELUDE); runs in the pool's slot.
-- A: pool (its name), lease_ms (how long the lock holds).
--
-- The new fencing number, or nil while the lock is held. The pool's lock hash lives a day after
-- its last wave (pairing ids carry a random part, so a fencing number that starts again is
-- harmless).
local M = pk(A.pool, 'm')
local now = tnow()
if tonumber(redis.call('HGET', M, 'until') or '0') > now then return false end
local fence = redis.call('HINCRBY', M, 'fence', 1)
redis.call('HSET', M, 'until', fmt(now + tonumber(A.lease_ms)))
redis.call('PEXPIRE', M, 86400000)
return fence
