-- JOIN (services/matchmaking/src/store/redis.rs; arguments by name: `JOIN_ARGS`)
-- KEYS: two routing keys (see PRELUDE); runs in the store's slot (MM), the first of a join's
-- steps: then JOIN_POOL in the pool's slot (and UNJOIN here when the pool is full), then DROP
-- of the old place in its pool's slot.
-- A: pool (its name), player, session (the new place's), max_pools (pools with players).
--
-- Refused (`found`, `matching`, `pools`) before anything changes; `matching` by a pool's pairing
-- comes with the player's state (the caller looks whether the pairing still exists: UNSTICK). Else the player's state says
-- they wait in the pool under the new session, the pool is listed, and the answer is `ok`, the
-- state before (empty when none) and the pool and session of the place to give up (both empty
-- when none, or when the place is in this pool: JOIN_POOL keeps its join time).
local P, player = A.pool, A.player
if redis.call('HLEN', MM .. 'found:' .. player) > 0 then return {'found'} end
local now = tnow()
local who = redis.call('HGET', MM .. 'who', player)
local old, old_session = nil, ''
if who then
  local w = split(who, F)
  if w[1] == 'm' then return {'matching', who} end
  -- `o`: an offer's accept under way (see OFFERS): while the offer is accepting, else until the
  -- deadline.
  if w[1] == 'o' then
    if redis.call('HGET', MM .. 'of:' .. w[2], 's') == 'accepting' or tonumber(w[3] or '0') > now then
      return {'matching'}
    end
  else
    old, old_session = w[2], w[3] or ''
  end
end
if old ~= P and redis.call('SISMEMBER', MM .. 'pools', P) == 0
  and redis.call('SCARD', MM .. 'pools') >= tonumber(A.max_pools) then
  return {'pools'}
end
redis.call('HSET', MM .. 'who', player, 'w' .. F .. P .. F .. A.session)
redis.call('SADD', MM .. 'pools', P)
if old == P or not old then return {'ok', who or '', '', ''} end
return {'ok', who, old, old_session}
