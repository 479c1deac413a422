//! `arbiter selfplay`: a match between two players on fixed random openings, each opening
//! played twice with colours swapped, reporting the score and an Elo difference with its 95 %
//! error bar. A player is any `arbiter` build or the built-in one-ply greedy (or random) player.
//! A build plays each move as one `PATH analyze …` run with the player's own arguments (limits,
//! hash), starting cold every move; or, with [`MatchConfig::uci`] (standard chess and
//! crazyhouse), as one `PATH uci` process per player and game thread, told `ucinewgame` before
//! each game, so that it keeps its tables and histories from move to move as in a real game,
//! optionally on a game clock ([`MatchConfig::clock`]). Games are judged by the core's rules
//! (`GameState`): every automatic ending, and claimable draws are claimed; a game reaching the
//! ply cap is a draw.

use crate::CliError;
use arbiter_core::clock::{Bonus, Stage, TimeControl};
use arbiter_core::{AnyPosition, GameState, Locale, Notation, Position, Variant};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// One side of the match.
#[derive(Debug, Clone)]
pub enum Player {
    /// An `arbiter` binary, asked `analyze … ARGS` for each move.
    Arbiter {
        /// The binary.
        path: PathBuf,
        /// Extra arguments (a limit such as `--nodes 20000` is added when none is given).
        args: Vec<String>,
    },
    /// The one-ply greedy player.
    Greedy,
    /// A uniformly random legal move (the floor of any comparison).
    Random,
}

impl Player {
    /// `greedy`, or the path of a binary.
    pub fn parse(text: &str, args: &str) -> Player {
        if text == "greedy" {
            Player::Greedy
        } else if text == "random" {
            Player::Random
        } else {
            Player::Arbiter {
                path: PathBuf::from(text),
                args: args.split_whitespace().map(str::to_owned).collect(),
            }
        }
    }

    /// The move to play in `pos`, reached from the game's `start` by `moves` (an engine is given
    /// them all, so that it sees repetitions).
    fn choose(
        &self,
        start: &AnyPosition,
        moves: &[String],
        pos: &AnyPosition,
        rules: &[String],
        rng: &mut Rng,
    ) -> Result<Option<String>, CliError> {
        match self {
            Player::Greedy => Ok(arbiter_engine::analyze::greedy(pos, &mut |n| rng.below(n))),
            Player::Random => {
                let moves = pos.legal_moves();
                Ok((!moves.is_empty()).then(|| pos.move_to_uci(moves[rng.below(moves.len())])))
            }
            Player::Arbiter { path, args } => {
                let mut cmd = Command::new(path);
                cmd.arg("analyze")
                    .arg("--variant")
                    .arg(pos.variant().name())
                    .arg("--position")
                    .arg(start.to_text());
                for r in rules {
                    cmd.arg("--rule").arg(r);
                }
                cmd.args(args);
                if !args
                    .iter()
                    .any(|a| matches!(a.as_str(), "--depth" | "--nodes" | "--movetime"))
                {
                    cmd.args(["--nodes", "20000"]);
                }
                cmd.args(moves);
                let out = cmd
                    .output()
                    .map_err(|e| CliError::input(format!("running {}", path.display()), e))?;
                if !out.status.success() {
                    return Err(CliError::failed(format!(
                        "{} analyze failed: {}",
                        path.display(),
                        String::from_utf8_lossy(&out.stderr).trim()
                    )));
                }
                let text = String::from_utf8_lossy(&out.stdout);
                let last = text.lines().last().unwrap_or("");
                match last.strip_prefix("bestmove ") {
                    Some("(none)") => Ok(None),
                    Some(m) => Ok(Some(m.to_owned())),
                    None => Err(CliError::failed(format!(
                        "{}: no bestmove line",
                        path.display()
                    ))),
                }
            }
        }
    }
}

/// Reads `--tc`: `BASE+INC` in seconds, e.g. `10+0.1`, as a PGN `TimeControl` tag
/// ([`TimeControl::from_pgn`]), to the millisecond: one sudden-death stage with a Fischer
/// increment, written even when it is 0 (`60+0`), the base above zero and at most a day, the
/// increment at most an hour.
pub fn parse_time_control(text: &str) -> Result<TimeControl, String> {
    let err = || format!("--tc: '{text}': expected BASE+INC in seconds, e.g. 10+0.1");
    if !text.contains('+') {
        return Err(err());
    }
    let tc = TimeControl::from_pgn(text.trim()).map_err(|e| format!("{} ({e})", err()))?;
    match tc.stages() {
        [
            Stage {
                moves: None,
                time_ms: 1..=86_400_000,
                bonus: Bonus::Increment(0..=3_600_000),
            },
        ] => Ok(tc),
        _ => Err(err()),
    }
}

