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
    CHAT_BURST, CHAT_WINDOW_MS, ChangeResult, ChatPost, ChatResult, ClockCommit, CreateResult,
    DeclineCommit, EndCommit, HistoryUpdate, IndexPlace, MAX_CHAT_ENTRIES, MAX_CHAT_PER_SEAT,
    MAX_PLAYER_MATCHES, MatchStore, MoveCommit, MoveResult, OfferCommit, PLAYER_INDEX_TTL,
    Retention, StoreError, TakebackAction, TakebackCommit, Timing,
};
use crate::record::{
    ChatEntry, ChatMessage, LastMove, MUTABLE_FIELDS, REQUEST_WINDOW, Record, Remembered,
    RequestId, StoredEvent, board_letter, encode_history, encode_outcome, is_window_field, pack,
    side_letter,
};
use arbiter_clocked::fields::{encode_change, encode_changes};
use arbiter_clocked::{Deadlines, RedisDeadlines, RedisNames, lua};
use arbiter_core::Color;
use arbiter_core::clock::PressPlan;
use arbiter_redis_conn::script::{Args, Constant, Schema, constants};
use arbiter_redis_conn::slots::SlotGroups;
use arbiter_redis_conn::{Announcements, Connection};
use arbiter_redis_conn::{connect_in_background, wait_connected};
use redis::{AsyncCommands, Script};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The `PRELUDE` script (`lua/prelude.lua`; its header lists its keys and arguments).
const PRELUDE: &str = include_str!("lua/prelude.lua");

/// The `PRESS_CHECK` script (`lua/press-check.lua`; its header lists its keys and arguments).
const PRESS_CHECK: &str = include_str!("lua/press-check.lua");

/// The `CREATE` script (`lua/create.lua`; its header lists its keys and arguments).
const CREATE: &str = include_str!("lua/create.lua");

/// The `LOAD` script (`lua/load.lua`; its header lists its keys and arguments).
const LOAD: &str = include_str!("lua/load.lua");

/// The `MOVE` script (`lua/move.lua`; its header lists its keys and arguments).
const MOVE: &str = include_str!("lua/move.lua");

/// The arguments of [`MOVE`], by name (the script reads `A.<name>`; see its header).
static MOVE_ARGS: Schema = Schema::new(&[
    ("nonce", 1),
    ("board", 1),
    ("expected_ply", 1),
    ("position", 1),
    ("history_mode", 1),
    ("history_key", 1),
    ("take_side", 1),
    ("take_letter", 1),
    ("give_board", 1),
    ("give_side", 1),
    ("give_letter", 1),
    ("last_move", 1),
    ("match_side", 1),
    ("move_event", 1),
    ("end_outcome", 1),
    ("end_event", 1),
    ("ttl", 1),
    ("grace", 1),
    ("reply", 1),
    ("request", 1),
    ("clocked", 1),
    ("expected", 3),
    ("plan", 13),
    ("mover", 1),
    ("moves_after", 1),
    ("stage_after", 1),
    ("stage_moves_after", 1),
    ("opening_window", 1),
    ("delays", 1),
]);

/// The `END` script (`lua/end.lua`; its header lists its keys and arguments).
const END: &str = include_str!("lua/end.lua");

/// The arguments of [`END`], by name.
static END_ARGS: Schema = Schema::new(&[
    ("nonce", 1),
    ("guard", 1),
    ("outcome", 1),
    ("end_event", 1),
    ("grace", 1),
    ("request", 1),
    ("delays", 1),
]);

/// The `OFFER` script (`lua/offer.lua`; its header lists its keys and arguments).
const OFFER: &str = include_str!("lua/offer.lua");

/// The arguments of [`OFFER`], by name.
static OFFER_ARGS: Schema = Schema::new(&[
    ("nonce", 1),
    ("side", 1),
    ("offer_event", 1),
    ("agreed", 1),
    ("end_event", 1),
    ("ttl", 1),
    ("grace", 1),
    ("request", 1),
    ("delays", 1),
]);

/// The `DECLINE` script (`lua/decline.lua`; its header lists its keys and arguments).
const DECLINE: &str = include_str!("lua/decline.lua");

/// The arguments of [`DECLINE`], by name.
static DECLINE_ARGS: Schema = Schema::new(&[
    ("nonce", 1),
    ("offerer", 1),
    ("decline_event", 1),
    ("ttl", 1),
    ("request", 1),
]);

