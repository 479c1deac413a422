-- REQUEUE (services/analysis/src/batch/redis/mod.rs; arguments by name: `REQUEUE_ARGS`)
-- KEYS: none: the keys are named from the job id in the arguments (`an:j:<id>`, …) and the stream names.
-- A: item (its entry id in the work stream), consumer (the worker), job, game (its index).
--
-- Puts an item back as a fresh entry (a worker stopping gracefully), if the consumer still
-- owns it: its payload is copied from the entry as queued, byte for byte.
if not owns(A.item, A.consumer) then return 0 end
local payload = payload_of(A.item)
redis.call('XADD', WORK, '*', 'job', A.job, 'game', A.game, 'item', payload)
finish(A.item)
return 1
