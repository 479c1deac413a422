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
//! - [`watchers`]: the watch streams of this process, woken by changes (pushed, never polled);
//! - [`grpc`]: the thin tonic handlers;
//! - [`config`]: flags and configuration.
//!
//! [`mount`] adds the service to an `arbiter-kit` [`Host`]; [`serve`] runs it alone.
#![warn(missing_docs)]

pub mod config;
pub mod domain;
pub mod error;
pub mod grpc;
mod metrics;
pub mod record;
pub mod seats;
pub mod store;

/// The watchers of this process (from `arbiter-clocked`).
pub use arbiter_clocked::watchers;

pub use config::{MatchLimits, MatchesArgs, MatchesConfig, StoreConfig};
pub use domain::Matches;
pub use error::MatchError;

use arbiter_kit::access::AccessPolicy;
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

/// Opens the configured store (a Redis store connects in the background).
pub fn open_store(config: &MatchesConfig) -> Result<AnyStore, ServeError> {
    Ok(match &config.store {
        StoreConfig::Memory => AnyStore::Memory(MemoryStore::new(
            config.retention,
            config.limits.max_matches,
        )),
        StoreConfig::Redis(redis) => AnyStore::Redis(Box::new(RedisStore::open(
            redis,
            config.retention,
            config.cache_capacity,
        )?)),
    })
}

/// Adds the match service to `host` over its configured store (who may call what is the
/// host's [`AccessPolicy`]). Its health follows the store: `SERVING` while the store works, `NOT_SERVING`
/// while it cannot (Redis unreachable, or set to evict keys), checked every
/// `health_interval`; the process starts either way.
pub async fn mount(host: &mut Host, config: MatchesConfig) -> Result<(), ServeError> {
    let store = open_store(&config)?;
    match &config.store {
        StoreConfig::Memory => tracing::info!("matches kept in process"),
        StoreConfig::Redis(_) => tracing::info!("matches kept in Redis"),
    }
    let matches = Arc::new(Matches::new(store, config.seat_key.clone(), config.limits));
    let shutdown = host.shutting_down();
    if let StoreConfig::Redis(redis) = &config.store {
        let client = redis.client()?;
        arbiter_clocked::spawn_listeners(
            &client,
            store::redis::announcements(client.is_cluster()),
            matches.watchers(),
            store::MatchStore::deadlines(matches.store()),
            &shutdown,
        );
    }
    // Flags fall with no move sent: every replica runs the flag worker.
    {
        let matches = Arc::clone(&matches);
        let shutdown = shutdown.clone();
        tokio::spawn(async move { matches.run_flag_worker(shutdown).await });
    }
    // Known from the start: in process it serves at once; with Redis, once the first check
    // passes (the follower below).
    let reporter = host.health();
    match &config.store {
        StoreConfig::Memory => {
            reporter
                .set_serving::<MatchServiceServer<MatchGrpc>>()
                .await
        }
        StoreConfig::Redis(_) => {
            reporter
                .set_not_serving::<MatchServiceServer<MatchGrpc>>()
                .await;
        }
    }
    {
        let matches = Arc::clone(&matches);
        tokio::spawn(arbiter_kit::follow_health::<
            MatchServiceServer<MatchGrpc>,
            _,
            _,
        >(
            host.health(),
            move || {
                let matches = Arc::clone(&matches);
                async move { matches.probe().await }
            },
            config.health_interval,
            shutdown.clone(),
            "match store",
        ));
    }
    let max = host.config().max_message_bytes;
    host.add_service(MatchGrpc::new(matches, shutdown).into_server(max));
    Ok(())
}

/// Serves the match service alone (with health and reflection) on `listener`, calls checked by
/// `access`, until `shutdown` completes.
pub async fn serve<F>(
    listener: TcpListener,
    serve: ServeConfig,
    config: MatchesConfig,
    access: AccessPolicy,
    shutdown: F,
) -> Result<(), ServeError>
where
    F: Future<Output = ()> + Send,
{
    let mut host = Host::new(serve);
    host.set_access(access);
    mount(&mut host, config).await?;
    host.serve(listener, shutdown).await
}
