//! `arbiter analyze --engine NAME=PATH[,...]`: the search on an external UCI engine (Debian's
//! Stockfish and Fairy-Stockfish; each test prints a notice and passes without them), the same
//! output as the built-in engine's, and the errors for a bad spec or a variant the engine does
//! not play.

use arbiter_core::{AnyPosition, Locale, Notation, Position, Variant};
use std::process::{Command, Output};

const STOCKFISH: &str = "/usr/games/stockfish";
const FAIRY: &str = "/usr/games/fairy-stockfish";

fn arbiter(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args(args)
        .output()
        .expect("run arbiter")
}

fn installed(path: &str) -> bool {
    let there = std::path::Path::new(path).exists();
    if !there {
        eprintln!("NOTICE: {path} is not installed; skipping");
    }
    there
}

/// The `info` lines and the move of the last line, which must be `bestmove MOVE` alone.
fn parse(out: &Output) -> (Vec<String>, String) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout.clone()).expect("utf-8");
    let lines: Vec<&str> = text.lines().collect();
    let (last, infos) = lines.split_last().expect("output");
    let words: Vec<&str> = last.split(' ').collect();
    assert_eq!(words.len(), 2, "last line {last:?}");
    assert_eq!(words[0], "bestmove");
    for l in infos {
        assert!(l.starts_with("info depth "), "{l}");
        assert!(l.contains(" score ") && l.contains(" pv "), "{l}");
    }
    (
        infos.iter().map(|s| s.to_string()).collect(),
        words[1].to_owned(),
    )
}

fn legal(variant: Variant, fen: Option<&str>, moves: &[&str], best: &str) {
    let mut pos = AnyPosition::from_optional_text(variant, fen).expect("position");
    for t in moves {
        let m = pos.parse_move(t, Notation::Auto, Locale::English).expect(t);
        pos.play_unchecked(m);
    }
    let m = pos
        .parse_move(best, Notation::Uci, Locale::English)
        .unwrap_or_else(|e| panic!("{best}: {e}"));
    assert!(pos.is_legal(m));
}

#[test]
fn stockfish_analyses_the_start_position() {
    if !installed(STOCKFISH) {
        return;
    }
    let out = arbiter(&[
        "analyze",
        "--engine",
        "stockfish=/usr/games/stockfish",
        "--variant",
        "chess",
        "--depth",
        "12",
    ]);
    let (infos, best) = parse(&out);
    assert!(infos.len() >= 12, "{infos:?}");
    assert!(infos.last().unwrap().starts_with("info depth 12 "));
    legal(Variant::Chess, None, &[], &best);
}

#[test]
fn stockfish_after_moves_with_multipv() {
    if !installed(STOCKFISH) {
        return;
    }
    let out = arbiter(&[
        "analyze",
        "--engine",
        "sf=/usr/games/stockfish,threads=1,hash=8",
        "--depth",
        "8",
        "--multipv",
        "2",
        "e4",
        "e5",
        "Nf3",
    ]);
    let (infos, best) = parse(&out);
    assert!(infos.iter().any(|l| l.contains(" multipv 2 ")));
    legal(Variant::Chess, None, &["e4", "e5", "Nf3"], &best);
}

#[test]
fn fairy_stockfish_mates_by_a_drop_in_crazyhouse() {
    if !installed(FAIRY) {
        return;
    }
    let fen = "6k1/5ppp/8/8/8/8/8/K7[Rp] w - - 0 1";
    let out = arbiter(&[
        "analyze",
        "--engine",
        "fsf=/usr/games/fairy-stockfish",
        "--variant",
        "crazyhouse",
        "--position",
        fen,
        "--depth",
        "6",
    ]);
    let (infos, best) = parse(&out);
    assert!(best.starts_with("R@"), "{best}");
    assert!(infos.last().unwrap().contains(" score mate 1 "));
    legal(Variant::Crazyhouse, Some(fen), &[], &best);
}

#[test]
fn a_mated_position_has_no_move() {
    if !installed(STOCKFISH) {
        return;
    }
    let out = arbiter(&[
        "analyze",
        "--engine",
        "sf=/usr/games/stockfish",
        "--position",
        "3R2k1/5ppp/8/8/8/8/8/K7 b - - 1 1",
        "--depth",
        "5",
    ]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "bestmove (none)\n");
}

fn fails(args: &[&str], code: i32, message: &str) {
    let out = arbiter(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
    assert!(stderr.contains(message), "{args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{args:?}");
}

#[test]
fn bad_specs_and_unplayable_variants_are_refused() {
    fails(
        &["analyze", "--engine", "Stock fish=/x", "--depth", "3"],
        2,
        "--engine: engine name 'Stock fish'",
    );
    fails(
        &["analyze", "--engine", "arbiter=/x", "--depth", "3"],
        2,
        "reserved for the built-in engine",
    );
    fails(
        &["analyze", "--engine", "sf=/x,threads=0", "--depth", "3"],
        2,
        "--engine: key 'threads': 0 is out of range",
    );
    fails(
        &["analyze", "--engine", "sf=/x,hash=1,hash=2", "--depth", "3"],
        2,
        "key 'hash' is given twice",
    );
    fails(
        &["analyze", "--engine", "sf=", "--depth", "3"],
        2,
        "the path is empty",
    );
    fails(
        &[
            "analyze",
            "--engine",
            "sf=/usr/games/stockfish",
            "--variant",
            "glinski",
            "--depth",
            "3",
        ],
        2,
        "glinski is played only by the built-in engine",
    );
    fails(
        &[
            "analyze",
            "--engine",
            "sf=/usr/games/stockfish",
            "--eval-off",
            "mobility",
            "--depth",
            "3",
        ],
        2,
        "--eval-off",
    );
    fails(
        &[
            "analyze",
            "--engine",
            "sf=/nonexistent/engine",
            "--depth",
            "3",
        ],
        1,
        "engine 'sf' could not be started: /nonexistent/engine",
    );
    if installed(STOCKFISH) {
        fails(
            &[
                "analyze",
                "--engine",
                "sf=/usr/games/stockfish",
                "--variant",
                "crazyhouse",
                "--depth",
                "3",
            ],
            2,
            "does not play crazyhouse (it plays: chess",
        );
    }
}