/// The players' clocks during a game, ms, White's then Black's (negative once a flag falls).
///
/// Not [`arbiter_core::clock::Clock`]: a hosted game's clock grants lag compensation (a grace of
/// up to 2 s from a quota) because a client's moves cross a network; here the harness measures
/// each engine's thinking itself, so a flag falls the moment the time is used up, as in
/// cutechess, and an overrun is never forgiven.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Clocks {
    left: [i64; 2],
    increment_ms: u64,
}

impl Clocks {
    /// Both players at the base time of `tc` (which [`parse_time_control`] checked to be one
    /// Fischer stage).
    fn new(tc: &TimeControl) -> Clocks {
        let base = i64::try_from(tc.initial_ms()).unwrap_or(i64::MAX);
        let increment_ms = match tc.stages().first().map(|s| s.bonus) {
            Some(Bonus::Increment(ms)) => ms,
            _ => 0,
        };
        Clocks {
            left: [base; 2],
            increment_ms,
        }
    }

    /// The clock part of a `go` line.
    fn go(&self) -> String {
        let [w, b] = self.left.map(|t| t.max(1));
        let i = self.increment_ms;
        format!("wtime {w} btime {b} winc {i} binc {i}")
    }

    /// Charges `used_ms` to the player of `side` (`Color::index`); false when its flag fell,
    /// else it gains the increment.
    fn charge(&mut self, side: usize, used_ms: u64) -> bool {
        let t = &mut self.left[side];
        *t = t.saturating_sub(i64::try_from(used_ms).unwrap_or(i64::MAX));
        if *t <= 0 {
            return false;
        }
        *t = t.saturating_add(i64::try_from(self.increment_ms).unwrap_or(i64::MAX));
        true
    }
}

/// What a UCI player is told.
#[derive(Debug, PartialEq)]
struct UciSettings {
    /// The `Hash` option, MiB.
    hash: Option<u64>,
    /// The `EvalFile` option: a network for standard chess.
    eval_file: Option<String>,
    /// The limits of the `go` line of every move (after the clock's times, if any).
    limits: String,
}

/// What a UCI player is told, from the same arguments an `analyze` player takes (`--nodes`,
/// `--depth`, `--movetime` for the `go` line, `--hash`, and `--net` in standard chess; the
/// others have no UCI equivalent and are refused). Without a limit, `nodes 20000`, unless the
/// game has a clock (`clocked`). `field` names the arguments in errors.
fn uci_settings(
    args: &[String],
    variant: Variant,
    field: &str,
    clocked: bool,
) -> Result<UciSettings, CliError> {
    let mut hash = None;
    let mut eval_file = None;
    let mut go = Vec::new();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = |v: Option<&String>| {
            v.and_then(|v| v.parse::<u64>().ok())
                .filter(|v| *v >= 1)
                .ok_or_else(|| CliError::input(field, format!("{flag} needs a positive number")))
        };
        match flag.as_str() {
            "--hash" => hash = Some(value(it.next())?),
            "--net" => {
                let path = it.next().filter(|p| !p.trim().is_empty()).ok_or_else(|| {
                    CliError::input(field, "--net needs a network file, none or built-in")
                })?;
                if variant != Variant::Chess {
                    return Err(CliError::input(
                        field,
                        "--net: networks evaluate standard chess only",
                    ));
                }
                eval_file = Some(path.clone());
            }
            "--nodes" | "--depth" | "--movetime" => {
                go.push(format!("{} {}", &flag[2..], value(it.next())?));
            }
            other => {
                return Err(CliError::input(
                    field,
                    format!(
                        "{other} has no UCI equivalent (--uci takes --nodes, --depth, --movetime, --hash and --net)"
                    ),
                ));
            }
        }
    }
    if go.is_empty() && !clocked {
        go.push("nodes 20000".to_owned());
    }
    Ok(UciSettings {
        hash,
        eval_file,
        limits: go.join(" "),
    })
}

/// An `arbiter uci` process kept running through the games of one thread.
struct UciEngine {
    name: String,
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    /// The limits of every `go` line.
    limits: String,
}

