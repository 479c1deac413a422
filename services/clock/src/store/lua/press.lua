-- PRESS (services/clock/src/store/redis.rs; arguments by name: `PRESS_ARGS`)
-- KEYS: 1 the clock's state hash, 2 its events list (`keys(id)`).
-- A: board, ply (presses the board must have had), mover (`w`, `b`), expected (the board clock's
-- three fields as judged), plan (the 13 values of the press plan), after (the mover's moves,
-- stage and moves in stage after the press), ttl (ms).
local S, E = KEYS[1], KEYS[2]
if redis.call('EXISTS', S) == 0 then return {'missing'} end
if redis.call('HGET', S, 'over') == '1' then return state(S, E, 'over') end
local b, mover = A.board, A.mover
local pr = redis.call('HGET', S, 'pr:' .. b)
if pr ~= A.ply then
  if tonumber(pr) == tonumber(A.ply) + 1 and redis.call('HGET', S, 'lp:' .. b) == mover then
    return state(S, E, 'dup')
  end
  return state(S, E, 'stale')
end
local now = tnow()
if is_late(S, now) then return state(S, E, 'late') end
local ck = redis.call('HMGET', S, 'ck:' .. b, 'ck:' .. b .. ':w', 'ck:' .. b .. ':b')
local ex = A.expected
if ck[1] ~= ex[1] or ck[2] ~= ex[2] or ck[3] ~= ex[3] then return state(S, E, 'stale') end
local r = press(A.plan, now)
if not r then return state(S, E, 'late') end
local opp, other = 'b', ck[3]
if mover == 'b' then opp, other = 'w', ck[2] end
redis.call('HSET', S, 'ck:' .. b .. ':' .. mover,
  pack({fmt(r[1]), fmt(r[2]), A.after[1], A.after[2], A.after[3]}),
  'ck:' .. b, pack({'R', opp, fmt(now)}), 'dl:' .. b, fmt(r[6]),
  'pr:' .. b, tostring(tonumber(A.ply) + 1), 'lp:' .. b, mover)
local rem = {}
rem[mover] = fmt(r[1])
rem[opp] = unpk(other)[1]
redis.call('RPUSH', E, pack({'C', b, rem.w, rem.b, opp, fmt(now)}))
redis.call('PEXPIRE', S, A.ttl)
redis.call('PEXPIRE', E, A.ttl)
index(S, ID)
announce()
return state(S, E, 'ok')
