//! Property tests over random legal games: FEN round trips, incremental state equal to state
//! rebuilt from scratch, no legal move leaves the mover's king attacked, SAN and UCI round
//! trips for every legal move, and agreement with an independent move generator (`shakmaty`);
//! the same properties for Chess960 (and its agreement with shakmaty's Chess960 mode), Byzantine
//! and Glinski positions.

use arbiter_core::byzantine::{ByzantineRules, ByzantineVariant, StalemateRule};
use arbiter_core::chess::san::{parse_san, write_san};
use arbiter_core::chess::uci::{Uci, parse_legal};
use arbiter_core::glinski::Glinski;
use arbiter_core::{Byzantine, Chess, Locale, Notation, Position};
use proptest::prelude::*;
use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, EnPassantMode, Position as _};

const STARTS: [&str; 6] = [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
    "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
    "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
];

/// The positions of a random game of any variant: from `pos`, each selector picks a legal move.
fn playout<P: Position>(mut pos: P, selectors: &[u16]) -> Vec<P> {
    let mut out = vec![pos.clone()];
    for &s in selectors {
        let moves = pos.legal_moves();
        if moves.is_empty() {
            break;
        }
        pos.play_unchecked(moves[usize::from(s) % moves.len()]);
        out.push(pos.clone());
    }
    out
}

/// The positions of a random game from `STARTS[start]`.
fn random_game(start: usize, selectors: &[u16]) -> Vec<Chess> {
    playout(
        Chess::from_fen(STARTS[start % STARTS.len()]).unwrap(),
        selectors,
    )
}

fn game_strategy() -> impl Strategy<Value = (usize, Vec<u16>)> {
    (0..STARTS.len(), prop::collection::vec(any::<u16>(), 0..160))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn fen_round_trip_and_incremental_state((start, sel) in game_strategy()) {
        for pos in random_game(start, &sel) {
            let fen = pos.to_fen();
            let parsed = Chess::from_fen(&fen).unwrap();
            prop_assert_eq!(parsed, pos, "{}", fen);
            prop_assert_eq!(pos.zobrist(), pos.compute_hash(), "{}", fen);
        }
    }

    #[test]
    fn legal_moves_never_leave_the_king_attacked((start, sel) in game_strategy()) {
        for pos in random_game(start, &sel) {
            let mover = pos.turn();
            for m in pos.legal_moves() {
                let mut after = pos;
                after.play_unchecked(m);
                let board = after.board();
                let king = board.king_of(mover).unwrap();
                prop_assert!(
                    board.attackers_to(king, !mover, board.occupied()).is_empty(),
                    "{} leaves the king attacked in {}", after.move_to_uci(m), pos.to_fen()
                );
                // Copy-make leaves the original untouched and the copy's hash exact.
                prop_assert_eq!(after.zobrist(), after.compute_hash());
            }
        }
    }

    #[test]
    fn san_and_uci_round_trip((start, sel) in game_strategy()) {
        for pos in random_game(start, &sel).into_iter().step_by(3) {
            for m in pos.legal_moves() {
                for locale in [Locale::English, Locale::Italian] {
                    let san = write_san(&pos, m, locale, true);
                    prop_assert_eq!(parse_san(&pos, &san, locale), Ok(m), "{} in {}", san, pos.to_fen());
                }
                let uci = Uci::from_move(m).to_string();
                prop_assert_eq!(parse_legal(&pos, &uci), Ok(m));
            }
        }
    }

    #[test]
    fn null_move_is_consistent((start, sel) in game_strategy()) {
        for pos in random_game(start, &sel) {
            if let Some(null) = pos.null_move() {
                prop_assert_eq!(null.zobrist(), null.compute_hash());
                prop_assert_ne!(null.turn(), pos.turn());
            } else {
                prop_assert!(pos.is_check());
            }
        }
    }
}

