-- OFFERS (services/matchmaking/src/store/redis.rs)
-- KEYS: only two routing keys, never there (they name the store's slot on a cluster): the keys are
-- named from the arguments, after the prefix MM (`mm:`, or `mm:{mm}:` on a cluster). Helpers of the challenge and seek scripts
-- (prepended after PRELUDE, before the Lua that names the script's arguments; no arguments of
-- their own).
--
-- Keys: `mm:of:<id>` (an offer: hash of i its id, k kind `ch`/`sk`, r terms, o owner, t challenged
-- player, v variant, g rating, s state, c created, x expiry, u last change, a acceptor,
-- q accept request id, m match id, d decline reason code, f the acceptor's stored match found); `mm:ofq:<packed owner, kind,
-- request id>` (a creation: f fingerprint, i offer id); `mm:ofo:<kind>:<owner>` (open offers by
-- expiry); `mm:ofi:<player>` (pending incoming challenges by expiry); `mm:ofr:<player>` (recent
-- challenges by creation); `mm:seeks` and `mm:seeks:<variant>` (the lobby by expiry);
-- `mm:ofn:<kind>:<owner>` (hash: n, offers of that kind the owner created in the current window,
-- which the key's expiry ends); `mm:ofa` (accepts under way: offer ids by their last heartbeat,
-- `u`). An accept under way marks both players in `mm:who` as `o` <offer id> <deadline>: being
-- matched by that offer while it is accepting (whatever the deadline: an accept is finished,
-- resumed or released, never lapses), or, once it is not, until the deadline.
local function ofkey(id) return MM .. 'of:' .. id end
local function oget(id, f) return redis.call('HGET', ofkey(id), f) end
-- Takes an offer out of the open sets and the lobby.
local function unlist(id)
  local k, o = oget(id, 'k'), oget(id, 'o')
  if not k then return end
  redis.call('ZREM', MM .. 'ofo:' .. k .. ':' .. o, id)
  if k == 'ch' then
    redis.call('ZREM', MM .. 'ofi:' .. oget(id, 't'), id)
  else
    redis.call('ZREM', MM .. 'seeks', id)
    redis.call('ZREM', MM .. 'seeks:' .. oget(id, 'v'), id)
  end
end
-- Puts an open offer (back) into the open sets and the lobby.
local function relist(id)
  local k, o, x = oget(id, 'k'), oget(id, 'o'), oget(id, 'x')
  redis.call('ZADD', MM .. 'ofo:' .. k .. ':' .. o, x, id)
  if k == 'ch' then
    redis.call('ZADD', MM .. 'ofi:' .. oget(id, 't'), x, id)
  else
    redis.call('ZADD', MM .. 'seeks', x, id)
    redis.call('ZADD', MM .. 'seeks:' .. oget(id, 'v'), x, id)
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
-- Keeps offer `id`'s hash until `memory` ms past the later of its expiry and `now`: never
-- shorter than it already lives, as every step sets it so (creation: expiry + memory) and the
-- store's time only grows.
local function keep(id, now, memory)
  local at = math.max(tonumber(oget(id, 'x')) or now, now) + tonumber(memory)
  redis.call('PEXPIRE', ofkey(id), fmt(at - now))
end
-- Whether the `o` mark `w` (split) still holds at `now`: its offer is accepting, or its deadline
-- is ahead.
local function held(w, now)
  if redis.call('HGET', ofkey(w[2]), 's') == 'accepting' then return true end
  return tonumber(w[3] or '0') > now
end
-- Records a heartbeat of offer `id`'s accept under way at `now` (the offer's `u`, `mm:ofa`) and
-- renews its players' marks (those still its own) to `deadline`.
local function beat(id, now, deadline)
  redis.call('HSET', ofkey(id), 'u', fmt(now))
  redis.call('ZADD', MM .. 'ofa', fmt(now), id)
  for _, f in ipairs({'o', 'a'}) do
    local p = oget(id, f)
    local who = p and redis.call('HGET', MM .. 'who', p)
    if who and split(who, F)[1] == 'o' and split(who, F)[2] == id then
      redis.call('HSET', MM .. 'who', p, 'o' .. F .. id .. F .. fmt(deadline))
    end
  end
end
-- Whether `player` may not take part in an accept of offer `id`: they hold an unacknowledged
-- match found, a pool pairing is being made for them, or another offer's accept is under way.
local function busy(player, id, now)
  if redis.call('HLEN', MM .. 'found:' .. player) > 0 then return true end
  local who = redis.call('HGET', MM .. 'who', player)
  if not who then return false end
  local w = split(who, F)
  if w[1] == 'm' then return true end
  if w[1] == 'o' then return w[2] ~= id and held(w, now) end
  return false
end
-- The places in pools the claims below took from their players (pool, player, session, each):
-- the caller drops them in their pools' slots (DROP) once the script is done.
local DROPS = {}
-- Marks `player` matched by offer `id` until `deadline`; a place they held in a pool joins
-- DROPS.
local function claim(player, id, deadline)
  local who = redis.call('HGET', MM .. 'who', player)
  if who then
    local w = split(who, F)
    if w[1] == 'w' then
      DROPS[#DROPS + 1] = w[2]
      DROPS[#DROPS + 1] = player
      DROPS[#DROPS + 1] = w[3] or ''
    end
  end
  redis.call('HSET', MM .. 'who', player, 'o' .. F .. id .. F .. fmt(deadline))
end
-- Clears `player`'s mark if offer `id`'s accept set it.
local function unclaim(player, id)
  if not player or player == '' then return end
  local who = redis.call('HGET', MM .. 'who', player)
  if who and split(who, F)[1] == 'o' and split(who, F)[2] == id then
    redis.call('HDEL', MM .. 'who', player)
  end
end
