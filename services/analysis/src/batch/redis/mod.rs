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
//! The names above are those of one Redis. On a Redis Cluster the keys are spread over 32 slot
//! groups ([`layout`]): each group has its own work stream, dead-letter stream, lease index and
//! refusals under `an:{<tag>}:`, and a job lives whole in the group of its request key, so that
//! every script touches one slot; workers and `AcquireWork` read the groups in turn, and the
//! caps are a ledger of their own (`an:{an}:jobs`, `an:{an}:held`: `lua/reserve.lua`,
//! `lua/settle.lua`).
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
use layout::Layout;
use redis::Script;
use redis::streams::StreamId;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::watch;

/// The stream of work items (one per game), on one Redis (on a cluster, each slot group's
/// `an:{<tag>}:work`).
pub const WORK: &str = "an:work";
/// The consumer group of the workers.
pub const GROUP: &str = "an:workers";
/// The dead-letter stream: items given up on, with their last error, on one Redis (on a
/// cluster, each slot group's `an:{<tag>}:dead`).
pub const DEAD: &str = "an:dead";
/// About how many entries the dead-letter stream keeps (the oldest are trimmed).
pub const DEAD_MAXLEN: u64 = 10_000;
/// How long a failed analysis's error is kept for the dead-letter entry.
const ERROR_TTL_MS: u64 = 86_400_000;
/// The longest a worker's read waits for a new item (then it looks for abandoned ones).
const BLOCK_MS: u64 = 1_000;
/// The channel on which a cluster's replicas announce a new job (its group's number), so that
/// idle workers, whose reads do not block there, look at once.
pub const QUEUED: &str = "an:queued";
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
    ("ledger", 1),
    ("reserved", 1),
]);

/// The `RESERVE` script (`lua/reserve.lua`: a cluster's ledger of jobs; its header lists its
/// keys and arguments).
const RESERVE: &str = include_str!("lua/reserve.lua");
/// `RESERVE`'s arguments.
static RESERVE_ARGS: Schema = Schema::new(&[
    ("id", 1),
    ("positions", 1),
    ("ttl", 1),
    ("max_jobs", 1),
    ("max_positions", 1),
]);

