//! Retrying gRPC calls that failed for a reason that passes: a replica restarting behind a
//! proxy, a connection cut by a load balancer, a pod rescheduled.
//!
//! A [`RetryPolicy`] is exponential backoff with jitter, its delays drawn by the `backon` crate:
//! before retry *n* (0 for the first retry) the caller sleeps a random time between the
//! retry's floor `min(cap, base × 2ⁿ)` and twice it, so that the clients a vanished replica left
//! behind do not all come back at the same instant. It gives up after `max_attempts` attempts in
//! all, or when the next retry would start past its `deadline` (counted from the first attempt),
//! whichever comes first. [`RetryPolicy::run`] runs a call under the policy; [`Backoff`] is the
//! same schedule for loops that are not one call (a watch stream that reconnects and resumes, a
//! subscription or a connection made again, [`RetryPolicy::RECONNECT`]).
//!
//! # What is retried
//!
//! Only **idempotent calls** may be retried: reads, and state changes that carry a request id
//! the server remembers (every Arbiter state change takes one: a retry with the same id is
//! answered with what the first attempt did, and applied once). A call that is not idempotent
//! must not be given to this module: a lost answer does not tell whether it was applied.
//!
//! [`transient`] decides which failures are worth another attempt of such a call:
//!
//! - `UNAVAILABLE`: yes. The server (or the proxy in front of it) could not take the call, or
//!   the connection broke; gRPC defines it as the code to retry with backoff. tonic also reports
//!   a refused or failed connection this way.
//! - A failure made by the client from a broken connection: yes. When a connection closes under
//!   a call (a replica killed mid-request), tonic does not say `UNAVAILABLE`, as gRPC's own
//!   table of codes does: a reset mid-call is `UNKNOWN` "transport error", carrying the
//!   transport's error as its source; a stream reset by the peer (a proxy whose backend went
//!   away) is `INTERNAL`, `UNKNOWN` or `CANCELLED` "h2 protocol error: …"; a request hyper
//!   dropped because its connection had closed is `CANCELLED` "operation was canceled". A
//!   status a server sent never has a source nor these texts, so a server's own `UNKNOWN` or
//!   `INTERNAL` (a bug) is not retried. The tests at the end of this module check the
//!   classification against real connections cut under a call and a stream.
//! - `DEADLINE_EXCEEDED`: no. The call's deadline is the caller's whole budget; retrying past
//!   it breaks the caller's promise, and a slow server is only made slower by more calls. A
//!   caller with a budget larger than one attempt retries it at its own level (matchmaking's
//!   waves do).
//! - `RESOURCE_EXHAUSTED`: no. Arbiter answers it for a message over the size limit (never
//!   passes) and for load shedding (the process's requests in flight, a CPU queue, the analysis
//!   queue are full): retrying at once adds to the very load that was shed. Back off at a
//!   higher level.
//! - `ABORTED`: no. Arbiter uses it to end a matchmaking join stream whose place was given up;
//!   gRPC reserves it for conflicts to be retried at a higher level (read, decide again), never
//!   by repeating the same request.
//! - Everything else (`INVALID_ARGUMENT`, `NOT_FOUND`, `FAILED_PRECONDITION`, `ALREADY_EXISTS`,
//!   credentials, `DATA_LOSS`, …) is an answer: the same request gets the same one.
//!
//! Callers with other needs pass their own predicate to [`RetryPolicy::run_with`].

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;
use tonic::{Code, Status};

/// Exponential backoff with jitter, bounded in attempts and in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The floor of the delay before the first retry; retry *n* waits at least
    /// `min(cap, base × 2ⁿ)` and less than twice that.
    pub base: Duration,
    /// No floor exceeds this (so no delay reaches twice it).
    pub cap: Duration,
    /// Attempts in all, the first one included (1: never retry).
    pub max_attempts: u32,
    /// No retry starts later than this after the first attempt began (`None`: only
    /// `max_attempts` bounds the retries).
    pub deadline: Option<Duration>,
}

