//! # arbiter-server
//!
//! The composition root: the only crate that knows every service. It assembles them on one
//! port in one process (what `arbiter serve` runs: the embedded default, with matches kept in
//! process unless `--redis-url` is given) and holds the flags they share. No service crate
//! depends on it; each service also runs alone from its own binary (`arbiter-rules`,
//! `arbiter-matches`, `arbiter-clock`, `arbiter-matchmaking`, `arbiter-analysis`). With
//! `--redis-url`, matches,
//! standalone clocks and matchmaking share that Redis (and so one time base).
//!
//! Matchmaking creates its matches on the match service over gRPC: in `arbiter serve`, on this
//! very server (through loopback when it listens on every address). With API keys on, it
//! presents a key this process makes for itself at start (scopes `matches:create` and
//! `matches:read`, to create matches and follow them to their end even when they are private; never
//! written anywhere), or the platform token when one is configured.
//!
//! Services that need one another will be given a trait implementation here (calling the other
//! in process) or a generated gRPC client (calling it over the network): they never import each
//! other's crates.
#![warn(missing_docs)]

pub use arbiter_matches::StoreConfig;

use arbiter_analysis::{AnalysisArgs, AnalysisConfig};
use arbiter_clock::{ClockArgs, ClockConfig};
use arbiter_kit::access::{AccessArgs, AccessPolicy, Scope};
use arbiter_kit::{Host, ServeArgs, ServeConfig, ServeError};
use arbiter_matches::{MatchesArgs, MatchesConfig};
use arbiter_matchmaking::{MatchmakingArgs, MatchmakingConfig};
use arbiter_rules::{Limits, RulesArgs};
use std::future::Future;
use tokio::net::TcpListener;

/// The fully-qualified names of the gRPC services [`serve`] exposes, besides reflection.
pub const SERVICE_NAMES: [&str; 6] = [
    "grpc.health.v1.Health",
    arbiter_rules::SERVICE_NAME,
    arbiter_matches::SERVICE_NAME,
    arbiter_clock::SERVICE_NAME,
    arbiter_matchmaking::SERVICE_NAME,
    arbiter_analysis::SERVICE_NAME,
];

/// How long each of matchmaking's calls to the match service may take.
const MATCHES_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Everything the whole server is configured with.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// How the process serves (deadline, message size, reflection).
    pub serve: ServeConfig,
    /// The rules service's request limits.
    pub rules: Limits,
    /// The match service.
    pub matches: MatchesConfig,
    /// The clock service (its store follows the match service's: the same Redis, or none).
    pub clock: ClockConfig,
    /// Matchmaking (its store follows the match service's).
    pub matchmaking: MatchmakingConfig,
    /// Live analysis (its engine threads and caps).
    pub analysis: AnalysisConfig,
    /// Who may call what (API keys, or development mode).
    pub access: AccessPolicy,
    /// The key matchmaking presents when it creates matches on this server: the platform token
    /// when one is configured; otherwise, with keys on, a key made at start (`None` in
    /// development mode: it calls from loopback).
    pub matches_key: Option<String>,
    /// How matchmaking reaches this server's match service when the server speaks TLS: the CA
    /// (and, under mutual TLS, a client certificate) it trusts. Needed with TLS on.
    pub self_tls: Option<arbiter_kit::tls::ClientTls>,
}

impl Default for ServerConfig {
    /// The embedded default: matches in process, a fresh seat key, development mode (platform
    /// calls from loopback).
    fn default() -> ServerConfig {
        ServerConfig {
            serve: ServeConfig::default(),
            rules: Limits::default(),
            matches: MatchesConfig::default(),
            clock: ClockConfig::default(),
            matchmaking: MatchmakingConfig::default(),
            analysis: AnalysisConfig::default(),
            access: AccessPolicy::development(),
            matches_key: None,
            self_tls: None,
        }
    }
}

/// The flags of the whole server (each also readable from the environment).
#[derive(clap::Args, Debug, Clone)]
pub struct ServerArgs {
    /// Serving.
    #[command(flatten)]
    pub serve: ServeArgs,
    /// The rules service.
    #[command(flatten)]
    pub rules: RulesArgs,
    /// The match service.
    #[command(flatten)]
    pub matches: MatchesArgs,
    /// The clock service.
    #[command(flatten)]
    pub clock: ClockArgs,
    /// Matchmaking.
    #[command(flatten)]
    pub matchmaking: MatchmakingArgs,
    /// Live analysis.
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// API keys and the platform token.
    #[command(flatten)]
    pub access: AccessArgs,
    /// With TLS on: how matchmaking trusts this server when it creates matches on it (the
    /// CA of --tls-cert-file; under mutual TLS a client certificate too; --tls-server-name
    /// when the certificate does not carry 127.0.0.1).
    #[command(flatten)]
    pub self_tls: arbiter_kit::tls::ClientTlsArgs,
}

impl ServerArgs {
    /// The configuration these flags describe (reads the key and token files; the keys file is
    /// then watched for changes). Call it from `main`, within the Tokio runtime.
    pub fn load(&self) -> Result<ServerConfig, String> {
        let matches = self.matches.load()?;
        let redis = match &matches.store {
            StoreConfig::Redis(redis) => Some(redis.clone()),
            StoreConfig::Memory => None,
        };
        Ok(ServerConfig {
            serve: self.serve.config(),
            rules: self.rules.limits(),
            clock: self.clock.config(redis.clone()),
            analysis: self.analysis.config(redis.clone()),
            matchmaking: self.matchmaking.config(redis)?,
            matches,
            access: self.access.load()?,
            matches_key: self.access.platform.token()?,
            self_tls: self.self_tls.client_tls().map_err(|e| e.to_string())?,
        })
    }
}

/// Serves every Arbiter service on `listener` until `shutdown` completes; in-flight requests are
/// finished before returning.
pub async fn serve<F>(
    listener: TcpListener,
    config: ServerConfig,
    shutdown: F,
) -> Result<(), ServeError>
where
    F: Future<Output = ()> + Send,
{
    let tls = config
        .serve
        .tls_files()
        .map_err(|e| e.to_string())?
        .is_some();
    if tls && config.self_tls.is_none() {
        return Err(
            "with TLS on, arbiter serve needs --tls-ca-file (the CA of its own \
                    certificate) for matchmaking to reach its match service"
                .into(),
        );
    }
    let mut host = Host::new(config.serve);
    let matches_key = match config.matches_key {
        Some(key) => Some(key),
        None => config
            .access
            .internal_key("arbiter-serve", &[Scope::MatchesCreate, Scope::MatchesRead])?,
    };
    host.set_access(config.access);
    arbiter_rules::mount(&mut host, config.rules).await;
    arbiter_matches::mount(&mut host, config.matches).await?;
    arbiter_clock::mount(&mut host, config.clock).await?;
    arbiter_analysis::mount(&mut host, config.analysis).await?;
    let scheme = if tls { "https" } else { "http" };
    let backend = arbiter_matchmaking::connect(
        &format!("{scheme}://{}", self_address(listener.local_addr()?)),
        matches_key,
        config.self_tls.as_ref(),
        MATCHES_CALL_TIMEOUT,
    )?;
    arbiter_matchmaking::mount(&mut host, config.matchmaking, backend).await?;
    host.serve(listener, shutdown).await
}

/// Where this server can reach itself: its listening address, or loopback when it listens on
/// every address.
fn self_address(listen: std::net::SocketAddr) -> std::net::SocketAddr {
    let mut a = listen;
    if a.ip().is_unspecified() {
        a.set_ip(match a {
            std::net::SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            std::net::SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    a
}
