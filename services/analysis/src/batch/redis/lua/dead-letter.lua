-- DEAD_LETTER (services/analysis/src/batch/redis/mod.rs; arguments by name: `DEAD_LETTER_ARGS`)
-- KEYS: the group's (see PRELUDE); key names below are relative to its prefix Q.
-- A: item (its entry id in the work stream), job, game (its index), deliveries, error (the
-- last one), result (the game's failed result, encoded), maxlen (about how many entries the
-- dead-letter stream keeps).
--
-- Moves the item to the dead-letter stream, with its payload as queued (read from its entry,
-- byte for byte), and records its game as failed.
local payload = payload_of(A.item)
redis.call('XADD', Q .. 'dead', 'MAXLEN', '~', A.maxlen, '*', 'item', A.item, 'job', A.job,
  'game', A.game, 'deliveries', A.deliveries, 'error', A.error, 'payload', payload)
store(A.job, A.game, 0, A.result)
redis.call('DEL', Q .. 'err:' .. A.item)
finish(A.item)
return 1
