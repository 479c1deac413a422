//! The Redis match store: the schema of [`crate::record`] in two keys per match, both in the
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
    ChangeResult, CreateResult, EndCommit, HistoryUpdate, MatchStore, MoveCommit, MoveResult,
    OfferCommit, Retention, StoreError,
};
use crate::record::{
    Done, MUTABLE_FIELDS, Record, StoredEvent, board_letter, encode_outcome, side_letter,
};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, Script};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Helpers every script starts with: `pack` (the packed-list encoding of `crate::record`, for
/// the events it writes), `pick` (the three keys of the match, bughouse or single board:
/// state, events, done), `expire`, `state` (a reply with the record: the status, the event
/// count, and the hash as a flat array, which costs Redis far less than packing it in Lua).
const PRELUDE: &str = r"
local function pack(t)
  local parts = {}
  for i = 1, #t do
    local v = tostring(t[i])
    parts[i] = #v .. ':' .. v
  end
  return table.concat(parts)
end
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
";

/// ARGV: kind (`bug` or `game`), TTL in ms, then field, value, ….
const CREATE: &str = r"
local S, E, D = pick()
if S then return state(S, E, 'exists') end
if ARGV[1] == 'bug' then S, E, D = KEYS[1], KEYS[2], KEYS[3] else S, E, D = KEYS[4], KEYS[5], KEYS[6] end
redis.call('DEL', E, D)
redis.call('HSET', S, unpack(ARGV, 3))
redis.call('PEXPIRE', S, ARGV[2])
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
/// 12 last move, 13 the mover's side of the match (bughouse: team), 14 move event without the
/// position (appended here, with the reserves after the step), 15 end outcome, 16 end event,
/// 17 TTL, 18 grace, 19 `compact` or `full`, 20 the request's `done` key (or empty).
const MOVE: &str = r"
local S, E, D = pick()
if not S then return {'missing'} end
if ARGV[20] ~= '' then
  local done = redis.call('HGET', D, ARGV[20])
  if done then return state(S, E, 'done:' .. done) end
end
local b = ARGV[2]
local guard = redis.call('HMGET', S, 'over', 'nonce', 'ply:' .. b)
if guard[2] ~= ARGV[1] then return state(S, E, 'stale') end
local reply = state
if ARGV[19] == 'compact' then reply = compact end
if guard[1] == '1' then return reply(S, E, 'over') end
if guard[3] ~= ARGV[3] then return reply(S, E, 'stale') end
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
redis.call('HSET', S, 'pos:' .. b, ARGV[4], 'ply:' .. b, tostring(tonumber(ARGV[3]) + 1),
  'last:' .. b, ARGV[12])
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
if ARGV[20] ~= '' then
  redis.call('HSET', D, ARGV[20], 'M' .. (redis.call('LLEN', E) + 1))
end
local ttl = ARGV[17]
if ARGV[15] ~= '' then
  redis.call('HSET', S, 'over', '1', 'outcome', ARGV[15])
  events[#events + 1] = ARGV[16]
  ttl = ARGV[18]
end
redis.call('RPUSH', E, unpack(events))
expire(S, E, D, ttl)
announce()
return reply(S, E, 'ok')
";

/// ARGV: 1 nonce, 2 guard board (or empty), 3 guard ply, 4 outcome, 5 end event, 6 grace,
/// 7 the request's `done` key (or empty).
const END: &str = r"
local S, E, D = pick()
if not S then return {'missing'} end
if ARGV[7] ~= '' then
  local done = redis.call('HGET', D, ARGV[7])
  if done then return state(S, E, 'done:' .. done) end
end
if redis.call('HGET', S, 'over') == '1' then return state(S, E, 'over') end
if redis.call('HGET', S, 'nonce') ~= ARGV[1] then return state(S, E, 'stale') end
if ARGV[2] ~= '' and redis.call('HGET', S, 'ply:' .. ARGV[2]) ~= ARGV[3] then
  return state(S, E, 'stale')
end
redis.call('HSET', S, 'over', '1', 'outcome', ARGV[4])
redis.call('RPUSH', E, ARGV[5])
if ARGV[7] ~= '' then redis.call('HSET', D, ARGV[7], 'E') end
expire(S, E, D, ARGV[6])
announce()
return state(S, E, 'ok')
";

/// ARGV: 1 nonce, 2 side, 3 offer event, 4 agreed outcome, 5 end event, 6 TTL, 7 grace,
/// 8 the request's `done` key (or empty).
const OFFER: &str = r"
local S, E, D = pick()
if not S then return {'missing'} end
if ARGV[8] ~= '' then
  local done = redis.call('HGET', D, ARGV[8])
  if done then return state(S, E, 'done:' .. done) end
end
if redis.call('HGET', S, 'over') == '1' then return state(S, E, 'over') end
if redis.call('HGET', S, 'nonce') ~= ARGV[1] then return state(S, E, 'stale') end
if ARGV[8] ~= '' then
  redis.call('HSET', D, ARGV[8], 'D')
  redis.call('PEXPIRE', D, redis.call('PTTL', S))
end
if redis.call('HGET', S, 'draw:' .. ARGV[2]) == '1' then return state(S, E, 'ok') end
redis.call('HSET', S, 'draw:' .. ARGV[2], '1')
redis.call('RPUSH', E, ARGV[3])
local other = 'w'
if ARGV[2] == 'w' then other = 'b' end
local ttl = ARGV[6]
if redis.call('HGET', S, 'draw:' .. other) == '1' then
  redis.call('HSET', S, 'over', '1', 'outcome', ARGV[4])
  redis.call('RPUSH', E, ARGV[5])
  ttl = ARGV[7]
end
expire(S, E, D, ttl)
announce()
return state(S, E, 'ok')
";

fn script(body: &str) -> Script {
    let mutable: Vec<String> = MUTABLE_FIELDS.iter().map(|f| format!("'{f}'")).collect();
    Script::new(&format!(
        "local MUTABLE = {{{}}}\n{PRELUDE}{body}",
        mutable.join(", ")
    ))
}

/// The channel every change is announced on (its message: the match id), so that each replica's
/// watchers wake at once.
pub const CHANGES: &str = "arbiter:matches:changes";

/// How to reach Redis.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisConfig {
    /// `redis://host:port/db`, maybe with a user (and password) in it.
    pub url: String,
    /// A password that replaces the URL's (read from a file or the environment).
    pub password: Option<String>,
}

impl std::fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &crate::config::redact_url(&self.url))
            .field("password", &self.password.as_ref().map(|_| "***"))
            .finish()
    }
}

