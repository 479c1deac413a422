//! The match service over real gRPC: a server on 127.0.0.1:0 per test (matches in process; the
//! store suite runs the same operations against Redis), the generated client, full games of
//! every variant to mate, stalemate, resignation, agreed and claimed draws, bughouse matches,
//! seat credentials and the platform credential, and refusals that change nothing.

use crate::support;

use arbiter_kit::ServeConfig;
use arbiter_kit::access::AccessPolicy;
use arbiter_kit::keys::KeySet;
use arbiter_matches::MatchesConfig;
use arbiter_proto::common::v1::{self as common, Variant};
use arbiter_proto::matches::v1::{self as pb, match_service_client::MatchServiceClient};
use support::*;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use tonic_types::StatusExt;

async fn start_with(access: AccessPolicy) -> Server {
    TestServer::start(|listener, shutdown| {
        arbiter_matches::serve(
            listener,
            ServeConfig::default(),
            MatchesConfig::default(),
            access,
            shutdown,
        )
    })
    .await
}

pub(crate) async fn start() -> Server {
    start_with(AccessPolicy::development()).await
}

pub(crate) fn creation(
    variant: Variant,
    start: &str,
    rules: &[(&str, &str)],
) -> pb::CreateMatchRequest {
    let players = if variant == Variant::Bughouse {
        vec!["ann", "bob", "cid", "dee"]
    } else {
        vec!["ann", "bob"]
    };
    pb::CreateMatchRequest {
        variant: variant as i32,
        start: start.into(),
        rules: rules
            .iter()
            .map(|(n, v)| common::RuleOption {
                name: (*n).into(),
                value: (*v).into(),
            })
            .collect(),
        players: players.into_iter().map(String::from).collect(),
        time_control: "180+2".into(),
        ..Default::default()
    }
}

async fn create(
    c: &mut MatchServiceClient<Channel>,
    variant: Variant,
    start: &str,
    rules: &[(&str, &str)],
) -> Table {
    create_from(c, creation(variant, start, rules)).await
}

/// The match as stored, without the time it was read (so that two reads compare equal when
/// nothing changed).
pub(crate) async fn get(c: &mut MatchServiceClient<Channel>, id: &str) -> pb::MatchState {
    let mut state = c
        .get_match(pb::GetMatchRequest {
            match_id: id.into(),
        })
        .await
        .unwrap()
        .into_inner()
        .state
        .unwrap();
    state.server_time_ms = 0;
    state
}

/// Plays `moves` on board A of a single-board game, each for the side to move.
pub(crate) async fn play_all(
    c: &mut MatchServiceClient<Channel>,
    t: &Table,
    moves: &[&str],
) -> pb::MatchState {
    let mut state = get(c, &t.id).await;
    for mv in moves {
        let b = &state.boards[0];
        state = make_move(c, t, A, b.side_to_move, mv, b.ply)
            .await
            .unwrap_or_else(|e| panic!("{mv}: {e:?}"))
            .state
            .unwrap();
    }
    timeless(state)
}

/// `state` without the time it was produced at (to compare states of different calls).
pub(crate) fn timeless(mut state: pb::MatchState) -> pb::MatchState {
    state.server_time_ms = 0;
    state
}

pub(crate) fn outcome(state: &pb::MatchState) -> (String, String) {
    let o = state
        .outcome
        .as_ref()
        .and_then(|o| o.outcome.clone())
        .unwrap_or_else(|| panic!("no outcome in {state:?}"));
    (o.score.unwrap().text, o.reason_name)
}

pub(crate) fn reason(status: &Status) -> String {
    status
        .get_details_error_info()
        .map(|i| i.reason)
        .unwrap_or_default()
}

pub(crate) fn field(status: &Status) -> String {
    status
        .get_details_bad_request()
        .map(|b| b.field_violations[0].field.clone())
        .unwrap_or_default()
}

/// Reads a watch stream to its end.
pub(crate) async fn watch_all(
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
    let mut seen = Vec::new();
    while let Some(e) = stream.message().await.unwrap() {
        seen.push(e);
    }
    seen
}

