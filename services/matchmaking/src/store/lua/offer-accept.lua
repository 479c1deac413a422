-- OFFER_ACCEPT (services/matchmaking/src/store/redis.rs; arguments by name: `OFFER_ACCEPT_ARGS`)
-- KEYS: none: the keys are named from the arguments (see OFFERS).
-- A: id, acceptor, request (the accept's request id), stale (ms after which an accept whose
-- match was never recorded may be taken over), memory (ms the offer is kept from now).
-- Returns `started`, `again`, `notopen` or `missing`, then the offer's fields.
if redis.call('EXISTS', ofkey(A.id)) == 0 then return {'missing'} end
local now = tnow()
local s, a, q = oget(A.id, 's'), oget(A.id, 'a'), oget(A.id, 'q')
if (s == 'accepting' or s == 'accepted') and a == A.acceptor and q == A.request then
  return reply('again', A.id)
end
local stale = s == 'accepting' and now - tonumber(oget(A.id, 'u')) >= tonumber(A.stale)
local open = s == 'open' and now < tonumber(oget(A.id, 'x'))
if not (stale or open) then return reply('notopen', A.id) end
unlist(A.id)
redis.call('HSET', ofkey(A.id), 's', 'accepting', 'a', A.acceptor, 'q', A.request, 'u', fmt(now))
redis.call('PEXPIRE', ofkey(A.id), A.memory)
return reply('started', A.id)
