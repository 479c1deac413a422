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
//! - Remote workers (`AcquireWork`): the service reads the stream as consumer
//!   [`REMOTE_CONSUMER`] (or claims what that consumer left pending past the claim timeout),
//!   and moves the entry into a lease record `an:lease:<id>` (job, game, payload, worker, state,
//!   deliveries so far) in one script, acknowledging the entry: a remote worker needs no
//!   heartbeat. `an:leases` (a sorted set by expiry) is swept by every `AcquireWork` (of any
//!   replica): a lease past its time puts its game back in the stream as a fresh entry whose
//!   `tries` field carries the deliveries so far, so the dead-letter rule still counts them
//!   (the workers add `tries` to the entry's own delivery count). `SubmitWork` records the
//!   result with the same `store` as `record.lua`, once. `an:wl:<worker>` lists a worker's
//!   leases (returned at once when it is refused), `an:refusals` the refused workers with
//!   their refusal ids.
//!
//! Every step that changes more than one key is one Lua script, so it is atomic. Scripts read
//! their arguments by name (`A.job`, never `ARGV[i]`): each has a schema here (`SUBMIT_ARGS`,
//! …) from which the Lua that names them is made.

use super::remote::{self, Leased, WorkItem, WorkerId};
use super::{
    BatchConfig, Caller, Game, GameResult, JobSpec, JobStatus, Submitted, not_found, page_size,
    record, status_of,
};
use crate::error::AnalysisError;
use arbiter_redis_conn::Connection;
use arbiter_redis_conn::script::{Args, BASICS, Schema};
use arbiter_redis_conn::{RedisConfig, connect_in_background, wait_connected};
use redis::Script;
use redis::streams::{StreamAutoClaimReply, StreamId, StreamPendingCountReply, StreamReadReply};
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
/// The consumer of the group under which the service takes items for remote workers (for the
/// moment between reading an entry and moving it into its lease).
pub const REMOTE_CONSUMER: &str = "an:remote";
/// The most entries one `AcquireWork` looks at (entries of engines the worker lacks go back).
const ACQUIRE_SCAN: usize = 16;
/// How long a lease's record outlives the lease (to answer a retried submission).
const LEASE_KEEP_MS: u64 = 86_400_000;

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
    ("engine", 1),
]);

/// The `LEASE` script (`lua/lease.lua`; its header lists its keys and arguments).
const LEASE: &str = include_str!("lua/lease.lua");
/// `LEASE`'s arguments.
static LEASE_ARGS: Schema = Schema::new(&[
    ("item", 1),
    ("consumer", 1),
    ("lease", 1),
    ("worker", 1),
    ("length", 1),
    ("keep", 1),
    ("deliveries", 1),
]);

/// The `LEASE_EXPIRE` script (`lua/lease-expire.lua`; its header lists its keys and arguments).
const LEASE_EXPIRE: &str = include_str!("lua/lease-expire.lua");
/// `LEASE_EXPIRE`'s arguments.
static LEASE_EXPIRE_ARGS: Schema = Schema::new(&[("limit", 1)]);

/// The `REFUSE` script (`lua/refuse.lua`; its header lists its keys and arguments).
const REFUSE: &str = include_str!("lua/refuse.lua");
/// `REFUSE`'s arguments.
static REFUSE_ARGS: Schema = Schema::new(&[("worker", 1), ("refusal", 1)]);

/// The `LIFT` script (`lua/lift.lua`; its header lists its keys and arguments).
const LIFT: &str = include_str!("lua/lift.lua");
/// `LIFT`'s arguments.
static LIFT_ARGS: Schema = Schema::new(&[("worker", 1), ("refusal", 1)]);

/// The `WORK_RECORD` script (`lua/work-record.lua`; its header lists its keys and arguments).
const WORK_RECORD: &str = include_str!("lua/work-record.lua");
/// `WORK_RECORD`'s arguments.
static WORK_RECORD_ARGS: Schema =
    Schema::new(&[("lease", 1), ("worker", 1), ("positions", 1), ("result", 1)]);

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
    lease: Named,
    lease_expire: Named,
    refuse: Named,
    lift: Named,
    work_record: Named,
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
            lease: Named::new(&LEASE_ARGS, LEASE),
            lease_expire: Named::new(&LEASE_EXPIRE_ARGS, LEASE_EXPIRE),
            refuse: Named::new(&REFUSE_ARGS, REFUSE),
            lift: Named::new(&LIFT_ARGS, LIFT),
            work_record: Named::new(&WORK_RECORD_ARGS, WORK_RECORD),
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
            s.lease,
            s.lease_expire,
            s.refuse,
            s.lift,
            s.work_record,
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
/// `traceparent` of its `SubmitJob` call, empty without traces), `engine`.
pub(super) type ItemJob = (
    Option<String>,
    Option<u32>,
    Option<u64>,
    Option<usize>,
    Option<String>,
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
        let client = redis.single_client("the batch analysis queue")?;
        let conn = connect_in_background(client, "analysis jobs", Scripts::all());
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
            )
            .set("engine", &spec.engine);
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

