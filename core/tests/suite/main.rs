//! The core's integration tests, as one test binary (each file a module): data-driven perft,
//! property tests, Chess960 against python-chess and the published suite, and the cross-checks of crazyhouse, Glinski and Byzantine against
//! independent implementations. One binary instead of one per file: every test binary is a
//! separate optimised link in CI's release build.

mod byzantine_independent;
mod chess960;
mod crazyhouse_independent;
mod glinski_independent;
mod narrowed;
mod perft;
mod properties;
