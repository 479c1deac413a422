//! The rules service's integration tests, in one test binary (one release link instead of two):
//! every RPC over real gRPC (`grpc`) and hostile input (`hardening`).

mod support;

mod grpc;
mod hardening;
mod metrics;
