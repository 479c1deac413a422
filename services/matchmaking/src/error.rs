//! Why a matchmaking request was refused, or a join stream ended, and its class for the client:
//! [`MatchmakingError`], turned into a gRPC status in one place (`From<MatchmakingError> for
//! tonic::Status`, through the kit's [`ApiError`] status map).

use crate::store::StoreError;
use arbiter_kit::ApiError;
use std::fmt;

/// The API domain of matchmaking's `FAILED_PRECONDITION` reasons.
pub const DOMAIN: &str = "arbiter.matchmaking.v1";

/// `FAILED_PRECONDITION` reason: a match is being created for the player.
pub const MATCHING: &str = "MATCHING";
/// `FAILED_PRECONDITION` reason: only bughouse joins name a partner.
pub const PARTNER_NOT_ALLOWED: &str = "PARTNER_NOT_ALLOWED";
/// `FAILED_PRECONDITION` reason: the challenge was accepted, declined or cancelled already.
pub const CHALLENGE_NOT_PENDING: &str = "CHALLENGE_NOT_PENDING";
/// `FAILED_PRECONDITION` reason: the challenge expired before the call.
pub const CHALLENGE_EXPIRED: &str = "CHALLENGE_EXPIRED";
/// `FAILED_PRECONDITION` reason: only the challenged player may accept or decline.
pub const NOT_CHALLENGED: &str = "NOT_CHALLENGED";
/// `FAILED_PRECONDITION` reason: only the challenger may cancel.
pub const NOT_CHALLENGER: &str = "NOT_CHALLENGER";
/// `FAILED_PRECONDITION` reason: another player accepted the seek first.
pub const SEEK_TAKEN: &str = "SEEK_TAKEN";
/// `FAILED_PRECONDITION` reason: the seek was cancelled.
pub const SEEK_NOT_OPEN: &str = "SEEK_NOT_OPEN";
/// `FAILED_PRECONDITION` reason: the seek expired before the call.
pub const SEEK_EXPIRED: &str = "SEEK_EXPIRED";
/// `FAILED_PRECONDITION` reason: a seeker cannot accept their own seek.
pub const OWN_SEEK: &str = "OWN_SEEK";
/// `FAILED_PRECONDITION` reason: only the seeker may cancel a seek.
pub const NOT_SEEKER: &str = "NOT_SEEKER";
/// `FAILED_PRECONDITION` reason: the player's rating lies outside the rated seek's range.
pub const RATING_OUT_OF_RANGE: &str = "RATING_OUT_OF_RANGE";
/// `FAILED_PRECONDITION` reason: an accept's player (the acceptor or the offer's owner) holds an
/// unacknowledged match found or is being matched (a pool pairing, or another offer's accept).
pub const PLAYER_BUSY: &str = "PLAYER_BUSY";
/// `FAILED_PRECONDITION` reason: the match service refused the accepted offer's match (the
/// offer is open again).
pub const MATCH_REFUSED: &str = "MATCH_REFUSED";

/// A matchmaking request was refused (nothing changed), or a join stream ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MatchmakingError {
    /// A malformed request: the field (`player_id`, `blocked[3]`, …) and what is wrong.
    Invalid {
        /// The request field.
        field: String,
        /// What is wrong.
        description: String,
    },
    /// The request does not fit the player's state (see the reason constants).
    Precondition {
        /// One of the reason constants ([`MATCHING`], [`SEEK_TAKEN`], …).
        reason: &'static str,
        /// What happened.
        description: String,
    },
    /// No such challenge or seek (`NOT_FOUND`).
    NotFound(String),
    /// A request id reused with other content (`ALREADY_EXISTS`).
    AlreadyExists(String),
    /// A join stream's place was given up (the player left, or joined again elsewhere).
    Aborted(String),
    /// Over a limit of the server (`field` empty for a limit of the server as a whole).
    Exhausted {
        /// The request field that is limited, or empty.
        field: &'static str,
        /// Which limit.
        description: String,
    },
    /// The store (or the server, shutting down) cannot serve now; retrying may succeed.
    Unavailable(String),
    /// Stored data cannot be read; retrying will not help.
    Corrupt(String),
}

impl MatchmakingError {
    /// An `INVALID_ARGUMENT` about `field`.
    pub fn invalid(field: impl Into<String>, description: impl Into<String>) -> MatchmakingError {
        MatchmakingError::Invalid {
            field: field.into(),
            description: description.into(),
        }
    }

    /// A `FAILED_PRECONDITION` for `reason`.
    pub fn precondition(reason: &'static str, description: impl Into<String>) -> MatchmakingError {
        MatchmakingError::Precondition {
            reason,
            description: description.into(),
        }
    }

    /// A `RESOURCE_EXHAUSTED` about `field` (empty: the server as a whole).
    pub fn exhausted(field: &'static str, description: impl Into<String>) -> MatchmakingError {
        MatchmakingError::Exhausted {
            field,
            description: description.into(),
        }
    }