impl Default for RetryPolicy {
    /// Delays from 50 ms, doubling up to 1–2 s, 6 attempts within 10 s: rides over a replica's
    /// restart or a proxy's reconnection, and gives up well before a person would.
    fn default() -> RetryPolicy {
        RetryPolicy {
            base: Duration::from_millis(50),
            cap: Duration::from_secs(1),
            max_attempts: 6,
            deadline: Some(Duration::from_secs(10)),
        }
    }
}

impl RetryPolicy {
    /// For a loop that holds something open for the life of the process (a Redis connection,
    /// a subscription): retried for ever, from 100 ms up to 2.5–5 s between attempts.
    pub const RECONNECT: RetryPolicy = RetryPolicy {
        base: Duration::from_millis(100),
        cap: Duration::from_millis(2_500),
        max_attempts: u32::MAX,
        deadline: None,
    };

    /// The floor of the delay before retry `retry` (0 for the first retry):
    /// `min(cap, base × 2^retry)`; the delay itself is below twice it. It never decreases as
    /// `retry` grows.
    pub fn ceiling(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.cap)
    }

    /// The delays of this policy's retries, one an item, without end (the attempts and the
    /// deadline are counted by [`Backoff`]).
    fn delays(&self) -> ExponentialBackoff {
        ExponentialBuilder::new()
            .with_min_delay(self.base)
            .with_max_delay(self.cap)
            .with_factor(2.0)
            .with_jitter()
            .without_max_times()
            .build()
    }

    /// Runs `call` until it succeeds, fails with an error that is not [`transient`], or the
    /// policy gives up (then the last error is returned). `call` makes one attempt each time it
    /// is called: build the request inside it (a tonic request is consumed by its call).
    ///
    /// # Errors
    /// The last attempt's status.
    pub async fn run<T, F, Fut>(&self, call: F) -> Result<T, Status>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Status>>,
    {
        self.run_with(transient, |_, _| {}, call).await
    }

    /// [`run`](Self::run) with the caller's choice of retryable errors, and `on_retry` told of
    /// each failure that will be retried, with the delay before the retry (to count or log
    /// retries).
    ///
    /// # Errors
    /// The last attempt's status.
    pub async fn run_with<T, F, Fut, P, R>(
        &self,
        retryable: P,
        mut on_retry: R,
        mut call: F,
    ) -> Result<T, Status>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Status>>,
        P: Fn(&Status) -> bool,
        R: FnMut(&Status, Duration),
    {
        let mut backoff = Backoff::new(*self);
        loop {
            match call().await {
                Ok(value) => return Ok(value),
                Err(status) if retryable(&status) => match backoff.next_delay() {
                    Some(delay) => {
                        on_retry(&status, delay);
                        tokio::time::sleep(delay).await;
                    }
                    None => return Err(status),
                },
                Err(status) => return Err(status),
            }
        }
    }
}

/// The state of one [`RetryPolicy`] schedule: how many retries were made and since when. For a
/// loop that is not one call (a stream that reconnects): ask [`Backoff::next_delay`] (or
/// [`Backoff::wait`]) after each failure, and [`Backoff::reset`] after progress.
#[derive(Debug)]
pub struct Backoff {
    policy: RetryPolicy,
    delays: ExponentialBackoff,
    retries: u32,
    started: Instant,
}

impl Backoff {
    /// A schedule that starts now (the first attempt begins now).
    pub fn new(policy: RetryPolicy) -> Backoff {
        Backoff {
            policy,
            delays: policy.delays(),
            retries: 0,
            started: Instant::now(),
        }
    }

    /// Retries made since the start (or the last [`reset`](Self::reset)).
    pub fn retries(&self) -> u32 {
        self.retries
    }

