-- CLAIM (services/matchmaking/src/store/redis.rs; arguments by name: `CLAIM_ARGS`)
-- KEYS: two routing keys (see PRELUDE); runs in the store's slot (MM), after COMMIT.
-- A: pool (its name), pairings (packed: each pairing, itself packed: its id, then its players
-- and their sessions packed, as COMMIT answered them).
--
-- Each committed pairing becomes its players' only one: each player's state must still say
-- they wait in the pool under that session (or already name this pairing: a retry); then all
-- are marked being matched by it (`m` pool pairing; `gone` after it kept), else none is.
-- Returns per pairing, packed: `made` when its match was recorded already (MATCHED), `ok`, or
-- `void` and the players whose state moved on (a leave, a join elsewhere, an offer's accept:
-- their places in the pool were ghosts, left for a moment by a step not yet done there), or
-- `undone` (UNMAKE gave it up, `unmade:<pairing>`) and the players who do not go back.
local out = {}
for n, packed in ipairs(unpk(A.pairings)) do
  local p = unpk(packed)
  local pairing, t = p[1], unpk(p[2])
  -- Undone (UNMAKE ran, perhaps for another replica's wave): never claimed again; every
  -- player counts as moved on but those UNMAKE gave their places back.
  local undone = redis.call('EXISTS', MM .. 'unmade:' .. pairing) == 1
  if redis.call('EXISTS', MM .. 'made:' .. pairing) == 1 then
    out[n] = pack({'made'})
  else
    local void = {'void'}
    for i = 1, #t, 2 do
      local who = redis.call('HGET', MM .. 'who', t[i])
      local waits = who == 'w' .. F .. A.pool .. F .. t[i + 1]
      if undone then
        if not waits then void[#void + 1] = t[i] end
      elseif not (waits or ours(who, A.pool, pairing)) then
        void[#void + 1] = t[i]
      end
    end
    if undone then void[1] = 'undone' end
    if undone or #void > 1 then
      out[n] = pack(void)
    else
      for i = 1, #t, 2 do
        local who = redis.call('HGET', MM .. 'who', t[i])
        if string.sub(who, 1, 1) == 'w' then
          redis.call('HSET', MM .. 'who', t[i], 'm' .. F .. A.pool .. F .. pairing)
        end
      end
      out[n] = pack({'ok'})
    end
  end
end
return out
