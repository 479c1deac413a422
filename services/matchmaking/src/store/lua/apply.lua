-- APPLY (services/matchmaking/src/store/redis.rs; arguments by name: `APPLY_ARGS`)
-- KEYS: only two routing keys, never there (they name the store's slot on a cluster): the keys are
-- named from the arguments, after the prefix MM (`mm:`, or `mm:{mm}:` on a cluster) (pool `mm:q:{pool}:…`, player `mm:found:<player>`, …).
-- A: match_id (the rated match), ttl (ms its id is remembered as rated), limit (rating changes
-- kept per player and key), writes (one argument per rating write, packed: player, key, old
-- record (empty: none), new record, the change for the rating history).
local function unfollow()
  redis.call('ZREM', MM .. 'follow', A.match_id)
  redis.call('HDEL', MM .. 'follow:d', A.match_id)
end
if redis.call('EXISTS', MM .. 'rated:' .. A.match_id) == 1 then unfollow() return 'already' end
local writes = {}
for i, packed in ipairs(A.writes) do writes[i] = unpk(packed) end
for _, w in ipairs(writes) do
  local cur = redis.call('HGET', MM .. 'r:' .. w[1], w[2]) or ''
  if cur ~= w[3] then return 'conflict' end
end
local limit = tonumber(A.limit)
for _, w in ipairs(writes) do
  redis.call('HSET', MM .. 'r:' .. w[1], w[2], w[4])
  record_change(w[1], w[2], w[5], limit)
end
redis.call('SET', MM .. 'rated:' .. A.match_id, '1', 'PX', A.ttl)
unfollow()
return 'done'
