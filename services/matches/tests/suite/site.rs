//! What a playing site's players do beside moving, over real gRPC, in process and on Redis:
//! aborting before both sides have moved (also racing the opponent's first reply), declining
//! draw offers (also offered and declined again and again), and exporting matches as PGN and
//! BPGN with their clocks, checked by reading the text back and replaying it.

use crate::grpc::{
    creation, field, get, offer, outcome, play_all, reason, resign, start, watch_all,
};
use crate::support;

use arbiter_core::bughouse::read_bpgn;
use arbiter_core::pgn::read_games;
use arbiter_core::{Locale, Variant as V};
use arbiter_kit::ServeConfig;
use arbiter_kit::access::AccessPolicy;
use arbiter_matches::MatchesConfig;
use arbiter_proto::common::v1::Variant;
use arbiter_proto::matches::v1::{
    self as pb, match_service_client::MatchServiceClient, watch_match_response::Event,
};
use support::*;
use tonic::transport::Channel;
use tonic::{Code, Status};

async fn abort(
    c: &mut MatchServiceClient<Channel>,
    t: &Table,
    board: i32,
    side: i32,
    request_id: &str,
) -> Result<pb::AbortMatchResponse, Status> {
    c.abort_match(bearer(
        pb::AbortMatchRequest {
            match_id: t.id.clone(),
            board,
            side,
            request_id: request_id.into(),
        },
        t.token(board, side),
    ))
    .await
    .map(tonic::Response::into_inner)
}

async fn decline(
    c: &mut MatchServiceClient<Channel>,
    t: &Table,
    board: i32,
    side: i32,
    request_id: &str,
) -> Result<pb::DeclineDrawResponse, Status> {
    c.decline_draw(bearer(
        pb::DeclineDrawRequest {
            match_id: t.id.clone(),
            board,
            side,
            request_id: request_id.into(),
        },
        t.token(board, side),
    ))
    .await
    .map(tonic::Response::into_inner)
}

async fn export(c: &mut MatchServiceClient<Channel>, id: &str) -> pb::ExportMatchResponse {
    c.export_match(pb::ExportMatchRequest {
        match_id: id.into(),
    })
    .await
    .unwrap()
    .into_inner()
}

fn refusal(r: Result<impl std::fmt::Debug, Status>) -> (Code, String) {
    let e = r.expect_err("refused");
    (e.code(), reason(&e))
}

fn aborted(state: &pb::MatchState) -> bool {
    let o = state.outcome.as_ref().and_then(|o| o.outcome.clone());
    o.is_some_and(|o| o.reason_name == "aborted" && o.score.is_none())
}

/// A seat aborts before both sides have moved, never after; in bughouse while no board has
/// seen both its sides move. Retries answer the abort again; the abort races the reply.
async fn aborts(s: &Server) {
    let mut c = s.client();
    // Before any move, by the side not to move.
    let t = create_from(&mut c, creation(Variant::Chess, "", &[])).await;
    let r = abort(&mut c, &t, A, BLACK, "abort-1").await.unwrap();
    assert!(!r.duplicate);
    let state = r.state.unwrap();
    assert!(aborted(&state), "{state:?}");
    // The retry is answered as done; the id for another request is refused.
    let again = abort(&mut c, &t, A, BLACK, "abort-1").await.unwrap();
    assert!(again.duplicate);
    let reused = c
        .resign(bearer(
            pb::ResignRequest {
                match_id: t.id.clone(),
                board: A,
                side: BLACK,
                request_id: "abort-1".into(),
            },
            t.token(A, BLACK),
        ))
        .await;
    assert_eq!(reused.unwrap_err().code(), Code::AlreadyExists);
    assert_eq!(
        refusal(abort(&mut c, &t, A, WHITE, "").await),
        (Code::FailedPrecondition, "MATCH_OVER".into())
    );

    // After White's first move White may still abort; after both have moved nobody may.
    let t = create_from(&mut c, creation(Variant::Chess, "", &[])).await;
    play_all(&mut c, &t, &["e4"]).await;
    assert!(aborted(
        &abort(&mut c, &t, A, WHITE, "")
            .await
            .unwrap()
            .state
            .unwrap()
    ));
    let t = create_from(&mut c, creation(Variant::Glinski, "", &[])).await;
    let before = play_all(&mut c, &t, &["f5f6", "e7e6"]).await;
    assert_eq!(
        refusal(abort(&mut c, &t, A, WHITE, "late").await),
        (Code::FailedPrecondition, "NOT_ABORTABLE".into())
    );
    assert_eq!(
        get(&mut c, &t.id).await,
        before,
        "a refusal changes nothing"
    );
    // Another seat's token.
    let wrong = c
        .abort_match(bearer(
            pb::AbortMatchRequest {
                match_id: t.id.clone(),
                board: A,
                side: WHITE,
                ..Default::default()
            },
            t.token(A, BLACK),
        ))
        .await;
    assert_eq!(wrong.unwrap_err().code(), Code::PermissionDenied);

    // Bughouse: a board where one side moved does not stop the abort; one where both did does.
    let t = create_from(&mut c, creation(Variant::Bughouse, "", &[])).await;
    make_move(&mut c, &t, A, WHITE, "e4", 0).await.unwrap();
    let r = abort(&mut c, &t, B, BLACK, "").await.unwrap();
    assert!(aborted(r.state.as_ref().unwrap()));
    let t = create_from(&mut c, creation(Variant::Bughouse, "", &[])).await;
    make_move(&mut c, &t, B, WHITE, "d4", 0).await.unwrap();
    make_move(&mut c, &t, B, BLACK, "d5", 1).await.unwrap();
    assert_eq!(
        refusal(abort(&mut c, &t, A, WHITE, "").await),
        (Code::FailedPrecondition, "NOT_ABORTABLE".into())
    );

    // The abort races Black's first reply: exactly one of them lands.
    for i in 0..16 {
        let t = create_from(&mut c, creation(Variant::Chess, "", &[])).await;
        play_all(&mut c, &t, &["e4"]).await;
        let (mut c1, mut c2) = (s.client(), s.client());
        let rid = format!("race-{i}");
        let (moved, quit) = tokio::join!(
            make_move(&mut c1, &t, A, BLACK, "e5", 1),
            abort(&mut c2, &t, A, WHITE, &rid),
        );
        let state = get(&mut c, &t.id).await;
        match (moved, quit) {
            (Ok(_), Err(e)) => {
                assert_eq!(reason(&e), "NOT_ABORTABLE");
                assert!(state.outcome.is_none());
                assert_eq!(state.boards[0].ply, 2);
            }
            (Err(e), Ok(_)) => {
                assert_eq!(reason(&e), "MATCH_OVER");
                assert!(aborted(&state));
                assert_eq!(state.boards[0].ply, 1);
            }
            other => panic!("both or neither landed: {other:?}"),
        }
    }
}

