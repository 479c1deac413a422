//! A platform's load on a whole deployment (`arbiter bench system` drives it): many hosted
//! games with clocks moved at an open-loop rate, a watcher on every one of them, games left to
//! flag with no move sent, and players joining a matchmaking pool, all at once and through one
//! address (the compose topology's proxy, or `arbiter serve`).
//!
//! - **Moves**: the games are created with a time control and given their two untimed first
//!   moves; then moves are sent at `games × per-game rate` per second whatever the answers'
//!   speed (see [`crate::clocks`]): each move's latency counts from the instant it was due.
//! - **Watchers**: one `WatchMatch` stream per game, opened before the load and followed to its
//!   end; a stream that breaks is opened again after the last event seen. The events received
//!   and the resumptions are counted.
//! - **Flags**: games left to flag at deadlines spread over the run, each with a watcher: the
//!   delay between the deadline and the end the server recorded (see [`crate::clocks`]).
//! - **Pool joins**: pairs of players join a casual chess pool at a steady rate and wait for
//!   their `MatchFound`, then acknowledge it; the time from joining to the match is measured
//!   (it includes waiting for the next wave: several seconds by default).
//!
//! The streams are spread over several HTTP/2 connections, as a platform's backend with many
//! watchers would: a proxy or server limits the streams of one connection.

use crate::clocks::{self, ClockBenchConfig, RunResult};
use crate::matches::keyed;
use crate::{Tally, run_id};
use arbiter_kit::retry::{Backoff, transient};
use arbiter_proto::common::v1 as common;
use arbiter_proto::matches::v1 as pb;
use arbiter_proto::matches::v1::match_service_client::MatchServiceClient;
use arbiter_proto::matchmaking::v1 as mm;
use arbiter_proto::matchmaking::v1::matchmaking_service_client::MatchmakingServiceClient;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tonic::Status;
use tonic::transport::Channel;

/// What to run.
#[derive(Debug, Clone)]
pub struct SystemBenchConfig {
    /// Games moved by the load, each with a watcher.
    pub games: usize,
    /// Moves per second per game (the load sends `games × this` per second).
    pub moves_per_game_per_sec: f64,
    /// Seconds of load.
    pub duration: Duration,
    /// The time control of the moved games (long enough not to flag under the load).
    pub time_control: String,
    /// Games left to flag during the run.
    pub flags: usize,
    /// Players joining the pool per second (in pairs).
    pub joins_per_sec: f64,
    /// The platform token, sent in x-api-key, if the server has one (creations, matchmaking).
    pub platform_token: Option<String>,
}

/// Join-to-match figures.
#[derive(Debug, Clone, Default)]
pub struct JoinFigures {
    /// Players who joined.
    pub joined: u64,
    /// Players who got a match.
    pub matched: u64,
    /// Joins that failed (after their retries) or got no match before the run ended.
    pub errors: u64,
    /// Join to MatchFound, p50 and p99.
    pub wait: [Duration; 2],
}

/// The figures of the bench.
#[derive(Debug, Clone, Default)]
pub struct SystemBenchResult {
    /// The moves.
    pub moves: RunResult,
    /// Watch streams followed.
    pub watchers: usize,
    /// Events the watchers received.
    pub watch_events: u64,
    /// Watch streams opened again after breaking.
    pub watch_resumes: u64,
    /// Watchers that failed for good.
    pub watch_errors: u64,
    /// Flag detection delays (end recorded − deadline), ms, sorted.
    pub flag_delays_ms: Vec<i64>,
    /// Flagging games whose end did not arrive.
    pub flags_missed: usize,
    /// The pool joins.
    pub joins: JoinFigures,
    /// Retries while creating and opening the games.
    pub setup_retries: u64,
    /// Seconds spent creating and opening the games before the load.
    pub setup_secs: f64,
}

