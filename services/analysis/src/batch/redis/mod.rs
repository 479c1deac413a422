//! Batch jobs on Redis Streams, shared by any number of service replicas (which accept jobs and
//! answer for them) and worker processes (which analyse them), on any machine.
//!
//! - A job is a hash `an:j:<id>` (its owner, its request key, fingerprint, counts, the per-ply
//!   limit, its retention), with `an:j:<id>:r` (each finished game's result by index, encoded
//!   by [`super::record::encode_result`]) and `an:j:<id>:p` (positions done by game).
//!   `an:rid:<request key>` names the job of a caller's request id: the key is
//!   [`Caller::request_key`], 64 hex digits of a SHA-256 of the caller and the id, so request
//!   ids are scoped to their caller and keys are bounded whatever the id. The owner is
//!   [`Caller::hex`]; a job answers only to it. `an:jobs` (a sorted set by expiry) and
//!   `an:held` (positions by job) enforce the caps on jobs and positions held, for all
//!   replicas together. Every key of a job expires with it, its retention renewed by each sign
//!   of progress.
//! - Each game is one entry of the stream [`WORK`] (`job`, `game`, `item`: the game encoded by
//!   [`Game::to_item`](super::Game::to_item)), read by the consumer group [`GROUP`]. A worker
//!   takes an entry with `XREADGROUP`, or one whose worker went silent for the claim timeout with
//!   `XAUTOCLAIM`; while it analyses, a heartbeat keeps the entry its own (`XCLAIM … JUSTID`,
//!   after checking that it still owns it), reports progress and reads the cancel flag.
//! - The result is written by one script that stores it with `HSETNX`, counts the game done
//!   only if it was new, and acknowledges and deletes the entry, so a game analysed twice (its
//!   first worker presumed dead, then finishing after all) counts once.
//! - An entry delivered more than the allowed number of times (its analyses failed, or its
//!   workers died) goes to the dead-letter stream [`DEAD`] with its last error, and its game is
//!   recorded as failed, so the job still ends.
//! - A worker that stops gracefully puts its entry back at once (a fresh copy); one that is
//!   killed leaves it pending, to be claimed after the claim timeout.
//!
//! Every step that changes more than one key is one Lua script, so it is atomic. Scripts read
//! their arguments by name (`A.job`, never `ARGV[i]`): each has a schema here (`SUBMIT_ARGS`,
//! …) from which the Lua that names them is made.

use super::{
    BatchConfig, Caller, GameResult, JobSpec, JobStatus, Submitted, not_found, page_size, record,
    status_of,
};
use crate::error::AnalysisError;
use arbiter_redis_conn::Connection;
use arbiter_redis_conn::script::{Args, BASICS, Schema};
use arbiter_redis_conn::{RedisConfig, connect_in_background, wait_connected};
use redis::Script;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::watch;

/// The stream of work items (one per game).
pub const WORK: &str = "an:work";
/// The consumer group of the workers.
pub const GROUP: &str = "an:workers";
/// The dead-letter stream: items given up on, with their last error.
pub const DEAD: &str = "an:dead";
/// About how many entries the dead-letter stream keeps (the oldest are trimmed).
pub const DEAD_MAXLEN: u64 = 10_000;
/// How long a failed analysis's error is kept for the dead-letter entry.
const ERROR_TTL_MS: u64 = 86_400_000;
/// The longest a worker's read waits for a new item (then it looks for abandoned ones).
const BLOCK_MS: u64 = 1_000;

/// The `PRELUDE` script (`lua/prelude.lua`; its header lists its keys and arguments).
const PRELUDE: &str = include_str!("lua/prelude.lua");

