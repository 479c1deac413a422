//! Where bughouse matches live: the [`MatchStore`] trait and its in-process implementation
//! ([`MemoryStore`], for `arbiter serve` and unit tests). The Redis implementation is in
//! [`super::redis_store`]; both keep the same data model and run the same test suite.
//!
//! Data model (Redis keys `bug:{<id>}:state` and `bug:{<id>}:events`, one hash slot per match):
//! the state is a flat map of fields, the events an append-only list of text lines.
//!
//! | field | meaning |
//! |---|---|
//! | `wa` `ba` `wb` `bb` | player ids (White A, Black A, White B, Black B) |
//! | `tc` | time control reference |
//! | `fen:A` `fen:B` | the board FEN without its reserve |
//! | `ply:A` `ply:B` | moves played on the board |
//! | `res:A:w:Q` … `res:B:b:P` | reserve counts (20 fields) |
//! | `last:A` `last:B` | `ply \t uci \t text \t player` of the board's latest move (retries) |
//! | `over` | `1` once the match has ended |
//! | `outcome` | the end event line |
//! | `draw:1` `draw:2` | `1` while that team offers a draw |
//!
//! Every change is one atomic step: a move checks the board's ply and that the match is live,
//! takes a dropped piece from the mover's reserve (refusing if it is not there), adds a capture
//! to the partner's reserve, writes the board, and appends the events — all or nothing.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The raw fields of a stored match.
pub type Fields = HashMap<String, String>;

/// The store could not be used (Redis down, a script error). Nothing was changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "match store unavailable: {}", self.0)
    }
}

impl std::error::Error for StoreError {}

/// One move, as the store applies it atomically.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MoveCommit {
    /// `A` or `B`.
    pub board: char,
    /// The ply the move was validated against.
    pub expected_ply: u32,
    /// The mover's side, `w` or `b`.
    pub side: char,
    /// The board FEN after the move, without its reserve.
    pub fen: String,
    /// The dropped piece's letter (`QRBNP`), if the move is a drop.
    pub drop: Option<char>,
    /// The captured unit's letter (`QRBNP`) and the partner's board and side it goes to.
    pub capture: Option<(char, char, char)>,
    /// `ply \t uci \t text \t player` for the `last:` field.
    pub last: String,
    /// The move event line (without its sequence number).
    pub move_event: String,
    /// The end event line, if the move ended the match.
    pub end_event: Option<String>,
}

/// What a move commit did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MoveResult {
    /// Applied: the board's new ply, and the whole match right after the move (read in the
    /// same atomic step, so the answer needs no second read).
    Applied {
        /// The board's ply after the move.
        ply: u32,
        /// The sequence number of the last event appended.
        last_seq: u64,
        /// The match's fields after the move.
        fields: Fields,
    },
    /// The board is not at the expected ply; its `last:` field is returned for retry detection.
    Stale {
        /// The board's ply.
        ply: u32,
        /// The board's latest move.
        last: String,
    },
    /// The match is over.
    Over,
    /// The dropped piece is not in the reserve (it can only have been used by a drop that won
    /// a race on the same board, which the ply guard also catches).
    NotInReserve,
    /// No such match (or it expired).
    Missing,
}

/// What an end or draw-offer commit did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EndResult {
    /// Applied (for a draw offer: recorded, and `ended` when both teams now offer).
    Applied {
        /// Whether the match is now over.
        ended: bool,
    },
    /// The match was already over.
    Over,
    /// No such match.
    Missing,
}

/// How long matches are kept.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Retention {
    /// The lifetime of a live match, refreshed by every move.
    pub ttl: Duration,
    /// How long a finished match stays readable.
    pub grace: Duration,
}

impl Default for Retention {
    fn default() -> Retention {
        Retention {
            ttl: Duration::from_secs(2 * 60 * 60),
            grace: Duration::from_secs(10 * 60),
        }
    }
}

