-- COMMIT (services/matchmaking/src/store/redis.rs)
-- KEYS: none: the keys are named from the arguments (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
--
-- ARGV: pool, fence, n, then per pairing: id, member count, members; then the unpaired.
local P = ARGV[1]
local M = pk(P, 'm')
local now = tnow()
if redis.call('HGET', M, 'fence') ~= ARGV[2] or tonumber(redis.call('HGET', M, 'until') or '0') <= now then
  return false
end
local done, at = {}, 4
for i = 1, tonumber(ARGV[3]) do
  local id, c = ARGV[at], tonumber(ARGV[at + 1])
  local ok = redis.call('HEXISTS', pk(P, 'k'), id) == 0
  for m = 1, c do
    if ok and redis.call('HEXISTS', pk(P, 'e'), ARGV[at + 1 + m]) == 0 then ok = false end
  end
  if ok then
    local rec = {fmt(now)}
    for m = 1, c do
      local player = ARGV[at + 1 + m]
      rec[#rec + 1] = player
      rec[#rec + 1] = redis.call('HGET', pk(P, 'e'), player)
      rec[#rec + 1] = redis.call('ZSCORE', pk(P, 'j'), player)
      rec[#rec + 1] = redis.call('HGET', pk(P, 'w'), player) or '0'
      rec[#rec + 1] = redis.call('ZSCORE', pk(P, 'l'), player) or '0'
      drop(P, player)
      redis.call('HSET', 'mm:who', player, 'm' .. F .. P)
    end
    redis.call('HSET', pk(P, 'k'), id, pack(rec))
    done[i] = 1
  else
    done[i] = 0
  end
  at = at + 2 + c
end
for j = at, #ARGV do
  if redis.call('HEXISTS', pk(P, 'e'), ARGV[j]) == 1 then redis.call('HINCRBY', pk(P, 'w'), ARGV[j], 1) end
end
return done
