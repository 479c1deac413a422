//! The `arbiter` command's logic, separate from argument parsing so tests can drive it directly.
//!
//! Contract (other tools depend on it):
//! - `perft`: optional `MOVE nodes` lines (with `--divide`), then the total alone on the last line.
//! - `moves`: every legal move, one per line, in UCI.
//! - `play`: the resulting position string.
//! - `status`: one line, `ongoing` or `<score> <reason>`, plus the draws that can be claimed.
//! - `pgn`: normalised PGN, or an error naming the game and ply.
//! - `bpgn`: normalised BPGN (bughouse), or an error naming the game and move.
//!
//! Every error is a [`CliError`]; `main` prints it to stderr and exits with its
//! [`CliError::exit_code`]: 2 for bad input, 1 when the command could not finish otherwise.

pub mod nnue;
pub mod review;
pub mod selfplay;
pub mod texel;
pub mod uci;

use arbiter_core::pgn::read_games;
use arbiter_core::{
    AnyPosition, Game, Locale, Notation, Position, RuleOptions, TextStyle, Variant,
};
use std::fmt;

/// Why a command failed; its message says what and where.
#[derive(Debug)]
pub enum CliError {
    /// Bad input: an option or argument, a position, a move, a game, a file's content.
    Input {
        /// Where: the option (`--depth`), the argument (`FILE`), the move or game (`move 3
        /// ('e9')`), or empty when the problem names it.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// A file, stream or socket could not be read, written or opened.
    Io {
        /// Which, and for what (`--out: games.pgn`, `reading stdin`).
        what: String,
        /// The system's error.
        error: std::io::Error,
    },
    /// Something the command runs failed: an engine process, the server, the runtime, a
    /// game that broke its own rules.
    Failed(String),
}

impl CliError {
    /// Bad input at `field` (see [`CliError::Input`]).
    pub fn input(field: impl Into<String>, problem: impl fmt::Display) -> CliError {
        CliError::Input {
            field: field.into(),
            problem: problem.to_string(),
        }
    }

    /// An I/O failure of `what`.
    pub fn io(what: impl Into<String>, error: std::io::Error) -> CliError {
        CliError::Io {
            what: what.into(),
            error,
        }
    }

    /// Something the command runs failed.
    pub fn failed(what: impl fmt::Display) -> CliError {
        CliError::Failed(what.to_string())
    }

    /// The process's exit code for this error: 2 for bad input (the documented contract), 1
    /// for the rest.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Input { .. } => 2,
            CliError::Io { .. } | CliError::Failed(_) => 1,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Input { field, problem } if field.is_empty() => f.write_str(problem),
            CliError::Input { field, problem } => write!(f, "{field}: {problem}"),
            CliError::Io { what, error } => write!(f, "{what}: {error}"),
            CliError::Failed(what) => f.write_str(what),
        }
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CliError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// The position named by `--variant`, `--position` (the variant's start when absent) and
/// `--rule NAME=VALUE` options.
pub fn load_position(
    variant: Variant,
    position: Option<&str>,
    rules: &[String],
) -> Result<AnyPosition, CliError> {
    let options = RuleOptions::parse(rules.iter().map(String::as_str))
        .map_err(|e| CliError::input("--rule", format!("{e}")))?;
    AnyPosition::with_rules(variant, position, &options).map_err(|e| match e.field() {
        "rules" => CliError::input("--rule", format!("{e}")),
        "variant" => CliError::input("--variant", format!("{e}")),
        _ => CliError::input("--position", format!("{e}")),
    })
}

/// [`load_position`] read leniently (`--lenient`): castling rights that do not fit the board
/// and impossible en passant squares are dropped, and the corrections returned for the caller
/// to report. An empty `position` is the variant's start.
pub fn load_position_lenient(
    variant: Variant,
    position: &str,
    rules: &[String],
) -> Result<(AnyPosition, Vec<arbiter_core::chess::Correction>), CliError> {
    let options = RuleOptions::parse(rules.iter().map(String::as_str))
        .map_err(|e| CliError::input("--rule", format!("{e}")))?;
    AnyPosition::with_rules_lenient(variant, position, &options).map_err(|e| match e.field() {
        "rules" => CliError::input("--rule", format!("{e}")),
        _ => CliError::input("--position", format!("{e}")),
    })
}

/// What `arbiter analyze` was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnalyzeRequest {
    /// Depth limit in plies.
    pub depth: Option<u32>,
    /// Thinking time in ms.
    pub movetime_ms: Option<u64>,
    /// Node limit.
    pub nodes: Option<u64>,
    /// Lines to report.
    pub multipv: usize,
    /// Transposition table size in MiB.
    pub hash_mib: usize,
}

