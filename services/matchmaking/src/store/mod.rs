//! Where pools, waiting players, found matches and ratings live: Redis ([`redis::RedisStore`],
//! shared by every replica) or this process ([`memory::MemoryStore`], the embedded default).
//! Both keep the same rules. Every step below is atomic in process; in Redis a step that
//! concerns a pool and its players is two or three atomic scripts (a pool's keys live in the
//! pool's own slot on a cluster), in an order that keeps the same outcomes: a player is never
//! in two pairings, and never paired after leaving (see [`redis`] for the order).
//!
//! A player is in one of three states: **waiting** in one pool (with a lease renewed by their
//! join stream), **matching** (a wave committed their pairing and the match is being created),
//! or neither. A wave runs under a pool lock with a fencing number: only the holder of the
//! current number can commit, so two replicas never pair one player twice.
//!
//! Challenges and seeks ([`crate::offer`]) are kept beside the pools, with the same rules in both
//! stores: each change of an offer is one atomic step (a Lua script in Redis) at the store's
//! time, creations are idempotent by the owner's request id (and counted per owner and window:
//! [`OfferLimits::created`]), and an offer's records are forgotten [`OFFER_MEMORY_MS`] after
//! the later of its end and its expiry (no step ever shortens that).

pub mod memory;
pub mod redis;

use crate::found::MatchFound;
use crate::offer::{Accepting, Created, Ended, NewOffer, Offer, OfferLimits, OfferState};
use crate::pool::{Entry, Follow, History, Making, Pairing, Waiting};
use std::future::Future;

/// A store failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The store cannot be reached; retrying may succeed.
    Unavailable(String),
    /// Stored data cannot be read.
    Corrupt(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Unavailable(e) => write!(f, "matchmaking store unavailable: {e}"),
            StoreError::Corrupt(e) => write!(f, "matchmaking store data corrupt: {e}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// What a join did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Joined {
    /// The player waits in the pool (`waiting` players now, this one included).
    Waiting {
        /// Players waiting in the pool.
        waiting: usize,
    },
    /// The player has a match found not yet acknowledged: nothing changed.
    Found,
    /// A match is being created for the player: nothing changed.
    Matching,
    /// The pool holds its maximum of players: the player is not placed, and a place they held
    /// in another pool is given up (in Redis the join gives it up before it meets the full
    /// pool; the in-process store does the same).
    Full,
    /// Opening the pool would pass the maximum of pools: nothing changed.
    TooManyPools,
}

/// Where a waiting player stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Standing {
    /// 1 for the player waiting longest.
    pub position: u32,
    /// Players waiting in the pool.
    pub waiting: u32,
    /// Waves waited through.
    pub missed: u32,
    /// The pool's recent mean wait before a match, in ms (0 before any).
    pub mean_wait_ms: u64,
}

/// The state of a join stream's place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Still waiting, lease renewed.
    Waiting(Standing),
    /// Paired: the match is being created.
    Matching,
    /// No longer this stream's: matched (look for a match found), left, or taken over by a
    /// newer join.
    Gone,
}

/// The result of applying a match's ratings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// Applied now.
    Done,
    /// The match had been applied before: nothing changed.
    Already,
    /// A rating changed since it was read (another match of the same player ended at the same
    /// time): read again and retry.
    Conflict,
}

/// A rating write: the player's record for `key` goes from `old` (`None`: none yet) to `new`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RatingWrite {
    /// The player.
    pub player: String,
    /// The variant and speed (`chess:blitz`).
    pub key: String,
    /// The record as read.
    pub old: Option<String>,
    /// The record to write.
    pub new: String,
    /// The change recorded in the player's rating history for `key`
    /// ([`crate::ratings::Change::encode`]).
    pub change: String,
}

/// One entry of an import, as the store applies it: the player's record for `key` must still
/// be `old` (`None`: none yet); `new`, when given, replaces it and `change` joins the rating
/// history (an entry skipped is only checked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportWrite {
    /// The player.
    pub player: String,
    /// The variant and speed (`chess:blitz`).
    pub key: String,
    /// The record as read.
    pub old: Option<String>,
    /// The record to write, and the change to record (`None`: the entry is skipped).
    pub new: Option<(String, String)>,
}

