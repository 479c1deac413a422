//! The composition root's integration tests, in one test binary (one release link instead of
//! two): matchmaking through the assembled server (`matchmaking`) and `serve` itself (`serve`).

mod matchmaking;
mod serve;
