//! The engine's fixed-depth bench: the same searches on every run, per variant, for comparing two
//! builds of the engine (speed, and whether they search the same tree).
//!
//! ```sh
//! cargo run --release -p arbiter-engine --example bench                  # every variant
//! cargo run --release -p arbiter-engine --example bench -- --variant chess --depth 14
//! cargo run --release -p arbiter-engine --example bench -- --variant chess --net chess.nnue
//! cargo run --release -p arbiter-engine --example bench -- --variant chess --net none
//! ```
//!
//! Standard chess is evaluated by the built-in network unless `--net` says otherwise: with
//! `--net FILE` (from `arbiter nnue train`) the variant the network is for is evaluated by it,
//! with `--net none` every variant by its hand-written evaluation.
//!
//! Each variant searches its start position and positions reached by seeded random moves from it
//! (so the positions do not depend on the engine), each with a fresh engine and a 16 MiB table,
//! to a fixed depth. Per variant it prints the nodes, the time, nodes per second and a
//! signature: a hash of every search's best move, score, depth and node count. Two builds that
//! print the same signature searched the same trees; their time ratio is then a pure speed
//! ratio. Builds that search differently are compared by time to the same depth, and by games.

use arbiter_core::{AnyPosition, Position, Variant};
use arbiter_engine::analyze::{AnalysisSettings, Engines};
use arbiter_engine::nnue::{Evaluation, Network};
use arbiter_engine::{Limits, SearchOptions, SystemTime};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// The variants benched by default, with the depth each is searched to (about one to three
/// seconds of search per variant on a 2026 laptop core).
const DEFAULT: [(Variant, u32); 6] = [
    (Variant::Chess, 13),
    (Variant::Crazyhouse, 10),
    (Variant::Bughouse, 10),
    (Variant::Glinski, 9),
    (Variant::Byzantine, 12),
    (Variant::ByzantineCitadel, 12),
];

/// Positions per variant: the start, and after these many random plies (three games each).
const PLIES: [usize; 3] = [6, 14, 24];
const GAMES: u64 = 3;

/// A seeded xorshift generator.
fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// The bench's positions of `variant`.
fn positions(variant: Variant) -> Vec<AnyPosition> {
    let start = AnyPosition::start(variant).expect("every variant has a start position");
    let mut out = vec![start.clone()];
    for game in 0..GAMES {
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15 ^ (game + 1));
        let mut pos = start.clone();
        for ply in 1..=PLIES[PLIES.len() - 1] {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            pos = pos
                .play(moves[(next() % moves.len() as u64) as usize])
                .expect("a legal move plays");
            if PLIES.contains(&ply) && pos.legal_moves().len() > 1 {
                out.push(pos.clone());
            }
        }
    }
    out
}

/// FNV-1a over `bytes`, continuing from `hash`.
fn fnv(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut only: Option<Variant> = None;
    let mut depth: Option<u32> = None;
    let mut net = Evaluation::BuiltIn;
    while let Some(arg) = args.next() {
        let value = args.next();
        match (arg.as_str(), value) {
            ("--variant", Some(v)) => match v.parse() {
                Ok(v) => only = Some(v),
                Err(e) => {
                    eprintln!("--variant: {e}");
                    return ExitCode::from(2);
                }
            },
            ("--depth", Some(d)) => match d.parse() {
                Ok(d) if (1..=64).contains(&d) => depth = Some(d),
                _ => {
                    eprintln!("--depth: a number from 1 to 64");
                    return ExitCode::from(2);
                }
            },
            ("--net", Some(none)) if none == "none" => net = Evaluation::HandWritten,
            ("--net", Some(path)) => {
                // At most 8 MiB, as `arbiter analyze --net` reads.
                let mut bytes = Vec::new();
                let read = std::fs::File::open(&path).and_then(|f| {
                    std::io::Read::read_to_end(&mut std::io::Read::take(f, 8 << 20), &mut bytes)
                });
                match read
                    .map_err(|e| e.to_string())
                    .and_then(|_| Network::from_bytes(&bytes).map_err(|e| e.to_string()))
                {
                    Ok(n) => net = Evaluation::Network(Arc::new(n)),
                    Err(e) => {
                        eprintln!("--net: {path}: {e}");
                        return ExitCode::from(2);
                    }
                }
            }
            _ => {
                eprintln!("usage: bench [--variant VARIANT] [--depth N] [--net FILE|none]");
                return ExitCode::from(2);
            }
        }
    }
    let stop = AtomicBool::new(false);
    let time = SystemTime::new();
    let (mut all_nodes, mut all_ms) = (0u64, 0u128);
    println!("variant             depth positions        nodes      ms        nps signature");
    for (variant, default_depth) in DEFAULT {
        if only.is_some_and(|v| v != variant) {
            continue;
        }
        let d = depth.unwrap_or(default_depth);
        let settings = AnalysisSettings {
            limits: Limits::depth(d),
            options: SearchOptions::default(),
            hash_mib: 16,
        };
        let positions = positions(variant);
        let (mut nodes, mut signature) = (0u64, 0xcbf2_9ce4_8422_2325u64);
        let begun = Instant::now();
        for pos in &positions {
            // A fresh engine per position.
            let mut engines = Engines::new(settings.hash_mib).with_evaluation(net.clone());
            let a = engines.analyze(pos, &[], &settings, &stop, &time, &mut |_| {});
            nodes += a.nodes;
            let line = format!("{:?} {} {} {}", a.best, a.score, a.depth, a.nodes);
            signature = fnv(signature, line.as_bytes());
        }
        let ms = begun.elapsed().as_millis();
        all_nodes += nodes;
        all_ms += ms;
        println!(
            "{:<19} {:>5} {:>9} {:>12} {:>7} {:>10} {:016x}",
            variant.to_string(),
            d,
            positions.len(),
            nodes,
            ms,
            u128::from(nodes) * 1000 / ms.max(1),
            signature
        );
    }
    println!(
        "total                                {:>12} {:>7} {:>10}",
        all_nodes,
        all_ms,
        u128::from(all_nodes) * 1000 / all_ms.max(1)
    );
    ExitCode::SUCCESS
}
