//! Time controls and clocks: pure, integer milliseconds, time injected.
//!
//! - [`TimeControl`]: one or more [`Stage`]s, each with a base time, an optional move count and a
//!   [`Bonus`] (Fischer increment, Bronstein delay or simple delay). Two notations:
//!   - human ([`TimeControl::parse`], `Display`): minutes, then `+` seconds of increment
//!     (`3+2`, `5|3`, `0.5+0`, `15s+0`), `d` for a simple delay and `b` for a Bronstein delay
//!     (`5d3`, `G/5;d3`, `5+b2`), and `minutes/moves` for a stage with a move count, stages
//!     separated by commas: `90/40+30, 30+30` is 90 minutes for 40 moves then 30 minutes,
//!     30 s increment throughout. A trailing segment of only a delay (`90/40, SD/30; d5`) gives
//!     it to every stage without a bonus of its own;
//!   - PGN ([`TimeControl::from_pgn`], [`TimeControl::to_pgn`]): seconds, `moves/seconds` and
//!     `:` between stages (`180+2`, `40/5400+30:1800+30`).
//!
//!   A last stage with a move count repeats (`40/7200:20/3600` gives 60 minutes per 20 moves
//!   after move 40).
//! - [`Speed`]: bullet, blitz, rapid or classical from base + 40 × bonus.
//! - [`Clock`]: the state machine of one board (start, press with the client's reported lag,
//!   pause/resume, add time, expire, stop), with lichess's lag-compensation quota.
//!
//! ## The rules, exactly
//! - Quota gain per move `gain = min(100, est·2/5 + 15)` centiseconds, `est` the estimate in
//!   whole seconds; the quota starts at `3·gain` and is capped at `7·gain`.
//! - A press with reported lag `lag`: `comp = min(lag, quota)`; charged time
//!   `max(0, elapsed − comp − simple delay)`; then `quota ← min(quota + gain − comp, cap)`.
//! - Deadline of the side to move: turn start + remaining + simple delay + `min(quota, 2 s)`.
//!   A press is in time if and only if it comes before the deadline; the flag falls at the
//!   deadline. Lag compensation changes the time charged, never the deadline.
//! - A press in time whose charge exceeds the remaining time (it used the grace) leaves 0 and
//!   takes the overrun from the quota, as extra compensation.
//! - The increment is added after every timed move (all moves counted in time by the rule
//!   above); a Bronstein delay gives back `min(charged, delay)`; a simple delay is never added.
//! - When a side completes a stage's move count, the next stage's time is added.

mod control;
mod state;

pub use control::{
    Bonus, ErrorKind, MAX_BONUS_MS, MAX_CORRESPONDENCE_DAYS, MAX_STAGE_MOVES, MAX_STAGE_TIME_MS,
    MAX_STAGES, MAX_TEXT_BYTES, Speed, Stage, TimeControl, TimeControlError,
};
pub use state::{
    Clock, ClockError, Deadline, MAX_GRACE_MS, MAX_REMAINING_MS, Phase, PressPlan, PressResult,
    Pressed, Side, Snapshot,
};

#[cfg(test)]
mod tests;
