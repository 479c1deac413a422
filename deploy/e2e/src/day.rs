//! A platform's day on the compose topology, as one scenario: pools, matches played with seat
//! tokens and running clocks under watchers, a batch job on the workers, and the faults of a
//! real deployment while all of it is in flight. The module documentation of the crate lists
//! what each step checks.

use crate::client::{PROXY, Retries, bearer, channel, replica_address};
use crate::compose::Topology;
use crate::games::{OPERA, Rng, board_position, piece_count, play_uci, quiet_move};
use arbiter_core::Variant;
use arbiter_proto::analysis::v1 as an;
use arbiter_proto::analysis::v1::analysis_service_client::AnalysisServiceClient;
use arbiter_proto::common::v1 as common;
use arbiter_proto::matches::v1 as pb;
use arbiter_proto::matches::v1::match_service_client::MatchServiceClient;
use arbiter_proto::matchmaking::v1 as mm;
use arbiter_proto::matchmaking::v1::matchmaking_service_client::MatchmakingServiceClient;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;
use tonic::transport::Channel;
use tonic::{Code, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};
use tonic_types::StatusExt;

/// What to run.
#[derive(Clone, Debug)]
pub struct DayConfig {
    /// The repository's root (the compose file and scripts are found from it).
    pub root: PathBuf,
    /// The pools' time control: long enough that the paced games never flag, short enough that
    /// the game left to flag does so within the day.
    pub time_control: String,
    /// The node limit of each position of the batch job (deterministic work; sized so that the
    /// job is still running through the faults).
    pub job_nodes: u64,
    /// Games in the batch job.
    pub job_games: usize,
    /// Plies per batch game.
    pub job_plies: usize,
    /// Seconds between the plies of the scripted games.
    pub script_pace: Duration,
    /// Seconds between the plies of the random games.
    pub random_pace: Duration,
}

impl DayConfig {
    /// The day as `.ci/run` runs it.
    pub fn new(root: PathBuf) -> DayConfig {
        DayConfig {
            root,
            time_control: "1+2".to_owned(),
            job_nodes: 150_000,
            job_games: 20,
            job_plies: 40,
            script_pace: Duration::from_millis(2_000),
            random_pace: Duration::from_millis(900),
        }
    }
}

/// The time on this machine, as Unix ms (the servers' time base is Redis's clock, on the same
/// host).
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Prints a step of the day with the seconds since it began.
fn say(began: Instant, text: &str) {
    println!("e2e [{:6.1}s] {text}", began.elapsed().as_secs_f64());
}

fn fail<T>(text: impl Into<String>) -> Result<T, String> {
    Err(text.into())
}

fn status_text(what: &str, s: &Status) -> String {
    format!("{what}: {:?} {}", s.code(), s.message())
}

/// The `google.rpc.ErrorInfo` reason of a status, if any.
fn reason(s: &Status) -> Option<String> {
    s.get_details_error_info().map(|i| i.reason)
}

/// The shared parts of the day's tasks.
#[derive(Debug)]
struct Ctx {
    proxy: Channel,
    platform_token: String,
    retries: Retries,
    run: String,
}

impl Ctx {
    fn matches(&self) -> MatchServiceClient<Channel> {
        MatchServiceClient::new(self.proxy.clone())
    }

    fn matchmaking(&self) -> MatchmakingServiceClient<Channel> {
        MatchmakingServiceClient::new(self.proxy.clone())
    }

    fn analysis(&self) -> AnalysisServiceClient<Channel> {
        AnalysisServiceClient::new(self.proxy.clone())
    }

    async fn get_match(&self, id: &str) -> Result<pb::MatchState, String> {
        let c = self.matches();
        self.retries
            .call(|| {
                let mut c = c.clone();
                async move {
                    c.get_match(pb::GetMatchRequest {
                        match_id: id.to_owned(),
                    })
                    .await
                }
            })
            .await
            .map(|r| r.into_inner().state.unwrap_or_default())
            .map_err(|s| status_text(&format!("GetMatch {id}"), &s))
    }

    fn analysis_request<T>(&self, message: T) -> tonic::Request<T> {
        let mut r = tonic::Request::new(message);
        r.metadata_mut().insert(
            "x-client-id",
            tonic::metadata::MetadataValue::from_static("e2e"),
        );
        r
    }
}

/// The ending each chess match of the pool is given (the bughouse match ends in mate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Both first moves, then White never moves again: the server flags White.
    Flag,
    /// Random quiet moves, then the side to move resigns.
    Resign,
    /// Random quiet moves, then both sides offer a draw.
    Draw,
    /// The Opera game, ending in mate.
    Mate,
    /// Bughouse: the Opera game on board A, random quiet moves on board B.
    Bughouse,
}

/// A match found through matchmaking, with its seats' tokens.
#[derive(Debug)]
struct Hosted {
    id: String,
    role: Role,
    /// (board, side) → (token, player).
    seats: BTreeMap<(u32, u32), (String, String)>,
    /// Per board (index 0 = A): the moves the players saw applied, in order (server's UCI).
    ledgers: [Mutex<Vec<String>>; 2],
}

impl Hosted {
    fn token(&self, board: u32, side: u32) -> Result<&str, String> {
        let board = board.max(1);
        self.seats
            .get(&(board, side))
            .map(|(t, _)| t.as_str())
            .ok_or_else(|| format!("match {}: no seat {board}/{side}", self.id))
    }

    fn moves(&self) -> usize {
        self.ledgers
            .iter()
            .map(|l| l.lock().map_or(0, |l| l.len()))
            .sum()
    }
}

/// What a board's driver plays.
#[derive(Clone, Copy, Debug)]
enum Plan {
    /// These plies in order, at `pace`; with `hold_last`, the last one only once the day says
    /// finish.
    Script {
        moves: &'static [&'static str],
        hold_last: bool,
    },
    /// Random moves that give no check, until the day says finish.
    Quiet { seed: u64 },
}

