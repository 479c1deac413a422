//! The flag worker every replica runs, and the subscription that wakes it when any replica
//! files a new earliest deadline.

use crate::deadlines::{Deadlines, Unavailable};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

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

/// How often the flag worker samples the size of the deadline index (`arbiter_clocks_running`).
const SAMPLE_EVERY: Duration = Duration::from_secs(10);

/// How many times a game is judged again, on fresh data, when a change raced the end on time.
pub const END_ATTEMPTS: usize = 4;

/// What a store answered to an end on time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Committed<R> {
    /// Applied: the game ended on time.
    Applied,
    /// The game is over already, or gone: nothing to do.
    Gone,
    /// A guard failed (the clocks changed, or the deadline has not passed by the store's time):
    /// the game as it stands now.
    Refused(R),
    /// Something else changed meanwhile: judge again.
    Retry,
}

/// A service's games that end on time: how its domain loads one, judges its end at its
/// earliest deadline and commits it. [`end_on_time`] is the protocol every such service runs
/// (the flag worker calls it), so the match and clock services differ only in these hooks.
pub trait Timed: Send + Sync {
    /// What its games are called in metrics (the `game` label: `match`, `clock`).
    const GAME: &'static str;

    /// A game as loaded.
    type Record: Send + Sync;
    /// The guarded change that ends a game on time.
    type Ending: Send + Sync;
    /// The domain's error.
    type Error: From<Unavailable> + std::fmt::Display + Send;

    /// The store's deadline index and time base.
    fn deadlines(&self) -> Deadlines<'_>;

    /// Game `id` as stored, if any.
    fn load(
        &self,
        id: &str,
    ) -> impl Future<Output = Result<Option<Self::Record>, Self::Error>> + Send;

    /// Whether the game is over.
    fn is_over(&self, record: &Self::Record) -> bool;

    /// The game's end at its earliest deadline (`None` when no deadline runs): the deadline
    /// (Unix ms) and the change that records it, guarded by the clocks it was judged on, which
    /// the store applies only once that deadline has passed by its own time.
    fn judge(&self, record: &Self::Record) -> Result<Option<(u64, Self::Ending)>, Self::Error>;

    /// Applies `ending` to game `id`.
    fn commit(
        &self,
        id: &str,
        ending: &Self::Ending,
    ) -> impl Future<Output = Result<Committed<Self::Record>, Self::Error>> + Send;

    /// Whether `now` has the clocks `judged` had (a refusal then means: not due yet).
    fn same_clocks(&self, judged: &Self::Record, now: &Self::Record) -> bool;

    /// The game's earliest deadline (Unix ms), if a clock runs.
    fn deadline(&self, record: &Self::Record) -> Option<u64>;

    /// Told that this call ended game `id` at `deadline` (to wake its watchers).
    fn ended(&self, id: &str, deadline: u64);
}

/// Ends game `id` of `domain` on time if one of its deadlines has passed, re-checked by the
/// store and idempotent; returns whether this call ended it. The game is loaded and judged at
/// once, but the end is not committed before `not_before` (the deadline on this process's
/// monotonic clock: the flag worker claims games ahead of their deadlines). A game over, gone or
/// without a running clock leaves the index; one not due yet (the store's time is behind) is
/// filed again at its real deadline; one changed meanwhile (a move in time) is judged again,
/// up to [`END_ATTEMPTS`] times.
///
/// # Errors
/// The domain's, or the index's.
pub async fn end_on_time<T: Timed>(
    domain: &T,
    id: &str,
    not_before: tokio::time::Instant,
) -> Result<bool, T::Error> {
    for _ in 0..END_ATTEMPTS {
        let judged = match domain.load(id).await? {
            Some(record) if !domain.is_over(&record) => {
                domain.judge(&record)?.map(|ending| (record, ending))
            }
            _ => None,
        };
        let Some((record, (deadline, ending))) = judged else {
            domain.deadlines().reindex(id, None).await?;
            return Ok(false);
        };
        tokio::time::sleep_until(not_before).await;
        match domain.commit(id, &ending).await? {
            Committed::Applied => {
                domain.ended(id, deadline);
                return Ok(true);
            }
            Committed::Gone => return Ok(false),
            Committed::Refused(now) if domain.same_clocks(&record, &now) => {
                // Not due yet: file it again at its real deadline.
                domain
                    .deadlines()
                    .reindex(id, domain.deadline(&now))
                    .await?;
                return Ok(false);
            }
            Committed::Refused(_) | Committed::Retry => {}
        }
    }
    Ok(false)
}