/// What an import did in the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Imported {
    /// Applied now, and its request id remembered with `outcomes`.
    Done,
    /// The request id was used before (within [`IMPORT_MEMORY_MS`]): nothing changed; the
    /// first call's fingerprint and outcomes.
    Replayed {
        /// The first call's fingerprint.
        fingerprint: String,
        /// The first call's outcomes.
        outcomes: String,
    },
    /// A record changed since it was read: read again and retry.
    Conflict,
}

/// How many rating changes are kept per player, variant and speed by default (older ones are
/// dropped); [`crate::Tuning::rating_history`] sets it.
pub const RATING_HISTORY_LIMIT: usize = 500;
/// How long an import's request id is remembered: a day.
pub const IMPORT_MEMORY_MS: u64 = 86_400_000;

/// A found match for one player (stored in the form [`MatchFound::encode`] writes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The player.
    pub player: String,
    /// The match.
    pub match_id: String,
    /// What the player is told.
    pub found: MatchFound,
}

/// The operations of a matchmaking store (see the module documentation).
/// (Every store keeps challenges and seeks too: [`OfferStore`].)
pub trait PoolStore: OfferStore + Send + Sync + 'static {
    /// The store's time, Unix ms (Redis `TIME`; this process's clock in process).
    fn now(&self) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Puts `entry` in `pool` with a lease of `lease_ms`, unless the player has a match found
    /// not acknowledged or being made, or the pool holds `limits.0` players, or the pool is new
    /// and `limits.1` pools have players. A player waiting
    /// in another pool leaves it; one waiting in this pool keeps their join time and missed
    /// waves, under the new session.
    fn join(
        &self,
        pool: &str,
        entry: &Entry,
        lease_ms: u64,
        limits: (usize, usize),
    ) -> impl Future<Output = Result<Joined, StoreError>> + Send;

    /// Renews the lease of `player`'s place in `pool` held by `session` and says where they
    /// stand.
    fn place(
        &self,
        pool: &str,
        player: &str,
        session: u64,
        lease_ms: u64,
    ) -> impl Future<Output = Result<Place, StoreError>> + Send;

    /// Takes `player` out of the pool they wait in (only if their place is `session`'s, when
    /// given). False when they were not waiting (or the place is another session's); a player
    /// being matched is marked as gone, so that a failed creation does not put them back.
    fn leave(
        &self,
        player: &str,
        session: Option<u64>,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// The pools that have waiting players or pairings being made.
    fn pools(&self) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;

    /// Takes `pool`'s wave lock for `lease_ms`: the new fencing number, or `None` while a wave
    /// holds it (whoever runs it: the fencing number, not an owner, decides what may commit).
    fn lock(
        &self,
        pool: &str,
        lease_ms: u64,
    ) -> impl Future<Output = Result<Option<u64>, StoreError>> + Send;

    /// Releases the lock if `fence` is still current.
    fn unlock(&self, pool: &str, fence: u64)
    -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The players waiting in `pool` whose lease holds; expired places are removed.
    fn waiting(&self, pool: &str) -> impl Future<Output = Result<Vec<Waiting>, StoreError>> + Send;

    /// Commits a wave if `fence` is still the pool's current number: each pairing whose players
    /// all still wait leaves the pool and is kept as being made; every other player still
    /// waiting counts a missed wave. Returns which pairings were committed (`None`: the fence
    /// is stale and nothing changed).
    fn commit(
        &self,
        pool: &str,
        fence: u64,
        pairings: &[Pairing],
        unpaired: &[String],
    ) -> impl Future<Output = Result<Option<Vec<bool>>, StoreError>> + Send;

    /// The pool's pairings being made.
    fn making(&self, pool: &str) -> impl Future<Output = Result<Vec<Making>, StoreError>> + Send;

    /// A pairing's match exists: its players get their match found, their histories, and the
    /// match is filed to be followed for its outcome, claimable at once by any replica's
    /// follower. False when the pairing was finished already (by another replica): nothing
    /// changed.
    fn matched(
        &self,
        pool: &str,
        pairing: &str,
        found: &[Found],
        histories: &[(String, History)],
        follow: &Follow,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// A pairing's match could not be created: its players go back into the pool with their
    /// places (join time, missed waves, session, lease), except those who left or disconnected
    /// meanwhile. False when the pairing was finished already.
    fn unmake(
        &self,
        pool: &str,
        pairing: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// `player`'s found matches not yet acknowledged (at most one in practice: a player with one
    /// cannot join), kept a day at most.
    fn found(&self, player: &str) -> impl Future<Output = Result<Vec<Found>, StoreError>> + Send;

    /// Acknowledges `player`'s match found for `match_id`. False when there is none.
    fn acknowledge(
        &self,
        player: &str,
        match_id: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// `player`'s recent games.
    fn history(&self, player: &str) -> impl Future<Output = Result<History, StoreError>> + Send;

    /// `player`'s rating records, by key (`chess:blitz`).
    fn ratings(
        &self,
        player: &str,
    ) -> impl Future<Output = Result<Vec<(String, String)>, StoreError>> + Send;

    /// Claims up to `max` followed matches that no replica follows (their lease ran out), for
    /// `lease_ms`.
    fn claim_follows(
        &self,
        lease_ms: u64,
        max: usize,
    ) -> impl Future<Output = Result<Vec<Follow>, StoreError>> + Send;

    /// Extends the leases of followed matches this replica follows.
    fn renew_follows(
        &self,
        match_ids: &[String],
        lease_ms: u64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Applies a finished match's rating writes, once per match id: every `old` must still be
    /// current. Each write's change joins the player's rating history for its key in the same
    /// step (keeping the latest `history_limit`). The match is then no longer followed (also
    /// with no writes, for a casual or aborted match).
    fn apply_ratings(
        &self,
        match_id: &str,
        writes: &[RatingWrite],
        history_limit: usize,
    ) -> impl Future<Output = Result<Applied, StoreError>> + Send;

    /// Applies an import, once per `request` id (remembered [`IMPORT_MEMORY_MS`] with
    /// `fingerprint` and `outcomes`): every `old` must still be current; each write with a new
    /// record replaces the record and records its change (keeping the latest `history_limit`),
    /// all in one step.
    fn import_ratings(
        &self,
        request: &str,
        fingerprint: &str,
        outcomes: &str,
        writes: &[ImportWrite],
        history_limit: usize,
    ) -> impl Future<Output = Result<Imported, StoreError>> + Send;

    /// `player`'s rating history for `key` (`chess:blitz`): each change with its sequence
    /// number (growing by one per change of the key), oldest first.
    fn rating_history(
        &self,
        player: &str,
        key: &str,
    ) -> impl Future<Output = Result<Vec<(u64, String)>, StoreError>> + Send;

    /// Tells every replica that `players` have news (a match found), or that `pool` ran a wave.
    fn announce(
        &self,
        players: &[String],
        pool: Option<&str>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Checks that the store can be reached.
    fn probe(&self) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// How long an offer is remembered after it ended or expired (and a creation's request id with
/// it): an hour.
pub const OFFER_MEMORY_MS: u64 = 3_600_000;
/// How many recent challenges are kept per player for their watch streams.
pub const RECENT_CHALLENGES: usize = 200;
/// The least stale time of an accept (see [`crate::config::Tuning::accept_stale_ms`]): an accept
/// under way without a heartbeat for this long is resumed by the next accept or the resumer.
pub const ACCEPT_STALE_MS: u64 = 60_000;

/// The operations on challenges and seeks (see [`crate::offer`]); every one atomic.
pub trait OfferStore: Send + Sync + 'static {
    /// Files `offer` unless its owner used its request id before (then: that offer, or
    /// [`Created::Conflict`] when the terms or the challenged player differ), or a bound of
    /// `limits` is reached (open offers past their expiry do not count; every creation counts
    /// towards [`OfferLimits::created`]).
    fn create_offer(
        &self,
        offer: &NewOffer,
        limits: OfferLimits,
    ) -> impl Future<Output = Result<Created, StoreError>> + Send;

    /// The offer `id`, as stored.
    fn offer(&self, id: &str) -> impl Future<Output = Result<Option<Offer>, StoreError>> + Send;

    /// Turns an open, unexpired offer accepting by `acceptor` under `request`. The same
    /// acceptor and request again: [`Accepting::Again`] (an accept under way gets a heartbeat).
    /// An accept under way whose last heartbeat is `stale_ms` old or older:
    /// [`Accepting::Resumed`], that accept (its acceptor and request) with a fresh heartbeat,
    /// for the caller to continue; it is never replaced. An empty `acceptor` and `request` only
    /// resume a stale accept ([`Accepting::NotOpen`] otherwise). Refused
    /// ([`Accepting::Busy`]) while the owner or `acceptor` holds an unacknowledged match found
    /// or is being matched; else, in the same step, both leave any pool they wait in and are
    /// marked being matched (as a pool pairing's players): while the offer is accepting
    /// (whatever the time), until [`OfferStore::finish_accept`] or
    /// [`OfferStore::release_accept`].
    fn begin_accept(
        &self,
        id: &str,
        acceptor: &str,
        request: &str,
        stale_ms: u64,
    ) -> impl Future<Output = Result<Accepting, StoreError>> + Send;

    /// The accept `request` created its match: the offer turns accepted with the match id, its
    /// players get `found` and the match is filed to be followed (as a pool pairing's,
    /// [`PoolStore::matched`]; the acceptor's is kept in the offer too, [`Offer::found`]),
    /// and the players' marks are cleared. Returns the offer as it then stands and whether
    /// this call recorded it (false: recorded before, or another accept took the offer over).
    fn finish_accept(
        &self,
        id: &str,
        request: &str,
        found: &[Found],
        follow: &Follow,
    ) -> impl Future<Output = Result<Option<(Offer, bool)>, StoreError>> + Send;

    /// The ids of the offers whose accept under way had no heartbeat for `stale_ms` (to be
    /// resumed, [`OfferStore::begin_accept`] with an empty acceptor), oldest first.
    fn stale_accepts(
        &self,
        stale_ms: u64,
    ) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;

    /// The accept `request`'s match could not be created: the offer is open again (if still
    /// accepting under `request`); the players' marks are cleared (they are not put back into
    /// a pool). False when nothing changed.
    fn release_accept(
        &self,
        id: &str,
        request: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Ends an open offer as `state` (declined or cancelled) by `player`, who must be its owner
    /// (`by_owner`) or its challenged player; `reason` is a decline's code. Ending it the same
    /// way again answers [`Ended::Done`].
    fn end_offer(
        &self,
        id: &str,
        player: &str,
        by_owner: bool,
        state: OfferState,
        reason: u8,
    ) -> impl Future<Output = Result<Ended, StoreError>> + Send;

    /// `player`'s recent challenges, made and received (at most [`RECENT_CHALLENGES`]), oldest
    /// first.
    fn challenges_of(
        &self,
        player: &str,
    ) -> impl Future<Output = Result<Vec<Offer>, StoreError>> + Send;

    /// The lobby's open seeks (of `variant` only, when given), soonest to expire first (ties
    /// by id).
    fn seeks(
        &self,
        variant: Option<arbiter_core::Variant>,
    ) -> impl Future<Output = Result<Vec<Offer>, StoreError>> + Send;
}

/// The mean wait kept per pool moves this fraction (1/8) towards each new pairing's wait.
pub(crate) fn mean_wait(old: u64, wait: u64) -> u64 {
    if old == 0 {
        wait
    } else {
        old - old / 8 + wait / 8
    }
}
