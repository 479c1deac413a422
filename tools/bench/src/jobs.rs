//! Throughput of batch jobs (`arbiter bench jobs` drives it): positions analysed per second by
//! the analysis service's job workers, against the engine doing the same work on one thread
//! without the service, measured in the same run.
//!
//! The games are random legal games from a seed (every variant's rules apply), so a run is
//! reproducible. The reference calls `arbiter_engine::review::evaluate_position_with` on every
//! position in turn, on engines kept and emptied for each game, as one worker does; the
//! service's figure covers everything else too:
//! checking the job, the queue, the workers, storing and reading the results, gRPC.
//!
//! The submission carries a request id, watching resumes (every message is the whole status)
//! and results are reads: a call that fails for a reason that passes is retried, a broken watch
//! is opened again, and the rate, from the submission to the last result read, counts them.

use crate::{RETRY, Tally};
use arbiter_core::{AnyPosition, Position, Variant};
use arbiter_engine::analyze::{AnalysisSettings, Engines};
use arbiter_engine::review::{GameLine, evaluate_position_with};
use arbiter_engine::{Limits, SearchOptions, SystemTime};
use arbiter_kit::retry::{Backoff, transient};
use arbiter_proto::analysis::v1::{self as pb, analysis_service_client::AnalysisServiceClient};
use arbiter_proto::common::v1 as common;
use std::sync::atomic::AtomicBool;
use std::time::Instant;
use tonic::transport::Channel;

/// What to run.
#[derive(Debug, Clone)]
pub struct JobsBenchConfig {
    /// Games in the job.
    pub games: usize,
    /// Moves per game.
    pub plies: usize,
    /// Nodes per position.
    pub nodes: u64,
    /// Seed of the games.
    pub seed: u64,
}

/// A game: its moves in coordinate notation, from the standard start.
pub type Moves = Vec<String>;

/// Random legal chess games from `cfg.seed` (a game that ends early is shorter).
pub fn games(cfg: &JobsBenchConfig) -> Vec<Moves> {
    let mut state = cfg.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = |n: usize| {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
    };
    (0..cfg.games)
        .map(|_| {
            let mut pos = AnyPosition::start(Variant::Chess).expect("the start");
            let mut moves = Vec::new();
            for _ in 0..cfg.plies {
                let legal = pos.legal_moves();
                if legal.is_empty() || pos.terminal().is_some() {
                    break;
                }
                let m = legal[next(legal.len())];
                moves.push(pos.move_to_uci(m));
                pos.play_unchecked(m);
            }
            moves
        })
        .collect()
}

/// Positions in the games (moves + 1 each).
pub fn positions(games: &[Moves]) -> u64 {
    games.iter().map(|g| g.len() as u64 + 1).sum()
}

/// The reference: every position evaluated in turn on this thread, as a worker does, without
/// the service. Returns positions per second.
pub fn raw(games: &[Moves], nodes: u64) -> f64 {
    let settings = AnalysisSettings {
        limits: Limits::nodes(nodes),
        options: SearchOptions {
            multipv: 1,
            move_overhead_ms: 0,
        },
        hash_mib: 16,
    };
    let (stop, time) = (AtomicBool::new(false), SystemTime::new());
    let t = Instant::now();
    let mut engines = Engines::new(settings.hash_mib);
    for game in games {
        engines.clear();
        // Reading the moves back is part of the work: the service reads them too.
        let start = AnyPosition::start(Variant::Chess).expect("the start");
        let mut pos = start.clone();
        let moves: Vec<_> = game
            .iter()
            .map(|text| {
                let m = pos
                    .parse_move(text, arbiter_core::Notation::Uci, Default::default())
                    .expect("a legal move");
                pos.play_unchecked(m);
                m
            })
            .collect();
        let line = GameLine::replay(&start, &moves);
        for (i, p) in line.positions.iter().enumerate() {
            evaluate_position_with(&mut engines, p, line.history(i), &settings, &stop, &time);
        }
    }
    positions(games) as f64 / t.elapsed().as_secs_f64()
}

