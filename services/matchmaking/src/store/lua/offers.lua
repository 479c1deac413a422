-- OFFERS (services/matchmaking/src/store/redis.rs)
-- KEYS: none: the keys are named from the arguments. Helpers of the challenge and seek scripts
-- (prepended after PRELUDE, before the Lua that names the script's arguments; no arguments of
-- their own).
--
-- Keys: `mm:of:<id>` (an offer: hash of i its id, k kind `ch`/`sk`, r terms, o owner, t challenged
-- player, v variant, g rating, s state, c created, x expiry, u last change, a acceptor,
-- q accept request id, m match id, d decline reason code); `mm:ofq:<packed owner, kind,
-- request id>` (a creation: f fingerprint, i offer id); `mm:ofo:<kind>:<owner>` (open offers by
-- expiry); `mm:ofi:<player>` (pending incoming challenges by expiry); `mm:ofr:<player>` (recent
-- challenges by creation); `mm:seeks` and `mm:seeks:<variant>` (the lobby by expiry).
local function ofkey(id) return 'mm:of:' .. id end
local function oget(id, f) return redis.call('HGET', ofkey(id), f) end
-- Takes an offer out of the open sets and the lobby.
local function unlist(id)
  local k, o = oget(id, 'k'), oget(id, 'o')
  if not k then return end
  redis.call('ZREM', 'mm:ofo:' .. k .. ':' .. o, id)
  if k == 'ch' then
    redis.call('ZREM', 'mm:ofi:' .. oget(id, 't'), id)
  else
    redis.call('ZREM', 'mm:seeks', id)
    redis.call('ZREM', 'mm:seeks:' .. oget(id, 'v'), id)
  end
end
-- Puts an open offer (back) into the open sets and the lobby.
local function relist(id)
  local k, o, x = oget(id, 'k'), oget(id, 'o'), oget(id, 'x')
  redis.call('ZADD', 'mm:ofo:' .. k .. ':' .. o, x, id)
  if k == 'ch' then
    redis.call('ZADD', 'mm:ofi:' .. oget(id, 't'), x, id)
  else
    redis.call('ZADD', 'mm:seeks', x, id)
    redis.call('ZADD', 'mm:seeks:' .. oget(id, 'v'), x, id)
  end
end
-- Drops the offers of sorted set `z` that expired by `now` (from every set they are in).
local function prune(z, now)
  local old = redis.call('ZRANGEBYSCORE', z, '-inf', fmt(now))
  for _, id in ipairs(old) do
    if redis.call('EXISTS', ofkey(id)) == 1 then unlist(id) end
    redis.call('ZREM', z, id)
  end
end
-- `status` followed by the offer's fields and values (none when it is gone).
local function reply(status, id)
  local r = {status}
  if id then
    for _, v in ipairs(redis.call('HGETALL', ofkey(id))) do r[#r + 1] = v end
  end
  return r
end