impl UciEngine {
    /// Starts `path uci`, sets its variant and hash and waits until it is ready.
    fn start(
        path: &PathBuf,
        args: &[String],
        variant: Variant,
        field: &str,
        clocked: bool,
    ) -> Result<Self, CliError> {
        let UciSettings {
            hash,
            eval_file,
            limits,
        } = uci_settings(args, variant, field, clocked)?;
        let name = path.display().to_string();
        let mut child = Command::new(path)
            .arg("uci")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| CliError::input(format!("running {name}"), e))?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(CliError::failed(format!("{name}: no pipes")));
        };
        let mut engine = UciEngine {
            name,
            child,
            input,
            output: BufReader::new(output),
            limits,
        };
        engine.send("uci")?;
        engine.wait_for("uciok")?;
        if variant == Variant::Crazyhouse {
            engine.send("setoption name UCI_Variant value crazyhouse")?;
        }
        if let Some(h) = hash {
            engine.send(&format!("setoption name Hash value {h}"))?;
        }
        if let Some(path) = eval_file {
            engine.send(&format!("setoption name EvalFile value {path}"))?;
        }
        Ok(engine)
    }

    fn send(&mut self, line: &str) -> Result<(), CliError> {
        writeln!(self.input, "{line}")
            .and_then(|()| self.input.flush())
            .map_err(|e| CliError::io(format!("writing to {}", self.name), e))
    }

    /// Reads lines until one starts with `word`; returns it. An `info string error` line (a
    /// refused option or position) fails the match.
    fn wait_for(&mut self, word: &str) -> Result<String, CliError> {
        let mut line = String::new();
        loop {
            line.clear();
            let n = self
                .output
                .read_line(&mut line)
                .map_err(|e| CliError::io(format!("reading from {}", self.name), e))?;
            if n == 0 {
                return Err(CliError::failed(format!("{} exited", self.name)));
            }
            let text = line.trim_end();
            if text.starts_with("info string error") {
                return Err(CliError::failed(format!("{}: {text}", self.name)));
            }
            if text.split_whitespace().next() == Some(word) {
                return Ok(text.to_owned());
            }
        }
    }

    /// Forgets the last game (`ucinewgame`) and waits until that is done.
    fn new_game(&mut self) -> Result<(), CliError> {
        self.send("ucinewgame")?;
        self.send("isready")?;
        self.wait_for("readyok").map(drop)
    }

    /// The move the engine plays after `moves` from `start`, on `clocks` if the game has them.
    fn best_move(
        &mut self,
        start: &AnyPosition,
        moves: &[String],
        clocks: Option<&Clocks>,
    ) -> Result<Option<String>, CliError> {
        let mut position = format!("position fen {}", start.to_text());
        if !moves.is_empty() {
            position.push_str(" moves ");
            position.push_str(&moves.join(" "));
        }
        self.send(&position)?;
        let go = go_line(clocks, &self.limits);
        self.send(&go)?;
        let line = self.wait_for("bestmove")?;
        match line.split_whitespace().nth(1) {
            None | Some("(none)") => Ok(None),
            Some(m) => Ok(Some(m.to_owned())),
        }
    }
}

/// `go` with the clocks' times, then the player's own limits.
fn go_line(clocks: Option<&Clocks>, limits: &str) -> String {
    let mut go = String::from("go");
    for part in [clocks.map(Clocks::go).unwrap_or_default().as_str(), limits] {
        if !part.is_empty() {
            go.push(' ');
            go.push_str(part);
        }
    }
    go
}

impl Drop for UciEngine {
    fn drop(&mut self) {
        // `quit` ends it at once; a process that ignores it is killed.
        let _ = self.send("quit");
        if !matches!(self.child.try_wait(), Ok(Some(_))) {
            std::thread::sleep(std::time::Duration::from_millis(50));
            if !matches!(self.child.try_wait(), Ok(Some(_))) {
                let _ = self.child.kill();
            }
        }
        let _ = self.child.wait();
    }
}

/// A player as one game thread plays it: through [`Player::choose`], or through a UCI engine
/// that thread keeps running.
struct Seat<'a> {
    player: &'a Player,
    uci: Option<UciEngine>,
}

impl<'a> Seat<'a> {
    /// The seat of `player`; an `arbiter` build under `--uci` is started now.
    fn new(player: &'a Player, cfg: &MatchConfig, field: &str) -> Result<Seat<'a>, CliError> {
        let uci = match player {
            Player::Arbiter { path, args } if cfg.uci => Some(UciEngine::start(
                path,
                args,
                cfg.variant,
                field,
                cfg.clock.is_some(),
            )?),
            _ => None,
        };
        Ok(Seat { player, uci })
    }

    fn new_game(&mut self) -> Result<(), CliError> {
        match &mut self.uci {
            Some(e) => e.new_game(),
            None => Ok(()),
        }
    }

    fn choose(
        &mut self,
        start: &AnyPosition,
        moves: &[String],
        pos: &AnyPosition,
        rules: &[String],
        rng: &mut Rng,
        clocks: Option<&Clocks>,
    ) -> Result<Option<String>, CliError> {
        match &mut self.uci {
            Some(e) => e.best_move(start, moves, clocks),
            None => self.player.choose(start, moves, pos, rules, rng),
        }
    }
}

/// Small deterministic generator (xorshift64*), for openings and the greedy player's ties.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// A number below `n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
    }
}

