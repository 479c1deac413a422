//! Chess960 against python-chess and the published suite:
//! - `chess960.perft`: the 960 positions of the chessprogramming wiki's Chess960 perft results,
//!   to depth 3 in every build and depth 5 in optimised builds (CI runs `--release`); depth 6
//!   is the ignored `chess960_perft_depth_6` (docs/rules.md gives the command).
//! - `chess960-start-perft.txt`: every start position by number, its Shredder-FEN and perft 1–4
//!   as python-chess counts them.
//! - `chess960-python.txt`: 2000 positions (random games and positions built around castling)
//!   with python-chess's X-FEN, Shredder-FEN and every legal move in UCI and SAN.
//! - python-chess's tricky perft suite, read in Chess960 mode as its perft script reads it.
//! - `lenient-python.txt`: every position of python-chess's perft suites that standard chess
//!   refuses for castling rights or en passant squares that do not fit: read leniently, with
//!   python-chess's standard-mode position and counts.
//!
//! `tests/python/chess960_vectors.py` regenerates the python-chess data.

use arbiter_core::chess::{Chess, Correction, Setup};
use arbiter_core::{AnyPosition, Locale, Notation, Position, RuleOptions, Variant, perft};
use std::collections::BTreeSet;

fn data(file: &str) -> String {
    let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// One block of a `.perft` file: id, position, and (depth, nodes) counts.
type PerftCase = (String, String, Vec<(u32, u64)>);

/// The blocks of a `.perft` file.
fn perft_cases(file: &str) -> Vec<PerftCase> {
    let mut cases: Vec<PerftCase> = Vec::new();
    for line in data(file).lines().map(str::trim) {
        if let Some(id) = line.strip_prefix("id ") {
            cases.push((id.to_owned(), String::new(), Vec::new()));
        } else if let Some(epd) = line.strip_prefix("epd ") {
            cases.last_mut().expect("id first").1 = epd.to_owned();
        } else if let Some(rest) = line.strip_prefix("perft ") {
            let (d, n) = rest.split_once(' ').expect("perft DEPTH NODES");
            let counts = &mut cases.last_mut().expect("id first").2;
            counts.push((d.parse().unwrap(), n.parse().unwrap()));
        }
    }
    assert!(!cases.is_empty(), "{file} has no cases");
    cases
}

const OPTIMISED: bool = !cfg!(debug_assertions);

fn suite(depths: impl Fn(u32) -> bool, part: impl Fn(usize) -> bool) {
    let mut ran = 0;
    for (i, (id, epd, counts)) in perft_cases("chess960.perft").into_iter().enumerate() {
        if !part(i) {
            continue;
        }
        let pos = Chess::from_fen_as(&epd, true).unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!(
            pos.to_shredder_fen().split(' ').take(4).collect::<Vec<_>>(),
            { epd.split(' ').collect::<Vec<_>>() }
        );
        for (depth, nodes) in counts {
            if depths(depth) {
                assert_eq!(perft(&pos, depth), nodes, "{id} depth {depth}");
                ran += 1;
            }
        }
    }
    assert!(ran > 0);
}

#[test]
fn chess960_perft_shallow() {
    suite(|d| d <= if OPTIMISED { 4 } else { 3 }, |_| true);
}

// Depth 5 (17 billion leaves in all) in two halves, so the test harness runs them in parallel.
#[test]
#[cfg_attr(debug_assertions, ignore = "deep perft runs in release builds")]
fn chess960_perft_depth_5_even() {
    suite(|d| d == 5, |i| i % 2 == 0);
}

#[test]
#[cfg_attr(debug_assertions, ignore = "deep perft runs in release builds")]
fn chess960_perft_depth_5_odd() {
    suite(|d| d == 5, |i| i % 2 == 1);
}

#[test]
#[ignore = "about 500 billion leaves: cargo test -p arbiter-core --release -- --ignored chess960_perft_depth_6"]
fn chess960_perft_depth_6() {
    suite(|d| d == 6, |_| true);
}

#[test]
fn start_positions_match_python_chess() {
    let mut seen = 0;
    for line in data("chess960-start-perft.txt").lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let n: u32 = fields[0].parse().unwrap();
        let fen = fields[1..7].join(" ");
        let counts: Vec<u64> = fields[7..].iter().map(|c| c.parse().unwrap()).collect();
        let pos = Chess::chess960_start(n).unwrap();
        assert_eq!(pos.to_shredder_fen(), fen, "start position {n}");
        let any = AnyPosition::chess960_start(n).unwrap();
        assert_eq!(any.variant(), Variant::Chess960);
        for (depth, &nodes) in (1..).zip(&counts) {
            if depth <= if OPTIMISED { 4 } else { 2 } {
                assert_eq!(
                    perft(&pos, depth),
                    nodes,
                    "start position {n} depth {depth}"
                );
            }
        }
        seen += 1;
    }
    assert_eq!(seen, 960);
    assert!(AnyPosition::chess960_start(960).is_err());
}

