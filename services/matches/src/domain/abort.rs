//! AbortMatch: a player calls the match off before both sides have moved.

use super::checks::check_request_id;
use super::{ATTEMPTS, Changed, Matches, SeatRef, delays_of};
use crate::error::{MatchError, NOT_ABORTABLE, STALE_PLY};
use crate::record::{BOARDS, Record, RequestId, RequestKind};
use crate::store::{ChangeResult, EndCommit, MatchStore};
use arbiter_core::bughouse::MatchOutcome;
use arbiter_core::{EndReason, Score};

/// Why `record` cannot be aborted now, if it cannot: it is over, or both sides have moved on a
/// board (in bughouse, on either board).
fn abort_refusal(record: &Record) -> Option<MatchError> {
    if record.outcome.is_some() {
        return Some(MatchError::over());
    }
    let moved = record.boards.iter().zip(BOARDS).find(|(b, _)| b.ply >= 2);
    moved.map(|(b, id)| {
        let on = if record.is_bughouse() {
            format!(" on board {id}")
        } else {
            String::new()
        };
        MatchError::precondition(
            NOT_ABORTABLE,
            format!(
                "both sides have moved{on} ({} plies): the match can no longer be aborted; resign instead",
                b.ply
            ),
        )
    })
}

impl<S: MatchStore> Matches<S> {
    /// Aborts the match for a seat before both sides have moved (on every board): it ends with
    /// no result (reason `aborted`), and nothing is rated. Any seat may abort.
    pub async fn abort(
        &self,
        id: &str,
        seat_ref: SeatRef,
        token: Option<&str>,
        request_id: Option<&str>,
    ) -> Result<Changed, MatchError> {
        check_request_id(request_id)?;
        let (mut record, seat, _) = self.authorized(id, seat_ref, token).await?;
        let request =
            request_id.map(|r| RequestId::seat(seat.board, seat.color, r, RequestKind::Abort, &[]));
        for _ in 0..ATTEMPTS {
            // Plies only grow and the end is final, so a refusal judged on a snapshot holds.
            if let Some(e) = abort_refusal(&record) {
                return self.refused_change(id, e, record, request.as_ref()).await;
            }
            let commit = EndCommit {
                nonce: record.nonce.clone(),
                // Every board as judged: a first reply since refuses the commit, to be judged
                // again.
                guard: record
                    .boards
                    .iter()
                    .zip(BOARDS)
                    .map(|(b, id)| (id, b.ply))
                    .collect(),
                outcome: MatchOutcome {
                    score: Score::DRAW,
                    board: None,
                    reason: EndReason::Aborted,
                },
                request: request.clone(),
                delays: delays_of(&record),
            };
            match self.store.commit_end(id, &commit).await? {
                ChangeResult::Stale(now) => {
                    self.reauthorized(&record, &now, seat_ref, token)?;
                    record = now;
                }
                other => return self.change(id, other, request.as_ref()).await,
            }
        }
        Err(MatchError::precondition(
            STALE_PLY,
            "the match kept changing while the abort was judged; read the match and retry",
        ))
    }
}
