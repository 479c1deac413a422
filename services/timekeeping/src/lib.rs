//! # arbiter-timekeeping
//!
//! What the services that keep clocks share (the match service for hosted games, the clock
//! service for standalone clocks), so that both measure, index and end on time the same way:
//!
//! - [`process_now`]: the in-process time base (Unix ms that never go back);
//! - [`DeadlineIndex`]: running games by earliest deadline, in process;
//! - [`lua::CLOCKS`]: the Lua helpers of the Redis scripts: the press arithmetic (the core's
//!   `PressPlan::apply`, in Lua, checked against it by a test), stopping a board's clocks, and
//!   the deadline index as a sorted set with its announcement channel;
//! - [`run_flag_worker`]: the loop every replica runs, generic over a [`DeadlineSource`]: it
//!   sleeps until the earliest deadline (or an announcement of an earlier one), claims due
//!   entries with a lease, and ends each game on time through the source (idempotent);
//! - [`listen_for_deadlines`]: the Redis subscription that wakes the worker when any replica
//!   files a new earliest deadline;
//! - [`watchers`]: the watch streams of a process by game, woken by local changes and by the
//!   changes other replicas announce on Redis.
#![warn(missing_docs)]

pub mod fields;
pub mod lua;
pub mod watchers;

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// This process's time in Unix ms: the wall clock read once, then advanced by the monotonic
/// clock, so that it never goes back.
pub fn process_now() -> u64 {
    static ANCHOR: OnceLock<(Instant, u64)> = OnceLock::new();
    let (instant, unix) = ANCHOR.get_or_init(|| {
        let unix = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        (Instant::now(), unix)
    });
    unix + u64::try_from(instant.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Running games by their earliest deadline (Unix ms), in process.
#[derive(Debug, Default)]
pub struct DeadlineIndex {
    by_time: BTreeSet<(u64, String)>,
    by_id: HashMap<String, u64>,
}

impl DeadlineIndex {
    /// Files `id` at `deadline` (`None`: out of the index); `true` when it is a new earliest
    /// deadline (the worker must be woken).
    pub fn set(&mut self, id: &str, deadline: Option<u64>) -> bool {
        if let Some(old) = self.by_id.remove(id) {
            self.by_time.remove(&(old, id.to_owned()));
        }
        let Some(at) = deadline else { return false };
        let earliest = self.by_time.first().is_none_or(|(first, _)| at < *first);
        self.by_time.insert((at, id.to_owned()));
        self.by_id.insert(id.to_owned(), at);
        earliest
    }

    /// The earliest deadline.
    pub fn first(&self) -> Option<u64> {
        self.by_time.first().map(|(at, _)| *at)
    }

    /// Claims up to `max` entries due by `now + ahead`, earliest first: each moves to its
    /// deadline (or `now`, if later) + `lease`.
    pub fn claim(&mut self, now: u64, ahead: u64, lease: u64, max: usize) -> Claimed {
        let horizon = now.saturating_add(ahead);
        let due: Vec<(String, u64)> = self
            .by_time
            .iter()
            .take_while(|(at, _)| *at <= horizon)
            .take(max)
            .map(|(at, id)| (id.clone(), *at))
            .collect();
        for (id, at) in &due {
            self.set(id, Some((*at).max(now).saturating_add(lease)));
        }
        Claimed { now, due }
    }

    /// How many games are filed.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether no game is filed.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}

/// Games claimed from a deadline index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claimed {
    /// The store's time at the claim (Unix ms).
    pub now: u64,
    /// The games claimed, each with the time it was filed at (Unix ms: its deadline, or the end
    /// of a lapsed claim's lease), earliest first.
    pub due: Vec<(String, u64)>,
}

/// How long a replica holds a due deadline it claimed before another may take it over, counted
/// from the deadline.
pub const CLAIM_LEASE_MS: u64 = 5_000;
/// How far ahead of a deadline the flag worker claims the game and judges it, so that only the
/// final commit stays between the deadline and the game's end: it covers the claim's and the
/// load's round trips under load.
pub const CLAIM_AHEAD_MS: u64 = 50;
/// How many due games the flag worker claims at once.
pub const CLAIM_BATCH: usize = 256;
/// How many games the flag worker ends at once.
pub const FLAG_CONCURRENCY: usize = 32;
/// The flag worker reads the index at least this often, whatever it was told.
pub const MAX_FLAG_SLEEP: Duration = Duration::from_secs(1);

/// What the flag worker works on: a deadline index and a way to end a game on time.
pub trait DeadlineSource: Send + Sync {
    /// The error of the source's store.
    type Error: std::fmt::Display + Send;

    /// The earliest deadline filed, and the store's time now (Unix ms, the same base).
    fn next_deadline(&self)
    -> impl Future<Output = Result<(Option<u64>, u64), Self::Error>> + Send;

    /// Claims up to `max` games due by the store's now + `ahead` ms, for `lease` ms past their
    /// deadlines (see [`DeadlineIndex::claim`]).
    fn claim_due(
        &self,
        ahead: u64,
        lease: u64,
        max: usize,
    ) -> impl Future<Output = Result<Claimed, Self::Error>> + Send;

    /// Ends game `id` on time if one of its deadlines has passed (re-checked atomically, and
    /// idempotent); otherwise files it again at its real deadline. The game may be loaded and
    /// judged at once, but the end is not committed before `not_before` (the deadline on this
    /// process's monotonic clock).
    fn end_on_time(
        &self,
        id: &str,
        not_before: tokio::time::Instant,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;

    /// Notified when a new earliest deadline may have been filed (by any replica).
    fn deadline_changed(&self) -> Arc<tokio::sync::Notify>;
}

use watchers::until_down;

/// Ends on time every game of `source` whose deadline has passed, until `shutdown` turns true.
/// Any number of replicas may run it on one store.
///
/// It sleeps until [`CLAIM_AHEAD_MS`] before the earliest deadline (or until an earlier one is
/// announced), claims the games due by then with a lease, and has each judged at once and its
/// end committed at its deadline: the claim's and the load's round trips happen before the
/// deadline, and only the commit after it.
pub async fn run_flag_worker<S: DeadlineSource>(
    source: &S,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    use futures_util::StreamExt;
    let notify = source.deadline_changed();
    loop {
        if *shutdown.borrow() {
            return;
        }
        let sleep = match source.next_deadline().await {
            Ok((Some(at), now)) => {
                Duration::from_millis(at.saturating_sub(CLAIM_AHEAD_MS).saturating_sub(now))
                    .min(MAX_FLAG_SLEEP)
            }
            Ok((None, _)) => MAX_FLAG_SLEEP,
            Err(e) => {
                tracing::debug!(error = %e, "flag worker cannot read the deadline index");
                MAX_FLAG_SLEEP
            }
        };
        if !sleep.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(sleep) => {}
                () = notify.notified() => continue,
                () = until_down(&mut shutdown) => return,
            }
        }
        let claimed = match source
            .claim_due(CLAIM_AHEAD_MS, CLAIM_LEASE_MS, CLAIM_BATCH)
            .await
        {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::debug!(error = %e, "flag worker cannot claim deadlines");
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(100)) => {}
                    () = until_down(&mut shutdown) => return,
                }
                continue;
            }
        };
        // The store's `now` was read before its reply travelled here, so a deadline mapped from
        // it onto this process's clock is never early on the store's clock.
        let received = tokio::time::Instant::now();
        // Up to FLAG_CONCURRENCY at once, earliest first: games due together end together.
        futures_util::stream::iter(claimed.due)
            .for_each_concurrent(FLAG_CONCURRENCY, |(id, at)| async move {
                let not_before = received + Duration::from_millis(at.saturating_sub(claimed.now));
                if let Err(e) = source.end_on_time(&id, not_before).await {
                    tracing::warn!(id = %id, error = %e, "cannot end a game on time yet");
                }
            })
            .await;
    }
}

