//! The match store suite, run against both stores: the in-process one and a real Redis started
//! by testcontainers (the test image builds itself where no registry can provide it: see
//! `arbiter-testkit`).
//!
//! Lifecycle of bughouse matches and single-board games (the repetition history survives the
//! store), idempotent retries, refusals that change nothing, 64 concurrent clients hammering
//! both boards of 16 matches with the 64-unit conservation invariant checked after every step,
//! TTL expiry; with Redis also a restart mid-match, one round trip per move, two replicas
//! sharing matches through stale snapshots, and a corrupt record reported as such.

use arbiter_core::bughouse::BoardId;
use arbiter_core::{AnyPosition, Color, DrawClaim, Locale, Position, RuleOptions, Variant};
use arbiter_matches::domain::{Creation, MoveAnswer, MoveRequest, SeatRef};
use arbiter_matches::record::{Record, StoredEvent};
use arbiter_matches::seats::SeatKey;
use arbiter_matches::store::memory::MemoryStore;
use arbiter_matches::store::redis::RedisStore;
use arbiter_matches::store::{MatchStore, Retention};
use arbiter_matches::{MatchError, MatchLimits, Matches};
use std::sync::Arc;
use std::time::Duration;

pub(crate) fn key() -> SeatKey {
    SeatKey::from_material(b"a test key of at least thirty-two bytes").unwrap()
}

pub(crate) fn creation(variant: Variant, tag: &str) -> Creation {
    let seats: &[&str] = if variant == Variant::Bughouse {
        &["wa", "ba", "wb", "bb"]
    } else {
        &["w", "b"]
    };
    Creation {
        variant: Some(variant),
        players: seats.iter().map(|s| format!("{tag}-{s}")).collect(),
        time_control: "180+0".into(),
        ..Default::default()
    }
}

/// A created match with its tokens.
pub(crate) struct Table {
    pub(crate) id: String,
    tokens: Vec<(BoardId, Color, String)>,
}

impl Table {
    fn token(&self, board: BoardId, color: Color) -> &str {
        self.tokens
            .iter()
            .find(|(b, c, _)| *b == board && *c == color)
            .map(|(_, _, t)| t.as_str())
            .unwrap()
    }
}

pub(crate) async fn create<S: MatchStore>(m: &Matches<S>, c: Creation) -> Table {
    let created = m.create(c).await.unwrap();
    Table {
        id: created.record.id.clone(),
        tokens: created
            .seats
            .into_iter()
            .map(|(s, t)| (s.board, s.color, t))
            .collect(),
    }
}

fn seat(board: BoardId, color: Color) -> SeatRef {
    SeatRef {
        board: Some(board),
        color: Some(color),
    }
}

pub(crate) async fn mv<S: MatchStore>(
    m: &Matches<S>,
    t: &Table,
    board: BoardId,
    color: Color,
    text: &str,
    ply: u32,
) -> Result<MoveAnswer, MatchError> {
    m.play(
        &t.id,
        MoveRequest {
            seat: seat(board, color),
            token: Some(t.token(board, color)),
            text,
            expected_ply: ply,
            locale: Locale::English,
            request_id: None,
            lag_ms: 0,
        },
    )
    .await
}

/// Units on both boards and in all reserves (64 in every match from the start).
pub(crate) fn units(r: &Record) -> usize {
    r.boards
        .iter()
        .map(|b| {
            let placement = b.position.split(' ').next().unwrap_or("");
            placement.chars().filter(char::is_ascii_alphabetic).count()
                + b.reserves[0].len()
                + b.reserves[1].len()
        })
        .sum()
}

fn bfen(r: &Record) -> String {
    format!(
        "{} | {}",
        r.boards[0].full_position(true),
        r.boards[1].full_position(true)
    )
}

use BoardId::{A, B};
use Color::{Black, White};

/// The four seats of a bughouse match.
pub(crate) const SEATS: [(BoardId, Color); 4] = [(A, White), (A, Black), (B, White), (B, Black)];

/// The next number of a xorshift generator (the tests' seeded randomness).
pub(crate) fn xorshift(rng: &mut u64) -> u64 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    *rng
}

/// A random legal move (drawn with `rng`) for the seat `board`/`color` of bughouse match `r`,
/// or `None` when it is not that seat's turn or it has no move (it waits for a piece).
pub(crate) fn random_move(
    rng: &mut u64,
    r: &Record,
    board: BoardId,
    color: Color,
) -> Option<String> {
    let b = &r.boards[board.index()];
    let pos = AnyPosition::from_text(Variant::Bughouse, &b.full_position(true)).unwrap();
    if pos.turn() != color {
        return None;
    }
    let moves = pos.legal_moves();
    if moves.is_empty() {
        return None;
    }
    Some(moves[(xorshift(rng) % moves.len() as u64) as usize].to_string())
}