use crate::watchers::until_down;

/// Ends on time ([`end_on_time`]) every game of `domain` whose deadline has passed, until
/// `shutdown` turns true. Any number of replicas may run it on one store.
///
/// It sleeps until [`CLAIM_AHEAD_MS`] before the earliest deadline (or until an earlier one is
/// announced), claims the games due by then with a lease, and has each judged at once and its
/// end committed at its deadline: the claim's and the load's round trips happen before the
/// deadline, and only the commit after it.
pub async fn run_flag_worker<T: Timed>(
    domain: &T,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    use futures_util::StreamExt;
    let deadlines = domain.deadlines();
    let notify = deadlines.changed();
    let mut sampled: Option<tokio::time::Instant> = None;
    loop {
        if *shutdown.borrow() {
            return;
        }
        if sampled.is_none_or(|at| at.elapsed() >= SAMPLE_EVERY)
            && arbiter_kit::metrics::installed()
        {
            sampled = Some(tokio::time::Instant::now());
            if let Ok(n) = deadlines.filed().await {
                #[allow(clippy::cast_precision_loss)]
                metrics::gauge!("arbiter_clocks_running", "game" => T::GAME).set(n as f64);
            }
        }
        let sleep = match deadlines.next().await {
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
        let claimed = match deadlines
            .claim(CLAIM_AHEAD_MS, CLAIM_LEASE_MS, CLAIM_BATCH)
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
                match end_on_time(domain, &id, not_before).await {
                    Ok(true) => {
                        // From the deadline (on this process's clock) to the end's commit
                        // answered.
                        let late =
                            tokio::time::Instant::now().saturating_duration_since(not_before);
                        metrics::histogram!("arbiter_flag_delay_seconds", "game" => T::GAME)
                            .record(late.as_secs_f64());
                    }
                    Ok(false) => {}
                    Err(e) => tracing::warn!(id = %id, error = %e, "cannot end a game on time yet"),
                }
            })
            .await;
    }
}

