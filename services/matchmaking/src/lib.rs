//! # arbiter-matchmaking
//!
//! The matchmaking service (`arbiter.matchmaking.v1.MatchmakingService`):
//!
//! - **pools** per variant, time control and rated/casual, whose players hold their place with
//!   an open join stream (a lease in the store);
//! - **waves**: every few seconds (or at once when a pool fills), one replica at a time per pool
//!   (a lock with a fencing number) pairs the waiting players by the core's exact minimum-cost
//!   matching (bughouse: partnerships, then team matches), commits the pairings atomically,
//!   creates each match by one `CreateMatch` on the match service (its request id derived from
//!   the pool, the wave and the pairing), and sends each player a `MatchFound` with their seat
//!   token, kept until acknowledged;
//! - **ratings** (Glicko-2 and FIDE Elo per player, variant and speed), updated from each
//!   match's own outcome, read from the match service, once per match id.
//! - **challenges** (one player to another) and **seeks** (open offers in a lobby), bounded per
//!   player and in total, expiring, idempotent by request id; an accepted one's match is created
//!   once, recorded and rated as a pairing's ([`offer`], `domain::offers`).
//!
//! State lives in Redis (several replicas share the pools) or in this process (the embedded
//! default). [`mount`] adds the service to an `arbiter-kit` [`Host`]; [`serve`] runs it alone.
#![warn(missing_docs)]

pub mod backend;
pub mod config;
pub mod domain;
pub mod error;
pub mod found;
pub mod grpc;
pub mod legacy;
pub mod offer;
pub mod pool;
pub mod ratings;
pub mod store;

pub use arbiter_redis_conn::RedisArgs;
pub use backend::{GrpcMatches, MatchBackend};
pub use config::{MatchmakingArgs, MatchmakingConfig, Tuning};
pub use domain::Matchmaker;
pub use error::MatchmakingError;

use arbiter_kit::access::AccessPolicy;
use arbiter_kit::{Host, ServeConfig, ServeError};
use arbiter_proto::matchmaking::v1::matchmaking_service_server::MatchmakingServiceServer;
use grpc::MatchmakingGrpc;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use store::PoolStore;
use tokio::net::TcpListener;

/// The fully-qualified gRPC name of the service.
pub const SERVICE_NAME: &str = "arbiter.matchmaking.v1.MatchmakingService";

/// Where the match service is, for a matchmaking process that runs alone.
#[derive(clap::Args, Clone, Debug)]
pub struct MatchesArgs {
    /// The match service's address (`http://host:port`).
    #[arg(
        long,
        env = "ARBITER_MATCHES_URL",
        default_value = "http://127.0.0.1:50051"
    )]
    pub matches_url: String,
    /// Each attempt of a call to the match service (but waiting for a match's end) must answer
    /// within this; a failed call's retries all begin within it.
    #[arg(long, env = "ARBITER_MATCHES_TIMEOUT_MS", default_value_t = 5_000)]
    pub matches_timeout_ms: u64,
    /// A file holding the API key matchmaking presents to the match service (a key with scope
    /// matches:create). Without it, the platform token is presented when one is configured.
    #[arg(long, env = "ARBITER_MATCHES_API_KEY_FILE")]
    pub matches_api_key_file: Option<std::path::PathBuf>,
    /// TLS to the match service (its URL then starts with https://).
    #[command(flatten)]
    pub tls: arbiter_kit::tls::ClientTlsArgs,
}

impl MatchesArgs {
    /// A client of the match service (connecting lazily), presenting the key of
    /// `--matches-api-key-file`, else `platform_token`.
    ///
    /// # Errors
    /// A malformed URL; an unreadable or empty key file.
    pub fn connect(&self, platform_token: Option<String>) -> Result<GrpcMatches, String> {
        let key = match &self.matches_api_key_file {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("--matches-api-key-file {}: {e}", path.display()))?;
                let key = text.trim();
                if key.is_empty() {
                    return Err(format!("--matches-api-key-file {}: empty", path.display()));
                }
                Some(key.to_owned())
            }
            None => platform_token,
        };
        let tls = self.tls.client_tls().map_err(|e| e.to_string())?;
        connect(
            &self.matches_url,
            key,
            tls.as_ref(),
            Duration::from_millis(self.matches_timeout_ms.max(1)),
        )
    }
}

