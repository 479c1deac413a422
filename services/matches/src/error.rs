//! Why a match request was refused, and its class for the client (the status map itself is
//! `arbiter-kit`'s).

use crate::store::StoreError;
use arbiter_kit::ApiError;
use std::fmt;

/// The API domain of this service's `ErrorInfo` reasons.
pub const DOMAIN: &str = "arbiter.matches.v1";

/// A stable reason: the board is not at the ply the request expected.
pub const STALE_PLY: &str = "STALE_PLY";
/// A stable reason: it is the other side's turn on that board.
pub const NOT_YOUR_TURN: &str = "NOT_YOUR_TURN";
/// A stable reason: the match has ended.
pub const MATCH_OVER: &str = "MATCH_OVER";
/// A stable reason: the claimed draw does not hold now.
pub const NOT_CLAIMABLE: &str = "NOT_CLAIMABLE";
/// `FAILED_PRECONDITION` reason: the match's clocks are paused (a move waits for the resume),
/// or a clock action does not fit their state (resuming clocks that run).
pub const CLOCK_PAUSED: &str = "CLOCK_PAUSED";
/// `FAILED_PRECONDITION` reason: the match has no clocks.
pub const NO_CLOCK: &str = "NO_CLOCK";
/// `FAILED_PRECONDITION` reason: both sides have moved (on some board), so the match can no
/// longer be aborted; resign instead.
pub const NOT_ABORTABLE: &str = "NOT_ABORTABLE";
/// `FAILED_PRECONDITION` reason: the move was well formed but illegal on its board, in a
/// bughouse match created with `illegal_move=loses`: the match is over, lost by the mover's
/// team (the one refusal that changes the match).
pub const ILLEGAL_MOVE_LOST: &str = "ILLEGAL_MOVE_LOST";
/// `FAILED_PRECONDITION` reason: the match was created without takebacks.
pub const TAKEBACKS_OFF: &str = "TAKEBACKS_OFF";
/// `FAILED_PRECONDITION` reason: no takeback proposal of the other side stands (none was made,
/// it lapsed with a move, or it was answered).
pub const NO_TAKEBACK: &str = "NO_TAKEBACK";
/// `FAILED_PRECONDITION` reason: the proposing side has no move on the board to take back.
pub const NOTHING_TO_TAKE_BACK: &str = "NOTHING_TO_TAKE_BACK";
/// `FAILED_PRECONDITION` reason: the other side has no standing draw offer to decline.
pub const NO_DRAW_OFFER: &str = "NO_DRAW_OFFER";

/// A match request was refused; nothing changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MatchError {
    /// A malformed request or an illegal move: the field and what is wrong.
    Invalid {
        /// The request field (`move`, `board`, `side`, `players`, `start.text`, …).
        field: &'static str,
        /// What is wrong.
        description: String,
    },
    /// No match with that id (never created, or expired).
    NotFound(String),
    /// The id is taken by a different creation.
    AlreadyExists(String),
    /// The request id (held here) was used before, by this seat (or the platform) in this
    /// match, for a different request (another call, or other content): nothing changed.
    RequestIdReused(String),
    /// The request does not fit the match as it stands (see the reason constants).
    Precondition {
        /// [`STALE_PLY`], [`NOT_YOUR_TURN`], [`MATCH_OVER`] or [`NOT_CLAIMABLE`].
        reason: &'static str,
        /// What happened.
        description: String,
    },
    /// The call carries no seat token.
    Unauthenticated(String),
    /// The token is not this seat's (or the caller is not the platform).
    PermissionDenied(String),
    /// Over a limit of the server (`field` empty for a limit of the server as a whole).
    Exhausted {
        /// The request field that is limited, or empty.
        field: &'static str,
        /// Which limit.
        description: String,
    },
    /// The store failed.
    Store(StoreError),
}

impl MatchError {
    pub(crate) fn invalid(field: &'static str, description: impl Into<String>) -> MatchError {
        MatchError::Invalid {
            field,
            description: description.into(),
        }
    }

    pub(crate) fn precondition(reason: &'static str, description: impl Into<String>) -> MatchError {
        MatchError::Precondition {
            reason,
            description: description.into(),
        }
    }

    pub(crate) fn over() -> MatchError {
        MatchError::precondition(MATCH_OVER, "the match is over")
    }

    /// The stable reason of a precondition failure.
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            MatchError::Precondition { reason, .. } => Some(reason),
            _ => None,
        }
    }
}

impl From<StoreError> for MatchError {
    fn from(e: StoreError) -> Self {
        MatchError::Store(e)
    }
}

impl From<arbiter_clocked::Unavailable> for MatchError {
    fn from(e: arbiter_clocked::Unavailable) -> Self {
        MatchError::Store(e.into())
    }
}

impl From<crate::record::Corrupt> for MatchError {
    fn from(e: crate::record::Corrupt) -> Self {
        MatchError::Store(e.into())
    }
}

impl fmt::Display for MatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatchError::Invalid { field, description } => write!(f, "{field}: {description}"),
            MatchError::NotFound(id) => write!(f, "no match '{}'", arbiter_kit::error::quote(id)),
            MatchError::AlreadyExists(id) => write!(
                f,
                "match '{}' exists with a different creation",
                arbiter_kit::error::quote(id)
            ),
            MatchError::RequestIdReused(id) => write!(
                f,
                "request_id '{}' was already used for a different request in this match; \
                 send a new id",
                arbiter_kit::error::quote(id)
            ),
            MatchError::Exhausted { field, description } if !field.is_empty() => {
                write!(f, "{field}: {description}")
            }
            MatchError::Precondition { description, .. }
            | MatchError::Exhausted { description, .. }
            | MatchError::Unauthenticated(description)
            | MatchError::PermissionDenied(description) => f.write_str(description),
            MatchError::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for MatchError {}

impl From<MatchError> for ApiError {
    fn from(e: MatchError) -> ApiError {
        let text = e.to_string();
        match e {
            MatchError::Invalid { field, description } => ApiError::invalid(field, description),
            MatchError::NotFound(_) => ApiError::NotFound(text),
            MatchError::AlreadyExists(_) => ApiError::AlreadyExists(text),
            MatchError::RequestIdReused(id) => ApiError::KeyReused {
                field: "request_id".into(),
                key: id,
                description: text,
            },
            MatchError::Precondition {
                reason,
                description,
            } => ApiError::precondition(DOMAIN, reason, description),
            MatchError::Exhausted { field, description } => ApiError::exhausted(field, description),
            MatchError::Unauthenticated(_) => ApiError::Unauthenticated(text),
            MatchError::PermissionDenied(_) => ApiError::PermissionDenied(text),
            MatchError::Store(StoreError::Unavailable(_)) => ApiError::Unavailable(text),
            MatchError::Store(StoreError::Corrupt(_)) => ApiError::DataLoss(text),
        }
    }
}
