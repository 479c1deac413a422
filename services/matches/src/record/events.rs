//! The events of a match as stored: one packed line each, in the match's events list.

use super::{
    Corrupt, board_letter, corrupt, decode_outcome_parts, encode_outcome, pack, parse_board,
    parse_num, side_letter, unpack,
};
use arbiter_clocked::fields::parse_side;
use arbiter_core::Color;
use arbiter_core::bughouse::{BoardId, MatchOutcome};
use arbiter_core::clock::Clock;

/// An event as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoredEvent {
    /// A move.
    Move {
        /// The board.
        board: BoardId,
        /// The board's ply after it.
        ply: u32,
        /// Who moved.
        side: Color,
        /// Coordinate notation.
        uci: String,
        /// SAN.
        san: String,
        /// The board's position string after it (bughouse: with the reserves as they were).
        position: String,
    },
    /// A reserve after a change.
    Reserve {
        /// The board of the holder.
        board: BoardId,
        /// The holder's colour.
        side: Color,
        /// The pieces.
        pieces: String,
    },
    /// A side (bughouse: a team, White for team 1) offered a draw.
    DrawOffer(Color),
    /// A side's standing draw offer lapsed: the other side moved.
    DrawDeclined(Color),
    /// The match ended.
    End(MatchOutcome),
    /// A side proposed to take back moves.
    TakebackOffer(Color),
    /// The other side declined a side's takeback proposal.
    TakebackDeclined(Color),
    /// A board went back to `ply` (a takeback accepted): its position then.
    Takeback {
        /// The board.
        board: BoardId,
        /// The board's ply now.
        ply: u32,
        /// The position string.
        position: String,
    },
    /// A board's clocks: remaining times at `at` (Unix ms), and whose clock runs from then.
    Clock {
        /// The board.
        board: BoardId,
        /// White's and Black's remaining time in ms at `at`.
        remaining_ms: [u64; 2],
        /// Whose clock runs.
        running: Option<Color>,
        /// When (Unix ms, the store's time base).
        at: u64,
    },
}

impl StoredEvent {
    /// The snapshot event of board `board`'s clock at `now`.
    pub fn clock(board: BoardId, clock: &Clock, now: u64) -> StoredEvent {
        let snap = clock.snapshot(now);
        StoredEvent::Clock {
            board,
            remaining_ms: snap.remaining_ms,
            running: snap.running,
            at: now,
        }
    }

    /// The stored line.
    pub fn encode(&self) -> String {
        match self {
            StoredEvent::Move {
                board,
                ply,
                side,
                uci,
                san,
                position,
            } => pack(&[
                "M",
                board_letter(*board),
                ply.to_string().as_str(),
                side_letter(*side),
                uci,
                san,
                position,
            ]),
            StoredEvent::Reserve {
                board,
                side,
                pieces,
            } => pack(&["R", board_letter(*board), side_letter(*side), pieces]),
            StoredEvent::DrawOffer(side) => pack(&["D", side_letter(*side)]),
            StoredEvent::DrawDeclined(side) => pack(&["X", side_letter(*side)]),
            StoredEvent::TakebackOffer(side) => pack(&["TP", side_letter(*side)]),
            StoredEvent::TakebackDeclined(side) => pack(&["TN", side_letter(*side)]),
            StoredEvent::Takeback {
                board,
                ply,
                position,
            } => pack(&[
                "T",
                board_letter(*board),
                ply.to_string().as_str(),
                position,
            ]),
            StoredEvent::Clock {
                board,
                remaining_ms,
                running,
                at,
            } => pack(&[
                "C",
                board_letter(*board),
                remaining_ms[0].to_string().as_str(),
                remaining_ms[1].to_string().as_str(),
                running.map_or("-", side_letter),
                at.to_string().as_str(),
            ]),
            StoredEvent::End(o) => {
                let mut out = pack(&["E"]);
                out.push_str(&encode_outcome(o));
                out
            }
        }
    }

    /// Reads a stored line.
    pub fn decode(line: &str) -> Result<StoredEvent, Corrupt> {
        let parts = unpack(line)?;
        Ok(match parts.as_slice() {
            ["M", board, ply, side, uci, san, position] => StoredEvent::Move {
                board: parse_board(board)?,
                ply: parse_num(ply, "ply")?,
                side: parse_side(side)?,
                uci: (*uci).to_owned(),
                san: (*san).to_owned(),
                position: (*position).to_owned(),
            },
            ["R", board, side, pieces] => StoredEvent::Reserve {
                board: parse_board(board)?,
                side: parse_side(side)?,
                pieces: (*pieces).to_owned(),
            },
            ["D", side] => StoredEvent::DrawOffer(parse_side(side)?),
            ["X", side] => StoredEvent::DrawDeclined(parse_side(side)?),
            ["TP", side] => StoredEvent::TakebackOffer(parse_side(side)?),
            ["TN", side] => StoredEvent::TakebackDeclined(parse_side(side)?),
            ["T", board, ply, position] => StoredEvent::Takeback {
                board: parse_board(board)?,
                ply: parse_num(ply, "ply")?,
                position: (*position).to_owned(),
            },
            ["E", rest @ ..] => match decode_outcome_parts(rest)? {
                (o, None) => StoredEvent::End(o),
                _ => return Err(corrupt("bad end event")),
            },
            ["C", board, white, black, running, at] => StoredEvent::Clock {
                board: parse_board(board)?,
                remaining_ms: [parse_num(white, "clock")?, parse_num(black, "clock")?],
                running: match *running {
                    "-" => None,
                    r => Some(parse_side(r)?),
                },
                at: parse_num(at, "clock time")?,
            },
            _ => return Err(corrupt("unknown event")),
        })
    }
}
