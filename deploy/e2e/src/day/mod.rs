//! A platform's day on the compose topology, as one scenario: pools, matches played with seat
//! tokens and running clocks under watchers, a batch job on the workers, and the faults of a
//! real deployment while all of it is in flight. The module documentation of the crate lists
//! what each step checks.

use crate::client::{PROXY, Retries, bearer, channel, keyed, replica_address};
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

mod checks;
mod faults;
mod observed;

use checks::{check_job, check_keys, check_matches, check_ratings, endings};
use faults::{cut_network, kill_before_flag, kill_worker, restart_redis, rolling_upgrade};

/// What to run.
#[derive(Clone, Debug)]
pub struct DayConfig {
    /// The repository's root (the compose file and scripts are found from it).
    pub root: PathBuf,
    /// The pools' time control: long enough that the paced games never flag and that the faults
    /// before the replica kill fit before the flag game's flag falls (1+2 left too little on a
    /// slow machine: the steps up to the network cut took 70 s of its 62), short enough that it
    /// falls within the day.
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
            time_control: "2+2".to_owned(),
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
    /// The platform's API key (every scope), from deploy/secrets/platform-key.
    platform_key: String,
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

    /// An analysis call of the platform: its key (the key's client owns the jobs).
    fn analysis_request<T>(&self, message: T) -> tonic::Request<T> {
        keyed(message, &self.platform_key)
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
        .join(keyed(request, &ctx.platform_key))
        .await
        .map_err(|s| status_text(&format!("Join {player}"), &s))?
        .into_inner();
    loop {
        match stream.message().await {
            Ok(Some(mm::JoinResponse {
                event: Some(mm::join_response::Event::MatchFound(found)),
            })) => {
                c.acknowledge(keyed(
                    mm::AcknowledgeRequest {
                        player_id: player.clone(),
                        match_id: found.match_id.clone(),
                    },
                    &ctx.platform_key,
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
    let platform_key = std::fs::read_to_string(cfg.root.join("deploy/secrets/platform-key"))
        .map_err(|e| format!("deploy/secrets/platform-key: {e}"))?
        .trim()
        .to_owned();
    // Every gRPC port of the topology speaks TLS with a certificate from the dev CA.
    crate::client::trust(&cfg.root.join("deploy/secrets/ca.pem"))?;
    let ctx = Arc::new(Ctx {
        proxy: channel(PROXY)?,
        platform_key,
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
    summary.push(check_keys(&d).await?);
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
    summary.push(observed::check_metrics(&d, &hosted).await?);
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
        engine: String::new(),
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
