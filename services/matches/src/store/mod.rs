//! Where matches live: the [`MatchStore`] trait, its in-process implementation
//! ([`memory::MemoryStore`], for `arbiter serve` and unit tests) and its Redis implementation
//! ([`redis::RedisStore`]). Both keep the schema of [`crate::record`], apply every change as
//! one atomic step, and run the same test suite.
//!
//! Every change is guarded: a move by the board's ply and the match's nonce, a claim by the
//! board's ply, every change by the match not being over. A guard that fails changes nothing
//! and returns the record as it stands, so the caller can judge the request again on fresh data
//! without another read.

pub mod memory;
pub mod redis;

use crate::record::{LastMove, Record, Remembered, RequestId};
use arbiter_clocked::Deadlines;
use arbiter_core::Color;
use arbiter_core::bughouse::{BoardId, MatchOutcome};
use arbiter_core::clock::{PressPlan, Side};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The store could not be used (Redis unreachable, a script error), or what it holds cannot be
/// read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The store cannot be reached; nothing was applied.
    Unavailable(String),
    /// A stored record cannot be decoded.
    Corrupt(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Unavailable(e) => write!(f, "match store unavailable: {e}"),
            StoreError::Corrupt(e) => write!(f, "match store: {e}"),
        }
    }
}

impl std::error::Error for StoreError {}

impl From<arbiter_clocked::Unavailable> for StoreError {
    fn from(e: arbiter_clocked::Unavailable) -> Self {
        StoreError::Unavailable(e.0)
    }
}

impl From<crate::record::Corrupt> for StoreError {
    fn from(e: crate::record::Corrupt) -> Self {
        StoreError::Corrupt(e.to_string())
    }
}

/// How long matches are kept.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Retention {
    /// The lifetime of a live match, refreshed by every change (longer for a correspondence
    /// game: [`Retention::live_ttl`]).
    pub ttl: Duration,
    /// How long a finished match stays readable.
    pub grace: Duration,
}

impl Retention {
    /// How long `record` lives without a change while it goes on: the configured lifetime, or
    /// for a correspondence game (days per move) its whole allowance and a day more, so that a
    /// player may take all their time and the server still ends the game on time.
    pub fn live_ttl(&self, record: &Record) -> Duration {
        match record
            .control
            .as_ref()
            .filter(|c| c.days_per_move().is_some())
        {
            Some(c) => self
                .ttl
                .max(Duration::from_millis(c.longest_turn_ms() + 86_400_000)),
            None => self.ttl,
        }
    }
}

impl Default for Retention {
    fn default() -> Retention {
        Retention {
            ttl: Duration::from_secs(2 * 60 * 60),
            grace: Duration::from_secs(10 * 60),
        }
    }
}

/// How a single board's repetition history changes with a move.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum HistoryUpdate {
    /// A reversible move: the new position's key joins the history.
    Append(u64),
    /// An irreversible move: the history restarts with the new position's key.
    Reset(u64),
}

/// A reserve change of a bughouse move: a piece letter (`QRBNP`) of a seat's reserve.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ReserveDelta {
    /// The board of the reserve's holder.
    pub board: BoardId,
    /// The holder's colour (and the piece's).
    pub side: Color,
    /// The piece, upper case.
    pub piece: char,
}

impl ReserveDelta {
    /// The piece as its FEN letter in the holder's colour.
    pub fn letter(&self) -> char {
        match self.side {
            Color::White => self.piece.to_ascii_uppercase(),
            Color::Black => self.piece.to_ascii_lowercase(),
        }
    }
}

/// One move, as the store applies it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MoveCommit {
    /// The match's nonce the move was judged against (a match re-created under the same id
    /// refuses it).
    pub nonce: String,
    /// The board.
    pub board: BoardId,
    /// The board's ply the move was judged against.
    pub expected_ply: u32,
    /// The board's position string after the move (bughouse: without the reserve).
    pub position: String,
    /// Single board: the history change.
    pub history: Option<HistoryUpdate>,
    /// Bughouse: the piece a drop takes from the mover's reserve (refused if absent).
    pub take: Option<ReserveDelta>,
    /// Bughouse: the unit a capture sends to the partner's reserve.
    pub give: Option<ReserveDelta>,
    /// The move, for the board's `last:` field (the store sets its acceptance time).
    pub last: LastMove,
    /// The mover's side of the match (in bughouse its team, White for team 1): the move declines
    /// the other side's standing draw offer.
    pub side: Color,
    /// The move event line without its last item, the board's position after the move, which
    /// the store appends as it stands after the step (a bughouse board with its reserves then).
    pub move_event: String,
    /// The outcome, when the move ends the match.
    pub end: Option<MatchOutcome>,
    /// The request's id, if it has one: a commit whose id is remembered is not applied
    /// ([`MoveResult::Done`]); an applied one is remembered, in its scope's window.
    pub request: Option<RequestId>,
    /// The clock press that goes with the move, when the match has clocks.
    pub clock: Option<ClockPress>,
}

