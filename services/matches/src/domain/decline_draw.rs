//! DeclineDraw: a side turns down the other side's standing draw offer.

use super::checks::check_request_id;
use super::{ATTEMPTS, Changed, Matches, SeatRef, events_full, match_side};
use crate::error::{MatchError, NO_DRAW_OFFER, STALE_PLY};
use crate::record::{RequestId, RequestKind};
use crate::store::{ChangeResult, DeclineCommit, MatchStore};

impl<S: MatchStore> Matches<S> {
    /// Declines the other side's standing draw offer for the seat's side (in bughouse, its
    /// team): the offer is withdrawn and a `draw_declined` event tells both sides. Refused with
    /// `NO_DRAW_OFFER` when no offer of the other side stands (it lapsed with a move, or was
    /// declined already).
    pub async fn decline_draw(
        &self,
        id: &str,
        seat_ref: SeatRef,
        token: Option<&str>,
        request_id: Option<&str>,
    ) -> Result<Changed, MatchError> {
        check_request_id(request_id)?;
        let (mut record, seat, mut fresh) = self.authorized(id, seat_ref, token).await?;
        let request = request_id
            .map(|r| RequestId::seat(seat.board, seat.color, r, RequestKind::DeclineDraw, &[]));
        for _ in 0..ATTEMPTS {
            let offerer = !match_side(&record, seat);
            let refusal = if record.outcome.is_some() {
                Some(MatchError::over())
            } else if let Some(full) = events_full(&record) {
                Some(full)
            } else if !record.draw_offers[offerer.index()] {
                let who = if record.is_bughouse() {
                    format!("team {}", offerer.index() + 1)
                } else {
                    offerer.to_string()
                };
                Some(MatchError::precondition(
                    NO_DRAW_OFFER,
                    format!("{who} has no standing draw offer to decline"),
                ))
            } else {
                None
            };
            match refusal {
                // A snapshot may predate the offer: judge on the stored match.
                Some(_) if !fresh => {
                    let now = self.get(id).await?;
                    self.reauthorized(&record, &now, seat_ref, token)?;
                    record = now;
                    fresh = true;
                    continue;
                }
                Some(e) => return self.refused_change(id, e, record, request.as_ref()).await,
                None => {}
            }
            let commit = DeclineCommit {
                nonce: record.nonce.clone(),
                offerer,
                request: request.clone(),
            };
            match self.store.commit_decline(id, &commit).await? {
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
            "the match kept changing while the decline was judged; read the match and retry",
        ))
    }
}
