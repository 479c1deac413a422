use super::*;
use crate::game::Game;
use crate::position::perft;

fn pos(text: &str) -> Byzantine {
    Byzantine::from_text(text, ByzantineVariant::Plain, ByzantineRules::default()).unwrap()
}

fn citadel(text: &str) -> Byzantine {
    Byzantine::from_text(text, ByzantineVariant::Citadel, ByzantineRules::default()).unwrap()
}

fn play(p: &Byzantine, mv: &str) -> Byzantine {
    let m = p
        .parse_move(mv, Notation::Uci, Locale::English)
        .unwrap_or_else(|e| panic!("{mv}: {e}"));
    let mut next = *p;
    next.play_unchecked(m);
    next
}

fn reason(p: &Byzantine, mv: &str) -> IllegalReason {
    match p.parse_move(mv, Notation::Uci, Locale::English) {
        Err(MoveError::Illegal { reason, .. }) => reason,
        other => panic!("{mv}: expected illegal, got {other:?}"),
    }
}

#[test]
fn start_position_round_trips() {
    for (text, cit) in [
        (START, ByzantineVariant::Plain),
        (CITADEL_START, ByzantineVariant::Citadel),
    ] {
        let p = Byzantine::from_text(text, cit, ByzantineRules::default()).unwrap();
        assert_eq!(p.to_text(), text);
        assert_eq!(p.zobrist(), p.compute_hash());
    }
    let p = Byzantine::start(ByzantineVariant::Plain, ByzantineRules::default());
    assert_eq!(p.piece_at(48), Some((Color::White, ByzRole::King, false))); // d1
    assert_eq!(p.piece_at(56), Some((Color::Black, ByzRole::King, false))); // d9
    assert_eq!(p.piece_at(1), Some((Color::White, ByzRole::Pawn, true))); // a2 P+
}

#[test]
fn perft_spec_vectors() {
    let p = Byzantine::start(ByzantineVariant::Plain, ByzantineRules::default());
    assert_eq!(perft(&p, 1), 14);
    assert_eq!(perft(&p, 2), 196);
    assert_eq!(perft(&p, 3), 2912);
    // The options cannot matter this early: no stalemate, and no two pawns can face each other
    // before the fourth ply.
    let other = Byzantine::start(
        ByzantineVariant::Plain,
        ByzantineRules {
            stalemate: StalemateRule::StalematedLoses,
            facing_pawns: false,
        },
    );
    for d in 1..=4 {
        assert_eq!(perft(&other, d), perft(&p, d), "depth {d}");
    }
}

#[test]
fn piece_geometry() {
    // Elephants always have exactly two targets on four rings.
    for targets in &ELEPHANT {
        assert_eq!(targets.count_ones(), 2);
    }
    // A rook alone on a ring reaches the 15 other cells of it and the 3 others of its number.
    assert_eq!(rook_attacks(0, 0).count_ones(), 18);
    assert_eq!(rook_attacks(0, 0) & 1, 0);
    // Numbers wrap: a king on a1 touches a16 and b16.
    assert_ne!(KING[0] & (1 << 15), 0);
    assert_ne!(KING[0] & (1 << 31), 0);
}

#[test]
fn checkmate() {
    let p = pos("k6R8/4R11/16/8K7 b 0 1");
    assert!(p.is_check());
    assert_eq!(
        p.terminal(),
        Some(Outcome::win(Color::White, EndReason::Checkmate))
    );
    assert!(p.legal_moves().is_empty());
}

#[test]
fn stalemate_under_both_options() {
    let text = "k15/4R11/1R13R/8K7 b 0 1";
    let p = pos(text);
    assert!(!p.is_check());
    assert_eq!(
        p.terminal(),
        Some(Outcome::win(Color::Black, EndReason::Stalemate))
    );
    let loses = Byzantine::from_text(
        text,
        ByzantineVariant::Plain,
        ByzantineRules {
            stalemate: StalemateRule::StalematedLoses,
            ..ByzantineRules::default()
        },
    )
    .unwrap();
    assert_eq!(
        loses.terminal(),
        Some(Outcome::win(Color::White, EndReason::Stalemate))
    );
}

