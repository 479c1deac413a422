-- IMPORT (services/matchmaking/src/store/redis.rs; arguments by name: `IMPORT_ARGS`)
-- KEYS: only two routing keys, never there (they name the store's slot on a cluster): the keys are
-- named from the arguments, after the prefix MM (`mm:`, or `mm:{mm}:` on a cluster) (`mm:imp:<request>`, `mm:r:<player>`,
-- `mm:rh:<key>:<player>`).
-- A: request (the import's request id), fingerprint (of its content), outcomes (one letter per
-- entry), ttl (ms the request id is remembered), limit (rating changes kept per player and
-- key), writes (one argument per entry, packed: player, key, old record (empty: none), new
-- record (empty: skipped), the change for the rating history).
-- Answers {'replayed', fingerprint, outcomes} for a request id seen before (nothing changes),
-- {'conflict'} when a record is no longer as read, else {'done'}.
local rk = MM .. 'imp:' .. A.request
local seen = redis.call('HGETALL', rk)
if #seen > 0 then
  local h = {}
  for i = 1, #seen, 2 do h[seen[i]] = seen[i + 1] end
  return {'replayed', h.f or '', h.o or ''}
end
local writes = {}
for i, packed in ipairs(A.writes) do writes[i] = unpk(packed) end
for _, w in ipairs(writes) do
  local cur = redis.call('HGET', MM .. 'r:' .. w[1], w[2]) or ''
  if cur ~= w[3] then return {'conflict'} end
end
local limit = tonumber(A.limit)
for _, w in ipairs(writes) do
  if w[4] ~= '' then
    redis.call('HSET', MM .. 'r:' .. w[1], w[2], w[4])
    record_change(w[1], w[2], w[5], limit)
  end
end
redis.call('HSET', rk, 'f', A.fingerprint, 'o', A.outcomes)
redis.call('PEXPIRE', rk, A.ttl)
return {'done'}
