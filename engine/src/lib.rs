//! # arbiter-engine
//!
//! Search and evaluation for every Arbiter variant, as pure Rust with no I/O.
//!
//! - [`Engine`]: one search, generic over the core's [`Position`](arbiter_core::Position)
//!   and statically dispatched per variant ([`search`]).
//! - [`EnginePosition`]: what a variant adds for the engine (evaluation, ordering facts);
//!   implemented in [`eval`] for chess, crazyhouse and bughouse boards, Glinski and Byzantine.
//! - [`Limits`] and [`TimeSource`]: when to stop, on an injected clock ([`time`]).
//! - [`tune`]: Texel tuning of the chess evaluation's weights on labelled positions.
//! - [`analyze`]: the same search over [`AnyPosition`](arbiter_core::AnyPosition), with moves
//!   in the coordinate notation, for the CLI and services.
//!
//! ```
//! use arbiter_core::Chess;
//! use arbiter_engine::{Control, Engine, Limits, SearchOptions, SystemTime};
//! use std::sync::atomic::AtomicBool;
//!
//! let mut engine = Engine::<Chess>::new(16);
//! let stop = AtomicBool::new(false);
//! let result = engine.search(
//!     &Chess::new(),
//!     &[],
//!     &Limits::depth(4),
//!     &SearchOptions::default(),
//!     Control { stop: &stop, time: &SystemTime::new() },
//!     &mut |_info| {},
//! );
//! assert!(result.best.is_some());
//! ```

pub mod analyze;
pub mod eval;
pub mod hooks;
pub mod nnue;
mod ordering;
pub mod review;
pub mod score;
pub mod search;
pub mod time;
pub mod tt;
pub mod tune;

pub use hooks::EnginePosition;
pub use search::{Control, Engine, Info, Line, SearchOptions, SearchResult};
pub use time::{GameClock, Limits, SystemTime, TimeSource};
pub use tt::Bound;