/// Every board's clock is what its events say: its first snapshot leaves the side whose clock
/// runs next, which has not moved yet, with the control's whole time, and no side with more;
/// between two snapshots of a board, the side whose clock ran lost exactly
/// the store time between them (to 0 at most: a flag), and the other kept its time, so no move
/// was charged twice or from a stale clock; the record's clock reads as the last snapshot
/// (charged to its stop where the match ended on the other board). For one-stage controls
/// without increment or delay, moves without reported lag, and no pause, added time or
/// takeback (what these tests play).
pub(crate) fn check_clock_events(r: &Record, events: &[(u64, StoredEvent)]) {
    /// `remaining` after `elapsed` ms with `running`'s clock running.
    fn charged(mut remaining: [u64; 2], running: Option<Color>, elapsed: u64) -> [u64; 2] {
        if let Some(c) = running {
            remaining[c.index()] = remaining[c.index()].saturating_sub(elapsed);
        }
        remaining
    }
    /// A board's last clock snapshot: remaining times, whose clock runs, when.
    type Snapshot = ([u64; 2], Option<Color>, u64);
    let mut last: [Option<Snapshot>; 2] = [None, None];
    for (seq, e) in events {
        let StoredEvent::Clock {
            board,
            remaining_ms,
            running,
            at,
        } = e
        else {
            continue;
        };
        if last[board.index()].is_none()
            && let Some(clock) = &r.boards[board.index()].clock
        {
            let initial = clock.control().initial_ms();
            for side in [Color::White, Color::Black] {
                let left = remaining_ms[side.index()];
                let fresh = *running == Some(side);
                assert!(
                    if fresh {
                        left == initial
                    } else {
                        left <= initial
                    },
                    "{} board {board:?} event {seq}: {side:?} has {left} of {initial} ms",
                    r.id
                );
            }
        }
        if let Some((before, ran, since)) = last[board.index()] {
            assert!(*at >= since, "{} event {seq}: time went back", r.id);
            let want = charged(before, ran, at - since);
            assert_eq!(
                *remaining_ms, want,
                "{} board {board:?} event {seq}: {before:?} at {since} ({ran:?} running), then {remaining_ms:?} at {at}",
                r.id
            );
        }
        last[board.index()] = Some((*remaining_ms, *running, *at));
    }
    for (b, last) in r.boards.iter().zip(last) {
        let (Some(clock), Some((remaining, running, at))) = (&b.clock, last) else {
            continue;
        };
        // A board stopped because the match ended on the other board has no snapshot of its
        // stop: its running side is charged from its last snapshot to the stop.
        let t = match clock.phase() {
            arbiter_core::clock::Phase::Stopped { at: stop } => stop.max(at),
            _ => at,
        };
        let want = charged(remaining, running, t - at);
        assert_eq!(
            clock.snapshot(t).remaining_ms,
            want,
            "{}: the record's clock {clock:?}, the last snapshot at {at}; events {:?}",
            r.id,
            &events[events.len().saturating_sub(6)..]
        );
    }
}

