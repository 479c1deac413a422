-- PRELUDE (services/clock/src/store/redis.rs)
-- KEYS: 1 the clock's state hash, 2 its events list (`keys(id)`), 3 the deadline index it is filed
-- in (DEADLINES; declared so that a cluster never runs the script without it).
-- Helpers every script of this store starts with (the module prepends them); no ARGV of its own.
-- ID, the clock's id, comes before (from the first key, as the store's layout names it).
local function state(S, E, status)
  return {status, redis.call('LLEN', E), redis.call('HGETALL', S)}
end
-- ANNOUNCE (defined before, `Announcements::lua`): PUBLISH on one Redis, SPUBLISH on the
-- group's shard channel on a cluster.
local function announce() ANNOUNCE(ID) end
