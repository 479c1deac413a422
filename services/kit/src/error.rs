//! The one place where a service's refusal becomes a `tonic::Status`.
//!
//! Services classify their domain errors into an [`ApiError`] (a `From` impl next to each
//! domain error type); this module alone decides the gRPC code, the message and the structured
//! detail each class carries, so every service answers alike:
//!
//! | class | code | detail |
//! |---|---|---|
//! | [`ApiError::InvalidArgument`] | `INVALID_ARGUMENT` | `google.rpc.BadRequest` naming the field |
//! | [`ApiError::ResourceExhausted`] | `RESOURCE_EXHAUSTED` | `BadRequest` naming the limited field |
//! | [`ApiError::RateLimited`] | `RESOURCE_EXHAUSTED` | `google.rpc.RetryInfo`: when to retry |
//! | [`ApiError::FailedPrecondition`] | `FAILED_PRECONDITION` | `google.rpc.ErrorInfo` with a stable reason |
//! | [`ApiError::NotFound`] | `NOT_FOUND` | |
//! | [`ApiError::AlreadyExists`] | `ALREADY_EXISTS` | |
//! | [`ApiError::KeyReused`] | `ALREADY_EXISTS` | `google.rpc.ResourceInfo`: type the field (`request_id`), name the key |
//! | [`ApiError::Unauthenticated`] | `UNAUTHENTICATED` | |
//! | [`ApiError::PermissionDenied`] | `PERMISSION_DENIED` | |
//! | [`ApiError::Unavailable`] | `UNAVAILABLE` | |
//! | [`ApiError::DataLoss`] | `DATA_LOSS` | |
//! | [`ApiError::DeadlineExceeded`] | `DEADLINE_EXCEEDED` | |
//!
//! Messages quote client input only in bounded form (see [`quote`]), so a status never grows
//! past what gRPC clients accept in metadata.

use std::fmt;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

/// Why a request was refused, classified for the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiError {
    /// The request is malformed: `field` names the offending field (`position.text`,
    /// `moves[3]`, `move`, …).
    InvalidArgument {
        /// Path of the field in the request.
        field: String,
        /// What is wrong with it.
        description: String,
    },
    /// The request is over a server limit; `field` names what was limited.
    ResourceExhausted {
        /// Path of the field in the request.
        field: String,
        /// Which limit, and by how much.
        description: String,
    },
    /// The client is over its rate limit or quota; a retry after `retry_after` may pass.
    RateLimited {
        /// Which limit.
        description: String,
        /// How long until a call would be allowed.
        retry_after: std::time::Duration,
    },
    /// The request does not fit the current state (a stale version, out of turn, over).
    FailedPrecondition {
        /// A stable machine-readable reason (`STALE_PLY`, `NOT_YOUR_TURN`, `MATCH_OVER`, …).
        reason: &'static str,
        /// The API the reason belongs to (`arbiter.matches.v1`).
        domain: &'static str,
        /// What happened.
        description: String,
    },
    /// The named thing does not exist (or expired).
    NotFound(String),
    /// A thing with that name exists already.
    AlreadyExists(String),
    /// A key the client chose (an idempotency key) was used before for a different request.
    KeyReused {
        /// The request field that holds the key (`request_id`).
        field: String,
        /// The key.
        key: String,
        /// What happened (the status message).
        description: String,
    },
    /// The call needs a credential and carries none.
    Unauthenticated(String),
    /// The credential does not allow this call.
    PermissionDenied(String),
    /// A dependency (the match store) cannot be reached; retrying later may succeed.
    Unavailable(String),
    /// Stored data cannot be read; retrying will not help.
    DataLoss(String),
    /// The request's deadline passed (or it was cancelled) before the work finished.
    DeadlineExceeded(String),
}

impl ApiError {
    /// An `INVALID_ARGUMENT` about `field`.
    pub fn invalid(field: impl Into<String>, description: impl Into<String>) -> ApiError {
        ApiError::InvalidArgument {
            field: field.into(),
            description: description.into(),
        }
    }

    /// A `RESOURCE_EXHAUSTED` about `field`.
    pub fn exhausted(field: impl Into<String>, description: impl Into<String>) -> ApiError {
        ApiError::ResourceExhausted {
            field: field.into(),
            description: description.into(),
        }
    }

