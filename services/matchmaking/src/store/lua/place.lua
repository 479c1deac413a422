-- PLACE (services/matchmaking/src/store/redis.rs; arguments by name: `PLACE_ARGS`)
-- KEYS: two routing keys (see PRELUDE); runs in the pool's slot.
-- A: pool (its name), player, session (the stream's place), lease_ms (the renewed lease).
--
-- `waiting` and the standing (the lease renewed) while the place is the session's; `matching`
-- while a pairing of the pool is being made for the player; else `gone` (the caller then asks
-- PLACE_WHO whether an offer's accept took the player).
local P, player = A.pool, A.player
local rec = redis.call('HGET', pk(P, 'e'), player)
if not rec then
  if redis.call('HEXISTS', pk(P, 'km'), player) == 1 then return {'matching'} end
  return {'gone'}
end
if session_of(rec) ~= A.session then return {'gone'} end
local rank = redis.call('ZRANK', pk(P, 'j'), player)
if not rank then return {'gone'} end
redis.call('ZADD', pk(P, 'l'), 'XX', fmt(tnow() + tonumber(A.lease_ms)), player)
return {'waiting', rank + 1, redis.call('ZCARD', pk(P, 'j')),
  tonumber(redis.call('HGET', pk(P, 'w'), player) or '0'),
  redis.call('HGET', pk(P, 'm'), 'mean') or '0'}
