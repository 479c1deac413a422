//! Engine-time quotas of live analysis: each API key client with an
//! `engine_seconds_per_minute` ([`Client::engine_ms_per_minute`]) may reserve that much engine
//! time per minute for `Analyze` and `BestMove`, on [`governor`]'s GCRA.
//!
//! - **What a search is charged**: its most engine time, reserved before it is queued: its
//!   effective time limit (the request's `movetime_ms`, else the server's time cap, and no more
//!   than the call's deadline leaves) times the engine threads it may use
//!   ([`THREADS_PER_SEARCH`]). A position in which the game is over costs nothing (nothing is
//!   searched).
//! - **The quota**: `q` engine-milliseconds per minute, burst `q`: a client that has been idle
//!   for a minute may reserve `q` ms at once, and the budget refills evenly, one ms every
//!   `60_000 / q` ms.
//! - **Refusals**: a search that costs more than the whole quota can never pass:
//!   `INVALID_ARGUMENT` on `limits.movetime_ms` ([`AnalysisError::Invalid`]). One that does not
//!   fit now: `RESOURCE_EXHAUSTED` with `google.rpc.RetryInfo`, the time until it would fit
//!   ([`AnalysisError::QuotaExceeded`]). A refused search reserves nothing.
//! - **No refunds**: what a search reserved stays spent, even when it ends early (a depth or
//!   node limit reached, a forced move, a cancelled call, a refusal by the queue after the
//!   charge). GCRA cannot give cells back; a client that wants its quota to go further sets a
//!   `movetime_ms` close to what it needs.
//! - **Scope**: one [`EngineQuotas`] per service (so per process, per replica): with `n`
//!   replicas behind a balancer, a client may get up to `n` times its quota. Calls without a
//!   [`Client`] (development mode), or on a key without a quota, are not limited.
//! - **Keys**: the budget is the client's (its name), whichever key it presents, as long as its
//!   keys carry the same quota. A budget is held per client and quota: a quota changed in the
//!   keys file starts afresh at its new value, and keys of one client with different quotas
//!   draw on separate budgets.

use crate::error::AnalysisError;
use crate::live::Query;
use arbiter_kit::access::Client;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, InsufficientCapacity, Quota};
use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Engine threads one live search uses: each search runs on one of the pool's threads.
pub const THREADS_PER_SEARCH: u64 = 1;

/// How often idle clients are dropped from the limiters.
pub const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// The most engine time a search of `query` may take, in engine-milliseconds: its time limit
/// (the request's, else the server's cap), cut to `deadline_left_ms` when the call's deadline
/// comes sooner, times [`THREADS_PER_SEARCH`]; 0 when nothing will be searched.
pub fn charge_of(query: &Query, deadline_left_ms: Option<u64>) -> u64 {
    if query.outcome.is_some() {
        return 0;
    }
    let movetime = query.limits.movetime_ms.unwrap_or(u64::MAX);
    let movetime = deadline_left_ms.map_or(movetime, |left| movetime.min(left));
    movetime.saturating_mul(THREADS_PER_SEARCH)
}

/// The engine-time limiters of one service: one keyed [`governor`] limiter per quota in use
/// (a limiter has one quota; clients with the same quota share one, keyed by client name).
/// Bounded: only clients of valid keys reach it, and clients whose budget is full again
/// (idle for a minute) are dropped every [`SWEEP_EVERY`] (`retain_recent`).
#[derive(Debug, Default)]
pub struct EngineQuotas {
    inner: Mutex<Limiters>,
}

#[derive(Default)]
struct Limiters {
    by_quota: HashMap<u32, Arc<DefaultKeyedRateLimiter<Arc<str>>>>,
    swept: Option<Instant>,
}

impl std::fmt::Debug for Limiters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limiters")
            .field("quotas", &self.by_quota.len())
            .finish_non_exhaustive()
    }
}

impl EngineQuotas {
    /// No client has spent anything.
    pub fn new() -> EngineQuotas {
        EngineQuotas::default()
    }

    /// Charges `engine_ms` to `client`'s quota, if it has one (`None`: no client, no quota,
    /// nothing charged).
    ///
    /// # Errors
    /// [`AnalysisError::Invalid`] on `limits.movetime_ms` when `engine_ms` is more than the
    /// whole quota; [`AnalysisError::QuotaExceeded`] with the wait when it does not fit now.
    pub fn charge(&self, client: Option<&Client>, engine_ms: u64) -> Result<(), AnalysisError> {
        let Some(client) = client else {
            return Ok(());
        };
        let Some(quota_ms) = client.engine_ms_per_minute() else {
            return Ok(());
        };
        self.charge_to(client.name(), quota_ms, engine_ms)
    }

