-- LEASE (services/analysis/src/batch/redis/mod.rs; arguments by name: `LEASE_ARGS`)
-- KEYS: the group's (see PRELUDE); key names below are relative to its prefix Q.
-- A: item (its entry id in the work stream, pending for the service's remote consumer),
-- consumer (that consumer), lease (the new lease's id), worker (the remote worker: `key:<id>`
-- or `caller:<digest>`), length (the lease's length, ms), keep (how long the lease record is
-- kept, ms), deliveries (the item's deliveries so far, this one included).
--
-- Moves the item into lease record `<Q>lease:<lease>` (its job, game, payload byte for byte,
-- worker, state `active`, deliveries), indexed by expiry in `<Q>leases` and by worker in
-- `<Q>wl:<worker>`, and finishes the entry. Returns the lease's expiry (Unix ms), or 0 when the
-- consumer does not hold the item.
if not owns(A.item, A.consumer) then return 0 end
local entry = redis.call('XRANGE', WORK, A.item, A.item)[1]
if not entry then return 0 end
local f = {}
for i = 1, #entry[2], 2 do f[entry[2][i]] = entry[2][i + 1] end
local expires = tnow() + tonumber(A.length)
local L = Q .. 'lease:' .. A.lease
redis.call('HSET', L, 'job', f['job'] or '', 'game', f['game'] or '', 'item', f['item'] or '',
  'worker', A.worker, 'state', 'active', 'tries', A.deliveries, 'expires', expires)
redis.call('PEXPIRE', L, A.keep)
redis.call('ZADD', Q .. 'leases', expires, A.lease)
redis.call('SADD', Q .. 'wl:' .. A.worker, A.lease)
redis.call('PEXPIRE', Q .. 'wl:' .. A.worker, A.keep)
-- The job lives on while its game is leased (its retention counts from now).
if f['job'] and redis.call('EXISTS', Q .. 'j:' .. f['job']) == 1 then renew(f['job']) end
finish(A.item)
return expires
