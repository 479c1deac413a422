//! An efficiently updatable neural network (NNUE) evaluation for the 8×8 variants, and its
//! trainer ([`train`]).
//!
//! The network is the smallest shape the engines of this size start from: 768 inputs (a colour
//! relative to the viewer, a role and a square for every piece), one hidden layer of
//! `hidden` units computed twice (once from each side's view, the board flipped for black),
//! clipped to 0–1, and one output over both halves, the side to move's first:
//!
//! ```text
//! out = Σ clamp(h_us, 0, 1)·w_us + Σ clamp(h_them, 0, 1)·w_them + b      (centipawns / 400)
//! ```
//!
//! The hidden layer of a position, its *accumulator*, is a sum of one weight column per piece,
//! so a move changes it by a few columns: the search keeps one per ply and brings the parent's
//! up to the child by the squares that changed ([`Accumulator::update`]). An accumulator records
//! the placement it describes, so any one can be brought to any position; the result is exactly
//! the full computation's, whichever it starts from (integer arithmetic, tested).
//!
//! Inference is quantized: the first layer by [`QA`] into `i16`, the output weights by [`QB`];
//! the trainer works in `f32` and [`train::FloatNetwork::quantize`] converts. A network is data
//! the project makes (`arbiter nnue train` on positions from `arbiter texel generate`); the file
//! format is [`Network::to_bytes`].
//!
//! One network is built in: [`chess`], the kept network for standard chess and Chess960
//! (`engine/nets/chess.nnue`), with which every engine evaluates those positions unless told
//! otherwise ([`Evaluation`]). The other variants keep their hand-written evaluations.

pub mod train;

use crate::hooks::EnginePosition;
use std::fmt;
use std::sync::{Arc, LazyLock};

/// The built-in network for standard chess: the file `engine/nets/chess.nnue`, compiled in.
static CHESS: LazyLock<Arc<Network>> = LazyLock::new(|| {
    let net = Network::from_bytes(include_bytes!("../../nets/chess.nnue"))
        .expect("the built-in chess network is a valid file (tested)");
    Arc::new(net)
});

/// The network built in for standard chess and Chess960 (read once, then shared): the
/// evaluation [`Evaluation::BuiltIn`] gives those positions.
pub fn chess() -> Arc<Network> {
    Arc::clone(&CHESS)
}

/// Which evaluation an engine uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Evaluation {
    /// Each variant's built-in network where it has one
    /// ([`EnginePosition::built_in_network`]: standard chess), its hand-written evaluation
    /// elsewhere. The default.
    #[default]
    BuiltIn,
    /// Every variant's hand-written evaluation ([`EnginePosition::evaluate`]).
    HandWritten,
    /// This network for the variants it evaluates ([`Network::evaluates`]); the other
    /// variants as under [`BuiltIn`](Evaluation::BuiltIn).
    Network(Arc<Network>),
}

impl Evaluation {
    /// The network an engine for positions of type `P`, of the variant named `variant`,
    /// evaluates with under this choice; `None` for its hand-written evaluation.
    pub fn network_for<P: EnginePosition>(&self, variant: &str) -> Option<Arc<Network>> {
        match self {
            Evaluation::HandWritten => None,
            Evaluation::Network(net) if net.evaluates(variant) => Some(Arc::clone(net)),
            Evaluation::BuiltIn | Evaluation::Network(_) => P::built_in_network(),
        }
    }
}

/// Inputs: two colours (the viewer's, the other) × six roles × 64 squares.
pub const INPUTS: usize = 768;
/// The first layer's quantization: a weight `w` is stored as `round(w·QA)`, and a hidden unit
/// is clipped to `0..=QA`.
pub const QA: i32 = 255;
/// The output weights' quantization (fine: a step of it is 400/256 ≈ 1.6 cp per unit of a
/// fully active hidden unit).
pub const QB: i32 = 256;
/// The output is in units of this many centipawns.
pub const SCALE: i32 = 400;
/// The widest hidden layer a file may declare.
pub const MAX_HIDDEN: usize = 2048;
/// The largest output weight a network may hold (in either sign): with at most
/// `2 · MAX_HIDDEN` units of at most [`QA`], the output sum stays inside `i32`.
pub const MAX_OUTPUT_WEIGHT: i16 = 2000;
/// The largest evaluation a network returns, in centipawns (well inside the non-mate scores).
pub const MAX_EVAL: i32 = 10_000;

