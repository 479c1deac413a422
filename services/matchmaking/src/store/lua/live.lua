-- LIVE (services/matchmaking/src/store/redis.rs; arguments by name: `LIVE_ARGS`)
-- KEYS: two routing keys (see PRELUDE); runs in the store's slot (MM), after WAITING.
-- A: pool (its name), places (packed: player and session, each, as WAITING read them).
--
-- The ghosts among the places: players whose state no longer says they wait in the pool under
-- that session (a leave, a join elsewhere or an offer's accept whose step in the pool has not
-- run, failed, or never will). Returns their players and sessions, packed; the wave drops them
-- (DROP) and pairs the others.
local t = unpk(A.places)
local ghosts = {}
for i = 1, #t, 2 do
  if redis.call('HGET', MM .. 'who', t[i]) ~= 'w' .. F .. A.pool .. F .. t[i + 1] then
    ghosts[#ghosts + 1] = t[i]
    ghosts[#ghosts + 1] = t[i + 1]
  end
end
return pack(ghosts)
