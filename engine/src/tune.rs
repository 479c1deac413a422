//! Texel tuning of an evaluation's weights: standard chess ([`crate::eval::chess::Weights`]),
//! crazyhouse ([`crate::eval::crazyhouse::Weights`]) and Glinski
//! ([`crate::eval::glinski::Weights`]), through the [`Tunable`] trait.
//!
//! The method is Peter Österlund's, as published for Texel: given positions labelled with the
//! result of the game they came from, find the weights that minimise the mean squared error
//! between the result and the evaluation turned into an expected score,
//! `E = 1 / (1 + 10^(−K·eval/400))`.
//!
//! 1. `K` is fitted first, to the weights in use ([`fit_k`]), and then held.
//! 2. A local search ([`tune`]) tries each weight one step up and, failing that, one step down,
//!    keeping any change that lowers the error (and repeating a kept step while it still
//!    does); a pass over all weights that keeps nothing
//!    halves the step, and the search ends when a pass at step 1 keeps nothing (or after the
//!    most passes allowed).
//!
//! Positions should be quiet (not in check, a quiet best move), so that the static evaluation
//! is a fair stand-in for a search: `arbiter texel generate` records only those. Everything
//! here is deterministic: the error is summed over fixed blocks in a fixed order, so the result
//! does not depend on the number of threads.

use crate::EnginePosition;
use crate::eval::{chess, crazyhouse, glinski};
use arbiter_core::crazyhouse::HouseRules;
use arbiter_core::{Chess, Color, Crazyhouse, Glinski};

/// A variant whose evaluation has named integer weights to tune.
pub trait Tunable: EnginePosition + Clone + Send + Sync {
    /// The evaluation's weights.
    type Weights: Clone + Send + Sync;
    /// The weights the engine uses now.
    fn current() -> Self::Weights;
    /// Every tuned weight of `w` with its name, in a fixed order.
    fn visit(w: &mut Self::Weights, f: &mut dyn FnMut(&str, &mut i32));
    /// The evaluation of `self` under `w`, from the side to move's point of view.
    fn evaluate_with(&self, w: &Self::Weights) -> i32;
    /// The starting position.
    fn start() -> Self;
    /// Reads a position string as [`Position::to_text`](arbiter_core::Position::to_text) writes it.
    fn parse_text(text: &str) -> Result<Self, String>;
    /// `w` as Rust source, to paste over the weights in use.
    fn rust_literal(w: &Self::Weights) -> String;
}

impl Tunable for Chess {
    type Weights = chess::Weights;
    fn current() -> chess::Weights {
        chess::WEIGHTS.clone()
    }
    fn visit(w: &mut chess::Weights, f: &mut dyn FnMut(&str, &mut i32)) {
        w.visit(f)
    }
    fn evaluate_with(&self, w: &chess::Weights) -> i32 {
        chess::evaluate_with(self, w)
    }
    fn start() -> Chess {
        Chess::new()
    }
    fn parse_text(text: &str) -> Result<Chess, String> {
        Chess::from_fen(text).map_err(|e| e.to_string())
    }
    fn rust_literal(w: &chess::Weights) -> String {
        chess_literal(w)
    }
}

impl Tunable for Crazyhouse {
    type Weights = crazyhouse::Weights;
    fn current() -> crazyhouse::Weights {
        crazyhouse::WEIGHTS.clone()
    }
    fn visit(w: &mut crazyhouse::Weights, f: &mut dyn FnMut(&str, &mut i32)) {
        w.visit(f)
    }
    fn evaluate_with(&self, w: &crazyhouse::Weights) -> i32 {
        crazyhouse::evaluate_with(self, w)
    }
    fn start() -> Crazyhouse {
        Crazyhouse::new(HouseRules::Crazyhouse)
    }
    fn parse_text(text: &str) -> Result<Crazyhouse, String> {
        Crazyhouse::from_fen(text, HouseRules::Crazyhouse).map_err(|e| e.to_string())
    }
    fn rust_literal(w: &crazyhouse::Weights) -> String {
        format!(
            "Weights {{\n    board: super::chess::{},\n    in_hand: {:?},\n    drop_danger: {:?},\n    drop_check: {:?},\n}}",
            chess_literal(&w.board),
            w.in_hand,
            w.drop_danger,
            w.drop_check
        )
    }
}

