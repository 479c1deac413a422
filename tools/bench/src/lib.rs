//! # arbiter-bench
//!
//! Load generators for Arbiter's services, driven by `arbiter bench` ([`command`]: its
//! arguments and the orchestration of each bench). They reach a server only
//! through the generated gRPC clients, like any other client, so they measure what a platform
//! would see; they know no service crate.
//!
//! - [`analysis`]: live analysis: the time to the first info, and the cancel latency;
//! - [`jobs`]: batch jobs' positions/s through the service against the engine alone;
//! - [`rules`]: unary and streaming validation next to the gRPC stack's no-op ceiling;
//! - [`matches`](mod@matches): many hosted matches of one variant played at once through `MakeMove`;
//! - [`clocks`]: an open-loop move rate on thousands of games with clocks, against the same load
//!   without clocks, and the delay of flags that fall with no move sent;
//! - [`system`]: a platform's load on a whole deployment: games with clocks and a watcher each,
//!   flags and pool joins at once.
//!
//! **Failures.** A server may restart or be replaced under a run (replicas behind a proxy). Every
//! call a load generator makes is idempotent — reads, and changes that carry a request id (or,
//! for a move, its seat, ply and text) that the server recognises when repeated — so a call that
//! fails for a reason that passes ([`arbiter_kit::retry::transient`]) is retried under
//! [`RETRY`]; one that still fails is counted as an error and the run goes on. A broken stream
//! is opened again. Only a failure that is an answer (a refused request, a bad credential) ends
//! a run. Each report gives its retries and errors. A retried call's latency counts from its
//! first attempt, retries and their pauses included: a run with retries measured them.
#![warn(missing_docs)]

pub mod analysis;
pub mod clocks;
pub mod command;
pub mod jobs;
pub mod matches;
pub mod rules;
pub mod system;

use arbiter_kit::retry::{RetryPolicy, transient};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tonic::Status;
use tonic::transport::Channel;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

/// Waits until the server's health service reports `service` as `SERVING` (a match service
/// whose Redis is still connecting is `NOT_SERVING`), so that a run measures a ready server.
/// Gives up after `timeout` with the last status seen.
pub async fn wait_until_serving(
    channel: Channel,
    service: &str,
    timeout: Duration,
) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    let mut health = HealthClient::new(channel);
    loop {
        let seen = match health
            .check(HealthCheckRequest {
                service: service.to_owned(),
            })
            .await
        {
            Ok(r) if r.get_ref().status == ServingStatus::Serving as i32 => return Ok(()),
            Ok(r) => format!("{:?}", r.get_ref().status()),
            Err(status) => format!("{}: {}", status.code(), status.message()),
        };
        if Instant::now() >= deadline {
            return Err(format!(
                "{service} was not serving after {timeout:?} (health: {seen})"
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The retries of each call of a load generator: pauses up to 50 ms, 100 ms, … 1 s (each drawn
/// at random up to that), at most 8 attempts, none begun 5 s after the first: enough to ride
/// over a server process restarting.
pub const RETRY: RetryPolicy = RetryPolicy {
    base: Duration::from_millis(50),
    cap: Duration::from_secs(1),
    max_attempts: 8,
    deadline: Some(Duration::from_secs(5)),
};

/// The retries and the failed calls of a run, shared by its tasks.
#[derive(Debug, Default)]
pub struct Tally {
    retries: AtomicU64,
    errors: AtomicU64,
}

impl Tally {
    /// Runs one idempotent call under [`RETRY`], counting its retries. `call` makes one attempt
    /// each time it is called.
    ///
    /// # Errors
    /// The last attempt's status.
    pub async fn call<T, F, Fut>(&self, call: F) -> Result<T, Status>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Status>>,
    {
        RETRY
            .run_with(
                transient,
                |_, _| {
                    self.retries.fetch_add(1, Ordering::Relaxed);
                },
                call,
            )
            .await
    }

    /// Counts a failed call the run can go on after (a [`transient`] failure whose retries
    /// were spent), or hands back a failure that ends the run (an answer: the same request
    /// would get it again).
    ///
    /// # Errors
    /// `status`, when it is not transient.
    pub fn absorb(&self, status: Status) -> Result<(), Status> {
        if transient(&status) {
            self.errors.fetch_add(1, Ordering::Relaxed);
            Ok(())
        } else {
            Err(status)
        }
    }

    /// Counts one retry made outside [`Tally::call`] (a broken stream opened again).
    pub fn retried(&self) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }

    /// Retries made so far.
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// Calls that failed for good so far (the run went on).
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }
}

/// An id of this run (the time and the process) for the request ids of the creations it makes:
/// a store in Redis outlives a run, and a creation under an id of an earlier run would be
/// answered with that run's match.
pub(crate) fn run_id() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!("{ms}-{}", std::process::id())
}