const MAGIC: &[u8; 8] = b"ARBNNUE1";

/// The pieces of an 8×8 board by colour (white first) and role (pawn, knight, bishop, rook,
/// queen, king), as bitboards with a1 as bit 0.
pub type Pieces = [[u64; 6]; 2];

/// The input index of a `color` `role` on `square` (0–63) as `view` (0 white, 1 black) sees
/// it: its own pieces first, the board turned over for black.
#[inline]
pub fn feature(view: usize, color: usize, role: usize, square: usize) -> usize {
    let relative = usize::from(color != view);
    let square = if view == 0 { square } else { square ^ 56 };
    (relative * 6 + role) * 64 + square
}

/// Why a network file was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkError(pub String);

impl fmt::Display for NetworkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NetworkError {}

/// A quantized network, ready for the search.
#[derive(Clone, PartialEq, Eq)]
pub struct Network {
    variant: String,
    hidden: usize,
    /// `INPUTS × hidden`, one column of `hidden` per input.
    input_weights: Vec<i16>,
    input_bias: Vec<i16>,
    /// `2 × hidden`: the side to move's half, then the other's.
    output_weights: Vec<i16>,
    output_bias: i32,
}

impl fmt::Debug for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Network")
            .field("variant", &self.variant)
            .field("hidden", &self.hidden)
            .field("checksum", &format_args!("{:016x}", self.checksum()))
            .finish_non_exhaustive()
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Reads a file front to back, every length checked before it is used.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], NetworkError> {
        if self.0.len() < n {
            return Err(NetworkError(format!("truncated in {what}")));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn i16s(&mut self, n: usize, what: &str) -> Result<Vec<i16>, NetworkError> {
        Ok(self
            .take(n * 2, what)?
            .chunks_exact(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]))
            .collect())
    }
}

impl Network {
    /// A network from its parts; `None` unless the lengths fit `hidden` (1 to [`MAX_HIDDEN`]),
    /// no output weight is beyond ±[`MAX_OUTPUT_WEIGHT`] and the variant's name is 1 to 32
    /// ASCII letters and digits.
    pub fn from_parts(
        variant: &str,
        hidden: usize,
        input_weights: Vec<i16>,
        input_bias: Vec<i16>,
        output_weights: Vec<i16>,
        output_bias: i32,
    ) -> Option<Network> {
        let name_ok =
            (1..=32).contains(&variant.len()) && variant.bytes().all(|b| b.is_ascii_alphanumeric());
        (name_ok
            && (1..=MAX_HIDDEN).contains(&hidden)
            && input_weights.len() == INPUTS * hidden
            && input_bias.len() == hidden
            && output_weights.len() == 2 * hidden
            && output_weights
                .iter()
                .all(|w| w.unsigned_abs() <= MAX_OUTPUT_WEIGHT.unsigned_abs()))
        .then(|| Network {
            variant: variant.to_owned(),
            hidden,
            input_weights,
            input_bias,
            output_weights,
            output_bias,
        })
    }

    /// The variant it evaluates (its [`Variant::name`](arbiter_core::Variant::name)).
    pub fn variant(&self) -> &str {
        &self.variant
    }

    /// Whether it evaluates positions of the variant named `variant`: its own, and for a chess
    /// network Chess960 too (the same board and pieces; only the start and castling differ).
    pub fn evaluates(&self, variant: &str) -> bool {
        self.variant == variant || (self.variant == "chess" && variant == "chess960")
    }

    /// The width of the hidden layer.
    pub fn hidden(&self) -> usize {
        self.hidden
    }

    /// A hash of the file's contents, naming the network in logs and measurements.
    pub fn checksum(&self) -> u64 {
        fnv1a(&self.body())
    }

