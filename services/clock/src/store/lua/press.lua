-- PRESS (services/clock/src/store/redis.rs)
-- KEYS: 1 the clock's state hash, 2 its events list (`keys(id)`).
--
-- ARGV: 1 board, 2 ply, 3 mover, 4–6 the board clock as judged, 7–19 the plan, 20–22 the
-- mover's moves, stage and moves in stage after the press, 23 TTL.
local S, E = KEYS[1], KEYS[2]
if redis.call('EXISTS', S) == 0 then return {'missing'} end
if redis.call('HGET', S, 'over') == '1' then return state(S, E, 'over') end
local b, mover = ARGV[1], ARGV[3]
local pr = redis.call('HGET', S, 'pr:' .. b)
if pr ~= ARGV[2] then
  if tonumber(pr) == tonumber(ARGV[2]) + 1 and redis.call('HGET', S, 'lp:' .. b) == mover then
    return state(S, E, 'dup')
  end
  return state(S, E, 'stale')
end
local now = tnow()
if is_late(S, now) then return state(S, E, 'late') end
local ck = redis.call('HMGET', S, 'ck:' .. b, 'ck:' .. b .. ':w', 'ck:' .. b .. ':b')
if ck[1] ~= ARGV[4] or ck[2] ~= ARGV[5] or ck[3] ~= ARGV[6] then return state(S, E, 'stale') end
local r = press({unpack(ARGV, 7, 19)}, now)
if not r then return state(S, E, 'late') end
local opp, other = 'b', ck[3]
if mover == 'b' then opp, other = 'w', ck[2] end
redis.call('HSET', S, 'ck:' .. b .. ':' .. mover,
  pack({fmt(r[1]), fmt(r[2]), ARGV[20], ARGV[21], ARGV[22]}),
  'ck:' .. b, pack({'R', opp, fmt(now)}), 'dl:' .. b, fmt(r[6]),
  'pr:' .. b, tostring(tonumber(ARGV[2]) + 1), 'lp:' .. b, mover)
local rem = {}
rem[mover] = fmt(r[1])
rem[opp] = unpk(other)[1]
redis.call('RPUSH', E, pack({'C', b, rem.w, rem.b, opp, fmt(now)}))
redis.call('PEXPIRE', S, ARGV[23])
redis.call('PEXPIRE', E, ARGV[23])
index(S, ID)
announce()
return state(S, E, 'ok')
