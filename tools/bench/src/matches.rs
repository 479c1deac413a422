//! A load generator for hosted matches (`arbiter bench matches` drives it): many matches of one
//! variant at once, one client per board playing random legal moves for whichever side is to
//! move (with that seat's token; in bughouse, reserves flow between the boards as in real play),
//! through `MakeMove` over gRPC. It reports applied moves per second and the `MakeMove` latency,
//! for whichever store the server uses. A finished match is replaced by a new one.

use arbiter_core::{AnyPosition, Position, Variant};
use arbiter_kit::convert::variant_to_proto;
use arbiter_proto::matches::v1 as pb;
use arbiter_proto::matches::v1::match_service_client::MatchServiceClient;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use tonic::{Request, Status};

/// What to run.
#[derive(Debug, Clone)]
pub struct MatchBenchConfig {
    /// How long to play.
    pub duration: Duration,
    /// Matches played at once (one client per board).
    pub matches: usize,
    /// The variant (`Bughouse` for two-board matches).
    pub variant: Variant,
    /// The platform's bearer token, for creating matches on a server that has one.
    pub platform_token: Option<String>,
    /// The matches' time control (empty: no clocks).
    pub time_control: String,
}

/// The figures of a run.
#[derive(Debug, Clone)]
pub struct MatchBenchResult {
    /// Moves applied.
    pub moves: u64,
    /// Matches finished (and replaced by new ones) during the run.
    pub finished: u64,
    /// Applied moves per second.
    pub moves_per_sec: f64,
    /// Median `MakeMove` latency.
    pub p50: Duration,
    /// 99th-percentile `MakeMove` latency.
    pub p99: Duration,
}

/// A match being played: its state and the token of each seat.
#[derive(Clone, Debug)]
struct Game {
    state: pb::MatchState,
    tokens: Vec<(i32, i32, String)>,
}

impl Game {
    fn token(&self, board: i32, side: i32) -> &str {
        self.tokens
            .iter()
            .find(|(b, s, _)| *b == board && *s == side)
            .map_or("", |(_, _, t)| t)
    }
}

/// `message` with `token` as its bearer credential.
pub(crate) fn authorized<T>(message: T, token: &str) -> Result<Request<T>, Status> {
    let mut r = Request::new(message);
    let value: MetadataValue<_> = format!("Bearer {token}")
        .parse()
        .map_err(|_| Status::internal("token is not ASCII"))?;
    r.metadata_mut().insert("authorization", value);
    Ok(r)
}

async fn new_game(
    c: &mut MatchServiceClient<Channel>,
    cfg: &MatchBenchConfig,
    n: u64,
) -> Result<Game, Status> {
    let seats: &[&str] = if cfg.variant == Variant::Bughouse {
        &["wa", "ba", "wb", "bb"]
    } else {
        &["w", "b"]
    };
    let message = pb::CreateMatchRequest {
        variant: variant_to_proto(cfg.variant),
        players: seats.iter().map(|s| format!("bench-{n}-{s}")).collect(),
        time_control: cfg.time_control.clone(),
        ..Default::default()
    };
    let request = match &cfg.platform_token {
        Some(t) => authorized(message, t)?,
        None => Request::new(message),
    };
    let r = c.create_match(request).await?.into_inner();
    Ok(Game {
        state: r.state.ok_or_else(|| Status::internal("no state"))?,
        tokens: r
            .seats
            .into_iter()
            .map(|s| {
                let seat = s.seat.unwrap_or_default();
                (seat.board, seat.side, s.token)
            })
            .collect(),
    })
}

