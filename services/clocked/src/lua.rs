//! The Lua helpers of the clock scripts in Redis, shared by every service that keeps clocks.
//!
//! A script that uses them starts with [`crate::RedisNames::prelude`]: the definitions of
//! `DEADLINES` (the sorted set of running games), `DEADLINE_CHANNEL` (where a new earliest
//! deadline is announced) and `MAX_REMAINING` (the core's `MAX_REMAINING_MS`) ([`header`]), the
//! basics every script may use (`arbiter_redis_conn::script::BASICS`), and [`CLOCKS`].
//!
//! Fields follow one convention per board `b` (`A`, `B`): `ck:b` the clock's phase, `ck:b:w` and
//! `ck:b:b` each side's clock (packed `remaining, quota, moves, stage, moves in stage`), `dl:b`
//! the board's next deadline (Unix ms, empty when none).
//!
//! From the basics: `pack(t)` / `unpk(s)`, the packed-list encoding (`len:item…`); `fmt(x)`, an
//! integer-valued number as decimal text; `tnow()`, Redis `TIME` in ms. Here:
//!
//! - `earliest(S)`, `is_late(S, now)`: the game's earliest deadline, and whether it passed;
//! - `index(S, id)`: file the game in `DEADLINES` at its earliest deadline (or take it out), and
//!   announce a new earliest deadline on `DEADLINE_CHANNEL`; `refile(id, new, old)` does the same
//!   when the script knows the game's new and former earliest deadlines (no read; the index's
//!   head is read only when the deadline moves earlier);
//! - `stop_board(S, b, now, delays)`: stop board `b`'s clocks at `now`, charging a running turn;
//! - `press(a, now)`: the core's `PressPlan::apply` on the 13 plan values `a`: `nil` when late,
//!   else remaining, quota, charged, compensation, bonus, next deadline.

/// The clock helpers (`lua/clocks.lua`; see the module documentation). They follow
/// `arbiter_redis_conn::script::BASICS` and [`header`]: [`crate::RedisNames::prelude`] puts the
/// three together.
pub const CLOCKS: &str = include_str!("lua/clocks.lua");

/// The definitions the helpers need: the index key, its channel and the remaining-time cap.
/// With `grouped` (a store laid out by slot groups, on a cluster), `deadlines` names the index
/// of each group, `<deadlines>:{<tag>}`, and `DEADLINES` is the one of the group of the
/// script's first key (its hash tag), so that a script touches keys of one slot.
pub fn header(deadlines: &str, channel: &str, max_remaining_ms: u64, grouped: bool) -> String {
    use arbiter_redis_conn::script::{Constant, constants};
    let mut out = constants(&[
        ("DEADLINE_CHANNEL", Constant::Text(channel)),
        ("MAX_REMAINING", Constant::Number(max_remaining_ms)),
    ]);
    if grouped {
        out.push_str(&constants(&[("DEADLINES_BASE", Constant::Text(deadlines))]));
        out.push_str(
            "local DEADLINES = DEADLINES_BASE .. ':{' .. (string.match(KEYS[1] or '', '{([^}]*)}') or '') .. '}'\n",
        );
    } else {
        out.push_str(&constants(&[("DEADLINES", Constant::Text(deadlines))]));
    }
    out
}

/// Claims entries of the deadline index due by now + ahead, earliest first: `KEYS[1]` the index;
/// ARGV 1 lease (ms, counted from each entry's time, or now if later), 2 max, 3 ahead (ms).
/// Returns `{now, id, at, id, at, …}`. Needs `BASICS` (for `tnow`, `fmt`); run by
/// [`crate::Deadlines::claim`].
pub const CLAIM: &str = include_str!("lua/claim.lua");

/// Files a game in the deadline index again (ARGV 1: its deadline, or empty to remove it;
/// ARGV 2: its id), announcing a new earliest deadline: `KEYS[1]` the index. Needs [`header`];
/// run by [`crate::Deadlines::reindex`].
pub const REINDEX: &str = include_str!("lua/reindex.lua");

/// The 13 values of a press plan, in the order the scripts' `press` reads them.
pub fn plan_args(p: &arbiter_core::clock::PressPlan) -> [String; 13] {
    [
        p.since.to_string(),
        p.limit_ms.to_string(),
        if p.timed { "1" } else { "0" }.to_owned(),
        p.remaining_ms.to_string(),
        p.quota_ms.to_string(),
        p.comp_ms.to_string(),
        p.delay_ms.to_string(),
        p.gain_ms.to_string(),
        p.cap_ms.to_string(),
        p.increment_ms.to_string(),
        p.bronstein_ms.to_string(),
        p.stage_ms.to_string(),
        p.next_limit_ms.to_string(),
    ]
}