/// Plays one board of a match for both of its seats until the plan ends or the match does.
async fn drive(
    ctx: Arc<Ctx>,
    m: Arc<Hosted>,
    variant: Variant,
    board: u32,
    plan: Plan,
    pace: Duration,
    mut finish: watch::Receiver<bool>,
) -> Result<(), String> {
    let c = ctx.matches();
    let bi = board.saturating_sub(1) as usize;
    let mut rng = match plan {
        Plan::Quiet { seed } => Rng::new(seed),
        Plan::Script { .. } => Rng::new(1),
    };
    loop {
        let state = ctx.get_match(&m.id).await?;
        if state.outcome.is_some() {
            return Ok(());
        }
        let Some(b) = state.boards.get(bi).cloned() else {
            return fail(format!("match {}: no board {board}", m.id));
        };
        let ply = b.ply;
        let mv = match plan {
            Plan::Script { moves, hold_last } => {
                let Some(&mv) = moves.get(ply as usize) else {
                    return Ok(());
                };
                if hold_last && ply as usize + 1 == moves.len() && !*finish.borrow() {
                    let _ = finish.changed().await;
                    continue;
                }
                mv.to_owned()
            }
            Plan::Quiet { .. } => {
                if *finish.borrow() {
                    return Ok(());
                }
                let position = board_position(variant, &b.position)?;
                match quiet_move(&position, &mut rng) {
                    Some(mv) => mv,
                    None => {
                        // A bughouse player waiting for a piece from the other board.
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        continue;
                    }
                }
            }
        };
        let side = b.side_to_move;
        let token = m.token(board, side as u32)?.to_owned();
        let request = pb::MakeMoveRequest {
            match_id: m.id.clone(),
            board: if variant == Variant::Bughouse {
                board as i32
            } else {
                0
            },
            side,
            r#move: mv.clone(),
            expected_ply: ply,
            request_id: format!("move-{board}-{ply}"),
            ..Default::default()
        };
        let answer = ctx
            .retries
            .call(|| {
                let mut c = c.clone();
                let r = bearer(request.clone(), &token);
                async move { c.make_move(r).await }
            })
            .await;
        match answer {
            Ok(r) => {
                let r = r.into_inner();
                let played = r.r#move.unwrap_or_default();
                if played.ply != ply + 1 {
                    return fail(format!(
                        "match {} board {board}: {mv} at ply {ply} answered ply {}",
                        m.id, played.ply
                    ));
                }
                let uci = played.r#move.map(|m| m.uci).unwrap_or_default();
                let mut ledger = m.ledgers[bi].lock().map_err(|e| e.to_string())?;
                if ledger.len() != ply as usize {
                    return fail(format!(
                        "match {} board {board}: the players saw {} moves, the board {ply}",
                        m.id,
                        ledger.len()
                    ));
                }
                ledger.push(uci);
            }
            Err(s) if reason(&s).as_deref() == Some("MATCH_OVER") => return Ok(()),
            Err(s) => {
                return fail(status_text(
                    &format!("MakeMove {mv} in {} board {board} ply {ply}", m.id),
                    &s,
                ));
            }
        }
        tokio::select! {
            () = tokio::time::sleep(pace) => {}
            _ = finish.changed(), if matches!(plan, Plan::Quiet { .. }) => {}
        }
    }
}

/// Everything a watcher received, and how often its stream had to be opened again.
#[derive(Debug, Default)]
struct Watched {
    events: Vec<pb::WatchMatchResponse>,
    reconnects: u32,
    /// Sequence numbers that did not follow the previous one.
    gaps: Vec<String>,
}