async fn bughouse_lifecycle<S: MatchStore>(m: &Matches<S>) {
    let t = create(m, creation(Variant::Bughouse, "life")).await;
    let r = m.get(&t.id).await.unwrap();
    assert_eq!(units(&r), 64);
    mv(m, &t, A, White, "e4", 0).await.unwrap();
    mv(m, &t, A, Black, "d5", 1).await.unwrap();
    // White A takes: the black pawn goes to Black B (White A's partner).
    let a = mv(m, &t, A, White, "exd5", 2).await.unwrap();
    assert_eq!(a.record.boards[1].reserves, ["".to_owned(), "p".to_owned()]);
    assert_eq!(units(&a.record), 64);
    mv(m, &t, B, White, "Nf3", 0).await.unwrap();
    let a = mv(m, &t, B, Black, "P@e4", 1).await.unwrap();
    assert_eq!(a.played.uci, "P@e4");
    assert_eq!(
        bfen(&a.record),
        "rnbqkbnr/ppp1pppp/8/3P4/8/8/PPPP1PPP/RNBQKBNR[] b KQkq - 0 2 | \
         rnbqkbnr/pppppppp/8/8/4p3/5N2/PPPPPPPP/RNBQKB1R[] w KQkq - 0 2"
    );
    // Events: 5 moves, a reserve change from the capture, one from the drop, and a clock
    // snapshot after each move.
    let all = m.events(&t.id, 0, usize::MAX).await.unwrap();
    assert_eq!(all.len(), 12);
    assert_eq!(all.last().unwrap().0, 12);
    let clock_events = all
        .iter()
        .filter(|(_, e)| matches!(e, StoredEvent::Clock { .. }))
        .count();
    assert_eq!(clock_events, 5);
    let events: Vec<_> = all
        .into_iter()
        .filter(|(_, e)| !matches!(e, StoredEvent::Clock { .. }))
        .collect();
    assert!(matches!(
        &events[3].1,
        StoredEvent::Reserve { board: B, side: Black, pieces } if pieces == "p"
    ));
    // The move event shows the board with its reserves after the step.
    assert!(matches!(
        &events[2].1,
        StoredEvent::Move { position, .. } if position.contains("[]")
    ));
    assert_eq!(m.events(&t.id, 10, usize::MAX).await.unwrap().len(), 2);
    // Draw offers: one team, then the other.
    let r = m
        .offer_draw(&t.id, seat(A, White), Some(t.token(A, White)), None)
        .await
        .unwrap();
    assert_eq!(
        (r.record.draw_offers, r.record.outcome),
        ([true, false], None)
    );
    let r = m
        .offer_draw(&t.id, seat(B, White), Some(t.token(B, White)), None)
        .await
        .unwrap();
    assert_eq!(r.record.outcome.unwrap().score.to_string(), "1/2-1/2");
    assert_eq!(
        m.resign(&t.id, seat(A, White), Some(t.token(A, White)), None)
            .await
            .unwrap_err()
            .reason(),
        Some("MATCH_OVER")
    );
    assert!(matches!(
        m.events(&t.id, 0, usize::MAX).await.unwrap().last(),
        Some((_, StoredEvent::End(_)))
    ));
    // Resignation: the resigning player's team loses.
    let t = create(m, creation(Variant::Bughouse, "resign")).await;
    let r = m
        .resign(&t.id, seat(B, White), Some(t.token(B, White)), None)
        .await
        .unwrap();
    assert_eq!(r.record.outcome.unwrap().score.to_string(), "1-0");
    // A chosen id with a request id: the same creation again is the same match and tokens;
    // without the request id, or with other content, the id is taken.
    let mut c = creation(Variant::Bughouse, "dup");
    c.match_id = "fixed-id".into();
    c.request_id = "req-dup".into();
    let first = m.create(c.clone()).await.unwrap();
    let again = m.create(c.clone()).await.unwrap();
    assert!(first.created && !again.created);
    assert_eq!(first.seats, again.seats);
    let mut anonymous = c.clone();
    anonymous.request_id.clear();
    let mut other = c.clone();
    other.time_control = "5+0".into();
    for c in [anonymous, other] {
        assert!(matches!(
            m.create(c).await,
            Err(MatchError::AlreadyExists(_))
        ));
    }
}

/// Single-board games keep their repetition history in the store: a threefold claim and a
/// fivefold draw are judged on it, and an irreversible move resets it.
async fn single_board_lifecycle<S: MatchStore>(m: &Matches<S>) {
    let t = create(m, creation(Variant::Chess, "single")).await;
    let moves = "e4 e5 Nf3 Nc6 Ng1 Nb8 Nf3 Nc6 Ng1 Nb8";
    for (ply, text) in (0u32..).zip(moves.split(' ')) {
        let color = if ply % 2 == 0 { White } else { Black };
        mv(m, &t, A, color, text, ply).await.unwrap();
    }
    let r = m.get(&t.id).await.unwrap();
    // The history holds the positions since the pawn move: 9 of them.
    assert_eq!(r.boards[0].history.len(), 9);
    let claim = m
        .claim_draw(
            &t.id,
            seat(A, Black),
            Some(t.token(A, Black)),
            DrawClaim::ThreefoldRepetition,
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        claim.record.outcome.unwrap().reason.name(),
        "threefold-repetition"
    );

    // Crazyhouse on one board: captures join the capturer's own reserve, in the position.
    let t = create(m, creation(Variant::Crazyhouse, "zh")).await;
    for (ply, text) in ["e4", "d5", "exd5"].into_iter().enumerate() {
        let color = if ply % 2 == 0 { White } else { Black };
        mv(m, &t, A, color, text, ply as u32).await.unwrap();
    }
    let a = mv(m, &t, A, Black, "Qxd5", 3).await.unwrap();
    assert_eq!(
        a.record.boards[0].position,
        "rnb1kbnr/ppp1pppp/8/3q4/8/8/PPPP1PPP/RNBQKBNR[Pp] w KQkq - 0 3"
    );
    let a = mv(m, &t, A, White, "P@e4", 4).await.unwrap();
    assert_eq!(
        a.record.boards[0].history.len(),
        1,
        "a pawn drop is irreversible"
    );

    // Glinski and Byzantine games through the store.
    let t = create(m, creation(Variant::Glinski, "hex")).await;
    let a = mv(m, &t, A, White, "f5f6", 0).await.unwrap();
    assert_eq!(a.played.san, "f5-f6");
    let mut c = creation(Variant::Byzantine, "byz");
    c.rules = RuleOptions(vec![("stalemate".into(), "loses".into())]);
    let t = create(m, c).await;
    let r = m.get(&t.id).await.unwrap();
    assert_eq!(
        r.rules.0,
        vec![("stalemate".to_owned(), "loses".to_owned())]
    );
    mv(m, &t, A, White, "b1c3", 0).await.unwrap();
}

