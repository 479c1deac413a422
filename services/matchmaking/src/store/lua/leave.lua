-- LEAVE (services/matchmaking/src/store/redis.rs; arguments by name: `LEAVE_ARGS`)
-- KEYS: two routing keys (see PRELUDE); runs in the store's slot (MM), then DROP in the pool's.
-- A: player, session (the place that leaves; empty: any).
--
-- A player being matched is marked gone instead: they are not put back into the pool if the
-- match cannot be created. Returns the pool and session of the place left (for DROP), or
-- nothing.
local who = redis.call('HGET', MM .. 'who', A.player)
if not who then return {} end
local w = split(who, F)
-- An offer's accept under way: it took the player out of the pool already.
if w[1] == 'o' then return {} end
if w[1] == 'm' then
  if w[#w] ~= 'gone' then redis.call('HSET', MM .. 'who', A.player, who .. F .. 'gone') end
  return {}
end
if A.session ~= '' and w[3] ~= A.session then return {} end
redis.call('HDEL', MM .. 'who', A.player)
return {w[2], w[3]}
