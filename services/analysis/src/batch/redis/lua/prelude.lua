-- PRELUDE (services/analysis/src/batch/redis/mod.rs)
-- KEYS: the slot group's work stream (`<Q>work`) and `<Q>absent` (a key that never exists), for
-- every script of this store: every other key is named from the group's prefix Q (`an:` on one
-- Redis, `an:{<group tag>}:` on a cluster) and the arguments, in the same slot. A slot being
-- migrated holds `absent` on neither node, so the cluster answers TRYAGAIN until the migration
-- ends rather than run a script some of whose keys have moved.
-- Helpers every script of this store starts with (the module prepends them, after
-- `arbiter_redis_conn::script::BASICS` and before the script's named arguments); no arguments
-- of its own.
local WORK, GROUP = KEYS[1], 'an:workers'
local Q = string.sub(KEYS[1], 1, -5)
-- The payload of work item `item` as queued (its `item` field, byte for byte), or empty.
local function payload_of(item)
  local entry = redis.call('XRANGE', WORK, item, item)[1]
  if entry then
    local fields = entry[2]
    for i = 1, #fields, 2 do
      if fields[i] == 'item' then return fields[i + 1] end
    end
  end
  return ''
end
local function renew(id)
  local J = Q .. 'j:' .. id
  local ttl = tonumber(redis.call('HGET', J, 'ttl'))
  redis.call('PEXPIRE', J, ttl)
  redis.call('PEXPIRE', J .. ':r', ttl)
  redis.call('PEXPIRE', J .. ':p', ttl)
  redis.call('PEXPIRE', Q .. 'rid:' .. redis.call('HGET', J, 'rid'), ttl)
  redis.call('ZADD', Q .. 'jobs', tnow() + ttl, id)
end
local function game_of(J, g)
  local n = tonumber(g)
  if n and n >= 0 and n == math.floor(n) and n < tonumber(redis.call('HGET', J, 'games')) then
    return tostring(n)
  end
  return nil
end
local function advance(id, game, n)
  local P = Q .. 'j:' .. id .. ':p'
  local old = tonumber(redis.call('HGET', P, game) or '0')
  if n > old then
    redis.call('HSET', P, game, n)
    redis.call('HINCRBY', Q .. 'j:' .. id, 'pos', n - old)
  end
end
local function store(id, g, n, result)
  local J = Q .. 'j:' .. id
  if redis.call('EXISTS', J) == 0 then return 0 end
  local game = game_of(J, g)
  if not game then return 0 end
  local fresh = redis.call('HSETNX', J .. ':r', game, result)
  if fresh == 1 then redis.call('HINCRBY', J, 'done', 1) end
  redis.call('HSET', J, 'started', 1)
  advance(id, game, n)
  renew(id)
  return fresh
end
local function owns(item, consumer)
  local p = redis.call('XPENDING', WORK, GROUP, item, item, 1)
  return #p == 1 and p[1][2] == consumer
end
local function finish(item)
  redis.call('XACK', WORK, GROUP, item)
  redis.call('XDEL', WORK, item)
end
-- Ends remote lease `id` without a result: its game back in the work stream as a fresh entry
-- (its delivery count carried in `tries`) unless it has its result or its job was cancelled
-- or expired. 1 when the lease was live.
local function release(id)
  local L = Q .. 'lease:' .. id
  local h = redis.call('HMGET', L, 'job', 'game', 'item', 'state', 'tries', 'worker')
  redis.call('ZREM', Q .. 'leases', id)
  if h[6] then redis.call('SREM', Q .. 'wl:' .. h[6], id) end
  if h[4] ~= 'active' then return 0 end
  local J = Q .. 'j:' .. h[1]
  local requeued = ''
  if redis.call('HEXISTS', J .. ':r', h[2]) == 0 and redis.call('HGET', J, 'cancelled') == '0' then
    requeued = redis.call('XADD', WORK, '*', 'job', h[1], 'game', h[2], 'item', h[3], 'tries', h[5] or '0')
  end
  redis.call('HSET', L, 'state', 'expired', 'requeued', requeued)
  return 1
end
