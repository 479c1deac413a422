//! The `arbiter` binary against its contract: perft totals for the whole standard and Glinski
//! suites, legal moves that agree with independent generators (shakmaty for chess, the naive
//! generator of `core/tests/suite/support/glinski_naive.rs` for Glinski), malformed input that
//! exits with code 2 and a message naming the problem, and `arbiter worker` processes on a real
//! Redis (`worker`); `arbiter serve`'s JSON log lines (`logs`).

#[path = "../../core/tests/suite/support/glinski_naive.rs"]
mod glinski_naive;
#[path = "cli/logs.rs"]
mod logs;
#[path = "cli/remote_worker.rs"]
mod remote_worker;
#[path = "cli/worker.rs"]
mod worker;

use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Position as _};
use std::io::Write;
use std::process::{Command, Output, Stdio};

fn arbiter(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn arbiter");
    let input = stdin.unwrap_or("").to_owned();
    let mut pipe = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().expect("wait");
    writer.join().expect("writer");
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("utf-8")
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).expect("utf-8")
}

/// (position, depth, nodes) from a perft data file shared with the core tests.
fn suite(file: &str) -> Vec<(String, u32, u64)> {
    let path = format!("{}/../core/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).expect("perft data");
    let mut epd = String::new();
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("epd ") {
            epd = rest.to_owned();
        } else if let Some(rest) = line.strip_prefix("perft ") {
            let (d, n) = rest.split_once(' ').expect("perft line");
            out.push((epd.clone(), d.parse().unwrap(), n.parse().unwrap()));
        }
    }
    out
}

fn check_perft(variant: &str, max_nodes: u64, min_nodes: u64, max_depth: u32) {
    let mut ran = 0;
    for (fen, depth, nodes) in suite(&format!("{variant}.perft")) {
        if nodes > max_nodes || nodes < min_nodes || depth > max_depth {
            continue;
        }
        let d = depth.to_string();
        let out = arbiter(
            &[
                "perft",
                "--variant",
                variant,
                "--position",
                &fen,
                "--depth",
                &d,
            ],
            None,
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        assert_eq!(
            text.lines().last(),
            Some(nodes.to_string().as_str()),
            "{fen} depth {depth}"
        );
        ran += 1;
    }
    assert!(ran > 0);
}

#[test]
fn perft_shallow() {
    check_perft("chess", 1_000_000, 0, 5);
    check_perft("glinski", 1_000_000, 0, 5);
    check_perft("crazyhouse", 1_000_000, 0, 5);
}

/// Every count up to depth 5 (and depth 6 of the start position) through the binary.
#[test]
#[cfg_attr(debug_assertions, ignore = "deep perft runs in release builds")]
fn perft_deep() {
    check_perft("chess", u64::MAX, 1_000_001, 5);
    // Glinski: the start position to depth 4 (7,282,418).
    check_perft("glinski", u64::MAX, 1_000_001, 5);
    // Every crazyhouse vector of the data file, up to 10,118,606 nodes.
    check_perft("crazyhouse", u64::MAX, 1_000_001, 5);
    let out = arbiter(&["perft", "--variant", "chess", "--depth", "6"], None);
    assert_eq!(stdout(&out).lines().last(), Some("119060324"));
}

#[test]
fn perft_divide_ends_with_total() {
    let out = arbiter(&["perft", "--depth", "3", "--divide"], None);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 21);
    assert!(lines[0].contains(' '));
    assert_eq!(lines[20], "8902");
}

fn independent_moves(fen: &str) -> Vec<String> {
    let pos: shakmaty::Chess = fen
        .parse::<Fen>()
        .unwrap()
        .into_position(CastlingMode::Standard)
        .unwrap();
    let mut v: Vec<String> = pos
        .legal_moves()
        .iter()
        .map(|m| m.to_uci(CastlingMode::Standard).to_string())
        .collect();
    v.sort();
    v
}

/// Random positions reached through `arbiter play` itself; `arbiter moves` must list exactly
/// shakmaty's legal moves in each. The library half of the CLI is checked on thousands of
/// positions below; the binary on a few hundred (each is a process spawn).
#[test]
fn moves_binary_agrees_with_independent_generator() {
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut checked = 0;
    for _ in 0..12 {
        let mut fen = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".to_owned();
        for _ in 0..25 {
            let out = arbiter(&["moves", "--position", &fen], None);
            assert!(out.status.success(), "{}", stderr(&out));
            let mut ours: Vec<String> = stdout(&out).lines().map(String::from).collect();
            ours.sort();
            assert_eq!(ours, independent_moves(&fen), "{fen}");
            checked += 1;
            if ours.is_empty() {
                break;
            }
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let mv = &ours[(rng % ours.len() as u64) as usize];
            let out = arbiter(&["play", "--position", &fen, mv], None);
            assert!(out.status.success(), "{}", stderr(&out));
            fen = stdout(&out).trim().to_owned();
        }
    }
    assert!(checked >= 200);
}

#[test]
fn moves_library_agrees_on_thousands_of_positions() {
    use arbiter_core::{AnyPosition, Position, Variant};
    let mut rng = 0x1234_5678_9ABC_DEF1u64;
    let mut checked = 0;
    for game in 0..50 {
        let fen = [
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
            "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
        ][game % 3];
        let mut pos = AnyPosition::from_text(Variant::Chess, fen).unwrap();
        for _ in 0..100 {
            let text = pos.to_text();
            let listed: Vec<String> = arbiter_cli::moves(&pos).lines().map(String::from).collect();
            assert_eq!(listed, independent_moves(&text), "{text}");
            checked += 1;
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            pos.play_unchecked(moves[(rng % moves.len() as u64) as usize]);
        }
    }
    assert!(checked >= 3000, "{checked}");
}

