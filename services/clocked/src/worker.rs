//! The flag worker every replica runs, and the subscription that wakes it when any replica
//! files a new earliest deadline.

use crate::deadlines::Deadlines;
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

/// What the flag worker ends games through: the domain of a service with clocks.
pub trait EndOnTime: Send + Sync {
    /// The domain's error.
    type Error: std::fmt::Display + Send;

    /// Ends game `id` on time if one of its deadlines has passed (re-checked atomically, and
    /// idempotent); otherwise files it again at its real deadline. The game may be loaded and
    /// judged at once, but the end is not committed before `not_before` (the deadline on this
    /// process's monotonic clock).
    fn end_on_time(
        &self,
        id: &str,
        not_before: tokio::time::Instant,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send;
}

use crate::watchers::{subscribe, until_down};
use arbiter_kit::retry::{Backoff, RetryPolicy};

/// Ends on time, through `domain`, every game of `deadlines` whose deadline has passed, until
/// `shutdown` turns true. Any number of replicas may run it on one store.
///
/// It sleeps until [`CLAIM_AHEAD_MS`] before the earliest deadline (or until an earlier one is
/// announced), claims the games due by then with a lease, and has each judged at once and its
/// end committed at its deadline: the claim's and the load's round trips happen before the
/// deadline, and only the commit after it.
pub async fn run_flag_worker<D: EndOnTime>(
    deadlines: Deadlines<'_>,
    domain: &D,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    use futures_util::StreamExt;
    let notify = deadlines.changed();
    loop {
        if *shutdown.borrow() {
            return;
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
                if let Err(e) = domain.end_on_time(&id, not_before).await {
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
    let mut backoff = Backoff::new(RetryPolicy::RECONNECT);
    loop {
        let Some(pubsub) = subscribe(&client, channel, &mut shutdown).await else {
            return;
        };
        match pubsub {
            Ok(mut pubsub) => {
                backoff.reset();
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
        if !backoff.wait_or(until_down(&mut shutdown)).await {
            return;
        }
    }
}
