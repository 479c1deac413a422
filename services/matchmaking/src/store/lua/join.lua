-- JOIN (services/matchmaking/src/store/redis.rs; arguments by name: `JOIN_ARGS`)
-- KEYS: only two routing keys, never there (they name the store's slot on a cluster): the keys are
-- named from the arguments, after the prefix MM (`mm:`, or `mm:{mm}:` on a cluster) (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
-- A: pool (its name), player, session (the new place's), record (the entry record), lease_ms
-- (the place's lease), max_waiting (players one pool holds), max_pools (pools with players).
--
-- The limits are checked first: a refused join changes nothing.
local P, player = A.pool, A.player
if redis.call('HLEN', MM .. 'found:' .. player) > 0 then return {'found'} end
local now = tnow()
local joined, missed = now, '0'
local who = redis.call('HGET', MM .. 'who', player)
local old = nil
if who then
  local w = split(who, F)
  if w[1] == 'm' then return {'matching'} end
  -- `o`: an offer's accept under way (see OFFERS): while the offer is accepting, else until the
  -- deadline.
  if w[1] == 'o' then
    if redis.call('HGET', MM .. 'of:' .. w[2], 's') == 'accepting' or tonumber(w[3] or '0') > now then
      return {'matching'}
    end
  else
    old = w[2]
  end
end
if old ~= P then
  if redis.call('HLEN', pk(P, 'e')) >= tonumber(A.max_waiting) then return {'full'} end
  if redis.call('SISMEMBER', MM .. 'pools', P) == 0 and redis.call('SCARD', MM .. 'pools') >= tonumber(A.max_pools) then
    return {'pools'}
  end
end
if old then
  if old == P then
    joined = tonumber(redis.call('ZSCORE', pk(P, 'j'), player) or now)
    missed = redis.call('HGET', pk(P, 'w'), player) or '0'
  end
  drop(old, player)
end
redis.call('HSET', pk(P, 'e'), player, A.record)
redis.call('ZADD', pk(P, 'l'), fmt(now + tonumber(A.lease_ms)), player)
redis.call('ZADD', pk(P, 'j'), fmt(joined), player)
redis.call('HSET', pk(P, 'w'), player, missed)
redis.call('HSET', MM .. 'who', player, 'w' .. F .. P .. F .. A.session)
redis.call('SADD', MM .. 'pools', P)
return {'waiting', redis.call('HLEN', pk(P, 'e'))}
