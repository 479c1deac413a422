//! The trainer: the network of [`super`] in `f32`, fitted by Adam to positions labelled with a
//! search's score and the game's result.
//!
//! Each position's target is, from the side to move's view,
//! `λ·E(score) + (1 − λ)·result`, with `E(cp) = 1 / (1 + 10^(−K·cp/400))` (Texel's expected
//! score, `K` as fitted for the hand-written evaluation); the loss is the mean squared error
//! between that and `E` of the network's output. Batches are split into a fixed number of
//! blocks whose gradients are summed in a fixed order, so a training run depends only on its
//! settings and data, never on the number of threads (tested).

use super::{INPUTS, Network, Pieces, QA, QB, SCALE, feature};

/// The most pieces a training position holds (an 8×8 board's 32 and room to spare).
pub const MAX_PIECES: usize = 32;

/// A first layer weight's bound, so that a position's sum of [`MAX_PIECES`] columns and the
/// bias stays inside `i16` once quantized: `(MAX_PIECES + 1) · WEIGHT_BOUND · QA < 32,768`.
pub const WEIGHT_BOUND: f32 = 3.8;

/// The gradient of each batch is the sum of this many blocks' (see the module comment).
const BLOCKS: usize = 16;

/// A labelled position, packed: its pieces (square and colour·6 + role), the side to move and
/// the target score from the side to move's view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrainingPosition {
    squares: [u8; MAX_PIECES],
    pieces: [u8; MAX_PIECES],
    len: u8,
    turn: u8,
    /// The target, 0 to 1, from the side to move's view.
    pub target: f32,
}

impl TrainingPosition {
    /// Packs `pieces` with `turn` to move (0 white, 1 black) and its `target` from the side to
    /// move's view; `None` when the board holds more than [`MAX_PIECES`] pieces or the target
    /// is not within 0–1.
    pub fn new(pieces: &Pieces, turn: usize, target: f32) -> Option<TrainingPosition> {
        if !(0.0..=1.0).contains(&target) || turn > 1 {
            return None;
        }
        let mut p = TrainingPosition {
            squares: [0; MAX_PIECES],
            pieces: [0; MAX_PIECES],
            len: 0,
            turn: turn as u8,
            target,
        };
        for (c, roles) in pieces.iter().enumerate() {
            for (r, &bb) in roles.iter().enumerate() {
                let mut bb = bb;
                while bb != 0 {
                    let i = usize::from(p.len);
                    if i == MAX_PIECES {
                        return None;
                    }
                    p.squares[i] = bb.trailing_zeros() as u8;
                    p.pieces[i] = (c * 6 + r) as u8;
                    p.len += 1;
                    bb &= bb - 1;
                }
            }
        }
        Some(p)
    }

    /// The target from a search's `score` and the game's `result` (both from white's view,
    /// centipawns and points), for the side to move: `λ·E(score) + (1 − λ)·result`.
    pub fn target(turn: usize, score: i32, result: f64, lambda: f64, k: f64) -> f32 {
        let (score, result) = if turn == 0 {
            (score, result)
        } else {
            (-score, 1.0 - result)
        };
        (lambda * expected(f64::from(score), k) + (1.0 - lambda) * result) as f32
    }

    /// The side to move: 0 white, 1 black.
    pub fn turn(&self) -> usize {
        usize::from(self.turn)
    }

    /// The input features from `view`'s side.
    fn features(&self, view: usize) -> impl Iterator<Item = usize> + '_ {
        (0..usize::from(self.len)).map(move |i| {
            let piece = usize::from(self.pieces[i]);
            feature(view, piece / 6, piece % 6, usize::from(self.squares[i]))
        })
    }
}

/// Texel's expected score of `cp` centipawns at scaling `k`.
pub fn expected(cp: f64, k: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-k * cp / 400.0))
}

/// The network in `f32`, as trained.
#[derive(Clone, Debug, PartialEq)]
pub struct FloatNetwork {
    hidden: usize,
    input_weights: Vec<f32>,
    input_bias: Vec<f32>,
    output_weights: Vec<f32>,
    output_bias: f32,
}

/// Settings of a training run.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainConfig {
    /// The hidden layer's width.
    pub hidden: usize,
    /// Passes over the training positions.
    pub epochs: usize,
    /// Positions per step.
    pub batch: usize,
    /// Adam's step size for the first epochs; a tenth of it from [`TrainConfig::drop_at`] on.
    pub learning_rate: f32,
    /// The epoch (counted from 0) from which the step size is a tenth.
    pub drop_at: usize,
    /// Texel's `K`: the scaling of centipawns into an expected score.
    pub k: f64,
    /// Seed of the initial weights and of the order of the positions.
    pub seed: u64,
    /// Threads computing each batch's gradient.
    pub threads: usize,
}

