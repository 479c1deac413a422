-- PLACE_WHO (services/matchmaking/src/store/redis.rs; arguments by name: `PLACE_WHO_ARGS`)
-- KEYS: two routing keys (see PRELUDE); runs in the store's slot (MM).
-- A: player.
--
-- For a place its pool no longer holds: `matching` while an offer's accept under way took the
-- player out of the pool (their stream waits for its outcome), else `gone`.
local who = redis.call('HGET', MM .. 'who', A.player)
if not who then return 'gone' end
local w = split(who, F)
if w[1] == 'o' and (redis.call('HGET', MM .. 'of:' .. w[2], 's') == 'accepting' or tonumber(w[3] or '0') > tnow()) then
  return 'matching'
end
return 'gone'
