//! OfferDraw.

use super::{Changed, Matches, SeatRef, delays_of, events_full, match_side};
use crate::error::MatchError;
use crate::record::RequestKind;
use crate::store::{MatchStore, OfferCommit};
use arbiter_core::bughouse::MatchOutcome;
use arbiter_core::{EndReason, Score};

impl<S: MatchStore> Matches<S> {
    /// Records the seat's side's draw offer; the match is drawn once both sides offer.
    pub async fn offer_draw(
        &self,
        id: &str,
        seat_ref: SeatRef,
        token: Option<&str>,
        request_id: Option<&str>,
    ) -> Result<Changed, MatchError> {
        let (record, seat, request) = self
            .seat_action(id, seat_ref, token, request_id, RequestKind::OfferDraw)
            .await?;
        if let Some(full) = events_full(&record) {
            return self
                .refused_change(id, full, record, request.as_ref())
                .await;
        }
        let commit = OfferCommit {
            nonce: record.nonce.clone(),
            side: match_side(&record, seat),
            agreed: MatchOutcome {
                score: Score::DRAW,
                board: None,
                reason: EndReason::Agreement,
            },
            request: request.clone(),
            delays: delays_of(&record),
        };
        let result = self.store.commit_offer(id, &commit).await?;
        self.change(id, result, request.as_ref()).await
    }
}
