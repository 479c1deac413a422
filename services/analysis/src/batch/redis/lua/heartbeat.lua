-- HEARTBEAT (services/analysis/src/batch/redis/mod.rs)
-- KEYS: none: the keys are named from the job id in the arguments (`an:j:<id>`, …) and the stream names.
--
-- ARGV: job, game, positions done, item, consumer. Keeps the item the consumer's (resetting
-- its idle time) and records progress: `ok`, or why to stop (`lost`: another worker has the
-- item; `gone`: the job expired; `cancelled`).
if not owns(ARGV[4], ARGV[5]) then return 'lost' end
redis.call('XCLAIM', WORK, GROUP, ARGV[5], 0, ARGV[4], 'JUSTID')
local J = 'an:j:' .. ARGV[1]
if redis.call('EXISTS', J) == 0 then return 'gone' end
if redis.call('HGET', J, 'cancelled') == '1' then return 'cancelled' end
local game = game_of(J, ARGV[2])
if not game then return 'gone' end
redis.call('HSET', J, 'started', 1)
advance(ARGV[1], game, tonumber(ARGV[3]))
renew(ARGV[1])
return 'ok'