/// Storage for bughouse matches. Implementations must apply each method atomically.
pub trait MatchStore: Send + Sync + 'static {
    /// Creates a match with `fields` and the first `events`; `Ok(false)` if the id exists.
    fn create(
        &self,
        id: &str,
        fields: &Fields,
        events: &[String],
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Reads a match's fields and its last event sequence number.
    fn load(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<Option<(Fields, u64)>, StoreError>> + Send;

    /// Applies a move (see the module documentation).
    fn commit_move(
        &self,
        id: &str,
        commit: &MoveCommit,
    ) -> impl Future<Output = Result<MoveResult, StoreError>> + Send;

    /// Ends the match with `end_event` (resignation, flag fall) unless it is over.
    fn end(
        &self,
        id: &str,
        end_event: &str,
    ) -> impl Future<Output = Result<EndResult, StoreError>> + Send;

    /// Records `team`'s draw offer (appending `offer_event`); if the other team offers too, ends
    /// the match with `draw_event`.
    fn offer_draw(
        &self,
        id: &str,
        team: u8,
        offer_event: &str,
        draw_event: &str,
    ) -> impl Future<Output = Result<EndResult, StoreError>> + Send;

    /// The events after sequence number `after` (1-based), with their numbers.
    fn events(
        &self,
        id: &str,
        after: u64,
    ) -> impl Future<Output = Result<Vec<(u64, String)>, StoreError>> + Send;
}

/// Reserve field name: `res:A:w:Q`.
pub fn reserve_field(board: char, side: char, piece: char) -> String {
    format!("res:{board}:{side}:{piece}")
}

/// The reserve of one side as FEN letters in `QRBNP` order (upper case for White).
pub fn reserve_text(fields: &Fields, board: char, side: char) -> String {
    let mut s = String::new();
    for piece in ['Q', 'R', 'B', 'N', 'P'] {
        let n: usize = fields
            .get(&reserve_field(board, side, piece))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let letter = if side == 'w' {
            piece
        } else {
            piece.to_ascii_lowercase()
        };
        s.extend(std::iter::repeat_n(letter, n));
    }
    s
}

/// The reserve event line the store appends after a reserve changes.
pub fn reserve_event(fields: &Fields, board: char, side: char) -> String {
    format!("R\t{board}\t{side}\t{}", reserve_text(fields, board, side))
}

#[derive(Debug)]
struct Stored {
    fields: Fields,
    events: Vec<String>,
    expires: Instant,
}

/// Matches in this process's memory, with the same atomic semantics as the Redis store (a
/// mutex makes each method one step) and the same expiry rules.
#[derive(Debug)]
pub struct MemoryStore {
    matches: Mutex<Matches>,
    retention: Retention,
}

#[derive(Debug)]
struct Matches {
    by_id: HashMap<String, Stored>,
    last_sweep: Instant,
}

impl Matches {
    /// The live match `id`: an expired one is dropped on access. Every other expired match is
    /// dropped by a sweep at most once a second, so a request never pays for a full scan more
    /// often than that.
    fn live(&mut self, id: &str, now: Instant) -> Option<&mut Stored> {
        if now.duration_since(self.last_sweep) >= Duration::from_secs(1) {
            self.by_id.retain(|_, m| m.expires > now);
            self.last_sweep = now;
        }
        if self.by_id.get(id).is_some_and(|m| m.expires <= now) {
            self.by_id.remove(id);
        }
        self.by_id.get_mut(id)
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new(retention: Retention) -> MemoryStore {
        MemoryStore {
            matches: Mutex::new(Matches {
                by_id: HashMap::new(),
                last_sweep: Instant::now(),
            }),
            retention,
        }
    }

    /// Runs `f` on the live (unexpired) match `id`, if any.
    fn with<T>(&self, id: &str, f: impl FnOnce(&mut Stored) -> T) -> Option<T> {
        let mut all = self.matches.lock().expect("not poisoned");
        all.live(id, Instant::now()).map(f)
    }
}

impl MatchStore for MemoryStore {
    async fn create(
        &self,
        id: &str,
        fields: &Fields,
        events: &[String],
    ) -> Result<bool, StoreError> {
        let mut all = self.matches.lock().expect("not poisoned");
        let now = Instant::now();
        if all.live(id, now).is_some() {
            return Ok(false);
        }
        all.by_id.insert(
            id.to_owned(),
            Stored {
                fields: fields.clone(),
                events: events.to_vec(),
                expires: now + self.retention.ttl,
            },
        );
        Ok(true)
    }

    async fn load(&self, id: &str) -> Result<Option<(Fields, u64)>, StoreError> {
        Ok(self.with(id, |m| (m.fields.clone(), m.events.len() as u64)))
    }

    async fn commit_move(&self, id: &str, c: &MoveCommit) -> Result<MoveResult, StoreError> {
        let retention = self.retention;
        Ok(self
            .with(id, |m| {
                let ply: u32 = m.fields[&format!("ply:{}", c.board)].parse().unwrap_or(0);
                if m.fields.get("over").is_some_and(|v| v == "1") {
                    return MoveResult::Over;
                }
                if ply != c.expected_ply {
                    return MoveResult::Stale {
                        ply,
                        last: m
                            .fields
                            .get(&format!("last:{}", c.board))
                            .cloned()
                            .unwrap_or_default(),
                    };
                }
                if let Some(piece) = c.drop {
                    let f = reserve_field(c.board, c.side, piece);
                    let n: u32 = m.fields.get(&f).and_then(|v| v.parse().ok()).unwrap_or(0);
                    if n == 0 {
                        return MoveResult::NotInReserve;
                    }
                    m.fields.insert(f, (n - 1).to_string());
                }
                if let Some((piece, pboard, pside)) = c.capture {
                    let f = reserve_field(pboard, pside, piece);
                    let n: u32 = m.fields.get(&f).and_then(|v| v.parse().ok()).unwrap_or(0);
                    m.fields.insert(f, (n + 1).to_string());
                }
                m.fields.insert(format!("fen:{}", c.board), c.fen.clone());
                m.fields
                    .insert(format!("ply:{}", c.board), (ply + 1).to_string());
                m.fields.insert(format!("last:{}", c.board), c.last.clone());
                m.events.push(c.move_event.clone());
                if c.drop.is_some() {
                    m.events.push(reserve_event(&m.fields, c.board, c.side));
                }
                if let Some((_, pboard, pside)) = c.capture {
                    m.events.push(reserve_event(&m.fields, pboard, pside));
                }
                let now = Instant::now();
                if let Some(end) = &c.end_event {
                    m.fields.insert("over".into(), "1".into());
                    m.fields.insert("outcome".into(), end.clone());
                    m.events.push(end.clone());
                    m.expires = now + retention.grace;
                } else {
                    m.expires = now + retention.ttl;
                }
                MoveResult::Applied {
                    ply: ply + 1,
                    last_seq: m.events.len() as u64,
                    fields: m.fields.clone(),
                }
            })
            .unwrap_or(MoveResult::Missing))
    }

    async fn end(&self, id: &str, end_event: &str) -> Result<EndResult, StoreError> {
        let grace = self.retention.grace;
        Ok(self
            .with(id, |m| {
                if m.fields.get("over").is_some_and(|v| v == "1") {
                    return EndResult::Over;
                }
                m.fields.insert("over".into(), "1".into());
                m.fields.insert("outcome".into(), end_event.to_owned());
                m.events.push(end_event.to_owned());
                m.expires = Instant::now() + grace;
                EndResult::Applied { ended: true }
            })
            .unwrap_or(EndResult::Missing))
    }

    async fn offer_draw(
        &self,
        id: &str,
        team: u8,
        offer_event: &str,
        draw_event: &str,
    ) -> Result<EndResult, StoreError> {
        let grace = self.retention.grace;
        Ok(self
            .with(id, |m| {
                if m.fields.get("over").is_some_and(|v| v == "1") {
                    return EndResult::Over;
                }
                m.fields.insert(format!("draw:{team}"), "1".into());
                m.events.push(offer_event.to_owned());
                let other = 3 - team;
                if m.fields
                    .get(&format!("draw:{other}"))
                    .is_some_and(|v| v == "1")
                {
                    m.fields.insert("over".into(), "1".into());
                    m.fields.insert("outcome".into(), draw_event.to_owned());
                    m.events.push(draw_event.to_owned());
                    m.expires = Instant::now() + grace;
                    return EndResult::Applied { ended: true };
                }
                EndResult::Applied { ended: false }
            })
            .unwrap_or(EndResult::Missing))
    }

    async fn events(&self, id: &str, after: u64) -> Result<Vec<(u64, String)>, StoreError> {
        Ok(self
            .with(id, |m| {
                m.events
                    .iter()
                    .enumerate()
                    .skip(after as usize)
                    .map(|(i, e)| (i as u64 + 1, e.clone()))
                    .collect()
            })
            .unwrap_or_default())
    }
}

/// The store a server runs with: in process (the embedded default) or Redis.
#[derive(Debug)]
pub enum AnyStore {
    /// [`MemoryStore`].
    Memory(MemoryStore),
    /// [`RedisStore`](super::redis_store::RedisStore).
    Redis(super::redis_store::RedisStore),
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
    async fn create(
        &self,
        id: &str,
        fields: &Fields,
        events: &[String],
    ) -> Result<bool, StoreError> {
        dispatch!(self, s => s.create(id, fields, events).await)
    }

    async fn load(&self, id: &str) -> Result<Option<(Fields, u64)>, StoreError> {
        dispatch!(self, s => s.load(id).await)
    }

    async fn commit_move(&self, id: &str, commit: &MoveCommit) -> Result<MoveResult, StoreError> {
        dispatch!(self, s => s.commit_move(id, commit).await)
    }

    async fn end(&self, id: &str, end_event: &str) -> Result<EndResult, StoreError> {
        dispatch!(self, s => s.end(id, end_event).await)
    }

    async fn offer_draw(
        &self,
        id: &str,
        team: u8,
        offer_event: &str,
        draw_event: &str,
    ) -> Result<EndResult, StoreError> {
        dispatch!(self, s => s.offer_draw(id, team, offer_event, draw_event).await)
    }

    async fn events(&self, id: &str, after: u64) -> Result<Vec<(u64, String)>, StoreError> {
        dispatch!(self, s => s.events(id, after).await)
    }
}
