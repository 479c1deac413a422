//! Where standalone clocks live: the [`ClockStore`] trait, in process ([`memory::MemoryStore`])
//! or in Redis ([`redis::RedisStore`]). Both apply every change as one guarded step at their
//! own time, keep the deadline index, and run the same tests.

pub mod memory;
pub mod redis;

use crate::record::{ClockRecord, Flag};
use arbiter_clocked::Deadlines;
use arbiter_core::Color;
use arbiter_core::clock::{Clock, PressPlan, Side};
use std::future::Future;
use std::sync::Arc;

/// The store cannot be used, or what it holds cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// Unreachable; nothing was applied.
    Unavailable(String),
    /// A stored record cannot be decoded.
    Corrupt(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Unavailable(e) => write!(f, "clock store unavailable: {e}"),
            StoreError::Corrupt(e) => write!(f, "clock store: {e}"),
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

/// A press, applied by the store at its own time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PressCommit {
    /// The board (0 or 1).
    pub board: usize,
    /// Presses the board must have had.
    pub ply: u32,
    /// Who presses.
    pub mover: Color,
    /// The board clock's fields as judged.
    pub expected: [String; 3],
    /// The press.
    pub plan: PressPlan,
    /// The mover's side after the press, but for remaining time and quota.
    pub after: Side,
}

/// A change of clocks decided at the store's time (pause, resume, time added, stop, flag).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetCommit {
    /// Boards replaced: index, fields as judged, new clock.
    pub clocks: Vec<(usize, [String; 3], Clock)>,
    /// When it may apply: `None` while no deadline has passed; `Some(at)` once `at` has.
    pub due: Option<u64>,
    /// Events to append.
    pub events: Vec<String>,
    /// The flag, when the change records one.
    pub flag: Option<Flag>,
    /// Whether the change ends the clock (a flag or a stop).
    pub over: bool,
    /// The request id of a platform action, remembered with the clock (the latest
    /// [`crate::record::REMEMBERED_REQUESTS`] only): a change whose id was applied before is not
    /// applied again, but answered [`Outcome::Duplicate`] for the same request and
    /// [`Outcome::Reused`] for another.
    pub request: Option<Request>,
}

/// A platform action's request id and the request it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The caller's request id.
    pub id: String,
    /// The request: a canonical text of the call and its arguments (`pause`, `resume`, `stop`,
    /// or the time added, board and side), compared with what the id was used for before.
    pub request: String,
}

/// What a change did; every answer carries the record as it stands.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Applied.
    Applied(Arc<ClockRecord>),
    /// The same press (or request id) was applied before (a retry): nothing changed.
    Duplicate(Arc<ClockRecord>),
    /// The request id was used before for another request: nothing changed.
    Reused(Arc<ClockRecord>),
    /// A guard failed (another ply, a changed clock): nothing changed.
    Stale(Arc<ClockRecord>),
    /// A deadline passed first: nothing changed; the flag is to be recorded.
    Late(Arc<ClockRecord>),
    /// The clock is over: nothing changed.
    Over(Arc<ClockRecord>),
    /// No such clock.
    Missing,
}

/// A creation.
#[derive(Clone, Debug, PartialEq)]
pub enum Created {
    /// Created.
    New(Arc<ClockRecord>),
    /// A clock with that id exists (the caller compares its spec).
    Exists(Arc<ClockRecord>),
    /// The store holds its maximum of clocks.
    Full(usize),
}

/// Storage for standalone clocks.
pub trait ClockStore: Send + Sync + 'static {
    /// Creates `record` unless its id is taken.
    fn create(
        &self,
        record: &ClockRecord,
    ) -> impl Future<Output = Result<Created, StoreError>> + Send;
    /// The clock as stored.
    fn load(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<Option<Arc<ClockRecord>>, StoreError>> + Send;
    /// Applies a press.
    fn press(
        &self,
        id: &str,
        commit: &PressCommit,
    ) -> impl Future<Output = Result<Outcome, StoreError>> + Send;
    /// Applies a change of clocks.
    fn set(
        &self,
        id: &str,
        commit: &SetCommit,
    ) -> impl Future<Output = Result<Outcome, StoreError>> + Send;
    /// At most `max` events after `after`, with their sequence numbers.
    fn events(
        &self,
        id: &str,
        after: u64,
        max: usize,
    ) -> impl Future<Output = Result<Vec<(u64, String)>, StoreError>> + Send;
    /// Whether the store can serve (for health).
    fn probe(&self) -> impl Future<Output = Result<(), String>> + Send;
    /// The store's deadline index and time base (Unix ms), shared with the flag worker.
    fn deadlines(&self) -> Deadlines<'_>;
}

/// The store a server runs with.
#[derive(Debug)]
pub enum AnyStore {
    /// In process.
    Memory(memory::MemoryStore),
    /// Redis.
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

impl ClockStore for AnyStore {
    async fn create(&self, r: &ClockRecord) -> Result<Created, StoreError> {
        dispatch!(self, s => s.create(r).await)
    }
    async fn load(&self, id: &str) -> Result<Option<Arc<ClockRecord>>, StoreError> {
        dispatch!(self, s => s.load(id).await)
    }
    async fn press(&self, id: &str, c: &PressCommit) -> Result<Outcome, StoreError> {
        dispatch!(self, s => s.press(id, c).await)
    }
    async fn set(&self, id: &str, c: &SetCommit) -> Result<Outcome, StoreError> {
        dispatch!(self, s => s.set(id, c).await)
    }
    async fn events(
        &self,
        id: &str,
        after: u64,
        max: usize,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        dispatch!(self, s => s.events(id, after, max).await)
    }
    async fn probe(&self) -> Result<(), String> {
        dispatch!(self, s => s.probe().await)
    }
    fn deadlines(&self) -> Deadlines<'_> {
        dispatch!(self, s => s.deadlines())
    }
}
