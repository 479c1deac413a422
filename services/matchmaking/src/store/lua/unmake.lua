-- UNMAKE (services/matchmaking/src/store/redis.rs; arguments by name: `UNMAKE_ARGS`)
-- KEYS: only two routing keys, never there (they name the store's slot on a cluster): the keys are
-- named from the arguments, after the prefix MM (`mm:`, or `mm:{mm}:` on a cluster) (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
-- A: pool (its name), pairing (its id).
--
-- Players still being matched go back with their places and leases; those whose stream closed
-- meanwhile are let go.
local P = A.pool
local rec = redis.call('HGET', pk(P, 'k'), A.pairing)
if not rec then return 0 end
redis.call('HDEL', pk(P, 'k'), A.pairing)
local r = unpk(rec)
for i = 2, #r, 5 do
  local player = r[i]
  local who = redis.call('HGET', MM .. 'who', player)
  if who == 'm' .. F .. P then
    redis.call('HSET', pk(P, 'e'), player, r[i + 1])
    redis.call('ZADD', pk(P, 'l'), r[i + 4], player)
    redis.call('ZADD', pk(P, 'j'), r[i + 2], player)
    redis.call('HSET', pk(P, 'w'), player, r[i + 3])
    redis.call('HSET', MM .. 'who', player, 'w' .. F .. P .. F .. split(r[i + 1], F)[1])
  elseif who == 'm' .. F .. P .. F .. 'gone' then
    redis.call('HDEL', MM .. 'who', player)
  end
end
redis.call('SADD', MM .. 'pools', P)
return 1