/// The `TAKEBACK` script (`lua/takeback.lua`; its header lists its keys and arguments).
const TAKEBACK: &str = include_str!("lua/takeback.lua");

/// The arguments of [`TAKEBACK`], by name.
static TAKEBACK_ARGS: Schema = Schema::with_rest(
    &[
        ("nonce", 1),
        ("ply", 1),
        ("expected", 1),
        ("action", 1),
        ("proposal", 1),
        ("event", 1),
        ("request", 1),
        ("ttl", 1),
        ("position", 1),
        ("new_ply", 1),
        ("last", 1),
        ("history", 1),
        ("clocks", 1),
    ],
    "events",
);

/// The `CHAT_POST` script (`lua/chat-post.lua`; its header lists its keys and arguments).
const CHAT_POST: &str = include_str!("lua/chat-post.lua");

/// The arguments of [`CHAT_POST`], by name.
static CHAT_POST_ARGS: Schema = Schema::new(&[
    ("nonce", 1),
    ("channel", 1),
    ("scope", 1),
    ("author", 1),
    ("text", 1),
    ("limited", 1),
    ("request_field", 1),
    ("fingerprint", 1),
    ("max_entries", 1),
    ("max_per_seat", 1),
    ("burst", 1),
    ("window", 1),
]);

/// The `CHAT_DELETE` script (`lua/chat-delete.lua`).
const CHAT_DELETE: &str = include_str!("lua/chat-delete.lua");

/// The arguments of [`CHAT_DELETE`], by name.
static CHAT_DELETE_ARGS: Schema = Schema::new(&[("message", 1)]);

/// The `CLOCK` script (`lua/clock.lua`; its header lists its keys and arguments).
const CLOCK: &str = include_str!("lua/clock.lua");
/// The arguments of [`CLOCK`], by name.
static CLOCK_ARGS: Schema = Schema::with_rest(
    &[
        ("nonce", 1),
        ("timing", 1),
        ("request", 1),
        ("outcome", 1),
        ("end_event", 1),
        ("ttl", 1),
        ("grace", 1),
        ("clocks", 1),
    ],
    "events",
);

/// The arguments of [`CREATE`], by name.
static CREATE_ARGS: Schema = Schema::with_rest(
    &[
        ("kind", 1),
        ("ttl", 1),
        ("index_ttl", 1),
        ("index_max", 1),
        ("players", 1),
    ],
    "fields",
);

/// The arguments of [`PRESS_CHECK`], by name.
static PRESS_CHECK_ARGS: Schema = Schema::new(&[("plan", 13), ("now", 1)]);

/// The deadline index of running matches (a sorted set by earliest deadline, Unix ms) and the
/// channel a new earliest deadline is announced on (its message: the deadline). One key for all
/// matches on one Redis; on a cluster, one per slot group (`<index>:{<group tag>}`: [`Layout`]).
pub const DEADLINES: RedisNames = RedisNames {
    index: "arbiter:matches:deadlines",
    channel: "arbiter:matches:deadline",
};

/// A request id as the scripts take it (empty without one).
fn request_arg(request: Option<&RequestId>) -> String {
    request.map_or_else(String::new, RequestId::encode)
}

fn delays_arg(delays: &[u64]) -> String {
    pack(&delays.iter().map(u64::to_string).collect::<Vec<_>>())
}

/// A script of this store: the shared clock Lua, this store's prelude, the Lua that names the
/// arguments of `schema` (if any), and `body`. `grouped`: for the slot-group layout (see
/// [`Layout`]), where the match's id, its group's finished stream and player indexes come from
/// the first key.
fn script(grouped: bool, schema: Option<&Schema>, body: &str) -> Script {
    let mut defs = constants(&[
        ("MUTABLE", Constant::List(&MUTABLE_FIELDS)),
        ("WINDOW", Constant::Number(REQUEST_WINDOW as u64)),
        ("FINISHED_MAX", Constant::Number(FINISHED_MAX)),
    ]);
    if grouped {
        defs.push_str(&format!(
            "local TAG = string.match(KEYS[1] or '', '{{([^}}]*)}}') or ''\n\
             local ID = string.match(KEYS[1] or '', '^[^{{]*{{[^}}]*}}:(.*):[^:]*$')\n\
             local FINISHED = '{FINISHED}:{{' .. TAG .. '}}'\n\
             local PLAYER_INDEX = '{PLAYER_INDEX}{{' .. TAG .. '}}:'\n"
        ));
    } else {
        defs.push_str("local ID = string.match(KEYS[1] or '', '{(.*)}')\n");
        defs.push_str(&constants(&[
            ("FINISHED", Constant::Text(FINISHED)),
            ("PLAYER_INDEX", Constant::Text(PLAYER_INDEX)),
        ]));
    }
    defs.push_str(&Announcements::lua(CHANGES, grouped));
    Script::new(&format!(
        "{defs}{}{PRELUDE}{}{body}",
        DEADLINES.prelude(grouped),
        schema.map_or_else(String::new, Schema::prologue),
    ))
}

