//! Clocks of hosted games: flags that fall with no move sent (over gRPC, in process), a flag
//! against bare material (a draw, by the core's rules), a bughouse flag ending both boards and a
//! simultaneous one drawing, a no-show aborted, a move that comes after its deadline, platform
//! pause/resume/add time, bad clock input; with Redis (testcontainers): the scripts' press
//! arithmetic against the core's, and two replicas ending each timed-out game exactly once, one
//! of them killed mid-claim.
//!
//! Short real time controls (2–3 s) keep these tests to a few seconds each; they assert what
//! happened and in which order, never how fast.

use crate::support;

use arbiter_core::bughouse::BoardId;
use arbiter_core::clock::{Clock, PressPlan, TimeControl};
use arbiter_core::{Color, EndReason, Locale, Score, Variant};
use arbiter_kit::ServeConfig;
use arbiter_kit::access::AccessPolicy;
use arbiter_matches::domain::{Creation, MoveRequest, SeatRef};
use arbiter_matches::record::StoredEvent;
use arbiter_matches::seats::SeatKey;
use arbiter_matches::store::memory::MemoryStore;
use arbiter_matches::store::redis::RedisStore;
use arbiter_matches::store::{MatchStore, Retention, StoreError};
use arbiter_matches::{MatchError, MatchLimits, Matches, MatchesConfig};
use arbiter_proto::common::v1 as common;
use arbiter_proto::matches::v1::{self as pb, match_service_client::MatchServiceClient};
use std::sync::Arc;
use std::time::Duration;
use support::*;
use tokio_stream::StreamExt;
use tonic::Code;
use tonic::transport::Channel;

async fn start() -> Server {
    TestServer::start(|listener, shutdown| {
        arbiter_matches::serve(
            listener,
            ServeConfig::default(),
            MatchesConfig::default(),
            AccessPolicy::development(),
            shutdown,
        )
    })
    .await
}

fn game(variant: common::Variant, start: &str, time_control: &str) -> pb::CreateMatchRequest {
    let players: &[&str] = if variant == common::Variant::Bughouse {
        &["ann", "bob", "cid", "dee"]
    } else {
        &["ann", "bob"]
    };
    pb::CreateMatchRequest {
        variant: variant as i32,
        start: start.into(),
        players: players.iter().map(|p| (*p).to_owned()).collect(),
        time_control: time_control.into(),
        ..Default::default()
    }
}

/// Every event of a match until its end (the stream ends there).
async fn events_to_end(
    c: &mut MatchServiceClient<Channel>,
    id: &str,
) -> Vec<pb::WatchMatchResponse> {
    let mut stream = c
        .watch_match(pb::WatchMatchRequest {
            match_id: id.into(),
            after_seq: 0,
        })
        .await
        .unwrap()
        .into_inner();
    let mut out = Vec::new();
    while let Some(e) = tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .expect("the match ends")
    {
        out.push(e.unwrap());
    }
    out
}

fn end_of(events: &[pb::WatchMatchResponse]) -> &pb::MatchOutcome {
    match &events.last().unwrap().event {
        Some(pb::watch_match_response::Event::End(o)) => o,
        other => panic!("the last event is not the end: {other:?}"),
    }
}

fn snapshots(events: &[pb::WatchMatchResponse]) -> Vec<&pb::ClockSnapshot> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Some(pb::watch_match_response::Event::Clock(c)) => Some(c),
            _ => None,
        })
        .collect()
}

async fn state(c: &mut MatchServiceClient<Channel>, id: &str) -> pb::MatchState {
    c.get_match(pb::GetMatchRequest {
        match_id: id.into(),
    })
    .await
    .unwrap()
    .into_inner()
    .state
    .unwrap()
}