/// A side declines the other side's standing offer, never its own or a missing one; the same
/// pair offered and declined many times keeps the match consistent, one event each.
async fn declines(s: &Server) {
    let mut c = s.client();
    let t = create_from(&mut c, creation(Variant::Crazyhouse, "", &[])).await;
    assert_eq!(
        refusal(decline(&mut c, &t, A, BLACK, "").await),
        (Code::FailedPrecondition, "NO_DRAW_OFFER".into())
    );
    offer(&mut c, &t, A, WHITE).await.unwrap();
    assert_eq!(
        refusal(decline(&mut c, &t, A, WHITE, "").await),
        (Code::FailedPrecondition, "NO_DRAW_OFFER".into()),
        "a side cannot decline its own offer"
    );
    let r = decline(&mut c, &t, A, BLACK, "no-1").await.unwrap();
    assert!(!r.duplicate);
    assert!(r.state.unwrap().draw_offers.is_empty());
    let again = decline(&mut c, &t, A, BLACK, "no-1").await.unwrap();
    assert!(again.duplicate, "a retry is answered as done");
    // Offered and declined again and again: every round is one offer and one decline.
    const ROUNDS: usize = 40;
    for i in 0..ROUNDS {
        offer(&mut c, &t, A, WHITE).await.unwrap();
        decline(&mut c, &t, A, BLACK, &format!("spam-{i}"))
            .await
            .unwrap();
    }
    // A standing offer is still accepted by offering back.
    offer(&mut c, &t, A, BLACK).await.unwrap();
    let state = offer(&mut c, &t, A, WHITE).await.unwrap();
    assert_eq!(
        outcome(&state),
        ("1/2-1/2".to_owned(), "agreement".to_owned())
    );
    let events = watch_all(&mut c, &t.id).await;
    let declined = events
        .iter()
        .filter(|e| matches!(e.event, Some(Event::DrawDeclined(WHITE))))
        .count();
    let offers = events
        .iter()
        .filter(|e| matches!(e.event, Some(Event::DrawOffer(_))))
        .count();
    assert_eq!((declined, offers), (ROUNDS + 1, ROUNDS + 3));

    // Bughouse: the other team declines (board B's White is team 2; its Black is team 1).
    let t = create_from(&mut c, creation(Variant::Bughouse, "", &[])).await;
    offer(&mut c, &t, A, WHITE).await.unwrap();
    assert_eq!(
        refusal(decline(&mut c, &t, B, BLACK, "").await),
        (Code::FailedPrecondition, "NO_DRAW_OFFER".into()),
        "a partner cannot decline the team's own offer"
    );
    let state = decline(&mut c, &t, B, WHITE, "")
        .await
        .unwrap()
        .state
        .unwrap();
    assert!(state.draw_offers.is_empty());
    resign(&mut c, &t, A, WHITE).await.unwrap();
}

/// The seconds of a `[%clk H:MM:SS(.t)]` comment.
fn clock_secs(comment: &str) -> Option<f64> {
    let body = comment.strip_prefix("[%clk ")?.strip_suffix(']')?;
    let mut parts = body.split(':');
    let (h, m, s) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || m.len() != 2 || !s.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    Some(h.parse::<f64>().ok()? * 3600.0 + m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?)
}

