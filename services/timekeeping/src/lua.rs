//! The Lua helpers of the clock scripts in Redis, shared by every service that keeps clocks.
//!
//! A script that uses them defines, before [`CLOCKS`]: `DEADLINES` (the sorted set of running
//! games), `DEADLINE_CHANNEL` (where a new earliest deadline is announced) and `MAX_REMAINING`
//! (the core's `MAX_REMAINING_MS`). See [`header`].
//!
//! Fields follow one convention per board `b` (`A`, `B`): `ck:b` the clock's phase, `ck:b:w` and
//! `ck:b:b` each side's clock (packed `remaining, quota, moves, stage, moves in stage`), `dl:b`
//! the board's next deadline (Unix ms, empty when none).
//!
//! - `pack(t)` / `unpk(s)`: the packed-list encoding (`len:item…`);
//! - `fmt(x)`: an integer-valued number as decimal text; `tnow()`: Redis `TIME` in ms;
//! - `earliest(S)`, `is_late(S, now)`: the game's earliest deadline, and whether it passed;
//! - `index(S, id)`: file the game in `DEADLINES` at its earliest deadline (or take it out), and
//!   announce a new earliest deadline on `DEADLINE_CHANNEL`; `refile(id, new, old)` does the same
//!   when the script knows the game's new and former earliest deadlines (no read; the index's
//!   head is read only when the deadline moves earlier);
//! - `stop_board(S, b, now, delays)`: stop board `b`'s clocks at `now`, charging a running turn;
//! - `press(a, now)`: the core's `PressPlan::apply` on the 13 plan values `a`: `nil` when late,
//!   else remaining, quota, charged, compensation, bonus, next deadline.

/// The Lua text of [`BASICS`], as a literal for `concat!`.
macro_rules! basics {
    () => {
        r"
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
"
    };
}

/// `pack`, `unpk`, `fmt` and `tnow` alone (see the module documentation), for any script of
/// any service: no definitions needed before them.
pub const BASICS: &str = basics!();

/// The helpers (see the module documentation): [`BASICS`] and the clock helpers.
pub const CLOCKS: &str = concat!(
    basics!(),
    r"
local function earliest(S)
  local d = redis.call('HMGET', S, 'dl:A', 'dl:B')
  local best = nil
  for i = 1, 2 do
    local v = tonumber(d[i] or '')
    if v and (not best or v < best) then best = v end
  end
  return best
end
local function is_late(S, now)
  local d = earliest(S)
  return d ~= nil and d <= now
end
local function index(S, id)
  local d = earliest(S)
  if d then
    local first = redis.call('ZRANGE', DEADLINES, 0, 0, 'WITHSCORES')
    redis.call('ZADD', DEADLINES, d, id)
    if not first[2] or d < tonumber(first[2]) then
      redis.call('PUBLISH', DEADLINE_CHANNEL, fmt(d))
    end
  else
    redis.call('ZREM', DEADLINES, id)
  end
end
local function refile(id, new, old)
  if not new then
    redis.call('ZREM', DEADLINES, id)
    return
  end
  if not old or new < old then
    local first = redis.call('ZRANGE', DEADLINES, 0, 0, 'WITHSCORES')
    if not first[2] or new < tonumber(first[2]) then
      redis.call('PUBLISH', DEADLINE_CHANNEL, fmt(new))
    end
  end
  redis.call('ZADD', DEADLINES, new, id)
end
local function stop_board(S, b, now, delays)
  local ph = redis.call('HGET', S, 'ck:' .. b)
  if not ph then return end
  local p = unpk(ph)
  if p[1] == 'F' or p[1] == 'N' or p[1] == 'S' then return end
  if p[1] == 'R' then
    local f = 'ck:' .. b .. ':' .. p[2]
    local side = unpk(redis.call('HGET', S, f))
    local used = now - tonumber(p[3]) - tonumber(delays[tonumber(side[4]) + 1] or '0')
    if used < 0 then used = 0 end
    local rem = tonumber(side[1]) - used
    if rem < 0 then rem = 0 end
    side[1] = fmt(rem)
    redis.call('HSET', S, f, pack(side))
  end
  redis.call('HSET', S, 'ck:' .. b, pack({'S', fmt(now)}), 'dl:' .. b, '')
end
local function press(a, now)
  local since, limit = tonumber(a[1]), tonumber(a[2])
  if now >= since + limit then return nil end
  local rem, quota = tonumber(a[4]), tonumber(a[5])
  local stage_ms, next_limit = tonumber(a[12]), tonumber(a[13])
  if a[3] ~= '1' then
    return {math.min(rem + stage_ms, MAX_REMAINING), quota, 0, 0, 0, now + next_limit}
  end
  local elapsed = now - since
  if elapsed < 0 then elapsed = 0 end
  local comp = tonumber(a[6])
  local charged = elapsed - comp - tonumber(a[7])
  if charged < 0 then charged = 0 end
  if charged > rem then
    comp = comp + charged - rem
    charged = rem
  end
  local bonus = tonumber(a[10]) + math.min(charged, tonumber(a[11]))
  local q = quota + tonumber(a[8]) - comp
  if q < 0 then q = 0 end
  q = math.min(q, tonumber(a[9]))
  local r = math.min(rem - charged + bonus + stage_ms, MAX_REMAINING)
  return {r, q, charged, comp, bonus, now + next_limit}
end"
);

