//! ClaimDraw.

use super::checks::check_request_id;
use super::{
    ATTEMPTS, Changed, Matches, SeatRef, bughouse_rules, corrupt, delays_of, game_error,
    single_outcome, single_state,
};
use crate::error::{MatchError, NOT_CLAIMABLE, STALE_PLY};
use crate::record::{Record, RequestId, RequestKind};
use crate::store::{ChangeResult, EndCommit, MatchStore};
use arbiter_core::bughouse::{BoardId, MatchOutcome};
use arbiter_core::{DrawClaim, EndReason, Score};

/// A draw claimed on `board` of a bughouse match: only threefold repetition, only under the
/// `repetition=threefold` option, counted on the board alone (reserves do not count). The
/// claim draws the match.
fn bughouse_claim(
    record: &Record,
    board: BoardId,
    claim: DrawClaim,
) -> Result<MatchOutcome, MatchError> {
    if !bughouse_rules(record)?.threefold {
        return Err(MatchError::precondition(
            NOT_CLAIMABLE,
            "this bughouse match has no repetition rule (create it with repetition=threefold)",
        ));
    }
    if claim != DrawClaim::ThreefoldRepetition {
        return Err(MatchError::precondition(
            NOT_CLAIMABLE,
            "bughouse boards have no move-count rule",
        ));
    }
    let history = &record.boards[board.index()].history;
    let now = history
        .last()
        .ok_or_else(|| corrupt("a bughouse board under the threefold option has no history"))?;
    let seen = history.iter().filter(|k| *k == now).count();
    if seen < 3 {
        return Err(MatchError::precondition(
            NOT_CLAIMABLE,
            format!("the position on board {board} has occurred {seen} time(s), not 3"),
        ));
    }
    Ok(MatchOutcome {
        score: Score::DRAW,
        board: Some(board),
        reason: EndReason::ThreefoldRepetition,
    })
}

impl<S: MatchStore> Matches<S> {
    /// Ends the game with a draw the rules allow `seat_ref`'s side to claim now.
    pub async fn claim_draw(
        &self,
        id: &str,
        seat_ref: SeatRef,
        token: Option<&str>,
        claim: DrawClaim,
        request_id: Option<&str>,
    ) -> Result<Changed, MatchError> {
        check_request_id(request_id)?;
        let (mut record, seat, mut fresh) = self.authorized(id, seat_ref, token).await?;
        let request = request_id.map(|r| {
            RequestId::seat(
                seat.board,
                seat.color,
                r,
                RequestKind::ClaimDraw,
                &[claim.name()],
            )
        });
        for _ in 0..ATTEMPTS {
            if record.outcome.is_some() {
                return self
                    .refused_change(id, MatchError::over(), record, request.as_ref())
                    .await;
            }
            let judged = if record.is_bughouse() {
                bughouse_claim(&record, seat.board, claim)
            } else {
                single_state(&record)?
                    .claim_draw(claim)
                    .map(single_outcome)
                    .map_err(game_error)
            };
            let outcome = match judged {
                Ok(o) => o,
                Err(_) if !fresh => {
                    let now = self.get(id).await?;
                    self.reauthorized(&record, &now, seat_ref, token)?;
                    record = now;
                    fresh = true;
                    continue;
                }
                Err(e) => {
                    return self.refused_change(id, e, record, request.as_ref()).await;
                }
            };
            let commit = EndCommit {
                nonce: record.nonce.clone(),
                guard: vec![(seat.board, record.boards[seat.board.index()].ply)],
                outcome,
                request: request.clone(),
                delays: delays_of(&record),
            };
            match self.store.commit_end(id, &commit).await? {
                ChangeResult::Stale(now) => {
                    self.reauthorized(&record, &now, seat_ref, token)?;
                    record = now;
                    fresh = true;
                }
                other => return self.change(id, other, request.as_ref()).await,
            }
        }
        Err(MatchError::precondition(
            STALE_PLY,
            "the board kept changing while the claim was judged; read the match and retry",
        ))
    }
}