/// The largest `--depth` `analyze` accepts.
pub const MAX_ANALYZE_DEPTH: u32 = 100;

/// Plays `moves` on `pos`, pushing onto `history` the repetition key of each position a move is
/// played from: the history the engine's search takes. On a move that cannot be played, its index
/// and why; the moves before it stay played.
pub(crate) fn play_line<P: Position, S: AsRef<str>>(
    pos: &mut P,
    history: &mut Vec<u64>,
    moves: &[S],
    notation: Notation,
) -> Result<(), (usize, arbiter_core::MoveError)> {
    for (i, text) in moves.iter().enumerate() {
        let m = pos
            .parse_move(text.as_ref(), notation, Locale::English)
            .map_err(|e| (i, e))?;
        history.push(pos.repetition_key());
        pos.play_unchecked(m);
    }
    Ok(())
}

/// The limits and sizes of an `analyze` request, checked (both engines' paths).
fn check_request(request: &AnalyzeRequest) -> Result<(), CliError> {
    if request.depth.is_none() && request.movetime_ms.is_none() && request.nodes.is_none() {
        return Err(CliError::input(
            "",
            "a limit is required: --depth, --movetime or --nodes",
        ));
    }
    if let Some(d) = request.depth
        && !(1..=MAX_ANALYZE_DEPTH).contains(&d)
    {
        return Err(CliError::input(
            "--depth",
            format!("{d} is out of range (1 to {MAX_ANALYZE_DEPTH})"),
        ));
    }
    if request.movetime_ms == Some(0) {
        return Err(CliError::input("--movetime", "must be at least 1 ms"));
    }
    if request.nodes == Some(0) {
        return Err(CliError::input("--nodes", "must be at least 1"));
    }
    if !(1..=64).contains(&request.multipv) {
        return Err(CliError::input(
            "--multipv",
            format!("{} is out of range (1 to 64)", request.multipv),
        ));
    }
    if !(1..=65_536).contains(&request.hash_mib) {
        return Err(CliError::input(
            "--hash",
            format!("{} is out of range (1 to 65536 MiB)", request.hash_mib),
        ));
    }
    Ok(())
}

/// `arbiter analyze`: plays `moves` (UCI or SAN) from `pos`, then analyses the position reached
/// with the positions on the way as its history (so the search sees repetitions). Writes an
/// `info` line to `progress` per finished line of each iteration, then returns the last line,
/// `bestmove MOVE` (`bestmove (none)` without a legal move), evaluating as `evaluation` says
/// (see [`arbiter_engine::nnue`]).
pub fn analyze(
    pos: &AnyPosition,
    moves: &[String],
    request: &AnalyzeRequest,
    evaluation: arbiter_engine::nnue::Evaluation,
    progress: &mut dyn std::io::Write,
) -> Result<String, CliError> {
    use arbiter_engine::analyze::{AnalysisSettings, Engines};
    use arbiter_engine::{Limits, SearchOptions, SystemTime};
    check_request(request)?;
    let settings = AnalysisSettings {
        limits: Limits {
            depth: request.depth,
            nodes: request.nodes,
            movetime_ms: request.movetime_ms,
            ..Limits::default()
        },
        options: SearchOptions {
            multipv: request.multipv,
            move_overhead_ms: 0,
        },
        hash_mib: request.hash_mib,
    };
    let mut reached = pos.clone();
    let mut history = Vec::with_capacity(moves.len());
    play_line(&mut reached, &mut history, moves, Notation::Auto)
        .map_err(|(i, e)| CliError::input(format!("move {} ('{}')", i + 1, moves[i]), e))?;
    let pos = &reached;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut failed = None;
    let mut engines = Engines::new(request.hash_mib).with_evaluation(evaluation);
    let result = engines.analyze(
        pos,
        &history,
        &settings,
        &stop,
        &SystemTime::new(),
        &mut |p| {
            if failed.is_none()
                && let Err(e) = writeln!(progress, "{p}").and_then(|()| progress.flush())
            {
                failed = Some(e);
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        },
    );
    if let Some(e) = failed
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err(CliError::io("writing the analysis", e));
    }
    Ok(match result.best {
        Some(m) => format!("bestmove {m}\n"),
        None => "bestmove (none)\n".to_owned(),
    })
}

