-- MOVE (services/matches/src/store/redis.rs): a move, its clock press, reserves, events and end,
-- in one step.
-- KEYS: the match's six keys (`keys(id)`): 1–3 a bughouse match's state hash, events list and
-- done hash; 4–6 a single board's (the script uses whichever exists).
-- ARGV: named by `MOVE_ARGS` in redis.rs; the script reads them as `A.<name>`:
--   nonce, board, expected_ply, position; history_mode (`a`, `r` or empty) and history_key;
--   take_side, take_letter (bughouse: what left the mover's reserve); give_board, give_side,
--   give_letter (what went to the partner's); last_move (`LastMove::encode_sent`: the script
--   appends its time); match_side (the mover's side of the match; bughouse: team); move_event
--   (without the position: appended here, with the reserves after the step); end_outcome,
--   end_event; ttl, grace; reply (`compact` or `full`); request (`RequestId::encode`, or empty);
--   with clocks: clocked (`p`), expected (the board clock's 3 fields as judged), plan (the 13
--   values of the press plan, `plan_args`), mover (side letter), moves_after, stage_after,
--   stage_moves_after (the mover's after the move), opening_window (the opponent's first-move
--   window; empty: the clock runs), delays (the stages' simple delays, packed).
-- The reply is compact when the caller holds the match (reply = `compact`): only the fields a
-- change can touch (`MUTABLE_FIELDS`), since the rest is fixed at creation and the nonce
-- matched; a mismatched nonce (a re-created match) gets the whole record.
local S, E, D = pick()
if not S then return {'missing'} end
local rq = request(A.request)
local done = recall(D, rq)
if done then return state(S, E, 'done:' .. done) end
local b = A.board
local clocked = A.clocked == 'p'
local guard
if clocked then
  -- One read for the guards, the board's clock and both boards' deadlines.
  guard = redis.call('HMGET', S, 'over', 'nonce', 'ply:' .. b, 'ck:' .. b, 'ck:' .. b .. ':w',
    'ck:' .. b .. ':b', 'dl:A', 'dl:B')
else
  guard = redis.call('HMGET', S, 'over', 'nonce', 'ply:' .. b)
end
if guard[2] ~= A.nonce then return state(S, E, 'stale') end
local reply = state
if A.reply == 'compact' then reply = compact end
if guard[1] == '1' then return reply(S, E, 'over') end
if guard[3] ~= A.expected_ply then return reply(S, E, 'stale') end
local now, clock, old_dl, other_dl = nil, nil, nil, nil
if clocked then
  now = tnow()
  local dA, dB = tonumber(guard[7] or ''), tonumber(guard[8] or '')
  if (dA and dA <= now) or (dB and dB <= now) then return reply(S, E, 'late') end
  old_dl = dA
  if dB and (not dA or dB < dA) then old_dl = dB end
  other_dl = dB
  if b == 'B' then other_dl = dA end
  if guard[4] ~= A.expected[1] or guard[5] ~= A.expected[2] or guard[6] ~= A.expected[3] then
    return reply(S, E, 'stale')
  end
  clock = press(A.plan, now)
  if not clock then return reply(S, E, 'late') end
  clock.other = guard[5]
  if A.mover == 'w' then clock.other = guard[6] end
end
local ORDER = 'QRBNPqrbnp'
local events = {''}
if A.take_side ~= '' then
  local f = 'res:' .. b .. ':' .. A.take_side
  local r = redis.call('HGET', S, f) or ''
  local at = string.find(r, A.take_letter, 1, true)
  if not at then return state(S, E, 'stale') end
  r = string.sub(r, 1, at - 1) .. string.sub(r, at + 1)
  redis.call('HSET', S, f, r)
  events[#events + 1] = pack({'R', b, A.take_side, r})
end
if A.give_board ~= '' then
  local f = 'res:' .. A.give_board .. ':' .. A.give_side
  local r = redis.call('HGET', S, f) or ''
  local c = A.give_letter
  local rank = string.find(ORDER, c, 1, true)
  local at = #r + 1
  for i = 1, #r do
    if string.find(ORDER, string.sub(r, i, i), 1, true) > rank then at = i break end
  end
  r = string.sub(r, 1, at - 1) .. c .. string.sub(r, at)
  redis.call('HSET', S, f, r)
  events[#events + 1] = pack({'R', A.give_board, A.give_side, r})
end
local at = now or tnow()
local fields = {'pos:' .. b, A.position, 'ply:' .. b, tostring(tonumber(A.expected_ply) + 1),
  'last:' .. b, A.last_move .. pack({fmt(at)})}
if A.history_mode == 'a' then
  redis.call('HSET', S, 'hist:' .. b, (redis.call('HGET', S, 'hist:' .. b) or '') .. A.history_key)
elseif A.history_mode == 'r' then
  redis.call('HSET', S, 'hist:' .. b, A.history_key)
end
local other = 'w'
if A.match_side == 'w' then other = 'b' end
if redis.call('HDEL', S, 'draw:' .. other) == 1 then events[#events + 1] = pack({'X', other}) end
local position = A.position
local white = redis.call('HGET', S, 'res:' .. b .. ':w')
if white then
  local black = redis.call('HGET', S, 'res:' .. b .. ':b') or ''
  local sp = string.find(position, ' ', 1, true) or (#position + 1)
  position = string.sub(position, 1, sp - 1) .. '[' .. white .. black .. ']' .. string.sub(position, sp)
end
events[1] = A.move_event .. pack({position})
remember(D, rq, 'M' .. (redis.call('LLEN', E) + 1))
if clock then
  local mover, opp = A.mover, 'b'
  if mover == 'b' then opp = 'w' end
  local phase
  if A.opening_window ~= '' then
    phase = pack({'O', opp, fmt(now), A.opening_window, '1'})
  else
    phase = pack({'R', opp, fmt(now)})
  end
  local n = #fields
  fields[n + 1], fields[n + 2] = 'ck:' .. b, phase
  fields[n + 3], fields[n + 4] = 'dl:' .. b, fmt(clock[6])
  fields[n + 5] = 'ck:' .. b .. ':' .. mover
  fields[n + 6] = pack({fmt(clock[1]), fmt(clock[2]), A.moves_after, A.stage_after, A.stage_moves_after})
end
redis.call('HSET', S, unpack(fields))
if clock then
  local mover, opp = A.mover, 'b'
  if mover == 'b' then opp = 'w' end
  local rem = {w = fmt(clock[1]), b = fmt(clock[1])}
  rem[opp] = unpk(clock.other)[1]
  -- Whose clock runs from now: nobody's while the opponent's first move is awaited (it is
  -- untimed), as the core's snapshot says.
  local running = opp
  if A.opening_window ~= '' then running = '-' end
  if A.end_outcome ~= '' then
    local delays = unpk(A.delays)
    stop_board(S, 'A', now, delays)
    stop_board(S, 'B', now, delays)
    running = '-'
  end
  events[#events + 1] = pack({'C', b, rem.w, rem.b, running, fmt(now)})
end
local ttl = live(S, A.ttl)
if A.end_outcome ~= '' then
  redis.call('HSET', S, 'over', '1', 'outcome', A.end_outcome .. pack({fmt(at)}))
  events[#events + 1] = A.end_event
  ttl = A.grace
end
redis.call('RPUSH', E, unpack(events))
if A.end_outcome ~= '' then archive(S, E) end
expire(S, E, D, ttl)
if clock then
  if A.end_outcome ~= '' then
    refile(ID, nil, old_dl)
  else
    local new_dl = clock[6]
    if other_dl and other_dl < new_dl then new_dl = other_dl end
    refile(ID, new_dl, old_dl)
  end
end
announce()
return reply(S, E, 'ok')
