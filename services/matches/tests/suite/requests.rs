//! Request ids, move text, move times and waiting boards over gRPC, on both stores (in process
//! and a real Redis), with the store at hand: a server over a `Matches` the test holds, so that
//! what the match remembers can be counted (and in Redis read from its keys).
//!
//! - a match remembers at most `REQUEST_WINDOW` request ids per seat and for the platform, and
//!   nothing of requests that changed nothing;
//! - a request id sent again with a different request is `ALREADY_EXISTS` naming the id, for
//!   every call that takes one, and changes nothing;
//! - move text is judged as sent: padding, control characters and oversize text are refused;
//! - a move's state carries the time it was accepted, with clocks or without, and a read the
//!   time it was read;
//! - `waiting_for_piece` agrees with an independent judge (`shakmaty`) over random bughouse
//!   matches, and holds in a position built for it.

use crate::support;

use arbiter_core::{AnyPosition, Position, Variant as CoreVariant};
use arbiter_kit::{Host, ServeConfig};
use arbiter_matches::grpc::MatchGrpc;
use arbiter_matches::record::REQUEST_WINDOW;
use arbiter_matches::seats::SeatKey;
use arbiter_matches::store::memory::{MemoryStore, process_now};
use arbiter_matches::store::redis::RedisStore;
use arbiter_matches::store::{AnyStore, MatchStore, Retention};
use arbiter_matches::{MatchLimits, Matches};
use arbiter_proto::common::v1::{self as common, Variant};
use arbiter_proto::matches::v1::{self as pb, match_service_client::MatchServiceClient};
use std::sync::Arc;
use support::*;
use tonic::transport::Channel;
use tonic::{Code, Status};
use tonic_types::StatusExt;

/// Plies of random bughouse played per store.
const PLIES: usize = 3000;

fn key() -> SeatKey {
    SeatKey::from_material(b"a test key of at least thirty-two bytes").unwrap()
}

/// The service under test, over a store the test can inspect.
struct Served {
    server: Server,
    matches: Arc<Matches<AnyStore>>,
    /// With Redis: the container, and a connection of the test's own.
    redis: Option<(arbiter_testkit::Redis, redis::aio::MultiplexedConnection)>,
}

impl Served {
    /// The service over the in-process store.
    async fn memory() -> Served {
        let store = AnyStore::Memory(MemoryStore::new(Retention::default(), 1000));
        Served::over(store, None).await
    }

    /// The service over a fresh Redis.
    async fn redis() -> Served {
        let redis = arbiter_testkit::redis().await;
        let store = RedisStore::connect(&redis.url, Retention::default(), 1000)
            .await
            .unwrap();
        let conn = redis::Client::open(redis.url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        Served::over(AnyStore::Redis(Box::new(store)), Some((redis, conn))).await
    }

    async fn over(
        store: AnyStore,
        redis: Option<(arbiter_testkit::Redis, redis::aio::MultiplexedConnection)>,
    ) -> Served {
        let matches = Arc::new(Matches::new(store, key(), MatchLimits::default()));
        let served = Arc::clone(&matches);
        let server = TestServer::start(move |listener, shutdown| async move {
            let mut host = Host::new(ServeConfig::default());
            let grpc = MatchGrpc::new(served, host.shutting_down());
            host.add_service(grpc.into_server(4 << 20));
            host.serve(listener, shutdown).await
        })
        .await;
        Served {
            server,
            matches,
            redis,
        }
    }

    fn name(&self) -> &'static str {
        if self.redis.is_some() {
            "redis"
        } else {
            "memory"
        }
    }

    fn client(&self) -> MatchServiceClient<Channel> {
        self.server.client()
    }

    /// How many request ids the match remembers, by the store's own count.
    async fn remembered(&self, id: &str) -> usize {
        self.matches.store().remembered(id).await.unwrap()
    }

    /// The store's time base now (Unix ms): this process's clock, or Redis `TIME`, each read
    /// here independently of the service.
    async fn time_base(&mut self) -> u64 {
        match &mut self.redis {
            None => process_now(),
            Some((_, conn)) => {
                let (secs, micros): (u64, u64) =
                    redis::cmd("TIME").query_async(conn).await.unwrap();
                secs * 1000 + micros / 1000
            }
        }
    }
}

