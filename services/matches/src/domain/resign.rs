//! Resign.

use super::{Changed, Matches, SeatRef, delays_of, single_outcome};
use crate::error::MatchError;
use crate::record::RequestKind;
use crate::store::{EndCommit, MatchStore};
use arbiter_core::bughouse::MatchOutcome;
use arbiter_core::{EndReason, Outcome};

impl<S: MatchStore> Matches<S> {
    /// Resigns for the seat's side (in bughouse, its team).
    pub async fn resign(
        &self,
        id: &str,
        seat_ref: SeatRef,
        token: Option<&str>,
        request_id: Option<&str>,
    ) -> Result<Changed, MatchError> {
        let (record, seat, request) = self
            .seat_action(id, seat_ref, token, request_id, RequestKind::Resign)
            .await?;
        let loss = Outcome::win(!seat.color, EndReason::Resignation);
        let outcome = if record.is_bughouse() {
            MatchOutcome::from_board(seat.board, loss)
        } else {
            single_outcome(loss)
        };
        let commit = EndCommit {
            nonce: record.nonce.clone(),
            guard: Vec::new(),
            outcome,
            request: request.clone(),
            delays: delays_of(&record),
        };
        let result = self.store.commit_end(id, &commit).await?;
        self.change(id, result, request.as_ref()).await
    }
}
