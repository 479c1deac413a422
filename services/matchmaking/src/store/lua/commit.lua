-- COMMIT (services/matchmaking/src/store/redis.rs; arguments by name: `COMMIT_ARGS`)
-- KEYS: only two routing keys, never there (they name the store's slot on a cluster): the keys are
-- named from the arguments, after the prefix MM (`mm:`, or `mm:{mm}:` on a cluster) (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
-- A: pool (its name), fence (the wave's fencing number), pairings (packed: each pairing, itself
-- packed: its id, then its members in seat order), unpaired (packed: the players who wait on).
--
-- Returns 1 or 0 per pairing (committed or not), or nil when the fence is stale.
local P = A.pool
local M = pk(P, 'm')
local now = tnow()
if redis.call('HGET', M, 'fence') ~= A.fence or tonumber(redis.call('HGET', M, 'until') or '0') <= now then
  return false
end
local done = {}
for i, packed in ipairs(unpk(A.pairings)) do
  local t = unpk(packed)
  local id = t[1]
  local ok = redis.call('HEXISTS', pk(P, 'k'), id) == 0
  for m = 2, #t do
    if ok and redis.call('HEXISTS', pk(P, 'e'), t[m]) == 0 then ok = false end
  end
  if ok then
    local rec = {fmt(now)}
    for m = 2, #t do
      local player = t[m]
      rec[#rec + 1] = player
      rec[#rec + 1] = redis.call('HGET', pk(P, 'e'), player)
      rec[#rec + 1] = redis.call('ZSCORE', pk(P, 'j'), player)
      rec[#rec + 1] = redis.call('HGET', pk(P, 'w'), player) or '0'
      rec[#rec + 1] = redis.call('ZSCORE', pk(P, 'l'), player) or '0'
      drop(P, player)
      redis.call('HSET', MM .. 'who', player, 'm' .. F .. P)
    end
    redis.call('HSET', pk(P, 'k'), id, pack(rec))
    done[i] = 1
  else
    done[i] = 0
  end
end
for _, player in ipairs(unpk(A.unpaired)) do
  if redis.call('HEXISTS', pk(P, 'e'), player) == 1 then redis.call('HINCRBY', pk(P, 'w'), player, 1) end
end
return done
