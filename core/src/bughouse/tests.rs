use super::*;
use crate::position::MoveError;

fn play(m: &mut Match, board: BoardId, color: Color, mv: &str) -> Vec<MatchEvent> {
    let ply = m.ply(board);
    let events = m
        .play(Seat::new(board, color), mv, ply, Locale::English)
        .unwrap_or_else(|e| panic!("{board} {mv}: {e}"));
    assert_eq!(m.units(), UNITS, "after {board} {mv}");
    events
}

#[test]
fn seats_teams_and_partners() {
    let wa = Seat::new(BoardId::A, Color::White);
    assert_eq!(wa.partner(), Seat::new(BoardId::B, Color::Black));
    assert_eq!(wa.team(), Team::One);
    assert_eq!(wa.partner().team(), Team::One);
    assert_eq!(Seat::new(BoardId::B, Color::White).team(), Team::Two);
    assert_eq!(
        Seat::ALL.iter().filter(|s| s.team() == Team::One).count(),
        2
    );
}

#[test]
fn captures_feed_the_partner_and_drops_use_the_reserve() {
    let mut m = Match::new();
    assert_eq!(m.units(), UNITS);
    play(&mut m, BoardId::A, Color::White, "e4");
    play(&mut m, BoardId::A, Color::Black, "d5");
    // White A takes a black pawn: it goes to White A's partner, Black on B, as a black pawn.
    let events = play(&mut m, BoardId::A, Color::White, "exd5");
    assert_eq!(
        events[1],
        MatchEvent::Reserve {
            board: BoardId::B,
            color: Color::Black,
            pieces: "p".into()
        }
    );
    assert_eq!(m.reserve(Seat::new(BoardId::B, Color::Black)), "p");
    play(&mut m, BoardId::B, Color::White, "Nf3");
    let events = play(&mut m, BoardId::B, Color::Black, "P@e4");
    assert_eq!(
        events[1],
        MatchEvent::Reserve {
            board: BoardId::B,
            color: Color::Black,
            pieces: String::new()
        }
    );
    assert_eq!(
        m.to_bfen(),
        "rnbqkbnr/ppp1pppp/8/3P4/8/8/PPPP1PPP/RNBQKBNR[] b KQkq - 0 2 | \
         rnbqkbnr/pppppppp/8/8/4p3/5N2/PPPPPPPP/RNBQKB1R[] w KQkq - 0 2"
    );
    assert_eq!(
        Match::from_bfen(&m.to_bfen()).unwrap().to_bfen(),
        m.to_bfen()
    );
}

#[test]
fn refused_actions_leave_the_match_unchanged() {
    let mut m = Match::new();
    play(&mut m, BoardId::A, Color::White, "e4");
    let before = m.clone();
    let wa = Seat::new(BoardId::A, Color::White);
    let ba = Seat::new(BoardId::A, Color::Black);
    // A retry of the same move with the old ply is stale, not applied twice.
    assert_eq!(
        m.play(wa, "e4", 0, Locale::English),
        Err(MatchError::StalePly {
            board: BoardId::A,
            expected: 0,
            actual: 1
        })
    );
    assert_eq!(
        m.play(wa, "d4", 1, Locale::English),
        Err(MatchError::NotYourTurn { seat: wa })
    );
    assert!(matches!(
        m.play(ba, "N@f6", 1, Locale::English),
        Err(MatchError::Move(MoveError::Illegal { .. }))
    ));
    assert!(matches!(
        m.play(ba, "xyz", 1, Locale::English),
        Err(MatchError::Move(MoveError::Syntax { .. }))
    ));
    assert_eq!(m, before);
}

#[test]
fn the_first_board_to_end_decides_the_match() {
    // Fool's mate is no bughouse mate: a drop on g3 or f2 would block the queen.
    let mut m = Match::new();
    for (color, mv) in [
        (Color::White, "f3"),
        (Color::Black, "e5"),
        (Color::White, "g4"),
    ] {
        play(&mut m, BoardId::B, color, mv);
    }
    let events = play(&mut m, BoardId::B, Color::Black, "Qh4+");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(m.outcome(), None);
    // A contact mate on board B by Black B (team 1) ends the match.
    let mut m = Match::from_bfen(
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1 | \
         6k1/8/8/2b5/8/8/6PP/7K[q] b - - 0 1",
    )
    .unwrap();
    let events = m
        .play(
            Seat::new(BoardId::B, Color::Black),
            "Q@g1",
            0,
            Locale::English,
        )
        .unwrap();
    let MatchEvent::End(outcome) = events.last().unwrap() else {
        panic!("{events:?}")
    };
    assert_eq!(outcome.reason, EndReason::Checkmate);
    assert_eq!(outcome.board, Some(BoardId::B));
    assert_eq!(outcome.winner(), Some(Team::One));
    assert_eq!(outcome.score.to_string(), "1-0");
    assert_eq!(
        m.play(
            Seat::new(BoardId::A, Color::White),
            "e4",
            0,
            Locale::English
        ),
        Err(MatchError::MatchOver)
    );
    // Resignation and flag fall lose for the team.
    let mut m = Match::new();
    let o = m.resign(Seat::new(BoardId::A, Color::White)).unwrap();
    assert_eq!(o.winner(), Some(Team::Two));
    assert_eq!(
        m.flag_fall(Seat::new(BoardId::B, Color::Black)),
        Err(MatchError::MatchOver)
    );
    let mut m = Match::new();
    let o = m.flag_fall(Seat::new(BoardId::B, Color::White)).unwrap();
    assert_eq!(
        (o.winner(), o.reason),
        (Some(Team::One), EndReason::Timeout)
    );
    let mut m = Match::new();
    assert_eq!(m.agree_draw().unwrap().score, Score::DRAW);
}