async fn retries_and_refusals<S: MatchStore>(m: &Matches<S>) {
    let t = create(m, creation(Variant::Bughouse, "retry")).await;
    let first = mv(m, &t, A, White, "e4", 0).await.unwrap();
    assert!(!first.duplicate);
    // The same request again (a client retry after a lost answer) is a duplicate: no change.
    let again = mv(m, &t, A, White, "e4", 0).await.unwrap();
    assert!(again.duplicate);
    assert_eq!((again.played.uci.as_str(), again.played.ply), ("e2e4", 1));
    // In coordinate notation too.
    assert!(mv(m, &t, A, White, "e2e4", 0).await.unwrap().duplicate);
    let before = m.get(&t.id).await.unwrap();
    let invalid: [(BoardId, Color, &str, u32, &str); 3] = [
        (A, Black, "e4", 1, "move"),   // illegal
        (A, Black, "N@f6", 1, "move"), // drop of a piece not held
        (A, Black, "e5\u{7}", 1, "move"),
    ];
    for (board, color, text, ply, field) in invalid {
        match mv(m, &t, board, color, text, ply).await {
            Err(MatchError::Invalid { field: f, .. }) => assert_eq!(f, field, "{text}"),
            other => panic!("{text}: {other:?}"),
        }
    }
    for (color, ply, reason) in [(Black, 0, "STALE_PLY"), (White, 1, "NOT_YOUR_TURN")] {
        let e = mv(m, &t, A, color, "e5", ply).await.unwrap_err();
        assert_eq!(e.reason(), Some(reason), "{e:?}");
    }
    // Tokens: missing, the opponent's, the partner's, another match's.
    let other = create(m, creation(Variant::Bughouse, "other")).await;
    let play_as = |token: Option<String>| {
        let id = t.id.clone();
        async move {
            m.play(
                &id,
                MoveRequest {
                    seat: seat(A, Black),
                    token: token.as_deref(),
                    text: "e5",
                    expected_ply: 1,
                    locale: Locale::English,
                    request_id: None,
                    lag_ms: 0,
                },
            )
            .await
        }
    };
    assert!(matches!(
        play_as(None).await,
        Err(MatchError::Unauthenticated(_))
    ));
    for token in [
        t.token(A, White),
        t.token(B, White),
        t.token(B, Black),
        other.token(A, Black),
    ] {
        assert!(matches!(
            play_as(Some(token.to_owned())).await,
            Err(MatchError::PermissionDenied(_))
        ));
    }
    assert!(matches!(
        m.get("no-such-match").await,
        Err(MatchError::NotFound(_))
    ));
    assert_eq!(
        m.get(&t.id).await.unwrap(),
        before,
        "refusals changed nothing"
    );
}

