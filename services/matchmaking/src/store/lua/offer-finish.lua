-- OFFER_FINISH (services/matchmaking/src/store/redis.rs; arguments by name: `OFFER_FINISH_ARGS`)
-- KEYS: none: the keys are named from the arguments (see OFFERS).
-- A: id, request (the accept's request id), match_id (the created match), follow (the match's
-- follow record), found_ttl (ms a match found is kept), found (packed: player, match id,
-- stored match found, for each player), memory (ms the offer is kept from now).
-- As MATCHED for a pool's pairing: the players' matches found, and the match filed to be
-- followed at once. Returns `done`, `other` (recorded before, or another accept's) or
-- `missing`, then the offer's fields.
if redis.call('EXISTS', ofkey(A.id)) == 0 then return {'missing'} end
if oget(A.id, 's') ~= 'accepting' or oget(A.id, 'q') ~= A.request then
  return reply('other', A.id)
end
local now = tnow()
redis.call('HSET', ofkey(A.id), 's', 'accepted', 'm', A.match_id, 'u', fmt(now))
redis.call('PEXPIRE', ofkey(A.id), A.memory)
local found = unpk(A.found)
for i = 1, #found, 3 do
  redis.call('HSET', 'mm:found:' .. found[i], found[i + 1], found[i + 2])
  redis.call('PEXPIRE', 'mm:found:' .. found[i], A.found_ttl)
end
redis.call('ZADD', 'mm:follow', fmt(now), A.match_id)
redis.call('HSET', 'mm:follow:d', A.match_id, A.follow)
return reply('done', A.id)
