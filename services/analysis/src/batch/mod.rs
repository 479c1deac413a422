//! Batch jobs: whole games analysed position by position at a fixed per-ply limit, each move
//! classified and each player's accuracy computed (`arbiter_engine::review`); bughouse matches
//! evaluated move by move on their boards, without verdicts.
//!
//! - [`types`]: the values of jobs ([`Submission`], [`JobStatus`], [`GameResult`], …); the
//!   gRPC layer converts them to and from the wire, the batch side never sees protobuf;
//! - [`decode_job`]: a [`Submission`] checked into a [`JobSpec`] (PGN, move lists or BPGN,
//!   the per-ply limit, the caps), with the fingerprint of its content for idempotence;
//! - [`analyse_game`]: one work item, a game, analysed on the calling thread into its
//!   [`GameResult`];
//! - [`record`]: the versioned encoding of items and results in Redis ([`crate::legacy`] reads what
//!   the previous version wrote, prost-encoded);
//! - [`memory::Jobs`]: the in-process queue and result store of `arbiter serve`, with its worker
//!   threads (jobs take turns, one game each), retention and status watchers;
//! - [`redis::RedisJobs`] and [`redis::run_workers`]: the same on Redis Streams, shared by any
//!   number of service replicas and worker processes;
//! - [`JobQueue`]: whichever of the two the service was given;
//! - [`Caller`]: who a call comes from. Request ids are scoped to their caller, and a job
//!   answers only to the caller that submitted it.

use crate::caps::{Caps, MAX_DEPTH};
use crate::domain::start_position;
use crate::engines::{At, EngineChoice, EngineRegistry, Evaluator};
use crate::error::AnalysisError;
use crate::live::within;
use arbiter_core::bughouse::{BoardId, Match, Seat, read_bpgn};
use arbiter_core::pgn::{PgnLimits, read_games_with};
use arbiter_core::{AnyMove, AnyPosition, Color, GameState, Locale, Position, Variant, chess};
use arbiter_engine::analyze::AnalysisSettings;
use arbiter_engine::review::{GameLine, Judgement, PositionEval, review_game};
use arbiter_engine::score::Reported;
use arbiter_engine::{Limits, SearchOptions, TimeSource};
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::watch;

pub mod memory;
pub mod record;
pub mod redis;
pub mod remote;
pub mod types;
pub mod worker;

pub use memory::Jobs;
pub use types::{
    GameResult, GamesInput, JobState, JobStatus, ListedGame, MoveText, PlyResult, StartInput,
    Submission, Submitted, VariantInput, Verdict,
};

/// Bounds and settings of batch jobs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchConfig {
    /// Worker threads analysing games (one game each at a time). In process at least one runs;
    /// with Redis it may be 0 (the service only accepts jobs; worker processes analyse them).
    pub workers: usize,
    /// The most games in one job.
    pub max_games: usize,
    /// The most moves in one game.
    pub max_plies: usize,
    /// Jobs held at once (running or kept for their results); more are refused.
    pub max_jobs: usize,
    /// Positions held at once, all jobs together (each costs its result's memory, about a
    /// hundred bytes); a job that would pass it is refused.
    pub max_positions: u64,
    /// How long a job and its results are kept after it ends (or after submission while it
    /// runs, renewed as it progresses).
    pub ttl: Duration,
    /// The most games one GetJobResults answers.
    pub page: usize,
    /// With Redis: how often a WatchJob stream reads the job's status.
    pub watch_poll: Duration,
    /// With Redis: how the service's own workers take items (their number is `workers`).
    pub queue: redis::WorkerConfig,
    /// How long a remote worker's lease on a game lasts (`AcquireWork`): past it, the game
    /// returns to the queue.
    pub work_lease: Duration,
}

impl Default for BatchConfig {
    fn default() -> BatchConfig {
        BatchConfig {
            workers: 1,
            max_games: 1000,
            max_plies: 1024,
            max_jobs: 1000,
            max_positions: 2_000_000,
            ttl: Duration::from_secs(24 * 3600),
            page: 50,
            watch_poll: Duration::from_millis(250),
            queue: redis::WorkerConfig::default(),
            work_lease: Duration::from_millis(DEFAULT_WORK_LEASE_MS),
        }
    }
}

/// The default length of a remote worker's lease, ms (`--work-lease-ms`).
pub const DEFAULT_WORK_LEASE_MS: u64 = 300_000;

/// The longest lease `--work-lease-ms` gives (a day), ms: longer values are cut to it.
pub const MAX_WORK_LEASE_MS: u64 = 86_400_000;

impl BatchConfig {
    /// The length of a remote worker's lease: `work_lease`, at most [`MAX_WORK_LEASE_MS`].
    pub fn lease_length(&self) -> Duration {
        self.work_lease
            .min(Duration::from_millis(MAX_WORK_LEASE_MS))
    }
}

/// The time now, Unix ms.
pub(crate) fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Whether a job asking for `engine` (empty: the built-in one) is for a worker running
/// `engines` (empty: the built-in engine alone).
pub(crate) fn engine_wanted(engine: &str, engines: &[String]) -> bool {
    let engine = if engine.is_empty() { "arbiter" } else { engine };
    if engines.is_empty() {
        engine == "arbiter"
    } else {
        engines.iter().any(|e| e == engine)
    }
}

/// The longest `request_id`.
pub const MAX_REQUEST_ID_BYTES: usize = 128;

