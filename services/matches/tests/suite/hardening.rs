//! The match service under attack and failure, over gRPC: hostile strings never corrupt a match,
//! repeated requests add nothing, every resource is bounded, health follows Redis, shutdown ends
//! watch streams, and a lost reply is answered on retry, exactly once.

use crate::support;

use arbiter_core::Color;
use arbiter_core::bughouse::BoardId;
use arbiter_kit::ServeConfig;
use arbiter_kit::access::AccessPolicy;
use arbiter_matches::domain::{Creation, MoveRequest, SeatRef};
use arbiter_matches::seats::SeatKey;
use arbiter_matches::store::Retention;
use arbiter_matches::store::redis::RedisStore;
use arbiter_matches::watchers::WatchLimits;
use arbiter_matches::{MatchError, MatchLimits, Matches, MatchesConfig, StoreConfig};
use arbiter_proto::common::v1::{self as common, Variant};
use arbiter_proto::matches::v1 as pb;
use std::time::{Duration, Instant};
use support::*;
use tonic::Code;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_types::StatusExt;

/// The match service's name in the health service.
pub(crate) const SERVICE: &str = "arbiter.matches.v1.MatchService";

fn key() -> SeatKey {
    SeatKey::from_material(b"a test key of at least thirty-two bytes").unwrap()
}

pub(crate) async fn start(config: MatchesConfig) -> Server {
    TestServer::start(|listener, shutdown| {
        arbiter_matches::serve(
            listener,
            ServeConfig::default(),
            config,
            AccessPolicy::development(),
            shutdown,
        )
    })
    .await
}

pub(crate) fn config(store: StoreConfig) -> MatchesConfig {
    MatchesConfig {
        store,
        seat_key: key(),
        health_interval: Duration::from_millis(200),
        ..MatchesConfig::default()
    }
}

pub(crate) fn chess_game(players: [&str; 2], time_control: &str) -> pb::CreateMatchRequest {
    pb::CreateMatchRequest {
        variant: Variant::Chess as i32,
        players: players.map(String::from).into(),
        time_control: time_control.into(),
        ..Default::default()
    }
}

/// Client strings that once broke a stored match (a move with a newline in a match whose player
/// ids were long, a time control with a newline) are normalised or refused, never stored as
/// they came; a move text is refused unless it is clean as sent (no trimming); the match keeps
/// working, in Redis as in process.
#[tokio::test]
async fn hostile_strings_never_corrupt_a_match() {
    let redis = arbiter_testkit::redis().await;
    for store in [StoreConfig::Memory, StoreConfig::redis(redis.url.clone())] {
        let s = start(config(store)).await;
        s.health_becomes(SERVICE, ServingStatus::Serving).await;
        let mut c = s.client();
        let long = format!("{}: {}", "p".repeat(100), "é".repeat(10));
        let status = c
            .create_match(chess_game(["ann", "bob"], "3+\n2"))
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument);
        let t = create_from(&mut c, chess_game([&long, "bob\u{2028}"], "  3+2 ")).await;
        let status = make_move(&mut c, &t, A, WHITE, "e4\n", 0)
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument);
        let r = make_move(&mut c, &t, A, WHITE, "e4", 0).await.unwrap();
        assert_eq!(r.r#move.unwrap().r#move.unwrap().uci, "e2e4");
        for bad in ["e5\u{0}", "e5\r\nQh4", &"e".repeat(1000), " e5 "] {
            let status = make_move(&mut c, &t, A, BLACK, bad, 1).await.unwrap_err();
            assert_eq!(status.code(), Code::InvalidArgument, "{bad:?}");
        }
        make_move(&mut c, &t, A, BLACK, "e5", 1).await.unwrap();
        let state = c
            .get_match(pb::GetMatchRequest {
                match_id: t.id.clone(),
            })
            .await
            .unwrap()
            .into_inner()
            .state
            .unwrap();
        assert_eq!(state.seats[0].player_id, long.trim());
        assert_eq!(state.time_control, "3+2");
        assert_eq!(state.boards[0].ply, 2);
        s.stop().await;
    }
}