/// A board clock's press, as the store applies it atomically with the move, at its own time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClockPress {
    /// The board clock's stored fields (phase, white, black) the plan was made from: a clock
    /// changed since (a pause, time added) refuses the commit as stale.
    pub expected: [String; 3],
    /// The press, to apply at the store's time ([`PressPlan::apply`]).
    pub plan: PressPlan,
    /// Who presses.
    pub mover: Color,
    /// The mover's clock after the move, except the remaining time and quota that the press
    /// computes (move counts and stage).
    pub after: Side,
    /// `Some(window)` when the next turn is the opponent's untimed first move (it must come
    /// within `window` ms); `None` when the clock runs.
    pub opening_window: Option<u64>,
    /// The simple delay of each stage, to stop a running clock (charging its turn) when the
    /// move ends the match.
    pub delays: Vec<u64>,
}

/// A change of clocks decided by the caller at the store's time (a pause, a resume, time added,
/// a flag or a no-show), applied only if every clock it replaces is still as the caller saw it
/// and the timing holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClockCommit {
    /// The match's nonce the change was judged against.
    pub nonce: String,
    /// The clocks replaced.
    pub clocks: Vec<ClockChange>,
    /// When the change may apply.
    pub timing: Timing,
    /// Events to append (clock snapshots; the end event follows from `end`).
    pub events: Vec<String>,
    /// The end of the match (a flag or a no-show), if the change ends it.
    pub end: Option<MatchOutcome>,
    /// The request's id, if any (remembered once applied).
    pub request: Option<RequestId>,
}

/// One board clock replaced by a [`ClockCommit`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClockChange {
    /// The board.
    pub board: BoardId,
    /// Its stored fields (phase, white, black) as judged.
    pub expected: [String; 3],
    /// The clock after the change.
    pub clock: arbiter_core::clock::Clock,
}

/// The timing condition of a [`ClockCommit`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Timing {
    /// Only while no deadline of the match has passed (a pause, time added).
    Live,
    /// Only once this deadline (Unix ms) has passed (ending on time).
    Due(u64),
}

/// What a move commit did. Every answer carries the record as it stands after the step.
#[derive(Clone, Debug, PartialEq)]
pub enum MoveResult {
    /// Applied.
    Applied(Arc<Record>),
    /// A guard failed (the board is not at the expected ply, the match was re-created, or a
    /// dropped piece is no longer in the reserve): nothing changed.
    Stale(Arc<Record>),
    /// The match is over: nothing changed.
    Over(Arc<Record>),
    /// The request's id is remembered (by this request, or reused by another): nothing
    /// changed.
    Done(Remembered, Arc<Record>),
    /// A deadline of the match passed before the move came (the mover's flag, or in bughouse
    /// any flag of the match): nothing changed; the match is to be ended on time.
    Late(Arc<Record>),
    /// No such match (or it expired).
    Missing,
}

/// An ending decided by a player (resignation, claim), as the store applies it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndCommit {
    /// The match's nonce the request was judged against.
    pub nonce: String,
    /// The boards and the plies they were judged at (a claim: its board; an abort: every
    /// board): a move since on any of them refuses the commit as stale. Empty for a
    /// resignation, which holds whatever was played.
    pub guard: Vec<(BoardId, u32)>,
    /// The outcome.
    pub outcome: MatchOutcome,
    /// The request's id, if it has one (remembered once applied).
    pub request: Option<RequestId>,
    /// The simple delay of each stage of the match's time control (to stop running clocks).
    pub delays: Vec<u64>,
}

/// A draw offer, as the store applies it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OfferCommit {
    /// The match's nonce the request was judged against.
    pub nonce: String,
    /// The offering side (bughouse: White for team 1).
    pub side: Color,
    /// The outcome if the other side's offer stands (a draw by agreement).
    pub agreed: MatchOutcome,
    /// The request's id, if it has one (remembered once applied).
    pub request: Option<RequestId>,
    /// The simple delay of each stage of the match's time control (to stop running clocks).
    pub delays: Vec<u64>,
}

