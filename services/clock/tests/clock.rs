//! The clock service over real gRPC (clocks in process), and its Redis store with replicas
//! (testcontainers): standalone clocks pressed idempotently per ply, flags that fall with no
//! press and reach the watchers, a two-board clock stopping at the other board's flag, platform
//! actions, bad input refused by field; Sync over loopback with injected random delays; with
//! Redis, a replica killed while the other ends the clocks on time; and, over gRPC both in
//! process and with Redis, AddTime past the 100-day limit refused, and request ids that are
//! never a false duplicate, refused when reused for another request, and kept in a bounded
//! window.

use arbiter_clock::grpc::ClockGrpc;
use arbiter_clock::record::REMEMBERED_REQUESTS;
use arbiter_clock::store::memory::MemoryStore;
use arbiter_clock::store::{AnyStore, ClockStore, Outcome, Request, SetCommit};
use arbiter_clock::sync::{Estimator, exchange};
use arbiter_clock::{ClockConfig, Clocks};
use arbiter_core::clock::MAX_REMAINING_MS;
use arbiter_kit::ServeConfig;
use arbiter_kit::access::AccessPolicy;
use arbiter_kit::process_now;
use arbiter_proto::clock::v1::{self as pb, clock_service_client::ClockServiceClient};
use arbiter_testkit::grpc::TestServer;
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
            AccessPolicy::development(),
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

