-- LIFT (services/analysis/src/batch/redis/mod.rs; arguments by name: `LIFT_ARGS`)
-- KEYS: the group's (see PRELUDE); key names below are relative to its prefix Q.
-- A: worker (the remote worker), refusal (the id its key's `lift_work_refusal` names).
--
-- Lifts the worker's refusal if it is this one: 1 when it was lifted.
if redis.call('HGET', Q .. 'refusals', A.worker) ~= A.refusal then return 0 end
redis.call('HDEL', Q .. 'refusals', A.worker)
return 1
