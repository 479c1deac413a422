//! # arbiter-matches
//!
//! The match service (`arbiter.matches.v1.MatchService`): hosted games of every variant (chess,
//! crazyhouse, Glinski, Byzantine and Byzantine Citadel with their rule options) and two-board
//! bughouse matches, kept in Redis or in process, with seat credentials.
//!
//! - [`domain`]: the operations (create, move, resign, draw offers and claims, events), judged
//!   by `arbiter-core` and committed by a store in one guarded step;
//! - [`record`]: the stored schema, in one place;
//! - [`store`]: the [`MatchStore`](store::MatchStore) trait, in-process and Redis stores;
//! - [`seats`]: seat tokens (HMAC of the match and seat under the server key, never stored);
//! - [`grpc`]: the thin tonic handlers;
//! - [`config`]: flags and configuration.
//!
//! [`mount`] adds the service to an `arbiter-kit` [`Host`]; [`serve`] runs it alone.
#![warn(missing_docs)]

pub mod config;
pub mod domain;
pub mod error;
pub mod grpc;
pub mod record;
pub mod seats;
pub mod store;

pub use config::{MatchesArgs, MatchesConfig, StoreConfig};
pub use domain::Matches;
pub use error::MatchError;

use arbiter_kit::auth::PlatformAuth;
use arbiter_kit::{Host, ServeConfig, ServeError};
use arbiter_proto::matches::v1::match_service_server::MatchServiceServer;
use grpc::MatchGrpc;
use std::future::Future;
use std::sync::Arc;
use store::AnyStore;
use store::memory::MemoryStore;
use store::redis::RedisStore;
use tokio::net::TcpListener;

/// The fully-qualified gRPC name of the service.
pub const SERVICE_NAME: &str = "arbiter.matches.v1.MatchService";

/// Opens the configured store.
pub async fn open_store(config: &MatchesConfig) -> Result<AnyStore, ServeError> {
    Ok(match &config.store {
        StoreConfig::Memory => AnyStore::Memory(MemoryStore::new(config.retention)),
        StoreConfig::Redis(url) => AnyStore::Redis(Box::new(
            RedisStore::connect(url, config.retention, config.cache_capacity).await?,
        )),
    })
}

/// Adds the match service to `host` over its configured store, with platform calls checked by
/// `platform`, and reports it serving.
pub async fn mount(
    host: &mut Host,
    config: MatchesConfig,
    platform: PlatformAuth,
) -> Result<(), ServeError> {
    let store = open_store(&config).await?;
    match &config.store {
        StoreConfig::Memory => tracing::info!("matches kept in process"),
        StoreConfig::Redis(_) => tracing::info!("matches kept in Redis"),
    }
    tracing::info!("{}", platform.describe());
    let matches = Arc::new(Matches::new(store, config.seat_key));
    let max = host.config().max_message_bytes;
    host.add_service(MatchGrpc::new(matches, platform).into_server(max));
    host.health()
        .set_serving::<MatchServiceServer<MatchGrpc>>()
        .await;
    Ok(())
}

/// Serves the match service alone (with health and reflection) on `listener` until `shutdown`
/// completes.
pub async fn serve<F>(
    listener: TcpListener,
    serve: ServeConfig,
    config: MatchesConfig,
    platform: PlatformAuth,
    shutdown: F,
) -> Result<(), ServeError>
where
    F: Future<Output = ()> + Send,
{
    let mut host = Host::new(serve);
    mount(&mut host, config, platform).await?;
    host.serve(listener, shutdown).await
}
