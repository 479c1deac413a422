//! An open-loop load on hosted games with clocks (`arbiter bench clocks` drives it).
//!
//! Many single-board chess games are created and given their two untimed first moves, so that
//! their clocks run. Moves are then sent at a fixed rate whatever the answers' speed (open loop:
//! each move's latency counts from the instant it was due, so a slow server cannot hide its
//! slowness by slowing the load), each to the next game in turn that has no move in flight,
//! with a random legal move for its side to move. The same load runs on games without a time
//! control (the reference) and on games with one, in alternated stretches.
//!
//! Meanwhile, in the clocked run, a set of other games is left to flag with no move sent, at
//! deadlines spread over the run; a watcher on each notes when the end arrives, then reads the
//! match. Two flag delays are reported: the flag detection delay, the end the server recorded
//! (`ended_at_ms`) minus the deadline it announced, both on the server's time base; and the
//! delay to the watcher, the end's arrival (this machine's clock) minus the deadline, which also
//! counts the push through the watch stream. Run the bench on the server's machine, where both
//! read the same system clock.
//!
//! Every call is idempotent (creations carry request ids unique to the run, moves their ply and
//! move), so one that fails for a reason that passes is retried; a move's latency still counts
//! from the instant it was due, retries included, and a move that fails for good is counted as
//! an error while the load goes on. A watcher whose stream breaks watches again after the last
//! event it saw.

use crate::matches::{authorized, keyed};
use crate::{RETRY, Tally, run_id};
use arbiter_core::{AnyPosition, Position, Variant};
use arbiter_kit::retry::{Backoff, transient};
use arbiter_proto::common::v1 as common;
use arbiter_proto::matches::v1 as pb;
use arbiter_proto::matches::v1::match_service_client::MatchServiceClient;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::Mutex;
use tonic::transport::Channel;
use tonic::{Request, Status};
use tonic_types::StatusExt;

/// What to run.
#[derive(Debug, Clone)]
pub struct ClockBenchConfig {
    /// Games moved by the load.
    pub games: usize,
    /// Moves sent per second.
    pub rate: f64,
    /// Load per kind (without and with clocks), in alternated stretches.
    pub duration: Duration,
    /// The time control of the clocked run (long enough not to flag under the load).
    pub time_control: String,
    /// Games left to flag during the clocked run.
    pub flags: usize,
    /// The platform token, sent in x-api-key, if the server has one.
    pub platform_token: Option<String>,
}

/// The figures of one run.
#[derive(Debug, Clone, Default)]
pub struct RunResult {
    /// Moves answered.
    pub moves: u64,
    /// Moves refused or failed (after their retries).
    pub errors: u64,
    /// Games the rules ended under the load by their history (fivefold repetition), found
    /// when their next move was refused `MATCH_OVER`: they leave the load, not an error.
    pub games_ended: u64,
    /// Attempts of moves retried.
    pub retries: u64,
    /// Move latency percentiles from the due instant: p50, p99, p99.9.
    pub latency: [Duration; 3],
    /// Moves per second achieved.
    pub rate: f64,
}

/// The figures of the bench.
#[derive(Debug, Clone, Default)]
pub struct ClockBenchResult {
    /// Games without clocks.
    pub reference: RunResult,
    /// Games with clocks.
    pub clocked: RunResult,
    /// Flag detection delays (end recorded by the server − deadline), in ms, sorted.
    pub flag_delays_ms: Vec<i64>,
    /// Delays to the watcher (end received − deadline), in ms, sorted.
    pub received_delays_ms: Vec<i64>,
    /// Flagging games whose end did not arrive within the run.
    pub flags_missed: usize,
    /// Attempts retried while creating and opening the games.
    pub setup_retries: u64,
    /// Watch streams of flagging games opened again after breaking, and their reads retried.
    pub watch_retries: u64,
}

pub(crate) struct Game {
    pub(crate) id: String,
    /// The server ended the game (see [`RunResult::games_ended`]).
    over: bool,
    tokens: [String; 2],
    position: AnyPosition,
    ply: u32,
}

fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(0))
}

fn request<T>(message: T, token: Option<&str>) -> Result<Request<T>, Status> {
    match token {
        Some(t) => keyed(message, t),
        None => Ok(Request::new(message)),
    }
}

