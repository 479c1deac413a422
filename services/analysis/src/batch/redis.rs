//! Batch jobs on Redis Streams, shared by any number of service replicas (which accept jobs and
//! answer for them) and worker processes (which analyse them), on any machine.
//!
//! - A job is a hash `an:j:<id>` (its owner, its request key, fingerprint, counts, the per-ply
//!   limit, its retention), with `an:j:<id>:r` (each finished game's encoded `GameResult` by
//!   index) and `an:j:<id>:p` (positions done by game). `an:rid:<request key>` names the job of
//!   a caller's request id: the key is [`Caller::request_key`], 64 hex digits of a SHA-256 of
//!   the caller and the id, so request ids are scoped to their caller and keys are bounded
//!   whatever the id. The owner is [`Caller::hex`]; a job answers only to it. `an:jobs` (a
//!   sorted set by expiry) and `an:held` (positions by job) enforce the caps on jobs and
//!   positions held, for all replicas together. Every key of a job expires with it, its
//!   retention renewed by each sign of progress.
//! - Each game is one entry of the stream [`WORK`] (`job`, `game`, `item`: the game encoded by
//!   [`Game::to_item`]), read by the consumer group [`GROUP`]. A worker takes an entry
//!   with `XREADGROUP`, or one whose worker went silent for the claim timeout with
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
//! Every step that changes more than one key is one Lua script, so it is atomic.

use super::{
    BatchConfig, Caller, Game, JobSpec, analyse_game, ended, not_found, page_size, status_of,
};
use arbiter_engine::{Limits, TimeSource};
use arbiter_kit::ApiError;
use arbiter_kit::cpu::RaiseOnDrop;
use arbiter_proto::analysis::v1 as pb;
use arbiter_redis_conn::{RedisConfig, connect_in_background, wait_connected};
use redis::Script;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::streams::{StreamAutoClaimReply, StreamId, StreamPendingCountReply, StreamReadReply};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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

const PRELUDE: &str = r"
local WORK, GROUP = 'an:work', 'an:workers'
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function renew(id)
  local J = 'an:j:' .. id
  local ttl = tonumber(redis.call('HGET', J, 'ttl'))
  redis.call('PEXPIRE', J, ttl)
  redis.call('PEXPIRE', J .. ':r', ttl)
  redis.call('PEXPIRE', J .. ':p', ttl)
  redis.call('PEXPIRE', 'an:rid:' .. redis.call('HGET', J, 'rid'), ttl)
  redis.call('ZADD', 'an:jobs', now_ms() + ttl, id)
end
local function game_of(J, g)
  local n = tonumber(g)
  if n and n >= 0 and n == math.floor(n) and n < tonumber(redis.call('HGET', J, 'games')) then
    return tostring(n)
  end
  return nil
end
local function advance(id, game, n)
  local P = 'an:j:' .. id .. ':p'
  local old = tonumber(redis.call('HGET', P, game) or '0')
  if n > old then
    redis.call('HSET', P, game, n)
    redis.call('HINCRBY', 'an:j:' .. id, 'pos', n - old)
  end
end
local function store(id, g, n, result)
  local J = 'an:j:' .. id
  if redis.call('EXISTS', J) == 0 then return 0 end
  local game = game_of(J, g)
  if not game then return 0 end
  local fresh = redis.call('HSETNX', J .. ':r', game, result)
  if fresh == 1 then redis.call('HINCRBY', J, 'done', 1) end
  redis.call('HSET', J, 'started', 1)
  advance(id, game, n)
  renew(id)
  return fresh
end
local function owns(item, consumer)
  local p = redis.call('XPENDING', WORK, GROUP, item, item, 1)
  return #p == 1 and p[1][2] == consumer
end
local function finish(item)
  redis.call('XACK', WORK, GROUP, item)
  redis.call('XDEL', WORK, item)
end
";

