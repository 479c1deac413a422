//! The clock service over real gRPC (clocks in process), and its Redis store with replicas
//! (testcontainers): standalone clocks pressed idempotently per ply, flags that fall with no
//! press and reach the watchers, a two-board clock stopping at the other board's flag, platform
//! actions, bad input refused by field; Sync over loopback with injected random delays; and,
//! with Redis, a replica killed while the other ends the clocks on time.

use arbiter_clock::sync::{Estimator, exchange};
use arbiter_clock::{ClockConfig, Clocks};
use arbiter_kit::ServeConfig;
use arbiter_kit::auth::PlatformAuth;
use arbiter_proto::clock::v1::{self as pb, clock_service_client::ClockServiceClient};
use arbiter_testkit::grpc::TestServer;
use arbiter_timekeeping::process_now;
use std::sync::Arc;
use std::time::Duration;
use tokio_stream::StreamExt;
use tonic::Code;
use tonic::transport::Channel;

type Server = TestServer<arbiter_kit::ServeError>;

async fn start() -> Server {
    TestServer::start(|listener, shutdown| {
        arbiter_clock::serve(
            listener,
            ServeConfig::default(),
            ClockConfig::default(),
            PlatformAuth::loopback_only(),
            shutdown,
        )
    })
    .await
}

const WHITE: i32 = pb::Side::White as i32;
const BLACK: i32 = pb::Side::Black as i32;

async fn create(
    c: &mut ClockServiceClient<Channel>,
    id: &str,
    tc: &str,
    boards: u32,
) -> pb::ClockState {
    c.create_clock(pb::CreateClockRequest {
        clock_id: id.into(),
        time_control: tc.into(),
        boards,
        first: 0,
    })
    .await
    .unwrap()
    .into_inner()
    .state
    .unwrap()
}

fn press(id: &str, board: i32, side: i32, ply: u32) -> pb::PressRequest {
    pb::PressRequest {
        clock_id: id.into(),
        board,
        side,
        ply,
        lag_ms: 0,
    }
}

async fn events_to_end(c: &mut ClockServiceClient<Channel>, id: &str) -> Vec<pb::ClockEvent> {
    let mut stream = c
        .watch_clock(pb::WatchClockRequest {
            clock_id: id.into(),
            after_seq: 0,
        })
        .await
        .unwrap()
        .into_inner();
    let mut out = Vec::new();
    while let Some(e) = tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .expect("the clock ends")
    {
        out.push(e.unwrap());
    }
    out
}

