//! The bounds on what one analysis request may ask for, which both the live and the batch paths
//! enforce (apart from the configuration, which fills them from flags, so that neither path
//! depends on the configuration module).

/// The most lines one search can report (the engine's own bound).
pub const MULTIPV_LIMIT: u32 = 64;

/// The deepest iteration a request may ask for.
pub const MAX_DEPTH: u32 = 64;

/// Bounds on one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caps {
    /// The most nodes one search may visit; a request without a node limit gets this one.
    pub max_nodes: u64,
    /// The longest one search may think, in ms; a request without a time limit gets this one.
    pub max_time_ms: u64,
    /// The most MultiPV lines (at most [`MULTIPV_LIMIT`]).
    pub max_multipv: u32,
    /// The most moves played before the analysed position.
    pub max_moves: usize,
    /// The transposition table of each search, MiB (a fresh one per search, so that
    /// node-limited results are reproducible).
    pub hash_mib: usize,
}

impl Default for Caps {
    fn default() -> Caps {
        Caps {
            max_nodes: 100_000_000,
            max_time_ms: 60_000,
            max_multipv: 8,
            max_moves: 2048,
            hash_mib: 16,
        }
    }
}
