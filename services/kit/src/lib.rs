//! # arbiter-kit
//!
//! What every Arbiter service shares, so that each service crate holds only its own domain:
//!
//! - [`serving`]: the [`serving::Host`] scaffold (health, reflection, tracing spans,
//!   limits, the oversize → `RESOURCE_EXHAUSTED` layer, graceful shutdown) and the flags every
//!   server binary shares;
//! - [`error`]: [`ApiError`], the one map from a refusal to a `tonic::Status` with its
//!   field violation or reason;
//! - [`access`]: who may call what: the method → scope table and the layer that checks every
//!   call's API key, scope and rate limit; [`keys`]: API keys and the keys file;
//! - [`auth`]: bearer tokens (seat tokens) and the platform token's flags;
//! - [`cpu`]: the bounded pool CPU-heavy requests run in, stopped when their request goes away;
//! - [`convert`]: `arbiter-core` values to and from `arbiter.common.v1` messages;
//! - [`probe`]: `health-check`, the subcommand with which a binary probes its own health.
//! - [`tls`]: TLS and mutual TLS for servers (certificates reloaded while serving) and for
//!   clients, on the ring provider.
//! - [`metrics`]: Prometheus metrics; [`trace`]: OpenTelemetry traces over OTLP.
//!
//! Services never depend on one another; they depend on this crate, the core and the generated
//! protocol code.
#![warn(missing_docs)]

pub mod access;
pub mod auth;
pub mod convert;
pub mod cpu;
pub mod error;
mod gate;
pub mod keys;
pub mod metrics;
pub mod probe;
pub mod retry;
pub mod serving;
pub mod tls;
pub mod trace;
mod web;

pub use error::ApiError;

/// This process's time in Unix ms: the wall clock read once, then advanced by the monotonic
/// clock, so that it never goes back (the time base of every in-process store).
pub fn process_now() -> u64 {
    use std::sync::OnceLock;
    use std::time::{Instant, SystemTime};
    static ANCHOR: OnceLock<(Instant, u64)> = OnceLock::new();
    let (instant, unix) = ANCHOR.get_or_init(|| {
        let unix = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        (Instant::now(), unix)
    });
    unix + u64::try_from(instant.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// `bytes` in lower-case hex, two digits a byte: the text form of digests, random ids and keys.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(2 * bytes.len()), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}
pub use serving::{
    Host, LogArgs, LogFormat, ServeArgs, ServeConfig, ServeError, follow_health, init_tracing,
    shutdown_signal,
};

/// Turns a domain result into a gRPC reply: the value in a `Response`, the refusal through
/// [`ApiError`]'s one `Status` map.
pub fn reply<T, E: Into<ApiError>>(r: Result<T, E>) -> Result<tonic::Response<T>, tonic::Status> {
    r.map(tonic::Response::new)
        .map_err(|e| tonic::Status::from(e.into()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn process_time_never_goes_back() {
        let a = super::process_now();
        let b = super::process_now();
        assert!(b >= a && a > 1_600_000_000_000);
    }
}