/// Creates a chess game with `time_control` and plays both first moves; returns the game and
/// the deadline announced after them (0 without clocks). `kind` and `n` name the creation
/// within the run `run`.
async fn opened(
    c: &MatchServiceClient<Channel>,
    cfg: &ClockBenchConfig,
    time_control: &str,
    (run, kind, n): (&str, &str, usize),
    tally: &Tally,
) -> Result<(Game, u64), Status> {
    let message = pb::CreateMatchRequest {
        request_id: format!("clk-{run}-{kind}-{n}"),
        variant: common::Variant::Chess as i32,
        players: vec![format!("clk-{n}-w"), format!("clk-{n}-b")],
        time_control: time_control.to_owned(),
        ..Default::default()
    };
    let created = tally
        .call(|| {
            let mut c = c.clone();
            let r = request(message.clone(), cfg.platform_token.as_deref());
            async move { c.create_match(r?).await }
        })
        .await?
        .into_inner();
    let state = created.state.ok_or_else(|| Status::internal("no state"))?;
    let token = |side: pb::Side| {
        created
            .seats
            .iter()
            .find(|s| s.seat.as_ref().is_some_and(|x| x.side == side as i32))
            .map(|s| s.token.clone())
            .unwrap_or_default()
    };
    let mut game = Game {
        id: state.match_id,
        tokens: [token(pb::Side::White), token(pb::Side::Black)],
        position: AnyPosition::start(Variant::Chess)
            .map_err(|e| Status::internal(e.to_string()))?,
        ply: 0,
        over: false,
    };
    let mut deadline = 0;
    for mv in ["e2e4", "e7e5"] {
        let r = play(c, &game, mv, tally).await?;
        deadline = r
            .state
            .and_then(|s| s.boards.first().and_then(|b| b.clock))
            .map_or(0, |c| c.deadline_ms);
        advance(&mut game, mv)?;
    }
    Ok((game, deadline))
}

/// Plays `uci` for the side to move (retried: a repeat is answered with the move as applied).
async fn play(
    c: &MatchServiceClient<Channel>,
    game: &Game,
    uci: &str,
    tally: &Tally,
) -> Result<pb::MakeMoveResponse, Status> {
    let side = game.position.turn();
    let (side_pb, token) = match side {
        arbiter_core::Color::White => (pb::Side::White, &game.tokens[0]),
        arbiter_core::Color::Black => (pb::Side::Black, &game.tokens[1]),
    };
    let message = pb::MakeMoveRequest {
        match_id: game.id.clone(),
        side: side_pb as i32,
        r#move: uci.to_owned(),
        expected_ply: game.ply,
        request_id: format!("{}-{uci}", game.ply),
        ..Default::default()
    };
    Ok(tally
        .call(|| {
            let mut c = c.clone();
            let r = authorized(message.clone(), token);
            async move { c.make_move(r?).await }
        })
        .await?
        .into_inner())
}

fn advance(game: &mut Game, uci: &str) -> Result<(), Status> {
    let m = game
        .position
        .parse_move(
            uci,
            arbiter_core::Notation::Uci,
            arbiter_core::Locale::English,
        )
        .map_err(|e| Status::internal(e.to_string()))?;
    game.position = game
        .position
        .play(m)
        .ok_or_else(|| Status::internal("illegal move"))?;
    game.ply += 1;
    Ok(())
}

pub(crate) type Games = Vec<Arc<Mutex<Game>>>;

/// The games of a run, created with `time_control` and opened (`kind` names them in the run).
pub(crate) async fn prepare(
    channel: &Channel,
    cfg: &ClockBenchConfig,
    time_control: &str,
    (run, kind): (&str, &str),
    tally: &Tally,
) -> Result<Games, Status> {
    let mut games = Vec::with_capacity(cfg.games);
    let c = MatchServiceClient::new(channel.clone());
    for n in 0..cfg.games {
        games.push(Arc::new(Mutex::new(
            opened(&c, cfg, time_control, (run, kind, n), tally)
                .await?
                .0,
        )));
    }
    Ok(games)
}

