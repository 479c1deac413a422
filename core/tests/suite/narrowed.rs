//! The narrowed generators the engine relies on agree with the full one: on random games of
//! chess, Chess960, crazyhouse, bughouse boards and Glinski, `capture_moves_into` yields exactly
//! the tactical moves of `legal_moves_into`, in the same order, and `is_legal` answers, for
//! every move seen anywhere in the game (castling, en passant, promotions, drops; most of them
//! from other positions), what the full list says.

use crate::properties::xorshift;
use arbiter_core::crazyhouse::HouseRules;
use arbiter_core::{Chess, Crazyhouse, Position};
use std::collections::HashSet;

/// Plays `games` random games of up to `plies` plies from each start and checks every position
/// with `check`, given every move seen so far in that game. Returns the positions checked.
fn over_random_games<P: Position>(
    starts: &[P],
    games: usize,
    plies: usize,
    seed: u64,
    check: impl Fn(&P, &HashSet<P::Move>),
) -> usize {
    let mut next = xorshift(seed);
    let mut positions = 0;
    for game in 0..games {
        let mut pos = starts[game % starts.len()].clone();
        let mut history = vec![pos.clone()];
        let mut seen: HashSet<P::Move> = HashSet::new();
        for _ in 0..plies {
            let moves = pos.legal_moves();
            seen.extend(moves.iter().copied());
            if moves.is_empty() {
                break;
            }
            pos.play_unchecked(moves[(next() % moves.len() as u64) as usize]);
            history.push(pos.clone());
        }
        // Every position is asked about every move of the whole game, before and after it.
        for p in &history {
            check(p, &seen);
            positions += 1;
        }
    }
    positions
}

/// The tactical moves of the full list, in its order, equal the narrowed generation; `is_legal`
/// agrees with the full list on every move of `universe`.
fn agree<P: Position>(pos: &P, universe: &HashSet<P::Move>, tactical: impl Fn(&P::Move) -> bool) {
    let all = pos.legal_moves();
    let filtered: Vec<P::Move> = all.iter().copied().filter(|m| tactical(m)).collect();
    let mut narrowed = P::MoveList::default();
    pos.capture_moves_into(&mut narrowed);
    assert_eq!(narrowed.to_vec(), filtered, "{}", pos.to_text());
    for &m in universe {
        assert_eq!(
            pos.is_legal(m),
            all.contains(&m),
            "{m:?} in {}",
            pos.to_text()
        );
    }
}

const CHESS: [&str; 5] = [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
    "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
];

#[test]
fn chess_captures_and_single_move_legality_match_the_full_generator() {
    let mut starts: Vec<Chess> = CHESS.iter().map(|f| Chess::from_fen(f).unwrap()).collect();
    starts.extend(
        (0..960)
            .step_by(97)
            .map(|n| Chess::chess960_start(n).unwrap()),
    );
    let positions = over_random_games(&starts, 40, 100, 0x2545_F491_4F6C_DD1D, |pos, seen| {
        agree(pos, seen, |m| {
            pos.is_capture(*m) || m.promotion_role().is_some()
        })
    });
    assert!(positions >= 2000, "only {positions} positions");
}

const HOUSE: [&str; 5] = [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1",
    "2k5/8/8/8/8/8/8/4K3[QRBNPqrbnp] w - - 0 1",
    "r1bqk2r/pppp1ppp/2n1p3/4P3/1b1Pn3/2NB1N2/PPP2PPP/R1BQK2R[] b KQkq - 0 1",
    "4k3/1Q~6/8/8/4b3/8/Kpp5/8[] b - - 0 1",
    "2rn1b1r/1pp2n1p/B1PBk1pP/5p1P/P5p1/2P2RP1/RP1QNP2/1NBK4[QPp] w - - 0 1",
];

#[test]
fn crazyhouse_and_bughouse_captures_and_single_move_legality_match_the_full_generator() {
    for rules in [HouseRules::Crazyhouse, HouseRules::Bughouse] {
        let starts: Vec<Crazyhouse> = HOUSE
            .iter()
            .map(|f| Crazyhouse::from_fen(f, rules).unwrap())
            .collect();
        let positions = over_random_games(&starts, 30, 80, 0x9E37_79B9_7F4A_7C15, |pos, seen| {
            agree(pos, seen, |m| pos.is_capture(*m))
        });
        assert!(positions >= 1500, "{rules:?}: only {positions} positions");
    }
}

#[test]
fn glinski_captures_match_the_full_generator() {
    let starts = [arbiter_core::glinski::Glinski::new()];
    let positions = over_random_games(&starts, 25, 100, 0x5DEE_CE66_D1CE_4E5B, |pos, seen| {
        agree(pos, seen, |m| pos.is_capture(*m))
    });
    assert!(positions >= 1500, "only {positions} positions");
}