/// What to play.
#[derive(Debug, Clone)]
pub struct MatchConfig {
    /// The variant (bughouse boards cannot be played alone: refused).
    pub variant: Variant,
    /// Rule options, `name=value`.
    pub rules: Vec<String>,
    /// Openings; each is played twice.
    pub pairs: usize,
    /// Random plies of each opening.
    pub opening_plies: u32,
    /// Seed of the openings.
    pub seed: u64,
    /// Plies after which a game is a draw.
    pub max_plies: u32,
    /// Games played at once.
    pub concurrency: usize,
    /// A sequential test that may end the match before `pairs` openings are played.
    pub sprt: Option<Sprt>,
    /// Play `arbiter` builds through `PATH uci`, one process per player and game thread kept
    /// for all its games, instead of one `PATH analyze` process per move (standard chess and
    /// crazyhouse, without rule options).
    pub uci: bool,
    /// A game clock (with [`uci`](Self::uci) only): engines are told the times left instead of
    /// (or besides) their own limits, and a player whose time runs out loses. One Fischer stage
    /// ([`parse_time_control`]).
    pub clock: Option<TimeControl>,
}

/// A sequential probability ratio test of H0 "A − B = `elo0`" against H1 "A − B = `elo1`"
/// (logistic Elo), with error rates `alpha` (accepting H1 when H0 holds) and `beta`.
///
/// The log-likelihood ratio uses the normal approximation of the per-game score: with `n` games
/// of mean `s` and variance `v`, LLR = n (s1 − s0)(2s − s0 − s1) / (2v), where `s0` and `s1` are
/// the expected scores at `elo0` and `elo1`. The variance is estimated with one virtual win and
/// one virtual loss added, so that a run of identical results cannot end the test at once. The
/// test stops when the LLR leaves [ln(β/(1−α)), ln((1−β)/α)], counted over whole pairs only, so
/// that each opening has been played with both colours.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sprt {
    /// Elo difference of H0.
    pub elo0: f64,
    /// Elo difference of H1 (greater than `elo0`).
    pub elo1: f64,
    /// False positive rate.
    pub alpha: f64,
    /// False negative rate.
    pub beta: f64,
}

/// Where a sequential test stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SprtState {
    /// The test.
    pub test: Sprt,
    /// The log-likelihood ratio over the completed pairs.
    pub llr: f64,
    /// H1 accepted (`Some(true)`), H0 accepted (`Some(false)`), or not decided.
    pub verdict: Option<bool>,
}

impl Sprt {
    /// Reads `ELO0,ELO1` (e.g. `0,10`), with α = β = 0.05.
    pub fn parse(text: &str) -> Result<Sprt, String> {
        let err = || format!("--sprt: '{text}': expected ELO0,ELO1 with ELO0 < ELO1, e.g. 0,10");
        let (a, b) = text.split_once(',').ok_or_else(err)?;
        let elo0: f64 = a.trim().parse().map_err(|_| err())?;
        let elo1: f64 = b.trim().parse().map_err(|_| err())?;
        let sane = |e: f64| e.is_finite() && e.abs() <= 1000.0;
        if !(sane(elo0) && sane(elo1) && elo0 < elo1) {
            return Err(err());
        }
        Ok(Sprt {
            elo0,
            elo1,
            alpha: 0.05,
            beta: 0.05,
        })
    }

    /// The lower and upper bounds of the LLR.
    pub fn bounds(&self) -> (f64, f64) {
        (
            (self.beta / (1.0 - self.alpha)).ln(),
            ((1.0 - self.beta) / self.alpha).ln(),
        )
    }

    /// The log-likelihood ratio of A's per-game points.
    pub fn llr(&self, points: &[f64]) -> f64 {
        if points.is_empty() {
            return 0.0;
        }
        let n = points.len() as f64;
        let mean = points.iter().sum::<f64>() / n;
        let squares: f64 = points.iter().map(|p| (p - mean).powi(2)).sum::<f64>()
            + (1.0 - mean).powi(2)
            + mean.powi(2);
        let var = squares / (n + 2.0);
        let expected = |elo: f64| 1.0 / (1.0 + 10f64.powf(-elo / 400.0));
        let (s0, s1) = (expected(self.elo0), expected(self.elo1));
        n * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * var)
    }

    /// The state of the test after `points`.
    pub fn state(&self, points: &[f64]) -> SprtState {
        let llr = self.llr(points);
        let (lower, upper) = self.bounds();
        SprtState {
            test: *self,
            llr,
            verdict: if llr >= upper {
                Some(true)
            } else if llr <= lower {
                Some(false)
            } else {
                None
            },
        }
    }
}

/// The result for player A.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MatchReport {
    /// Games played.
    pub games: usize,
    /// A's wins, draws (any split short of a full point), losses.
    pub wins: usize,
    /// Draws and partial scores.
    pub draws: usize,
    /// Losses.
    pub losses: usize,
    /// A's points.
    pub points: f64,
    /// A's score per game (0 to 1).
    pub score: f64,
    /// The Elo difference A − B and its 95 % interval.
    pub elo: (f64, f64, f64),
    /// The sequential test, when one was asked for.
    pub sprt: Option<SprtState>,
}

/// Elo difference for an expected score.
fn elo(score: f64) -> f64 {
    let s = score.clamp(1e-3, 1.0 - 1e-3);
    -400.0 * (1.0 / s - 1.0).log10()
}

