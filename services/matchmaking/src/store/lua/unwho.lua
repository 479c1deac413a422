-- UNWHO (services/matchmaking/src/store/redis.rs; arguments by name: `UNWHO_ARGS`)
-- KEYS: two routing keys (see PRELUDE); runs in the store's slot (MM).
-- A: pool (its name), places (packed: player and session, each: places the pool dropped).
--
-- Forgets each player's state while it still says they wait in the pool under that session.
local t = unpk(A.places)
for i = 1, #t, 2 do
  if redis.call('HGET', MM .. 'who', t[i]) == 'w' .. F .. A.pool .. F .. t[i + 1] then
    redis.call('HDEL', MM .. 'who', t[i])
  end
end
return 1
