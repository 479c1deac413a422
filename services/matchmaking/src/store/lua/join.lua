-- JOIN (services/matchmaking/src/store/redis.rs)
-- KEYS: none: the keys are named from the arguments (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
--
-- ARGV: pool, player, session, entry record, lease ms, max waiting, max pools. The limits are
-- checked first: a refused join changes nothing.
local P, player = ARGV[1], ARGV[2]
if redis.call('HLEN', 'mm:found:' .. player) > 0 then return {'found'} end
local now = tnow()
local joined, missed = now, '0'
local who = redis.call('HGET', 'mm:who', player)
local old = nil
if who then
  local w = split(who, F)
  if w[1] == 'm' then return {'matching'} end
  old = w[2]
end
if old ~= P then
  if redis.call('HLEN', pk(P, 'e')) >= tonumber(ARGV[6]) then return {'full'} end
  if redis.call('SISMEMBER', 'mm:pools', P) == 0 and redis.call('SCARD', 'mm:pools') >= tonumber(ARGV[7]) then
    return {'pools'}
  end
end
if old then
  if old == P then
    joined = tonumber(redis.call('ZSCORE', pk(P, 'j'), player) or now)
    missed = redis.call('HGET', pk(P, 'w'), player) or '0'
  end
  drop(old, player)
end
redis.call('HSET', pk(P, 'e'), player, ARGV[4])
redis.call('ZADD', pk(P, 'l'), fmt(now + tonumber(ARGV[5])), player)
redis.call('ZADD', pk(P, 'j'), fmt(joined), player)
redis.call('HSET', pk(P, 'w'), player, missed)
redis.call('HSET', 'mm:who', player, 'w' .. F .. P .. F .. ARGV[3])
redis.call('SADD', 'mm:pools', P)
return {'waiting', redis.call('HLEN', pk(P, 'e'))}
