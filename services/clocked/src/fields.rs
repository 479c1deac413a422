//! The stored encoding every service with clocks shares: packed lists (each item as its byte
//! length in decimal, `:`, and its bytes, so client text can hold any character without ever
//! shifting a neighbour) and a board clock's fields (`ck:b` the phase, `ck:b:w`/`ck:b:b` each
//! side, `dl:b` the deadline), which the Lua of [`crate::lua`] reads and writes too.

use arbiter_core::Color;
use arbiter_core::clock::{Clock, Phase, Side};
use std::fmt;

/// A stored value cannot be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Corrupt(pub String);

impl std::error::Error for Corrupt {}

impl fmt::Display for Corrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "corrupt record: {}", self.0)
    }
}

/// A [`Corrupt`] saying what.
pub fn corrupt(what: impl Into<String>) -> Corrupt {
    Corrupt(what.into())
}

pub use arbiter_redis_conn::packed::{pack, pack_into};

/// The items of a packed list (see `arbiter_redis_conn::packed`).
pub fn unpack(text: &str) -> Result<Vec<&str>, Corrupt> {
    arbiter_redis_conn::packed::unpack(text).map_err(Corrupt)
}

/// Parses a stored number; `what` names it in the error.
pub fn num<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, Corrupt> {
    s.parse().map_err(|_| corrupt(format!("bad {what} '{s}'")))
}

/// `w` or `b`.
pub fn side_letter(c: Color) -> &'static str {
    match c {
        Color::White => "w",
        Color::Black => "b",
    }
}

/// Reads a side letter.
pub fn parse_side(s: &str) -> Result<Color, Corrupt> {
    match s {
        "w" => Ok(Color::White),
        "b" => Ok(Color::Black),
        _ => Err(corrupt(format!("bad side '{s}'"))),
    }
}

/// `A` or `B` for board 0 or 1.
pub fn board_letter(i: usize) -> &'static str {
    if i == 0 { "A" } else { "B" }
}

/// Reads a board letter as its index (A 0, B 1).
pub fn parse_board(s: &str) -> Result<usize, Corrupt> {
    match s {
        "A" => Ok(0),
        "B" => Ok(1),
        _ => Err(corrupt(format!("bad board '{s}'"))),
    }
}

/// The stored form of a phase (the match service's encoding).
pub fn encode_phase(p: Phase) -> String {
    let n = |v: u64| v.to_string();
    match p {
        Phase::Idle => pack(&["I"]),
        Phase::Opening {
            turn,
            since,
            window_ms,
            other_moved,
        } => pack(&[
            "O",
            side_letter(turn),
            &n(since),
            &n(window_ms),
            if other_moved { "1" } else { "0" },
        ]),
        Phase::Running { turn, since } => pack(&["R", side_letter(turn), &n(since)]),
        Phase::Paused {
            turn,
            elapsed_ms,
            opening,
        } => pack(&[
            "P",
            side_letter(turn),
            &n(elapsed_ms),
            &opening.map_or(String::new(), |(w, _)| n(w)),
            if opening.is_some_and(|(_, m)| m) {
                "1"
            } else {
                "0"
            },
        ]),
        Phase::Flagged { color, at } => pack(&["F", side_letter(color), &n(at)]),
        Phase::NoShow { color, at } => pack(&["N", side_letter(color), &n(at)]),
        Phase::Stopped { at } => pack(&["S", &n(at)]),
    }
}

/// Reads a stored phase.
pub fn decode_phase(text: &str) -> Result<Phase, Corrupt> {
    let t = |s: &str| num::<u64>(s, "clock time");
    Ok(match unpack(text)?.as_slice() {
        ["I"] => Phase::Idle,
        ["O", turn, since, window, moved] => Phase::Opening {
            turn: parse_side(turn)?,
            since: t(since)?,
            window_ms: t(window)?,
            other_moved: *moved == "1",
        },
        ["R", turn, since] => Phase::Running {
            turn: parse_side(turn)?,
            since: t(since)?,
        },
        ["P", turn, elapsed, window, moved] => Phase::Paused {
            turn: parse_side(turn)?,
            elapsed_ms: t(elapsed)?,
            opening: if window.is_empty() {
                None
            } else {
                Some((t(window)?, *moved == "1"))
            },
        },
        ["F", side, at] => Phase::Flagged {
            color: parse_side(side)?,
            at: t(at)?,
        },
        ["N", side, at] => Phase::NoShow {
            color: parse_side(side)?,
            at: t(at)?,
        },
        ["S", at] => Phase::Stopped { at: t(at)? },
        _ => return Err(corrupt("bad clock phase")),
    })
}

/// The stored form of one side's clock.
pub fn encode_side(s: &Side) -> String {
    pack(&[
        s.remaining_ms.to_string(),
        s.quota_ms.to_string(),
        s.moves.to_string(),
        s.stage.to_string(),
        s.stage_moves.to_string(),
    ])
}

/// Reads one side's stored clock.
pub fn decode_side(text: &str) -> Result<Side, Corrupt> {
    match unpack(text)?.as_slice() {
        [remaining, quota, moves, stage, stage_moves] => Ok(Side {
            remaining_ms: num(remaining, "remaining time")?,
            quota_ms: num(quota, "quota")?,
            moves: num(moves, "move count")?,
            stage: num(stage, "stage")?,
            stage_moves: num(stage_moves, "stage moves")?,
        }),
        _ => Err(corrupt("bad side clock")),
    }
}

/// A board clock's three stored fields: phase, white, black.
pub fn encode_clock(c: &Clock) -> [String; 3] {
    [
        encode_phase(c.phase()),
        encode_side(c.side(Color::White)),
        encode_side(c.side(Color::Black)),
    ]
}

/// A board's deadline field: Unix ms, or empty.
pub fn encode_deadline(c: &Clock) -> String {
    c.deadline().map_or(String::new(), |d| d.at.to_string())
}

/// One board's change of clocks as the scripts' `clock_changes` reads it (see [`crate::lua`]):
/// board `board` (0 or 1), its three fields as judged, and the new clock's fields and deadline.
pub fn encode_change(board: usize, expected: &[String; 3], clock: &Clock) -> String {
    let [phase, white, black] = encode_clock(clock);
    pack(&[
        board_letter(board),
        expected[0].as_str(),
        expected[1].as_str(),
        expected[2].as_str(),
        phase.as_str(),
        white.as_str(),
        black.as_str(),
        encode_deadline(clock).as_str(),
    ])
}

/// The packed list of `changes` (each from [`encode_change`]).
pub fn encode_changes(changes: impl IntoIterator<Item = String>) -> String {
    pack(&changes.into_iter().collect::<Vec<_>>())
}

/// A board clock from its three stored fields (phase, white, black) under `control`.
pub fn decode_clock(
    control: &arbiter_core::clock::TimeControl,
    [phase, white, black]: [&str; 3],
) -> Result<Clock, Corrupt> {
    Clock::from_parts(
        control.clone(),
        [decode_side(white)?, decode_side(black)?],
        decode_phase(phase)?,
    )
    .ok_or_else(|| corrupt("clock inconsistent with its time control"))
}