/// 16 matches, one client per seat (64 in all), each playing random legal moves on its board as
/// fast as it can, and retrying some moves; after every applied move the match must hold
/// exactly 64 units, and a retry is never applied twice.
async fn hammer<S: MatchStore>(m: Arc<Matches<S>>) {
    let mut tables = Vec::new();
    for i in 0..16 {
        tables.push(Arc::new(
            create(&m, creation(Variant::Bughouse, &format!("h{i}"))).await,
        ));
    }
    let mut tasks = Vec::new();
    for (i, t) in tables.iter().enumerate() {
        for (s, (board, color)) in SEATS.into_iter().enumerate() {
            let (m, t) = (Arc::clone(&m), Arc::clone(t));
            let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ ((i * 4 + s) as u64 + 1);
            tasks.push(tokio::spawn(async move {
                let mut played = 0;
                for _ in 0..400 {
                    if played >= 12 {
                        break;
                    }
                    let r = m.get(&t.id).await.unwrap();
                    if r.outcome.is_some() {
                        break;
                    }
                    let b = &r.boards[board.index()];
                    // Not this seat's turn, or it waits for a piece from its partner.
                    let Some(uci) = random_move(&mut rng, &r, board, color) else {
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        continue;
                    };
                    match mv(&m, &t, board, color, &uci, b.ply).await {
                        Ok(a) => {
                            assert_eq!(units(&a.record), 64, "{}", bfen(&a.record));
                            assert!(!a.duplicate);
                            played += 1;
                            if rng.is_multiple_of(4) {
                                // A retry without a request id is known by being the board's
                                // last move; once the opponent has answered it is stale.
                                match mv(&m, &t, board, color, &uci, b.ply).await {
                                    Ok(again) => {
                                        assert!(again.duplicate);
                                        assert_eq!(units(&again.record), 64);
                                    }
                                    Err(e) if e.reason() == Some("STALE_PLY") => {
                                        let now = m.get(&t.id).await.unwrap();
                                        assert!(
                                            now.boards[board.index()].ply > b.ply + 1,
                                            "a stale retry with the move still the last: {e}"
                                        );
                                    }
                                    Err(e) if e.reason() == Some("MATCH_OVER") => break,
                                    Err(e) => panic!("{} retry of {uci}: {e}", t.id),
                                }
                            }
                        }
                        Err(e) if e.reason() == Some("MATCH_OVER") => break,
                        Err(e) => panic!("{} {uci}: {e}", t.id),
                    }
                    let now = m.get(&t.id).await.unwrap();
                    assert_eq!(units(&now), 64, "{}", bfen(&now));
                }
                played
            }));
        }
    }
    let mut total = 0;
    for task in tasks {
        total += task.await.unwrap();
    }
    assert!(total > 300, "only {total} moves were played");
    for t in tables {
        let r = m.get(&t.id).await.unwrap();
        assert_eq!(units(&r), 64);
        // Every applied move is one event with the next ply of its board, and the clocks
        // were charged exactly the time between the moves.
        let events = m.events(&t.id, 0, usize::MAX).await.unwrap();
        let moves = events
            .iter()
            .filter(|(_, e)| matches!(e, StoredEvent::Move { .. }))
            .count();
        assert_eq!(moves as u32, r.boards[0].ply + r.boards[1].ply);
        check_clock_events(&r, &events);
    }
}

/// Real contention: three clients per seat (sharing the seat's token) race to move on the same
/// board at the same ply, with request ids; they retry some of their requests, and the two
/// boards' drops race the captures that feed them. After every operation the match holds 64
/// units; in the end every applied request is exactly one move event, and each retry was
/// answered with what its request did.
async fn contention<S: MatchStore>(m: Arc<Matches<S>>) {
    use std::sync::Mutex;
    /// One applied request: match id, request id, board, ply it made, its move.
    type Applied = (String, String, BoardId, u32, String);
    let applied: Arc<Mutex<Vec<Applied>>> = Arc::default();
    let mut tables = Vec::new();
    for i in 0..4 {
        tables.push(Arc::new(
            create(&m, creation(Variant::Bughouse, &format!("race{i}"))).await,
        ));
    }
    let mut tasks = Vec::new();
    for (i, t) in tables.iter().enumerate() {
        for (s, (board, color)) in SEATS.into_iter().enumerate() {
            for client in 0..3 {
                let (m, t, applied) = (Arc::clone(&m), Arc::clone(t), Arc::clone(&applied));
                let mut rng = 0x2545_F491_4F6C_DD1Du64 ^ ((i * 12 + s * 3 + client) as u64 + 1);
                tasks.push(tokio::spawn(async move {
                    for n in 0..40 {
                        let r = m.get(&t.id).await.unwrap();
                        if r.outcome.is_some() {
                            break;
                        }
                        let b = &r.boards[board.index()];
                        let Some(uci) = random_move(&mut rng, &r, board, color) else {
                            tokio::time::sleep(Duration::from_millis(1)).await;
                            continue;
                        };
                        let request = format!("c{client}-{n}");
                        // Let the other clients of this seat read the same ply: they race.
                        tokio::task::yield_now().await;
                        let play = || {
                            m.play(
                                &t.id,
                                MoveRequest {
                                    seat: seat(board, color),
                                    token: Some(t.token(board, color)),
                                    text: &uci,
                                    expected_ply: b.ply,
                                    locale: Locale::English,
                                    request_id: Some(&request),
                                    lag_ms: 0,
                                },
                            )
                        };
                        let first = play().await;
                        if let Ok(a) = &first {
                            assert!(!a.duplicate, "a fresh request id is never a duplicate");
                            assert_eq!(units(&a.record), 64, "{}", bfen(&a.record));
                            applied.lock().unwrap().push((
                                t.id.clone(),
                                format!("{board}{color}{request}"),
                                board,
                                a.played.ply,
                                a.played.uci.clone(),
                            ));
                        }
                        if rng.is_multiple_of(3) {
                            // A retry: answered with what the first did, applied once.
                            match (&first, play().await) {
                                (Ok(a), Ok(again)) => {
                                    assert!(again.duplicate);
                                    assert_eq!(
                                        (again.played.ply, &again.played.uci),
                                        (a.played.ply, &a.played.uci)
                                    );
                                }
                                (Err(_), Ok(again)) => {
                                    panic!("a refused request became applied: {again:?}")
                                }
                                (Ok(a), Err(e)) => panic!("the retry of {a:?} failed: {e}"),
                                (Err(_), Err(_)) => {}
                            }
                        }
                        let now = m.get(&t.id).await.unwrap();
                        assert_eq!(units(&now), 64, "{}", bfen(&now));
                    }
                }));
            }
        }
    }
    for task in tasks {
        task.await.unwrap();
    }
    let applied = applied.lock().unwrap().clone();
    assert!(
        applied.len() > 40,
        "only {} moves were applied",
        applied.len()
    );
    for t in &tables {
        let mine: Vec<_> = applied.iter().filter(|a| a.0 == t.id).collect();
        let events: Vec<(BoardId, u32, String)> = m
            .events(&t.id, 0, usize::MAX)
            .await
            .unwrap()
            .into_iter()
            .filter_map(|(_, e)| match e {
                StoredEvent::Move {
                    board, ply, uci, ..
                } => Some((board, ply, uci)),
                _ => None,
            })
            .collect();
        assert_eq!(mine.len(), events.len(), "one event per applied request");
        for (_, _, board, ply, uci) in mine {
            assert!(
                events.contains(&(*board, *ply, uci.clone())),
                "{board} {ply} {uci}"
            );
        }
        assert_eq!(units(&m.get(&t.id).await.unwrap()), 64);
    }
}