/// Every variant played to its automatic endings through MakeMove: mate, stalemate with each
/// variant's score, the Byzantine and Citadel endings, the seventy-five-move rule and fivefold
/// repetition; the watchers see the end; nothing moves afterwards.
#[tokio::test]
async fn every_variant_plays_to_its_automatic_endings() {
    let s = start().await;
    let mut c = s.client();
    type Case<'a> = (
        Variant,
        &'a str,
        &'a [(&'a str, &'a str)],
        &'a [&'a str],
        &'a str,
        &'a str,
    );
    let dance = [
        "Nf3", "Nf6", "Ng1", "Ng8", "Nf3", "Nf6", "Ng1", "Ng8", "Nf3", "Nf6", "Ng1", "Ng8", "Nf3",
        "Nf6", "Ng1", "Ng8",
    ];
    let cases: Vec<Case> = vec![
        (
            Variant::Chess,
            "",
            &[],
            &["f3", "e5", "g4", "Qh4#"],
            "0-1",
            "checkmate",
        ),
        (
            Variant::Chess,
            "7k/8/8/8/8/8/5Q2/K7 w - - 0 1",
            &[],
            &["Qf7"],
            "1/2-1/2",
            "stalemate",
        ),
        (
            Variant::Chess,
            "4k3/8/8/8/8/8/8/R3K3 w - - 149 100",
            &[],
            &["Ra2"],
            "1/2-1/2",
            "seventy-five-move-rule",
        ),
        (
            Variant::Chess,
            "",
            &[],
            &dance,
            "1/2-1/2",
            "fivefold-repetition",
        ),
        (
            Variant::Crazyhouse,
            "",
            &[],
            &["f3", "e5", "g4", "Qh4#"],
            "0-1",
            "checkmate",
        ),
        (
            Variant::Glinski,
            "k/3/5/2K4/9/11/11/11/11/11/10N w - 0 1",
            &[],
            &["Ke8-f9"],
            "3/4-1/4",
            "stalemate",
        ),
        (
            Variant::Glinski,
            "k/3/2K2/7/9/11/11/11/11/11/3R7 w - 0 1",
            &[],
            &["d1d9"],
            "1-0",
            "checkmate",
        ),
        (
            Variant::Byzantine,
            "k15/4R6n4/7R8/8K7 w 0 1",
            &[],
            &["c8a8"],
            "1-0",
            "checkmate",
        ),
        // The stalemated side wins, by default; loses under the option.
        (
            Variant::Byzantine,
            "k15/4R11/2R1p+E9R/8K7 w 0 1",
            &[],
            &["c3c2"],
            "0-1",
            "stalemate",
        ),
        (
            Variant::Byzantine,
            "k15/4R11/2R1p+E9R/8K7 w 0 1",
            &[("stalemate", "loses")],
            &["c3c2"],
            "1-0",
            "stalemate",
        ),
        (
            Variant::Byzantine,
            "k8n6/4R11/16/8K7 w 0 1",
            &[],
            &["b5b10", "a1a2", "b10a10", "a2b2"],
            "1-0",
            "bare-king",
        ),
        (
            Variant::ByzantineCitadel,
            "k15/4R6n4/7R8/8K7/4 w 0 1",
            &[],
            &["c8a8"],
            "1-0",
            "checkmate",
        ),
        (
            Variant::ByzantineCitadel,
            "k15/4R11/2R1p+E9R/8K7/4 w 0 1",
            &[],
            &["c3c2"],
            "0-1",
            "stalemate",
        ),
        (
            Variant::ByzantineCitadel,
            "k15/4R6r4/16/9K6/4 w 0 1",
            &[],
            &["d10e3"],
            "1/2-1/2",
            "citadel-entry",
        ),
    ];
    for (variant, start, rules, moves, score, why) in cases {
        let t = create(&mut c, variant, start, rules).await;
        let state = play_all(&mut c, &t, moves).await;
        assert_eq!(
            outcome(&state),
            (score.to_owned(), why.to_owned()),
            "{variant:?} {start} {moves:?}"
        );
        assert!(
            state
                .outcome
                .as_ref()
                .unwrap()
                .outcome
                .as_ref()
                .unwrap()
                .automatic
        );
        let events = watch_all(&mut c, &t.id).await;
        assert_eq!(events.len() as u64, state.last_seq);
        // Each move is followed by a snapshot of the clocks (the games have a time control).
        let clocks = events
            .iter()
            .filter(|e| matches!(e.event, Some(pb::watch_match_response::Event::Clock(_))))
            .count();
        assert_eq!(clocks, moves.len(), "{events:?}");
        assert_eq!(events.len(), 2 * moves.len() + 1, "{events:?}");
        assert!(matches!(
            events.last().unwrap().event,
            Some(pb::watch_match_response::Event::End(_))
        ));
        // Nothing moves once the game is over, whatever the text.
        let b = &state.boards[0];
        for text in ["e4", "zz"] {
            let status = make_move(&mut c, &t, A, b.side_to_move, text, b.ply)
                .await
                .unwrap_err();
            assert_eq!(reason(&status), "MATCH_OVER", "{variant:?}: {status:?}");
        }
        let status = c
            .resign(bearer(
                pb::ResignRequest {
                    match_id: t.id.clone(),
                    side: WHITE,
                    ..Default::default()
                },
                t.token(A, WHITE),
            ))
            .await
            .unwrap_err();
        assert_eq!(reason(&status), "MATCH_OVER");
        assert_eq!(get(&mut c, &t.id).await, state);
    }
    s.stop().await;
}

async fn claim(
    c: &mut MatchServiceClient<Channel>,
    t: &Table,
    side: i32,
    what: common::DrawClaim,
) -> Result<pb::MatchState, Status> {
    c.claim_draw(bearer(
        pb::ClaimDrawRequest {
            match_id: t.id.clone(),
            side,
            claim: what as i32,
            ..Default::default()
        },
        t.token(A, side),
    ))
    .await
    .map(|r| timeless(r.into_inner().state.unwrap()))
}