/// Presses are idempotent per ply, refusals name their cause, and the flag falls with no press
/// sent: watchers get every snapshot, then the flag at the deadline.
#[tokio::test]
async fn a_standalone_clock_flags_with_no_press() {
    let s = start().await;
    let mut c = ClockServiceClient::new(s.channel());
    let st = create(&mut c, "g1", "2s+1", 1).await;
    assert_eq!(
        (st.time_control.as_str(), st.speed.as_str()),
        ("2s+1", "bullet")
    );
    let b = &st.boards[0];
    assert_eq!(
        (b.white_ms, b.running, b.phase),
        (2_000, WHITE, pb::Phase::Running as i32)
    );
    // Creating it again is a retry; another creation under the id is refused.
    let again = c
        .create_clock(pb::CreateClockRequest {
            clock_id: "g1".into(),
            time_control: "2s+1".into(),
            boards: 1,
            first: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert!(again.duplicate);
    let other = c
        .create_clock(pb::CreateClockRequest {
            clock_id: "g1".into(),
            time_control: "3+0".into(),
            boards: 1,
            first: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(other.code(), Code::AlreadyExists);

    let first = c
        .press(press("g1", 0, WHITE, 0))
        .await
        .unwrap()
        .into_inner();
    assert!(!first.duplicate);
    let st = first.state.unwrap();
    assert_eq!(st.boards[0].ply, 1);
    assert_eq!(st.boards[0].running, BLACK);
    assert!(st.boards[0].white_ms > 2_000, "the increment was added");
    let retry = c
        .press(press("g1", 0, WHITE, 0))
        .await
        .unwrap()
        .into_inner();
    assert!(retry.duplicate);
    assert_eq!(retry.state.unwrap().boards[0], st.boards[0]);
    let stale = c.press(press("g1", 0, BLACK, 5)).await.unwrap_err();
    assert_eq!(stale.code(), Code::FailedPrecondition);
    let turn = c.press(press("g1", 0, WHITE, 1)).await.unwrap_err();
    assert_eq!(turn.code(), Code::FailedPrecondition);
    let mut negative = press("g1", 0, BLACK, 1);
    negative.lag_ms = -5;
    let err = c.press(negative).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("lag_ms"));

    // Black never presses: the flag falls on the server.
    let events = events_to_end(&mut c, "g1").await;
    let Some(pb::clock_event::Event::Flag(flag)) = &events.last().unwrap().event else {
        panic!("{events:?}");
    };
    assert_eq!(flag.side, BLACK);
    assert_eq!(
        flag.at_ms, st.boards[0].deadline_ms,
        "the flag falls at the deadline"
    );
    let st = c
        .get_clock(pb::GetClockRequest {
            clock_id: "g1".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .state
        .unwrap();
    assert!(st.over);
    assert_eq!(st.boards[0].phase, pb::Phase::Flagged as i32);
    assert_eq!(st.boards[0].black_ms, 0);
    let late = c.press(press("g1", 0, BLACK, 1)).await.unwrap_err();
    assert_eq!(late.code(), Code::FailedPrecondition);
    s.stop().await;
}

/// Two boards start together; a flag on board A stops board B at that instant.
#[tokio::test]
async fn a_flag_on_one_board_stops_the_other() {
    let s = start().await;
    let mut c = ClockServiceClient::new(s.channel());
    create(&mut c, "bug", "2s+0", 2).await;
    let b = pb::Board::B as i32;
    c.press(press("bug", b, WHITE, 0)).await.unwrap();
    c.press(press("bug", b, BLACK, 1)).await.unwrap();
    let events = events_to_end(&mut c, "bug").await;
    let Some(pb::clock_event::Event::Flag(flag)) = &events.last().unwrap().event else {
        panic!("{events:?}");
    };
    assert_eq!((flag.board, flag.side), (pb::Board::A as i32, WHITE));
    let st = c
        .get_clock(pb::GetClockRequest {
            clock_id: "bug".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .state
        .unwrap();
    assert_eq!(st.boards[1].phase, pb::Phase::Stopped as i32);
    s.stop().await;
}

/// Pause, resume, time added and stop; bad input is refused by field and changes nothing.
#[tokio::test]
async fn platform_actions_and_bad_input() {
    let s = start().await;
    let mut c = ClockServiceClient::new(s.channel());
    create(&mut c, "p", "5+0", 1).await;
    let action = || pb::ClockActionRequest {
        clock_id: "p".into(),
        request_id: String::new(),
    };
    let paused = c
        .pause_clock(action())
        .await
        .unwrap()
        .into_inner()
        .state
        .unwrap();
    assert_eq!(paused.boards[0].phase, pb::Phase::Paused as i32);
    assert_eq!(paused.boards[0].deadline_ms, 0);
    assert_eq!(
        c.press(press("p", 0, WHITE, 0)).await.unwrap_err().code(),
        Code::FailedPrecondition
    );
    assert_eq!(
        c.pause_clock(action()).await.unwrap_err().code(),
        Code::FailedPrecondition
    );
    c.resume_clock(action()).await.unwrap();
    let add = pb::AddTimeRequest {
        clock_id: "p".into(),
        board: 0,
        side: BLACK,
        ms: 10_000,
        request_id: "bonus-1".into(),
    };
    let added = c.add_time(add.clone()).await.unwrap().into_inner();
    assert!(!added.duplicate);
    assert_eq!(added.state.unwrap().boards[0].black_ms, 310_000);
    // A retry (the answer was lost) adds nothing more.
    let retried = c.add_time(add).await.unwrap().into_inner();
    assert!(retried.duplicate);
    assert_eq!(retried.state.unwrap().boards[0].black_ms, 310_000);
    let stopped = c
        .stop_clock(action())
        .await
        .unwrap()
        .into_inner()
        .state
        .unwrap();
    assert!(stopped.over);
    let events = events_to_end(&mut c, "p").await;
    assert!(matches!(
        events.last().unwrap().event,
        Some(pb::clock_event::Event::Stopped(true))
    ));
    assert_eq!(
        events.len(),
        5,
        "pause, resume, time added, stop snapshot, stop: {events:?}"
    );

    for (tc, boards) in [("3+", 1), ("0+0", 1), ("x", 1), ("3+0", 3)] {
        let err = c
            .create_clock(pb::CreateClockRequest {
                clock_id: String::new(),
                time_control: tc.into(),
                boards,
                first: 0,
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{tc} {boards}");
    }
    let bad_id = c
        .create_clock(pb::CreateClockRequest {
            clock_id: "a b".into(),
            time_control: "3+0".into(),
            boards: 1,
            first: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(bad_id.code(), Code::InvalidArgument);
    let unknown = c
        .get_clock(pb::GetClockRequest {
            clock_id: "nobody".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    // A ply of u32::MAX is stale, not a crash.
    create(&mut c, "edge", "5+0", 1).await;
    let huge = c
        .press(press("edge", 0, WHITE, u32::MAX))
        .await
        .unwrap_err();
    assert_eq!(huge.code(), Code::FailedPrecondition);
    c.press(press("edge", 0, WHITE, 0)).await.unwrap();
    let zero = c
        .add_time(pb::AddTimeRequest {
            clock_id: "p".into(),
            board: 0,
            side: WHITE,
            ms: 0,
            request_id: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(zero.code(), Code::InvalidArgument);
    s.stop().await;
}

/// Sync over loopback, with a random delay of 0–30 ms injected on each way of each exchange
/// and a client clock 12,345 ms ahead of the server's: after 8 samples the estimate is within
/// 5 ms of the true offset.
#[tokio::test]
async fn sync_estimates_the_offset_within_5_ms() {
    let s = start().await;
    let mut c = ClockServiceClient::new(s.channel());
    const AHEAD: u64 = 12_345;
    let local = || process_now() + AHEAD;
    for seed in [
        0x2545_f491_4f6c_dd1d_u64,
        0x9e37_79b9_7f4a_7c15,
        0xbf58_476d_1ce4_e5b9,
    ] {
        let mut rng = seed;
        let mut delay = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            Duration::from_millis(rng % 31)
        };
        let mut est = Estimator::new();
        for _ in 0..8 {
            let (up, down) = (delay(), delay());
            est.add(exchange(&mut c, local, up, down).await.unwrap());
        }
        let e = est.estimate().unwrap();
        let error = (e.offset_ms + AHEAD as i64).abs();
        println!(
            "seed {seed:x}: offset {} ms, error {error} ms, round trip {} ms",
            e.offset_ms, e.round_trip_ms
        );
        assert!(error <= 5, "{e:?}");
    }
    s.stop().await;
}

async fn redis_clocks(url: &str) -> Arc<Clocks<arbiter_clock::store::AnyStore>> {
    let store = arbiter_clock::store::redis::RedisStore::connect(url, Duration::from_secs(600))
        .await
        .unwrap();
    Arc::new(Clocks::new(
        arbiter_clock::store::AnyStore::Redis(Box::new(store)),
        Default::default(),
    ))
}

/// With Redis, no clock state lives in one process: replica `a` creates and presses clocks and
/// is killed (dropped, mid-claim for some); replica `b` ends every clock on time exactly once.
#[tokio::test]
async fn with_redis_flags_fall_after_a_replica_dies() {
    let redis = arbiter_testkit::redis().await;
    let (a, b) = (
        redis_clocks(&redis.url).await,
        redis_clocks(&redis.url).await,
    );
    let white = arbiter_core::Color::White;
    for i in 0..6 {
        let id = format!("r{i}");
        a.create(&id, "2s+0", 1, white).await.unwrap();
        a.press(&id, None, white, 0, 0).await.unwrap();
        // A retry of the press is a duplicate, through the store.
        assert!(b.press(&id, None, white, 0, 0).await.unwrap().duplicate);
    }
    tokio::time::sleep(Duration::from_millis(2_600)).await;
    // `a` claims half of them and dies before ending them.
    let claimed = arbiter_clock::store::ClockStore::claim_due(a.store(), 0, 5_000, 3)
        .await
        .unwrap();
    assert_eq!(claimed.due.len(), 3);
    drop(a);
    let (tx, rx) = tokio::sync::watch::channel(false);
    let worker = tokio::spawn({
        let b = Arc::clone(&b);
        async move { b.run_flag_worker(rx).await }
    });
    for i in 0..6 {
        let id = format!("r{i}");
        let mut over = false;
        for _ in 0..400 {
            if b.get(&id).await.unwrap().over {
                over = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert!(over, "{id} flagged");
        let events = b.events(&id, 0, 100).await.unwrap();
        let flags = events
            .iter()
            .filter(|(_, e)| matches!(e, arbiter_clock::record::ClockEvent::Flag(_)))
            .count();
        assert_eq!(flags, 1, "{id}: one flag");
        assert!(!b.end_on_time(&id).await.unwrap(), "idempotent");
    }
    tx.send(true).unwrap();
    worker.await.unwrap();
}
