//! Ending matches on time: the match service's hooks of the protocol every service with clocks
//! shares (`arbiter_clocked::end_on_time`, run by the shared flag worker).

use super::{Matches, bughouse_match, corrupt, single_outcome, single_state};
use crate::error::MatchError;
use crate::record::{Record, StoredEvent, encode_clock};
use crate::store::{ChangeResult, ClockChange, ClockCommit, MatchStore, Timing};
use arbiter_clocked::Committed;
use arbiter_core::EndReason;
use arbiter_core::Score;
use arbiter_core::bughouse::{BoardId, MatchOutcome, Seat};
use std::sync::Arc;

/// Whether two records of a match have the same clocks.
fn clocks_equal(a: &Record, b: &Record) -> bool {
    a.boards.len() == b.boards.len()
        && a.boards
            .iter()
            .zip(&b.boards)
            .all(|(x, y)| x.clock == y.clock)
}

impl<S: MatchStore> Matches<S> {
    /// Ends match `id` on time if one of its deadlines has passed: a flag (a loss, a draw when
    /// the opponent cannot possibly mate; in bughouse always a loss for the team, both boards'
    /// clocks stopping at that instant) or a no-show (aborted, no result). Idempotent: a match
    /// already over, or not due, is left alone (and filed again at its real deadline). Returns
    /// whether this call ended it.
    pub async fn end_on_time(&self, id: &str) -> Result<bool, MatchError> {
        self.end_on_time_at(id, tokio::time::Instant::now()).await
    }

    /// [`Self::end_on_time`], judged at once but committed not before `not_before` (the flag
    /// worker claims games ahead of their deadlines; see `arbiter_clocked::end_on_time`).
    pub async fn end_on_time_at(
        &self,
        id: &str,
        not_before: tokio::time::Instant,
    ) -> Result<bool, MatchError> {
        arbiter_clocked::end_on_time(self, id, not_before).await
    }

    /// Ends on time every match whose deadline has passed, until `shutdown` turns true (the
    /// shared flag worker of `arbiter-clocked` over this service's store). Several replicas
    /// may run it: each claims due matches with a lease, and ending a match is idempotent.
    pub async fn run_flag_worker(&self, shutdown: tokio::sync::watch::Receiver<bool>) {
        arbiter_clocked::run_flag_worker(self, shutdown).await;
    }
}

/// A match's end on time: a flag or a no-show at its earliest deadline.
impl<S: MatchStore> arbiter_clocked::Timed for Matches<S> {
    const GAME: &'static str = "match";
    type Record = Arc<Record>;
    type Ending = ClockCommit;
    type Error = MatchError;

    fn deadlines(&self) -> arbiter_clocked::Deadlines<'_> {
        self.store.deadlines()
    }

    async fn load(&self, id: &str) -> Result<Option<Arc<Record>>, MatchError> {
        Ok(self.store.load(id).await?)
    }

    fn is_over(&self, record: &Arc<Record>) -> bool {
        record.outcome.is_some()
    }

    fn judge(&self, record: &Arc<Record>) -> Result<Option<(u64, ClockCommit)>, MatchError> {
        // The earliest deadline; the store applies the end only once it has passed (by its
        // own time), so no read of the time is needed here.
        let due = record
            .boards
            .iter()
            .enumerate()
            .filter_map(|(i, b)| Some((BoardId::BOTH[i], b.clock.as_ref()?.deadline()?)))
            .min_by_key(|(_, d)| d.at);
        let Some((board, deadline)) = due else {
            return Ok(None);
        };
        // Bughouse: flags of both teams falling at the same instant draw the match.
        let simultaneous = record.is_bughouse().then(|| {
            let other = board.other();
            let d = record.boards[other.index()].clock.as_ref()?.deadline()?;
            let teams_differ =
                Seat::new(other, d.color).team() != Seat::new(board, deadline.color).team();
            (d.at == deadline.at && !d.no_show && teams_differ).then_some(other)
        });
        let simultaneous = simultaneous.flatten();
        let outcome = if let Some(_other) = simultaneous {
            MatchOutcome {
                score: Score::DRAW,
                board: None,
                reason: EndReason::Timeout,
            }
        } else if deadline.no_show {
            MatchOutcome {
                score: Score::DRAW,
                board: record.is_bughouse().then_some(board),
                reason: EndReason::Aborted,
            }
        } else if record.is_bughouse() {
            let mut m = bughouse_match(record)?;
            m.flag_fall(Seat::new(board, deadline.color))
                .map_err(|e| corrupt(e.to_string()))?
        } else {
            let mut state = single_state(record)?;
            single_outcome(
                state
                    .flag_fall(deadline.color)
                    .map_err(|e| corrupt(e.to_string()))?,
            )
        };
        let mut clocks = Vec::new();
        let mut events = Vec::new();
        for (i, b) in record.boards.iter().enumerate() {
            let Some(clock) = &b.clock else { continue };
            let mut after = clock.clone();
            let id_b = BoardId::BOTH[i];
            if id_b == board || simultaneous == Some(id_b) {
                after
                    .expire(deadline.at)
                    .map_err(|e| corrupt(e.to_string()))?;
            } else if after.stop(deadline.at).is_err() {
                continue;
            }
            events.push(StoredEvent::clock(id_b, &after, deadline.at).encode());
            clocks.push(ClockChange {
                board: id_b,
                expected: encode_clock(clock),
                clock: after,
            });
        }
        let commit = ClockCommit {
            nonce: record.nonce.clone(),
            clocks,
            timing: Timing::Due(deadline.at),
            events,
            end: Some(outcome),
            request: None,
        };
        Ok(Some((deadline.at, commit)))
    }

    async fn commit(
        &self,
        id: &str,
        commit: &ClockCommit,
    ) -> Result<Committed<Arc<Record>>, MatchError> {
        Ok(match self.store.commit_clock(id, commit).await? {
            ChangeResult::Applied(after) => {
                crate::metrics::changed(&after);
                Committed::Applied
            }
            ChangeResult::Over(_) | ChangeResult::Missing => Committed::Gone,
            ChangeResult::Stale(now) => Committed::Refused(now),
            // Changed meanwhile (a move in time): judge again.
            _ => Committed::Retry,
        })
    }

    fn same_clocks(&self, judged: &Arc<Record>, now: &Arc<Record>) -> bool {
        now.nonce == judged.nonce && clocks_equal(now, judged)
    }

    fn deadline(&self, record: &Arc<Record>) -> Option<u64> {
        record.deadline()
    }

    fn ended(&self, id: &str, deadline: u64) {
        self.watchers.wake(id);
        tracing::debug!(match_id = id, deadline, "ended on time");
    }
}