/// ARGV: request key, fingerprint, games, positions, ttl ms, max jobs, max positions, depth,
/// nodes, hash MiB, owner, then one item per game. Checks come first: a refused job writes
/// nothing.
const SUBMIT: &str = r"
local rid, fp = ARGV[1], ARGV[2]
local known = redis.call('GET', 'an:rid:' .. rid)
if known and redis.call('EXISTS', 'an:j:' .. known) == 1 then
  if redis.call('HGET', 'an:j:' .. known, 'fp') ~= fp then return {'conflict', known} end
  return {'duplicate', known}
end
local now = now_ms()
for _, old in ipairs(redis.call('ZRANGEBYSCORE', 'an:jobs', '-inf', now)) do
  redis.call('HDEL', 'an:held', old)
end
redis.call('ZREMRANGEBYSCORE', 'an:jobs', '-inf', now)
if redis.call('ZCARD', 'an:jobs') >= tonumber(ARGV[6]) then return {'jobs', ''} end
local held = 0
for _, n in ipairs(redis.call('HVALS', 'an:held')) do held = held + tonumber(n) end
if held + tonumber(ARGV[4]) > tonumber(ARGV[7]) then return {'positions', tostring(held)} end
local id = 'job-' .. fp .. '-' .. redis.call('INCR', 'an:seq')
local J = 'an:j:' .. id
redis.call('HSET', J, 'rid', rid, 'fp', fp, 'games', ARGV[3], 'positions', ARGV[4], 'done', 0,
  'pos', 0, 'cancelled', 0, 'started', 0, 'ttl', ARGV[5], 'depth', ARGV[8], 'nodes', ARGV[9],
  'hash', ARGV[10], 'owner', ARGV[11])
redis.call('SET', 'an:rid:' .. rid, id)
redis.call('HSET', 'an:held', id, ARGV[4])
renew(id)
for i = 12, #ARGV do
  redis.call('XADD', WORK, '*', 'job', id, 'game', tostring(i - 12), 'item', ARGV[i])
end
return {'new', id}
";

/// ARGV: job, owner. 1 when it was cancelled now, 0 when it had ended or was cancelled before,
/// -1 when it is unknown or another owner's.
const CANCEL: &str = r"
local J = 'an:j:' .. ARGV[1]
if redis.call('HGET', J, 'owner') ~= ARGV[2] then return -1 end
local h = redis.call('HMGET', J, 'games', 'done', 'cancelled')
if tonumber(h[2]) >= tonumber(h[1]) or h[3] == '1' then return 0 end
redis.call('HSET', J, 'cancelled', 1)
renew(ARGV[1])
return 1
";

/// ARGV: job, game, positions done, item, consumer. Keeps the item the consumer's (resetting
/// its idle time) and records progress: `ok`, or why to stop (`lost`: another worker has the
/// item; `gone`: the job expired; `cancelled`).
const HEARTBEAT: &str = r"
if not owns(ARGV[4], ARGV[5]) then return 'lost' end
redis.call('XCLAIM', WORK, GROUP, ARGV[5], 0, ARGV[4], 'JUSTID')
local J = 'an:j:' .. ARGV[1]
if redis.call('EXISTS', J) == 0 then return 'gone' end
if redis.call('HGET', J, 'cancelled') == '1' then return 'cancelled' end
local game = game_of(J, ARGV[2])
if not game then return 'gone' end
redis.call('HSET', J, 'started', 1)
advance(ARGV[1], game, tonumber(ARGV[3]))
renew(ARGV[1])
return 'ok'
";

/// ARGV: job, game, positions of the game, item, encoded result. Stores the result once and
/// finishes the item; 1 when the result was new.
const RECORD: &str = r"
local fresh = store(ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[5])
finish(ARGV[4])
return fresh
";