/// The definitions the helpers need: the index key, its channel and the remaining-time cap.
pub fn header(deadlines: &str, channel: &str, max_remaining_ms: u64) -> String {
    format!(
        "local DEADLINES = '{deadlines}'\nlocal DEADLINE_CHANNEL = '{channel}'\n\
         local MAX_REMAINING = {max_remaining_ms}\n"
    )
}

/// Claims entries of the deadline index due by now + ahead, earliest first: `KEYS[1]` the index;
/// ARGV 1 lease (ms, counted from each entry's time, or now if later), 2 max, 3 ahead (ms).
/// Returns `{now, id, at, id, at, …}`. Needs [`CLOCKS`] (for `tnow`, `fmt`); see [`claim`].
pub const CLAIM: &str = r"
local now = tnow()
local lease = tonumber(ARGV[1])
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now + tonumber(ARGV[3]), 'WITHSCORES',
  'LIMIT', 0, tonumber(ARGV[2]))
local out = {fmt(now)}
for i = 1, #due, 2 do
  local at = tonumber(due[i + 1])
  redis.call('ZADD', KEYS[1], math.max(at, now) + lease, due[i])
  out[#out + 1] = due[i]
  out[#out + 1] = fmt(at)
end
return out
";

/// Runs [`CLAIM`] (compiled into `script` with [`header`] and [`CLOCKS`]) on index `key`.
pub async fn claim<C: redis::aio::ConnectionLike + Send>(
    script: &redis::Script,
    conn: &mut C,
    key: &str,
    ahead: u64,
    lease: u64,
    max: usize,
) -> redis::RedisResult<crate::Claimed> {
    let reply: Vec<String> = script
        .key(key)
        .arg(lease)
        .arg(max)
        .arg(ahead)
        .invoke_async(conn)
        .await?;
    let malformed =
        || redis::RedisError::from((redis::ErrorKind::TypeError, "malformed claim reply"));
    let mut items = reply.into_iter();
    let now = items
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or_else(malformed)?;
    let mut due = Vec::new();
    while let Some(id) = items.next() {
        let at = items
            .next()
            .and_then(|a| a.parse().ok())
            .ok_or_else(malformed)?;
        due.push((id, at));
    }
    Ok(crate::Claimed { now, due })
}

/// Files a game in the deadline index again (ARGV 1: its deadline, or empty to remove it;
/// ARGV 2: its id), announcing a new earliest deadline: `KEYS[1]` the index. Needs [`header`] and
/// [`CLOCKS`].
pub const REINDEX: &str = r"
local id = ARGV[2]
if ARGV[1] == '' then
  redis.call('ZREM', KEYS[1], id)
  return 0
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
redis.call('ZADD', KEYS[1], ARGV[1], id)
if not first[2] or tonumber(ARGV[1]) < tonumber(first[2]) then
  redis.call('PUBLISH', DEADLINE_CHANNEL, ARGV[1])
end
return 1
";

/// The 13 values of a press plan, in the order the scripts' `press` reads them.
pub fn plan_args(p: &arbiter_core::clock::PressPlan) -> [String; 13] {
    [
        p.since.to_string(),
        p.limit_ms.to_string(),
        if p.timed { "1" } else { "0" }.to_owned(),
        p.remaining_ms.to_string(),
        p.quota_ms.to_string(),
        p.comp_ms.to_string(),
        p.delay_ms.to_string(),
        p.gain_ms.to_string(),
        p.cap_ms.to_string(),
        p.increment_ms.to_string(),
        p.bronstein_ms.to_string(),
        p.stage_ms.to_string(),
        p.next_limit_ms.to_string(),
    ]
}
