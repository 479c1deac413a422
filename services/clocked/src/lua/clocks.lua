-- CLOCKS (services/clocked/src/lua.rs): the clock helpers, after the header and BASICS
-- (`RedisNames::prelude` in deadlines.rs).
-- KEYS, ARGV: none of its own. Needs DEADLINES (the sorted set of running games),
-- DEADLINE_CHANNEL (where a new earliest deadline is announced) and MAX_REMAINING (the core's
-- MAX_REMAINING_MS) defined before it (`header` in lua.rs).
-- Fields per board b (A, B): ck:b the clock's phase, ck:b:w and ck:b:b each side's clock (packed
-- remaining, quota, moves, stage, moves in stage), dl:b the board's next deadline.
-- earliest(S), is_late(S, now), index(S, id), refile(id, new, old), stop_board(S, b, now, delays),
-- press(a, now), clock_changes(packed), clocks_as_judged(S, changes), timing_refusal(S, timing,
-- now), set_clocks(S, changes): see the module documentation of lua.rs.
local function earliest(S)
  local d = redis.call('HMGET', S, 'dl:A', 'dl:B')
  local best = nil
  for i = 1, 2 do
    local v = tonumber(d[i] or '')
    if v and (not best or v < best) then best = v end
  end
  return best
end
local function is_late(S, now)
  local d = earliest(S)
  return d ~= nil and d <= now
end
local function index(S, id)
  local d = earliest(S)
  if d then
    local first = redis.call('ZRANGE', DEADLINES, 0, 0, 'WITHSCORES')
    redis.call('ZADD', DEADLINES, d, id)
    if not first[2] or d < tonumber(first[2]) then
      redis.call('PUBLISH', DEADLINE_CHANNEL, fmt(d))
    end
  else
    redis.call('ZREM', DEADLINES, id)
  end
end
local function refile(id, new, old)
  if not new then
    redis.call('ZREM', DEADLINES, id)
    return
  end
  if not old or new < old then
    local first = redis.call('ZRANGE', DEADLINES, 0, 0, 'WITHSCORES')
    if not first[2] or new < tonumber(first[2]) then
      redis.call('PUBLISH', DEADLINE_CHANNEL, fmt(new))
    end
  end
  redis.call('ZADD', DEADLINES, new, id)
end
local function stop_board(S, b, now, delays)
  local ph = redis.call('HGET', S, 'ck:' .. b)
  if not ph then return end
  local p = unpk(ph)
  if p[1] == 'F' or p[1] == 'N' or p[1] == 'S' then return end
  if p[1] == 'R' then
    local f = 'ck:' .. b .. ':' .. p[2]
    local side = unpk(redis.call('HGET', S, f))
    local used = now - tonumber(p[3]) - tonumber(delays[tonumber(side[4]) + 1] or '0')
    if used < 0 then used = 0 end
    local rem = tonumber(side[1]) - used
    if rem < 0 then rem = 0 end
    side[1] = fmt(rem)
    redis.call('HSET', S, f, pack(side))
  end
  redis.call('HSET', S, 'ck:' .. b, pack({'S', fmt(now)}), 'dl:' .. b, '')
end
local function press(a, now)
  local since, limit = tonumber(a[1]), tonumber(a[2])
  if now >= since + limit then return nil end
  local rem, quota = tonumber(a[4]), tonumber(a[5])
  local stage_ms, next_limit = tonumber(a[12]), tonumber(a[13])
  if a[3] ~= '1' then
    return {math.min(rem + stage_ms, MAX_REMAINING), quota, 0, 0, 0, now + next_limit}
  end
  local elapsed = now - since
  if elapsed < 0 then elapsed = 0 end
  local comp = tonumber(a[6])
  local charged = elapsed - comp - tonumber(a[7])
  if charged < 0 then charged = 0 end
  if charged > rem then
    comp = comp + charged - rem
    charged = rem
  end
  local bonus = tonumber(a[10]) + math.min(charged, tonumber(a[11]))
  local q = quota + tonumber(a[8]) - comp
  if q < 0 then q = 0 end
  q = math.min(q, tonumber(a[9]))
  local r = math.min(rem - charged + bonus + stage_ms, MAX_REMAINING)
  return {r, q, charged, comp, bonus, now + next_limit}
end
-- A change of clocks decided by the caller (the match service's CLOCK, the clock service's SET):
-- `packed` lists the boards changed, each packed {board, phase, white, black as judged, then the
-- new phase, white, black and deadline} (`fields::encode_change`).
local function clock_changes(packed)
  local out = {}
  for _, c in ipairs(unpk(packed)) do out[#out + 1] = unpk(c) end
  return out
end
-- Whether every changed board's clock fields are still as judged.
local function clocks_as_judged(S, changes)
  for _, c in ipairs(changes) do
    local b = c[1]
    local ck = redis.call('HMGET', S, 'ck:' .. b, 'ck:' .. b .. ':w', 'ck:' .. b .. ':b')
    if ck[1] ~= c[2] or ck[2] ~= c[3] or ck[3] ~= c[4] then return false end
  end
  return true
end
-- Why a change cannot apply at `now`: `late` when it is `live` and a deadline has passed (the flag
-- comes first), `stale` when it waits for deadline `timing` and that has not passed; else nil.
local function timing_refusal(S, timing, now)
  if timing == 'live' then
    if is_late(S, now) then return 'late' end
  elseif now < tonumber(timing) then
    return 'stale'
  end
  return nil
end
-- Writes the changed boards' new clock fields and deadlines.
local function set_clocks(S, changes)
  for _, c in ipairs(changes) do
    local b = c[1]
    redis.call('HSET', S, 'ck:' .. b, c[5], 'ck:' .. b .. ':w', c[6], 'ck:' .. b .. ':b', c[7],
      'dl:' .. b, c[8])
  end
end
