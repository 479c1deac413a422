//! Observability of the whole server, as `arbiter serve --metrics-listen` runs it with its
//! stores in Redis: known calls (two players matched, moves played and refused, a bughouse flag,
//! a live search, a batch job) move exactly their domain series, and the Redis round trips of
//! each store are counted.
//!
//! A test binary of its own: the metrics recorder is the process's, so no other test's calls
//! move these series and every delta is exact.

mod shared;
use shared::matched;

use arbiter_proto::analysis::v1::{
    self as analysis, analysis_service_client::AnalysisServiceClient,
};
use arbiter_proto::common::v1 as common;
use arbiter_proto::matches::v1::{self as matches, match_service_client::MatchServiceClient};
use arbiter_proto::matchmaking::v1 as mm;
use arbiter_server::{ServerConfig, StoreConfig, serve};
use arbiter_testkit::grpc::TestServer;
use arbiter_testkit::metrics::{delta, scrape, value};
use std::net::SocketAddr;
use std::time::Duration;
use tonic::Request;
use tonic::transport::Channel;
use tonic_health::pb::health_check_response::ServingStatus;

async fn play(
    channel: Channel,
    found: &mm::MatchFound,
    side: matches::Side,
    mv: &str,
    ply: u32,
) -> Result<matches::MakeMoveResponse, tonic::Status> {
    let mut r = Request::new(matches::MakeMoveRequest {
        match_id: found.match_id.clone(),
        board: matches::Board::A as i32,
        side: side as i32,
        r#move: mv.into(),
        expected_ply: ply,
        ..matches::MakeMoveRequest::default()
    });
    r.metadata_mut().insert(
        "authorization",
        format!("Bearer {}", found.token).parse().unwrap(),
    );
    MatchServiceClient::new(channel)
        .make_move(r)
        .await
        .map(tonic::Response::into_inner)
}

