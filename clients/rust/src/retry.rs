//! The contract's retries: which failures are retried, the backoff, request ids.

use crate::error::Error;
use std::future::Future;
use std::time::{Duration, Instant};
use tonic::{Code, Status};
use tonic_types::StatusExt;

/// When and how often a call is tried again (the contract's defaults: 6 attempts, backoff from
/// 100 ms doubling to a cap of 2 s with full jitter, 10 s per attempt, 30 s overall).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts at most, the first included.
    pub max_attempts: u32,
    /// The backoff before the first retry (before jitter).
    pub initial_backoff: Duration,
    /// The growth of the backoff per retry.
    pub multiplier: u32,
    /// The largest backoff (before jitter).
    pub max_backoff: Duration,
    /// The deadline of one attempt of a unary call.
    pub attempt_timeout: Duration,
    /// The overall deadline of a call with all its attempts (and of one reconnection of a
    /// watch).
    pub budget: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 6,
            initial_backoff: Duration::from_millis(100),
            multiplier: 2,
            max_backoff: Duration::from_secs(2),
            attempt_timeout: Duration::from_secs(10),
            budget: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The backoff ceiling before retry number `retry` (0 for the first retry):
    /// `min(max_backoff, initial_backoff × multiplier^retry)`.
    pub fn ceiling(&self, retry: u32) -> Duration {
        let factor = self.multiplier.max(1).saturating_pow(retry.min(31));
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }

    /// The wait before retry number `retry`: full jitter, uniform in `[0, ceiling(retry)]`.
    pub fn backoff(&self, retry: u32) -> Duration {
        let ceiling = u64::try_from(self.ceiling(retry).as_micros()).unwrap_or(u64::MAX);
        Duration::from_micros(random_u64() % ceiling.saturating_add(1))
    }
}

/// Whether a failed attempt of an idempotent call may be tried again: `UNAVAILABLE`,
/// `DEADLINE_EXCEEDED` (of the attempt), and `RESOURCE_EXHAUSTED` when the server says it is a
/// rate limit (a `RetryInfo` detail) or a full server (no request field named); never the
/// others (`INVALID_ARGUMENT`, `FAILED_PRECONDITION`, `NOT_FOUND`, …).
pub fn is_retryable(status: &Status) -> bool {
    match status.code() {
        Code::Unavailable | Code::DeadlineExceeded => true,
        Code::ResourceExhausted => {
            let details = status.get_error_details();
            details.retry_info().is_some() || details.bad_request().is_none()
        }
        _ => false,
    }
}

/// A status the transport made up (the connection broke: reset, broken pipe, closed before the
/// answer; tonic says `UNKNOWN`) as what it is to the contract: `UNAVAILABLE`.
pub(crate) fn transport_as_unavailable(status: Status) -> Status {
    use std::error::Error as _;
    let from_transport = status
        .source()
        .is_some_and(|e| e.is::<tonic::transport::Error>());
    if status.code() == Code::Unknown && from_transport {
        Status::unavailable(format!("the connection broke: {}", status.message()))
    } else {
        status
    }
}

/// A new request id: a random UUID v4 as a string (`8-4-4-4-12` lower-case hex digits).
pub fn new_request_id() -> String {
    let mut b = [0u8; 16];
    fill_random(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

fn fill_random(buf: &mut [u8]) {
    if getrandom::fill(buf).is_err() {
        // No OS randomness: the time's nanoseconds still spread the values.
        let mut x = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x9e37_79b9_7f4a_7c15, |d| d.as_nanos() as u64);
        for byte in buf {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *byte = x as u8;
        }
    }
}

fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    fill_random(&mut b);
    u64::from_le_bytes(b)
}

