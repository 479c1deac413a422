//! Clocks in Redis: the fields of [`crate::record`] in `clock:{<id>}:state`, events in
//! `clock:{<id>}:events`, every change one Lua script at Redis's `TIME`, sharing the press
//! arithmetic and the deadline index with the match service (`arbiter-timekeeping`). No clock
//! state lives only in a process: any replica can be killed, and flags still fall.

use super::{ClockStore, Created, Outcome, PressCommit, SetCommit, StoreError};
use crate::record::{
    ClockRecord, REMEMBERED_REQUESTS, board_letter, encode_clock, encode_deadline, side_letter,
};
use arbiter_core::clock::MAX_REMAINING_MS;
use arbiter_redis_conn::{RedisConfig, connect_in_background, wait_connected};
use arbiter_timekeeping::lua;
use redis::Script;
use redis::aio::ConnectionManager;
use std::sync::Arc;
use std::time::Duration;

/// The sorted set of running clocks by earliest deadline.
pub const DEADLINES: &str = "arbiter:clocks:deadlines";
/// Where a new earliest deadline is announced.
pub const DEADLINE_CHANNEL: &str = "arbiter:clocks:deadline";
/// Where every change is announced (its message: the clock id), to wake watchers.
pub const CHANGES: &str = "arbiter:clocks:changes";

/// The `PRELUDE` script (`lua/prelude.lua`; its header lists its keys and arguments).
const PRELUDE: &str = include_str!("lua/prelude.lua");

/// The `CREATE` script (`lua/create.lua`; its header lists its keys and arguments).
const CREATE: &str = include_str!("lua/create.lua");

/// The `LOAD` script (`lua/load.lua`; its header lists its keys and arguments).
const LOAD: &str = include_str!("lua/load.lua");

/// The `PRESS` script (`lua/press.lua`; its header lists its keys and arguments).
const PRESS: &str = include_str!("lua/press.lua");

/// The `SET` script (`lua/set.lua`; its header lists its keys and arguments).
const SET: &str = include_str!("lua/set.lua");

fn script(body: &str) -> Script {
    Script::new(&format!(
        "local CHANGES = '{CHANGES}'\nlocal REMEMBERED = {REMEMBERED_REQUESTS}\n{}{}{PRELUDE}{body}",
        lua::header(DEADLINES, DEADLINE_CHANNEL, MAX_REMAINING_MS),
        lua::CLOCKS,
    ))
}

fn unavailable(e: redis::RedisError) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

fn keys(id: &str) -> [String; 2] {
    [
        format!("clock:{{{id}}}:state"),
        format!("clock:{{{id}}}:events"),
    ]
}