    /// A `FAILED_PRECONDITION` with a stable `reason` of the API `domain`.
    pub fn precondition(
        domain: &'static str,
        reason: &'static str,
        description: impl Into<String>,
    ) -> ApiError {
        ApiError::FailedPrecondition {
            reason,
            domain,
            description: description.into(),
        }
    }

    /// The field a field error is about (none for a limit of the server as a whole).
    pub fn field(&self) -> Option<&str> {
        match self {
            ApiError::InvalidArgument { field, .. } | ApiError::ResourceExhausted { field, .. }
                if !field.is_empty() =>
            {
                Some(field)
            }
            _ => None,
        }
    }

    /// What is wrong, without the field.
    pub fn description(&self) -> &str {
        match self {
            ApiError::InvalidArgument { description, .. }
            | ApiError::ResourceExhausted { description, .. }
            | ApiError::FailedPrecondition { description, .. }
            | ApiError::RateLimited { description, .. }
            | ApiError::KeyReused { description, .. } => description,
            ApiError::NotFound(d)
            | ApiError::AlreadyExists(d)
            | ApiError::Unauthenticated(d)
            | ApiError::PermissionDenied(d)
            | ApiError::Unavailable(d)
            | ApiError::DataLoss(d)
            | ApiError::DeadlineExceeded(d) => d,
        }
    }

    /// The gRPC code of this class.
    pub fn code(&self) -> Code {
        match self {
            ApiError::InvalidArgument { .. } => Code::InvalidArgument,
            ApiError::ResourceExhausted { .. } | ApiError::RateLimited { .. } => {
                Code::ResourceExhausted
            }
            ApiError::FailedPrecondition { .. } => Code::FailedPrecondition,
            ApiError::NotFound(_) => Code::NotFound,
            ApiError::AlreadyExists(_) | ApiError::KeyReused { .. } => Code::AlreadyExists,
            ApiError::Unauthenticated(_) => Code::Unauthenticated,
            ApiError::PermissionDenied(_) => Code::PermissionDenied,
            ApiError::Unavailable(_) => Code::Unavailable,
            ApiError::DataLoss(_) => Code::DataLoss,
            ApiError::DeadlineExceeded(_) => Code::DeadlineExceeded,
        }
    }
}

impl fmt::Display for ApiError {
    /// `field: description` for field errors, the description otherwise.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.field() {
            Some(field) => write!(f, "{field}: {}", self.description()),
            None => f.write_str(self.description()),
        }
    }
}

impl std::error::Error for ApiError {}

/// The longest status message sent, in bytes: far below the 8–16 KiB that common gRPC clients
/// accept for all metadata together. Longer messages (quoting a huge client input) are cut.
pub const MAX_MESSAGE_BYTES: usize = 1024;

/// `text` cut to at most `max` bytes at a character boundary, with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

impl From<ApiError> for Status {
    fn from(e: ApiError) -> Status {
        let message = cut(&e.to_string(), MAX_MESSAGE_BYTES);
        match &e {
            ApiError::InvalidArgument { field, description }
            | ApiError::ResourceExhausted { field, description }
                if !field.is_empty() =>
            {
                Status::with_error_details(
                    e.code(),
                    message,
                    ErrorDetails::with_bad_request_violation(
                        cut(field, MAX_QUOTE_BYTES),
                        cut(description, MAX_MESSAGE_BYTES),
                    ),
                )
            }
            ApiError::RateLimited { retry_after, .. } => Status::with_error_details(
                e.code(),
                message,
                ErrorDetails::with_retry_info(Some(*retry_after)),
            ),
            ApiError::FailedPrecondition { reason, domain, .. } => Status::with_error_details(
                e.code(),
                message,
                ErrorDetails::with_error_info(*reason, *domain, []),
            ),
            ApiError::KeyReused {
                field,
                key,
                description,
            } => Status::with_error_details(
                e.code(),
                message,
                ErrorDetails::with_resource_info(
                    cut(field, MAX_QUOTE_BYTES),
                    cut(key, MAX_QUOTE_BYTES),
                    "",
                    cut(description, MAX_MESSAGE_BYTES),
                ),
            ),
            _ => Status::new(e.code(), message),
        }
    }
}