/// The `SETTLE` script (`lua/settle.lua`: a cluster's ledger of jobs; its header lists its keys
/// and arguments).
const SETTLE: &str = include_str!("lua/settle.lua");
/// `SETTLE`'s arguments (`entries`: job ids and expiries as one packed list).
static SETTLE_ARGS: Schema = Schema::new(&[("entries", 1)]);
/// The ledger entries settled at once.
const SETTLE_BATCH: usize = 256;
/// The most batches of ledger entries one submission settles (entries past their time count
/// against the caps until settled: enough for the default cap of 1,000 jobs all expired).
const SETTLE_BATCHES: usize = 8;

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
    /// A script of a slot group's keys (after the prelude).
    fn new(schema: &'static Schema, body: &str) -> Named {
        Named {
            script: Script::new(&format!("{BASICS}{PRELUDE}{}{body}", schema.prologue())),
            schema,
        }
    }

    /// A script of the ledger's keys (no prelude: it touches no group).
    fn ledger(schema: &'static Schema, body: &str) -> Named {
        Named {
            script: Script::new(&format!("{BASICS}{}{body}", schema.prologue())),
            schema,
        }
    }

    /// Empty arguments to set by name.
    fn args(&self) -> Args {
        self.schema.args()
    }

    /// Runs the script with `args`. Arguments that do not fit its schema (a mistake of this
    /// code, never of the input) are a client error, not sent.
    /// `keys`: the group's ([`Layout::script_keys`]) or the ledger's.
    async fn call<T: redis::FromRedisValue>(
        &self,
        c: &mut Connection,
        keys: &[String],
        args: Args,
    ) -> redis::RedisResult<T> {
        let slots = args.slots().map_err(|e| {
            redis::RedisError::from((redis::ErrorKind::ClientError, "script arguments", e))
        })?;
        let mut call = self.script.prepare_invoke();
        for key in keys {
            call.key(key);
        }
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
    reserve: Named,
    settle: Named,
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
            reserve: Named::ledger(&RESERVE_ARGS, RESERVE),
            settle: Named::ledger(&SETTLE_ARGS, SETTLE),
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
            s.reserve,
            s.settle,
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
    layout: Layout,
    /// Where `AcquireWork` starts reading the groups (each call the next one, so that no
    /// group's games wait on another's).
    next_group: AtomicUsize,
    /// When this replica last swept the leases of every group on a cluster (process ms): at
    /// most once a second there, beside the workers' own sweep.
    swept_at: AtomicU64,
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
        let client = redis.client()?;
        let layout = Layout::for_cluster(client.is_cluster());
        let conn = connect_in_background(client, "analysis jobs", Scripts::all());
        Ok(RedisJobs {
            conn,
            scripts: Scripts::new(),
            config,
            layout,
            next_group: AtomicUsize::new(0),
            swept_at: AtomicU64::new(0),
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

    /// Whether the jobs are on a Redis Cluster (spread over its slot groups).
    pub fn is_cluster(&self) -> bool {
        self.layout.is_cluster()
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
        let rid = caller.request_key(request_id);
        // A job lives in the group of its request key, so that a retry finds it there.
        let g = self.layout.group_of(&rid);
        // Drawn for every call, used only when the job is new: a retry answers the stored id.
        let id = self.layout.draw_in(g, super::new_job_id, || {
            AnalysisError::Unavailable("no job id of the request's group was drawn; retry".into())
        })?;
        let mut args = self.scripts.submit.args();
        args.set("rid", &rid)
            .set("fp", format!("{fingerprint:016x}"))
            .set("id", &id)
            .set("games", spec.games.len())
            .set("positions", spec.positions())
            .set("ttl", ttl_ms)
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
        let mut c = self.conn()?;
        let keys = self.layout.script_keys(g);
        let (what, detail): (String, String) = if self.layout.is_cluster() {
            // The caps count every group's jobs: a ledger of their own holds them. A retry of a
            // known job is answered without a place; a new job reserves one first.
            args.set("ledger", 1);
            let mut unreserved = args.clone();
            unreserved.set("reserved", 0);
            let first: (String, String) = self
                .scripts
                .submit
                .call(&mut c, keys, unreserved)
                .await
                .map_err(unavailable)?;
            if first.0 != "unreserved" {
                first
            } else if let Some(refused) =
                self.reserve(&mut c, &id, spec.positions(), ttl_ms).await?
            {
                refused
            } else {
                args.set("reserved", 1);
                let made: (String, String) = self
                    .scripts
                    .submit
                    .call(&mut c, keys, args)
                    .await
                    .map_err(unavailable)?;
                if made.0 != "new" {
                    // Another call under the same request id made the job meanwhile: the place
                    // reserved for this call's id is free again.
                    self.settle(&mut c, &[(id.clone(), -1)]).await?;
                }
                made
            }
        } else {
            args.set("max_jobs", self.config.max_jobs)
                .set("max_positions", self.config.max_positions);
            self.scripts
                .submit
                .call(&mut c, keys, args)
                .await
                .map_err(unavailable)?
        };
        if what == "new" && self.layout.is_cluster() {
            // Best effort: a worker that misses it looks within a second anyway.
            let told: redis::RedisResult<()> = redis::cmd("PUBLISH")
                .arg(QUEUED)
                .arg(g)
                .query_async(&mut c)
                .await;
            if let Err(e) = told {
                tracing::debug!(error = %e, "cannot announce a new job to idle workers");
            }
        }
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

    /// Reserves job `id`'s place in a cluster's ledger, after settling the entries past their
    /// time: `None` when reserved, else the refusal (`jobs`, or `positions` with the count
    /// held).
    async fn reserve(
        &self,
        c: &mut Connection,
        id: &str,
        positions: u64,
        ttl_ms: u64,
    ) -> Result<Option<(String, String)>, AnalysisError> {
        self.settle_due(c).await?;
        let mut args = self.scripts.reserve.args();
        args.set("id", id)
            .set("positions", positions)
            .set("ttl", ttl_ms)
            .set("max_jobs", self.config.max_jobs)
            .set("max_positions", self.config.max_positions);
        let (what, detail): (String, String) = self
            .scripts
            .reserve
            .call(c, &Layout::ledger_keys(), args)
            .await
            .map_err(unavailable)?;
        Ok((what != "ok").then_some((what, detail)))
    }

    /// Brings the ledger's entries past their time up to date, [`SETTLE_BATCH`] at a time up to
    /// [`SETTLE_BATCHES`] times, each job's expiry read from its group's index of jobs. An entry
    /// whose group cannot be read now (its primary failing over) stays for a later submission.
    async fn settle_due(&self, c: &mut Connection) -> Result<(), AnalysisError> {
        let [jobs, _] = Layout::ledger_keys();
        for _ in 0..SETTLE_BATCHES {
            let now = arbiter_redis_conn::script::redis_now(c)
                .await
                .map_err(unavailable)?;
            let due: Vec<String> = redis::cmd("ZRANGEBYSCORE")
                .arg(&jobs)
                .arg("-inf")
                .arg(now)
                .arg("LIMIT")
                .arg(0)
                .arg(SETTLE_BATCH)
                .query_async(c)
                .await
                .map_err(unavailable)?;
            let full = due.len() == SETTLE_BATCH;
            // Each in its own group's slot (a cluster takes no pipeline across slots): all at
            // once.
            let mut reads = tokio::task::JoinSet::new();
            for id in due {
                let (mut c, key) = (c.clone(), format!("{}jobs", self.layout.prefix_of(&id)));
                reads.spawn(async move {
                    let at: redis::RedisResult<Option<f64>> = redis::cmd("ZSCORE")
                        .arg(key)
                        .arg(&id)
                        .query_async(&mut c)
                        .await;
                    at.map(|at| (id, at.map_or(0, |ms| ms as i64)))
                });
            }
            let mut entries = Vec::new();
            while let Some(read) = reads.join_next().await {
                match read {
                    Ok(Ok(entry)) => entries.push(entry),
                    Ok(Err(e)) => tracing::debug!(error = %e, "a job's group cannot be read now"),
                    Err(e) => tracing::debug!(error = %e, "reading a job's group failed"),
                }
            }
            if !entries.is_empty() {
                self.settle(c, &entries).await?;
            }
            if !full {
                break;
            }
        }
        Ok(())
    }

    /// Runs `SETTLE` on `entries` (job ids with their groups' expiries; `-1` releases).
    async fn settle(
        &self,
        c: &mut Connection,
        entries: &[(String, i64)],
    ) -> Result<(), AnalysisError> {
        let flat: Vec<String> = entries
            .iter()
            .flat_map(|(id, at)| [id.clone(), at.to_string()])
            .collect();
        let mut args = self.scripts.settle.args();
        args.set("entries", record::pack(&flat));
        let _: u64 = self
            .scripts
            .settle
            .call(c, &Layout::ledger_keys(), args)
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    /// The status of `caller`'s job; `NOT_FOUND` when it is unknown, expired, or another
    /// caller's (a job stored without an owner, by an earlier version, is nobody's).
    pub async fn status(&self, caller: &Caller, id: &str) -> Result<JobStatus, AnalysisError> {
        let job = format!("{}j:{id}", self.layout.prefix_of(id));
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
            .arg(format!("{}j:{id}:r", self.layout.prefix_of(id)))
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
        let keys = self.layout.script_keys(self.layout.group_of(id));
        let outcome: i64 = self
            .scripts
            .cancel
            .call(&mut self.conn()?, keys, args)
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
    /// Ends the leases past their time (their games back in the stream). On a cluster, every
    /// group's, at most once a second from this replica.
    async fn sweep(&self, c: &mut Connection) -> Result<(), AnalysisError> {
        if self.layout.is_cluster() {
            let now = arbiter_kit::process_now();
            let last = self.swept_at.load(Ordering::Relaxed);
            if now.saturating_sub(last) < 1_000
                || self
                    .swept_at
                    .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                    .is_err()
            {
                return Ok(());
            }
        }
        let ended = sweep_leases(&self.scripts, &self.layout, c)
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
        g: usize,
    ) -> Result<Option<(StreamId, usize)>, AnalysisError> {
        let work = self.layout.work(g);
        let read = consumer::read_entry(
            c,
            &work,
            REMOTE_CONSUMER,
            self.config.queue.claim_idle,
            None,
        )
        .await
        .map_err(unavailable)?;
        Ok(read.map(|r| (r.entry, r.delivered)))
    }

    /// Sends an entry the remote consumer holds to the dead-letter stream, its game recorded
    /// as failed.
    async fn dead_letter(
        &self,
        c: &mut Connection,
        g: usize,
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
        let _: i64 = self
            .scripts
            .dead
            .call(c, self.layout.script_keys(g), args)
            .await
            .map_err(unavailable)?;
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
        let groups = self.layout.count();
        let start = self.next_group.fetch_add(1, Ordering::Relaxed) % groups;
        let mut scanned = 0;
        for g in (0..groups).map(|i| (start + i) % groups) {
            while scanned < ACQUIRE_SCAN {
                let Some((entry, delivered)) = self.read_one(&mut c, g).await? else {
                    break;
                };
                scanned += 1;
                if let Some(item) = self
                    .offer(&mut c, g, worker, engines, entry, delivered)
                    .await?
                {
                    return Ok(Some(item));
                }
            }
        }
        Ok(None)
    }

    /// An entry of group `g` the remote consumer read, leased to `worker` if it can take it;
    /// else dead-lettered, dropped (its job cancelled or gone) or put back (an engine `worker`
    /// lacks), and `None`.
    async fn offer(
        &self,
        c: &mut Connection,
        g: usize,
        worker: &WorkerId,
        engines: &[String],
        entry: StreamId,
        delivered: usize,
    ) -> Result<Option<WorkItem>, AnalysisError> {
        let q = self.layout.prefix(g);
        let keys = self.layout.script_keys(g);
        let text = |f: &str| entry.get::<String>(f).unwrap_or_default();
        let (item, job, game) = (entry.id.clone(), text("job"), text("game"));
        let deliveries = delivered + text("tries").parse::<usize>().unwrap_or(0);
        let at = (item.as_str(), job.as_str(), game.as_str());
        if deliveries > self.config.queue.max_deliveries as usize {
            let last: Option<String> = redis::cmd("GET")
                .arg(format!("{q}err:{item}"))
                .query_async(c)
                .await
                .unwrap_or(None);
            let error = last.unwrap_or_else(|| {
                "its workers stopped or were lost before finishing it".to_owned()
            });
            self.dead_letter(c, g, at, deliveries, &error).await?;
            return Ok(None);
        }
        let meta: LeaseJob = redis::cmd("HMGET")
            .arg(format!("{q}j:{job}"))
            .arg(&["cancelled", "depth", "nodes", "hash", "engine"])
            .query_async(c)
            .await
            .map_err(unavailable)?;
        if meta.0.as_deref() != Some("0") {
            let mut args = self.scripts.drop.args();
            args.set("item", &item);
            let _: i64 = self
                .scripts
                .drop
                .call(c, keys, args)
                .await
                .map_err(unavailable)?;
            crate::metrics::game("dropped");
            return Ok(None);
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
                .call(c, keys, args)
                .await
                .map_err(unavailable)?;
            return Ok(None);
        }
        let payload = entry.get::<Vec<u8>>("item").unwrap_or_default();
        let decoded = Game::from_item(&payload).and_then(|g| {
            lease_spec(g, meta).ok_or_else(|| "the job has no per-ply limit".to_owned())
        });
        let spec = match decoded {
            Ok(spec) if game.parse::<usize>().is_ok() => spec,
            Ok(_) => {
                let e = "the item's game index is not a number";
                self.dead_letter(c, g, at, deliveries, e).await?;
                return Ok(None);
            }
            Err(e) => {
                self.dead_letter(c, g, at, deliveries, &e).await?;
                return Ok(None);
            }
        };
        // The lease lives in its game's group: its id says which.
        let lease_id = self.layout.draw_in(g, remote::new_lease_id, || {
            AnalysisError::Unavailable("no lease id of the game's group was drawn; retry".into())
        })?;
        let length = u64::try_from(self.config.lease_length().as_millis()).unwrap_or(u64::MAX);
        let mut args = self.scripts.lease.args();
        args.set("item", &item)
            .set("consumer", REMOTE_CONSUMER)
            .set("lease", &lease_id)
            .set("worker", worker.as_str())
            .set("length", length.max(1))
            // The record outlives the lease itself by a day.
            .set("keep", LEASE_KEEP_MS.saturating_add(length))
            .set("deliveries", deliveries);
        let expires: i64 = self
            .scripts
            .lease
            .call(c, keys, args)
            .await
            .map_err(unavailable)?;
        if expires == 0 {
            return Ok(None);
        }
        Ok(Some(WorkItem {
            lease_id,
            expires_at_unix_ms: expires,
            game: spec.games[0].clone(),
            spec,
        }))
    }

    /// What lease `lease_id` of `worker` holds (see [`super::JobQueue::leased`]).
    pub async fn leased(&self, worker: &WorkerId, lease_id: &str) -> Result<Leased, AnalysisError> {
        let mut c = self.conn()?;
        let q = self.layout.prefix_of(lease_id);
        let (job, game, item, owner, state): LeaseFields = redis::cmd("HMGET")
            .arg(format!("{q}lease:{lease_id}"))
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
            .arg(format!("{q}j:{job}"))
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
        let keys = self.layout.script_keys(self.layout.group_of(lease_id));
        let outcome: String = self
            .scripts
            .work_record
            .call(&mut self.conn()?, keys, args)
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
    /// [`super::JobQueue::refuse_worker`]). On a cluster, group by group (each refusal and the
    /// return of that group's leases one script): group 0, which [`RedisJobs::refusal`] reads
    /// and every call of the worker's is checked against, first, so that the worker is refused
    /// everywhere from the start. Should a call fail midway, the groups not reached keep the
    /// worker's leases until they expire (their results are turned away at group 0's refusal).
    pub async fn refuse(&self, worker: &WorkerId) -> Result<(String, u64), AnalysisError> {
        let id = remote::new_refusal_id()?;
        let mut c = self.conn()?;
        let mut returned = 0;
        for g in 0..self.layout.count() {
            let mut args = self.scripts.refuse.args();
            args.set("worker", worker.as_str()).set("refusal", &id);
            let n: u64 = self
                .scripts
                .refuse
                .call(&mut c, self.layout.script_keys(g), args)
                .await
                .map_err(unavailable)?;
            returned += n;
        }
        Ok((id, returned))
    }

    /// The refusal id of `worker`, when it is refused for work (group 0's, on a cluster: the
    /// first a refusal sets and the last a lift clears).
    pub async fn refusal(&self, worker: &WorkerId) -> Result<Option<String>, AnalysisError> {
        redis::cmd("HGET")
            .arg(format!("{}refusals", self.layout.prefix(0)))
            .arg(worker.as_str())
            .query_async(&mut self.conn()?)
            .await
            .map_err(unavailable)
    }

    /// Lifts refusal `id` of `worker` (nothing if it is refused under another id); on a
    /// cluster group by group, group 0 last.
    pub async fn lift(&self, worker: &WorkerId, id: &str) -> Result<(), AnalysisError> {
        let mut c = self.conn()?;
        for g in (0..self.layout.count()).rev() {
            let mut args = self.scripts.lift.args();
            args.set("worker", worker.as_str()).set("refusal", id);
            let _: i64 = self
                .scripts
                .lift
                .call(&mut c, self.layout.script_keys(g), args)
                .await
                .map_err(unavailable)?;
        }
        Ok(())
    }
}

/// Ends the leases past their time in every group (their games back in the streams), up to
/// 100 a group: how many were ended.
async fn sweep_leases(
    scripts: &Scripts,
    layout: &Layout,
    c: &mut Connection,
) -> redis::RedisResult<u64> {
    let mut ended = 0;
    for g in 0..layout.count() {
        let mut args = scripts.lease_expire.args();
        args.set("limit", 100);
        let n: u64 = scripts
            .lease_expire
            .call(c, layout.script_keys(g), args)
            .await?;
        ended += n;
    }
    Ok(ended)
}

mod consumer;
pub mod layout;

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
        ensure_group(&mut c, WORK).await.unwrap();
        let keys = Layout::single().script_keys(0).to_vec();
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
            let (mut c, item, job, s, keys) = (
                hc.clone(),
                item.clone(),
                status.job_id.clone(),
                &jobs.scripts,
                keys.clone(),
            );
            async move {
                let mut args = s.heartbeat.args();
                args.set("job", &job)
                    .set("game", 0)
                    .set("done", 0)
                    .set("item", &item)
                    .set("consumer", consumer);
                s.heartbeat
                    .call::<String>(&mut c, &keys, args)
                    .await
                    .unwrap()
            }
        };
        assert_eq!(beat("first").await, "ok");
        assert_eq!(beat("second").await, "lost", "not the second's item");
        let result = record::encode_result(&GameResult::default());
        let record = |game: u32| {
            let (mut c, item, job, s, result, keys) = (
                hc.clone(),
                item.clone(),
                status.job_id.clone(),
                &jobs.scripts,
                result.clone(),
                keys.clone(),
            );
            async move {
                let mut args = s.record.args();
                args.set("job", &job)
                    .set("game", game)
                    .set("positions", 1)
                    .set("item", &item)
                    .set("result", &result);
                s.record.call::<i64>(&mut c, &keys, args).await.unwrap()
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

    /// A submission whose reply was lost and that the client sends again (the same drawn id)
    /// answers `new` again, not `duplicate` of itself (on a cluster, a `duplicate` would free
    /// the job's own place in the ledger); another call under the same request id is a
    /// duplicate, and a different job under it a conflict.
    #[tokio::test]
    async fn a_submission_run_twice_is_new_both_times() {
        let redis = arbiter_testkit::redis().await;
        let jobs = RedisJobs::connect(&redis.url, BatchConfig::default())
            .await
            .unwrap();
        let mut c = jobs.conn().unwrap();
        let keys = Layout::single().script_keys(0).to_vec();
        let submit = |id: &str, fp: &str| {
            let mut args = jobs.scripts.submit.args();
            args.set("rid", "r".repeat(64))
                .set("fp", fp)
                .set("id", id)
                .set("games", 1)
                .set("positions", 1)
                .set("ttl", 60_000)
                .set("max_jobs", 10)
                .set("max_positions", 100)
                .set("depth", 1)
                .set("nodes", 0)
                .set("hash", 1)
                .set("owner", "o")
                .set("items", record::pack(&["x"]))
                .set("trace", "")
                .set("engine", "");
            args
        };
        let mut run = async |id: &str, fp: &str| -> (String, String) {
            jobs.scripts
                .submit
                .call(&mut c, &keys, submit(id, fp))
                .await
                .unwrap()
        };
        let first = run("job-1", "0000000000000001").await;
        assert_eq!(first, ("new".to_owned(), "job-1".to_owned()));
        assert_eq!(run("job-1", "0000000000000001").await, first);
        assert_eq!(
            run("job-2", "0000000000000001").await,
            ("duplicate".to_owned(), "job-1".to_owned())
        );
        assert_eq!(
            run("job-3", "0000000000000002").await,
            ("conflict".to_owned(), "job-1".to_owned())
        );
        let held: u64 = redis::cmd("ZCARD")
            .arg("an:jobs")
            .query_async(&mut jobs.conn().unwrap())
            .await
            .unwrap();
        assert_eq!(held, 1, "one job made");
    }

    /// Every script reads its arguments by name, each one its schema gives (and never
    /// `ARGV`), and its header lists them.
    #[test]
    fn scripts_read_only_their_named_arguments() {
        let scripts: [(&Schema, &str); 14] = [
            (&RESERVE_ARGS, RESERVE),
            (&SETTLE_ARGS, SETTLE),
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
