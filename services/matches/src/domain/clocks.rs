//! PauseClocks, ResumeClocks and AddTime: the platform's clock actions.

use super::checks::check_request_id;
use super::{ATTEMPTS, Changed, Matches, SeatRef};
use crate::error::{CLOCK_PAUSED, MatchError, NO_CLOCK, STALE_PLY};
use crate::record::{RequestId, RequestKind, StoredEvent, encode_clock};
use crate::store::{ChangeResult, ClockChange, ClockCommit, MatchStore, Timing};
use arbiter_core::bughouse::BoardId;
use arbiter_core::clock::{Clock, ClockError};

/// Pauses, resumes, time added, draw offers and declines each add an event; past this many
/// events in a match they are refused (`RESOURCE_EXHAUSTED`), so that no client can grow a
/// match's event list without bound. Moves alone stay below it: at most 12,000 plies per board
/// and 5 events per move.
pub const MAX_EVENTS_FOR_CLOCK_ACTIONS: u64 = 200_000;

impl<S: MatchStore> Matches<S> {
    /// Pauses every running clock of the match (a platform action), at the store's time.
    pub async fn pause_clocks(
        &self,
        id: &str,
        request_id: Option<&str>,
    ) -> Result<Changed, MatchError> {
        self.clock_action(id, request_id, RequestKind::PauseClocks, |clock, now| {
            clock.pause(now)
        })
        .await
    }

    /// Resumes the match's paused clocks (a platform action).
    pub async fn resume_clocks(
        &self,
        id: &str,
        request_id: Option<&str>,
    ) -> Result<Changed, MatchError> {
        self.clock_action(id, request_id, RequestKind::ResumeClocks, |clock, now| {
            clock.resume(now)
        })
        .await
    }

    /// Gives `ms` more to the clock of `seat_ref` (a platform action).
    pub async fn add_time(
        &self,
        id: &str,
        seat_ref: SeatRef,
        ms: u64,
        request_id: Option<&str>,
    ) -> Result<Changed, MatchError> {
        if ms == 0 {
            return Err(MatchError::invalid("ms", "must be positive"));
        }
        check_request_id(request_id)?;
        let record = self.get(id).await?;
        let seat = Self::seat(&record, seat_ref)?;
        let ms_text = ms.to_string();
        let request = request_id.map(|r| {
            RequestId::platform(
                r,
                RequestKind::AddTime,
                &[
                    crate::record::board_letter(seat.board),
                    crate::record::side_letter(seat.color),
                    &ms_text,
                ],
            )
        });
        self.clock_action_on(id, request, Some(seat.board), |clock, now| {
            clock.add_time(seat.color, ms, now)
        })
        .await
    }

    async fn clock_action(
        &self,
        id: &str,
        request_id: Option<&str>,
        kind: RequestKind,
        f: impl Fn(&mut Clock, u64) -> Result<(), ClockError>,
    ) -> Result<Changed, MatchError> {
        check_request_id(request_id)?;
        let request = request_id.map(|r| RequestId::platform(r, kind, &[]));
        self.clock_action_on(id, request, None, f).await
    }

    /// Applies `f` at the store's time to the clocks of `board` (every board if `None`), as one
    /// guarded step with a snapshot event per clock changed.
    async fn clock_action_on(
        &self,
        id: &str,
        request: Option<RequestId>,
        board: Option<BoardId>,
        f: impl Fn(&mut Clock, u64) -> Result<(), ClockError>,
    ) -> Result<Changed, MatchError> {
        for _ in 0..ATTEMPTS {
            let record = self.get(id).await?;
            if record.control.is_none() {
                return Err(MatchError::precondition(
                    NO_CLOCK,
                    "this match has no clocks",
                ));
            }
            if record.outcome.is_some() {
                return self
                    .refused_change(id, MatchError::over(), record, request.as_ref())
                    .await;
            }
            if let Some(full) = super::events_full(&record) {
                return self
                    .refused_change(id, full, record, request.as_ref())
                    .await;
            }
            let now = self.store.deadlines().now().await?;
            let mut clocks = Vec::new();
            let mut events = Vec::new();
            for (i, b) in record.boards.iter().enumerate() {
                let id_b = BoardId::BOTH[i];
                if board.is_some_and(|x| x != id_b) {
                    continue;
                }
                let Some(clock) = &b.clock else { continue };
                let mut after = clock.clone();
                match f(&mut after, now) {
                    Ok(()) => {}
                    Err(ClockError::OutOfTime(_)) => {
                        self.end_on_time(id).await?;
                        let record = self.get(id).await?;
                        return self
                            .refused_change(id, MatchError::over(), record, request.as_ref())
                            .await;
                    }
                    Err(e) => {
                        let refusal = match e {
                            ClockError::Over => MatchError::over(),
                            // AddTime beyond the most a side may hold (100 days).
                            e @ ClockError::TooMuchTime { .. } => {
                                MatchError::invalid("ms", e.to_string())
                            }
                            other => MatchError::precondition(CLOCK_PAUSED, other.to_string()),
                        };
                        return self
                            .refused_change(id, refusal, record, request.as_ref())
                            .await;
                    }
                }
                events.push(StoredEvent::clock(id_b, &after, now).encode());
                clocks.push(ClockChange {
                    board: id_b,
                    expected: encode_clock(clock),
                    clock: after,
                });
            }
            let commit = ClockCommit {
                nonce: record.nonce.clone(),
                clocks,
                timing: Timing::Live,
                events,
                end: None,
                request: request.clone(),
            };
            match self.store.commit_clock(id, &commit).await? {
                ChangeResult::Stale(_) => continue,
                other => return self.change(id, other, request.as_ref()).await,
            }
        }
        Err(MatchError::precondition(
            STALE_PLY,
            "the match kept changing while the clock action was judged; retry",
        ))
    }
}
