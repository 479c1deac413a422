//! The worker side of the Redis job queue: [`run_workers`] takes items from the stream with
//! the consumer group, keeps each its own with heartbeats while it analyses it, records the
//! result once, and hands items back on shutdown (see the parent module for the keys and the
//! protocol).

use super::super::{Game, GameResult, JobSpec, analyse_game, record};
use super::layout::Layout;
use super::{BLOCK_MS, DEAD_MAXLEN, ERROR_TTL_MS, GROUP, ItemJob, QUEUED, Scripts};
use crate::engines::EngineRegistry;
use arbiter_engine::{Limits, TimeSource};
use arbiter_kit::cpu::RaiseOnDrop;
use arbiter_kit::retry::{Backoff, RetryPolicy};
use arbiter_redis_conn::{Connection, RedisConfig, StoreClient};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::streams::{
    StreamAutoClaimReply, StreamId, StreamInfoGroupsReply, StreamPendingCountReply, StreamReadReply,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::watch;
use tracing::Instrument;

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
    pub(super) fn heartbeat(&self) -> Duration {
        (self.claim_idle / 3).clamp(Duration::from_millis(10), Duration::from_secs(1))
    }
}

/// What a worker shares with its siblings.
struct Ctx {
    client: StoreClient,
    layout: Layout,
    /// The group each worker's next read starts at (each read the next one).
    next_group: AtomicUsize,
    /// Counts the new jobs announced on [`QUEUED`] (a cluster): an idle worker waits for it to
    /// change, or for its pause to end.
    queued: watch::Receiver<u64>,
    config: WorkerConfig,
    scripts: Scripts,
    time: Arc<dyn TimeSource>,
    engines: Arc<EngineRegistry>,
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
    engines: Arc<EngineRegistry>,
    shutdown: watch::Receiver<bool>,
) -> Result<(), String> {
    let client = redis.client()?;
    let (announce, queued) = watch::channel(0u64);
    let ctx = Arc::new(Ctx {
        layout: Layout::for_cluster(client.is_cluster()),
        client,
        next_group: AtomicUsize::new(0),
        queued,
        config,
        scripts: Scripts::new(),
        time,
        engines,
    });
    // Unique among the group's consumers: a consumer name is the owner of its pending items.
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "worker".into());
    static STARTS: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "{host}-{}-{:x}-{}",
        std::process::id(),
        arbiter_kit::process_now(),
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
    slots.spawn(sweep_leases(Arc::clone(&ctx), shutdown.clone()));
    if ctx.layout.is_cluster() {
        slots.spawn(follow_queued(Arc::clone(&ctx), announce, shutdown.clone()));
    }
    if arbiter_kit::metrics::installed() {
        crate::metrics::declare_worker();
        slots.spawn(sample_stream(Arc::clone(&ctx), shutdown.clone()));
    }
    while slots.join_next().await.is_some() {}
    Ok(())
}

/// How often a worker process samples the work stream for its gauges.
const SAMPLE_EVERY: Duration = Duration::from_secs(10);

/// Samples the work stream every [`SAMPLE_EVERY`] until shutdown, for the gauges of
/// [`crate::metrics::stream`]: entries not yet delivered to the group (its lag), delivered but
/// not acknowledged, dead letters, and the jobs stored (not expired).
async fn sample_stream(ctx: Arc<Ctx>, mut shutdown: watch::Receiver<bool>) {
    let mut conn: Option<Connection> = None;
    loop {
        if conn.is_none() {
            conn = connect(&ctx).await.ok();
        }
        if let Some(c) = conn.as_mut() {
            match sample(&ctx, c).await {
                Ok((lag, pending, dead, jobs)) => crate::metrics::stream(lag, pending, dead, jobs),
                Err(e) => {
                    tracing::debug!(error = %e, "analysis worker: sampling the stream failed")
                }
            }
        }
        pause(SAMPLE_EVERY, &mut shutdown).await;
        if *shutdown.borrow() {
            return;
        }
    }
}

