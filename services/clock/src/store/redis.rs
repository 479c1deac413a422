//! Clocks in Redis: the fields of [`crate::record`] in `clock:{<id>}:state`, events in
//! `clock:{<id>}:events`, every change one Lua script at Redis's `TIME`, sharing the press
//! arithmetic and the deadline index with the match service (`arbiter-clocked`). No clock
//! state lives only in a process: any replica can be killed, and flags still fall.

use super::{ClockStore, Created, Outcome, PressCommit, SetCommit, StoreError};
use crate::record::{ClockRecord, REMEMBERED_REQUESTS, board_letter, side_letter};
use arbiter_clocked::fields::{encode_change, encode_changes};
use arbiter_clocked::{Deadlines, RedisDeadlines, RedisNames, lua};
use arbiter_redis_conn::script::{Args, Constant, Schema, constants};
use arbiter_redis_conn::slots::SlotGroups;
use arbiter_redis_conn::{Announcements, Connection};
use arbiter_redis_conn::{RedisConfig, connect_in_background, wait_connected};
use redis::Script;
use std::sync::Arc;
use std::time::Duration;

/// The deadline index of running clocks (a sorted set by earliest deadline) and the channel a
/// new earliest deadline is announced on.
pub const DEADLINES: RedisNames = RedisNames {
    index: "arbiter:clocks:deadlines",
    channel: "arbiter:clocks:deadline",
};
/// Where every change is announced (its message: the clock id), to wake watchers; on a
/// cluster, one shard channel per slot group ([`announcements`]).
pub const CHANGES: &str = "arbiter:clocks:changes";

/// Where the changes of a store on a cluster or not are announced: [`CHANGES`] on one Redis;
/// on a cluster the shard channel of each slot group, `arbiter:clocks:changes:{<tag>}`, which
/// the scripts `SPUBLISH` to in their group's slot.
pub fn announcements(cluster: bool) -> Announcements {
    Announcements::new(CHANGES, cluster.then(groups).as_ref())
}

/// A cluster's slot groups of clocks.
fn groups() -> SlotGroups {
    SlotGroups::new("c", CLUSTER_GROUPS)
}

/// The `PRELUDE` script (`lua/prelude.lua`; its header lists its keys and arguments).
const PRELUDE: &str = include_str!("lua/prelude.lua");

/// The `CREATE` script (`lua/create.lua`; its header lists its keys and arguments).
const CREATE: &str = include_str!("lua/create.lua");
/// The arguments of [`CREATE`], by name.
static CREATE_ARGS: Schema = Schema::with_rest(&[("ttl", 1)], "fields");

/// The `LOAD` script (`lua/load.lua`; its header lists its keys and arguments).
const LOAD: &str = include_str!("lua/load.lua");

/// The `PRESS` script (`lua/press.lua`; its header lists its keys and arguments).
const PRESS: &str = include_str!("lua/press.lua");
/// The arguments of [`PRESS`], by name.
static PRESS_ARGS: Schema = Schema::new(&[
    ("board", 1),
    ("ply", 1),
    ("mover", 1),
    ("expected", 3),
    ("plan", 13),
    ("after", 3),
    ("ttl", 1),
]);

/// The `SET` script (`lua/set.lua`; its header lists its keys and arguments).
const SET: &str = include_str!("lua/set.lua");
/// The arguments of [`SET`], by name.
static SET_ARGS: Schema = Schema::with_rest(
    &[
        ("timing", 1),
        ("flag", 1),
        ("over", 1),
        ("ttl", 1),
        ("request_id", 1),
        ("request", 1),
        ("clocks", 1),
    ],
    "events",
);

/// A script of this store: the shared clock Lua, the clock's id (from the first key, as the
/// layout names it: `grouped` on a cluster), this store's prelude, the Lua that names the
/// arguments of `schema` (if any), and `body`.
fn script(grouped: bool, schema: Option<&Schema>, body: &str) -> Script {
    let mut defs = constants(&[("REMEMBERED", Constant::Number(REMEMBERED_REQUESTS))]);
    defs.push_str(if grouped {
        "local ID = string.match(KEYS[1], '^[^{]*{[^}]*}:(.*):[^:]*$')\n"
    } else {
        "local ID = string.match(KEYS[1], '{(.*)}')\n"
    });
    defs.push_str(&Announcements::lua(CHANGES, grouped));
    Script::new(&format!(
        "{defs}{}{PRELUDE}{}{body}",
        DEADLINES.prelude(grouped),
        schema.map_or_else(String::new, Schema::prologue),
    ))
}

/// How many slot groups a store on a cluster spreads its clocks over. Part of the stored
/// layout: every replica uses the same, for as long as the data lives.
pub const CLUSTER_GROUPS: u16 = 32;

