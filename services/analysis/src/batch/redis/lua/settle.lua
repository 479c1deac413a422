-- SETTLE (services/analysis/src/batch/redis/mod.rs; arguments by name: `SETTLE_ARGS`)
-- KEYS: the ledger's (see RESERVE).
-- A: entries (a packed list: a job id, then its expiry as its group has it in Unix ms, `0` when
-- its group has none, or `-1` to release the place whatever its time, for each job).
--
-- Brings ledger entries past their time up to date: a job that lives on in its group takes the
-- group's expiry; one that does not (expired, or never made: a submission that stopped between
-- its reservation and the job) leaves the ledger with its positions. An entry renewed meanwhile
-- (its time not past any more) is left alone. `-1` releases a reservation whose job was not made
-- (its request was a retry of a job made before). Returns how many entries left the ledger.
local now, n = tnow(), 0
local e = unpk(A.entries)
for i = 1, #e - 1, 2 do
  local id, expiry = e[i], tonumber(e[i + 1])
  local at = redis.call('ZSCORE', KEYS[1], id)
  if at and (expiry < 0 or tonumber(at) <= now) then
    if expiry > now then
      redis.call('ZADD', KEYS[1], expiry, id)
    else
      redis.call('ZREM', KEYS[1], id)
      redis.call('HDEL', KEYS[2], id)
      n = n + 1
    end
  end
end
return n