    /// The field an invalid or limited request is about (none for a limit of the server).
    pub fn field(&self) -> Option<&str> {
        match self {
            MatchmakingError::Invalid { field, .. } if !field.is_empty() => Some(field),
            MatchmakingError::Exhausted { field, .. } if !field.is_empty() => Some(field),
            _ => None,
        }
    }

    /// The stable reason of a precondition failure.
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            MatchmakingError::Precondition { reason, .. } => Some(reason),
            _ => None,
        }
    }

    /// What is wrong, without the field.
    pub fn description(&self) -> &str {
        match self {
            MatchmakingError::Invalid { description, .. }
            | MatchmakingError::Precondition { description, .. }
            | MatchmakingError::Exhausted { description, .. }
            | MatchmakingError::Aborted(description)
            | MatchmakingError::NotFound(description)
            | MatchmakingError::AlreadyExists(description)
            | MatchmakingError::Unavailable(description)
            | MatchmakingError::Corrupt(description) => description,
        }
    }

    /// The gRPC code the client sees.
    pub fn code(&self) -> tonic::Code {
        match self {
            MatchmakingError::Invalid { .. } => tonic::Code::InvalidArgument,
            MatchmakingError::Precondition { .. } => tonic::Code::FailedPrecondition,
            MatchmakingError::Aborted(_) => tonic::Code::Aborted,
            MatchmakingError::NotFound(_) => tonic::Code::NotFound,
            MatchmakingError::AlreadyExists(_) => tonic::Code::AlreadyExists,
            MatchmakingError::Exhausted { .. } => tonic::Code::ResourceExhausted,
            MatchmakingError::Unavailable(_) => tonic::Code::Unavailable,
            MatchmakingError::Corrupt(_) => tonic::Code::DataLoss,
        }
    }
}

impl From<StoreError> for MatchmakingError {
    fn from(e: StoreError) -> MatchmakingError {
        match e {
            StoreError::Unavailable(m) => MatchmakingError::Unavailable(m),
            StoreError::Corrupt(m) => MatchmakingError::Corrupt(m),
        }
    }
}

impl fmt::Display for MatchmakingError {
    /// `field: description` for field errors, the description otherwise (as the client reads
    /// it).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.field() {
            Some(field) => write!(f, "{field}: {}", self.description()),
            None => f.write_str(self.description()),
        }
    }
}

impl std::error::Error for MatchmakingError {}

impl From<MatchmakingError> for tonic::Status {
    /// The status a handler or a join stream answers with: the kit's status map ([`ApiError`]:
    /// codes, error details, message length), and `ABORTED` for a join whose place was given
    /// up (a class the kit does not have).
    fn from(e: MatchmakingError) -> tonic::Status {
        let api = match e {
            MatchmakingError::Aborted(m) => return tonic::Status::aborted(m),
            MatchmakingError::Invalid { field, description } => {
                ApiError::invalid(field, description)
            }
            MatchmakingError::Precondition {
                reason,
                description,
            } => ApiError::precondition(DOMAIN, reason, description),
            MatchmakingError::Exhausted { field, description } => {
                ApiError::exhausted(field, description)
            }
            MatchmakingError::NotFound(m) => ApiError::NotFound(m),
            MatchmakingError::AlreadyExists(m) => ApiError::AlreadyExists(m),
            MatchmakingError::Unavailable(m) => ApiError::Unavailable(m),
            MatchmakingError::Corrupt(m) => ApiError::DataLoss(m),
        };
        api.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_keep_their_codes_fields_and_messages() {
        let s = tonic::Status::from(MatchmakingError::invalid("blocked[1]", "bad"));
        assert_eq!(s.code(), tonic::Code::InvalidArgument);
        assert_eq!(s.message(), "blocked[1]: bad");
        let s = tonic::Status::from(MatchmakingError::precondition(MATCHING, "later"));
        assert_eq!(s.code(), tonic::Code::FailedPrecondition);
        assert_eq!(s.message(), "later");
        let s = tonic::Status::from(MatchmakingError::exhausted("", "full"));
        assert_eq!(
            (s.code(), s.message()),
            (tonic::Code::ResourceExhausted, "full")
        );
        let s = tonic::Status::from(MatchmakingError::Aborted("gone".into()));
        assert_eq!((s.code(), s.message()), (tonic::Code::Aborted, "gone"));
        let s = tonic::Status::from(MatchmakingError::from(StoreError::Unavailable("x".into())));
        assert_eq!((s.code(), s.message()), (tonic::Code::Unavailable, "x"));
        let s = tonic::Status::from(MatchmakingError::from(StoreError::Corrupt("y".into())));
        assert_eq!((s.code(), s.message()), (tonic::Code::DataLoss, "y"));
        for e in [
            MatchmakingError::invalid("f", "d"),
            MatchmakingError::precondition(MATCHING, "d"),
            MatchmakingError::exhausted("", "d"),
            MatchmakingError::Aborted("d".into()),
            MatchmakingError::NotFound("d".into()),
            MatchmakingError::AlreadyExists("d".into()),
            MatchmakingError::Unavailable("d".into()),
            MatchmakingError::Corrupt("d".into()),
        ] {
            assert_eq!(e.code(), tonic::Status::from(e.clone()).code(), "{e:?}");
        }
    }
}