fn game(variant: Variant, time_control: &str) -> pb::CreateMatchRequest {
    let players: &[&str] = if variant == Variant::Bughouse {
        &["ann", "bob", "cid", "dee"]
    } else {
        &["ann", "bob"]
    };
    pb::CreateMatchRequest {
        variant: variant as i32,
        players: players.iter().map(|p| (*p).to_owned()).collect(),
        time_control: time_control.into(),
        ..Default::default()
    }
}

/// The match as stored, without the time it was read.
async fn state(c: &mut MatchServiceClient<Channel>, id: &str) -> pb::MatchState {
    let mut s = c
        .get_match(pb::GetMatchRequest {
            match_id: id.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .state
        .unwrap();
    s.server_time_ms = 0;
    s
}

fn move_request(
    t: &Table,
    board: i32,
    side: i32,
    text: &str,
    ply: u32,
    id: &str,
) -> pb::MakeMoveRequest {
    pb::MakeMoveRequest {
        match_id: t.id.clone(),
        board,
        side,
        r#move: text.into(),
        expected_ply: ply,
        request_id: id.into(),
        ..Default::default()
    }
}

async fn play(
    c: &mut MatchServiceClient<Channel>,
    t: &Table,
    board: i32,
    side: i32,
    text: &str,
    ply: u32,
    id: &str,
) -> Result<pb::MakeMoveResponse, Status> {
    c.make_move(bearer(
        move_request(t, board, side, text, ply, id),
        t.token(board, side),
    ))
    .await
    .map(tonic::Response::into_inner)
}

async fn offer(
    c: &mut MatchServiceClient<Channel>,
    t: &Table,
    board: i32,
    side: i32,
    id: &str,
) -> Result<pb::OfferDrawResponse, Status> {
    c.offer_draw(bearer(
        pb::OfferDrawRequest {
            match_id: t.id.clone(),
            board,
            side,
            request_id: id.into(),
        },
        t.token(board, side),
    ))
    .await
    .map(tonic::Response::into_inner)
}

async fn add_time(
    c: &mut MatchServiceClient<Channel>,
    t: &Table,
    board: i32,
    side: i32,
    ms: u64,
    id: &str,
) -> Result<pb::AddTimeResponse, Status> {
    c.add_time(pb::AddTimeRequest {
        match_id: t.id.clone(),
        board,
        side,
        ms,
        request_id: id.into(),
    })
    .await
    .map(tonic::Response::into_inner)
}

/// Fields of the Redis `done` hash of bughouse match `id` (0 without Redis).
async fn done_hash_len(s: &mut Served, id: &str) -> Option<usize> {
    let (_, conn) = s.redis.as_mut()?;
    let n: usize = redis::cmd("HLEN")
        .arg(format!("bug:{{{id}}}:done"))
        .query_async(conn)
        .await
        .unwrap();
    Some(n)
}

/// Thousands of requests with new ids leave the match remembering at most `REQUEST_WINDOW` per
/// seat and for the platform; requests that change nothing are not remembered at all; the
/// latest ids are still answered as duplicates.
async fn memory_of_requests_is_bounded(s: &mut Served) {
    let name = s.name();
    let mut c = s.client();
    let t = create_from(&mut c, game(Variant::Bughouse, "180+0")).await;
    // White A offers a draw: remembered. Then 3,000 more offers with new ids while the offer
    // stands: each changes nothing and is not remembered.
    assert!(
        !offer(&mut c, &t, A, WHITE, "offer-0")
            .await
            .unwrap()
            .duplicate
    );
    for i in 1..=3000 {
        let r = offer(&mut c, &t, A, WHITE, &format!("offer-{i}"))
            .await
            .unwrap();
        assert!(!r.duplicate, "{name}: a new id is never a duplicate");
    }
    let st = state(&mut c, &t.id).await;
    assert_eq!(st.last_seq, 1, "{name}: one offer event");
    assert_eq!(s.remembered(&t.id).await, 1, "{name}");
    // A no-op is not remembered: the same id again is judged again (a no-op again).
    assert!(
        !offer(&mut c, &t, A, WHITE, "offer-17")
            .await
            .unwrap()
            .duplicate
    );
    assert!(
        offer(&mut c, &t, A, WHITE, "offer-0")
            .await
            .unwrap()
            .duplicate
    );

    // Board A: knights go back and forth (bughouse has no repetition rule), every move with a
    // new id, and White A offers again after each Black move (which declined the last offer):
    // 200 requests of White A, 100 of Black A.
    let shuffle = [
        ("Nf3", WHITE),
        ("Nf6", BLACK),
        ("Ng1", WHITE),
        ("Ng8", BLACK),
    ];
    for ply in 0..200u32 {
        let (text, side) = shuffle[ply as usize % 4];
        let r = play(&mut c, &t, A, side, text, ply, &format!("m{ply}"))
            .await
            .unwrap_or_else(|e| panic!("{name}: {text} at {ply}: {e:?}"));
        assert!(!r.duplicate);
        if side == BLACK {
            let r = offer(&mut c, &t, A, WHITE, &format!("again-{ply}"))
                .await
                .unwrap();
            assert!(!r.duplicate);
            assert_eq!(r.state.unwrap().draw_offers, vec![WHITE]);
        }
    }
    // The platform adds time 3,000 times, each with a new id.
    for i in 0..3000 {
        add_time(&mut c, &t, B, BLACK, 1, &format!("t{i}"))
            .await
            .unwrap();
    }
    let window = REQUEST_WINDOW;
    // White A, Black A and the platform each fill their window; the other seats sent no id.
    assert_eq!(s.remembered(&t.id).await, 3 * window, "{name}");
    if let Some(len) = done_hash_len(s, &t.id).await {
        // Per scope: the remembered requests, their ring slots and a counter.
        assert_eq!(
            len,
            3 * (2 * window + 1),
            "{name}: the done hash is bounded"
        );
    }
    // The latest ids of each scope are remembered: retries are answered as duplicates and
    // change nothing.
    let before = state(&mut c, &t.id).await;
    let r = play(&mut c, &t, A, BLACK, "Ng8", 195, "m195")
        .await
        .unwrap();
    assert!(r.duplicate, "{name}");
    assert_eq!(r.r#move.unwrap().ply, 196);
    assert!(
        offer(&mut c, &t, A, WHITE, "again-199")
            .await
            .unwrap()
            .duplicate
    );
    for i in 3000 - window..3000 {
        let r = add_time(&mut c, &t, B, BLACK, 1, &format!("t{i}"))
            .await
            .unwrap();
        assert!(r.duplicate, "{name}: t{i}");
    }
    assert_eq!(
        state(&mut c, &t.id).await,
        before,
        "{name}: retries changed nothing"
    );
    assert_eq!(s.remembered(&t.id).await, 3 * window, "{name}");
}

fn resign_as(t: &Table, side: i32, id: &str) -> tonic::Request<pb::ResignRequest> {
    bearer(
        pb::ResignRequest {
            match_id: t.id.clone(),
            side,
            request_id: id.into(),
            ..Default::default()
        },
        t.token(A, side),
    )
}

fn claim_as(
    t: &Table,
    side: i32,
    claim: common::DrawClaim,
    id: &str,
) -> tonic::Request<pb::ClaimDrawRequest> {
    bearer(
        pb::ClaimDrawRequest {
            match_id: t.id.clone(),
            side,
            claim: claim as i32,
            request_id: id.into(),
            ..Default::default()
        },
        t.token(A, side),
    )
}

/// The status of a reused request id: ALREADY_EXISTS, naming the id in the message and in a
/// `ResourceInfo` of type `request_id`.
fn assert_reused(status: &Status, id: &str, what: &str) {
    assert_eq!(status.code(), Code::AlreadyExists, "{what}: {status:?}");
    assert!(
        status.message().contains(&format!("'{id}'")),
        "{what}: {}",
        status.message()
    );
    let info = status
        .get_details_resource_info()
        .unwrap_or_else(|| panic!("{what}: no ResourceInfo in {status:?}"));
    assert_eq!(
        (info.resource_type.as_str(), info.resource_name.as_str()),
        ("request_id", id),
        "{what}"
    );
}

/// A request id sent again with a different request (another call, or other content) is
/// ALREADY_EXISTS for every call that takes one, and changes nothing; the same request again is
/// a duplicate.
async fn a_reused_request_id_is_refused(s: &mut Served) {
    let name = s.name();
    let mut c = s.client();
    let t = create_from(&mut c, game(Variant::Chess, "180+0")).await;
    let white = t.token(A, WHITE).to_owned();
    play(&mut c, &t, A, WHITE, "Nf3", 0, "w1").await.unwrap();
    play(&mut c, &t, A, BLACK, "Nf6", 1, "b1").await.unwrap();
    let before = state(&mut c, &t.id).await;
    // White's move id "w1" reused by every other call of White's, and by other moves.
    let e = c.resign(resign_as(&t, WHITE, "w1")).await.unwrap_err();
    assert_reused(&e, "w1", &format!("{name}: resign"));
    let e = offer(&mut c, &t, A, WHITE, "w1").await.unwrap_err();
    assert_reused(&e, "w1", &format!("{name}: offer"));
    let e = c
        .claim_draw(claim_as(
            &t,
            WHITE,
            common::DrawClaim::ThreefoldRepetition,
            "w1",
        ))
        .await
        .unwrap_err();
    assert_reused(&e, "w1", &format!("{name}: claim"));
    for (text, ply, what) in [
        ("Ng1", 2, "another move at the current ply"),
        ("Nc3", 0, "another move at the old ply"),
        ("g1f3", 0, "the same move in other words"),
        ("Nf3", 2, "the same text at another ply"),
    ] {
        let e = play(&mut c, &t, A, WHITE, text, ply, "w1")
            .await
            .unwrap_err();
        assert_reused(&e, "w1", &format!("{name}: {what}"));
    }
    // In another locale the same text is another request (`R` is the king in Italian).
    let mut italian = move_request(&t, A, WHITE, "Nf3", 0, "w1");
    italian.locale = common::Locale::Italian as i32;
    let e = c.make_move(bearer(italian, &white)).await.unwrap_err();
    assert_reused(&e, "w1", &format!("{name}: another locale"));
    // The same request again is a retry.
    let again = play(&mut c, &t, A, WHITE, "Nf3", 0, "w1").await.unwrap();
    assert!(again.duplicate, "{name}");
    assert_eq!(
        state(&mut c, &t.id).await,
        before,
        "{name}: nothing changed"
    );

    // An offer's id reused by a resignation, a claim's by another claim.
    assert!(
        !offer(&mut c, &t, A, BLACK, "b-offer")
            .await
            .unwrap()
            .duplicate
    );
    let e = c.resign(resign_as(&t, BLACK, "b-offer")).await.unwrap_err();
    assert_reused(&e, "b-offer", &format!("{name}: resign after offer"));
    let e = c
        .claim_draw(claim_as(
            &t,
            BLACK,
            common::DrawClaim::FiftyMoveRule,
            "b-offer",
        ))
        .await
        .unwrap_err();
    assert_reused(&e, "b-offer", &format!("{name}: claim after offer"));
    // Ids are per seat: White may use an id of Black's.
    let r = play(&mut c, &t, A, WHITE, "Ng1", 2, "b-offer")
        .await
        .unwrap();
    assert!(!r.duplicate, "{name}");

    // Platform ids: pause, resume, add time, and add time with other content.
    let pause = |id: &str| pb::PauseClocksRequest {
        match_id: t.id.clone(),
        request_id: id.into(),
    };
    let resume = |id: &str| pb::ResumeClocksRequest {
        match_id: t.id.clone(),
        request_id: id.into(),
    };
    assert!(
        !add_time(&mut c, &t, A, WHITE, 1000, "k1")
            .await
            .unwrap()
            .duplicate
    );
    let before = state(&mut c, &t.id).await;
    for (board, side, ms, what) in [
        (A, BLACK, 1000, "another side"),
        (A, WHITE, 2000, "other ms"),
    ] {
        let e = add_time(&mut c, &t, board, side, ms, "k1")
            .await
            .unwrap_err();
        assert_reused(&e, "k1", &format!("{name}: add time, {what}"));
    }
    let e = c.pause_clocks(pause("k1")).await.unwrap_err();
    assert_reused(&e, "k1", &format!("{name}: pause"));
    let e = c.resume_clocks(resume("k1")).await.unwrap_err();
    assert_reused(&e, "k1", &format!("{name}: resume"));
    assert!(
        add_time(&mut c, &t, A, WHITE, 1000, "k1")
            .await
            .unwrap()
            .duplicate
    );
    assert_eq!(
        state(&mut c, &t.id).await,
        before,
        "{name}: nothing changed"
    );
    assert!(
        !c.pause_clocks(pause("k2"))
            .await
            .unwrap()
            .into_inner()
            .duplicate
    );
    let paused = state(&mut c, &t.id).await;
    let e = c.resume_clocks(resume("k2")).await.unwrap_err();
    assert_reused(&e, "k2", &format!("{name}: resume with the pause's id"));
    let e = add_time(&mut c, &t, A, WHITE, 1000, "k2")
        .await
        .unwrap_err();
    assert_reused(&e, "k2", &format!("{name}: add time with the pause's id"));
    assert_eq!(
        state(&mut c, &t.id).await,
        paused,
        "{name}: nothing changed"
    );
    assert!(
        !c.resume_clocks(resume("k3"))
            .await
            .unwrap()
            .into_inner()
            .duplicate
    );

    // A claim that is refused is not remembered; one applied is, and its id then refuses a
    // resignation: the match stays drawn, not lost.
    let t = create_from(&mut c, game(Variant::Chess, "")).await;
    let e = c
        .claim_draw(claim_as(
            &t,
            BLACK,
            common::DrawClaim::ThreefoldRepetition,
            "c1",
        ))
        .await;
    assert_eq!(e.unwrap_err().code(), Code::FailedPrecondition);
    let moves = ["Nf3", "Nf6", "Ng1", "Ng8", "Nf3", "Nf6", "Ng1", "Ng8"];
    for (ply, text) in moves.iter().enumerate() {
        let side = if ply % 2 == 0 { WHITE } else { BLACK };
        play(&mut c, &t, A, side, text, ply as u32, "")
            .await
            .unwrap();
    }
    let drawn = c
        .claim_draw(claim_as(
            &t,
            BLACK,
            common::DrawClaim::ThreefoldRepetition,
            "c1",
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(!drawn.duplicate);
    let over = state(&mut c, &t.id).await;
    let e = c.resign(resign_as(&t, BLACK, "c1")).await.unwrap_err();
    assert_reused(&e, "c1", &format!("{name}: resign with the claim's id"));
    let e = c
        .claim_draw(claim_as(&t, BLACK, common::DrawClaim::FiftyMoveRule, "c1"))
        .await
        .unwrap_err();
    assert_reused(&e, "c1", &format!("{name}: another claim"));
    let again = c
        .claim_draw(claim_as(
            &t,
            BLACK,
            common::DrawClaim::ThreefoldRepetition,
            "c1",
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(again.duplicate, "{name}");
    assert_eq!(state(&mut c, &t.id).await, over, "{name}: nothing changed");
}

/// Move text is judged as sent: padding, control characters, NUL bytes and oversize text are
/// INVALID_ARGUMENT on `move` (never trimmed into a move), and change nothing.
async fn move_text_is_judged_as_sent(s: &mut Served) {
    let name = s.name();
    let mut c = s.client();
    for variant in [Variant::Chess, Variant::Bughouse] {
        let t = create_from(&mut c, game(variant, "")).await;
        let before = state(&mut c, &t.id).await;
        let huge = format!("e4{}", " ".repeat(100_000));
        let kilobytes = "e".repeat(100_000);
        let bad = [
            "e4\n",
            " e4",
            "e4 ",
            "e4\t",
            "e\u{0}4",
            "e4\u{0}",
            "\u{0}",
            "e4\u{a0}",
            "e4\u{2028}",
            huge.as_str(),
            kilobytes.as_str(),
            &"e".repeat(33),
            "",
        ];
        for text in bad {
            for id in ["", "r1"] {
                let e = play(&mut c, &t, A, WHITE, text, 0, id).await.unwrap_err();
                let shown: String = text.chars().take(8).collect();
                assert_eq!(e.code(), Code::InvalidArgument, "{name}: {shown:?}");
                let field = &e.get_details_bad_request().unwrap().field_violations[0].field;
                assert_eq!(field, "move", "{name}: {shown:?}");
            }
        }
        assert_eq!(
            state(&mut c, &t.id).await,
            before,
            "{name}: nothing changed"
        );
        // The 32 bytes the documentation allows, and the move itself, are fine.
        let e = play(&mut c, &t, A, WHITE, &"e".repeat(32), 0, "")
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "an unreadable move");
        let r = play(&mut c, &t, A, WHITE, "e4", 0, "r1").await.unwrap();
        assert_eq!(r.r#move.unwrap().r#move.unwrap().uci, "e2e4");
    }
}

/// A move's state carries the time the store accepted it, with or without clocks, between the
/// test's readings of the store's time base before and after; a duplicate and a read carry the
/// time they were answered.
async fn moves_and_reads_carry_their_time(s: &mut Served) {
    let name = s.name();
    let mut c = s.client();
    for (variant, tc) in [
        (Variant::Chess, ""),
        (Variant::Bughouse, ""),
        (Variant::Chess, "3+2"),
    ] {
        let t = create_from(&mut c, game(variant, tc)).await;
        let before = s.time_base().await;
        let r = play(&mut c, &t, A, WHITE, "e4", 0, "r1").await.unwrap();
        let after = s.time_base().await;
        let at = r.state.unwrap().server_time_ms;
        assert!(
            (before..=after).contains(&at),
            "{name} {variant:?} {tc:?}: {before} <= {at} <= {after}"
        );
        let before = s.time_base().await;
        let r = play(&mut c, &t, A, WHITE, "e4", 0, "r1").await.unwrap();
        let after = s.time_base().await;
        assert!(r.duplicate);
        let at = r.state.unwrap().server_time_ms;
        assert!((before..=after).contains(&at), "{name}: duplicate {at}");
        let before = s.time_base().await;
        let read = c
            .get_match(pb::GetMatchRequest {
                match_id: t.id.clone(),
            })
            .await
            .unwrap()
            .into_inner()
            .state
            .unwrap();
        let after = s.time_base().await;
        let at = read.server_time_ms;
        assert!((before..=after).contains(&at), "{name}: read {at}");
    }
}

/// An independent judge of a bughouse board (`shakmaty`'s crazyhouse on the board's FEN with
/// its reserves): the side to move waits for a piece when it has no legal move and is not mated
/// under bughouse rules (mate needs a check no drop could ever block: a double check, or a
/// checker next to the king, a knight or a pawn).
fn oracle_waits(fen: &str) -> bool {
    use shakmaty::fen::Fen;
    use shakmaty::variant::Crazyhouse;
    use shakmaty::{CastlingMode, Position as _, PositionError, attacks};
    let pos: Crazyhouse = Fen::from_ascii(fen.as_bytes())
        .unwrap_or_else(|e| panic!("{fen}: {e}"))
        .into_position(CastlingMode::Standard)
        // Bughouse boards may hold more of a kind than one crazyhouse game could.
        .or_else(PositionError::ignore_too_much_material)
        .unwrap_or_else(|e| panic!("{fen}: {e}"));
    if !pos.legal_moves().is_empty() {
        return false;
    }
    let checkers = pos.checkers();
    let king = pos.board().king_of(pos.turn()).expect("a king");
    let mated = checkers.more_than_one()
        || checkers
            .single_square()
            .is_some_and(|checker| attacks::between(king, checker).is_empty());
    !mated
}

/// Random bughouse matches (seeded) through gRPC: after every move, each board's
/// `waiting_for_piece` is what the independent judge says while the match goes on, and false
/// once it is over. Most matches start with White A's king alone against Black A's army, which
/// mostly plays to leave it the fewest moves (board B holds kings and pawns, whose captures feed
/// the reserves), so boxed-in kings and checks with nowhere to go come often; a wait is followed
/// for a few plies, then the next match starts.
async fn waiting_for_piece_agrees_with_an_independent_judge(s: &mut Served) {
    let name = s.name();
    let mut c = s.client();
    let mut rng = 0x5DEE_CE66_D1A4_F87Bu64;
    let mut next = move || crate::store::xorshift(&mut rng);
    let (mut plies, mut waits, mut matches) = (0, 0, 0);
    let lone_king = "rnbqkbnr/pppppppp/8/8/8/8/8/4K3[] w kq - 0 1 | \
                     4k3/pppppppp/8/8/8/8/PPPPPPPP/4K3[] w - - 0 1";
    while plies < PLIES {
        let mut req = game(Variant::Bughouse, "");
        // Three matches in four from the lone king, the fourth from the standard start.
        if matches % 4 != 3 {
            req.start = lone_king.into();
        }
        matches += 1;
        let t = create_from(&mut c, req).await;
        let mut st = state(&mut c, &t.id).await;
        let mut waited = 0;
        for _ in 0..150 {
            let waiting = check_waiting(name, &st);
            if waiting && waited == 0 {
                waits += 1;
            }
            waited = if waiting { waited + 1 } else { 0 };
            if st.outcome.is_some() || waited > 3 {
                break;
            }
            // Every seat to move with a legal move, on either board; board A three times as
            // often as board B.
            let movable: Vec<(usize, AnyPosition)> = st
                .boards
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    (
                        i,
                        AnyPosition::from_text(CoreVariant::Bughouse, &b.position).unwrap(),
                    )
                })
                .filter(|(_, pos)| !pos.legal_moves().is_empty())
                .collect();
            let (i, pos) = match movable.as_slice() {
                [] => break, // both boards wait: nobody can move
                [one] => one,
                [a, b] => {
                    if next() % 4 == 0 {
                        b
                    } else {
                        a
                    }
                }
                _ => unreachable!("two boards"),
            };
            let moves = pos.legal_moves();
            // Black A mostly hems White A's king in (the move that leaves it fewest moves);
            // every other move is random.
            let mv = if *i == 0 && st.boards[0].side_to_move == BLACK && next() % 4 != 0 {
                let mobility = |m| {
                    let mut after = pos.clone();
                    after.play_unchecked(m);
                    after.legal_moves().len()
                };
                let least = moves.iter().map(|&m| mobility(m)).min().unwrap_or(0);
                let fewest: Vec<_> = moves.iter().filter(|&&m| mobility(m) == least).collect();
                *fewest[(next() % fewest.len() as u64) as usize]
            } else {
                moves[(next() % moves.len() as u64) as usize]
            };
            let text = &mv.to_string();
            let b = &st.boards[*i];
            let board = [A, B][*i];
            let r = play(&mut c, &t, board, b.side_to_move, text, b.ply, "")
                .await
                .unwrap_or_else(|e| panic!("{name}: {text} on {board}: {e:?}"));
            plies += 1;
            st = r.state.unwrap();
        }
        // The stored match agrees with the move's answers.
        check_waiting(name, &state(&mut c, &t.id).await);
    }
    assert!(waits >= 10, "{name}: only {waits} waits in {plies} plies");
}

/// Checks each board's flag against the judge; whether a board waits.
fn check_waiting(name: &str, st: &pb::MatchState) -> bool {
    let mut any = false;
    for b in &st.boards {
        let expected = st.outcome.is_none() && oracle_waits(&b.position);
        assert_eq!(
            b.waiting_for_piece,
            expected,
            "{name}: board {} {} (over: {})",
            b.board,
            b.position,
            st.outcome.is_some()
        );
        any |= b.waiting_for_piece;
    }
    any
}

/// Positions built to wait, with empty reserves: White A without a move and not in check, and
/// White A in a back-rank check that a drop could block (not mate in bughouse). Board A is
/// flagged, board B not; the match goes on on board B, and a pawn arriving from the partner's
/// board ends the first wait but not the second (a pawn cannot be dropped on the first rank).
async fn a_built_waiting_position_is_flagged(s: &mut Served) {
    let name = s.name();
    let mut c = s.client();
    let b_start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1";
    for (a, waits_with_a_pawn) in [
        ("k7/8/8/8/8/8/5q2/7K[] w - - 0 1", false),
        ("k7/8/8/8/8/8/6PP/r6K[] w - - 0 1", true),
    ] {
        let mut req = game(Variant::Bughouse, "");
        req.start = format!("{a} | {b_start}");
        let t = create_from(&mut c, req).await;
        let created = t.created.state.clone().unwrap();
        let st = state(&mut c, &t.id).await;
        for s in [&created, &st] {
            assert!(s.boards[0].waiting_for_piece, "{name}: {a}");
            assert!(!s.boards[1].waiting_for_piece, "{name}: {a}");
            assert!(oracle_waits(&s.boards[0].position), "{a}");
        }
        let e = play(&mut c, &t, A, WHITE, "Kg1", 0, "").await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument);
        // White B takes a pawn (it goes to White B's partner, Black A): White A still waits.
        for (side, text, ply) in [(WHITE, "e4", 0), (BLACK, "d5", 1), (WHITE, "exd5", 2)] {
            let r = play(&mut c, &t, B, side, text, ply, "").await.unwrap();
            assert!(
                r.state.unwrap().boards[0].waiting_for_piece,
                "{name}: {text}"
            );
        }
        // Black B takes back: the white pawn goes to Black B's partner, White A.
        let r = play(&mut c, &t, B, BLACK, "Qxd5", 3, "").await.unwrap();
        let st = r.state.unwrap();
        assert_eq!(st.boards[0].white_reserve, "P", "{name}");
        assert_eq!(
            st.boards[0].waiting_for_piece, waits_with_a_pawn,
            "{name}: {a}"
        );
        assert_eq!(
            oracle_waits(&st.boards[0].position),
            waits_with_a_pawn,
            "{a}"
        );
        if !waits_with_a_pawn {
            play(&mut c, &t, A, WHITE, "P@g2", 0, "").await.unwrap();
        }
    }
}

/// AddTime past the most a side may hold (100 days) is refused on `ms`, naming the limit, and
/// adds nothing; its request id is not remembered; up to the limit exactly is added.
async fn add_time_past_the_maximum_is_refused(s: &mut Served) {
    use arbiter_core::clock::MAX_REMAINING_MS;
    let name = s.name();
    let mut c = s.client();
    let t = create_from(&mut c, game(Variant::Chess, "1+0")).await;
    const DAY: u64 = 86_400_000;
    // Black's clock does not run: its time is exact. 60 s + 99 days, then the rest.
    for i in 0..99 {
        add_time(&mut c, &t, A, BLACK, DAY, &format!("day-{i}"))
            .await
            .unwrap();
    }
    let before = state(&mut c, &t.id).await;
    let black = before.boards[0].clock.as_ref().unwrap().black_ms;
    assert_eq!(black, 60_000 + 99 * DAY, "{name}");
    let left = MAX_REMAINING_MS - black;
    for (ms, id) in [(DAY, "too-much"), (left + 1, "one-over")] {
        let e = add_time(&mut c, &t, A, BLACK, ms, id).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{name}: {e:?}");
        assert_eq!(
            e.get_details_bad_request().unwrap().field_violations[0].field,
            "ms",
            "{name}"
        );
        assert!(
            e.message().contains(&MAX_REMAINING_MS.to_string()),
            "{name}: the limit is named: {}",
            e.message()
        );
        assert_eq!(state(&mut c, &t.id).await, before, "{name}: nothing added");
    }
    // The refused id was not remembered: with a request that fits, it is applied.
    let r = add_time(&mut c, &t, A, BLACK, left, "one-over")
        .await
        .unwrap();
    assert!(!r.duplicate, "{name}");
    let after = r.state.unwrap().boards[0].clock.unwrap();
    assert_eq!(after.black_ms, MAX_REMAINING_MS, "{name}");
}

async fn suite(mut s: Served) {
    add_time_past_the_maximum_is_refused(&mut s).await;
    memory_of_requests_is_bounded(&mut s).await;
    a_reused_request_id_is_refused(&mut s).await;
    move_text_is_judged_as_sent(&mut s).await;
    moves_and_reads_carry_their_time(&mut s).await;
    waiting_for_piece_agrees_with_an_independent_judge(&mut s).await;
    a_built_waiting_position_is_flagged(&mut s).await;
    s.server.stop().await;
}

#[tokio::test]
async fn requests_moves_and_boards_in_process() {
    suite(Served::memory().await).await;
}

#[tokio::test]
async fn requests_moves_and_boards_in_redis() {
    suite(Served::redis().await).await;
}