/// Random Glinski games (random placements and the perft data's positions):
/// `arbiter_cli::moves` lists exactly the naive generator's moves, each side playing the same
/// moves on its own state.
#[test]
fn glinski_moves_library_agrees_with_the_naive_generator() {
    use arbiter_core::{AnyPosition, Locale, Notation, Position, Variant};
    let mut rng = glinski_naive::Rng(0x6c69_6e73_6b69_2121);
    let mut checked = 0;
    for game in 0..150 {
        let mut naive = if game % 3 == 0 {
            glinski_naive::Naive::from_text(
                "b/qbk/n1b1n/r5r/ppppppppp/11/5P5/4P1P4/3P1B1P3/2P2B2P2/1PRNQBKNRP1 w - 0 1",
            )
        } else {
            glinski_naive::random_position(&mut rng)
        };
        let mut pos =
            AnyPosition::from_text(Variant::Glinski, &glinski_naive::to_text(&naive)).unwrap();
        for _ in 0..25 {
            let expected: Vec<String> = naive.legal_moves().into_iter().collect();
            let mut listed: Vec<String> =
                arbiter_cli::moves(&pos).lines().map(String::from).collect();
            listed.sort();
            assert_eq!(listed, expected, "{pos}");
            checked += 1;
            if expected.is_empty() {
                break;
            }
            let pick = &expected[rng.below(expected.len())];
            naive.play(pick);
            let m = pos
                .parse_move(pick, Notation::Uci, Locale::English)
                .unwrap();
            pos.play_unchecked(m);
        }
    }
    assert!(checked >= 3000, "{checked}");
}

/// The binary itself: random games played through `arbiter play`, each position's
/// `arbiter moves --variant glinski` against the naive generator.
#[test]
fn glinski_moves_binary_agrees_with_the_naive_generator() {
    let mut rng = glinski_naive::Rng(0x0062_696e_6172_7921);
    let mut checked = 0;
    for _ in 0..12 {
        let start = glinski_naive::random_position(&mut rng);
        let mut text = glinski_naive::to_text(&start);
        for _ in 0..10 {
            let out = arbiter(
                &["moves", "--variant", "glinski", "--position", &text],
                None,
            );
            assert!(out.status.success(), "{}", stderr(&out));
            let mut listed: Vec<String> = stdout(&out).lines().map(String::from).collect();
            listed.sort();
            let expected: Vec<String> = glinski_naive::Naive::from_text(&text)
                .legal_moves()
                .into_iter()
                .collect();
            assert_eq!(listed, expected, "{text}");
            checked += 1;
            if expected.is_empty() {
                break;
            }
            let pick = &expected[rng.below(expected.len())];
            let out = arbiter(
                &["play", "--variant", "glinski", "--position", &text, pick],
                None,
            );
            assert!(out.status.success(), "{}", stderr(&out));
            text = stdout(&out).trim().to_owned();
        }
    }
    assert!(checked >= 100, "{checked}");
}

