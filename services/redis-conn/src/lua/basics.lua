-- BASICS (services/redis-conn/src/script.rs): helpers any script of any service may start with.
-- KEYS, ARGV: none of its own; needs no definitions before it.
-- pack(t), unpk(s): the packed-list encoding (`len:item…`); fmt(x): an integer-valued number as
-- decimal text; tnow(): Redis `TIME` in Unix ms.
local function pack(t)
  local parts = {}
  for i = 1, #t do
    local v = tostring(t[i])
    parts[i] = #v .. ':' .. v
  end
  return table.concat(parts)
end
local function unpk(s)
  local t, i = {}, 1
  while i <= #s do
    local c = string.find(s, ':', i, true)
    local n = tonumber(string.sub(s, i, c - 1))
    t[#t + 1] = string.sub(s, c + 1, c + n)
    i = c + n + 1
  end
  return t
end
local function fmt(x) return string.format('%.0f', x) end
local function tnow()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