/// 2,000 draw offers by one player add one event; a repeated offer is idempotent.
#[tokio::test]
async fn repeated_offers_add_nothing() {
    let s = start(config(StoreConfig::Memory)).await;
    let mut c = s.client();
    let t = create_from(&mut c, chess_game(["ann", "bob"], "")).await;
    for _ in 0..2000 {
        c.offer_draw(bearer(
            pb::OfferDrawRequest {
                match_id: t.id.clone(),
                side: WHITE,
                ..Default::default()
            },
            &t.tokens[&(A, WHITE)],
        ))
        .await
        .unwrap();
    }
    let state = c
        .get_match(pb::GetMatchRequest {
            match_id: t.id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .state
        .unwrap();
    assert_eq!(state.last_seq, 1);
    s.stop().await;
}

/// Matches in process, plies per board and watch streams are bounded, each refused with
/// RESOURCE_EXHAUSTED at its limit.
#[tokio::test]
async fn resources_are_bounded() {
    let s = start(MatchesConfig {
        limits: MatchLimits {
            first_move_ms: 30_000,
            max_matches: 3,
            max_plies: 4,
            watchers: WatchLimits {
                total: 3,
                per_match: 2,
            },
        },
        ..config(StoreConfig::Memory)
    })
    .await;
    let mut c = s.client();
    let t = create_from(&mut c, chess_game(["ann", "bob"], "")).await;
    for (ply, (side, mv)) in [
        (WHITE, "Nf3"),
        (BLACK, "Nf6"),
        (WHITE, "Ng1"),
        (BLACK, "Ng8"),
    ]
    .into_iter()
    .enumerate()
    {
        make_move(&mut c, &t, A, side, mv, ply as u32)
            .await
            .unwrap();
    }
    let status = make_move(&mut c, &t, A, WHITE, "Nf3", 4).await.unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted);
    assert_eq!(
        status.get_details_bad_request().unwrap().field_violations[0].field,
        "move"
    );
    create_from(&mut c, chess_game(["a", "b"], "")).await;
    create_from(&mut c, chess_game(["c", "d"], "")).await;
    let status = c
        .create_match(chess_game(["e", "f"], ""))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted);
    let watch = |id: &str| {
        let mut c = s.client();
        let id = id.to_owned();
        async move {
            c.watch_match(pb::WatchMatchRequest {
                match_id: id,
                after_seq: 0,
            })
            .await
        }
    };
    let _w1 = watch(&t.id).await.unwrap();
    let _w2 = watch(&t.id).await.unwrap();
    assert_eq!(
        watch(&t.id).await.unwrap_err().code(),
        Code::ResourceExhausted
    );
    drop(_w1);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let _w3 = watch(&t.id).await.unwrap();
    s.stop().await;
}

/// Shutdown with watch streams open on a live match completes in bounded time; each watcher
/// gets a final UNAVAILABLE telling it to watch again.
#[tokio::test]
async fn shutdown_ends_watch_streams() {
    let s = start(config(StoreConfig::Memory)).await;
    let mut c = s.client();
    let t = create_from(&mut c, chess_game(["ann", "bob"], "")).await;
    make_move(&mut c, &t, A, WHITE, "e4", 0).await.unwrap();
    let mut streams = Vec::new();
    for _ in 0..3 {
        streams.push(
            c.watch_match(pb::WatchMatchRequest {
                match_id: t.id.clone(),
                after_seq: 0,
            })
            .await
            .unwrap()
            .into_inner(),
        );
    }
    for w in &mut streams {
        assert!(w.message().await.unwrap().is_some(), "the move");
    }
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(10), s.stop())
        .await
        .expect("shutdown completes with watchers open");
    assert!(started.elapsed() < Duration::from_secs(10));
    for mut w in streams {
        let end = w.message().await;
        assert!(
            matches!(&end, Err(status) if status.code() == Code::Unavailable),
            "{end:?}"
        );
    }
}

