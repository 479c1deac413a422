-- OFFER (services/matches/src/store/redis.rs)
-- KEYS: the match's six keys (`keys(id)`): 1–3 a bughouse match's state hash, events list and done hash; 4–6 a single board's (the script uses whichever exists).
--
-- ARGV: 1 nonce, 2 side, 3 offer event, 4 agreed outcome, 5 end event, 6 TTL, 7 grace,
-- 8 the request's id ([`RequestId::encode`], or empty), 9 the stages' simple delays, packed.
local S, E, D = pick()
if not S then return {'missing'} end
local rq = request(ARGV[8])
local done = recall(D, rq)
if done then return state(S, E, 'done:' .. done) end
if redis.call('HGET', S, 'over') == '1' then return state(S, E, 'over') end
if redis.call('HGET', S, 'nonce') ~= ARGV[1] then return state(S, E, 'stale') end
local now = tnow()
if is_late(S, now) then return state(S, E, 'late') end
-- An offer already standing changes nothing, and is not remembered.
if redis.call('HGET', S, 'draw:' .. ARGV[2]) == '1' then return state(S, E, 'ok') end
remember(D, rq, 'D')
redis.call('HSET', S, 'draw:' .. ARGV[2], '1')
redis.call('RPUSH', E, ARGV[3])
local other = 'w'
if ARGV[2] == 'w' then other = 'b' end
local ttl = ARGV[6]
if redis.call('HGET', S, 'draw:' .. other) == '1' then
  local delays = unpk(ARGV[9])
  stop_board(S, 'A', now, delays)
  stop_board(S, 'B', now, delays)
  index(S, ID)
  redis.call('HSET', S, 'over', '1', 'outcome', ARGV[4] .. pack({fmt(now)}))
  redis.call('RPUSH', E, ARGV[5])
  ttl = ARGV[7]
end
expire(S, E, D, ttl)
announce()
return state(S, E, 'ok')
