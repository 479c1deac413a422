-- OFFER_RELEASE (services/matchmaking/src/store/redis.rs; arguments by name: `OFFER_RELEASE_ARGS`)
-- KEYS: only two routing keys, never there (they name the store's slot on a cluster): the keys are
-- named from the arguments, after the prefix MM (`mm:`, or `mm:{mm}:` on a cluster) (see OFFERS).
-- A: id, request (the accept's request id), memory (ms the offer is kept past its expiry and
-- now). The players' `o` marks are cleared (they are not put back into any pool). An accept whose match could not be created: the
-- offer is open again (back in the open sets unless it expired meanwhile). Returns 1, or 0 when
-- nothing changed.
if redis.call('EXISTS', ofkey(A.id)) == 0 then return 0 end
if oget(A.id, 's') ~= 'accepting' or oget(A.id, 'q') ~= A.request then return 0 end
local now = tnow()
redis.call('ZREM', MM .. 'ofa', A.id)
unclaim(oget(A.id, 'o'), A.id)
unclaim(oget(A.id, 'a'), A.id)
redis.call('HSET', ofkey(A.id), 's', 'open', 'u', fmt(now))
redis.call('HDEL', ofkey(A.id), 'a', 'q')
if now < tonumber(oget(A.id, 'x')) then relist(A.id) end
keep(A.id, now, A.memory)
return 1
