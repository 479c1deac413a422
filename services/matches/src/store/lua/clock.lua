-- CLOCK (services/matches/src/store/redis.rs)
-- KEYS: the match's six keys (`keys(id)`): 1–3 a bughouse match's state hash, events list and done hash; 4–6 a single board's (the script uses whichever exists).
--
-- A change of clocks decided by the caller. ARGV: 1 nonce, 2 timing (`live`, or the deadline
-- that must have passed), 3 the request's id ([`RequestId::encode`], or empty), 4 outcome (or
-- empty), 5 end
-- event, 6 TTL, 7 grace, 8 the number of clocks n, then per clock 8 values (board, the three
-- fields as judged, the three new fields, the new deadline), then the events to append.
local S, E, D = pick()
if not S then return {'missing'} end
local rq = request(ARGV[3])
local done = recall(D, rq)
if done then return state(S, E, 'done:' .. done) end
if redis.call('HGET', S, 'over') == '1' then return state(S, E, 'over') end
if redis.call('HGET', S, 'nonce') ~= ARGV[1] then return state(S, E, 'stale') end
local n = tonumber(ARGV[8])
for i = 0, n - 1 do
  local at = 9 + i * 8
  local b = ARGV[at]
  local ck = redis.call('HMGET', S, 'ck:' .. b, 'ck:' .. b .. ':w', 'ck:' .. b .. ':b')
  if ck[1] ~= ARGV[at + 1] or ck[2] ~= ARGV[at + 2] or ck[3] ~= ARGV[at + 3] then
    return state(S, E, 'stale')
  end
end
local now = tnow()
if ARGV[2] == 'live' then
  if is_late(S, now) then return state(S, E, 'late') end
elseif now < tonumber(ARGV[2]) then
  return state(S, E, 'stale')
end
for i = 0, n - 1 do
  local at = 9 + i * 8
  local b = ARGV[at]
  redis.call('HSET', S, 'ck:' .. b, ARGV[at + 4], 'ck:' .. b .. ':w', ARGV[at + 5],
    'ck:' .. b .. ':b', ARGV[at + 6], 'dl:' .. b, ARGV[at + 7])
end
local first = 9 + n * 8
if first <= #ARGV then redis.call('RPUSH', E, unpack(ARGV, first)) end
remember(D, rq, 'K')
local ttl = ARGV[6]
if ARGV[4] ~= '' then
  redis.call('HSET', S, 'over', '1', 'outcome', ARGV[4] .. pack({fmt(now)}))
  redis.call('RPUSH', E, ARGV[5])
  ttl = ARGV[7]
end
expire(S, E, D, ttl)
index(S, ID)
announce()
return state(S, E, 'ok')