/// The positions of a random Byzantine game (either variant, any rule options).
fn random_byzantine_game(
    flags: u8,
    selectors: &[u16],
) -> (Vec<Byzantine>, ByzantineVariant, ByzantineRules) {
    let citadel = if flags & 1 != 0 {
        ByzantineVariant::Citadel
    } else {
        ByzantineVariant::Plain
    };
    let rules = ByzantineRules {
        stalemate: if flags & 2 != 0 {
            StalemateRule::StalematedLoses
        } else {
            StalemateRule::StalematedWins
        },
        facing_pawns: flags & 4 == 0,
    };
    (
        playout(Byzantine::start(citadel, rules), selectors),
        citadel,
        rules,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn byzantine_properties(flags in 0u8..8, sel in prop::collection::vec(any::<u16>(), 0..200)) {
        let (positions, citadel, rules) = random_byzantine_game(flags, &sel);
        for pos in positions {
            let text = pos.to_text();
            prop_assert_eq!(Byzantine::from_text(&text, citadel, rules).unwrap(), pos, "{}", text);
            prop_assert_eq!(pos.zobrist(), pos.compute_hash(), "{}", text);
            let mover = pos.turn();
            for m in pos.legal_moves() {
                let mut after = pos;
                after.play_unchecked(m);
                prop_assert!(!after.king_attacked(mover), "{:?} in {}", m, text);
                prop_assert_eq!(after.zobrist(), after.compute_hash());
            }
            // A decided game has no moves; an undecided one without moves is mate or stalemate.
            if pos.legal_moves().is_empty() {
                prop_assert!(pos.terminal().is_some(), "{}", text);
            }
        }
    }
}

/// Glinski starts: the start position and the perft positions of `tests/data/glinski.perft`
/// (en passant on the b and k files, promotions close by).
const GLINSKI_STARTS: [&str; 4] = [
    "b/qbk/n1b1n/r5r/ppppppppp/11/5P5/4P1P4/3P1B1P3/2P2B2P2/1PRNQBKNRP1 w - 0 1",
    "1/qbk/n1P2/6r/1p1p1p1p1/9P1/3P1p5/4P1Pp3/5B1P3/11/2R1Q1KN3 b - 0 1",
    "k/3/5/7/p1p1p4/2P8/P3P6/11/11/11/5K5 b - 0 1",
    "k/3/5/7/9/11/11/11/2p5p2/p9p/1P3K3P1 w - 0 1",
];

fn random_glinski_game(start: usize, selectors: &[u16]) -> Vec<Glinski> {
    playout(
        Glinski::from_text(GLINSKI_STARTS[start % GLINSKI_STARTS.len()]).unwrap(),
        selectors,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Position string round trip, incremental hash equal to a fresh one, no legal move leaves
    /// the mover's king attacked, copy-make leaves the original untouched, both notations read
    /// back every legal move (both locales), and a position without moves is decided.
    #[test]
    fn glinski_properties(start in 0usize..4, sel in prop::collection::vec(any::<u16>(), 0..160)) {
        for (i, pos) in random_glinski_game(start, &sel).into_iter().enumerate() {
            let text = pos.to_text();
            prop_assert_eq!(Glinski::from_text(&text).unwrap(), pos, "{}", text);
            prop_assert_eq!(pos.zobrist(), pos.compute_hash(), "{}", text);
            let mover = pos.turn();
            let original = pos;
            let moves = pos.legal_moves();
            for &m in moves.iter() {
                let mut after = pos;
                after.play_unchecked(m);
                prop_assert!(!after.king_attacked(mover), "{:?} in {}", m, text);
                prop_assert_eq!(after.zobrist(), after.compute_hash());
                if i % 4 == 0 {
                    let uci = pos.move_to_uci(m);
                    prop_assert_eq!(pos.parse_move(&uci, Notation::Uci, Locale::English), Ok(m));
                    for locale in [Locale::English, Locale::Italian] {
                        let record = pos.move_to_san(m, locale);
                        prop_assert_eq!(pos.parse_move(&record, Notation::San, locale), Ok(m), "{} in {}", record, text);
                    }
                }
            }
            prop_assert_eq!(pos, original);
            if moves.is_empty() {
                prop_assert!(pos.terminal().is_some(), "{}", text);
            }
            if let Some(null) = pos.null_move() {
                prop_assert_eq!(null.zobrist(), null.compute_hash());
            } else {
                prop_assert!(pos.is_check());
            }
        }
    }
}

/// shakmaty's legal moves in coordinate notation (`mode` decides how castling is written), each
/// with whether it gives check (found by playing it), sorted.
fn shakmaty_moves(fen: &str, mode: CastlingMode) -> Vec<(String, bool)> {
    let pos: shakmaty::Chess = fen.parse::<Fen>().unwrap().into_position(mode).unwrap();
    let mut v: Vec<(String, bool)> = pos
        .legal_moves()
        .iter()
        .map(|m| {
            let mut after = pos.clone();
            after.play_unchecked(*m);
            (m.to_uci(mode).to_string(), after.is_check())
        })
        .collect();
    v.sort();
    v
}

fn shakmaty_fen(fen: &str) -> String {
    let pos: shakmaty::Chess = fen
        .parse::<Fen>()
        .unwrap()
        .into_position(CastlingMode::Standard)
        .unwrap();
    Fen::from_position(&pos, EnPassantMode::PseudoLegal).to_string()
}

/// A seeded xorshift generator (a failure replays).
pub(crate) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// Thousands of random positions (random games from the perft suite's starts, with a seeded
/// generator): the legal move sets, which of them give check, and the FEN agree with
/// shakmaty's.
#[test]
fn agrees_with_an_independent_generator() {
    let mut next = xorshift(0x2545_F491_4F6C_DD1Du64);
    let mut positions = 0;
    let mut checks = 0;
    for game in 0..60 {
        let mut pos = Chess::from_fen(STARTS[game % STARTS.len()]).unwrap();
        for _ in 0..120 {
            let fen = pos.to_fen();
            let mut ours: Vec<(String, bool)> = pos
                .legal_moves()
                .iter()
                .map(|&m| (pos.move_to_uci(m), pos.gives_check(m)))
                .collect();
            ours.sort();
            checks += ours.iter().filter(|(_, check)| *check).count();
            assert_eq!(ours, shakmaty_moves(&fen, CastlingMode::Standard), "{fen}");
            assert_eq!(fen, shakmaty_fen(&fen), "{fen}");
            positions += 1;
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            pos.play_unchecked(moves[(next() % moves.len() as u64) as usize]);
        }
    }
    assert!(positions >= 3000, "only {positions} positions");
    assert!(checks >= 3000, "only {checks} checking moves");
}

/// The positions of a random Chess960 game from start position `number`.
fn random_chess960_game(number: u32, selectors: &[u16]) -> Vec<Chess> {
    playout(Chess::chess960_start(number).unwrap(), selectors)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Chess960: X-FEN and Shredder-FEN round trips, the incremental hash, no legal move
    /// leaves the king attacked, `gives_check` is what playing the move shows, and SAN and UCI
    /// (the king-takes-rook form) read back as the same move.
    #[test]
    fn chess960_properties(number in 0u32..960, sel in prop::collection::vec(any::<u16>(), 0..160)) {
        for pos in random_chess960_game(number, &sel) {
            let fen = pos.to_fen();
            prop_assert_eq!(Chess::from_fen_as(&fen, true).unwrap(), pos, "{}", fen);
            let shredder = pos.to_shredder_fen();
            prop_assert_eq!(Chess::from_fen_as(&shredder, true).unwrap(), pos, "{}", shredder);
            prop_assert_eq!(pos.zobrist(), pos.compute_hash(), "{}", fen);
            let mover = pos.turn();
            for m in pos.legal_moves() {
                let mut after = pos;
                after.play_unchecked(m);
                let board = after.board();
                let king = board.king_of(mover).unwrap();
                prop_assert!(board.attackers_to(king, !mover, board.occupied()).is_empty());
                prop_assert_eq!(pos.gives_check(m), after.is_check(), "{} in {}", m, fen);
                let san = write_san(&pos, m, Locale::English, true);
                prop_assert_eq!(parse_san(&pos, &san, Locale::English), Ok(m), "{} in {}", san, fen);
                prop_assert_eq!(parse_legal(&pos, &pos.move_to_uci(m)), Ok(m), "{} in {}", m, fen);
            }
        }
    }
}

/// Random Chess960 games from every 16th start position against shakmaty in Chess960 mode: the
/// legal moves (castling as king-takes-rook) and which of them give check agree.
#[test]
fn chess960_agrees_with_an_independent_generator() {
    let mut next = xorshift(0x9E37_79B9_7F4A_7C15u64);
    let (mut positions, mut castles) = (0, 0);
    for number in (0..960).step_by(16) {
        let mut pos = Chess::chess960_start(number).unwrap();
        for _ in 0..80 {
            let fen = pos.to_shredder_fen();
            let expected = shakmaty_moves(&fen, CastlingMode::Chess960);
            let moves = pos.legal_moves();
            let mut ours: Vec<(String, bool)> = moves
                .iter()
                .map(|&m| (pos.move_to_uci(m), pos.gives_check(m)))
                .collect();
            ours.sort();
            assert_eq!(ours, expected, "{fen}");
            castles += moves
                .iter()
                .filter(|m| m.kind() == arbiter_core::chess::MoveKind::Castle)
                .count();
            positions += 1;
            if moves.is_empty() {
                break;
            }
            // Castle whenever possible, so that castling is compared often.
            let castling: Vec<_> = moves
                .iter()
                .copied()
                .filter(|m| m.kind() == arbiter_core::chess::MoveKind::Castle)
                .collect();
            let m = if castling.is_empty() {
                moves[(next() % moves.len() as u64) as usize]
            } else {
                castling[(next() % castling.len() as u64) as usize]
            };
            pos.play_unchecked(m);
        }
    }
    assert!(positions >= 4000, "only {positions} positions");
    assert!(castles >= 50, "only {castles} castling moves");
}
