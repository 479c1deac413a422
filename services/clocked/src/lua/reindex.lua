-- REINDEX (services/clocked/src/lua.rs): files a game in the deadline index again,
-- announcing a new earliest deadline. Needs the header (DEADLINE_CHANNEL).
-- KEYS: 1 the deadline index.
-- ARGV: 1 the game's deadline (Unix ms), or empty to remove it; 2 its id.
local id = ARGV[2]
if ARGV[1] == '' then
  redis.call('ZREM', KEYS[1], id)
  return 0
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
redis.call('ZADD', KEYS[1], ARGV[1], id)
if not first[2] or tonumber(ARGV[1]) < tonumber(first[2]) then
  redis.call('PUBLISH', DEADLINE_CHANNEL, ARGV[1])
end
return 1
