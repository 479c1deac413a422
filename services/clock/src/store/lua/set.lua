-- SET (services/clock/src/store/redis.rs; arguments by name: `SET_ARGS`)
-- KEYS: 1 the clock's state hash, 2 its events list (`keys(id)`).
-- A: timing (`live`, or the deadline that must have passed), flag (packed, or empty), over (`1`
-- when the change ends the clock), ttl (ms), request_id (or empty), request (the request it
-- names), clocks (the boards changed: `fields::encode_changes`), events (the events to append).
--
-- A request id already remembered answers `dup` for the same request and `reused` for another
-- (or for one remembered without its request), changing nothing. An applied change with a
-- request id remembers it as the `rqn`-th (`rq:<id>`, `rs:<n>`) and forgets the
-- `(rqn − REMEMBERED)`-th, in the same step.
local S, E = KEYS[1], KEYS[2]
if redis.call('EXISTS', S) == 0 then return {'missing'} end
local rq = A.request_id
if rq ~= '' then
  local seen = redis.call('HGET', S, 'rq:' .. rq)
  if seen then
    if seen ~= '1' and unpk(seen)[2] == A.request then return state(S, E, 'dup') end
    return state(S, E, 'reused')
  end
end
if redis.call('HGET', S, 'over') == '1' then return state(S, E, 'over') end
local changes = clock_changes(A.clocks)
if not clocks_as_judged(S, changes) then return state(S, E, 'stale') end
local refused = timing_refusal(S, A.timing, tnow())
if refused then return state(S, E, refused) end
set_clocks(S, changes)
if A.flag ~= '' then redis.call('HSET', S, 'flag', A.flag) end
if A.over == '1' then redis.call('HSET', S, 'over', '1') end
if rq ~= '' then
  local k = redis.call('HINCRBY', S, 'rqn', 1)
  redis.call('HSET', S, 'rq:' .. rq, pack({k, A.request}), 'rs:' .. k, rq)
  if k > REMEMBERED then
    local gone = redis.call('HGET', S, 'rs:' .. (k - REMEMBERED))
    if gone then redis.call('HDEL', S, 'rs:' .. (k - REMEMBERED), 'rq:' .. gone) end
  end
end
if #A.events > 0 then redis.call('RPUSH', E, unpack(A.events)) end
redis.call('PEXPIRE', S, A.ttl)
redis.call('PEXPIRE', E, A.ttl)
index(S, ID)
announce()
return state(S, E, 'ok')