/// The reference with an external UCI engine: the engine program at `path` alone, driven with
/// the least code that does the work (for each game `ucinewgame`; for each position that does
/// not end the game `position startpos moves …` and `go nodes N`, read to its `bestmove`),
/// one process, `Threads 1`, `Hash 16` as the service's pool gives it. The same positions, in
/// the same order, with the same history as the service sends. Returns positions per second,
/// counting every position (the service does not search a finished game's last one either).
///
/// # Errors
/// The engine cannot be started or stops answering, in words.
pub fn raw_uci(games: &[Moves], nodes: u64, path: &str) -> Result<f64, String> {
    use std::io::{BufRead, BufReader, Write};
    let mut child = std::process::Command::new(path)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("{path}: {e}"))?;
    let mut input = child.stdin.take().ok_or("no stdin")?;
    let mut output = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut line = String::new();
    let mut wait_for = |output: &mut BufReader<_>, prefix: &str| -> Result<(), String> {
        loop {
            line.clear();
            if output.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                return Err(format!("{path} ended before {prefix}"));
            }
            if line.starts_with(prefix) {
                return Ok(());
            }
        }
    };
    let send = |input: &mut std::process::ChildStdin, text: &str| {
        input
            .write_all(text.as_bytes())
            .and_then(|()| input.flush())
            .map_err(|e| format!("{path}: {e}"))
    };
    send(&mut input, "uci\n")?;
    wait_for(&mut output, "uciok")?;
    send(
        &mut input,
        "setoption name Threads value 1\nsetoption name Hash value 16\nisready\n",
    )?;
    wait_for(&mut output, "readyok")?;
    let t = Instant::now();
    for game in games {
        send(&mut input, "ucinewgame\nisready\n")?;
        wait_for(&mut output, "readyok")?;
        // Which positions end the game: checked with the rules, as the service does.
        let mut pos = AnyPosition::start(Variant::Chess).expect("the start");
        let mut command = String::from("position startpos moves");
        for i in 0..=game.len() {
            if pos.terminal().is_none() {
                send(&mut input, &format!("{command}\ngo nodes {nodes}\n"))?;
                wait_for(&mut output, "bestmove")?;
            }
            if let Some(text) = game.get(i) {
                let m = pos
                    .parse_move(text, arbiter_core::Notation::Uci, Default::default())
                    .expect("a legal move");
                pos.play_unchecked(m);
                command.push(' ');
                command.push_str(text);
            }
        }
    }
    let rate = positions(games) as f64 / t.elapsed().as_secs_f64();
    let _ = send(&mut input, "quit\n");
    let _ = child.wait();
    Ok(rate)
}

/// The figures of one job through the service.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServiceRun {
    /// Positions per second, from the submission to the last result read.
    pub rate: f64,
    /// Attempts retried, and watch streams opened again.
    pub retries: u64,
}

/// The job's status stream from its start to its end (the last status sent). A stream that
/// breaks for a reason that passes is opened again, with backoff ([`Backoff::wait_after`]).
async fn watch_to_end(
    client: &AnalysisServiceClient<Channel>,
    job_id: &str,
    tally: &Tally,
) -> Result<Option<pb::JobStatus>, tonic::Status> {
    let mut last = None;
    let mut backoff = Backoff::new(RETRY);
    loop {
        let (began, mut progressed) = (tokio::time::Instant::now(), false);
        let watched = async {
            let mut watch = client
                .clone()
                .watch_job(pb::WatchJobRequest {
                    job_id: job_id.to_owned(),
                })
                .await?
                .into_inner();
            while let Some(s) = watch.message().await? {
                last = s.status;
                progressed = true;
            }
            Ok::<_, tonic::Status>(())
        }
        .await;
        match watched {
            Ok(()) => return Ok(last),
            Err(e) if transient(&e) => {
                if !backoff.wait_after(began, progressed).await {
                    return Err(e);
                }
                tally.retried();
            }
            Err(e) => return Err(e),
        }
    }
}

