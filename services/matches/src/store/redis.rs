//! The Redis match store: the schema of [`crate::record`] in three keys per match, all in the
//! match's hash slot. Every change is one Lua script, atomic on the server: a move happens whole
//! (guards, reserve take and give, board, history, events, draw offers, TTL) or not at all,
//! whatever the clients do concurrently, and its reply carries the record after the step, so a
//! move costs one round trip.
//!
//! Requests are judged on a snapshot: this process keeps the last record it saw of each match
//! (a bounded cache), so a move on a match this process served before needs no read. A stale
//! snapshot fails a guard in the script, whose reply brings the current record for a second
//! judgement.
//!
//! A connection manager reconnects after an outage; while Redis is away every call fails with
//! [`StoreError::Unavailable`] and nothing is applied.

use super::{
    ChangeResult, ClockCommit, CreateResult, EndCommit, HistoryUpdate, MatchStore, MoveCommit,
    MoveResult, OfferCommit, Retention, StoreError, Timing,
};
use crate::record::{
    MUTABLE_FIELDS, REQUEST_WINDOW, Record, Remembered, RequestId, StoredEvent, board_letter,
    encode_clock, encode_deadline, encode_outcome, is_window_field, pack, side_letter,
};
use arbiter_core::clock::{MAX_REMAINING_MS, PressPlan};
use arbiter_redis_conn::{connect_in_background, wait_connected};
use arbiter_timekeeping::lua;
use redis::aio::ConnectionManager;
use redis::{AsyncCommands, Script};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Helpers every script starts with: `pack` (the packed-list encoding of `crate::record`, for
/// the events it writes), `pick` (the three keys of the match, bughouse or single board:
/// state, events, done), `expire`, `state` (a reply with the record: the status, the event
/// count, and the hash as a flat array, which costs Redis far less than packing it in Lua).
const PRELUDE: &str = r"
local function pick()
  if redis.call('EXISTS', KEYS[1]) == 1 then return KEYS[1], KEYS[2], KEYS[3] end
  if redis.call('EXISTS', KEYS[4]) == 1 then return KEYS[4], KEYS[5], KEYS[6] end
  return nil, nil, nil
end
local function expire(S, E, D, ms)
  redis.call('PEXPIRE', S, ms)
  redis.call('PEXPIRE', E, ms)
  redis.call('PEXPIRE', D, ms)
end
local function announce()
  redis.call('PUBLISH', 'arbiter:matches:changes', string.match(KEYS[1], '{(.*)}'))
end
local function state(S, E, status)
  return {status, redis.call('LLEN', E), redis.call('HGETALL', S)}
end
local function compact(S, E, status)
  return {status, redis.call('LLEN', E), redis.call('HMGET', S, unpack(MUTABLE)), 'compact'}
end
-- A request id as a script takes it (packed scope, field, fingerprint), or nil.
local function request(arg)
  if arg == '' then return nil end
  return unpk(arg)
end
-- What the match remembers of the request's id (its packed what and fingerprint), if anything.
local function recall(D, rq)
  if not rq then return nil end
  return redis.call('HGET', D, rq[2])
end
-- Remembers that the request did `what`, in its scope's ring of WINDOW slots: the slot's former
-- request is forgotten.
local function remember(D, rq, what)
  if not rq then return end
  local n = redis.call('HINCRBY', D, rq[1] .. '#', 1)
  local slot = rq[1] .. '#' .. ((n - 1) % WINDOW)
  local old = redis.call('HGET', D, slot)
  if old then redis.call('HDEL', D, old) end
  redis.call('HSET', D, slot, rq[2], rq[2], pack({what, rq[3]}))
end

";

/// Runs the press arithmetic alone (ARGV: the 13 plan values, then `now`), for the test that
/// checks it against the core's [`PressPlan::apply`].
const PRESS_CHECK: &str = r"
local r = press(ARGV, tonumber(ARGV[14]))
if not r then return {'late'} end
local out = {}
for i = 1, #r do out[i] = fmt(r[i]) end
return out
";

/// ARGV: kind (`bug` or `game`), TTL in ms, then field, value, ….
const CREATE: &str = r"
local S, E, D = pick()
if S then return state(S, E, 'exists') end
if ARGV[1] == 'bug' then S, E, D = KEYS[1], KEYS[2], KEYS[3] else S, E, D = KEYS[4], KEYS[5], KEYS[6] end
redis.call('DEL', E, D)
redis.call('HSET', S, unpack(ARGV, 3))
redis.call('PEXPIRE', S, ARGV[2])
index(S, ID)
return state(S, E, 'created')
";

const LOAD: &str = r"
local S, E, D = pick()
if not S then return {'missing'} end
return state(S, E, 'ok')
";

/// A move's reply is compact when the caller holds the match (ARGV 19 = `compact`): only the
/// fields a change can touch ([`MUTABLE_FIELDS`]), since the rest is fixed at creation and the
/// nonce matched; a mismatched nonce (a re-created match) gets the whole record.
///
/// ARGV: 1 nonce, 2 board, 3 expected ply, 4 position, 5 history mode (`a`, `r` or empty),
/// 6 history key, 7 take side, 8 take letter, 9 give board, 10 give side, 11 give letter,
/// 12 last move without its time ([`LastMove::encode_sent`]: the script appends its own), 13 the mover's side of the match (bughouse: team), 14 move event without the
/// position (appended here, with the reserves after the step), 15 end outcome, 16 end event,
/// 17 TTL, 18 grace, 19 `compact` or `full`, 20 the request's id ([`RequestId::encode`], or empty);
/// with clocks: 21 `p`, 22–24 the board clock's fields as judged, 25–37 the press plan
/// ([`plan_args`]), 38 the mover's side letter, 39–41 the mover's moves, stage and moves in
/// stage after the move, 42 the opponent's first-move window (empty: the clock runs),
/// 43 the stages' simple delays, packed.
const MOVE: &str = r"
local S, E, D = pick()
if not S then return {'missing'} end
local rq = request(ARGV[20])
local done = recall(D, rq)
if done then return state(S, E, 'done:' .. done) end
local b = ARGV[2]
local clocked = ARGV[21] == 'p'
local guard
if clocked then
  -- One read for the guards, the board's clock and both boards' deadlines.
  guard = redis.call('HMGET', S, 'over', 'nonce', 'ply:' .. b, 'ck:' .. b, 'ck:' .. b .. ':w',
    'ck:' .. b .. ':b', 'dl:A', 'dl:B')
else
  guard = redis.call('HMGET', S, 'over', 'nonce', 'ply:' .. b)
end
if guard[2] ~= ARGV[1] then return state(S, E, 'stale') end
local reply = state
if ARGV[19] == 'compact' then reply = compact end
if guard[1] == '1' then return reply(S, E, 'over') end
if guard[3] ~= ARGV[3] then return reply(S, E, 'stale') end
local now, clock, old_dl, other_dl = nil, nil, nil, nil
if clocked then
  now = tnow()
  local dA, dB = tonumber(guard[7] or ''), tonumber(guard[8] or '')
  if (dA and dA <= now) or (dB and dB <= now) then return reply(S, E, 'late') end
  old_dl = dA
  if dB and (not dA or dB < dA) then old_dl = dB end
  other_dl = dB
  if b == 'B' then other_dl = dA end
  if guard[4] ~= ARGV[22] or guard[5] ~= ARGV[23] or guard[6] ~= ARGV[24] then
    return reply(S, E, 'stale')
  end
  clock = press({unpack(ARGV, 25, 37)}, now)
  if not clock then return reply(S, E, 'late') end
  clock.other = guard[5]
  if ARGV[38] == 'w' then clock.other = guard[6] end
end
local ORDER = 'QRBNPqrbnp'
local events = {''}
if ARGV[7] ~= '' then
  local f = 'res:' .. b .. ':' .. ARGV[7]
  local r = redis.call('HGET', S, f) or ''
  local at = string.find(r, ARGV[8], 1, true)
  if not at then return state(S, E, 'stale') end
  r = string.sub(r, 1, at - 1) .. string.sub(r, at + 1)
  redis.call('HSET', S, f, r)
  events[#events + 1] = pack({'R', b, ARGV[7], r})
end
if ARGV[9] ~= '' then
  local f = 'res:' .. ARGV[9] .. ':' .. ARGV[10]
  local r = redis.call('HGET', S, f) or ''
  local c = ARGV[11]
  local rank = string.find(ORDER, c, 1, true)
  local at = #r + 1
  for i = 1, #r do
    if string.find(ORDER, string.sub(r, i, i), 1, true) > rank then at = i break end
  end
  r = string.sub(r, 1, at - 1) .. c .. string.sub(r, at)
  redis.call('HSET', S, f, r)
  events[#events + 1] = pack({'R', ARGV[9], ARGV[10], r})
end
local at = now or tnow()
local fields = {'pos:' .. b, ARGV[4], 'ply:' .. b, tostring(tonumber(ARGV[3]) + 1),
  'last:' .. b, ARGV[12] .. pack({fmt(at)})}
if ARGV[5] == 'a' then
  redis.call('HSET', S, 'hist:' .. b, (redis.call('HGET', S, 'hist:' .. b) or '') .. ARGV[6])
elseif ARGV[5] == 'r' then
  redis.call('HSET', S, 'hist:' .. b, ARGV[6])
end
local other = 'w'
if ARGV[13] == 'w' then other = 'b' end
if redis.call('HDEL', S, 'draw:' .. other) == 1 then events[#events + 1] = pack({'X', other}) end
local position = ARGV[4]
local white = redis.call('HGET', S, 'res:' .. b .. ':w')
if white then
  local black = redis.call('HGET', S, 'res:' .. b .. ':b') or ''
  local sp = string.find(position, ' ', 1, true) or (#position + 1)
  position = string.sub(position, 1, sp - 1) .. '[' .. white .. black .. ']' .. string.sub(position, sp)
end
events[1] = ARGV[14] .. pack({position})
remember(D, rq, 'M' .. (redis.call('LLEN', E) + 1))
if clock then
  local mover, opp = ARGV[38], 'b'
  if mover == 'b' then opp = 'w' end
  local phase
  if ARGV[42] ~= '' then
    phase = pack({'O', opp, fmt(now), ARGV[42], '1'})
  else
    phase = pack({'R', opp, fmt(now)})
  end
  local n = #fields
  fields[n + 1], fields[n + 2] = 'ck:' .. b, phase
  fields[n + 3], fields[n + 4] = 'dl:' .. b, fmt(clock[6])
  fields[n + 5] = 'ck:' .. b .. ':' .. mover
  fields[n + 6] = pack({fmt(clock[1]), fmt(clock[2]), ARGV[39], ARGV[40], ARGV[41]})
end
redis.call('HSET', S, unpack(fields))
if clock then
  local mover, opp = ARGV[38], 'b'
  if mover == 'b' then opp = 'w' end
  local rem = {w = fmt(clock[1]), b = fmt(clock[1])}
  rem[opp] = unpk(clock.other)[1]
  local running = opp
  if ARGV[15] ~= '' then
    local delays = unpk(ARGV[43])
    stop_board(S, 'A', now, delays)
    stop_board(S, 'B', now, delays)
    running = '-'
  end
  events[#events + 1] = pack({'C', b, rem.w, rem.b, running, fmt(now)})
end
local ttl = ARGV[17]
if ARGV[15] ~= '' then
  redis.call('HSET', S, 'over', '1', 'outcome', ARGV[15] .. pack({fmt(at)}))
  events[#events + 1] = ARGV[16]
  ttl = ARGV[18]
end
redis.call('RPUSH', E, unpack(events))
expire(S, E, D, ttl)
if clock then
  if ARGV[15] ~= '' then
    refile(ID, nil, old_dl)
  else
    local new_dl = clock[6]
    if other_dl and other_dl < new_dl then new_dl = other_dl end
    refile(ID, new_dl, old_dl)
  end
end
announce()
return reply(S, E, 'ok')
";

/// ARGV: 1 nonce, 2 guard board (or empty), 3 guard ply, 4 outcome, 5 end event, 6 grace,
/// 7 the request's id ([`RequestId::encode`], or empty), 8 the stages' simple delays, packed
/// (clocks only).
const END: &str = r"
local S, E, D = pick()
if not S then return {'missing'} end
local rq = request(ARGV[7])
local done = recall(D, rq)
if done then return state(S, E, 'done:' .. done) end
if redis.call('HGET', S, 'over') == '1' then return state(S, E, 'over') end
if redis.call('HGET', S, 'nonce') ~= ARGV[1] then return state(S, E, 'stale') end
if ARGV[2] ~= '' and redis.call('HGET', S, 'ply:' .. ARGV[2]) ~= ARGV[3] then
  return state(S, E, 'stale')
end
local now = tnow()
if is_late(S, now) then return state(S, E, 'late') end
local delays = unpk(ARGV[8])
stop_board(S, 'A', now, delays)
stop_board(S, 'B', now, delays)
index(S, ID)
redis.call('HSET', S, 'over', '1', 'outcome', ARGV[4] .. pack({fmt(now)}))
redis.call('RPUSH', E, ARGV[5])
remember(D, rq, 'E')
expire(S, E, D, ARGV[6])
announce()
return state(S, E, 'ok')
";

/// ARGV: 1 nonce, 2 side, 3 offer event, 4 agreed outcome, 5 end event, 6 TTL, 7 grace,
/// 8 the request's id ([`RequestId::encode`], or empty), 9 the stages' simple delays, packed.
const OFFER: &str = r"
local S, E, D = pick()
if not S then return {'missing'} end
local rq = request(ARGV[8])
local done = recall(D, rq)
if done then return state(S, E, 'done:' .. done) end
if redis.call('HGET', S, 'over') == '1' then return state(S, E, 'over') end
if redis.call('HGET', S, 'nonce') ~= ARGV[1] then return state(S, E, 'stale') end
local now = tnow()
if is_late(S, now) then return state(S, E, 'late') end
-- An offer already standing changes nothing, and is not remembered.
if redis.call('HGET', S, 'draw:' .. ARGV[2]) == '1' then return state(S, E, 'ok') end
remember(D, rq, 'D')
redis.call('HSET', S, 'draw:' .. ARGV[2], '1')
redis.call('RPUSH', E, ARGV[3])
local other = 'w'
if ARGV[2] == 'w' then other = 'b' end
local ttl = ARGV[6]
if redis.call('HGET', S, 'draw:' .. other) == '1' then
  local delays = unpk(ARGV[9])
  stop_board(S, 'A', now, delays)
  stop_board(S, 'B', now, delays)
  index(S, ID)
  redis.call('HSET', S, 'over', '1', 'outcome', ARGV[4] .. pack({fmt(now)}))
  redis.call('RPUSH', E, ARGV[5])
  ttl = ARGV[7]
end
expire(S, E, D, ttl)
announce()
return state(S, E, 'ok')
";

/// A change of clocks decided by the caller. ARGV: 1 nonce, 2 timing (`live`, or the deadline
/// that must have passed), 3 the request's id ([`RequestId::encode`], or empty), 4 outcome (or
/// empty), 5 end
/// event, 6 TTL, 7 grace, 8 the number of clocks n, then per clock 8 values (board, the three
/// fields as judged, the three new fields, the new deadline), then the events to append.
const CLOCK: &str = r"
local S, E, D = pick()
if not S then return {'missing'} end
local rq = request(ARGV[3])
local done = recall(D, rq)
if done then return state(S, E, 'done:' .. done) end
if redis.call('HGET', S, 'over') == '1' then return state(S, E, 'over') end
if redis.call('HGET', S, 'nonce') ~= ARGV[1] then return state(S, E, 'stale') end
local n = tonumber(ARGV[8])
for i = 0, n - 1 do
  local at = 9 + i * 8
  local b = ARGV[at]
  local ck = redis.call('HMGET', S, 'ck:' .. b, 'ck:' .. b .. ':w', 'ck:' .. b .. ':b')
  if ck[1] ~= ARGV[at + 1] or ck[2] ~= ARGV[at + 2] or ck[3] ~= ARGV[at + 3] then
    return state(S, E, 'stale')
  end
end
local now = tnow()
if ARGV[2] == 'live' then
  if is_late(S, now) then return state(S, E, 'late') end
elseif now < tonumber(ARGV[2]) then
  return state(S, E, 'stale')
end
for i = 0, n - 1 do
  local at = 9 + i * 8
  local b = ARGV[at]
  redis.call('HSET', S, 'ck:' .. b, ARGV[at + 4], 'ck:' .. b .. ':w', ARGV[at + 5],
    'ck:' .. b .. ':b', ARGV[at + 6], 'dl:' .. b, ARGV[at + 7])
end
local first = 9 + n * 8
if first <= #ARGV then redis.call('RPUSH', E, unpack(ARGV, first)) end
remember(D, rq, 'K')
local ttl = ARGV[6]
if ARGV[4] ~= '' then
  redis.call('HSET', S, 'over', '1', 'outcome', ARGV[4] .. pack({fmt(now)}))
  redis.call('RPUSH', E, ARGV[5])
  ttl = ARGV[7]
end
expire(S, E, D, ttl)
index(S, ID)
announce()
return state(S, E, 'ok')
";

/// The sorted set of running matches by earliest deadline (Unix ms). One key for all matches:
/// the deadline index assumes a single Redis (or one primary), not a cluster.
pub const DEADLINES: &str = "arbiter:matches:deadlines";

/// The channel on which a new earliest deadline is announced (its message: the deadline).
pub const DEADLINE_CHANNEL: &str = "arbiter:matches:deadline";

/// A request id as the scripts take it (empty without one).
fn request_arg(request: Option<&RequestId>) -> String {
    request.map_or_else(String::new, RequestId::encode)
}

fn delays_arg(delays: &[u64]) -> String {
    pack(&delays.iter().map(u64::to_string).collect::<Vec<_>>())
}

fn script(body: &str) -> Script {
    let mutable: Vec<String> = MUTABLE_FIELDS.iter().map(|f| format!("'{f}'")).collect();
    Script::new(&format!(
        "local MUTABLE = {{{}}}\nlocal WINDOW = {REQUEST_WINDOW}\n\
         local ID = string.match(KEYS[1] or '', '{{(.*)}}')\n{}{}{PRELUDE}{body}",
        mutable.join(", "),
        lua::header(DEADLINES, DEADLINE_CHANNEL, MAX_REMAINING_MS),
        lua::CLOCKS,
    ))
}

/// The channel every change is announced on (its message: the match id), so that each replica's
/// watchers wake at once.
pub const CHANGES: &str = "arbiter:matches:changes";

pub use arbiter_redis_conn::RedisConfig;

/// Matches in Redis (see the module documentation).
pub struct RedisStore {
    /// Set once the first connection succeeds; the manager reconnects by itself afterwards.
    conn: Arc<std::sync::OnceLock<ConnectionManager>>,
    retention: Retention,
    cache: Mutex<HashMap<String, Arc<Record>>>,
    cache_capacity: usize,
    create: Script,
    load: Script,
    play: Script,
    end: Script,
    offer: Script,
    clock: Script,
    claim: Script,
    reindex: Script,
    deadline_changed: Arc<tokio::sync::Notify>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("retention", &self.retention)
            .field("cache_capacity", &self.cache_capacity)
            .finish_non_exhaustive()
    }
}

fn unavailable(e: redis::RedisError) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

/// The six keys a script gets: the bughouse state, events and done, then the single board's.
fn keys(id: &str) -> [String; 6] {
    [
        format!("bug:{{{id}}}:state"),
        format!("bug:{{{id}}}:events"),
        format!("bug:{{{id}}}:done"),
        format!("game:{{{id}}}:state"),
        format!("game:{{{id}}}:events"),
        format!("game:{{{id}}}:done"),
    ]
}

/// A script invocation with the six keys of match `id`.
fn invoke<'a>(script: &'a Script, id: &str) -> redis::ScriptInvocation<'a> {
    let [k1, k2, k3, k4, k5, k6] = keys(id);
    let mut inv = script.key(k1);
    inv.key(k2).key(k3).key(k4).key(k5).key(k6);
    inv
}

fn millis(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX).max(1)
}

/// A script's reply: a status, and with it the event count and the packed record.
struct Reply {
    status: String,
    record: Option<Arc<Record>>,
}

fn utf8(bytes: Vec<u8>) -> Result<String, StoreError> {
    String::from_utf8(bytes).map_err(|_| StoreError::Corrupt("a reply is not UTF-8".into()))
}

impl RedisStore {
    /// A store for `config` that connects in the background: until the first connection
    /// succeeds every call fails with [`StoreError::Unavailable`] (so a server starts while Redis
    /// is down); afterwards each command fails after a short timeout while Redis is unreachable,
    /// and the connection is re-established when it returns. `cache_capacity` bounds the
    /// snapshots kept in this process. Needs a Tokio runtime.
    pub fn open(
        config: &RedisConfig,
        retention: Retention,
        cache_capacity: usize,
    ) -> Result<RedisStore, StoreError> {
        let client = config.client().map_err(StoreError::Unavailable)?;
        let scripts: Vec<Script> = [
            CREATE,
            LOAD,
            MOVE,
            END,
            OFFER,
            CLOCK,
            lua::CLAIM,
            lua::REINDEX,
        ]
        .into_iter()
        .map(script)
        .collect();
        let conn = connect_in_background(client, "match store", scripts);
        Ok(RedisStore {
            conn,
            retention,
            cache: Mutex::new(HashMap::new()),
            cache_capacity,
            create: script(CREATE),
            load: script(LOAD),
            play: script(MOVE),
            end: script(END),
            offer: script(OFFER),
            clock: script(CLOCK),
            claim: script(lua::CLAIM),
            reindex: script(lua::REINDEX),
            deadline_changed: Arc::new(tokio::sync::Notify::new()),
        })
    }

    /// [`RedisStore::open`], waiting up to 10 s for the first connection (for tests and tools).
    pub async fn connect(
        url: &str,
        retention: Retention,
        cache_capacity: usize,
    ) -> Result<RedisStore, StoreError> {
        let config = RedisConfig {
            url: url.to_owned(),
            password: None,
        };
        let store = RedisStore::open(&config, retention, cache_capacity)?;
        if wait_connected(&store.conn, Duration::from_secs(10)).await {
            Ok(store)
        } else {
            Err(StoreError::Unavailable("cannot connect to Redis".into()))
        }
    }

    /// The connection, once there is one.
    fn conn(&self) -> Result<ConnectionManager, StoreError> {
        self.conn
            .get()
            .cloned()
            .ok_or_else(|| StoreError::Unavailable("not connected to Redis yet".into()))
    }

    /// Runs a script invocation and decodes its reply, keeping the record it returns.
    async fn run(
        &self,
        id: &str,
        invocation: &mut redis::ScriptInvocation<'_>,
        base: Option<&Record>,
    ) -> Result<Reply, StoreError> {
        let reply: Vec<redis::Value> = invocation
            .invoke_async(&mut self.conn()?)
            .await
            .map_err(unavailable)?;
        let mut parts = reply.into_iter();
        let status = match parts.next() {
            Some(redis::Value::BulkString(b)) => utf8(b)?,
            Some(redis::Value::SimpleString(s)) => s,
            other => return Err(StoreError::Corrupt(format!("unexpected reply {other:?}"))),
        };
        let record = match (parts.next(), parts.next()) {
            (Some(redis::Value::Int(seq)), Some(redis::Value::Array(fields))) => {
                let seq = u64::try_from(seq)
                    .map_err(|_| StoreError::Corrupt("negative event count".into()))?;
                let compact = parts.next().is_some();
                let record = if compact {
                    let base = base.ok_or_else(|| {
                        StoreError::Corrupt(
                            "a compact reply without a record to apply it to".into(),
                        )
                    })?;
                    let values = fields
                        .into_iter()
                        .map(|v| match v {
                            redis::Value::BulkString(b) => utf8(b).map(Some),
                            redis::Value::Nil => Ok(None),
                            _ => Err(StoreError::Corrupt("a field is not a string".into())),
                        })
                        .collect::<Result<Vec<Option<String>>, _>>()?;
                    base.with_mutable(values, seq)?
                } else {
                    let fields = fields
                        .into_iter()
                        .map(|v| match v {
                            redis::Value::BulkString(b) => utf8(b),
                            _ => Err(StoreError::Corrupt("a field is not a string".into())),
                        })
                        .collect::<Result<Vec<String>, _>>()?;
                    Record::from_list(id, fields, seq)?
                };
                let record = Arc::new(record);
                self.remember(&record);
                Some(record)
            }
            (None, None) => {
                self.forget(id);
                None
            }
            _ => return Err(StoreError::Corrupt("unexpected reply shape".into())),
        };
        Ok(Reply { status, record })
    }

    fn remember(&self, record: &Arc<Record>) {
        let mut cache = self.cache.lock().expect("not poisoned");
        if cache.len() >= self.cache_capacity && !cache.contains_key(&record.id) {
            // Evict an arbitrary entry (hash order): a miss costs one read, never correctness.
            if let Some(victim) = cache.keys().next().cloned() {
                cache.remove(&victim);
            }
        }
        if let Some(slot) = cache.get_mut(&record.id) {
            *slot = Arc::clone(record);
        } else if self.cache_capacity > 0 {
            cache.insert(record.id.clone(), Arc::clone(record));
        }
    }

    fn forget(&self, id: &str) {
        self.cache.lock().expect("not poisoned").remove(id);
    }

    fn unexpected(status: &str) -> StoreError {
        StoreError::Corrupt(format!("unexpected script reply '{status}'"))
    }
}

fn with_record(reply: Reply) -> Result<(String, Arc<Record>), StoreError> {
    match reply.record {
        Some(r) => Ok((reply.status, r)),
        None => Err(RedisStore::unexpected(&reply.status)),
    }
}

fn change_result(reply: Reply) -> Result<ChangeResult, StoreError> {
    if reply.status == "missing" {
        return Ok(ChangeResult::Missing);
    }
    let (status, record) = with_record(reply)?;
    if let Some(done) = status.strip_prefix("done:") {
        return Ok(ChangeResult::Done(Remembered::decode(done)?, record));
    }
    Ok(match status.as_str() {
        "ok" => ChangeResult::Applied(record),
        "stale" => ChangeResult::Stale(record),
        "over" => ChangeResult::Over(record),
        "late" => ChangeResult::Late(record),
        other => return Err(RedisStore::unexpected(other)),
    })
}

impl MatchStore for RedisStore {
    async fn create(&self, record: &Record) -> Result<CreateResult, StoreError> {
        let mut inv = invoke(&self.create, &record.id);
        inv.arg(if record.is_bughouse() { "bug" } else { "game" })
            .arg(millis(self.retention.ttl));
        for (name, value) in record.to_fields() {
            inv.arg(name).arg(value);
        }
        let (status, stored) = with_record(self.run(&record.id, &mut inv, None).await?)?;
        match status.as_str() {
            "created" => Ok(CreateResult::Created(stored)),
            "exists" => Ok(CreateResult::Exists(stored)),
            other => Err(Self::unexpected(other)),
        }
    }

    async fn load(&self, id: &str) -> Result<Option<Arc<Record>>, StoreError> {
        let mut inv = invoke(&self.load, id);
        let reply = self.run(id, &mut inv, None).await?;
        match reply.status.as_str() {
            "missing" => Ok(None),
            "ok" => Ok(reply.record),
            other => Err(Self::unexpected(other)),
        }
    }

    async fn snapshot(&self, id: &str) -> Result<Option<(Arc<Record>, bool)>, StoreError> {
        if let Some(r) = self.cache.lock().expect("not poisoned").get(id) {
            return Ok(Some((Arc::clone(r), false)));
        }
        Ok(self.load(id).await?.map(|r| (r, true)))
    }

    async fn commit_move(&self, id: &str, c: &MoveCommit) -> Result<MoveResult, StoreError> {
        let (mode, key) = match c.history {
            Some(HistoryUpdate::Append(k)) => ("a", format!("{k:016x}")),
            Some(HistoryUpdate::Reset(k)) => ("r", format!("{k:016x}")),
            None => ("", String::new()),
        };
        let take = c.take.map_or((String::new(), String::new()), |t| {
            (side_letter(t.side).to_owned(), t.letter().to_string())
        });
        let give = c
            .give
            .map_or((String::new(), String::new(), String::new()), |g| {
                (
                    board_letter(g.board).to_owned(),
                    side_letter(g.side).to_owned(),
                    g.letter().to_string(),
                )
            });
        let (end_outcome, end_event) = c.end.map_or((String::new(), String::new()), |o| {
            (encode_outcome(&o), StoredEvent::End(o).encode())
        });
        // The snapshot this process holds: the reply need only carry what a move can change.
        let base = (self.cache.lock().expect("not poisoned").get(id).cloned())
            .filter(|r| r.nonce == c.nonce);
        let mut inv = invoke(&self.play, id);
        inv.arg(&c.nonce)
            .arg(board_letter(c.board))
            .arg(c.expected_ply)
            .arg(&c.position)
            .arg(mode)
            .arg(key)
            .arg(take.0)
            .arg(take.1)
            .arg(give.0)
            .arg(give.1)
            .arg(give.2)
            .arg(c.last.encode_sent())
            .arg(side_letter(c.side))
            .arg(&c.move_event)
            .arg(end_outcome)
            .arg(end_event)
            .arg(millis(self.retention.ttl))
            .arg(millis(self.retention.grace))
            .arg(if base.is_some() { "compact" } else { "full" })
            .arg(request_arg(c.request.as_ref()));
        if let Some(p) = &c.clock {
            inv.arg("p");
            for f in &p.expected {
                inv.arg(f);
            }
            for a in lua::plan_args(&p.plan) {
                inv.arg(a);
            }
            inv.arg(side_letter(p.mover))
                .arg(p.after.moves)
                .arg(p.after.stage)
                .arg(p.after.stage_moves)
                .arg(p.opening_window.map_or(String::new(), |w| w.to_string()))
                .arg(delays_arg(&p.delays));
        }
        let reply = self.run(id, &mut inv, base.as_deref()).await?;
        if reply.status == "missing" {
            return Ok(MoveResult::Missing);
        }
        let (status, record) = with_record(reply)?;
        if let Some(done) = status.strip_prefix("done:") {
            return Ok(MoveResult::Done(Remembered::decode(done)?, record));
        }
        Ok(match status.as_str() {
            "ok" => MoveResult::Applied(record),
            "stale" => MoveResult::Stale(record),
            "over" => MoveResult::Over(record),
            "late" => MoveResult::Late(record),
            other => return Err(Self::unexpected(other)),
        })
    }

    async fn commit_end(&self, id: &str, c: &EndCommit) -> Result<ChangeResult, StoreError> {
        let (guard_board, guard_ply) = c.guard.map_or((String::new(), String::new()), |(b, p)| {
            (board_letter(b).to_owned(), p.to_string())
        });
        let mut inv = invoke(&self.end, id);
        inv.arg(&c.nonce)
            .arg(guard_board)
            .arg(guard_ply)
            .arg(encode_outcome(&c.outcome))
            .arg(StoredEvent::End(c.outcome).encode())
            .arg(millis(self.retention.grace))
            .arg(request_arg(c.request.as_ref()))
            .arg(delays_arg(&c.delays));
        change_result(self.run(id, &mut inv, None).await?)
    }

    async fn commit_offer(&self, id: &str, c: &OfferCommit) -> Result<ChangeResult, StoreError> {
        let mut inv = invoke(&self.offer, id);
        inv.arg(&c.nonce)
            .arg(side_letter(c.side))
            .arg(StoredEvent::DrawOffer(c.side).encode())
            .arg(encode_outcome(&c.agreed))
            .arg(StoredEvent::End(c.agreed).encode())
            .arg(millis(self.retention.ttl))
            .arg(millis(self.retention.grace))
            .arg(request_arg(c.request.as_ref()))
            .arg(delays_arg(&c.delays));
        change_result(self.run(id, &mut inv, None).await?)
    }

    async fn events(
        &self,
        id: &str,
        after: u64,
        max: usize,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        let [bug_state, bug_events, _, _, game_events, _] = keys(id);
        let mut conn = self.conn()?;
        // The match's kind is in this process's snapshot, else one EXISTS tells.
        let cached = self
            .cache
            .lock()
            .expect("not poisoned")
            .get(id)
            .map(|r| r.is_bughouse());
        let bughouse = match cached {
            Some(b) => b,
            None => conn.exists(&bug_state).await.map_err(unavailable)?,
        };
        let list = if bughouse { bug_events } else { game_events };
        let start = isize::try_from(after).unwrap_or(isize::MAX);
        let end = start
            .saturating_add(isize::try_from(max).unwrap_or(isize::MAX))
            .saturating_sub(1);
        let lines: Vec<Vec<u8>> = conn.lrange(&list, start, end).await.map_err(unavailable)?;
        lines
            .into_iter()
            .enumerate()
            .map(|(i, l)| Ok((after + i as u64 + 1, utf8(l)?)))
            .collect()
    }

    /// Reachable, and set to evict nothing (`maxmemory-policy noeviction`): a Redis that may
    /// evict would drop matches under memory pressure.
    async fn probe(&self) -> Result<(), String> {
        let mut conn = self.conn().map_err(|e| e.to_string())?;
        let info: String = redis::cmd("INFO")
            .arg("memory")
            .query_async(&mut conn)
            .await
            .map_err(|e| format!("Redis is unreachable: {e}"))?;
        let policy = info
            .lines()
            .find_map(|l| l.strip_prefix("maxmemory_policy:"))
            .map(str::trim)
            .unwrap_or("unknown");
        if policy == "noeviction" {
            Ok(())
        } else {
            Err(format!(
                "Redis maxmemory-policy is '{policy}': it may evict matches; set it to noeviction"
            ))
        }
    }

    async fn now(&self) -> Result<u64, StoreError> {
        let mut conn = self.conn()?;
        arbiter_timekeeping::redis_now(&mut conn)
            .await
            .map_err(unavailable)
    }

    async fn commit_clock(&self, id: &str, c: &ClockCommit) -> Result<ChangeResult, StoreError> {
        let mut inv = invoke(&self.clock, id);
        let (outcome, end_event) = c.end.map_or((String::new(), String::new()), |o| {
            (encode_outcome(&o), StoredEvent::End(o).encode())
        });
        inv.arg(&c.nonce)
            .arg(match c.timing {
                Timing::Live => "live".to_owned(),
                Timing::Due(at) => at.to_string(),
            })
            .arg(request_arg(c.request.as_ref()))
            .arg(outcome)
            .arg(end_event)
            .arg(millis(self.retention.ttl))
            .arg(millis(self.retention.grace))
            .arg(c.clocks.len());
        for ch in &c.clocks {
            inv.arg(board_letter(ch.board));
            for f in &ch.expected {
                inv.arg(f);
            }
            for f in encode_clock(&ch.clock) {
                inv.arg(f);
            }
            inv.arg(encode_deadline(Some(&ch.clock)));
        }
        for e in &c.events {
            inv.arg(e);
        }
        change_result(self.run(id, &mut inv, None).await?)
    }

    async fn next_deadline(&self) -> Result<(Option<u64>, u64), StoreError> {
        let mut conn = self.conn()?;
        let ((secs, micros), first): ((u64, u64), Vec<(String, f64)>) = redis::pipe()
            .cmd("TIME")
            .zrange_withscores(DEADLINES, 0, 0)
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        // Scores are whole milliseconds, exact in a double.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let next = first.first().map(|(_, at)| *at as u64);
        Ok((next, secs * 1000 + micros / 1000))
    }

    async fn claim_due(
        &self,
        ahead: u64,
        lease: u64,
        max: usize,
    ) -> Result<arbiter_timekeeping::Claimed, StoreError> {
        lua::claim(&self.claim, &mut self.conn()?, DEADLINES, ahead, lease, max)
            .await
            .map_err(unavailable)
    }

    async fn reindex(&self, id: &str, deadline: Option<u64>) -> Result<(), StoreError> {
        let mut conn = self.conn()?;
        let _: i64 = self
            .reindex
            .key(DEADLINES)
            .arg(deadline.map_or(String::new(), |d| d.to_string()))
            .arg(id)
            .invoke_async(&mut conn)
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    fn deadline_changed(&self) -> Arc<tokio::sync::Notify> {
        Arc::clone(&self.deadline_changed)
    }

    async fn done(&self, id: &str, field: &str) -> Result<Option<Remembered>, StoreError> {
        let [_, _, bug_done, _, _, game_done] = keys(id);
        let mut conn = self.conn()?;
        let (bug, game): (Option<String>, Option<String>) = redis::pipe()
            .hget(&bug_done, field)
            .hget(&game_done, field)
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        bug.or(game)
            .map(|d| Remembered::decode(&d))
            .transpose()
            .map_err(StoreError::from)
    }

    async fn remembered(&self, id: &str) -> Result<usize, StoreError> {
        let [_, _, bug_done, _, _, game_done] = keys(id);
        let mut conn = self.conn()?;
        let (bug, game): (Vec<String>, Vec<String>) = redis::pipe()
            .hkeys(&bug_done)
            .hkeys(&game_done)
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        Ok(bug
            .iter()
            .chain(&game)
            .filter(|f| !is_window_field(f))
            .count())
    }
}

/// Runs the scripts' press arithmetic on Redis for `plan` at `now` (for the test that checks
/// it against [`PressPlan::apply`]): `None` when late, else remaining, quota, charged,
/// compensation, bonus and the next deadline.
pub async fn press_on_redis(
    conn: &mut redis::aio::MultiplexedConnection,
    plan: &PressPlan,
    now: u64,
) -> Result<Option<[u64; 6]>, StoreError> {
    let check = script(PRESS_CHECK);
    let mut inv = check.prepare_invoke();
    for a in lua::plan_args(plan) {
        inv.arg(a);
    }
    inv.arg(now);
    let out: Vec<String> = inv.invoke_async(conn).await.map_err(unavailable)?;
    if out.first().is_some_and(|s| s == "late") {
        return Ok(None);
    }
    let nums: Vec<u64> = out
        .iter()
        .map(|s| {
            s.parse()
                .map_err(|_| StoreError::Corrupt(format!("bad number '{s}'")))
        })
        .collect::<Result<_, _>>()?;
    nums.try_into()
        .map(Some)
        .map_err(|_| StoreError::Corrupt("a press returns six numbers".into()))
}