#[test]
fn positions_moves_and_notation_match_python_chess() {
    let text = data("chess960-python.txt");
    let mut blocks = 0;
    let mut castles = 0;
    let mut fen = "";
    let mut shredder = "";
    for line in text.lines() {
        if let Some(f) = line.strip_prefix("fen ") {
            fen = f;
        } else if let Some(s) = line.strip_prefix("shredder ") {
            shredder = s;
        } else if let Some(moves) = line.strip_prefix("moves") {
            blocks += 1;
            let pos = Chess::from_fen_as(fen, true).unwrap_or_else(|e| panic!("{fen}: {e}"));
            assert_eq!(pos.to_fen(), fen, "X-FEN round trip");
            assert_eq!(pos.to_shredder_fen(), shredder, "Shredder-FEN of {fen}");
            assert_eq!(
                Chess::from_fen_as(shredder, true).unwrap(),
                pos,
                "{shredder}"
            );
            let expected: BTreeSet<(String, String)> = moves
                .split_whitespace()
                .map(|pair| {
                    let (uci, san) = pair.split_once(':').expect("uci:san");
                    (uci.to_owned(), san.to_owned())
                })
                .collect();
            let ours: BTreeSet<(String, String)> = pos
                .legal_moves()
                .iter()
                .map(|&m| (pos.move_to_uci(m), pos.move_to_san(m, Locale::English)))
                .collect();
            assert_eq!(ours, expected, "legal moves of {fen}");
            for &m in pos.legal_moves().iter() {
                let uci = pos.move_to_uci(m);
                let san = pos.move_to_san(m, Locale::English);
                for (text, notation) in [(&uci, Notation::Uci), (&san, Notation::San)] {
                    let parsed = pos.parse_move(text, notation, Locale::English);
                    assert_eq!(parsed, Ok(m), "{text} in {fen}");
                }
                if san.starts_with("O-O") {
                    castles += 1;
                }
                // The position after each move round-trips through both FEN forms.
                let mut after = pos;
                after.play_unchecked(m);
                assert_eq!(Chess::from_fen_as(&after.to_fen(), true).unwrap(), after);
                assert_eq!(
                    Chess::from_fen_as(&after.to_shredder_fen(), true).unwrap(),
                    after
                );
                assert_eq!(after.zobrist(), after.compute_hash(), "{uci} in {fen}");
            }
        }
    }
    assert!(blocks >= 1500, "{blocks} positions");
    assert!(
        castles >= 500,
        "only {castles} castling moves cross-checked"
    );
}

/// Reads `epd` as python-chess's perft script does (Chess960 mode): strictly when that works,
/// else leniently when strict reading refused a castling right or an en passant square.
/// `None` for a position refused for anything else (python-chess's suites hold a few
/// impossible checks, which it counts anyway and Arbiter refuses in both readings).
fn read_960(epd: &str) -> Option<(Chess, Vec<Correction>)> {
    match Chess::from_fen_as(epd, true) {
        Ok(pos) => Some((pos, Vec::new())),
        Err(strict) if ["castling", "en_passant"].contains(&strict.field()) => {
            let setup: Setup = epd.parse().expect("parses");
            let (pos, fixes) = Chess::from_setup_lenient(setup, true)
                .unwrap_or_else(|e| panic!("{epd}: strict: {strict}; lenient: {e}"));
            assert!(
                !fixes.is_empty(),
                "{epd}: strict refused ({strict}) but nothing corrected"
            );
            Some((pos, fixes))
        }
        Err(other) => {
            assert!(
                other.to_string().contains("impossible check"),
                "{epd}: {other}"
            );
            None
        }
    }
}

