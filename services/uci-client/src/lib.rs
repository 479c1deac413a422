//! # arbiter-uci-client
//!
//! External UCI engines (Stockfish, Fairy-Stockfish, …) as Arbiter's analysis backends.
//!
//! An [`EnginePool`] runs one engine, configured by an [`EngineSpec`] (the text
//! `NAME=PATH[,KEY=VALUE]...` of `arbiter analyze --engine`), as a pool of long-lived processes,
//! and answers searches in the built-in engine's own types
//! ([`arbiter_engine::analyze::Analysis`] and [`arbiter_engine::analyze::Progress`]), so a
//! caller can use either backend:
//!
//! ```no_run
//! use arbiter_core::{AnyPosition, Variant};
//! use arbiter_engine::Limits;
//! use arbiter_uci_client::{EnginePool, EngineSpec, Search};
//! use std::sync::atomic::AtomicBool;
//!
//! let spec = EngineSpec::parse("stockfish=/usr/games/stockfish,processes=2").unwrap();
//! let pool = EnginePool::start(spec).unwrap();
//! let start = AnyPosition::start(Variant::Chess).unwrap();
//! let search = Search { start: &start, moves: &[], limits: Limits::depth(10), multipv: 1 };
//! let stop = AtomicBool::new(false);
//! let analysis = pool.analyze(&search, &stop, &mut |p| println!("{p}")).unwrap();
//! println!("bestmove {}", analysis.best.unwrap());
//! ```
//!
//! Modules, one per concern: [`spec`] (the flag's syntax), `process` (one engine process and
//! its bounded, deadline-guarded reads), `protocol` (reading the engine's lines), `dialect`
//! (positions and moves in the engine's notation), [`pool`] (processes, sessions, searches,
//! restarts).
#![warn(missing_docs)]

mod dialect;
mod error;
pub mod pool;
mod process;
mod protocol;
pub mod spec;

pub use error::UciError;
pub use pool::{EnginePool, Search, Session};
pub use spec::{EngineSpec, SpecError};

/// The longest line read from an engine, in bytes (without its end of line); a longer one is
/// a protocol error ([`UciError::Protocol`]).
pub const MAX_LINE: usize = 64 * 1024;