/// `arbiter analyze --engine SPEC`: as [`analyze`], but the search runs on the external UCI
/// engine `spec` names (`NAME=PATH[,KEY=VALUE]...`, see [`arbiter_uci_client::spec`]) instead
/// of the built-in one. `request.hash_mib` becomes the engine's `Hash` unless the spec sets
/// `hash`. The engine's `info` lines go to `progress` in the built-in engine's format, its
/// moves converted to the core's coordinate notation and checked legal; the returned last
/// line is `bestmove MOVE` (`bestmove (none)` without a legal move), as for the built-in
/// engine.
pub fn analyze_with_engine(
    pos: &AnyPosition,
    moves: &[String],
    request: &AnalyzeRequest,
    spec: &str,
    progress: &mut dyn std::io::Write,
) -> Result<String, CliError> {
    use arbiter_uci_client::{EnginePool, EngineSpec, Search, UciError};
    use std::sync::atomic::{AtomicBool, Ordering};
    check_request(request)?;
    let mut spec = EngineSpec::parse(spec).map_err(|e| CliError::input("--engine", e))?;
    let variant = pos.variant();
    if matches!(
        variant,
        Variant::Glinski | Variant::Byzantine | Variant::ByzantineCitadel
    ) {
        return Err(CliError::input(
            "--engine",
            format!("{variant} is played only by the built-in engine (leave out --engine)"),
        ));
    }
    if spec.hash_mib.is_none() {
        spec.hash_mib = Some(u32::try_from(request.hash_mib).unwrap_or(u32::MAX));
    }
    // The line, checked and played, before any engine starts.
    let mut line = Vec::with_capacity(moves.len());
    let mut reached = pos.clone();
    for (i, text) in moves.iter().enumerate() {
        let m = reached
            .parse_move(text, Notation::Auto, Locale::English)
            .map_err(|e| CliError::input(format!("move {} ('{text}')", i + 1), e))?;
        reached.play_unchecked(m);
        line.push(m);
    }
    let name = spec.name.clone();
    let pool = EnginePool::start(spec).map_err(|e| match e {
        UciError::Unsupported { .. } => CliError::input("--engine", e),
        other => CliError::failed(other),
    })?;
    if !pool.supports(variant) {
        let plays: Vec<&str> = pool.variants().iter().map(|v| v.name()).collect();
        return Err(CliError::input(
            "--engine",
            format!(
                "engine '{name}' ({}) does not play {variant} (it plays: {})",
                pool.id(),
                plays.join(", ")
            ),
        ));
    }
    let search = Search {
        start: pos,
        moves: &line,
        limits: arbiter_engine::Limits {
            depth: request.depth,
            nodes: request.nodes,
            movetime_ms: request.movetime_ms,
            ..arbiter_engine::Limits::default()
        },
        multipv: request.multipv,
    };
    let stop = AtomicBool::new(false);
    let mut failed = None;
    let result = pool.analyze(&search, &stop, &mut |p| {
        if failed.is_none()
            && let Err(e) = writeln!(progress, "{p}").and_then(|()| progress.flush())
        {
            failed = Some(e);
            stop.store(true, Ordering::Relaxed);
        }
    });
    if let Some(e) = failed
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err(CliError::io("writing the analysis", e));
    }
    let result = result.map_err(CliError::failed)?;
    Ok(match result.best {
        Some(m) => format!("bestmove {m}\n"),
        None => "bestmove (none)\n".to_owned(),
    })
}

/// `arbiter perft`.
pub fn perft(pos: &AnyPosition, depth: u32, divide: bool) -> String {
    let mut out = String::new();
    let total = if divide {
        let split = pos.perft_divide(depth);
        for (m, n) in &split.moves {
            out.push_str(&format!("{m} {n}\n"));
        }
        split.total
    } else {
        pos.perft(depth)
    };
    out.push_str(&format!("{total}\n"));
    out
}

/// `arbiter show`: the position after `moves` as a text diagram with its pieces written in
/// `style` (letters, or Unicode symbols for `--symbols`), or as SVG with the last move
/// highlighted (`svg`; the style does not apply to the picture).
pub fn show(
    pos: AnyPosition,
    moves: &[String],
    locale: Locale,
    svg: bool,
    style: TextStyle,
) -> Result<String, CliError> {
    let game = replay(pos, moves, locale)?;
    let pos = game.position();
    Ok(if svg {
        pos.render_svg(game.moves().last().copied())
    } else {
        pos.render_text_with(style)
    })
}

