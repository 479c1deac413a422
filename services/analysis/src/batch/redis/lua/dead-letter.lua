-- DEAD_LETTER (services/analysis/src/batch/redis/mod.rs)
-- KEYS: none: the keys are named from the job id in the arguments (`an:j:<id>`, …) and the stream names.
--
-- ARGV: item, job, game, deliveries, error, payload, encoded failed result. Moves the item to
-- the dead-letter stream and records its game as failed.
redis.call('XADD', 'an:dead', 'MAXLEN', '~', ARGV[8], '*', 'item', ARGV[1], 'job', ARGV[2],
  'game', ARGV[3], 'deliveries', ARGV[4], 'error', ARGV[5], 'payload', ARGV[6])
store(ARGV[2], ARGV[3], 0, ARGV[7])
redis.call('DEL', 'an:err:' .. ARGV[1])
finish(ARGV[1])
return 1