async fn ttl_expiry<S: MatchStore>(m: &Matches<S>) {
    let mut c = creation(Variant::Chess, "ttl");
    c.match_id = "ttl-room".into();
    let t = create(m, c.clone()).await;
    mv(m, &t, A, White, "e4", 0).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(matches!(m.get(&t.id).await, Err(MatchError::NotFound(_))));
    // The id is free again; the new match has new tokens, and the old ones are refused.
    let again = create(m, c).await;
    assert_eq!(again.id, t.id);
    assert_ne!(again.token(A, White), t.token(A, White));
    assert!(matches!(
        mv(m, &t, A, White, "e4", 0).await,
        Err(MatchError::PermissionDenied(_))
    ));
    mv(m, &again, A, White, "e4", 0).await.unwrap();
}

/// The match service's Redis ACL user (deploy/redis/acl.conf), over TLS in the store tests.
const USER: &str = "arbiter-matches";

pub(crate) const SHORT: Retention = Retention {
    ttl: Duration::from_millis(700),
    grace: Duration::from_millis(700),
};

pub(crate) async fn suite<S: MatchStore>(m: Arc<Matches<S>>, short: Matches<S>) {
    bughouse_lifecycle(&m).await;
    single_board_lifecycle(&m).await;
    retries_and_refusals(&m).await;
    hammer(Arc::clone(&m)).await;
    contention(m).await;
    ttl_expiry(&short).await;
}

#[tokio::test]
async fn memory_store_suite() {
    suite(
        Arc::new(Matches::new(
            MemoryStore::new(Retention::default(), 1000),
            key(),
            MatchLimits::default(),
        )),
        Matches::new(MemoryStore::new(SHORT, 1000), key(), MatchLimits::default()),
    )
    .await;
}

/// The match domain on Redis: `redis` is a URL or, for the store suites, the match service's
/// ACL user over TLS.
pub(crate) async fn redis_matches(
    redis: impl Into<arbiter_testkit::RedisConfig>,
    retention: Retention,
) -> Matches<RedisStore> {
    Matches::new(
        RedisStore::connect(redis, retention, 1000).await.unwrap(),
        key(),
        MatchLimits::default(),
    )
}

#[tokio::test]
async fn redis_store_suite() {
    let redis = arbiter_testkit::redis().await;
    suite(
        Arc::new(redis_matches(redis.secure(USER), Retention::default()).await),
        redis_matches(redis.secure(USER), SHORT).await,
    )
    .await;
}