/// How many slot groups a store on a cluster spreads its matches over (see [`Layout`]). Part of
/// the stored layout: every replica uses the same, for as long as the data lives.
pub const CLUSTER_GROUPS: u16 = 32;

/// The prefix of each player's index of matches (a sorted set of match ids by creation time).
pub const PLAYER_INDEX: &str = "arbiter:matches:player:";

/// Where a match's keys are. On one Redis, each match's keys carry the match's id as their hash
/// tag (`game:{<id>}:state`), and one deadline index, finished stream and player index serve
/// every match. On a cluster, a script may only touch keys of one slot, so the matches are
/// spread over [`CLUSTER_GROUPS`] slot groups ([`SlotGroups`]): a match's keys carry its group's
/// tag (`game:{<tag>}:<id>:state`), and each group has its own deadline index
/// (`arbiter:matches:deadlines:{<tag>}`), finished stream (`arbiter:matches:finished:{<tag>}`)
/// and player indexes (`arbiter:matches:player:{<tag>}:<player>`), in the group's slot.
///
/// Every script declares the match's eight keys, of which one kind (bughouse or single board)
/// never exists: while a cluster migrates the slot, Redis therefore answers TRYAGAIN (the client
/// retries) until the slot has moved, and never runs a script on half-moved keys (the group's
/// index, stream and player indexes, which the scripts touch without declaring, included).
#[derive(Clone, Debug)]
pub struct Layout {
    groups: Option<Arc<SlotGroups>>,
}

impl Layout {
    /// One Redis's layout.
    pub fn single() -> Layout {
        Layout { groups: None }
    }

    /// A cluster's layout.
    pub fn grouped() -> Layout {
        Layout {
            groups: Some(Arc::new(SlotGroups::new("m", CLUSTER_GROUPS))),
        }
    }

    /// Whether matches are spread over slot groups.
    pub fn is_grouped(&self) -> bool {
        self.groups.is_some()
    }

    /// The slot groups, if any.
    pub fn groups(&self) -> Option<&Arc<SlotGroups>> {
        self.groups.as_ref()
    }

    /// What names match `id` inside its keys: `{<id>}`, or `{<tag>}:<id>` with its group's tag
    /// (the id hashed once for all of its keys).
    fn name(&self, id: &str) -> String {
        match &self.groups {
            None => format!("{{{id}}}"),
            Some(g) => format!("{{{}}}:{id}", g.tag_of(id)),
        }
    }

    /// The six keys a script gets: the bughouse state, events and done, then the single
    /// board's (`<kind>:{<id>}:<what>`, or `<kind>:{<tag>}:<id>:<what>`).
    pub fn keys(&self, id: &str) -> [String; 6] {
        Self::keys_named(&self.name(id))
    }

    fn keys_named(n: &str) -> [String; 6] {
        [
            format!("bug:{n}:state"),
            format!("bug:{n}:events"),
            format!("bug:{n}:done"),
            format!("game:{n}:state"),
            format!("game:{n}:events"),
            format!("game:{n}:done"),
        ]
    }

    /// The chat keys of match `id`: its list and its hash (limits, request ids).
    pub fn chat_keys(&self, id: &str) -> [String; 2] {
        Self::chat_keys_named(&self.name(id))
    }

    fn chat_keys_named(n: &str) -> [String; 2] {
        [format!("chat:{n}:log"), format!("chat:{n}:meta")]
    }

    /// The finished streams: one, or one per group.
    pub fn finished_streams(&self) -> Vec<String> {
        match &self.groups {
            None => vec![FINISHED.to_owned()],
            Some(g) => g.tags().map(|t| format!("{FINISHED}:{{{t}}}")).collect(),
        }
    }

