//! The analysis service's configuration: its search pool and the caps on what one request may
//! ask for. Values come from flags and environment variables, read in `main` only
//! ([`AnalysisArgs`] is the flag definition `arbiter-analysis` and `arbiter serve` share).

use std::sync::Arc;

use crate::batch::BatchConfig;
use crate::batch::redis::WorkerConfig;
use crate::caps::{Caps, MULTIPV_LIMIT};
use crate::engines::EnginesConfig;
use arbiter_core::Variant;
use arbiter_engine::{SystemTime, TimeSource};
use arbiter_redis_conn::{RedisArgs, RedisConfig};
use arbiter_uci_client::EngineSpec;
use std::time::Duration;

/// The pool searches run on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolConfig {
    /// Engine threads: searches running at once.
    pub threads: usize,
    /// Requests that may wait for a thread, all clients together; more are refused
    /// (`RESOURCE_EXHAUSTED`).
    pub max_queue: usize,
    /// Requests one client may have waiting; more are refused (`RESOURCE_EXHAUSTED`).
    pub max_queue_per_client: usize,
}

impl Default for PoolConfig {
    fn default() -> PoolConfig {
        PoolConfig {
            threads: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            max_queue: 64,
            max_queue_per_client: 8,
        }
    }
}

/// Everything the analysis service is configured with.
#[derive(Clone)]
pub struct AnalysisConfig {
    /// Per-request caps.
    pub caps: Caps,
    /// The search pool.
    pub pool: PoolConfig,
    /// Batch jobs.
    pub batch: BatchConfig,
    /// Where batch jobs are queued: Redis Streams, shared with other replicas and worker
    /// processes; `None`: in this process.
    pub redis: Option<RedisConfig>,
    /// The clock searches read their time limits on (the system's monotonic clock, or a test's).
    pub time: Arc<dyn TimeSource>,
    /// External UCI engines and the default engine of each variant.
    pub engines: EnginesConfig,
}

impl std::fmt::Debug for AnalysisConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnalysisConfig")
            .field("caps", &self.caps)
            .field("pool", &self.pool)
            .field("batch", &self.batch)
            .field("redis", &self.redis)
            .field("engines", &self.engines)
            .finish_non_exhaustive()
    }
}

impl Default for AnalysisConfig {
    fn default() -> AnalysisConfig {
        AnalysisConfig {
            caps: Caps::default(),
            pool: PoolConfig::default(),
            batch: BatchConfig::default(),
            redis: None,
            time: Arc::new(SystemTime::new()),
            engines: EnginesConfig::default(),
        }
    }
}