#[test]
fn bare_king_lost_reprieved_and_both_bare() {
    // White to move, black bare: black has lost, nothing moves.
    let lost = pos("k15/4R11/16/8K7 w 0 1");
    assert_eq!(
        lost.terminal(),
        Some(Outcome::win(Color::White, EndReason::BareKing))
    );
    assert!(lost.legal_moves().is_empty());

    // Black to move with a bare king: one move of reprieve; taking the last piece draws.
    let reprieve = pos("kR14/16/16/8K7 b 0 1");
    assert_eq!(reprieve.terminal(), None);
    let after = play(&reprieve, "a1a2");
    assert_eq!(after.terminal(), Some(Outcome::draw(EndReason::BareKing)));

    // Not taking it loses.
    let reprieve = pos("k3R11/16/16/8K7 b 0 1");
    let after = play(&reprieve, "a1b1");
    assert_eq!(
        after.terminal(),
        Some(Outcome::win(Color::White, EndReason::BareKing))
    );

    let both = pos("k15/16/16/8K7 w 0 1");
    assert_eq!(both.terminal(), Some(Outcome::draw(EndReason::BareKing)));
}

#[test]
fn facing_pawns_are_removed() {
    let p = pos("2P+1p-11/16/k15/8K7 w 0 1");
    let after = play(&p, "a3a4");
    assert_eq!(after.to_text(), "16/16/k15/8K7 b 0 1");
    assert_eq!(after.zobrist(), after.compute_hash());
    let off = Byzantine::from_text(
        "2P+1p-11/16/k15/8K7 w 0 1",
        ByzantineVariant::Plain,
        ByzantineRules {
            facing_pawns: false,
            ..ByzantineRules::default()
        },
    )
    .unwrap();
    let kept = play(&off, "a3a4");
    assert_eq!(kept.to_text(), "3P+p-11/16/k15/8K7 b 0 1");
}

#[test]
fn removal_that_exposes_the_king_is_illegal() {
    let text = "KP+1p-3r7N/16/16/8k7 w 0 1";
    let p = pos(text);
    assert!(!p.is_check());
    assert_eq!(reason(&p, "a2a3"), IllegalReason::LeavesKingInCheck);
    let off = Byzantine::from_text(
        text,
        ByzantineVariant::Plain,
        ByzantineRules {
            facing_pawns: false,
            ..ByzantineRules::default()
        },
    )
    .unwrap();
    assert!(
        off.parse_move("a2a3", Notation::Uci, Locale::English)
            .is_ok()
    );
}

#[test]
fn citadel_entry_draws_and_only_kings_enter_their_far_citadel() {
    let p = citadel("k15/4R6r4/16/9KR5/4 w 0 1");
    assert_eq!(reason(&p, "d11e3"), IllegalReason::CannotReach);
    assert_eq!(reason(&p, "d10e1"), IllegalReason::CannotReach);
    let after = play(&p, "d10e3");
    assert_eq!(after.to_text(), "k15/4R6r4/16/10R5/2K1 b 1 1");
    assert_eq!(
        after.terminal(),
        Some(Outcome::draw(EndReason::CitadelEntry))
    );
    assert!(after.legal_moves().is_empty());
    // The written position reads back.
    assert_eq!(citadel(&after.to_text()).to_text(), after.to_text());
    // A king elsewhere cannot enter.
    let far = citadel("k15/4R6r4/16/4K11/4 w 0 1");
    assert_eq!(reason(&far, "d5e3"), IllegalReason::CannotReach);
    // Plain Byzantine has no citadels.
    assert!(matches!(
        pos("k15/4R6r4/16/9K6 w 0 1").parse_move("d10e3", Notation::Uci, Locale::English),
        Err(MoveError::Syntax { .. })
    ));
}

