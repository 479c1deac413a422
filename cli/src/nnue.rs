//! `arbiter nnue`: training the network of [`arbiter_engine::nnue`] on positions from
//! `arbiter texel generate` (from nothing, or continuing from a network: `--init`), and the
//! evaluation the engine commands take from `--net` (`analyze`, `texel generate`, `selfplay
//! --uci`) and UCI's `EvalFile` ([`evaluation`], [`load_network`]): the built-in network, a
//! network file, or `none` for the hand-written evaluation.

use crate::CliError;
use crate::texel::for_each_sample;
use arbiter_core::{Chess, Color};
use arbiter_engine::EnginePosition;
use arbiter_engine::nnue::train::{
    EpochReport, FloatNetwork, TrainConfig, TrainingPosition, train, train_from,
};
use arbiter_engine::nnue::{Evaluation, Network};
use std::io::BufRead;

/// The largest network file read: the widest network the format allows, and some.
pub const MAX_NETWORK_BYTES: u64 = 8 << 20;

/// Reads a network file that evaluates `variant` ([`Network::evaluates`]); errors name `flag`
/// (`--net`, `--init`) and the path.
pub fn load_network(
    path: &std::path::Path,
    variant: &str,
    flag: &str,
) -> Result<Network, CliError> {
    use std::io::Read;
    let field = || format!("{flag}: {}", path.display());
    let file = std::fs::File::open(path).map_err(|e| CliError::io(field(), e))?;
    let mut bytes = Vec::new();
    file.take(MAX_NETWORK_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CliError::io(field(), e))?;
    if bytes.len() as u64 > MAX_NETWORK_BYTES {
        return Err(CliError::input(
            field(),
            format!("larger than {MAX_NETWORK_BYTES} bytes"),
        ));
    }
    let net = Network::from_bytes(&bytes).map_err(|e| CliError::input(field(), e))?;
    if !net.evaluates(variant) {
        return Err(CliError::input(
            field(),
            format!("a network for {}, not for {variant}", net.variant()),
        ));
    }
    Ok(net)
}

/// What `--net VALUE` (or UCI's `EvalFile`) selects: `none` the hand-written evaluation,
/// `built-in` the network built into the engine for standard chess (the default, as if not
/// given), anything else the network file at that path, which must be for `variant` (a file
/// named `none` is `./none`). Errors name `flag`.
pub fn evaluation(value: &str, variant: &str, flag: &str) -> Result<Evaluation, CliError> {
    match value {
        NONE => Ok(Evaluation::HandWritten),
        BUILT_IN => Ok(Evaluation::BuiltIn),
        path => load_network(std::path::Path::new(path), variant, flag)
            .map(|net| Evaluation::Network(std::sync::Arc::new(net))),
    }
}

/// The `--net` value for the hand-written evaluation.
pub const NONE: &str = "none";
/// The `--net` value for the built-in network (the default).
pub const BUILT_IN: &str = "built-in";

/// How the labelled positions become training targets, and how many are held out.
#[derive(Clone, Debug, PartialEq)]
pub struct DataConfig {
    /// Use at most this many positions (the file's first).
    pub limit: usize,
    /// The weight of the search's score in the target (the rest is the game's result).
    pub lambda: f64,
    /// Every this-many-th block of [`HOLDOUT_BLOCK`] consecutive positions is held out to
    /// measure the loss on.
    pub validation_every: usize,
}

/// Positions are held out in blocks this long: a game's positions are consecutive in the data,
/// so most held-out games are held out whole, and the validation loss measures how the network
/// does on games it has not seen (single positions held out would share their games with the
/// training positions, and the loss would keep falling while the network learnt those games by
/// heart).
pub const HOLDOUT_BLOCK: usize = 1024;

/// What a training run did.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainSummary {
    /// Positions trained on.
    pub train: usize,
    /// Positions held out.
    pub validation: usize,
    /// Each epoch's losses.
    pub epochs: Vec<EpochReport>,
    /// The network.
    pub network: Network,
}

/// Reads standard chess positions labelled with a score (`POSITION | RESULT | SCORE`), trains a
/// network on them and returns it; `progress` gets a line per epoch. With `init`, training
/// continues from that network's weights (its width, not `cfg.hidden`) instead of random ones:
/// a network trained on earlier data goes on learning from new data.
pub fn train_chess(
    input: impl BufRead,
    data: &DataConfig,
    cfg: &TrainConfig,
    init: Option<&Network>,
    progress: &mut dyn FnMut(&str),
) -> Result<TrainSummary, CliError> {
    let mut train_set = Vec::new();
    let mut validation = Vec::new();
    let every = data.validation_every.max(2);
    let mut seen = 0usize;
    for_each_sample::<Chess>(input, data.limit, &mut |line, sample| {
        let Some(score) = sample.score else {
            return Err(CliError::input(
                "--data",
                format!("line {line}: no score (expected 'POSITION | RESULT | SCORE')"),
            ));
        };
        let pos = &sample.position;
        let pieces = pos
            .nnue_pieces()
            .ok_or_else(|| CliError::failed("standard chess gives the network no pieces"))?;
        let turn = pos.turn().index();
        let target = TrainingPosition::target(turn, score, sample.result, data.lambda, cfg.k);
        let p = TrainingPosition::new(&pieces, turn, target).ok_or_else(|| {
            CliError::input("--data", format!("line {line}: more than 32 pieces"))
        })?;
        let block = seen / HOLDOUT_BLOCK;
        seen += 1;
        if block % every == every - 1 {
            validation.push(p);
        } else {
            train_set.push(p);
        }
        Ok(())
    })?;
    if train_set.is_empty() || validation.is_empty() {
        return Err(CliError::input(
            "--data",
            format!(
                "{seen} positions: too few to train on and hold some out (holding out one \
                 block of {HOLDOUT_BLOCK} in {every} needs more than {})",
                (every - 1) * HOLDOUT_BLOCK
            ),
        ));
    }
    progress(&format!(
        "{} positions to train on, {} held out; white to move in {:.1} %",
        train_set.len(),
        validation.len(),
        100.0
            * train_set
                .iter()
                .chain(&validation)
                .filter(|p| p.turn() == Color::White.index())
                .count() as f64
            / seen as f64
    ));
    let start = init.map(FloatNetwork::from_network);
    if let Some(start) = &start {
        progress(&format!(
            "continuing from the given network: validation loss {:.6}",
            start.loss(&validation, cfg.k)
        ));
    }
    let mut epochs = Vec::new();
    let mut report = |r: &EpochReport| {
        progress(&format!(
            "epoch {}: training loss {:.6}, validation loss {:.6}",
            r.epoch, r.train_loss, r.validation_loss
        ));
        epochs.push(*r);
    };
    let net = match start {
        Some(start) => train_from(start, cfg, &mut train_set, &validation, &mut report),
        None => train(cfg, &mut train_set, &validation, &mut report),
    };
    let network = net
        .quantize(arbiter_core::Variant::Chess.name())
        .ok_or_else(|| CliError::failed("the trained network could not be quantized"))?;
    Ok(TrainSummary {
        train: train_set.len(),
        validation: validation.len(),
        epochs,
        network,
    })
}

