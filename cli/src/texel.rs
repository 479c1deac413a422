//! `arbiter texel`: the data and the fitting behind the standard chess, crazyhouse and Glinski
//! weights.
//!
//! - [`generate`] plays engine-against-itself games of the variant at a fixed node count
//!   from seeded random openings, and labels every quiet position of each game (side to move
//!   not in check, the engine's chosen move neither a capture nor a queen promotion, no forced mate
//!   found) with the game's result. The output depends only on the settings and the engine
//!   build, never on the number of threads: each game starts from a cleared engine and its own
//!   seed, and games are written in order.
//! - Fitting is [`arbiter_engine::tune`]; the CLI reads the file and prints the weights.

use crate::CliError;
use crate::selfplay::{Rng, random_opening};
use arbiter_core::{Color, GameState};
use arbiter_engine::nnue::Evaluation;
use arbiter_engine::tune::{Sample, Tunable};
use arbiter_engine::{Control, Engine, Limits, SearchOptions, SystemTime};
use std::io::{BufRead, Read};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// What to generate.
#[derive(Clone, Debug)]
pub struct GenConfig {
    /// Games to play.
    pub games: usize,
    /// Nodes searched per move.
    pub nodes: u64,
    /// Seed of the openings (game `g` uses `seed` and `g`).
    pub seed: u64,
    /// Random plies of each opening (not recorded).
    pub opening_plies: u32,
    /// Plies after which a game is scored a draw.
    pub max_plies: u32,
    /// Games played at once.
    pub threads: usize,
    /// Transposition table per thread, MiB.
    pub hash_mib: usize,
    /// How the engine evaluates (the default: the built-in network for standard chess). Data
    /// for the next network comes from the games of the last one.
    pub evaluation: Evaluation,
}

/// What was generated.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GenSummary {
    /// Games played.
    pub games: usize,
    /// Positions recorded.
    pub positions: usize,
    /// Games won by white, drawn, won by black (a Glinski stalemate, ¾–¼, counts as won by the
    /// side that scores ¾).
    pub results: [usize; 3],
}

