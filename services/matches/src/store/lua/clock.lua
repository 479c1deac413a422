-- CLOCK (services/matches/src/store/redis.rs; arguments by name: `CLOCK_ARGS`)
-- KEYS: the match's six keys (`keys(id)`): 1–3 a bughouse match's state hash, events list and done hash; 4–6 a single board's (the script uses whichever exists).
--
-- A change of clocks decided by the caller. A: nonce, timing (`live`, or the deadline that must
-- have passed), request (the request's id, [`RequestId::encode`], or empty), outcome (or empty),
-- end_event, ttl, grace, clocks (the boards changed: `fields::encode_changes`), events (the
-- events to append).
local S, E, D = pick()
if not S then return {'missing'} end
local rq = request(A.request)
local no = refused(S, E, D, rq, A.nonce)
if no then return no end
local changes = clock_changes(A.clocks)
if not clocks_as_judged(S, changes) then return state(S, E, 'stale') end
local now = tnow()
local refused = timing_refusal(S, A.timing, now)
if refused then return state(S, E, refused) end
set_clocks(S, changes)
if #A.events > 0 then redis.call('RPUSH', E, unpack(A.events)) end
remember(D, rq, 'K')
local ttl = live(S, A.ttl)
if A.outcome ~= '' then
  redis.call('HSET', S, 'over', '1', 'outcome', A.outcome .. pack({fmt(now)}))
  redis.call('RPUSH', E, A.end_event)
  archive(S, E)
  ttl = A.grace
end
expire(S, E, D, ttl)
index(S, ID)
announce()
return state(S, E, 'ok')
