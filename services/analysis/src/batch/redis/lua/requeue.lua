-- REQUEUE (services/analysis/src/batch/redis/mod.rs)
-- KEYS: none: the keys are named from the job id in the arguments (`an:j:<id>`, …) and the stream names.
--
-- ARGV: item, consumer, job, game, payload. Puts an item back as a fresh entry (a worker
-- stopping gracefully), if the consumer still owns it.
if not owns(ARGV[1], ARGV[2]) then return 0 end
redis.call('XADD', WORK, '*', 'job', ARGV[3], 'game', ARGV[4], 'item', ARGV[5])
finish(ARGV[1])
return 1