/// Who a batch call comes from: the namespace of its request ids and the owner of the jobs it
/// submits. A job answers only to its owner; to any other caller it is `NOT_FOUND`, exactly as
/// an unknown id, and another caller's request id names nothing.
///
/// A caller is one of two kinds, in separate namespaces:
///
/// - **a key's client** ([`Caller::client`]): with API keys configured, the client name of the
///   key the call presented (`arbiter_kit::access::Client::name`). Its `x-client-id`, if any,
///   is ignored, and no `x-client-id` can name it: the two kinds are hashed under different
///   domain prefixes, so equal names are two callers;
/// - **an `x-client-id` caller** ([`Caller::new`]): in development mode (no keys), the call's
///   `x-client-id` metadata (all its bytes, not cut), or the one anonymous caller without one.
///
/// It is held as a SHA-256 digest (with a domain prefix), so it has a fixed size in memory and
/// in Redis keys whatever the name, and every replica and build derives the same one. The
/// peer's address is not used: it changes with every connection, and a client that reconnected
/// would lose its jobs.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Caller([u8; 32]);

impl Caller {
    /// The caller named `client_id` (its `x-client-id`, development mode); the anonymous caller
    /// when it is absent or empty. Never equal to a key's client ([`Caller::client`]).
    pub fn new(client_id: Option<&[u8]>) -> Caller {
        let mut h = Sha256::new();
        h.update(b"arbiter.analysis.v1 caller\0");
        match client_id.filter(|id| !id.is_empty()) {
            None => h.update([0]),
            Some(id) => {
                h.update([1]);
                h.update(id);
            }
        }
        Caller(h.finalize().into())
    }

    /// The caller that is the API key client `name` (the keys file's `client`): every key of
    /// that client is this caller. Hashed under its own domain prefix, so that no
    /// `x-client-id` ([`Caller::new`]), whatever its bytes, is the same caller.
    pub fn client(name: &str) -> Caller {
        let mut h = Sha256::new();
        h.update(b"arbiter.analysis.v1 key client\0");
        h.update(name.as_bytes());
        Caller(h.finalize().into())
    }

    /// The caller without an `x-client-id`.
    pub fn anonymous() -> Caller {
        Caller::new(None)
    }

    /// The caller's digest in hex (64 characters): a job's owner in Redis.
    pub fn hex(&self) -> String {
        arbiter_kit::hex(&self.0)
    }

    /// The key of `request_id` in this caller's namespace: 64 hex characters (a SHA-256 of the
    /// caller and the id), whatever the id's length.
    pub fn request_key(&self, request_id: &str) -> String {
        let mut h = Sha256::new();
        h.update(b"arbiter.analysis.v1 request\0");
        h.update(self.0);
        h.update(request_id.as_bytes());
        arbiter_kit::hex(&h.finalize())
    }
}

impl std::fmt::Debug for Caller {
    /// A prefix of the digest: enough to tell callers apart in logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Caller({}…)", &self.hex()[..12])
    }
}

/// `NOT_FOUND` for job `id`: unknown, expired, or another caller's (the same answer for all).
fn not_found(id: &str) -> AnalysisError {
    AnalysisError::JobNotFound(id.to_owned())
}

/// Random bits in a job id.
pub const JOB_ID_RANDOM_BITS: usize = 128;

/// A new job id: `job-` and 32 lowercase hex digits, [`JOB_ID_RANDOM_BITS`] bits from the
/// operating system's random source, so that an id cannot be guessed from another (ownership
/// is still checked on every call: an id is not a credential). Ids are opaque to clients and
/// stores alike: ids of earlier versions (`job-<16 hex digits>-<n>`) are still found.
///
/// # Errors
/// `UNAVAILABLE` when the system has no random source.
pub fn new_job_id() -> Result<String, AnalysisError> {
    let mut bits = [0u8; JOB_ID_RANDOM_BITS / 8];
    getrandom::fill(&mut bits)
        .map_err(|e| AnalysisError::Unavailable(format!("no random source for a job id: {e}")))?;
    Ok(format!("job-{}", arbiter_kit::hex(&bits)))
}

/// One game of a job.
#[derive(Clone, Debug)]
pub enum Game {
    /// A game on one board: chess, crazyhouse, Glinski, Byzantine.
    Line(GameSpec),
    /// A bughouse match.
    Bughouse(BughouseSpec),
}

/// A bughouse match of a job.
#[derive(Clone, Debug)]
pub struct BughouseSpec {
    /// Both boards at its start.
    pub start: Match,
    /// Its moves in the order played, each with its seat, legal in turn.
    pub moves: Vec<(Seat, chess::Move)>,
}

/// A game on one board.
#[derive(Clone, Debug)]
pub struct GameSpec {
    /// Its start.
    pub start: AnyPosition,
    /// Its moves, legal in turn.
    pub moves: Vec<AnyMove>,
}

/// A checked job.
#[derive(Clone, Debug)]
pub struct JobSpec {
    /// The games.
    pub games: Vec<Game>,
    /// Each position's search limit (a depth or a node count).
    pub limits: Limits,
    /// The transposition table of each search, MiB.
    pub hash_mib: usize,
    /// The engine of every search, by the server's name; empty: the built-in engine
    /// (`arbiter`).
    pub engine: String,
}

impl JobSpec {
    /// Positions to analyse, all games together (see [`Game::positions`]).
    pub fn positions(&self) -> u64 {
        self.games.iter().map(Game::positions).sum()
    }
}

fn bughouse(field: String) -> AnalysisError {
    AnalysisError::invalid(
        field,
        "bughouse matches are sent as BPGN (the bpgn field), with both boards",
    )
}

