//! The analysis service over gRPC, on port 0: what the stream carries and in which order, the
//! limits, cancellation, the bounded and fair queue, errors, and shutdown; batch jobs in
//! process here, on Redis in `redis_jobs`.

#[path = "grpc/cluster.rs"]
mod cluster;
#[path = "grpc/engines.rs"]
mod engines;
#[path = "grpc/redis_jobs.rs"]
mod redis_jobs;
#[path = "grpc/remote_work.rs"]
mod remote_work;

use arbiter_analysis::live::DEADLINE_MARGIN_MS;
use arbiter_analysis::{AnalysisConfig, Caps, PoolConfig, serve};
use arbiter_core::{AnyPosition, Notation, Position, Variant as CoreVariant};
use arbiter_engine::TimeSource;
use arbiter_kit::access::AccessPolicy;
use arbiter_kit::keys::{KeySet, NewKey, new_key};
use arbiter_kit::{ServeConfig, ServeError};
use arbiter_proto::analysis::v1 as pb;
use arbiter_proto::analysis::v1::analysis_service_client::AnalysisServiceClient;
use arbiter_proto::common::v1::{self as common, Variant};
use arbiter_testkit::grpc::TestServer;
use pb::analyze_response::Update;
use pb::engine_score::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tonic::transport::Channel;
use tonic::{Code, Request, Streaming};
use tonic_types::StatusExt;

struct Server {
    client: AnalysisServiceClient<Channel>,
    server: TestServer<ServeError>,
}

async fn start(config: AnalysisConfig) -> Server {
    start_with(config, AccessPolicy::development()).await
}

/// The service with calls checked by `access` (API keys, or development mode).
async fn start_with(config: AnalysisConfig, access: AccessPolicy) -> Server {
    let server = TestServer::start(|listener, shutdown| {
        serve(listener, ServeConfig::default(), config, access, shutdown)
    })
    .await;
    Server {
        client: AnalysisServiceClient::new(server.channel()),
        server,
    }
}

/// One engine thread, the default caps but a long time cap (a test that fails must not pass by
/// the cap ending a search it should have stopped).
fn one_thread(max_queue: usize, per_client: usize) -> AnalysisConfig {
    AnalysisConfig {
        caps: Caps {
            max_time_ms: 600_000,
            max_nodes: u64::MAX,
            ..Caps::default()
        },
        pool: PoolConfig {
            threads: 1,
            max_queue,
            max_queue_per_client: per_client,
        },
        ..AnalysisConfig::default()
    }
}

fn position(variant: Variant, text: &str) -> Option<common::Position> {
    Some(common::Position {
        variant: variant as i32,
        text: text.to_owned(),
        rules: vec![],
    })
}

fn limits(depth: u32, nodes: u64, movetime_ms: u64) -> Option<pb::SearchLimits> {
    Some(pb::SearchLimits {
        depth,
        nodes,
        movetime_ms,
    })
}

fn analyze(variant: Variant, text: &str, l: Option<pb::SearchLimits>) -> pb::AnalyzeRequest {
    pb::AnalyzeRequest {
        position: position(variant, text),
        limits: l,
        ..pb::AnalyzeRequest::default()
    }
}

fn best(variant: Variant, text: &str, l: Option<pb::SearchLimits>) -> pb::BestMoveRequest {
    pb::BestMoveRequest {
        position: position(variant, text),
        limits: l,
        ..pb::BestMoveRequest::default()
    }
}

fn with_client<T>(message: T, client: &str) -> Request<T> {
    let mut r = Request::new(message);
    r.metadata_mut()
        .insert("x-client-id", client.parse().unwrap());
    r
}

/// Every message of a stream, the last being the result.
async fn drain(
    mut s: Streaming<pb::AnalyzeResponse>,
) -> (Vec<pb::AnalysisInfo>, pb::AnalysisResult) {
    let mut infos = Vec::new();
    let mut result = None;
    while let Some(u) = tokio::time::timeout(Duration::from_secs(60), s.message())
        .await
        .expect("the stream moves on")
        .expect("no error")
    {
        assert!(result.is_none(), "nothing follows the result");
        match u.update.expect("an update") {
            Update::Info(i) => infos.push(i),
            Update::Result(r) => result = Some(r),
        }
    }
    (infos, result.expect("the stream ends with a result"))
}

#[tokio::test]
async fn the_stream_reports_each_depth_as_a_ranked_block_then_the_result() {
    let mut s = start(AnalysisConfig::default()).await;
    let mut req = analyze(Variant::Chess, "", limits(5, 0, 0));
    req.multipv = 3;
    let stream = s.client.analyze(req).await.unwrap().into_inner();
    let (infos, result) = drain(stream).await;
    assert!(infos.len() >= 5 * 3, "{} infos", infos.len());
    for block in infos.chunks(3) {
        let depths: Vec<u32> = block.iter().map(|i| i.depth).collect();
        let ranks: Vec<u32> = block.iter().map(|i| i.multipv).collect();
        assert_eq!(ranks, [1, 2, 3]);
        assert!(depths.iter().all(|&d| d == depths[0]), "{depths:?}");
        for i in block {
            assert!(!i.pv.is_empty());
            assert!(i.pv.iter().all(|m| !m.uci.is_empty() && !m.san.is_empty()));
            assert!(i.nodes > 0 && i.score.is_some());
        }
    }
    let depths: Vec<u32> = infos.iter().map(|i| i.depth).collect();
    assert!(depths.windows(2).all(|w| w[0] <= w[1]), "{depths:?}");
    assert_eq!(*depths.last().unwrap(), 5);
    // The result is the last block.
    assert_eq!(result.depth, 5);
    assert_eq!(result.stop_reason, pb::StopReason::Limit as i32);
    assert_eq!(result.lines.len(), 3);
    let last = &infos[infos.len() - 3..];
    for (line, info) in result.lines.iter().zip(last) {
        assert_eq!(line.pv, info.pv);
        assert_eq!(line.score, info.score);
    }
    assert_eq!(result.best_move.as_ref(), result.lines[0].pv.first());
    assert_eq!(result.ponder.as_ref(), result.lines[0].pv.get(1));
    // Each line is legal from the start, and its SAN is the position's.
    let start = AnyPosition::start(CoreVariant::Chess).unwrap();
    for line in &result.lines {
        let mut p = start.clone();
        for m in &line.pv {
            let mv = p
                .parse_move(&m.uci, Notation::Uci, Default::default())
                .unwrap();
            assert_eq!(p.move_to_san(mv, Default::default()), m.san);
            p.play_unchecked(mv);
        }
    }
    s.server.stop().await;
}