/// Counts the suite's positions (to `limit` nodes a count); returns how many needed lenient
/// reading and how many were refused as impossible checks.
fn python_suite(file: &str, limit: u64) -> (usize, usize) {
    let (mut lenient, mut refused) = (0, 0);
    for (id, epd, counts) in perft_cases(file) {
        let Some((pos, fixes)) = read_960(&epd) else {
            refused += 1;
            continue;
        };
        lenient += usize::from(!fixes.is_empty());
        for (depth, nodes) in counts {
            if nodes <= limit {
                assert_eq!(perft(&pos, depth), nodes, "{file} {id} depth {depth}");
            }
        }
    }
    (lenient, refused)
}

/// python-chess's tricky suite as its perft script reads it (Chess960 mode, in
/// which their castling rights all fit). Read as standard chess, some do not: see
/// `python_chess_suites_read_leniently_as_standard_chess`.
#[test]
fn python_chess_suites_in_chess960_mode() {
    let limit = if OPTIMISED { 2_000_000 } else { 20_000 };
    let tricky = python_suite("python-chess-tricky.perft", limit);
    assert_eq!(tricky.0, 0, "every right fits in Chess960 mode");
    assert!(tricky.1 <= 6, "refused: {tricky:?}");
}

#[test]
fn lenient_reading_reports_each_correction() {
    // Standard chess: a right whose rook is missing, another on a Chess960 rook, and an en
    // passant square no double step can have left.
    let fen = "4k3/8/8/8/8/8/8/1R2K3 w KQ e6 0 1";
    let strict = AnyPosition::from_text(Variant::Chess, fen).unwrap_err();
    assert_eq!(strict.field(), "castling");
    let (pos, fixes) =
        AnyPosition::with_rules_lenient(Variant::Chess, fen, &RuleOptions::default()).unwrap();
    assert_eq!(pos.to_text(), "4k3/8/8/8/8/8/8/1R2K3 w - - 0 1");
    let fields: Vec<&str> = fixes.iter().map(Correction::field).collect();
    assert_eq!(fields, ["castling", "castling", "en_passant"]);
    for fix in &fixes {
        assert!(fix.to_string().starts_with("dropped"), "{fix}");
    }
    // The b1 rook is a queen-side rook in Chess960: kept there.
    let (pos, fixes) =
        AnyPosition::with_rules_lenient(Variant::Chess960, fen, &RuleOptions::default()).unwrap();
    assert_eq!(pos.to_text(), "4k3/8/8/8/8/8/8/1R2K3 w Q - 0 1");
    assert_eq!(fixes.len(), 2);
    // Nothing to correct: no corrections, same position as strict reading.
    let start = AnyPosition::start(Variant::Chess).unwrap();
    let (pos, fixes) =
        AnyPosition::with_rules_lenient(Variant::Chess, &start.to_text(), &RuleOptions::default())
            .unwrap();
    assert_eq!((pos, fixes.len()), (start, 0));
    // Crazyhouse and bughouse boards are read the same way, reserves kept.
    for variant in [Variant::Crazyhouse, Variant::Bughouse] {
        let (pos, fixes) = AnyPosition::with_rules_lenient(
            variant,
            "4k3/8/8/8/8/8/8/4K3[Qp] w KQ d6 0 1",
            &RuleOptions::default(),
        )
        .unwrap();
        assert_eq!(pos.to_text(), "4k3/8/8/8/8/8/8/4K3[Qp] w - - 0 1");
        assert_eq!(fixes.len(), 3, "{fixes:?}");
    }
    // Errors other than castling and en passant stay errors.
    assert!(
        AnyPosition::with_rules_lenient(
            Variant::Chess,
            "8/8/8/8/8/8/8/4K3 w - - 0 1",
            &RuleOptions::default()
        )
        .is_err()
    );
}