/// Redis stops mid-match: requests fail as unavailable with nothing applied, and once it is
/// back (its append-only file keeps the data) the match continues with every unit in place.
#[tokio::test]
async fn redis_restart_mid_match() {
    let redis = arbiter_testkit::redis_on(arbiter_testkit::free_port()).await;
    let m = redis_matches(&redis.url, Retention::default()).await;
    let t = create(&m, creation(Variant::Bughouse, "restart")).await;
    mv(&m, &t, A, White, "e4", 0).await.unwrap();
    mv(&m, &t, A, Black, "d5", 1).await.unwrap();
    mv(&m, &t, A, White, "exd5", 2).await.unwrap();
    let before = m.get(&t.id).await.unwrap();

    redis.container.stop().await.unwrap();
    let unavailable = |r: &MatchError| {
        matches!(
            r,
            MatchError::Store(arbiter_matches::store::StoreError::Unavailable(_))
        )
    };
    // The snapshot is in this process, so the move is judged and its commit fails.
    let e = mv(&m, &t, B, White, "e4", 0).await.unwrap_err();
    assert!(unavailable(&e), "{e:?}");
    assert!(unavailable(&m.get(&t.id).await.unwrap_err()));
    redis.container.start().await.unwrap();

    // The service recovers by itself once Redis answers again.
    let mut after = None;
    for _ in 0..100 {
        match m.get(&t.id).await {
            Ok(r) => {
                after = Some(r);
                break;
            }
            Err(e) if unavailable(&e) => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(e) => panic!("{e}"),
        }
    }
    let after = after.expect("Redis came back");
    assert_eq!(after, before, "nothing lost, nothing half-applied");
    assert_eq!(units(&after), 64);
    let e = mv(&m, &t, B, Black, "P@e5", 0).await.unwrap_err();
    assert_eq!(e.reason(), Some("NOT_YOUR_TURN"));
    mv(&m, &t, B, White, "e4", 0).await.unwrap();
    let a = mv(&m, &t, B, Black, "P@e5", 1).await.unwrap();
    assert_eq!(units(&a.record), 64);
    assert_eq!(a.record.boards[1].reserves[1], "");
}

/// The calls of each command since the last reset (commands run by scripts included).
async fn command_calls(
    conn: &mut redis::aio::MultiplexedConnection,
) -> std::collections::HashMap<String, u64> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .unwrap();
    info.lines()
        .filter_map(|l| l.strip_prefix("cmdstat_"))
        .filter_map(|l| {
            let (name, stats) = l.split_once(':')?;
            let calls = stats
                .split(',')
                .find_map(|kv| kv.strip_prefix("calls="))?
                .parse()
                .ok()?;
            Some((name.to_owned(), calls))
        })
        .filter(|(name, _)| name != "info" && !name.starts_with("config"))
        .collect()
}

