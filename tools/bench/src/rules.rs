//! A load generator for the rules service (`arbiter bench rules` drives it). It drives, in one run and
//! against one server, the no-op `Ping` (the gRPC stack's ceiling) and `ValidateMove` unary with
//! N concurrent tasks, then `PingStream` and `ValidateMoveStream` with pipelined streams, and
//! reports requests/s, unary p50/p99 latency, the validate/no-op ratios, and each phase's
//! retries and errors (a unary call is retried when it fails for a reason that passes, its
//! latency counted from the first attempt; a broken stream is opened again).

use crate::{RETRY, Tally};
use arbiter_kit::retry::{Backoff, RetryPolicy};
use arbiter_proto::common::v1 as common;
use arbiter_proto::rules::v1::{self as rules, rules_service_client::RulesServiceClient};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// How long each phase runs.
    pub duration: Duration,
    /// Concurrent unary requests in flight.
    pub concurrency: usize,
    /// Concurrent streams in the streaming phases.
    pub streams: usize,
}

/// The figures of one phase.
#[derive(Debug, Clone)]
pub struct Phase {
    /// Phase name.
    pub name: &'static str,
    /// Completed requests per second.
    pub rps: f64,
    /// Median latency (unary phases only).
    pub p50: Option<Duration>,
    /// 99th-percentile latency (unary phases only).
    pub p99: Option<Duration>,
    /// Unary phases: retried attempts. Streaming phases: streams opened again after breaking.
    pub retries: u64,
    /// Unary phases: calls that failed for good. Streaming phases: streams that broke or could
    /// not be opened again. The phase went on after each.
    pub errors: u64,
}

/// Positions and moves the validation phases cycle through: an opening, a middlegame with
/// castling, a promotion, an illegal move (the reason must be computed too).
pub const WORK: [(&str, &str); 4] = [
    (
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "Nf3",
    ),
    (
        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
        "O-O",
    ),
    ("7k/4P3/8/8/8/8/8/4K3 w - - 0 1", "e8=Q+"),
    (
        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
        "Nxf8",
    ),
];

fn validate_request(i: usize) -> rules::ValidateMoveRequest {
    let (fen, mv) = WORK[i % WORK.len()];
    rules::ValidateMoveRequest {
        position: Some(common::Position {
            variant: common::Variant::Chess as i32,
            text: fen.to_owned(),
            ..Default::default()
        }),
        r#move: mv.to_owned(),
        ..Default::default()
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    Some(sorted[idx])
}

/// One unary call (a validation or a no-op), retried under [`RETRY`].
async fn one_call(
    client: &RulesServiceClient<Channel>,
    tally: &Tally,
    validate: bool,
    i: usize,
) -> Result<(), tonic::Status> {
    tally
        .call(|| {
            let mut client = client.clone();
            async move {
                if validate {
                    client.validate_move(validate_request(i)).await.map(drop)
                } else {
                    client.ping(rules::PingRequest {}).await.map(drop)
                }
            }
        })
        .await
}

async fn unary(
    channel: &Channel,
    cfg: &BenchConfig,
    name: &'static str,
    validate: bool,
) -> Result<Phase, tonic::Status> {
    let deadline = Instant::now() + cfg.duration;
    let tally = Arc::new(Tally::default());
    let mut tasks = Vec::with_capacity(cfg.concurrency);
    for t in 0..cfg.concurrency {
        let client = RulesServiceClient::new(channel.clone());
        let tally = Arc::clone(&tally);
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut i = t;
            while Instant::now() < deadline {
                // From the first attempt: retries and their pauses count.
                let start = Instant::now();
                match one_call(&client, &tally, validate, i).await {
                    Ok(()) => latencies.push(start.elapsed()),
                    Err(s) => tally.absorb(s)?,
                }
                i += 1;
            }
            Ok::<_, tonic::Status>(latencies)
        }));
    }
    let started = Instant::now();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(
            t.await
                .map_err(|e| tonic::Status::internal(e.to_string()))??,
        );
    }
    let elapsed = started.elapsed().max(cfg.duration);
    all.sort_unstable();
    Ok(Phase {
        name,
        rps: all.len() as f64 / elapsed.as_secs_f64(),
        p50: percentile(&all, 0.50),
        p99: percentile(&all, 0.99),
        retries: tally.retries(),
        errors: tally.errors(),
    })
}