/// `arbiter moves`.
pub fn moves(pos: &AnyPosition) -> String {
    let mut lines: Vec<String> = pos
        .legal_moves()
        .iter()
        .map(|&m| pos.move_to_uci(m))
        .collect();
    lines.sort();
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// Plays `moves` (UCI or SAN) from `pos` as a game, stopping at the first bad move.
pub fn replay(
    pos: AnyPosition,
    moves: &[String],
    locale: Locale,
) -> Result<Game<AnyPosition>, CliError> {
    let mut game = Game::new(pos);
    for (i, text) in moves.iter().enumerate() {
        game.play_text(text, Notation::Auto, locale)
            .map_err(|e| CliError::input(format!("move {} ('{text}')", i + 1), e))?;
    }
    Ok(game)
}

/// `arbiter play`.
pub fn play(pos: AnyPosition, moves: &[String], locale: Locale) -> Result<String, CliError> {
    let game = replay(pos, moves, locale)?;
    Ok(format!("{}\n", game.position().to_text()))
}

/// `arbiter status`: the game state after `moves` (history counts for repetition).
pub fn status(pos: AnyPosition, moves: &[String], locale: Locale) -> Result<String, CliError> {
    let game = replay(pos, moves, locale)?;
    Ok(format!("{}\n", game.summary()))
}

/// `arbiter pgn`: validates every game of `input` and returns it normalised.
pub fn pgn(input: &str, read_locale: Locale, write_locale: Locale) -> Result<String, CliError> {
    let mut games = read_games(input).map_err(|e| CliError::input("PGN syntax error", e))?;
    let mut out = String::new();
    for (i, game) in games.iter_mut().enumerate() {
        // Only the checked record is printed: null moves may stand on the main line too.
        game.normalise(read_locale, write_locale)
            .map_err(|e| CliError::input(format!("game {}", i + 1), e))?;
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&game.to_string());
    }
    Ok(out)
}

/// `arbiter bpgn`: reads BPGN, plays every game's moves in order on both boards (reserves
/// flowing between them), and prints the games as strict BPGN.
pub fn bpgn(input: &str, locale: Locale) -> Result<String, CliError> {
    let mut games =
        arbiter_core::bughouse::read_bpgn(input).map_err(|e| CliError::input("BPGN", e))?;
    let mut out = String::new();
    for (i, game) in games.iter_mut().enumerate() {
        game.validate(locale)
            .map_err(|e| CliError::input(format!("game {}", i + 1), e))?;
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&game.to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start() -> AnyPosition {
        load_position(Variant::Chess, None, &[]).unwrap()
    }

    #[test]
    fn perft_last_line_is_total() {
        let out = perft(&start(), 2, true);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 21);
        assert_eq!(*lines.last().unwrap(), "400");
        assert_eq!(perft(&start(), 3, false), "8902\n");
    }

    #[test]
    fn play_and_status() {
        let moves: Vec<String> = ["e4", "e7e5", "Qh5", "Nc6", "Bc4", "Nf6", "Qxf7#"]
            .map(String::from)
            .into();
        assert_eq!(
            status(start(), &moves, Locale::English).unwrap(),
            "1-0 checkmate\n"
        );
        let out = play(start(), &moves[..2], Locale::English).unwrap();
        assert_eq!(
            out,
            "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2\n"
        );
        let e = play(start(), &["e5".to_owned()], Locale::English).unwrap_err();
        assert!(e.to_string().contains("move 1 ('e5')"), "{e}");
    }

    #[test]
    fn status_lists_claims() {
        let cycle: Vec<String> = "Nf3 Nf6 Ng1 Ng8 Nf3 Nf6 Ng1 Ng8"
            .split(' ')
            .map(String::from)
            .collect();
        assert_eq!(
            status(start(), &cycle, Locale::English).unwrap(),
            "ongoing; claimable: threefold-repetition\n"
        );
        let stalemate =
            load_position(Variant::Chess, Some("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"), &[]).unwrap();
        assert_eq!(
            status(stalemate, &[], Locale::English).unwrap(),
            "1/2-1/2 stalemate\n"
        );
    }

    #[test]
    fn pgn_errors_name_game_and_ply() {
        let e = pgn(
            "1. e4 e5 *\n\n1. d4 d5 2. Qd3 Kd7 3. Qxh7 Ke6 4. Qh8 Nf6 5. Kd3 *",
            Locale::English,
            Locale::English,
        )
        .unwrap_err();
        assert_eq!(e.to_string().split(':').next(), Some("game 2"));
        assert!(e.to_string().contains("ply 9"), "{e}");
    }
}
