-- END (services/matches/src/store/redis.rs)
-- KEYS: the match's six keys (`keys(id)`): 1–3 a bughouse match's state hash, events list and done hash; 4–6 a single board's (the script uses whichever exists).
--
-- ARGV: 1 nonce, 2 guard board (or empty), 3 guard ply, 4 outcome, 5 end event, 6 grace,
-- 7 the request's id ([`RequestId::encode`], or empty), 8 the stages' simple delays, packed
-- (clocks only).
local S, E, D = pick()
if not S then return {'missing'} end
local rq = request(ARGV[7])
local done = recall(D, rq)
if done then return state(S, E, 'done:' .. done) end
if redis.call('HGET', S, 'over') == '1' then return state(S, E, 'over') end
if redis.call('HGET', S, 'nonce') ~= ARGV[1] then return state(S, E, 'stale') end
if ARGV[2] ~= '' and redis.call('HGET', S, 'ply:' .. ARGV[2]) ~= ARGV[3] then
  return state(S, E, 'stale')
end
local now = tnow()
if is_late(S, now) then return state(S, E, 'late') end
local delays = unpk(ARGV[8])
stop_board(S, 'A', now, delays)
stop_board(S, 'B', now, delays)
index(S, ID)
redis.call('HSET', S, 'over', '1', 'outcome', ARGV[4] .. pack({fmt(now)}))
redis.call('RPUSH', E, ARGV[5])
remember(D, rq, 'E')
expire(S, E, D, ARGV[6])
announce()
return state(S, E, 'ok')