/// After both first moves (untimed), White never moves again: the flag falls with no move sent,
/// White loses, and the watchers see every clock snapshot and the end.
#[tokio::test]
async fn a_game_is_lost_on_time_with_no_move_sent() {
    let s = start().await;
    let mut c = s.client();
    let t = create_from(&mut c, game(common::Variant::Chess, "", "3s+0")).await;
    let created = t.created.state.clone().unwrap();
    assert_eq!(created.time_control, "3s+0");
    assert_eq!(created.speed, "bullet");
    let clock = created.boards[0].clock.unwrap();
    assert_eq!(clock.phase, pb::ClockPhase::Opening as i32);
    assert_eq!((clock.white_ms, clock.black_ms), (3_000, 3_000));
    make_move(&mut c, &t, A, WHITE, "e4", 0).await.unwrap();
    let r = make_move(&mut c, &t, A, BLACK, "e5", 1).await.unwrap();
    let st = r.state.unwrap();
    let clock = st.boards[0].clock.unwrap();
    assert_eq!(clock.phase, pb::ClockPhase::Running as i32);
    assert_eq!(clock.running, WHITE);
    // The answer carries the server's timestamp of the move: White's turn began then.
    assert_eq!(clock.running_since_ms, st.server_time_ms);
    // 3 s + a grace of the unused quota (3 × 160 ms).
    assert_eq!(clock.deadline_ms, st.server_time_ms + 3_000 + 480);

    let events = events_to_end(&mut c, &t.id).await;
    let end = end_of(&events).outcome.clone().unwrap();
    assert_eq!(end.reason, common::EndReason::Timeout as i32);
    assert_eq!(end.score.unwrap().text, "0-1");
    let snaps = snapshots(&events);
    assert_eq!(
        snaps.len(),
        3,
        "one per move and one for the flag: {events:?}"
    );
    let flag = snaps[2];
    assert_eq!(
        (flag.white_ms, flag.running),
        (0, pb::Side::Unspecified as i32)
    );
    assert_eq!(
        flag.at_ms, clock.deadline_ms,
        "the flag falls at the deadline"
    );

    let st = state(&mut c, &t.id).await;
    let clock = st.boards[0].clock.unwrap();
    assert_eq!(clock.phase, pb::ClockPhase::Flagged as i32);
    assert!(st.server_time_ms >= clock.deadline_ms.max(flag.at_ms));
    // Too late to move now.
    let err = make_move(&mut c, &t, A, WHITE, "Nf3", 2).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
    s.stop().await;
}

/// White flags while Black has a bare king: Black cannot possibly mate, so it is a draw.
#[tokio::test]
async fn a_flag_against_a_bare_king_is_a_draw() {
    let s = start().await;
    let mut c = s.client();
    let t = create_from(
        &mut c,
        game(
            common::Variant::Chess,
            "4k3/8/8/8/8/8/8/4K2Q w - - 0 1",
            "3s+0",
        ),
    )
    .await;
    make_move(&mut c, &t, A, WHITE, "Qh2", 0).await.unwrap();
    make_move(&mut c, &t, A, BLACK, "Kd8", 1).await.unwrap();
    let events = events_to_end(&mut c, &t.id).await;
    let end = end_of(&events).outcome.clone().unwrap();
    assert_eq!(
        end.reason,
        common::EndReason::TimeoutVsInsufficientMaterial as i32
    );
    assert_eq!(end.score.unwrap().text, "1/2-1/2");
    s.stop().await;
}

/// Bughouse clocks start at creation. Board B plays on while White A never moves: White A's
/// flag ends the whole match for team 1, and board B's clocks stop at that instant. With no
/// move at all, both White flags fall together: a draw.
#[tokio::test]
async fn a_bughouse_flag_ends_both_boards() {
    let s = start().await;
    let mut c = s.client();
    let t = create_from(&mut c, game(common::Variant::Bughouse, "", "3s+0")).await;
    for b in &t.created.state.as_ref().unwrap().boards {
        assert_eq!(b.clock.unwrap().phase, pb::ClockPhase::Running as i32);
    }
    make_move(&mut c, &t, B, WHITE, "e4", 0).await.unwrap();
    make_move(&mut c, &t, B, BLACK, "e5", 1).await.unwrap();
    let events = events_to_end(&mut c, &t.id).await;
    let end = end_of(&events);
    assert_eq!(end.winning_team, 2);
    assert_eq!(end.board, A);
    assert_eq!(
        end.outcome.as_ref().unwrap().reason,
        common::EndReason::Timeout as i32
    );
    let st = state(&mut c, &t.id).await;
    let a = st.boards[0].clock.unwrap();
    let b = st.boards[1].clock.unwrap();
    assert_eq!(a.phase, pb::ClockPhase::Flagged as i32);
    assert_eq!(b.phase, pb::ClockPhase::Stopped as i32);
    let snaps = snapshots(&events);
    let (flag, stop) = (snaps[snaps.len() - 2], snaps[snaps.len() - 1]);
    assert_eq!((flag.board, stop.board), (A, B));
    assert_eq!(
        flag.at_ms, stop.at_ms,
        "board B stopped at the instant of the flag"
    );

    let t = create_from(&mut c, game(common::Variant::Bughouse, "", "2s+0")).await;
    let events = events_to_end(&mut c, &t.id).await;
    let end = end_of(&events);
    assert_eq!(end.winning_team, 0);
    assert_eq!(
        end.outcome.as_ref().unwrap().score.as_ref().unwrap().text,
        "1/2-1/2"
    );
    s.stop().await;
}

