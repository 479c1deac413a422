-- WAITING (services/matchmaking/src/store/redis.rs; arguments by name: `WAITING_ARGS`)
-- KEYS: two routing keys (see PRELUDE); runs in the pool's slot (then UNWHO in the store's, for
-- the places that expired).
-- A: pool (its name).
--
-- Drops expired places. Returns 1 when the pool is empty (no places, no pairings being made)
-- else 0, then the expired places packed (player and session, each), then player, joined,
-- record, missed, lease end for each place.
local P = A.pool
local now = tnow()
local expired = {}
for _, player in ipairs(redis.call('ZRANGEBYSCORE', pk(P, 'l'), '-inf', fmt(now))) do
  local rec = redis.call('HGET', pk(P, 'e'), player)
  if rec then
    expired[#expired + 1] = player
    expired[#expired + 1] = session_of(rec)
  end
  drop(P, player)
end
local empty = redis.call('HLEN', pk(P, 'e')) == 0 and redis.call('HLEN', pk(P, 'k')) == 0
local out = {empty and 1 or 0, pack(expired)}
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