/// Follows one match until `stop`, counting events; resumes after the last event seen.
async fn follow(
    mut c: MatchServiceClient<Channel>,
    id: String,
    stop: Arc<AtomicBool>,
    events: Arc<AtomicU64>,
    resumes: Arc<AtomicU64>,
) -> Result<(), Status> {
    let mut after = 0;
    let mut backoff = Backoff::new(crate::RETRY);
    while !stop.load(Ordering::Relaxed) {
        let began = tokio::time::Instant::now();
        let before = after;
        let opened = c
            .watch_match(pb::WatchMatchRequest {
                match_id: id.clone(),
                after_seq: after,
            })
            .await;
        let failure = match opened {
            Ok(stream) => {
                let mut stream = stream.into_inner();
                loop {
                    let next = tokio::select! {
                        m = stream.message() => m,
                        () = tokio::time::sleep(Duration::from_millis(500)) => {
                            if stop.load(Ordering::Relaxed) { return Ok(()); }
                            continue;
                        }
                    };
                    match next {
                        Ok(Some(e)) => {
                            after = e.seq;
                            events.fetch_add(1, Ordering::Relaxed);
                            if matches!(e.event, Some(pb::watch_match_response::Event::End(_))) {
                                return Ok(());
                            }
                        }
                        Ok(None) => break Status::unavailable("stream ended"),
                        Err(s) => break s,
                    }
                }
            }
            Err(s) => s,
        };
        if !transient(&failure) {
            return Err(failure);
        }
        if !backoff.wait_after(began, after > before).await {
            return Err(failure);
        }
        resumes.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// Two players join the pool; each waits for its match and acknowledges it. Returns the waits.
async fn join_pair(
    c: MatchmakingServiceClient<Channel>,
    token: Option<String>,
    names: [String; 2],
    time_control: String,
) -> Vec<Result<Duration, Status>> {
    let mut waits = Vec::new();
    let tasks: Vec<_> = names
        .into_iter()
        .map(|player| {
            let (mut c, token, time_control) = (c.clone(), token.clone(), time_control.clone());
            tokio::spawn(async move {
                let began = Instant::now();
                let message = mm::JoinRequest {
                    player_id: player.clone(),
                    variant: common::Variant::Chess as i32,
                    time_control,
                    rated: false,
                    ..Default::default()
                };
                let request = match &token {
                    Some(t) => keyed(message, t)?,
                    None => tonic::Request::new(message),
                };
                let mut stream = c.join(request).await?.into_inner();
                while let Some(event) = stream.message().await? {
                    if let Some(mm::join_response::Event::MatchFound(found)) = event.event {
                        let waited = began.elapsed();
                        let ack = mm::AcknowledgeRequest {
                            player_id: player,
                            match_id: found.match_id,
                        };
                        let request = match &token {
                            Some(t) => keyed(ack, t)?,
                            None => tonic::Request::new(ack),
                        };
                        c.acknowledge(request).await?;
                        return Ok(waited);
                    }
                }
                Err(Status::unavailable("the Join stream ended without a match"))
            })
        })
        .collect();
    for t in tasks {
        waits.push(
            t.await
                .unwrap_or_else(|e| Err(Status::internal(e.to_string()))),
        );
    }
    waits
}

/// Connections for the streams: `n` channels to the same address.
fn connections(first: &Channel, extra: &[Channel]) -> Vec<Channel> {
    let mut all = vec![first.clone()];
    all.extend(extra.iter().cloned());
    all
}

/// Runs the load: prepares the games and their watchers, then moves, flags and joins together
/// for `duration`. `extra` are further connections to the same address for the watch streams.
pub async fn run(
    channel: Channel,
    extra: Vec<Channel>,
    cfg: &SystemBenchConfig,
) -> Result<SystemBenchResult, Status> {
    let run = run_id();
    let setup = Tally::default();
    let began = Instant::now();
    // The clocks bench's pieces: its flagging games spread their deadlines over twice its
    // duration, so it is given half of this run's.
    let clock_cfg = ClockBenchConfig {
        games: cfg.games.max(1),
        rate: cfg.games.max(1) as f64 * cfg.moves_per_game_per_sec,
        duration: cfg.duration / 2,
        time_control: cfg.time_control.clone(),
        flags: cfg.flags,
        platform_token: cfg.platform_token.clone(),
    };
    let games = clocks::prepare(
        &channel,
        &clock_cfg,
        &cfg.time_control,
        (&run, "sys"),
        &setup,
    )
    .await?;
    let setup_secs = began.elapsed().as_secs_f64();

    let stop = Arc::new(AtomicBool::new(false));
    let (events, resumes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let conns = connections(&channel, &extra);
    let mut watchers = Vec::with_capacity(games.len());
    for (i, g) in games.iter().enumerate() {
        let id = g.lock().await.id.clone();
        let c = MatchServiceClient::new(conns[i % conns.len()].clone());
        watchers.push(tokio::spawn(follow(
            c,
            id,
            Arc::clone(&stop),
            Arc::clone(&events),
            Arc::clone(&resumes),
        )));
    }
    let watch = Arc::new(Tally::default());
    let flaggers = clocks::flagging(&channel, &clock_cfg, &run, &setup, &watch).await?;

    // Pool joins at a steady rate, in pairs, while the load runs.
    let joins = {
        let c = MatchmakingServiceClient::new(channel.clone());
        let (token, stop, run) = (cfg.platform_token.clone(), Arc::clone(&stop), run.clone());
        let interval = Duration::from_secs_f64(2.0 / cfg.joins_per_sec.max(0.001));
        let time_control = cfg.time_control.clone();
        let enabled = cfg.joins_per_sec > 0.0;
        tokio::spawn(async move {
            let mut pairs = Vec::new();
            let mut n = 0u64;
            while enabled && !stop.load(Ordering::Relaxed) {
                let names = [format!("sys-{run}-{n}a"), format!("sys-{run}-{n}b")];
                n += 1;
                pairs.push(tokio::spawn(join_pair(
                    c.clone(),
                    token.clone(),
                    names,
                    time_control.clone(),
                )));
                tokio::time::sleep(interval).await;
            }
            pairs
        })
    };

    // Progress on stderr: tools/system-load.sh samples the processes once the load runs.
    eprintln!(
        "system bench: load started ({} games, {} watchers, {} flagging games, setup {:.1} s)",
        games.len(),
        watchers.len(),
        cfg.flags,
        setup_secs
    );
    let tally = Arc::new(Tally::default());
    let stretch = clocks::load(&channel, &clock_cfg, &games, cfg.duration, &tally).await?;
    let mut moves = clocks::summary(vec![stretch]);
    moves.retries = tally.retries();
    stop.store(true, Ordering::Relaxed);

    let mut join_figures = JoinFigures::default();
    let mut waits = Vec::new();
    let pairs = joins.await.unwrap_or_default();
    for p in pairs {
        let outcome = tokio::time::timeout(Duration::from_secs(30), p).await;
        match outcome {
            Ok(Ok(results)) => {
                for r in results {
                    join_figures.joined += 1;
                    match r {
                        Ok(w) => {
                            join_figures.matched += 1;
                            waits.push(w);
                        }
                        Err(_) => join_figures.errors += 1,
                    }
                }
            }
            _ => {
                join_figures.joined += 2;
                join_figures.errors += 2;
            }
        }
    }
    waits.sort();
    let pct = |p: f64| {
        waits
            .get(((waits.len().max(1) - 1) as f64 * p).round() as usize)
            .copied()
            .unwrap_or_default()
    };
    join_figures.wait = [pct(0.5), pct(0.99)];

    let mut watch_errors = 0;
    let watcher_count = watchers.len();
    for w in watchers {
        if !matches!(w.await, Ok(Ok(()))) {
            watch_errors += 1;
        }
    }
    let (flag_delays_ms, _, flags_missed) = clocks::flag_delays(flaggers, &clock_cfg).await;
    Ok(SystemBenchResult {
        moves,
        watchers: watcher_count,
        watch_events: events.load(Ordering::Relaxed),
        watch_resumes: resumes.load(Ordering::Relaxed) + watch.retries(),
        watch_errors,
        flag_delays_ms,
        flags_missed,
        joins: join_figures,
        setup_retries: setup.retries(),
        setup_secs,
    })
}

/// The figures as a table.
pub fn report(r: &SystemBenchResult, cfg: &SystemBenchConfig, target: &str) -> String {
    let pct = |d: &[i64], p: f64| {
        d.get(((d.len().max(1) - 1) as f64 * p).round() as usize)
            .copied()
            .unwrap_or_default()
    };
    let m = &r.moves;
    let d = &r.flag_delays_ms;
    format!(
        "target {target}: {} games with clocks ({}), {:.1} moves/s each, {} s\n\
         moves: {} answered at {:.0}/s, {} errors, {} retries; latency p50 {:.2?}, p99 {:.2?}, p99.9 {:.2?}\n\
         games ended by repetition under the load (left it): {}\n\
         watchers: {} streams, {} events, {} resumed, {} failed\n\
         flags: {} detected, {} missed; detection delay p50 {} ms, p99 {} ms, max {} ms\n\
         pool joins: {} players, {} matched, {} errors; join to match p50 {:.2?}, p99 {:.2?}\n\
         setup: {:.1} s, {} retries\n",
        cfg.games,
        cfg.time_control,
        cfg.moves_per_game_per_sec,
        cfg.duration.as_secs(),
        m.moves,
        m.rate,
        m.errors,
        m.retries,
        m.latency[0],
        m.latency[1],
        m.latency[2],
        m.games_ended,
        r.watchers,
        r.watch_events,
        r.watch_resumes,
        r.watch_errors,
        d.len(),
        r.flags_missed,
        pct(d, 0.5),
        pct(d, 0.99),
        d.last().copied().unwrap_or_default(),
        r.joins.joined,
        r.joins.matched,
        r.joins.errors,
        r.joins.wait[0],
        r.joins.wait[1],
        r.setup_secs,
        r.setup_retries,
    )
}
