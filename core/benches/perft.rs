//! Perft throughput of `arbiter-core` next to the `shakmaty` crate, measured in the same run.
//!
//! `cargo bench -p arbiter-core --bench perft` — start position depth 6, Kiwipete depth 5 and
//! the first position of the Chess960 perft suite at depth 5 (both libraries in Chess960 mode),
//! bulk counting (the last ply is counted, not played) in both libraries. Each measurement is
//! repeated (`ARBITER_BENCH_RUNS`, default 3) alternating the two libraries; the best time of
//! each is reported with nodes/s and the ratio. `ARBITER_BENCH_QUICK=1` lowers the depths by one
//! for a smoke run.
//!
//! A second table puts the other variants' start positions next to standard chess (start
//! position, depth 6) in the same run: Byzantine at depth 6, Glinski at depth 4.

use arbiter_core::byzantine::{ByzantineRules, ByzantineVariant};
use arbiter_core::{Byzantine, Chess, Glinski, perft};
use shakmaty::CastlingMode;
use shakmaty::fen::Fen;
use std::hint::black_box;
use std::time::{Duration, Instant};

fn time<F: FnMut() -> u64>(mut f: F) -> (u64, Duration) {
    let start = Instant::now();
    let nodes = black_box(f());
    (nodes, start.elapsed())
}

fn main() {
    let quick = std::env::var_os("ARBITER_BENCH_QUICK").is_some();
    let runs: usize = std::env::var("ARBITER_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    // (name, FEN, depth, Chess960): the last is position 0 of the Chess960 perft suite.
    let cases = [
        (
            "startpos",
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            6,
            false,
        ),
        (
            "kiwipete",
            "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
            5,
            false,
        ),
        (
            "960 #0",
            "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 0 1",
            5,
            true,
        ),
    ];
    println!(
        "{:<10} {:>5} {:>12} {:>14} {:>14} {:>7}",
        "position", "depth", "nodes", "arbiter n/s", "shakmaty n/s", "ratio"
    );
    for (name, fen, depth, chess960) in cases {
        let depth = if quick { depth - 1 } else { depth };
        let ours = Chess::from_fen_as(fen, chess960).expect("valid FEN");
        let mode = if chess960 {
            CastlingMode::Chess960
        } else {
            CastlingMode::Standard
        };
        let theirs: shakmaty::Chess = fen
            .parse::<Fen>()
            .expect("valid FEN")
            .into_position(mode)
            .expect("legal position");
        let (mut best_ours, mut best_theirs) = (Duration::MAX, Duration::MAX);
        let mut nodes = 0;
        for _ in 0..runs {
            let (n, t) = time(|| perft(black_box(&ours), depth));
            let (m, u) = time(|| shakmaty::perft(black_box(&theirs), depth));
            assert_eq!(n, m, "node counts differ on {name}");
            nodes = n;
            best_ours = best_ours.min(t);
            best_theirs = best_theirs.min(u);
        }
        let nps = |t: Duration| nodes as f64 / t.as_secs_f64();
        println!(
            "{:<10} {:>5} {:>12} {:>14.0} {:>14.0} {:>6.2}x",
            name,
            depth,
            nodes,
            nps(best_ours),
            nps(best_theirs),
            nps(best_ours) / nps(best_theirs)
        );
    }

    // Variants next to standard chess, all measured in this run, alternating.
    let chess = Chess::new();
    let byz = Byzantine::start(ByzantineVariant::Plain, ByzantineRules::default());
    let glinski = Glinski::new();
    let d = |depth: u32| if quick { depth - 1 } else { depth };
    type Run<'a> = (&'a str, u32, Box<dyn Fn() -> u64 + 'a>);
    let variants: [Run; 3] = [
        ("chess", d(6), Box::new(|| perft(black_box(&chess), d(6)))),
        ("byzantine", d(6), Box::new(|| perft(black_box(&byz), d(6)))),
        (
            "glinski",
            d(4),
            Box::new(|| perft(black_box(&glinski), d(4))),
        ),
    ];
    let mut best = [Duration::MAX; 3];
    let mut nodes = [0u64; 3];
    for _ in 0..runs {
        for (i, (_, _, run)) in variants.iter().enumerate() {
            let (n, t) = time(run);
            nodes[i] = n;
            best[i] = best[i].min(t);
        }
    }
    let nps: Vec<f64> = (0..3)
        .map(|i| nodes[i] as f64 / best[i].as_secs_f64())
        .collect();
    println!();
    println!(
        "{:<10} {:>5} {:>12} {:>14} {:>16}",
        "variant", "depth", "nodes", "nodes/s", "vs chess"
    );
    for (i, (name, depth, _)) in variants.iter().enumerate() {
        println!(
            "{:<10} {:>5} {:>12} {:>14.0} {:>15.2}x",
            name,
            depth,
            nodes[i],
            nps[i],
            nps[i] / nps[0]
        );
    }
}
