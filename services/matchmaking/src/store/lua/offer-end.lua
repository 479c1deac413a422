-- OFFER_END (services/matchmaking/src/store/redis.rs; arguments by name: `OFFER_END_ARGS`)
-- KEYS: only two routing keys, never there (they name the store's slot on a cluster): the keys are
-- named from the arguments, after the prefix MM (`mm:`, or `mm:{mm}:` on a cluster) (see OFFERS).
-- A: id, player, by (`o`: the owner ends it; `t`: the challenged player), state (`declined` or
-- `cancelled`), reason (a decline's code), memory (ms the offer is kept past the later of its expiry and now).
-- Returns `done` (also when it ended the same way before), `notyours`, `notopen` or `missing`,
-- then the offer's fields.
if redis.call('EXISTS', ofkey(A.id)) == 0 then return {'missing'} end
if oget(A.id, A.by) ~= A.player then return reply('notyours', A.id) end
local s = oget(A.id, 's')
if s == A.state then return reply('done', A.id) end
local now = tnow()
if s ~= 'open' or now >= tonumber(oget(A.id, 'x')) then return reply('notopen', A.id) end
unlist(A.id)
redis.call('HSET', ofkey(A.id), 's', A.state, 'd', A.reason, 'u', fmt(now))
keep(A.id, now, A.memory)
return reply('done', A.id)