/// A side's standing draw offer declined by the other side, as the store applies it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclineCommit {
    /// The match's nonce the request was judged against.
    pub nonce: String,
    /// The side whose offer is declined (bughouse: White for team 1).
    pub offerer: Color,
    /// The request's id, if it has one (remembered once applied).
    pub request: Option<RequestId>,
}

/// A takeback proposal, its refusal, or the takeback itself, as the store applies it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TakebackCommit {
    /// The match's nonce the request was judged against.
    pub nonce: String,
    /// The board's ply it was judged at: a move since refuses it as stale.
    pub ply: u32,
    /// The stored proposal as judged (side, ply; `None`: none stored): anything else refuses
    /// it as stale.
    pub expected: Option<(Color, u32)>,
    /// What it does.
    pub action: TakebackAction,
    /// The request's id, if it has one (remembered once applied).
    pub request: Option<RequestId>,
}

/// What a [`TakebackCommit`] does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TakebackAction {
    /// The side proposes to take back (the proposal stands at the commit's ply).
    Propose(Color),
    /// The proposal is declined (removed).
    Decline,
    /// The proposal is accepted: the board goes back.
    Accept(Box<Undo>),
}

/// A board taken back to an earlier ply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Undo {
    /// The position string then.
    pub position: String,
    /// The ply then.
    pub ply: u32,
    /// The move that led there (none at ply 0).
    pub last: Option<LastMove>,
    /// The repetition history then.
    pub history: Vec<u64>,
    /// The board's clock, as judged and after the takeback (with clocks).
    pub clock: Option<ClockChange>,
    /// The takeback event, then the clock snapshot's (with clocks).
    pub events: Vec<String>,
}

/// What an end, offer or decline commit did.
#[derive(Clone, Debug, PartialEq)]
pub enum ChangeResult {
    /// Applied (for an offer already standing: nothing new, answered the same, and the
    /// request's id is not remembered).
    Applied(Arc<Record>),
    /// A guard failed: nothing changed.
    Stale(Arc<Record>),
    /// The match is over: nothing changed.
    Over(Arc<Record>),
    /// The request's id is remembered (by this request, or reused by another): nothing
    /// changed.
    Done(Remembered, Arc<Record>),
    /// A deadline of the match had passed: nothing changed; the match is to be ended on time.
    Late(Arc<Record>),
    /// No such match.
    Missing,
}

/// Most chat entries (messages and deletions) one match holds.
pub const MAX_CHAT_ENTRIES: u64 = 2_000;
/// Most chat messages one seat posts in a match.
pub const MAX_CHAT_PER_SEAT: u64 = 300;
/// A seat posts at most this many messages within [`CHAT_WINDOW_MS`].
pub const CHAT_BURST: usize = 5;
/// The window of the chat rate limit, in ms.
pub const CHAT_WINDOW_MS: u64 = 10_000;

/// Most matches a player's index keeps (the newest); older entries are dropped.
pub const MAX_PLAYER_MATCHES: usize = 1_000;
/// How long a player's index is kept after their latest match was created (Redis).
pub const PLAYER_INDEX_TTL: Duration = Duration::from_secs(30 * 24 * 3_600);

/// A place in a player's index: when the match was created (Unix ms) and its id. Listing goes
/// from the newest; a page resumes after the last place it returned.
pub type IndexPlace = (u64, String);

/// A chat message, as the store appends it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChatPost {
    /// The match's nonce the post was judged against (a match created again refuses it).
    pub nonce: String,
    /// The message (its `id` and `at` are set by the store).
    pub message: crate::record::ChatMessage,
    /// Whether the scope's count and rate limits apply (a seat's; the platform's posts are
    /// bounded by the match's total only).
    pub limited: bool,
    /// The request id under which the post is remembered (field, fingerprint): a retry is
    /// answered with the message it posted.
    pub request: Option<(String, String)>,
}

/// What a chat post or deletion did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChatResult {
    /// Posted (or deleted): the message as stored.
    Done(crate::record::ChatMessage),
    /// The request id was used before for this request: the message it posted.
    Duplicate(crate::record::ChatMessage),
    /// The request id was used before for another request.
    Reused,
    /// The scope posted [`CHAT_BURST`] messages within the window: retry after this many ms.
    TooFast(u64),
    /// The scope has posted [`MAX_CHAT_PER_SEAT`] messages.
    ScopeFull,
    /// The match holds [`MAX_CHAT_ENTRIES`] entries.
    Full,
    /// Deletion: no such message (or not of the channel named).
    NoMessage,
    /// The match was created again since the post was judged.
    Stale,
    /// No such match.
    Missing,
}

