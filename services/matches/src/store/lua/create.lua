-- CREATE (services/matches/src/store/redis.rs; arguments by name: `CREATE_ARGS`)
-- KEYS: the match's six keys (`keys(id)`): 1–3 a bughouse match's state hash, events list and done hash; 4–6 a single board's (the script uses whichever exists).
--
-- A: kind (`bug` or `game`), ttl (ms), index_ttl (ms) and index_max (each player's index of
-- matches: PLAYER_INDEX .. <player id>, a sorted set of match ids by creation time,
-- the newest index_max kept), players (packed player ids), fields (the record's fields: field,
-- value, …).
local S, E, D = pick()
if S then return state(S, E, 'exists') end
if A.kind == 'bug' then S, E, D = KEYS[1], KEYS[2], KEYS[3] else S, E, D = KEYS[4], KEYS[5], KEYS[6] end
redis.call('DEL', E, D, KEYS[7], KEYS[8])
redis.call('HSET', S, unpack(A.fields))
redis.call('PEXPIRE', S, A.ttl)
index(S, ID)
local now = tnow()
for _, player in ipairs(unpk(A.players)) do
  local P = PLAYER_INDEX .. player
  redis.call('ZADD', P, now, ID)
  redis.call('ZREMRANGEBYRANK', P, 0, -(tonumber(A.index_max) + 1))
  redis.call('PEXPIRE', P, A.index_ttl)
end
return state(S, E, 'created')
