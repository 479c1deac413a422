//! What the pool costs over driving Stockfish by hand.
//!
//! `cargo run --release -p arbiter-uci-client --example overhead -- FENS [DEPTH] [ENGINE]`
//!
//! Reads FENs (one per line; blank lines and `#` comments skipped) and searches each at
//! `go depth DEPTH` (default 8) with ENGINE (default `/usr/games/stockfish`), in passes over
//! the whole file: (a) a raw process driven with minimal code (write `position` and `go`, read
//! lines until `bestmove`, no parsing), and (b) through an [`EnginePool`] with one process
//! (checked moves, parsed `info` lines, progress). Each pass starts with `ucinewgame` (not
//! timed), so passes do not feed on the table of the one before. Passes alternate a/b/a/b/a/b; the median
//! wall time of each kind's passes and the ratio b/a are printed.

use arbiter_core::{AnyPosition, Position, Variant};
use arbiter_engine::Limits;
use arbiter_uci_client::{EnginePool, EngineSpec, Search};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

const ROUNDS: usize = 3;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(file) = args.first() else {
        eprintln!("usage: overhead FENS [DEPTH] [ENGINE]");
        std::process::exit(2);
    };
    let depth: u32 = args.get(1).map_or(8, |d| d.parse().expect("DEPTH"));
    let engine = args
        .get(2)
        .cloned()
        .unwrap_or_else(|| "/usr/games/stockfish".to_owned());
    let text = std::fs::read_to_string(file).expect("FENS");
    // Standard chess positions only (a Chess960 one would need UCI_Chess960 on the raw side).
    let (fens, positions): (Vec<String>, Vec<AnyPosition>) = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|f| match AnyPosition::from_text(Variant::Chess, f) {
            Ok(p) => Some((p.to_text(), p)),
            Err(e) => {
                eprintln!("skipped {f}: {e}");
                None
            }
        })
        .unzip();

    // (a) The raw process.
    let mut child = Command::new(&engine)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the engine");
    let mut input = child.stdin.take().expect("stdin");
    let mut output = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let mut read_until = |output: &mut BufReader<_>, prefix: &str| loop {
        line.clear();
        if output.read_line(&mut line).expect("read") == 0 {
            panic!("the engine exited");
        }
        if line.starts_with(prefix) {
            return;
        }
    };
    writeln!(input, "uci\nisready").expect("write");
    read_until(&mut output, "readyok");
    let mut raw_pass = || {
        // Each pass from an empty table, like the pool's.
        writeln!(input, "ucinewgame\nisready").expect("write");
        read_until(&mut output, "readyok");
        let began = Instant::now();
        for fen in &fens {
            // The same text the pool sends (the core's FEN, counters included).
            writeln!(input, "position fen {fen}\ngo depth {depth}").expect("write");
            read_until(&mut output, "bestmove");
        }
        began.elapsed()
    };

    // (b) The pool.
    let spec = EngineSpec::parse(&format!("sf={engine},processes=1")).expect("spec");
    let pool = EnginePool::start(spec).expect("start the pool");
    let stop = AtomicBool::new(false);
    let mut session = pool.session(&stop).expect("session");
    let mut pool_pass = || {
        session.new_game().expect("ucinewgame");
        let began = Instant::now();
        for pos in &positions {
            let search = Search {
                start: pos,
                moves: &[],
                limits: Limits::depth(depth),
                multipv: 1,
            };
            let a = session
                .analyze(&search, &stop, &mut |_| {})
                .expect("analysis");
            std::hint::black_box(a);
        }
        began.elapsed()
    };

    let mut raw = Vec::new();
    let mut pooled = Vec::new();
    for round in 1..=ROUNDS {
        raw.push(raw_pass());
        pooled.push(pool_pass());
        eprintln!(
            "round {round}: raw {:.1} ms, pool {:.1} ms",
            ms(raw[round - 1]),
            ms(pooled[round - 1])
        );
    }
    let (a, b) = (median(&mut raw), median(&mut pooled));
    println!(
        "{} positions at depth {depth}, {ROUNDS} passes each: raw median {:.1} ms, pool median {:.1} ms, ratio b/a {:.3}",
        fens.len(),
        ms(a),
        ms(b),
        b.as_secs_f64() / a.as_secs_f64()
    );
    let _ = writeln!(input, "quit");
    let _ = child.wait();
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(xs: &mut [Duration]) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}