/// A creation.
#[derive(Clone, Debug, PartialEq)]
pub enum CreateResult {
    /// The match was created.
    Created(Arc<Record>),
    /// A match with that id exists (the caller compares its `spec`).
    Exists(Arc<Record>),
    /// The store holds its maximum of matches.
    Full(usize),
}

/// Storage for matches. Implementations apply each change atomically.
pub trait MatchStore: Send + Sync + 'static {
    /// Creates `record` (with no events) unless its id is taken.
    fn create(
        &self,
        record: &Record,
    ) -> impl Future<Output = Result<CreateResult, StoreError>> + Send;

    /// The match as stored now.
    fn load(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<Option<Arc<Record>>, StoreError>> + Send;

    /// The match as this process last saw it, if it keeps a copy (no round trip), else as stored
    /// now; `true` when the answer is known to be current. Requests are judged on a snapshot and
    /// committed with guards, so a stale snapshot costs a retry, never a wrong change.
    fn snapshot(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<Option<(Arc<Record>, bool)>, StoreError>> + Send;

    /// Applies a move.
    fn commit_move(
        &self,
        id: &str,
        commit: &MoveCommit,
    ) -> impl Future<Output = Result<MoveResult, StoreError>> + Send;

    /// Ends the match (resignation, a claimed draw).
    fn commit_end(
        &self,
        id: &str,
        commit: &EndCommit,
    ) -> impl Future<Output = Result<ChangeResult, StoreError>> + Send;

    /// Records a draw offer; ends the match drawn when the other side offers too.
    fn commit_offer(
        &self,
        id: &str,
        commit: &OfferCommit,
    ) -> impl Future<Output = Result<ChangeResult, StoreError>> + Send;

    /// Declines the other side's standing draw offer: [`ChangeResult::Stale`] when it does not
    /// stand (any more).
    fn commit_decline(
        &self,
        id: &str,
        commit: &DeclineCommit,
    ) -> impl Future<Output = Result<ChangeResult, StoreError>> + Send;

    /// Applies a takeback proposal, its refusal, or the takeback.
    fn commit_takeback(
        &self,
        id: &str,
        commit: &TakebackCommit,
    ) -> impl Future<Output = Result<ChangeResult, StoreError>> + Send;

    /// Appends a chat message (with its limits, atomically).
    fn post_chat(
        &self,
        id: &str,
        post: &ChatPost,
    ) -> impl Future<Output = Result<ChatResult, StoreError>> + Send;

    /// Deletes chat message `message` (blanks it, and appends a deletion entry); deleting a
    /// deleted message changes nothing and answers it again.
    fn delete_chat(
        &self,
        id: &str,
        message: u64,
    ) -> impl Future<Output = Result<ChatResult, StoreError>> + Send;

    /// At most `max` places of `player`'s matches, newest first, strictly older than `before`
    /// (from the newest without it). Places of matches that have expired may be among them
    /// (their loads answer nothing); each creation adds one for every player of the match.
    fn player_matches(
        &self,
        player: &str,
        before: Option<&IndexPlace>,
        max: usize,
    ) -> impl Future<Output = Result<Vec<IndexPlace>, StoreError>> + Send;

    /// At most `max` chat entries after number `after`, with their numbers.
    fn chat(
        &self,
        id: &str,
        after: u64,
        max: usize,
    ) -> impl Future<Output = Result<Vec<(u64, String)>, StoreError>> + Send;

    /// At most `max` events after sequence number `after` (1-based), with their numbers.
    fn events(
        &self,
        id: &str,
        after: u64,
        max: usize,
    ) -> impl Future<Output = Result<Vec<(u64, String)>, StoreError>> + Send;

    /// Whether the store can serve: `Err` with the reason (unreachable, or a Redis that may
    /// evict keys) for health reporting.
    fn probe(&self) -> impl Future<Output = Result<(), String>> + Send;

    /// What the match remembers under `field` ([`RequestId::field`]), if anything.
    fn done(
        &self,
        id: &str,
        field: &str,
    ) -> impl Future<Output = Result<Option<Remembered>, StoreError>> + Send;

    /// How many request ids match `id` remembers (0 for no such match): at most
    /// [`crate::record::REQUEST_WINDOW`] per seat and for the platform.
    fn remembered(&self, id: &str) -> impl Future<Output = Result<usize, StoreError>> + Send;

    /// Applies a change of clocks decided at the store's time.
    fn commit_clock(
        &self,
        id: &str,
        commit: &ClockCommit,
    ) -> impl Future<Output = Result<ChangeResult, StoreError>> + Send;

    /// The store's deadline index and time base (Unix ms: Redis `TIME`, or this process's
    /// clock), which the flag worker runs on.
    fn deadlines(&self) -> Deadlines<'_>;
}

/// The store a server runs with: in process (the embedded default) or Redis.
#[derive(Debug)]
pub enum AnyStore {
    /// [`memory::MemoryStore`].
    Memory(memory::MemoryStore),
    /// [`redis::RedisStore`].
    Redis(Box<redis::RedisStore>),
}

macro_rules! dispatch {
    ($self:expr, $s:ident => $body:expr) => {
        match $self {
            AnyStore::Memory($s) => $body,
            AnyStore::Redis($s) => $body,
        }
    };
}

impl MatchStore for AnyStore {
    async fn create(&self, record: &Record) -> Result<CreateResult, StoreError> {
        dispatch!(self, s => s.create(record).await)
    }

    async fn load(&self, id: &str) -> Result<Option<Arc<Record>>, StoreError> {
        dispatch!(self, s => s.load(id).await)
    }

    async fn snapshot(&self, id: &str) -> Result<Option<(Arc<Record>, bool)>, StoreError> {
        dispatch!(self, s => s.snapshot(id).await)
    }

    async fn commit_move(&self, id: &str, commit: &MoveCommit) -> Result<MoveResult, StoreError> {
        dispatch!(self, s => s.commit_move(id, commit).await)
    }

    async fn commit_end(&self, id: &str, commit: &EndCommit) -> Result<ChangeResult, StoreError> {
        dispatch!(self, s => s.commit_end(id, commit).await)
    }

    async fn commit_offer(
        &self,
        id: &str,
        commit: &OfferCommit,
    ) -> Result<ChangeResult, StoreError> {
        dispatch!(self, s => s.commit_offer(id, commit).await)
    }

    async fn commit_decline(
        &self,
        id: &str,
        commit: &DeclineCommit,
    ) -> Result<ChangeResult, StoreError> {
        dispatch!(self, s => s.commit_decline(id, commit).await)
    }

    async fn commit_takeback(
        &self,
        id: &str,
        commit: &TakebackCommit,
    ) -> Result<ChangeResult, StoreError> {
        dispatch!(self, s => s.commit_takeback(id, commit).await)
    }

    async fn post_chat(&self, id: &str, post: &ChatPost) -> Result<ChatResult, StoreError> {
        dispatch!(self, s => s.post_chat(id, post).await)
    }

    async fn delete_chat(&self, id: &str, message: u64) -> Result<ChatResult, StoreError> {
        dispatch!(self, s => s.delete_chat(id, message).await)
    }

    async fn chat(
        &self,
        id: &str,
        after: u64,
        max: usize,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        dispatch!(self, s => s.chat(id, after, max).await)
    }

    async fn player_matches(
        &self,
        player: &str,
        before: Option<&IndexPlace>,
        max: usize,
    ) -> Result<Vec<IndexPlace>, StoreError> {
        dispatch!(self, s => s.player_matches(player, before, max).await)
    }

    async fn events(
        &self,
        id: &str,
        after: u64,
        max: usize,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        dispatch!(self, s => s.events(id, after, max).await)
    }

    async fn done(&self, id: &str, field: &str) -> Result<Option<Remembered>, StoreError> {
        dispatch!(self, s => s.done(id, field).await)
    }

    async fn remembered(&self, id: &str) -> Result<usize, StoreError> {
        dispatch!(self, s => s.remembered(id).await)
    }

    async fn probe(&self) -> Result<(), String> {
        dispatch!(self, s => s.probe().await)
    }

    async fn commit_clock(&self, id: &str, c: &ClockCommit) -> Result<ChangeResult, StoreError> {
        dispatch!(self, s => s.commit_clock(id, c).await)
    }

    fn deadlines(&self) -> Deadlines<'_> {
        dispatch!(self, s => s.deadlines())
    }
}