/// Reads `game` back after a move whose answer was lost for good (it may have been applied),
/// so that its next move is judged on the board as stored. Best effort: a failed read leaves
/// the game as it was.
async fn resync(c: &MatchServiceClient<Channel>, game: &mut Game, tally: &Tally) {
    let id = game.id.clone();
    let read = tally
        .call(|| {
            let mut c = c.clone();
            let request = pb::GetMatchRequest {
                match_id: id.clone(),
            };
            async move { c.get_match(request).await }
        })
        .await;
    if let Ok(r) = read
        && let Some(board) = r
            .into_inner()
            .state
            .and_then(|s| s.boards.into_iter().next())
        && let Ok(position) = AnyPosition::from_text(Variant::Chess, &board.position)
    {
        game.position = position;
        game.ply = board.ply;
    }
}

/// Latencies, refused or skipped moves, and seconds of one stretch of load.
pub(crate) struct Stretch {
    latencies: Vec<Duration>,
    errors: u64,
    ended: u64,
    secs: f64,
}

/// One open-loop stretch of `length` over `games`, its retries counted in `tally`.
pub(crate) async fn load(
    channel: &Channel,
    cfg: &ClockBenchConfig,
    games: &Games,
    length: Duration,
    tally: &Arc<Tally>,
) -> Result<Stretch, Status> {
    let c = MatchServiceClient::new(channel.clone());
    let interval = Duration::from_secs_f64(1.0 / cfg.rate.max(1.0));
    let start = Instant::now();
    let end = start + length;
    let results = Arc::new(std::sync::Mutex::new((Vec::new(), 0u64, 0u64)));
    // Finished moves are reaped as the load goes: a long run spawns hundreds of thousands.
    let mut tasks = tokio::task::JoinSet::new();
    let mut next = 0usize;
    let mut due = start;
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    while due < end {
        tokio::time::sleep_until(due.into()).await;
        // The next game with no move in flight (its lock is free).
        let mut picked = None;
        for _ in 0..games.len() {
            let g = Arc::clone(&games[next % games.len()]);
            next += 1;
            if let Ok(guard) = g.try_lock_owned()
                && !guard.over
            {
                picked = Some(guard);
                break;
            }
        }
        let scheduled = due;
        due += interval;
        let Some(mut game) = picked else { continue };
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let pick = rng;
        let (results, c, tally) = (Arc::clone(&results), c.clone(), Arc::clone(tally));
        while tasks.try_join_next().is_some() {}
        tasks.spawn(async move {
            // A move after which the game goes on, when there is one: a game that ended would
            // leave its share of the load without a move to send.
            let legal = game.position.legal_moves();
            let lasting: Vec<_> = legal
                .iter()
                .copied()
                .filter(|&m| {
                    game.position
                        .play(m)
                        .is_some_and(|p| p.terminal().is_none())
                })
                .collect();
            let choices = if lasting.is_empty() {
                &legal[..]
            } else {
                &lasting[..]
            };
            let mut unknown = false;
            let mut ended = false;
            let ok = if choices.is_empty() || game.position.terminal().is_some() {
                false
            } else {
                let uci = choices[(pick % choices.len() as u64) as usize].to_string();
                match play(&c, &game, &uci, &tally).await {
                    Ok(_) => advance(&mut game, &uci).is_ok(),
                    // Ended by a rule that needs the game's history (fivefold repetition):
                    // the game leaves the load, its share goes to the others.
                    Err(e)
                        if e.get_details_error_info()
                            .is_some_and(|i| i.reason == "MATCH_OVER") =>
                    {
                        game.over = true;
                        ended = true;
                        false
                    }
                    Err(e) => {
                        unknown = transient(&e);
                        false
                    }
                }
            };
            let latency = scheduled.elapsed();
            if unknown {
                // The move may have been applied: play on from the board as stored.
                resync(&c, &mut game, &tally).await;
            }
            drop(game);
            let mut r = results.lock().expect("not poisoned");
            if ok {
                r.0.push(latency);
            } else if ended {
                r.2 += 1;
            } else {
                r.1 += 1;
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    let secs = start.elapsed().as_secs_f64();
    let (latencies, errors, ended) = std::mem::take(&mut *results.lock().expect("not poisoned"));
    Ok(Stretch {
        latencies,
        errors,
        ended,
        secs,
    })
}

/// The figures of stretches of one kind.
pub(crate) fn summary(stretches: Vec<Stretch>) -> RunResult {
    let secs: f64 = stretches.iter().map(|s| s.secs).sum();
    let errors = stretches.iter().map(|s| s.errors).sum();
    let games_ended = stretches.iter().map(|s| s.ended).sum();
    let mut latencies: Vec<Duration> = stretches.into_iter().flat_map(|s| s.latencies).collect();
    latencies.sort();
    let pct = |p: f64| {
        latencies
            .get(((latencies.len().max(1) - 1) as f64 * p).round() as usize)
            .copied()
            .unwrap_or_default()
    };
    RunResult {
        moves: latencies.len() as u64,
        errors,
        games_ended,
        retries: 0,
        latency: [pct(0.5), pct(0.99), pct(0.999)],
        rate: latencies.len() as f64 / secs.max(1e-9),
    }
}

/// A flagging game's watcher: (end recorded − deadline, end received − deadline), in ms.
pub(crate) type Watcher = tokio::task::JoinHandle<Result<Option<(i64, i64)>, Status>>;

/// Follows `id`'s events after `*after` (moved past each event seen) until its end; returns
/// the end's arrival (this machine's Unix ms). A stream that ends before the end event is
/// `UNAVAILABLE`.
async fn until_end(
    w: &mut MatchServiceClient<Channel>,
    id: &str,
    after: &mut u64,
) -> Result<i64, Status> {
    let mut stream = w
        .watch_match(pb::WatchMatchRequest {
            match_id: id.to_owned(),
            after_seq: *after,
        })
        .await?
        .into_inner();
    while let Some(e) = stream.message().await? {
        *after = e.seq;
        if matches!(e.event, Some(pb::watch_match_response::Event::End(_))) {
            return Ok(unix_ms());
        }
    }
    Err(Status::unavailable(
        "the watch stream ended before the match",
    ))
}

/// Games that will flag during the next run, each watched by a task that returns its delays.
pub(crate) async fn flagging(
    channel: &Channel,
    cfg: &ClockBenchConfig,
    run: &str,
    setup: &Tally,
    watch: &Arc<Tally>,
) -> Result<Vec<Watcher>, Status> {
    let c = MatchServiceClient::new(channel.clone());
    // Spread over both loads (they alternate for twice the duration).
    let span = (cfg.duration.as_secs() * 2).saturating_sub(4).max(1);
    let mut watchers = Vec::new();
    for n in 0..cfg.flags {
        // Deadlines spread over the run: 3 s and up, a second apart in turn.
        let secs = 3 + (n as u64 % span);
        let (game, deadline) = opened(
            &c,
            cfg,
            &format!("{secs}s+0"),
            (run, "flag", 1_000_000 + n),
            setup,
        )
        .await?;
        let mut w = MatchServiceClient::new(channel.clone());
        let tally = Arc::clone(watch);
        watchers.push(tokio::spawn(async move {
            // A broken stream is watched again after the last event seen, with backoff
            // ([`Backoff::wait_after`]: a stream that worked a while starts a new run).
            let (mut after, mut backoff) = (0, Backoff::new(RETRY));
            let arrived = loop {
                let (before, began) = (after, tokio::time::Instant::now());
                let e = match until_end(&mut w, &game.id, &mut after).await {
                    Ok(arrived) => break arrived,
                    Err(e) if transient(&e) => e,
                    Err(e) => return Err(e),
                };
                if !backoff.wait_after(began, after > before).await {
                    return Err(e);
                }
                tally.retried();
            };
            let received = arrived - deadline as i64;
            let state = tally
                .call(|| {
                    let mut w = w.clone();
                    let request = pb::GetMatchRequest {
                        match_id: game.id.clone(),
                    };
                    async move { w.get_match(request).await }
                })
                .await?
                .into_inner()
                .state
                .ok_or_else(|| Status::internal("no state"))?;
            let recorded = state.ended_at_ms as i64 - deadline as i64;
            Ok::<_, Status>(Some((recorded, received)))
        }));
    }
    Ok(watchers)
}

/// The delays the watchers saw (recorded, received), each sorted, and how many saw no end in
/// time.
pub(crate) async fn flag_delays(
    watchers: Vec<Watcher>,
    cfg: &ClockBenchConfig,
) -> (Vec<i64>, Vec<i64>, usize) {
    let (mut recorded, mut received) = (Vec::new(), Vec::new());
    let mut missed = 0;
    for w in watchers {
        match tokio::time::timeout(cfg.duration + Duration::from_secs(15), w).await {
            Ok(Ok(Ok(Some((a, b))))) => {
                recorded.push(a);
                received.push(b);
            }
            _ => missed += 1,
        }
    }
    recorded.sort_unstable();
    received.sort_unstable();
    (recorded, received, missed)
}

/// Stretches of load each way, alternated so that drift (a growing store, a busy machine)
/// weighs on both alike.
pub const ROUNDS: u32 = 4;

/// Prepares both sets of games (without and with clocks) and the flagging games, then runs
/// [`ROUNDS`] alternated stretches of each load, `duration` in all per kind.
pub async fn run(channel: Channel, cfg: &ClockBenchConfig) -> Result<ClockBenchResult, Status> {
    let run = run_id();
    let (setup, watch) = (Tally::default(), Arc::new(Tally::default()));
    let plain = prepare(&channel, cfg, "", (&run, "ref"), &setup).await?;
    let timed = prepare(&channel, cfg, &cfg.time_control, (&run, "clk"), &setup).await?;
    let watchers = flagging(&channel, cfg, &run, &setup, &watch).await?;
    let length = cfg.duration / ROUNDS;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let (a_tally, b_tally) = (Arc::new(Tally::default()), Arc::new(Tally::default()));
    for _ in 0..ROUNDS {
        a.push(load(&channel, cfg, &plain, length, &a_tally).await?);
        b.push(load(&channel, cfg, &timed, length, &b_tally).await?);
    }
    let (mut reference, mut clocked) = (summary(a), summary(b));
    reference.retries = a_tally.retries();
    clocked.retries = b_tally.retries();
    let (flag_delays_ms, received_delays_ms, flags_missed) = flag_delays(watchers, cfg).await;
    Ok(ClockBenchResult {
        reference,
        clocked,
        flag_delays_ms,
        received_delays_ms,
        flags_missed,
        setup_retries: setup.retries(),
        watch_retries: watch.retries(),
    })
}

/// The figures as a table.
pub fn report(r: &ClockBenchResult, cfg: &ClockBenchConfig, store: &str) -> String {
    let row = |name: &str, x: &RunResult| {
        format!(
            "{name:<10} {store:<11} {:>6} {:>8.0} {:>8} {:>6} {:>7}   {:>9.2?} {:>9.2?} {:>9.2?}\n",
            cfg.games,
            x.rate,
            x.moves,
            x.errors,
            x.retries,
            x.latency[0],
            x.latency[1],
            x.latency[2]
        )
    };
    let ratio = |i: usize| {
        r.clocked.latency[i].as_secs_f64() / r.reference.latency[i].as_secs_f64().max(1e-9)
    };
    let pct = |d: &[i64], p: f64| {
        d.get(((d.len().max(1) - 1) as f64 * p).round() as usize)
            .copied()
            .unwrap_or_default()
    };
    let (d, e) = (&r.flag_delays_ms, &r.received_delays_ms);
    format!(
        "run        store        games  moves/s    moves errors retries   move p50     p99       p99.9\n{}{}\
         clocked/reference latency: p50 {:.2}, p99 {:.2}, p99.9 {:.2}\n\
         flags: {} detected, {} missed\n\
         retries: {} while creating and opening games, {} by the flags' watchers\n\
         flag detection (end recorded - deadline): p50 {} ms, p99 {} ms, max {} ms\n\
         to the watcher (end received - deadline): p50 {} ms, p99 {} ms, max {} ms\n",
        row("reference", &r.reference),
        row("clocked", &r.clocked),
        ratio(0),
        ratio(1),
        ratio(2),
        d.len(),
        r.flags_missed,
        r.setup_retries,
        r.watch_retries,
        pct(d, 0.5),
        pct(d, 0.99),
        d.last().copied().unwrap_or_default(),
        pct(e, 0.5),
        pct(e, 0.99),
        e.last().copied().unwrap_or_default(),
    )
}