impl Tunable for Glinski {
    type Weights = glinski::Weights;
    fn current() -> glinski::Weights {
        glinski::WEIGHTS
    }
    fn visit(w: &mut glinski::Weights, f: &mut dyn FnMut(&str, &mut i32)) {
        w.visit(f)
    }
    fn evaluate_with(&self, w: &glinski::Weights) -> i32 {
        glinski::evaluate_with(self, w)
    }
    fn start() -> Glinski {
        Glinski::new()
    }
    fn parse_text(text: &str) -> Result<Glinski, String> {
        Glinski::from_text(text).map_err(|e| e.to_string())
    }
    fn rust_literal(w: &glinski::Weights) -> String {
        format!(
            "Weights {{\n    material: {:?},\n    mobility: {:?},\n    centre: {:?},\n    \
             king_centre_endgame: {},\n    pawn_advance: {},\n    passed: {:?},\n    \
             king_guard: {},\n    attack_units: {:?},\n    tempo: {},\n}}",
            w.material,
            w.mobility,
            w.centre,
            w.king_centre_endgame,
            w.pawn_advance,
            w.passed,
            w.king_guard,
            w.attack_units,
            w.tempo,
        )
    }
}

/// A labelled position.
#[derive(Clone, Debug)]
pub struct Sample<P = Chess> {
    /// A position from a game.
    pub position: P,
    /// White's points in that game: 1, 0.5 or 0.
    pub result: f64,
    /// The score of the search that chose the game's move there, in centipawns from white's
    /// side, when the data records it (the network trainer's second label; Texel's fit reads
    /// the result alone).
    pub score: Option<i32>,
}

/// Why a sample line could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleError(pub String);

impl std::fmt::Display for SampleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SampleError {}

impl<P: Tunable> Sample<P> {
    /// The line format: the position string (FEN for chess), ` | `, and white's points (`1`,
    /// `0.5` or `0`; `0.75` or `0.25` for a Glinski stalemate), then, when recorded, ` | ` and
    /// the search's score in centipawns from white's side.
    pub fn to_line(&self) -> String {
        match self.score {
            Some(score) => format!("{} | {} | {score}", self.position.to_text(), self.result),
            None => format!("{} | {}", self.position.to_text(), self.result),
        }
    }

    /// Reads a line written by [`Sample::to_line`].
    pub fn parse(line: &str) -> Result<Sample<P>, SampleError> {
        let mut fields = line.split('|');
        let (Some(text), Some(result)) = (fields.next(), fields.next()) else {
            return Err(SampleError(
                "expected 'POSITION | RESULT' or 'POSITION | RESULT | SCORE'".into(),
            ));
        };
        let score = match fields.next() {
            None => None,
            Some(score) => Some(
                score
                    .trim()
                    .parse::<i32>()
                    .ok()
                    .filter(|s| s.abs() <= MAX_SAMPLE_SCORE)
                    .ok_or_else(|| {
                        SampleError(format!(
                            "score '{}': expected centipawns within ±{MAX_SAMPLE_SCORE}",
                            score.trim().escape_debug()
                        ))
                    })?,
            ),
        };
        if fields.next().is_some() {
            return Err(SampleError(
                "expected 'POSITION | RESULT' or 'POSITION | RESULT | SCORE'".into(),
            ));
        }
        let result = match result.trim() {
            "1" | "1.0" | "1-0" => 1.0,
            "0.75" => 0.75,
            "0.5" | "1/2-1/2" => 0.5,
            "0.25" => 0.25,
            "0" | "0.0" | "0-1" => 0.0,
            other => {
                return Err(SampleError(format!(
                    "result '{}': expected 1, 0.75, 0.5, 0.25 or 0 (white's points)",
                    other.escape_debug()
                )));
            }
        };
        let position =
            P::parse_text(text.trim()).map_err(|e| SampleError(format!("position: {e}")))?;
        Ok(Sample {
            position,
            result,
            score,
        })
    }
}

