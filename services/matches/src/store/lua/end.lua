-- END (services/matches/src/store/redis.rs)
-- KEYS: the match's six keys (`keys(id)`): 1–3 a bughouse match's state hash, events list and done hash; 4–6 a single board's (the script uses whichever exists).
--
-- ARGV: named by `END_ARGS` in redis.rs; the script reads them as `A.<name>`: nonce,
-- guard (packed pairs of a board letter and the ply it was judged at; empty for none), outcome, end_event, grace, request (`RequestId::encode`,
-- or empty), delays (the stages' simple delays, packed; clocks only).
local S, E, D = pick()
if not S then return {'missing'} end
local rq = request(A.request)
local no = refused(S, E, D, rq, A.nonce)
if no then return no end
local guard = unpk(A.guard)
for i = 1, #guard, 2 do
  if redis.call('HGET', S, 'ply:' .. guard[i]) ~= guard[i + 1] then
    return state(S, E, 'stale')
  end
end
local now = tnow()
if is_late(S, now) then return state(S, E, 'late') end
local delays = unpk(A.delays)
stop_board(S, 'A', now, delays)
stop_board(S, 'B', now, delays)
index(S, ID)
redis.call('HSET', S, 'over', '1', 'outcome', A.outcome .. pack({fmt(now)}))
redis.call('RPUSH', E, A.end_event)
archive(S, E)
remember(D, rq, 'E')
expire(S, E, D, A.grace)
announce()
return state(S, E, 'ok')
