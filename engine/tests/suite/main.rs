//! The engine's integration tests, in one test binary: the search on every variant (`search`)
//! and the network evaluation on chess (`nnue`), with the helpers both use.

use arbiter_engine::{
    Control, Engine, EnginePosition, Limits, SearchOptions, SearchResult, TimeSource,
};
use std::sync::atomic::AtomicBool;

mod nnue;
mod search;

/// A clock that never moves (results compared between searches include the time).
struct Frozen;

impl TimeSource for Frozen {
    fn now_ms(&self) -> u64 {
        0
    }
}

/// `engine`'s search of `pos` (no history) to `limits` with `multipv` lines, on a frozen clock,
/// nothing reported on the way.
fn search_with<P: EnginePosition>(
    engine: &mut Engine<P>,
    pos: &P,
    limits: Limits,
    multipv: usize,
) -> SearchResult<P::Move> {
    let stop = AtomicBool::new(false);
    let options = SearchOptions {
        multipv,
        move_overhead_ms: 0,
    };
    engine.search(
        pos,
        &[],
        &limits,
        &options,
        Control {
            stop: &stop,
            time: &Frozen,
        },
        &mut |_| {},
    )
}