/// The `SUBMIT` script (`lua/submit.lua`; its header lists its keys and arguments).
const SUBMIT: &str = include_str!("lua/submit.lua");
/// `SUBMIT`'s arguments (`items`: the work items as one packed list).
static SUBMIT_ARGS: Schema = Schema::new(&[
    ("rid", 1),
    ("fp", 1),
    ("id", 1),
    ("games", 1),
    ("positions", 1),
    ("ttl", 1),
    ("max_jobs", 1),
    ("max_positions", 1),
    ("depth", 1),
    ("nodes", 1),
    ("hash", 1),
    ("owner", 1),
    ("items", 1),
    ("trace", 1),
]);

/// The `CANCEL` script (`lua/cancel.lua`; its header lists its keys and arguments).
const CANCEL: &str = include_str!("lua/cancel.lua");
/// `CANCEL`'s arguments.
static CANCEL_ARGS: Schema = Schema::new(&[("job", 1), ("owner", 1)]);

/// The `HEARTBEAT` script (`lua/heartbeat.lua`; its header lists its keys and arguments).
const HEARTBEAT: &str = include_str!("lua/heartbeat.lua");
/// `HEARTBEAT`'s arguments.
static HEARTBEAT_ARGS: Schema = Schema::new(&[
    ("job", 1),
    ("game", 1),
    ("done", 1),
    ("item", 1),
    ("consumer", 1),
]);

/// The `RECORD` script (`lua/record.lua`; its header lists its keys and arguments).
const RECORD: &str = include_str!("lua/record.lua");
/// `RECORD`'s arguments.
static RECORD_ARGS: Schema = Schema::new(&[
    ("job", 1),
    ("game", 1),
    ("positions", 1),
    ("item", 1),
    ("result", 1),
]);

/// The `DEAD_LETTER` script (`lua/dead-letter.lua`; its header lists its keys and arguments).
const DEAD_LETTER: &str = include_str!("lua/dead-letter.lua");
/// `DEAD_LETTER`'s arguments.
static DEAD_LETTER_ARGS: Schema = Schema::new(&[
    ("item", 1),
    ("job", 1),
    ("game", 1),
    ("deliveries", 1),
    ("error", 1),
    ("result", 1),
    ("maxlen", 1),
]);

/// The `REQUEUE` script (`lua/requeue.lua`; its header lists its keys and arguments).
const REQUEUE: &str = include_str!("lua/requeue.lua");
/// `REQUEUE`'s arguments.
static REQUEUE_ARGS: Schema = Schema::new(&[("item", 1), ("consumer", 1), ("job", 1), ("game", 1)]);

/// The `DROP` script (`lua/drop.lua`; its header lists its keys and arguments).
const DROP: &str = include_str!("lua/drop.lua");
/// `DROP`'s arguments.
static DROP_ARGS: Schema = Schema::new(&[("item", 1)]);

/// A script of this store: the shared basics, the prelude, the names of its arguments, its
/// body.
#[derive(Debug)]
struct Named {
    script: Script,
    schema: &'static Schema,
}

impl Named {
    fn new(schema: &'static Schema, body: &str) -> Named {
        Named {
            script: Script::new(&format!("{BASICS}{PRELUDE}{}{body}", schema.prologue())),
            schema,
        }
    }

    /// Empty arguments to set by name.
    fn args(&self) -> Args {
        self.schema.args()
    }

    /// Runs the script with `args`. Arguments that do not fit its schema (a mistake of this
    /// code, never of the input) are a client error, not sent.
    async fn call<T: redis::FromRedisValue>(
        &self,
        c: &mut Connection,
        args: Args,
    ) -> redis::RedisResult<T> {
        let slots = args.slots().map_err(|e| {
            redis::RedisError::from((redis::ErrorKind::ClientError, "script arguments", e))
        })?;
        let mut call = self.script.prepare_invoke();
        for slot in slots {
            call.arg(slot);
        }
        call.invoke_async(c).await
    }
}

/// The scripts, loaded once per connection.
#[derive(Debug)]
struct Scripts {
    submit: Named,
    cancel: Named,
    heartbeat: Named,
    record: Named,
    dead: Named,
    requeue: Named,
    drop: Named,
}

