-- END (services/matches/src/store/redis.rs)
-- KEYS: the match's six keys (`keys(id)`): 1–3 a bughouse match's state hash, events list and done hash; 4–6 a single board's (the script uses whichever exists).
--
-- ARGV: named by `END_ARGS` in redis.rs; the script reads them as `A.<name>`: nonce,
-- guard_board (or empty) and guard_ply, outcome, end_event, grace, request (`RequestId::encode`,
-- or empty), delays (the stages' simple delays, packed; clocks only).
local S, E, D = pick()
if not S then return {'missing'} end
local rq = request(A.request)
local no = refused(S, E, D, rq, A.nonce)
if no then return no end
if A.guard_board ~= '' and redis.call('HGET', S, 'ply:' .. A.guard_board) ~= A.guard_ply then
  return state(S, E, 'stale')
end
local now = tnow()
if is_late(S, now) then return state(S, E, 'late') end
local delays = unpk(A.delays)
stop_board(S, 'A', now, delays)
stop_board(S, 'B', now, delays)
index(S, ID)
redis.call('HSET', S, 'over', '1', 'outcome', A.outcome .. pack({fmt(now)}))
redis.call('RPUSH', E, A.end_event)
remember(D, rq, 'E')
expire(S, E, D, A.grace)
announce()
return state(S, E, 'ok')
