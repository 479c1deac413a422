//! A load generator for hosted matches (`arbiter bench matches` drives it): many matches of one
//! variant at once, one client per board playing random legal moves for whichever side is to
//! move (with that seat's token; in bughouse, reserves flow between the boards as in real play),
//! through `MakeMove` over gRPC. It reports applied moves per second and the `MakeMove` latency,
//! for whichever store the server uses. A finished match is replaced by a new one.
//!
//! Every call is idempotent (a creation carries a request id unique to the run, a move one
//! naming its board, ply and move), so a call that fails for a reason that passes is retried
//! (its latency counted from the first attempt), and one that still fails is counted as an
//! error: the client reads its match again and plays on.

use crate::{Tally, run_id};
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
    /// The platform token, sent in x-api-key, for creating matches on a server that has one.
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
    /// Attempts retried (every call).
    pub retries: u64,
    /// Calls that failed for good (the run went on).
    pub errors: u64,
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

/// `message` with the API key `key` (`x-api-key`): the platform token, for platform calls.
pub(crate) fn keyed<T>(message: T, key: &str) -> Result<Request<T>, Status> {
    let mut r = Request::new(message);
    let value: MetadataValue<_> = key
        .parse()
        .map_err(|_| Status::internal("the key is not ASCII"))?;
    r.metadata_mut().insert("x-api-key", value);
    Ok(r)
}

/// Creates the run's match number `n` (retried: its request id names it).
async fn new_game(
    c: &MatchServiceClient<Channel>,
    cfg: &MatchBenchConfig,
    run: &str,
    n: u64,
    tally: &Tally,
) -> Result<Game, Status> {
    let seats: &[&str] = if cfg.variant == Variant::Bughouse {
        &["wa", "ba", "wb", "bb"]
    } else {
        &["w", "b"]
    };
    let message = pb::CreateMatchRequest {
        request_id: format!("bench-{run}-{n}"),
        variant: variant_to_proto(cfg.variant),
        players: seats.iter().map(|s| format!("bench-{n}-{s}")).collect(),
        time_control: cfg.time_control.clone(),
        ..Default::default()
    };
    let r = tally
        .call(|| {
            let mut c = c.clone();
            let request = match &cfg.platform_token {
                Some(t) => keyed(message.clone(), t),
                None => Ok(Request::new(message.clone())),
            };
            async move { c.create_match(request?).await }
        })
        .await?
        .into_inner();
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
    let tally = Arc::new(Tally::default());
    let run = Arc::new(run_id());
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
        let c = MatchServiceClient::new(channel.clone());
        let first = new_game(
            &c,
            cfg,
            &run,
            counter.fetch_add(1, Ordering::Relaxed),
            &tally,
        )
        .await?;
        let shared = Arc::new(tokio::sync::Mutex::new(first));
        for (bi, &board) in boards.iter().enumerate() {
            let (c, shared, counter, finished, cfg, tally, run) = (
                c.clone(),
                shared.clone(),
                counter.clone(),
                finished.clone(),
                cfg.clone(),
                tally.clone(),
                run.clone(),
            );
            let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ (m as u64 * 2 + bi as u64 + 1);
            tasks.push(tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut moves = 0u64;
                let mut game = shared.lock().await.clone();
                while Instant::now() < deadline {
                    if game.state.outcome.is_some() {
                        // One client replaces the match; the others pick it up. A creation
                        // that fails is tried again on the next turn.
                        let mut s = shared.lock().await;
                        if s.state.match_id == game.state.match_id {
                            let n = counter.fetch_add(1, Ordering::Relaxed);
                            match new_game(&c, &cfg, &run, n, &tally).await {
                                Ok(g) => {
                                    *s = g;
                                    finished.fetch_add(1, Ordering::Relaxed);
                                }
                                Err(e) => tally.absorb(e)?,
                            }
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
                        game = refresh(&c, &shared, &game, &tally).await?;
                        continue;
                    }
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let uci = legal[(rng % legal.len() as u64) as usize].to_string();
                    let token = game.token(board as i32, b.side_to_move).to_owned();
                    let message = pb::MakeMoveRequest {
                        match_id: game.state.match_id.clone(),
                        board: board as i32,
                        side: b.side_to_move,
                        r#move: uci.clone(),
                        expected_ply: b.ply,
                        // The seat's key for this move: a retry is answered with the move as
                        // applied, never applied twice.
                        request_id: format!("{}-{uci}", b.ply),
                        ..Default::default()
                    };
                    // From the first attempt: retries and their pauses count.
                    let t = Instant::now();
                    let r = tally
                        .call(|| {
                            let mut c = c.clone();
                            let request = authorized(message.clone(), &token);
                            async move { c.make_move(request?).await }
                        })
                        .await;
                    match r {
                        Ok(resp) => {
                            latencies.push(t.elapsed());
                            moves += 1;
                            game.state = resp
                                .into_inner()
                                .state
                                .ok_or_else(|| Status::internal("no state"))?;
                        }
                        // The other board moved on or ended the match meanwhile.
                        Err(s) if s.code() == tonic::Code::FailedPrecondition => {
                            latencies.push(t.elapsed());
                            game = refresh(&c, &shared, &game, &tally).await?;
                        }
                        // Whether the move was applied is unknown: read the match again.
                        Err(s) => {
                            tally.absorb(s)?;
                            game = refresh(&c, &shared, &game, &tally).await?;
                        }
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
        retries: tally.retries(),
        errors: tally.errors(),
    })
}

/// The match as stored, unless another client has replaced it (then the replacement). A read
/// that fails for good is counted, and the match as last seen is played on.
async fn refresh(
    c: &MatchServiceClient<Channel>,
    shared: &tokio::sync::Mutex<Game>,
    game: &Game,
    tally: &Tally,
) -> Result<Game, Status> {
    let s = shared.lock().await;
    if s.state.match_id != game.state.match_id {
        return Ok(s.clone());
    }
    drop(s);
    let read = tally
        .call(|| {
            let mut c = c.clone();
            let request = pb::GetMatchRequest {
                match_id: game.state.match_id.clone(),
            };
            async move { c.get_match(request).await }
        })
        .await;
    let state = match read {
        Ok(r) => r
            .into_inner()
            .state
            .ok_or_else(|| Status::internal("no state"))?,
        Err(e) => {
            tally.absorb(e)?;
            return Ok(game.clone());
        }
    };
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
        "variant            store        matches  clients  moves      moves/s   MakeMove p50  p99      finished  retries  errors\n\
         {:<18} {store:<12} {:>7}  {:>7}  {:>9}  {:>8.0}   {:>10.2?}  {:>8.2?}  {:>8}  {:>7}  {:>6}\n",
        cfg.variant.name(),
        cfg.matches,
        clients,
        r.moves,
        r.moves_per_sec,
        r.p50,
        r.p99,
        r.finished,
        r.retries,
        r.errors
    )
}
