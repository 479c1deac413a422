//! The match service's integration tests, in one test binary (one release link instead of four):
//! hosted games with clocks (`clocks`), the service over real gRPC (`grpc`), hostile input and
//! failures (`hardening`), request ids, move text, move times and waiting boards on both stores
//! (`requests`), aborts, declined draw offers and PGN export on both stores (`site`), and the
//! store suite against both stores (`store`).

mod support;

mod clocks;
mod cluster;
mod grpc;
mod hardening;
mod requests;
mod site;
mod store;