/// Runs `attempt` until it succeeds, fails for good, or the policy is spent. `attempt` gets its
/// deadline (the per-attempt timeout, or less when the overall budget ends first).
pub(crate) async fn run<T, F, Fut>(
    policy: &RetryPolicy,
    idempotent: bool,
    mut attempt: F,
) -> Result<T, Error>
where
    F: FnMut(Duration) -> Fut,
    Fut: Future<Output = Result<T, Status>>,
{
    let start = Instant::now();
    let mut tries = 0u32;
    loop {
        tries += 1;
        let remaining = policy.budget.saturating_sub(start.elapsed());
        let deadline = policy.attempt_timeout.min(remaining);
        // The attempt's deadline is the caller's own when the budget cut it short.
        let overall = deadline < policy.attempt_timeout;
        let result = match tokio::time::timeout(deadline, attempt(deadline)).await {
            Ok(r) => r,
            Err(_) => Err(Status::deadline_exceeded(format!(
                "no answer within the attempt's deadline ({} ms)",
                deadline.as_millis()
            ))),
        };
        let status = match result {
            Ok(v) => return Ok(v),
            Err(s) => transport_as_unavailable(s),
        };
        let deadline_of_caller = overall && status.code() == Code::DeadlineExceeded;
        if !idempotent || !is_retryable(&status) || deadline_of_caller {
            return Err(Error::Rpc(status));
        }
        if tries >= policy.max_attempts {
            return Err(Error::Rpc(status));
        }
        let mut wait = policy.backoff(tries - 1);
        if let Some(asked) = Error::Rpc(status.clone()).retry_after() {
            wait = wait.max(asked);
        }
        if start.elapsed() + wait >= policy.budget {
            return Err(Error::Rpc(status));
        }
        tokio::time::sleep(wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_uuid_v4() {
        let a = new_request_id();
        let b = new_request_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        let parts: Vec<&str> = a.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'));
        assert!(matches!(parts[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'));
    }

    #[test]
    fn backoff_doubles_to_its_cap_with_full_jitter() {
        let p = RetryPolicy::default();
        let ceilings: Vec<u128> = (0..7).map(|r| p.ceiling(r).as_millis()).collect();
        assert_eq!(ceilings, [100, 200, 400, 800, 1600, 2000, 2000]);
        for r in 0..7 {
            for _ in 0..50 {
                assert!(p.backoff(r) <= p.ceiling(r));
            }
        }
    }

    #[test]
    fn only_the_contracts_codes_are_retried() {
        assert!(is_retryable(&Status::unavailable("down")));
        assert!(is_retryable(&Status::deadline_exceeded("slow")));
        assert!(is_retryable(&Status::resource_exhausted(
            "full; retry later"
        )));
        let capped = Status::with_error_details(
            Code::ResourceExhausted,
            "over the node cap",
            tonic_types::ErrorDetails::with_bad_request_violation("limits.nodes", "too many"),
        );
        assert!(!is_retryable(&capped));
        for code in [
            Code::InvalidArgument,
            Code::FailedPrecondition,
            Code::NotFound,
            Code::PermissionDenied,
            Code::Unauthenticated,
            Code::AlreadyExists,
            Code::Aborted,
        ] {
            assert!(!is_retryable(&Status::new(code, "no")), "{code:?}");
        }
    }

    #[tokio::test]
    async fn an_idempotent_call_is_retried_until_it_passes_and_others_are_not() {
        let policy = RetryPolicy {
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(2),
            ..RetryPolicy::default()
        };
        let mut n = 0;
        let r = run(&policy, true, |_| {
            n += 1;
            let fail = n < 3;
            async move {
                if fail {
                    Err(Status::unavailable("down"))
                } else {
                    Ok(n)
                }
            }
        })
        .await
        .unwrap();
        assert_eq!(r, 3);
        let mut n = 0;
        let e = run(&policy, true, |_| {
            n += 1;
            async { Err::<(), _>(Status::unavailable("down")) }
        })
        .await
        .unwrap_err();
        assert_eq!((e.code(), n), (Code::Unavailable, 6));
        let mut n = 0;
        let _ = run(&policy, false, |_| {
            n += 1;
            async { Err::<(), _>(Status::unavailable("down")) }
        })
        .await;
        assert_eq!(n, 1);
        let mut n = 0;
        let _ = run(&policy, true, |_| {
            n += 1;
            async { Err::<(), _>(Status::invalid_argument("bad")) }
        })
        .await;
        assert_eq!(n, 1);
    }
}