/// A client of the match service at `url` (connecting lazily), presenting the API key
/// `token`, each attempt bounded by `timeout`.
///
/// The channel connects again by itself when its connection is lost (the next call dials
/// anew), and pings the server every 20 s while calls are open (HTTP/2 keepalive): a connection
/// whose peer vanished without closing it (a replica's pod deleted) fails within 30 s instead
/// of hanging, and its calls are retried on a new one (see [`GrpcMatches`]).
///
/// With `tls`, the connection is TLS (mutual TLS when it has a client certificate).
///
/// # Errors
/// A malformed URL; unreadable TLS files.
pub fn connect(
    url: &str,
    token: Option<String>,
    tls: Option<&arbiter_kit::tls::ClientTls>,
    timeout: Duration,
) -> Result<GrpcMatches, String> {
    let mut endpoint = tonic::transport::Endpoint::from_shared(url.to_owned())
        .map_err(|e| format!("bad match service URL {url:?}: {e}"))?;
    if let Some(tls) = tls {
        if !url.starts_with("https://") {
            return Err(format!(
                "the match service URL {url:?} must start with https:// when TLS is configured"
            ));
        }
        endpoint = endpoint
            .tls_config(tls.config().map_err(|e| e.to_string())?)
            .map_err(|e| format!("TLS to the match service: {e}"))?;
    }
    let endpoint = endpoint
        .connect_timeout(timeout)
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(20))
        .keep_alive_timeout(Duration::from_secs(10));
    Ok(GrpcMatches::new(endpoint.connect_lazy(), token, timeout))
}

/// Adds matchmaking to `host`, creating matches through `backend`. Its health follows the store
/// (Redis reachable), checked every `health_interval`; every replica runs waves and follows
/// match outcomes.
///
/// # Errors
/// A bad Redis configuration.
pub async fn mount<B: MatchBackend>(
    host: &mut Host,
    config: MatchmakingConfig,
    backend: B,
) -> Result<(), ServeError> {
    match &config.redis {
        None => {
            mount_on(
                host,
                store::memory::MemoryStore::new(),
                None,
                config,
                backend,
            );
        }
        Some(redis) => {
            let store = store::redis::RedisStore::open(redis)?;
            let client = redis.client()?;
            mount_on(host, store, Some(client.subscriber()), config, backend);
        }
    }
    Ok(())
}

fn mount_on<S: PoolStore, B: MatchBackend>(
    host: &mut Host,
    store: S,
    events: Option<arbiter_redis_conn::Subscriber>,
    config: MatchmakingConfig,
    backend: B,
) {
    let mm = Arc::new(Matchmaker::new(store, backend, config.tuning));
    let shutdown = host.shutting_down();
    if let Some(client) = events {
        let mm = Arc::clone(&mm);
        tokio::spawn(store::redis::listen(
            client,
            move |event| match event {
                store::redis::Event::Player(p) => mm.wake_player(&p),
                store::redis::Event::Pool(p) => mm.wake_pool(&p),
            },
            shutdown.clone(),
        ));
    }
    tokio::spawn(Arc::clone(&mm).run_waves(shutdown.clone()));
    tokio::spawn(Arc::clone(&mm).run_follows(shutdown.clone()));
    tokio::spawn(Arc::clone(&mm).run_accept_resumer(shutdown.clone()));
    {
        let mm = Arc::clone(&mm);
        let interval = if config.health_interval.is_zero() {
            Duration::from_secs(2)
        } else {
            config.health_interval
        };
        tokio::spawn(arbiter_kit::follow_health::<
            MatchmakingServiceServer<MatchmakingGrpc<S, B>>,
            _,
            _,
        >(
            host.health(),
            move || {
                let mm = Arc::clone(&mm);
                async move { mm.probe().await.map_err(|e| e.to_string()) }
            },
            interval,
            shutdown.clone(),
            "matchmaking store",
        ));
    }
    let max = host.config().max_message_bytes;
    host.add_service(MatchmakingGrpc::new(mm, shutdown).into_server(max));
}

/// Serves matchmaking alone (with health and reflection) on `listener`, calls checked by
/// `access`, until `shutdown`.
///
/// # Errors
/// A bad Redis configuration, or the listener failing.
pub async fn serve<B, F>(
    listener: TcpListener,
    serve: ServeConfig,
    config: MatchmakingConfig,
    access: AccessPolicy,
    backend: B,
    shutdown: F,
) -> Result<(), ServeError>
where
    B: MatchBackend,
    F: Future<Output = ()> + Send,
{
    let mut host = Host::new(serve);
    host.set_access(access);
    mount(&mut host, config, backend).await?;
    host.serve(listener, shutdown).await
}