    fn body(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            16 + self.variant.len() + 2 * (self.input_weights.len() + 3 * self.hidden) + 4,
        );
        out.extend_from_slice(MAGIC);
        out.push(self.variant.len() as u8);
        out.extend_from_slice(self.variant.as_bytes());
        out.extend_from_slice(&(self.hidden as u16).to_le_bytes());
        for v in self
            .input_weights
            .iter()
            .chain(&self.input_bias)
            .chain(&self.output_weights)
        {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.output_bias.to_le_bytes());
        out
    }

    /// The file format, little-endian: `ARBNNUE1`, the variant's name (a length byte, then
    /// ASCII), the hidden width (`u16`), the input weights (`i16`, one column of `hidden` per
    /// input in [`feature`] order), the input biases (`i16`), the output weights (`i16`, the side
    /// to move's half first), the output bias (`i32`), and an FNV-1a hash of all of that (`u64`).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.body();
        let sum = fnv1a(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// Reads [`Network::to_bytes`]'s format; the error names what is wrong (a bad header, a
    /// truncated or overlong file, a hash that does not match).
    pub fn from_bytes(bytes: &[u8]) -> Result<Network, NetworkError> {
        let mut r = Reader(bytes);
        if r.take(MAGIC.len(), "the header")? != MAGIC {
            return Err(NetworkError(
                "not an Arbiter network (expected the header ARBNNUE1)".into(),
            ));
        }
        let len = usize::from(r.take(1, "the variant")?[0]);
        let variant = std::str::from_utf8(r.take(len, "the variant")?)
            .ok()
            .filter(|v| (1..=32).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_alphanumeric()))
            .ok_or_else(|| NetworkError("the variant name is not 1 to 32 letters".into()))?
            .to_owned();
        let hidden = r.take(2, "the width")?;
        let hidden = usize::from(u16::from_le_bytes([hidden[0], hidden[1]]));
        if !(1..=MAX_HIDDEN).contains(&hidden) {
            return Err(NetworkError(format!(
                "hidden width {hidden}: expected 1 to {MAX_HIDDEN}"
            )));
        }
        let input_weights = r.i16s(INPUTS * hidden, "the input weights")?;
        let input_bias = r.i16s(hidden, "the input biases")?;
        let output_weights = r.i16s(2 * hidden, "the output weights")?;
        if let Some(w) = output_weights
            .iter()
            .find(|w| w.unsigned_abs() > MAX_OUTPUT_WEIGHT.unsigned_abs())
        {
            return Err(NetworkError(format!(
                "output weight {w}: expected within ±{MAX_OUTPUT_WEIGHT}"
            )));
        }
        let b = r.take(4, "the output bias")?;
        let output_bias = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let body_len = bytes.len() - r.0.len();
        let s = r.take(8, "the hash")?;
        let sum = u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]);
        if !r.0.is_empty() {
            return Err(NetworkError(format!(
                "{} bytes after the end of the network",
                r.0.len()
            )));
        }
        if fnv1a(&bytes[..body_len]) != sum {
            return Err(NetworkError("the hash does not match the contents".into()));
        }
        Ok(Network {
            variant,
            hidden,
            input_weights,
            input_bias,
            output_weights,
            output_bias,
        })
    }

    fn column(&self, input: usize) -> &[i16] {
        &self.input_weights[input * self.hidden..(input + 1) * self.hidden]
    }

    /// The evaluation, in centipawns from the side to move's view (`turn`: 0 white, 1 black),
    /// of the position `acc` describes.
    pub fn evaluate(&self, acc: &Accumulator, turn: usize) -> i32 {
        debug_assert!(acc.ready && acc.views[0].len() == self.hidden);
        let (ours, theirs) = self.output_weights.split_at(self.hidden);
        // At most 2 · MAX_HIDDEN products of at most QA · MAX_OUTPUT_WEIGHT: inside i32.
        let half = |values: &[i16], weights: &[i16]| -> i32 {
            values
                .iter()
                .zip(weights)
                .map(|(&v, &w)| i32::from(v.clamp(0, QA as i16)) * i32::from(w))
                .sum()
        };
        let sum = half(&acc.views[turn], ours) + half(&acc.views[1 - turn], theirs);
        let cp =
            (i64::from(sum) + i64::from(self.output_bias)) * i64::from(SCALE) / i64::from(QA * QB);
        cp.clamp(-i64::from(MAX_EVAL), i64::from(MAX_EVAL)) as i32
    }

    /// The evaluation of `pieces` with `turn` to move, computed from scratch.
    pub fn evaluate_pieces(&self, pieces: &Pieces, turn: usize) -> i32 {
        let mut acc = Accumulator::new(self);
        acc.refresh(self, pieces);
        self.evaluate(&acc, turn)
    }
}

