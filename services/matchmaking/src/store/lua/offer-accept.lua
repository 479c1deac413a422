-- OFFER_ACCEPT (services/matchmaking/src/store/redis.rs; arguments by name: `OFFER_ACCEPT_ARGS`)
-- KEYS: none: the keys are named from the arguments (see OFFERS).
-- A: id, acceptor, request (the accept's request id), stale (ms after which an accept whose
-- match was never recorded may be taken over), memory (ms the offer is kept past the later of its expiry and now).
-- Refused (`busy`, then the player) when either player holds an unacknowledged match found or
-- is being matched (a pool pairing, or another offer's accept). Else both players leave any
-- pool and are marked `o` (see OFFERS) until FINISH or RELEASE, or `stale` ms.
-- Returns `started`, `again`, `notopen`, `busy` or `missing`, then the offer's fields.
if redis.call('EXISTS', ofkey(A.id)) == 0 then return {'missing'} end
local now = tnow()
local s, a, q = oget(A.id, 's'), oget(A.id, 'a'), oget(A.id, 'q')
if (s == 'accepting' or s == 'accepted') and a == A.acceptor and q == A.request then
  return reply('again', A.id)
end
local stale = s == 'accepting' and now - tonumber(oget(A.id, 'u')) >= tonumber(A.stale)
local open = s == 'open' and now < tonumber(oget(A.id, 'x'))
if not (stale or open) then return reply('notopen', A.id) end
local owner = oget(A.id, 'o')
for _, p in ipairs({owner, A.acceptor}) do
  if busy(p, A.id, now) then return {'busy', p} end
end
-- Committed as a pool pairing is: both players leave their pools and are marked matched (a
-- taken-over stale accept's acceptor is let go).
if stale then unclaim(a, A.id) end
unlist(A.id)
local deadline = now + tonumber(A.stale)
claim(owner, A.id, deadline)
claim(A.acceptor, A.id, deadline)
redis.call('HSET', ofkey(A.id), 's', 'accepting', 'a', A.acceptor, 'q', A.request, 'u', fmt(now))
keep(A.id, now, A.memory)
return reply('started', A.id)