#[tokio::test]
async fn best_move_in_every_variant() {
    let mut s = start(AnalysisConfig::default()).await;
    // Mate in one: Qxf7#.
    let r = s
        .client
        .best_move(best(
            Variant::Chess,
            "r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR w KQkq - 2 3",
            limits(3, 0, 0),
        ))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    let m = r.best_move.unwrap();
    assert_eq!((m.uci.as_str(), m.san.as_str()), ("f3f7", "Qxf7#"));
    assert_eq!(r.score.unwrap().value, Some(Value::Mate(1)));
    for v in [
        Variant::Chess,
        Variant::Crazyhouse,
        Variant::Bughouse,
        Variant::Glinski,
        Variant::Byzantine,
        Variant::ByzantineCitadel,
    ] {
        let r = s
            .client
            .best_move(best(v, "", limits(3, 0, 0)))
            .await
            .unwrap_or_else(|e| panic!("{v:?}: {e}"))
            .into_inner()
            .result
            .unwrap();
        let m = r.best_move.unwrap_or_else(|| panic!("{v:?}: a move"));
        let core = arbiter_kit::convert::variant(v as i32, "v").unwrap();
        let start = AnyPosition::start(core).unwrap();
        assert!(
            start
                .parse_move(&m.uci, Notation::Uci, Default::default())
                .is_ok(),
            "{v:?}: {m:?}"
        );
        assert_eq!(r.depth, 3, "{v:?}");
    }
    s.server.stop().await;
}

/// Moves on 1 ms at every reading: a time limit of T ms is T readings, one per node-check
/// interval of the search.
#[derive(Debug, Default)]
struct Ticking(AtomicU64);

impl TimeSource for Ticking {
    fn now_ms(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed)
    }
}

#[tokio::test]
async fn limits_are_kept() {
    let config = AnalysisConfig {
        time: Arc::new(Ticking::default()),
        ..AnalysisConfig::default()
    };
    let mut s = start(config).await;
    // Nodes: exact.
    for nodes in [1, 777, 20_000] {
        let r = s
            .client
            .best_move(best(Variant::Chess, "", limits(0, nodes, 0)))
            .await
            .unwrap()
            .into_inner()
            .result
            .unwrap();
        assert_eq!(r.nodes, nodes);
        assert!(r.best_move.is_some());
        assert_eq!(r.stop_reason, pb::StopReason::Limit as i32);
    }
    // Depth: no deeper iteration is reported.
    let stream = s
        .client
        .analyze(analyze(Variant::Glinski, "", limits(4, 0, 0)))
        .await
        .unwrap()
        .into_inner();
    let (infos, r) = drain(stream).await;
    assert_eq!(r.depth, 4);
    assert!(infos.iter().all(|i| i.depth <= 4));
    // Time: the search reads the clock every 1,024 nodes and between iterations, and stops at
    // the first reading past the limit; one more reading dates the result. On the ticking clock
    // each reading is a millisecond, so the stated margin is 2 ms over the limit.
    for movetime in [5, 40] {
        let r = s
            .client
            .best_move(best(Variant::Byzantine, "", limits(0, 0, movetime)))
            .await
            .unwrap()
            .into_inner()
            .result
            .unwrap();
        assert!(
            r.time_ms >= movetime && r.time_ms <= movetime + 2,
            "{movetime}: {}",
            r.time_ms
        );
        assert_eq!(r.stop_reason, pb::StopReason::Limit as i32);
    }
    s.server.stop().await;
}

#[tokio::test]
async fn the_server_caps_fill_unset_limits_and_refuse_larger_ones() {
    let config = AnalysisConfig {
        caps: Caps {
            max_nodes: 3000,
            ..Caps::default()
        },
        ..AnalysisConfig::default()
    };
    let mut s = start(config).await;
    let r = s
        .client
        .best_move(best(Variant::Chess, "", None))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(r.nodes, 3000);
    assert_eq!(r.stop_reason, pb::StopReason::ServerCap as i32);
    let e = s
        .client
        .best_move(best(Variant::Chess, "", limits(0, 3001, 0)))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted);
    assert_eq!(
        e.get_error_details()
            .bad_request()
            .unwrap()
            .field_violations[0]
            .field,
        "limits.nodes"
    );
    s.server.stop().await;
}

/// Moves on `step` ms at every reading.
#[derive(Debug)]
struct Stepping {
    now: AtomicU64,
    step: u64,
}

impl TimeSource for Stepping {
    fn now_ms(&self) -> u64 {
        self.now.fetch_add(self.step, Ordering::Relaxed)
    }
}

/// One engine thread searching on a clock that moves on `step` ms at every reading: a call's
/// deadline is read on it, so the search ends after (deadline − margin) / `step` readings, one
/// per node-check interval, however fast or loaded the machine is.
fn stepping(step: u64) -> AnalysisConfig {
    AnalysisConfig {
        time: Arc::new(Stepping {
            now: AtomicU64::new(0),
            step,
        }),
        ..one_thread(4, 4)
    }
}

/// The call's deadline (5 s: far beyond what the ~200 readings take in real time) ends the
/// search with its result, not with an error, and the search stops the margin before the
/// deadline on the service's clock.
#[tokio::test]
async fn a_deadline_ends_the_search_with_a_result_in_time() {
    const DEADLINE_MS: u64 = 5_000;
    let mut s = start(stepping(25)).await;
    let mut req = Request::new(best(Variant::Chess, "", None));
    req.set_timeout(Duration::from_millis(DEADLINE_MS));
    let r = s
        .client
        .best_move(req)
        .await
        .expect("a result, not an error")
        .into_inner()
        .result
        .unwrap();
    assert!(r.best_move.is_some());
    assert_eq!(r.stop_reason, pb::StopReason::ServerCap as i32);
    assert!(
        r.time_ms <= DEADLINE_MS - DEADLINE_MARGIN_MS,
        "stopped at {} ms",
        r.time_ms
    );
    // The stream too: its last message is the result, and it ends without an error.
    let mut req = Request::new(analyze(Variant::Crazyhouse, "", None));
    req.set_timeout(Duration::from_millis(DEADLINE_MS));
    let stream = s.client.analyze(req).await.unwrap().into_inner();
    let (infos, r) = drain(stream).await;
    assert!(!infos.is_empty());
    assert!(r.best_move.is_some());
    assert_eq!(r.stop_reason, pb::StopReason::ServerCap as i32);
    assert!(
        r.time_ms <= DEADLINE_MS - DEADLINE_MARGIN_MS,
        "stopped at {} ms",
        r.time_ms
    );
    s.server.stop().await;
}