    /// A player's indexes of matches: one, or one per group.
    fn player_indexes(&self, player: &str) -> Vec<String> {
        match &self.groups {
            None => vec![format!("{PLAYER_INDEX}{player}")],
            Some(g) => g
                .tags()
                .map(|t| format!("{PLAYER_INDEX}{{{t}}}:{player}"))
                .collect(),
        }
    }

    /// A script invocation with the eight keys of match `id`: the six of [`Layout::keys`], then
    /// the two of [`Layout::chat_keys`] (every script that sets the match's lifetime sets the
    /// chat's too).
    fn invoke<'a>(&self, script: &'a Script, id: &str) -> redis::ScriptInvocation<'a> {
        let n = self.name(id);
        let [k1, k2, k3, k4, k5, k6] = Self::keys_named(&n);
        let [k7, k8] = Self::chat_keys_named(&n);
        let mut inv = script.key(k1);
        inv.key(k2).key(k3).key(k4).key(k5).key(k6).key(k7).key(k8);
        inv
    }

    /// [`Layout::invoke`] with named arguments, laid out by their schema.
    fn invoke_named<'a>(
        &self,
        script: &'a Script,
        id: &str,
        args: Args,
    ) -> Result<redis::ScriptInvocation<'a>, StoreError> {
        let mut inv = self.invoke(script, id);
        for a in args.slots().map_err(StoreError::Corrupt)? {
            inv.arg(a);
        }
        Ok(inv)
    }
}

/// The Redis Stream every finished match is appended to, in the step that ends it, for the
/// platform to archive (a consumer group reads it; `docs/api/matches.md` lists the fields).
pub const FINISHED: &str = "arbiter:matches:finished";
/// About how many entries [`FINISHED`] keeps (`XADD … MAXLEN ~`): the oldest beyond it are
/// trimmed, consumed or not.
pub const FINISHED_MAX: u64 = 100_000;

/// The channel every change is announced on (its message: the match id), so that each replica's
/// watchers wake at once; on a cluster, one shard channel per slot group ([`announcements`]).
pub const CHANGES: &str = "arbiter:matches:changes";

/// Where the changes of a store on a cluster or not are announced: [`CHANGES`] on one Redis;
/// on a cluster the shard channel of each slot group, `arbiter:matches:changes:{<tag>}`, which
/// the scripts `SPUBLISH` to in their group's slot.
pub fn announcements(cluster: bool) -> Announcements {
    let layout = if cluster {
        Layout::grouped()
    } else {
        Layout::single()
    };
    Announcements::new(CHANGES, layout.groups.as_deref())
}

pub use arbiter_redis_conn::RedisConfig;