/// What a finished epoch reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EpochReport {
    /// The epoch, from 1.
    pub epoch: usize,
    /// The mean loss over the training positions during the epoch.
    pub train_loss: f64,
    /// The mean loss over the validation positions after it.
    pub validation_loss: f64,
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn uniform(&mut self, bound: f32) -> f32 {
        ((self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * bound
    }
}

/// Per-parameter gradients (and, reused, Adam's moments).
#[derive(Clone)]
struct Grads {
    input_weights: Vec<f32>,
    input_bias: Vec<f32>,
    output_weights: Vec<f32>,
    output_bias: f32,
}

impl Grads {
    fn zeros(hidden: usize) -> Grads {
        Grads {
            input_weights: vec![0.0; INPUTS * hidden],
            input_bias: vec![0.0; hidden],
            output_weights: vec![0.0; 2 * hidden],
            output_bias: 0.0,
        }
    }

    fn clear(&mut self) {
        self.input_weights.fill(0.0);
        self.input_bias.fill(0.0);
        self.output_weights.fill(0.0);
        self.output_bias = 0.0;
    }

    fn add(&mut self, other: &Grads) {
        for (a, b) in self.input_weights.iter_mut().zip(&other.input_weights) {
            *a += b;
        }
        for (a, b) in self.input_bias.iter_mut().zip(&other.input_bias) {
            *a += b;
        }
        for (a, b) in self.output_weights.iter_mut().zip(&other.output_weights) {
            *a += b;
        }
        self.output_bias += other.output_bias;
    }
}

impl FloatNetwork {
    /// Small random weights from `seed`.
    pub fn new(hidden: usize, seed: u64) -> FloatNetwork {
        let mut rng = Rng(seed);
        let input = 1.0 / (INPUTS as f32).sqrt();
        let output = 1.0 / ((2 * hidden) as f32).sqrt();
        FloatNetwork {
            hidden,
            input_weights: (0..INPUTS * hidden).map(|_| rng.uniform(input)).collect(),
            input_bias: (0..hidden).map(|_| rng.uniform(input)).collect(),
            output_weights: (0..2 * hidden).map(|_| rng.uniform(output)).collect(),
            output_bias: 0.0,
        }
    }

    /// The weights of a quantized network, for training to continue from them (`--init`):
    /// [`FloatNetwork::quantize`] undone, so that quantizing the result gives `net` again.
    pub fn from_network(net: &Network) -> FloatNetwork {
        let f = |w: i16, scale: i32| f32::from(w) / scale as f32;
        FloatNetwork {
            hidden: net.hidden,
            input_weights: net.input_weights.iter().map(|&w| f(w, QA)).collect(),
            input_bias: net.input_bias.iter().map(|&w| f(w, QA)).collect(),
            output_weights: net.output_weights.iter().map(|&w| f(w, QB)).collect(),
            output_bias: net.output_bias as f32 / (QA * QB) as f32,
        }
    }

    /// The width of the hidden layer.
    pub fn hidden(&self) -> usize {
        self.hidden
    }

    /// The hidden layers from both views (before clipping).
    fn hidden_layers(&self, p: &TrainingPosition) -> [Vec<f32>; 2] {
        let mut views = [self.input_bias.clone(), self.input_bias.clone()];
        for (view, values) in views.iter_mut().enumerate() {
            for f in p.features(view) {
                let column = &self.input_weights[f * self.hidden..(f + 1) * self.hidden];
                for (v, w) in values.iter_mut().zip(column) {
                    *v += w;
                }
            }
        }
        views
    }

    fn output(&self, views: &[Vec<f32>; 2], turn: usize) -> f32 {
        let (ours, theirs) = self.output_weights.split_at(self.hidden);
        let half = |values: &[f32], weights: &[f32]| -> f32 {
            values
                .iter()
                .zip(weights)
                .map(|(v, w)| v.clamp(0.0, 1.0) * w)
                .sum()
        };
        half(&views[turn], ours) + half(&views[1 - turn], theirs) + self.output_bias
    }

    /// The evaluation in centipawns from the side to move's view, in `f32`.
    pub fn evaluate(&self, p: &TrainingPosition) -> f32 {
        self.output(&self.hidden_layers(p), usize::from(p.turn)) * SCALE as f32
    }

    /// The loss of one position, and (when `grads` is given) its gradient added to `grads`.
    fn step(&self, p: &TrainingPosition, k: f64, grads: Option<&mut Grads>) -> f64 {
        let views = self.hidden_layers(p);
        let turn = usize::from(p.turn);
        let out = self.output(&views, turn);
        // E(cp) = σ(cp · k·ln10/400), cp = out · SCALE.
        let slope = (k * std::f64::consts::LN_10 / 400.0) as f32 * SCALE as f32;
        let predicted = 1.0 / (1.0 + (-out * slope).exp());
        let error = predicted - p.target;
        let Some(g) = grads else {
            return f64::from(error * error);
        };
        let d_out = 2.0 * error * predicted * (1.0 - predicted) * slope;
        g.output_bias += d_out;
        let h = self.hidden;
        for (half, view) in [turn, 1 - turn].into_iter().enumerate() {
            let weights = &self.output_weights[half * h..(half + 1) * h];
            let d_weights = &mut g.output_weights[half * h..(half + 1) * h];
            let mut d_hidden = vec![0.0f32; h];
            for i in 0..h {
                let v = views[view][i];
                d_weights[i] += d_out * v.clamp(0.0, 1.0);
                if v > 0.0 && v < 1.0 {
                    d_hidden[i] = d_out * weights[i];
                }
            }
            for (b, d) in g.input_bias.iter_mut().zip(&d_hidden) {
                *b += d;
            }
            for f in p.features(view) {
                let column = &mut g.input_weights[f * h..(f + 1) * h];
                for (c, d) in column.iter_mut().zip(&d_hidden) {
                    *c += d;
                }
            }
        }
        f64::from(error * error)
    }

    /// The mean loss over `positions`.
    pub fn loss(&self, positions: &[TrainingPosition], k: f64) -> f64 {
        if positions.is_empty() {
            return 0.0;
        }
        positions.iter().map(|p| self.step(p, k, None)).sum::<f64>() / positions.len() as f64
    }

    /// The quantized network for the search, named for `variant`.
    pub fn quantize(&self, variant: &str) -> Option<Network> {
        let q = |w: f32, scale: i32| -> i16 {
            (w * scale as f32)
                .round()
                .clamp(f32::from(i16::MIN), f32::from(i16::MAX)) as i16
        };
        Network::from_parts(
            variant,
            self.hidden,
            self.input_weights.iter().map(|&w| q(w, QA)).collect(),
            self.input_bias.iter().map(|&w| q(w, QA)).collect(),
            self.output_weights.iter().map(|&w| q(w, QB)).collect(),
            (self.output_bias * (QA * QB) as f32).round() as i32,
        )
    }
}

/// Adam's state.
struct Adam {
    first: Grads,
    second: Grads,
    steps: i32,
}

impl Adam {
    fn apply(&mut self, net: &mut FloatNetwork, g: &Grads, lr: f32, scale: f32) {
        const B1: f32 = 0.9;
        const B2: f32 = 0.999;
        const EPS: f32 = 1e-8;
        self.steps += 1;
        let c1 = 1.0 - B1.powi(self.steps);
        let c2 = 1.0 - B2.powi(self.steps);
        let update = |w: &mut f32, g: f32, m: &mut f32, v: &mut f32, bound: f32| {
            let g = g * scale;
            *m = B1 * *m + (1.0 - B1) * g;
            *v = B2 * *v + (1.0 - B2) * g * g;
            *w -= lr * (*m / c1) / ((*v / c2).sqrt() + EPS);
            *w = w.clamp(-bound, bound);
        };
        let output_bound = f32::from(super::MAX_OUTPUT_WEIGHT) / QB as f32;
        let group = |w: &mut [f32], g: &[f32], m: &mut [f32], v: &mut [f32], bound: f32| {
            for (((w, &g), m), v) in w.iter_mut().zip(g).zip(m).zip(v) {
                update(w, g, m, v, bound);
            }
        };
        let (first, second) = (&mut self.first, &mut self.second);
        group(
            &mut net.input_weights,
            &g.input_weights,
            &mut first.input_weights,
            &mut second.input_weights,
            WEIGHT_BOUND,
        );
        group(
            &mut net.input_bias,
            &g.input_bias,
            &mut first.input_bias,
            &mut second.input_bias,
            WEIGHT_BOUND,
        );
        group(
            &mut net.output_weights,
            &g.output_weights,
            &mut first.output_weights,
            &mut second.output_weights,
            output_bound,
        );
        update(
            &mut net.output_bias,
            g.output_bias,
            &mut self.first.output_bias,
            &mut self.second.output_bias,
            // The quantized output bias is an i32 of QA·QB units: no tighter bound is needed.
            1e4,
        );
    }
}

/// Trains a network of `cfg.hidden` units from random weights on `train` (shuffled each epoch
/// from the seed), reporting the loss on `validation` after each epoch to `report`.
pub fn train(
    cfg: &TrainConfig,
    train: &mut [TrainingPosition],
    validation: &[TrainingPosition],
    report: &mut dyn FnMut(&EpochReport),
) -> FloatNetwork {
    let start = FloatNetwork::new(cfg.hidden.clamp(1, super::MAX_HIDDEN), cfg.seed);
    train_from(start, cfg, train, validation, report)
}

/// Trains `net` further, as [`train`] does from random weights: a network trained on one set of
/// positions continues on another (its width is kept; `cfg.hidden` is not read). Adam's moments
/// start from zero.
pub fn train_from(
    mut net: FloatNetwork,
    cfg: &TrainConfig,
    train: &mut [TrainingPosition],
    validation: &[TrainingPosition],
    report: &mut dyn FnMut(&EpochReport),
) -> FloatNetwork {
    let hidden = net.hidden;
    let mut adam = Adam {
        first: Grads::zeros(hidden),
        second: Grads::zeros(hidden),
        steps: 0,
    };
    let mut rng = Rng(cfg.seed ^ 0x5eed);
    let mut blocks: Vec<Grads> = (0..BLOCKS).map(|_| Grads::zeros(hidden)).collect();
    let mut total = Grads::zeros(hidden);
    let threads = cfg.threads.clamp(1, BLOCKS);
    let batch = cfg.batch.max(1);
    for epoch in 0..cfg.epochs {
        for i in (1..train.len()).rev() {
            let j = (rng.next() % (i as u64 + 1)) as usize;
            train.swap(i, j);
        }
        let lr = if epoch >= cfg.drop_at {
            cfg.learning_rate / 10.0
        } else {
            cfg.learning_rate
        };
        let mut loss_sum = 0.0;
        for chunk in train.chunks(batch) {
            let per_block = chunk.len().div_ceil(BLOCKS);
            let mut losses = [0.0f64; BLOCKS];
            {
                // Each thread takes every `threads`-th block.
                let net = &net;
                let mut work: Vec<Vec<(usize, &mut Grads, &mut f64)>> =
                    (0..threads).map(|_| Vec::new()).collect();
                for (b, (g, l)) in blocks.iter_mut().zip(losses.iter_mut()).enumerate() {
                    work[b % threads].push((b, g, l));
                }
                std::thread::scope(|scope| {
                    for jobs in work {
                        scope.spawn(move || {
                            for (b, g, l) in jobs {
                                g.clear();
                                let start = (b * per_block).min(chunk.len());
                                let end = ((b + 1) * per_block).min(chunk.len());
                                *l = chunk[start..end]
                                    .iter()
                                    .map(|p| net.step(p, cfg.k, Some(&mut *g)))
                                    .sum();
                            }
                        });
                    }
                });
            }
            total.clear();
            for g in &blocks {
                total.add(g);
            }
            loss_sum += losses.iter().sum::<f64>();
            adam.apply(&mut net, &total, lr, 1.0 / chunk.len() as f32);
        }
        report(&EpochReport {
            epoch: epoch + 1,
            train_loss: loss_sum / train.len().max(1) as f64,
            validation_loss: net.loss(validation, cfg.k),
        });
    }
    net
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Positions of a king each and a few random pieces, labelled by a known material
    /// evaluation: a network trained on them must learn the material.
    fn material_positions(n: usize, seed: u64) -> Vec<TrainingPosition> {
        let values = [100, 300, 320, 500, 900, 0];
        let mut rng = Rng(seed);
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let mut pieces: Pieces = [[0; 6]; 2];
            let mut occupied = 0u64;
            let mut place = |c: usize, r: usize, rng: &mut Rng| loop {
                let sq = (rng.next() % 64) as usize;
                if r == 0 && !(8..56).contains(&sq) {
                    continue;
                }
                if occupied & (1 << sq) == 0 {
                    occupied |= 1 << sq;
                    pieces[c][r] |= 1 << sq;
                    return;
                }
            };
            place(0, 5, &mut rng);
            place(1, 5, &mut rng);
            let mut material = 0;
            for _ in 0..(rng.next() % 8) {
                let (c, r) = ((rng.next() % 2) as usize, (rng.next() % 5) as usize);
                place(c, r, &mut rng);
                material += if c == 0 { values[r] } else { -values[r] };
            }
            let turn = (rng.next() % 2) as usize;
            let target = TrainingPosition::target(turn, material, 0.5, 1.0, 1.0);
            out.push(TrainingPosition::new(&pieces, turn, target).unwrap());
        }
        out
    }

    fn cfg(threads: usize) -> TrainConfig {
        TrainConfig {
            hidden: 16,
            epochs: 6,
            batch: 256,
            learning_rate: 0.01,
            drop_at: 5,
            k: 1.0,
            seed: 3,
            threads,
        }
    }

    #[test]
    fn training_learns_material_and_ignores_threads() {
        let mut data = material_positions(6000, 11);
        let validation = material_positions(500, 12);
        let before = FloatNetwork::new(16, 3).loss(&validation, 1.0);
        let mut reports = Vec::new();
        let one = train(&cfg(1), &mut data.clone(), &validation, &mut |r| {
            reports.push(*r)
        });
        let three = train(&cfg(3), &mut data, &validation, &mut |_| {});
        assert_eq!(one, three, "the thread count changed the result");
        assert_eq!(reports.len(), 6);
        let after = reports.last().unwrap().validation_loss;
        assert!(after < before / 4.0, "loss {before} → {after}");
        // The quantized network agrees with the float one to within rounding (of both layers'
        // weights: a few centipawns on this small network with large output weights).
        let q = one.quantize("chess").unwrap();
        for p in &validation[..200] {
            let mut pieces: Pieces = [[0; 6]; 2];
            for i in 0..usize::from(p.len) {
                let piece = usize::from(p.pieces[i]);
                pieces[piece / 6][piece % 6] |= 1 << p.squares[i];
            }
            let float = one.evaluate(p);
            let quant = q.evaluate_pieces(&pieces, usize::from(p.turn));
            assert!(
                (float - quant as f32).abs() <= 12.0 + float.abs() * 0.02,
                "{float} vs {quant}"
            );
        }
        // A queen up is worth more than a pawn up, from either side to move.
        let mut pieces: Pieces = [[0; 6]; 2];
        pieces[0][5] = 1 << 4;
        pieces[1][5] = 1 << 60;
        let mut queen = pieces;
        queen[0][4] = 1 << 27;
        let mut pawn = pieces;
        pawn[0][0] = 1 << 27;
        assert!(q.evaluate_pieces(&queen, 0) > q.evaluate_pieces(&pawn, 0));
        assert!(q.evaluate_pieces(&queen, 1) < q.evaluate_pieces(&pawn, 1));
    }

    #[test]
    fn training_continues_from_a_quantized_network() {
        let mut data = material_positions(6000, 21);
        let validation = material_positions(500, 22);
        let short = TrainConfig {
            epochs: 2,
            drop_at: 2,
            ..cfg(2)
        };
        let first = train(&short, &mut data.clone(), &validation, &mut |_| {});
        let q = first.quantize("chess").unwrap();
        // Undoing the quantization and doing it again gives the same network.
        let restored = FloatNetwork::from_network(&q);
        assert_eq!(restored.hidden(), 16);
        assert_eq!(restored.quantize("chess").unwrap(), q);
        let (float_loss, restored_loss) = (
            first.loss(&validation, 1.0),
            restored.loss(&validation, 1.0),
        );
        assert!(
            (float_loss - restored_loss).abs() <= float_loss * 0.05,
            "{float_loss} vs {restored_loss}"
        );
        // Continued, its first epoch starts where the first run stopped: below where a run from
        // random weights gets in its first epoch.
        let mut continued = Vec::new();
        train_from(restored, &short, &mut data.clone(), &validation, &mut |r| {
            continued.push(r.validation_loss)
        });
        let mut fresh = Vec::new();
        train(&short, &mut data, &validation, &mut |r| {
            fresh.push(r.validation_loss)
        });
        assert!(continued[0] < fresh[0], "{continued:?} vs {fresh:?}");
        assert!(continued[1] < fresh[1], "{continued:?} vs {fresh:?}");
    }

    #[test]
    fn targets_are_from_the_side_to_move() {
        assert_eq!(TrainingPosition::target(0, 0, 1.0, 0.0, 1.0), 1.0);
        assert_eq!(TrainingPosition::target(1, 0, 1.0, 0.0, 1.0), 0.0);
        let w = TrainingPosition::target(0, 200, 0.5, 1.0, 1.0);
        let b = TrainingPosition::target(1, 200, 0.5, 1.0, 1.0);
        assert!((w + b - 1.0).abs() < 1e-6 && w > 0.7);
        let full: Pieces = [[u64::MAX; 6]; 2];
        assert!(TrainingPosition::new(&full, 0, 0.5).is_none());
        assert!(TrainingPosition::new(&[[0; 6]; 2], 0, 1.5).is_none());
        assert!(TrainingPosition::new(&[[0; 6]; 2], 2, 0.5).is_none());
    }
}
