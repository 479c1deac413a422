-- RECORD (services/analysis/src/batch/redis/mod.rs; arguments by name: `RECORD_ARGS`)
-- KEYS: the group's (see PRELUDE); key names below are relative to its prefix Q.
-- A: job, game (its index), positions (of the game), item (its entry id in the work stream),
-- result (encoded).
--
-- Stores the result once and finishes the item; 1 when the result was new.
local fresh = store(A.job, A.game, tonumber(A.positions), A.result)
finish(A.item)
return fresh