#[test]
fn standard_chess_refuses_chess960_rights_with_a_pointer() {
    let fen = "1k6/8/8/8/8/8/8/RK4R1 w GA - 0 1";
    let err = Chess::from_fen(fen).unwrap_err();
    assert_eq!(err.field(), "castling");
    assert!(err.to_string().contains("chess960"), "{err}");
    assert!(Chess::from_fen_as(fen, true).is_ok());
}

/// Every position of python-chess's perft suites that standard chess refuses for castling
/// rights or en passant squares that do not fit (927 of them, found by
/// `tests/python/chess960_vectors.py`): strict reading refuses each, lenient reading gives
/// python-chess's position (standard mode) and its move counts.
#[test]
fn python_chess_suites_read_leniently_as_standard_chess() {
    let text = data("lenient-python.txt");
    let limit = if OPTIMISED { 2_000_001 } else { 20_000 };
    let (mut blocks, mut counted) = (0, 0);
    let mut current: Option<(String, AnyPosition)> = None;
    let mut epd = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("epd ") {
            epd = rest.to_owned();
        } else if let Some(fen) = line.strip_prefix("fen ") {
            blocks += 1;
            let strict =
                AnyPosition::from_text(Variant::Chess, &epd).expect_err("strict reading refuses");
            assert!(
                ["castling", "en_passant"].contains(&strict.field()),
                "{epd}: {strict}"
            );
            let (pos, fixes) =
                AnyPosition::with_rules_lenient(Variant::Chess, &epd, &RuleOptions::default())
                    .unwrap_or_else(|e| panic!("{epd}: {e}"));
            assert!(!fixes.is_empty(), "{epd}");
            assert_eq!(pos.to_text(), fen, "{epd}");
            current = Some((epd.clone(), pos));
        } else if let Some(rest) = line.strip_prefix("perft ") {
            let (d, n) = rest.split_once(' ').expect("perft DEPTH NODES");
            let (d, n): (u32, u64) = (d.parse().unwrap(), n.parse().unwrap());
            let (epd, pos) = current.as_ref().expect("fen first");
            if n <= limit {
                assert_eq!(pos.perft(d), n, "{epd} depth {d}");
                counted += 1;
            }
        }
    }
    assert!(
        blocks >= 900 && counted > 0,
        "{blocks} positions, {counted} counts"
    );
}

/// A Chess960 game with castling on both wings written as PGN and read back: the variant tag,
/// the start FEN, `O-O`/`O-O-O`, and the same moves.
#[test]
fn pgn_round_trip_with_castling() {
    use arbiter_core::Game;
    use arbiter_core::pgn::{PgnGame, read_games};
    let start = AnyPosition::from_text(
        Variant::Chess960,
        "rk4r1/pppppppp/8/8/8/8/PPPPPPPP/RK4R1 w KQkq - 0 1",
    )
    .unwrap();
    let mut game = Game::new(start);
    for m in ["b1g1", "b8a8", "a2a4", "a7a5"] {
        game.play_text(m, Notation::Auto, Locale::English).unwrap();
    }
    let pgn = PgnGame::from_game(&game, Vec::new(), Locale::English).to_string();
    assert!(pgn.contains("[Variant \"Chess960\"]"), "{pgn}");
    assert!(pgn.contains("[SetUp \"1\"]"), "{pgn}");
    assert!(pgn.contains("1. O-O O-O-O 2. a4 a5"), "{pgn}");
    let mut read = read_games(&pgn).unwrap().remove(0);
    let replayed = read.validate(Locale::English, Locale::English).unwrap();
    assert_eq!(replayed.moves(), game.moves());
    assert_eq!(replayed.position(), game.position());
    // White castled with the g1 rook (king g1, rook f1), Black with the a8 rook (king c8, rook
    // d8); no right is left.
    assert_eq!(
        game.position().to_text(),
        "2kr2r1/1ppppppp/8/p7/P7/8/1PPPPPPP/R4RK1 w - - 0 3"
    );
}