/// Checks a submission: the request id, the games, the per-ply limit. Returns the request id,
/// the job, and a fingerprint of the request's content (the same content gives the same
/// fingerprint), to tell a retry from another request under the same id.
pub fn decode_job(
    req: &Submission,
    caps: &Caps,
    config: &BatchConfig,
) -> Result<(String, JobSpec, u64), AnalysisError> {
    let id = req.request_id.as_str();
    if id.is_empty() || id.len() > MAX_REQUEST_ID_BYTES || !id.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(AnalysisError::invalid(
            "request_id",
            format!("1 to {MAX_REQUEST_ID_BYTES} printable ASCII characters are required"),
        ));
    }
    let limits = match (req.per_ply_depth, req.per_ply_nodes) {
        (0, 0) | (1.., 1..) => {
            return Err(AnalysisError::invalid(
                "per_ply",
                "set exactly one of depth and nodes",
            ));
        }
        (d, 0) if d > MAX_DEPTH => {
            return Err(AnalysisError::invalid(
                "per_ply.depth",
                format!("{d} is out of range (1 to {MAX_DEPTH})"),
            ));
        }
        (d, 0) => Limits::depth(d),
        (_, n) => {
            within("per_ply.nodes", n, caps.max_nodes, "nodes")?;
            Limits::nodes(n)
        }
    };
    let games = match &req.games {
        None => {
            return Err(AnalysisError::invalid(
                "games",
                "one of pgn, move_lists and bpgn is required",
            ));
        }
        Some(GamesInput::Pgn(text)) => pgn_games(text, config)?,
        Some(GamesInput::MoveLists(list)) => listed_games(list, config)?,
        Some(GamesInput::Bpgn(text)) => bpgn_games(text, config)?,
    };
    if games.is_empty() {
        return Err(AnalysisError::invalid("games", "the job has no game"));
    }
    let fingerprint = req.fingerprint;
    Ok((
        id.to_owned(),
        JobSpec {
            games,
            limits,
            hash_mib: caps.hash_mib,
            engine: String::new(),
        },
        fingerprint,
    ))
}

fn pgn_games(text: &str, config: &BatchConfig) -> Result<Vec<Game>, AnalysisError> {
    let limits = PgnLimits {
        max_games: config.max_games,
        max_plies_per_game: config.max_plies,
        ..PgnLimits::default()
    };
    let mut games =
        read_games_with(text, &limits).map_err(|e| AnalysisError::invalid("pgn", e.to_string()))?;
    games
        .iter_mut()
        .enumerate()
        .map(|(i, g)| {
            let fail = |e: &dyn std::fmt::Display| {
                AnalysisError::invalid("pgn", format!("game {}: {e}", i + 1))
            };
            if g.variant().map_err(|e| fail(&e))? == Variant::Bughouse {
                return Err(bughouse("pgn".into()));
            }
            let game = g
                .validate(Locale::English, Locale::English)
                .map_err(|e| fail(&e))?;
            Ok(Game::Line(GameSpec {
                start: game.start().clone(),
                moves: game.moves().to_vec(),
            }))
        })
        .collect()
}

fn listed_games(list: &[ListedGame], config: &BatchConfig) -> Result<Vec<Game>, AnalysisError> {
    within(
        "move_lists.games",
        list.len() as u64,
        config.max_games as u64,
        "games",
    )?;
    list.iter()
        .enumerate()
        .map(|(i, g)| {
            listed_game(g, &format!("move_lists.games[{i}]"), config.max_plies).map(Game::Line)
        })
        .collect()
}

/// BPGN matches, each replayed on both boards (reserves flowing between them).
fn bpgn_games(text: &str, config: &BatchConfig) -> Result<Vec<Game>, AnalysisError> {
    let games = read_bpgn(text).map_err(|e| AnalysisError::invalid("bpgn", e.to_string()))?;
    if games.len() > config.max_games {
        return Err(AnalysisError::invalid(
            "bpgn",
            format!("{} games; at most {}", games.len(), config.max_games),
        ));
    }
    games
        .into_iter()
        .enumerate()
        .map(|(i, mut g)| {
            let fail = |e: &dyn std::fmt::Display| {
                AnalysisError::invalid("bpgn", format!("game {}: {e}", i + 1))
            };
            if g.moves.len() > config.max_plies {
                return Err(fail(&format!(
                    "{} moves; at most {}",
                    g.moves.len(),
                    config.max_plies
                )));
            }
            // Checks every move (with the file's own numbering in errors), then replays them.
            g.validate(Locale::English).map_err(|e| fail(&e))?;
            let start = match g.tag("FEN") {
                Some(bfen) => Match::from_bfen(bfen).map_err(|e| fail(&e))?,
                None => Match::new(),
            };
            let moves = g
                .moves
                .iter()
                .map(|mv| (Seat::new(mv.board, mv.color), mv.san.as_str()));
            bughouse_line(start, moves).map_err(|e| fail(&e))
        })
        .collect()
}

/// A match from its start and its moves as (seat, text), every move checked in turn.
fn bughouse_line<'a>(
    start: Match,
    moves: impl Iterator<Item = (Seat, &'a str)>,
) -> Result<Game, String> {
    let mut m = start.clone();
    let moves = moves
        .map(|(seat, text)| {
            let chosen = m
                .check(seat, text, m.ply(seat.board), Locale::English)
                .map_err(|e| format!("{text}: {e}"))?;
            m.play_checked(seat, chosen, Locale::English);
            Ok((seat, chosen))
        })
        .collect::<Result<_, String>>()?;
    Ok(Game::Bughouse(BughouseSpec { start, moves }))
}