/// Follows a match from its first event to its end, resuming after the last event seen
/// whenever the stream breaks or ends early (a replica restarting ends its streams).
async fn watch_match(ctx: Arc<Ctx>, id: String) -> Result<Watched, String> {
    let c = ctx.matches();
    let mut w = Watched::default();
    loop {
        let after_seq = w.events.last().map_or(0, |e| e.seq);
        let stream = ctx
            .retries
            .call(|| {
                let mut c = c.clone();
                let id = id.clone();
                async move {
                    c.watch_match(pb::WatchMatchRequest {
                        match_id: id,
                        after_seq,
                    })
                    .await
                }
            })
            .await;
        let mut stream = match stream {
            Ok(s) => s.into_inner(),
            Err(s) => return fail(status_text(&format!("WatchMatch {id}"), &s)),
        };
        // The stream ends (a replica shutting down) or breaks (one killed): resume.
        while let Ok(Some(event)) = stream.message().await {
            let last = w.events.last().map_or(0, |e| e.seq);
            if event.seq != last + 1 {
                w.gaps.push(format!("{} after {last}", event.seq));
            }
            let end = matches!(event.event, Some(pb::watch_match_response::Event::End(_)));
            w.events.push(event);
            if end {
                return Ok(w);
            }
        }
        w.reconnects += 1;
        ctx.retries.add();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Joins a pool and waits for the match, then acknowledges it.
async fn join(
    ctx: Arc<Ctx>,
    player: String,
    variant: common::Variant,
    time_control: String,
) -> Result<mm::MatchFound, String> {
    let mut c = ctx.matchmaking();
    let request = mm::JoinRequest {
        player_id: player.clone(),
        variant: variant as i32,
        time_control,
        rated: true,
        ..Default::default()
    };
    let mut stream = c
        .join(bearer(request, &ctx.platform_token))
        .await
        .map_err(|s| status_text(&format!("Join {player}"), &s))?
        .into_inner();
    loop {
        match stream.message().await {
            Ok(Some(mm::JoinResponse {
                event: Some(mm::join_response::Event::MatchFound(found)),
            })) => {
                c.acknowledge(bearer(
                    mm::AcknowledgeRequest {
                        player_id: player.clone(),
                        match_id: found.match_id.clone(),
                    },
                    &ctx.platform_token,
                ))
                .await
                .map_err(|s| status_text(&format!("Acknowledge {player}"), &s))?;
                return Ok(found);
            }
            Ok(Some(_)) => {}
            Ok(None) => return fail(format!("{player}: the Join stream ended without a match")),
            Err(s) => return fail(status_text(&format!("Join {player}"), &s)),
        }
    }
}

/// The batch job's games: random quiet games from the start, the same on every run.
fn job_games(games: usize, plies: usize) -> Result<Vec<an::GameMoves>, String> {
    let mut out = Vec::with_capacity(games);
    for g in 0..games {
        let mut rng = Rng::new(1_000 + g as u64);
        let mut position = board_position(Variant::Chess, "")?;
        let mut moves = Vec::new();
        for _ in 0..plies {
            let Some(mv) = quiet_move(&position, &mut rng) else {
                break;
            };
            position = play_uci(&position, &mv).map_err(|e| format!("job game {g}: {e}"))?;
            moves.push(mv);
        }
        out.push(an::GameMoves {
            start: Some(common::Position {
                variant: common::Variant::Chess as i32,
                ..Default::default()
            }),
            moves,
            notation: 0,
        });
    }
    Ok(out)
}

/// Reads the job's status (retried).
async fn job_status(ctx: &Ctx, job_id: &str) -> Result<an::JobStatus, String> {
    let c = ctx.analysis();
    ctx.retries
        .call(|| {
            let mut c = c.clone();
            let r = ctx.analysis_request(an::GetJobRequest {
                job_id: job_id.to_owned(),
            });
            async move { c.get_job(r).await }
        })
        .await
        .map(|r| r.into_inner().status.unwrap_or_default())
        .map_err(|s| status_text("GetJob", &s))
}

/// Fails unless the job still has games to analyse (a fault is meant to meet it in flight).
async fn in_flight(d: &Day<'_>, job_id: &str, fault: &str) -> Result<(), String> {
    let s = job_status(&d.ctx, job_id).await?;
    if s.games_done >= s.games {
        return fail(format!(
            "the batch job finished before {fault}: raise --job-nodes ({s:?})"
        ));
    }
    say(
        d.began,
        &format!(
            "{fault} meets the job at {}/{} games, {}/{} positions",
            s.games_done, s.games, s.positions_done, s.positions
        ),
    );
    Ok(())
}

/// The health of `service` on one replica's own port, asked once.
async fn replica_health(replica: &str, service: &str) -> Result<ServingStatus, String> {
    let address = replica_address(replica).ok_or_else(|| format!("no port for {replica}"))?;
    let mut h = HealthClient::new(channel(address)?);
    let mut r = tonic::Request::new(HealthCheckRequest {
        service: service.to_owned(),
    });
    r.set_timeout(Duration::from_secs(2));
    match h.check(r).await {
        Ok(r) => Ok(r.into_inner().status()),
        Err(s) => fail(status_text(&format!("health of {replica}"), &s)),
    }
}

/// Polls a replica's health of `service` until it is `want`.
async fn await_health(
    replica: &str,
    service: &str,
    want: ServingStatus,
    timeout: Duration,
) -> Result<Duration, String> {
    let began = Instant::now();
    let mut seen = String::new();
    while began.elapsed() < timeout {
        match replica_health(replica, service).await {
            Ok(s) if s == want => return Ok(began.elapsed()),
            Ok(s) => seen = format!("{s:?}"),
            Err(e) => seen = e,
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    fail(format!(
        "{replica} {service}: not {want:?} within {timeout:?} (last: {seen})"
    ))
}

/// Runs a blocking topology command off the async workers.
async fn blocking<T: Send + 'static>(
    topology: &Arc<Topology>,
    f: impl FnOnce(&Topology) -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let t = Arc::clone(topology);
    tokio::task::spawn_blocking(move || f(&t))
        .await
        .map_err(|e| format!("topology task: {e}"))?
}

/// The per-colour piece counts of a bughouse match, both boards and every reserve together.
fn bughouse_pieces(state: &pb::MatchState) -> (usize, usize) {
    state.boards.iter().fold((0, 0), |(w, b), board| {
        let (bw, bb) = piece_count(&board.position, &board.white_reserve, &board.black_reserve);
        (w + bw, b + bb)
    })
}

/// Plies per board of every match.
async fn plies(ctx: &Ctx, hosted: &[Arc<Hosted>]) -> Result<Vec<Vec<u32>>, String> {
    let mut out = Vec::new();
    for m in hosted {
        let s = ctx.get_match(&m.id).await?;
        out.push(s.boards.iter().map(|b| b.ply).collect());
    }
    Ok(out)
}

fn total_moves(hosted: &[Arc<Hosted>]) -> usize {
    hosted.iter().map(|m| m.moves()).sum()
}

/// Runs the whole day; `Ok` carries the summary printed at the end.
///
/// # Errors
/// The first check that failed, with what was seen.
pub async fn run(cfg: DayConfig) -> Result<String, String> {
    let began = Instant::now();
    say(began, "images and topology: up");
    let topology = {
        let root = cfg.root.clone();
        tokio::task::spawn_blocking(move || Topology::up(root, Duration::from_secs(90)))
            .await
            .map_err(|e| e.to_string())??
    };
    let topology = Arc::new(topology);
    say(began, "every container healthy");
    let result = day(&cfg, &topology, began).await;
    let topology = Arc::try_unwrap(topology)
        .map_err(|_| "the topology is still shared at the end".to_owned())?;
    match result {
        Ok(summary) => {
            say(began, "down -v");
            topology.down()?;
            say(began, "no container, network or volume left");
            Ok(summary)
        }
        Err(e) => {
            topology.logs();
            drop(topology);
            Err(e)
        }
    }
}

/// What every step of the day shares.
#[derive(Debug)]
struct Day<'a> {
    cfg: &'a DayConfig,
    ctx: Arc<Ctx>,
    topology: &'a Arc<Topology>,
    began: Instant,
}

/// Each player's variant, match, board and side.
type Players = BTreeMap<String, (Variant, Arc<Hosted>, u32, u32)>;

type Drivers = Vec<tokio::task::JoinHandle<Result<(), String>>>;

type Watchers = Vec<tokio::task::JoinHandle<Result<Watched, String>>>;

async fn day(cfg: &DayConfig, topology: &Arc<Topology>, began: Instant) -> Result<String, String> {
    let platform_token = std::fs::read_to_string(cfg.root.join("deploy/secrets/platform-token"))
        .map_err(|e| format!("deploy/secrets/platform-token: {e}"))?
        .trim()
        .to_owned();
    let ctx = Arc::new(Ctx {
        proxy: channel(PROXY)?,
        platform_token,
        retries: Retries::default(),
        run: format!("{}", now_ms()),
    });
    let mut summary = Vec::new();
    let d = Day {
        cfg,
        ctx: Arc::clone(&ctx),
        topology,
        began,
    };
    let (hosted, players) = pair(&d).await?;
    // Watchers on every match, then the players.
    let watchers: Vec<_> = hosted
        .iter()
        .map(|m| tokio::spawn(watch_match(Arc::clone(&ctx), m.id.clone())))
        .collect();
    let (finish_tx, finish_rx) = watch::channel(false);
    let mut drivers = Vec::new();
    for (i, m) in hosted.iter().enumerate() {
        let spawn = |variant, board, plan, pace| {
            tokio::spawn(drive(
                Arc::clone(&ctx),
                Arc::clone(m),
                variant,
                board,
                plan,
                pace,
                finish_rx.clone(),
            ))
        };
        let opera = Plan::Script {
            moves: &OPERA,
            hold_last: true,
        };
        let quiet = Plan::Quiet { seed: 7 + i as u64 };
        match m.role {
            Role::Bughouse => {
                drivers.push(spawn(Variant::Bughouse, 1, opera, cfg.script_pace));
                drivers.push(spawn(Variant::Bughouse, 2, quiet, cfg.random_pace));
            }
            Role::Flag => drivers.push(spawn(
                Variant::Chess,
                1,
                Plan::Script {
                    moves: &OPERA[..2],
                    hold_last: false,
                },
                Duration::from_millis(200),
            )),
            Role::Mate => drivers.push(spawn(Variant::Chess, 1, opera, cfg.script_pace)),
            Role::Resign | Role::Draw => {
                drivers.push(spawn(Variant::Chess, 1, quiet, cfg.random_pace));
            }
        }
    }

    let (job_id, moves_in_job) = submit_job(&d).await?;
    let (flag, flag_deadline) = flag_game(&d, &hosted).await?;
    kill_worker(&d, &job_id).await?;
    players_on(&mut drivers).await?;
    rolling_upgrade(&d, &hosted).await?;
    players_on(&mut drivers).await?;
    restart_redis(&d, &hosted, &job_id).await?;
    players_on(&mut drivers).await?;
    cut_network(&d, &hosted, &job_id, &flag).await?;
    players_on(&mut drivers).await?;
    summary.push(kill_before_flag(&d, &hosted, &job_id, &flag, flag_deadline).await?);
    players_on(&mut drivers).await?;
    let watched = endings(&d, &hosted, &finish_tx, drivers, watchers).await?;
    summary.push(check_matches(&d, &hosted, &watched).await?);
    check_ratings(&d, &hosted, &players).await?;
    summary.push(check_job(&d, &job_id, &moves_in_job).await?);
    summary.push(format!("{} retried calls in all", ctx.retries.count()));
    Ok(summary.join("; "))
}

/// Fails with a player's error as soon as one has stopped on one (a player whose plan ended, as
/// the flag game's does after its first moves, stays in the list).
async fn players_on(drivers: &mut Drivers) -> Result<(), String> {
    for d in drivers.iter_mut() {
        if d.is_finished() {
            match d.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return fail(format!("a player stopped: {e}")),
                Err(e) => return fail(format!("a player panicked: {e}")),
            }
        }
    }
    drivers.retain(|d| !d.is_finished());
    Ok(())
}

/// Step 1, pools: four bughouse players and eight chess players join through the proxy and are
/// paired; each match gets its role.
async fn pair(d: &Day<'_>) -> Result<(Vec<Arc<Hosted>>, Players), String> {
    let (cfg, ctx, began) = (d.cfg, Arc::clone(&d.ctx), d.began);
    say(began, "12 players join the bughouse and chess pools");
    let mut joins = Vec::new();
    for i in 0..12 {
        let (variant, name) = if i < 4 {
            (common::Variant::Bughouse, format!("bug{i}"))
        } else {
            (common::Variant::Chess, format!("chess{}", i - 4))
        };
        let player = format!("e2e-{}-{name}", ctx.run);
        joins.push(tokio::spawn(join(
            Arc::clone(&ctx),
            player,
            variant,
            cfg.time_control.clone(),
        )));
    }
    let mut found: BTreeMap<String, Vec<mm::MatchFound>> = BTreeMap::new();
    for j in joins {
        let f = tokio::time::timeout(Duration::from_secs(60), j)
            .await
            .map_err(|_| "no match within 60 s of joining".to_owned())?
            .map_err(|e| e.to_string())??;
        found.entry(f.match_id.clone()).or_default().push(f);
    }
    let bughouse: Vec<_> = found
        .iter()
        .filter(|(_, f)| f[0].variant == common::Variant::Bughouse as i32)
        .collect();
    if bughouse.len() != 1 || found.len() != 5 {
        return fail(format!(
            "expected 1 bughouse and 4 chess matches, got {} matches ({} bughouse)",
            found.len(),
            bughouse.len()
        ));
    }
    let mut chess_roles = [Role::Flag, Role::Resign, Role::Draw, Role::Mate].into_iter();
    let mut hosted = Vec::new();
    let mut players: BTreeMap<String, (Variant, Arc<Hosted>, u32, u32)> = BTreeMap::new();
    for (id, f) in &found {
        let bug = f[0].variant == common::Variant::Bughouse as i32;
        let want = if bug { 4 } else { 2 };
        if f.len() != want {
            return fail(format!(
                "match {id}: {} players found it, not {want}",
                f.len()
            ));
        }
        let role = if bug {
            Role::Bughouse
        } else {
            chess_roles.next().ok_or("too many chess matches")?
        };
        let seats = f
            .iter()
            .map(|x| {
                let s = x.seat.clone().unwrap_or_default();
                ((s.board.max(1), s.side), (x.token.clone(), s.player_id))
            })
            .collect();
        let m = Arc::new(Hosted {
            id: id.clone(),
            role,
            seats,
            ledgers: [Mutex::new(Vec::new()), Mutex::new(Vec::new())],
        });
        for x in f {
            let s = x.seat.clone().unwrap_or_default();
            let v = if bug {
                Variant::Bughouse
            } else {
                Variant::Chess
            };
            players.insert(s.player_id, (v, Arc::clone(&m), s.board.max(1), s.side));
        }
        hosted.push(m);
    }
    say(
        began,
        &format!(
            "paired: 1 bughouse match, 4 chess matches ({})",
            hosted
                .iter()
                .map(|m| format!("{:?} {}", m.role, m.id))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );

    Ok((hosted, players))
}

/// Step 2: The batch job: its id and each game's move count.
async fn submit_job(d: &Day<'_>) -> Result<(String, Vec<usize>), String> {
    let (cfg, ctx, began) = (d.cfg, Arc::clone(&d.ctx), d.began);
    let games = job_games(cfg.job_games, cfg.job_plies)?;
    let moves_in_job: Vec<usize> = games.iter().map(|g| g.moves.len()).collect();
    let submit = an::SubmitJobRequest {
        request_id: format!("e2e-{}", ctx.run),
        games: Some(an::submit_job_request::Games::MoveLists(an::GameList {
            games,
        })),
        per_ply: Some(an::PlyLimit {
            depth: 0,
            nodes: cfg.job_nodes,
        }),
    };
    let job = {
        let c = ctx.analysis();
        ctx.retries
            .call(|| {
                let mut c = c.clone();
                let r = ctx.analysis_request(submit.clone());
                async move { c.submit_job(r).await }
            })
            .await
            .map_err(|s| status_text("SubmitJob", &s))?
            .into_inner()
            .status
            .unwrap_or_default()
    };
    let job_id = job.job_id.clone();
    say(
        began,
        &format!(
            "batch job {job_id}: {} games, {} positions, {} nodes each",
            job.games, job.positions, cfg.job_nodes
        ),
    );

    Ok((job_id, moves_in_job))
}

/// The flag game and White's deadline, after both untimed first moves.
async fn flag_game(d: &Day<'_>, hosted: &[Arc<Hosted>]) -> Result<(Arc<Hosted>, u64), String> {
    let (ctx, began) = (Arc::clone(&d.ctx), d.began);
    let flag = hosted
        .iter()
        .find(|m| m.role == Role::Flag)
        .cloned()
        .ok_or("no flag game")?;
    let flag_deadline = {
        let wait = Instant::now();
        loop {
            let s = ctx.get_match(&flag.id).await?;
            let clock = s.boards.first().and_then(|b| b.clock);
            if let Some(c) = clock
                && c.phase == pb::ClockPhase::Running as i32
            {
                break c.deadline_ms;
            }
            if wait.elapsed() > Duration::from_secs(20) {
                return fail(format!("the flag game's clock did not start: {s:?}"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    say(
        began,
        &format!(
            "flag game {}: White's flag falls in {:.1} s",
            flag.id,
            (flag_deadline as f64 - now_ms() as f64) / 1000.0
        ),
    );

    Ok((flag, flag_deadline))
}

/// Step 3a: A worker is killed while it analyses a game of the job.
async fn kill_worker(d: &Day<'_>, job_id: &str) -> Result<(), String> {
    let (ctx, topology, began) = (Arc::clone(&d.ctx), d.topology, d.began);
    let wait = Instant::now();
    loop {
        let s = job_status(&ctx, job_id).await?;
        if s.state == an::JobState::Running as i32 && s.positions_done > 0 {
            if s.games_done >= s.games {
                return fail("the job finished before a worker could be killed: raise --job-nodes");
            }
            break;
        }
        if wait.elapsed() > Duration::from_secs(60) {
            return fail(format!("the job did not start within 60 s: {s:?}"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    blocking(topology, |t| t.kill("worker-1")).await?;
    let s = job_status(&ctx, job_id).await?;
    say(
        began,
        &format!(
            "fault: worker-1 killed mid-job ({}/{} games, {}/{} positions done)",
            s.games_done, s.games, s.positions_done, s.positions
        ),
    );
    Ok(())
}

/// Step 3b: Rolling upgrade: each matches replica in turn gets SIGTERM and starts again.
async fn rolling_upgrade(d: &Day<'_>, hosted: &[Arc<Hosted>]) -> Result<(), String> {
    let (topology, began) = (d.topology, d.began);
    for replica in ["matches-1", "matches-2"] {
        let before = total_moves(hosted);
        let t = Instant::now();
        blocking(topology, move |t| t.stop(replica)).await?;
        let stopped = t.elapsed();
        blocking(topology, move |t| t.start(replica)).await?;
        blocking(topology, move |t| {
            t.wait_healthy(&[replica], Duration::from_secs(60))
        })
        .await?;
        let after = total_moves(hosted);
        say(
            began,
            &format!(
                "fault: rolling upgrade of {replica}: stopped by SIGTERM in {:.1} s, healthy again \
                 after {:.1} s; {} moves meanwhile",
                stopped.as_secs_f64(),
                t.elapsed().as_secs_f64(),
                after - before
            ),
        );
    }
    Ok(())
}

/// Step 3c: Redis restarts: calls meanwhile answer UNAVAILABLE; nothing applied is lost.
async fn restart_redis(d: &Day<'_>, hosted: &[Arc<Hosted>], job_id: &str) -> Result<(), String> {
    let (ctx, topology, began) = (Arc::clone(&d.ctx), d.topology, d.began);
    in_flight(d, job_id, "the Redis restart").await?;
    let before = plies(&ctx, hosted).await?;
    let bug = hosted
        .iter()
        .find(|m| m.role == Role::Bughouse)
        .cloned()
        .ok_or("no bughouse match")?;
    blocking(topology, |t| t.stop("redis")).await?;
    say(began, "fault: redis stopped");
    let mut seen = Vec::new();
    let probe_deadline = Instant::now() + Duration::from_secs(20);
    for (name, kind) in [("GetMatch", 0), ("GetRatings", 1), ("GetJob", 2)] {
        loop {
            let r = match kind {
                0 => ctx
                    .matches()
                    .get_match(pb::GetMatchRequest {
                        match_id: bug.id.clone(),
                    })
                    .await
                    .map(drop),
                1 => ctx
                    .matchmaking()
                    .get_ratings(bearer(
                        mm::GetRatingsRequest {
                            player_id: "e2e-probe".to_owned(),
                        },
                        &ctx.platform_token,
                    ))
                    .await
                    .map(drop),
                _ => ctx
                    .analysis()
                    .get_job(ctx.analysis_request(an::GetJobRequest {
                        job_id: job_id.to_owned(),
                    }))
                    .await
                    .map(drop),
            };
            match r {
                Err(s) if s.code() == Code::Unavailable => {
                    seen.push(name);
                    break;
                }
                other if Instant::now() >= probe_deadline => {
                    return fail(format!(
                        "{name} while Redis is down answered {:?}, not UNAVAILABLE",
                        other.map_err(|s| status_text(name, &s))
                    ));
                }
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }
    say(
        began,
        &format!(
            "while Redis is down: {} answer UNAVAILABLE",
            seen.join(", ")
        ),
    );
    blocking(topology, |t| t.start("redis")).await?;
    // Every container but the killed worker.
    blocking(topology, |t| {
        let services = t.services()?;
        let up: Vec<&str> = services
            .iter()
            .map(String::as_str)
            .filter(|s| *s != "worker-1")
            .collect();
        t.wait_healthy(&up, Duration::from_secs(60))
    })
    .await?;
    let after = plies(&ctx, hosted).await?;
    for (m, (b, a)) in hosted.iter().zip(before.iter().zip(&after)) {
        if b.iter().zip(a).any(|(b, a)| a < b) {
            return fail(format!(
                "match {}: plies {b:?} before the Redis restart, {a:?} after",
                m.id
            ));
        }
    }
    let pieces = bughouse_pieces(&ctx.get_match(&bug.id).await?);
    if pieces != (32, 32) {
        return fail(format!(
            "bughouse pieces after the Redis restart: {pieces:?}, not (32, 32)"
        ));
    }
    say(
        began,
        "redis restarted: every service healthy again by itself, no ply lost, 32+32 bughouse pieces",
    );
    Ok(())
}

/// Step 3d: The backend network is cut from matches-1 for a few seconds.
async fn cut_network(
    d: &Day<'_>,
    hosted: &[Arc<Hosted>],
    job_id: &str,
    flag: &Hosted,
) -> Result<(), String> {
    let (ctx, topology, began) = (Arc::clone(&d.ctx), d.topology, d.began);
    const MATCHES: &str = "arbiter.matches.v1.MatchService";
    in_flight(d, job_id, "the network cut").await?;
    let before = total_moves(hosted);
    blocking(topology, |t| t.disconnect("matches-1", "backend")).await?;
    let down = await_health(
        "matches-1",
        MATCHES,
        ServingStatus::NotServing,
        Duration::from_secs(15),
    )
    .await?;
    say(
        began,
        &format!(
            "fault: matches-1 cut off the backend network: NOT_SERVING after {:.1} s",
            down.as_secs_f64()
        ),
    );
    // The proxy's checks (every second, two failures) take it out of rotation: from then
    // on every call through the proxy reaches matches-2.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let mut c = ctx.matches();
    for _ in 0..20 {
        c.get_match(pb::GetMatchRequest {
            match_id: flag.id.clone(),
        })
        .await
        .map_err(|s| status_text("GetMatch through the proxy during the cut", &s))?;
    }
    let during = total_moves(hosted) - before;
    blocking(topology, |t| t.connect("matches-1", "backend")).await?;
    let up = await_health(
        "matches-1",
        MATCHES,
        ServingStatus::Serving,
        Duration::from_secs(15),
    )
    .await?;
    blocking(topology, |t| {
        t.wait_healthy(&["matches-1"], Duration::from_secs(30))
    })
    .await?;
    say(
        began,
        &format!(
            "matches-1 reconnected: SERVING after {:.1} s; 20 unretried calls through the \
                 proxy answered during the cut, {during} moves went on",
            up.as_secs_f64()
        ),
    );
    Ok(())
}

/// Step 3e: A matches replica is killed; the flag game's flag falls while it is down. Returns the
/// summary's line.
async fn kill_before_flag(
    d: &Day<'_>,
    hosted: &[Arc<Hosted>],
    job_id: &str,
    flag: &Hosted,
    flag_deadline: u64,
) -> Result<String, String> {
    let (ctx, topology, began) = (Arc::clone(&d.ctx), d.topology, d.began);
    let kill_at = flag_deadline.saturating_sub(8_000);
    let now = now_ms();
    if now + 1_000 > flag_deadline {
        return fail("the flag fell before the replica could be killed: a longer time control");
    }
    if kill_at > now {
        tokio::time::sleep(Duration::from_millis(kill_at - now)).await;
    }
    let before = total_moves(hosted);
    let job = job_status(&ctx, job_id).await?;
    blocking(topology, |t| t.kill("matches-1")).await?;
    say(
        began,
        &format!(
            "fault: matches-1 killed (job: {}/{} positions done)",
            job.positions_done, job.positions
        ),
    );
    let state = loop {
        let s = ctx.get_match(&flag.id).await?;
        if s.outcome.is_some() {
            break s;
        }
        if now_ms() > flag_deadline + 20_000 {
            return fail(format!("no flag 20 s after the deadline: {s:?}"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    if blocking(topology, |t| t.running("matches-1")).await? {
        return fail("matches-1 was running again before the flag: the check proves nothing");
    }
    let outcome = state.outcome.clone().unwrap_or_default();
    let o = outcome.outcome.unwrap_or_default();
    if o.reason != common::EndReason::Timeout as i32
        || o.score.as_ref().map(|s| s.text.as_str()) != Some("0-1")
    {
        return fail(format!("the flag game ended otherwise: {o:?}"));
    }
    if state.ended_at_ms < flag_deadline {
        return fail(format!(
            "flag recorded at {} before the deadline {flag_deadline}",
            state.ended_at_ms
        ));
    }
    let during = total_moves(hosted) - before;
    if during == 0 {
        return fail("no move went through while matches-1 was down");
    }
    say(
        began,
        &format!(
            "flag game flagged by matches-2, {} ms after the deadline; {during} moves went on",
            state.ended_at_ms - flag_deadline
        ),
    );
    let line = format!(
        "flag detected {} ms after the deadline, with a replica killed",
        state.ended_at_ms - flag_deadline
    );
    blocking(topology, |t| t.start("matches-1")).await?;
    blocking(topology, |t| {
        t.wait_healthy(&["matches-1"], Duration::from_secs(60))
    })
    .await?;
    say(began, "matches-1 started again and healthy");
    Ok(line)
}

/// Step 4: The endings: the held mates are played, one game resigned, one drawn; every watcher
/// follows its match to the end.
async fn endings(
    d: &Day<'_>,
    hosted: &[Arc<Hosted>],
    finish_tx: &watch::Sender<bool>,
    drivers: Drivers,
    watchers: Watchers,
) -> Result<Vec<Watched>, String> {
    let (ctx, began) = (Arc::clone(&d.ctx), d.began);
    say(began, "finish: mates, a resignation, a draw by agreement");
    finish_tx.send_replace(true);
    for d in drivers {
        tokio::time::timeout(Duration::from_secs(60), d)
            .await
            .map_err(|_| "a player did not finish within 60 s".to_owned())?
            .map_err(|e| e.to_string())??;
    }
    for m in hosted {
        match m.role {
            Role::Resign => {
                let s = ctx.get_match(&m.id).await?;
                let side = s.boards.first().map_or(0, |b| b.side_to_move);
                let token = m.token(1, side as u32)?.to_owned();
                let request = pb::ResignRequest {
                    match_id: m.id.clone(),
                    side,
                    request_id: "resign".to_owned(),
                    ..Default::default()
                };
                let c = ctx.matches();
                ctx.retries
                    .call(|| {
                        let mut c = c.clone();
                        let r = bearer(request.clone(), &token);
                        async move { c.resign(r).await }
                    })
                    .await
                    .map_err(|s| status_text("Resign", &s))?;
            }
            Role::Draw => {
                let s = ctx.get_match(&m.id).await?;
                let first = s.boards.first().map_or(1, |b| b.side_to_move);
                for side in [first, 3 - first] {
                    let token = m.token(1, side as u32)?.to_owned();
                    let request = pb::OfferDrawRequest {
                        match_id: m.id.clone(),
                        side,
                        request_id: format!("draw-{side}"),
                        ..Default::default()
                    };
                    let c = ctx.matches();
                    ctx.retries
                        .call(|| {
                            let mut c = c.clone();
                            let r = bearer(request.clone(), &token);
                            async move { c.offer_draw(r).await }
                        })
                        .await
                        .map_err(|s| status_text("OfferDraw", &s))?;
                }
            }
            _ => {}
        }
    }
    let mut watched = Vec::new();
    for w in watchers {
        watched.push(
            tokio::time::timeout(Duration::from_secs(60), w)
                .await
                .map_err(|_| "a watcher saw no end within 60 s".to_owned())?
                .map_err(|e| e.to_string())??,
        );
    }
    say(began, "every match over; every watcher saw its end");

    Ok(watched)
}

/// Checks on every match: the outcome its plan gave it, the moves the players saw applied
/// equal to the watcher's and the stored game's, no event missed or repeated.
async fn check_matches(
    d: &Day<'_>,
    hosted: &[Arc<Hosted>],
    watched: &[Watched],
) -> Result<String, String> {
    let (ctx, began) = (Arc::clone(&d.ctx), d.began);
    let mut reconnects = 0;
    for (m, w) in hosted.iter().zip(watched) {
        reconnects += w.reconnects;
        let state = ctx.get_match(&m.id).await?;
        let outcome = state.outcome.clone().unwrap_or_default();
        let o = outcome.outcome.clone().unwrap_or_default();
        let score = o.score.as_ref().map_or("", |s| s.text.as_str());
        let want = match m.role {
            Role::Flag => (common::EndReason::Timeout, "0-1"),
            Role::Resign => (common::EndReason::Resignation, ""),
            Role::Draw => (common::EndReason::Agreement, "1/2-1/2"),
            Role::Mate | Role::Bughouse => (common::EndReason::Checkmate, "1-0"),
        };
        if o.reason != want.0 as i32 || (!want.1.is_empty() && score != want.1) {
            return fail(format!(
                "match {} ({:?}) ended {o:?}, not {:?} {}",
                m.id, m.role, want.0, want.1
            ));
        }
        if !w.gaps.is_empty() {
            return fail(format!(
                "match {}: watch sequence broken: {:?}",
                m.id, w.gaps
            ));
        }
        if w.events.last().map(|e| e.seq) != Some(state.last_seq) {
            return fail(format!(
                "match {}: the watcher's last event is not the match's last_seq {}",
                m.id, state.last_seq
            ));
        }
        for (bi, board) in state.boards.iter().enumerate() {
            let ledger = m.ledgers[bi].lock().map_err(|e| e.to_string())?.clone();
            let streamed: Vec<(u32, String)> = w
                .events
                .iter()
                .filter_map(|e| match &e.event {
                    Some(pb::watch_match_response::Event::Move(p))
                        if p.board.max(1) as usize == bi + 1 =>
                    {
                        Some((p.ply, p.r#move.clone().map(|m| m.uci).unwrap_or_default()))
                    }
                    _ => None,
                })
                .collect();
            let expected: Vec<(u32, String)> = ledger
                .iter()
                .enumerate()
                .map(|(i, u)| (i as u32 + 1, u.clone()))
                .collect();
            if streamed != expected || board.ply as usize != ledger.len() {
                return fail(format!(
                    "match {} board {}: players saw {} moves, the watcher {}, the board has {} \
                     plies (players {expected:?}, watcher {streamed:?})",
                    m.id,
                    bi + 1,
                    ledger.len(),
                    streamed.len(),
                    board.ply
                ));
            }
        }
        if m.role == Role::Bughouse {
            let pieces = bughouse_pieces(&state);
            if pieces != (32, 32) {
                return fail(format!("bughouse pieces at the end: {pieces:?}"));
            }
        }
    }
    let moves = total_moves(hosted);
    say(
        began,
        &format!(
            "every move seen once by its players, its watcher and the stored game ({moves} \
             moves, {reconnects} watch streams resumed with after_seq)"
        ),
    );
    if reconnects == 0 {
        return fail("no watcher had to resume: the rolling upgrade did not reach the watchers");
    }
    let line = format!("{moves} moves in 5 matches, {reconnects} watch resumptions");

    Ok(line)
}

/// Step 5: Ratings: once per finished match, the right way.
async fn check_ratings(
    d: &Day<'_>,
    hosted: &[Arc<Hosted>],
    players: &Players,
) -> Result<(), String> {
    let (ctx, began) = (Arc::clone(&d.ctx), d.began);
    let ratings_of = |player: String| {
        let ctx = Arc::clone(&ctx);
        async move {
            let c = ctx.matchmaking();
            ctx.retries
                .call(|| {
                    let mut c = c.clone();
                    let r = bearer(
                        mm::GetRatingsRequest {
                            player_id: player.clone(),
                        },
                        &ctx.platform_token,
                    );
                    async move { c.get_ratings(r).await }
                })
                .await
                .map(|r| r.into_inner().ratings)
                .map_err(|s| status_text("GetRatings", &s))
        }
    };
    let wait = Instant::now();
    loop {
        let mut pending = 0;
        for p in players.keys() {
            if ratings_of(p.clone()).await?.is_empty() {
                pending += 1;
            }
        }
        if pending == 0 {
            break;
        }
        if wait.elapsed() > Duration::from_secs(60) {
            return fail(format!(
                "{pending} players still unrated 60 s after the matches"
            ));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // Long enough for a second application to show (matchmaking follows matches by streams
    // that broke and resumed through the faults).
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut rating = BTreeMap::new();
    for (p, (variant, m, board, side)) in players {
        let r = ratings_of(p.clone()).await?;
        let want_variant = match variant {
            Variant::Bughouse => common::Variant::Bughouse,
            _ => common::Variant::Chess,
        } as i32;
        if r.len() != 1 || r[0].variant != want_variant || r[0].games != 1 {
            return fail(format!(
                "{p} ({:?}): ratings {r:?}, not one rated game of its variant",
                m.role
            ));
        }
        rating.insert(
            p.clone(),
            (r[0].glicko_rating, Arc::clone(m), *board, *side),
        );
    }
    for m in hosted {
        let state = ctx.get_match(&m.id).await?;
        let score = state
            .outcome
            .and_then(|o| o.outcome)
            .and_then(|o| o.score)
            .unwrap_or_default();
        // Team 1 (or White) scored white_quarters of 4.
        for (p, (r, pm, board, side)) in &rating {
            if pm.id != m.id {
                continue;
            }
            let team1 = (*board == 1) == (*side == 1);
            let points = if team1 {
                score.white_quarters
            } else {
                score.black_quarters
            };
            let ok = match points {
                4 => *r > 1500.0,
                0 => *r < 1500.0,
                _ => (*r - 1500.0).abs() < 1.0,
            };
            if !ok {
                return fail(format!(
                    "{p} scored {points}/4 in {} and is rated {r:.1}",
                    m.id
                ));
            }
        }
    }
    say(
        began,
        "ratings: each of the 12 players has exactly one rated game, moved the right way",
    );

    Ok(())
}

/// Step 6: The job completes on the surviving worker, each game once; the killed worker comes back.
async fn check_job(d: &Day<'_>, job_id: &str, moves_in_job: &[usize]) -> Result<String, String> {
    let (cfg, ctx, topology, began) = (d.cfg, Arc::clone(&d.ctx), d.topology, d.began);
    let status = {
        let wait = Instant::now();
        loop {
            let s = job_status(&ctx, job_id).await?;
            if s.state == an::JobState::Done as i32 {
                break s;
            }
            if wait.elapsed() > Duration::from_secs(240) {
                return fail(format!("the job did not complete: {s:?}"));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    };
    if status.games_done != status.games || status.positions_done != status.positions {
        return fail(format!("the job's counts are off: {status:?}"));
    }
    let mut results = Vec::new();
    while results.len() < cfg.job_games {
        let c = ctx.analysis();
        let page = ctx
            .retries
            .call(|| {
                let mut c = c.clone();
                let r = ctx.analysis_request(an::GetJobResultsRequest {
                    job_id: job_id.to_owned(),
                    offset: results.len() as u32,
                    limit: 0,
                });
                async move { c.get_job_results(r).await }
            })
            .await
            .map_err(|s| status_text("GetJobResults", &s))?
            .into_inner();
        if page.games.is_empty() {
            break;
        }
        results.extend(page.games);
    }
    let indices: BTreeSet<u32> = results.iter().map(|g| g.index).collect();
    if results.len() != cfg.job_games || indices.len() != cfg.job_games {
        return fail(format!(
            "{} results for {} games ({} distinct)",
            results.len(),
            cfg.job_games,
            indices.len()
        ));
    }
    for g in &results {
        let want = moves_in_job[g.index as usize];
        if !g.error.is_empty() || g.plies.len() != want {
            return fail(format!(
                "job game {}: {} plies for {want} moves, error {:?}",
                g.index,
                g.plies.len(),
                g.error
            ));
        }
    }
    blocking(topology, |t| t.start("worker-1")).await?;
    blocking(topology, |t| t.wait_all_healthy(Duration::from_secs(60))).await?;
    say(
        began,
        &format!(
            "batch job done: {} games, {} positions, each game's result once; worker-1 back",
            status.games, status.positions
        ),
    );
    let line = format!(
        "batch job of {} games completed with a worker killed",
        status.games
    );
    Ok(line)
}
