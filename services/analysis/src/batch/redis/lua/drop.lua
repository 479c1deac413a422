-- DROP (services/analysis/src/batch/redis/mod.rs; arguments by name: `DROP_ARGS`)
-- KEYS: the group's (see PRELUDE); key names below are relative to its prefix Q.
-- A: item (its entry id in the work stream).
--
-- Finishes an item with nothing to record (its job was cancelled or expired).
finish(A.item) return 1