/// A seat as one letter, as BPGN numbers moves: `A` White on A, `a` Black on A, `B`, `b`.
fn seat_letter(seat: Seat) -> char {
    match seat.color {
        Color::White => seat.board.letter(),
        Color::Black => seat.board.letter().to_ascii_lowercase(),
    }
}

/// Bughouse moves as stored (each its seat's letter, then its text) as (seat, text).
fn seated_moves<S: AsRef<str>>(moves: &[S]) -> Result<Vec<(Seat, &str)>, String> {
    moves
        .iter()
        .map(|text| {
            let text = text.as_ref();
            let mut chars = text.chars();
            let seat = chars
                .next()
                .and_then(seat_of)
                .ok_or_else(|| format!("{text}: no seat letter"))?;
            Ok((seat, chars.as_str()))
        })
        .collect()
}

fn seat_of(letter: char) -> Option<Seat> {
    Some(match letter {
        'A' => Seat::new(BoardId::A, Color::White),
        'a' => Seat::new(BoardId::A, Color::Black),
        'B' => Seat::new(BoardId::B, Color::White),
        'b' => Seat::new(BoardId::B, Color::Black),
        _ => return None,
    })
}

/// One listed game (named `field` in errors), of at most `max_plies` moves.
pub(crate) fn listed_game(
    g: &ListedGame,
    field: &str,
    max_plies: usize,
) -> Result<GameSpec, AnalysisError> {
    let start = start_position(g.start.as_ref(), &format!("{field}.start"))?;
    if start.variant() == Variant::Bughouse {
        return Err(bughouse(format!("{field}.start.variant")));
    }
    within(
        &format!("{field}.moves"),
        g.moves.len() as u64,
        max_plies as u64,
        "moves",
    )?;
    let mut state = GameState::new(start.clone());
    let moves = g
        .moves
        .iter()
        .enumerate()
        .map(|(j, text)| {
            state
                .play_text(text, g.notation, Locale::English)
                .map_err(|e| AnalysisError::invalid(format!("{field}.moves[{j}]"), e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(GameSpec { start, moves })
}

/// The most moves a work item read back from a queue may hold (its job's own cap was checked
/// at submission; this bounds what a corrupt or foreign item can cost a worker).
pub const MAX_ITEM_PLIES: usize = 1 << 16;

impl Game {
    /// The game's variant (bughouse for a match).
    pub fn variant(&self) -> Variant {
        match self {
            Game::Line(g) => g.start.variant(),
            Game::Bughouse(_) => Variant::Bughouse,
        }
    }

    /// Positions to analyse: one more than the moves on one board (every position of the
    /// line); two per move in bughouse (the mover's board before it, for the best move, and
    /// after it, for the evaluation: the partner's captures change the reserves in between).
    pub fn positions(&self) -> u64 {
        match self {
            Game::Line(g) => g.moves.len() as u64 + 1,
            Game::Bughouse(b) => 2 * b.moves.len() as u64,
        }
    }

    /// The game as a queue's work item, in the store's own versioned encoding
    /// ([`record::encode_item`]): its start and its moves in UCI (a bughouse match's start is
    /// its BFEN, each move prefixed by its seat's letter: `Ae2e4`, `bP@f6`).
    pub fn to_item(&self) -> String {
        record::encode_item(self)
    }

    /// A work item read back (in this version's encoding or the previous one's): decoded and
    /// replayed, every move legal in turn.
    ///
    /// # Errors
    /// What cannot be decoded or played, in words.
    pub fn from_item(item: &[u8]) -> Result<Game, String> {
        record::decode_item(item)
    }
}

/// A move of `pos` in both notations (SAN in English).
fn move_text(pos: &AnyPosition, m: AnyMove) -> MoveText {
    MoveText::of(pos, m, Locale::English)
}

fn white_score(e: &PositionEval) -> Option<Reported> {
    e.reported.map(|(r, _)| {
        let flip = |n: i32| {
            if e.turn == arbiter_core::Color::White {
                n
            } else {
                -n
            }
        };
        match r {
            Reported::Cp(cp) => Reported::Cp(flip(cp)),
            Reported::Mate(n) => Reported::Mate(flip(n)),
        }
    })
}

fn verdict_of(j: Option<Judgement>) -> Verdict {
    match j {
        None => Verdict::Good,
        Some(Judgement::Inaccuracy) => Verdict::Inaccuracy,
        Some(Judgement::Mistake) => Verdict::Mistake,
        Some(Judgement::Blunder) => Verdict::Blunder,
    }
}

/// The evaluation of one position of a batch job by `evaluator`, counted in
/// `arbiter_analysis_searches_total{kind="batch"}` and `arbiter_analysis_nodes_total`, in a
/// span of its own (a child of the worker's game span, when there is one).
fn evaluate_position(
    evaluator: &mut Evaluator,
    at: At<'_>,
    settings: &AnalysisSettings,
    stop: &AtomicBool,
    time: &dyn TimeSource,
) -> Result<PositionEval, String> {
    let span = tracing::info_span!(
        "analysis search",
        otel.name = "analysis.search",
        variant = %at.pos.variant(),
        engine = evaluator.engine_id(),
        nodes = tracing::field::Empty
    );
    let _entered = span.enter();
    let eval = evaluator.evaluate(at, settings, stop, time)?;
    if eval.reported.is_some() {
        crate::metrics::searched("batch", eval.nodes);
        span.record("nodes", eval.nodes);
    }
    Ok(eval)
}

/// How [`evaluate_game`] evaluates one position: `(pos, history, start, moves)` where
/// `history` holds the repetition keys of the positions before `pos` (empty in bughouse),
/// and `pos` is `start` with `moves` played (in bughouse, `start` is `pos` itself and `moves`
/// is empty: a board's evaluation ignores the partner's game). An `Err` ends the game's
/// evaluation with that error.
pub type Evaluate<'a> =
    dyn FnMut(&AnyPosition, &[u64], &AnyPosition, &[AnyMove]) -> Result<PositionEval, String> + 'a;

/// Evaluates every position of `game` in the documented order (see [`Game::positions`] and
/// the proto's `WorkItem`): on one board the start and then the position after each move,
/// each with the moves before it; in bughouse, for each move the mover's board before it and
/// after it. `on_position` is called after each. `None` when `stop` was raised before the
/// end; `Some(Err)` with the first error `evaluate` returned.
pub fn evaluate_game(
    game: &Game,
    _spec: &JobSpec,
    stop: &AtomicBool,
    on_position: &mut dyn FnMut(),
    evaluate: &mut Evaluate<'_>,
) -> Option<Result<Vec<PositionEval>, String>> {
    let mut evals = Vec::with_capacity(game.positions() as usize);
    match game {
        Game::Line(g) => {
            let line = GameLine::replay(&g.start, &g.moves);
            for (i, p) in line.positions.iter().enumerate() {
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
                match evaluate(p, line.history(i), &g.start, &g.moves[..i]) {
                    Ok(e) => evals.push(e),
                    Err(e) => return Some(Err(e)),
                }
                on_position();
            }
        }
        Game::Bughouse(b) => {
            let mut m = b.start.clone();
            for &(seat, mv) in &b.moves {
                let before = AnyPosition::Crazyhouse(*m.board(seat.board));
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
                match evaluate(&before, &[], &before, &[]) {
                    Ok(e) => evals.push(e),
                    Err(e) => return Some(Err(e)),
                }
                on_position();
                m.play_checked(seat, mv, Locale::English);
                let after = AnyPosition::Crazyhouse(*m.board(seat.board));
                if stop.load(Ordering::Relaxed) {
                    return None;
                }
                match evaluate(&after, &[], &after, &[]) {
                    Ok(e) => evals.push(e),
                    Err(e) => return Some(Err(e)),
                }
                on_position();
            }
        }
    }
    if stop.load(Ordering::Relaxed) {
        return None;
    }
    Some(Ok(evals))
}

/// The result of game `index` from the evaluations of its positions (as [`evaluate_game`]
/// gives them, one per position), by the engine `engine_id`: on one board every move judged
/// and each player's accuracy; in bughouse each move evaluated, unjudged.
///
/// # Panics
/// When `evals` does not hold one evaluation per position.
pub fn game_result(
    index: usize,
    game: &Game,
    evals: &[PositionEval],
    engine_id: &str,
) -> GameResult {
    assert_eq!(
        evals.len() as u64,
        game.positions(),
        "one evaluation per position"
    );
    match game {
        Game::Line(g) => line_result(index, g, evals, engine_id),
        Game::Bughouse(b) => bughouse_result(index, b, evals, engine_id),
    }
}

/// Analyses game `index` of a job on this thread with the job's engine among `engines`: every
/// position ([`evaluate_game`], `on_position` called after each), then the review
/// ([`game_result`]). `None` when `stop` was raised before the end. A game the engine failed
/// on (an external engine that crashed twice, or one this process does not run) is recorded
/// with its error.
pub fn analyse_game(
    index: usize,
    game: &Game,
    spec: &JobSpec,
    engines: &EngineRegistry,
    stop: &AtomicBool,
    time: &dyn TimeSource,
    on_position: &mut dyn FnMut(),
) -> Option<GameResult> {
    let failed = |e: String| GameResult {
        index: index as u32,
        error: format!("analysis failed: {e}"),
        ..GameResult::default()
    };
    let Some(engine) = engines.by_name(&spec.engine) else {
        return Some(failed(format!(
            "this worker runs no engine named {:?} (give it the service's --engine flags)",
            spec.engine
        )));
    };
    match evaluations(game, spec, &engine, stop, time, on_position)? {
        Ok((evals, id)) => Some(game_result(index, game, &evals, &id)),
        Err(_) if stop.load(Ordering::Relaxed) => None,
        Err(e) => Some(failed(e)),
    }
}

/// Evaluates every position of `game` ([`evaluate_game`]) with `engine`: the built-in engine on
/// this thread's tables (kept from game to game, cleared for each), or one process of an
/// external engine held for the game (told `ucinewgame` first), at `spec`'s per-ply limit and
/// table size. Returns the evaluations and the engine's own name and version; `None` when `stop`
/// was raised before the end.
pub fn evaluations(
    game: &Game,
    spec: &JobSpec,
    engine: &EngineChoice,
    stop: &AtomicBool,
    time: &dyn TimeSource,
    on_position: &mut dyn FnMut(),
) -> Option<Result<(Vec<PositionEval>, String), String>> {
    let settings = AnalysisSettings {
        limits: spec.limits,
        options: SearchOptions {
            multipv: 1,
            move_overhead_ms: 0,
        },
        hash_mib: spec.hash_mib,
    };
    let mut evaluator = match Evaluator::for_game(engine, spec.hash_mib, stop) {
        Ok(e) => e,
        Err(_) if stop.load(Ordering::Relaxed) => return None,
        Err(e) => return Some(Err(e)),
    };
    let evals = evaluate_game(
        game,
        spec,
        stop,
        on_position,
        &mut |pos, history, start, moves| {
            let at = At {
                pos,
                history,
                start,
                moves,
            };
            evaluate_position(&mut evaluator, at, &settings, stop, time)
        },
    )?;
    Some(evals.map(|evals| (evals, evaluator.engine_id().to_owned())))
}

/// [`evaluations`] with the built-in engine, without the engine's id.
pub fn builtin_evaluations(
    game: &Game,
    spec: &JobSpec,
    stop: &AtomicBool,
    time: &dyn TimeSource,
    on_position: &mut dyn FnMut(),
) -> Option<Result<Vec<PositionEval>, String>> {
    evaluations(game, spec, &EngineChoice::Builtin, stop, time, on_position)
        .map(|r| r.map(|(evals, _)| evals))
}

/// A bughouse match's result: for each move, the mover's board before it (the engine's best
/// move there) and after it (the evaluation). Moves are not classified and no accuracy is
/// computed: a board's evaluation ignores the partner's game. Repetition is not looked for
/// across the boards' histories.
fn bughouse_result(
    index: usize,
    game: &BughouseSpec,
    evals: &[PositionEval],
    engine_id: &str,
) -> GameResult {
    let mut m = game.start.clone();
    let mut plies = Vec::with_capacity(game.moves.len());
    for (k, &(seat, mv)) in game.moves.iter().enumerate() {
        let before = AnyPosition::Crazyhouse(*m.board(seat.board));
        let (best, eval) = (&evals[2 * k], &evals[2 * k + 1]);
        m.play_checked(seat, mv, Locale::English);
        let played = AnyMove::Chess(mv);
        let uci = before.move_to_uci(played);
        plies.push(PlyResult {
            played: move_text(&before, played),
            eval_after: white_score(eval),
            verdict: Verdict::Unjudged,
            better: best.best.clone().filter(|b| *b != uci).and_then(|b| {
                let m = before
                    .parse_move(&b, arbiter_core::Notation::Uci, Locale::English)
                    .ok()?;
                Some(move_text(&before, m))
            }),
            board: seat.board.letter().to_string(),
        });
    }
    GameResult {
        index: index as u32,
        plies,
        engine: engine_id.to_owned(),
        ..GameResult::default()
    }
}

/// A game on one board's result: its review from the evaluations of every position.
fn line_result(
    index: usize,
    game: &GameSpec,
    evals: &[PositionEval],
    engine_id: &str,
) -> GameResult {
    let line = GameLine::replay(&game.start, &game.moves);
    let positions = &line.positions;
    let review = review_game(evals, &line.played);
    let plies = review
        .moves
        .iter()
        .enumerate()
        .map(|(i, verdict)| {
            let before = &positions[i];
            PlyResult {
                played: move_text(before, game.moves[i]),
                eval_after: white_score(&evals[i + 1]),
                verdict: verdict_of(verdict.judgement),
                better: verdict.better.as_deref().and_then(|uci| {
                    let m = before
                        .parse_move(uci, arbiter_core::Notation::Uci, Locale::English)
                        .ok()?;
                    Some(move_text(before, m))
                }),
                board: String::new(),
            }
        })
        .collect();
    let [w, b] = review.counts.map(|c| c.map(|n| n as u32));
    GameResult {
        index: index as u32,
        start_eval: white_score(&evals[0]),
        plies,
        white_accuracy: review.accuracy.white,
        black_accuracy: review.accuracy.black,
        white_counts: w,
        black_counts: b,
        error: String::new(),
        engine: engine_id.to_owned(),
    }
}

/// Where batch jobs are queued and their results kept: this process ([`Jobs`], the embedded
/// default) or Redis Streams ([`redis::RedisJobs`], shared by replicas and worker processes).
/// Both answer the same way; the handlers do not know which they talk to.
#[derive(Clone, Debug)]
pub enum JobQueue {
    /// In process.
    Memory(Jobs),
    /// On Redis.
    Redis(std::sync::Arc<redis::RedisJobs>),
}

impl JobQueue {
    /// Queues a checked job for `caller` under its `request_id`, or answers the job it already
    /// queued under it (`duplicate` set) when its content (`fingerprint`) is the same;
    /// `ALREADY_EXISTS` when it is not. Request ids are scoped to their caller: another
    /// caller's id names nothing here.
    pub async fn submit(
        &self,
        caller: &Caller,
        request_id: String,
        spec: JobSpec,
        fingerprint: u64,
    ) -> Result<Submitted, AnalysisError> {
        let games = spec.games.len();
        let submitted = match self {
            JobQueue::Memory(jobs) => jobs.submit(caller, request_id, spec, fingerprint),
            JobQueue::Redis(jobs) => jobs.submit(caller, &request_id, &spec, fingerprint).await,
        };
        if let Ok(s) = &submitted
            && !s.duplicate
        {
            crate::metrics::job_submitted(games);
        }
        submitted
    }

    /// The status of `caller`'s job; `NOT_FOUND` when it is unknown, expired, or another
    /// caller's.
    pub async fn status(&self, caller: &Caller, id: &str) -> Result<JobStatus, AnalysisError> {
        match self {
            JobQueue::Memory(jobs) => jobs.status(caller, id),
            JobQueue::Redis(jobs) => jobs.status(caller, id).await,
        }
    }

    /// A receiver of the status of `caller`'s job as it changes; its sender is dropped when
    /// the job is forgotten (expired).
    pub async fn watch(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<watch::Receiver<JobStatus>, AnalysisError> {
        match self {
            JobQueue::Memory(jobs) => jobs.watch(caller, id),
            JobQueue::Redis(jobs) => jobs.watch(caller, id).await,
        }
    }

    /// The finished games of `caller`'s job among `limit` (0: the page size; at most the page
    /// size) from `offset`, with the job's status.
    pub async fn results(
        &self,
        caller: &Caller,
        id: &str,
        offset: usize,
        limit: usize,
    ) -> Result<(JobStatus, Vec<GameResult>), AnalysisError> {
        match self {
            JobQueue::Memory(jobs) => jobs.results(caller, id, offset, limit),
            JobQueue::Redis(jobs) => jobs.results(caller, id, offset, limit).await,
        }
    }

    /// Cancels `caller`'s job: games not started are dropped, running ones stop.
    pub async fn cancel(&self, caller: &Caller, id: &str) -> Result<JobStatus, AnalysisError> {
        match self {
            JobQueue::Memory(jobs) => jobs.cancel(caller, id),
            JobQueue::Redis(jobs) => jobs.cancel(caller, id).await,
        }
    }
}

impl JobQueue {
    /// The refusal id of remote worker `worker`, when it is refused for work.
    ///
    /// # Errors
    /// `UNAVAILABLE` when the store cannot be reached.
    pub async fn work_refusal(
        &self,
        worker: &remote::WorkerId,
    ) -> Result<Option<String>, AnalysisError> {
        match self {
            JobQueue::Memory(jobs) => Ok(jobs.refusal(worker)),
            JobQueue::Redis(jobs) => jobs.refusal(worker).await,
        }
    }

    /// Lifts refusal `id` of `worker` (nothing if it is refused under another id).
    ///
    /// # Errors
    /// `UNAVAILABLE` when the store cannot be reached.
    pub async fn lift_work_refusal(
        &self,
        worker: &remote::WorkerId,
        id: &str,
    ) -> Result<(), AnalysisError> {
        match self {
            JobQueue::Memory(jobs) => {
                jobs.lift(worker, id);
                Ok(())
            }
            JobQueue::Redis(jobs) => jobs.lift(worker, id).await,
        }
    }

    /// Refuses `worker` for work under a fresh refusal id and returns its live leases to the
    /// queue: the id and how many leases went back.
    ///
    /// # Errors
    /// `UNAVAILABLE` when the store cannot be reached.
    pub async fn refuse_worker(
        &self,
        worker: &remote::WorkerId,
    ) -> Result<(String, u64), AnalysisError> {
        match self {
            JobQueue::Memory(jobs) => jobs.refuse(worker),
            JobQueue::Redis(jobs) => jobs.refuse(worker).await,
        }
    }

    /// A game for remote worker `worker`, of a job asking for one of `engines` (empty: the
    /// built-in engine), under a lease; waits up to `wait` for one; `None` when none came.
    ///
    /// # Errors
    /// `UNAVAILABLE` when the store cannot be reached or the server is shutting down.
    pub async fn acquire(
        &self,
        worker: &remote::WorkerId,
        engines: &[String],
        wait: Duration,
    ) -> Result<Option<remote::WorkItem>, AnalysisError> {
        let until = tokio::time::Instant::now() + wait;
        loop {
            let item = match self {
                JobQueue::Memory(jobs) => jobs.acquire(worker, engines)?,
                JobQueue::Redis(jobs) => jobs.acquire(worker, engines, until).await?,
            };
            if let Some(item) = item {
                crate::metrics::lease_granted();
                return Ok(Some(item));
            }
            let now = tokio::time::Instant::now();
            if now >= until {
                return Ok(None);
            }
            // In process a look is a lock; on Redis, three round trips; on a cluster, two for
            // each of its slot groups.
            let poll = match self {
                JobQueue::Memory(_) => Duration::from_millis(25),
                JobQueue::Redis(jobs) if jobs.is_cluster() => Duration::from_millis(500),
                JobQueue::Redis(_) => Duration::from_millis(100),
            };
            tokio::time::sleep((until - now).min(poll)).await;
        }
    }

    /// What lease `lease_id` of `worker` holds.
    ///
    /// # Errors
    /// `FAILED_PRECONDITION` for a lease not held; `UNAVAILABLE`.
    pub async fn leased(
        &self,
        worker: &remote::WorkerId,
        lease_id: &str,
    ) -> Result<remote::Leased, AnalysisError> {
        match self {
            JobQueue::Memory(jobs) => jobs.leased(worker, lease_id),
            JobQueue::Redis(jobs) => jobs.leased(worker, lease_id).await,
        }
    }

    /// Records the checked result of lease `lease_id` of `worker` once: `true` when nothing
    /// changed (a retry, or the game recorded already).
    ///
    /// # Errors
    /// `FAILED_PRECONDITION` for a lease not held; `UNAVAILABLE`.
    pub async fn record_work(
        &self,
        worker: &remote::WorkerId,
        lease_id: &str,
        result: GameResult,
        positions: u64,
    ) -> Result<bool, AnalysisError> {
        match self {
            JobQueue::Memory(jobs) => jobs.record_work(worker, lease_id, result, positions),
            JobQueue::Redis(jobs) => jobs.record_work(worker, lease_id, &result, positions).await,
        }
    }
}

/// The page size `limit` asks for: 0 means the whole page, and no more than the page.
fn page_size(limit: usize, page: usize) -> usize {
    if limit == 0 { page } else { limit.min(page) }
}

/// A job's status from its counts.
#[allow(clippy::too_many_arguments)]
fn status_of(
    id: &str,
    games: u64,
    games_done: u64,
    positions: u64,
    positions_done: u64,
    cancelled: bool,
    started: bool,
    expires_at_unix_ms: i64,
) -> JobStatus {
    let state = if games_done >= games {
        JobState::Done
    } else if cancelled {
        JobState::Cancelled
    } else if started {
        JobState::Running
    } else {
        JobState::Queued
    };
    JobStatus {
        job_id: id.to_owned(),
        state,
        games: games as u32,
        games_done: games_done as u32,
        positions,
        positions_done,
        expires_at_unix_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bughouse_job(text: &str) -> Result<JobSpec, AnalysisError> {
        let req = Submission {
            request_id: "r".into(),
            games: Some(GamesInput::Bpgn(text.into())),
            per_ply_depth: 1,
            per_ply_nodes: 0,
            fingerprint: 0,
        };
        decode_job(&req, &Caps::default(), &BatchConfig::default()).map(|(_, spec, _)| spec)
    }

    #[test]
    fn callers_are_their_whole_client_id_and_scope_request_ids() {
        let anonymous = Caller::anonymous();
        assert_eq!(Caller::new(None), anonymous);
        assert_eq!(
            Caller::new(Some(b"")),
            anonymous,
            "an empty id names nobody"
        );
        let x = Caller::new(Some(b"client-x"));
        assert_ne!(x, anonymous);
        assert_eq!(x, Caller::new(Some(b"client-x")));
        assert_ne!(x, Caller::new(Some(b"client-y")));
        // Long ids are not cut: a shared prefix is not a shared caller.
        let long = |tail: &[u8]| Caller::new(Some(&[b"p".repeat(500).as_slice(), tail].concat()));
        assert_ne!(long(b"1"), long(b"2"));
        // Request keys: bounded, and the same id of two callers is two keys.
        let key = x.request_key(&"r".repeat(MAX_REQUEST_ID_BYTES));
        assert!(key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(x.request_key("id"), anonymous.request_key("id"));
        assert_ne!(x.request_key("id"), x.request_key("id2"));
        assert_eq!(
            x.request_key("id"),
            Caller::new(Some(b"client-x")).request_key("id")
        );
        assert_eq!(x.hex().len(), 64);
        assert_ne!(x.hex(), anonymous.hex());
    }

    #[test]
    fn key_clients_are_a_namespace_of_their_own() {
        let alice = Caller::client("alice");
        assert_eq!(
            alice,
            Caller::client("alice"),
            "every key of a client is one caller"
        );
        assert_ne!(alice, Caller::client("bob"));
        // No x-client-id, whatever its bytes, is a key's client.
        assert_ne!(alice, Caller::new(Some(b"alice")));
        assert_ne!(alice, Caller::new(Some(b"key:alice")));
        assert_ne!(alice, Caller::new(Some(b"key client\0alice")));
        assert_ne!(Caller::client(""), Caller::anonymous());
        assert_ne!(Caller::client(""), Caller::new(Some(b"")));
        assert_ne!(
            alice.request_key("r"),
            Caller::new(Some(b"alice")).request_key("r")
        );
    }

    #[test]
    fn job_ids_carry_128_random_bits() {
        let ids: std::collections::HashSet<String> =
            (0..64).map(|_| new_job_id().unwrap()).collect();
        assert_eq!(ids.len(), 64);
        for id in &ids {
            let hex = id.strip_prefix("job-").unwrap();
            assert_eq!(hex.len(), JOB_ID_RANDOM_BITS / 4, "{id}");
            assert!(
                hex.bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
            );
        }
    }

    #[test]
    fn bughouse_items_round_trip_and_bad_ones_are_refused() {
        let spec =
            bughouse_job("1A. e4 1a. d5 1B. d4 2A. exd5 1b. Nf6 2B. c4 2b. P@e4 *\n").unwrap();
        assert_eq!(spec.positions(), 14);
        let Game::Bughouse(original) = &spec.games[0] else {
            panic!("a bughouse game");
        };
        let item = spec.games[0].to_item();
        let Ok(Game::Bughouse(back)) = Game::from_item(item.as_bytes()) else {
            panic!("the item reads back");
        };
        assert_eq!(back.moves, original.moves);
        assert_eq!(back.start, original.start);
        let raw = record::unpack(item.strip_prefix(record::ITEM_TAG).unwrap()).unwrap();
        assert_eq!(raw[0], "bughouse");
        assert_eq!(raw[3 + 1], "ad7d5");
        assert_eq!(raw[3 + 6], "bP@e4");
        let bad = |start: &str, moves: &[&str]| {
            let mut fields = vec!["bughouse", start, ""];
            fields.extend(moves);
            let item = format!("{}{}", record::ITEM_TAG, record::pack(&fields));
            Game::from_item(item.as_bytes()).unwrap_err()
        };
        let bfen = Match::new().to_bfen();
        assert!(bad(&bfen, &["Xe2e4"]).contains("no seat letter"));
        assert!(
            bad(&bfen, &["ae7e5"]).contains("e7e5"),
            "black cannot move first"
        );
        assert!(bad(&bfen, &[""]).contains("no seat letter"));
        assert!(bad("not a bfen", &[]).contains("item.start"));
        assert!(
            Game::from_item(b"\xff\xff")
                .unwrap_err()
                .contains("cannot decode")
        );
    }

    #[test]
    fn bughouse_jobs_name_the_game_and_keep_the_caps() {
        let e =
            bughouse_job("[Event \"1\"]\n\n1A. e4 *\n\n[Event \"2\"]\n\n1A. e4 1a. e5 1B. Ke2 *\n")
                .unwrap_err();
        assert!(e.to_string().contains("game 2"), "{e}");
        let e = bughouse_job(&"[Event \"x\"]\n\n1A. e4 *\n\n".repeat(1001)).unwrap_err();
        assert!(e.to_string().contains("at most 1000"), "{e}");
    }
}
