//! A load generator for bughouse matches (`arbiter bench bughouse` drives it): many matches in
//! parallel, one client per board playing random legal moves for whichever side is to move
//! (reserves flow between the boards as in real play), through `MakeMove` over gRPC. It reports
//! applied moves per second and the `MakeMove` latency, for whichever store the server uses.

use arbiter_core::{Crazyhouse, Position};
use arbiter_proto::rules::v1 as pb;
use arbiter_proto::rules::v1::bughouse_service_client::BughouseServiceClient;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tonic::Status;
use tonic::transport::Channel;

/// What to run.
#[derive(Debug, Clone)]
pub struct BughouseBenchConfig {
    /// How long to play.
    pub duration: Duration,
    /// Matches played at once (two clients each, one per board).
    pub matches: usize,
}

/// The figures of a run.
#[derive(Debug, Clone)]
pub struct BughouseBenchResult {
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

async fn new_match(
    c: &mut BughouseServiceClient<Channel>,
    n: u64,
) -> Result<pb::MatchState, Status> {
    let p = |seat: &str| format!("bench-{n}-{seat}");
    c.create_match(pb::CreateMatchRequest {
        players: Some(pb::Players {
            white_a: p("wa"),
            black_a: p("ba"),
            white_b: p("wb"),
            black_b: p("bb"),
        }),
        time_control: "bench".into(),
        ..Default::default()
    })
    .await
    .map(|r| r.into_inner().state.expect("a state"))
}

/// Runs the load and measures it.
pub async fn run(
    channel: Channel,
    cfg: &BughouseBenchConfig,
) -> Result<BughouseBenchResult, Status> {
    let deadline = Instant::now() + cfg.duration;
    let counter = Arc::new(AtomicU64::new(0));
    let finished = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for m in 0..cfg.matches {
        let mut c = BughouseServiceClient::new(channel.clone());
        let first = new_match(&mut c, counter.fetch_add(1, Ordering::Relaxed)).await?;
        let shared = Arc::new(tokio::sync::Mutex::new(first));
        for board in [pb::Board::A, pb::Board::B] {
            let (mut c, shared, counter, finished) =
                (c.clone(), shared.clone(), counter.clone(), finished.clone());
            let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ (m as u64 * 2 + board as u64);
            tasks.push(tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut moves = 0u64;
                let mut state = shared.lock().await.clone();
                while Instant::now() < deadline {
                    if state.outcome.is_some() {
                        // One of the two clients replaces the match; the other picks it up.
                        let mut s = shared.lock().await;
                        if s.match_id == state.match_id {
                            *s = new_match(&mut c, counter.fetch_add(1, Ordering::Relaxed)).await?;
                            finished.fetch_add(1, Ordering::Relaxed);
                        }
                        state = s.clone();
                        continue;
                    }
                    let b = if board == pb::Board::A {
                        state.board_a.clone()
                    } else {
                        state.board_b.clone()
                    }
                    .expect("both boards");
                    let pos = Crazyhouse::from_fen(&b.fen, true)
                        .map_err(|e| Status::internal(e.to_string()))?;
                    let legal = pos.legal_moves();
                    if legal.is_empty() {
                        // Waiting for a piece from the partner.
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        state = refresh(&mut c, &shared, &state.match_id).await?;
                        continue;
                    }
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let uci = pos.move_to_uci(legal[(rng % legal.len() as u64) as usize]);
                    let players = state.players.clone().expect("players");
                    let white = b.side_to_move == pb::Side::White as i32;
                    let player = match (board, white) {
                        (pb::Board::A, true) => players.white_a,
                        (pb::Board::A, false) => players.black_a,
                        (_, true) => players.white_b,
                        (_, false) => players.black_b,
                    };
                    let t = Instant::now();
                    let r = c
                        .make_move(pb::MakeMoveRequest {
                            match_id: state.match_id.clone(),
                            player_id: player,
                            board: board as i32,
                            r#move: uci,
                            expected_ply: b.ply,
                            ..Default::default()
                        })
                        .await;
                    latencies.push(t.elapsed());
                    match r {
                        Ok(resp) => {
                            moves += 1;
                            state = resp.into_inner().state.expect("a state");
                        }
                        // The other board ended the match meanwhile.
                        Err(s) if s.code() == tonic::Code::FailedPrecondition => {
                            state = refresh(&mut c, &shared, &state.match_id).await?;
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
    Ok(BughouseBenchResult {
        moves,
        finished: finished.load(Ordering::Relaxed),
        moves_per_sec: moves as f64 / secs,
        p50: pct(0.5),
        p99: pct(0.99),
    })
}

async fn refresh(
    c: &mut BughouseServiceClient<Channel>,
    shared: &tokio::sync::Mutex<pb::MatchState>,
    id: &str,
) -> Result<pb::MatchState, Status> {
    let s = shared.lock().await;
    if s.match_id != id {
        return Ok(s.clone());
    }
    drop(s);
    Ok(c.get_match(pb::GetMatchRequest {
        match_id: id.to_owned(),
    })
    .await?
    .into_inner()
    .state
    .expect("a state"))
}

/// The run as a table.
pub fn report(r: &BughouseBenchResult, cfg: &BughouseBenchConfig, store: &str) -> String {
    format!(
        "store        matches  clients  moves      moves/s   MakeMove p50  p99      finished\n\
         {store:<12} {:>7}  {:>7}  {:>9}  {:>8.0}   {:>10.2?}  {:>8.2?}  {:>8}\n",
        cfg.matches,
        cfg.matches * 2,
        r.moves,
        r.moves_per_sec,
        r.p50,
        r.p99,
        r.finished
    )
}