/// A watcher on one replica sees the moves made through another at once: the replicas share
/// one Redis, and the mover's replica announces each change, which wakes the watcher's (nothing
/// polls). The watcher's replica subscribes only once it has a watcher.
#[tokio::test]
async fn watchers_follow_moves_made_on_another_replica() {
    let redis = arbiter_testkit::redis().await;
    let one = start(config(StoreConfig::redis(redis.url.clone()))).await;
    let two = start(config(StoreConfig::redis(redis.url.clone()))).await;
    one.health_becomes(SERVICE, ServingStatus::Serving).await;
    two.health_becomes(SERVICE, ServingStatus::Serving).await;
    let mut c1 = one.client();
    let t = create_from(&mut c1, chess_game(["ann", "bob"], "")).await;
    let mut watch = two
        .client()
        .watch_match(pb::WatchMatchRequest {
            match_id: t.id.clone(),
            after_seq: 0,
        })
        .await
        .unwrap()
        .into_inner();
    for (ply, (side, mv)) in [(WHITE, "e4"), (BLACK, "e5"), (WHITE, "Nf3")]
        .into_iter()
        .enumerate()
    {
        make_move(&mut c1, &t, A, side, mv, ply as u32)
            .await
            .unwrap();
        let event = tokio::time::timeout(Duration::from_secs(5), watch.message())
            .await
            .expect("the other replica's watcher is woken")
            .unwrap()
            .expect("an event");
        assert_eq!(event.seq, ply as u64 + 1, "{event:?}");
    }
    drop(watch);
    one.stop().await;
    two.stop().await;
}

/// Health follows Redis: SERVING while it answers, NOT_SERVING while it is away (the calls fail
/// with UNAVAILABLE), SERVING again when it returns — and NOT_SERVING while Redis is set to
/// evict keys.
#[tokio::test]
async fn health_follows_redis() {
    let port = arbiter_testkit::free_port();
    let redis = arbiter_testkit::redis_on(port).await;
    let s = start(config(StoreConfig::redis(redis.url.clone()))).await;
    s.health_becomes(SERVICE, ServingStatus::Serving).await;
    redis.container.stop().await.unwrap();
    s.health_becomes(SERVICE, ServingStatus::NotServing).await;
    let status = s
        .client()
        .create_match(chess_game(["ann", "bob"], ""))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert!(
        !status.message().contains("redis://"),
        "{}",
        status.message()
    );
    redis.container.start().await.unwrap();
    s.health_becomes(SERVICE, ServingStatus::Serving).await;
    let client = redis::Client::open(redis.url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    for (policy, status) in [
        ("allkeys-lru", ServingStatus::NotServing),
        ("noeviction", ServingStatus::Serving),
    ] {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory-policy")
            .arg(policy)
            .query_async(&mut conn)
            .await
            .unwrap();
        s.health_becomes(SERVICE, status).await;
    }
    s.stop().await;
}

/// The process starts while Redis is down: the match service reports NOT_SERVING and answers
/// UNAVAILABLE, and serves once Redis appears.
#[tokio::test]
async fn the_process_starts_while_redis_is_down() {
    let port = arbiter_testkit::free_port();
    let s = start(config(StoreConfig::redis(format!(
        "redis://127.0.0.1:{port}"
    ))))
    .await;
    s.health_becomes(SERVICE, ServingStatus::NotServing).await;
    let status = s
        .client()
        .create_match(chess_game(["ann", "bob"], ""))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unavailable);
    let _redis = arbiter_testkit::redis_on(port).await;
    s.health_becomes(SERVICE, ServingStatus::Serving).await;
    create_from(&mut s.client(), chess_game(["ann", "bob"], "")).await;
    s.stop().await;
}

