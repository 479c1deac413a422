-- MATCHED (services/matchmaking/src/store/redis.rs; arguments by name: `MATCHED_ARGS`)
-- KEYS: two routing keys (see PRELUDE); runs in the store's slot (MM), then MATCHED_POOL in the
-- pool's.
-- A: pool (its name), pairing (its id), match_id (the created match), follow (the match's
-- follow record), found_ttl (ms a match found is kept), found (packed: player, match id,
-- stored match found, for each player), histories (packed: player, history record, for each
-- player).
--
-- Once per pairing (`made:<pairing>`, kept as long as a match found): the players' marks are
-- cleared, they get their matches found and histories, and the match is filed to be followed
-- at once (its lease already run out: any replica's follower claims it). Returns 1, or 0 when
-- it was recorded before.
local made = MM .. 'made:' .. A.pairing
if redis.call('EXISTS', made) == 1 then return 0 end
-- Given up meanwhile (UNMAKE, by a replica that took over the pairing): its players wait or
-- went on; the match is not theirs.
if redis.call('EXISTS', MM .. 'unmade:' .. A.pairing) == 1 then return 0 end
redis.call('SET', made, A.match_id, 'PX', A.found_ttl)
local now = tnow()
local found = unpk(A.found)
for i = 1, #found, 3 do
  if ours(redis.call('HGET', MM .. 'who', found[i]), A.pool, A.pairing) then
    redis.call('HDEL', MM .. 'who', found[i])
  end
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