/// Draw claims wherever a variant's rules allow one (threefold repetition in every single-board
/// variant, the fifty-move rule in chess and Glinski); a claim that does not hold is refused
/// and changes nothing.
#[tokio::test]
async fn draws_are_claimed_where_the_rules_allow() {
    let s = start().await;
    let mut c = s.client();
    use common::DrawClaim::{FiftyMoveRule, ThreefoldRepetition};
    let cases: Vec<(Variant, &str, Vec<&str>, common::DrawClaim)> = vec![
        (
            Variant::Chess,
            "",
            "Nf3 Nf6 Ng1 Ng8 Nf3 Nf6 Ng1 Ng8".split(' ').collect(),
            ThreefoldRepetition,
        ),
        (
            Variant::Chess,
            "4k3/8/8/8/8/8/8/R3K3 w - - 99 80",
            vec!["Ra2"],
            FiftyMoveRule,
        ),
        (
            Variant::Crazyhouse,
            "",
            "Nf3 Nf6 Ng1 Ng8 Nf3 Nf6 Ng1 Ng8".split(' ').collect(),
            ThreefoldRepetition,
        ),
        (
            Variant::Glinski,
            "",
            "d1c3 d9c6 c3d1 c6d9 d1c3 d9c6 c3d1 c6d9"
                .split(' ')
                .collect(),
            ThreefoldRepetition,
        ),
        (
            Variant::Glinski,
            "k/3/5/7/9/11/11/11/11/11/2K4R3 w - 99 60",
            vec!["h1h2"],
            FiftyMoveRule,
        ),
        (
            Variant::Byzantine,
            "",
            "b1c3 b8c6 c3b1 c6b8 b1c3 b8c6 c3b1 c6b8"
                .split(' ')
                .collect(),
            ThreefoldRepetition,
        ),
        (
            Variant::ByzantineCitadel,
            "",
            "c1b3 c8b6 b3c1 b6c8 c1b3 c8b6 b3c1 b6c8"
                .split(' ')
                .collect(),
            ThreefoldRepetition,
        ),
    ];
    for (variant, start, moves, what) in cases {
        let t = create(&mut c, variant, start, &[]).await;
        // Too early: refused, nothing changes.
        let before = get(&mut c, &t.id).await;
        let status = claim(&mut c, &t, WHITE, what).await.unwrap_err();
        assert_eq!(reason(&status), "NOT_CLAIMABLE", "{variant:?} {status:?}");
        assert_eq!(get(&mut c, &t.id).await, before);
        let state = play_all(&mut c, &t, &moves).await;
        assert!(state.outcome.is_none());
        assert_eq!(
            state.boards[0].claimable_draws,
            vec![what as i32],
            "{variant:?}"
        );
        // The other claim does not hold.
        let other = if what == ThreefoldRepetition {
            FiftyMoveRule
        } else {
            ThreefoldRepetition
        };
        let status = claim(&mut c, &t, BLACK, other).await.unwrap_err();
        assert_eq!(reason(&status), "NOT_CLAIMABLE");
        // Either player may claim.
        let state = claim(&mut c, &t, BLACK, what).await.unwrap();
        let (score, why) = outcome(&state);
        assert_eq!(score, "1/2-1/2");
        assert!(!state.outcome.unwrap().outcome.unwrap().automatic);
        assert_eq!(
            why,
            if what == ThreefoldRepetition {
                "threefold-repetition"
            } else {
                "fifty-move-rule"
            }
        );
    }
    s.stop().await;
}

pub(crate) async fn offer(
    c: &mut MatchServiceClient<Channel>,
    t: &Table,
    board: i32,
    side: i32,
) -> Result<pb::MatchState, Status> {
    c.offer_draw(bearer(
        pb::OfferDrawRequest {
            match_id: t.id.clone(),
            board,
            side,
            ..Default::default()
        },
        t.token(board, side),
    ))
    .await
    .map(|r| timeless(r.into_inner().state.unwrap()))
}

pub(crate) async fn resign(
    c: &mut MatchServiceClient<Channel>,
    t: &Table,
    board: i32,
    side: i32,
) -> Result<pb::MatchState, Status> {
    c.resign(bearer(
        pb::ResignRequest {
            match_id: t.id.clone(),
            board,
            side,
            ..Default::default()
        },
        t.token(board, side),
    ))
    .await
    .map(|r| timeless(r.into_inner().state.unwrap()))
}

