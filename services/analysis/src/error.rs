//! Why an analysis call was refused or failed, in the domain's terms: [`AnalysisError`]. Its
//! class for the client (the gRPC status) is decided in one place, [`From<AnalysisError> for
//! ApiError`](ApiError), through `arbiter-kit`'s status map; the handlers convert with `?`.

use arbiter_kit::ApiError;
use std::fmt;

/// An analysis call was refused, or its store failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnalysisError {
    /// A malformed request: the field (`position.text`, `moves[3]`, `per_ply.depth`, …) and
    /// what is wrong with it.
    Invalid {
        /// The request field.
        field: String,
        /// What is wrong.
        description: String,
    },
    /// Over a limit of the server (`field` empty for a limit of the server as a whole: its
    /// queue, its jobs held).
    Exhausted {
        /// The request field that is limited, or empty.
        field: String,
        /// Which limit, and by how much.
        description: String,
    },
    /// No job with this id for this caller: unknown, expired, or another caller's (the same
    /// answer for all three).
    JobNotFound(String),
    /// The caller's request id (held here) was used before for another job.
    RequestIdReused(String),
    /// The service is shutting down, or a dependency (the job store) cannot be reached; the
    /// message says which. Retrying later may succeed.
    Unavailable(String),
    /// Stored data cannot be read; retrying will not help.
    Corrupt(String),
    /// The call's deadline passed before the work began.
    DeadlineExceeded(String),
    /// A remote worker's lease is unknown, expired and taken by another worker, or another
    /// caller's: `FAILED_PRECONDITION` (reason `LEASE_NOT_HELD`).
    LeaseNotHeld(String),
    /// A remote worker's key is refused for work until the operator lifts the refusal:
    /// `PERMISSION_DENIED`, the message naming the keys-file line that lifts it.
    WorkRefused(String),
    /// The caller's engine-time quota (live analysis, per API key client) has not this much
    /// left now: `RESOURCE_EXHAUSTED` with `google.rpc.RetryInfo` (see [`crate::quota`]).
    QuotaExceeded {
        /// Whose quota, how much the search reserves, when to retry.
        description: String,
        /// How long until the search would fit.
        retry_after: std::time::Duration,
    },
}

impl AnalysisError {
    /// An `INVALID_ARGUMENT` about `field`.
    pub fn invalid(field: impl Into<String>, description: impl Into<String>) -> AnalysisError {
        AnalysisError::Invalid {
            field: field.into(),
            description: description.into(),
        }
    }

    /// A `RESOURCE_EXHAUSTED` about `field` (empty: the server as a whole).
    pub fn exhausted(field: impl Into<String>, description: impl Into<String>) -> AnalysisError {
        AnalysisError::Exhausted {
            field: field.into(),
            description: description.into(),
        }
    }

    /// The field a field error is about (none for a limit of the server as a whole).
    pub fn field(&self) -> Option<&str> {
        match self {
            AnalysisError::Invalid { field, .. } | AnalysisError::Exhausted { field, .. }
                if !field.is_empty() =>
            {
                Some(field)
            }
            _ => None,
        }
    }

    /// The gRPC code the client gets.
    pub fn code(&self) -> tonic::Code {
        ApiError::from(self.clone()).code()
    }
}

impl fmt::Display for AnalysisError {
    /// `field: description` for field errors, the message otherwise (as the client reads it).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnalysisError::Invalid { field, description }
            | AnalysisError::Exhausted { field, description }
                if !field.is_empty() =>
            {
                write!(f, "{field}: {description}")
            }
            AnalysisError::Invalid { description, .. }
            | AnalysisError::Exhausted { description, .. }
            | AnalysisError::QuotaExceeded { description, .. }
            | AnalysisError::Unavailable(description)
            | AnalysisError::Corrupt(description)
            | AnalysisError::LeaseNotHeld(description)
            | AnalysisError::WorkRefused(description)
            | AnalysisError::DeadlineExceeded(description) => f.write_str(description),
            AnalysisError::JobNotFound(id) => write!(
                f,
                "no job {} (unknown or expired)",
                arbiter_kit::error::quote(id)
            ),
            AnalysisError::RequestIdReused(id) => write!(
                f,
                "request_id {} was used for another job",
                arbiter_kit::error::quote(id)
            ),
        }
    }
}

impl std::error::Error for AnalysisError {}

