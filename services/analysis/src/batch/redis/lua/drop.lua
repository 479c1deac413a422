-- DROP (services/analysis/src/batch/redis/mod.rs; arguments by name: `DROP_ARGS`)
-- KEYS: none: the keys are named from the job id in the arguments (`an:j:<id>`, …) and the stream names.
-- A: item (its entry id in the work stream).
--
-- Finishes an item with nothing to record (its job was cancelled or expired).
finish(A.item) return 1
