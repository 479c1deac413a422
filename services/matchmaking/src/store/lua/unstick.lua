-- UNSTICK (services/matchmaking/src/store/redis.rs; arguments by name: `UNSTICK_ARGS`)
-- KEYS: two routing keys (see PRELUDE); runs in the store's slot (MM).
-- A: player, mark (their state as JOIN answered it: being matched by a pool's pairing),
-- pairing (its id; empty for a mark of the older form, without one).
--
-- The pairing is no longer in its pool's slot (the caller looked): its pool's keys were lost
-- (a failover that lost writes of the pool's primary, or keys of an older layout), or it was
-- finished. Finished, the mark would have changed first (UNMAKE, MATCHED run here before their
-- pool steps), so a mark still the same, with no recorded match, is an orphan: forgotten.
-- Returns 1 when it was.
if redis.call('HGET', MM .. 'who', A.player) ~= A.mark then return 0 end
if A.pairing ~= '' and redis.call('EXISTS', MM .. 'made:' .. A.pairing) == 1 then return 0 end
redis.call('HDEL', MM .. 'who', A.player)
return 1
