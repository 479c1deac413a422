//! Matchmaking end to end through gRPC, as `arbiter serve` runs it: four bughouse players and
//! two chess players join their pools, are matched, and play their matches (with clocks) using
//! the seat tokens they were handed; a finished match rates its players once.

use arbiter_proto::common::v1 as common;
use arbiter_proto::matches::v1::{self as matches, match_service_client::MatchServiceClient};
use arbiter_proto::matchmaking::v1::{
    self as pb, join_response::Event, matchmaking_service_client::MatchmakingServiceClient,
};
use arbiter_server::{ServerConfig, StoreConfig, serve};
use arbiter_testkit::grpc::TestServer;
use std::time::Duration;
use tonic::Request;
use tonic::transport::Channel;
use tonic_health::pb::health_check_response::ServingStatus;

fn config() -> ServerConfig {
    let mut config = ServerConfig::default();
    config.matchmaking.tuning.wave_interval_ms = 100;
    config.matchmaking.tuning.wave_jitter_ms = 0;
    config
}

fn join_request(player: &str, variant: common::Variant, tc: &str) -> pb::JoinRequest {
    pb::JoinRequest {
        player_id: player.into(),
        variant: variant as i32,
        time_control: tc.into(),
        rated: true,
        ..pb::JoinRequest::default()
    }
}

/// Joins and waits on the stream for the match found.
async fn matched(channel: Channel, request: pb::JoinRequest) -> pb::MatchFound {
    let mut mm = MatchmakingServiceClient::new(channel);
    let mut stream = mm.join(request).await.unwrap().into_inner();
    let mut saw_status = false;
    loop {
        let event = tokio::time::timeout(Duration::from_secs(20), stream.message())
            .await
            .expect("a match within 20 s")
            .unwrap()
            .expect("the stream stays open until the match");
        match event.event.unwrap() {
            Event::Status(s) => {
                assert!(s.waiting >= 1 && s.position >= 1, "{s:?}");
                saw_status = true;
            }
            Event::MatchFound(found) => {
                assert!(saw_status, "a status comes first");
                // The stream ends after the match found.
                assert!(stream.message().await.unwrap().is_none());
                return found;
            }
        }
    }
}

fn bearer<T>(message: T, token: &str) -> Request<T> {
    let mut r = Request::new(message);
    r.metadata_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    r
}

async fn play(channel: Channel, found: &pb::MatchFound, mv: &str) -> matches::MakeMoveResponse {
    let seat = found.seat.as_ref().unwrap();
    MatchServiceClient::new(channel)
        .make_move(bearer(
            matches::MakeMoveRequest {
                match_id: found.match_id.clone(),
                board: seat.board as i32,
                side: seat.side as i32,
                r#move: mv.into(),
                expected_ply: 0,
                ..matches::MakeMoveRequest::default()
            },
            &found.token,
        ))
        .await
        .unwrap()
        .into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_join_are_matched_and_play_with_their_tokens() {
    acceptance(config()).await;
}

/// The same with matches and matchmaking in Redis, as the `arbiter` ACL user (the union of the
/// services') over TLS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_join_are_matched_and_play_with_their_tokens_in_redis() {
    let redis = arbiter_testkit::redis().await;
    let mut config = config();
    config.matches.store = StoreConfig::Redis(redis.secure("arbiter"));
    if let StoreConfig::Redis(r) = &config.matches.store {
        config.matchmaking.redis = Some(r.clone());
    }
    acceptance(config).await;
}

/// The same with every stateful service (matches, clock, matchmaking, analysis) on a Redis
/// Cluster of three primaries and three replicas, as the `arbiter` ACL user: `arbiter serve`
/// whole on a cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_join_are_matched_and_play_with_their_tokens_on_a_cluster() {
    let cluster = tokio::task::spawn_blocking(arbiter_testkit::cluster::RedisCluster::start)
        .await
        .unwrap();
    let redis = arbiter_analysis::RedisConfig::plain(&cluster.url_as("arbiter"));
    let mut config = config();
    config.matches.store = StoreConfig::Redis(redis.clone());
    config.clock.redis = Some(redis.clone());
    config.analysis.redis = Some(redis.clone());
    config.matchmaking.redis = Some(redis);
    acceptance(config).await;
}