/// The report from A's per-game points.
pub fn report(points: &[f64]) -> MatchReport {
    let n = points.len().max(1) as f64;
    let total: f64 = points.iter().sum();
    let mean = total / n;
    let var = points.iter().map(|p| (p - mean).powi(2)).sum::<f64>() / n;
    let margin = 1.96 * (var / n).sqrt();
    MatchReport {
        games: points.len(),
        wins: points.iter().filter(|&&p| p == 1.0).count(),
        losses: points.iter().filter(|&&p| p == 0.0).count(),
        draws: points.iter().filter(|&&p| p > 0.0 && p < 1.0).count(),
        points: total,
        score: mean,
        elo: (elo(mean), elo(mean - margin), elo(mean + margin)),
        sprt: None,
    }
}

impl std::fmt::Display for MatchReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "A v B: {} games, +{} ={} -{}, {:.1} points, score {:.1}%, Elo {:+.0} [{:+.0}, {:+.0}] (95%)",
            self.games,
            self.wins,
            self.draws,
            self.losses,
            self.points,
            self.score * 100.0,
            self.elo.0,
            self.elo.1,
            self.elo.2
        )?;
        if let Some(t) = &self.sprt {
            let (lower, upper) = t.test.bounds();
            let verdict = match t.verdict {
                Some(true) => "H1 accepted",
                Some(false) => "H0 accepted",
                None => "undecided",
            };
            write!(
                f,
                "\nSPRT elo0 {:+} elo1 {:+} (alpha {}, beta {}): LLR {:.2} [{:.2}, {:.2}], {verdict}",
                t.test.elo0, t.test.elo1, t.test.alpha, t.test.beta, t.llr, lower, upper
            )?;
        }
        Ok(())
    }
}

/// The points of the games of every opening whose two games are both played, in order.
fn whole_pairs(points: &[Option<f64>]) -> Vec<f64> {
    points
        .chunks(2)
        .filter_map(|pair| match pair {
            [Some(x), Some(y)] => Some([*x, *y]),
            _ => None,
        })
        .flatten()
        .collect()
}

fn opening(cfg: &MatchConfig, start: &AnyPosition, pair: usize) -> AnyPosition {
    let mut rng = Rng::new(cfg.seed ^ (pair as u64).wrapping_mul(0x1000_0001));
    random_opening(start, cfg.opening_plies, &mut rng)
}

/// A position after `plies` random legal moves from `start` (fewer if the game ends first: then
/// the moves are drawn again) that is not over.
pub fn random_opening<P: Position + Clone>(start: &P, plies: u32, rng: &mut Rng) -> P {
    loop {
        let mut state = GameState::new(start.clone());
        for _ in 0..plies {
            let moves = state.position().legal_moves();
            if moves.is_empty() || state.outcome().is_some() {
                break;
            }
            state.play_checked(moves[rng.below(moves.len())]);
        }
        if state.outcome().is_none() && !state.position().legal_moves().is_empty() {
            return state.position().clone();
        }
    }
}

/// Plays one game; A's points and why the game ended (an [`EndReason`](arbiter_core::EndReason)
/// name, or `ply-limit`).
fn game<'p>(
    cfg: &MatchConfig,
    start: &AnyPosition,
    white: &mut Seat<'p>,
    black: &mut Seat<'p>,
    a_is_white: bool,
    seed: u64,
) -> Result<(f64, &'static str), CliError> {
    white.new_game()?;
    black.new_game()?;
    let mut rng = Rng::new(seed);
    let mut state = GameState::new(start.clone());
    let mut played: Vec<String> = Vec::new();
    let a_color = if a_is_white {
        start.turn()
    } else {
        !start.turn()
    };
    let mut clocks = cfg.clock.as_ref().map(Clocks::new);
    for _ in 0..cfg.max_plies {
        if let Some(o) = state.outcome() {
            return Ok((o.score.points(a_color), o.reason.name()));
        }
        if let Some(claim) = state.claimable_draws().first() {
            return Ok((0.5, claim.reason().name()));
        }
        // `white` is the player who moves first from the opening.
        let mover = if state.position().turn() == start.turn() {
            &mut *white
        } else {
            &mut *black
        };
        let pos = state.position().clone();
        let thinking = Instant::now();
        let choice = mover.choose(start, &played, &pos, &cfg.rules, &mut rng, clocks.as_ref())?;
        if let Some(c) = &mut clocks {
            let used = u64::try_from(thinking.elapsed().as_millis()).unwrap_or(u64::MAX);
            if !c.charge(pos.turn().index(), used) {
                let o = state
                    .flag_fall(pos.turn())
                    .map_err(|e| CliError::failed(format!("flag fall: {e}")))?;
                return Ok((o.score.points(a_color), o.reason.name()));
            }
        }
        let Some(text) = choice else {
            return Err(CliError::failed(format!(
                "no move and no ending in {}",
                pos.to_text()
            )));
        };
        let m = pos
            .parse_move(&text, Notation::Uci, Locale::English)
            .map_err(|e| {
                CliError::failed(format!(
                    "a player sent an illegal move in {}: {e}",
                    pos.to_text()
                ))
            })?;
        played.push(pos.move_to_uci(m));
        state.play_checked(m);
    }
    Ok(state.outcome().map_or((0.5, "ply-limit"), |o| {
        (o.score.points(a_color), o.reason.name())
    }))
}