    /// The delay before the next retry, counted as made; `None` when the policy gives up: the
    /// attempts are spent, or the retry would start past the deadline.
    pub fn next_delay(&mut self) -> Option<Duration> {
        if self.retries.saturating_add(1) >= self.policy.max_attempts {
            return None;
        }
        let delay = self.delays.next()?;
        if let Some(deadline) = self.policy.deadline
            && self.started.elapsed() + delay >= deadline
        {
            return None;
        }
        self.retries += 1;
        Some(delay)
    }

    /// Sleeps the delay before the next retry and returns `true`, or returns `false` at once
    /// when the policy gives up.
    pub async fn wait(&mut self) -> bool {
        match self.next_delay() {
            Some(delay) => {
                tokio::time::sleep(delay).await;
                true
            }
            None => false,
        }
    }

    /// [`wait`](Self::wait), unless `stop` completes first (then `false`): a loop that keeps
    /// something open for the life of the process, stopped by shutdown.
    pub async fn wait_or(&mut self, stop: impl Future<Output = ()>) -> bool {
        tokio::select! {
            more = self.wait() => more,
            () = stop => false,
        }
    }

    /// Starts the schedule again (after progress: a stream that delivered something).
    pub fn reset(&mut self) {
        self.retries = 0;
        self.delays = self.policy.delays();
        self.started = Instant::now();
    }

    /// For a stream opened again whenever it breaks: the attempt that began at `began` has just
    /// failed. If it delivered something (`progressed`) or lasted at least the policy's cap, it
    /// worked for a while, and this failure starts a new run of retries (the schedule starts
    /// again: a watch may last hours before its server goes away). Then sleeps the next delay
    /// and returns `true`, or returns `false` at once when the policy gives up.
    pub async fn wait_after(&mut self, began: Instant, progressed: bool) -> bool {
        if progressed || began.elapsed() >= self.policy.cap {
            self.reset();
        }
        self.wait().await
    }
}

/// Whether a call that failed with `status` may succeed if made again (see the
/// [module](self) for the choice of codes): `UNAVAILABLE`, and the failures tonic makes on
/// this side from a broken connection.
pub fn transient(status: &Status) -> bool {
    match status.code() {
        Code::Unavailable => true,
        Code::Unknown | Code::Internal | Code::Cancelled => broken_connection(status),
        _ => false,
    }
}

/// Whether tonic made `status` on this side from a connection that failed under the call:
/// it carries the transport's error as its source (a status decoded from a server's answer
/// never does: tonic reports a connection reset mid-call as `UNKNOWN` "transport error", with
/// hyper's error as the source), it reports an HTTP/2 reset of the stream or connection (made
/// without a source, with tonic's prefix), or it is hyper's cancellation of a request whose
/// connection closed before the request was sent (`CANCELLED` "operation was canceled").
fn broken_connection(status: &Status) -> bool {
    std::error::Error::source(status).is_some()
        || status.message().starts_with(H2_ERROR)
        || (status.code() == Code::Cancelled && status.message() == HYPER_CANCELED)
}

/// tonic's prefix of a status it makes from an HTTP/2 error.
const H2_ERROR: &str = "h2 protocol error: ";

