-- UNLOCK (services/matchmaking/src/store/redis.rs; arguments by name: `UNLOCK_ARGS`)
-- KEYS: only two routing keys, never there (they name the store's slot on a cluster): the keys are
-- named from the arguments, after the prefix MM (`mm:`, or `mm:{mm}:` on a cluster) (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
-- A: pool (its name), fence (the fencing number the lock was taken with).
local M = pk(A.pool, 'm')
if redis.call('HGET', M, 'fence') == A.fence then redis.call('HSET', M, 'until', '0') end
return 1
