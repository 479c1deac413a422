//! The errors of an engine pool.

use arbiter_core::Variant;
use std::fmt;

/// What went wrong with an external engine. Every variant names the engine (its configured
/// name, [`EngineSpec::name`](crate::EngineSpec::name)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UciError {
    /// The process could not be started, or did not complete the `uci` handshake.
    Spawn {
        /// The engine's name.
        engine: String,
        /// Why.
        message: String,
    },
    /// The process exited, closed its output or stopped reading its input, on the fresh
    /// process too after a restart.
    Crashed {
        /// The engine's name.
        engine: String,
        /// What was seen.
        message: String,
    },
    /// The process went silent for longer than the spec's `timeout` (during a search, or
    /// waiting for `readyok`/`uciok`), on the fresh process too after a restart.
    Hung {
        /// The engine's name.
        engine: String,
        /// The timeout, seconds.
        seconds: u64,
    },
    /// The engine said something that breaks the protocol (an illegal or unparsable best
    /// move, a line over [`MAX_LINE`](crate::MAX_LINE) bytes, an unknown option); the process
    /// was restarted.
    Protocol {
        /// The engine's name.
        engine: String,
        /// What was wrong.
        message: String,
    },
    /// The caller's stop flag was raised while waiting for a free process.
    Stopped {
        /// The engine's name.
        engine: String,
    },
    /// The engine does not play this variant (or the spec's `variants` left it out).
    Unsupported {
        /// The engine's name.
        engine: String,
        /// The variant asked for.
        variant: Variant,
    },
    /// The search asked for cannot be made: a move of its line is not legal.
    InvalidSearch {
        /// The engine's name.
        engine: String,
        /// What is wrong.
        message: String,
    },
    /// The pool was shut down.
    ShutDown {
        /// The engine's name.
        engine: String,
    },
}

impl UciError {
    /// The configured name of the engine the error is about.
    pub fn engine(&self) -> &str {
        match self {
            UciError::Spawn { engine, .. }
            | UciError::Crashed { engine, .. }
            | UciError::Hung { engine, .. }
            | UciError::Protocol { engine, .. }
            | UciError::Stopped { engine }
            | UciError::Unsupported { engine, .. }
            | UciError::InvalidSearch { engine, .. }
            | UciError::ShutDown { engine } => engine,
        }
    }

    /// Whether a fresh process may do better (a crash or a hang).
    pub(crate) fn is_process_failure(&self) -> bool {
        matches!(self, UciError::Crashed { .. } | UciError::Hung { .. })
    }
}

impl fmt::Display for UciError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UciError::Spawn { engine, message } => {
                write!(f, "engine '{engine}' could not be started: {message}")
            }
            UciError::Crashed { engine, message } => {
                write!(f, "engine '{engine}' crashed: {message}")
            }
            UciError::Hung { engine, seconds } => write!(
                f,
                "engine '{engine}' hung: no answer for {seconds} s (the process was killed)"
            ),
            UciError::Protocol { engine, message } => {
                write!(f, "engine '{engine}' broke the UCI protocol: {message}")
            }
            UciError::Stopped { engine } => {
                write!(f, "stopped while waiting for engine '{engine}'")
            }
            UciError::Unsupported { engine, variant } => {
                write!(f, "engine '{engine}' does not play {variant}")
            }
            UciError::InvalidSearch { engine, message } => {
                write!(f, "search for engine '{engine}': {message}")
            }
            UciError::ShutDown { engine } => write!(f, "engine '{engine}' was shut down"),
        }
    }
}

impl std::error::Error for UciError {}
