-- TAKEBACK (services/matches/src/store/redis.rs)
-- KEYS: the match's eight keys (`invoke`); a takeback is for single boards (keys 4–6).
--
-- ARGV: named by `TAKEBACK_ARGS` in redis.rs; the script reads them as `A.<name>`: nonce, ply
-- (the board's ply as judged), expected (the stored proposal `tbp` as judged, or empty), action
-- (`propose`, `decline` or `accept`), proposal (`propose`: the new `tbp` value), event (the
-- proposal's or the refusal's event), request (`RequestId::encode`, or empty), ttl; for
-- `accept`: position, new_ply, last (or empty: none), history, clocks (`fields::encode_changes`,
-- or empty without clocks), and the events to append (the rest).
local S, E, D = pick()
if not S then return {'missing'} end
local rq = request(A.request)
local no = refused(S, E, D, rq, A.nonce)
if no then return no end
if redis.call('HGET', S, 'ply:A') ~= A.ply or (redis.call('HGET', S, 'tbp') or '') ~= A.expected then
  return state(S, E, 'stale')
end
local changes = {}
if A.action == 'accept' and A.clocks ~= '' then
  changes = clock_changes(A.clocks)
  if not clocks_as_judged(S, changes) then return state(S, E, 'stale') end
end
if is_late(S, tnow()) then return state(S, E, 'late') end
if A.action == 'propose' then
  redis.call('HSET', S, 'tbp', A.proposal)
  redis.call('RPUSH', E, A.event)
elseif A.action == 'decline' then
  redis.call('HDEL', S, 'tbp')
  redis.call('RPUSH', E, A.event)
else
  redis.call('HSET', S, 'pos:A', A.position, 'ply:A', A.new_ply, 'hist:A', A.history)
  if A.last == '' then
    redis.call('HDEL', S, 'last:A')
  else
    redis.call('HSET', S, 'last:A', A.last)
  end
  redis.call('HDEL', S, 'tbp')
  if #changes > 0 then
    set_clocks(S, changes)
    index(S, ID)
  end
  if #A.events > 0 then redis.call('RPUSH', E, unpack(A.events)) end
end
remember(D, rq, 'T')
expire(S, E, D, live(S, A.ttl))
announce()
return state(S, E, 'ok')
