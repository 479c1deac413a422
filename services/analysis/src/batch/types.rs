//! The values of batch jobs, in the domain's terms: a submission as the caller sent it
//! ([`Submission`]), a job's status ([`JobStatus`], [`JobState`]), the answer to a submission
//! ([`Submitted`]) and a game's result ([`GameResult`], [`PlyResult`]). The gRPC layer
//! (`crate::convert`) turns them to and from the wire; the store keeps them in its own
//! encoding (`super::record`).

pub use crate::domain::{MoveText, StartInput, VariantInput};
use arbiter_core::Notation;
use arbiter_engine::score::Reported;

/// A job's submission as the caller sent it, not yet checked (see [`super::decode_job`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Submission {
    /// The caller's id for the request (idempotence: a retry names the same job).
    pub request_id: String,
    /// The games, in one of the accepted forms; `None` when none was given.
    pub games: Option<GamesInput>,
    /// The per-ply search limit: a depth, or a node count (0: unset).
    pub per_ply_depth: u32,
    /// The per-ply node count (0: unset).
    pub per_ply_nodes: u64,
    /// A fingerprint of the request's content without its id: the same content gives the same
    /// fingerprint, in every build (it tells a retry from another request under the same id).
    pub fingerprint: u64,
}

/// The games of a submission, as sent.
#[derive(Clone, Debug, PartialEq)]
pub enum GamesInput {
    /// PGN text (one or more games on one board).
    Pgn(String),
    /// Games as a start and a list of moves each.
    MoveLists(Vec<ListedGame>),
    /// BPGN text (bughouse matches).
    Bpgn(String),
}

/// One game given as a start and its moves.
#[derive(Clone, Debug, PartialEq)]
pub struct ListedGame {
    /// Its start; `None` when the request gave none.
    pub start: Option<StartInput>,
    /// Its moves, as text.
    pub moves: Vec<String>,
    /// How the moves are written.
    pub notation: Notation,
}

/// Where a job stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum JobState {
    /// No game has started.
    #[default]
    Queued,
    /// Games are being analysed.
    Running,
    /// Every game has its result.
    Done,
    /// Cancelled before its end.
    Cancelled,
}

impl JobState {
    /// Whether the job has ended (done or cancelled).
    pub fn ended(self) -> bool {
        matches!(self, JobState::Done | JobState::Cancelled)
    }
}

/// A job's status.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobStatus {
    /// The job's id.
    pub job_id: String,
    /// Where it stands.
    pub state: JobState,
    /// Its games.
    pub games: u32,
    /// Games with a result.
    pub games_done: u32,
    /// Positions to analyse, all games together.
    pub positions: u64,
    /// Positions analysed.
    pub positions_done: u64,
    /// When the job and its results will be forgotten, in Unix ms (renewed as it progresses).
    pub expires_at_unix_ms: i64,
}

/// The answer to a submission.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submitted {
    /// The job's status.
    pub status: JobStatus,
    /// Whether the job was queued before under the same request id (a retry).
    pub duplicate: bool,
}

/// How a move was judged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Not judged (bughouse moves).
    #[default]
    Unjudged,
    /// No worse than an inaccuracy's threshold.
    Good,
    /// An inaccuracy.
    Inaccuracy,
    /// A mistake.
    Mistake,
    /// A blunder.
    Blunder,
}

/// One move of a game's result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlyResult {
    /// The move played.
    pub played: MoveText,
    /// The evaluation after it, from White's side (none when the search found none).
    pub eval_after: Option<Reported>,
    /// How it was judged.
    pub verdict: Verdict,
    /// The engine's better move, when it preferred another.
    pub better: Option<MoveText>,
    /// The board it was played on (`A` or `B`), in bughouse; empty otherwise.
    pub board: String,
}

/// A game's result: each move evaluated and judged, each player's accuracy and counts; or why
/// it failed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GameResult {
    /// The game's index in its job.
    pub index: u32,
    /// The evaluation of the start, from White's side.
    pub start_eval: Option<Reported>,
    /// Each move.
    pub plies: Vec<PlyResult>,
    /// White's accuracy, percent (none without moves of White's, and in bughouse).
    pub white_accuracy: Option<f64>,
    /// Black's accuracy, percent.
    pub black_accuracy: Option<f64>,
    /// White's inaccuracies, mistakes and blunders.
    pub white_counts: [u32; 3],
    /// Black's inaccuracies, mistakes and blunders.
    pub black_counts: [u32; 3],
    /// Why the game could not be analysed; empty when it was.
    pub error: String,
    /// The engine that evaluated the game, by its own name and version (`Arbiter 1.2.0`);
    /// empty when unknown (results recorded by earlier versions, failed games).
    pub engine: String,
}