/// Redis with a password: the password comes from the configuration (a file or the environment
/// in production); without it the service is not served.
#[tokio::test]
async fn redis_with_a_password() {
    let redis = arbiter_testkit::redis_with(&["--requirepass", "s3cret-redis-pass"]).await;
    let with = |password: Option<&str>| {
        config(StoreConfig::Redis(
            arbiter_matches::store::redis::RedisConfig {
                password: password.map(String::from),
                ..arbiter_matches::store::redis::RedisConfig::plain(&redis.url)
            },
        ))
    };
    let s = start(with(Some("s3cret-redis-pass"))).await;
    s.health_becomes(SERVICE, ServingStatus::Serving).await;
    create_from(&mut s.client(), chess_game(["ann", "bob"], "")).await;
    s.stop().await;
    let s = start(with(None)).await;
    s.health_becomes(SERVICE, ServingStatus::NotServing).await;
    s.stop().await;
}

fn creation() -> Creation {
    Creation {
        variant: Some(arbiter_core::Variant::Chess),
        players: vec!["ann".into(), "bob".into()],
        ..Default::default()
    }
}

/// The reply to an applied move is lost between the service and Redis: the client sees
/// UNAVAILABLE; its retry with the same request id, after the opponent has replied, is
/// answered with the move as it was applied, which is applied once.
#[tokio::test]
async fn a_lost_reply_is_answered_on_retry_exactly_once() {
    let redis = arbiter_testkit::redis().await;
    let target = format!("127.0.0.1:{}", redis.port).parse().unwrap();
    let proxy = arbiter_testkit::Proxy::start(target).await;
    let url = format!("redis://{}", proxy.addr);
    let m = Matches::new(
        RedisStore::connect(&url, Retention::default(), 100)
            .await
            .unwrap(),
        key(),
        MatchLimits::default(),
    );
    let created = m.create(creation()).await.unwrap();
    let id = created.record.id.clone();
    let token = |color: Color| {
        created
            .seats
            .iter()
            .find(|(s, _)| s.color == color)
            .map(|(_, t)| t.clone())
            .unwrap()
    };
    let seat = |color| SeatRef {
        board: Some(BoardId::A),
        color: Some(color),
    };
    let (white, black) = (token(Color::White), token(Color::Black));
    let play = |color: Color, tok: &str, text: &str, ply: u32, request: Option<&str>| {
        let (tok, text, request) = (tok.to_owned(), text.to_owned(), request.map(str::to_owned));
        let (m, id) = (&m, id.clone());
        async move {
            m.play(
                &id,
                MoveRequest {
                    seat: seat(color),
                    token: Some(&tok),
                    text: &text,
                    expected_ply: ply,
                    locale: arbiter_core::Locale::English,
                    request_id: request.as_deref(),
                    lag_ms: 0,
                },
            )
            .await
        }
    };
    proxy.drop_next_reply();
    let lost = play(Color::White, &white, "e4", 0, Some("w-1")).await;
    assert!(
        matches!(
            lost,
            Err(MatchError::Store(
                arbiter_matches::store::StoreError::Unavailable(_)
            ))
        ),
        "{lost:?}"
    );
    // The move was applied: the opponent sees it and replies.
    let mut replied = None;
    for _ in 0..50 {
        match play(Color::Black, &black, "e5", 1, Some("b-1")).await {
            Ok(a) => {
                replied = Some(a);
                break;
            }
            Err(MatchError::Store(_)) => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(replied.unwrap().record.boards[0].ply, 2);
    // The retry, with its old ply: answered as applied, with the same move.
    let retry = play(Color::White, &white, "e4", 0, Some("w-1"))
        .await
        .unwrap();
    assert!(retry.duplicate);
    assert_eq!((retry.played.ply, retry.played.uci.as_str()), (1, "e2e4"));
    assert_eq!(retry.record.boards[0].ply, 2, "applied once");
    // Another request id at the old ply is a stale request, not a retry.
    let other = play(Color::White, &white, "e4", 0, Some("w-2")).await;
    assert_eq!(other.unwrap_err().reason(), Some("STALE_PLY"));
    // Resignation: the same, exactly once.
    proxy.drop_next_reply();
    let lost = m
        .resign(&id, seat(Color::White), Some(&white), Some("w-resign"))
        .await;
    assert!(lost.is_err(), "{lost:?}");
    let mut again = None;
    for _ in 0..50 {
        match m
            .resign(&id, seat(Color::White), Some(&white), Some("w-resign"))
            .await
        {
            Ok(done) => {
                again = Some(done);
                break;
            }
            Err(MatchError::Store(_)) => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(e) => panic!("{e:?}"),
        }
    }
    let again = again.unwrap();
    assert!(again.duplicate);
    assert_eq!(again.record.outcome.unwrap().reason.name(), "resignation");
    assert_eq!(
        m.resign(&id, seat(Color::White), Some(&white), Some("w-other"))
            .await
            .unwrap_err()
            .reason(),
        Some("MATCH_OVER")
    );
    let events = m.events(&id, 0, usize::MAX).await.unwrap();
    assert_eq!(events.len(), 3, "two moves and one end: {events:?}");
}

/// Request ids over gRPC: every state-changing call answers a retry as a duplicate.
#[tokio::test]
async fn request_ids_over_grpc() {
    let s = start(config(StoreConfig::Memory)).await;
    let mut c = s.client();
    let t = create_from(&mut c, chess_game(["ann", "bob"], "")).await;
    let mv = |request_id: &str, side: i32, text: &str, ply: u32| {
        bearer(
            pb::MakeMoveRequest {
                match_id: t.id.clone(),
                side,
                r#move: text.into(),
                expected_ply: ply,
                request_id: request_id.into(),
                ..Default::default()
            },
            &t.tokens[&(A, side)],
        )
    };
    let first = c
        .make_move(mv("r1", WHITE, "e4", 0))
        .await
        .unwrap()
        .into_inner();
    c.make_move(mv("r2", BLACK, "e5", 1)).await.unwrap();
    let again = c
        .make_move(mv("r1", WHITE, "e4", 0))
        .await
        .unwrap()
        .into_inner();
    assert!(again.duplicate && !first.duplicate);
    assert_eq!(again.r#move, first.r#move);
    let status = c
        .make_move(mv("bad id", WHITE, "Nf3", 2))
        .await
        .unwrap_err();
    assert_eq!(
        status.get_details_bad_request().unwrap().field_violations[0].field,
        "request_id"
    );
    let offer = |request_id: &str| {
        bearer(
            pb::OfferDrawRequest {
                match_id: t.id.clone(),
                side: WHITE,
                request_id: request_id.into(),
                ..Default::default()
            },
            &t.tokens[&(A, WHITE)],
        )
    };
    assert!(
        !c.offer_draw(offer("o1"))
            .await
            .unwrap()
            .into_inner()
            .duplicate
    );
    assert!(
        c.offer_draw(offer("o1"))
            .await
            .unwrap()
            .into_inner()
            .duplicate
    );
    let claim = |request_id: &str| {
        bearer(
            pb::ClaimDrawRequest {
                match_id: t.id.clone(),
                side: BLACK,
                claim: common::DrawClaim::ThreefoldRepetition as i32,
                request_id: request_id.into(),
                ..Default::default()
            },
            &t.tokens[&(A, BLACK)],
        )
    };
    assert_eq!(
        c.claim_draw(claim("c1")).await.unwrap_err().code(),
        Code::FailedPrecondition
    );
    let resign = |request_id: &str| {
        bearer(
            pb::ResignRequest {
                match_id: t.id.clone(),
                side: BLACK,
                request_id: request_id.into(),
                ..Default::default()
            },
            &t.tokens[&(A, BLACK)],
        )
    };
    assert!(!c.resign(resign("x1")).await.unwrap().into_inner().duplicate);
    assert!(c.resign(resign("x1")).await.unwrap().into_inner().duplicate);
    assert_eq!(
        c.resign(resign("x2")).await.unwrap_err().code(),
        Code::FailedPrecondition
    );
    s.stop().await;
}
