//! Server limits. Values come from flags and environment variables, read in `main` only
//! ([`ServerArgs`] is the shared flag definition used by `arbiter-rules` and `arbiter serve`).

use crate::bughouse::store::Retention;
use std::net::SocketAddr;
use std::time::Duration;

/// Bounds on what one request may ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest encoded request or response message, in bytes.
    pub max_message_bytes: usize,
    /// Most moves in one request (ApplyMoves, GetGameStatus, ExportPgn, one imported game).
    pub max_moves: usize,
    /// Largest PGN text accepted by ImportPgn, in bytes.
    pub max_pgn_bytes: usize,
    /// Hard cap on the nodes one Perft request may count.
    pub max_perft_nodes: u64,
    /// Deepest Perft accepted.
    pub max_perft_depth: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_message_bytes: 4 << 20,
            max_moves: 2048,
            max_pgn_bytes: 1 << 20,
            max_perft_nodes: 200_000_000,
            max_perft_depth: 12,
        }
    }
}

/// Where bughouse matches are kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MatchStoreConfig {
    /// In this process (the embedded default of `arbiter serve`; lost on restart).
    Memory,
    /// In Redis at this URL (`redis://host:6379/0`), shared by every instance.
    Redis(String),
}

/// Everything a server process is configured with.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Request limits.
    pub limits: Limits,
    /// Deadline for one unary request (streams are not bounded).
    pub request_timeout: Duration,
    /// The bughouse match store.
    pub match_store: MatchStoreConfig,
    /// How long bughouse matches are kept.
    pub retention: Retention,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            limits: Limits::default(),
            request_timeout: Duration::from_secs(30),
            match_store: MatchStoreConfig::Memory,
            retention: Retention::default(),
        }
    }
}

/// Command-line flags (each also readable from the environment) of a server process.
#[derive(clap::Args, Debug, Clone)]
pub struct ServerArgs {
    /// Address to listen on.
    #[arg(long, env = "ARBITER_LISTEN", default_value = "127.0.0.1:50051")]
    pub listen: SocketAddr,
    /// Largest request or response message, in bytes.
    #[arg(long, env = "ARBITER_MAX_MESSAGE_BYTES", default_value_t = Limits::default().max_message_bytes)]
    pub max_message_bytes: usize,
    /// Most moves in one request.
    #[arg(long, env = "ARBITER_MAX_MOVES", default_value_t = Limits::default().max_moves)]
    pub max_moves: usize,
    /// Largest PGN accepted by ImportPgn, in bytes.
    #[arg(long, env = "ARBITER_MAX_PGN_BYTES", default_value_t = Limits::default().max_pgn_bytes)]
    pub max_pgn_bytes: usize,
    /// Hard cap on the nodes of one Perft request.
    #[arg(long, env = "ARBITER_MAX_PERFT_NODES", default_value_t = Limits::default().max_perft_nodes)]
    pub max_perft_nodes: u64,
    /// Deadline of one unary request, in seconds.
    #[arg(long, env = "ARBITER_REQUEST_TIMEOUT_SECS", default_value_t = 30)]
    pub request_timeout_secs: u64,
    /// Keep bughouse matches in Redis at this URL (e.g. redis://127.0.0.1:6379/0); without
    /// it they are kept in this process.
    #[arg(long, env = "ARBITER_REDIS_URL")]
    pub redis_url: Option<String>,
    /// Lifetime of a live bughouse match without moves, in seconds.
    #[arg(long, env = "ARBITER_MATCH_TTL_SECS", default_value_t = 7200)]
    pub match_ttl_secs: u64,
    /// How long a finished bughouse match stays readable, in seconds.
    #[arg(long, env = "ARBITER_MATCH_GRACE_SECS", default_value_t = 600)]
    pub match_grace_secs: u64,
}

impl ServerArgs {
    /// The configuration these flags describe.
    pub fn config(&self) -> ServerConfig {
        ServerConfig {
            limits: Limits {
                max_message_bytes: self.max_message_bytes,
                max_moves: self.max_moves,
                max_pgn_bytes: self.max_pgn_bytes,
                max_perft_nodes: self.max_perft_nodes,
                ..Limits::default()
            },
            request_timeout: Duration::from_secs(self.request_timeout_secs),
            match_store: match &self.redis_url {
                Some(url) => MatchStoreConfig::Redis(url.clone()),
                None => MatchStoreConfig::Memory,
            },
            retention: Retention {
                ttl: Duration::from_secs(self.match_ttl_secs.max(1)),
                grace: Duration::from_secs(self.match_grace_secs.max(1)),
            },
        }
    }
}
