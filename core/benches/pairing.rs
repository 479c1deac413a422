//! Pairing waves next to the greedy baseline, measured in the same run.
//!
//! `cargo bench -p arbiter-core --bench pairing` — pools of 1,000, 10,000 and 100,000 waiting
//! players (seeded, reproducible): ratings spread like a real pool (a sum of uniforms around
//! 1500, clamped to 600–2900), 0–9 missed waves, one in five with a ±200 range, colour
//! histories, and one last opponent in ten. For each pool, [`pair_wave`] (exact minimum-cost
//! matching on the K-nearest candidate graph) and [`greedy_pairs`] (sorted neighbours) run on
//! the same players; the table gives the time per wave (best of `ARBITER_BENCH_RUNS`, default 3;
//! one run at 100,000), the players paired, the total cost of the pairs (a wave is judged by
//! the players it pairs first, then by this total, lower is better), and the mean and largest rating
//! gap of the pairs. A last table times bughouse team waves over lone players.

use arbiter_core::Color;
use arbiter_core::pairing::teams::team_wave;
use arbiter_core::pairing::wave::{
    PlayerId, RatingRange, WaitingPlayer, Wave, WaveOptions, greedy_pairs, pair_wave,
};
use std::collections::HashMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// SplitMix64: a small deterministic generator, enough for reproducible pools.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn pool(n: usize, seed: u64) -> Vec<WaitingPlayer> {
    let mut rng = Rng(seed);
    let mut players: Vec<WaitingPlayer> = (0..n)
        .map(|i| {
            // A sum of four uniforms: a bell around 1500 with a spread of about 290.
            let sum: i64 = (0..4).map(|_| rng.below(1_001) as i64).sum();
            let rating = (sum - 2_000 + 1_500).clamp(600, 2_900) as i32;
            let mut p = WaitingPlayer::new(PlayerId(i as u64), rating);
            p.missed_waves = rng.below(10) as u32;
            if rng.below(5) == 0 {
                p.range = Some(RatingRange {
                    min: rating - 200,
                    max: rating + 200,
                });
            }
            p.color_balance = rng.below(5) as i32 - 2;
            p.last_color = match rng.below(3) {
                0 => Some(Color::White),
                1 => Some(Color::Black),
                _ => None,
            };
            p
        })
        .collect();
    for p in &mut players {
        if rng.below(10) == 0 {
            p.last_opponent = Some(PlayerId(rng.below(n as u64)));
        }
    }
    players
}

struct Figures {
    time: Duration,
    paired: usize,
    total_cost: i64,
    mean_gap: f64,
    max_gap: i32,
}

fn figures(players: &[WaitingPlayer], wave: &Wave, time: Duration) -> Figures {
    let rating: HashMap<PlayerId, i32> = players.iter().map(|p| (p.id, p.rating)).collect();
    let gaps: Vec<i32> = wave
        .pairs
        .iter()
        .map(|p| (rating[&p.white] - rating[&p.black]).abs())
        .collect();
    let score = wave.score();
    Figures {
        time,
        paired: wave.pairs.len() * 2,
        total_cost: score.total_cost,
        mean_gap: gaps.iter().map(|&g| f64::from(g)).sum::<f64>() / gaps.len().max(1) as f64,
        max_gap: gaps.iter().copied().max().unwrap_or(0),
    }
}

fn best<F: FnMut() -> Wave>(runs: usize, mut f: F) -> (Wave, Duration) {
    let mut out = None;
    let mut fastest = Duration::MAX;
    for _ in 0..runs {
        let start = Instant::now();
        let wave = black_box(f());
        fastest = fastest.min(start.elapsed());
        out = Some(wave);
    }
    (out.expect("at least one run"), fastest)
}

fn main() {
    let runs: usize = std::env::var("ARBITER_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
        .max(1);
    let options = WaveOptions::default();
    println!(
        "{:>7} {:<7} {:>10} {:>8} {:>12} {:>9} {:>8}",
        "players", "method", "time", "paired", "total cost", "mean gap", "max gap"
    );
    for n in [1_000, 10_000, 100_000] {
        let players = pool(n, 42 + n as u64);
        let runs = if n >= 100_000 { 1 } else { runs };
        let (exact, t_exact) = best(runs, || pair_wave(&players, &options).expect("valid pool"));
        let (greedy, t_greedy) = best(runs, || greedy_pairs(&players, 0).expect("valid pool"));
        for (name, f) in [
            ("exact", figures(&players, &exact, t_exact)),
            ("greedy", figures(&players, &greedy, t_greedy)),
        ] {
            println!(
                "{n:>7} {name:<7} {:>10.2?} {:>8} {:>12} {:>9.1} {:>8}",
                f.time, f.paired, f.total_cost, f.mean_gap, f.max_gap
            );
        }
        println!(
            "{n:>7} exact/greedy: time {:.1}x",
            t_exact.as_secs_f64() / t_greedy.as_secs_f64().max(1e-9)
        );
    }
    println!("\nbughouse team waves (lone players)");
    for n in [1_000, 10_000] {
        let players = pool(n, 7 + n as u64);
        let mut fastest = Duration::MAX;
        let mut matches = 0;
        for _ in 0..runs {
            let start = Instant::now();
            let wave = black_box(team_wave(&players, &[], &options).expect("valid pool"));
            fastest = fastest.min(start.elapsed());
            matches = wave.matches.len();
        }
        println!("{n:>7} players: {fastest:.2?} per wave, {matches} matches");
    }
}