impl RedisConfig {
    /// The client for this configuration (no connection yet).
    pub fn client(&self) -> Result<redis::Client, StoreError> {
        use redis::IntoConnectionInfo;
        let mut info = self.url.as_str().into_connection_info().map_err(|e| {
            StoreError::Unavailable(format!(
                "bad Redis URL {}: {e}",
                crate::config::redact_url(&self.url)
            ))
        })?;
        if let Some(password) = &self.password {
            info.redis.password = Some(password.clone());
        }
        redis::Client::open(info).map_err(unavailable)
    }
}

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
        let client = config.client()?;
        let conn = Arc::new(std::sync::OnceLock::new());
        let slot = Arc::clone(&conn);
        let scripts: Vec<Script> = [CREATE, LOAD, MOVE, END, OFFER]
            .into_iter()
            .map(script)
            .collect();
        tokio::spawn(async move {
            let mut delay = Duration::from_millis(100);
            loop {
                let manager = ConnectionManagerConfig::new()
                    .set_connection_timeout(Duration::from_secs(2))
                    .set_response_timeout(Duration::from_secs(2))
                    .set_number_of_retries(2)
                    .set_max_delay(500);
                match ConnectionManager::new_with_config(client.clone(), manager).await {
                    Ok(mut c) => {
                        // Loaded up front, so that no change pays a NOSCRIPT round trip (and
                        // a lost reply is the change's own); after a Redis restart the client
                        // loads them again on NOSCRIPT.
                        for s in &scripts {
                            if let Err(e) = s.prepare_invoke().load_async(&mut c).await {
                                tracing::warn!(error = %e, "cannot load a script yet");
                            }
                        }
                        let _ = slot.set(c);
                        tracing::info!("connected to Redis");
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot connect to Redis yet; retrying");
                        tokio::time::sleep(delay).await;
                        delay = (delay * 2).min(Duration::from_secs(5));
                    }
                }
            }
        });
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
        for _ in 0..200 {
            if store.conn.get().is_some() {
                return Ok(store);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(StoreError::Unavailable("cannot connect to Redis".into()))
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
        return Ok(ChangeResult::Done(Done::decode(done)?, record));
    }
    Ok(match status.as_str() {
        "ok" => ChangeResult::Applied(record),
        "stale" => ChangeResult::Stale(record),
        "over" => ChangeResult::Over(record),
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
            .arg(c.last.encode())
            .arg(side_letter(c.side))
            .arg(&c.move_event)
            .arg(end_outcome)
            .arg(end_event)
            .arg(millis(self.retention.ttl))
            .arg(millis(self.retention.grace))
            .arg(if base.is_some() { "compact" } else { "full" })
            .arg(c.request.as_deref().unwrap_or(""));
        let reply = self.run(id, &mut inv, base.as_deref()).await?;
        if reply.status == "missing" {
            return Ok(MoveResult::Missing);
        }
        let (status, record) = with_record(reply)?;
        if let Some(done) = status.strip_prefix("done:") {
            return Ok(MoveResult::Done(Done::decode(done)?, record));
        }
        Ok(match status.as_str() {
            "ok" => MoveResult::Applied(record),
            "stale" => MoveResult::Stale(record),
            "over" => MoveResult::Over(record),
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
            .arg(c.request.as_deref().unwrap_or(""));
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
            .arg(c.request.as_deref().unwrap_or(""));
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

    async fn done(&self, id: &str, key: &str) -> Result<Option<Done>, StoreError> {
        let [_, _, bug_done, _, _, game_done] = keys(id);
        let mut conn = self.conn()?;
        let (bug, game): (Option<String>, Option<String>) = redis::pipe()
            .hget(&bug_done, key)
            .hget(&game_done, key)
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        bug.or(game)
            .map(|d| Done::decode(&d))
            .transpose()
            .map_err(StoreError::from)
    }
}

/// How long the listener stays subscribed after the last local watcher has gone (so that a
/// watcher count flapping between 0 and 1 does not reconnect each time).
const UNSUBSCRIBE_AFTER: Duration = Duration::from_secs(30);

/// Listens for the changes every replica announces on [`CHANGES`] and wakes the local watchers
/// of each changed match, until `shutdown` turns true. One subscription per process, held only
/// while the process has watchers (a replica nobody watches through receives nothing), dropped
/// [`UNSUBSCRIBE_AFTER`] after the last one leaves. On every (re)subscription it wakes every
/// watcher, who read again by sequence number whatever was announced before.
pub async fn listen_for_changes(
    client: redis::Client,
    watchers: Arc<crate::watchers::Watchers>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    use crate::watchers::until_down;
    use tokio_stream::StreamExt;
    let mut watched = watchers.watched();
    let mut delay = Duration::from_millis(100);
    loop {
        tokio::select! {
            r = watched.wait_for(|w| *w) => if r.is_err() { return },
            () = until_down(&mut shutdown) => return,
        }
        let subscribed = async {
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(CHANGES).await?;
            Ok::<_, redis::RedisError>(pubsub)
        };
        let pubsub = tokio::select! {
            r = subscribed => r,
            () = until_down(&mut shutdown) => return,
        };
        match pubsub {
            Ok(mut pubsub) => {
                delay = Duration::from_millis(100);
                // Whatever was announced before this subscription: read again.
                watchers.wake_all();
                let mut messages = pubsub.on_message();
                let idle = tokio::time::sleep(UNSUBSCRIBE_AFTER);
                tokio::pin!(idle);
                // The last watcher may have gone while subscribing.
                let mut idle_armed = !*watched.borrow_and_update();
                loop {
                    tokio::select! {
                        m = messages.next() => match m {
                            Some(m) => {
                                if let Ok(id) = m.get_payload::<String>() {
                                    watchers.wake(&id);
                                }
                            }
                            None => {
                                tracing::warn!(
                                    "lost the Redis subscription to match changes; reconnecting"
                                );
                                break;
                            }
                        },
                        r = watched.changed() => {
                            if r.is_err() {
                                return;
                            }
                            idle_armed = !*watched.borrow_and_update();
                            if idle_armed {
                                idle.as_mut().reset(tokio::time::Instant::now() + UNSUBSCRIBE_AFTER);
                            }
                        }
                        () = &mut idle, if idle_armed => {
                            tracing::debug!("no watchers left; unsubscribing from match changes");
                            break;
                        }
                        () = until_down(&mut shutdown) => return,
                    }
                }
                if !*watched.borrow() {
                    // Unsubscribed for want of watchers: wait for the next one, no delay.
                    continue;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot subscribe to match changes yet; retrying");
            }
        }
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = until_down(&mut shutdown) => return,
        }
        delay = (delay * 2).min(Duration::from_secs(5));
    }
}
