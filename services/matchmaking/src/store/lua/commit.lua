-- COMMIT (services/matchmaking/src/store/redis.rs; arguments by name: `COMMIT_ARGS`)
-- KEYS: two routing keys (see PRELUDE); runs in the pool's slot (then CLAIM in the store's, for
-- each pairing committed).
-- A: pool (its name), fence (the wave's fencing number), pairings (packed: each pairing, itself
-- packed: its id, then its members in seat order), unpaired (packed: the players who wait on).
--
-- Each pairing whose players all wait leaves the pool and is kept as being made (`k`, with each
-- player's place; `km`: player to pairing). Returns, per pairing, its players and their
-- sessions packed (committed) or an empty string (not), or nil when the fence is stale.
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
    local rec, sessions = {fmt(now)}, {}
    for m = 2, #t do
      local player = t[m]
      local entry = redis.call('HGET', pk(P, 'e'), player)
      rec[#rec + 1] = player
      rec[#rec + 1] = entry
      rec[#rec + 1] = redis.call('ZSCORE', pk(P, 'j'), player)
      rec[#rec + 1] = redis.call('HGET', pk(P, 'w'), player) or '0'
      rec[#rec + 1] = redis.call('ZSCORE', pk(P, 'l'), player) or '0'
      sessions[#sessions + 1] = player
      sessions[#sessions + 1] = session_of(entry)
      drop(P, player)
      redis.call('HSET', pk(P, 'km'), player, id)
    end
    redis.call('HSET', pk(P, 'k'), id, pack(rec))
    done[i] = pack(sessions)
  else
    done[i] = ''
  end
end
for _, player in ipairs(unpk(A.unpaired)) do
  if redis.call('HEXISTS', pk(P, 'e'), player) == 1 then redis.call('HINCRBY', pk(P, 'w'), player, 1) end
end
return done
