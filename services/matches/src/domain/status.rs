//! What the rules say about each board beyond its record: check, claimable draws, waiting for a piece (GetMatch, and every move's answer).

use super::{bughouse_match, single_state};
use crate::error::MatchError;
use crate::record::Record;
use arbiter_core::bughouse::BoardId;
use arbiter_core::{Color, Crazyhouse, DrawClaim, Position};

/// What the rules say about a board beyond its record: check, the draws that can be claimed,
/// and whether the side to move waits for a piece.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardStatus {
    /// The side to move.
    pub turn: Color,
    /// Whether the side to move is in check.
    pub check: bool,
    /// Draws either player may claim now.
    pub claims: Vec<DrawClaim>,
    /// True exactly when the match goes on and the side to move has no legal move without being
    /// mated: a bughouse player who must wait for a piece from the partner's board (in every
    /// other variant a side without a move has lost or drawn, so this is always false).
    pub waiting_for_piece: bool,
}

/// Whether the side to move on a bughouse board `pos` of a match that goes on waits for a piece:
/// no legal move, and not mated (under bughouse rules a player without a move who is not mated
/// waits, and the core's [`Crazyhouse::terminal`] is `None`).
pub(super) fn waits_for_piece(pos: &Crazyhouse) -> bool {
    pos.legal_moves().is_empty() && pos.terminal().is_none()
}

/// The draws claimable on a bughouse board with repetition history `history` (empty unless the
/// match has the `repetition=threefold` option): threefold repetition once the latest position
/// has occurred three times.
pub(super) fn bughouse_claims(history: &[u64]) -> Vec<DrawClaim> {
    match history.last() {
        Some(now) if history.iter().filter(|k| *k == now).count() >= 3 => {
            vec![DrawClaim::ThreefoldRepetition]
        }
        _ => Vec::new(),
    }
}

/// Check and claimable draws of every board of `record`.
pub fn board_status(record: &Record) -> Result<Vec<BoardStatus>, MatchError> {
    if record.is_bughouse() {
        let m = bughouse_match(record)?;
        Ok(BoardId::BOTH
            .into_iter()
            .map(|b| {
                let pos = m.board(b);
                BoardStatus {
                    turn: pos.turn(),
                    check: pos.is_check(),
                    claims: if record.outcome.is_some() {
                        Vec::new()
                    } else {
                        bughouse_claims(&record.boards[b.index()].history)
                    },
                    waiting_for_piece: record.outcome.is_none() && waits_for_piece(pos),
                }
            })
            .collect())
    } else {
        let state = single_state(record)?;
        Ok(vec![BoardStatus {
            turn: state.position().turn(),
            check: state.position().is_check(),
            claims: if record.outcome.is_some() {
                Vec::new()
            } else {
                state.claimable_draws()
            },
            waiting_for_piece: false,
        }])
    }
}