/// Listens for new earliest deadlines announced by any replica on `channel` and wakes this
/// process's flag worker through `notify`, until `shutdown` turns true. On every
/// (re)subscription it wakes the worker once, which reads the index again.
pub async fn listen_for_deadlines(
    client: redis::Client,
    channel: &'static str,
    notify: Arc<tokio::sync::Notify>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    use tokio_stream::StreamExt;
    let mut delay = Duration::from_millis(100);
    loop {
        let subscribed = async {
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(channel).await?;
            Ok::<_, redis::RedisError>(pubsub)
        };
        let pubsub = tokio::select! {
            r = subscribed => r,
            () = until_down(&mut shutdown) => return,
        };
        match pubsub {
            Ok(mut pubsub) => {
                delay = Duration::from_millis(100);
                notify.notify_one();
                let mut messages = pubsub.on_message();
                loop {
                    tokio::select! {
                        m = messages.next() => match m {
                            Some(_) => notify.notify_one(),
                            None => {
                                tracing::warn!(channel, "lost a Redis subscription; reconnecting");
                                break;
                            }
                        },
                        () = until_down(&mut shutdown) => return,
                    }
                }
            }
            Err(e) => {
                tracing::warn!(channel, error = %e, "cannot subscribe yet; retrying");
            }
        }
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = until_down(&mut shutdown) => return,
        }
        delay = (delay * 2).min(Duration::from_secs(5));
    }
}

/// Reads Redis's `TIME` as Unix ms.
pub async fn redis_now<C: redis::aio::ConnectionLike + Send>(
    conn: &mut C,
) -> redis::RedisResult<u64> {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(conn).await?;
    Ok(secs * 1000 + micros / 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_orders_claims_and_announces_new_earliest_deadlines() {
        let mut ix = DeadlineIndex::default();
        assert!(ix.set("a", Some(100)));
        assert!(!ix.set("b", Some(200)));
        assert!(ix.set("c", Some(50)));
        assert_eq!(ix.first(), Some(50));
        assert!(!ix.set("c", None));
        assert_eq!((ix.first(), ix.len()), (Some(100), 2));
        let claimed = ix.claim(150, 0, 1_000, 10);
        assert_eq!(claimed.due, vec![("a".to_owned(), 100)]);
        assert_eq!(ix.first(), Some(200));
        assert!(ix.claim(150, 0, 1_000, 10).due.is_empty());
        // Claimed ahead: the lease counts from the deadline.
        assert_eq!(
            ix.claim(150, 60, 1_000, 10).due,
            vec![("b".to_owned(), 200)]
        );
        assert_eq!(ix.first(), Some(1_150));
        // A lapsed lease is taken over: its entry is due at the lease's end.
        assert_eq!(
            ix.claim(1_200, 0, 1_000, 1).due,
            vec![("a".to_owned(), 1_150)]
        );
        assert_eq!(ix.first(), Some(1_200));
    }

    #[test]
    fn process_time_never_goes_back() {
        let a = process_now();
        let b = process_now();
        assert!(b >= a && a > 1_600_000_000_000);
    }
}