fn unavailable(e: redis::RedisError) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

/// Where a clock's keys are: `clock:{<id>}:state` and `:events` on one Redis; on a cluster,
/// spread over [`CLUSTER_GROUPS`] slot groups, `clock:{<group tag>}:<id>:state`, so that each
/// group's deadline index (`arbiter:clocks:deadlines:{<group tag>}`) shares the slot of its
/// clocks.
fn keys(groups: Option<&SlotGroups>, id: &str) -> [String; 2] {
    match groups {
        None => [
            format!("clock:{{{id}}}:state"),
            format!("clock:{{{id}}}:events"),
        ],
        Some(g) => {
            let tag = g.tag_of(id);
            [
                format!("clock:{{{tag}}}:{id}:state"),
                format!("clock:{{{tag}}}:{id}:events"),
            ]
        }
    }
}

/// Standalone clocks in Redis.
pub struct RedisStore {
    conn: Arc<std::sync::OnceLock<Connection>>,
    ttl: Duration,
    create: Script,
    load: Script,
    press: Script,
    set: Script,
    deadlines: RedisDeadlines,
    /// The slot groups, on a cluster.
    groups: Option<Arc<SlotGroups>>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// A store that connects in the background (calls fail with `Unavailable` until it has),
    /// keeping each clock `ttl` after its last change. Needs a Tokio runtime.
    pub fn open(config: &RedisConfig, ttl: Duration) -> Result<RedisStore, StoreError> {
        let client = config.client().map_err(StoreError::Unavailable)?;
        let groups = client.is_cluster().then(|| Arc::new(groups()));
        let g = groups.is_some();
        let create = script(g, Some(&CREATE_ARGS), CREATE);
        let load = script(g, None, LOAD);
        let press = script(g, Some(&PRESS_ARGS), PRESS);
        let set = script(g, Some(&SET_ARGS), SET);
        let mut scripts = vec![create.clone(), load.clone(), press.clone(), set.clone()];
        scripts.extend(DEADLINES.scripts(g));
        let conn = connect_in_background(client, "clock store", scripts);
        Ok(RedisStore {
            deadlines: RedisDeadlines::new(Arc::clone(&conn), DEADLINES, groups.clone()),
            groups,
            conn,
            ttl,
            create,
            load,
            press,
            set,
        })
    }

    /// [`RedisStore::open`], waiting up to 10 s for the connection (tests and tools): `redis` is
    /// a URL or a whole [`RedisConfig`].
    pub async fn connect(
        redis: impl Into<RedisConfig>,
        ttl: Duration,
    ) -> Result<RedisStore, StoreError> {
        let store = RedisStore::open(&redis.into(), ttl)?;
        if wait_connected(&store.conn, Duration::from_secs(10)).await {
            Ok(store)
        } else {
            Err(StoreError::Unavailable("cannot connect to Redis".into()))
        }
    }

    fn conn(&self) -> Result<Connection, StoreError> {
        self.conn
            .get()
            .cloned()
            .ok_or_else(|| StoreError::Unavailable("not connected to Redis yet".into()))
    }

    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.ttl.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// Runs a script on clock `id`: the status and the record.
    async fn run(
        &self,
        id: &str,
        script: &Script,
        args: Option<Args>,
    ) -> Result<(String, Option<Arc<ClockRecord>>), StoreError> {
        let [state, events] = keys(self.groups.as_deref(), id);
        let mut inv = script.key(state);
        // The deadline index the script files the clock in is declared too: while a cluster
        // migrates the slot, Redis then runs the script only where all three keys are (else
        // TRYAGAIN, which the client retries), never with the index already moved away.
        inv.key(events).key(self.deadlines.key_of(id));
        if let Some(args) = args {
            for a in args.slots().map_err(StoreError::Corrupt)? {
                inv.arg(a);
            }
        }
        let reply: Vec<redis::Value> = inv
            .invoke_async(&mut self.conn()?)
            .await
            .map_err(unavailable)?;
        let text = |v: redis::Value| match v {
            redis::Value::BulkString(b) => {
                String::from_utf8(b).map_err(|_| StoreError::Corrupt("a reply is not UTF-8".into()))
            }
            redis::Value::SimpleString(s) => Ok(s),
            other => Err(StoreError::Corrupt(format!("unexpected reply {other:?}"))),
        };
        let mut parts = reply.into_iter();
        let status = text(parts.next().unwrap_or(redis::Value::Nil))?;
        let record = match (parts.next(), parts.next()) {
            (Some(redis::Value::Int(seq)), Some(redis::Value::Array(fields))) => {
                let fields = fields
                    .into_iter()
                    .map(text)
                    .collect::<Result<Vec<String>, _>>()?;
                let mut it = fields.into_iter();
                let pairs = std::iter::from_fn(move || Some((it.next()?, it.next()?)));
                let seq = u64::try_from(seq).unwrap_or(0);
                Some(Arc::new(ClockRecord::from_pairs(id, pairs, seq)?))
            }
            _ => None,
        };
        Ok((status, record))
    }