/// Scrapes until `done` holds of the scrape (for up to 20 s): work that ends after its call
/// returned (a flag, a stream's end) is recorded a moment later.
async fn scrape_until(addr: SocketAddr, done: impl Fn(&str) -> bool) -> String {
    for _ in 0..400 {
        let s = scrape(addr).await;
        if done(&s) {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the metrics never got there:\n{}", scrape(addr).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn domain_series_move_with_known_calls() {
    let redis = arbiter_testkit::redis().await;
    let port = arbiter_testkit::free_port();
    let metrics: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut config = ServerConfig::default();
    config.serve.metrics_listen = Some(metrics);
    config.matches.store = StoreConfig::Redis(redis.secure("arbiter"));
    config.matchmaking.redis = Some(redis.secure("arbiter"));
    config.matchmaking.tuning.wave_interval_ms = 100;
    config.matchmaking.tuning.wave_jitter_ms = 0;
    let server = TestServer::start(|listener, shutdown| serve(listener, config, shutdown)).await;
    for service in [
        "arbiter.matches.v1.MatchService",
        "arbiter.matchmaking.v1.MatchmakingService",
    ] {
        server.health_becomes(service, ServingStatus::Serving).await;
    }
    let ch = server.channel();
    let before = scrape(metrics).await;

    // Two players matched in the chess pool.
    let (a, b) = tokio::join!(
        matched(ch.clone(), "white-or-black", "3+2"),
        matched(ch.clone(), "the-other", "3+2")
    );
    assert_eq!(a.match_id, b.match_id);
    let (white, black) = if a.seat.as_ref().unwrap().side as i32 == matches::Side::White as i32 {
        (a, b)
    } else {
        (b, a)
    };
    // Two moves applied, three refused: White again out of turn (a stale ply), Black with
    // a move that is not one, Black's token for White's seat.
    play(ch.clone(), &white, matches::Side::White, "e4", 0)
        .await
        .unwrap();
    let stale = play(ch.clone(), &white, matches::Side::White, "d4", 0)
        .await
        .unwrap_err();
    assert_eq!(stale.code(), tonic::Code::FailedPrecondition);
    let bad = play(ch.clone(), &black, matches::Side::Black, "e9", 1)
        .await
        .unwrap_err();
    assert_eq!(bad.code(), tonic::Code::InvalidArgument);
    let denied = play(ch.clone(), &black, matches::Side::White, "d4", 1)
        .await
        .unwrap_err();
    assert_eq!(denied.code(), tonic::Code::PermissionDenied);
    play(ch.clone(), &black, matches::Side::Black, "e5", 1)
        .await
        .unwrap();

    // A bughouse match whose clocks start at once: both White flags fall after 2 s.
    let created = MatchServiceClient::new(ch.clone())
        .create_match(matches::CreateMatchRequest {
            variant: common::Variant::Bughouse as i32,
            time_control: "2s+0".into(),
            players: ["p1", "p2", "p3", "p4"].map(String::from).to_vec(),
            ..matches::CreateMatchRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(created.created);

    // One live search.
    let best = AnalysisServiceClient::new(ch.clone())
        .best_move(analysis::BestMoveRequest {
            position: Some(common::Position {
                variant: common::Variant::Chess as i32,
                ..common::Position::default()
            }),
            limits: Some(analysis::SearchLimits {
                depth: 4,
                ..analysis::SearchLimits::default()
            }),
            ..analysis::BestMoveRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(best.result.is_some());

    let after = scrape_until(metrics, |s| {
        value(s, "arbiter_flag_delay_seconds_count", &[("game", "match")]) >= 1.0
    })
    .await;
    let d = |name: &str, labels: &[(&str, &str)]| delta(&before, &after, name, labels);

    // Matchmaking: one wave paired both players into one match.
    let chess = [("variant", "chess")];
    assert_eq!(d("arbiter_matchmaking_players_paired_total", &chess), 2.0);
    assert_eq!(d("arbiter_matchmaking_matches_created_total", &chess), 1.0);
    assert_eq!(d("arbiter_matchmaking_wait_seconds_count", &chess), 2.0);
    assert!(
        d(
            "arbiter_matchmaking_waves_total",
            &[("variant", "chess"), ("outcome", "ran")]
        ) >= 1.0
    );
    assert!(d("arbiter_matchmaking_wave_duration_seconds_count", &chess) >= 1.0);

    // Matches: two created (chess, bughouse), two moves, three refusals by reason.
    assert_eq!(d("arbiter_matches_created_total", &chess), 1.0);
    assert_eq!(
        d("arbiter_matches_created_total", &[("variant", "bughouse")]),
        1.0
    );
    assert_eq!(d("arbiter_match_moves_applied_total", &chess), 2.0);
    assert_eq!(d("arbiter_match_moves_applied_total", &[]), 2.0);
    assert_eq!(d("arbiter_match_moves_refused_total", &[]), 3.0);
    assert_eq!(
        d(
            "arbiter_match_moves_refused_total",
            &[("reason", "bad_move")]
        ),
        1.0
    );
    assert_eq!(
        d(
            "arbiter_match_moves_refused_total",
            &[("reason", "STALE_PLY")]
        ),
        1.0
    );
    assert_eq!(
        d(
            "arbiter_match_moves_refused_total",
            &[("reason", "permission_denied")]
        ),
        1.0
    );
    // The flag: one end on time, recorded with its delay, and the match's end by reason.
    assert_eq!(
        d("arbiter_flag_delay_seconds_count", &[("game", "match")]),
        1.0
    );
    assert_eq!(
        d(
            "arbiter_matches_ended_total",
            &[("variant", "bughouse"), ("reason", "timeout")]
        ),
        1.0
    );
    assert_eq!(d("arbiter_matches_ended_total", &[]), 1.0);

    // Analysis: one live search, its nodes, its wait in the engine queue.
    assert_eq!(
        d("arbiter_analysis_searches_total", &[("kind", "live")]),
        1.0
    );
    assert!(d("arbiter_analysis_nodes_total", &[("kind", "live")]) > 0.0);
    assert_eq!(d("arbiter_analysis_queue_wait_seconds_count", &[]), 1.0);
    assert!(value(&after, "arbiter_analysis_threads", &[]) >= 1.0);
    assert_eq!(value(&after, "arbiter_analysis_threads_busy", &[]), 0.0);

    // Redis: the match store ran its scripts (the creation, two moves, the flag's end) and
    // no round trip failed.
    let store = [("store", "match store"), ("kind", "script")];
    assert!(d("arbiter_redis_round_trips_total", &store) >= 4.0);
    assert_eq!(
        d("arbiter_redis_round_trip_duration_seconds_count", &store),
        d("arbiter_redis_round_trips_total", &store)
    );
    assert!(
        d(
            "arbiter_redis_round_trips_total",
            &[("store", "matchmaking store")]
        ) >= 1.0
    );
    assert_eq!(d("arbiter_redis_errors_total", &[]), 0.0);
    assert!(
        after.contains("arbiter_redis_errors_total{store=\"match store\",kind=\"connection\"} 0")
    );

    // Label values stay fixed names: no match id, no player.
    for id in [&white.match_id, &created.state.unwrap().match_id] {
        assert!(!after.contains(id.as_str()));
    }
    assert!(!after.contains("white-or-black"));
    server.stop().await;
}