/// Counts the answers of one stream until `stop` is set.
async fn drain<T>(
    mut out: tonic::Streaming<T>,
    stop: &AtomicBool,
    received: &AtomicU64,
) -> Result<(), tonic::Status> {
    while out.message().await?.is_some() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        received.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// One pipelined stream from `s`, fed until `stop`: its requests, and the count of its answers.
async fn one_stream(
    client: &mut RulesServiceClient<Channel>,
    s: usize,
    validate: bool,
    stop: &Arc<AtomicBool>,
    received: &AtomicU64,
) -> Result<(), tonic::Status> {
    // A bounded channel keeps a window of requests in flight on the stream.
    let (tx, rx) = tokio::sync::mpsc::channel(512);
    let feeder_stop = Arc::clone(stop);
    tokio::spawn(async move {
        let mut i = s;
        while !feeder_stop.load(Ordering::Relaxed) {
            if tx.send(i).await.is_err() {
                break;
            }
            i += 1;
        }
    });
    let requests = ReceiverStream::new(rx);
    if validate {
        let out = client
            .validate_move_stream(tokio_stream::StreamExt::map(requests, |i| {
                rules::ValidateMoveStreamRequest {
                    request: Some(validate_request(i)),
                }
            }))
            .await?;
        drain(out.into_inner(), stop, received).await
    } else {
        let out = client
            .ping_stream(tokio_stream::StreamExt::map(requests, |_| {
                rules::PingStreamRequest {}
            }))
            .await?;
        drain(out.into_inner(), stop, received).await
    }
}

async fn streaming(
    channel: &Channel,
    cfg: &BenchConfig,
    name: &'static str,
    validate: bool,
) -> Result<Phase, tonic::Status> {
    let stop = Arc::new(AtomicBool::new(false));
    let received = Arc::new(AtomicU64::new(0));
    let tally = Arc::new(Tally::default());
    let mut tasks = Vec::new();
    for s in 0..cfg.streams {
        let mut client = RulesServiceClient::new(channel.clone());
        let (stop, received, tally) =
            (Arc::clone(&stop), Arc::clone(&received), Arc::clone(&tally));
        tasks.push(tokio::spawn(async move {
            // A stream that breaks is opened again (validation is stateless), after a pause
            // that grows while it keeps breaking.
            let mut backoff = Backoff::new(RetryPolicy {
                max_attempts: u32::MAX,
                deadline: None,
                ..RETRY
            });
            loop {
                match one_stream(&mut client, s, validate, &stop, &received).await {
                    Ok(()) => break,
                    Err(e) => tally.absorb(e)?,
                }
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                backoff.wait().await;
                tally.retried();
            }
            Ok::<_, tonic::Status>(())
        }));
    }
    // Let the streams open and fill their windows before counting.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = received.load(Ordering::Relaxed);
    let started = Instant::now();
    tokio::time::sleep(cfg.duration).await;
    let count = received.load(Ordering::Relaxed) - before;
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await
            .map_err(|e| tonic::Status::internal(e.to_string()))??;
    }
    Ok(Phase {
        name,
        rps: count as f64 / elapsed.as_secs_f64(),
        p50: None,
        p99: None,
        retries: tally.retries(),
        errors: tally.errors(),
    })
}

/// Runs the four phases against `channel`.
pub async fn run(channel: Channel, cfg: &BenchConfig) -> Result<Vec<Phase>, tonic::Status> {
    // Warm-up: connections, allocator, caches.
    let warm = BenchConfig {
        duration: Duration::from_millis(300),
        ..cfg.clone()
    };
    unary(&channel, &warm, "warm-up", true).await?;
    Ok(vec![
        unary(&channel, cfg, "unary ping (no-op)", false).await?,
        unary(&channel, cfg, "unary validate", true).await?,
        streaming(&channel, cfg, "stream ping (no-op)", false).await?,
        streaming(&channel, cfg, "stream validate", true).await?,
    ])
}

/// The report: one row per phase, then the ratios.
pub fn report(phases: &[Phase], cfg: &BenchConfig) -> String {
    let ms =
        |d: Option<Duration>| d.map_or("-".to_owned(), |d| format!("{:.3}", d.as_secs_f64() * 1e3));
    let mut out = format!(
        "concurrency {} (unary), {} streams, {:.1}s per phase\n{:<22} {:>12} {:>10} {:>10} {:>8} {:>7}\n",
        cfg.concurrency,
        cfg.streams,
        cfg.duration.as_secs_f64(),
        "phase",
        "req/s",
        "p50 ms",
        "p99 ms",
        "retries",
        "errors"
    );
    for p in phases {
        out.push_str(&format!(
            "{:<22} {:>12.0} {:>10} {:>10} {:>8} {:>7}\n",
            p.name,
            p.rps,
            ms(p.p50),
            ms(p.p99),
            p.retries,
            p.errors
        ));
    }
    let rps = |name: &str| {
        phases
            .iter()
            .find(|p| p.name == name)
            .map_or(f64::NAN, |p| p.rps)
    };
    out.push_str(&format!(
        "ratio unary validate / unary no-op: {:.2}\nratio stream validate / stream no-op: {:.2}\nratio stream validate / unary no-op: {:.2}\n",
        rps("unary validate") / rps("unary ping (no-op)"),
        rps("stream validate") / rps("stream ping (no-op)"),
        rps("stream validate") / rps("unary ping (no-op)"),
    ));
    out
}
