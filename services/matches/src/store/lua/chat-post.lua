-- CHAT_POST (services/matches/src/store/redis.rs)
-- KEYS: the match's eight keys (`invoke`): 1–6 as every script, 7 the chat list, 8 the chat's
-- hash (`n:<scope>` messages posted, `t:<scope>` the times of the latest `burst`,
-- `r:<request field>` packed message number and fingerprint).
--
-- ARGV: named by `CHAT_POST_ARGS` in redis.rs; the script reads them as `A.<name>`: nonce,
-- channel, scope, author, text, limited (`1` for a seat), request_field and fingerprint (empty
-- without a request id), max_entries, max_per_seat, burst, window (ms).
-- Replies: {'ok', id, line}, {'dup', id, line}, {'reused'}, {'full'}, {'scope_full'},
-- {'too_fast', ms}, {'stale'}, {'missing'}, {'no_message'}.
local S = pick()
if not S then return {'missing'} end
if redis.call('HGET', S, 'nonce') ~= A.nonce then return {'stale'} end
local L, M = KEYS[7], KEYS[8]
if A.request_field ~= '' then
  local r = redis.call('HGET', M, 'r:' .. A.request_field)
  if r then
    local t = unpk(r)
    if t[2] ~= A.fingerprint then return {'reused'} end
    local line = redis.call('LINDEX', L, tonumber(t[1]) - 1)
    if not line then return {'no_message'} end
    return {'dup', tonumber(t[1]), line}
  end
end
if redis.call('LLEN', L) >= tonumber(A.max_entries) then return {'full'} end
local now = tnow()
if A.limited == '1' then
  local count = tonumber(redis.call('HGET', M, 'n:' .. A.scope) or '0')
  if count >= tonumber(A.max_per_seat) then return {'scope_full'} end
  local times = unpk(redis.call('HGET', M, 't:' .. A.scope) or '')
  local burst, window = tonumber(A.burst), tonumber(A.window)
  if #times >= burst then
    local oldest = tonumber(times[#times - burst + 1])
    if now < oldest + window then return {'too_fast', fmt(oldest + window - now)} end
  end
  times[#times + 1] = fmt(now)
  while #times > burst do table.remove(times, 1) end
  redis.call('HSET', M, 'n:' .. A.scope, tostring(count + 1), 't:' .. A.scope, pack(times))
end
local line = pack({'M', A.channel, A.scope, A.author, fmt(now), '0', A.text})
local id = redis.call('RPUSH', L, line)
if A.request_field ~= '' then
  redis.call('HSET', M, 'r:' .. A.request_field, pack({tostring(id), A.fingerprint}))
end
-- The chat lives as long as its match.
local ttl = redis.call('PTTL', S)
if ttl > 0 then
  redis.call('PEXPIRE', L, ttl)
  redis.call('PEXPIRE', M, ttl)
end
announce()
return {'ok', id, line}
