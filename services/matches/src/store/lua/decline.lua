-- DECLINE (services/matches/src/store/redis.rs)
-- KEYS: the match's six keys (`keys(id)`): 1–3 a bughouse match's state hash, events list and done hash; 4–6 a single board's (the script uses whichever exists).
--
-- ARGV: named by `DECLINE_ARGS` in redis.rs; the script reads them as `A.<name>`: nonce,
-- offerer (the side whose offer is declined: `w`, `b`), decline_event, ttl, request
-- (`RequestId::encode`, or empty).
local S, E, D = pick()
if not S then return {'missing'} end
local rq = request(A.request)
local no = refused(S, E, D, rq, A.nonce)
if no then return no end
-- No standing offer (it lapsed with a move, or was declined): judged again by the caller.
if redis.call('HGET', S, 'draw:' .. A.offerer) ~= '1' then return state(S, E, 'stale') end
if is_late(S, tnow()) then return state(S, E, 'late') end
remember(D, rq, 'X')
redis.call('HDEL', S, 'draw:' .. A.offerer)
redis.call('RPUSH', E, A.decline_event)
expire(S, E, D, live(S, A.ttl))
announce()
return state(S, E, 'ok')
