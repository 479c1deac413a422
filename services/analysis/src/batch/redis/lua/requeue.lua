-- REQUEUE (services/analysis/src/batch/redis/mod.rs; arguments by name: `REQUEUE_ARGS`)
-- KEYS: the group's (see PRELUDE); key names below are relative to its prefix Q.
-- A: item (its entry id in the work stream), consumer (the worker), job, game (its index).
--
-- Puts an item back as a fresh entry (a worker stopping gracefully, or a game of an engine the
-- taker lacks), if the consumer still owns it: its payload is copied from the entry as queued,
-- byte for byte, and so is `tries` (deliveries to remote workers whose leases expired), so that
-- a game that keeps failing still reaches the dead-letter stream.
if not owns(A.item, A.consumer) then return 0 end
local payload = payload_of(A.item)
local tries = '0'
local entry = redis.call('XRANGE', WORK, A.item, A.item)[1]
if entry then
  for i = 1, #entry[2], 2 do
    if entry[2][i] == 'tries' then tries = entry[2][i + 1] end
  end
end
redis.call('XADD', WORK, '*', 'job', A.job, 'game', A.game, 'item', payload, 'tries', tries)
finish(A.item)
return 1