/// Matches in Redis (see the module documentation).
pub struct RedisStore {
    /// Set once the first connection succeeds; the manager reconnects by itself afterwards.
    conn: Arc<std::sync::OnceLock<Connection>>,
    retention: Retention,
    cache: Mutex<HashMap<String, Arc<Record>>>,
    cache_capacity: usize,
    create: Script,
    load: Script,
    play: Script,
    end: Script,
    offer: Script,
    decline: Script,
    takeback: Script,
    chat_post: Script,
    chat_delete: Script,
    clock: Script,
    deadlines: RedisDeadlines,
    layout: Layout,
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

/// A chat script's reply as a [`ChatResult`].
fn chat_result(reply: Vec<redis::Value>) -> Result<ChatResult, StoreError> {
    let text = |v: &redis::Value| -> Result<String, StoreError> {
        match v {
            redis::Value::BulkString(b) => utf8(b.clone()),
            redis::Value::SimpleString(s) => Ok(s.clone()),
            other => Err(StoreError::Corrupt(format!(
                "unexpected chat reply {other:?}"
            ))),
        }
    };
    let num = |v: Option<&redis::Value>| -> Result<u64, StoreError> {
        match v {
            Some(redis::Value::Int(n)) => {
                u64::try_from(*n).map_err(|_| StoreError::Corrupt("negative chat number".into()))
            }
            Some(v) => text(v)?
                .parse()
                .map_err(|_| StoreError::Corrupt("bad chat number".into())),
            None => Err(StoreError::Corrupt("short chat reply".into())),
        }
    };
    let status = text(
        reply
            .first()
            .ok_or_else(|| StoreError::Corrupt("empty chat reply".into()))?,
    )?;
    let message = |reply: &[redis::Value]| -> Result<ChatMessage, StoreError> {
        let id = num(reply.get(1))?;
        let line = text(
            reply
                .get(2)
                .ok_or_else(|| StoreError::Corrupt("short chat reply".into()))?,
        )?;
        match ChatEntry::decode(id, &line)? {
            ChatEntry::Message(m) => Ok(m),
            ChatEntry::Deleted { .. } => Err(StoreError::Corrupt("not a chat message".into())),
        }
    };
    Ok(match status.as_str() {
        "ok" => ChatResult::Done(message(&reply)?),
        "dup" => ChatResult::Duplicate(message(&reply)?),
        "reused" => ChatResult::Reused,
        "full" => ChatResult::Full,
        "scope_full" => ChatResult::ScopeFull,
        "too_fast" => ChatResult::TooFast(num(reply.get(1))?),
        "stale" => ChatResult::Stale,
        "missing" => ChatResult::Missing,
        "no_message" => ChatResult::NoMessage,
        other => return Err(RedisStore::unexpected(other)),
    })
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
        let layout = if client.is_cluster() {
            Layout::grouped()
        } else {
            Layout::single()
        };
        let g = layout.is_grouped();
        let create = script(g, Some(&CREATE_ARGS), CREATE);
        let load = script(g, None, LOAD);
        let play = script(g, Some(&MOVE_ARGS), MOVE);
        let end = script(g, Some(&END_ARGS), END);
        let offer = script(g, Some(&OFFER_ARGS), OFFER);
        let decline = script(g, Some(&DECLINE_ARGS), DECLINE);
        let takeback = script(g, Some(&TAKEBACK_ARGS), TAKEBACK);
        let chat_post = script(g, Some(&CHAT_POST_ARGS), CHAT_POST);
        let chat_delete = script(g, Some(&CHAT_DELETE_ARGS), CHAT_DELETE);
        let clock = script(g, Some(&CLOCK_ARGS), CLOCK);
        let mut scripts = vec![
            create.clone(),
            load.clone(),
            play.clone(),
            end.clone(),
            offer.clone(),
            decline.clone(),
            takeback.clone(),
            chat_post.clone(),
            chat_delete.clone(),
            clock.clone(),
        ];
        scripts.extend(DEADLINES.scripts(g));
        let conn = connect_in_background(client, "match store", scripts);
        Ok(RedisStore {
            deadlines: RedisDeadlines::new(Arc::clone(&conn), DEADLINES, layout.groups().cloned()),
            layout,
            conn,
            retention,
            cache: Mutex::new(HashMap::new()),
            cache_capacity,
            create,
            load,
            play,
            end,
            offer,
            decline,
            takeback,
            chat_post,
            chat_delete,
            clock,
        })
    }

    /// [`RedisStore::open`], waiting up to 10 s for the first connection (for tests and tools):
    /// `redis` is a URL or a whole [`RedisConfig`].
    pub async fn connect(
        redis: impl Into<RedisConfig>,
        retention: Retention,
        cache_capacity: usize,
    ) -> Result<RedisStore, StoreError> {
        let config = redis.into();
        let store = RedisStore::open(&config, retention, cache_capacity)?;
        if wait_connected(&store.conn, Duration::from_secs(10)).await {
            Ok(store)
        } else {
            Err(StoreError::Unavailable("cannot connect to Redis".into()))
        }
    }

    /// The connection, once there is one.
    fn conn(&self) -> Result<Connection, StoreError> {
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
        let mut args = CREATE_ARGS.args();
        let live = millis(self.retention.live_ttl(record));
        let mut fields = record.to_fields();
        // A lifetime longer than the configured one (correspondence) stays with the match: the
        // change scripts keep it at least that long (the record reader ignores the field).
        if live > millis(self.retention.ttl) {
            fields.push(("keep".to_owned(), live.to_string()));
        }
        args.set("kind", if record.is_bughouse() { "bug" } else { "game" })
            .set("ttl", live)
            .set("index_ttl", millis(PLAYER_INDEX_TTL))
            .set("index_max", MAX_PLAYER_MATCHES)
            .set("players", pack(&record.players))
            .rest(fields.into_iter().flat_map(|(k, v)| [k, v]));
        let mut inv = self.layout.invoke_named(&self.create, &record.id, args)?;
        let (status, stored) = with_record(self.run(&record.id, &mut inv, None).await?)?;
        match status.as_str() {
            "created" => Ok(CreateResult::Created(stored)),
            "exists" => Ok(CreateResult::Exists(stored)),
            other => Err(Self::unexpected(other)),
        }
    }

