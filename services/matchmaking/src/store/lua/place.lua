-- PLACE (services/matchmaking/src/store/redis.rs; arguments by name: `PLACE_ARGS`)
-- KEYS: only two routing keys, never there (they name the store's slot on a cluster): the keys are
-- named from the arguments, after the prefix MM (`mm:`, or `mm:{mm}:` on a cluster) (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
-- A: pool (its name), player, session (the stream's place), lease_ms (the renewed lease).
local P, player = A.pool, A.player
local who = redis.call('HGET', MM .. 'who', player)
if not who then return {'gone'} end
local w = split(who, F)
-- An offer's accept took the player out of the pool: their stream waits for its outcome.
if w[1] == 'o' then
  if redis.call('HGET', MM .. 'of:' .. w[2], 's') == 'accepting' or tonumber(w[3] or '0') > tnow() then
    return {'matching'}
  end
  return {'gone'}
end
if w[2] ~= P then return {'gone'} end
if w[1] == 'm' then return {'matching'} end
if w[3] ~= A.session then return {'gone'} end
local rank = redis.call('ZRANK', pk(P, 'j'), player)
if not rank then return {'gone'} end
redis.call('ZADD', pk(P, 'l'), 'XX', fmt(tnow() + tonumber(A.lease_ms)), player)
return {'waiting', rank + 1, redis.call('ZCARD', pk(P, 'j')),
  tonumber(redis.call('HGET', pk(P, 'w'), player) or '0'),
  redis.call('HGET', pk(P, 'm'), 'mean') or '0'}