/// Flags of the analysis service (each also readable from the environment).
#[derive(clap::Args, Debug, Clone)]
pub struct AnalysisArgs {
    /// Engine threads: searches running at once (default: the number of CPUs).
    #[arg(long, env = "ARBITER_ANALYSIS_THREADS")]
    pub analysis_threads: Option<usize>,
    /// Analysis requests that may wait for an engine thread; more are refused
    /// (RESOURCE_EXHAUSTED).
    #[arg(long, env = "ARBITER_ANALYSIS_QUEUE", default_value_t = PoolConfig::default().max_queue)]
    pub analysis_queue: usize,
    /// Analysis requests one client may have waiting; more are refused (RESOURCE_EXHAUSTED).
    #[arg(long, env = "ARBITER_ANALYSIS_QUEUE_PER_CLIENT", default_value_t = PoolConfig::default().max_queue_per_client)]
    pub analysis_queue_per_client: usize,
    /// The most nodes one search may visit (the node limit of requests that set none).
    #[arg(long, env = "ARBITER_ANALYSIS_MAX_NODES", default_value_t = Caps::default().max_nodes)]
    pub analysis_max_nodes: u64,
    /// The longest one search may think, in ms (the time limit of requests that set none).
    #[arg(long, env = "ARBITER_ANALYSIS_MAX_TIME_MS", default_value_t = Caps::default().max_time_ms)]
    pub analysis_max_time_ms: u64,
    /// The most MultiPV lines one request may ask for (1 to 64).
    #[arg(long, env = "ARBITER_ANALYSIS_MAX_MULTIPV", default_value_t = Caps::default().max_multipv)]
    pub analysis_max_multipv: u32,
    /// Transposition table of each search, in MiB.
    #[arg(long, env = "ARBITER_ANALYSIS_HASH_MIB", default_value_t = Caps::default().hash_mib)]
    pub analysis_hash_mib: usize,
    /// The most moves one request may play before the analysed position.
    #[arg(long, env = "ARBITER_ANALYSIS_MAX_MOVES", default_value_t = Caps::default().max_moves)]
    pub analysis_max_moves: usize,
    /// Batch worker threads: games analysed at once in this process, beside the live threads
    /// (0 leaves the analysis to remote workers over gRPC and, with Redis, to worker
    /// processes).
    #[arg(long, env = "ARBITER_ANALYSIS_BATCH_WORKERS", default_value_t = BatchConfig::default().workers)]
    pub analysis_batch_workers: usize,
    /// The most games in one batch job.
    #[arg(long, env = "ARBITER_ANALYSIS_MAX_JOB_GAMES", default_value_t = BatchConfig::default().max_games)]
    pub analysis_max_job_games: usize,
    /// The most moves in one game of a batch job.
    #[arg(long, env = "ARBITER_ANALYSIS_MAX_JOB_PLIES", default_value_t = BatchConfig::default().max_plies)]
    pub analysis_max_job_plies: usize,
    /// Batch jobs held at once (running, or kept for their results); more are refused
    /// (RESOURCE_EXHAUSTED).
    #[arg(long, env = "ARBITER_ANALYSIS_MAX_JOBS", default_value_t = BatchConfig::default().max_jobs)]
    pub analysis_max_jobs: usize,
    /// Positions held at once by all batch jobs together (each keeps its result in memory);
    /// a job that would pass it is refused (RESOURCE_EXHAUSTED).
    #[arg(long, env = "ARBITER_ANALYSIS_MAX_HELD_POSITIONS", default_value_t = BatchConfig::default().max_positions)]
    pub analysis_max_held_positions: u64,
    /// Seconds a batch job and its results are kept after its last progress.
    #[arg(long, env = "ARBITER_ANALYSIS_JOB_TTL_SECS", default_value_t = BatchConfig::default().ttl.as_secs())]
    pub analysis_job_ttl_secs: u64,
    /// How long a remote worker's lease on a game lasts (AcquireWork), in ms: a game whose
    /// result has not come by then returns to the queue.
    #[arg(long = "work-lease-ms", env = "ARBITER_ANALYSIS_WORK_LEASE_MS", default_value_t = crate::batch::DEFAULT_WORK_LEASE_MS)]
    pub analysis_work_lease_ms: u64,
    /// With Redis: how often a WatchJob stream reads the job's status, in ms.
    #[arg(long, env = "ARBITER_ANALYSIS_WATCH_POLL_MS", default_value_t = 250)]
    pub analysis_watch_poll_ms: u64,
    /// How this process's batch workers take items from Redis.
    #[command(flatten)]
    pub queue: QueueArgs,
    /// External UCI engines.
    #[command(flatten)]
    pub engines: EngineArgs,
}

/// External UCI engines (`--engine`) and which engine serves each variant by default
/// (`--default-engine`): flags of the analysis service and of worker processes, whose engines
/// must carry the same names as the service's.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct EngineArgs {
    /// An external UCI engine, run as a pool of processes: `NAME=PATH[,KEY=VALUE]...`, e.g.
    /// `stockfish=/usr/games/stockfish,processes=2,threads=1,hash=64`. Keys: `processes` (the
    /// pool's size, default 1), `threads` and `hash` (UCI Threads and Hash MiB), `timeout`
    /// (seconds of silence in a search before the process counts as hung, default 30),
    /// `variants` (`+`-separated; default: all it plays); any other key is a UCI option
    /// (`Skill Level=20`). Repeat the flag for several engines (ARBITER_ENGINES: separated by `;`).
    #[arg(long = "engine", value_name = "NAME=PATH[,KEY=VALUE]...", env = "ARBITER_ENGINES", value_delimiter = ';', value_parser = parse_engine)]
    pub engine: Vec<EngineSpec>,
    /// The engine that serves a variant when a request names none: `VARIANT=NAME`, e.g.
    /// `chess=stockfish` (default: the built-in engine, `arbiter`, for every variant). Repeat
    /// for several variants (ARBITER_DEFAULT_ENGINES: separated by `;`).
    #[arg(long = "default-engine", value_name = "VARIANT=NAME", env = "ARBITER_DEFAULT_ENGINES", value_delimiter = ';', value_parser = parse_default)]
    pub default_engine: Vec<(Variant, String)>,
}

fn parse_engine(text: &str) -> Result<EngineSpec, String> {
    EngineSpec::parse(text).map_err(|e| e.to_string())
}

fn parse_default(text: &str) -> Result<(Variant, String), String> {
    let (variant, name) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?}: expected VARIANT=NAME, e.g. chess=stockfish"))?;
    let variant: Variant = variant.trim().parse().map_err(|e| format!("{e}"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("{text:?}: the engine's name is empty"));
    }
    Ok((variant, name.to_owned()))
}

impl EngineArgs {
    /// The engine configuration these flags describe.
    pub fn config(&self) -> EnginesConfig {
        EnginesConfig {
            engines: self.engine.clone(),
            defaults: self.default_engine.clone(),
        }
    }
}