    async fn load(&self, id: &str) -> Result<Option<Arc<Record>>, StoreError> {
        let mut inv = self.layout.invoke(&self.load, id);
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
        let mut args = MOVE_ARGS.args();
        args.set("nonce", &c.nonce)
            .set("board", board_letter(c.board))
            .set("expected_ply", c.expected_ply)
            .set("position", &c.position)
            .set("history_mode", mode)
            .set("history_key", key)
            .set("take_side", take.0)
            .set("take_letter", take.1)
            .set("give_board", give.0)
            .set("give_side", give.1)
            .set("give_letter", give.2)
            .set("last_move", c.last.encode_sent())
            .set("match_side", side_letter(c.side))
            .set("move_event", &c.move_event)
            .set("end_outcome", end_outcome)
            .set("end_event", end_event)
            .set("ttl", millis(self.retention.ttl))
            .set("grace", millis(self.retention.grace))
            .set("reply", if base.is_some() { "compact" } else { "full" })
            .set("request", request_arg(c.request.as_ref()));
        if let Some(p) = &c.clock {
            args.set("clocked", "p")
                .set_group("expected", &p.expected)
                .set_group("plan", lua::plan_args(&p.plan))
                .set("mover", side_letter(p.mover))
                .set("moves_after", p.after.moves)
                .set("stage_after", p.after.stage)
                .set("stage_moves_after", p.after.stage_moves)
                .set(
                    "opening_window",
                    p.opening_window.map_or(String::new(), |w| w.to_string()),
                )
                .set("delays", delays_arg(&p.delays));
        }
        let mut inv = self.layout.invoke_named(&self.play, id, args)?;
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
        let guard: Vec<String> = c
            .guard
            .iter()
            .flat_map(|&(b, p)| [board_letter(b).to_owned(), p.to_string()])
            .collect();
        let mut args = END_ARGS.args();
        args.set("nonce", &c.nonce)
            .set("guard", pack(&guard))
            .set("outcome", encode_outcome(&c.outcome))
            .set("end_event", StoredEvent::End(c.outcome).encode())
            .set("grace", millis(self.retention.grace))
            .set("request", request_arg(c.request.as_ref()))
            .set("delays", delays_arg(&c.delays));
        let mut inv = self.layout.invoke_named(&self.end, id, args)?;
        change_result(self.run(id, &mut inv, None).await?)
    }

    async fn commit_offer(&self, id: &str, c: &OfferCommit) -> Result<ChangeResult, StoreError> {
        let mut args = OFFER_ARGS.args();
        args.set("nonce", &c.nonce)
            .set("side", side_letter(c.side))
            .set("offer_event", StoredEvent::DrawOffer(c.side).encode())
            .set("agreed", encode_outcome(&c.agreed))
            .set("end_event", StoredEvent::End(c.agreed).encode())
            .set("ttl", millis(self.retention.ttl))
            .set("grace", millis(self.retention.grace))
            .set("request", request_arg(c.request.as_ref()))
            .set("delays", delays_arg(&c.delays));
        let mut inv = self.layout.invoke_named(&self.offer, id, args)?;
        change_result(self.run(id, &mut inv, None).await?)
    }

    async fn commit_decline(
        &self,
        id: &str,
        c: &DeclineCommit,
    ) -> Result<ChangeResult, StoreError> {
        let mut args = DECLINE_ARGS.args();
        args.set("nonce", &c.nonce)
            .set("offerer", side_letter(c.offerer))
            .set(
                "decline_event",
                StoredEvent::DrawDeclined(c.offerer).encode(),
            )
            .set("ttl", millis(self.retention.ttl))
            .set("request", request_arg(c.request.as_ref()));
        let mut inv = self.layout.invoke_named(&self.decline, id, args)?;
        change_result(self.run(id, &mut inv, None).await?)
    }