/// A move costs one round trip to Redis: one script call, whatever the variant, once this
/// process has seen the match.
#[tokio::test]
async fn one_redis_round_trip_per_move() {
    let redis = arbiter_testkit::redis().await;
    let m = redis_matches(redis.secure(USER), Retention::default()).await;
    let client = redis::Client::open(redis.url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    for (variant, moves) in [
        (
            Variant::Bughouse,
            vec![
                (A, White, "e4"),
                (A, Black, "d5"),
                (A, White, "exd5"),
                (B, White, "Nf3"),
                (B, Black, "P@e4"),
            ],
        ),
        (
            Variant::Chess,
            vec![
                (A, White, "e4"),
                (A, Black, "e5"),
                (A, White, "Nf3"),
                (A, Black, "Nc6"),
            ],
        ),
        (
            Variant::Glinski,
            vec![(A, White, "f5f6"), (A, Black, "e7e6")],
        ),
    ] {
        let t = create(&m, creation(variant, "trips")).await;
        // Warm: the creation's reply is this process's snapshot. Scripts are loaded once.
        let mut plies = [0u32; 2];
        let (b0, c0, t0) = moves[0];
        mv(&m, &t, b0, c0, t0, 0).await.unwrap();
        plies[b0.index()] += 1;
        let _: () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query_async(&mut conn)
            .await
            .unwrap();
        for &(board, color, text) in &moves[1..] {
            mv(&m, &t, board, color, text, plies[board.index()])
                .await
                .unwrap();
            plies[board.index()] += 1;
        }
        // Commandstats counts the commands scripts run too: one script call per move; its reads
        // (the guard, then the changed fields for the reply) are the script's own, and no move
        // reads the whole record.
        let calls = command_calls(&mut conn).await;
        let n = (moves.len() - 1) as u64;
        let scripts =
            calls.get("evalsha").copied().unwrap_or(0) + calls.get("eval").copied().unwrap_or(0);
        assert_eq!(
            scripts, n,
            "{variant:?}: one script call per move: {calls:?}"
        );
        // The guard, the clock's guard, the deadlines before and after, the reply.
        assert!(
            calls.get("hmget").copied().unwrap_or(0) <= 5 * n,
            "{calls:?}"
        );
        assert!(!calls.contains_key("hgetall"), "{calls:?}");
        assert!(
            calls.get("exists").copied().unwrap_or(0) <= 2 * n,
            "{calls:?}"
        );
        for plain in ["get", "lrange", "hlen"] {
            assert!(!calls.contains_key(plain), "{calls:?}");
        }
    }
}

/// Two replicas on one Redis play the same matches: each judges on its own (often stale)
/// snapshot, and the guards make every move apply exactly once, a retry through the other
/// replica included.
#[tokio::test]
async fn two_replicas_share_matches() {
    let redis = arbiter_testkit::redis().await;
    let one = redis_matches(redis.secure(USER), Retention::default()).await;
    let two = redis_matches(redis.secure(USER), Retention::default()).await;
    let t = create(&one, creation(Variant::Chess, "replicas")).await;
    // Replica two has never seen the match; replica one's snapshot goes stale at every move.
    let moves = ["e4", "e5", "Nf3", "Nc6", "Bb5", "a6"];
    for (ply, text) in moves.iter().enumerate() {
        let m = if ply % 2 == 0 { &one } else { &two };
        let color = if ply % 2 == 0 { White } else { Black };
        let a = mv(m, &t, A, color, text, ply as u32).await.unwrap();
        assert!(!a.duplicate);
        assert_eq!(a.record.boards[0].ply, ply as u32 + 1);
        // The retry arrives at the other replica: recognised, not applied again.
        let other = if ply % 2 == 0 { &two } else { &one };
        let again = mv(other, &t, A, color, text, ply as u32).await.unwrap();
        assert!(again.duplicate);
    }
    // A stale snapshot never lets a wrong move through: the other replica moved the board on.
    let e = mv(&one, &t, A, Black, "Nf6", 5).await.unwrap_err();
    assert_eq!(e.reason(), Some("STALE_PLY"));
    assert_eq!(one.get(&t.id).await.unwrap(), two.get(&t.id).await.unwrap());
    // Bughouse: the replicas take turns on the two boards; reserves stay whole.
    let t = create(&two, creation(Variant::Bughouse, "replicas-bug")).await;
    mv(&one, &t, A, White, "e4", 0).await.unwrap();
    mv(&two, &t, A, Black, "d5", 1).await.unwrap();
    mv(&one, &t, A, White, "exd5", 2).await.unwrap();
    mv(&two, &t, B, White, "e4", 0).await.unwrap();
    let a = mv(&one, &t, B, Black, "P@e5", 1).await.unwrap();
    assert_eq!(units(&a.record), 64);
}

/// A match created again under an old id (after the first was removed) refuses the old tokens,
/// even at a replica whose snapshot still shows the old match.
#[tokio::test]
async fn a_recreated_match_refuses_old_tokens() {
    let redis = arbiter_testkit::redis().await;
    let one = redis_matches(redis.secure(USER), Retention::default()).await;
    let two = redis_matches(redis.secure(USER), Retention::default()).await;
    let mut c = creation(Variant::Chess, "room");
    c.match_id = "room-1".into();
    let old = create(&one, c.clone()).await;
    // Replica two keeps a snapshot of the first match.
    two.get(&old.id).await.unwrap();
    let client = redis::Client::open(redis.url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("DEL")
        .arg("game:{room-1}:state")
        .arg("game:{room-1}:events")
        .query_async(&mut conn)
        .await
        .unwrap();
    c.players = vec!["zoe".into(), "yan".into()];
    let new = create(&one, c.clone()).await;
    for (m, name) in [(&two, "stale replica"), (&one, "fresh replica")] {
        let e = mv(m, &old, A, White, "e4", 0).await.unwrap_err();
        assert!(
            matches!(e, MatchError::PermissionDenied(_)),
            "{name}: {e:?}"
        );
        let e = m
            .claim_draw(
                &old.id,
                seat(A, White),
                Some(old.token(A, White)),
                DrawClaim::ThreefoldRepetition,
                None,
            )
            .await
            .unwrap_err();
        assert!(
            matches!(e, MatchError::PermissionDenied(_)),
            "{name}: {e:?}"
        );
    }
    assert_eq!(
        two.get(&new.id).await.unwrap().boards[0].ply,
        0,
        "nothing applied"
    );
    mv(&two, &new, A, White, "e4", 0).await.unwrap();
}

/// A record that cannot be decoded is reported as corrupt (DATA_LOSS for clients), not as an
/// outage.
#[tokio::test]
async fn a_corrupt_record_is_data_loss() {
    let redis = arbiter_testkit::redis().await;
    let m = redis_matches(redis.secure(USER), Retention::default()).await;
    let t = create(&m, creation(Variant::Chess, "corrupt")).await;
    let client = redis::Client::open(redis.url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("HSET")
        .arg(format!("game:{{{}}}:state", t.id))
        .arg("ply:A")
        .arg("not a number")
        .query_async(&mut conn)
        .await
        .unwrap();
    let e = m.get(&t.id).await.unwrap_err();
    assert!(
        matches!(
            e,
            MatchError::Store(arbiter_matches::store::StoreError::Corrupt(_))
        ),
        "{e:?}"
    );
    let status = tonic::Status::from(arbiter_kit::ApiError::from(e));
    assert_eq!(status.code(), tonic::Code::DataLoss);
}
