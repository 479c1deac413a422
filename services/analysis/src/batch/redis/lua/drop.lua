-- DROP (services/analysis/src/batch/redis/mod.rs)
-- KEYS: none: the keys are named from the job id in the arguments (`an:j:<id>`, …) and the stream names.
--
-- ARGV: item. Finishes an item with nothing to record (its job was cancelled or expired).
finish(ARGV[1]) return 1