impl Scripts {
    fn new() -> Scripts {
        Scripts {
            submit: Named::new(&SUBMIT_ARGS, SUBMIT),
            cancel: Named::new(&CANCEL_ARGS, CANCEL),
            heartbeat: Named::new(&HEARTBEAT_ARGS, HEARTBEAT),
            record: Named::new(&RECORD_ARGS, RECORD),
            dead: Named::new(&DEAD_LETTER_ARGS, DEAD_LETTER),
            requeue: Named::new(&REQUEUE_ARGS, REQUEUE),
            drop: Named::new(&DROP_ARGS, DROP),
        }
    }

    fn all() -> Vec<Script> {
        let s = Scripts::new();
        [
            s.submit,
            s.cancel,
            s.heartbeat,
            s.record,
            s.dead,
            s.requeue,
            s.drop,
        ]
        .into_iter()
        .map(|n| n.script)
        .collect()
    }
}

fn unavailable(e: redis::RedisError) -> AnalysisError {
    AnalysisError::Unavailable(format!("the job store (Redis) is unavailable: {e}"))
}

fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A job's `owner`, `games`, `done`, `positions`, `pos`, `cancelled` and `started` fields.
type JobFields = (
    Option<String>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<String>,
    Option<String>,
);

/// What a worker reads of an item's job: `cancelled`, `depth`, `nodes`, `hash`, `trace` (the
/// `traceparent` of its `SubmitJob` call, empty without traces).
pub(super) type ItemJob = (
    Option<String>,
    Option<u32>,
    Option<u64>,
    Option<usize>,
    Option<String>,
);

/// The service's side of jobs on Redis: submission, status, results, cancellation. Workers
/// are [`run_workers`].
pub struct RedisJobs {
    conn: Arc<OnceLock<Connection>>,
    scripts: Scripts,
    config: BatchConfig,
}