    async fn commit_takeback(
        &self,
        id: &str,
        c: &TakebackCommit,
    ) -> Result<ChangeResult, StoreError> {
        let proposal = |(side, ply): (Color, u32)| pack(&[side_letter(side), &ply.to_string()]);
        let mut args = TAKEBACK_ARGS.args();
        args.set("nonce", &c.nonce)
            .set("ply", c.ply)
            .set("expected", c.expected.map(proposal).unwrap_or_default())
            .set("request", request_arg(c.request.as_ref()))
            .set("ttl", millis(self.retention.ttl));
        let (mut position, mut new_ply, mut last, mut history, mut clocks) = Default::default();
        let mut events: Vec<String> = Vec::new();
        match &c.action {
            TakebackAction::Propose(side) => {
                args.set("action", "propose")
                    .set("proposal", proposal((*side, c.ply)))
                    .set("event", StoredEvent::TakebackOffer(*side).encode());
            }
            TakebackAction::Decline => {
                let side = c.expected.map_or(Color::White, |(s, _)| s);
                args.set("action", "decline")
                    .set("proposal", "")
                    .set("event", StoredEvent::TakebackDeclined(side).encode());
            }
            TakebackAction::Accept(undo) => {
                args.set("action", "accept")
                    .set("proposal", "")
                    .set("event", "");
                position = undo.position.clone();
                new_ply = undo.ply.to_string();
                last = undo.last.as_ref().map(LastMove::encode).unwrap_or_default();
                history = encode_history(&undo.history);
                clocks = undo.clock.as_ref().map_or_else(String::new, |ch| {
                    encode_changes(std::iter::once(encode_change(
                        ch.board.index(),
                        &ch.expected,
                        &ch.clock,
                    )))
                });
                events.clone_from(&undo.events);
            }
        }
        args.set("position", position)
            .set("new_ply", new_ply)
            .set("last", last)
            .set("history", history)
            .set("clocks", clocks)
            .rest(&events);
        let mut inv = self.layout.invoke_named(&self.takeback, id, args)?;
        change_result(self.run(id, &mut inv, None).await?)
    }

    async fn post_chat(&self, id: &str, p: &ChatPost) -> Result<ChatResult, StoreError> {
        let (field, fingerprint) = p.request.clone().unwrap_or_default();
        let m = &p.message;
        let mut args = CHAT_POST_ARGS.args();
        args.set("nonce", &p.nonce)
            .set("channel", m.channel.name())
            .set("scope", &m.scope)
            .set("author", &m.author)
            .set("text", &m.text)
            .set("limited", if p.limited { "1" } else { "0" })
            .set("request_field", field)
            .set("fingerprint", fingerprint)
            .set("max_entries", MAX_CHAT_ENTRIES)
            .set("max_per_seat", MAX_CHAT_PER_SEAT)
            .set("burst", CHAT_BURST)
            .set("window", CHAT_WINDOW_MS);
        let inv = self.layout.invoke_named(&self.chat_post, id, args)?;
        let reply: Vec<redis::Value> = inv
            .invoke_async(&mut self.conn()?)
            .await
            .map_err(unavailable)?;
        chat_result(reply)
    }

    async fn delete_chat(&self, id: &str, message: u64) -> Result<ChatResult, StoreError> {
        let mut args = CHAT_DELETE_ARGS.args();
        args.set("message", message);
        let inv = self.layout.invoke_named(&self.chat_delete, id, args)?;
        let reply: Vec<redis::Value> = inv
            .invoke_async(&mut self.conn()?)
            .await
            .map_err(unavailable)?;
        chat_result(reply)
    }

    async fn player_matches(
        &self,
        player: &str,
        before: Option<&IndexPlace>,
        max: usize,
    ) -> Result<Vec<IndexPlace>, StoreError> {
        let conn = self.conn()?;
        let max = max.min(MAX_PLAYER_MATCHES);
        // Matches created in the same millisecond as `before` come first at that score: read a
        // few more and keep those strictly older. On a cluster, each group's index is read
        // (all at once) and the newest of them all kept.
        let top = before.map_or_else(|| "+inf".to_owned(), |(at, _)| at.to_string());
        let reads = self.layout.player_indexes(player).into_iter().map(|key| {
            let mut conn = conn.clone();
            let top = top.clone();
            async move {
                redis::cmd("ZREVRANGEBYSCORE")
                    .arg(&key)
                    .arg(top)
                    .arg("-inf")
                    .arg("WITHSCORES")
                    .arg("LIMIT")
                    .arg(0)
                    .arg(max + 64)
                    .query_async::<Vec<(String, f64)>>(&mut conn)
                    .await
            }
        });
        let mut raw = Vec::new();
        for read in futures_util::future::join_all(reads).await {
            raw.extend(read.map_err(unavailable)?);
        }
        let mut places: Vec<IndexPlace> = raw
            .into_iter()
            .map(|(id, score)| (score as u64, id))
            .filter(|place| before.is_none_or(|b| place < b))
            .collect();
        places.sort_unstable_by(|a, b| b.cmp(a));
        places.truncate(max);
        Ok(places)
    }

