//! [`Error`]: what a call of the client can fail with.

use std::fmt;
use std::time::Duration;
use tonic_types::StatusExt;

/// Why a call failed.
#[derive(Debug)]
pub enum Error {
    /// The configuration is unusable (address, key file, TLS files).
    Config(String),
    /// The server answered with an error status (after the retries the contract allows).
    Rpc(tonic::Status),
    /// A seated call for a seat whose token this client does not hold.
    NoToken {
        /// The match.
        match_id: String,
        /// The seat, as `board/side`.
        seat: String,
    },
    /// The server answered something the client cannot use (a missing field, a stream that
    /// ended without its result).
    Protocol(String),
}

impl Error {
    /// The gRPC status code (`Unknown` for errors that are not the server's).
    pub fn code(&self) -> tonic::Code {
        match self {
            Error::Rpc(s) => s.code(),
            _ => tonic::Code::Unknown,
        }
    }

    /// The status, when the server answered with one.
    pub fn status(&self) -> Option<&tonic::Status> {
        match self {
            Error::Rpc(s) => Some(s),
            _ => None,
        }
    }

    /// The request field an `INVALID_ARGUMENT` (or a `RESOURCE_EXHAUSTED` over a cap) names in
    /// its `google.rpc.BadRequest` detail (`move`, `position.text`, `moves[3]`, …).
    pub fn field(&self) -> Option<String> {
        let details = self.status()?.get_error_details();
        details
            .bad_request()
            .and_then(|b| b.field_violations.first())
            .map(|v| v.field.clone())
    }

    /// The `google.rpc.ErrorInfo` reason of a `FAILED_PRECONDITION` (`STALE_PLY`,
    /// `NOT_YOUR_TURN`, `MATCH_OVER`, …).
    pub fn reason(&self) -> Option<String> {
        let details = self.status()?.get_error_details();
        details.error_info().map(|i| i.reason.clone())
    }

    /// How long the server asked the client to wait (`google.rpc.RetryInfo`), if it did.
    pub fn retry_after(&self) -> Option<Duration> {
        let details = self.status()?.get_error_details();
        details.retry_info().and_then(|r| r.retry_delay)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(m) => write!(f, "configuration: {m}"),
            Error::Rpc(s) => {
                write!(f, "{:?}: {}", s.code(), s.message())?;
                if let Some(field) = self.field() {
                    write!(f, " (field {field})")?;
                }
                if let Some(reason) = self.reason() {
                    write!(f, " ({reason})")?;
                }
                Ok(())
            }
            Error::NoToken { match_id, seat } => {
                write!(f, "no seat token for {seat} of match {match_id}")
            }
            Error::Protocol(m) => write!(f, "unexpected answer: {m}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Rpc(s) => Some(s),
            _ => None,
        }
    }
}

impl From<tonic::Status> for Error {
    fn from(s: tonic::Status) -> Error {
        Error::Rpc(s)
    }
}