impl std::fmt::Debug for RedisJobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisJobs")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl RedisJobs {
    /// A job store that connects in the background (calls fail with `UNAVAILABLE` until it
    /// has). Needs a Tokio runtime.
    ///
    /// # Errors
    /// A malformed Redis URL.
    pub fn open(redis: &RedisConfig, config: BatchConfig) -> Result<RedisJobs, String> {
        let conn = connect_in_background(redis.client()?, "analysis jobs", Scripts::all());
        Ok(RedisJobs {
            conn,
            scripts: Scripts::new(),
            config,
        })
    }

    /// [`RedisJobs::open`], waiting up to 10 s for the connection (tests and tools): `redis` is
    /// a URL or a whole [`RedisConfig`].
    ///
    /// # Errors
    /// A malformed URL, or no connection in time.
    pub async fn connect(
        redis: impl Into<RedisConfig>,
        config: BatchConfig,
    ) -> Result<RedisJobs, String> {
        let redis = redis.into();
        let jobs = RedisJobs::open(&redis, config)?;
        if wait_connected(&jobs.conn, Duration::from_secs(10)).await {
            Ok(jobs)
        } else {
            Err("cannot connect to Redis".into())
        }
    }

    fn conn(&self) -> Result<Connection, AnalysisError> {
        self.conn.get().cloned().ok_or_else(|| {
            AnalysisError::Unavailable("the job store is not connected to Redis yet".into())
        })
    }

    /// Whether Redis answers (for health).
    pub async fn probe(&self) -> Result<(), String> {
        let mut c = self.conn().map_err(|e| e.to_string())?;
        redis::cmd("PING")
            .query_async::<String>(&mut c)
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    }

    /// Queues a checked job for `caller` under its `request_id` (see
    /// [`super::JobQueue::submit`]).
    pub async fn submit(
        &self,
        caller: &Caller,
        request_id: &str,
        spec: &JobSpec,
        fingerprint: u64,
    ) -> Result<Submitted, AnalysisError> {
        // Exactly one is set (decode_job): a depth, or a node count.
        let (depth, nodes) = (
            spec.limits.depth.unwrap_or(0),
            spec.limits.nodes.unwrap_or(0),
        );
        let ttl_ms = u64::try_from(self.config.ttl.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        let items: Vec<String> = spec.games.iter().map(super::Game::to_item).collect();
        let mut args = self.scripts.submit.args();
        // Drawn for every call, used only when the job is new: a retry answers the stored id.
        let id = super::new_job_id()?;
        args.set("rid", caller.request_key(request_id))
            .set("fp", format!("{fingerprint:016x}"))
            .set("id", &id)
            .set("games", spec.games.len())
            .set("positions", spec.positions())
            .set("ttl", ttl_ms)
            .set("max_jobs", self.config.max_jobs)
            .set("max_positions", self.config.max_positions)
            .set("depth", depth)
            .set("nodes", nodes)
            .set("hash", spec.hash_mib)
            .set("owner", caller.hex())
            .set("items", record::pack(&items))
            .set(
                "trace",
                arbiter_kit::trace::traceparent().unwrap_or_default(),
            );
        let (what, detail): (String, String) = self
            .scripts
            .submit
            .call(&mut self.conn()?, args)
            .await
            .map_err(unavailable)?;
        match what.as_str() {
            "new" | "duplicate" => Ok(Submitted {
                status: self.status(caller, &detail).await?,
                duplicate: what == "duplicate",
            }),
            "conflict" => Err(AnalysisError::RequestIdReused(request_id.to_owned())),
            "taken" => Err(AnalysisError::Unavailable(
                "the job id drawn is taken (never expected); retry".into(),
            )),
            "jobs" => Err(AnalysisError::exhausted(
                "",
                "the job store holds its maximum of jobs; retry later",
            )),
            _ => Err(AnalysisError::exhausted(
                "",
                format!(
                    "the job's {} positions do not fit beside the {detail} held (at most {}); \
                     retry later, or split the job",
                    spec.positions(),
                    self.config.max_positions
                ),
            )),
        }
    }

    /// The status of `caller`'s job; `NOT_FOUND` when it is unknown, expired, or another
    /// caller's (a job stored without an owner, by an earlier version, is nobody's).
    pub async fn status(&self, caller: &Caller, id: &str) -> Result<JobStatus, AnalysisError> {
        let job = format!("an:j:{id}");
        let ((owner, games, done, positions, pos, cancelled, started), ttl): (JobFields, i64) =
            redis::pipe()
                .cmd("HMGET")
                .arg(&job)
                .arg(&[
                    "owner",
                    "games",
                    "done",
                    "positions",
                    "pos",
                    "cancelled",
                    "started",
                ])
                .cmd("PTTL")
                .arg(&job)
                .query_async(&mut self.conn()?)
                .await
                .map_err(unavailable)?;
        let (Some(games), Some(done), Some(positions)) = (games, done, positions) else {
            return Err(not_found(id));
        };
        if owner.as_deref() != Some(caller.hex().as_str()) {
            return Err(not_found(id));
        }
        Ok(status_of(
            id,
            games,
            done,
            positions,
            pos.unwrap_or(0),
            cancelled.as_deref() == Some("1"),
            started.as_deref() == Some("1"),
            unix_ms() + ttl.max(0),
        ))
    }

    /// A receiver of the status of `caller`'s job, read every `watch_poll` until the job ends
    /// or the receiver is dropped; its sender is dropped when the job expires.
    pub async fn watch(
        self: &Arc<Self>,
        caller: &Caller,
        id: &str,
    ) -> Result<watch::Receiver<JobStatus>, AnalysisError> {
        let first = self.status(caller, id).await?;
        let (tx, rx) = watch::channel(first);
        let (jobs, id, caller) = (Arc::clone(self), id.to_owned(), *caller);
        tokio::spawn(async move {
            let mut tick =
                tokio::time::interval(jobs.config.watch_poll.max(Duration::from_millis(10)));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    () = tx.closed() => return,
                }
                match jobs.status(&caller, &id).await {
                    Ok(now) => {
                        let end = now.state.ended();
                        tx.send_if_modified(|old| {
                            // The expiry moves with every heartbeat: not news by itself.
                            let news = old.state != now.state
                                || old.games_done != now.games_done
                                || old.positions_done != now.positions_done;
                            *old = now;
                            news
                        });
                        if end {
                            tx.closed().await;
                            return;
                        }
                    }
                    Err(AnalysisError::JobNotFound(_)) => return,
                    // Redis unreachable for now: the next tick tries again.
                    Err(_) => {}
                }
            }
        });
        Ok(rx)
    }

    /// The finished games of `caller`'s job among `limit` from `offset` (see
    /// [`super::JobQueue::results`]).
    pub async fn results(
        &self,
        caller: &Caller,
        id: &str,
        offset: usize,
        limit: usize,
    ) -> Result<(JobStatus, Vec<GameResult>), AnalysisError> {
        let status = self.status(caller, id).await?;
        let end = offset
            .saturating_add(page_size(limit, self.config.page))
            .min(status.games as usize);
        if offset >= end {
            return Ok((status, Vec::new()));
        }
        let stored: Vec<Option<Vec<u8>>> = redis::cmd("HMGET")
            .arg(format!("an:j:{id}:r"))
            .arg((offset..end).collect::<Vec<_>>())
            .query_async(&mut self.conn()?)
            .await
            .map_err(unavailable)?;
        let games = stored
            .into_iter()
            .flatten()
            .map(|bytes| {
                record::decode_result(&bytes).map_err(|e| {
                    AnalysisError::Corrupt(format!("a stored result cannot be read: {e}"))
                })
            })
            .collect::<Result<_, _>>()?;
        Ok((status, games))
    }

    /// Cancels `caller`'s job (see [`super::JobQueue::cancel`]): workers see it at their next
    /// heartbeat, and drop its items not yet started as they reach them.
    pub async fn cancel(&self, caller: &Caller, id: &str) -> Result<JobStatus, AnalysisError> {
        let mut args = self.scripts.cancel.args();
        args.set("job", id).set("owner", caller.hex());
        let outcome: i64 = self
            .scripts
            .cancel
            .call(&mut self.conn()?, args)
            .await
            .map_err(unavailable)?;
        if outcome < 0 {
            return Err(not_found(id));
        }
        self.status(caller, id).await
    }
}