/// What the service reads of a job for a remote worker: `cancelled`, `depth`, `nodes`, `hash`,
/// `engine`.
type LeaseJob = (
    Option<String>,
    Option<u32>,
    Option<u64>,
    Option<usize>,
    Option<String>,
);

/// A lease record's `job`, `game`, `item`, `worker` and `state`.
type LeaseFields = (
    Option<String>,
    Option<String>,
    Option<Vec<u8>>,
    Option<String>,
    Option<String>,
);

/// The job settings of a game for a remote worker, from its job's fields (`None`: the job
/// is cancelled, expired, or has no per-ply limit).
fn lease_spec(game: Game, meta: LeaseJob) -> Option<JobSpec> {
    let (cancelled, depth, nodes, hash, engine) = meta;
    if cancelled.as_deref() != Some("0") {
        return None;
    }
    let limits = match (depth.unwrap_or(0), nodes.unwrap_or(0)) {
        (d @ 1.., _) => arbiter_engine::Limits::depth(d),
        (_, n @ 1..) => arbiter_engine::Limits::nodes(n),
        _ => return None,
    };
    Some(JobSpec {
        games: vec![game],
        limits,
        hash_mib: hash.unwrap_or(16).clamp(1, 4096),
        engine: engine.unwrap_or_default(),
    })
}

impl RedisJobs {
    /// Ends the leases past their time (their games back in the stream).
    async fn sweep(&self, c: &mut Connection) -> Result<(), AnalysisError> {
        let mut args = self.scripts.lease_expire.args();
        args.set("limit", 100);
        let ended: u64 = self
            .scripts
            .lease_expire
            .call(c, args)
            .await
            .map_err(unavailable)?;
        if ended > 0 {
            crate::metrics::leases_ended("expired", ended);
        }
        Ok(())
    }

    /// An entry for the remote consumer: one it left pending past the claim timeout, else a
    /// new one (not waiting): the entry and its deliveries (this one included).
    async fn read_one(
        &self,
        c: &mut Connection,
    ) -> Result<Option<(StreamId, usize)>, AnalysisError> {
        let idle = u64::try_from(self.config.queue.claim_idle.as_millis()).unwrap_or(u64::MAX);
        let claimed: redis::RedisResult<StreamAutoClaimReply> = redis::cmd("XAUTOCLAIM")
            .arg(WORK)
            .arg(GROUP)
            .arg(REMOTE_CONSUMER)
            .arg(idle)
            .arg("0-0")
            .arg("COUNT")
            .arg(1)
            .query_async(c)
            .await;
        let claimed = match claimed {
            Err(e) if e.code() == Some("NOGROUP") => {
                // No worker made the group yet: make it (from the stream's start).
                consumer::ensure_group(c).await.map_err(unavailable)?;
                StreamAutoClaimReply::default()
            }
            other => other.map_err(unavailable)?,
        };
        if let Some(entry) = claimed.claimed.into_iter().next() {
            let pending: StreamPendingCountReply = redis::cmd("XPENDING")
                .arg(WORK)
                .arg(GROUP)
                .arg(&entry.id)
                .arg(&entry.id)
                .arg(1)
                .query_async(c)
                .await
                .map_err(unavailable)?;
            let deliveries = pending.ids.first().map_or(1, |p| p.times_delivered);
            return Ok(Some((entry, deliveries)));
        }
        let read: Option<StreamReadReply> = redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg(GROUP)
            .arg(REMOTE_CONSUMER)
            .arg("COUNT")
            .arg(1)
            .arg("STREAMS")
            .arg(WORK)
            .arg(">")
            .query_async(c)
            .await
            .map_err(unavailable)?;
        Ok(read
            .and_then(|r| r.keys.into_iter().next())
            .and_then(|k| k.ids.into_iter().next())
            .map(|entry| (entry, 1)))
    }