    async fn chat(
        &self,
        id: &str,
        after: u64,
        max: usize,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        let [list, _] = self.layout.chat_keys(id);
        let mut conn = self.conn()?;
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

    async fn events(
        &self,
        id: &str,
        after: u64,
        max: usize,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        let [bug_state, bug_events, _, _, game_events, _] = self.layout.keys(id);
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
        // One server answers with its text; a cluster with each primary's.
        let info: redis::Value = redis::cmd("INFO")
            .arg("memory")
            .query_async(&mut conn)
            .await
            .map_err(|e| format!("Redis is unreachable: {e}"))?;
        let mut texts = Vec::new();
        collect_text(&info, &mut texts);
        let policies: Vec<&str> = texts
            .iter()
            .filter_map(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("maxmemory_policy:"))
                    .map(str::trim)
            })
            .collect();
        match policies.iter().find(|p| **p != "noeviction") {
            None if !policies.is_empty() => Ok(()),
            other => Err(format!(
                "Redis maxmemory-policy is '{}': it may evict matches; set it to noeviction",
                other.copied().unwrap_or("unknown")
            )),
        }
    }

    async fn commit_clock(&self, id: &str, c: &ClockCommit) -> Result<ChangeResult, StoreError> {
        let (outcome, end_event) = c.end.map_or((String::new(), String::new()), |o| {
            (encode_outcome(&o), StoredEvent::End(o).encode())
        });
        let mut args = CLOCK_ARGS.args();
        args.set("nonce", &c.nonce)
            .set(
                "timing",
                match c.timing {
                    Timing::Live => "live".to_owned(),
                    Timing::Due(at) => at.to_string(),
                },
            )
            .set("request", request_arg(c.request.as_ref()))
            .set("outcome", outcome)
            .set("end_event", end_event)
            .set("ttl", millis(self.retention.ttl))
            .set("grace", millis(self.retention.grace))
            .set(
                "clocks",
                encode_changes(
                    c.clocks
                        .iter()
                        .map(|ch| encode_change(ch.board.index(), &ch.expected, &ch.clock)),
                ),
            )
            .rest(&c.events);
        let mut inv = self.layout.invoke_named(&self.clock, id, args)?;
        change_result(self.run(id, &mut inv, None).await?)
    }

    fn deadlines(&self) -> Deadlines<'_> {
        Deadlines::Redis(&self.deadlines)
    }

    async fn done(&self, id: &str, field: &str) -> Result<Option<Remembered>, StoreError> {
        let [_, _, bug_done, _, _, game_done] = self.layout.keys(id);
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
        let [_, _, bug_done, _, _, game_done] = self.layout.keys(id);
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

/// Every text in a reply (an `INFO` answer is one text, or a map of each node's on a cluster).
fn collect_text(v: &redis::Value, out: &mut Vec<String>) {
    match v {
        redis::Value::BulkString(b) => out.push(String::from_utf8_lossy(b).into_owned()),
        redis::Value::SimpleString(s) | redis::Value::VerbatimString { text: s, .. } => {
            out.push(s.clone());
        }
        redis::Value::Array(items) | redis::Value::Set(items) => {
            for i in items {
                collect_text(i, out);
            }
        }
        redis::Value::Map(pairs) => {
            for (_, v) in pairs {
                collect_text(v, out);
            }
        }
        _ => {}
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
    let check = script(false, Some(&PRESS_CHECK_ARGS), PRESS_CHECK);
    let mut args = PRESS_CHECK_ARGS.args();
    args.set_group("plan", lua::plan_args(plan)).set("now", now);
    let mut inv = check.prepare_invoke();
    for a in args.slots().map_err(StoreError::Corrupt)? {
        inv.arg(a);
    }
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
