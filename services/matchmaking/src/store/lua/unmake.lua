-- UNMAKE (services/matchmaking/src/store/redis.rs; arguments by name: `UNMAKE_ARGS`)
-- KEYS: two routing keys (see PRELUDE); runs in the store's slot (MM), then UNMAKE_POOL in the
-- pool's.
-- A: pool (its name), pairing (its id), members (packed: player and session, each), ttl (ms
-- the pairing is remembered as undone, `unmade:<pairing>`).
--
-- A pairing whose match could not be created: players still marked by it wait in the pool
-- again under their sessions; those who left meanwhile (`gone`) are let go. Returns the players
-- who go back (for UNMAKE_POOL), or nil when the pairing's match was recorded (MATCHED).
if redis.call('EXISTS', MM .. 'made:' .. A.pairing) == 1 then return false end
-- Undone for good: a late claim (a wave whose lock ran out) or MATCHED of it changes nothing.
redis.call('SET', MM .. 'unmade:' .. A.pairing, '1', 'PX', A.ttl)
local t = unpk(A.members)
local back = {}
for i = 1, #t, 2 do
  local who = redis.call('HGET', MM .. 'who', t[i])
  if ours(who, A.pool, A.pairing) then
    if split(who, F)[#split(who, F)] == 'gone' then
      redis.call('HDEL', MM .. 'who', t[i])
    else
      redis.call('HSET', MM .. 'who', t[i], 'w' .. F .. A.pool .. F .. t[i + 1])
      back[#back + 1] = t[i]
    end
  end
end
return back
