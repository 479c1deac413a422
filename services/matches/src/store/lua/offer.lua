-- OFFER (services/matches/src/store/redis.rs)
-- KEYS: the match's six keys (`keys(id)`): 1–3 a bughouse match's state hash, events list and done hash; 4–6 a single board's (the script uses whichever exists).
--
-- ARGV: named by `OFFER_ARGS` in redis.rs; the script reads them as `A.<name>`: nonce, side
-- (of the match: `w`, `b`), offer_event, agreed (the outcome once both sides offer), end_event,
-- ttl, grace, request (`RequestId::encode`, or empty), delays (the stages' simple delays,
-- packed; clocks only).
local S, E, D = pick()
if not S then return {'missing'} end
local rq = request(A.request)
local no = refused(S, E, D, rq, A.nonce)
if no then return no end
local now = tnow()
if is_late(S, now) then return state(S, E, 'late') end
-- An offer already standing changes nothing, and is not remembered.
if redis.call('HGET', S, 'draw:' .. A.side) == '1' then return state(S, E, 'ok') end
remember(D, rq, 'D')
redis.call('HSET', S, 'draw:' .. A.side, '1')
redis.call('RPUSH', E, A.offer_event)
local other = 'w'
if A.side == 'w' then other = 'b' end
local ttl = live(S, A.ttl)
if redis.call('HGET', S, 'draw:' .. other) == '1' then
  local delays = unpk(A.delays)
  stop_board(S, 'A', now, delays)
  stop_board(S, 'B', now, delays)
  index(S, ID)
  redis.call('HSET', S, 'over', '1', 'outcome', A.agreed .. pack({fmt(now)}))
  redis.call('RPUSH', E, A.end_event)
  archive(S, E)
  ttl = A.grace
end
expire(S, E, D, ttl)
announce()
return state(S, E, 'ok')