/// A deadline used up before the search starts (by the wait for an engine, or the allocation
/// of its tables: here the clock moves on 2.5 s at each reading) still gets a move: the search
/// stops at its first look at the clock, and its move is sent at once.
#[tokio::test]
async fn a_deadline_used_up_before_the_search_starts_still_gets_a_move() {
    let mut s = start(stepping(2_500)).await;
    let mut req = Request::new(best(Variant::Glinski, "", None));
    req.set_timeout(Duration::from_secs(5));
    let r = s
        .client
        .best_move(req)
        .await
        .expect("a result, not an error")
        .into_inner()
        .result
        .unwrap();
    assert!(r.best_move.is_some());
    assert_eq!(r.stop_reason, pb::StopReason::ServerCap as i32);
    assert!(
        r.nodes <= arbiter_engine::search::CHECK_EVERY,
        "{} nodes",
        r.nodes
    );
    s.server.stop().await;
}

#[tokio::test]
async fn bad_requests_name_the_field() {
    let mut s = start(AnalysisConfig::default()).await;
    let cases: Vec<(pb::AnalyzeRequest, Code, &str)> = vec![
        (
            analyze(Variant::Unspecified, "", None),
            Code::InvalidArgument,
            "position.variant",
        ),
        (
            pb::AnalyzeRequest {
                position: Some(common::Position {
                    variant: 99,
                    ..Default::default()
                }),
                ..Default::default()
            },
            Code::InvalidArgument,
            "position.variant",
        ),
        (
            analyze(Variant::Chess, "not a fen", None),
            Code::InvalidArgument,
            "position.text",
        ),
        (
            analyze(Variant::Chess, "", limits(65, 0, 0)),
            Code::InvalidArgument,
            "limits.depth",
        ),
        (
            analyze(Variant::Chess, "", limits(0, 0, 60_001)),
            Code::ResourceExhausted,
            "limits.movetime_ms",
        ),
        (
            pb::AnalyzeRequest {
                multipv: u32::MAX,
                ..analyze(Variant::Chess, "", None)
            },
            Code::ResourceExhausted,
            "multipv",
        ),
        (
            pb::AnalyzeRequest {
                moves: vec!["e4".into(), "e5".into(), "Ke3".into()],
                ..analyze(Variant::Chess, "", None)
            },
            Code::InvalidArgument,
            "moves[2]",
        ),
        (
            pb::AnalyzeRequest {
                moves: vec!["e4\u{0}".into(); 3000],
                ..analyze(Variant::Chess, "", None)
            },
            Code::ResourceExhausted,
            "moves",
        ),
        (
            pb::AnalyzeRequest {
                position: Some(common::Position {
                    variant: Variant::Byzantine as i32,
                    text: String::new(),
                    rules: vec![common::RuleOption {
                        name: "stalemate".into(),
                        value: "maybe".into(),
                    }],
                }),
                ..Default::default()
            },
            Code::InvalidArgument,
            "position.rules",
        ),
    ];
    for (req, code, field) in cases {
        let e = s.client.analyze(req.clone()).await.unwrap_err();
        assert_eq!((e.code(), field), (code, field), "{}", e.message());
        let details = e.get_error_details();
        assert_eq!(
            details.bad_request().unwrap().field_violations[0].field,
            field
        );
        if req.multipv == 0 {
            let e = s
                .client
                .best_move(pb::BestMoveRequest {
                    position: req.position,
                    moves: req.moves,
                    limits: req.limits,
                    ..Default::default()
                })
                .await
                .unwrap_err();
            assert_eq!(e.code(), code, "{field}");
        }
    }
    s.server.stop().await;
}

/// Starts a search that only a cancel (or the 600 s cap) can end, and waits for its first info.
async fn endless(
    client: &mut AnalysisServiceClient<Channel>,
    id: &str,
) -> Streaming<pb::AnalyzeResponse> {
    let mut stream = client
        .analyze(with_client(analyze(Variant::Chess, "", None), id))
        .await
        .unwrap()
        .into_inner();
    let first = tokio::time::timeout(Duration::from_secs(30), stream.message())
        .await
        .expect("a first info")
        .unwrap()
        .unwrap();
    assert!(matches!(first.update, Some(Update::Info(_))));
    stream
}

#[tokio::test]
async fn cancelling_the_call_stops_the_search() {
    let mut s = start(one_thread(4, 4)).await;
    for _ in 0..3 {
        let stream = endless(&mut s.client, "a").await;
        drop(stream);
        // The only engine thread is free again: a quick search gets it.
        let r = tokio::time::timeout(
            Duration::from_secs(30),
            s.client
                .best_move(best(Variant::Chess, "", limits(1, 0, 0))),
        )
        .await
        .expect("the cancelled search gave its thread back")
        .unwrap()
        .into_inner()
        .result
        .unwrap();
        assert!(r.best_move.is_some());
    }
    s.server.stop().await;
}

#[tokio::test]
async fn a_full_queue_refuses_with_resource_exhausted() {
    // One thread, kept busy; at most 2 requests waiting in all, 1 per client.
    let mut s = start(one_thread(2, 1)).await;
    let running = endless(&mut s.client, "a").await;
    // Four requests at once, two from client a. Whatever their order, two find a place and two
    // are refused at once; never both of a's (a may have one waiting).
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for (n, id) in ["a", "a", "b", "c"].into_iter().enumerate() {
        let (mut client, tx) = (s.client.clone(), tx.clone());
        tokio::spawn(async move {
            let r = client
                .best_move(with_client(best(Variant::Chess, "", limits(1, 0, 0)), id))
                .await;
            let _ = tx.send((n, r.map(|r| r.into_inner())));
        });
    }
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .expect("an answer")
            .unwrap()
    };
    let mut refused = Vec::new();
    for _ in 0..2 {
        let (n, r) = next().await;
        assert_eq!(r.unwrap_err().code(), Code::ResourceExhausted);
        refused.push(n);
    }
    assert_ne!(refused, [0, 1], "one of a's requests may wait");
    assert_ne!(refused, [1, 0], "one of a's requests may wait");
    // Cancelling the running search lets the two waiting ones through.
    drop(running);
    for _ in 0..2 {
        let (n, r) = next().await;
        assert!(!refused.contains(&n));
        assert!(r.unwrap().result.unwrap().best_move.is_some());
    }
    s.server.stop().await;
}