/// Resignation and draws by agreement in every variant; an offer lapses when the other side
/// moves, and a repeated offer adds nothing.
#[tokio::test]
async fn resignation_and_agreed_draws_in_every_variant() {
    let s = start().await;
    let mut c = s.client();
    let first_moves = [
        (Variant::Chess, ["e4", "e5"]),
        (Variant::Crazyhouse, ["e4", "e5"]),
        (Variant::Glinski, ["f5f6", "e7e6"]),
        (Variant::Byzantine, ["b1c3", "b8c6"]),
        (Variant::ByzantineCitadel, ["c1b3", "c8b6"]),
    ];
    for (variant, moves) in first_moves {
        let t = create(&mut c, variant, "", &[]).await;
        play_all(&mut c, &t, &moves).await;
        let state = resign(&mut c, &t, A, BLACK).await.unwrap();
        assert_eq!(
            outcome(&state),
            ("1-0".to_owned(), "resignation".to_owned()),
            "{variant:?}"
        );

        let t = create(&mut c, variant, "", &[]).await;
        let state = offer(&mut c, &t, A, WHITE).await.unwrap();
        assert_eq!(state.draw_offers, vec![WHITE]);
        // A repeated offer changes nothing and adds no event.
        let again = offer(&mut c, &t, A, WHITE).await.unwrap();
        assert_eq!(again, state);
        // Black plays on: the offer lapses.
        let state = play_all(&mut c, &t, &moves[..1]).await;
        assert_eq!(
            state.draw_offers,
            vec![WHITE],
            "white's own move keeps its offer"
        );
        let state = play_all(&mut c, &t, &moves[1..]).await;
        assert!(
            state.draw_offers.is_empty(),
            "{variant:?}: declined by moving"
        );
        offer(&mut c, &t, A, BLACK).await.unwrap();
        let state = offer(&mut c, &t, A, WHITE).await.unwrap();
        assert_eq!(
            outcome(&state),
            ("1/2-1/2".to_owned(), "agreement".to_owned())
        );
        let events = watch_all(&mut c, &t.id).await;
        let offers = events
            .iter()
            .filter(|e| matches!(e.event, Some(pb::watch_match_response::Event::DrawOffer(_))))
            .count();
        assert_eq!(offers, 3, "{variant:?}: {events:?}");
    }
    s.stop().await;
}

/// A crazyhouse game reports its reserves (read from the position) on every board state.
#[tokio::test]
async fn crazyhouse_reserves_are_reported() {
    let s = start().await;
    let mut c = s.client();
    let t = create(&mut c, Variant::Crazyhouse, "", &[]).await;
    let state = play_all(&mut c, &t, &["e4", "d5", "exd5", "Qxd5"]).await;
    let b = &state.boards[0];
    assert_eq!(
        (b.white_reserve.as_str(), b.black_reserve.as_str()),
        ("P", "p")
    );
    let state = play_all(&mut c, &t, &["P@e4"]).await;
    assert_eq!(state.boards[0].white_reserve, "");
    s.stop().await;
}

