-- WAITING (services/matchmaking/src/store/redis.rs; arguments by name: `WAITING_ARGS`)
-- KEYS: only two routing keys, never there (they name the store's slot on a cluster): the keys are
-- named from the arguments, after the prefix MM (`mm:`, or `mm:{mm}:` on a cluster) (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
-- A: pool (its name).
--
-- Drops expired places; returns player, joined, record, missed, lease end for each place.
local P = A.pool
local now = tnow()
for _, player in ipairs(redis.call('ZRANGEBYSCORE', pk(P, 'l'), '-inf', fmt(now))) do
  drop(P, player)
  local who = redis.call('HGET', MM .. 'who', player)
  if who then
    local w = split(who, F)
    if w[1] == 'w' and w[2] == P then redis.call('HDEL', MM .. 'who', player) end
  end
end
if redis.call('HLEN', pk(P, 'e')) == 0 and redis.call('HLEN', pk(P, 'k')) == 0 then
  redis.call('SREM', MM .. 'pools', P)
end
local out = {}
local js = redis.call('ZRANGE', pk(P, 'j'), 0, -1, 'WITHSCORES')
for i = 1, #js, 2 do
  local rec = redis.call('HGET', pk(P, 'e'), js[i])
  if rec then
    out[#out + 1] = js[i]
    out[#out + 1] = js[i + 1]
    out[#out + 1] = rec
    out[#out + 1] = redis.call('HGET', pk(P, 'w'), js[i]) or '0'
    out[#out + 1] = redis.call('ZSCORE', pk(P, 'l'), js[i]) or '0'
  end
end
return out
