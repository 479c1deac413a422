-- MATCHED (services/matchmaking/src/store/redis.rs)
-- KEYS: none: the keys are named from the arguments (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
--
-- ARGV: pool, pairing, match id, follow record, found TTL, found count, then per found:
-- player, match id, message; then per history: player, record. The match is filed to be
-- followed at once (its lease already run out: any replica's follower claims it).
local P = ARGV[1]
local rec = redis.call('HGET', pk(P, 'k'), ARGV[2])
if not rec then return 0 end
redis.call('HDEL', pk(P, 'k'), ARGV[2])
local now = tnow()
local r = unpk(rec)
local M = pk(P, 'm')
local mean = tonumber(redis.call('HGET', M, 'mean') or '0')
for i = 2, #r, 5 do
  local wait = math.max(0, now - tonumber(r[i + 2]))
  if mean == 0 then mean = wait else mean = mean - math.floor(mean / 8) + math.floor(wait / 8) end
  local who = redis.call('HGET', 'mm:who', r[i])
  if who == 'm' .. F .. P or who == 'm' .. F .. P .. F .. 'gone' then redis.call('HDEL', 'mm:who', r[i]) end
end
redis.call('HSET', M, 'mean', fmt(mean))
local at = 7
for i = 1, tonumber(ARGV[6]) do
  redis.call('HSET', 'mm:found:' .. ARGV[at], ARGV[at + 1], ARGV[at + 2])
  redis.call('PEXPIRE', 'mm:found:' .. ARGV[at], ARGV[5])
  at = at + 3
end
while at < #ARGV do
  redis.call('HSET', 'mm:h', ARGV[at], ARGV[at + 1])
  at = at + 2
end
redis.call('ZADD', 'mm:follow', fmt(now), ARGV[3])
redis.call('HSET', 'mm:follow:d', ARGV[3], ARGV[4])
return 1