/// PGN with clocks for a timed single-board game, read back and replayed; a live game's
/// export; Chess960's start tags; an aborted game; a bughouse match as BPGN, replayed.
async fn exports(s: &Server) {
    let mut c = s.client();
    let mut req = creation(Variant::Chess, "", &[]);
    req.players = vec!["ann \"the rook\"".into(), "bob".into()];
    let t = create_from(&mut c, req).await;
    play_all(&mut c, &t, &["e4", "e5", "Nf3"]).await;
    // Live: the moves so far, no result.
    let live = export(&mut c, &t.id).await;
    assert!(!live.bpgn);
    let game = read_games(&live.pgn).unwrap().remove(0);
    assert_eq!(game.result, "*");
    assert_eq!(game.tag("Termination"), Some("unterminated"));
    assert_eq!(game.moves.len(), 3);
    play_all(&mut c, &t, &["Nc6", "Bb5"]).await;
    resign(&mut c, &t, A, BLACK).await.unwrap();
    let done = export(&mut c, &t.id).await;
    assert_eq!(done.last_seq, get(&mut c, &t.id).await.last_seq);
    let mut game = read_games(&done.pgn).unwrap().remove(0);
    assert_eq!(game.tag("White"), Some("ann \"the rook\""), "{}", done.pgn);
    assert_eq!(game.tag("Black"), Some("bob"));
    assert_eq!(game.tag("Result"), Some("1-0"));
    // The match's "180+2" is 180 minutes and 2 s a move: PGN counts seconds.
    assert_eq!(game.tag("TimeControl"), Some("10800+2"));
    assert_eq!(game.tag("Termination"), Some("normal"));
    assert_eq!(game.tag("EndReason"), Some("resignation"));
    assert!(
        game.tag("Date")
            .is_some_and(|d| d.len() == 10 && d.starts_with("20"))
    );
    let sans: Vec<&str> = game.moves.iter().map(|m| m.san.as_str()).collect();
    assert_eq!(sans, ["e4", "e5", "Nf3", "Nc6", "Bb5"]);
    for m in &game.moves {
        // Each move's clock: at most the base time plus the increments, and nearly all of it.
        let clk = m.comments.concat();
        let secs = clock_secs(&clk).unwrap_or_else(|| panic!("no clock in {clk:?}"));
        assert!((10_700.0..=10_812.0).contains(&secs), "{clk}");
    }
    game.validate(Locale::English, Locale::English).unwrap();

    // Chess960: the start is always named; an untimed game has no clocks.
    let mut req = creation(Variant::Chess960, "100", &[]);
    req.time_control = String::new();
    let t = create_from(&mut c, req).await;
    let state = get(&mut c, &t.id).await;
    let game = read_games(&export(&mut c, &t.id).await.pgn)
        .unwrap()
        .remove(0);
    assert_eq!(game.tag("Variant"), Some("Chess960"));
    assert_eq!(game.tag("SetUp"), Some("1"));
    assert_eq!(game.tag("FEN"), Some(state.start.as_str()));
    assert_eq!(game.tag("TimeControl"), Some("-"));

    // Aborted: no result.
    let t = create_from(&mut c, creation(Variant::Byzantine, "", &[])).await;
    abort(&mut c, &t, A, WHITE, "").await.unwrap();
    let game = read_games(&export(&mut c, &t.id).await.pgn)
        .unwrap()
        .remove(0);
    assert_eq!(
        (game.result.as_str(), game.tag("Termination")),
        ("*", Some("abandoned"))
    );
    assert_eq!(game.tag("Variant"), Some(V::Byzantine.pgn_name()));

    // Bughouse: both boards in the order played, each move with its clock.
    let t = create_from(&mut c, creation(Variant::Bughouse, "", &[])).await;
    let moves = [
        (A, WHITE, "e4", 0),
        (B, WHITE, "d4", 0),
        (A, BLACK, "d5", 1),
        (A, WHITE, "exd5", 2),
        (B, BLACK, "P@e6", 1),
    ];
    for (board, side, mv, ply) in moves {
        make_move(&mut c, &t, board, side, mv, ply)
            .await
            .unwrap_or_else(|e| panic!("{mv}: {e:?}"));
    }
    resign(&mut c, &t, B, WHITE).await.unwrap();
    let out = export(&mut c, &t.id).await;
    assert!(out.bpgn);
    let mut game = read_bpgn(&out.pgn).unwrap().remove(0);
    assert_eq!(game.tag("WhiteA"), Some("ann"));
    assert_eq!(game.tag("BlackB"), Some("dee"));
    assert_eq!(game.result.as_deref(), Some("1-0"));
    assert_eq!(game.moves.len(), 5);
    assert!(game.moves.iter().all(|m| m.clock.is_some()), "{}", out.pgn);
    game.validate(Locale::English).unwrap();

    // Unknown and malformed ids.
    let missing = c
        .export_match(pb::ExportMatchRequest {
            match_id: "never-created".into(),
        })
        .await;
    assert_eq!(missing.unwrap_err().code(), Code::NotFound);
    let bad = c
        .export_match(pb::ExportMatchRequest {
            match_id: "x".repeat(10_000),
        })
        .await;
    assert_eq!(bad.unwrap_err().code(), Code::InvalidArgument);
}

/// Plays `moves` (board, side, move) on a bughouse match, each at its board's current ply.
async fn play_bughouse(
    c: &mut MatchServiceClient<Channel>,
    t: &Table,
    moves: &[(i32, i32, &str)],
) -> pb::MatchState {
    let mut state = get(c, &t.id).await;
    for &(board, side, mv) in moves {
        let ply = state.boards[(board - A) as usize].ply;
        state = make_move(c, t, board, side, mv, ply)
            .await
            .unwrap_or_else(|e| panic!("{mv}: {e:?}"))
            .state
            .unwrap();
    }
    state
}