/// The hidden layer of one position, from both sides' views, with the placement it describes.
#[derive(Clone, Debug)]
pub struct Accumulator {
    pieces: Pieces,
    views: [Vec<i16>; 2],
    ready: bool,
}

/// Above this many changed pieces an update starts from the biases instead.
const MAX_CHANGES: u32 = 12;

impl Accumulator {
    /// An accumulator for `net` describing nothing yet.
    pub fn new(net: &Network) -> Accumulator {
        Accumulator {
            pieces: [[0; 6]; 2],
            views: [vec![0; net.hidden], vec![0; net.hidden]],
            ready: false,
        }
    }

    /// Whether it describes a position.
    pub fn is_ready(&self) -> bool {
        self.ready
    }

    /// The number of pieces (of a colour and role on a square) in which its position and
    /// `pieces` differ: the cost of [`update`](Self::update), which the search compares to pick
    /// the cheaper start; `u32::MAX` when it describes nothing.
    pub fn distance(&self, pieces: &Pieces) -> u32 {
        if !self.ready {
            return u32::MAX;
        }
        let mut n = 0;
        for (olds, news) in self.pieces.iter().zip(pieces) {
            for (old, new) in olds.iter().zip(news) {
                n += (old ^ new).count_ones();
            }
        }
        n
    }

    /// Computes it for `pieces` from the biases.
    pub fn refresh(&mut self, net: &Network, pieces: &Pieces) {
        for view in &mut self.views {
            view.clear();
            view.extend_from_slice(&net.input_bias);
        }
        for (c, roles) in pieces.iter().enumerate() {
            for (r, &bb) in roles.iter().enumerate() {
                self.apply(net, c, r, bb, add);
            }
        }
        self.pieces = *pieces;
        self.ready = true;
    }

    /// Brings it to `pieces`: the columns of the pieces gone are taken away and those of the
    /// pieces come are added (from the biases when it describes nothing or too much differs).
    pub fn update(&mut self, net: &Network, pieces: &Pieces) {
        if self.distance(pieces) > MAX_CHANGES {
            self.refresh(net, pieces);
            return;
        }
        let before = self.pieces;
        for (c, (olds, news)) in before.iter().zip(pieces).enumerate() {
            for (r, (&old, &new)) in olds.iter().zip(news).enumerate() {
                self.apply(net, c, r, old & !new, sub);
                self.apply(net, c, r, new & !old, add);
            }
        }
        self.pieces = *pieces;
    }

    /// Adds (`op` = `add`) or takes away (`sub`) in both views the columns of the pieces of
    /// colour `c` and role `r` on the squares of `squares`.
    #[inline(always)]
    fn apply(
        &mut self,
        net: &Network,
        c: usize,
        r: usize,
        mut squares: u64,
        op: fn(&mut [i16], &[i16]),
    ) {
        while squares != 0 {
            let sq = squares.trailing_zeros() as usize;
            squares &= squares - 1;
            for view in 0..2 {
                op(&mut self.views[view], net.column(feature(view, c, r, sq)));
            }
        }
    }