/// How workers take items from the Redis job queue (service and worker processes alike).
#[derive(clap::Args, Debug, Clone)]
pub struct QueueArgs {
    /// With Redis: ms an item may go without its worker's heartbeat before another worker
    /// claims it (the heartbeat comes every third of it, at most every second).
    #[arg(long, env = "ARBITER_ANALYSIS_CLAIM_IDLE_MS", default_value_t = 30_000)]
    pub analysis_claim_idle_ms: u64,
    /// With Redis: deliveries after which an item goes to the dead-letter stream.
    #[arg(long, env = "ARBITER_ANALYSIS_MAX_DELIVERIES", default_value_t = 3)]
    pub analysis_max_deliveries: u32,
}

impl QueueArgs {
    /// The worker configuration these flags describe, for `workers` workers.
    pub fn config(&self, workers: usize) -> WorkerConfig {
        WorkerConfig {
            workers,
            claim_idle: Duration::from_millis(self.analysis_claim_idle_ms.max(30)),
            max_deliveries: self.analysis_max_deliveries.max(1),
        }
    }
}

/// Flags of an analysis worker process (`arbiter-worker`, `arbiter worker`): Redis, how many
/// games at once, and where health is served.
#[derive(clap::Args, Debug, Clone)]
pub struct WorkerArgs {
    /// Where the job queue is (required).
    #[command(flatten)]
    pub redis: RedisArgs,
    /// Games analysed at once (default: the number of CPUs).
    #[arg(long, env = "ARBITER_WORKERS")]
    pub workers: Option<usize>,
    /// How items are taken.
    #[command(flatten)]
    pub queue: QueueArgs,
    /// External UCI engines: the same names as the service's, for jobs that name one.
    #[command(flatten)]
    pub engines: EngineArgs,
    /// Serve gRPC health (only) on this address: SERVING while Redis answers. Without it the
    /// worker opens no port.
    #[arg(long, env = "ARBITER_HEALTH_LISTEN")]
    pub health_listen: Option<std::net::SocketAddr>,
    /// Prometheus metrics (`--metrics-listen`).
    #[command(flatten)]
    pub metrics: arbiter_kit::metrics::MetricsArgs,
    /// How log lines are written (`--log-format`).
    #[command(flatten)]
    pub log: arbiter_kit::LogArgs,
}

impl WorkerArgs {
    /// The Redis configuration (reading the password file) and the workers'.
    ///
    /// # Errors
    /// No `--redis-url`, or an unreadable password file.
    pub fn load(&self) -> Result<(RedisConfig, WorkerConfig), String> {
        let redis = self
            .redis
            .load()?
            .ok_or("a worker needs --redis-url (or ARBITER_REDIS_URL): the queue it serves")?;
        let workers = self
            .workers
            .unwrap_or_else(|| PoolConfig::default().threads)
            .max(1);
        Ok((redis, self.queue.config(workers)))
    }
}

impl AnalysisArgs {
    /// The configuration these flags describe, on the system clock, with batch jobs in
    /// `redis` (`None`: in process).
    pub fn config(&self, redis: Option<RedisConfig>) -> AnalysisConfig {
        let defaults = AnalysisConfig::default();
        AnalysisConfig {
            caps: Caps {
                max_nodes: self.analysis_max_nodes.max(1),
                max_time_ms: self.analysis_max_time_ms.max(1),
                max_multipv: self.analysis_max_multipv.clamp(1, MULTIPV_LIMIT),
                max_moves: self.analysis_max_moves,
                hash_mib: self.analysis_hash_mib.clamp(1, 65_536),
            },
            pool: PoolConfig {
                threads: self
                    .analysis_threads
                    .unwrap_or(defaults.pool.threads)
                    .max(1),
                max_queue: self.analysis_queue,
                max_queue_per_client: self.analysis_queue_per_client,
            },
            batch: BatchConfig {
                workers: self.analysis_batch_workers,
                max_games: self.analysis_max_job_games.max(1),
                max_plies: self.analysis_max_job_plies,
                max_jobs: self.analysis_max_jobs.max(1),
                max_positions: self.analysis_max_held_positions.max(1),
                ttl: Duration::from_secs(self.analysis_job_ttl_secs.max(1)),
                watch_poll: Duration::from_millis(self.analysis_watch_poll_ms.max(10)),
                queue: self.queue.config(self.analysis_batch_workers),
                work_lease: Duration::from_millis(
                    self.analysis_work_lease_ms
                        .clamp(100, crate::batch::MAX_WORK_LEASE_MS),
                ),
                ..BatchConfig::default()
            },
            redis,
            time: defaults.time,
            engines: self.engines.config(),
        }
    }
}
