//! # arbiter-rules
//!
//! The rules service: move validation (unary and bidirectional streaming), legal moves, game
//! replay and status, notation conversion, PGN import/export and bounded perft, for every
//! variant `arbiter-core` implements, over gRPC (`arbiter.rules.v1.RulesService`).
//!
//! - [`ops`]: each RPC as a plain request → response function over the core;
//! - [`bughouse`]: bughouse matches over a match store (in-process or Redis);
//! - [`service`]: the thin tonic handlers;
//! - [`error`]: the one mapping from domain errors to `tonic::Status`;
//! - [`server`]: health, reflection, tracing, graceful shutdown;
//! - [`config`]: limits and the shared server flags;
//! - [`loadgen`]: the load generator behind `arbiter bench rules`.
#![warn(missing_docs)]

pub mod bughouse;
pub mod config;
pub mod convert;
pub mod error;
pub mod loadgen;
pub mod ops;
pub mod server;
pub mod service;

pub use config::{Limits, ServerArgs, ServerConfig};
pub use error::RulesError;
pub use server::{SERVICE_NAMES, ServeError, serve, shutdown_signal};
pub use service::Rules;
