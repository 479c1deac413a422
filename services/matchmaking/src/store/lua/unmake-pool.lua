-- UNMAKE_POOL (services/matchmaking/src/store/redis.rs; arguments by name: `UNMAKE_POOL_ARGS`)
-- KEYS: two routing keys (see PRELUDE); runs in the pool's slot, after UNMAKE (or after a CLAIM
-- answered `void`).
-- A: pool (its name), pairing (its id), back (packed: the players who go back).
--
-- The pairing is no longer being made; the players in `back` get their places again (join time,
-- missed waves, session, lease), the others' are dropped. Returns 1, or 0 when it was finished
-- before.
local P = A.pool
local rec = redis.call('HGET', pk(P, 'k'), A.pairing)
if not rec then return 0 end
redis.call('HDEL', pk(P, 'k'), A.pairing)
local back = {}
for _, player in ipairs(unpk(A.back)) do back[player] = true end
local r = unpk(rec)
for i = 2, #r, 5 do
  local player = r[i]
  if redis.call('HGET', pk(P, 'km'), player) == A.pairing then redis.call('HDEL', pk(P, 'km'), player) end
  -- A newer place of the same player (they joined again meanwhile) is left as it is.
  if back[player] and redis.call('HEXISTS', pk(P, 'e'), player) == 0 then
    redis.call('HSET', pk(P, 'e'), player, r[i + 1])
    redis.call('ZADD', pk(P, 'l'), r[i + 4], player)
    redis.call('ZADD', pk(P, 'j'), r[i + 2], player)
    redis.call('HSET', pk(P, 'w'), player, r[i + 3])
  end
end
return 1
