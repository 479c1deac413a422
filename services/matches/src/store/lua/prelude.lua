-- PRELUDE (services/matches/src/store/redis.rs)
-- KEYS: the match's eight keys (`invoke`): 1–3 a bughouse match's state hash, events list and done hash; 4–6 a single board's (the script uses whichever exists); 7–8 its chat's list and hash.
--
-- Helpers every script starts with: `pack` (the packed-list encoding of `crate::record`, for
-- the events it writes), `pick` (the three keys of the match, bughouse or single board:
-- state, events, done), `expire`, `live` (a live match's lifetime), `archive` (a finished
-- match to the finished stream), `state` (a reply with the record: the status, the event
-- count, and the hash as a flat array, which costs Redis far less than packing it in Lua).
-- Helpers every script of this store starts with (the module prepends them); no ARGV of its own.
-- ID (the match id, from the first key; none for a script without keys), FINISHED (the
-- finished stream) and PLAYER_INDEX (the prefix of the players' indexes) come before, from the
-- store's layout (`script` in redis.rs).
local function pick()
  if redis.call('EXISTS', KEYS[1]) == 1 then return KEYS[1], KEYS[2], KEYS[3] end
  if redis.call('EXISTS', KEYS[4]) == 1 then return KEYS[4], KEYS[5], KEYS[6] end
  return nil, nil, nil
end
local function expire(S, E, D, ms)
  redis.call('PEXPIRE', S, ms)
  redis.call('PEXPIRE', E, ms)
  redis.call('PEXPIRE', D, ms)
  -- The match's chat (list and hash), if it has one, lives as long as the match.
  if KEYS[7] then
    redis.call('PEXPIRE', KEYS[7], ms)
    redis.call('PEXPIRE', KEYS[8], ms)
  end
end
-- The lifetime of a live match S: `ms`, or longer if the match keeps one of its own (`keep`,
-- set at creation for a correspondence game).
local function live(S, ms)
  local keep = tonumber(redis.call('HGET', S, 'keep') or '0')
  return math.max(tonumber(ms), keep)
end
-- Appends the match S, just finished (its outcome set), to the stream of finished matches
-- (FINISHED, trimmed to about FINISHED_MAX entries), for the platform to archive: the fields
-- fixed at creation, the stored outcome, and the moves in the order played (UCI and SAN,
-- space-separated; bughouse moves prefixed with their board, `A:e2e4`).
local function archive(S, E)
  local f = redis.call('HMGET', S, 'variant', 'rules', 'players', 'tc', 'start', 'outcome')
  local bug = string.sub(S, 1, 4) == 'bug:'
  local uci, san = {}, {}
  for _, line in ipairs(redis.call('LRANGE', E, 0, -1)) do
    local t = unpk(line)
    if t[1] == 'M' then
      local board = ''
      if bug then board = t[2] .. ':' end
      uci[#uci + 1] = board .. t[5]
      san[#san + 1] = board .. t[6]
    end
  end
  redis.call('XADD', FINISHED, 'MAXLEN', '~', FINISHED_MAX, '*',
    'match_id', ID, 'variant', f[1] or '', 'rules', f[2] or '', 'players', f[3] or '',
    'time_control', f[4] or '', 'start', f[5] or '', 'outcome', f[6] or '',
    'moves_uci', table.concat(uci, ' '), 'moves_san', table.concat(san, ' '))
end
-- ANNOUNCE (defined before, `Announcements::lua`): PUBLISH on one Redis, SPUBLISH on the
-- group's shard channel on a cluster.
local function announce()
  ANNOUNCE(ID)
end
local function state(S, E, status)
  return {status, redis.call('LLEN', E), redis.call('HGETALL', S)}
end
local function compact(S, E, status)
  return {status, redis.call('LLEN', E), redis.call('HMGET', S, unpack(MUTABLE)), 'compact'}
end
-- A request id as a script takes it (packed scope, field, fingerprint), or nil.
local function request(arg)
  if arg == '' then return nil end
  return unpk(arg)
end
-- What the match remembers of the request's id (its packed what and fingerprint), if anything.
local function recall(D, rq)
  if not rq then return nil end
  return redis.call('HGET', D, rq[2])
end
-- Why a change of match S cannot apply, before its own guards: its request id is remembered (the
-- reply `done:<what>`), the match is over (`over`), or it is another incarnation than the one
-- judged (`stale`, the nonce differs); nil when the change may go on.
local function refused(S, E, D, rq, nonce)
  local done = recall(D, rq)
  if done then return state(S, E, 'done:' .. done) end
  if redis.call('HGET', S, 'over') == '1' then return state(S, E, 'over') end
  if redis.call('HGET', S, 'nonce') ~= nonce then return state(S, E, 'stale') end
  return nil
end
-- Remembers that the request did `what`, in its scope's ring of WINDOW slots: the slot's former
-- request is forgotten.
local function remember(D, rq, what)
  if not rq then return end
  local n = redis.call('HINCRBY', D, rq[1] .. '#', 1)
  local slot = rq[1] .. '#' .. ((n - 1) % WINDOW)
  local old = redis.call('HGET', D, slot)
  if old then redis.call('HDEL', D, old) end
  redis.call('HSET', D, slot, rq[2], rq[2], pack({what, rq[3]}))
end