/// ARGV: item, job, game, deliveries, error, payload, encoded failed result. Moves the item to
/// the dead-letter stream and records its game as failed.
const DEAD_LETTER: &str = r"
redis.call('XADD', 'an:dead', 'MAXLEN', '~', ARGV[8], '*', 'item', ARGV[1], 'job', ARGV[2],
  'game', ARGV[3], 'deliveries', ARGV[4], 'error', ARGV[5], 'payload', ARGV[6])
store(ARGV[2], ARGV[3], 0, ARGV[7])
redis.call('DEL', 'an:err:' .. ARGV[1])
finish(ARGV[1])
return 1
";

/// ARGV: item, consumer, job, game, payload. Puts an item back as a fresh entry (a worker
/// stopping gracefully), if the consumer still owns it.
const REQUEUE: &str = r"
if not owns(ARGV[1], ARGV[2]) then return 0 end
redis.call('XADD', WORK, '*', 'job', ARGV[3], 'game', ARGV[4], 'item', ARGV[5])
finish(ARGV[1])
return 1
";

/// ARGV: item. Finishes an item with nothing to record (its job was cancelled or expired).
const DROP: &str = "finish(ARGV[1]) return 1";

fn script(body: &str) -> Script {
    Script::new(&format!("{PRELUDE}{body}"))
}

/// The scripts, loaded once per connection.
#[derive(Debug)]
struct Scripts {
    submit: Script,
    cancel: Script,
    heartbeat: Script,
    record: Script,
    dead: Script,
    requeue: Script,
    drop: Script,
}

impl Scripts {
    fn new() -> Scripts {
        Scripts {
            submit: script(SUBMIT),
            cancel: script(CANCEL),
            heartbeat: script(HEARTBEAT),
            record: script(RECORD),
            dead: script(DEAD_LETTER),
            requeue: script(REQUEUE),
            drop: script(DROP),
        }
    }

    fn all() -> Vec<Script> {
        [
            SUBMIT,
            CANCEL,
            HEARTBEAT,
            RECORD,
            DEAD_LETTER,
            REQUEUE,
            DROP,
        ]
        .into_iter()
        .map(script)
        .collect()
    }
}