/// Random legal moves on both boards, in random order: 64 units after every step.
#[test]
fn random_matches_conserve_every_unit() {
    let mut rng = 0x1234_5678_9abc_def1u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut drops = 0;
    for _ in 0..30 {
        let mut m = Match::new();
        for _ in 0..300 {
            if m.outcome().is_some() {
                break;
            }
            let board = BoardId::BOTH[(next() % 2) as usize];
            let pos = *m.board(board);
            let moves = pos.legal_moves();
            if moves.is_empty() {
                continue; // this player waits
            }
            let mv = moves[(next() % moves.len() as u64) as usize];
            drops += usize::from(mv.is_drop());
            let uci = pos.move_to_uci(mv);
            play(&mut m, board, pos.turn(), &uci);
        }
    }
    assert!(drops > 100, "{drops}");
}

const FICS: &str = r#"[Event "FICS rated bughouse game"]
[Site "FICS freechess.org"]
[Date "2024.03.01"]
[Time "20:12:05"]
[WhiteA "alpha"]
[WhiteAElo "1850"]
[BlackA "bravo"]
[BlackAElo "1790"]
[WhiteB "charlie"]
[WhiteBElo "1902"]
[BlackB "delta"]
[BlackBElo "1711"]
[TimeControl "180+0"]
[Lag "Lag: alpha 0.2"]
[Result "0-1"]

1A. e4{179.80} 1a. d5{179.52} 1B. d4{179.40} 2A. exd5{178.11}
1b. Nf6{178.95} 2a. Qxd5{177.02} 2B. c4{177.33} 2b. P@e4{176.10} 3A. Nc3 {175.90}
3a. Qa5{175.44} 3B. Nc3{174.20} 3b. e5{173.81} 4B. Qa4{172.0} 4b. Bb4{170.3}
{charlie resigns} 0-1
"#;

const CHESS_COM: &str = r#"[Event "Live Chess - Bughouse"]
[Site "Chess.com"]
[WhiteA "a1"]
[BlackA "a2"]
[WhiteB "b1"]
[BlackB "b2"]
[Result "*"]

1A.e4 {[%clk 0:02:59.9]} 1B.Nf3 {[%clk 0:02:59.1]} 1a.e5 {[%clk 0:02:58]} 1b.d5
{[%clk 0:02:58.4]} 2A.Nf3 $1 {[%clk 0:02:57]} 2a.Nc6 (2a. d6 3A. d4) {[%clk 0:02:56]}
*
"#;

#[test]
fn fics_and_chess_com_files_import_and_round_trip() {
    let mut games = read_bpgn(&format!("{FICS}\n{CHESS_COM}")).unwrap();
    assert_eq!(games.len(), 2);
    let fics = &mut games[0];
    assert_eq!(fics.tag("WhiteB"), Some("charlie"));
    assert_eq!(fics.moves.len(), 14);
    assert_eq!(fics.moves[0].clock, Some(179.80));
    let m = fics.validate(Locale::English).unwrap();
    assert_eq!(m.units(), UNITS);
    assert_eq!(m.reserve(Seat::new(BoardId::B, Color::White)), "P");
    assert_eq!(fics.moves[13].san, "Bb4");
    let written = fics.to_string();
    assert!(written.starts_with("[Event \"FICS rated bughouse game\"]\n[Site"));
    assert!(
        written.contains("1A. e4 {179.80} 1a. d5 {179.52} 1B. d4 {179.40}"),
        "{written}"
    );
    assert!(
        written.trim_end().ends_with("4b. Bb4 {170.30} 0-1"),
        "{written}"
    );
    // Strict output reads back to the same game.
    let mut again = read_bpgn(&written).unwrap().remove(0);
    again.validate(Locale::English).unwrap();
    assert_eq!(again.moves, fics.moves);
    assert_eq!(again.to_string(), written);

    let chess_com = &mut games[1];
    assert_eq!(chess_com.moves.len(), 6, "the variation is skipped");
    assert_eq!(chess_com.moves[0].clock, Some(179.9));
    assert_eq!(chess_com.moves[2].clock, Some(178.0));
    chess_com.validate(Locale::English).unwrap();
    assert_eq!(chess_com.result.as_deref(), Some("*"));
}