/// hyper's text for a request it dropped because its connection closed or was not ready.
const HYPER_CANCELED: &str = "operation was canceled";

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn policy() -> RetryPolicy {
        RetryPolicy {
            base: Duration::from_millis(100),
            cap: Duration::from_secs(2),
            max_attempts: 6,
            deadline: None,
        }
    }

    #[test]
    fn ceilings_double_up_to_the_cap() {
        let p = policy();
        let ceilings: Vec<u64> = (0..8).map(|n| p.ceiling(n).as_millis() as u64).collect();
        assert_eq!(ceilings, [100, 200, 400, 800, 1600, 2000, 2000, 2000]);
        // No overflow, however many retries.
        assert_eq!(p.ceiling(31), p.cap);
        assert_eq!(p.ceiling(32), p.cap);
        assert_eq!(p.ceiling(u32::MAX), p.cap);
    }

    /// The delays a fresh schedule of `p` gives, `n` of them.
    fn schedule(p: RetryPolicy, n: usize) -> Vec<Duration> {
        let mut b = Backoff::new(RetryPolicy {
            max_attempts: u32::MAX,
            deadline: None,
            ..p
        });
        (0..n).map(|_| b.next_delay().unwrap()).collect()
    }

    #[test]
    fn delays_lie_between_the_floor_and_twice_it() {
        let p = policy();
        for _ in 0..200 {
            for (retry, d) in schedule(p, 10).into_iter().enumerate() {
                let floor = p.ceiling(retry as u32);
                assert!(d >= floor && d <= floor * 2, "retry {retry}: {d:?}");
            }
        }
    }

    #[test]
    fn random_delays_spread_and_grow_with_the_retry() {
        let p = policy();
        let runs: Vec<Vec<Duration>> = (0..2000).map(|_| schedule(p, 5)).collect();
        let means: Vec<f64> = (0..5)
            .map(|retry| runs.iter().map(|r| r[retry].as_secs_f64()).sum::<f64>() / 2000.0)
            .collect();
        // Uniform between the floor and twice it: the mean is 1.5 floors (within a wide margin).
        for (retry, m) in means.iter().enumerate() {
            let mid = p.ceiling(retry as u32).as_secs_f64() * 1.5;
            assert!(
                (m - mid).abs() < mid * 0.1,
                "retry {retry}: mean {m}, expected {mid}"
            );
        }
        assert!(means.windows(2).all(|w| w[0] < w[1]), "{means:?}");
        // Jitter: not everyone waits the same.
        let distinct: std::collections::HashSet<Duration> = runs.iter().map(|r| r[3]).collect();
        assert!(distinct.len() > 1900);
    }

    #[tokio::test(start_paused = true)]
    async fn a_reconnect_loop_retries_for_ever_and_stops_on_shutdown() {
        let mut b = Backoff::new(RetryPolicy::RECONNECT);
        for _ in 0..100 {
            assert!(b.wait_or(std::future::pending()).await);
        }
        assert!(
            b.next_delay().unwrap() < RetryPolicy::RECONNECT.cap * 2,
            "capped"
        );
        assert!(!b.wait_or(async {}).await, "stopped");
    }

    /// A fake call that fails with `failure` `failures` times, then answers its attempt number.
    fn flaky(
        failures: u32,
        failure: Code,
    ) -> (
        Arc<AtomicU32>,
        impl FnMut() -> std::future::Ready<Result<u32, Status>>,
    ) {
        let calls = Arc::new(AtomicU32::new(0));
        let counter = Arc::clone(&calls);
        let call = move || {
            let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
            std::future::ready(if n <= failures {
                Err(Status::new(failure, format!("attempt {n}")))
            } else {
                Ok(n)
            })
        };
        (calls, call)
    }

    #[tokio::test(start_paused = true)]
    async fn succeeds_after_transient_failures() {
        let (calls, call) = flaky(3, Code::Unavailable);
        let mut delays = Vec::new();
        let r = policy()
            .run_with(transient, |_, d| delays.push(d), call)
            .await;
        assert_eq!(r.unwrap(), 4);
        assert_eq!(calls.load(Ordering::SeqCst), 4);
        assert_eq!(delays.len(), 3);
        for (n, d) in delays.iter().enumerate() {
            assert!(*d >= policy().ceiling(n as u32) && *d <= 2 * policy().ceiling(n as u32));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_non_transient_error_is_not_retried() {
        for code in [
            Code::InvalidArgument,
            Code::NotFound,
            Code::FailedPrecondition,
            Code::AlreadyExists,
            Code::PermissionDenied,
            Code::DeadlineExceeded,
            Code::ResourceExhausted,
            Code::Aborted,
            Code::Internal,
            Code::Unknown,
            Code::Cancelled,
        ] {
            let (calls, call) = flaky(1, code);
            let r = policy().run(call).await;
            assert_eq!(r.unwrap_err().code(), code);
            assert_eq!(calls.load(Ordering::SeqCst), 1, "{code:?} was retried");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn gives_up_after_max_attempts() {
        let (calls, call) = flaky(u32::MAX, Code::Unavailable);
        let r = policy().run(call).await;
        let e = r.unwrap_err();
        assert_eq!(e.code(), Code::Unavailable);
        assert_eq!(e.message(), "attempt 6", "the last attempt's error");
        assert_eq!(calls.load(Ordering::SeqCst), 6);

        let once = RetryPolicy {
            max_attempts: 1,
            ..policy()
        };
        let (calls, call) = flaky(u32::MAX, Code::Unavailable);
        assert!(once.run(call).await.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn gives_up_at_the_deadline() {
        // Each attempt takes 1 s (of paused time); no retry starts 3.5 s after the first.
        let p = RetryPolicy {
            max_attempts: 1000,
            deadline: Some(Duration::from_millis(3500)),
            ..policy()
        };
        let calls = Arc::new(AtomicU32::new(0));
        let started = Instant::now();
        let r: Result<(), Status> = p
            .run(|| {
                let calls = Arc::clone(&calls);
                async move {
                    calls.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    Err(Status::unavailable("down"))
                }
            })
            .await;
        assert!(r.is_err());
        let n = calls.load(Ordering::SeqCst);
        assert!((2..=4).contains(&n), "{n} attempts");
        // The last attempt began before the deadline (paused time: exact, no wall clock).
        assert!(started.elapsed() < Duration::from_millis(3500) + Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_backoff_starts_again_after_progress() {
        let p = RetryPolicy {
            max_attempts: 3,
            ..policy()
        };
        let mut b = Backoff::new(p);
        assert!(b.wait().await);
        assert!(b.wait().await);
        assert_eq!(b.retries(), 2);
        assert!(!b.wait().await, "3 attempts: 2 retries");
        b.reset();
        assert_eq!(b.retries(), 0);
        assert!(b.next_delay().is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_that_worked_a_while_starts_a_new_run_of_retries() {
        let p = RetryPolicy {
            max_attempts: 3,
            deadline: Some(Duration::from_secs(5)),
            ..policy()
        };
        let mut b = Backoff::new(p);
        // A stream open for an hour breaks: past the deadline, yet retried.
        let began = Instant::now();
        tokio::time::sleep(Duration::from_secs(3600)).await;
        assert!(b.wait_after(began, false).await);
        // Attempts that fail at once are one run: the attempts run out.
        let began = Instant::now();
        assert!(b.wait_after(began, false).await);
        assert_eq!(b.retries(), 2);
        let began = Instant::now();
        assert!(!b.wait_after(began, false).await);
        // One that delivered something starts a run again.
        let began = Instant::now();
        assert!(b.wait_after(began, true).await);
        assert_eq!(b.retries(), 1);
    }

    #[test]
    fn transient_codes() {
        assert!(transient(&Status::unavailable("down")));
        // A server's own answers, whatever the code, are not retried (but UNAVAILABLE).
        for code in [
            Code::Unknown,
            Code::Internal,
            Code::Cancelled,
            Code::DeadlineExceeded,
            Code::ResourceExhausted,
            Code::Aborted,
            Code::NotFound,
        ] {
            assert!(!transient(&Status::new(code, "x")), "{code:?}");
        }
        // Made on this side from a broken connection.
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        assert!(transient(&Status::from_error(Box::new(io))));
        assert!(transient(&Status::cancelled("operation was canceled")));
        assert!(transient(&Status::internal(
            "h2 protocol error: stream error received: unexpected internal error encountered"
        )));
        // tonic's own timeout of an attempt is not a broken connection.
        assert!(!transient(&Status::cancelled("Timeout expired")));
    }
}

/// What a client sees when a replica goes away, through a real connection: tonic's failures
/// are classified as [`transient`], and the channel connects again by itself.
#[cfg(test)]
mod transport {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::task::JoinHandle;
    use tonic::transport::{Channel, Endpoint};
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_client::HealthClient;

    /// A TCP relay standing for a proxy in front of one replica. Forwarding, it relays each
    /// connection to the server; swallowing, it reads what the client sends and answers nothing
    /// (a replica that took the request and died before answering). [`Relay::cut`] drops
    /// every connection it holds.
    struct Relay {
        url: String,
        swallow: Arc<AtomicBool>,
        held: Arc<Mutex<Vec<JoinHandle<()>>>>,
    }

    impl Relay {
        async fn start(target: std::net::SocketAddr) -> Relay {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}", listener.local_addr().unwrap());
            let swallow = Arc::new(AtomicBool::new(false));
            let held: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
            let (s, h) = (Arc::clone(&swallow), Arc::clone(&held));
            tokio::spawn(async move {
                while let Ok((mut client, _)) = listener.accept().await {
                    let swallow = s.load(Ordering::SeqCst);
                    h.lock().unwrap().push(tokio::spawn(async move {
                        if swallow {
                            let _ = tokio::io::copy(&mut client, &mut tokio::io::sink()).await;
                        } else if let Ok(mut server) = TcpStream::connect(target).await {
                            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                        }
                    }));
                }
            });
            Relay { url, swallow, held }
        }

        fn cut(&self) {
            for h in self.held.lock().unwrap().drain(..) {
                h.abort();
            }
        }
    }

    async fn health_server() -> std::net::SocketAddr {
        let (_reporter, service) = tonic_health::server::health_reporter();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
        );
        addr
    }

    fn channel(url: &str) -> Channel {
        Endpoint::from_shared(url.to_owned())
            .unwrap()
            .connect_timeout(Duration::from_secs(5))
            .connect_lazy()
    }

    fn check() -> tonic::Request<HealthCheckRequest> {
        let mut r = tonic::Request::new(HealthCheckRequest {
            service: String::new(),
        });
        r.set_timeout(Duration::from_secs(10));
        r
    }

    #[tokio::test]
    async fn nothing_listening_is_transient() {
        let addr = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap()
            .local_addr()
            .unwrap();
        let mut client = HealthClient::new(channel(&format!("http://{addr}")));
        let e = client.check(check()).await.unwrap_err();
        assert!(transient(&e), "{e:?}");
    }

    #[tokio::test]
    async fn a_call_whose_connection_closes_is_transient_and_the_channel_reconnects() {
        let relay = Relay::start(health_server().await).await;
        let mut client = HealthClient::new(channel(&relay.url));
        client.check(check()).await.unwrap();

        // The replica dies with a call in flight: the request reached it, no answer comes.
        relay.cut();
        relay.swallow.store(true, Ordering::SeqCst);
        let call = tokio::spawn({
            let mut client = client.clone();
            async move { client.check(check()).await }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        relay.cut();
        let e = call.await.unwrap().unwrap_err();
        assert!(transient(&e), "{e:?}");

        // Back: the same channel connects again by itself.
        relay.swallow.store(false, Ordering::SeqCst);
        let r = RetryPolicy::default()
            .run(|| {
                let mut client = client.clone();
                async move { client.check(check()).await }
            })
            .await;
        assert!(r.is_ok(), "{r:?}");
    }

    #[tokio::test]
    async fn a_stream_whose_connection_closes_is_transient() {
        let relay = Relay::start(health_server().await).await;
        let mut client = HealthClient::new(channel(&relay.url));
        let mut watch = client
            .watch(HealthCheckRequest {
                service: String::new(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(watch.message().await.unwrap().is_some());
        relay.cut();
        let e = watch.message().await.unwrap_err();
        assert!(transient(&e), "{e:?}");
    }
}
