//! The one error type of every position-string reader (FEN for the square-board variants, the
//! Glinski and Byzantine position strings, BFEN), apart from the variants so that each of them
//! and [`AnyPosition`](crate::AnyPosition) share it without depending on one another.
//!
//! Like shakmaty's split between `ParseFenError` and `PositionError`, it keeps "cannot parse"
//! ([`PositionTextError::Syntax`]) apart from "parses, but cannot occur"
//! ([`PositionTextError::Illegal`]); both name the field of the string that is wrong, which the
//! services turn into the request field they report (`position.text`).

use std::fmt;

/// A position string could not be turned into a position.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PositionTextError {
    /// The text cannot be parsed.
    Syntax {
        /// The part of the string that is wrong (`placement`, `castling`, `turn`, `rules`, …).
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The text parses but the position cannot occur (no king, pawns on the last rank, …).
    Illegal {
        /// The part of the string that is wrong.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
}

impl PositionTextError {
    /// A text that cannot be parsed, in `field`.
    pub fn syntax(field: &'static str, message: impl Into<String>) -> PositionTextError {
        PositionTextError::Syntax {
            field,
            message: message.into(),
        }
    }

    /// A text that parses but describes a position that cannot occur, because of `field`.
    pub fn illegal(field: &'static str, message: impl Into<String>) -> PositionTextError {
        PositionTextError::Illegal {
            field,
            message: message.into(),
        }
    }

    /// The position-string field the error is about.
    pub fn field(&self) -> &'static str {
        match self {
            PositionTextError::Syntax { field, .. } | PositionTextError::Illegal { field, .. } => {
                field
            }
        }
    }

    /// What is wrong, without the "invalid"/"impossible" prefix of [`Display`](fmt::Display).
    pub fn message(&self) -> &str {
        match self {
            PositionTextError::Syntax { message, .. }
            | PositionTextError::Illegal { message, .. } => message,
        }
    }
}

impl fmt::Display for PositionTextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PositionTextError::Syntax { message, .. } => {
                write!(f, "invalid position string: {message}")
            }
            PositionTextError::Illegal { message, .. } => {
                write!(f, "impossible position: {message}")
            }
        }
    }
}

impl std::error::Error for PositionTextError {}