/// The largest score a sample line may carry, in centipawns (beyond any evaluation; mate scores
/// are not recorded).
pub const MAX_SAMPLE_SCORE: i32 = 30_000;

/// The tuned parameters of `w`, by name, in [`Tunable::visit`]'s order.
pub fn parameters<P: Tunable>(w: &P::Weights) -> Vec<(String, i32)> {
    let mut w = w.clone();
    let mut out = Vec::new();
    P::visit(&mut w, &mut |name, v| out.push((name.to_owned(), *v)));
    out
}

/// `base` with its parameters replaced by `values` (in [`parameters`]' order).
///
/// # Panics
/// If `values` does not have one value per parameter.
pub fn with_parameters<P: Tunable>(base: &P::Weights, values: &[i32]) -> P::Weights {
    let mut w = base.clone();
    let mut i = 0;
    P::visit(&mut w, &mut |_, v| {
        *v = values[i];
        i += 1;
    });
    assert_eq!(i, values.len(), "one value per parameter");
    w
}

/// The expected score of white for a white-relative evaluation, under the scaling `k`.
pub fn expected(eval: i32, k: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-k * f64::from(eval) / 400.0))
}

/// White's evaluation of `pos` under `w`.
fn white_eval<P: Tunable>(pos: &P, w: &P::Weights) -> i32 {
    let s = pos.evaluate_with(w);
    if pos.turn() == Color::White { s } else { -s }
}

/// The number of blocks the samples are summed in (fixed, so that sums are reproducible).
const BLOCKS: usize = 64;

/// The mean squared error of `w` over `samples` under the scaling `k`, on `threads` threads.
pub fn error<P: Tunable>(samples: &[Sample<P>], w: &P::Weights, k: f64, threads: usize) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let block = samples.len().div_ceil(BLOCKS);
    let chunks: Vec<&[Sample<P>]> = samples.chunks(block).collect();
    let mut sums = vec![0.0f64; chunks.len()];
    let threads = threads.clamp(1, chunks.len());
    std::thread::scope(|scope| {
        let mut slots: Vec<&mut [f64]> = Vec::new();
        let mut rest: &mut [f64] = &mut sums;
        let per = chunks.len().div_ceil(threads);
        while !rest.is_empty() {
            let (a, b) = rest.split_at_mut(per.min(rest.len()));
            slots.push(a);
            rest = b;
        }
        for (t, slot) in slots.into_iter().enumerate() {
            let chunks = &chunks[t * per..(t * per + slot.len())];
            scope.spawn(move || {
                for (sum, chunk) in slot.iter_mut().zip(chunks) {
                    *sum = chunk
                        .iter()
                        .map(|s| {
                            let d = s.result - expected(white_eval(&s.position, w), k);
                            d * d
                        })
                        .sum();
                }
            });
        }
    });
    sums.iter().sum::<f64>() / samples.len() as f64
}

/// The scaling `K` that minimises the error of `w` (golden-section search over 0.05 to 5).
pub fn fit_k<P: Tunable>(samples: &[Sample<P>], w: &P::Weights, threads: usize) -> f64 {
    let f = |k: f64| error(samples, w, k, threads);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = (0.05f64, 5.0f64);
    let mut c = b - g * (b - a);
    let mut d = a + g * (b - a);
    let (mut fc, mut fd) = (f(c), f(d));
    while b - a > 1e-4 {
        if fc < fd {
            b = d;
            d = c;
            fd = fc;
            c = b - g * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + g * (b - a);
            fd = f(d);
        }
    }
    (a + b) / 2.0
}