mod consumer;

pub use consumer::{WorkerConfig, run_workers};

#[cfg(test)]
mod tests {
    use super::super::Game;
    use super::consumer::ensure_group;
    use super::*;
    use arbiter_engine::Limits;
    use redis::streams::StreamReadReply;

    /// A game analysed twice (its first worker presumed dead, then finishing after all) is
    /// recorded once; a worker that lost its item is told so by its heartbeat.
    #[tokio::test]
    async fn results_are_recorded_once_and_lost_items_are_noticed() {
        let redis = arbiter_testkit::redis().await;
        let jobs = RedisJobs::connect(&redis.url, BatchConfig::default())
            .await
            .unwrap();
        let start = arbiter_core::AnyPosition::start(arbiter_core::Variant::Chess).unwrap();
        let spec = JobSpec {
            games: vec![Game::Line(super::super::GameSpec {
                start,
                moves: vec![],
            })],
            limits: Limits::nodes(10),
            hash_mib: 1,
        };
        let caller = Caller::anonymous();
        let status = jobs.submit(&caller, "r", &spec, 7).await.unwrap().status;
        let mut c = jobs.conn().unwrap();
        ensure_group(&mut c).await.unwrap();
        let read: Option<StreamReadReply> = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg(GROUP)
            .arg("first")
            .arg("STREAMS")
            .arg(WORK)
            .arg(">")
            .query_async(&mut c)
            .await
            .unwrap();
        let item = read.unwrap().keys[0].ids[0].id.clone();
        let hc = c.clone();
        let beat = |consumer: &'static str| {
            let (mut c, item, job, s) = (
                hc.clone(),
                item.clone(),
                status.job_id.clone(),
                &jobs.scripts,
            );
            async move {
                let mut args = s.heartbeat.args();
                args.set("job", &job)
                    .set("game", 0)
                    .set("done", 0)
                    .set("item", &item)
                    .set("consumer", consumer);
                s.heartbeat.call::<String>(&mut c, args).await.unwrap()
            }
        };
        assert_eq!(beat("first").await, "ok");
        assert_eq!(beat("second").await, "lost", "not the second's item");
        let result = record::encode_result(&GameResult::default());
        let record = |game: u32| {
            let (mut c, item, job, s, result) = (
                hc.clone(),
                item.clone(),
                status.job_id.clone(),
                &jobs.scripts,
                result.clone(),
            );
            async move {
                let mut args = s.record.args();
                args.set("job", &job)
                    .set("game", game)
                    .set("positions", 1)
                    .set("item", &item)
                    .set("result", &result);
                s.record.call::<i64>(&mut c, args).await.unwrap()
            }
        };
        assert_eq!(record(0).await, 1, "new");
        assert_eq!(record(0).await, 0, "recorded before: not counted again");
        let done = jobs.status(&caller, &status.job_id).await.unwrap();
        assert_eq!(
            (done.state, done.games_done, done.positions_done),
            (super::super::JobState::Done, 1, 1)
        );
        assert_eq!(beat("first").await, "lost", "finished: nobody's any more");
        // A game index out of the job's range is never counted.
        assert_eq!(record(5).await, 0);
        assert_eq!(
            jobs.status(&caller, &status.job_id)
                .await
                .unwrap()
                .games_done,
            1
        );
    }

    /// Every script reads its arguments by name, each one its schema gives (and never
    /// `ARGV`), and its header lists them.
    #[test]
    fn scripts_read_only_their_named_arguments() {
        let scripts: [(&Schema, &str); 7] = [
            (&SUBMIT_ARGS, SUBMIT),
            (&CANCEL_ARGS, CANCEL),
            (&HEARTBEAT_ARGS, HEARTBEAT),
            (&RECORD_ARGS, RECORD),
            (&DEAD_LETTER_ARGS, DEAD_LETTER),
            (&REQUEUE_ARGS, REQUEUE),
            (&DROP_ARGS, DROP),
        ];
        for (schema, body) in scripts {
            let name = body.lines().next().unwrap_or_default();
            assert!(!body.contains("ARGV"), "{name}");
            let prologue = schema.prologue();
            let header: String = body
                .lines()
                .take_while(|l| l.starts_with("--"))
                .collect::<Vec<_>>()
                .join(" ");
            for used in body.split("A.").skip(1) {
                let arg: String = used
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if arg.is_empty() {
                    continue;
                }
                assert!(prologue.contains(&format!("A.{arg} =")), "{name}: A.{arg}");
                assert!(header.contains(&arg), "{name}: {arg} not in the header");
            }
        }
        assert!(!PRELUDE.contains("ARGV"));
    }

    #[test]
    fn heartbeats_come_thrice_per_claim_timeout_and_at_least_every_second() {
        let at = |ms| {
            WorkerConfig {
                claim_idle: Duration::from_millis(ms),
                ..WorkerConfig::default()
            }
            .heartbeat()
        };
        assert_eq!(at(300), Duration::from_millis(100));
        assert_eq!(at(30_000), Duration::from_secs(1));
        assert_eq!(at(1), Duration::from_millis(10));
    }
}