impl From<AnalysisError> for ApiError {
    /// The one map from the domain's errors to the client's classes.
    fn from(e: AnalysisError) -> ApiError {
        let text = e.to_string();
        match e {
            AnalysisError::Invalid { field, description } => ApiError::invalid(field, description),
            AnalysisError::Exhausted { field, description } => {
                ApiError::exhausted(field, description)
            }
            AnalysisError::JobNotFound(_) => ApiError::NotFound(text),
            AnalysisError::RequestIdReused(_) => ApiError::AlreadyExists(text),
            AnalysisError::Unavailable(_) => ApiError::Unavailable(text),
            AnalysisError::Corrupt(_) => ApiError::DataLoss(text),
            AnalysisError::DeadlineExceeded(_) => ApiError::DeadlineExceeded(text),
            AnalysisError::LeaseNotHeld(_) => {
                ApiError::precondition("arbiter.analysis.v1", "LEASE_NOT_HELD", text)
            }
            AnalysisError::WorkRefused(_) => ApiError::PermissionDenied(text),
            AnalysisError::QuotaExceeded {
                description,
                retry_after,
            } => ApiError::RateLimited {
                description,
                retry_after,
            },
        }
    }
}

impl From<AnalysisError> for tonic::Status {
    fn from(e: AnalysisError) -> tonic::Status {
        ApiError::from(e).into()
    }
}

impl From<ApiError> for AnalysisError {
    /// A field error of `arbiter-kit`'s shared decoders (a position, a variant) in the
    /// domain's terms. Those decoders return only field errors; any other class is kept as
    /// close as the domain allows.
    fn from(e: ApiError) -> AnalysisError {
        match e {
            ApiError::InvalidArgument { field, description } => {
                AnalysisError::Invalid { field, description }
            }
            ApiError::ResourceExhausted { field, description } => {
                AnalysisError::Exhausted { field, description }
            }
            ApiError::Unavailable(d) => AnalysisError::Unavailable(d),
            ApiError::DeadlineExceeded(d) => AnalysisError::DeadlineExceeded(d),
            ApiError::RateLimited {
                description,
                retry_after,
            } => AnalysisError::QuotaExceeded {
                description,
                retry_after,
            },
            other => AnalysisError::Corrupt(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn each_error_keeps_its_code_and_message() {
        let cases = [
            (
                AnalysisError::invalid("per_ply", "set exactly one of depth and nodes"),
                Code::InvalidArgument,
                "per_ply: set exactly one of depth and nodes",
            ),
            (
                AnalysisError::exhausted("", "the server holds its maximum of jobs; retry later"),
                Code::ResourceExhausted,
                "the server holds its maximum of jobs; retry later",
            ),
            (
                AnalysisError::JobNotFound("j".into()),
                Code::NotFound,
                "no job j (unknown or expired)",
            ),
            (
                AnalysisError::RequestIdReused("r".into()),
                Code::AlreadyExists,
                "request_id r was used for another job",
            ),
            (
                AnalysisError::Unavailable("down".into()),
                Code::Unavailable,
                "down",
            ),
            (AnalysisError::Corrupt("bad".into()), Code::DataLoss, "bad"),
            (
                AnalysisError::LeaseNotHeld("lease".into()),
                Code::FailedPrecondition,
                "lease",
            ),
            (
                AnalysisError::WorkRefused("refused".into()),
                Code::PermissionDenied,
                "refused",
            ),
            (
                AnalysisError::QuotaExceeded {
                    description: "over quota".into(),
                    retry_after: std::time::Duration::from_millis(250),
                },
                Code::ResourceExhausted,
                "over quota",
            ),
        ];
        for (e, code, message) in cases {
            let status = tonic::Status::from(e.clone());
            assert_eq!((status.code(), status.message()), (code, message), "{e:?}");
            assert_eq!(e.code(), code);
        }
    }

    #[test]
    fn a_quota_refusal_says_when_to_retry() {
        use tonic_types::StatusExt;
        let wait = std::time::Duration::from_millis(1500);
        let status = tonic::Status::from(AnalysisError::QuotaExceeded {
            description: "over quota".into(),
            retry_after: wait,
        });
        assert_eq!(status.code(), Code::ResourceExhausted);
        let details = status.get_error_details();
        let info = details.retry_info().expect("RetryInfo");
        assert_eq!(info.retry_delay, Some(wait));
    }
}