async fn acceptance(config: ServerConfig) {
    let server = TestServer::start(|listener, shutdown| serve(listener, config, shutdown)).await;
    for service in [
        "arbiter.matches.v1.MatchService",
        "arbiter.matchmaking.v1.MatchmakingService",
        "arbiter.clock.v1.ClockService",
        "arbiter.analysis.v1.AnalysisService",
    ] {
        server.health_becomes(service, ServingStatus::Serving).await;
    }
    let ch = server.channel();

    let mut joins = Vec::new();
    for p in ["bug-1", "bug-2", "bug-3", "bug-4"] {
        joins.push(tokio::spawn(matched(
            ch.clone(),
            join_request(p, common::Variant::Bughouse, "2+0"),
        )));
    }
    for p in ["chess-w", "chess-b"] {
        joins.push(tokio::spawn(matched(
            ch.clone(),
            join_request(p, common::Variant::Chess, "3|2"),
        )));
    }
    let mut found = Vec::new();
    for j in joins {
        found.push(j.await.unwrap());
    }
    let (bug, chess) = found.split_at(4);

    // Bughouse: one match, four different seats, each player told all four.
    assert!(bug.iter().all(|f| f.match_id == bug[0].match_id));
    assert!(
        bug.iter()
            .all(|f| f.seats.len() == 4 && f.pool == "bughouse/2+0/rated")
    );
    let mut seats: Vec<(u32, u32)> = bug
        .iter()
        .map(|f| {
            let s = f.seat.as_ref().unwrap();
            (s.board, s.side)
        })
        .collect();
    seats.sort_unstable();
    assert_eq!(seats, [(1, 1), (1, 2), (2, 1), (2, 2)]);
    // Chess: a pair, White and Black.
    assert_eq!(chess[0].match_id, chess[1].match_id);
    assert_ne!(chess[0].match_id, bug[0].match_id);
    assert_eq!(chess[0].pool, "chess/3+2/rated");

    // The matches exist with their clocks, and each player moves with their own token.
    let state = MatchServiceClient::new(ch.clone())
        .get_match(matches::GetMatchRequest {
            match_id: bug[0].match_id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .state
        .unwrap();
    assert_eq!(state.time_control, "2+0");
    assert_eq!(state.boards.len(), 2);
    assert!(state.boards.iter().all(|b| b.clock.is_some()));
    for f in bug {
        let seat = f.seat.as_ref().unwrap();
        if seat.side == 1 {
            let mv = if seat.board == 1 { "e2e4" } else { "d2d4" };
            let r = play(ch.clone(), f, mv).await;
            assert_eq!(r.r#move.unwrap().ply, 1);
        }
    }
    let white = chess
        .iter()
        .find(|f| f.seat.as_ref().unwrap().side == 1)
        .unwrap();
    let black = chess
        .iter()
        .find(|f| f.seat.as_ref().unwrap().side == 2)
        .unwrap();
    let r = play(ch.clone(), white, "e2e4").await;
    assert!(r.state.unwrap().boards[0].clock.is_some());
    // Another seat's token does not move White's pieces.
    let wrong = MatchServiceClient::new(ch.clone())
        .make_move(bearer(
            matches::MakeMoveRequest {
                match_id: white.match_id.clone(),
                side: matches::Side::Black as i32,
                r#move: "e7e5".into(),
                expected_ply: 1,
                ..matches::MakeMoveRequest::default()
            },
            &white.token,
        ))
        .await
        .unwrap_err();
    assert_eq!(wrong.code(), tonic::Code::PermissionDenied);

    // Until acknowledged, joining again hands the match found back instead.
    let again = matched_or_found(
        ch.clone(),
        join_request("chess-w", common::Variant::Chess, "3+2"),
    )
    .await;
    assert_eq!(again.match_id, white.match_id);
    let mut mm = MatchmakingServiceClient::new(ch.clone());
    for f in chess {
        let ack = mm
            .acknowledge(pb::AcknowledgeRequest {
                player_id: f.seat.as_ref().unwrap().player_id.clone(),
                match_id: f.match_id.clone(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(ack.acknowledged);
    }

    // Black resigns: the match's own outcome rates both players, once.
    MatchServiceClient::new(ch.clone())
        .resign(bearer(
            matches::ResignRequest {
                match_id: black.match_id.clone(),
                side: matches::Side::Black as i32,
                request_id: "resign-1".into(),
                ..matches::ResignRequest::default()
            },
            &black.token,
        ))
        .await
        .unwrap();
    let rated = |player: String| {
        let mut mm = mm.clone();
        async move {
            for _ in 0..100 {
                let r = mm
                    .get_ratings(pb::GetRatingsRequest {
                        player_id: player.clone(),
                    })
                    .await
                    .unwrap()
                    .into_inner()
                    .ratings;
                if !r.is_empty() {
                    return r;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            panic!("{player} was never rated");
        }
    };
    // Colours are the wave's choice: read the ratings by seat.
    let w = rated(white.seat.as_ref().unwrap().player_id.clone()).await;
    let b = rated(black.seat.as_ref().unwrap().player_id.clone()).await;
    assert_eq!((w.len(), b.len()), (1, 1));
    assert_eq!((w[0].games, b[0].games), (1, 1));
    assert_eq!(w[0].speed, "blitz");
    assert!(
        w[0].glicko_rating > 1500.0 && b[0].glicko_rating < 1500.0,
        "{w:?} {b:?}"
    );
    assert_eq!((w[0].elo, b[0].elo), (1520, 1480));
    // Later follow scans find nothing more to apply.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        rated(white.seat.as_ref().unwrap().player_id.clone()).await[0].games,
        1
    );
    // The bughouse players, whose match goes on, are not rated yet.
    assert!(
        mm.get_ratings(pb::GetRatingsRequest {
            player_id: "bug-1".into()
        })
        .await
        .unwrap()
        .into_inner()
        .ratings
        .is_empty()
    );
    server.stop().await;
}

/// Joins; the first event must be a match found (a player who has not acknowledged one).
async fn matched_or_found(channel: Channel, request: pb::JoinRequest) -> pb::MatchFound {
    let mut stream = MatchmakingServiceClient::new(channel)
        .join(request)
        .await
        .unwrap()
        .into_inner();
    match stream.message().await.unwrap().unwrap().event.unwrap() {
        Event::MatchFound(f) => f,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn bad_joins_name_their_field_and_leave_is_honest() {
    let server = TestServer::start(|listener, shutdown| serve(listener, config(), shutdown)).await;
    let mut mm = MatchmakingServiceClient::new(server.channel());
    let mut bad = join_request("x", common::Variant::Chess, "3+2");
    bad.time_control = "soon".into();
    let e = mm.join(bad).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().contains("time_control"), "{}", e.message());
    assert!(
        !mm.leave(pb::LeaveRequest {
            player_id: "nobody".into()
        })
        .await
        .unwrap()
        .into_inner()
        .left
    );
    // A waiting player leaves; their stream then ends.
    let mut stream = mm
        .join(join_request("lonely", common::Variant::Glinski, "10+5"))
        .await
        .unwrap()
        .into_inner();
    let first = stream.message().await.unwrap().unwrap();
    assert!(matches!(first.event, Some(Event::Status(ref s)) if s.pool == "glinski/10+5/rated"));
    assert!(
        mm.leave(pb::LeaveRequest {
            player_id: "lonely".into()
        })
        .await
        .unwrap()
        .into_inner()
        .left
    );
    let end = tokio::time::timeout(Duration::from_secs(10), stream.message())
        .await
        .unwrap();
    assert_eq!(end.unwrap_err().code(), tonic::Code::Aborted);
    server.stop().await;
}