    /// Sends an entry the remote consumer holds to the dead-letter stream, its game recorded
    /// as failed.
    async fn dead_letter(
        &self,
        c: &mut Connection,
        (item, job, game): (&str, &str, &str),
        deliveries: usize,
        error: &str,
    ) -> Result<(), AnalysisError> {
        tracing::warn!(
            item,
            job,
            game,
            deliveries,
            error,
            "remote work: an item goes to the dead-letter stream"
        );
        let result = record::encode_result(&GameResult {
            index: game.parse().unwrap_or(0),
            error: format!("analysis failed: given up after {deliveries} deliveries: {error}"),
            ..GameResult::default()
        });
        let mut args = self.scripts.dead.args();
        args.set("item", item)
            .set("job", job)
            .set("game", game)
            .set("deliveries", deliveries)
            .set("error", error)
            .set("result", result)
            .set("maxlen", DEAD_MAXLEN);
        let _: i64 = self.scripts.dead.call(c, args).await.map_err(unavailable)?;
        crate::metrics::game("dead_letter");
        Ok(())
    }

    /// A game for remote worker `worker` under a lease (see [`super::JobQueue::acquire`]); does
    /// not wait (the caller polls until its deadline).
    pub async fn acquire(
        &self,
        worker: &WorkerId,
        engines: &[String],
        _until: tokio::time::Instant,
    ) -> Result<Option<WorkItem>, AnalysisError> {
        let mut c = self.conn()?;
        self.sweep(&mut c).await?;
        for _ in 0..ACQUIRE_SCAN {
            let Some((entry, delivered)) = self.read_one(&mut c).await? else {
                return Ok(None);
            };
            let text = |f: &str| entry.get::<String>(f).unwrap_or_default();
            let (item, job, game) = (entry.id.clone(), text("job"), text("game"));
            let deliveries = delivered + text("tries").parse::<usize>().unwrap_or(0);
            let at = (item.as_str(), job.as_str(), game.as_str());
            if deliveries > self.config.queue.max_deliveries as usize {
                let last: Option<String> = redis::cmd("GET")
                    .arg(format!("an:err:{item}"))
                    .query_async(&mut c)
                    .await
                    .unwrap_or(None);
                let error = last.unwrap_or_else(|| {
                    "its workers stopped or were lost before finishing it".to_owned()
                });
                self.dead_letter(&mut c, at, deliveries, &error).await?;
                continue;
            }
            let meta: LeaseJob = redis::cmd("HMGET")
                .arg(format!("an:j:{job}"))
                .arg(&["cancelled", "depth", "nodes", "hash", "engine"])
                .query_async(&mut c)
                .await
                .map_err(unavailable)?;
            if meta.0.as_deref() != Some("0") {
                let mut args = self.scripts.drop.args();
                args.set("item", &item);
                let _: i64 = self
                    .scripts
                    .drop
                    .call(&mut c, args)
                    .await
                    .map_err(unavailable)?;
                crate::metrics::game("dropped");
                continue;
            }
            if !super::engine_wanted(meta.4.as_deref().unwrap_or(""), engines) {
                // Back as a fresh entry: not a delivery of the game.
                let mut args = self.scripts.requeue.args();
                args.set("item", &item)
                    .set("consumer", REMOTE_CONSUMER)
                    .set("job", &job)
                    .set("game", &game);
                let _: i64 = self
                    .scripts
                    .requeue
                    .call(&mut c, args)
                    .await
                    .map_err(unavailable)?;
                continue;
            }
            let payload = entry.get::<Vec<u8>>("item").unwrap_or_default();
            let decoded = Game::from_item(&payload).and_then(|g| {
                lease_spec(g, meta).ok_or_else(|| "the job has no per-ply limit".to_owned())
            });
            let spec = match decoded {
                Ok(spec) if game.parse::<usize>().is_ok() => spec,
                Ok(_) => {
                    let e = "the item's game index is not a number";
                    self.dead_letter(&mut c, at, deliveries, e).await?;
                    continue;
                }
                Err(e) => {
                    self.dead_letter(&mut c, at, deliveries, &e).await?;
                    continue;
                }
            };
            let lease_id = remote::new_lease_id()?;
            let mut args = self.scripts.lease.args();
            args.set("item", &item)
                .set("consumer", REMOTE_CONSUMER)
                .set("lease", &lease_id)
                .set("worker", worker.as_str())
                .set(
                    "length",
                    u64::try_from(self.config.lease_length().as_millis())
                        .unwrap_or(u64::MAX)
                        .max(1),
                )
                // The record outlives the lease itself by a day.
                .set(
                    "keep",
                    LEASE_KEEP_MS.saturating_add(
                        u64::try_from(self.config.lease_length().as_millis()).unwrap_or(0),
                    ),
                )
                .set("deliveries", deliveries);
            let expires: i64 = self
                .scripts
                .lease
                .call(&mut c, args)
                .await
                .map_err(unavailable)?;
            if expires == 0 {
                continue;
            }
            return Ok(Some(WorkItem {
                lease_id,
                expires_at_unix_ms: expires,
                game: spec.games[0].clone(),
                spec,
            }));
        }
        Ok(None)
    }