/// Plays game `g`; its labelled lines and white's points.
fn play<P: Tunable>(
    engine: &mut Engine<P>,
    cfg: &GenConfig,
    g: usize,
) -> Result<(Vec<Sample<P>>, f64), CliError> {
    engine.clear();
    let mut rng = Rng::new(cfg.seed ^ (g as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let start = random_opening(&P::start(), cfg.opening_plies, &mut rng);
    let mut state = GameState::new(start);
    let mut keys: Vec<u64> = Vec::new();
    // Each quiet position with the search's score there, from white's side.
    let mut quiet: Vec<(P, i32)> = Vec::new();
    let stop = AtomicBool::new(false);
    let clock = SystemTime::new();
    let limits = Limits::nodes(cfg.nodes);
    for _ in 0..cfg.max_plies {
        if state.outcome().is_some() || !state.claimable_draws().is_empty() {
            break;
        }
        let pos = state.position().clone();
        let found = engine.search(
            &pos,
            &keys,
            &limits,
            &SearchOptions::default(),
            Control {
                stop: &stop,
                time: &clock,
            },
            &mut |_| {},
        );
        let Some(m) = found.best else {
            return Err(CliError::failed(format!(
                "no move and no ending in {}",
                pos.to_text()
            )));
        };
        keys.push(pos.repetition_key());
        // A score the data lines cannot carry (mates, and anything beyond MAX_SAMPLE_SCORE)
        // leaves the position out.
        if !pos.is_check()
            && !pos.is_tactical(m)
            && found.score.abs() <= arbiter_engine::tune::MAX_SAMPLE_SCORE
        {
            let white = if pos.turn() == Color::White {
                found.score
            } else {
                -found.score
            };
            quiet.push((pos, white));
        }
        state.play_checked(m);
    }
    // A claimed draw, or the ply cap, scores half a point.
    let result = state
        .outcome()
        .map_or(0.5, |o| o.score.points(Color::White));
    let samples = quiet
        .into_iter()
        .map(|(position, score)| Sample {
            position,
            result,
            score: Some(score),
        })
        .collect();
    Ok((samples, result))
}

/// Plays `cfg.games` games of `P` and hands each game's lines to `write`, in game order;
/// `progress` gets a line every 100 games.
pub fn generate<P: Tunable>(
    cfg: &GenConfig,
    write: &mut dyn FnMut(&str) -> std::io::Result<()>,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<GenSummary, CliError> {
    let next = AtomicUsize::new(0);
    // Raised on the first failure (a game's, or a write's): no new game starts after it.
    let stop = AtomicBool::new(false);
    type Game<P> = Result<(Vec<Sample<P>>, f64), CliError>;
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Game<P>)>();
    let mut summary = GenSummary::default();
    let mut outcome = Ok(());
    std::thread::scope(|scope| {
        for _ in 0..cfg.threads.clamp(1, 64) {
            let tx = tx.clone();
            let (next, stop) = (&next, &stop);
            scope.spawn(move || {
                let variant = arbiter_core::Position::variant(&P::start()).name();
                let mut engine = Engine::<P>::with_network(
                    cfg.hash_mib,
                    cfg.evaluation.network_for::<P>(variant),
                );
                loop {
                    let g = next.fetch_add(1, Ordering::Relaxed);
                    if g >= cfg.games || stop.load(Ordering::Relaxed) {
                        return;
                    }
                    // A closed channel means the writer gave up: stop too.
                    if tx.send((g, play(&mut engine, cfg, g))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        // This thread writes finished games in order while the others play; a game finished
        // early waits in `pending` for the ones before it.
        let mut pending = std::collections::BTreeMap::new();
        for (g, game) in rx {
            pending.insert(g, game);
            while let Some(game) = pending.remove(&summary.games) {
                let written = game.and_then(|(samples, result)| {
                    for s in &samples {
                        write(&s.to_line())
                            .map_err(|e| CliError::input("--out", format!("{e}")))?;
                    }
                    Ok((samples.len(), result))
                });
                let (positions, result) = match written {
                    Ok(w) => w,
                    Err(e) => {
                        outcome = Err(e);
                        stop.store(true, Ordering::Relaxed);
                        return;
                    }
                };
                summary.games += 1;
                summary.positions += positions;
                summary.results[if result > 0.5 {
                    0
                } else if result == 0.5 {
                    1
                } else {
                    2
                }] += 1;
                if summary.games.is_multiple_of(100) {
                    progress(&format!(
                        "{} games, {} positions",
                        summary.games, summary.positions
                    ));
                }
            }
        }
    });
    outcome.map(|()| summary)
}

/// The longest line read from a data file.
const MAX_LINE: usize = 512;

/// Reads labelled positions, one per line (blank lines and `#` comments skipped), at most
/// `limit` of them; an error names the line.
pub fn read_samples<P: Tunable>(
    input: impl BufRead,
    limit: usize,
) -> Result<Vec<Sample<P>>, CliError> {
    let mut out = Vec::new();
    for_each_sample(input, limit, &mut |_, s| {
        out.push(s);
        Ok(())
    })?;
    Ok(out)
}

/// Hands each labelled position of `input` to `each`, at most `limit` of them, without
/// holding the file: the network trainer packs millions this way. `each` gets the line's number
/// too, for its own errors. A line that cannot be read is an error naming it.
pub fn for_each_sample<P: Tunable>(
    mut input: impl BufRead,
    limit: usize,
    each: &mut dyn FnMut(usize, Sample<P>) -> Result<(), CliError>,
) -> Result<usize, CliError> {
    let mut line = Vec::new();
    let mut number = 0usize;
    let mut read = 0usize;
    while read < limit {
        line.clear();
        number += 1;
        let n = std::io::Read::by_ref(&mut input)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| CliError::input("--data", format!("{e}")))?;
        if n == 0 {
            break;
        }
        if line.len() > MAX_LINE {
            return Err(CliError::input(
                "--data",
                format!("line {number} is longer than {MAX_LINE} bytes"),
            ));
        }
        let text = std::str::from_utf8(&line)
            .map_err(|_| CliError::input("--data", format!("line {number} is not UTF-8")))?
            .trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let sample = Sample::parse(text)
            .map_err(|e| CliError::input("--data", format!("line {number}: {e}")))?;
        each(number, sample)?;
        read += 1;
    }
    Ok(read)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbiter_core::{Chess, Glinski};
    use std::sync::Arc;

    fn cfg(threads: usize) -> GenConfig {
        GenConfig {
            games: 6,
            nodes: 300,
            seed: 5,
            opening_plies: 8,
            max_plies: 120,
            threads,
            hash_mib: 1,
            evaluation: Evaluation::BuiltIn,
        }
    }

    fn run<P: Tunable>(cfg: &GenConfig) -> (Vec<String>, GenSummary) {
        let mut lines = Vec::new();
        let summary = generate::<P>(
            cfg,
            &mut |l| {
                lines.push(l.to_owned());
                Ok(())
            },
            &|_| {},
        )
        .unwrap();
        (lines, summary)
    }

    fn reproducible_and_quiet<P: Tunable>() {
        let (one, s1) = run::<P>(&cfg(1));
        let (two, s2) = run::<P>(&cfg(2));
        assert_eq!(one, two, "the thread count changes nothing");
        assert_eq!(s1, s2);
        assert_eq!(s1.games, 6);
        assert_eq!(s1.results.iter().sum::<usize>(), 6);
        assert_eq!(s1.positions, one.len());
        assert!(one.len() > 100, "{} positions", one.len());
        for line in &one {
            let s = Sample::<P>::parse(line).unwrap();
            assert!(!s.position.is_check(), "{line}");
            assert!([0.0, 0.25, 0.5, 0.75, 1.0].contains(&s.result), "{line}");
        }
        // Another seed, other games.
        let (other, _) = run::<P>(&GenConfig { seed: 6, ..cfg(2) });
        assert_ne!(one, other);
    }

    #[test]
    fn generation_is_reproducible_and_labels_quiet_positions() {
        reproducible_and_quiet::<Chess>();
        reproducible_and_quiet::<Glinski>();
        reproducible_and_quiet::<arbiter_core::Crazyhouse>();
    }

    #[test]
    fn a_network_evaluates_the_games_when_given() {
        // A network that says +123 for whoever is to move: every score the search reports is
        // ±123, or 0 where a repetition decided.
        let flat = crate::nnue::constant_network();
        let with_net = GenConfig {
            games: 2,
            evaluation: Evaluation::Network(Arc::new(flat)),
            ..cfg(1)
        };
        let (lines, _) = run::<Chess>(&with_net);
        assert!(!lines.is_empty());
        let scores: Vec<i32> = lines
            .iter()
            .map(|l| Sample::<Chess>::parse(l).unwrap().score.unwrap())
            .collect();
        assert!(
            scores.iter().all(|s| [0, 123].contains(&s.abs())),
            "{scores:?}"
        );
        assert!(scores.iter().any(|s| s.abs() == 123), "{scores:?}");
        // Without it the hand-written evaluation gives other scores.
        let (own, _) = run::<Chess>(&GenConfig {
            games: 2,
            evaluation: Evaluation::HandWritten,
            ..cfg(1)
        });
        assert!(
            own.iter()
                .any(|l| ![0, 123]
                    .contains(&Sample::<Chess>::parse(l).unwrap().score.unwrap().abs())),
            "{own:?}"
        );
    }

    #[test]
    fn a_failed_write_is_reported() {
        let err = generate::<Chess>(
            &cfg(2),
            &mut |_| Err(std::io::Error::other("disk full")),
            &|_| {},
        )
        .unwrap_err();
        assert!(err.to_string().contains("--out: disk full"), "{err}");
    }

    #[test]
    fn data_files_are_read_with_precise_errors() {
        let good = format!(
            "# comment\n\n{} | 1\n{} | 0.5\n",
            Chess::new().to_fen(),
            Chess::new().to_fen()
        );
        let read = |text: &[u8], limit| read_samples::<Chess>(text, limit);
        assert_eq!(read(good.as_bytes(), usize::MAX).unwrap().len(), 2);
        assert_eq!(read(good.as_bytes(), 1).unwrap().len(), 1);
        let bad = format!("{} | 1\nnonsense\n", Chess::new().to_fen());
        let e = read(bad.as_bytes(), usize::MAX).unwrap_err();
        assert!(e.to_string().starts_with("--data: line 2:"), "{e}");
        let long = "x".repeat(10_000);
        let e = read(long.as_bytes(), usize::MAX).unwrap_err();
        assert!(
            e.to_string().contains("line 1 is longer than 512 bytes"),
            "{e}"
        );
        let e = read(&b"\xff\xfe | 1\n"[..], usize::MAX).unwrap_err();
        assert!(e.to_string().contains("not UTF-8"), "{e}");
        // A chess file read as Glinski: the line is named.
        let e = read_samples::<Glinski>(good.as_bytes(), usize::MAX).unwrap_err();
        assert!(
            e.to_string().starts_with("--data: line 3: position:"),
            "{e}"
        );
    }
}
