//! Glinski's move generator against the naive generator of `support/glinski_naive.rs`, written
//! from the rules alone: perft of the data file's positions, then move-for-move agreement on
//! thousands of random positions (random placements and random games, each side keeping its own
//! state, so en passant rights and promotions are checked independently too).

#[path = "support/glinski_naive.rs"]
mod naive;

use arbiter_core::glinski::Glinski;
use arbiter_core::{AnyPosition, Position, Variant};
use naive::{Naive, Rng};
use std::collections::BTreeSet;

const STARTS: [&str; 4] = [
    "b/qbk/n1b1n/r5r/ppppppppp/11/5P5/4P1P4/3P1B1P3/2P2B2P2/1PRNQBKNRP1 w - 0 1",
    "1/qbk/n1P2/6r/1p1p1p1p1/9P1/3P1p5/4P1Pp3/5B1P3/11/2R1Q1KN3 b - 0 1",
    "k/3/5/7/p1p1p4/2P8/P3P6/11/11/11/5K5 b - 0 1",
    "k/3/5/7/9/11/11/11/2p5p2/p9p/1P3K3P1 w - 0 1",
];

fn core_moves(pos: &Glinski) -> BTreeSet<String> {
    pos.legal_moves()
        .iter()
        .map(|&m| pos.move_to_uci(m))
        .collect()
}

#[test]
fn naive_generator_reproduces_the_spec_perft() {
    let start = Naive::from_text(STARTS[0]);
    assert_eq!(start.perft(1), 51);
    assert_eq!(start.perft(2), 2586);
    for (text, counts) in [
        (STARTS[1], [44, 2188]),
        (STARTS[2], [12, 147]),
        (STARTS[3], [9, 143]),
    ] {
        let n = Naive::from_text(text);
        assert_eq!([n.perft(1), n.perft(2)], counts, "{text}");
    }
    assert_eq!(Naive::from_text(STARTS[2]).perft(3), 1871);
    assert_eq!(Naive::from_text(STARTS[3]).perft(3), 1534);
}

/// Plays a random game from `naive` (kept in step with the core position), comparing the legal
/// moves at every ply. Returns (positions compared, with an en passant right, with promotions).
fn compare_game(mut naive: Naive, rng: &mut Rng, plies: usize) -> (usize, usize, usize) {
    let text = naive::to_text(&naive);
    let mut pos = Glinski::from_text(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
    let mut any = AnyPosition::from_text(Variant::Glinski, &text).unwrap();
    let (mut compared, mut with_ep, mut with_promotion) = (0, 0, 0);
    for _ in 0..plies {
        let expected = naive.legal_moves();
        let got = core_moves(&pos);
        assert_eq!(got, expected, "moves differ in {}", pos.to_text());
        // The dynamic type the CLI and services use lists the same moves.
        let via_any: BTreeSet<String> = any
            .legal_moves()
            .iter()
            .map(|&m| any.move_to_uci(m))
            .collect();
        assert_eq!(
            via_any,
            expected,
            "AnyPosition differs in {}",
            pos.to_text()
        );
        // The position string round-trips.
        assert_eq!(Glinski::from_text(&pos.to_text()).unwrap(), pos);
        compared += 1;
        with_ep += usize::from(pos.ep_cell().is_some());
        with_promotion += usize::from(expected.iter().any(|m| m.ends_with(['q', 'r', 'b', 'n'])));
        if expected.is_empty() {
            break;
        }
        // Prefer double steps half the time, so that en passant rights come up often.
        let doubles: Vec<&String> = expected
            .iter()
            .filter(|m| naive.is_double_step(m))
            .collect();
        let pick = if !doubles.is_empty() && rng.below(2) == 0 {
            doubles[rng.below(doubles.len())].clone()
        } else {
            expected
                .iter()
                .nth(rng.below(expected.len()))
                .unwrap()
                .clone()
        };
        naive.play(&pick);
        let m = pos
            .parse_move(
                &pick,
                arbiter_core::Notation::Uci,
                arbiter_core::Locale::English,
            )
            .unwrap();
        pos.play_unchecked(m);
        any = any
            .play(
                any.parse_move(
                    &pick,
                    arbiter_core::Notation::Uci,
                    arbiter_core::Locale::English,
                )
                .unwrap(),
            )
            .unwrap();
        assert_eq!(pos.zobrist(), pos.compute_hash());
    }
    (compared, with_ep, with_promotion)
}

#[test]
fn agrees_with_the_naive_generator_on_random_positions() {
    let mut rng = Rng(0x05ee_d0f6_c111_54b1);
    let (mut compared, mut with_ep, mut with_promotion) = (0, 0, 0);
    let mut add = |(c, e, p): (usize, usize, usize)| {
        compared += c;
        with_ep += e;
        with_promotion += p;
    };
    for i in 0..160 {
        add(compare_game(Naive::from_text(STARTS[i % 4]), &mut rng, 40));
    }
    for _ in 0..300 {
        let start = naive::random_position(&mut rng);
        add(compare_game(start, &mut rng, 12));
    }
    eprintln!(
        "compared {compared} positions: {with_ep} with an en passant right, {with_promotion} with promotions"
    );
    assert!(compared >= 3000, "{compared}");
    assert!(with_ep >= 150, "{with_ep}");
    assert!(with_promotion >= 200, "{with_promotion}");
}