/// Standalone clocks in Redis.
pub struct RedisStore {
    conn: Arc<std::sync::OnceLock<ConnectionManager>>,
    ttl: Duration,
    create: Script,
    load: Script,
    press: Script,
    set: Script,
    claim: Script,
    reindex: Script,
    changed: Arc<tokio::sync::Notify>,
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
        let scripts = [CREATE, LOAD, PRESS, SET, lua::CLAIM, lua::REINDEX]
            .into_iter()
            .map(script)
            .collect();
        let conn = connect_in_background(client, "clock store", scripts);
        Ok(RedisStore {
            conn,
            ttl,
            create: script(CREATE),
            load: script(LOAD),
            press: script(PRESS),
            set: script(SET),
            claim: script(lua::CLAIM),
            reindex: script(lua::REINDEX),
            changed: Arc::new(tokio::sync::Notify::new()),
        })
    }

    /// [`RedisStore::open`], waiting up to 10 s for the connection (tests and tools).
    pub async fn connect(url: &str, ttl: Duration) -> Result<RedisStore, StoreError> {
        let store = RedisStore::open(
            &RedisConfig {
                url: url.to_owned(),
                password: None,
            },
            ttl,
        )?;
        if wait_connected(&store.conn, Duration::from_secs(10)).await {
            Ok(store)
        } else {
            Err(StoreError::Unavailable("cannot connect to Redis".into()))
        }
    }

    fn conn(&self) -> Result<ConnectionManager, StoreError> {
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
        args: Vec<String>,
    ) -> Result<(String, Option<Arc<ClockRecord>>), StoreError> {
        let [state, events] = keys(id);
        let mut inv = script.key(state);
        inv.key(events);
        for a in args {
            inv.arg(a);
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
        let mut args = vec![self.ttl_ms().to_string()];
        for (k, v) in record.to_fields() {
            args.push(k);
            args.push(v);
        }
        let (status, stored) = self.run(&record.id, &self.create, args).await?;
        let stored = stored.ok_or_else(|| StoreError::Corrupt("no record".into()))?;
        match status.as_str() {
            "created" => Ok(Created::New(stored)),
            "exists" => Ok(Created::Exists(stored)),
            other => Err(StoreError::Corrupt(format!("unexpected status '{other}'"))),
        }
    }

    async fn load(&self, id: &str) -> Result<Option<Arc<ClockRecord>>, StoreError> {
        Ok(self.run(id, &self.load, Vec::new()).await?.1)
    }

    async fn press(&self, id: &str, c: &PressCommit) -> Result<Outcome, StoreError> {
        let mut args = vec![
            board_letter(c.board).to_owned(),
            c.ply.to_string(),
            side_letter(c.mover).to_owned(),
        ];
        args.extend(c.expected.iter().cloned());
        args.extend(lua::plan_args(&c.plan));
        args.extend([
            c.after.moves.to_string(),
            c.after.stage.to_string(),
            c.after.stage_moves.to_string(),
            self.ttl_ms().to_string(),
        ]);
        let (status, record) = self.run(id, &self.press, args).await?;
        Self::outcome(&status, record)
    }

    async fn set(&self, id: &str, c: &SetCommit) -> Result<Outcome, StoreError> {
        let mut args = vec![
            c.due.map_or("live".to_owned(), |at| at.to_string()),
            c.flag.map_or(String::new(), |f| f.encode()),
            if c.over { "1" } else { "0" }.to_owned(),
            self.ttl_ms().to_string(),
            c.request.as_ref().map_or(String::new(), |r| r.id.clone()),
            c.request
                .as_ref()
                .map_or(String::new(), |r| r.request.clone()),
            c.clocks.len().to_string(),
        ];
        for (i, expected, clock) in &c.clocks {
            args.push(board_letter(*i).to_owned());
            args.extend(expected.iter().cloned());
            args.extend(encode_clock(clock));
            args.push(encode_deadline(clock));
        }
        args.extend(c.events.iter().cloned());
        let (status, record) = self.run(id, &self.set, args).await?;
        Self::outcome(&status, record)
    }

    async fn events(
        &self,
        id: &str,
        after: u64,
        max: usize,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        let [_, events] = keys(id);
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

    async fn now(&self) -> Result<u64, StoreError> {
        arbiter_timekeeping::redis_now(&mut self.conn()?)
            .await
            .map_err(unavailable)
    }

    async fn probe(&self) -> Result<(), String> {
        let mut conn = self.conn().map_err(|e| e.to_string())?;
        arbiter_timekeeping::redis_now(&mut conn)
            .await
            .map(|_| ())
            .map_err(|e| format!("Redis is unreachable: {e}"))
    }

    async fn next_deadline(&self) -> Result<(Option<u64>, u64), StoreError> {
        let mut conn = self.conn()?;
        let ((secs, micros), first): ((u64, u64), Vec<(String, f64)>) = redis::pipe()
            .cmd("TIME")
            .cmd("ZRANGE")
            .arg(DEADLINES)
            .arg(0)
            .arg(0)
            .arg("WITHSCORES")
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
        let _: i64 = self
            .reindex
            .key(DEADLINES)
            .arg(deadline.map_or(String::new(), |d| d.to_string()))
            .arg(id)
            .invoke_async(&mut self.conn()?)
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    fn deadline_changed(&self) -> Arc<tokio::sync::Notify> {
        Arc::clone(&self.changed)
    }
}
