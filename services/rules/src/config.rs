//! What one rules request may ask for. Values come from flags and environment variables, read
//! in `main` only ([`RulesArgs`] is the flag definition `arbiter-rules` and `arbiter serve`
//! share).

/// Bounds on what one request may ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
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
            max_moves: 2048,
            max_pgn_bytes: 1 << 20,
            max_perft_nodes: 200_000_000,
            max_perft_depth: 12,
        }
    }
}

/// Flags of the rules service (each also readable from the environment).
#[derive(clap::Args, Debug, Clone)]
pub struct RulesArgs {
    /// Most moves in one request.
    #[arg(long, env = "ARBITER_MAX_MOVES", default_value_t = Limits::default().max_moves)]
    pub max_moves: usize,
    /// Largest PGN accepted by ImportPgn, in bytes.
    #[arg(long, env = "ARBITER_MAX_PGN_BYTES", default_value_t = Limits::default().max_pgn_bytes)]
    pub max_pgn_bytes: usize,
    /// Hard cap on the nodes of one Perft request.
    #[arg(long, env = "ARBITER_MAX_PERFT_NODES", default_value_t = Limits::default().max_perft_nodes)]
    pub max_perft_nodes: u64,
}

impl RulesArgs {
    /// The limits these flags describe.
    pub fn limits(&self) -> Limits {
        Limits {
            max_moves: self.max_moves,
            max_pgn_bytes: self.max_pgn_bytes,
            max_perft_nodes: self.max_perft_nodes,
            ..Limits::default()
        }
    }
}