#[test]
fn citadel_entry_is_legal_out_of_check() {
    // The white king on d10 is checked by the rook on d14 along ring d.
    let p = citadel("k15/16/16/9K3r2/4 w 0 1");
    assert!(p.is_check());
    let after = play(&p, "d10e3");
    assert_eq!(after.terminal().unwrap().reason, EndReason::CitadelEntry);
}

#[test]
fn repetition_through_game() {
    let mut g = Game::new(pos("k15/11n4/7R8/8K7 w 0 1"));
    for mv in [
        "c8c9", "a1a2", "c9c8", "a2a1", "c8c9", "a1a2", "c9c8", "a2a1",
    ] {
        g.play_text(mv, Notation::Uci, Locale::English).unwrap();
    }
    assert_eq!(g.repetition_count(), 3);
    assert_eq!(
        g.claimable_draws(),
        vec![crate::outcome::DrawClaim::ThreefoldRepetition]
    );
}

#[test]
fn text_errors() {
    for (text, cit) in [
        ("16/16/16 w 0 1", ByzantineVariant::Plain),
        ("k15/16/16/8K7 x 0 1", ByzantineVariant::Plain),
        ("k15/16/16/8K8 w 0 1", ByzantineVariant::Plain),
        ("k14/16/16/8K7 w 0 1", ByzantineVariant::Plain),
        ("kP15/16/16/8K7 w 0 1", ByzantineVariant::Plain),
        ("kR+14/16/16/8K7 w 0 1", ByzantineVariant::Plain),
        ("kX14/16/16/8K7 w 0 1", ByzantineVariant::Plain),
        ("16/16/16/8K7 w 0 1", ByzantineVariant::Plain),
        ("k15/16/16/8K7 w 0 1", ByzantineVariant::Citadel),
        ("k15/16/16/7/R3 w 0 1", ByzantineVariant::Citadel),
        ("k15/16/16/16/K3 w 0 1", ByzantineVariant::Citadel),
        ("k15/16/16/8K7 w 0 0", ByzantineVariant::Plain),
        ("k15/16/16/0K15 w 0 1", ByzantineVariant::Plain),
        ("kR14/16/16/8K7 w 0 1", ByzantineVariant::Plain),
        // Found by the `byzantine` fuzz target: a run length near usize::MAX overflowed.
        (
            "k18446744073709551615/16/16/8K7 w 0 1",
            ByzantineVariant::Plain,
        ),
        (
            "k15/16/16/8K7/18446744073709551615 w 0 1",
            ByzantineVariant::Citadel,
        ),
    ] {
        assert!(
            Byzantine::from_text(text, cit, ByzantineRules::default()).is_err(),
            "{text}"
        );
    }
    let p = Byzantine::start(ByzantineVariant::Plain, ByzantineRules::default());
    for bad in ["d2", "d2d", "x1x2", "d17d3", "d0d1", "e1d1", "d2d3d4"] {
        assert!(
            matches!(
                p.parse_move(bad, Notation::Uci, Locale::English),
                Err(MoveError::Syntax { .. })
            ),
            "{bad}"
        );
    }
    assert_eq!(
        reason(&p, "d3d4"),
        IllegalReason::NoPiece {
            square: "d3".into()
        }
    );
    assert_eq!(
        reason(&p, "d7d6"),
        IllegalReason::WrongSide {
            square: "d7".into()
        }
    );
    assert_eq!(reason(&p, "a1a3"), IllegalReason::Blocked);
    assert_eq!(reason(&p, "b1d5"), IllegalReason::CannotReach);
}

#[test]
fn rule_options_parse() {
    let mut r = ByzantineRules::default();
    r.set("stalemate", "loses").unwrap();
    r.set("facing_pawns", "off").unwrap();
    assert_eq!(r.stalemate, StalemateRule::StalematedLoses);
    assert!(!r.facing_pawns);
    assert!(r.set("stalemate", "draw").is_err());
    assert!(r.set("castling", "on").is_err());
}