/// A chess network that evaluates every position at +123 centipawns for the side to move (no
/// piece weighs anything; the output bias is 123 · QA · QB / 400, rounded up): a search with it
/// reports only ±123 (or 0, a draw), which the tests recognise.
#[cfg(test)]
pub(crate) fn constant_network() -> Network {
    Network::from_parts(
        "chess",
        8,
        vec![0; 768 * 8],
        vec![0; 8],
        vec![0; 16],
        20_074,
    )
    .unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbiter_core::Position;
    use arbiter_engine::tune::Sample;

    /// Lines from seeded random games, labelled by material from white's side.
    fn lines(n: usize) -> String {
        let mut out = String::new();
        let mut x = 77u64;
        let mut pos = Chess::default();
        for _ in 0..n {
            let moves = pos.legal_moves();
            if moves.is_empty() || pos.halfmove_clock() > 60 {
                pos = Chess::default();
                continue;
            }
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            pos.play_unchecked(moves[(x % moves.len() as u64) as usize]);
            let material: i32 = pos
                .board()
                .pieces()
                .map(|(_, p)| {
                    let v = [100, 300, 300, 500, 900, 0][p.role.index()];
                    if p.color == Color::White { v } else { -v }
                })
                .sum();
            let s = Sample {
                position: pos,
                result: 0.5,
                score: Some(material),
            };
            out.push_str(&s.to_line());
            out.push('\n');
        }
        out
    }

    fn cfg() -> TrainConfig {
        TrainConfig {
            hidden: 8,
            epochs: 2,
            batch: 128,
            learning_rate: 0.01,
            drop_at: 1,
            k: 1.0,
            seed: 1,
            threads: 2,
        }
    }

    #[test]
    fn training_reads_scored_lines_and_the_file_loads_back() {
        let data = DataConfig {
            limit: 3000,
            lambda: 1.0,
            validation_every: 2,
        };
        let text = lines(3500);
        let mut said = Vec::new();
        let summary = train_chess(text.as_bytes(), &data, &cfg(), None, &mut |l| {
            said.push(l.to_owned())
        })
        .unwrap();
        // Blocks 0 and 2 train, block 1 is held out.
        assert_eq!(
            (summary.train, summary.validation),
            (3000 - HOLDOUT_BLOCK, HOLDOUT_BLOCK)
        );
        assert_eq!(said.len(), 3, "{said:?}");
        assert!(
            summary.epochs[1].validation_loss < summary.epochs[0].validation_loss,
            "{:?}",
            summary.epochs
        );
        let dir = std::env::temp_dir().join(format!("arbiter-nnue-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("chess.nnue");
        std::fs::write(&path, summary.network.to_bytes()).unwrap();
        let loaded = load_network(&path, "chess", "--net").unwrap();
        assert_eq!(loaded, summary.network);
        // Training continues from it: the first report is its loss on the held-out block, and
        // the first epoch's is near it, not back at a random network's.
        let mut again = Vec::new();
        let more = train_chess(text.as_bytes(), &data, &cfg(), Some(&loaded), &mut |l| {
            again.push(l.to_owned())
        })
        .unwrap();
        assert_eq!(again.len(), 4, "{again:?}");
        assert!(again[1].starts_with("continuing from"), "{again:?}");
        assert!(
            more.epochs[0].validation_loss < summary.epochs[0].validation_loss,
            "{:?} vs {:?}",
            more.epochs,
            summary.epochs
        );
        let e = load_network(&path, "crazyhouse", "--net")
            .unwrap_err()
            .to_string();
        assert!(e.contains("a network for chess, not for crazyhouse"), "{e}");
        std::fs::write(&path, b"ARBNNUE1").unwrap();
        let e = load_network(&path, "chess", "--init")
            .unwrap_err()
            .to_string();
        assert!(e.contains("--init") && e.contains("truncated"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn lines_without_a_score_are_named() {
        let data = DataConfig {
            limit: 10,
            lambda: 0.5,
            validation_every: 2,
        };
        let text = format!("# comment\n{} | 1\n", Chess::default().to_text());
        let e = train_chess(text.as_bytes(), &data, &cfg(), None, &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2: no score"), "{e}");
        let e = train_chess("".as_bytes(), &data, &cfg(), None, &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("too few"), "{e}");
    }
}