/// The bughouse seed's options: an illegal move that loses, and threefold repetition counted
/// on the board alone. Defaults unchanged.
async fn bughouse_options(s: &Server) {
    let mut c = s.client();
    let loses = [("illegal_move", "loses")];
    let t = create_from(&mut c, creation(Variant::Bughouse, "", &loses)).await;
    let before = play_bughouse(&mut c, &t, &[(A, WHITE, "e4"), (B, WHITE, "d4")]).await;
    assert_eq!(before.rules.len(), 1, "{:?}", before.rules);
    // Still refused, changing nothing: unreadable text, a stale ply, another seat's turn.
    let refused = [
        (A, BLACK, "zz9", 1, Code::InvalidArgument),
        (A, BLACK, "e7e5", 0, Code::FailedPrecondition),
        (A, WHITE, "d2d4", 1, Code::FailedPrecondition),
    ];
    for (board, side, mv, ply, code) in refused {
        let e = make_move(&mut c, &t, board, side, mv, ply)
            .await
            .unwrap_err();
        assert_eq!(e.code(), code, "{mv}: {e:?}");
    }
    assert_eq!(get(&mut c, &t.id).await.last_seq, before.last_seq);
    // A well-formed illegal move (a drop of a piece not held) loses for the mover's team.
    let lost = c
        .make_move(bearer(
            pb::MakeMoveRequest {
                match_id: t.id.clone(),
                board: B,
                side: BLACK,
                r#move: "Q@e4".into(),
                expected_ply: 1,
                request_id: "dee-1".into(),
                ..Default::default()
            },
            t.token(B, BLACK),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        (lost.code(), reason(&lost)),
        (Code::FailedPrecondition, "ILLEGAL_MOVE_LOST".into())
    );
    let state = get(&mut c, &t.id).await;
    // Black on B is team 1: team 2 wins.
    assert_eq!(
        outcome(&state),
        ("0-1".to_owned(), "illegal-move".to_owned())
    );
    let retried = c
        .make_move(bearer(
            pb::MakeMoveRequest {
                match_id: t.id.clone(),
                board: B,
                side: BLACK,
                r#move: "Q@e4".into(),
                expected_ply: 1,
                request_id: "dee-1".into(),
                ..Default::default()
            },
            t.token(B, BLACK),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        reason(&retried),
        "ILLEGAL_MOVE_LOST",
        "a retry gets the same answer"
    );

    // The default: refused, the match goes on.
    let t = create_from(&mut c, creation(Variant::Bughouse, "", &[])).await;
    let e = make_move(&mut c, &t, A, WHITE, "e2e5", 0)
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), field(&e)),
        (Code::InvalidArgument, "move".into())
    );
    assert!(get(&mut c, &t.id).await.outcome.is_none());
    // No repetition rule by default.
    play_bughouse(&mut c, &t, &[(A, WHITE, "Nf3"), (A, BLACK, "Nf6")]).await;
    let claim = pb::ClaimDrawRequest {
        match_id: t.id.clone(),
        board: A,
        side: WHITE,
        claim: arbiter_proto::common::v1::DrawClaim::ThreefoldRepetition as i32,
        ..Default::default()
    };
    let e = c
        .claim_draw(bearer(claim.clone(), t.token(A, WHITE)))
        .await
        .unwrap_err();
    assert_eq!(reason(&e), "NOT_CLAIMABLE");

    // Bad options name the field.
    for rules in [[("illegal_move", "sometimes")], [("stalemate", "wins")]] {
        let e = c
            .create_match(creation(Variant::Bughouse, "", &rules))
            .await
            .unwrap_err();
        assert_eq!(
            (e.code(), field(&e)),
            (Code::InvalidArgument, "start.rules".into())
        );
    }

    // Threefold: the start position of board A a third time, with Black's reserve changed
    // between by a capture on board B: reserves do not count.
    let t = create_from(
        &mut c,
        creation(Variant::Bughouse, "", &[("repetition", "threefold")]),
    )
    .await;
    let knights = [
        (A, WHITE, "Nf3"),
        (A, BLACK, "Nf6"),
        (A, WHITE, "Ng1"),
        (A, BLACK, "Ng8"),
    ];
    play_bughouse(&mut c, &t, &knights).await;
    let state = play_bughouse(
        &mut c,
        &t,
        &[(B, WHITE, "e4"), (B, BLACK, "d5"), (B, WHITE, "exd5")],
    )
    .await;
    assert_eq!(state.boards[0].black_reserve, "p", "{:?}", state.boards[0]);
    let e = c
        .claim_draw(bearer(
            pb::ClaimDrawRequest {
                match_id: t.id.clone(),
                ..claim.clone()
            },
            t.token(A, WHITE),
        ))
        .await
        .unwrap_err();
    assert_eq!(reason(&e), "NOT_CLAIMABLE", "twice is not enough");
    let state = play_bughouse(&mut c, &t, &knights).await;
    assert_eq!(
        state.boards[0].claimable_draws,
        vec![arbiter_proto::common::v1::DrawClaim::ThreefoldRepetition as i32]
    );
    let drawn = c
        .claim_draw(bearer(
            pb::ClaimDrawRequest {
                match_id: t.id.clone(),
                side: BLACK,
                ..claim
            },
            t.token(A, BLACK),
        ))
        .await
        .unwrap()
        .into_inner()
        .state
        .unwrap();
    assert_eq!(
        outcome(&drawn),
        ("1/2-1/2".to_owned(), "threefold-repetition".to_owned())
    );
}

const DAY_MS: u64 = 86_400_000;

/// A correspondence game (`3 days` a move): its speed, a first-move window of the whole
/// allowance, every turn starting at 3 days, the PGN time control.
async fn correspondence(s: &Server) {
    let mut c = s.client();
    let mut req = creation(Variant::Chess, "", &[]);
    req.time_control = "3 Days".into();
    let t = create_from(&mut c, req).await;
    let state = get(&mut c, &t.id).await;
    assert_eq!(
        (state.time_control.as_str(), state.speed.as_str()),
        ("3 days", "correspondence")
    );
    let clock = state.boards[0].clock.unwrap();
    assert_eq!(clock.phase, pb::ClockPhase::Opening as i32);
    let window = clock.deadline_ms - state.server_time_ms;
    assert!(
        window > 3 * DAY_MS - 60_000,
        "first-move window {window} ms"
    );
    let state = play_all(&mut c, &t, &["e4", "e5", "Nf3"]).await;
    let clock = state.boards[0].clock.unwrap();
    assert_eq!((clock.white_ms, clock.black_ms), (3 * DAY_MS, 3 * DAY_MS));
    assert_eq!(clock.phase, pb::ClockPhase::Running as i32);
    let game = read_games(&export(&mut c, &t.id).await.pgn)
        .unwrap()
        .remove(0);
    assert_eq!(game.tag("TimeControl"), Some("1/259200"));
    assert!(
        game.moves[2]
            .comments
            .concat()
            .starts_with("[%clk 72:00:00")
    );
    // Out of range, or the old notation's look-alike, is refused or read as before.
    let mut req = creation(Variant::Chess, "", &[]);
    req.time_control = "15 days".into();
    let e = c.create_match(req).await.unwrap_err();
    assert_eq!(
        (e.code(), field(&e)),
        (Code::InvalidArgument, "time_control".into())
    );
    let mut req = creation(Variant::Chess, "", &[]);
    req.time_control = "5d3".into();
    let t = create_from(&mut c, req).await;
    assert_eq!(get(&mut c, &t.id).await.speed, "blitz");
}

async fn post(
    c: &mut MatchServiceClient<Channel>,
    t: &Table,
    (board, side): (i32, i32),
    channel: pb::ChatChannel,
    text: &str,
    request_id: &str,
) -> Result<pb::PostChatResponse, Status> {
    c.post_chat(bearer(
        pb::PostChatRequest {
            match_id: t.id.clone(),
            board,
            side,
            channel: channel as i32,
            text: text.into(),
            request_id: request_id.into(),
        },
        t.token(board, side),
    ))
    .await
    .map(tonic::Response::into_inner)
}

