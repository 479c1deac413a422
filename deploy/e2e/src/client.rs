//! How the test's platform and players reach the topology: one HTTP/2 connection to the proxy
//! (which balances per call), bearer credentials, and the retries a real client makes.

use arbiter_kit::retry::RetryPolicy;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status};

/// The proxy's published address (`ARBITER_PROXY_PORT` of the compose file, default 50100).
pub const PROXY: &str = "http://127.0.0.1:50100";

/// Each replica's published address, by compose service.
pub fn replica_address(service: &str) -> Option<&'static str> {
    Some(match service {
        "rules-1" => "http://127.0.0.1:50101",
        "rules-2" => "http://127.0.0.1:50102",
        "matches-1" => "http://127.0.0.1:50103",
        "matches-2" => "http://127.0.0.1:50104",
        "analysis-1" => "http://127.0.0.1:50105",
        "analysis-2" => "http://127.0.0.1:50106",
        "clock" => "http://127.0.0.1:50107",
        "matchmaking" => "http://127.0.0.1:50108",
        _ => return None,
    })
}

/// A lazily connecting channel to `address` that reconnects by itself, with keepalives (a
/// dead peer is noticed within seconds, not at the next call).
///
/// # Errors
/// When `address` is not a URI.
pub fn channel(address: &str) -> Result<Channel, String> {
    Ok(Endpoint::from_shared(address.to_owned())
        .map_err(|e| format!("{address}: {e}"))?
        .connect_timeout(Duration::from_secs(2))
        .http2_keep_alive_interval(Duration::from_secs(5))
        .keep_alive_timeout(Duration::from_secs(5))
        .keep_alive_while_idle(true)
        .connect_lazy())
}

/// `message` with `authorization: Bearer <token>`.
pub fn bearer<T>(message: T, token: &str) -> Request<T> {
    let mut request = Request::new(message);
    if let Ok(value) = format!("Bearer {token}").parse() {
        request.metadata_mut().insert("authorization", value);
    }
    request
}

/// `message` with the API key `key` in `x-api-key` (the platform's calls).
pub fn keyed<T>(message: T, key: &str) -> Request<T> {
    let mut request = Request::new(message);
    if let Ok(value) = key.parse() {
        request.metadata_mut().insert("x-api-key", value);
    }
    request
}

/// The players' and the platform's retries: long enough to ride over a Redis restart or a
/// replica's replacement (the faults of the day), as a platform's client would be configured.
pub const PATIENT: RetryPolicy = RetryPolicy {
    base: Duration::from_millis(100),
    cap: Duration::from_secs(1),
    max_attempts: 200,
    deadline: Some(Duration::from_secs(60)),
};

/// Counts the retries of the day's calls.
#[derive(Debug, Default)]
pub struct Retries(AtomicU64);

impl Retries {
    /// Runs one idempotent call under [`PATIENT`], counting its retries.
    ///
    /// # Errors
    /// The last attempt's status.
    pub async fn call<T, F, Fut>(&self, call: F) -> Result<T, Status>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Status>>,
    {
        PATIENT
            .run_with(
                arbiter_kit::retry::transient,
                |_, _| {
                    self.0.fetch_add(1, Ordering::Relaxed);
                },
                call,
            )
            .await
    }

    /// Counts one retry made outside [`Retries::call`] (a stream opened again).
    pub fn add(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Retries so far.
    pub fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}
