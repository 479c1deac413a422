//! The engine's integration tests, in one test binary: the search on every variant (`search`)
//! and the network evaluation on chess (`nnue`), with the helpers both use.

use arbiter_engine::{
    Control, Engine, EnginePosition, Limits, SearchOptions, SearchResult, TimeSource,
};
use std::sync::atomic::AtomicBool;

mod nnue;
mod search;

/// A small deterministic generator (xorshift64*) for the tests' random games and networks.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() >> 33) as usize % n
    }

    /// A number in −`range`..=`range`.
    fn signed(&mut self, range: i64) -> i16 {
        ((self.next() % (2 * range as u64 + 1)) as i64 - range) as i16
    }
}

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