    /// Charges `engine_ms` to the client `name` whose quota is `quota_ms` per minute.
    ///
    /// # Errors
    /// As [`EngineQuotas::charge`].
    pub fn charge_to(
        &self,
        name: &str,
        quota_ms: u64,
        engine_ms: u64,
    ) -> Result<(), AnalysisError> {
        let Some(cells) = NonZeroU32::new(u32::try_from(engine_ms).unwrap_or(u32::MAX)) else {
            return Ok(());
        };
        // A quota past u32 ms per minute (about 71 engine-minutes per minute) is held as that.
        let per_minute = u32::try_from(quota_ms).unwrap_or(u32::MAX);
        let Some(per_minute) = NonZeroU32::new(per_minute) else {
            return Err(too_big(name, engine_ms, quota_ms));
        };
        let limiter = self.limiter(per_minute);
        let key: Arc<str> = Arc::from(name);
        match limiter.check_key_n(&key, cells) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(not_until)) => {
                let wait = not_until.wait_time_from(DefaultClock::default().now());
                let wait = wait.max(Duration::from_millis(1));
                Err(AnalysisError::QuotaExceeded {
                    description: format!(
                        "client {name} has used its live-analysis engine time ({quota_ms} \
                         engine-ms per minute): this search reserves {engine_ms} engine-ms; \
                         retry in {} ms",
                        wait.as_millis()
                    ),
                    retry_after: wait,
                })
            }
            Err(InsufficientCapacity(_)) => Err(too_big(name, engine_ms, quota_ms)),
        }
    }

    /// The limiter of quota `per_minute`, made on first use; sweeps idle clients now and then.
    fn limiter(&self, per_minute: NonZeroU32) -> Arc<DefaultKeyedRateLimiter<Arc<str>>> {
        let mut l = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if l.swept
            .is_none_or(|at| now.duration_since(at) >= SWEEP_EVERY)
        {
            l.swept = Some(now);
            l.by_quota.retain(|_, limiter| {
                limiter.retain_recent();
                limiter.shrink_to_fit();
                !limiter.is_empty()
            });
        }
        Arc::clone(l.by_quota.entry(per_minute.get()).or_insert_with(|| {
            Arc::new(DefaultKeyedRateLimiter::keyed(Quota::per_minute(
                per_minute,
            )))
        }))
    }

    /// Clients held (with budget spent), all quotas together.
    pub fn clients(&self) -> usize {
        let l = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        l.by_quota.values().map(|limiter| limiter.len()).sum()
    }
}

/// `INVALID_ARGUMENT`: a search that costs more than the whole quota never passes.
fn too_big(name: &str, engine_ms: u64, quota_ms: u64) -> AnalysisError {
    AnalysisError::invalid(
        "limits.movetime_ms",
        format!(
            "this search may use up to {engine_ms} engine-ms (its time limit, or the server's \
             cap when it sets none, × {THREADS_PER_SEARCH} thread), more than client {name}'s \
             whole quota of {quota_ms} engine-ms per minute: set a movetime_ms of at most \
             {}",
            quota_ms / THREADS_PER_SEARCH
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quota_admits_its_burst_then_asks_to_wait() {
        let q = EngineQuotas::new();
        q.charge_to("a", 1000, 500).unwrap();
        q.charge_to("a", 1000, 500).unwrap();
        let e = q.charge_to("a", 1000, 500).unwrap_err();
        let AnalysisError::QuotaExceeded { retry_after, .. } = &e else {
            panic!("{e:?}");
        };
        assert!(*retry_after > Duration::ZERO);
        assert_eq!(e.code(), tonic::Code::ResourceExhausted);
        // Another client is untouched.
        q.charge_to("b", 1000, 1000).unwrap();
        assert_eq!(q.clients(), 2);
    }

    #[test]
    fn a_search_over_the_whole_quota_never_passes() {
        let q = EngineQuotas::new();
        let e = q.charge_to("a", 1000, 1001).unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument);
        assert_eq!(e.field(), Some("limits.movetime_ms"));
        let e = q.charge_to("a", 1000, u64::MAX).unwrap_err();
        assert_eq!(e.field(), Some("limits.movetime_ms"));
        // Nothing was reserved by the refusals.
        q.charge_to("a", 1000, 1000).unwrap();
        // Free searches cost nothing, even with the budget spent.
        q.charge_to("a", 1000, 0).unwrap();
    }

    #[test]
    fn without_a_client_nothing_is_charged() {
        let q = EngineQuotas::new();
        for _ in 0..10 {
            q.charge(None, u64::MAX).unwrap();
        }
        assert_eq!(q.clients(), 0);
    }
}