/// How to tune.
#[derive(Clone, Debug)]
pub struct TuneConfig {
    /// The most passes over all parameters.
    pub max_passes: usize,
    /// The first step (halved when a pass keeps nothing, down to 1).
    pub start_step: i32,
    /// Threads for the error sums.
    pub threads: usize,
}

/// What tuning found.
#[derive(Clone, Debug)]
pub struct TuneReport<W> {
    /// The scaling fitted to the starting weights.
    pub k: f64,
    /// The error of the starting weights.
    pub error_before: f64,
    /// The error of the tuned weights.
    pub error_after: f64,
    /// Passes made.
    pub passes: usize,
    /// The tuned weights.
    pub weights: W,
}

/// Tunes `base` on `samples` by Texel's local search; `progress` gets a line per pass.
pub fn tune<P: Tunable>(
    samples: &[Sample<P>],
    base: &P::Weights,
    cfg: &TuneConfig,
    progress: &mut dyn FnMut(&str),
) -> TuneReport<P::Weights> {
    let threads = cfg.threads.max(1);
    let k = fit_k(samples, base, threads);
    let mut values: Vec<i32> = parameters::<P>(base).into_iter().map(|(_, v)| v).collect();
    let error_before = error(samples, base, k, threads);
    progress(&format!(
        "K = {k:.4}; error {error_before:.6} over {} positions, {} parameters",
        samples.len(),
        values.len()
    ));
    let mut best = error_before;
    let mut step = cfg.start_step.max(1);
    let mut passes = 0;
    while passes < cfg.max_passes {
        passes += 1;
        let mut kept = 0;
        for i in 0..values.len() {
            for delta in [step, -step] {
                // Step while it helps; the step that does not is taken back.
                let mut moved = false;
                loop {
                    values[i] += delta;
                    let e = error(samples, &with_parameters::<P>(base, &values), k, threads);
                    if e >= best {
                        values[i] -= delta;
                        break;
                    }
                    best = e;
                    moved = true;
                }
                if moved {
                    kept += 1;
                    break;
                }
            }
        }
        progress(&format!(
            "pass {passes}: step {step}, {kept} of {} changes kept, error {best:.6}",
            values.len()
        ));
        if kept == 0 {
            if step == 1 {
                break;
            }
            step = (step / 2).max(1);
        }
    }
    TuneReport {
        k,
        error_before,
        error_after: best,
        passes,
        weights: with_parameters::<P>(base, &values),
    }
}

