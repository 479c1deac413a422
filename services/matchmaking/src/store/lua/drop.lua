-- DROP (services/matchmaking/src/store/redis.rs; arguments by name: `DROP_ARGS`)
-- KEYS: two routing keys (see PRELUDE); runs in the pool's slot.
-- A: pool (its name), places (packed: player and session, each; an empty session: any).
--
-- Takes each player's place out of the pool when it is that session's (a join elsewhere, a
-- leave, an offer's accept: their state in MM changed first; or a place LIVE found to be a
-- ghost). Returns how many it took.
local t = unpk(A.places)
local n = 0
for i = 1, #t, 2 do
  local rec = redis.call('HGET', pk(A.pool, 'e'), t[i])
  if rec and (t[i + 1] == '' or session_of(rec) == t[i + 1]) then
    drop(A.pool, t[i])
    n = n + 1
  end
end
return n
