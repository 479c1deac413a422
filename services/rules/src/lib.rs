//! # arbiter-rules
//!
//! The rules service: move validation (unary and bidirectional streaming), legal moves, game
//! replay and status, notation conversion, PGN import/export and bounded perft, for every
//! variant `arbiter-core` implements, over gRPC (`arbiter.rules.v1.RulesService`). Stateless:
//! every answer depends on the request alone.
//!
//! - [`ops`]: each RPC as a plain request → response function over the core;
//! - [`service`]: the thin tonic handlers;
//! - [`config`]: the request limits and their flags.
//!
//! Serving (health, reflection, tracing, shutdown) and the error → status map come from
//! `arbiter-kit`; [`mount`] adds this service to a [`Host`], [`serve`] runs it alone.
#![warn(missing_docs)]

pub mod config;
pub mod ops;
pub mod service;

pub use config::{Limits, RulesArgs};
pub use service::Rules;

use arbiter_kit::{Host, ServeConfig, ServeError};
use arbiter_proto::rules::v1::rules_service_server::RulesServiceServer;
use std::future::Future;
use tokio::net::TcpListener;

/// The fully-qualified gRPC name of the service.
pub const SERVICE_NAME: &str = "arbiter.rules.v1.RulesService";

/// Adds the rules service to `host` and reports it serving (it has no dependencies).
pub async fn mount(host: &mut Host, limits: Limits) {
    let max = host.config().max_message_bytes;
    host.add_service(Rules::new(limits, host.cpu()).into_server(max));
    host.health()
        .set_serving::<RulesServiceServer<Rules>>()
        .await;
}

/// Serves the rules service alone (with health and reflection) on `listener`, calls checked by
/// `access`, until `shutdown` completes; in-flight requests are finished before returning.
pub async fn serve<F>(
    listener: TcpListener,
    serve: ServeConfig,
    limits: Limits,
    access: arbiter_kit::access::AccessPolicy,
    shutdown: F,
) -> Result<(), ServeError>
where
    F: Future<Output = ()> + Send,
{
    let mut host = Host::new(serve);
    host.set_access(access);
    mount(&mut host, limits).await;
    host.serve(listener, shutdown).await
}
