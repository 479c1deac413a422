//! How the test's platform and players reach the topology: one HTTP/2 connection over TLS to
//! the proxy (which balances per call), bearer credentials, and the retries a real client makes.

use arbiter_kit::retry::RetryPolicy;
use std::future::Future;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};
use tonic::{Request, Status};

/// The proxy's published address (`ARBITER_PROXY_PORT` of the compose file, default 50100).
pub const PROXY: &str = "https://127.0.0.1:50100";

/// Each replica's published address, by compose service.
pub fn replica_address(service: &str) -> Option<&'static str> {
    Some(match service {
        "rules-1" => "https://127.0.0.1:50101",
        "rules-2" => "https://127.0.0.1:50102",
        "matches-1" => "https://127.0.0.1:50103",
        "matches-2" => "https://127.0.0.1:50104",
        "analysis-1" => "https://127.0.0.1:50105",
        "analysis-2" => "https://127.0.0.1:50106",
        "clock" => "https://127.0.0.1:50107",
        "matchmaking" => "https://127.0.0.1:50108",
        _ => return None,
    })
}

/// The TLS every channel uses: the topology's CA (`deploy/secrets/ca.pem`), set once by [`trust`].
static TLS: OnceLock<ClientTlsConfig> = OnceLock::new();

/// Makes every [`channel`] trust the CA in `ca_file` (the compose topology's gRPC servers and
/// proxy serve certificates from `deploy/dev-secrets.sh`, naming 127.0.0.1).
///
/// # Errors
/// A file that cannot be read or holds no certificate.
pub fn trust(ca_file: &std::path::Path) -> Result<(), String> {
    let config = arbiter_kit::tls::ClientTls::new(ca_file)
        .config()
        .map_err(|e| e.to_string())?;
    let _ = TLS.set(config);
    Ok(())
}

/// A lazily connecting channel to `address` that reconnects by itself, with keepalives (a
/// dead peer is noticed within seconds, not at the next call), over TLS once [`trust`] was
/// called.
///
/// # Errors
/// When `address` is not a URI, or TLS cannot be set up.
pub fn channel(address: &str) -> Result<Channel, String> {
    let mut endpoint =
        Endpoint::from_shared(address.to_owned()).map_err(|e| format!("{address}: {e}"))?;
    if let Some(tls) = TLS.get() {
        endpoint = endpoint
            .tls_config(tls.clone())
            .map_err(|e| format!("{address}: {e}"))?;
    }
    Ok(endpoint
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
