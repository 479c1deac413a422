//! # arbiter-clock
//!
//! The clock service (`arbiter.clock.v1.ClockService`):
//!
//! - the **time authority** for clients: `Sync`, an NTP-style exchange on the same time base as
//!   the match service (Redis `TIME` with Redis, else this process's clock), with the client's
//!   estimator in [`sync`] (what `arbiter clock-sync` runs);
//! - **standalone clocks** for platforms that host their games themselves: one or two boards on
//!   the core's clock model, pressed idempotently per ply, paused, resumed, given time and
//!   stopped by the platform, with flags that fall on the server with no press sent (the same
//!   deadline index and flag worker as hosted games, from `arbiter-clocked`).
//!
//! [`mount`] adds the service to an `arbiter-kit` [`Host`]; [`serve`] runs it alone.
#![warn(missing_docs)]

pub mod config;
pub mod domain;
pub mod error;
pub mod grpc;
pub mod record;
pub mod store;
pub mod sync;

/// The watchers of this process (from `arbiter-clocked`).
pub use arbiter_clocked::watchers;
pub use arbiter_redis_conn::RedisArgs;
pub use config::{ClockArgs, ClockConfig};
pub use domain::Clocks;

use arbiter_kit::access::AccessPolicy;
use arbiter_kit::{Host, ServeConfig, ServeError};
use arbiter_proto::clock::v1::clock_service_server::ClockServiceServer;
use grpc::ClockGrpc;
use std::future::Future;
use std::sync::Arc;
use store::AnyStore;
use tokio::net::TcpListener;

/// The fully-qualified gRPC name of the service.
pub const SERVICE_NAME: &str = "arbiter.clock.v1.ClockService";

/// Adds the clock service to `host`. Its health follows the store (Redis reachable), checked
/// every `health_interval`; every replica runs the flag worker.
pub async fn mount(host: &mut Host, config: ClockConfig) -> Result<(), ServeError> {
    let store = match &config.redis {
        None => AnyStore::Memory(store::memory::MemoryStore::new(
            config.ttl,
            config.max_clocks,
        )),
        Some(redis) => {
            AnyStore::Redis(Box::new(store::redis::RedisStore::open(redis, config.ttl)?))
        }
    };
    let clocks = Arc::new(Clocks::new(store, config.watchers));
    let shutdown = host.shutting_down();
    if let Some(redis) = &config.redis {
        let client = redis.client()?;
        arbiter_clocked::spawn_listeners(
            &client,
            store::redis::announcements(client.is_cluster()),
            clocks.watchers(),
            store::ClockStore::deadlines(clocks.store()),
            &shutdown,
        );
    }
    {
        let clocks = Arc::clone(&clocks);
        let shutdown = shutdown.clone();
        tokio::spawn(async move { clocks.run_flag_worker(shutdown).await });
    }
    {
        let clocks = Arc::clone(&clocks);
        tokio::spawn(arbiter_kit::follow_health::<
            ClockServiceServer<ClockGrpc>,
            _,
            _,
        >(
            host.health(),
            move || {
                let clocks = Arc::clone(&clocks);
                async move { clocks.probe().await }
            },
            config.health_interval,
            shutdown.clone(),
            "clock store",
        ));
    }
    let max = host.config().max_message_bytes;
    host.add_service(ClockGrpc::new(clocks, shutdown).into_server(max));
    Ok(())
}

/// Serves the clock service alone (with health and reflection) on `listener`, calls checked by
/// `access`, until `shutdown`.
pub async fn serve<F>(
    listener: TcpListener,
    serve: ServeConfig,
    config: ClockConfig,
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
