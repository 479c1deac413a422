-- OFFER_CREATE (services/matchmaking/src/store/redis.rs; arguments by name: `OFFER_CREATE_ARGS`)
-- KEYS: only two routing keys, never there (they name the store's slot on a cluster): the keys are
-- named from the arguments, after the prefix MM (`mm:`, or `mm:{mm}:` on a cluster) (see OFFERS).
-- A: kind (`ch` or `sk`), id (a fresh id), owner, target (challenges: the challenged player),
-- variant (its name), terms (the stored terms), rating, request (the creation's request id),
-- fingerprint, lifetime (ms open), memory (ms remembered after), max_owner, max_target,
-- max_total (the bounds), recent (challenges kept per player), max_created (offers of this kind
-- the owner may create per window), window (ms).
-- Returns `new`, `existing`, `conflict`, `created` (the owner created `max_created` this
-- window), `owner`, `target` or `lobby`, then the offer's fields.
local now = tnow()
local qk = MM .. 'ofq:' .. pack({A.owner, A.kind, A.request})
local prior = redis.call('HGET', qk, 'f')
if prior then
  local id = redis.call('HGET', qk, 'i')
  if prior ~= A.fingerprint or redis.call('EXISTS', ofkey(id)) == 0 then return {'conflict'} end
  return reply('existing', id)
end
local nk = MM .. 'ofn:' .. A.kind .. ':' .. A.owner
if tonumber(redis.call('HGET', nk, 'n') or '0') >= tonumber(A.max_created) then return {'created'} end
local ok = MM .. 'ofo:' .. A.kind .. ':' .. A.owner
prune(ok, now)
if redis.call('ZCARD', ok) >= tonumber(A.max_owner) then return {'owner'} end
if A.kind == 'ch' then
  local ik = MM .. 'ofi:' .. A.target
  prune(ik, now)
  if redis.call('ZCARD', ik) >= tonumber(A.max_target) then return {'target'} end
else
  prune(MM .. 'seeks', now)
  prune(MM .. 'seeks:' .. A.variant, now)
  if redis.call('ZCARD', MM .. 'seeks') >= tonumber(A.max_total) then return {'lobby'} end
end
if redis.call('HINCRBY', nk, 'n', 1) == 1 then redis.call('PEXPIRE', nk, A.window) end
local x = now + tonumber(A.lifetime)
local ttl = x - now + tonumber(A.memory)
local key = ofkey(A.id)
redis.call('HSET', key, 'i', A.id, 'k', A.kind, 'r', A.terms, 'o', A.owner, 't', A.target, 'v', A.variant,
  'g', A.rating, 's', 'open', 'c', fmt(now), 'x', fmt(x), 'u', fmt(now))
redis.call('PEXPIRE', key, fmt(ttl))
redis.call('HSET', qk, 'f', A.fingerprint, 'i', A.id)
redis.call('PEXPIRE', qk, fmt(ttl))
relist(A.id)
if A.kind == 'ch' then
  for _, p in ipairs({A.owner, A.target}) do
    local rk = MM .. 'ofr:' .. p
    redis.call('ZADD', rk, fmt(now), A.id)
    local n = redis.call('ZCARD', rk)
    if n > tonumber(A.recent) then
      -- Ended challenges go first (oldest first), so that many ended ones never push a
      -- pending one out; then the oldest.
      for _, old in ipairs(redis.call('ZRANGE', rk, 0, -1)) do
        if n <= tonumber(A.recent) then break end
        local st = oget(old, 's')
        local live = st == 'accepting' or (st == 'open' and now < tonumber(oget(old, 'x')))
        if not live then
          redis.call('ZREM', rk, old)
          n = n - 1
        end
      end
      if n > tonumber(A.recent) then
        for _, old in ipairs(redis.call('ZRANGE', rk, 0, n - tonumber(A.recent) - 1)) do
          redis.call('ZREM', rk, old)
        end
      end
    end
    redis.call('PEXPIRE', rk, fmt(ttl))
  end
end
return reply('new', A.id)
