-- JOIN_POOL (services/matchmaking/src/store/redis.rs; arguments by name: `JOIN_POOL_ARGS`)
-- KEYS: two routing keys (see PRELUDE); runs in the pool's slot, after JOIN.
-- A: pool (its name), player, record (the entry record, which starts with the new session),
-- lease_ms (the place's lease), max_waiting (players one pool holds).
--
-- A player already in the pool keeps their join time and missed waves under the new session.
-- Returns `full` (nothing changed), or `waiting`, the players now waiting and 1 when the pool
-- was empty before (no places, no pairings being made: the caller lists it again, in case a
-- wave that found it empty took it off the list meanwhile), else 0.
local P, player = A.pool, A.player
local now = tnow()
local joined, missed = now, '0'
local was = redis.call('ZSCORE', pk(P, 'j'), player)
if was and redis.call('HEXISTS', pk(P, 'e'), player) == 1 then
  joined = tonumber(was)
  missed = redis.call('HGET', pk(P, 'w'), player) or '0'
elseif redis.call('HLEN', pk(P, 'e')) >= tonumber(A.max_waiting) then
  return {'full'}
end
local empty = redis.call('HLEN', pk(P, 'e')) == 0 and redis.call('HLEN', pk(P, 'k')) == 0
redis.call('HSET', pk(P, 'e'), player, A.record)
redis.call('ZADD', pk(P, 'l'), fmt(now + tonumber(A.lease_ms)), player)
redis.call('ZADD', pk(P, 'j'), fmt(joined), player)
redis.call('HSET', pk(P, 'w'), player, missed)
return {'waiting', redis.call('HLEN', pk(P, 'e')), empty and 1 or 0}
