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

/// A small deterministic generator for the randomised tests below.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Rook attacks by walking the rings and columns cell by cell: the reference for the tables.
fn rook_attacks_walked(cell: Cell, occupied: u64) -> u64 {
    let (r, n) = (i32::from(cell / 16), i32::from(cell % 16));
    let mut att = 0u64;
    for dir in [1, -1] {
        for step in 1..16 {
            let c = (r * 16 + (n + dir * step).rem_euclid(16)) as u32;
            att |= 1 << c;
            if occupied & (1 << c) != 0 {
                break;
            }
        }
        let mut rr = r + dir;
        while (0..4).contains(&rr) {
            let c = (rr * 16 + n) as u32;
            att |= 1 << c;
            if occupied & (1 << c) != 0 {
                break;
            }
            rr += dir;
        }
    }
    att & !(1u64 << cell)
}

#[test]
fn rook_attack_tables_match_a_walk() {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for i in 0..20_000u32 {
        // Sparse, dense and everything between.
        let occupied = match i % 4 {
            0 => rng.next() & rng.next() & rng.next(),
            1 => rng.next() & rng.next(),
            2 => rng.next(),
            _ => rng.next() | rng.next(),
        };
        for cell in 0..64 {
            assert_eq!(
                rook_attacks(cell, occupied),
                rook_attacks_walked(cell, occupied),
                "cell {cell}, occupancy {occupied:#018x}"
            );
        }
    }
    for cell in 0..64 {
        assert_eq!(rook_attacks(cell, 0), rook_attacks_walked(cell, 0));
        assert_eq!(rook_attacks(cell, !0), rook_attacks_walked(cell, !0));
    }
}

/// A random placement: both kings (almost always) and 4 to 31 other pieces, dense enough that
/// facing pairs, pins along rings and columns, and checks are all common.
fn random_placement(rng: &mut XorShift) -> Byzantine {
    let citadel_variant = rng.below(2) == 0;
    let rules = ByzantineRules {
        stalemate: StalemateRule::StalematedWins,
        facing_pawns: rng.below(4) != 0,
    };
    let mut p = Byzantine::start(
        if citadel_variant {
            ByzantineVariant::Citadel
        } else {
            ByzantineVariant::Plain
        },
        rules,
    );
    p.roles = [0; 6];
    p.colors = [0; 2];
    p.pawn_up = 0;
    p.turn = if rng.below(2) == 0 {
        Color::White
    } else {
        Color::Black
    };
    let density = 4 + rng.below(28);
    let mut free = !0u64;
    let mut place = |p: &mut Byzantine, rng: &mut XorShift, color: Color, role: ByzRole| {
        let cell = loop {
            let c = rng.below(64) as Cell;
            if free & (1 << c) != 0 {
                break c;
            }
        };
        free &= !(1 << cell);
        p.toggle(color, role, rng.below(2) == 0, cell);
    };
    for color in Color::ALL {
        if rng.below(50) != 0 {
            place(&mut p, rng, color, ByzRole::King);
        }
    }
    for _ in 0..density {
        let color = if rng.below(2) == 0 {
            Color::White
        } else {
            Color::Black
        };
        let role = ByzRole::ALL[rng.below(5) as usize]; // any but a king
        place(&mut p, rng, color, role);
    }
    p.hash = p.compute_hash();
    p
}

/// The moves as (from, to) pairs in ascending order: the two generators list them differently.
fn sorted(moves: &ByzMoveList) -> Vec<(Cell, Cell)> {
    let mut v: Vec<_> = moves.iter().map(|m| (m.from, m.to)).collect();
    v.sort_unstable();
    v.dedup();
    assert_eq!(v.len(), moves.len(), "a move listed twice");
    v
}

#[test]
fn generation_without_playing_matches_playing_each_move() {
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let mut compared = 0;
    for _ in 0..30_000 {
        let p = random_placement(&mut rng);
        let (mut fast, mut played) = (ByzMoveList::new(), ByzMoveList::new());
        p.gen_natural(&mut fast);
        p.gen_natural_by_play(&mut played);
        assert_eq!(sorted(&fast), sorted(&played), "{}", p.to_text());
        compared += fast.len();
        // And one ply further, from a legal move, so positions reached by play are covered too.
        if let Some(&m) = fast.get(rng.below(fast.len().max(1) as u64) as usize) {
            let mut next = p;
            next.play_unchecked(m);
            let (mut fast, mut played) = (ByzMoveList::new(), ByzMoveList::new());
            next.gen_natural(&mut fast);
            next.gen_natural_by_play(&mut played);
            assert_eq!(sorted(&fast), sorted(&played), "{}", next.to_text());
        }
    }
    assert!(compared > 100_000, "too few moves compared: {compared}");
}