/// A bughouse match: reserves flow between the boards, a retry is a duplicate, refusals carry
/// their code and field and change nothing, mate on one board ends the match, watchers follow
/// to the end; resignation and agreement by teams; no claims in bughouse.
#[tokio::test]
async fn bughouse_matches() {
    let s = start().await;
    let mut c = s.client();
    let t = create(&mut c, Variant::Bughouse, "", &[]).await;
    let state = &t.created.state.as_ref().unwrap();
    assert_eq!(state.boards.len(), 2);
    assert_eq!(state.seats.len(), 4);
    assert_eq!(t.created.seats.len(), 4);
    let mut watchers = Vec::new();
    for _ in 0..2 {
        watchers.push(
            c.watch_match(pb::WatchMatchRequest {
                match_id: t.id.clone(),
                after_seq: 0,
            })
            .await
            .unwrap()
            .into_inner(),
        );
    }
    for (board, side, mv, ply) in [
        (A, WHITE, "e4", 0),
        (A, BLACK, "d5", 1),
        (A, WHITE, "exd5", 2),
        (B, WHITE, "Nf3", 0),
    ] {
        make_move(&mut c, &t, board, side, mv, ply).await.unwrap();
    }
    // White A's capture went to Black B, who drops it.
    let r = make_move(&mut c, &t, B, BLACK, "P@e4", 1).await.unwrap();
    assert_eq!(
        r.r#move.as_ref().unwrap().r#move.as_ref().unwrap().uci,
        "P@e4"
    );
    let st = r.state.unwrap();
    assert_eq!(st.boards[1].black_reserve, "");
    assert_eq!(st.boards[1].ply, 2);
    let again = make_move(&mut c, &t, B, BLACK, "P@e4", 1).await.unwrap();
    assert!(again.duplicate);
    // The answer is the state now: the same board, read at a later server time.
    assert_eq!(timeless(again.state.unwrap()), timeless(st));

    let before = get(&mut c, &t.id).await;
    let cases: [(i32, i32, &str, u32, Code, &str); 6] = [
        (
            A,
            WHITE,
            "Ke2",
            3,
            Code::FailedPrecondition,
            "NOT_YOUR_TURN",
        ),
        (A, BLACK, "Q@d4", 3, Code::InvalidArgument, "move"),
        (A, BLACK, "e5", 1, Code::FailedPrecondition, "STALE_PLY"),
        (A, BLACK, "e5", 9, Code::FailedPrecondition, "STALE_PLY"),
        (A, BLACK, "e\u{1}5", 3, Code::InvalidArgument, "move"),
        (A, BLACK, &"e".repeat(40), 3, Code::InvalidArgument, "move"),
    ];
    for (board, side, mv, ply, code, what) in cases {
        let status = make_move(&mut c, &t, board, side, mv, ply)
            .await
            .unwrap_err();
        assert_eq!(status.code(), code, "{mv}: {status:?}");
        let got = if code == Code::InvalidArgument {
            field(&status)
        } else {
            reason(&status)
        };
        assert_eq!(got, what, "{mv}");
    }
    // A bughouse move needs its board.
    let status = c
        .make_move(bearer(
            pb::MakeMoveRequest {
                match_id: t.id.clone(),
                side: BLACK,
                r#move: "e5".into(),
                expected_ply: 3,
                ..Default::default()
            },
            t.token(A, BLACK),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        (status.code(), field(&status).as_str()),
        (Code::InvalidArgument, "board")
    );
    let status = c
        .claim_draw(bearer(
            pb::ClaimDrawRequest {
                match_id: t.id.clone(),
                board: A,
                side: BLACK,
                claim: common::DrawClaim::ThreefoldRepetition as i32,
                ..Default::default()
            },
            t.token(A, BLACK),
        ))
        .await
        .unwrap_err();
    assert_eq!(reason(&status), "NOT_CLAIMABLE");
    assert_eq!(get(&mut c, &t.id).await, before, "refusals changed nothing");

    // Team 2 (Black A + White B) offers, team 1 declines by moving, then both agree.
    let st = offer(&mut c, &t, B, WHITE).await.unwrap();
    assert_eq!(
        st.draw_offers,
        vec![BLACK],
        "team 2 is the match's black side"
    );
    let st = make_move(&mut c, &t, A, BLACK, "e5", 3)
        .await
        .unwrap()
        .state
        .unwrap();
    assert_eq!(
        st.draw_offers,
        vec![BLACK],
        "team 2's own move keeps its offer"
    );
    let st = make_move(&mut c, &t, A, WHITE, "Nf3", 4)
        .await
        .unwrap()
        .state
        .unwrap();
    assert!(st.draw_offers.is_empty());
    offer(&mut c, &t, A, BLACK).await.unwrap();
    let st = offer(&mut c, &t, B, BLACK).await.unwrap();
    assert_eq!(outcome(&st), ("1/2-1/2".to_owned(), "agreement".to_owned()));
    assert_eq!(st.outcome.as_ref().unwrap().winning_team, 0);
    for mut w in watchers {
        let mut seen = Vec::new();
        while let Some(e) = w.message().await.unwrap() {
            seen.push(e);
        }
        assert_eq!(seen.len() as u64, st.last_seq);
        assert!(seen.windows(2).all(|p| p[1].seq == p[0].seq + 1));
        assert!(matches!(
            seen.last().unwrap().event,
            Some(pb::watch_match_response::Event::End(_))
        ));
        let reserves = seen
            .iter()
            .filter(|e| matches!(e.event, Some(pb::watch_match_response::Event::Reserve(_))))
            .count();
        assert_eq!(reserves, 2, "the capture's and the drop's");
    }

    // Offers count by team on both boards: a move on board B by team 2 (White B) declines team
    // 1's offer; a move by team 1 (Black B) keeps it.
    let t = create(&mut c, Variant::Bughouse, "", &[]).await;
    let st = offer(&mut c, &t, A, WHITE).await.unwrap();
    assert_eq!(st.draw_offers, vec![WHITE]);
    let st = make_move(&mut c, &t, B, WHITE, "e4", 0)
        .await
        .unwrap()
        .state
        .unwrap();
    assert!(st.draw_offers.is_empty(), "declined by team 2's move on B");
    offer(&mut c, &t, B, BLACK).await.unwrap();
    let st = make_move(&mut c, &t, B, BLACK, "e5", 1)
        .await
        .unwrap()
        .state
        .unwrap();
    assert_eq!(
        st.draw_offers,
        vec![WHITE],
        "team 1's own move keeps its offer"
    );
    let declined = {
        let mut w = c
            .watch_match(pb::WatchMatchRequest {
                match_id: t.id.clone(),
                after_seq: 0,
            })
            .await
            .unwrap()
            .into_inner();
        let mut seen = Vec::new();
        while seen.len() < st.last_seq as usize {
            seen.push(w.message().await.unwrap().unwrap());
        }
        seen.iter()
            .filter_map(|e| match e.event {
                Some(pb::watch_match_response::Event::DrawDeclined(side)) => Some(side),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(declined, vec![WHITE]);

    // Resignation: the resigning player's team loses.
    let t = create(&mut c, Variant::Bughouse, "", &[]).await;
    let st = resign(&mut c, &t, B, WHITE).await.unwrap();
    assert_eq!(st.outcome.as_ref().unwrap().winning_team, 1);
    assert_eq!(outcome(&st), ("1-0".to_owned(), "resignation".to_owned()));
    assert_eq!(st.outcome.unwrap().board, B);

    // Mate on board B (a contact mate no drop can block): team 2's White B wins the match.
    let t = create(
        &mut c,
        Variant::Bughouse,
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1 | \
         k7/8/2K5/8/8/8/8/1Q6[] w - - 0 1",
        &[],
    )
    .await;
    let st = make_move(&mut c, &t, B, WHITE, "Qb7#", 0)
        .await
        .unwrap()
        .state
        .unwrap();
    assert_eq!(outcome(&st), ("0-1".to_owned(), "checkmate".to_owned()));
    assert_eq!(st.outcome.as_ref().unwrap().winning_team, 2);
    let status = make_move(&mut c, &t, A, WHITE, "e4", 0).await.unwrap_err();
    assert_eq!(reason(&status), "MATCH_OVER", "the other board stops too");
    s.stop().await;
}

/// Seat tokens: a missing one is UNAUTHENTICATED; the opponent's, the partner's (on the other
/// board) and another match's are PERMISSION_DENIED; none of them changes anything.
#[tokio::test]
async fn seat_credentials_are_checked() {
    let s = start().await;
    let mut c = s.client();
    for variant in [Variant::Chess, Variant::Bughouse] {
        let t = create(&mut c, variant, "", &[]).await;
        let other = create(&mut c, variant, "", &[]).await;
        let before = get(&mut c, &t.id).await;
        let request = |token: Option<&str>| {
            let message = pb::MakeMoveRequest {
                match_id: t.id.clone(),
                board: A,
                side: WHITE,
                r#move: "e4".into(),
                expected_ply: 0,
                ..Default::default()
            };
            match token {
                Some(tok) => bearer(message, tok),
                None => Request::new(message),
            }
        };
        let status = c.make_move(request(None)).await.unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
        let mut malformed = request(None);
        malformed
            .metadata_mut()
            .insert("authorization", "Basic abc".parse().unwrap());
        assert_eq!(
            c.make_move(malformed).await.unwrap_err().code(),
            Code::Unauthenticated
        );
        let mut wrong = vec![t.token(A, BLACK), other.token(A, WHITE), "garbage"];
        if variant == Variant::Bughouse {
            // The partner of White A is Black B; the other board's players too.
            wrong.extend([t.token(B, BLACK), t.token(B, WHITE)]);
        }
        for tok in wrong {
            let status = c.make_move(request(Some(tok))).await.unwrap_err();
            assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
            let status = c
                .resign(bearer(
                    pb::ResignRequest {
                        match_id: t.id.clone(),
                        board: A,
                        side: WHITE,
                        ..Default::default()
                    },
                    tok,
                ))
                .await
                .unwrap_err();
            assert_eq!(status.code(), Code::PermissionDenied);
            let status = c
                .offer_draw(bearer(
                    pb::OfferDrawRequest {
                        match_id: t.id.clone(),
                        board: A,
                        side: WHITE,
                        ..Default::default()
                    },
                    tok,
                ))
                .await
                .unwrap_err();
            assert_eq!(status.code(), Code::PermissionDenied);
        }
        assert_eq!(get(&mut c, &t.id).await, before, "nothing applied");
        // The right token works.
        c.make_move(request(Some(t.token(A, WHITE)))).await.unwrap();
    }
    s.stop().await;
}

/// CreateMatch is idempotent (same request id, or same id and content: the same match and
/// tokens), a taken id with other content is ALREADY_EXISTS, server ids are random, and
/// creation needs the platform credential.
#[tokio::test]
async fn creation_is_idempotent_and_needs_the_platform() {
    let s = start().await;
    let mut c = s.client();
    let mut req = creation(Variant::Glinski, "", &[]);
    req.request_id = "pairing-17".into();
    let first = create_from(&mut c, req.clone()).await;
    let again = create_from(&mut c, req.clone()).await;
    assert!(first.created.created);
    assert!(!again.created.created);
    assert_eq!(first.id, again.id);
    assert_eq!(first.created.seats, again.created.seats, "the same tokens");
    // The retry finds the match as it stands.
    play_all(&mut c, &first, &["f5f6"]).await;
    let third = create_from(&mut c, req.clone()).await;
    assert_eq!(third.created.state.unwrap().boards[0].ply, 1);
    // The same request id with other content is another creation: refused.
    let mut changed = req.clone();
    changed.players = vec!["ann".into(), "zoe".into()];
    let status = c.create_match(changed).await.unwrap_err();
    assert_eq!(status.code(), Code::AlreadyExists);
    // A chosen id: the same request again is the same match; the same content without the
    // request id is not a retry, and nobody gets the tokens of an existing match that way.
    let mut named = creation(Variant::Chess, "", &[]);
    named.match_id = "table-9".into();
    named.request_id = "pairing-18".into();
    let a = create_from(&mut c, named.clone()).await;
    let b = create_from(&mut c, named.clone()).await;
    assert_eq!(
        (a.id.as_str(), &a.created.seats),
        ("table-9", &b.created.seats)
    );
    let mut anonymous = named.clone();
    anonymous.request_id.clear();
    let mut later = named.clone();
    later.time_control = "60+0".into();
    for req in [anonymous, later] {
        assert_eq!(
            c.create_match(req).await.unwrap_err().code(),
            Code::AlreadyExists
        );
    }
    // Server-drawn ids: 128 random bits.
    let x = create(&mut c, Variant::Chess, "", &[]).await;
    let y = create(&mut c, Variant::Chess, "", &[]).await;
    assert_ne!(x.id, y.id);
    assert_eq!(x.id.len(), 33);
    assert!(x.id[1..].chars().all(|ch| ch.is_ascii_hexdigit()));
    s.stop().await;

    // With a platform token configured, creation needs it (in x-api-key: it is a key).
    let keys = KeySet::platform_token("platform-secret-token").unwrap();
    let s = start_with(AccessPolicy::with_keys(keys)).await;
    let mut c = s.client();
    let status = c
        .create_match(creation(Variant::Chess, "", &[]))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    let status = c
        .create_match(keyed(
            creation(Variant::Chess, "", &[]),
            "not-the-platform-token",
        ))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    let r = c
        .create_match(keyed(
            creation(Variant::Chess, "", &[]),
            "platform-secret-token",
        ))
        .await
        .unwrap()
        .into_inner();
    // A seat token is no platform credential, in either entry.
    for request in [
        bearer(creation(Variant::Chess, "", &[]), &r.seats[0].token),
        keyed(creation(Variant::Chess, "", &[]), &r.seats[0].token),
    ] {
        let status = c.create_match(request).await.unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated);
    }
    // The platform token in the seat entry is no key either.
    let status = c
        .create_match(bearer(
            creation(Variant::Chess, "", &[]),
            "platform-secret-token",
        ))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    s.stop().await;
}

/// Malformed creations and requests: INVALID_ARGUMENT naming the field; NOT_FOUND for an
/// unknown match.
#[tokio::test]
async fn bad_requests_name_the_field() {
    let s = start().await;
    let mut c = s.client();
    let base = creation(Variant::Chess, "", &[]);
    let cases: Vec<(pb::CreateMatchRequest, &str)> = vec![
        (
            pb::CreateMatchRequest {
                variant: 0,
                ..base.clone()
            },
            "variant",
        ),
        (
            pb::CreateMatchRequest {
                variant: 99,
                ..base.clone()
            },
            "variant",
        ),
        (
            pb::CreateMatchRequest {
                players: vec!["a".into()],
                ..base.clone()
            },
            "players",
        ),
        (
            pb::CreateMatchRequest {
                players: vec!["a".into(), "a".into()],
                ..base.clone()
            },
            "players",
        ),
        (
            pb::CreateMatchRequest {
                players: vec!["a\nb".into(), "c".into()],
                ..base.clone()
            },
            "players",
        ),
        (
            pb::CreateMatchRequest {
                players: vec!["x".repeat(200), "c".into()],
                ..base.clone()
            },
            "players",
        ),
        (
            pb::CreateMatchRequest {
                time_control: "3+\u{1}2".into(),
                ..base.clone()
            },
            "time_control",
        ),
        (
            pb::CreateMatchRequest {
                start: "8/8 w".into(),
                ..base.clone()
            },
            "start.text",
        ),
        (
            pb::CreateMatchRequest {
                start: "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1".into(),
                ..base.clone()
            },
            "start.text",
        ),
        (
            pb::CreateMatchRequest {
                rules: vec![common::RuleOption {
                    name: "stalemate".into(),
                    value: "loses".into(),
                }],
                ..base.clone()
            },
            "start.rules",
        ),
        (
            pb::CreateMatchRequest {
                match_id: "a b".into(),
                ..base.clone()
            },
            "match_id",
        ),
        (
            pb::CreateMatchRequest {
                request_id: "r".repeat(200),
                ..base.clone()
            },
            "request_id",
        ),
    ];
    for (req, expected) in cases {
        let status = c.create_match(req.clone()).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{req:?}: {status:?}");
        assert_eq!(field(&status), expected, "{req:?}");
    }
    let t = create(&mut c, Variant::Chess, "", &[]).await;
    for (board, side, expected) in [(B, WHITE, "board"), (A, 0, "side"), (7, WHITE, "board")] {
        let status = c
            .make_move(bearer(
                pb::MakeMoveRequest {
                    match_id: t.id.clone(),
                    board,
                    side,
                    r#move: "e4".into(),
                    ..Default::default()
                },
                t.token(A, WHITE),
            ))
            .await
            .unwrap_err();
        assert_eq!(field(&status), expected, "{status:?}");
    }
    let status = c
        .get_match(pb::GetMatchRequest {
            match_id: "nope".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::NotFound);
    let status = c
        .get_match(pb::GetMatchRequest {
            match_id: "x".repeat(100),
        })
        .await
        .unwrap_err();
    assert_eq!(field(&status), "match_id");
    s.stop().await;
}

/// A small deterministic generator for the random games below (no seeding from the clock: a
/// failure replays).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % n
    }
}

/// Chess960 matches through gRPC, each played to its automatic end: castling whenever it is
/// legal (written as the king taking its rook), else a capture, else any move, chosen by the
/// client from the position the service reports. Start positions: drawn at random by the
/// service (a retry finds the same match and start), and given by number.
async fn chess960_matches(s: &Server) -> usize {
    use arbiter_core::{AnyPosition, Locale, Notation, Position, Variant as V};
    let mut c = s.client();
    // The store connects in the background: wait until it answers.
    for _ in 0..200 {
        let probe = c
            .get_match(pb::GetMatchRequest {
                match_id: "none".into(),
            })
            .await;
        match probe {
            Err(e) if e.code() == Code::Unavailable => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            _ => break,
        }
    }
    let mut castled = 0;
    let mut rng = Lcg(960);
    // Two drawn starts, three by number, and two with nothing between kings and rooks (each side
    // castles at once there, so castling is certain to be played through the service).
    let starts = [
        "",
        "",
        "0",
        "959",
        "518",
        "rk4r1/pppppppp/8/8/8/8/PPPPPPPP/RK4R1 w KQkq - 0 1",
        "1r4kr/pppppppp/8/8/8/8/PPPPPPPP/1R4KR w HBhb - 0 1",
    ];
    for (i, start) in starts.into_iter().enumerate() {
        let mut req = creation(Variant::Chess960, start, &[]);
        req.request_id = format!("chess960-{i}");
        let t = create_from(&mut c, req.clone()).await;
        let again = c.create_match(req).await.unwrap().into_inner();
        assert!(!again.created);
        let mut state = get(&mut c, &t.id).await;
        assert_eq!(state.variant, Variant::Chess960 as i32);
        assert_eq!(
            again.state.unwrap().start,
            state.start,
            "a retry keeps the drawn start"
        );
        let first = AnyPosition::from_text(V::Chess960, &state.start).unwrap();
        let number = match &first {
            AnyPosition::Chess(p) => p.chess960_number(),
            other => panic!("{other:?}"),
        };
        if start.len() <= 3 {
            let n = number.expect("a start position");
            assert!(start.is_empty() || n.to_string() == start, "{start}: {n}");
        }
        let mut game = arbiter_core::Game::new(first);
        while state.outcome.is_none() {
            let pos = game.position().clone();
            let b = &state.boards[0];
            assert_eq!(b.position, pos.to_text(), "the service's position");
            let moves = pos.legal_moves();
            let pick = |f: &dyn Fn(&arbiter_core::AnyMove) -> bool| {
                moves.iter().copied().filter(|m| f(m)).collect::<Vec<_>>()
            };
            let castles = pick(&|m| pos.move_to_san(*m, Default::default()).starts_with("O-O"));
            // Clear the back rank first (pieces other than king and rooks leave it), so that
            // castling comes often; then captures, to end the game.
            let back_rank = if pos.turn() == arbiter_core::Color::White {
                "1"
            } else {
                "8"
            };
            let develop = pick(&|m| {
                let uci = pos.move_to_uci(*m);
                let san = pos.move_to_san(*m, Default::default());
                uci[1..2] == *back_rank && !san.starts_with(['K', 'R', 'O'])
            });
            let captures = pick(&|m| pos.is_capture(*m));
            let options = [castles.clone(), develop, captures, moves.clone()]
                .into_iter()
                .find(|o| !o.is_empty())
                .expect("the game goes on, so there is a move");
            let m = options[rng.below(options.len())];
            let uci = pos.move_to_uci(m);
            state = timeless(
                make_move(&mut c, &t, A, b.side_to_move, &uci, b.ply)
                    .await
                    .unwrap_or_else(|e| panic!("{uci} in {}: {e:?}", pos.to_text()))
                    .state
                    .unwrap(),
            );
            let last = state.boards[0].last_move.clone().unwrap();
            assert_eq!(last.uci, uci);
            if !castles.is_empty() {
                assert!(last.san.starts_with("O-O"), "{last:?}");
                castled += 1;
            }
            game.play_text(&uci, Notation::Uci, Locale::English)
                .unwrap();
            assert!(state.boards[0].ply < 2000, "runaway game");
        }
        // The service ended the game where the rules do, with the same result.
        let (score, _) = outcome(&state);
        let core = game.outcome().expect("the core sees the end too");
        assert_eq!(score, core.score.to_string());
    }
    castled
}

#[tokio::test]
async fn chess960_matches_play_to_the_end_in_process() {
    let s = start().await;
    let castled = chess960_matches(&s).await;
    assert!(castled >= 4, "castled {castled} times");
}

#[tokio::test]
async fn chess960_matches_play_to_the_end_on_redis() {
    let redis = arbiter_testkit::redis().await;
    let store = arbiter_matches::StoreConfig::Redis(redis.secure("arbiter-matches"));
    let s = TestServer::start(move |listener, shutdown| {
        arbiter_matches::serve(
            listener,
            ServeConfig::default(),
            MatchesConfig {
                store,
                ..MatchesConfig::default()
            },
            AccessPolicy::development(),
            shutdown,
        )
    })
    .await;
    let castled = chess960_matches(&s).await;
    assert!(castled >= 4, "castled {castled} times");
}