/// The work streams' lag and pending entries, the dead letters and the jobs stored, summed
/// over the groups (the jobs: on a cluster, the ledger's entries). A group without its consumer group
/// yet counts nothing.
async fn sample(
    ctx: &Ctx,
    c: &mut Connection,
) -> redis::RedisResult<(Option<usize>, usize, usize, usize)> {
    // The lag is unknown when any group's is (Redis cannot tell it after some deletions).
    let (mut lag, mut pending, mut dead) = (Some(0), 0, 0);
    for g in 0..ctx.layout.count() {
        let (groups, d): (StreamInfoGroupsReply, usize) = redis::pipe()
            .cmd("XINFO")
            .arg("GROUPS")
            .arg(ctx.layout.work(g))
            .cmd("XLEN")
            .arg(ctx.layout.dead(g))
            .query_async(c)
            .await?;
        if let Some(info) = groups.groups.iter().find(|i| i.name == GROUP) {
            lag = lag.zip(info.lag).map(|(a, b)| a + b);
            pending += info.pending;
        }
        dead += d;
    }
    // On a cluster, every entry of the ledger: a job counts there (as against the caps) until
    // its entry is settled after its retention, whatever the entry's time says meanwhile.
    let jobs: usize = if ctx.layout.is_cluster() {
        redis::cmd("ZCARD")
            .arg(&Layout::ledger_keys()[0])
            .query_async(c)
            .await?
    } else {
        redis::cmd("ZCOUNT")
            .arg(format!("{}jobs", ctx.layout.prefix(0)))
            .arg(arbiter_kit::process_now())
            .arg("+inf")
            .query_async(c)
            .await?
    };
    Ok((lag, pending, dead, jobs))
}

/// Sleeps for `d`, or less if shutdown begins.
async fn pause(d: Duration, shutdown: &mut watch::Receiver<bool>) {
    tokio::select! {
        () = tokio::time::sleep(d) => {}
        () = async { let _ = shutdown.wait_for(|down| *down).await; } => {}
    }
}

/// A worker's own connection, measured as the `analysis worker` store (its blocking reads
/// included: their round trips last up to the block time), with every group's stream and
/// consumer group made.
async fn connect(ctx: &Ctx) -> redis::RedisResult<Connection> {
    let mut c = match ctx.client.single() {
        Some(client) => {
            // Reads block up to BLOCK_MS: the response timeout must outlast them.
            let config = ConnectionManagerConfig::new()
                .set_connection_timeout(Duration::from_secs(2))
                .set_response_timeout(Duration::from_millis(BLOCK_MS + 2_000))
                .set_number_of_retries(2)
                .set_max_delay(500);
            let manager = ConnectionManager::new_with_config(client.clone(), config).await?;
            Connection::new(manager, "analysis worker")
        }
        // A cluster's reads do not block (they go to every group in turn).
        None => ctx.client.connect("analysis worker").await?,
    };
    for g in 0..ctx.layout.count() {
        ensure_group(&mut c, &ctx.layout.work(g)).await?;
    }
    Ok(c)
}

