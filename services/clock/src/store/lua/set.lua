-- SET (services/clock/src/store/redis.rs)
-- KEYS: 1 the clock's state hash, 2 its events list (`keys(id)`).
--
-- ARGV: 1 timing (`live`, or the deadline that must have passed), 2 flag (packed, or empty),
-- 3 `1` when the change ends the clock, 4 TTL, 5 the request id (or empty), 6 the request it
-- names, 7 the number of boards n, then per board 8 values (board, the three fields as judged,
-- the three new fields, the deadline), then events.
--
-- A request id already remembered answers `dup` for the same request and `reused` for another
-- (or for one remembered without its request), changing nothing. An applied change with a
-- request id remembers it as the `rqn`-th (`rq:<id>`, `rs:<n>`) and forgets the
-- `(rqn − REMEMBERED)`-th, in the same step.
local S, E = KEYS[1], KEYS[2]
if redis.call('EXISTS', S) == 0 then return {'missing'} end
local rq = ARGV[5]
if rq ~= '' then
  local seen = redis.call('HGET', S, 'rq:' .. rq)
  if seen then
    if seen ~= '1' and unpk(seen)[2] == ARGV[6] then return state(S, E, 'dup') end
    return state(S, E, 'reused')
  end
end
if redis.call('HGET', S, 'over') == '1' then return state(S, E, 'over') end
local n = tonumber(ARGV[7])
for i = 0, n - 1 do
  local at = 8 + i * 8
  local b = ARGV[at]
  local ck = redis.call('HMGET', S, 'ck:' .. b, 'ck:' .. b .. ':w', 'ck:' .. b .. ':b')
  if ck[1] ~= ARGV[at + 1] or ck[2] ~= ARGV[at + 2] or ck[3] ~= ARGV[at + 3] then
    return state(S, E, 'stale')
  end
end
local now = tnow()
if ARGV[1] == 'live' then
  if is_late(S, now) then return state(S, E, 'late') end
elseif now < tonumber(ARGV[1]) then
  return state(S, E, 'stale')
end
for i = 0, n - 1 do
  local at = 8 + i * 8
  local b = ARGV[at]
  redis.call('HSET', S, 'ck:' .. b, ARGV[at + 4], 'ck:' .. b .. ':w', ARGV[at + 5],
    'ck:' .. b .. ':b', ARGV[at + 6], 'dl:' .. b, ARGV[at + 7])
end
if ARGV[2] ~= '' then redis.call('HSET', S, 'flag', ARGV[2]) end
if ARGV[3] == '1' then redis.call('HSET', S, 'over', '1') end
if rq ~= '' then
  local k = redis.call('HINCRBY', S, 'rqn', 1)
  redis.call('HSET', S, 'rq:' .. rq, pack({k, ARGV[6]}), 'rs:' .. k, rq)
  if k > REMEMBERED then
    local gone = redis.call('HGET', S, 'rs:' .. (k - REMEMBERED))
    if gone then redis.call('HDEL', S, 'rs:' .. (k - REMEMBERED), 'rq:' .. gone) end
  end
end
local first = 8 + n * 8
if first <= #ARGV then redis.call('RPUSH', E, unpack(ARGV, first)) end
redis.call('PEXPIRE', S, ARGV[4])
redis.call('PEXPIRE', E, ARGV[4])
index(S, ID)
announce()
return state(S, E, 'ok')