fn assert_fails(args: &[&str], stdin: Option<&str>, needle: &str) {
    let out = arbiter(args, stdin);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(needle),
        "{args:?}: expected '{needle}' in: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn malformed_input_exits_2_with_a_precise_message() {
    assert_fails(
        &["moves", "--position", "8/8/8 w - - 0 1"],
        None,
        "expected 8 ranks",
    );
    assert_fails(
        &[
            "moves",
            "--position",
            "rnbqkbnr/ppppXppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        ],
        None,
        "invalid piece letter 'X'",
    );
    assert_fails(
        &["moves", "--position", "4k3/8/8/8/8/8/8/4K3 w KQ - 0 1"],
        None,
        "castling right 'K'",
    );
    assert_fails(
        &["moves", "--position", "4k3/8/8/8/8/8/4R3/4K3 w - - 0 1"],
        None,
        "not to move is in check",
    );
    assert_fails(
        &["moves", "--variant", "atomic"],
        None,
        "unknown variant 'atomic'",
    );
    assert_fails(
        &[
            "moves",
            "--variant",
            "crazyhouse",
            "--position",
            "4k3/8/8/8/8/8/8/4K3[X] w - - 0 1",
        ],
        None,
        "reserve: invalid piece letter 'X'",
    );
    assert_fails(
        &[
            "play",
            "--variant",
            "crazyhouse",
            "--position",
            "4k3/8/8/8/8/8/8/4K3[N] w - - 0 1",
            "B@f3",
        ],
        None,
        "no 'B' in the reserve",
    );
    assert_fails(&["play", "e2e5"], None, "move 1 ('e2e5')");
    assert_fails(&["play", "e4", "Nf9"], None, "cannot parse move 'Nf9'");
    assert_fails(
        &["play", "e4", "Ke7", "Ke2", "Kd6"],
        None,
        "illegal move 'Ke7'",
    );
    assert_fails(&["play", "e4", "e7e8q"], None, "move 2 ('e7e8q')");
    assert_fails(
        &["status", "--position", "4k3/8/8/8/8/8/8/4K3 w - - x 1"],
        None,
        "halfmove clock",
    );
    assert_fails(
        &["pgn"],
        Some("1. e4 {unterminated"),
        "unterminated comment",
    );
    assert_fails(
        &["pgn"],
        Some("1. e4 e5 *\n\n1. d4 Nf6 2. Bg5 Ne4 3. Bxh7 *\n"),
        "game 2: ply 5",
    );
    assert_fails(&["perft", "--depth", "x"], None, "invalid value");
}

#[test]
fn byzantine_through_the_cli() {
    let out = arbiter(&["perft", "--variant", "byzantine", "--depth", "3"], None);
    assert_eq!(stdout(&out).lines().last(), Some("2912"));
    let out = arbiter(&["moves", "--variant", "byzantine"], None);
    assert_eq!(stdout(&out).lines().count(), 14);
    let stalemate = "k15/4R11/1R13R/8K7 b 0 1";
    let out = arbiter(
        &["status", "--variant", "byzantine", "--position", stalemate],
        None,
    );
    assert_eq!(stdout(&out), "0-1 stalemate\n");
    let out = arbiter(
        &[
            "status",
            "--variant",
            "byzantine",
            "--rule",
            "stalemate=loses",
            "--position",
            stalemate,
        ],
        None,
    );
    assert_eq!(stdout(&out), "1-0 stalemate\n");
    let out = arbiter(
        &[
            "play",
            "--variant",
            "byzantine-citadel",
            "--position",
            "k15/4R6r4/16/9K6/4 w 0 1",
            "d10e3",
        ],
        None,
    );
    assert_eq!(stdout(&out), "k15/4R6r4/16/16/2K1 b 1 1\n");
    let out = arbiter(&["show", "--variant", "byzantine", "--svg"], None);
    assert!(stdout(&out).starts_with("<svg"));
    assert_fails(
        &[
            "perft",
            "--variant",
            "byzantine",
            "--rule",
            "castling=on",
            "--depth",
            "1",
        ],
        None,
        "--rule",
    );
    assert_fails(
        &["perft", "--rule", "stalemate=loses", "--depth", "1"],
        None,
        "no rule option 'stalemate'",
    );
    assert_fails(
        &["play", "--variant", "byzantine", "d2d4"],
        None,
        "move 1 ('d2d4')",
    );
    // Every variant draws SVG; the last move played first is highlighted.
    let out = arbiter(
        &[
            "show", "--svg", "e4", "e5", "Qh5", "Nc6", "Bc4", "Nf6", "Qxf7#",
        ],
        None,
    );
    let svg = stdout(&out);
    assert!(
        svg.starts_with("<svg") && svg.contains("class=\"piece\""),
        "{svg}"
    );
    assert_ne!(svg, stdout(&arbiter(&["show", "--svg"], None)));
    assert_fails(&["show", "--svg", "e5"], None, "move 1 ('e5')");
    assert_fails(
        &[
            "moves",
            "--variant",
            "byzantine",
            "--position",
            "k15/16/16/8K8 w 0 1",
        ],
        None,
        "ring d has more than 16 cells",
    );
}

#[test]
fn glinski_through_the_cli() {
    let out = arbiter(&["moves", "--variant", "glinski"], None);
    assert_eq!(stdout(&out).lines().count(), 51);
    // Stalemate: the king on f9 covers every cell around the black king on f11.
    let stalemate = "k/3/2K2/7/9/11/11/11/11/11/10N b - 0 1";
    let out = arbiter(
        &["status", "--variant", "glinski", "--position", stalemate],
        None,
    );
    assert_eq!(stdout(&out), "3/4-1/4 stalemate\n");
    // Record and coordinate notation, with check and mate found by `status`.
    let out = arbiter(
        &[
            "status",
            "--variant",
            "glinski",
            "--position",
            "k/3/2K2/7/9/11/11/11/11/11/3R7 w - 0 1",
            "Rd1-d9#",
        ],
        None,
    );
    assert_eq!(stdout(&out), "1-0 checkmate\n");
    let out = arbiter(
        &["play", "--variant", "glinski", "f5f6", "e7-e6", "Qe1-c3"],
        None,
    );
    assert_eq!(
        stdout(&out),
        "b/qbk/n1b1n/r5r/ppp1ppppp/4pP5/11/4P1P4/2QP1B1P3/2P2B2P2/1PRN1BKNRP1 b - 1 2\n"
    );
    let out = arbiter(&["show", "--variant", "glinski"], None);
    assert_eq!(stdout(&out).lines().count(), 23);
    let out = arbiter(&["show", "--variant", "glinski", "--svg"], None);
    assert_eq!(stdout(&out).matches("<polygon").count(), 91);
    assert_fails(
        &["play", "--variant", "glinski", "f5f8"],
        None,
        "move 1 ('f5f8')",
    );
    assert_fails(
        &[
            "moves",
            "--variant",
            "glinski",
            "--position",
            "k/3/5/7/9 w - 0 1",
        ],
        None,
        "11 rank fields",
    );
    assert_fails(
        &["moves", "--variant", "glinski", "--rule", "stalemate=loses"],
        None,
        "no rule option 'stalemate'",
    );
}

/// Each line's length in characters.
fn widths(text: &str) -> Vec<usize> {
    text.lines().map(|l| l.chars().count()).collect()
}

#[test]
fn show_with_symbols_in_every_variant() {
    let out = arbiter(&["show", "--symbols", "e4", "e5", "Nf3"], None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "8 ♜ ♞ ♝ ♛ ♚ ♝ ♞ ♜\n7 ♟ ♟ ♟ ♟ . ♟ ♟ ♟\n6 . . . . . . . .\n5 . . . . ♟ . . .\n\
         4 . . . . ♙ . . .\n3 . . . . . ♘ . .\n2 ♙ ♙ ♙ ♙ . ♙ ♙ ♙\n1 ♖ ♘ ♗ ♕ ♔ ♗ . ♖\n\
         \x20 a b c d e f g h\nblack to move\n"
    );
    // Without the flag, letters as before.
    let letters = stdout(&arbiter(&["show", "e4", "e5", "Nf3"], None));
    assert!(letters.starts_with("8 r n b q k b n r\n"), "{letters}");
    // Crazyhouse: the pieces in hand as symbols too, White's then Black's.
    let out = arbiter(
        &[
            "show",
            "--variant",
            "crazyhouse",
            "--symbols",
            "e4",
            "d5",
            "exd5",
        ],
        None,
    );
    let text = stdout(&out);
    assert!(
        text.ends_with("  a b c d e f g h\nin hand: ♙ | -\nblack to move\n"),
        "{text}"
    );
    // Glinski: the hex grid keeps its shape, a symbol in each letter's place.
    let out = arbiter(&["show", "--variant", "glinski", "--symbols"], None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let symbols = stdout(&out);
    let letters = stdout(&arbiter(&["show", "--variant", "glinski"], None));
    assert_eq!(symbols.lines().count(), 23);
    assert_eq!(widths(&symbols), widths(&letters));
    assert_eq!(
        symbols.lines().next(),
        Some(&*format!("{}♝", " ".repeat(22)))
    );
    assert_eq!(
        symbols.lines().nth(19),
        Some(&*format!("{}♕{}♔", " ".repeat(18), " ".repeat(7)))
    );
    assert_eq!(symbols.matches(['♙', '♟']).count(), 18);
    // Byzantine: elephants as bishops, counselors as queens, pawns with their direction.
    for variant in ["byzantine", "byzantine-citadel"] {
        let symbols = stdout(&arbiter(&["show", "--variant", variant, "--symbols"], None));
        let letters = stdout(&arbiter(&["show", "--variant", variant], None));
        assert_eq!(widths(&symbols), widths(&letters), "{symbols}");
        assert_eq!(symbols.matches(['♗', '♝']).count(), 4, "{symbols}");
        assert_eq!(symbols.matches(['♕', '♛']).count(), 2, "{symbols}");
        assert_eq!(
            symbols.matches("♙+").count() + symbols.matches("♟+").count(),
            8
        );
    }
    // Text only: refused with --svg.
    assert_fails(&["show", "--svg", "--symbols"], None, "--symbols");
    assert_fails(
        &["show", "--variant", "glinski", "--symbols", "--svg"],
        None,
        "cannot be used with",
    );
}

#[test]
fn play_status_and_pgn_happy_paths() {
    let out = arbiter(&["play", "e4", "e7e5", "Nf3"], None);
    assert_eq!(
        stdout(&out),
        "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2\n"
    );
    let out = arbiter(&["play", "--locale", "italian", "e4", "e5", "Cf3"], None);
    assert_eq!(
        stdout(&out),
        "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2\n"
    );
    let out = arbiter(&["status", "f3", "e5", "g4", "Qh4#"], None);
    assert_eq!(stdout(&out), "0-1 checkmate\n");
    let out = arbiter(
        &["status", "--position", "4k3/8/8/8/8/8/8/4KB2 w - - 0 1"],
        None,
    );
    assert_eq!(stdout(&out), "1/2-1/2 dead-position\n");
    let out = arbiter(
        &["status", "--position", "4k3/8/8/8/8/8/8/R3K3 w - - 100 80"],
        None,
    );
    assert_eq!(stdout(&out), "ongoing; claimable: fifty-move-rule\n");
    let out = arbiter(&["status"], None);
    assert_eq!(stdout(&out), "ongoing\n");
    let out = arbiter(
        &["pgn"],
        Some("[White \"x\"]\n1.e4 e5 2.Nf3 Nc6 (2...d6) 3.Bb5 a6 1/2-1/2\n"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("[Event \"?\"]\n"), "{text}");
    assert!(
        text.contains("1. e4 e5 2. Nf3 Nc6 (2... d6) 3. Bb5 a6 1/2-1/2"),
        "{text}"
    );
    let out = arbiter(
        &["pgn", "--output-locale", "italian"],
        Some("1. e4 e5 2. Nf3 *"),
    );
    assert!(stdout(&out).contains("2. Cf3 *"));
}

#[test]
fn crazyhouse_bughouse_and_bpgn_through_the_cli() {
    let out = arbiter(
        &[
            "play",
            "--variant",
            "crazyhouse",
            "e4",
            "d5",
            "exd5",
            "Qxd5",
            "P@e4",
        ],
        None,
    );
    assert_eq!(
        stdout(&out),
        "rnb1kbnr/ppp1pppp/8/3q4/4P3/8/PPPP1PPP/RNBQKBNR[p] b KQkq - 0 3\n"
    );
    // A blockable back-rank check: mate in crazyhouse, the player waits in bughouse.
    let back_rank = "6k1/8/8/8/8/8/5PPP/r5K1 w - - 0 1";
    for (variant, status) in [("crazyhouse", "0-1 checkmate\n"), ("bughouse", "ongoing\n")] {
        let out = arbiter(
            &["status", "--variant", variant, "--position", back_rank],
            None,
        );
        assert_eq!(stdout(&out), status, "{variant}");
    }
    let out = arbiter(
        &["bpgn"],
        Some("[WhiteA \"x\"]\n\n1A.e4 {[%clk 0:02:59.8]} 1a. d5 1B. d4 2A. exd5 1b. @e4 *\n"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("\n1A. e4 {179.80} 1a. d5 1B. d4 2A. exd5 1b. P@e4 *\n"),
        "{}",
        stdout(&out)
    );
    assert_fails(
        &["bpgn"],
        Some("1A. e4 1b. e5\n"),
        "game 1: move 2 (1b. e5)",
    );
}

/// 20,000 nested variations once overflowed the stack and aborted `arbiter pgn`; now they are
/// refused with a precise message, and hostile BPGN too.
#[test]
fn hostile_pgn_is_refused_without_a_crash() {
    let mut pgn = String::from("1. e4 ");
    pgn.push_str(&"( e4 ".repeat(20_000));
    pgn.push_str(&") ".repeat(20_000));
    pgn.push('*');
    assert_fails(&["pgn"], Some(&pgn), "nested more than 64 deep");
    let bpgn = format!("1A. e4 {} *", "( e4 ".repeat(50_000));
    assert_fails(&["bpgn"], Some(&bpgn), "unterminated variation");
    let long: String = (1..=5000)
        .map(|n| format!("{n}A. Nf3 {n}a. Nf6 "))
        .collect();
    assert_fails(&["bpgn"], Some(&long), "more than 8192 moves");
}

#[test]
fn analyze_prints_info_then_a_legal_bestmove_in_every_variant() {
    for variant in [
        "chess",
        "crazyhouse",
        "bughouse",
        "glinski",
        "byzantine",
        "byzantine-citadel",
    ] {
        let out = arbiter(
            &[
                "analyze",
                "--variant",
                variant,
                "--nodes",
                "3000",
                "--multipv",
                "2",
            ],
            None,
        );
        assert!(out.status.success(), "{variant}: {}", stderr(&out));
        let text = stdout(&out);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines.len() >= 2
                && lines[..lines.len() - 1]
                    .iter()
                    .all(|l| l.starts_with("info depth "))
        );
        let best = lines
            .last()
            .unwrap()
            .strip_prefix("bestmove ")
            .expect("a bestmove line");
        let moves = stdout(&arbiter(&["moves", "--variant", variant], None));
        assert!(
            moves.lines().any(|m| m == best),
            "{variant}: {best} is not legal"
        );
    }
    // The mate is found and printed as such.
    let out = arbiter(
        &[
            "analyze",
            "--position",
            "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",
            "--depth",
            "3",
        ],
        None,
    );
    let text = stdout(&out);
    assert!(
        text.contains("score mate 1") && text.ends_with("bestmove d1d8\n"),
        "{text}"
    );
    // No legal move.
    let out = arbiter(
        &[
            "analyze",
            "--position",
            "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",
            "--depth",
            "2",
        ],
        None,
    );
    assert_eq!(stdout(&out), "bestmove (none)\n");
    // Moves played first (UCI or SAN): the search starts where they lead.
    let out = arbiter(
        &[
            "analyze", "--depth", "3", "e4", "e7e5", "Qh5", "Nc6", "Bc4", "Nf6",
        ],
        None,
    );
    assert!(
        stdout(&out).contains("score mate 1") && stdout(&out).ends_with("bestmove h5f7\n"),
        "{}",
        stdout(&out)
    );
    // Repetition as the game's rule counts it: after e2e4 the en passant capture d4xe3 would
    // expose the king on a4 to the rook, so the position after Nf3-g1 repeats the one after
    // e2e4. The losing side takes the draw.
    let out = arbiter(
        &[
            "analyze",
            "--position",
            "q5n1/8/8/8/k2p3R/8/4P3/4K1N1 w - - 0 1",
            "--depth",
            "6",
            "e2e4",
            "g8f6",
            "g1f3",
            "f6g8",
        ],
        None,
    );
    assert!(
        stdout(&out).contains("score cp 0 ") && stdout(&out).ends_with("bestmove f3g1\n"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn analyze_refuses_bad_limits_and_positions_with_status_2() {
    for (args, needle) in [
        (vec!["analyze"], "--depth"),
        (vec!["analyze", "--depth", "0"], "--depth"),
        (
            vec!["analyze", "--depth", "4", "--nodes", "5"],
            "cannot be used with",
        ),
        (vec!["analyze", "--nodes", "0"], "--nodes"),
        (vec!["analyze", "--movetime", "0"], "--movetime"),
        (
            vec!["analyze", "--depth", "2", "--multipv", "0"],
            "--multipv",
        ),
        (
            vec!["analyze", "--depth", "2", "--position", "not a fen"],
            "--position",
        ),
        (
            vec![
                "analyze",
                "--depth",
                "2",
                "--variant",
                "byzantine",
                "--rule",
                "stalemate=maybe",
            ],
            "--rule",
        ),
        (
            vec!["analyze", "--depth", "2", "e4", "e5", "Ke3"],
            "move 3 ('Ke3')",
        ),
        (
            vec!["analyze", "--depth", "2", "--eval-off", "material"],
            "--eval-off",
        ),
    ] {
        let out = arbiter(&args, None);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn selfplay_reports_a_score_and_refuses_bad_settings() {
    let bin = env!("CARGO_BIN_EXE_arbiter");
    let out = arbiter(
        &[
            "selfplay",
            "--variant",
            "byzantine",
            "--a",
            bin,
            "--a-args",
            "--nodes 300",
            "--b",
            "greedy",
            "--pairs",
            "1",
            "--max-plies",
            "40",
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(
        text.lines().filter(|l| l.starts_with("game ")).count(),
        2,
        "{text}"
    );
    assert!(
        text.lines().last().unwrap().starts_with("A v B: 2 games"),
        "{text}"
    );
    // Builds kept running over UCI through every game of their thread, in chess and crazyhouse.
    for variant in ["chess", "crazyhouse"] {
        let out = arbiter(
            &[
                "selfplay",
                "--uci",
                "--variant",
                variant,
                "--a",
                bin,
                "--a-args",
                "--nodes 500 --hash 1",
                "--b",
                bin,
                "--b-args",
                "--depth 2",
                "--pairs",
                "2",
                "--concurrency",
                "2",
                "--max-plies",
                "40",
            ],
            None,
        );
        assert!(out.status.success(), "{variant}: {}", stderr(&out));
        let text = stdout(&out);
        assert_eq!(
            text.lines().filter(|l| l.starts_with("game ")).count(),
            4,
            "{variant}: {text}"
        );
        assert!(
            text.lines().last().unwrap().starts_with("A v B: 4 games"),
            "{variant}: {text}"
        );
    }
    // On a game clock: engines told their times (one without limits of its own, one with a
    // node limit too); a game may end on time, but each one ends.
    let out = arbiter(
        &[
            "selfplay",
            "--uci",
            "--tc",
            "2+0.02",
            "--a",
            bin,
            "--a-args",
            "--hash 1",
            "--b",
            bin,
            "--b-args",
            "--nodes 2000",
            "--pairs",
            "1",
            "--max-plies",
            "30",
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.lines().last().unwrap().starts_with("A v B: 2 games"),
        "{text}"
    );
    // A sequential test: greedy against random in Byzantine is decided long before 300 pairs.
    let out = arbiter(
        &[
            "selfplay",
            "--variant",
            "byzantine",
            "--a",
            "greedy",
            "--b",
            "random",
            "--pairs",
            "300",
            "--sprt",
            "0,50",
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let last = text.lines().last().unwrap();
    assert!(
        last.starts_with("SPRT elo0 +0 elo1 +50") && last.ends_with("H1 accepted"),
        "{text}"
    );
    assert!(text.lines().filter(|l| l.starts_with("game ")).count() < 200);
    // Not a network file: refused (exit 2) before any game.
    let not_a_net = format!(
        "--net {}",
        concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")
    );
    for args in [
        vec!["selfplay", "--a", "greedy", "--b", "greedy", "--pairs", "0"],
        vec![
            "selfplay",
            "--variant",
            "bughouse",
            "--a",
            "greedy",
            "--b",
            "greedy",
        ],
        vec![
            "selfplay",
            "--a",
            "/nonexistent/arbiter",
            "--b",
            "greedy",
            "--pairs",
            "1",
        ],
        vec![
            "selfplay", "--a", "greedy", "--b", "greedy", "--sprt", "10,0",
        ],
        vec!["selfplay", "--a", "greedy", "--b", "greedy", "--sprt", "x"],
        // A clock needs UCI play, and a well-formed time control.
        vec![
            "selfplay", "--a", "greedy", "--b", "greedy", "--tc", "10+0.1",
        ],
        vec![
            "selfplay", "--uci", "--a", "greedy", "--b", "greedy", "--tc", "10",
        ],
        vec![
            "selfplay",
            "--uci",
            "--variant",
            "glinski",
            "--a",
            bin,
            "--b",
            "greedy",
        ],
        vec![
            "selfplay",
            "--uci",
            "--a",
            bin,
            "--a-args",
            "--eval-off king_safety",
            "--b",
            "greedy",
        ],
        vec![
            "selfplay", "--uci", "--a", bin, "--a-args", &not_a_net, "--b", "greedy",
        ],
        vec![
            "selfplay",
            "--uci",
            "--variant",
            "crazyhouse",
            "--a",
            bin,
            "--a-args",
            "--net x",
            "--b",
            "greedy",
        ],
    ] {
        assert_eq!(arbiter(&args, None).status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn texel_generates_data_that_tune_reads_and_refuses_bad_settings() {
    let dir = std::env::temp_dir().join(format!("arbiter-texel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let data = dir.join("data.txt");
    let data_text = data.to_str().unwrap();
    let out = arbiter(
        &[
            "texel",
            "generate",
            "--games",
            "3",
            "--nodes",
            "200",
            "--threads",
            "2",
            "--out",
            data_text,
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = std::fs::read_to_string(&data).unwrap().lines().count();
    assert!(
        stdout(&out).starts_with("3 games (white won ")
            && stdout(&out).contains(&format!("{lines} positions written")),
        "{}",
        stdout(&out)
    );
    let out = arbiter(
        &[
            "texel",
            "tune",
            "--data",
            data_text,
            "--passes",
            "1",
            "--threads",
            "2",
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("K ") && text.contains(&format!("over {lines} positions")),
        "{text}"
    );
    assert!(
        text.contains("Weights {") && text.contains("attack_units: ["),
        "{text}"
    );
    assert!(stderr(&out).contains("pass 1: step 8"), "{}", stderr(&out));
    // Glinski: its own position strings and its own weights.
    let hex = dir.join("glinski.txt");
    let hex_text = hex.to_str().unwrap();
    let out = arbiter(
        &[
            "texel",
            "generate",
            "--variant",
            "glinski",
            "--games",
            "2",
            "--nodes",
            "200",
            "--out",
            hex_text,
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let first = std::fs::read_to_string(&hex).unwrap();
    let first = first.lines().next().unwrap();
    assert!(
        first.split('/').count() == 11 && {
            // POSITION | RESULT | SCORE (the search's score, for the network trainer).
            let fields: Vec<&str> = first.split(" | ").collect();
            fields.len() == 3
                && ["1", "0.5", "0"].contains(&fields[1])
                && fields[2].parse::<i32>().is_ok()
        },
        "{first}"
    );
    let out = arbiter(
        &[
            "texel",
            "tune",
            "--variant",
            "glinski",
            "--data",
            hex_text,
            "--passes",
            "1",
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("king_centre_endgame: "),
        "{}",
        stdout(&out)
    );
    // Crazyhouse: FEN with the pieces in hand in brackets, and the hand terms among the weights.
    let house = dir.join("crazyhouse.txt");
    let house_text = house.to_str().unwrap();
    let out = arbiter(
        &[
            "texel",
            "generate",
            "--variant",
            "crazyhouse",
            "--games",
            "2",
            "--nodes",
            "200",
            "--out",
            house_text,
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = std::fs::read_to_string(&house).unwrap();
    assert!(lines.lines().count() > 10, "{lines}");
    assert!(
        lines
            .lines()
            .all(|l| l.contains('[') && l.contains("] ") && l.split(" | ").count() == 3),
        "{lines}"
    );
    let out = arbiter(
        &[
            "texel",
            "tune",
            "--variant",
            "crazyhouse",
            "--data",
            house_text,
            "--passes",
            "1",
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    for needle in [
        "board: super::chess::Weights {",
        "in_hand: [",
        "drop_danger: ",
    ] {
        assert!(stdout(&out).contains(needle), "{needle}: {}", stdout(&out));
    }
    // Bad settings and bad data: exit status 2, naming the flag (and the line).
    let bad = dir.join("bad.txt");
    std::fs::write(&bad, "# a comment\nnot a position | 1\n").unwrap();
    let empty = dir.join("empty.txt");
    std::fs::write(&empty, "\n").unwrap();
    for (args, needle) in [
        (
            vec!["texel", "generate", "--games", "0", "--out", data_text],
            "--games: 0 is out of range",
        ),
        (
            vec!["texel", "generate", "--nodes", "5", "--out", data_text],
            "--nodes: 5 is out of range",
        ),
        (
            vec!["texel", "generate", "--out", "/nonexistent/dir/x.txt"],
            "--out: /nonexistent/dir/x.txt",
        ),
        (
            vec!["texel", "tune", "--data", bad.to_str().unwrap()],
            "--data: line 2: position:",
        ),
        (
            vec!["texel", "tune", "--data", empty.to_str().unwrap()],
            "holds no positions",
        ),
        (
            vec!["texel", "tune", "--data", data_text, "--step", "0"],
            "--step: 0 is out of range",
        ),
        (
            vec!["texel", "tune", "--data", "/nonexistent/data.txt"],
            "--data: /nonexistent/data.txt",
        ),
        (
            vec!["texel", "tune", "--variant", "glinski", "--data", data_text],
            "--data: line 1: position:",
        ),
        (
            vec![
                "texel",
                "generate",
                "--variant",
                "byzantine",
                "--out",
                data_text,
            ],
            "--variant",
        ),
    ] {
        let out = arbiter(&args, None);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn nnue_trains_continues_from_a_network_and_refuses_a_wrong_width() {
    let dir = std::env::temp_dir().join(format!("arbiter-nnue-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let (data, first, second) = (path("data.txt"), path("a.nnue"), path("b.nnue"));
    let out = arbiter(
        &[
            "texel",
            "generate",
            "--games",
            "24",
            "--nodes",
            "100",
            "--threads",
            "2",
            "--out",
            &data,
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let train = |extra: &[&str], out_path: &str| {
        let mut args = vec![
            "nnue",
            "train",
            "--data",
            &data,
            "--out",
            out_path,
            "--epochs",
            "2",
            "--validation-every",
            "2",
            "--threads",
            "2",
        ];
        args.extend_from_slice(extra);
        arbiter(&args, None)
    };
    let out = train(&["--hidden", "16"], &first);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("(16 hidden)"), "{}", stdout(&out));
    // Continued: the network's width without --hidden, and its loss reported first.
    let out = train(&["--init", &first], &second);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("(16 hidden)"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("continuing from the given network: validation loss"),
        "{}",
        stderr(&out)
    );
    let out = arbiter(&["analyze", "--net", &second, "--nodes", "2000"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    // Without --net (or with `built-in`) standard chess is evaluated by the built-in network;
    // with `none` by the hand-written evaluation, which scores the same search differently.
    let score = |net: &[&str]| {
        let mut args = vec!["analyze", "--depth", "5"];
        args.extend_from_slice(net);
        let out = arbiter(&args, None);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        let line = text.lines().rfind(|l| l.starts_with("info depth 5 "));
        let cp = line
            .and_then(|l| l.split(" score cp ").nth(1))
            .unwrap_or_default();
        cp.split(' ').next().unwrap_or_default().to_owned()
    };
    let built_in = score(&[]);
    assert!(!built_in.is_empty());
    assert_eq!(score(&["--net", "built-in"]), built_in);
    assert_ne!(score(&["--net", "none"]), built_in);
    // The next data can come from the network's own games; Glinski has no network.
    let more = path("more.txt");
    let out = arbiter(
        &[
            "texel", "generate", "--games", "2", "--nodes", "100", "--net", &second, "--out", &more,
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("2 games"), "{}", stdout(&out));
    let out = arbiter(
        &[
            "texel",
            "generate",
            "--variant",
            "glinski",
            "--net",
            &second,
            "--out",
            &more,
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("a network for chess, not for glinski"),
        "{}",
        stderr(&out)
    );
    for (extra, needle) in [
        (
            vec!["--init", first.as_str(), "--hidden", "32"],
            "--hidden: 32, but the --init network has 16 hidden units",
        ),
        (vec!["--init", data.as_str()], "--init: "),
    ] {
        let out = train(&extra, &second);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{extra:?}: {}", stderr(&out));
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn analyze_pgn_annotates_games_and_reports_progress() {
    let pgn = "[Event \"t\"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n";
    let out = arbiter(
        &["analyze-pgn", "-", "--nodes", "2000", "--workers", "2"],
        Some(pgn),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    // The writer wraps lines (where depends on the comment on 1. f3), so compare with the
    // whitespace collapsed.
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("2. g4 $4 {[%eval #-1] Blunder.") && text.contains("[Annotator \"Arbiter\"]"),
        "{text}"
    );
    let err = stderr(&out);
    // Not a terminal: plain progress lines, the last at 5 of 5, then the game's summary.
    assert!(err.contains("analyze-pgn: 5/5 positions, "), "{err}");
    assert!(
        err.lines()
            .last()
            // One blunder for white (1. f3 may count as an inaccuracy too), none for black.
            .is_some_and(
                |l| l.starts_with("game 1: accuracy white ") && l.contains("/0/1, black 0/0/0 (")
            ),
        "{err}"
    );
    for (args, needle) in [
        (
            vec!["analyze-pgn", "-", "--nodes", "5"],
            "--nodes: 5 is out of range",
        ),
        (
            vec!["analyze-pgn", "-", "--workers", "0"],
            "--workers: 0 is out of range",
        ),
        (
            vec!["analyze-pgn", "/nonexistent/games.pgn"],
            "FILE: /nonexistent/games.pgn",
        ),
        (
            vec!["analyze-pgn", "-", "--depth", "3", "--nodes", "5000"],
            "cannot be used with",
        ),
    ] {
        let out = arbiter(&args, Some(pgn));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
    let out = arbiter(&["analyze-pgn", "-"], Some("1. e4 e5 2. Ke3 *\n"));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("game 1:"), "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "a refused file writes nothing");

    // --out: the games written as they are reviewed; a refused file leaves no file behind.
    let dir = std::env::temp_dir().join(format!("arbiter-review-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("out.pgn");
    let two = format!("{pgn}\n[Event \"u\"]\n\n1. d4 d5 *\n");
    let p = path.to_str().unwrap();
    let out = arbiter(
        &["analyze-pgn", "-", "--depth", "2", "--out", p],
        Some(&two),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let written = std::fs::read_to_string(&path).unwrap();
    let first = written.find("[Event \"t\"]").unwrap();
    assert!(
        written[first..].contains("[Event \"u\"]"),
        "in order: {written}"
    );
    let bad = format!("{two}\n1. e4 e5 2. Ke3 *\n");
    let out = arbiter(
        &["analyze-pgn", "-", "--depth", "2", "--out", p],
        Some(&bad),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("game 3:"), "{}", stderr(&out));
    assert!(!path.exists());
    std::fs::remove_dir_all(&dir).ok();
}

/// Chess960 through the binary: perft of the published suite's first positions (Shredder-FEN),
/// a start position by number, castling in both UCI forms, PGN with its variant tag.
#[test]
fn chess960_perft_moves_and_pgn() {
    let cases = suite("chess960.perft");
    let mut ran = 0;
    for (fen, depth, nodes) in cases.iter().take(60) {
        if *depth > 3 {
            continue;
        }
        let d = depth.to_string();
        let out = arbiter(
            &[
                "perft",
                "--variant",
                "chess960",
                "--position",
                fen,
                "--depth",
                &d,
            ],
            None,
        );
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(
            stdout(&out).lines().last(),
            Some(nodes.to_string().as_str()),
            "{fen}"
        );
        ran += 1;
    }
    assert!(ran >= 30);
    // Start position 0 by number: python-chess counts 400 at depth 2.
    let out = arbiter(
        &[
            "perft",
            "--variant",
            "chess960",
            "--position",
            "0",
            "--depth",
            "2",
        ],
        None,
    );
    assert_eq!(stdout(&out).lines().last(), Some("400"), "{}", stderr(&out));
    // Castling listed as the king taking its rook.
    let out = arbiter(
        &[
            "moves",
            "--variant",
            "chess960",
            "--position",
            "1r4k1/8/8/8/8/8/8/R5KR w HA - 0 1",
        ],
        None,
    );
    let moves = stdout(&out);
    assert!(
        moves.lines().any(|l| l == "g1h1") && moves.lines().any(|l| l == "g1a1"),
        "{moves}"
    );
    // X-FEN too, and the engine analyses Chess960 (its moves in the king-takes-rook form).
    let xfen = "rk4r1/pppppppp/8/8/8/8/PPPPPPPP/RK4R1 w KQkq - 0 1";
    let out = arbiter(
        &[
            "perft",
            "--variant",
            "chess960",
            "--position",
            xfen,
            "--depth",
            "1",
        ],
        None,
    );
    assert_eq!(stdout(&out).lines().last(), Some("24"), "{}", stderr(&out));
    let out = arbiter(
        &[
            "analyze",
            "--variant",
            "chess960",
            "--position",
            xfen,
            "--depth",
            "3",
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // Out of range numbers name the flag.
    let out = arbiter(
        &["moves", "--variant", "chess960", "--position", "960"],
        None,
    );
    assert!(
        !out.status.success() && stderr(&out).contains("--position"),
        "{}",
        stderr(&out)
    );
}

/// `--lenient`: strict reading refuses what does not fit; lenient reading drops it and says so
/// on stderr, one line per correction.
#[test]
fn lenient_position_reading() {
    let fen = "4k3/8/8/8/8/8/8/1R2K3 w KQ e6 0 1";
    let strict = arbiter(&["moves", "--position", fen], None);
    assert!(!strict.status.success());
    assert!(stderr(&strict).contains("castling"), "{}", stderr(&strict));
    let lenient = arbiter(&["moves", "--lenient", "--position", fen], None);
    assert!(lenient.status.success(), "{}", stderr(&lenient));
    let notes = stderr(&lenient);
    assert_eq!(
        notes
            .lines()
            .filter(|l| l.starts_with("note: --position"))
            .count(),
        3,
        "{notes}"
    );
    assert!(
        notes.contains("en_passant") && notes.contains("e6"),
        "{notes}"
    );
    assert!(stdout(&lenient).lines().any(|l| l == "e1d1"));
    // Nothing to correct: nothing said.
    let clean = arbiter(&["perft", "--lenient", "--depth", "1"], None);
    assert_eq!(stderr(&clean), "");
    assert_eq!(stdout(&clean).lines().last(), Some("20"));
}