    fn outcome(status: &str, record: Option<Arc<ClockRecord>>) -> Result<Outcome, StoreError> {
        if status == "missing" {
            return Ok(Outcome::Missing);
        }
        let r = record.ok_or_else(|| StoreError::Corrupt(format!("no record with '{status}'")))?;
        Ok(match status {
            "ok" => Outcome::Applied(r),
            "dup" => Outcome::Duplicate(r),
            "reused" => Outcome::Reused(r),
            "stale" => Outcome::Stale(r),
            "late" => Outcome::Late(r),
            "over" => Outcome::Over(r),
            other => return Err(StoreError::Corrupt(format!("unexpected status '{other}'"))),
        })
    }
}

impl ClockStore for RedisStore {
    async fn create(&self, record: &ClockRecord) -> Result<Created, StoreError> {
        let mut args = CREATE_ARGS.args();
        args.set("ttl", self.ttl_ms())
            .rest(record.to_fields().into_iter().flat_map(|(k, v)| [k, v]));
        let (status, stored) = self.run(&record.id, &self.create, Some(args)).await?;
        let stored = stored.ok_or_else(|| StoreError::Corrupt("no record".into()))?;
        match status.as_str() {
            "created" => Ok(Created::New(stored)),
            "exists" => Ok(Created::Exists(stored)),
            other => Err(StoreError::Corrupt(format!("unexpected status '{other}'"))),
        }
    }

    async fn load(&self, id: &str) -> Result<Option<Arc<ClockRecord>>, StoreError> {
        Ok(self.run(id, &self.load, None).await?.1)
    }

    async fn press(&self, id: &str, c: &PressCommit) -> Result<Outcome, StoreError> {
        let mut args = PRESS_ARGS.args();
        args.set("board", board_letter(c.board))
            .set("ply", c.ply)
            .set("mover", side_letter(c.mover))
            .set_group("expected", &c.expected)
            .set_group("plan", lua::plan_args(&c.plan))
            .set_group(
                "after",
                [c.after.moves, u32::from(c.after.stage), c.after.stage_moves],
            )
            .set("ttl", self.ttl_ms());
        let (status, record) = self.run(id, &self.press, Some(args)).await?;
        Self::outcome(&status, record)
    }

    async fn set(&self, id: &str, c: &SetCommit) -> Result<Outcome, StoreError> {
        let mut args = SET_ARGS.args();
        args.set(
            "timing",
            c.due.map_or("live".to_owned(), |at| at.to_string()),
        )
        .set("flag", c.flag.map_or(String::new(), |f| f.encode()))
        .set("over", if c.over { "1" } else { "0" })
        .set("ttl", self.ttl_ms())
        .set(
            "request_id",
            c.request.as_ref().map_or("", |r| r.id.as_str()),
        )
        .set(
            "request",
            c.request.as_ref().map_or("", |r| r.request.as_str()),
        )
        .set(
            "clocks",
            encode_changes(
                c.clocks
                    .iter()
                    .map(|(i, expected, clock)| encode_change(*i, expected, clock)),
            ),
        )
        .rest(&c.events);
        let (status, record) = self.run(id, &self.set, Some(args)).await?;
        Self::outcome(&status, record)
    }

    async fn events(
        &self,
        id: &str,
        after: u64,
        max: usize,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        let [_, events] = keys(self.groups.as_deref(), id);
        let start = isize::try_from(after).unwrap_or(isize::MAX);
        let end = start
            .saturating_add(isize::try_from(max).unwrap_or(isize::MAX))
            .saturating_sub(1);
        let lines: Vec<String> = redis::cmd("LRANGE")
            .arg(&events)
            .arg(start)
            .arg(end)
            .query_async(&mut self.conn()?)
            .await
            .map_err(unavailable)?;
        Ok(lines
            .into_iter()
            .enumerate()
            .map(|(i, l)| (after + i as u64 + 1, l))
            .collect())
    }

    async fn probe(&self) -> Result<(), String> {
        self.deadlines()
            .now()
            .await
            .map(|_| ())
            .map_err(|e| format!("Redis is unreachable: {e}"))
    }

    fn deadlines(&self) -> Deadlines<'_> {
        Deadlines::Redis(&self.deadlines)
    }
}
