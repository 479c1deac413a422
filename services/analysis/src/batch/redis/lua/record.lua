-- RECORD (services/analysis/src/batch/redis/mod.rs)
-- KEYS: none: the keys are named from the job id in the arguments (`an:j:<id>`, …) and the stream names.
--
-- ARGV: job, game, positions of the game, item, encoded result. Stores the result once and
-- finishes the item; 1 when the result was new.
local fresh = store(ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[5])
finish(ARGV[4])
return fresh
