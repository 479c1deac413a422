-- CHAT_DELETE (services/matches/src/store/redis.rs)
-- KEYS: the match's eight keys (`invoke`): 1–6 as every script, 7 the chat list, 8 the chat's
-- hash.
--
-- ARGV: named by `CHAT_DELETE_ARGS` in redis.rs: message (its number). The message's text is
-- blanked and its deleted flag set in place, and `D, id, channel` appended; a deleted message is
-- answered as it stands. Replies: {'ok', id, line}, {'no_message'}, {'missing'}.
local S = pick()
if not S then return {'missing'} end
local L = KEYS[7]
local id = tonumber(A.message)
local line = redis.call('LINDEX', L, id - 1)
if not line then return {'no_message'} end
local t = unpk(line)
if t[1] ~= 'M' then return {'no_message'} end
if t[6] == '1' then return {'ok', id, line} end
t[6] = '1'
t[7] = ''
line = pack(t)
redis.call('LSET', L, id - 1, line)
redis.call('RPUSH', L, pack({'D', tostring(id), t[2]}))
announce()
return {'ok', id, line}
