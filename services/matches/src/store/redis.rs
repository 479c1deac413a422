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
    MUTABLE_FIELDS, Record, StoredEvent, board_letter, encode_outcome, side_letter,
};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, Script};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Helpers every script starts with: `pack` (the packed-list encoding of `crate::record`, for
/// the events it writes), `pick` (the keys of the match, bughouse or single board), `state` (a
/// reply with the record: the status, the event count, and the hash as a flat array, which
/// costs Redis far less than packing it in Lua).
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
  if redis.call('EXISTS', KEYS[1]) == 1 then return KEYS[1], KEYS[2] end
  if redis.call('EXISTS', KEYS[3]) == 1 then return KEYS[3], KEYS[4] end
  return nil, nil
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
local S, E = pick()
if S then return state(S, E, 'exists') end
if ARGV[1] == 'bug' then S, E = KEYS[1], KEYS[2] else S, E = KEYS[3], KEYS[4] end
redis.call('DEL', E)
redis.call('HSET', S, unpack(ARGV, 3))
redis.call('PEXPIRE', S, ARGV[2])
return state(S, E, 'created')
";

const LOAD: &str = r"
local S, E = pick()
if not S then return {'missing'} end
return state(S, E, 'ok')
";

/// A move's reply is compact when the caller holds the match (ARGV 19 = `compact`): only the
/// fields a change can touch ([`MUTABLE_FIELDS`]), since the rest is fixed at creation and the
/// nonce matched; a mismatched nonce (a re-created match) gets the whole record.
///
/// ARGV: 1 nonce, 2 board, 3 expected ply, 4 position, 5 history mode (`a`, `r` or empty),
/// 6 history key, 7 take side, 8 take letter, 9 give board, 10 give side, 11 give letter,
/// 12 last move, 13 the mover's side of the match (bughouse: team), 14 move event without the position (appended here, with the
/// reserves after the step), 15 end outcome, 16 end event, 17 TTL, 18 grace.
const MOVE: &str = r"
local S, E = pick()
if not S then return {'missing'} end
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
local ttl = ARGV[17]
if ARGV[15] ~= '' then
  redis.call('HSET', S, 'over', '1', 'outcome', ARGV[15])
  events[#events + 1] = ARGV[16]
  ttl = ARGV[18]
end
redis.call('RPUSH', E, unpack(events))
redis.call('PEXPIRE', S, ttl)
redis.call('PEXPIRE', E, ttl)
return reply(S, E, 'ok')
";

/// ARGV: 1 nonce, 2 guard board (or empty), 3 guard ply, 4 outcome, 5 end event, 6 grace.
const END: &str = r"
local S, E = pick()
if not S then return {'missing'} end
if redis.call('HGET', S, 'over') == '1' then return state(S, E, 'over') end
if redis.call('HGET', S, 'nonce') ~= ARGV[1] then return state(S, E, 'stale') end
if ARGV[2] ~= '' and redis.call('HGET', S, 'ply:' .. ARGV[2]) ~= ARGV[3] then
  return state(S, E, 'stale')
end
redis.call('HSET', S, 'over', '1', 'outcome', ARGV[4])
redis.call('RPUSH', E, ARGV[5])
redis.call('PEXPIRE', S, ARGV[6])
redis.call('PEXPIRE', E, ARGV[6])
return state(S, E, 'ok')
";

/// ARGV: 1 nonce, 2 side, 3 offer event, 4 agreed outcome, 5 end event, 6 TTL, 7 grace.
const OFFER: &str = r"
local S, E = pick()
if not S then return {'missing'} end
if redis.call('HGET', S, 'over') == '1' then return state(S, E, 'over') end
if redis.call('HGET', S, 'nonce') ~= ARGV[1] then return state(S, E, 'stale') end
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
redis.call('PEXPIRE', S, ttl)
redis.call('PEXPIRE', E, ttl)
return state(S, E, 'ok')
";

fn script(body: &str) -> Script {
    let mutable: Vec<String> = MUTABLE_FIELDS.iter().map(|f| format!("'{f}'")).collect();
    Script::new(&format!(
        "local MUTABLE = {{{}}}\n{PRELUDE}{body}",
        mutable.join(", ")
    ))
}

/// Matches in Redis (see the module documentation).
pub struct RedisStore {
    conn: ConnectionManager,
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

/// The four keys a script gets: the bughouse pair, then the single-board pair.
fn keys(id: &str) -> [String; 4] {
    [
        format!("bug:{{{id}}}:state"),
        format!("bug:{{{id}}}:events"),
        format!("game:{{{id}}}:state"),
        format!("game:{{{id}}}:events"),
    ]
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
    /// Connects to `url` (`redis://host:port/db`). Each command fails after a short timeout
    /// while Redis is unreachable, and the connection is re-established when it returns.
    /// `cache_capacity` bounds the snapshots kept in this process.
    pub async fn connect(
        url: &str,
        retention: Retention,
        cache_capacity: usize,
    ) -> Result<RedisStore, StoreError> {
        let client = redis::Client::open(url).map_err(unavailable)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Duration::from_secs(2))
            .set_response_timeout(Duration::from_secs(2))
            .set_number_of_retries(2)
            .set_max_delay(500);
        let conn = ConnectionManager::new_with_config(client, config)
            .await
            .map_err(unavailable)?;
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

    /// Runs a script invocation and decodes its reply, keeping the record it returns.
    async fn run(
        &self,
        id: &str,
        invocation: &mut redis::ScriptInvocation<'_>,
        base: Option<&Record>,
    ) -> Result<Reply, StoreError> {
        let reply: Vec<redis::Value> = invocation
            .invoke_async(&mut self.conn.clone())
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
    Ok(match status.as_str() {
        "ok" => ChangeResult::Applied(record),
        "stale" => ChangeResult::Stale(record),
        "over" => ChangeResult::Over(record),
        other => return Err(RedisStore::unexpected(other)),
    })
}

impl MatchStore for RedisStore {
    async fn create(&self, record: &Record) -> Result<CreateResult, StoreError> {
        let [k1, k2, k3, k4] = keys(&record.id);
        let mut inv = self.create.key(k1);
        inv.key(k2).key(k3).key(k4);
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
        let [k1, k2, k3, k4] = keys(id);
        let mut inv = self.load.key(k1);
        inv.key(k2).key(k3).key(k4);
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
        let [k1, k2, k3, k4] = keys(id);
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
        let mut inv = self.play.key(k1);
        inv.key(k2)
            .key(k3)
            .key(k4)
            .arg(&c.nonce)
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
            .arg(if base.is_some() { "compact" } else { "full" });
        let reply = self.run(id, &mut inv, base.as_deref()).await?;
        if reply.status == "missing" {
            return Ok(MoveResult::Missing);
        }
        let (status, record) = with_record(reply)?;
        Ok(match status.as_str() {
            "ok" => MoveResult::Applied(record),
            "stale" => MoveResult::Stale(record),
            "over" => MoveResult::Over(record),
            other => return Err(Self::unexpected(other)),
        })
    }

    async fn commit_end(&self, id: &str, c: &EndCommit) -> Result<ChangeResult, StoreError> {
        let [k1, k2, k3, k4] = keys(id);
        let (guard_board, guard_ply) = c.guard.map_or((String::new(), String::new()), |(b, p)| {
            (board_letter(b).to_owned(), p.to_string())
        });
        let mut inv = self.end.key(k1);
        inv.key(k2)
            .key(k3)
            .key(k4)
            .arg(&c.nonce)
            .arg(guard_board)
            .arg(guard_ply)
            .arg(encode_outcome(&c.outcome))
            .arg(StoredEvent::End(c.outcome).encode())
            .arg(millis(self.retention.grace));
        change_result(self.run(id, &mut inv, None).await?)
    }

    async fn commit_offer(&self, id: &str, c: &OfferCommit) -> Result<ChangeResult, StoreError> {
        let [k1, k2, k3, k4] = keys(id);
        let mut inv = self.offer.key(k1);
        inv.key(k2)
            .key(k3)
            .key(k4)
            .arg(&c.nonce)
            .arg(side_letter(c.side))
            .arg(StoredEvent::DrawOffer(c.side).encode())
            .arg(encode_outcome(&c.agreed))
            .arg(StoredEvent::End(c.agreed).encode())
            .arg(millis(self.retention.ttl))
            .arg(millis(self.retention.grace));
        change_result(self.run(id, &mut inv, None).await?)
    }

    async fn events(&self, id: &str, after: u64) -> Result<Vec<(u64, String)>, StoreError> {
        let [bug_state, bug_events, _, game_events] = keys(id);
        let mut conn = self.conn.clone();
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
        let lines: Vec<Vec<u8>> = conn.lrange(&list, start, -1).await.map_err(unavailable)?;
        lines
            .into_iter()
            .enumerate()
            .map(|(i, l)| Ok((after + i as u64 + 1, utf8(l)?)))
            .collect()
    }
}
