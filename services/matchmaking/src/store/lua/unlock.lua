-- UNLOCK (services/matchmaking/src/store/redis.rs; arguments by name: `UNLOCK_ARGS`)
-- KEYS: two routing keys (see PRELUDE); runs in the pool's slot.
-- A: pool (its name), fence (the fencing number the lock was taken with).
local M = pk(A.pool, 'm')
if redis.call('HGET', M, 'fence') == A.fence then redis.call('HSET', M, 'until', '0') end
return 1
