//! # arbiter-e2e
//!
//! The system test: a platform's day on the compose topology of `deploy/compose.yaml` (Redis,
//! two replicas each of rules, matches and analysis, clock, matchmaking, two batch workers,
//! HAProxy, Prometheus), with the faults a real deployment meets while games and a batch job are in
//! flight. It builds the images if needed (`deploy/build-images.sh` skips what is done), brings
//! the topology up, reaches it only through the ports published on 127.0.0.1 (the proxy, and
//! one replica's own port for its health), and takes everything down at the end, on failure
//! too, checking that no container, network or volume is left.
//!
//! ```text
//! cargo test --workspace --release --no-run   # the release binaries the images are made from
//! target/release/arbiter-e2e                  # about two minutes (the first time: the images too)
//! ```
//!
//! The day, and what each step checks:
//! 0. **Keys.** Every service checks API keys: a call without one is `UNAUTHENTICATED`,
//!    matchmaking's key (matches only) is `PERMISSION_DENIED` on the rules and analysis
//!    services, the platform's key is accepted.
//! 1. **Pools.** Four players join the bughouse pool and eight the chess pool (`2+2`, rated)
//!    through matchmaking; they are paired into one bughouse match and four chess matches,
//!    which matchmaking creates through the proxy. Each player acknowledges its match; a
//!    watcher streams every match from its first event.
//! 2. **Play.** Both seats of each board move with their seat tokens, clocks running: the
//!    bughouse match plays Morphy's Opera game on board A (ending in a mate no drop can block)
//!    and random moves that give no check on board B; the chess matches are a game left to
//!    flag after both first moves, two of random moves (to be resigned and drawn by agreement),
//!    and the Opera game. A batch job of 20 games is submitted to the analysis service, which
//!    the two workers run.
//! 3. **Faults**, one after the other, while the games and the job go on:
//!    - a worker is killed (`docker kill`) while the job runs: the job completes on the other;
//!    - rolling upgrade: each matches replica in turn gets SIGTERM (`docker stop`) and starts
//!      again; moves go on, watchers whose stream ended resume with `after_seq`;
//!    - Redis is stopped: `GetMatch`, `GetRatings` and `GetJob` through the proxy answer
//!      `UNAVAILABLE`; Redis starts again and every service turns healthy by itself; no board
//!      lost a ply, and the bughouse match still holds 32 pieces of each colour;
//!    - the backend network is cut from a matches replica: its own health turns `NOT_SERVING`,
//!      the proxy takes it out of rotation (20 calls through the proxy, not retried, all
//!      answer), and it turns `SERVING` once connected again;
//!    - a matches replica is killed eight seconds before the flag game's deadline: the other
//!      replica flags the game (the killed one is checked to be still down), at or after the
//!      deadline, and moves go on meanwhile.
//!
//!    The job is checked to be still running when Redis restarts and when the network is cut.
//! 4. **Endings and checks.** The Opera games mate, one chess game is resigned, one drawn by
//!    agreement. Every match ended as planned; for every board, the moves its players saw
//!    applied equal the moves its watcher received (sequence numbers without gap or repeat, up
//!    to the match's `last_seq`) and the board's ply count: no move lost or applied twice.
//!    Each of the 12 players has exactly one rated game in its variant, rated up after a win
//!    and down after a loss. The job is done with every game's result exactly once and its
//!    counts exact; the killed worker is started again.
//! 5. **What Prometheus saw.** The topology's Prometheus (scraping every container every 5 s)
//!    is asked through its HTTP API for the day: chess and bughouse moves applied, the flag
//!    (`arbiter_flag_delay_seconds`, a match ended by `timeout`), the job submitted and games
//!    analysed, Redis scripts run, four live searches (`BestMove` through the proxy, made for
//!    this step) with their queue waits, every Arbiter target up; and every metric named by the
//!    dashboards and alert rules of `deploy/observability/` is among the names it scraped.
//!
//! Calls are retried the way a platform's client would (exponential backoff with jitter on
//! `UNAVAILABLE` and broken connections, every change carrying a request id), so a fault shows
//! as retries, never as a lost or doubled change.
#![warn(missing_docs)]

pub mod client;
pub mod compose;
pub mod day;
pub mod games;