async fn events_to_end(
    c: &mut ClockServiceClient<Channel>,
    id: &str,
) -> Vec<pb::WatchClockResponse> {
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
    let Some(pb::watch_clock_response::Event::Flag(flag)) = &events.last().unwrap().event else {
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
    let Some(pb::watch_clock_response::Event::Flag(flag)) = &events.last().unwrap().event else {
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
    let pause = || pb::PauseClockRequest {
        clock_id: "p".into(),
        request_id: String::new(),
    };
    let paused = c
        .pause_clock(pause())
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
        c.pause_clock(pause()).await.unwrap_err().code(),
        Code::FailedPrecondition
    );
    c.resume_clock(pb::ResumeClockRequest {
        clock_id: "p".into(),
        request_id: String::new(),
    })
    .await
    .unwrap();
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
        .stop_clock(pb::StopClockRequest {
            clock_id: "p".into(),
            request_id: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .state
        .unwrap();
    assert!(stopped.over);
    let events = events_to_end(&mut c, "p").await;
    assert!(matches!(
        events.last().unwrap().event,
        Some(pb::watch_clock_response::Event::Stopped(true))
    ));
    assert_eq!(
        events.len(),
        5,
        "pause, resume, time added, stop snapshot, stop: {events:?}"
    );

    for (tc, boards) in [("3+", 1), ("0+0", 1), ("x", 1), ("3+0", 3), ("3 days", 1)] {
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

/// Clocks on Redis as the clock service's ACL user, over TLS.
async fn redis_clocks(redis: &arbiter_testkit::Redis) -> Arc<Clocks<AnyStore>> {
    clocks_on(redis.secure("arbiter-clock")).await
}

/// Clocks on the Redis (or cluster) of `config`.
async fn clocks_on(config: arbiter_testkit::RedisConfig) -> Arc<Clocks<AnyStore>> {
    let store = arbiter_clock::store::redis::RedisStore::connect(config, Duration::from_secs(600))
        .await
        .unwrap();
    Arc::new(Clocks::new(
        AnyStore::Redis(Box::new(store)),
        Default::default(),
    ))
}

/// With Redis, no clock state lives in one process: replica `a` creates and presses clocks and
/// is killed (dropped, mid-claim for some); replica `b` ends every clock on time exactly once.
#[tokio::test]
async fn with_redis_flags_fall_after_a_replica_dies() {
    let redis = arbiter_testkit::redis().await;
    let (a, b) = (redis_clocks(&redis).await, redis_clocks(&redis).await);
    flags_fall_after_a_replica_dies(a, b, false).await;
}

/// The same on a Redis Cluster (three primaries, three replicas), where the clocks are spread
/// over slot groups, each with its own deadline index.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_flags_fall_after_a_replica_dies() {
    let cluster = tokio::task::spawn_blocking(arbiter_testkit::cluster::RedisCluster::start)
        .await
        .unwrap();
    let (a, b) = (
        clocks_on(cluster.url_as("arbiter-clock").as_str().into()).await,
        clocks_on(cluster.url_as("arbiter-clock").as_str().into()).await,
    );
    flags_fall_after_a_replica_dies(a, b, true).await;
    // And the service's calls work there too.
    let s = serve_clocks(clocks_on(cluster.url_as("arbiter-clock").as_str().into()).await).await;
    add_time_beyond_the_limit_is_refused(&mut ClockServiceClient::new(s.channel())).await;
    s.stop().await;
    watchers_follow_presses_made_through_another_replica(&cluster.url_as("arbiter-clock")).await;
}

/// Two whole clock services on the Redis (or cluster) at `url`: a watcher on one hears each
/// press made through the other (announced on the clock's group's shard channel on a cluster),
/// within seconds, with no polling to fall back on.
async fn watchers_follow_presses_made_through_another_replica(url: &str) {
    let serve = || {
        let url = url.to_owned();
        TestServer::start(move |listener, shutdown| {
            arbiter_clock::serve(
                listener,
                ServeConfig::default(),
                ClockConfig {
                    redis: Some(url.as_str().into()),
                    health_interval: Duration::from_millis(200),
                    ..ClockConfig::default()
                },
                AccessPolicy::development(),
                shutdown,
            )
        })
    };
    let (one, two): (Server, Server) = (serve().await, serve().await);
    let (mut c1, mut c2) = (
        ClockServiceClient::new(one.channel()),
        ClockServiceClient::new(two.channel()),
    );
    // The stores connect in the background: create once the first one answers.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while c1
        .create_clock(pb::CreateClockRequest {
            clock_id: "watched".into(),
            time_control: "5+0".into(),
            boards: 1,
            first: 0,
        })
        .await
        .is_err()
    {
        assert!(tokio::time::Instant::now() < deadline, "the store connects");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut watch = c2
        .watch_clock(pb::WatchClockRequest {
            clock_id: "watched".into(),
            after_seq: 0,
        })
        .await
        .unwrap()
        .into_inner();
    // Give the watching replica's subscription a moment: a press before it would be read
    // anyway (every (re)subscription wakes the watchers), but then it would prove nothing.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for (ply, (side, next)) in [(WHITE, BLACK), (BLACK, WHITE), (WHITE, BLACK)]
        .into_iter()
        .enumerate()
    {
        c1.press(press("watched", 0, side, ply as u32))
            .await
            .unwrap();
        let heard = tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(m) = watch.next().await {
                if let Some(pb::watch_clock_response::Event::Snapshot(s)) = m.unwrap().event
                    && s.running == next
                {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(heard, Ok(true), "press {ply} heard on the other replica");
    }
    drop(watch);
    one.stop().await;
    two.stop().await;
}

/// The same between two replicas on one Redis.
#[tokio::test]
async fn with_redis_watchers_follow_presses_made_through_another_replica() {
    let redis = arbiter_testkit::redis().await;
    watchers_follow_presses_made_through_another_replica(&redis.url).await;
}

/// Replica `a` creates and presses clocks and dies holding claims; `b` ends each exactly once.
/// `grouped`: on a cluster, where a claim takes up to its maximum from each group's index.
async fn flags_fall_after_a_replica_dies(
    a: Arc<Clocks<AnyStore>>,
    b: Arc<Clocks<AnyStore>>,
    grouped: bool,
) {
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
    let claimed = arbiter_clock::store::ClockStore::deadlines(a.store())
        .claim(0, 5_000, 3)
        .await
        .unwrap();
    if grouped {
        assert!((3..=6).contains(&claimed.due.len()), "{claimed:?}");
    } else {
        assert_eq!(claimed.due.len(), 3);
    }
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

/// A gRPC server over `clocks`, which the test keeps to look at what the store remembers.
async fn serve_clocks(clocks: Arc<Clocks<AnyStore>>) -> Server {
    TestServer::start(move |listener, shutdown| {
        let mut host = arbiter_kit::Host::new(ServeConfig::default());
        let max = host.config().max_message_bytes;
        let grpc = ClockGrpc::new(clocks, host.shutting_down());
        host.add_service(grpc.into_server(max));
        host.serve(listener, shutdown)
    })
    .await
}

fn memory_clocks() -> Arc<Clocks<AnyStore>> {
    Arc::new(Clocks::new(
        AnyStore::Memory(MemoryStore::new(Duration::from_secs(600), 1_000)),
        Default::default(),
    ))
}

async fn get(c: &mut ClockServiceClient<Channel>, id: &str) -> pb::ClockState {
    c.get_clock(pb::GetClockRequest {
        clock_id: id.into(),
    })
    .await
    .unwrap()
    .into_inner()
    .state
    .unwrap()
}

fn add(id: &str, board: i32, side: i32, ms: u64, request_id: &str) -> pb::AddTimeRequest {
    pb::AddTimeRequest {
        clock_id: id.into(),
        board,
        side,
        ms,
        request_id: request_id.into(),
    }
}

/// The remaining times, phases and event count: what a refused call must leave as it was.
fn unchanged(st: &pb::ClockState) -> (Vec<(u64, u64, i32)>, u64, bool) {
    let boards = st
        .boards
        .iter()
        .map(|b| (b.white_ms, b.black_ms, b.phase))
        .collect();
    (boards, st.last_seq, st.over)
}

/// AddTime never caps silently: time that would leave a side with more than 100 days is
/// `INVALID_ARGUMENT` on `ms`, naming the limit, and changes nothing; up to the limit it is added.
async fn add_time_beyond_the_limit_is_refused(c: &mut ClockServiceClient<Channel>) {
    const DAY: u64 = 86_400_000;
    create(c, "cap", "5+0", 1).await;
    // White's clock runs; Black is given time 99 days at a time.
    for _ in 0..99 {
        c.add_time(add("cap", 0, BLACK, DAY, "")).await.unwrap();
    }
    let before = get(c, "cap").await;
    let held = 300_000 + 99 * DAY;
    assert_eq!(before.boards[0].black_ms, held);
    for (ms, request_id) in [(DAY, ""), (MAX_REMAINING_MS - held + 1, "too-much")] {
        let err = c
            .add_time(add("cap", 0, BLACK, ms, request_id))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
        assert!(err.message().starts_with("ms: "), "{}", err.message());
        assert!(
            err.message().contains(&MAX_REMAINING_MS.to_string())
                && err
                    .message()
                    .contains(&(MAX_REMAINING_MS - held).to_string()),
            "the limit and what is left: {}",
            err.message()
        );
        assert_eq!(unchanged(&get(c, "cap").await), unchanged(&before));
    }
    // The refused request id was not remembered: used now for what fits, it applies.
    let fits = c
        .add_time(add("cap", 0, BLACK, MAX_REMAINING_MS - held, "too-much"))
        .await
        .unwrap()
        .into_inner();
    assert!(!fits.duplicate);
    assert_eq!(fits.state.unwrap().boards[0].black_ms, MAX_REMAINING_MS);
    let err = c.add_time(add("cap", 0, BLACK, 1, "")).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert_eq!(get(c, "cap").await.boards[0].black_ms, MAX_REMAINING_MS);
}

#[tokio::test]
async fn add_time_beyond_the_limit_is_refused_in_process() {
    let s = serve_clocks(memory_clocks()).await;
    add_time_beyond_the_limit_is_refused(&mut ClockServiceClient::new(s.channel())).await;
    s.stop().await;
}

#[tokio::test]
async fn add_time_beyond_the_limit_is_refused_with_redis() {
    let redis = arbiter_testkit::redis().await;
    let s = serve_clocks(redis_clocks(&redis).await).await;
    add_time_beyond_the_limit_is_refused(&mut ClockServiceClient::new(s.channel())).await;
    s.stop().await;
}

fn is_reused(err: &tonic::Status) -> bool {
    err.code() == Code::AlreadyExists && err.message().contains("request_id 'x'")
}

/// Request ids of platform actions: a retry is a duplicate; the id reused for another request
/// (another call, board, side or amount) is `ALREADY_EXISTS` and changes nothing; a refused call
/// is not remembered; and however many ids are used, the clock keeps only the latest
/// `REMEMBERED_REQUESTS`.
async fn request_ids_are_checked_and_bounded(
    c: &mut ClockServiceClient<Channel>,
    clocks: &Clocks<AnyStore>,
) {
    create(c, "rq", "5+0", 2).await;
    let first = c
        .add_time(add("rq", pb::Board::A as i32, BLACK, 1_000, "x"))
        .await
        .unwrap()
        .into_inner();
    assert!(!first.duplicate);
    let after = first.state.unwrap();
    assert_eq!(after.boards[0].black_ms, 301_000);
    // The same request again, with the board left unset (board A): a duplicate.
    for board in [pb::Board::A as i32, 0] {
        let retry = c
            .add_time(add("rq", board, BLACK, 1_000, "x"))
            .await
            .unwrap()
            .into_inner();
        assert!(retry.duplicate);
        assert_eq!(unchanged(&retry.state.unwrap()), unchanged(&after));
    }
    // The id reused for anything else: refused, nothing changed.
    for other in [
        add("rq", pb::Board::A as i32, BLACK, 2_000, "x"),
        add("rq", pb::Board::A as i32, WHITE, 1_000, "x"),
        add("rq", pb::Board::B as i32, BLACK, 1_000, "x"),
    ] {
        let err = c.add_time(other).await.unwrap_err();
        assert!(is_reused(&err), "{err:?}");
    }
    let pause = |id: &str| pb::PauseClockRequest {
        clock_id: "rq".into(),
        request_id: id.into(),
    };
    let resume = |id: &str| pb::ResumeClockRequest {
        clock_id: "rq".into(),
        request_id: id.into(),
    };
    assert!(is_reused(&c.pause_clock(pause("x")).await.unwrap_err()));
    assert!(is_reused(&c.resume_clock(resume("x")).await.unwrap_err()));
    let stop = c
        .stop_clock(pb::StopClockRequest {
            clock_id: "rq".into(),
            request_id: "x".into(),
        })
        .await
        .unwrap_err();
    assert!(is_reused(&stop));
    assert_eq!(unchanged(&get(c, "rq").await), unchanged(&after));

    // Pause under an id, then the id for a resume: refused, still paused; a retried pause is
    // a duplicate.
    c.pause_clock(pause("p1")).await.unwrap();
    let paused = get(c, "rq").await;
    assert_eq!(paused.boards[0].phase, pb::Phase::Paused as i32);
    let err = c.resume_clock(resume("p1")).await.unwrap_err();
    assert_eq!(err.code(), Code::AlreadyExists);
    assert!(
        c.pause_clock(pause("p1"))
            .await
            .unwrap()
            .into_inner()
            .duplicate
    );
    assert_eq!(unchanged(&get(c, "rq").await), unchanged(&paused));
    // Calls that change nothing are refused and not remembered, however many.
    let before = clocks.get("rq").await.unwrap().requests.clone();
    for i in 0..2_000 {
        let err = c.pause_clock(pause(&format!("no-{i}"))).await.unwrap_err();
        assert_eq!(err.code(), Code::FailedPrecondition);
    }
    assert_eq!(clocks.get("rq").await.unwrap().requests, before);
    let resumed = c.resume_clock(resume("no-0")).await.unwrap().into_inner();
    assert!(!resumed.duplicate, "a refused call's id was not remembered");

    // Thousands of applied calls with new ids: the clock keeps the latest REMEMBERED_REQUESTS.
    let applied = before.count + 1;
    for i in 0..3_000 {
        let a = c
            .add_time(add("rq", pb::Board::B as i32, WHITE, 1, &format!("n-{i}")))
            .await
            .unwrap()
            .into_inner();
        assert!(!a.duplicate);
    }
    let kept = clocks.get("rq").await.unwrap().requests.clone();
    assert_eq!(kept.count, applied + 3_000);
    assert_eq!(kept.len() as u64, REMEMBERED_REQUESTS);
    let latest = 3_000 - REMEMBERED_REQUESTS;
    assert!(kept.get(&format!("n-{latest}")).is_some());
    assert!(kept.get(&format!("n-{}", latest - 1)).is_none());
    assert!(kept.get("x").is_none());
    let st = get(c, "rq").await;
    assert_eq!(st.boards[1].white_ms, 303_000);
    // A retry of a remembered one is still a duplicate.
    let retry = c
        .add_time(add("rq", pb::Board::B as i32, WHITE, 1, "n-2999"))
        .await
        .unwrap()
        .into_inner();
    assert!(retry.duplicate);
    assert_eq!(unchanged(&retry.state.unwrap()), unchanged(&st));
    // The store checks the id itself, in the same step as the change (two replicas may judge
    // one request at once): a reused id is `Reused`, a retry `Duplicate`, neither applied.
    let commit = |request: String| SetCommit {
        clocks: Vec::new(),
        due: None,
        events: Vec::new(),
        flag: None,
        over: true,
        request: Some(Request {
            id: "n-2999".into(),
            request,
        }),
    };
    let store = clocks.store();
    let reused = store.set("rq", &commit("stop".into())).await.unwrap();
    assert!(matches!(reused, Outcome::Reused(_)), "{reused:?}");
    let same = arbiter_clock::record::pack(&["add", "B", "w", "1"]);
    let retried = store.set("rq", &commit(same)).await.unwrap();
    assert!(matches!(retried, Outcome::Duplicate(_)), "{retried:?}");
    assert_eq!(unchanged(&get(c, "rq").await), unchanged(&st));
}

#[tokio::test]
async fn request_ids_are_checked_and_bounded_in_process() {
    let clocks = memory_clocks();
    let s = serve_clocks(Arc::clone(&clocks)).await;
    request_ids_are_checked_and_bounded(&mut ClockServiceClient::new(s.channel()), &clocks).await;
    s.stop().await;
}

/// With Redis, and the hash holds the window's fields and no more.
#[tokio::test]
async fn request_ids_are_checked_and_bounded_with_redis() {
    let redis = arbiter_testkit::redis().await;
    let clocks = redis_clocks(&redis).await;
    let s = serve_clocks(Arc::clone(&clocks)).await;
    request_ids_are_checked_and_bounded(&mut ClockServiceClient::new(s.channel()), &clocks).await;
    let mut conn = redis::Client::open(redis.url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let fields: Vec<String> = redis::cmd("HKEYS")
        .arg("clock:{rq}:state")
        .query_async(&mut conn)
        .await
        .unwrap();
    for prefix in ["rq:", "rs:"] {
        let n = fields.iter().filter(|f| f.starts_with(prefix)).count() as u64;
        assert_eq!(n, REMEMBERED_REQUESTS, "{prefix}");
    }
    s.stop().await;
}
