//! The composition root's integration tests, in one test binary (one release link instead of
//! two): matchmaking through the assembled server (`matchmaking`), `serve` itself (`serve`), and
//! API keys on every service (`access`).

mod access;
mod matchmaking;
mod serve;
mod web;
