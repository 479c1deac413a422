//! # arbiter-bench
//!
//! Load generators for Arbiter's services, driven by `arbiter bench`. They reach a server only
//! through the generated gRPC clients, like any other client, so they measure what a platform
//! would see; they know no service crate.
//!
//! - [`rules`]: unary and streaming validation next to the gRPC stack's no-op ceiling;
//! - [`matches`]: many hosted matches of one variant played at once through `MakeMove`.
#![warn(missing_docs)]

pub mod matches;
pub mod rules;
