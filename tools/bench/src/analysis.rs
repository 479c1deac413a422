//! Latency of live analysis (`arbiter bench analysis` drives it), against one server whose
//! analysis service has one engine thread:
//!
//! - **first info**: from sending `Analyze` to receiving its first `info` (the depth-1
//!   iteration), next to the round trip of a depth-1 `BestMove` measured in the same run;
//! - **cancel**: an endless `Analyze` is running; the client cancels it and at once asks for a
//!   depth-1 `BestMove`. With one engine thread the answer can only come once the cancelled
//!   search has given its thread back, so that round trip less the plain depth-1 round trip is
//!   the cancel latency (the time for the cancel to reach the search and the search to stop).
//!
//! Both calls are reads. One that fails for a reason that passes is retried, and its time counts
//! from the first attempt (a run with retries measured them: the report says how many); a trial
//! whose call fails for good is left out and counted as an error.

use crate::Tally;
use arbiter_proto::analysis::v1::{self as pb, analysis_service_client::AnalysisServiceClient};
use arbiter_proto::common::v1 as common;
use std::time::{Duration, Instant};
use tonic::transport::Channel;

/// What to run.
#[derive(Debug, Clone)]
pub struct AnalysisBenchConfig {
    /// Trials of each measurement.
    pub trials: usize,
    /// How long the endless search runs before it is cancelled.
    pub run_before_cancel: Duration,
}

/// The figures of one measurement, in ms.
#[derive(Debug, Clone)]
pub struct Latency {
    /// What was measured.
    pub name: &'static str,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

/// The figures of a run.
#[derive(Debug, Clone)]
pub struct AnalysisRun {
    /// One row per measurement.
    pub rows: Vec<Latency>,
    /// Trials (of `trials`) whose calls all answered.
    pub trials: usize,
    /// Attempts retried.
    pub retries: u64,
    /// Calls that failed for good (their trials left out).
    pub errors: u64,
}

fn summarise(name: &'static str, mut ms: Vec<f64>) -> Latency {
    ms.sort_by(f64::total_cmp);
    let at = |p: f64| ms[((ms.len() as f64 - 1.0) * p).round() as usize];
    Latency {
        name,
        p50: at(0.5),
        p90: at(0.9),
        p99: at(0.99),
        max: *ms.last().expect("at least one trial"),
    }
}

fn start() -> Option<common::Position> {
    Some(common::Position {
        variant: common::Variant::Chess as i32,
        ..Default::default()
    })
}

/// A depth-1 `BestMove`'s round trip in ms, from the first attempt.
async fn depth_one(
    client: &AnalysisServiceClient<Channel>,
    tally: &Tally,
) -> Result<f64, tonic::Status> {
    let t = Instant::now();
    tally
        .call(|| {
            let mut client = client.clone();
            async move {
                client
                    .best_move(pb::BestMoveRequest {
                        position: start(),
                        limits: Some(pb::SearchLimits {
                            depth: 1,
                            ..Default::default()
                        }),
                        ..Default::default()
                    })
                    .await
            }
        })
        .await?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

/// Opens an endless analysis and returns the time to its first info (from the first attempt),
/// with the stream.
async fn endless(
    client: &AnalysisServiceClient<Channel>,
    tally: &Tally,
) -> Result<(f64, tonic::Streaming<pb::AnalyzeResponse>), tonic::Status> {
    let t = Instant::now();
    let stream = tally
        .call(|| {
            let mut client = client.clone();
            async move {
                let mut stream = client
                    .analyze(pb::AnalyzeRequest {
                        position: start(),
                        ..Default::default()
                    })
                    .await?
                    .into_inner();
                match stream.message().await? {
                    Some(pb::AnalyzeResponse {
                        update: Some(pb::analyze_response::Update::Info(_)),
                    }) => Ok(stream),
                    other => Err(tonic::Status::internal(format!(
                        "expected a first info, got {other:?}"
                    ))),
                }
            }
        })
        .await?;
    Ok((t.elapsed().as_secs_f64() * 1e3, stream))
}

/// One trial: the reference, the first info, the cancel.
async fn trial(
    client: &AnalysisServiceClient<Channel>,
    cfg: &AnalysisBenchConfig,
    tally: &Tally,
) -> Result<(f64, f64, f64), tonic::Status> {
    let reference = depth_one(client, tally).await?;
    let (to_first, stream) = endless(client, tally).await?;
    tokio::time::sleep(cfg.run_before_cancel).await;
    drop(stream);
    let cancel = depth_one(client, tally).await?;
    Ok((reference, to_first, cancel))
}

/// Runs the measurements: the depth-1 reference, the first info, the cancel.
pub async fn run(
    channel: Channel,
    cfg: &AnalysisBenchConfig,
) -> Result<AnalysisRun, tonic::Status> {
    let client = AnalysisServiceClient::new(channel);
    let tally = Tally::default();
    let trials = cfg.trials.max(1);
    // Warm-up: the connection, the allocator, the table's pages.
    for _ in 0..10 {
        if let Err(e) = depth_one(&client, &tally).await {
            tally.absorb(e)?;
        }
    }
    let (mut reference, mut first, mut cancel) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..trials {
        match trial(&client, cfg, &tally).await {
            Ok((r, f, c)) => {
                reference.push(r);
                first.push(f);
                cancel.push(c);
            }
            Err(e) => tally.absorb(e)?,
        }
    }
    if reference.is_empty() {
        return Err(tonic::Status::unavailable(format!(
            "no trial completed ({} calls failed)",
            tally.errors()
        )));
    }
    let completed = reference.len();
    let base = summarise("depth-1 BestMove (reference)", reference);
    let less: Vec<f64> = cancel.iter().map(|ms| ms - base.p50).collect();
    Ok(AnalysisRun {
        rows: vec![
            summarise("first info of Analyze", first),
            summarise("cancel, then depth-1 BestMove", cancel),
            summarise(
                "cancel latency (the row above less the reference median)",
                less,
            ),
            base,
        ],
        trials: completed,
        retries: tally.retries(),
        errors: tally.errors(),
    })
}

/// The report: one row per measurement, then the ratio of first info to the reference, and
/// the retries and errors.
pub fn report(run: &AnalysisRun, cfg: &AnalysisBenchConfig) -> String {
    let rows = run.rows.as_slice();
    let mut out = format!(
        "{} trials ({} completed), endless search cancelled after {} ms; one engine thread\n{:<54} {:>8} {:>8} {:>8} {:>8}\n",
        cfg.trials,
        run.trials,
        cfg.run_before_cancel.as_millis(),
        "ms",
        "p50",
        "p90",
        "p99",
        "max"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<54} {:>8.3} {:>8.3} {:>8.3} {:>8.3}\n",
            r.name, r.p50, r.p90, r.p99, r.max
        ));
    }
    if let [first, .., reference] = rows {
        out.push_str(&format!(
            "ratio first info / depth-1 BestMove (medians): {:.2}\n",
            first.p50 / reference.p50
        ));
    }
    out.push_str(&format!(
        "retries {}, errors {} (a retried call's time counts from its first attempt)\n",
        run.retries, run.errors
    ));
    out
}
