//! The one place where domain errors become `tonic::Status`.

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

/// A request the rules service refuses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RulesError {
    /// The request is malformed: `field` names the offending field (`position.text`,
    /// `moves[3]`, …).
    InvalidArgument {
        /// Path of the field.
        field: String,
        /// What is wrong with it.
        description: String,
    },
    /// The request is over a server limit (`field` names what was limited).
    ResourceExhausted {
        /// Path of the field.
        field: String,
        /// Which limit and by how much.
        description: String,
    },
}

impl RulesError {
    /// An `INVALID_ARGUMENT` about `field`.
    pub fn invalid(field: impl Into<String>, description: impl Into<String>) -> RulesError {
        RulesError::InvalidArgument {
            field: field.into(),
            description: description.into(),
        }
    }

    /// A `RESOURCE_EXHAUSTED` about `field`.
    pub fn exhausted(field: impl Into<String>, description: impl Into<String>) -> RulesError {
        RulesError::ResourceExhausted {
            field: field.into(),
            description: description.into(),
        }
    }

    /// The offending field.
    pub fn field(&self) -> &str {
        match self {
            RulesError::InvalidArgument { field, .. }
            | RulesError::ResourceExhausted { field, .. } => field,
        }
    }

    /// What is wrong.
    pub fn description(&self) -> &str {
        match self {
            RulesError::InvalidArgument { description, .. }
            | RulesError::ResourceExhausted { description, .. } => description,
        }
    }
}

impl std::fmt::Display for RulesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field(), self.description())
    }
}

impl std::error::Error for RulesError {}

impl From<RulesError> for Status {
    /// `INVALID_ARGUMENT` or `RESOURCE_EXHAUSTED`, with the message `field: description` and a
    /// `google.rpc.BadRequest` detail carrying the same field violation.
    fn from(e: RulesError) -> Status {
        let code = match e {
            RulesError::InvalidArgument { .. } => Code::InvalidArgument,
            RulesError::ResourceExhausted { .. } => Code::ResourceExhausted,
        };
        Status::with_error_details(
            code,
            e.to_string(),
            ErrorDetails::with_bad_request_violation(e.field(), e.description()),
        )
    }
}

impl From<crate::bughouse::BughouseError> for Status {
    /// `INVALID_ARGUMENT` with a `BadRequest` naming the field; `FAILED_PRECONDITION` with an
    /// `ErrorInfo` whose reason is `STALE_PLY`, `NOT_YOUR_TURN` or `MATCH_OVER`; `NOT_FOUND`;
    /// `ALREADY_EXISTS`; `UNAVAILABLE` when the match store cannot be reached.
    fn from(e: crate::bughouse::BughouseError) -> Status {
        use crate::bughouse::BughouseError as B;
        match &e {
            B::Invalid { field, description } => Status::with_error_details(
                Code::InvalidArgument,
                e.to_string(),
                ErrorDetails::with_bad_request_violation(*field, description.clone()),
            ),
            B::FailedPrecondition { reason, .. } => Status::with_error_details(
                Code::FailedPrecondition,
                e.to_string(),
                ErrorDetails::with_error_info(*reason, "arbiter.rules.v1", []),
            ),
            B::NotFound(_) => Status::not_found(e.to_string()),
            B::AlreadyExists(_) => Status::already_exists(e.to_string()),
            B::Unavailable(_) => Status::unavailable(e.to_string()),
        }
    }
}