/// Submits the games as one job for `engine` (a server's engine name, empty for its default),
/// watches it to its end, reads every result back, and returns positions per second from
/// submission to the last result read.
pub async fn service(
    channel: Channel,
    games: &[Moves],
    nodes: u64,
    engine: &str,
    tag: &str,
) -> Result<ServiceRun, tonic::Status> {
    let client = AnalysisServiceClient::new(channel);
    let tally = Tally::default();
    let submission = pb::SubmitJobRequest {
        // The same id on every attempt: a retry answers the job the first one queued.
        request_id: format!("bench-{tag}"),
        games: Some(pb::submit_job_request::Games::MoveLists(pb::GameList {
            games: games
                .iter()
                .map(|moves| pb::GameMoves {
                    start: Some(common::Position {
                        variant: common::Variant::Chess as i32,
                        ..Default::default()
                    }),
                    moves: moves.clone(),
                    notation: common::MoveNotation::Uci as i32,
                })
                .collect(),
        })),
        per_ply: Some(pb::PlyLimit { depth: 0, nodes }),
        engine: engine.to_owned(),
    };
    let t = Instant::now();
    let job = tally
        .call(|| {
            let mut client = client.clone();
            let request = submission.clone();
            async move { client.submit_job(request).await }
        })
        .await?
        .into_inner()
        .status
        .ok_or_else(|| tonic::Status::internal("SubmitJob answered no status"))?;
    let last = watch_to_end(&client, &job.job_id, &tally).await?;
    if last.as_ref().map(|s| s.state) != Some(pb::JobState::Done as i32) {
        return Err(tonic::Status::internal(format!(
            "the job did not finish: {last:?}"
        )));
    }
    let mut read = 0;
    while read < games.len() {
        let page = tally
            .call(|| {
                let mut client = client.clone();
                let request = pb::GetJobResultsRequest {
                    job_id: job.job_id.clone(),
                    offset: read as u32,
                    limit: 0,
                };
                async move { client.get_job_results(request).await }
            })
            .await?
            .into_inner();
        if page.games.is_empty() {
            return Err(tonic::Status::internal(
                "a finished job with a game missing",
            ));
        }
        // A game that failed took no engine time: its rate would flatter the service.
        if let Some(failed) = page.games.iter().find(|g| !g.error.is_empty()) {
            return Err(tonic::Status::internal(format!(
                "game {} failed: {}",
                failed.index, failed.error
            )));
        }
        read += page.games.len();
    }
    Ok(ServiceRun {
        rate: positions(games) as f64 / t.elapsed().as_secs_f64(),
        retries: tally.retries(),
    })
}

/// Where the service's workers ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Threads of the embedded server, with its in-process queue.
    InProcess,
    /// `arbiter worker` processes, one worker each, on a queue in Redis.
    RedisProcesses,
    /// Remote workers over gRPC (`arbiter worker --server`), one thread each.
    RemoteWorkers,
}

/// The report: the rates and their ratios, and the service runs' retries. `raw` is the engine
/// alone measured before and after the service; their mean is the reference.
pub fn report(
    cfg: &JobsBenchConfig,
    mode: Mode,
    positions: u64,
    raw: [f64; 2],
    one: ServiceRun,
    two: ServiceRun,
) -> String {
    let retries = (one.retries, two.retries);
    let (one, two) = (one.rate, two.rate);
    let [before, after] = raw;
    let raw = (before + after) / 2.0;
    let (queue, one_label, two_label) = match mode {
        Mode::InProcess => (
            "in-process queue",
            "service, 1 batch worker: ",
            "service, 2 batch workers:",
        ),
        Mode::RedisProcesses => (
            "Redis Streams queue",
            "service, 1 worker process:",
            "service, 2 worker processes:",
        ),
        Mode::RemoteWorkers => (
            "in-process queue, remote workers over gRPC",
            "service, 1 remote worker:",
            "service, 2 remote workers:",
        ),
    };
    format!(
        "{} games, {} positions, {} nodes a position (seed {}), {queue}\n\
         engine alone, one thread:        {raw:>8.1} positions/s  (before the service {before:.1}, after {after:.1})\n\
         {one_label:<32} {one:>8.1} positions/s  ({:.3} of the engine alone: overhead {:.1} %)\n\
         {two_label:<32} {two:>8.1} positions/s  ({:.2}x one worker)\n\
         retries: {} with one, {} with two (a retry's time counts in the rate)\n",
        cfg.games,
        positions,
        cfg.nodes,
        cfg.seed,
        one / raw,
        (1.0 - one / raw) * 100.0,
        two / one,
        retries.0,
        retries.1,
    )
}