#[tokio::test]
async fn shutdown_stops_running_searches_with_their_result() {
    let mut s = start(one_thread(4, 4)).await;
    assert_eq!(
        s.server.health("arbiter.analysis.v1.AnalysisService").await,
        tonic_health::pb::health_check_response::ServingStatus::Serving
    );
    let stream = endless(&mut s.client, "a").await;
    let stopping = tokio::spawn(s.server.stop());
    let (_, result) = drain(stream).await;
    assert_eq!(result.stop_reason, pb::StopReason::Shutdown as i32);
    assert!(result.best_move.is_some());
    tokio::time::timeout(Duration::from_secs(30), stopping)
        .await
        .expect("the server stops")
        .unwrap();
}

#[tokio::test]
async fn the_moves_before_are_played_and_a_finished_game_is_reported() {
    let mut s = start(AnalysisConfig::default()).await;
    let r = s
        .client
        .best_move(pb::BestMoveRequest {
            moves: ["f3", "e5", "g4"].map(String::from).to_vec(),
            ..best(Variant::Chess, "", limits(2, 0, 0))
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(r.best_move.unwrap().san, "Qh4#");
    let r = s
        .client
        .best_move(pb::BestMoveRequest {
            moves: ["f3", "e5", "g4", "Qh4#"].map(String::from).to_vec(),
            ..best(Variant::Chess, "", limits(2, 0, 0))
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert!(r.best_move.is_none());
    assert_eq!(r.stop_reason, pb::StopReason::NoMove as i32);
    assert_eq!(
        r.outcome.unwrap().reason,
        common::EndReason::Checkmate as i32
    );
    s.server.stop().await;
}

// ---- Batch jobs ----

fn job(id: &str, pgn: &str, nodes: u64) -> pb::SubmitJobRequest {
    pb::SubmitJobRequest {
        request_id: id.to_owned(),
        games: Some(pb::submit_job_request::Games::Pgn(pgn.to_owned())),
        per_ply: Some(pb::PlyLimit { depth: 0, nodes }),
        engine: String::new(),
    }
}

fn bpgn_job(id: &str, bpgn: &str, nodes: u64) -> pb::SubmitJobRequest {
    pb::SubmitJobRequest {
        request_id: id.to_owned(),
        games: Some(pb::submit_job_request::Games::Bpgn(bpgn.to_owned())),
        per_ply: Some(pb::PlyLimit { depth: 0, nodes }),
        engine: String::new(),
    }
}

/// A bughouse match whose capture on A feeds a drop on B.
const BUGHOUSE: &str = "[WhiteA \"a\"]\n[BlackA \"b\"]\n[WhiteB \"c\"]\n[BlackB \"d\"]\n\n\
                        1A. e4 1a. d5 1B. d4 2A. exd5 1b. Nf6 2a. Qxd5 2B. c4 2b. P@e4 *\n";

#[tokio::test]
async fn a_bpgn_job_evaluates_every_move_on_its_board_without_verdicts() {
    let mut s = start(AnalysisConfig::default()).await;
    let status = s
        .client
        .submit_job(bpgn_job("zh", BUGHOUSE, 2000))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    assert_eq!(status.positions, 16, "before and after each of 8 moves");
    let last = watch_to_end(&mut s.client, &status.job_id)
        .await
        .pop()
        .unwrap();
    assert_eq!(
        (last.state, last.positions_done),
        (pb::JobState::Done as i32, 16)
    );
    let game = s
        .client
        .get_job_results(pb::GetJobResultsRequest {
            job_id: status.job_id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .games
        .remove(0);
    let boards: String = game.plies.iter().map(|p| p.board.as_str()).collect();
    assert_eq!(boards, "AABABABB");
    let uci: Vec<&str> = game
        .plies
        .iter()
        .map(|p| p.r#move.as_ref().unwrap().uci.as_str())
        .collect();
    assert_eq!(
        uci,
        [
            "e2e4", "d7d5", "d2d4", "e4d5", "g8f6", "d8d5", "c2c4", "P@e4"
        ]
    );
    assert!(
        game.plies
            .iter()
            .all(|p| p.eval_after.is_some() && p.judgement == pb::Judgement::Unspecified as i32)
    );
    assert!(
        game.plies.iter().any(|p| p.better.is_some()),
        "the engine prefers another move somewhere"
    );
    assert!(game.plies.iter().all(|p| {
        p.better
            .as_ref()
            .is_none_or(|b| b.uci != p.r#move.as_ref().unwrap().uci)
    }));
    assert_eq!((game.white_accuracy, game.black_accuracy), (None, None));
    assert!(game.start_eval.is_none() && game.error.is_empty());
    s.server.stop().await;
}

/// Watches a job to its end; every status, in order.
async fn watch_to_end(client: &mut AnalysisServiceClient<Channel>, id: &str) -> Vec<pb::JobStatus> {
    let mut stream = client
        .watch_job(pb::WatchJobRequest {
            job_id: id.to_owned(),
        })
        .await
        .unwrap()
        .into_inner();
    let mut seen = Vec::new();
    while let Some(s) = tokio::time::timeout(Duration::from_secs(120), stream.message())
        .await
        .expect("the job moves on")
        .unwrap()
    {
        seen.push(s.status.expect("every message carries the status"));
    }
    seen
}

const TWO_GAMES: &str = "[Event \"fool\"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n\n\
                         [Event \"zh\"]\n[Variant \"Crazyhouse\"]\n\n1. e4 d5 2. exd5 *\n";

#[tokio::test]
async fn a_pgn_job_runs_to_the_end_with_verdicts_and_accuracy() {
    let mut s = start(AnalysisConfig::default()).await;
    let status = s
        .client
        .submit_job(job("t-1", TWO_GAMES, 3000))
        .await
        .unwrap()
        .into_inner();
    let (status, status_duplicate) = (status.status.unwrap(), status.duplicate);
    assert_eq!((status.games, status.positions), (2, 9));
    assert!(!status_duplicate);
    let seen = watch_to_end(&mut s.client, &status.job_id).await;
    let last = seen.last().unwrap();
    assert_eq!(last.state, pb::JobState::Done as i32);
    assert_eq!((last.games_done, last.positions_done), (2, 9));
    assert!(seen.windows(2).all(|w| w[0].games_done <= w[1].games_done));
    let r = s
        .client
        .get_job_results(pb::GetJobResultsRequest {
            job_id: status.job_id.clone(),
            offset: 0,
            limit: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.games.len(), 2);
    let fool = &r.games[0];
    assert_eq!(fool.index, 0);
    assert_eq!(fool.plies.len(), 4);
    let sans: Vec<&str> = fool
        .plies
        .iter()
        .map(|p| p.r#move.as_ref().unwrap().san.as_str())
        .collect();
    assert_eq!(sans, ["f3", "e5", "g4", "Qh4#"]);
    // 2. g4?? allows mate in one, and the mate is found.
    assert_eq!(fool.plies[2].judgement, pb::Judgement::Blunder as i32);
    assert_eq!(
        fool.plies[2].eval_after.unwrap().value,
        Some(Value::Mate(-1))
    );
    assert!(fool.plies[2].better.is_some());
    assert_eq!(fool.plies[3].judgement, pb::Judgement::Good as i32);
    assert!(
        fool.plies[3].eval_after.is_none(),
        "the game is over after the mate"
    );
    assert_eq!(fool.white_blunders, 1);
    assert!(fool.white_accuracy.unwrap() < fool.black_accuracy.unwrap());
    assert_eq!(r.games[1].plies.len(), 3);
    assert!(r.games[1].error.is_empty());
    // Paging: the second game alone.
    let page = s
        .client
        .get_job_results(pb::GetJobResultsRequest {
            job_id: status.job_id.clone(),
            offset: 1,
            limit: 1,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(page.games.len(), 1);
    assert_eq!(page.games[0].index, 1);
    s.server.stop().await;
}

#[tokio::test]
async fn submissions_are_idempotent_by_request_id() {
    let mut s = start(AnalysisConfig::default()).await;
    let first = s
        .client
        .submit_job(job("same", TWO_GAMES, 1000))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    let again = s
        .client
        .submit_job(job("same", TWO_GAMES, 1000))
        .await
        .unwrap()
        .into_inner();
    let (again, again_duplicate) = (again.status.unwrap(), again.duplicate);
    assert_eq!(again.job_id, first.job_id);
    assert!(again_duplicate);
    let other = s
        .client
        .submit_job(job("same", TWO_GAMES, 2000))
        .await
        .unwrap_err();
    assert_eq!(other.code(), Code::AlreadyExists);
    watch_to_end(&mut s.client, &first.job_id).await;
    s.server.stop().await;
}

/// Watches a job to its end as `client` (its `x-client-id`).
async fn watch_as(
    client: &mut AnalysisServiceClient<Channel>,
    id: &str,
    caller: &str,
) -> pb::JobStatus {
    let mut stream = client
        .watch_job(with_client(
            pb::WatchJobRequest {
                job_id: id.to_owned(),
            },
            caller,
        ))
        .await
        .unwrap()
        .into_inner();
    let mut last = None;
    while let Some(s) = tokio::time::timeout(Duration::from_secs(120), stream.message())
        .await
        .expect("the job moves on")
        .unwrap()
    {
        last = s.status;
    }
    last.expect("at least one status")
}

/// Every job call on `id` as `caller` (`None`: no `x-client-id`), each answering `NOT_FOUND`
/// with the very status an unknown id gets.
async fn nothing_to_see(
    client: &mut AnalysisServiceClient<Channel>,
    id: &str,
    caller: Option<&str>,
) {
    let who = Who {
        key: None,
        client_id: caller,
    };
    nothing_to_see_as(client, id, who).await;
}

/// Who a test call comes from: an API key (`x-api-key`), an `x-client-id`, both or neither.
#[derive(Clone, Copy, Debug, Default)]
struct Who<'a> {
    key: Option<&'a str>,
    client_id: Option<&'a str>,
}

impl Who<'_> {
    fn ask<T>(self, m: T) -> Request<T> {
        let mut r = Request::new(m);
        if let Some(key) = self.key {
            r.metadata_mut().insert("x-api-key", key.parse().unwrap());
        }
        if let Some(id) = self.client_id {
            r.metadata_mut().insert("x-client-id", id.parse().unwrap());
        }
        r
    }
}

/// Every job call on `id` as `who`, each answering `NOT_FOUND` with the very status an unknown
/// id gets.
async fn nothing_to_see_as(client: &mut AnalysisServiceClient<Channel>, id: &str, who: Who<'_>) {
    let job_id = id.to_owned();
    let unknown = "job-0000000000000000-999999";
    let unknown_message = client
        .get_job(who.ask(pb::GetJobRequest {
            job_id: unknown.into(),
        }))
        .await
        .unwrap_err()
        .message()
        .replace(unknown, id);
    let errors = [
        client
            .get_job(who.ask(pb::GetJobRequest {
                job_id: job_id.clone(),
            }))
            .await
            .map(drop),
        client
            .watch_job(who.ask(pb::WatchJobRequest {
                job_id: job_id.clone(),
            }))
            .await
            .map(drop),
        client
            .get_job_results(who.ask(pb::GetJobResultsRequest {
                job_id: job_id.clone(),
                ..Default::default()
            }))
            .await
            .map(drop),
        client
            .cancel_job(who.ask(pb::CancelJobRequest {
                job_id: job_id.clone(),
            }))
            .await
            .map(drop),
    ];
    for (call, e) in ["GetJob", "WatchJob", "GetJobResults", "CancelJob"]
        .into_iter()
        .zip(errors)
    {
        let e = e.expect_err(call);
        assert_eq!(
            (e.code(), e.message()),
            (Code::NotFound, unknown_message.as_str()),
            "{call} as {who:?}"
        );
    }
}

/// Request ids and jobs belong to their caller (its `x-client-id`). Client X submits; client Y,
/// with the same request id and content, gets a job of its own; Z's other content under that
/// id is no conflict; neither Y nor an anonymous caller can read, watch or cancel X's job; X
/// still sees its job, uncancelled, to its end. Returns X's and Y's job ids.
pub(crate) async fn jobs_belong_to_their_caller(
    client: &mut AnalysisServiceClient<Channel>,
) -> (String, String) {
    let submit = |caller: &str, nodes| with_client(job("shared-id", TWO_GAMES, nodes), caller);
    let x = client
        .submit_job(submit("client-x", 1000))
        .await
        .unwrap()
        .into_inner();
    assert!(!x.duplicate);
    let x = x.status.unwrap();
    let y = client
        .submit_job(submit("client-y", 1000))
        .await
        .unwrap()
        .into_inner();
    assert!(!y.duplicate, "another caller's request id names nothing");
    let y = y.status.unwrap();
    assert_ne!(y.job_id, x.job_id);
    let z = client
        .submit_job(submit("client-z", 2000))
        .await
        .expect("no conflict with another caller's request id")
        .into_inner();
    assert!(!z.duplicate);
    // X's retry is still X's job.
    let again = client
        .submit_job(submit("client-x", 1000))
        .await
        .unwrap()
        .into_inner();
    assert!(again.duplicate);
    assert_eq!(again.status.unwrap().job_id, x.job_id);
    nothing_to_see(client, &x.job_id, Some("client-y")).await;
    nothing_to_see(client, &x.job_id, None).await;
    nothing_to_see(client, &y.job_id, Some("client-x")).await;
    // Y's cancel did nothing to X's job: it runs to its end, and X reads its results.
    let last = watch_as(client, &x.job_id, "client-x").await;
    assert_eq!(
        (last.state, last.games_done),
        (pb::JobState::Done as i32, 2)
    );
    let results = client
        .get_job_results(with_client(
            pb::GetJobResultsRequest {
                job_id: x.job_id.clone(),
                ..Default::default()
            },
            "client-x",
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(results.games.len(), 2);
    (x.job_id, y.job_id)
}

#[tokio::test]
async fn jobs_and_request_ids_belong_to_their_caller() {
    let mut s = start(AnalysisConfig::default()).await;
    jobs_belong_to_their_caller(&mut s.client).await;
    s.server.stop().await;
}

// ---- API keys: jobs owned by the key's client, random job ids, engine-time quotas ----

/// A key of `client` for live and batch analysis, with `engine_seconds` per minute of live
/// analysis (`None`: no quota).
fn key_of(client: &str, engine_seconds: Option<u32>) -> NewKey {
    new_key(
        client,
        &["analysis:live".into(), "analysis:batch".into()],
        None,
        engine_seconds,
    )
    .unwrap()
}

/// The access policy of `keys` (their entries, one keys file).
fn keys_policy(keys: &[&NewKey]) -> AccessPolicy {
    let text: Vec<&str> = keys.iter().map(|k| k.entry.as_str()).collect();
    AccessPolicy::with_keys(KeySet::parse(&text.join("\n"), None).unwrap())
}

/// A job id of the current form: `job-` and 32 hex digits (128 random bits).
fn random_id(id: &str) -> bool {
    id.strip_prefix("job-")
        .is_some_and(|h| h.len() == 32 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Watches a job to its end as `who`; its last status.
async fn watch_to_end_as(
    client: &mut AnalysisServiceClient<Channel>,
    id: &str,
    who: Who<'_>,
) -> pb::JobStatus {
    let mut stream = client
        .watch_job(who.ask(pb::WatchJobRequest {
            job_id: id.to_owned(),
        }))
        .await
        .unwrap()
        .into_inner();
    let mut last = None;
    while let Some(s) = tokio::time::timeout(Duration::from_secs(120), stream.message())
        .await
        .expect("the job moves on")
        .unwrap()
    {
        last = s.status;
    }
    last.expect("at least one status")
}

/// With API keys, jobs are their key's client's (`alice`, `bob`: keys of clients "alice" and
/// "bob"). Alice submits two jobs of the same games under two request ids: two ids, each of 128
/// random bits; her retry (even with an `x-client-id` naming bob) answers the same id. Bob,
/// with the same request id, gets a job of his own. Bob, with or without an `x-client-id` of
/// "alice", gets `NOT_FOUND` from every call on alice's job, with the message an unknown id
/// gets; alice's job runs on to its end, uncancelled. Returns alice's first job id.
pub(crate) async fn jobs_belong_to_their_key(
    client: &mut AnalysisServiceClient<Channel>,
    alice: &str,
    bob: &str,
) -> String {
    let a = Who {
        key: Some(alice),
        client_id: None,
    };
    let b = Who {
        key: Some(bob),
        client_id: None,
    };
    let submit = |who: Who<'_>, rid: &str| who.ask(job(rid, TWO_GAMES, 1000));
    let first = client
        .submit_job(submit(a, "k-1"))
        .await
        .unwrap()
        .into_inner();
    assert!(!first.duplicate);
    let first = first.status.unwrap().job_id;
    let second = client
        .submit_job(submit(a, "k-2"))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap()
        .job_id;
    assert!(random_id(&first) && random_id(&second), "{first} {second}");
    assert_ne!(
        first, second,
        "the same games under two request ids: two jobs"
    );
    // A retry answers the first id; x-client-id changes nothing with a key.
    for who in [
        a,
        Who {
            client_id: Some("bob"),
            ..a
        },
    ] {
        let again = client
            .submit_job(submit(who, "k-1"))
            .await
            .unwrap()
            .into_inner();
        assert!(again.duplicate, "{who:?}");
        assert_eq!(again.status.unwrap().job_id, first, "{who:?}");
    }
    // Bob's request id "k-1" is his own.
    let bobs = client
        .submit_job(submit(b, "k-1"))
        .await
        .unwrap()
        .into_inner();
    assert!(!bobs.duplicate, "another client's request id names nothing");
    let bobs = bobs.status.unwrap().job_id;
    assert!(random_id(&bobs) && bobs != first);
    // Bob cannot see, watch, read or cancel alice's job, even naming himself "alice".
    nothing_to_see_as(client, &first, b).await;
    nothing_to_see_as(
        client,
        &first,
        Who {
            client_id: Some("alice"),
            ..b
        },
    )
    .await;
    nothing_to_see_as(client, &bobs, a).await;
    // Alice's job was not cancelled: it runs to its end, and she reads its results.
    let now = client
        .get_job(a.ask(pb::GetJobRequest {
            job_id: first.clone(),
        }))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    assert_ne!(now.state, pb::JobState::Cancelled as i32);
    for id in [&first, &second, &bobs] {
        let who = if *id == bobs { b } else { a };
        let last = watch_to_end_as(client, id, who).await;
        assert_eq!(
            (last.state, last.games_done),
            (pb::JobState::Done as i32, 2),
            "{id}"
        );
    }
    let results = client
        .get_job_results(a.ask(pb::GetJobResultsRequest {
            job_id: first.clone(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(results.games.len(), 2);
    first
}

#[tokio::test]
async fn with_keys_jobs_belong_to_the_keys_client_and_ids_are_random() {
    let (alice, bob) = (key_of("alice", None), key_of("bob", None));
    let mut s = start_with(AnalysisConfig::default(), keys_policy(&[&alice, &bob])).await;
    jobs_belong_to_their_key(&mut s.client, &alice.key, &bob.key).await;
    // Without a key, nothing (the layer refuses before the service).
    let e = s
        .client
        .get_job(with_client(
            pb::GetJobRequest {
                job_id: "job-00000000000000000000000000000000".into(),
            },
            "alice",
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
    s.server.stop().await;
}

/// The field a status's `google.rpc.BadRequest` names.
fn bad_field(e: &tonic::Status) -> String {
    e.get_error_details()
        .bad_request()
        .expect("a BadRequest")
        .field_violations[0]
        .field
        .clone()
}

#[tokio::test]
async fn live_analysis_is_charged_to_its_clients_engine_time_quota() {
    // Alice and carol: 1 engine-second per minute each; bob: no quota.
    let (alice, carol, bob) = (
        key_of("alice", Some(1)),
        key_of("carol", Some(1)),
        key_of("bob", None),
    );
    let mut s = start_with(
        AnalysisConfig::default(),
        keys_policy(&[&alice, &carol, &bob]),
    )
    .await;
    fn by(k: &NewKey) -> Who<'_> {
        Who {
            key: Some(k.key.as_str()),
            client_id: None,
        }
    }
    // At most 500 ms each (depth 1 ends far sooner: the reservation is not refunded).
    let half = || analyze(Variant::Chess, "", limits(1, 0, 500));
    for _ in 0..2 {
        let stream = s
            .client
            .analyze(by(&alice).ask(half()))
            .await
            .unwrap()
            .into_inner();
        drain(stream).await;
    }
    // Alice's second has used the whole burst: the third must wait, and says how long.
    for who in [
        by(&alice),
        Who {
            client_id: Some("carol"),
            ..by(&alice)
        },
    ] {
        let e = s.client.analyze(who.ask(half())).await.unwrap_err();
        assert_eq!(e.code(), Code::ResourceExhausted, "{who:?}: {e:?}");
        let delay = e
            .get_error_details()
            .retry_info()
            .and_then(|r| r.retry_delay)
            .expect("a retry delay");
        assert!(delay > Duration::ZERO);
    }
    // BestMove draws on the same quota.
    let e = s
        .client
        .best_move(by(&alice).ask(best(Variant::Chess, "", limits(1, 0, 500))))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted);
    // Carol's quota is her own; bob has none.
    let stream = s
        .client
        .analyze(by(&carol).ask(half()))
        .await
        .expect("another client is not touched")
        .into_inner();
    drain(stream).await;
    for _ in 0..4 {
        s.client
            .best_move(by(&bob).ask(best(Variant::Chess, "", limits(1, 0, 500))))
            .await
            .expect("no quota, no limit");
    }
    // More than the whole quota never passes: 1001 ms, or no time limit (the server's cap).
    for movetime in [1001, 0] {
        let e = s
            .client
            .analyze(by(&carol).ask(analyze(Variant::Chess, "", limits(1, 0, movetime))))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
        assert_eq!(bad_field(&e), "limits.movetime_ms");
        let e = s
            .client
            .best_move(by(&carol).ask(best(Variant::Chess, "", limits(1, 0, movetime))))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
        assert_eq!(bad_field(&e), "limits.movetime_ms");
    }
    // The refusals reserved nothing: carol still has her other half.
    let stream = s
        .client
        .analyze(by(&carol).ask(half()))
        .await
        .unwrap()
        .into_inner();
    drain(stream).await;
    s.server.stop().await;
}

#[tokio::test]
async fn move_lists_and_bad_jobs() {
    let config = AnalysisConfig {
        batch: arbiter_analysis::batch::BatchConfig {
            max_games: 2,
            ..Default::default()
        },
        ..AnalysisConfig::default()
    };
    let mut s = start(config).await;
    let game = |variant: Variant, moves: &[&str]| pb::GameMoves {
        start: position(variant, ""),
        moves: moves.iter().map(|m| (*m).to_owned()).collect(),
        notation: 0,
    };
    let lists = |games: Vec<pb::GameMoves>| {
        Some(pb::submit_job_request::Games::MoveLists(pb::GameList {
            games,
        }))
    };
    let ok = s
        .client
        .submit_job(pb::SubmitJobRequest {
            request_id: "hex".into(),
            games: lists(vec![game(Variant::Glinski, &["f5-f6", "e7-e6"])]),
            per_ply: Some(pb::PlyLimit { depth: 2, nodes: 0 }),
            engine: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    let last = watch_to_end(&mut s.client, &ok.job_id).await.pop().unwrap();
    assert_eq!(
        (last.state, last.positions_done),
        (pb::JobState::Done as i32, 3)
    );

    let base = |games, per_ply: pb::PlyLimit| pb::SubmitJobRequest {
        request_id: "bad".into(),
        games,
        per_ply: Some(per_ply),
        engine: String::new(),
    };
    let nodes = pb::PlyLimit {
        depth: 0,
        nodes: 100,
    };
    let cases: Vec<(pb::SubmitJobRequest, Code, &str)> = vec![
        (
            pb::SubmitJobRequest {
                request_id: String::new(),
                ..job("x", TWO_GAMES, 100)
            },
            Code::InvalidArgument,
            "request_id",
        ),
        (
            pb::SubmitJobRequest {
                request_id: "a b".into(),
                ..job("x", TWO_GAMES, 100)
            },
            Code::InvalidArgument,
            "request_id",
        ),
        (
            base(lists(vec![]), pb::PlyLimit::default()),
            Code::InvalidArgument,
            "per_ply",
        ),
        (
            base(lists(vec![]), pb::PlyLimit { depth: 3, nodes: 3 }),
            Code::InvalidArgument,
            "per_ply",
        ),
        (
            base(
                lists(vec![]),
                pb::PlyLimit {
                    depth: 65,
                    nodes: 0,
                },
            ),
            Code::InvalidArgument,
            "per_ply.depth",
        ),
        (
            base(
                lists(vec![]),
                pb::PlyLimit {
                    depth: 0,
                    nodes: u64::MAX,
                },
            ),
            Code::ResourceExhausted,
            "per_ply.nodes",
        ),
        (base(None, nodes), Code::InvalidArgument, "games"),
        (base(lists(vec![]), nodes), Code::InvalidArgument, "games"),
        (
            base(lists(vec![game(Variant::Chess, &["e4", "e4"])]), nodes),
            Code::InvalidArgument,
            "move_lists.games[0].moves[1]",
        ),
        (
            base(lists(vec![game(Variant::Bughouse, &[])]), nodes),
            Code::InvalidArgument,
            "move_lists.games[0].start.variant",
        ),
        (
            base(lists(vec![game(Variant::Chess, &[]); 3]), nodes),
            Code::ResourceExhausted,
            "move_lists.games",
        ),
        (
            job("x", "[Variant \"Bughouse\"]\n\n1. e4 *\n", 100),
            Code::InvalidArgument,
            "pgn",
        ),
        (
            job("x", "1. e4 e5 2. Ke3 *\n", 100),
            Code::InvalidArgument,
            "pgn",
        ),
        (
            bpgn_job("x", "1A. e4 1a. e5 1B. Ke3 *\n", 100),
            Code::InvalidArgument,
            "bpgn",
        ),
        (
            bpgn_job("x", "1A. e4 1a. {unclosed", 100),
            Code::InvalidArgument,
            "bpgn",
        ),
    ];
    for (req, code, field) in cases {
        let e = s.client.submit_job(req).await.unwrap_err();
        assert_eq!((e.code(), field), (code, field), "{}", e.message());
        let details = e.get_error_details();
        assert_eq!(
            details.bad_request().unwrap().field_violations[0].field,
            field
        );
    }
    for missing in [
        s.client
            .get_job(pb::GetJobRequest {
                job_id: "job-none".into(),
            })
            .await
            .unwrap_err(),
        s.client
            .cancel_job(pb::CancelJobRequest {
                job_id: "\u{0}".repeat(10_000),
            })
            .await
            .unwrap_err(),
    ] {
        assert_eq!(missing.code(), Code::NotFound);
        assert!(missing.message().len() < 1100);
    }
    s.server.stop().await;
}

#[tokio::test]
async fn a_cancelled_job_stops_and_keeps_what_it_finished() {
    let mut s = start(AnalysisConfig::default()).await;
    // Twenty long games at a node count that takes a while.
    let long = "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O Be7 *\n".repeat(20);
    let status = s
        .client
        .submit_job(job("long", &long, 5_000_000))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    let cancelled = s
        .client
        .cancel_job(pb::CancelJobRequest {
            job_id: status.job_id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    assert_eq!(cancelled.state, pb::JobState::Cancelled as i32);
    let seen = watch_to_end(&mut s.client, &status.job_id).await;
    assert_eq!(seen.last().unwrap().state, pb::JobState::Cancelled as i32);
    // The worker is free again: a small job completes.
    let small = s
        .client
        .submit_job(job("small", TWO_GAMES, 500))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    let last = watch_to_end(&mut s.client, &small.job_id)
        .await
        .pop()
        .unwrap();
    assert_eq!(last.state, pb::JobState::Done as i32);
    s.server.stop().await;
}

#[tokio::test]
async fn finished_jobs_expire() {
    let config = AnalysisConfig {
        batch: arbiter_analysis::batch::BatchConfig {
            ttl: Duration::from_millis(500),
            ..Default::default()
        },
        ..AnalysisConfig::default()
    };
    let mut s = start(config).await;
    let status = s
        .client
        .submit_job(job("ttl", TWO_GAMES, 500))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    watch_to_end(&mut s.client, &status.job_id).await;
    let id = pb::GetJobRequest {
        job_id: status.job_id.clone(),
    };
    assert!(s.client.get_job(id.clone()).await.is_ok());
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        s.client.get_job(id).await.unwrap_err().code(),
        Code::NotFound
    );
    // The held positions are bounded: a job that would pass the bound waits for room.
    let config = AnalysisConfig {
        batch: arbiter_analysis::batch::BatchConfig {
            max_positions: 12,
            ..Default::default()
        },
        ..AnalysisConfig::default()
    };
    let mut small = start(config).await;
    small
        .client
        .submit_job(job("nine", TWO_GAMES, 500))
        .await
        .unwrap();
    let e = small
        .client
        .submit_job(job("nine-more", TWO_GAMES, 500))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted);
    small.server.stop().await;
    // Its request id is free again.
    let again = s
        .client
        .submit_job(job("ttl", TWO_GAMES, 500))
        .await
        .unwrap()
        .into_inner();
    assert!(!again.duplicate);
    s.server.stop().await;
}

#[tokio::test]
async fn jobs_take_turns_game_by_game() {
    // One worker; a long job first, then a one-game job: the short one does not wait for the
    // long one to end.
    let mut s = start(AnalysisConfig::default()).await;
    let long = "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O Be7 *\n".repeat(20);
    let long = s
        .client
        .submit_job(job("long-first", &long, 100_000))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    let short = s
        .client
        .submit_job(job("short-second", "1. e4 e5 *\n", 1_000))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    let done = watch_to_end(&mut s.client, &short.job_id)
        .await
        .pop()
        .unwrap();
    assert_eq!(done.state, pb::JobState::Done as i32);
    let long_now = s
        .client
        .get_job(pb::GetJobRequest {
            job_id: long.job_id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    assert!(long_now.games_done < 20, "{long_now:?}");
    s.client
        .cancel_job(pb::CancelJobRequest {
            job_id: long.job_id,
        })
        .await
        .unwrap();
    s.server.stop().await;
}
