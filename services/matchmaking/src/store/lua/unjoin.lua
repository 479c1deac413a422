-- UNJOIN (services/matchmaking/src/store/redis.rs; arguments by name: `UNJOIN_ARGS`)
-- KEYS: two routing keys (see PRELUDE); runs in the store's slot (MM).
-- A: player, now (the state JOIN wrote).
--
-- A join refused by its pool (full): the player's state is forgotten, if it is still the one
-- the join wrote (the place they held elsewhere is given up, as JOIN already replaced it; the
-- caller drops it there). Returns 1 when it was.
if redis.call('HGET', MM .. 'who', A.player) ~= A.now then return 0 end
redis.call('HDEL', MM .. 'who', A.player)
return 1
