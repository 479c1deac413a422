//! ClaimDraw.

use super::checks::check_request_id;
use super::{
    ATTEMPTS, Changed, Matches, SeatRef, delays_of, game_error, single_outcome, single_state,
};
use crate::error::{MatchError, NOT_CLAIMABLE, STALE_PLY};
use crate::record::{RequestId, RequestKind};
use crate::store::{ChangeResult, EndCommit, MatchStore};
use arbiter_core::DrawClaim;
use arbiter_core::bughouse::BoardId;

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
            let refusal = if record.is_bughouse() {
                Some(MatchError::precondition(
                    NOT_CLAIMABLE,
                    "bughouse boards have neither repetition nor a move-count rule",
                ))
            } else if record.outcome.is_some() {
                Some(MatchError::over())
            } else {
                None
            };
            if let Some(e) = refusal {
                return self.refused_change(id, e, record, request.as_ref()).await;
            }
            let mut state = single_state(&record)?;
            let outcome = match state.claim_draw(claim) {
                Ok(o) => o,
                Err(_) if !fresh => {
                    let now = self.get(id).await?;
                    self.reauthorized(&record, &now, seat_ref, token)?;
                    record = now;
                    fresh = true;
                    continue;
                }
                Err(e) => {
                    return self
                        .refused_change(id, game_error(e), record, request.as_ref())
                        .await;
                }
            };
            let commit = EndCommit {
                nonce: record.nonce.clone(),
                guard: vec![(BoardId::A, record.boards[0].ply)],
                outcome: single_outcome(outcome),
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
