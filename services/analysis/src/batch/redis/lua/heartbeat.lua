-- HEARTBEAT (services/analysis/src/batch/redis/mod.rs; arguments by name: `HEARTBEAT_ARGS`)
-- KEYS: the group's (see PRELUDE); key names below are relative to its prefix Q.
-- A: job, game (its index), done (positions of the game analysed so far), item (its entry id
-- in the work stream), consumer (the worker).
--
-- Keeps the item the consumer's (resetting its idle time) and records progress: `ok`, or why
-- to stop (`lost`: another worker has the item; `gone`: the job expired; `cancelled`).
if not owns(A.item, A.consumer) then return 'lost' end
redis.call('XCLAIM', WORK, GROUP, A.consumer, 0, A.item, 'JUSTID')
local J = Q .. 'j:' .. A.job
if redis.call('EXISTS', J) == 0 then return 'gone' end
if redis.call('HGET', J, 'cancelled') == '1' then return 'cancelled' end
local game = game_of(J, A.game)
if not game then return 'gone' end
redis.call('HSET', J, 'started', 1)
advance(A.job, game, tonumber(A.done))
renew(A.job)
return 'ok'