/// Creates the stream `work` and its group unless they exist.
pub(super) async fn ensure_group(c: &mut Connection, work: &str) -> redis::RedisResult<()> {
    let made: redis::RedisResult<()> = redis::cmd("XGROUP")
        .arg("CREATE")
        .arg(work)
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
    let mut conn: Option<Connection> = None;
    let mut backoff = Backoff::new(RetryPolicy::RECONNECT);
    // A cluster's reads do not wait for work: between empty rounds a worker waits, from 50 ms
    // up to BLOCK_MS as the queue stays empty.
    let mut idle = Duration::from_millis(50);
    let mut queued = ctx.queued.clone();
    loop {
        if *shutdown.borrow() {
            return;
        }
        let mut c = match &conn {
            Some(c) => c.clone(),
            None => match connect(&ctx).await {
                Ok(c) => {
                    tracing::info!(consumer, "analysis worker connected to Redis");
                    backoff.reset();
                    conn = Some(c.clone());
                    c
                }
                Err(e) => {
                    tracing::warn!(error = %e, "analysis worker: cannot reach Redis; retrying");
                    let down = async {
                        let _ = shutdown.wait_for(|down| *down).await;
                    };
                    backoff.wait_or(down).await;
                    continue;
                }
            },
        };
        queued.borrow_and_update();
        match take(&ctx, &mut c, &consumer).await {
            Ok(Some(taken)) => {
                idle = Duration::from_millis(50);
                work(&ctx, &mut c, &consumer, taken, &shutdown).await;
            }
            Ok(None) if ctx.layout.is_cluster() => {
                // Until the pause ends or a new job is announced (since before this round's
                // reads: one announced during them is not missed).
                let announced = async {
                    if queued.changed().await.is_err() {
                        // No more announcements (shutting down): the pause alone.
                        std::future::pending::<()>().await;
                    }
                };
                tokio::select! {
                    () = pause(idle, &mut shutdown) => {
                        idle = (idle * 2).min(Duration::from_millis(BLOCK_MS));
                    }
                    () = announced => idle = Duration::from_millis(50),
                }
            }
            Ok(None) => {}
            Err(e) => {
                if e.code() == Some("NOGROUP") {
                    // A stream was deleted (Redis flushed or replaced): make them again.
                    for g in 0..ctx.layout.count() {
                        let _ = ensure_group(&mut c, &ctx.layout.work(g)).await;
                    }
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
    /// The slot group of its stream.
    g: usize,
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

/// An item abandoned for the claim timeout, else a new one, from the groups in turn (starting
/// at the next group each time); on one Redis the read waits up to [`BLOCK_MS`] for one.
async fn take(ctx: &Ctx, c: &mut Connection, consumer: &str) -> redis::RedisResult<Option<Taken>> {
    let groups = ctx.layout.count();
    let start = ctx.next_group.fetch_add(1, Ordering::Relaxed) % groups;
    for g in (0..groups).map(|i| (start + i) % groups) {
        if let Some(taken) = take_from(ctx, c, consumer, g).await? {
            return Ok(Some(taken));
        }
    }
    Ok(None)
}

/// [`take`] from group `g`'s stream.
async fn take_from(
    ctx: &Ctx,
    c: &mut Connection,
    consumer: &str,
    g: usize,
) -> redis::RedisResult<Option<Taken>> {
    let block = (!ctx.layout.is_cluster()).then_some(BLOCK_MS);
    let read = read_entry(
        c,
        &ctx.layout.work(g),
        consumer,
        ctx.config.claim_idle,
        block,
    )
    .await?;
    Ok(read.map(|r| {
        if r.claimed {
            crate::metrics::claimed();
        }
        Taken {
            g,
            deliveries: r.delivered + tries(&r.entry),
            entry: r.entry,
        }
    }))
}

/// An entry [`read_entry`] gave a consumer.
pub(super) struct Read {
    pub(super) entry: StreamId,
    /// How many times the group has delivered it, this time included.
    pub(super) delivered: usize,
    /// Whether it was claimed from another consumer (or this one) after the claim timeout.
    pub(super) claimed: bool,
}

/// One entry of the stream `work` for `consumer` of [`GROUP`]: one left pending for
/// `claim_idle` (`XAUTOCLAIM`), else a new one, waiting up to `block` ms for it (`None`: not
/// waiting, as on a cluster and for the service's `AcquireWork`). A stream or group not made yet
/// (no worker has run; a cluster's groups are made as workers reach them; a flushed Redis) is
/// made from the stream's start. Shared by the workers and the service's remote consumer.
pub(super) async fn read_entry(
    c: &mut Connection,
    work: &str,
    consumer: &str,
    claim_idle: Duration,
    block: Option<u64>,
) -> redis::RedisResult<Option<Read>> {
    let idle = u64::try_from(claim_idle.as_millis()).unwrap_or(u64::MAX);
    let claimed: redis::RedisResult<StreamAutoClaimReply> = redis::cmd("XAUTOCLAIM")
        .arg(work)
        .arg(GROUP)
        .arg(consumer)
        .arg(idle)
        .arg("0-0")
        .arg("COUNT")
        .arg(1)
        .query_async(c)
        .await;
    let claimed = match claimed {
        Err(e) if e.code() == Some("NOGROUP") => {
            // Made from the stream's start: what is already in it is read below.
            ensure_group(c, work).await?;
            StreamAutoClaimReply::default()
        }
        other => other?,
    };
    if let Some(entry) = claimed.claimed.into_iter().next() {
        let pending: StreamPendingCountReply = redis::cmd("XPENDING")
            .arg(work)
            .arg(GROUP)
            .arg(&entry.id)
            .arg(&entry.id)
            .arg(1)
            .query_async(c)
            .await?;
        let delivered = pending.ids.first().map_or(1, |p| p.times_delivered);
        return Ok(Some(Read {
            entry,
            delivered,
            claimed: true,
        }));
    }
    let mut read = redis::cmd("XREADGROUP");
    read.arg("GROUP")
        .arg(GROUP)
        .arg(consumer)
        .arg("COUNT")
        .arg(1);
    if let Some(ms) = block {
        read.arg("BLOCK").arg(ms);
    }
    let read: redis::RedisResult<Option<StreamReadReply>> =
        read.arg("STREAMS").arg(work).arg(">").query_async(c).await;
    let read = match read {
        Err(e) if e.code() == Some("NOGROUP") => {
            ensure_group(c, work).await?;
            None
        }
        other => other?,
    };
    Ok(read
        .and_then(|r| r.keys.into_iter().next())
        .and_then(|k| k.ids.into_iter().next())
        .map(|entry| Read {
            entry,
            delivered: 1,
            claimed: false,
        }))
}

/// The deliveries of an entry's game before this entry (to remote workers whose leases
/// expired): its `tries` field, 0 when absent.
fn tries(entry: &StreamId) -> usize {
    entry
        .get::<String>("tries")
        .and_then(|t| t.parse().ok())
        .unwrap_or(0)
}

/// Ends remote workers' expired leases every second until shutdown (their games back in the
/// stream), beside the service's own sweep at each `AcquireWork`: games of remote workers that
/// died return even when no remote worker calls any more.
async fn sweep_leases(ctx: Arc<Ctx>, mut shutdown: watch::Receiver<bool>) {
    let mut conn: Option<Connection> = None;
    loop {
        if conn.is_none() {
            conn = connect(&ctx).await.ok();
        }
        if let Some(c) = conn.as_mut() {
            match super::sweep_leases(&ctx.scripts, &ctx.layout, c).await {
                Ok(n) if n > 0 => crate::metrics::leases_ended("expired", n),
                Ok(_) => {}
                Err(e) => tracing::debug!(error = %e, "analysis worker: sweeping leases failed"),
            }
        }
        pause(Duration::from_secs(1), &mut shutdown).await;
        if *shutdown.borrow() {
            return;
        }
    }
}

/// Counts the new jobs announced on [`QUEUED`] into `announce` until shutdown (a cluster,
/// whose idle workers wait between rounds of reads); resubscribes after a lost connection.
async fn follow_queued(
    ctx: Arc<Ctx>,
    announce: watch::Sender<u64>,
    shutdown: watch::Receiver<bool>,
) {
    // A message or a new subscription (after which a job may have been missed) alike: idle
    // workers look again.
    let bump = |_| announce.send_modify(|n| *n += 1);
    ctx.client
        .subscriber()
        .follow(QUEUED, "analysis worker, new jobs", bump, shutdown)
        .await;
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
async fn failed(ctx: &Ctx, c: &mut Connection, taken: &Taken, error: &str) {
    tracing::warn!(item = %taken.entry.id, error, "analysis worker: an item failed");
    crate::metrics::game("failed");
    let _: redis::RedisResult<()> = redis::cmd("SET")
        .arg(format!(
            "{}err:{}",
            ctx.layout.prefix(taken.g),
            taken.entry.id
        ))
        .arg(error)
        .arg("PX")
        .arg(ERROR_TTL_MS)
        .query_async(c)
        .await;
}

fn failed_result(game: &str, error: &str) -> String {
    record::encode_result(&GameResult {
        index: game.parse().unwrap_or(0),
        error: format!("analysis failed: {error}"),
        ..GameResult::default()
    })
}

/// Finishes an item with nothing to record (its job was cancelled or expired).
async fn drop_item(ctx: &Ctx, c: &mut Connection, g: usize, item: &str) {
    crate::metrics::game("dropped");
    let mut args = ctx.scripts.drop.args();
    args.set("item", item);
    let keys = ctx.layout.script_keys(g);
    let _: redis::RedisResult<i64> = ctx.scripts.drop.call(c, keys, args).await;
}

/// Works on one item: dead-letters it, drops it, or analyses its game with heartbeats and
/// records the result.
async fn work(
    ctx: &Ctx,
    c: &mut Connection,
    consumer: &str,
    taken: Taken,
    shutdown: &watch::Receiver<bool>,
) {
    let (item, job, game) = (
        taken.entry.id.clone(),
        taken.text("job"),
        taken.text("game"),
    );
    let (q, keys) = (ctx.layout.prefix(taken.g), ctx.layout.script_keys(taken.g));
    if taken.deliveries > ctx.config.max_deliveries as usize {
        let last: Option<String> = redis::cmd("GET")
            .arg(format!("{q}err:{item}"))
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
        let mut args = ctx.scripts.dead.args();
        args.set("item", &item)
            .set("job", &job)
            .set("game", &game)
            .set("deliveries", taken.deliveries)
            .set("error", &error)
            .set(
                "result",
                failed_result(
                    &game,
                    &format!("given up after {} deliveries: {error}", taken.deliveries),
                ),
            )
            .set("maxlen", DEAD_MAXLEN);
        let r: redis::RedisResult<i64> = ctx.scripts.dead.call(c, keys, args).await;
        match r {
            Ok(_) => crate::metrics::game("dead_letter"),
            Err(e) => tracing::warn!(error = %e, "analysis worker: dead-lettering failed"),
        }
        return;
    }
    let meta: redis::RedisResult<ItemJob> = redis::cmd("HMGET")
        .arg(format!("{q}j:{job}"))
        .arg(&["cancelled", "depth", "nodes", "hash", "trace", "engine"])
        .query_async(c)
        .await;
    let (cancelled, depth, nodes, hash, trace, engine) = match meta {
        Ok(m) => m,
        Err(e) => {
            // Redis failing now: the item stays pending and is claimed again later.
            tracing::warn!(error = %e, "analysis worker: cannot read an item's job");
            return;
        }
    };
    if cancelled.as_deref() != Some("0") {
        // Cancelled, or expired (or never a job): nothing to record.
        return drop_item(ctx, c, taken.g, &item).await;
    }
    // The game's span continues the trace of the job's SubmitJob call.
    let span = tracing::info_span!(
        "analysis game",
        otel.name = "analysis.game",
        job = %job,
        game = %game,
        deliveries = taken.deliveries
    );
    arbiter_kit::trace::follow(&span, trace.as_deref().unwrap_or_default());
    analyse_item(
        ctx,
        c,
        consumer,
        taken,
        shutdown,
        (depth, nodes, hash, engine),
    )
    .instrument(span)
    .await;
}

/// Analyses the game of an item whose job wants it, with heartbeats, and records the result
/// (or gives the item back, or leaves it pending).
async fn analyse_item(
    ctx: &Ctx,
    c: &mut Connection,
    consumer: &str,
    taken: Taken,
    shutdown: &watch::Receiver<bool>,
    (depth, nodes, hash, engine): (Option<u32>, Option<u64>, Option<usize>, Option<String>),
) {
    let (item, job, game) = (
        taken.entry.id.clone(),
        taken.text("job"),
        taken.text("game"),
    );
    let keys = ctx.layout.script_keys(taken.g);
    let limits = match (depth.unwrap_or(0), nodes.unwrap_or(0)) {
        (d @ 1.., _) => Limits::depth(d),
        (_, n @ 1..) => Limits::nodes(n),
        _ => return failed(ctx, c, &taken, "the job has no per-ply limit").await,
    };
    let Ok(index) = game.parse::<usize>() else {
        return failed(ctx, c, &taken, "the item's game index is not a number").await;
    };
    let spec = match Game::from_item(&taken.payload()) {
        Ok(g) => JobSpec {
            games: vec![g],
            limits,
            hash_mib: hash.unwrap_or(16).clamp(1, 4096),
            engine: engine.unwrap_or_default(),
        },
        Err(e) => return failed(ctx, c, &taken, &e).await,
    };
    let positions = spec.positions();
    let stop = Arc::new(AtomicBool::new(false));
    // Dropped if this task is: a worker killed mid-game leaves no search running.
    let _guard = RaiseOnDrop(Arc::clone(&stop));
    let done = Arc::new(AtomicU64::new(0));
    let mut analysis = {
        let (stop, done, time) = (Arc::clone(&stop), Arc::clone(&done), Arc::clone(&ctx.time));
        let engines = Arc::clone(&ctx.engines);
        // The game's span, for the searches' own on the blocking thread.
        let game_span = tracing::Span::current();
        tokio::task::spawn_blocking(move || {
            let _entered = game_span.enter();
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                analyse_game(
                    index,
                    &spec.games[0],
                    &spec,
                    &engines,
                    &stop,
                    &*time,
                    &mut || {
                        done.fetch_add(1, Ordering::Relaxed);
                    },
                )
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
                let mut args = ctx.scripts.heartbeat.args();
                args.set("job", &job)
                    .set("game", &game)
                    .set("done", done.load(Ordering::Relaxed))
                    .set("item", &item)
                    .set("consumer", consumer);
                let beat: redis::RedisResult<String> =
                    ctx.scripts.heartbeat.call(c, keys, args).await;
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
            let encoded = record::encode_result(&result);
            // Redis may be away for a moment: retry for as long as the item is surely still
            // this worker's (up to the claim timeout, at most 10 s).
            let until =
                tokio::time::Instant::now() + ctx.config.claim_idle.min(Duration::from_secs(10));
            loop {
                let mut args = ctx.scripts.record.args();
                args.set("job", &job)
                    .set("game", &game)
                    .set("positions", positions)
                    .set("item", &item)
                    .set("result", &encoded);
                let r: redis::RedisResult<i64> = ctx.scripts.record.call(c, keys, args).await;
                match r {
                    Ok(_) => {
                        crate::metrics::game("analysed");
                        break;
                    }
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
            Some(Halt::Unwanted) => drop_item(ctx, c, taken.g, &item).await,
            Some(Halt::Shutdown) => {
                let mut args = ctx.scripts.requeue.args();
                args.set("item", &item)
                    .set("consumer", consumer)
                    .set("job", &job)
                    .set("game", &game);
                let _: redis::RedisResult<i64> = ctx.scripts.requeue.call(c, keys, args).await;
            }
            Some(Halt::Lost) | None => {}
        },
        Ok(Err(_)) | Err(_) => {
            failed(ctx, c, &taken, "internal error: the analysis panicked").await;
        }
    }
}