#[test]
fn bpgn_errors_name_the_move() {
    let mut g = read_bpgn("1A. e4 1a. e5 1A. Nf3 1b. e5").unwrap().remove(0);
    let err = g.validate(Locale::English).unwrap_err();
    // Black cannot move first on board B.
    assert!(matches!(err, BpgnError::Move { index: 3, .. }), "{err}");
    assert!(err.to_string().contains("move 4 (1b. e5)"), "{err}");
    for bad in [
        "e4 e5",
        "1A. e4 {open",
        "1A. e4 (1a. e5",
        "[Event x]\n1A. e4",
        // Found by the bpgn fuzz target: a tag named '%' was written as a line that reads back
        // as a clock comment.
        "[\t% \"*\"]\n*",
    ] {
        assert!(read_bpgn(bad).is_err(), "{bad}");
    }
    let mut g = read_bpgn("[FEN \"not | a bfen\"]\n1A. e4")
        .unwrap()
        .remove(0);
    assert!(matches!(
        g.validate(Locale::English),
        Err(BpgnError::Start { .. })
    ));
}

#[test]
fn bpgn_reading_is_bounded() {
    use super::bpgn::{MAX_BPGN_GAMES, MAX_BPGN_MOVES};
    let long: String = (1..=MAX_BPGN_MOVES / 2 + 1)
        .map(|n| format!("{n}A. Nf3 {n}a. Nf6 "))
        .collect();
    let e = read_bpgn(&long).unwrap_err();
    assert!(e.to_string().contains("more than 8192 moves"), "{e}");
    let many = "[Event \"x\"]\n1A. e4 *\n\n".repeat(MAX_BPGN_GAMES + 1);
    let e = read_bpgn(&many).unwrap_err();
    assert!(e.to_string().contains("more than 10000 games"), "{e}");
    // A huge token is quoted in part only.
    let e = read_bpgn(&"x".repeat(100_000)).unwrap_err();
    assert!(e.to_string().len() < 200, "{}", e.to_string().len());
    // Deep variations do not recurse.
    let deep = format!("1A. e4 {}{} *", "( e4 ".repeat(50_000), ") ".repeat(50_000));
    assert_eq!(read_bpgn(&deep).unwrap()[0].moves.len(), 1);
}

#[test]
fn rule_options_read_and_write_back() {
    use crate::any::{AnyPosition, RuleOptions};
    use crate::variant::Variant;
    let read = |items: &[&str]| {
        RuleOptions::parse(items.iter().copied())
            .unwrap()
            .bughouse()
    };
    assert_eq!(read(&[]).unwrap(), BughouseRules::default());
    let both = read(&["illegal_move=loses", "repetition=threefold"]).unwrap();
    assert_eq!(both.illegal_move, IllegalMoveRule::Loses);
    assert!(both.threefold);
    // Only what differs from the defaults is written, in a fixed order.
    let written: Vec<String> = both
        .options()
        .iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    assert_eq!(written, ["illegal_move=loses", "repetition=threefold"]);
    assert!(
        read(&["illegal_move=refused", "repetition=off"])
            .unwrap()
            .options()
            .is_empty()
    );
    for bad in [
        "illegal_move=sometimes",
        "repetition=fivefold",
        "stalemate=wins",
    ] {
        assert!(read(&[bad]).is_err(), "{bad}");
    }
    // A bughouse board takes the match's options; crazyhouse has none.
    let options = RuleOptions::parse(["illegal_move=loses"]).unwrap();
    assert!(AnyPosition::with_rules(Variant::Bughouse, None, &options).is_ok());
    assert!(AnyPosition::with_rules(Variant::Crazyhouse, None, &options).is_err());
}

#[test]
fn the_board_key_ignores_reserves_and_promotion_marks() {
    let plain =
        Crazyhouse::from_fen("4k3/8/8/8/8/8/8/Q3K3 w - - 0 1", HouseRules::Bughouse).unwrap();
    let held =
        Crazyhouse::from_fen("4k3/8/8/8/8/8/8/Q3K3[Pn] w - - 0 1", HouseRules::Bughouse).unwrap();
    let promoted =
        Crazyhouse::from_fen("4k3/8/8/8/8/8/8/Q~3K3 w - - 0 1", HouseRules::Bughouse).unwrap();
    assert_eq!(plain.board_repetition_key(), held.board_repetition_key());
    assert_eq!(
        plain.board_repetition_key(),
        promoted.board_repetition_key()
    );
    assert_ne!(plain.repetition_key(), held.repetition_key());
    let moved =
        Crazyhouse::from_fen("4k3/8/8/8/8/8/8/Q3K3 b - - 0 1", HouseRules::Bughouse).unwrap();
    assert_ne!(plain.board_repetition_key(), moved.board_repetition_key());
}
