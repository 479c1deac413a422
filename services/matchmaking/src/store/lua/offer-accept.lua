-- OFFER_ACCEPT (services/matchmaking/src/store/redis.rs; arguments by name: `OFFER_ACCEPT_ARGS`)
-- KEYS: only two routing keys, never there (they name the store's slot on a cluster): the keys are
-- named from the arguments, after the prefix MM (`mm:`, or `mm:{mm}:` on a cluster) (see OFFERS).
-- A: id, acceptor, request (the accept's request id; both empty: only resume a stale accept),
-- stale (ms without a heartbeat after which an accept under way is presumed lost and is
-- resumed), memory (ms the offer is kept past the later of its expiry and now).
-- The same acceptor and request again: `again` (an accept under way gets a heartbeat). An
-- accept under way without a heartbeat for `stale` ms: `resumed`, the same accept (its acceptor,
-- its request) now continued by the caller, with a heartbeat; it is never replaced. Else an
-- open offer: refused (`busy`, then the player and their state) when either player holds an unacknowledged
-- match found or is being matched (a pool pairing, or another offer's accept); else both
-- players leave any pool and are marked `o` (see OFFERS) until FINISH or RELEASE.
-- Returns `started`, `again`, `resumed`, `notopen`, `busy` or `missing`, then the offer's
-- fields; after `started`, before the fields, the places to drop from their pools (DROPS,
-- packed).
if redis.call('EXISTS', ofkey(A.id)) == 0 then
  redis.call('ZREM', MM .. 'ofa', A.id)
  return {'missing'}
end
local now = tnow()
local deadline = now + tonumber(A.stale)
local s, a, q = oget(A.id, 's'), oget(A.id, 'a'), oget(A.id, 'q')
if (s == 'accepting' or s == 'accepted') and a == A.acceptor and q == A.request then
  if s == 'accepting' then beat(A.id, now, deadline) end
  return reply('again', A.id)
end
if s == 'accepting' and now - tonumber(oget(A.id, 'u')) >= tonumber(A.stale) then
  beat(A.id, now, deadline)
  return reply('resumed', A.id)
end
if A.acceptor == '' then return reply('notopen', A.id) end
if not (s == 'open' and now < tonumber(oget(A.id, 'x'))) then return reply('notopen', A.id) end
local owner = oget(A.id, 'o')
for _, p in ipairs({owner, A.acceptor}) do
  if busy(p, A.id, now) then return {'busy', p, redis.call('HGET', MM .. 'who', p) or ''} end
end
-- As a pool's pairing is claimed: both players are marked matched, and leave their pools.
unlist(A.id)
claim(owner, A.id, deadline)
claim(A.acceptor, A.id, deadline)
redis.call('HSET', ofkey(A.id), 's', 'accepting', 'a', A.acceptor, 'q', A.request, 'u', fmt(now))
redis.call('ZADD', MM .. 'ofa', fmt(now), A.id)
keep(A.id, now, A.memory)
local r = reply('started', A.id)
table.insert(r, 2, pack(DROPS))
return r