/// Runs the load and measures it.
pub async fn run(channel: Channel, cfg: &MatchBenchConfig) -> Result<MatchBenchResult, Status> {
    let deadline = Instant::now() + cfg.duration;
    let counter = Arc::new(AtomicU64::new(0));
    let finished = Arc::new(AtomicU64::new(0));
    let boards: &[pb::Board] = if cfg.variant == Variant::Bughouse {
        &[pb::Board::A, pb::Board::B]
    } else {
        &[pb::Board::A]
    };
    // Positions of a bughouse board are played as one board (its reserves included).
    let board_variant = cfg.variant;
    let mut tasks = Vec::new();
    let start = Instant::now();
    for m in 0..cfg.matches {
        let mut c = MatchServiceClient::new(channel.clone());
        let first = new_game(&mut c, cfg, counter.fetch_add(1, Ordering::Relaxed)).await?;
        let shared = Arc::new(tokio::sync::Mutex::new(first));
        for (bi, &board) in boards.iter().enumerate() {
            let (mut c, shared, counter, finished, cfg) = (
                c.clone(),
                shared.clone(),
                counter.clone(),
                finished.clone(),
                cfg.clone(),
            );
            let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ (m as u64 * 2 + bi as u64 + 1);
            tasks.push(tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut moves = 0u64;
                let mut game = shared.lock().await.clone();
                while Instant::now() < deadline {
                    if game.state.outcome.is_some() {
                        // One client replaces the match; the others pick it up.
                        let mut s = shared.lock().await;
                        if s.state.match_id == game.state.match_id {
                            *s = new_game(&mut c, &cfg, counter.fetch_add(1, Ordering::Relaxed))
                                .await?;
                            finished.fetch_add(1, Ordering::Relaxed);
                        }
                        game = s.clone();
                        continue;
                    }
                    let b = game.state.boards[bi].clone();
                    let pos = AnyPosition::from_text(board_variant, &b.position)
                        .map_err(|e| Status::internal(e.to_string()))?;
                    let legal = pos.legal_moves();
                    if legal.is_empty() {
                        // Waiting for a piece from the partner.
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        game = refresh(&mut c, &shared, &game).await?;
                        continue;
                    }
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let uci = legal[(rng % legal.len() as u64) as usize].to_string();
                    let token = game.token(board as i32, b.side_to_move).to_owned();
                    let request = authorized(
                        pb::MakeMoveRequest {
                            match_id: game.state.match_id.clone(),
                            board: board as i32,
                            side: b.side_to_move,
                            r#move: uci,
                            expected_ply: b.ply,
                            ..Default::default()
                        },
                        &token,
                    )?;
                    let t = Instant::now();
                    let r = c.make_move(request).await;
                    latencies.push(t.elapsed());
                    match r {
                        Ok(resp) => {
                            moves += 1;
                            game.state = resp
                                .into_inner()
                                .state
                                .ok_or_else(|| Status::internal("no state"))?;
                        }
                        // The other board moved on or ended the match meanwhile.
                        Err(s) if s.code() == tonic::Code::FailedPrecondition => {
                            game = refresh(&mut c, &shared, &game).await?;
                        }
                        Err(s) => return Err(s),
                    }
                }
                Ok::<_, Status>((moves, latencies))
            }));
        }
    }
    let mut moves = 0;
    let mut latencies = Vec::new();
    for t in tasks {
        let (m, l) = t.await.map_err(|e| Status::internal(e.to_string()))??;
        moves += m;
        latencies.extend(l);
    }
    let secs = start.elapsed().as_secs_f64();
    latencies.sort();
    let pct = |p: f64| {
        latencies
            .get(((latencies.len().max(1) - 1) as f64 * p).round() as usize)
            .copied()
            .unwrap_or_default()
    };
    Ok(MatchBenchResult {
        moves,
        finished: finished.load(Ordering::Relaxed),
        moves_per_sec: moves as f64 / secs,
        p50: pct(0.5),
        p99: pct(0.99),
    })
}

/// The match as stored, unless another client has replaced it (then the replacement).
async fn refresh(
    c: &mut MatchServiceClient<Channel>,
    shared: &tokio::sync::Mutex<Game>,
    game: &Game,
) -> Result<Game, Status> {
    let s = shared.lock().await;
    if s.state.match_id != game.state.match_id {
        return Ok(s.clone());
    }
    drop(s);
    let state = c
        .get_match(pb::GetMatchRequest {
            match_id: game.state.match_id.clone(),
        })
        .await?
        .into_inner()
        .state
        .ok_or_else(|| Status::internal("no state"))?;
    Ok(Game {
        state,
        tokens: game.tokens.clone(),
    })
}

/// The run as a table.
pub fn report(r: &MatchBenchResult, cfg: &MatchBenchConfig, store: &str) -> String {
    let clients = if cfg.variant == Variant::Bughouse {
        cfg.matches * 2
    } else {
        cfg.matches
    };
    format!(
        "variant            store        matches  clients  moves      moves/s   MakeMove p50  p99      finished\n\
         {:<18} {store:<12} {:>7}  {:>7}  {:>9}  {:>8.0}   {:>10.2?}  {:>8.2?}  {:>8}\n",
        cfg.variant.name(),
        cfg.matches,
        clients,
        r.moves,
        r.moves_per_sec,
        r.p50,
        r.p99,
        r.finished
    )
}