fn unavailable(e: redis::RedisError) -> ApiError {
    ApiError::Unavailable(format!("the job store (Redis) is unavailable: {e}"))
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

/// What a worker reads of an item's job: `cancelled`, `depth`, `nodes`, `hash`.
type ItemJob = (Option<String>, Option<u32>, Option<u64>, Option<usize>);

/// The service's side of jobs on Redis: submission, status, results, cancellation. Workers
/// are [`run_workers`].
pub struct RedisJobs {
    conn: Arc<OnceLock<ConnectionManager>>,
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

    /// [`RedisJobs::open`], waiting up to 10 s for the connection (tests and tools).
    ///
    /// # Errors
    /// A malformed URL, or no connection in time.
    pub async fn connect(url: &str, config: BatchConfig) -> Result<RedisJobs, String> {
        let redis = RedisConfig {
            url: url.to_owned(),
            password: None,
        };
        let jobs = RedisJobs::open(&redis, config)?;
        if wait_connected(&jobs.conn, Duration::from_secs(10)).await {
            Ok(jobs)
        } else {
            Err("cannot connect to Redis".into())
        }
    }

    fn conn(&self) -> Result<ConnectionManager, ApiError> {
        self.conn.get().cloned().ok_or_else(|| {
            ApiError::Unavailable("the job store is not connected to Redis yet".into())
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
    ) -> Result<pb::SubmitJobResponse, ApiError> {
        // Exactly one is set (decode_job): a depth, or a node count.
        let (depth, nodes) = (
            spec.limits.depth.unwrap_or(0),
            spec.limits.nodes.unwrap_or(0),
        );
        let ttl_ms = u64::try_from(self.config.ttl.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        let mut call = self.scripts.submit.prepare_invoke();
        call.arg(caller.request_key(request_id))
            .arg(format!("{fingerprint:016x}"))
            .arg(spec.games.len())
            .arg(spec.positions())
            .arg(ttl_ms)
            .arg(self.config.max_jobs)
            .arg(self.config.max_positions)
            .arg(depth)
            .arg(nodes)
            .arg(spec.hash_mib)
            .arg(caller.hex());
        for game in &spec.games {
            call.arg(game.to_item());
        }
        let (what, detail): (String, String) = call
            .invoke_async(&mut self.conn()?)
            .await
            .map_err(unavailable)?;
        match what.as_str() {
            "new" | "duplicate" => Ok(pb::SubmitJobResponse {
                status: Some(self.status(caller, &detail).await?),
                duplicate: what == "duplicate",
            }),
            "conflict" => Err(ApiError::AlreadyExists(format!(
                "request_id {} was used for another job",
                arbiter_kit::error::quote(request_id)
            ))),
            "jobs" => Err(ApiError::exhausted(
                "",
                "the job store holds its maximum of jobs; retry later",
            )),
            _ => Err(ApiError::exhausted(
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
    pub async fn status(&self, caller: &Caller, id: &str) -> Result<pb::JobStatus, ApiError> {
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
    ) -> Result<watch::Receiver<pb::JobStatus>, ApiError> {
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
                        let end = ended(now.state);
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
                    Err(ApiError::NotFound(_)) => return,
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
    ) -> Result<(pb::JobStatus, Vec<pb::GameResult>), ApiError> {
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
                prost::Message::decode(bytes.as_slice())
                    .map_err(|e| ApiError::DataLoss(format!("a stored result cannot be read: {e}")))
            })
            .collect::<Result<_, _>>()?;
        Ok((status, games))
    }

    /// Cancels `caller`'s job (see [`super::JobQueue::cancel`]): workers see it at their next
    /// heartbeat, and drop its items not yet started as they reach them.
    pub async fn cancel(&self, caller: &Caller, id: &str) -> Result<pb::JobStatus, ApiError> {
        let outcome: i64 = self
            .scripts
            .cancel
            .prepare_invoke()
            .arg(id)
            .arg(caller.hex())
            .invoke_async(&mut self.conn()?)
            .await
            .map_err(unavailable)?;
        if outcome < 0 {
            return Err(not_found(id));
        }
        self.status(caller, id).await
    }
}

/// How a worker process takes and keeps items.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerConfig {
    /// Games analysed at once by this process (one engine thread each).
    pub workers: usize,
    /// How long an item may go without its worker's heartbeat before another worker claims it.
    /// The heartbeat comes every third of it (at most every second).
    pub claim_idle: Duration,
    /// Deliveries after which an item is given up on: the next one sends it to the
    /// dead-letter stream.
    pub max_deliveries: u32,
}

impl Default for WorkerConfig {
    fn default() -> WorkerConfig {
        WorkerConfig {
            workers: 1,
            claim_idle: Duration::from_secs(30),
            max_deliveries: 3,
        }
    }
}

impl WorkerConfig {
    fn heartbeat(&self) -> Duration {
        (self.claim_idle / 3).clamp(Duration::from_millis(10), Duration::from_secs(1))
    }
}

/// What a worker shares with its siblings.
struct Ctx {
    client: redis::Client,
    config: WorkerConfig,
    scripts: Scripts,
    time: Arc<dyn TimeSource>,
}

/// Runs `config.workers` workers on the job queue in Redis until `shutdown` turns true. Each
/// takes one item at a time: a new one, or one abandoned for the claim timeout. On shutdown the
/// games being analysed stop and their items are put back for other workers; this returns when
/// every worker has stopped (within about a second, plus one heartbeat).
///
/// # Errors
/// A malformed Redis URL. Redis being unreachable is not an error: workers retry.
pub async fn run_workers(
    redis: &RedisConfig,
    config: WorkerConfig,
    time: Arc<dyn TimeSource>,
    shutdown: watch::Receiver<bool>,
) -> Result<(), String> {
    let ctx = Arc::new(Ctx {
        client: redis.client()?,
        config,
        scripts: Scripts::new(),
        time,
    });
    // Unique among the group's consumers: a consumer name is the owner of its pending items.
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "worker".into());
    static STARTS: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "{host}-{}-{:x}-{}",
        std::process::id(),
        arbiter_timekeeping::process_now(),
        STARTS.fetch_add(1, Ordering::Relaxed)
    );
    tracing::info!(
        workers = ctx.config.workers.max(1),
        consumer = %name,
        redis = ?redis,
        "analysis workers starting"
    );
    // A set: dropping this future (the process dying, or a test killing a worker) aborts
    // every worker with it, leaving their items pending as a killed process would.
    let mut slots = tokio::task::JoinSet::new();
    for i in 0..ctx.config.workers.max(1) {
        slots.spawn(slot(
            Arc::clone(&ctx),
            format!("{name}-{i}"),
            shutdown.clone(),
        ));
    }
    while slots.join_next().await.is_some() {}
    Ok(())
}

/// Sleeps for `d`, or less if shutdown begins.
async fn pause(d: Duration, shutdown: &mut watch::Receiver<bool>) {
    tokio::select! {
        () = tokio::time::sleep(d) => {}
        () = async { let _ = shutdown.wait_for(|down| *down).await; } => {}
    }
}

async fn connect(client: &redis::Client) -> redis::RedisResult<ConnectionManager> {
    // Reads block up to BLOCK_MS: the response timeout must outlast them.
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Duration::from_secs(2))
        .set_response_timeout(Duration::from_millis(BLOCK_MS + 2_000))
        .set_number_of_retries(2)
        .set_max_delay(500);
    let mut c = ConnectionManager::new_with_config(client.clone(), config).await?;
    ensure_group(&mut c).await?;
    Ok(c)
}

/// Creates the stream and its group unless they exist.
async fn ensure_group(c: &mut ConnectionManager) -> redis::RedisResult<()> {
    let made: redis::RedisResult<()> = redis::cmd("XGROUP")
        .arg("CREATE")
        .arg(WORK)
        .arg(GROUP)
        .arg("0")
        .arg("MKSTREAM")
        .query_async(c)
        .await;
    match made {
        Err(e) if e.code() == Some("BUSYGROUP") => Ok(()),
        other => other,
    }
}

/// One worker: a connection of its own (its reads block), one item at a time.
async fn slot(ctx: Arc<Ctx>, consumer: String, mut shutdown: watch::Receiver<bool>) {
    let mut conn: Option<ConnectionManager> = None;
    let mut backoff = Duration::from_millis(100);
    loop {
        if *shutdown.borrow() {
            return;
        }
        let mut c = match &conn {
            Some(c) => c.clone(),
            None => match connect(&ctx.client).await {
                Ok(c) => {
                    tracing::info!(consumer, "analysis worker connected to Redis");
                    backoff = Duration::from_millis(100);
                    conn = Some(c.clone());
                    c
                }
                Err(e) => {
                    tracing::warn!(error = %e, "analysis worker: cannot reach Redis; retrying");
                    pause(backoff, &mut shutdown).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                    continue;
                }
            },
        };
        match take(&ctx, &mut c, &consumer).await {
            Ok(Some(taken)) => work(&ctx, &mut c, &consumer, taken, &shutdown).await,
            Ok(None) => {}
            Err(e) => {
                if e.code() == Some("NOGROUP") {
                    // The stream was deleted (Redis flushed or replaced): make it again.
                    let _ = ensure_group(&mut c).await;
                } else {
                    tracing::warn!(error = %e, "analysis worker: reading the queue failed");
                    pause(Duration::from_secs(1), &mut shutdown).await;
                }
            }
        }
    }
}

/// An item taken, with the number of times it was delivered (this time included).
struct Taken {
    entry: StreamId,
    deliveries: usize,
}

impl Taken {
    fn text(&self, field: &str) -> String {
        self.entry.get::<String>(field).unwrap_or_default()
    }

    fn payload(&self) -> Vec<u8> {
        self.entry.get::<Vec<u8>>("item").unwrap_or_default()
    }
}

/// An item abandoned for the claim timeout, else a new one (waiting up to [`BLOCK_MS`]).
async fn take(
    ctx: &Ctx,
    c: &mut ConnectionManager,
    consumer: &str,
) -> redis::RedisResult<Option<Taken>> {
    let idle = u64::try_from(ctx.config.claim_idle.as_millis()).unwrap_or(u64::MAX);
    let claimed: StreamAutoClaimReply = redis::cmd("XAUTOCLAIM")
        .arg(WORK)
        .arg(GROUP)
        .arg(consumer)
        .arg(idle)
        .arg("0-0")
        .arg("COUNT")
        .arg(1)
        .query_async(c)
        .await?;
    if let Some(entry) = claimed.claimed.into_iter().next() {
        let pending: StreamPendingCountReply = redis::cmd("XPENDING")
            .arg(WORK)
            .arg(GROUP)
            .arg(&entry.id)
            .arg(&entry.id)
            .arg(1)
            .query_async(c)
            .await?;
        let deliveries = pending.ids.first().map_or(1, |p| p.times_delivered);
        return Ok(Some(Taken { entry, deliveries }));
    }
    let read: Option<StreamReadReply> = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg(GROUP)
        .arg(consumer)
        .arg("COUNT")
        .arg(1)
        .arg("BLOCK")
        .arg(BLOCK_MS)
        .arg("STREAMS")
        .arg(WORK)
        .arg(">")
        .query_async(c)
        .await?;
    Ok(read
        .and_then(|r| r.keys.into_iter().next())
        .and_then(|k| k.ids.into_iter().next())
        .map(|entry| Taken {
            entry,
            deliveries: 1,
        }))
}

/// Why a game's analysis stopped before its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Halt {
    /// The job was cancelled or expired: the item is dropped.
    Unwanted,
    /// Another worker holds the item now: leave it to them.
    Lost,
    /// This worker is shutting down: the item goes back.
    Shutdown,
}

/// Records that the item's analysis failed (for its dead-letter entry), leaving it pending: it
/// is claimed again after the claim timeout.
async fn failed(c: &mut ConnectionManager, taken: &Taken, error: &str) {
    tracing::warn!(item = %taken.entry.id, error, "analysis worker: an item failed");
    let _: redis::RedisResult<()> = redis::cmd("SET")
        .arg(format!("an:err:{}", taken.entry.id))
        .arg(error)
        .arg("PX")
        .arg(ERROR_TTL_MS)
        .query_async(c)
        .await;
}

fn failed_result(game: &str, error: &str) -> Vec<u8> {
    prost::Message::encode_to_vec(&pb::GameResult {
        index: game.parse().unwrap_or(0),
        error: format!("analysis failed: {error}"),
        ..pb::GameResult::default()
    })
}

/// Works on one item: dead-letters it, drops it, or analyses its game with heartbeats and
/// records the result.
async fn work(
    ctx: &Ctx,
    c: &mut ConnectionManager,
    consumer: &str,
    taken: Taken,
    shutdown: &watch::Receiver<bool>,
) {
    let (item, job, game) = (
        taken.entry.id.clone(),
        taken.text("job"),
        taken.text("game"),
    );
    if taken.deliveries > ctx.config.max_deliveries as usize {
        let last: Option<String> = redis::cmd("GET")
            .arg(format!("an:err:{item}"))
            .query_async(c)
            .await
            .unwrap_or(None);
        let error = last
            .unwrap_or_else(|| "its workers stopped or were lost before finishing it".to_owned());
        tracing::warn!(
            item,
            job,
            game,
            deliveries = taken.deliveries,
            error,
            "analysis worker: an item goes to the dead-letter stream"
        );
        let r: redis::RedisResult<i64> = ctx
            .scripts
            .dead
            .prepare_invoke()
            .arg(&item)
            .arg(&job)
            .arg(&game)
            .arg(taken.deliveries)
            .arg(&error)
            .arg(taken.payload())
            .arg(failed_result(
                &game,
                &format!("given up after {} deliveries: {error}", taken.deliveries),
            ))
            .arg(DEAD_MAXLEN)
            .invoke_async(c)
            .await;
        if let Err(e) = r {
            tracing::warn!(error = %e, "analysis worker: dead-lettering failed");
        }
        return;
    }
    let meta: redis::RedisResult<ItemJob> = redis::cmd("HMGET")
        .arg(format!("an:j:{job}"))
        .arg(&["cancelled", "depth", "nodes", "hash"])
        .query_async(c)
        .await;
    let (cancelled, depth, nodes, hash) = match meta {
        Ok(m) => m,
        Err(e) => {
            // Redis failing now: the item stays pending and is claimed again later.
            tracing::warn!(error = %e, "analysis worker: cannot read an item's job");
            return;
        }
    };
    if cancelled.as_deref() != Some("0") {
        // Cancelled, or expired (or never a job): nothing to record.
        let _: redis::RedisResult<i64> = ctx
            .scripts
            .drop
            .prepare_invoke()
            .arg(&item)
            .invoke_async(c)
            .await;
        return;
    }
    let limits = match (depth.unwrap_or(0), nodes.unwrap_or(0)) {
        (d @ 1.., _) => Limits::depth(d),
        (_, n @ 1..) => Limits::nodes(n),
        _ => return failed(c, &taken, "the job has no per-ply limit").await,
    };
    let Ok(index) = game.parse::<usize>() else {
        return failed(c, &taken, "the item's game index is not a number").await;
    };
    let spec = match Game::from_item(&taken.payload()) {
        Ok(g) => JobSpec {
            games: vec![g],
            limits,
            hash_mib: hash.unwrap_or(16).clamp(1, 4096),
        },
        Err(e) => return failed(c, &taken, &e).await,
    };
    let positions = spec.positions();
    let stop = Arc::new(AtomicBool::new(false));
    // Dropped if this task is: a worker killed mid-game leaves no search running.
    let _guard = RaiseOnDrop(Arc::clone(&stop));
    let done = Arc::new(AtomicU64::new(0));
    let mut analysis = {
        let (stop, done, time) = (Arc::clone(&stop), Arc::clone(&done), Arc::clone(&ctx.time));
        tokio::task::spawn_blocking(move || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                analyse_game(index, &spec.games[0], &spec, &stop, &*time, &mut || {
                    done.fetch_add(1, Ordering::Relaxed);
                })
            }))
        })
    };
    let mut tick = tokio::time::interval(ctx.config.heartbeat());
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut shutdown = shutdown.clone();
    let mut halt: Option<Halt> = None;
    let outcome = loop {
        tokio::select! {
            r = &mut analysis => break r,
            _ = tick.tick() => {
                let beat: redis::RedisResult<String> = ctx
                    .scripts
                    .heartbeat
                    .prepare_invoke()
                    .arg(&job)
                    .arg(&game)
                    .arg(done.load(Ordering::Relaxed))
                    .arg(&item)
                    .arg(consumer)
                    .invoke_async(c)
                    .await;
                let why = match beat.as_deref() {
                    Ok("lost") => Some(Halt::Lost),
                    Ok("gone" | "cancelled") => Some(Halt::Unwanted),
                    Ok(_) => None,
                    Err(e) => {
                        // A blip: keep going; past the claim timeout another worker takes
                        // the item and the next heartbeat says `lost`.
                        tracing::warn!(error = %e, "analysis worker: a heartbeat failed");
                        None
                    }
                };
                if let Some(why) = why {
                    halt.get_or_insert(why);
                    stop.store(true, Ordering::Relaxed);
                }
            }
            // Only whether it happened: the borrow it returns must not live across an await.
            () = async { let _ = shutdown.wait_for(|down| *down).await; }, if halt.is_none() => {
                halt = Some(Halt::Shutdown);
                stop.store(true, Ordering::Relaxed);
            }
        }
    };
    match outcome {
        Ok(Ok(Some(result))) => {
            let encoded = prost::Message::encode_to_vec(&result);
            // Redis may be away for a moment: retry for as long as the item is surely still
            // this worker's (up to the claim timeout, at most 10 s).
            let until =
                tokio::time::Instant::now() + ctx.config.claim_idle.min(Duration::from_secs(10));
            loop {
                let r: redis::RedisResult<i64> = ctx
                    .scripts
                    .record
                    .prepare_invoke()
                    .arg(&job)
                    .arg(&game)
                    .arg(positions)
                    .arg(&item)
                    .arg(&encoded)
                    .invoke_async(c)
                    .await;
                match r {
                    Ok(_) => break,
                    Err(e) if tokio::time::Instant::now() < until => {
                        tracing::warn!(error = %e, "analysis worker: recording a result failed; retrying");
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                    Err(e) => {
                        // Not recorded: the item stays pending, and is analysed again after
                        // the claim timeout (and recorded once).
                        tracing::warn!(error = %e, "analysis worker: recording a result failed; giving the game up");
                        break;
                    }
                }
            }
        }
        Ok(Ok(None)) => match halt {
            Some(Halt::Unwanted) => {
                let _: redis::RedisResult<i64> = ctx
                    .scripts
                    .drop
                    .prepare_invoke()
                    .arg(&item)
                    .invoke_async(c)
                    .await;
            }
            Some(Halt::Shutdown) => {
                let _: redis::RedisResult<i64> = ctx
                    .scripts
                    .requeue
                    .prepare_invoke()
                    .arg(&item)
                    .arg(consumer)
                    .arg(&job)
                    .arg(&game)
                    .arg(taken.payload())
                    .invoke_async(c)
                    .await;
            }
            Some(Halt::Lost) | None => {}
        },
        Ok(Err(_)) | Err(_) => {
            failed(c, &taken, "internal error: the analysis panicked").await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let status = jobs
            .submit(&caller, "r", &spec, 7)
            .await
            .unwrap()
            .status
            .unwrap();
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
                s.heartbeat
                    .prepare_invoke()
                    .arg(&job)
                    .arg(0)
                    .arg(0)
                    .arg(&item)
                    .arg(consumer)
                    .invoke_async::<String>(&mut c)
                    .await
                    .unwrap()
            }
        };
        assert_eq!(beat("first").await, "ok");
        assert_eq!(beat("second").await, "lost", "not the second's item");
        let result = prost::Message::encode_to_vec(&pb::GameResult::default());
        let record = |game: u32| {
            let (mut c, item, job, s, result) = (
                hc.clone(),
                item.clone(),
                status.job_id.clone(),
                &jobs.scripts,
                result.clone(),
            );
            async move {
                s.record
                    .prepare_invoke()
                    .arg(&job)
                    .arg(game)
                    .arg(1)
                    .arg(&item)
                    .arg(&result)
                    .invoke_async::<i64>(&mut c)
                    .await
                    .unwrap()
            }
        };
        assert_eq!(record(0).await, 1, "new");
        assert_eq!(record(0).await, 0, "recorded before: not counted again");
        let done = jobs.status(&caller, &status.job_id).await.unwrap();
        assert_eq!(
            (done.state, done.games_done, done.positions_done),
            (pb::JobState::Done as i32, 1, 1)
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