/// Pausing and adding time are platform calls; a paused clock refuses moves and never flags;
/// retries by request id apply once; bad clock input is refused by field.
#[tokio::test]
async fn platform_clock_actions_and_bad_input() {
    let s = start().await;
    let mut c = s.client();
    let t = create_from(&mut c, game(common::Variant::Chess, "", "5+3")).await;
    make_move(&mut c, &t, A, WHITE, "e4", 0).await.unwrap();
    make_move(&mut c, &t, A, BLACK, "e5", 1).await.unwrap();
    let pause = pb::PauseClocksRequest {
        match_id: t.id.clone(),
        request_id: "p1".into(),
    };
    let paused = c.pause_clocks(pause.clone()).await.unwrap().into_inner();
    assert!(!paused.duplicate);
    let clock = paused.state.unwrap().boards[0].clock.unwrap();
    assert_eq!(clock.phase, pb::ClockPhase::Paused as i32);
    assert_eq!(clock.deadline_ms, 0);
    assert!(c.pause_clocks(pause).await.unwrap().into_inner().duplicate);
    let err = make_move(&mut c, &t, A, WHITE, "Nf3", 2).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
    let again = c
        .pause_clocks(pb::PauseClocksRequest {
            match_id: t.id.clone(),
            request_id: "p2".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(again.code(), Code::FailedPrecondition);
    c.resume_clocks(pb::ResumeClocksRequest {
        match_id: t.id.clone(),
        request_id: "r1".into(),
    })
    .await
    .unwrap();
    let added = c
        .add_time(pb::AddTimeRequest {
            match_id: t.id.clone(),
            side: BLACK,
            ms: 15_000,
            request_id: "a1".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        added.state.unwrap().boards[0].clock.unwrap().black_ms,
        315_000
    );
    let events = {
        let mut stream = c
            .watch_match(pb::WatchMatchRequest {
                match_id: t.id.clone(),
                after_seq: 0,
            })
            .await
            .unwrap()
            .into_inner();
        let mut out = Vec::new();
        for _ in 0..7 {
            out.push(stream.next().await.unwrap().unwrap());
        }
        out
    };
    // Two moves, each with its snapshot, then pause, resume and time added: one each.
    assert_eq!(snapshots(&events).len(), 5, "{events:?}");
    let mv = make_move(&mut c, &t, A, WHITE, "Nf3", 2).await.unwrap();
    assert!(mv.state.unwrap().boards[0].clock.unwrap().white_ms > 290_000);

    // Bad input: every refusal names its field and changes nothing.
    let before = state(&mut c, &t.id).await.boards;
    let negative = c
        .make_move(bearer(
            pb::MakeMoveRequest {
                match_id: t.id.clone(),
                board: A,
                side: BLACK,
                r#move: "Nc6".into(),
                expected_ply: 3,
                lag_ms: -1,
                ..Default::default()
            },
            t.token(A, BLACK),
        ))
        .await
        .unwrap_err();
    assert_eq!(negative.code(), Code::InvalidArgument);
    assert!(negative.message().contains("lag_ms"), "{negative:?}");
    let out_of_turn = make_move(&mut c, &t, A, WHITE, "d4", 3).await.unwrap_err();
    assert_eq!(out_of_turn.code(), Code::FailedPrecondition);
    let stale = make_move(&mut c, &t, A, BLACK, "Nc6", 1).await.unwrap_err();
    assert_eq!(stale.code(), Code::FailedPrecondition);
    assert_eq!(state(&mut c, &t.id).await.boards, before);
    for bad in ["3+", "0+0", "90/0", "fast", "3+2 x", "1000000+0"] {
        let err = c
            .create_match(game(common::Variant::Chess, "", bad))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{bad:?}");
        assert!(err.message().contains("time_control"), "{bad:?}: {err:?}");
    }
    let unknown = c
        .pause_clocks(pb::PauseClocksRequest {
            match_id: "nobody".into(),
            request_id: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    let untimed = create_from(&mut c, game(common::Variant::Chess, "", "")).await;
    let err = c
        .add_time(pb::AddTimeRequest {
            match_id: untimed.id.clone(),
            side: WHITE,
            ms: 1_000,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
    s.stop().await;
}

fn key() -> SeatKey {
    SeatKey::from_material(b"a test key of at least thirty-two bytes").unwrap()
}

fn limits(first_move_ms: u64) -> MatchLimits {
    MatchLimits {
        first_move_ms,
        ..MatchLimits::default()
    }
}

pub(crate) fn chess(tag: &str, time_control: &str) -> Creation {
    Creation {
        variant: Some(Variant::Chess),
        players: vec![format!("{tag}-w"), format!("{tag}-b")],
        time_control: time_control.into(),
        ..Default::default()
    }
}

fn seat(color: Color) -> SeatRef {
    SeatRef {
        board: None,
        color: Some(color),
    }
}

pub(crate) async fn play<S: MatchStore>(
    m: &Matches<S>,
    id: &str,
    tokens: &[(arbiter_core::bughouse::Seat, String)],
    color: Color,
    text: &str,
    ply: u32,
) -> Result<(), MatchError> {
    let token = tokens
        .iter()
        .find(|(s, _)| s.color == color)
        .map(|(_, t)| t.as_str());
    m.play(
        id,
        MoveRequest {
            seat: seat(color),
            token,
            text,
            expected_ply: ply,
            locale: Locale::English,
            request_id: None,
            lag_ms: 0,
        },
    )
    .await
    .map(|_| ())
}

/// The clock snapshots of a game's first moves on `m`'s store: nobody's clock runs while each
/// side's untimed first move is awaited, then White's; each says what the record's clock says.
async fn first_moves_run_no_clock<S: MatchStore>(m: &Matches<S>) {
    let g = m.create(chess("open", "3+0")).await.unwrap();
    let id = g.record.id.clone();
    play(m, &id, &g.seats, Color::White, "e4", 0).await.unwrap();
    play(m, &id, &g.seats, Color::Black, "e5", 1).await.unwrap();
    let events = m.events(&id, 0, 100).await.unwrap();
    let running: Vec<Option<Color>> = events
        .iter()
        .filter_map(|(_, e)| match e {
            StoredEvent::Clock { running, .. } => Some(*running),
            _ => None,
        })
        .collect();
    assert_eq!(running, [None, Some(Color::White)]);
    let r = m.get(&id).await.unwrap();
    crate::store::check_clock_events(&r, &events);
}

#[tokio::test]
async fn first_moves_run_no_clock_on_both_stores() {
    let memory = Matches::new(
        MemoryStore::new(Retention::default(), 100),
        key(),
        limits(30_000),
    );
    first_moves_run_no_clock(&memory).await;
    let redis = arbiter_testkit::redis().await;
    first_moves_run_no_clock(&*redis_matches(redis.secure("arbiter-matches")).await).await;
}

/// A side that never makes its first move gets the game aborted, with no result.
#[tokio::test]
async fn a_no_show_is_aborted() {
    let m = Arc::new(Matches::new(
        MemoryStore::new(Retention::default(), 100),
        key(),
        limits(300),
    ));
    let (tx, rx) = tokio::sync::watch::channel(false);
    let worker = tokio::spawn({
        let m = Arc::clone(&m);
        async move { m.run_flag_worker(rx).await }
    });
    let g = m.create(chess("noshow", "1+0")).await.unwrap();
    let id = g.record.id.clone();
    play(&m, &id, &g.seats, Color::White, "e4", 0)
        .await
        .unwrap();
    // Black never answers.
    let ended = wait_over(&*m, &id, Duration::from_secs(10)).await;
    let o = ended.outcome.unwrap();
    assert_eq!(o.reason, EndReason::Aborted);
    let clock = ended.boards[0].clock.as_ref().unwrap();
    assert!(matches!(
        clock.phase(),
        arbiter_core::clock::Phase::NoShow {
            color: Color::Black,
            ..
        }
    ));
    tx.send(true).unwrap();
    worker.await.unwrap();
}

/// Match `id` once it has ended, read every 25 ms for up to `within` (a panic after that).
pub(crate) async fn wait_over<S: MatchStore>(
    m: &Matches<S>,
    id: &str,
    within: Duration,
) -> Arc<arbiter_matches::record::Record> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        // A read that finds the store unavailable (a Redis Cluster changing under load) is
        // made again, as a client would, until the time is up.
        match m.get(id).await {
            Ok(r) if r.outcome.is_some() => return r,
            Ok(_) | Err(MatchError::Store(StoreError::Unavailable(_))) => {}
            Err(e) => panic!("{id}: {e}"),
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "match {id} did not end"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Without a flag worker: a move after its mover's deadline is refused and ends the match on
/// time at the deadline; a move before it stands, and ending on time then finds nothing due.
#[tokio::test]
async fn a_move_racing_its_deadline() {
    let m = Matches::new(
        MemoryStore::new(Retention::default(), 100),
        key(),
        limits(30_000),
    );
    // Late: the flag wins.
    let g = m.create(chess("late", "1s+0")).await.unwrap();
    let id = g.record.id.clone();
    play(&m, &id, &g.seats, Color::White, "e4", 0)
        .await
        .unwrap();
    play(&m, &id, &g.seats, Color::Black, "e5", 1)
        .await
        .unwrap();
    let deadline = m.get(&id).await.unwrap().deadline().unwrap();
    tokio::time::sleep(Duration::from_millis(
        deadline - m.now().await.unwrap() + 20,
    ))
    .await;
    let err = play(&m, &id, &g.seats, Color::White, "Nf3", 2)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            MatchError::Precondition {
                reason: "MATCH_OVER",
                ..
            }
        ),
        "{err:?}"
    );
    let r = m.get(&id).await.unwrap();
    assert_eq!(r.boards[0].ply, 2, "the late move was not applied");
    assert_eq!(
        r.outcome.unwrap().reason,
        EndReason::Timeout,
        "the match ended on time"
    );
    let events = m.events(&id, 0, 100).await.unwrap();
    assert_eq!(
        events
            .iter()
            .filter(|(_, e)| matches!(e, StoredEvent::End(_)))
            .count(),
        1
    );
    assert!(
        !m.end_on_time(&id).await.unwrap(),
        "ending on time is idempotent"
    );

    // In time: the move stands, and the flag cannot fall for it.
    let g = m.create(chess("early", "1s+0")).await.unwrap();
    let id = g.record.id.clone();
    play(&m, &id, &g.seats, Color::White, "e4", 0)
        .await
        .unwrap();
    play(&m, &id, &g.seats, Color::Black, "e5", 1)
        .await
        .unwrap();
    play(&m, &id, &g.seats, Color::White, "Nf3", 2)
        .await
        .unwrap();
    assert!(!m.end_on_time(&id).await.unwrap());
    assert!(m.get(&id).await.unwrap().outcome.is_none());
}

/// The Redis scripts' press arithmetic equals the core's on random plans and instants
/// (including instants at and around the deadline).
#[tokio::test]
async fn the_scripts_press_like_the_core() {
    let redis = arbiter_testkit::redis().await;
    let client = redis::Client::open(redis.url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: u64| crate::store::xorshift(&mut rng) % n;
    let controls = [
        "1+0",
        "3+2",
        "5d3",
        "5b3",
        "90/40+30, 30+30",
        "0.25+0",
        "2/1+1, 1+0",
    ];
    let mut checked = 0;
    for _ in 0..300 {
        let tc = TimeControl::parse(controls[next(controls.len() as u64) as usize]).unwrap();
        let mut clock = Clock::new(tc);
        let since = 1_700_000_000_000 + next(1_000_000);
        let opening = next(4) == 0;
        if opening {
            clock
                .start_after_first_moves(Color::White, since, 30_000)
                .unwrap();
        } else {
            clock.start(Color::White, since).unwrap();
        }
        // A few presses first, to vary quota, stage and remaining time.
        let mut now = since;
        let mut turn = Color::White;
        for _ in 0..next(6) {
            now += next(20_000);
            if clock.press(turn, now, next(3_000)).is_err() {
                break;
            }
            turn = !turn;
        }
        let Ok(plan): Result<PressPlan, _> = clock.plan_press(turn, next(5_000)) else {
            continue;
        };
        let d = plan.deadline();
        for at in [
            plan.since,
            plan.since + next(plan.limit_ms.max(1)),
            d.saturating_sub(1),
            d,
            d + 1,
        ] {
            let core = plan.apply(at).map(|r| {
                [
                    r.remaining_ms,
                    r.quota_ms,
                    r.charged_ms,
                    r.compensated_ms,
                    r.bonus_ms,
                    r.next_deadline,
                ]
            });
            let lua = arbiter_matches::store::redis::press_on_redis(&mut conn, &plan, at)
                .await
                .unwrap();
            assert_eq!(lua, core, "{plan:?} at {at}");
            checked += 1;
        }
    }
    assert!(checked > 1000);
}

pub(crate) async fn redis_matches(redis: arbiter_testkit::RedisConfig) -> Arc<Matches<RedisStore>> {
    Arc::new(Matches::new(
        RedisStore::connect(redis, Retention::default(), 1000)
            .await
            .unwrap(),
        key(),
        limits(30_000),
    ))
}

/// Two replicas with flag workers on one Redis: every timed-out game ends exactly once. Then a
/// replica claims due games and dies before ending them: the other ends them once its lease
/// runs out.
#[tokio::test]
async fn two_replicas_end_each_game_on_time_exactly_once() {
    let redis = arbiter_testkit::redis().await;
    flags_fall_once(
        redis.secure("arbiter-matches"),
        redis.secure("arbiter-matches"),
    )
    .await;
}

/// [`two_replicas_end_each_game_on_time_exactly_once`] for two replicas with these
/// configurations of one store (one Redis, or a cluster).
pub(crate) async fn flags_fall_once(
    a: arbiter_testkit::RedisConfig,
    b: arbiter_testkit::RedisConfig,
) {
    let (a, b) = (redis_matches(a).await, redis_matches(b).await);
    let (tx, rx) = tokio::sync::watch::channel(false);
    let mut workers = Vec::new();
    for m in [&a, &b] {
        let m = Arc::clone(m);
        let rx = rx.clone();
        workers.push(tokio::spawn(async move { m.run_flag_worker(rx).await }));
    }
    let mut ids = Vec::new();
    for i in 0..20 {
        let g = a.create(chess(&format!("r{i}"), "2s+0")).await.unwrap();
        let id = g.record.id.clone();
        play(&*a, &id, &g.seats, Color::White, "e4", 0)
            .await
            .unwrap();
        play(&*b, &id, &g.seats, Color::Black, "e5", 1)
            .await
            .unwrap();
        ids.push(id);
    }
    for id in &ids {
        let r = wait_over(&*b, id, Duration::from_secs(10)).await;
        assert_eq!(r.outcome.unwrap().score, Score::BLACK_WINS);
        let events = a.events(id, 0, 100).await.unwrap();
        let ends = events
            .iter()
            .filter(|(_, e)| matches!(e, StoredEvent::End(_)))
            .count();
        assert_eq!(ends, 1, "{id} ended exactly once");
    }
    tx.send(true).unwrap();
    for w in workers {
        w.await.unwrap();
    }

    // A replica that claims and dies: replica `a` claims every due game and never ends them.
    let mut ids = Vec::new();
    for i in 0..5 {
        let g = a.create(chess(&format!("k{i}"), "2s+0")).await.unwrap();
        let id = g.record.id.clone();
        play(&*a, &id, &g.seats, Color::White, "e4", 0)
            .await
            .unwrap();
        play(&*a, &id, &g.seats, Color::Black, "e5", 1)
            .await
            .unwrap();
        ids.push(id);
    }
    tokio::time::sleep(Duration::from_millis(2_700)).await;
    let claimed = a.store().deadlines().claim(0, 5_000, 100).await.unwrap();
    assert_eq!(claimed.due.len(), 5, "{claimed:?}");
    drop(a);
    let (tx, rx) = tokio::sync::watch::channel(false);
    let survivor = tokio::spawn({
        let b = Arc::clone(&b);
        async move { b.run_flag_worker(rx).await }
    });
    for id in &ids {
        let r = wait_over(&*b, id, Duration::from_secs(10)).await;
        assert_eq!(r.outcome.unwrap().reason, EndReason::Timeout);
        let flagged_at = match r.boards[0].clock.as_ref().unwrap().phase() {
            arbiter_core::clock::Phase::Flagged { at, .. } => at,
            other => panic!("{other:?}"),
        };
        assert!(flagged_at < b.now().await.unwrap());
    }
    tx.send(true).unwrap();
    survivor.await.unwrap();
    let _ = BoardId::A;
}
