-- MATCHED_POOL (services/matchmaking/src/store/redis.rs; arguments by name: `MATCHED_POOL_ARGS`)
-- KEYS: two routing keys (see PRELUDE); runs in the pool's slot, after MATCHED.
-- A: pool (its name), pairing (its id).
--
-- The pairing is no longer being made, and its players' waits move the pool's mean wait.
-- Returns 1, or 0 when it was finished before.
local P = A.pool
local rec = redis.call('HGET', pk(P, 'k'), A.pairing)
if not rec then return 0 end
redis.call('HDEL', pk(P, 'k'), A.pairing)
local now = tnow()
local r = unpk(rec)
local M = pk(P, 'm')
local mean = tonumber(redis.call('HGET', M, 'mean') or '0')
for i = 2, #r, 5 do
  local wait = math.max(0, now - tonumber(r[i + 2]))
  if mean == 0 then mean = wait else mean = mean - math.floor(mean / 8) + math.floor(wait / 8) end
  if redis.call('HGET', pk(P, 'km'), r[i]) == A.pairing then redis.call('HDEL', pk(P, 'km'), r[i]) end
end
redis.call('HSET', M, 'mean', fmt(mean))
return 1