/// The longest piece of client input a message quotes, in bytes.
pub const MAX_QUOTE_BYTES: usize = 200;

/// Client input as an error message may quote it: at most [`MAX_QUOTE_BYTES`] bytes (cut at a
/// character boundary, with `…` when cut), control characters escaped.
pub fn quote(input: &str) -> String {
    let mut end = input.len().min(MAX_QUOTE_BYTES);
    while !input.is_char_boundary(end) {
        end -= 1;
    }
    let mut out: String = input[..end].escape_debug().collect();
    if end < input.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limits_carry_their_retry_delay() {
        let s = Status::from(ApiError::RateLimited {
            description: "over".into(),
            retry_after: std::time::Duration::from_millis(1500),
        });
        assert_eq!(s.code(), Code::ResourceExhausted);
        let retry = s.get_error_details().retry_info().cloned().unwrap();
        assert_eq!(
            retry.retry_delay,
            Some(std::time::Duration::from_millis(1500))
        );
    }

    #[test]
    fn field_errors_carry_a_bad_request() {
        let s = Status::from(ApiError::invalid("position.text", "bad FEN"));
        assert_eq!(s.code(), Code::InvalidArgument);
        assert_eq!(s.message(), "position.text: bad FEN");
        let details = s.get_error_details();
        assert_eq!(
            details.bad_request().unwrap().field_violations[0].field,
            "position.text"
        );
        let s = Status::from(ApiError::exhausted("moves", "too many"));
        assert_eq!(s.code(), Code::ResourceExhausted);
    }

    #[test]
    fn a_reused_key_names_its_field_and_key() {
        let s = Status::from(ApiError::KeyReused {
            field: "request_id".into(),
            key: "r-1".into(),
            description: "request_id 'r-1' was already used".into(),
        });
        assert_eq!(s.code(), Code::AlreadyExists);
        assert_eq!(s.message(), "request_id 'r-1' was already used");
        let info = s.get_error_details().resource_info().cloned().unwrap();
        assert_eq!(
            (info.resource_type.as_str(), info.resource_name.as_str()),
            ("request_id", "r-1")
        );
    }

    #[test]
    fn preconditions_carry_a_reason() {
        let s = Status::from(ApiError::precondition(
            "arbiter.matches.v1",
            "STALE_PLY",
            "board A is at ply 3",
        ));
        assert_eq!(s.code(), Code::FailedPrecondition);
        let info = s.get_error_details().error_info().cloned().unwrap();
        assert_eq!(
            (info.reason.as_str(), info.domain.as_str()),
            ("STALE_PLY", "arbiter.matches.v1")
        );
        for (e, code) in [
            (ApiError::NotFound("x".into()), Code::NotFound),
            (ApiError::AlreadyExists("x".into()), Code::AlreadyExists),
            (ApiError::Unauthenticated("x".into()), Code::Unauthenticated),
            (
                ApiError::PermissionDenied("x".into()),
                Code::PermissionDenied,
            ),
            (ApiError::Unavailable("x".into()), Code::Unavailable),
            (ApiError::DataLoss("x".into()), Code::DataLoss),
            (
                ApiError::DeadlineExceeded("x".into()),
                Code::DeadlineExceeded,
            ),
            (ApiError::exhausted("", "busy"), Code::ResourceExhausted),
        ] {
            assert_eq!(Status::from(e).code(), code);
        }
    }

    #[test]
    fn statuses_stay_small_whatever_the_input() {
        let huge = "x".repeat(1 << 20);
        let s = Status::from(ApiError::invalid(
            "move",
            format!("cannot parse move '{huge}'"),
        ));
        assert!(s.message().len() <= MAX_MESSAGE_BYTES + 3);
        assert!(s.details().len() < 4 * MAX_MESSAGE_BYTES);
    }

    #[test]
    fn quotes_are_bounded_and_escaped() {
        assert_eq!(quote("e4"), "e4");
        assert_eq!(quote("e4\n"), "e4\\n");
        let long = "é".repeat(500);
        let q = quote(&long);
        assert!(q.len() <= MAX_QUOTE_BYTES + '…'.len_utf8());
        assert!(q.ends_with('…'));
    }
}