    /// What lease `lease_id` of `worker` holds (see [`super::JobQueue::leased`]).
    pub async fn leased(&self, worker: &WorkerId, lease_id: &str) -> Result<Leased, AnalysisError> {
        let mut c = self.conn()?;
        let (job, game, item, owner, state): LeaseFields = redis::cmd("HMGET")
            .arg(format!("an:lease:{lease_id}"))
            .arg(&["job", "game", "item", "worker", "state"])
            .query_async(&mut c)
            .await
            .map_err(unavailable)?;
        if owner.as_deref() != Some(worker.as_str()) {
            return Err(remote::not_held(lease_id));
        }
        if state.as_deref() == Some("accepted") {
            return Ok(Leased::Accepted);
        }
        let (Some(job), Some(index)) = (job, game.and_then(|g| g.parse::<usize>().ok())) else {
            return Err(remote::not_held(lease_id));
        };
        let meta: LeaseJob = redis::cmd("HMGET")
            .arg(format!("an:j:{job}"))
            .arg(&["cancelled", "depth", "nodes", "hash", "engine"])
            .query_async(&mut c)
            .await
            .map_err(unavailable)?;
        let game = Game::from_item(&item.unwrap_or_default())
            .map_err(|e| AnalysisError::Corrupt(format!("a leased game cannot be read: {e}")))?;
        let spec = lease_spec(game, meta).ok_or_else(|| remote::not_held(lease_id))?;
        Ok(Leased::Open { index, spec })
    }

    /// Records the checked result of lease `lease_id` of `worker` once (see
    /// [`super::JobQueue::record_work`]).
    pub async fn record_work(
        &self,
        worker: &WorkerId,
        lease_id: &str,
        result: &GameResult,
        positions: u64,
    ) -> Result<bool, AnalysisError> {
        let mut args = self.scripts.work_record.args();
        args.set("lease", lease_id)
            .set("worker", worker.as_str())
            .set("positions", positions)
            .set("result", record::encode_result(result));
        let outcome: String = self
            .scripts
            .work_record
            .call(&mut self.conn()?, args)
            .await
            .map_err(unavailable)?;
        match outcome.as_str() {
            "recorded" => Ok(false),
            "duplicate" => Ok(true),
            "refused" => Err(match self.refusal(worker).await? {
                Some(id) => remote::refusal_message(worker, &id),
                None => remote::not_held(lease_id),
            }),
            _ => Err(remote::not_held(lease_id)),
        }
    }

    /// Refuses `worker` for work, its live leases back in the stream (see
    /// [`super::JobQueue::refuse_worker`]).
    pub async fn refuse(&self, worker: &WorkerId) -> Result<(String, u64), AnalysisError> {
        let id = remote::new_refusal_id()?;
        let mut args = self.scripts.refuse.args();
        args.set("worker", worker.as_str()).set("refusal", &id);
        let returned: u64 = self
            .scripts
            .refuse
            .call(&mut self.conn()?, args)
            .await
            .map_err(unavailable)?;
        Ok((id, returned))
    }

    /// The refusal id of `worker`, when it is refused for work.
    pub async fn refusal(&self, worker: &WorkerId) -> Result<Option<String>, AnalysisError> {
        redis::cmd("HGET")
            .arg("an:refusals")
            .arg(worker.as_str())
            .query_async(&mut self.conn()?)
            .await
            .map_err(unavailable)
    }

    /// Lifts refusal `id` of `worker` (nothing if it is refused under another id).
    pub async fn lift(&self, worker: &WorkerId, id: &str) -> Result<(), AnalysisError> {
        let mut args = self.scripts.lift.args();
        args.set("worker", worker.as_str()).set("refusal", id);
        let _: i64 = self
            .scripts
            .lift
            .call(&mut self.conn()?, args)
            .await
            .map_err(unavailable)?;
        Ok(())
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
            engine: String::new(),
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
        let scripts: [(&Schema, &str); 12] = [
            (&SUBMIT_ARGS, SUBMIT),
            (&CANCEL_ARGS, CANCEL),
            (&HEARTBEAT_ARGS, HEARTBEAT),
            (&RECORD_ARGS, RECORD),
            (&DEAD_LETTER_ARGS, DEAD_LETTER),
            (&REQUEUE_ARGS, REQUEUE),
            (&DROP_ARGS, DROP),
            (&LEASE_ARGS, LEASE),
            (&LEASE_EXPIRE_ARGS, LEASE_EXPIRE),
            (&REFUSE_ARGS, REFUSE),
            (&LIFT_ARGS, LIFT),
            (&WORK_RECORD_ARGS, WORK_RECORD),
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