/// `w` as the Rust expression of [`crate::eval::chess::WEIGHTS`], to paste into the source.
fn chess_literal(w: &chess::Weights) -> String {
    fn pairs(p: &[crate::eval::chess::Pair]) -> String {
        let inner: Vec<String> = p
            .iter()
            .map(|p| format!("        Pair({}, {}),\n", p.0, p.1))
            .collect();
        format!("[\n{}    ]", inner.concat())
    }
    let p = |p: &crate::eval::chess::Pair| format!("Pair({}, {})", p.0, p.1);
    format!(
        "Weights {{\n    material: {},\n    centre: {},\n    pawn_advance: {},\n    mobility: {},\n    \
         bishop_pair: {},\n    doubled: {},\n    isolated: {},\n    passed: {},\n    rook_open: {},\n    \
         rook_half_open: {},\n    shield: {},\n    attack_units: {:?},\n    tempo: {},\n}}",
        pairs(&w.material),
        pairs(&w.centre),
        p(&w.pawn_advance),
        pairs(&w.mobility),
        p(&w.bishop_pair),
        p(&w.doubled),
        p(&w.isolated),
        pairs(&w.passed),
        p(&w.rook_open),
        p(&w.rook_half_open),
        w.shield,
        w.attack_units,
        w.tempo,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Positions from seeded random games (quiet or not: the tests only need variety).
    fn positions<P: Tunable>(n: usize, seed: u64) -> Vec<P> {
        let mut x = seed | 1;
        let mut next = |m: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % m as u64) as usize
        };
        let mut out = Vec::new();
        while out.len() < n {
            let mut pos = P::start();
            for _ in 0..(20 + next(80)) {
                let moves = pos.legal_moves();
                if moves.is_empty() {
                    break;
                }
                pos.play_unchecked(moves[next(moves.len())]);
            }
            if !pos.legal_moves().is_empty() {
                out.push(pos);
            }
        }
        out
    }

    fn lines_round_trip<P: Tunable>(bad_position: &str) {
        let s = Sample {
            position: P::start(),
            result: 0.5,
            score: None,
        };
        let back = Sample::<P>::parse(&s.to_line()).unwrap();
        assert_eq!(back.position.to_text(), P::start().to_text());
        assert_eq!((back.result, back.score), (0.5, None));
        let scored = Sample {
            score: Some(-137),
            ..s
        };
        let back = Sample::<P>::parse(&scored.to_line()).unwrap();
        assert_eq!((back.result, back.score), (0.5, Some(-137)));
        for bad in ["x", "", "99999", "1.5"] {
            let e =
                Sample::<P>::parse(&format!("{} | 1 | {bad}", P::start().to_text())).unwrap_err();
            assert!(e.0.starts_with("score '"), "{e}");
        }
        let e = Sample::<P>::parse(&format!("{} | 1 | 3 | 4", P::start().to_text())).unwrap_err();
        assert!(e.0.contains("POSITION | RESULT | SCORE"), "{e}");
        assert!(
            Sample::<P>::parse("no separator")
                .unwrap_err()
                .0
                .contains("POSITION | RESULT")
        );
        let e = Sample::<P>::parse(&format!("{} | 2", P::start().to_text())).unwrap_err();
        assert!(e.0.contains("result '2'"), "{e}");
        for (text, points) in [
            ("1", 1.0),
            ("0.75", 0.75),
            ("0.5", 0.5),
            ("0.25", 0.25),
            ("0", 0.0),
        ] {
            let line = format!("{} | {text}", P::start().to_text());
            assert_eq!(Sample::<P>::parse(&line).unwrap().result, points);
        }
        let e = Sample::<P>::parse(&format!("{bad_position} | 1")).unwrap_err();
        assert!(e.0.starts_with("position:"), "{e}");
    }

    #[test]
    fn lines_round_trip_and_bad_lines_are_named() {
        lines_round_trip::<Chess>("8/8/8 w - - 0 1");
        lines_round_trip::<Glinski>("1/3/5 w");
        lines_round_trip::<Crazyhouse>("8/8/8[Q] w - - 0 1");
    }

    /// The parameters round-trip, and each changes the evaluation of some position: none is
    /// dead weight.
    fn every_parameter_is_read<P: Tunable>() {
        let current = P::current();
        let values: Vec<i32> = parameters::<P>(&current)
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        let again = with_parameters::<P>(&current, &values);
        assert_eq!(P::rust_literal(&again), P::rust_literal(&current));
        let pos = positions::<P>(300, 7);
        for (i, (name, _)) in parameters::<P>(&current).iter().enumerate() {
            let mut v = values.clone();
            v[i] += 40;
            let w = with_parameters::<P>(&current, &v);
            assert!(
                pos.iter()
                    .any(|p| p.evaluate_with(&w) != p.evaluate_with(&current)),
                "{name} changes nothing"
            );
        }
    }

    #[test]
    fn parameters_round_trip_and_every_one_is_read() {
        every_parameter_is_read::<Chess>();
        every_parameter_is_read::<Glinski>();
        every_parameter_is_read::<Crazyhouse>();
        for p in positions::<Crazyhouse>(50, 2) {
            assert_eq!(p.evaluate_with(&Crazyhouse::current()), p.evaluate());
        }
        // The weights in use are the ones the engine evaluates with.
        for p in positions::<Glinski>(50, 2) {
            assert_eq!(p.evaluate_with(&Glinski::current()), p.evaluate());
        }
        for p in positions::<Chess>(50, 2) {
            assert_eq!(p.evaluate_with(&Chess::current()), p.evaluate());
        }
    }

    fn error_ignores_threads<P: Tunable>() {
        let samples: Vec<Sample<P>> = positions::<P>(200, 3)
            .into_iter()
            .enumerate()
            .map(|(i, position)| Sample {
                position,
                result: [0.0, 0.5, 1.0][i % 3],
                score: None,
            })
            .collect();
        let w = P::current();
        let one = error(&samples, &w, 1.0, 1);
        assert_eq!(one, error(&samples, &w, 1.0, 2));
        assert_eq!(one, error(&samples, &w, 1.0, 5));
    }

    #[test]
    fn the_error_does_not_depend_on_threads() {
        error_ignores_threads::<Chess>();
        error_ignores_threads::<Glinski>();
        error_ignores_threads::<Crazyhouse>();
    }

    /// Labels drawn from a known model: tuning from perturbed weights must lower the error and
    /// move the perturbed weights back towards the model's.
    #[test]
    fn tuning_recovers_perturbed_weights() {
        let truth = Chess::current();
        let k = 1.2;
        let mut x = 99u64;
        let samples: Vec<Sample> = positions::<Chess>(3000, 11)
            .into_iter()
            .map(|position| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let u = (x >> 11) as f64 / (1u64 << 53) as f64;
                let p = expected(white_eval(&position, &truth), k);
                // A game result drawn with the model's probabilities.
                let result = if u < p * 0.8 {
                    1.0
                } else if u < p * 0.8 + 0.2 {
                    0.5
                } else {
                    0.0
                };
                Sample {
                    position,
                    result,
                    score: None,
                }
            })
            .collect();
        let names: Vec<String> = parameters::<Chess>(&truth)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let mut values: Vec<i32> = parameters::<Chess>(&truth)
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        let knight = names
            .iter()
            .position(|n| n == "material.knight.mg")
            .unwrap();
        let rook = names.iter().position(|n| n == "material.rook.mg").unwrap();
        values[knight] -= 150;
        values[rook] += 150;
        let start = with_parameters::<Chess>(&truth, &values);
        let report = tune(
            &samples,
            &start,
            &TuneConfig {
                max_passes: 12,
                start_step: 32,
                threads: 2,
            },
            &mut |_| {},
        );
        assert!(report.error_after < report.error_before);
        let tuned: Vec<i32> = parameters::<Chess>(&report.weights)
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        let original = parameters::<Chess>(&truth);
        assert!(
            (tuned[knight] - original[knight].1).abs() < 150 / 2,
            "knight {} (true {}, started {})",
            tuned[knight],
            original[knight].1,
            values[knight]
        );
        assert!(
            (tuned[rook] - original[rook].1).abs() < 150 / 2,
            "rook {} (true {}, started {})",
            tuned[rook],
            original[rook].1,
            values[rook]
        );
    }

    #[test]
    fn k_is_found_where_the_labels_were_drawn() {
        // Fractional labels equal to the model's expectation: the error is least at its K.
        let w = Glinski::current();
        let samples: Vec<Sample<Glinski>> = positions::<Glinski>(400, 5)
            .into_iter()
            .map(|position| {
                let result = expected(white_eval(&position, &w), 0.8);
                Sample {
                    position,
                    result,
                    score: None,
                }
            })
            .collect();
        let k = fit_k(&samples, &w, 2);
        assert!((k - 0.8).abs() < 0.01, "{k}");
    }
}
