-- OFFER_FINISH (services/matchmaking/src/store/redis.rs; arguments by name: `OFFER_FINISH_ARGS`)
-- KEYS: only two routing keys, never there (they name the store's slot on a cluster): the keys are
-- named from the arguments, after the prefix MM (`mm:`, or `mm:{mm}:` on a cluster) (see OFFERS).
-- A: id, request (the accept's request id), match_id (the created match), follow (the match's
-- follow record), found_ttl (ms a match found is kept), found (packed: player, match id,
-- stored match found, for each player; the acceptor's is kept in the offer too, `f`), memory
-- (ms the offer is kept past the later of its expiry and now). Clears the players' `o` marks.
-- As MATCHED for a pool's pairing: the players' matches found, and the match filed to be
-- followed at once. Returns `done`, `other` (recorded before, or another accept's) or
-- `missing`, then the offer's fields.
if redis.call('EXISTS', ofkey(A.id)) == 0 then return {'missing'} end
if oget(A.id, 's') ~= 'accepting' or oget(A.id, 'q') ~= A.request then
  return reply('other', A.id)
end
local now = tnow()
redis.call('HSET', ofkey(A.id), 's', 'accepted', 'm', A.match_id, 'u', fmt(now))
keep(A.id, now, A.memory)
redis.call('ZREM', MM .. 'ofa', A.id)
unclaim(oget(A.id, 'o'), A.id)
unclaim(oget(A.id, 'a'), A.id)
local found = unpk(A.found)
local acceptor = oget(A.id, 'a')
for i = 1, #found, 3 do
  -- The acceptor's is kept in the offer too (`f`): a retried accept answers it.
  if found[i] == acceptor then redis.call('HSET', ofkey(A.id), 'f', found[i + 2]) end
  redis.call('HSET', MM .. 'found:' .. found[i], found[i + 1], found[i + 2])
  redis.call('PEXPIRE', MM .. 'found:' .. found[i], A.found_ttl)
end
redis.call('ZADD', MM .. 'follow', fmt(now), A.match_id)
redis.call('HSET', MM .. 'follow:d', A.match_id, A.follow)
return reply('done', A.id)
