-- LIFT (services/analysis/src/batch/redis/mod.rs; arguments by name: `LIFT_ARGS`)
-- KEYS: none: the refusals are the hash `an:refusals`.
-- A: worker (the remote worker), refusal (the id its key's `lift_work_refusal` names).
--
-- Lifts the worker's refusal if it is this one: 1 when it was lifted.
if redis.call('HGET', 'an:refusals', A.worker) ~= A.refusal then return 0 end
redis.call('HDEL', 'an:refusals', A.worker)
return 1
