//! Why a clock request was refused, and its one map to a `tonic::Status` (through
//! `arbiter-kit`'s `ApiError`).

use crate::store::StoreError;
use arbiter_kit::ApiError;
use std::fmt;

/// The API domain of this service's `ErrorInfo` reasons.
pub const DOMAIN: &str = "arbiter.clock.v1";
/// Reason: the board has had another number of presses than the request says.
pub const STALE_PLY: &str = "STALE_PLY";
/// Reason: the other side's clock runs.
pub const NOT_YOUR_TURN: &str = "NOT_YOUR_TURN";
/// Reason: the clock is over (flagged or stopped).
pub const CLOCK_OVER: &str = "CLOCK_OVER";
/// Reason: the clock is paused.
pub const CLOCK_PAUSED: &str = "CLOCK_PAUSED";
/// Reason: a resume of a clock that is not paused.
pub const NOT_PAUSED: &str = "NOT_PAUSED";

/// A clock request was refused; nothing changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClocksError {
    /// A malformed request: the field and what is wrong.
    Invalid {
        /// The request field (`clock_id`, `time_control`, `board`, `ms`, …).
        field: &'static str,
        /// What is wrong.
        description: String,
    },
    /// No clock with that id (never created, or expired).
    NotFound(String),
    /// The id is taken by a clock of another kind.
    AlreadyExists(String),
    /// The request id (held here) was used on this clock for a different request.
    RequestIdReused(String),
    /// The request does not fit the clock as it stands (see the reason constants).
    Precondition {
        /// [`STALE_PLY`], [`NOT_YOUR_TURN`], [`CLOCK_OVER`], [`CLOCK_PAUSED`] or
        /// [`NOT_PAUSED`].
        reason: &'static str,
        /// What happened.
        description: String,
    },
    /// Over a limit (`field` empty for a limit of the server as a whole).
    Exhausted {
        /// The request field that is limited, or empty.
        field: &'static str,
        /// Which limit.
        description: String,
    },
    /// Something this process needs is missing (the system's randomness).
    Unavailable(String),
    /// The store failed.
    Store(StoreError),
}

impl ClocksError {
    pub(crate) fn invalid(field: &'static str, description: impl Into<String>) -> ClocksError {
        ClocksError::Invalid {
            field,
            description: description.into(),
        }
    }

    pub(crate) fn precondition(
        reason: &'static str,
        description: impl Into<String>,
    ) -> ClocksError {
        ClocksError::Precondition {
            reason,
            description: description.into(),
        }
    }

    pub(crate) fn exhausted(field: &'static str, description: impl Into<String>) -> ClocksError {
        ClocksError::Exhausted {
            field,
            description: description.into(),
        }
    }

    pub(crate) fn over() -> ClocksError {
        ClocksError::precondition(CLOCK_OVER, "the clock is over")
    }

    /// The stable reason of a precondition failure.
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            ClocksError::Precondition { reason, .. } => Some(reason),
            _ => None,
        }
    }
}

impl fmt::Display for ClocksError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClocksError::Invalid { field, description } => write!(f, "{field}: {description}"),
            ClocksError::NotFound(d)
            | ClocksError::AlreadyExists(d)
            | ClocksError::Unavailable(d) => f.write_str(d),
            ClocksError::RequestIdReused(id) => {
                write!(
                    f,
                    "request_id '{id}' was already used for a different request"
                )
            }
            ClocksError::Precondition { description, .. }
            | ClocksError::Exhausted { description, .. } => f.write_str(description),
            ClocksError::Store(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ClocksError {}

impl From<StoreError> for ClocksError {
    fn from(e: StoreError) -> Self {
        ClocksError::Store(e)
    }
}

impl From<arbiter_clocked::Unavailable> for ClocksError {
    fn from(e: arbiter_clocked::Unavailable) -> Self {
        ClocksError::Store(e.into())
    }
}

impl From<crate::record::Corrupt> for ClocksError {
    fn from(e: crate::record::Corrupt) -> Self {
        ClocksError::Store(e.into())
    }
}

/// The one map from a refusal to what the client sees.
impl From<ClocksError> for ApiError {
    fn from(e: ClocksError) -> ApiError {
        match e {
            ClocksError::Invalid { field, description } => ApiError::invalid(field, description),
            ClocksError::NotFound(d) => ApiError::NotFound(d),
            ClocksError::AlreadyExists(d) => ApiError::AlreadyExists(d),
            ClocksError::RequestIdReused(id) => ApiError::KeyReused {
                field: "request_id".into(),
                description: format!(
                    "request_id '{id}' was already used for a different request on this \
                     clock; nothing changed; send a new id"
                ),
                key: id,
            },
            ClocksError::Precondition {
                reason,
                description,
            } => ApiError::precondition(DOMAIN, reason, description),
            ClocksError::Exhausted { field, description } => {
                ApiError::exhausted(field, description)
            }
            ClocksError::Unavailable(d) => ApiError::Unavailable(d),
            ClocksError::Store(StoreError::Unavailable(detail)) => {
                tracing::warn!(%detail, "clock store unavailable");
                ApiError::Unavailable("the clock store cannot be reached".into())
            }
            ClocksError::Store(StoreError::Corrupt(detail)) => {
                tracing::error!(%detail, "a stored clock cannot be read");
                ApiError::DataLoss("the stored clock cannot be read".into())
            }
        }
    }
}

impl From<ClocksError> for tonic::Status {
    fn from(e: ClocksError) -> tonic::Status {
        ApiError::from(e).into()
    }
}
