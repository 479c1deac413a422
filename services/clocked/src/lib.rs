//! # arbiter-clocked
//!
//! The clocked-record store: what the two services that keep clocks (the match service for
//! hosted games, the clock service for standalone clocks) share, so that both store, index, end
//! on time and stream their games the same way:
//!
//! - [`fields`]: the stored encoding of a board clock (and packed lists), which the Lua reads
//!   and writes too;
//! - [`lua`]: the Lua helpers of the Redis scripts: the press arithmetic (the core's
//!   `PressPlan::apply`, in Lua because a move is one script call at Redis's `TIME`; a property
//!   test in the match service holds the two equal), changing and stopping a board's clocks, and
//!   the deadline index as a sorted set with its announcement channel;
//! - [`deadlines`]: a store's deadline index and time base, in process ([`MemoryDeadlines`]) or
//!   in Redis ([`RedisDeadlines`]), read through [`Deadlines`];
//! - [`worker`]: the flag worker every replica runs ([`run_flag_worker`]) over a domain whose
//!   games are [`Timed`], each ended by [`end_on_time`] (the protocol both services share), and
//!   the Redis subscription that wakes it
//!   ([`listen_for_deadlines`]);
//! - [`watchers`] and [`stream`]: the watch streams of a process by game, woken by local changes
//!   and by the changes other replicas announce on Redis, and the loop that feeds each stream
//!   from a game's event log ([`watch_stream`]).
#![warn(missing_docs)]

pub mod deadlines;
pub mod fields;
pub mod index;
pub mod lua;
pub mod stream;
pub mod watchers;
pub mod worker;

pub use deadlines::{Deadlines, MemoryDeadlines, RedisDeadlines, RedisNames, Unavailable};
pub use index::{Claimed, DeadlineIndex};
pub use stream::{EventLog, WATCH_BATCH, watch_stream};
pub use worker::{
    CLAIM_AHEAD_MS, CLAIM_BATCH, CLAIM_LEASE_MS, Committed, END_ATTEMPTS, FLAG_CONCURRENCY,
    MAX_FLAG_SLEEP, Timed, end_on_time, listen_for_deadlines, run_flag_worker,
};

/// Spawns the subscriptions a replica of a service with clocks in Redis holds: the changes any
/// replica announces on `changes` (one channel, or a cluster's shard channels) wake this
/// process's `watchers`
/// ([`watchers::listen_for_changes`]), and, when `deadlines` are in Redis, the new earliest
/// deadlines any replica files wake this process's flag worker ([`listen_for_deadlines`]). Both
/// end when `shutdown` turns true.
pub fn spawn_listeners(
    client: &arbiter_redis_conn::StoreClient,
    changes: arbiter_redis_conn::Announcements,
    watchers: &std::sync::Arc<watchers::Watchers>,
    deadlines: Deadlines<'_>,
    shutdown: &tokio::sync::watch::Receiver<bool>,
) {
    tokio::spawn(watchers::listen_for_changes(
        client.subscriber(),
        changes,
        std::sync::Arc::clone(watchers),
        shutdown.clone(),
    ));
    if let Deadlines::Redis(r) = deadlines {
        tokio::spawn(r.listen(client.subscriber(), shutdown.clone()));
    }
}