/// Listens for new earliest deadlines announced by any replica on `channel` and wakes this
/// process's flag worker through `notify`, until `shutdown` turns true. On every
/// (re)subscription it wakes the worker once, which reads the index again.
pub async fn listen_for_deadlines(
    subscriber: arbiter_redis_conn::Subscriber,
    channel: &'static str,
    notify: Arc<tokio::sync::Notify>,
    shutdown: tokio::sync::watch::Receiver<bool>,
) {
    // A message or a new subscription alike: the worker reads the index again.
    let wake = |_| notify.notify_one();
    subscriber
        .follow(channel, "deadline changes", wake, shutdown)
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deadlines::MemoryDeadlines;
    use std::sync::Mutex;

    /// A game whose record is its clocks' version and deadline; its commits answer from a
    /// script of replies.
    struct Game {
        deadlines: MemoryDeadlines,
        record: Mutex<Option<(u32, u64)>>,
        replies: Mutex<Vec<Committed<(u32, u64)>>>,
        ended: Mutex<Vec<u64>>,
    }

    impl Game {
        fn new(record: Option<(u32, u64)>, replies: Vec<Committed<(u32, u64)>>) -> Game {
            let g = Game {
                deadlines: MemoryDeadlines::new(),
                record: Mutex::new(record),
                replies: Mutex::new(replies),
                ended: Mutex::new(Vec::new()),
            };
            g.deadlines.file("g", record.map(|(_, at)| at));
            g
        }
    }

    impl Timed for Game {
        const GAME: &'static str = "test";
        type Record = (u32, u64);
        type Ending = u64;
        type Error = Unavailable;
        fn deadlines(&self) -> Deadlines<'_> {
            Deadlines::Memory(&self.deadlines)
        }
        async fn load(&self, _: &str) -> Result<Option<(u32, u64)>, Unavailable> {
            Ok(*self.record.lock().unwrap())
        }
        fn is_over(&self, r: &(u32, u64)) -> bool {
            r.0 == u32::MAX
        }
        fn judge(&self, r: &(u32, u64)) -> Result<Option<(u64, u64)>, Unavailable> {
            Ok((r.1 > 0).then_some((r.1, r.1)))
        }
        async fn commit(&self, _: &str, _: &u64) -> Result<Committed<(u32, u64)>, Unavailable> {
            Ok(self.replies.lock().unwrap().remove(0))
        }
        fn same_clocks(&self, judged: &(u32, u64), now: &(u32, u64)) -> bool {
            judged.0 == now.0
        }
        fn deadline(&self, r: &(u32, u64)) -> Option<u64> {
            (r.1 > 0).then_some(r.1)
        }
        fn ended(&self, _: &str, deadline: u64) {
            self.ended.lock().unwrap().push(deadline);
        }
    }

    fn now() -> tokio::time::Instant {
        tokio::time::Instant::now()
    }

    #[tokio::test]
    async fn a_due_game_ends_once_and_is_told() {
        let g = Game::new(Some((1, 100)), vec![Committed::Applied]);
        assert!(end_on_time(&g, "g", now()).await.unwrap());
        assert_eq!(*g.ended.lock().unwrap(), [100]);
    }

    #[tokio::test]
    async fn a_game_not_due_by_the_stores_time_is_filed_at_its_real_deadline() {
        // The store refuses: same clocks, a later deadline than the claim's entry.
        let g = Game::new(Some((1, 100)), vec![Committed::Refused((1, 250))]);
        g.deadlines.file("g", Some(5_100)); // as a claim's lease leaves it
        assert!(!end_on_time(&g, "g", now()).await.unwrap());
        assert_eq!(
            Deadlines::Memory(&g.deadlines).next().await.unwrap().0,
            Some(250)
        );
        assert!(g.ended.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_game_changed_meanwhile_is_judged_again() {
        let g = Game::new(
            Some((1, 100)),
            vec![
                Committed::Refused((2, 300)),
                Committed::Retry,
                Committed::Applied,
            ],
        );
        assert!(end_on_time(&g, "g", now()).await.unwrap());
        assert!(g.replies.lock().unwrap().is_empty(), "judged three times");
        // Changed for ever: it gives up after END_ATTEMPTS, leaving the entry to a later claim.
        let g = Game::new(Some((1, 100)), vec![Committed::Retry; END_ATTEMPTS]);
        assert!(!end_on_time(&g, "g", now()).await.unwrap());
        assert_eq!(g.deadlines.len(), 1);
    }

    #[tokio::test]
    async fn games_over_gone_or_without_a_clock_leave_the_index() {
        for record in [None, Some((u32::MAX, 100)), Some((1, 0))] {
            let g = Game::new(record, Vec::new());
            g.deadlines.file("g", Some(100));
            assert!(!end_on_time(&g, "g", now()).await.unwrap());
            assert!(g.deadlines.is_empty(), "{record:?}");
        }
        // Gone at the commit: nothing else to do.
        let g = Game::new(Some((1, 100)), vec![Committed::Gone]);
        assert!(!end_on_time(&g, "g", now()).await.unwrap());
        assert!(g.ended.lock().unwrap().is_empty());
    }
}