    /// Becomes a copy of `other` (no allocation when the widths match).
    pub fn copy_from(&mut self, other: &Accumulator) {
        self.pieces = other.pieces;
        self.ready = other.ready;
        for (mine, theirs) in self.views.iter_mut().zip(&other.views) {
            mine.clear();
            mine.extend_from_slice(theirs);
        }
    }
}

// Wrapping arithmetic: the trainer bounds the weights so that no sum of a position's columns
// leaves i16 (see `train`), and wrapping keeps add and sub exact inverses regardless.
#[inline]
fn add(values: &mut [i16], column: &[i16]) {
    for (v, &w) in values.iter_mut().zip(column) {
        *v = v.wrapping_add(w);
    }
}

#[inline]
fn sub(values: &mut [i16], column: &[i16]) {
    for (v, &w) in values.iter_mut().zip(column) {
        *v = v.wrapping_sub(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn random_network(hidden: usize, seed: u64) -> Network {
        let mut x = seed | 1;
        let mut next = |range: i32| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x % (2 * range as u64 + 1)) as i32 - range) as i16
        };
        let input_weights = (0..INPUTS * hidden).map(|_| next(300)).collect();
        let input_bias = (0..hidden).map(|_| next(100)).collect();
        let output_weights = (0..2 * hidden).map(|_| next(60)).collect();
        Network::from_parts(
            "chess",
            hidden,
            input_weights,
            input_bias,
            output_weights,
            1234,
        )
        .unwrap()
    }

    #[test]
    fn files_round_trip_and_damage_is_named() {
        let net = random_network(16, 7);
        let bytes = net.to_bytes();
        assert_eq!(Network::from_bytes(&bytes).unwrap(), net);
        let err = |b: &[u8]| Network::from_bytes(b).unwrap_err().0;
        assert!(err(b"hello").contains("truncated"));
        assert!(err(b"NOTANNETWORK").contains("header"));
        assert!(err(&bytes[..bytes.len() - 1]).contains("truncated in the hash"));
        assert!(err(&bytes[..100]).contains("truncated in the input weights"));
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(err(&longer).contains("1 bytes after"));
        let mut flipped = bytes.clone();
        flipped[200] ^= 1;
        assert!(err(&flipped).contains("does not match"));
        let mut wide = bytes.clone();
        let at = 8 + 1 + "chess".len();
        wide[at..at + 2].copy_from_slice(&u16::MAX.to_le_bytes());
        assert!(err(&wide).contains("hidden width 65535"));
        let mut zero = bytes.clone();
        zero[8] = 0;
        assert!(err(&zero).contains("variant name"));
        // An output weight beyond the bound (its hash made right) is refused by name.
        let at = 8 + 1 + "chess".len() + 2 + 2 * (INPUTS * 16 + 16);
        let mut big = bytes[..bytes.len() - 8].to_vec();
        big[at..at + 2].copy_from_slice(&2001i16.to_le_bytes());
        let sum = fnv1a(&big);
        big.extend_from_slice(&sum.to_le_bytes());
        assert!(err(&big).contains("output weight 2001"));
        let mut parts = random_network(4, 1);
        parts.output_weights[3] = -2001;
        assert!(
            Network::from_parts(
                "chess",
                4,
                parts.input_weights,
                parts.input_bias,
                parts.output_weights,
                0
            )
            .is_none()
        );
    }

    #[test]
    fn features_mirror_between_the_views() {
        // A white knight on b1 seen by white is a black knight on b8 seen by black.
        assert_eq!(feature(0, 0, 1, 1), feature(1, 1, 1, 57));
        assert_eq!(feature(0, 0, 1, 1), 64 + 1);
        assert_eq!(feature(0, 1, 5, 63), (6 + 5) * 64 + 63);
        assert_eq!(feature(1, 0, 0, 8), (6 * 64) + 48);
        let mut seen = vec![false; INPUTS];
        for view in 0..2 {
            for c in 0..2 {
                for r in 0..6 {
                    for sq in 0..64 {
                        seen[feature(view, c, r, sq)] = true;
                    }
                }
            }
        }
        assert!(seen.iter().all(|&s| s));
    }
}