/// Plays the match; `progress` receives a line per game.
pub fn play_match(
    cfg: &MatchConfig,
    a: &Player,
    b: &Player,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<MatchReport, CliError> {
    if cfg.variant == Variant::Bughouse {
        return Err(CliError::input(
            "--variant",
            "a bughouse board cannot be played alone",
        ));
    }
    if cfg.clock.is_some() && !cfg.uci {
        return Err(CliError::input(
            "--tc",
            "a clock is for UCI play (--uci): an analyze player cannot be told its time",
        ));
    }
    if cfg.uci {
        if !matches!(cfg.variant, Variant::Chess | Variant::Crazyhouse) || !cfg.rules.is_empty() {
            return Err(CliError::input(
                "--uci",
                "UCI play is for standard chess and crazyhouse without rule options",
            ));
        }
        // Refuse arguments without a UCI equivalent before any game starts.
        for (player, field) in [(a, "--a-args"), (b, "--b-args")] {
            if let Player::Arbiter { args, .. } = player {
                // A network file that would not load is refused now, not by each engine.
                let settings = uci_settings(args, cfg.variant, field, cfg.clock.is_some())?;
                if let Some(value) = settings.eval_file {
                    crate::nnue::evaluation(
                        &value,
                        Variant::Chess.name(),
                        &format!("{field}: --net"),
                    )?;
                }
            }
        }
    }
    let start = crate::load_position(cfg.variant, None, &cfg.rules)?;
    let next = AtomicUsize::new(0);
    let points = Mutex::new(vec![None; cfg.pairs * 2]);
    let failure = Mutex::new(None);
    // The SPRT's verdict, once reached: no new game starts after it.
    let decided: Mutex<Option<SprtState>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..cfg.concurrency.clamp(1, 64) {
            scope.spawn(|| {
                let fail = |e| *failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                let (mut seat_a, mut seat_b) =
                    match (Seat::new(a, cfg, "--a-args"), Seat::new(b, cfg, "--b-args")) {
                        (Ok(x), Ok(y)) => (x, y),
                        (Err(e), _) | (_, Err(e)) => return fail(e),
                    };
                loop {
                    let g = next.fetch_add(1, Ordering::Relaxed);
                    if g >= cfg.pairs * 2
                        || failure.lock().unwrap_or_else(|e| e.into_inner()).is_some()
                        || decided.lock().unwrap_or_else(|e| e.into_inner()).is_some()
                    {
                        return;
                    }
                    let pair = g / 2;
                    let a_white = g.is_multiple_of(2);
                    let open = opening(cfg, &start, pair);
                    let (w, bl) = if a_white {
                        (&mut seat_a, &mut seat_b)
                    } else {
                        (&mut seat_b, &mut seat_a)
                    };
                    match game(cfg, &open, w, bl, a_white, cfg.seed ^ g as u64) {
                        Ok((p, ending)) => {
                            progress(&format!(
                                "game {} (opening {}, A {}): A scores {p} ({ending})",
                                g + 1,
                                pair + 1,
                                if a_white { "first" } else { "second" }
                            ));
                            let mut all = points.lock().unwrap_or_else(|e| e.into_inner());
                            all[g] = Some(p);
                            if let Some(test) = cfg.sprt {
                                let counted = whole_pairs(&all);
                                let state = test.state(&counted);
                                let mut decided = decided.lock().unwrap_or_else(|e| e.into_inner());
                                if state.verdict.is_some() && decided.is_none() {
                                    progress(&format!(
                                        "SPRT decided after {} games: LLR {:.2}",
                                        counted.len(),
                                        state.llr
                                    ));
                                    *decided = Some(state);
                                }
                            }
                        }
                        Err(e) => return fail(e),
                    }
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    let points = points.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut r = report(&points.iter().flatten().copied().collect::<Vec<_>>());
    // The verdict stands as reached; games already under way when it was reached are in the
    // score but not in the test. Without a verdict, the test over every whole pair.
    r.sprt = cfg.sprt.map(|test| {
        decided
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .unwrap_or_else(|| test.state(&whole_pairs(&points)))
    });
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbiter_core::Color;

    #[test]
    fn elo_and_its_interval() {
        let even = report(&[1.0, 0.0, 0.5, 0.5]);
        assert_eq!((even.wins, even.draws, even.losses), (1, 2, 1));
        assert!(even.elo.0.abs() < 1e-9 && even.elo.1 < 0.0 && even.elo.2 > 0.0);
        let strong = report(&[1.0, 1.0, 1.0, 0.75]);
        assert!(strong.elo.0 > 300.0);
        assert!(strong.sprt.is_none() && !strong.to_string().contains("SPRT"));
        assert!((elo(0.75) - 190.8).abs() < 0.5);
    }

    #[test]
    fn sprt_llr_and_bounds() {
        let t = Sprt::parse("0,10").unwrap();
        assert_eq!((t.elo0, t.elo1, t.alpha, t.beta), (0.0, 10.0, 0.05, 0.05));
        let (lower, upper) = t.bounds();
        assert!((upper - 2.944).abs() < 1e-3 && (lower + 2.944).abs() < 1e-3);
        assert_eq!(t.llr(&[]), 0.0);
        // The score halfway between s0 and s1 is no evidence either way.
        let s0 = 0.5;
        let s1 = 1.0 / (1.0 + 10f64.powf(-10.0 / 400.0));
        let mid = (s0 + s1) / 2.0;
        // Points with that mean: wins and losses in proportion.
        let n = 10_000;
        let wins = (mid * n as f64).round() as usize;
        let points: Vec<f64> = (0..n).map(|i| if i < wins { 1.0 } else { 0.0 }).collect();
        assert!(t.llr(&points).abs() < 0.05, "{}", t.llr(&points));
        // Evidence grows with the games, and its sign follows the score.
        let good = [1.0, 0.5, 1.0, 0.0, 1.0, 0.5];
        let bad = [0.0, 0.5, 0.0, 1.0, 0.0, 0.5];
        assert!(t.llr(&good) > 0.0 && t.llr(&bad) < 0.0);
        assert!(t.llr(&good.repeat(10)) > t.llr(&good));
        assert_eq!(t.state(&good.repeat(60)).verdict, Some(true));
        assert_eq!(t.state(&bad.repeat(60)).verdict, Some(false));
        assert_eq!(t.state(&good).verdict, None);
        // Identical results never divide by zero and do not decide on one pair.
        assert!(t.llr(&[1.0, 1.0]).is_finite());
        assert_eq!(t.state(&[1.0, 1.0]).verdict, None);
        for bad in ["", "10", "10,0", "0,nan", "a,b", "0,inf", "0,5000"] {
            assert!(Sprt::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            whole_pairs(&[Some(1.0), Some(0.0), Some(1.0), None, None, Some(0.5)]),
            vec![1.0, 0.0]
        );
    }

    #[test]
    fn time_controls_and_clocks() {
        let tc = parse_time_control("10+0.1").unwrap();
        assert_eq!(tc, TimeControl::fischer(10_000, 100).unwrap());
        assert_eq!(
            parse_time_control(" 0.5 + 0 ").unwrap(),
            TimeControl::fischer(500, 0).unwrap()
        );
        for bad in [
            "", "10", "0+1", "-1+0", "10+-1", "x+1", "1e9+0", "NaN+0", "10+inf", "86401+0",
            "10+3601", "40/60+1", "60+1:30", "60d1", "0.0001+0",
        ] {
            let e = parse_time_control(bad).unwrap_err();
            assert!(e.starts_with("--tc"), "{bad}: {e}");
        }
        let mut c = Clocks::new(&tc);
        // White thinks 2.5 s: 7.6 s left with the increment; Black's clock is untouched.
        assert!(c.charge(Color::White.index(), 2_500));
        assert_eq!(c.left, [7_600, 10_000]);
        assert_eq!(c.go(), "wtime 7600 btime 10000 winc 100 binc 100");
        // Using exactly what is left is a flag fall, and so is any absurd time.
        assert!(!c.charge(Color::White.index(), 7_600));
        let mut c = Clocks::new(&tc);
        assert!(!c.charge(Color::Black.index(), u64::MAX));
        assert_eq!(c.go(), "wtime 10000 btime 1 winc 100 binc 100");
    }

    #[test]
    fn uci_settings_translate_the_analyze_limits_and_refuse_the_rest() {
        let args = |t: &str| t.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        let chess = Variant::Chess;
        let go = |s: &UciSettings, clocks: Option<&Clocks>| go_line(clocks, &s.limits);
        let s = uci_settings(&args("--nodes 40000 --hash 16"), chess, "--a-args", false).unwrap();
        assert_eq!(
            (s.hash, s.eval_file.as_deref(), go(&s, None).as_str()),
            (Some(16), None, "go nodes 40000")
        );
        let s = uci_settings(
            &args("--depth 5 --movetime 200 --net n.nnue"),
            chess,
            "-",
            false,
        )
        .unwrap();
        assert_eq!(
            (s.hash, s.eval_file.as_deref(), go(&s, None).as_str()),
            (None, Some("n.nnue"), "go depth 5 movetime 200")
        );
        let none = uci_settings(&[], chess, "--a-args", false).unwrap();
        assert_eq!(go(&none, None), "go nodes 20000");
        // On a clock, the times come first, and a player without limits gets none of its own.
        let clocks = Clocks::new(&parse_time_control("10+0.1").unwrap());
        let none = uci_settings(&[], chess, "--a-args", true).unwrap();
        assert_eq!(
            go(&none, Some(&clocks)),
            "go wtime 10000 btime 10000 winc 100 binc 100"
        );
        let s = uci_settings(&args("--nodes 500"), chess, "--a-args", true).unwrap();
        assert_eq!(
            go(&s, Some(&clocks)),
            "go wtime 10000 btime 10000 winc 100 binc 100 nodes 500"
        );
        let e = uci_settings(
            &args("--net n.nnue"),
            Variant::Crazyhouse,
            "--b-args",
            false,
        )
        .unwrap_err();
        assert!(e.to_string().contains("standard chess only"), "{e}");
        for bad in [
            "--net",
            "--eval-off king_safety",
            "--nodes",
            "--nodes 0",
            "--hash -1",
            "--multipv 2",
        ] {
            let e = uci_settings(&args(bad), chess, "--b-args", false).unwrap_err();
            assert!(e.to_string().contains("--b-args"), "{bad}: {e}");
        }
        // Variants UCI does not speak, and rule options, are refused before any game.
        let cfg = MatchConfig {
            variant: Variant::Glinski,
            rules: Vec::new(),
            pairs: 1,
            opening_plies: 2,
            seed: 1,
            max_plies: 10,
            concurrency: 1,
            sprt: None,
            uci: true,
            clock: None,
        };
        let engine = Player::parse("/nonexistent/arbiter", "--nodes 100");
        let e = play_match(&cfg, &engine, &Player::Greedy, &|_| {}).unwrap_err();
        assert!(e.to_string().contains("--uci"), "{e}");
        let chess = MatchConfig {
            variant: Variant::Chess,
            rules: vec!["chess960=true".into()],
            ..cfg.clone()
        };
        assert!(play_match(&chess, &engine, &Player::Greedy, &|_| {}).is_err());
        let bad_args = MatchConfig {
            rules: Vec::new(),
            ..chess
        };
        let e = play_match(
            &bad_args,
            &Player::Greedy,
            &Player::parse("/nonexistent/arbiter", "--eval-off mobility"),
            &|_| {},
        )
        .unwrap_err();
        assert!(e.to_string().contains("--b-args"), "{e}");
    }

    #[test]
    fn sprt_ends_a_lopsided_match_early() {
        let cfg = MatchConfig {
            variant: Variant::Byzantine,
            rules: Vec::new(),
            pairs: 500,
            opening_plies: 4,
            seed: 3,
            max_plies: 300,
            concurrency: 2,
            sprt: Some(Sprt::parse("0,50").unwrap()),
            uci: false,
            clock: None,
        };
        let r = play_match(&cfg, &Player::Greedy, &Player::Random, &|_| {}).unwrap();
        let t = r.sprt.expect("a test was asked for");
        assert_eq!(t.verdict, Some(true), "{r}");
        assert!(r.games < 100, "{r}");
        let r = play_match(&cfg, &Player::Random, &Player::Greedy, &|_| {}).unwrap();
        assert_eq!(r.sprt.unwrap().verdict, Some(false), "{r}");
        assert!(r.games < 100, "{r}");
    }

    #[test]
    fn greedy_against_itself_plays_legal_games_to_an_end() {
        let cfg = MatchConfig {
            variant: Variant::Glinski,
            rules: Vec::new(),
            pairs: 2,
            opening_plies: 4,
            seed: 7,
            max_plies: 60,
            concurrency: 2,
            sprt: None,
            uci: false,
            clock: None,
        };
        let lines = Mutex::new(Vec::new());
        let r = play_match(&cfg, &Player::Greedy, &Player::Greedy, &|l| {
            lines.lock().unwrap().push(l.to_owned())
        })
        .unwrap();
        assert_eq!(r.games, 4);
        assert_eq!(lines.into_inner().unwrap().len(), 4);
        // Greedy against random in Byzantine (capturing everything wins by bare king): the
        // score is counted for the right player whichever colour it has.
        let byz = MatchConfig {
            variant: Variant::Byzantine,
            max_plies: 300,
            ..cfg.clone()
        };
        let r = play_match(&byz, &Player::Greedy, &Player::Random, &|_| {}).unwrap();
        assert!(r.score >= 0.75, "{r}");
        let r = play_match(&byz, &Player::Random, &Player::Greedy, &|_| {}).unwrap();
        assert!(r.score <= 0.25, "{r}");
        assert!(
            play_match(
                &MatchConfig {
                    variant: Variant::Bughouse,
                    ..cfg
                },
                &Player::Greedy,
                &Player::Greedy,
                &|_| {}
            )
            .is_err()
        );
    }
}
