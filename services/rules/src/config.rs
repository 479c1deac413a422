//! Server limits. Values come from flags and environment variables, read in `main` only
//! ([`ServerArgs`] is the shared flag definition used by `arbiter-rules` and `arbiter serve`).

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

/// Everything a server process is configured with.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Request limits.
    pub limits: Limits,
    /// Deadline for one unary request (streams are not bounded).
    pub request_timeout: Duration,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            limits: Limits::default(),
            request_timeout: Duration::from_secs(30),
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
        }
    }
}