/// The first `n` entries of a seat's chat stream after `after`.
async fn seat_chat(
    c: &mut MatchServiceClient<Channel>,
    t: &Table,
    (board, side): (i32, i32),
    after: u64,
    n: usize,
) -> Vec<pb::WatchChatResponse> {
    let mut stream = c
        .watch_chat(bearer(
            pb::WatchChatRequest {
                match_id: t.id.clone(),
                board,
                side,
                after_id: after,
            },
            t.token(board, side),
        ))
        .await
        .unwrap()
        .into_inner();
    let mut seen = Vec::new();
    while seen.len() < n {
        let next = tokio::time::timeout(std::time::Duration::from_secs(20), stream.message());
        seen.push(
            next.await
                .expect("an entry in time")
                .unwrap()
                .expect("open"),
        );
    }
    seen
}

fn text_of(e: &pb::WatchChatResponse) -> String {
    match &e.entry {
        Some(pb::watch_chat_response::Entry::Message(m)) => m.text.clone(),
        other => format!("{other:?}"),
    }
}

/// Chat: the players' channel, a bughouse team's own, the spectators' channel the platform
/// posts to, deletion, retries, bad text, and flooding held to its limits.
async fn chats(s: &Server) {
    use pb::ChatChannel::{Players, Spectators, Team};
    let mut c = s.client();
    let t = create_from(&mut c, creation(Variant::Chess, "", &[])).await;
    let first = post(&mut c, &t, (A, WHITE), Players, "good luck!", "hi")
        .await
        .unwrap();
    let m = first.message.unwrap();
    assert_eq!(
        (m.id, m.author.as_str(), m.channel),
        (1, "ann", Players as i32)
    );
    assert_eq!(m.seat.unwrap().side, WHITE);
    let again = post(&mut c, &t, (A, WHITE), Players, "good luck!", "hi")
        .await
        .unwrap();
    assert!(again.duplicate);
    assert_eq!(again.message.unwrap().id, 1);
    let reused = post(&mut c, &t, (A, WHITE), Players, "other", "hi").await;
    assert_eq!(reused.unwrap_err().code(), Code::AlreadyExists);
    let team = post(&mut c, &t, (A, BLACK), Team, "psst", "")
        .await
        .unwrap_err();
    assert_eq!(
        (team.code(), field(&team)),
        (Code::InvalidArgument, "channel".into())
    );
    for bad in ["", "   ", "a\nb", "\u{7}", &"x".repeat(501)] {
        let e = post(&mut c, &t, (A, BLACK), Players, bad, "")
            .await
            .unwrap_err();
        assert_eq!(
            (e.code(), field(&e)),
            (Code::InvalidArgument, "text".into()),
            "{bad:?}"
        );
    }
    let e = c
        .post_chat(bearer(
            pb::PostChatRequest {
                match_id: t.id.clone(),
                board: A,
                side: WHITE,
                text: "me".into(),
                ..Default::default()
            },
            t.token(A, BLACK),
        ))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    // The platform posts for spectators.
    let spect = c
        .post_spectator_chat(pb::PostSpectatorChatRequest {
            match_id: t.id.clone(),
            author: "host".into(),
            text: "welcome, spectators".into(),
            request_id: "w1".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .message
        .unwrap();
    assert_eq!((spect.id, spect.channel), (2, Spectators as i32));
    assert!(spect.seat.is_none());
    // Flooding: a burst passes its limit and is refused, without touching the other seat.
    let mut refused = 0;
    for i in 0..12 {
        match post(&mut c, &t, (A, WHITE), Players, &format!("spam {i}"), "").await {
            Ok(_) => {}
            Err(e) => {
                assert_eq!(
                    (e.code(), field(&e)),
                    (Code::ResourceExhausted, "text".into())
                );
                refused += 1;
            }
        }
    }
    assert!(refused >= 1, "a burst of 13 is limited");
    post(&mut c, &t, (A, BLACK), Players, "gg", "")
        .await
        .unwrap();
    // Bob reads the players' channel: ann's messages and his, not the spectators'.
    let accepted = 1 + (12 - refused) + 1;
    let seen = seat_chat(&mut c, &t, (A, BLACK), 0, accepted).await;
    assert_eq!(text_of(&seen[0]), "good luck!");
    assert_eq!(text_of(&seen[accepted - 1]), "gg");
    assert!(seen.iter().all(|e| text_of(e) != "welcome, spectators"));
    // The platform deletes ann's first message: readers past it are told.
    let deleted = c
        .delete_chat_message(pb::DeleteChatMessageRequest {
            match_id: t.id.clone(),
            message_id: 1,
        })
        .await
        .unwrap()
        .into_inner()
        .message
        .unwrap();
    assert!(deleted.deleted && deleted.text.is_empty());
    let last = seen.last().unwrap().id;
    let news = seat_chat(&mut c, &t, (A, WHITE), last, 1).await;
    assert_eq!(
        news[0].entry,
        Some(pb::watch_chat_response::Entry::DeletedId(1))
    );
    let from_start = seat_chat(&mut c, &t, (A, WHITE), 0, 1).await;
    match &from_start[0].entry {
        Some(pb::watch_chat_response::Entry::Message(m)) => assert!(m.deleted && m.text.is_empty()),
        other => panic!("{other:?}"),
    }
    let missing = c
        .delete_chat_message(pb::DeleteChatMessageRequest {
            match_id: t.id.clone(),
            message_id: 9_999,
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::InvalidArgument);
    // Spectators see their channel only.
    let mut stream = c
        .watch_spectator_chat(pb::WatchSpectatorChatRequest {
            match_id: t.id.clone(),
            after_id: 0,
        })
        .await
        .unwrap()
        .into_inner();
    let only = stream.message().await.unwrap().unwrap();
    assert_eq!(only.id, 2);

    // Bughouse: partners have a channel of their own.
    let t = create_from(&mut c, creation(Variant::Bughouse, "", &[])).await;
    post(&mut c, &t, (A, WHITE), Team, "sit on b", "")
        .await
        .unwrap();
    post(&mut c, &t, (B, WHITE), Team, "we need a knight", "")
        .await
        .unwrap();
    post(&mut c, &t, (B, BLACK), Players, "hello all", "")
        .await
        .unwrap();
    let partner = seat_chat(&mut c, &t, (B, BLACK), 0, 2).await;
    let texts: Vec<String> = partner.iter().map(text_of).collect();
    assert_eq!(
        texts,
        ["sit on b", "hello all"],
        "team 1 sees its channel and the players'"
    );
    let other = seat_chat(&mut c, &t, (A, BLACK), 0, 2).await;
    let texts: Vec<String> = other.iter().map(text_of).collect();
    assert_eq!(texts, ["we need a knight", "hello all"]);
}

async fn list(
    c: &mut MatchServiceClient<Channel>,
    player: &str,
    variant: Variant,
    state: pb::MatchStateFilter,
    page_size: u32,
    page_token: &str,
) -> Result<pb::ListMatchesResponse, Status> {
    c.list_matches(pb::ListMatchesRequest {
        player_id: player.into(),
        variant: variant as i32,
        state: state as i32,
        page_size,
        page_token: page_token.into(),
    })
    .await
    .map(tonic::Response::into_inner)
}

fn ids(r: &pb::ListMatchesResponse) -> Vec<String> {
    r.matches
        .iter()
        .map(|m| m.state.as_ref().unwrap().match_id.clone())
        .collect()
}

/// A player's matches, newest first, by variant and state, page by page.
async fn listing(s: &Server) {
    use pb::MatchStateFilter::{Finished, Live, Unspecified};
    let mut c = s.client();
    let mut made = Vec::new();
    for (variant, players) in [
        (Variant::Chess, ["lia", "max"]),
        (Variant::Crazyhouse, ["max", "lia"]),
        (Variant::Chess, ["lia", "zoe"]),
    ] {
        let mut req = creation(variant, "", &[]);
        req.players = players.iter().map(|p| (*p).to_owned()).collect();
        made.push(create_from(&mut c, req).await);
    }
    resign(&mut c, &made[0], A, BLACK).await.unwrap();
    let all = list(&mut c, "lia", Variant::Unspecified, Unspecified, 0, "")
        .await
        .unwrap();
    let mut got = ids(&all);
    got.sort();
    let mut want: Vec<String> = made.iter().map(|t| t.id.clone()).collect();
    want.sort();
    assert_eq!(got, want);
    assert!(all.next_page_token.is_empty());
    let created: Vec<u64> = all.matches.iter().map(|m| m.created_ms).collect();
    assert!(
        created.windows(2).all(|w| w[0] >= w[1]),
        "newest first: {created:?}"
    );
    let chess = list(&mut c, "lia", Variant::Chess, Unspecified, 0, "")
        .await
        .unwrap();
    assert_eq!(chess.matches.len(), 2);
    let finished = list(&mut c, "lia", Variant::Unspecified, Finished, 0, "")
        .await
        .unwrap();
    assert_eq!(ids(&finished), [made[0].id.clone()]);
    let live = list(&mut c, "lia", Variant::Unspecified, Live, 0, "")
        .await
        .unwrap();
    assert_eq!(live.matches.len(), 2);
    assert_eq!(
        list(&mut c, "zoe", Variant::Unspecified, Unspecified, 0, "")
            .await
            .unwrap()
            .matches
            .len(),
        1
    );
    assert!(
        list(&mut c, "nobody", Variant::Unspecified, Unspecified, 0, "")
            .await
            .unwrap()
            .matches
            .is_empty()
    );
    // One at a time: every match once, then an empty last page.
    let mut token = String::new();
    let mut paged = Vec::new();
    for _ in 0..10 {
        let page = list(&mut c, "lia", Variant::Unspecified, Unspecified, 1, &token)
            .await
            .unwrap();
        paged.extend(ids(&page));
        token = page.next_page_token;
        if token.is_empty() {
            break;
        }
    }
    assert!(token.is_empty(), "the pages end");
    assert_eq!(paged, ids(&all));
    // Hostile requests name the field.
    for (player, size, token, field_name) in [
        ("", 0, "", "player_id"),
        ("lia\n", 0, "", "player_id"),
        ("lia", 101, "", "page_size"),
        ("lia", u32::MAX, "", "page_size"),
        ("lia", 0, "garbage", "page_token"),
        ("lia", 0, "1.bad id", "page_token"),
    ] {
        let e = list(
            &mut c,
            player,
            Variant::Unspecified,
            Unspecified,
            size,
            token,
        )
        .await
        .unwrap_err();
        assert_eq!(
            (e.code(), field(&e)),
            (Code::InvalidArgument, field_name.into())
        );
    }
    let long = "x".repeat(200);
    let e = list(&mut c, &long, Variant::Unspecified, Unspecified, 0, "")
        .await
        .unwrap_err();
    assert_eq!(field(&e), "player_id");
}

/// The finished-matches stream on Redis: each finished match once, with its moves.
async fn finished_stream(s: &Server, redis: &arbiter_testkit::Redis) {
    let mut c = s.client();
    let mut req = creation(Variant::Chess, "", &[]);
    req.players = vec!["uma".into(), "vic".into()];
    let t = create_from(&mut c, req).await;
    play_all(
        &mut c,
        &t,
        &["e4", "e5", "Qh5", "Nc6", "Bc4", "Nf6", "Qxf7#"],
    )
    .await;
    let t2 = create_from(&mut c, creation(Variant::Bughouse, "", &[])).await;
    make_move(&mut c, &t2, A, WHITE, "e4", 0).await.unwrap();
    make_move(&mut c, &t2, B, WHITE, "d4", 0).await.unwrap();
    resign(&mut c, &t2, A, BLACK).await.unwrap();
    // A request retried after the end adds nothing.
    resign(&mut c, &t2, A, BLACK).await.unwrap_err();
    let client = redis::Client::open(redis.url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let entries: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
        .arg(arbiter_matches::store::redis::FINISHED)
        .arg("-")
        .arg("+")
        .query_async(&mut conn)
        .await
        .unwrap();
    let of = |id: &str| -> Vec<std::collections::HashMap<String, String>> {
        entries
            .iter()
            .map(|(_, fields)| {
                fields
                    .iter()
                    .cloned()
                    .collect::<std::collections::HashMap<_, _>>()
            })
            .filter(|f| f.get("match_id").map(String::as_str) == Some(id))
            .collect()
    };
    let mate = of(&t.id);
    assert_eq!(mate.len(), 1, "once");
    assert_eq!(mate[0]["moves_san"], "e4 e5 Qh5 Nc6 Bc4 Nf6 Qxf7#");
    assert_eq!(mate[0]["moves_uci"].split(' ').count(), 7);
    assert!(mate[0]["players"].contains("uma") && mate[0]["players"].contains("vic"));
    assert!(mate[0]["outcome"].contains("checkmate"), "{:?}", mate[0]);
    let bug = of(&t2.id);
    assert_eq!(bug.len(), 1);
    assert_eq!(bug[0]["moves_san"], "A:e4 B:d4");
}

async fn propose(
    c: &mut MatchServiceClient<Channel>,
    t: &Table,
    side: i32,
) -> Result<pb::MatchState, Status> {
    c.propose_takeback(bearer(
        pb::ProposeTakebackRequest {
            match_id: t.id.clone(),
            side,
            ..Default::default()
        },
        t.token(A, side),
    ))
    .await
    .map(|r| r.into_inner().state.unwrap())
}

async fn answer(
    c: &mut MatchServiceClient<Channel>,
    t: &Table,
    side: i32,
    accept: bool,
    request_id: &str,
) -> Result<pb::AnswerTakebackResponse, Status> {
    c.answer_takeback(bearer(
        pb::AnswerTakebackRequest {
            match_id: t.id.clone(),
            side,
            accept,
            request_id: request_id.into(),
            ..Default::default()
        },
        t.token(A, side),
    ))
    .await
    .map(tonic::Response::into_inner)
}

fn with_takebacks(variant: Variant, time_control: &str) -> pb::CreateMatchRequest {
    let mut req = creation(variant, "", &[]);
    req.time_control = time_control.into();
    req.takebacks = true;
    req
}

/// Takebacks: proposed, accepted (one ply, or two when the opponent has replied), declined,
/// lapsing with a move, racing the reply; clocks handed back; the export without the moves
/// taken back; refused where the match has none.
async fn takebacks(s: &Server) {
    let mut c = s.client();
    for (variant, tc) in [(Variant::Bughouse, ""), (Variant::Chess, "90/40+30, 30+30")] {
        let e = c
            .create_match(with_takebacks(variant, tc))
            .await
            .unwrap_err();
        assert_eq!(
            (e.code(), field(&e)),
            (Code::InvalidArgument, "takebacks".into())
        );
    }
    let off = create_from(&mut c, creation(Variant::Chess, "", &[])).await;
    play_all(&mut c, &off, &["e4"]).await;
    assert_eq!(
        reason(&propose(&mut c, &off, WHITE).await.unwrap_err()),
        "TAKEBACKS_OFF"
    );

    let t = create_from(&mut c, with_takebacks(Variant::Chess, "5+3")).await;
    assert_eq!(
        reason(&propose(&mut c, &t, WHITE).await.unwrap_err()),
        "NOTHING_TO_TAKE_BACK"
    );
    let before_nf3 = play_all(&mut c, &t, &["e4", "e5"]).await;
    play_all(&mut c, &t, &["Nf3"]).await;
    assert_eq!(
        reason(&answer(&mut c, &t, BLACK, true, "").await.unwrap_err()),
        "NO_TAKEBACK"
    );
    // White takes back its last move: one ply.
    let state = propose(&mut c, &t, WHITE).await.unwrap();
    assert_eq!(state.takeback_offer, WHITE);
    let again = propose(&mut c, &t, WHITE).await.unwrap();
    assert_eq!(
        again.last_seq, state.last_seq,
        "a standing proposal adds nothing"
    );
    assert_eq!(
        reason(&answer(&mut c, &t, WHITE, true, "").await.unwrap_err()),
        "NO_TAKEBACK",
        "not one's own proposal"
    );
    let r = answer(&mut c, &t, BLACK, true, "yes-1").await.unwrap();
    assert!(!r.duplicate);
    let after = r.state.unwrap();
    assert_eq!(after.boards[0].position, before_nf3.boards[0].position);
    assert_eq!(after.boards[0].ply, 2);
    assert_eq!(after.boards[0].last_move.as_ref().unwrap().san, "e5");
    assert_eq!(after.takeback_offer, pb::Side::Unspecified as i32);
    let clock = after.boards[0].clock.unwrap();
    assert_eq!(
        (clock.phase, clock.running),
        (pb::ClockPhase::Running as i32, WHITE)
    );
    assert!(
        answer(&mut c, &t, BLACK, true, "yes-1")
            .await
            .unwrap()
            .duplicate
    );
    // Black proposes on White's turn: its e5 and nothing of White's; White declines.
    propose(&mut c, &t, BLACK).await.unwrap();
    let declined = answer(&mut c, &t, WHITE, false, "")
        .await
        .unwrap()
        .state
        .unwrap();
    assert_eq!(declined.boards[0].ply, 2);
    assert_eq!(declined.takeback_offer, pb::Side::Unspecified as i32);
    // White, to move, takes back two plies (Black's reply and its own move): back to the start,
    // where the first moves are untimed again.
    propose(&mut c, &t, WHITE).await.unwrap();
    let start = answer(&mut c, &t, BLACK, true, "")
        .await
        .unwrap()
        .state
        .unwrap();
    assert_eq!(start.boards[0].ply, 0);
    assert!(start.boards[0].last_move.is_none());
    assert_eq!(
        start.boards[0].clock.unwrap().phase,
        pb::ClockPhase::Opening as i32
    );
    // The game goes on, and its export holds only the moves that stand.
    play_all(&mut c, &t, &["d4", "d5", "c4"]).await;
    // A proposal lapses with a move.
    propose(&mut c, &t, WHITE).await.unwrap();
    play_all(&mut c, &t, &["e6"]).await;
    assert_eq!(
        reason(&answer(&mut c, &t, BLACK, true, "").await.unwrap_err()),
        "NO_TAKEBACK"
    );
    resign(&mut c, &t, A, BLACK).await.unwrap();
    let events = watch_all(&mut c, &t.id).await;
    let count = |f: &dyn Fn(&Event) -> bool| {
        events
            .iter()
            .filter(|e| e.event.as_ref().is_some_and(f))
            .count()
    };
    assert_eq!(count(&|e| matches!(e, Event::TakebackOffer(_))), 4);
    assert_eq!(count(&|e| matches!(e, Event::TakebackDeclined(BLACK))), 1);
    assert_eq!(count(&|e| matches!(e, Event::Takeback(_))), 2);
    let mut game = read_games(&export(&mut c, &t.id).await.pgn)
        .unwrap()
        .remove(0);
    let sans: Vec<&str> = game.moves.iter().map(|m| m.san.as_str()).collect();
    assert_eq!(sans, ["d4", "d5", "c4", "e6"]);
    game.validate(Locale::English, Locale::English).unwrap();

    // A takeback racing the reply: exactly one lands.
    for i in 0..12 {
        let t = create_from(&mut c, with_takebacks(Variant::Chess, "")).await;
        play_all(&mut c, &t, &["e4"]).await;
        propose(&mut c, &t, WHITE).await.unwrap();
        let (mut c1, mut c2) = (s.client(), s.client());
        let rid = format!("race-{i}");
        let (moved, accepted) = tokio::join!(
            make_move(&mut c1, &t, A, BLACK, "e5", 1),
            answer(&mut c2, &t, BLACK, true, &rid),
        );
        let state = get(&mut c, &t.id).await;
        match (moved, accepted) {
            (Ok(_), Err(e)) => {
                assert_eq!(reason(&e), "NO_TAKEBACK");
                assert_eq!(state.boards[0].ply, 2);
            }
            (Err(e), Ok(_)) => {
                assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
                assert_eq!(state.boards[0].ply, 0);
            }
            other => panic!("both or neither landed: {other:?}"),
        }
    }
}

async fn site(s: &Server) {
    aborts(s).await;
    declines(s).await;
    exports(s).await;
    bughouse_options(s).await;
    correspondence(s).await;
    chats(s).await;
    listing(s).await;
    takebacks(s).await;
}

#[tokio::test]
async fn site_features_in_process() {
    let s = start().await;
    site(&s).await;
    s.stop().await;
}

/// A match server on Redis (`config`), answering once its store has connected.
async fn on_redis(config: arbiter_matches::store::redis::RedisConfig) -> Server {
    on_redis_with(config, MatchesConfig::default().seat_key).await
}

/// [`on_redis`] with the seat key `seat_key` (a restarted service keeps its key).
async fn on_redis_with(
    config: arbiter_matches::store::redis::RedisConfig,
    seat_key: arbiter_matches::seats::SeatKey,
) -> Server {
    let store = arbiter_matches::StoreConfig::Redis(config);
    let s = TestServer::start(move |listener, shutdown| {
        arbiter_matches::serve(
            listener,
            ServeConfig::default(),
            MatchesConfig {
                store,
                seat_key,
                ..MatchesConfig::default()
            },
            AccessPolicy::development(),
            shutdown,
        )
    })
    .await;
    // The store connects in the background: wait until it answers.
    let mut c = s.client();
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
    s
}

#[tokio::test]
async fn site_features_on_redis() {
    let redis = arbiter_testkit::redis().await;
    let s = on_redis(redis.secure("arbiter-matches")).await;
    site(&s).await;
    finished_stream(&s, &redis).await;
    s.stop().await;
}

/// A correspondence game lives in Redis as long as its time control allows (not the 2-hour
/// default), and goes on across a restart of the service and of Redis.
#[tokio::test]
async fn a_correspondence_game_survives_restarts() {
    let redis = arbiter_testkit::redis_on(arbiter_testkit::free_port()).await;
    let config = || redis.url.as_str().into();
    let key = arbiter_matches::seats::SeatKey::generate();
    let s = on_redis_with(config(), key.clone()).await;
    let mut c = s.client();
    let mut req = creation(Variant::Chess, "", &[]);
    req.time_control = "14 days".into();
    let t = create_from(&mut c, req).await;
    play_all(&mut c, &t, &["e4", "e5"]).await;
    let before = get(&mut c, &t.id).await;
    let ttl_ms = || async {
        let client = redis::Client::open(redis.url.as_str()).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let ttl: i64 = redis::cmd("PTTL")
            .arg(format!("game:{{{}}}:state", t.id))
            .query_async(&mut conn)
            .await
            .unwrap();
        ttl
    };
    let ttl = ttl_ms().await;
    assert!(ttl > (14 * DAY_MS) as i64, "the match is kept {ttl} ms");
    s.stop().await;

    redis.container.stop().await.unwrap();
    redis.container.start().await.unwrap();
    let s = on_redis_with(config(), key).await;
    let mut c = s.client();
    let after = get(&mut c, &t.id).await;
    assert_eq!(after, before, "the game as it was");
    let state = play_all(&mut c, &t, &["Nf3", "Nc6"]).await;
    let clock = state.boards[0].clock.unwrap();
    assert_eq!((clock.white_ms, clock.black_ms), (14 * DAY_MS, 14 * DAY_MS));
    assert!(ttl_ms().await > (14 * DAY_MS) as i64);
    resign(&mut c, &t, A, WHITE).await.unwrap();
    let game = read_games(&export(&mut c, &t.id).await.pgn)
        .unwrap()
        .remove(0);
    assert_eq!(game.moves.len(), 4);
    assert_eq!(game.result, "0-1");
    s.stop().await;
}
