use super::*;
use crate::position::perft;

fn pos(text: &str) -> Glinski {
    Glinski::from_text(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn mv(p: &Glinski, text: &str) -> HexMove {
    p.parse_move(text, Notation::Auto, Locale::English)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn play(p: &Glinski, moves: &[&str]) -> Glinski {
    let mut p = *p;
    for m in moves {
        let m = mv(&p, m);
        p.play_unchecked(m);
    }
    p
}

#[test]
fn start_position_perft() {
    let start = Glinski::new();
    assert_eq!(start.to_text(), START);
    assert_eq!(perft(&start, 1), 51);
    assert_eq!(perft(&start, 2), 2586);
    assert_eq!(perft(&start, 3), 137_858);
}

#[test]
fn position_strings_round_trip() {
    for text in [
        START,
        "1/qbk/n1P2/6r/1p1p1p1p1/9P1/3P1p5/4P1Pp3/5B1P3/11/2R1Q1KN3 b - 0 1",
        "k/3/5/7/p1p1p4/2P8/P3P6/11/11/11/5K5 b - 0 1",
        "k/3/5/7/9/11/11/11/2p5p2/p9p/1P3K3P1 w - 0 1",
    ] {
        let p = pos(text);
        assert_eq!(p.to_text(), text);
        assert_eq!(p.compute_hash(), p.zobrist());
    }
    // Missing trailing fields take their defaults.
    assert_eq!(
        pos("b/qbk/n1b1n/r5r/ppppppppp/11/5P5/4P1P4/3P1B1P3/2P2B2P2/1PRNQBKNRP1 w"),
        Glinski::new()
    );
}

#[test]
fn bad_position_strings_are_precise_errors() {
    let cases: &[(&str, &str, &str)] = &[
        ("", "position", "fields"),
        ("b/qbk w - 0 1", "placement", "11 rank fields"),
        (
            "bb/qbk/n1b1n/r5r/ppppppppp/11/5P5/4P1P4/3P1B1P3/2P2B2P2/1PRNQBKNRP1 w - 0 1",
            "placement",
            "rank 11 has 1 cells",
        ),
        (
            "b/qbk/n1b1n/r5r/ppppppppp/11/5P5/4P1P4/3P1B1P3/2P2B2P2/1PRNQBKNRP w - 0 1",
            "placement",
            "rank 1 has 11 cells, '1PRNQBKNRP' describes 10",
        ),
        (
            "b/qbk/n1b1n/r5r/ppppppppp/99999999999999999999/5P5/4P1P4/3P1B1P3/2P2B2P2/1PRNQBKNRP1 w - 0 1",
            "placement",
            "rank 6 has 11 cells",
        ),
        (
            "b/qbk/n1b1n/r5r/ppppppppp/0/5P5/4P1P4/3P1B1P3/2P2B2P2/1PRNQBKNRP1 w - 0 1",
            "placement",
            "length 0",
        ),
        (
            "b/qbk/n1b1n/r5r/ppppppppx/11/5P5/4P1P4/3P1B1P3/2P2B2P2/1PRNQBKNRP1 w - 0 1",
            "placement",
            "invalid piece letter 'x'",
        ),
        (
            "b/qbk/n1b1n/r5r/ppppppppp/11/5P5/4P1P4/3P1B1P3/2P2B2P2/1PRNQBKNRP1 x - 0 1",
            "turn",
            "'w' or 'b'",
        ),
        (
            "b/qbk/n1b1n/r5r/ppppppppp/11/5P5/4P1P4/3P1B1P3/2P2B2P2/1PRNQBKNRP1 w j5 0 1",
            "en_passant",
            "no file j",
        ),
        (
            "b/qbk/n1b1n/r5r/ppppppppp/11/5P5/4P1P4/3P1B1P3/2P2B2P2/1PRNQBKNRP1 w - x 1",
            "halfmove_clock",
            "number",
        ),
        (
            "b/qbk/n1b1n/r5r/ppppppppp/11/5P5/4P1P4/3P1B1P3/2P2B2P2/1PRNQBKNRP1 w - 0 0",
            "fullmove_number",
            "from 1 to 1000000",
        ),
        (
            "b/qbq/n1b1n/r5r/ppppppppp/11/5P5/4P1P4/3P1B1P3/2P2B2P2/1PRNQBKNRP1 w - 0 1",
            "placement",
            "black has 0 kings",
        ),
        (
            "P/3/5/7/9/11/11/11/11/11/k4K5 w - 0 1",
            "placement",
            "white pawn on f11",
        ),
        (
            "b/qbk/n1b1n/r5r/ppppppppp/Q10/5P5/4P1P4/3P1B1P3/2P2B2P2/1PRNQBKNRP1 w - 0 1",
            "placement",
            "beyond the starting set",
        ),
        // White to move while Black is in check from the rook on f2.
        (
            "k/3/5/7/9/11/11/11/11/5R5/6K4 w - 0 1",
            "placement",
            "in check",
        ),
        // e6 was not skipped by a black double step.
        (
            "b/qbk/n1b1n/r5r/ppppppppp/11/5P5/4P1P4/3P1B1P3/2P2B2P2/1PRNQBKNRP1 w e6 0 1",
            "en_passant",
            "double pawn step",
        ),
    ];
    for (text, field, fragment) in cases {
        let err = Glinski::from_text(text).expect_err(text);
        assert_eq!(err.field(), *field, "{text}: {err}");
        assert!(err.to_string().contains(fragment), "{text}: {err}");
    }
}

#[test]
fn pawn_double_step_from_any_start_cell_and_en_passant() {
    // A white pawn reaches f5 (a start cell) by capturing from e4, then double-steps.
    let p = pos("k/3/5/7/9/11/5p5/4P6/11/11/6K4 w - 0 1");
    let p = play(&p, &["e4xf5", "Kf11-e10", "f5-f7"]);
    assert_eq!(p.to_text(), "1/k2/5/7/4P4/11/11/11/11/11/6K4 b - 0 2");

    // After b7-b5, White pawns on a5 and c6 may capture on b6, removing the b5 pawn.
    let p = pos("k/3/5/7/p8/2P8/P10/11/11/11/5K5 b - 0 1");
    let after = play(&p, &["b7b5"]);
    assert_eq!(after.ep_cell().map(cell_name).as_deref(), Some("b6"));
    for capture in ["a5b6", "c6b6"] {
        let m = mv(&after, capture);
        assert!(after.is_capture(m));
        let mut q = after;
        q.play_unchecked(m);
        assert!(q.piece_at(parse_cell("b5").unwrap()).is_none());
        assert_eq!(q.compute_hash(), q.zobrist());
        assert_eq!(
            after.move_to_record(m, Locale::English),
            format!("{}xb6", &capture[..2])
        );
    }
    // The right lasts one move only.
    let later = play(&after, &["Kf1-e1", "Kf11-e10"]);
    assert!(
        later
            .parse_move("a5b6", Notation::Uci, Locale::English)
            .is_err()
    );
    // No en passant cell is kept when no pawn can take.
    let quiet = play(&pos("k/3/5/7/p8/11/11/11/11/11/5K5 b - 0 1"), &["b7b5"]);
    assert_eq!(quiet.ep_cell(), None);
}

#[test]
fn promotion_needs_a_piece_and_reads_both_forms() {
    let p = pos("1/3/1P3/7/9/11/11/11/11/11/k4K5 w - 0 1");
    let moves = p.legal_moves();
    assert_eq!(moves.iter().filter(|m| m.promotion.is_some()).count(), 4);
    let queen = mv(&p, "e9e10q");
    assert_eq!(queen, mv(&p, "e9-e10=Q"));
    assert_eq!(p.move_to_record(queen, Locale::English), "e9-e10=Q");
    assert_eq!(p.move_to_record(queen, Locale::Italian), "e9-e10=D");
    assert_eq!(mv(&p, "e9e10n").promotion, Some(Role::Knight));
    let err = p.parse_move("e9e10", Notation::Auto, Locale::English);
    assert!(matches!(
        err,
        Err(MoveError::Illegal {
            reason: IllegalReason::PromotionRequired,
            ..
        })
    ));
    let err = p.parse_move("e9e10k", Notation::Auto, Locale::English);
    assert!(matches!(
        err,
        Err(MoveError::Illegal {
            reason: IllegalReason::BadPromotion,
            ..
        })
    ));
}

#[test]
fn stalemate_scores_three_quarters_to_the_stalemating_side() {
    // The white king on f9 covers all five cells around the black king on f11.
    let p = pos("k/3/2K2/7/9/11/11/11/11/11/10N b - 0 1");
    assert!(p.legal_moves().is_empty());
    assert!(!p.is_check());
    let outcome = p.terminal().unwrap();
    assert_eq!(outcome.reason, EndReason::Stalemate);
    assert_eq!(outcome.score.to_string(), "3/4-1/4");
    assert_eq!(outcome.score.quarters(Color::White), 3);
}

#[test]
fn checkmate_and_dead_position() {
    // The rook on d9 checks along e10; the king on f9 covers every flight cell.
    let p = pos("k/3/R1K2/7/9/11/11/11/11/11/11 b - 0 1");
    let outcome = p.terminal().unwrap();
    assert_eq!(outcome.reason, EndReason::Checkmate);
    assert_eq!(outcome.score.to_string(), "1-0");
    // The mating move is recorded with '#'.
    let before = pos("k/3/2K2/7/9/11/11/11/11/11/3R7 w - 0 1");
    let m = mv(&before, "Rd1-d9");
    assert_eq!(before.move_to_record(m, Locale::English), "Rd1-d9#");
    // King against king only.
    let bare = pos("k/3/5/7/9/11/11/11/11/11/5K5 w - 0 1");
    assert_eq!(bare.terminal().unwrap().reason, EndReason::DeadPosition);
    assert!(!bare.can_possibly_mate(Color::White));
    // Two knights are not dead on this board.
    let knights = pos("k/3/5/7/9/11/11/11/11/11/4NKN4 w - 0 1");
    assert_eq!(knights.terminal(), None);
    assert!(knights.can_possibly_mate(Color::White));
    assert!(!knights.can_possibly_mate(Color::Black));
}

#[test]
fn move_parsing_errors_are_precise() {
    let p = Glinski::new();
    let syntax = |t: &str, n: Notation| {
        assert!(
            matches!(
                p.parse_move(t, n, Locale::English),
                Err(MoveError::Syntax { .. })
            ),
            "{t}"
        );
    };
    for t in [
        "", "j4j5", "a7a8", "f5", "f5-", "f5f6qq", "Xf5f6", "f5f6=", "é4e5", "f5f06x",
    ] {
        syntax(t, Notation::Auto);
    }
    syntax("Qe1-c3", Notation::Uci);
    syntax("f5-f6", Notation::Uci);
    let illegal = |t: &str| match p.parse_move(t, Notation::Auto, Locale::English) {
        Err(MoveError::Illegal { reason, .. }) => reason,
        other => panic!("{t}: {other:?}"),
    };
    assert_eq!(
        illegal("f6f7"),
        IllegalReason::NoPiece {
            square: "f6".into()
        }
    );
    assert_eq!(
        illegal("f7f6"),
        IllegalReason::WrongSide {
            square: "f7".into()
        }
    );
    assert_eq!(illegal("f5f8"), IllegalReason::CannotReach);
    assert_eq!(illegal("e1e5"), IllegalReason::Blocked);
    assert_eq!(illegal("Ne1-c3"), IllegalReason::NoMatchingMove);
    // The black rook on f8 pins the white knight on f4 against the king on f1.
    let pinned = pos("k/3/5/3r3/9/11/11/5N5/11/11/5K5 w - 0 1");
    assert_eq!(
        match pinned.parse_move("f4g6", Notation::Auto, Locale::English) {
            Err(MoveError::Illegal { reason, .. }) => reason,
            other => panic!("{other:?}"),
        },
        IllegalReason::LeavesKingInCheck
    );
    // Record and coordinate forms read the same move; suffixes are ignored on input.
    let m = mv(&p, "f5f6");
    for t in ["f5-f6", "Pf5-f6", "f5-f6+", "f5f6!?"] {
        assert_eq!(mv(&p, t), m, "{t}");
    }
    assert_eq!(p.move_to_record(m, Locale::English), "f5-f6");
}

#[test]
fn null_move_and_hash_stay_consistent() {
    let p = play(&Glinski::new(), &["f5f6", "e7e6"]);
    assert_eq!(p.compute_hash(), p.zobrist());
    let n = p.null_move().unwrap();
    assert_eq!(n.turn(), Color::Black);
    assert_eq!(n.compute_hash(), n.zobrist());
    assert_eq!(n.null_move().unwrap().zobrist(), p.zobrist());
}

#[test]
fn repetition_ignores_an_unusable_en_passant_right() {
    // After c7-c5 the white pawn on b5 may take on c6: the right is part of the key.
    let free = play(&pos("k/3/5/7/1p7/11/1P9/11/11/11/5K5 b - 0 1"), &["c7c5"]);
    assert!(free.ep_cell().is_some());
    assert_ne!(free.repetition_key(), {
        let mut p = free;
        p.ep = None;
        p.compute_hash()
    });
}

#[test]
fn game_records_read_and_write_with_the_variant_tag() {
    use crate::pgn::read_games;
    // Lenient input (coordinate and record forms mixed, Italian letters written back).
    let text = "[Variant \"Glinski\"]\n\n1. f5f6 e7-e6 2. Qe1-c3 Qe10-e7 *";
    let mut g = read_games(text).unwrap().remove(0);
    let game = g.validate(Locale::English, Locale::Italian).unwrap();
    assert_eq!(game.ply(), 4);
    let written = g.to_string();
    assert!(written.contains("[Variant \"Glinski\"]"), "{written}");
    assert!(
        written.contains("1. f5-f6 e7-e6 2. De1-c3 De10-e7 *"),
        "{written}"
    );
    // A stalemate game ends 3/4-1/4 and reads back.
    let text = "[Variant \"Glinski\"]\n[SetUp \"1\"]\n[FEN \"k/3/2K2/7/9/11/11/11/11/11/10N b - 0 1\"]\n\n3/4-1/4";
    let mut g = read_games(text).unwrap().remove(0);
    let game = g.validate(Locale::English, Locale::English).unwrap();
    assert_eq!(
        game.outcome().map(|o| o.score.to_string()).as_deref(),
        Some("3/4-1/4")
    );
    assert!(g.to_string().trim_end().ends_with("3/4-1/4"));
}

#[test]
fn repetition_move_rules_and_flag_fall_through_game() {
    use crate::game::Game;
    use crate::outcome::DrawClaim;
    let mut game = Game::new(Glinski::new());
    // Knights out and back: the start position recurs every four plies.
    let cycle = ["Nd1-c3", "Nd9-c6", "Nc3-d1", "Nc6-d9"];
    for (i, m) in cycle.iter().cycle().take(16).enumerate() {
        assert_eq!(game.outcome(), None, "ply {i}");
        game.play_text(m, Notation::San, Locale::English).unwrap();
        if i == 7 {
            assert_eq!(game.repetition_count(), 3);
            assert!(
                game.claimable_draws()
                    .contains(&DrawClaim::ThreefoldRepetition)
            );
        }
    }
    assert_eq!(
        game.automatic_outcome().map(|o| o.reason),
        Some(EndReason::FivefoldRepetition)
    );

    // 75 moves without capture or pawn move end the game; 50 can be claimed.
    let quiet = pos("k/3/5/7/9/11/11/11/11/11/4NKN4 w - 99 80");
    let mut game = Game::new(quiet);
    game.play_text("Ne1-c2", Notation::San, Locale::English)
        .unwrap();
    assert!(game.claimable_draws().contains(&DrawClaim::FiftyMoveRule));
    let late = pos("k/3/5/7/9/11/11/11/11/11/4NKN4 w - 149 80");
    let mut game = Game::new(late);
    game.play_text("Ne1-c2", Notation::San, Locale::English)
        .unwrap();
    assert_eq!(
        game.automatic_outcome().map(|o| o.reason),
        Some(EndReason::SeventyFiveMoveRule)
    );

    // Flag fall: a loss, unless the opponent has only a bare king.
    let mut game = Game::new(pos("k/3/5/7/9/11/11/11/11/11/4NKN4 w - 0 1"));
    assert_eq!(
        game.flag_fall(Color::White).unwrap().score.to_string(),
        "1/2-1/2"
    );
    let mut game = Game::new(pos("k/3/5/7/9/11/11/11/11/11/4NKN4 w - 0 1"));
    assert_eq!(
        game.flag_fall(Color::Black).unwrap().score.to_string(),
        "1-0"
    );
}
