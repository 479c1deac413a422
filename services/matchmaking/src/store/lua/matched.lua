-- MATCHED (services/matchmaking/src/store/redis.rs; arguments by name: `MATCHED_ARGS`)
-- KEYS: only two routing keys, never there (they name the store's slot on a cluster): the keys are
-- named from the arguments, after the prefix MM (`mm:`, or `mm:{mm}:` on a cluster) (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
-- A: pool (its name), pairing (its id), match_id (the created match), follow (the match's
-- follow record), found_ttl (ms a match found is kept), found (packed: player, match id,
-- stored match found, for each player), histories (packed: player, history record, for each
-- player).
--
-- The match is filed to be followed at once (its lease already run out: any replica's follower
-- claims it).
local P = A.pool
local rec = redis.call('HGET', pk(P, 'k'), A.pairing)
if not rec then return 0 end
redis.call('HDEL', pk(P, 'k'), A.pairing)
local now = tnow()
local r = unpk(rec)
local M = pk(P, 'm')
local mean = tonumber(redis.call('HGET', M, 'mean') or '0')
for i = 2, #r, 5 do
  local wait = math.max(0, now - tonumber(r[i + 2]))
  if mean == 0 then mean = wait else mean = mean - math.floor(mean / 8) + math.floor(wait / 8) end
  local who = redis.call('HGET', MM .. 'who', r[i])
  if who == 'm' .. F .. P or who == 'm' .. F .. P .. F .. 'gone' then redis.call('HDEL', MM .. 'who', r[i]) end
end
redis.call('HSET', M, 'mean', fmt(mean))
local found = unpk(A.found)
for i = 1, #found, 3 do
  redis.call('HSET', MM .. 'found:' .. found[i], found[i + 1], found[i + 2])
  redis.call('PEXPIRE', MM .. 'found:' .. found[i], A.found_ttl)
end
local histories = unpk(A.histories)
for i = 1, #histories, 2 do
  redis.call('HSET', MM .. 'h', histories[i], histories[i + 1])
end
redis.call('ZADD', MM .. 'follow', fmt(now), A.match_id)
redis.call('HSET', MM .. 'follow:d', A.match_id, A.follow)
return 1
