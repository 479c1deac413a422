-- PRELUDE (services/matchmaking/src/store/redis.rs)
-- KEYS: only two routing keys, never there (they name the script's slot on a cluster): the keys
-- are named from the arguments. A pool's keys are `mm:q:{<pool>}:…` (MQ, `pk`), in the pool's
-- own slot; every other key follows the prefix MM (`mm:`, or `mm:{mm}:` on a cluster: one slot).
-- A script touches the keys of one of those slots only (redis.rs says which).
--
-- Follows `arbiter_redis_conn::script::BASICS` (`pack`, `unpk`, `fmt`, `tnow`).
-- Helpers every script of this store starts with (the module prepends them, before the Lua that
-- names the script's arguments, `A`); no arguments of its own.
local F = '\31'
local function pk(P, s) return MQ .. '{' .. P .. '}:' .. s end
local function split(s, sep)
  local t, i = {}, 1
  while true do
    local j = string.find(s, sep, i, true)
    if not j then t[#t + 1] = string.sub(s, i) return t end
    t[#t + 1] = string.sub(s, i, j - 1)
    i = j + 1
  end
end
-- The session a pool entry record starts with.
local function session_of(rec) return split(rec, F)[1] end
local function drop(P, player)
  redis.call('HDEL', pk(P, 'e'), player)
  redis.call('ZREM', pk(P, 'l'), player)
  redis.call('ZREM', pk(P, 'j'), player)
  redis.call('HDEL', pk(P, 'w'), player)
end
-- Records a rating change (`change`, as `Change::encode` writes it) in `player`'s history for
-- rating key `key` (`mm:rh:<key>:<player>`, oldest first, each item packed as sequence number
-- and change), keeping the latest `limit`.
local function record_change(player, key, change, limit)
  local hk = MM .. 'rh:' .. key .. ':' .. player
  local last = redis.call('LINDEX', hk, -1)
  local seq = 1
  if last then seq = (tonumber(unpk(last)[1]) or 0) + 1 end
  redis.call('RPUSH', hk, pack({fmt(seq), change}))
  redis.call('LTRIM', hk, -limit, -1)
end
-- Whether a player's state `who` marks them being matched by `pairing` of pool `P` (`m` P
-- pairing, `gone` after it when they left meanwhile; a mark without a pairing, `m` P, is one
-- an earlier version wrote, when a pool's pairings were committed with the marks in one step).
local function ours(who, P, pairing)
  if not who then return false end
  local mine = 'm' .. F .. P
  return who == mine .. F .. pairing or who == mine .. F .. pairing .. F .. 'gone'
    or who == mine or who == mine .. F .. 'gone'
end
