//! Longer flows: the engine's best move, joining a matchmaking pool, batch analysis jobs.

use crate::Client;
use crate::error::Error;
use crate::matches::{Match, SeatId};
use crate::retry::new_request_id;
use crate::watch::{Breaks, is_break, opening};
use arbiter_proto::analysis::v1::{
    AnalysisResult, BestMoveRequest, GameResult, GetJobResultsRequest, GetJobResultsResponse,
    JobState, JobStatus, PlyLimit, SubmitJobRequest, SubmitJobResponse, WatchJobRequest,
    submit_job_request,
};
use arbiter_proto::matches::v1::{Board, Side};
use arbiter_proto::matchmaking::v1::{
    AcknowledgeRequest, JoinRequest, MatchFound, QueueStatus, join_response,
};
use futures_util::StreamExt;
use std::future::Future;
use tonic::{Code, Status};

/// A batch job's progress as the server reports it (every message is the whole status).
pub type JobProgress = JobStatus;

/// A finished batch job: its last status and every game's result, in submission order.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchOutcome {
    /// The job as it ended (DONE or CANCELLED).
    pub status: JobStatus,
    /// The results of the games done.
    pub games: Vec<GameResult>,
}

fn ended(status: &JobStatus) -> bool {
    status.state == JobState::Done as i32 || status.state == JobState::Cancelled as i32
}

impl Client {
    /// The engine's best move (BestMove, retried): the search's result.
    pub async fn best_move(&self, request: BestMoveRequest) -> Result<AnalysisResult, Error> {
        let answer = self
            .unary(Client::analysis, None, request, |mut c, r| async move {
                c.best_move(r).await
            })
            .await?;
        answer
            .result
            .ok_or_else(|| Error::Protocol("BestMove answered no result".into()))
    }

    /// Joins a matchmaking pool and waits for the pairing: `on_status` sees each queue update;
    /// the answer is the match found (acknowledged, so the player may join again) and a handle
    /// on the match holding the player's seat token. A broken Join stream (or a `MATCHING`
    /// refusal: a match is being made right now) is joined again after the policy's backoff;
    /// a match found meanwhile is then sent again by the server.
    pub async fn join_pool(
        &self,
        request: JoinRequest,
        mut on_status: impl FnMut(&QueueStatus),
    ) -> Result<(MatchFound, Match), Error> {
        let mut breaks = Breaks::new(self.retry_policy().clone());
        let deadline = self.retry_policy().attempt_timeout;
        loop {
            breaks.wait().await?;
            let mut c = self.matchmaking();
            let mut stream = match opening(deadline, "Join", c.join(request.clone())).await {
                Ok(stream) => stream,
                Err(s) if is_break(&s) || matching(&s) => {
                    breaks.broke(s);
                    continue;
                }
                Err(s) => return Err(Error::Rpc(s)),
            };
            loop {
                let event = match stream.next().await {
                    Some(Ok(event)) => event.event,
                    None => {
                        breaks.broke(Status::unavailable("the Join stream ended without a match"));
                        break;
                    }
                    Some(Err(s)) if is_break(&s) => {
                        breaks.broke(s);
                        break;
                    }
                    Some(Err(s)) => return Err(Error::Rpc(s)),
                };
                match event {
                    Some(join_response::Event::Status(q)) => {
                        breaks.reset();
                        on_status(&q);
                    }
                    Some(join_response::Event::MatchFound(found)) => {
                        return self.found(&request.player_id, found).await;
                    }
                    None => {}
                }
            }
        }
    }

    async fn found(&self, player: &str, found: MatchFound) -> Result<(MatchFound, Match), Error> {
        let seat = found.seat.clone().unwrap_or_default();
        let board = Board::try_from(i32::try_from(seat.board).unwrap_or(1)).unwrap_or(Board::A);
        let side =
            Side::try_from(i32::try_from(seat.side).unwrap_or(0)).unwrap_or(Side::Unspecified);
        let handle = self.attach(&found.match_id, SeatId::new(board, side), &found.token);
        let ack = AcknowledgeRequest {
            player_id: player.to_owned(),
            match_id: found.match_id.clone(),
        };
        // Idempotent: a repeat answers `acknowledged = false`.
        self.unary(Client::matchmaking, None, ack, |mut c, r| async move {
            c.acknowledge(r).await
        })
        .await?;
        Ok((found, handle))
    }

    /// Queues a batch job (SubmitJob; a request id is made when empty and kept on every
    /// retry, so the job is queued once: a retry answers `duplicate`).
    pub async fn submit_job(
        &self,
        mut request: SubmitJobRequest,
    ) -> Result<SubmitJobResponse, Error> {
        if request.request_id.is_empty() {
            request.request_id = new_request_id();
        }
        self.unary(Client::analysis, None, request, |mut c, r| async move {
            c.submit_job(r).await
        })
        .await
    }

    /// Follows a job until it ends (DONE or CANCELLED): `on_progress` sees each status. A broken
    /// WatchJob stream is reopened after the policy's backoff (every message is the whole
    /// status, so nothing is lost).
    pub async fn follow_job(
        &self,
        job_id: &str,
        mut on_progress: impl FnMut(&JobProgress),
    ) -> Result<JobStatus, Error> {
        let mut breaks = Breaks::new(self.retry_policy().clone());
        let deadline = self.retry_policy().attempt_timeout;
        loop {
            breaks.wait().await?;
            let mut c = self.analysis();
            let request = WatchJobRequest {
                job_id: job_id.to_owned(),
            };
            let mut stream = match opening(deadline, "WatchJob", c.watch_job(request)).await {
                Ok(stream) => stream,
                Err(s) if is_break(&s) => {
                    breaks.broke(s);
                    continue;
                }
                Err(s) => return Err(Error::Rpc(s)),
            };
            loop {
                match stream.next().await {
                    Some(Ok(m)) => {
                        let Some(status) = m.status else { continue };
                        breaks.reset();
                        on_progress(&status);
                        if ended(&status) {
                            return Ok(status);
                        }
                    }
                    None => {
                        breaks.broke(Status::unavailable("the WatchJob stream ended early"));
                        break;
                    }
                    Some(Err(s)) if is_break(&s) => {
                        breaks.broke(s);
                        break;
                    }
                    Some(Err(s)) => return Err(Error::Rpc(s)),
                }
            }
        }
    }

    /// Every result of a job's games done so far, in order (GetJobResults page by page,
    /// each page retried).
    pub async fn job_results(&self, job_id: &str) -> Result<Vec<GameResult>, Error> {
        results_by_page(|offset| {
            let request = GetJobResultsRequest {
                job_id: job_id.to_owned(),
                offset,
                limit: 0,
            };
            self.unary(Client::analysis, None, request, |mut c, r| async move {
                c.get_job_results(r).await
            })
        })
        .await
    }

    /// Submits `pgn` as a batch job (each position searched to `depth` by `engine`, a name of
    /// the server's ListEngines, empty for its default), follows it to its end (`on_progress`
    /// sees each status) and reads every game's result.
    pub async fn analyze_pgn_batch(
        &self,
        pgn: &str,
        depth: u32,
        engine: &str,
        on_progress: impl FnMut(&JobProgress),
    ) -> Result<BatchOutcome, Error> {
        let submitted = self
            .submit_job(SubmitJobRequest {
                request_id: String::new(),
                games: Some(submit_job_request::Games::Pgn(pgn.to_owned())),
                per_ply: Some(PlyLimit { depth, nodes: 0 }),
                engine: engine.to_owned(),
            })
            .await?;
        let job = submitted
            .status
            .ok_or_else(|| Error::Protocol("SubmitJob answered no status".into()))?;
        let status = self.follow_job(&job.job_id, on_progress).await?;
        let games = self.job_results(&job.job_id).await?;
        Ok(BatchOutcome { status, games })
    }
}

/// A `FAILED_PRECONDITION` `MATCHING`: a match is being made for the player; join again.
fn matching(status: &Status) -> bool {
    status.code() == Code::FailedPrecondition
        && Error::Rpc(status.clone()).reason().as_deref() == Some("MATCHING")
}

/// Every game result of a job, page by page from `page(offset)`. A page holds the games done
/// among the server's window from `offset` (a game not done yet, or dropped by a cancel, is left
/// out), so the next page starts after the last game it holds (by its `index`, not by how many
/// came: a gap would repeat games), or one game further when a window holds none; the pages end
/// when every game done is read or the job's games are passed.
async fn results_by_page<F, Fut>(mut page: F) -> Result<Vec<GameResult>, Error>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<GetJobResultsResponse, Error>>,
{
    let mut games: Vec<GameResult> = Vec::new();
    let mut offset = 0u32;
    loop {
        let answer = page(offset).await?;
        let status = answer
            .status
            .ok_or_else(|| Error::Protocol("GetJobResults answered no status".into()))?;
        let fresh = answer.games.into_iter().filter(|g| g.index >= offset);
        let before = games.len();
        games.extend(fresh);
        offset = match games[before..].last() {
            Some(last) => last.index.saturating_add(1),
            None => offset.saturating_add(1),
        };
        if games.len() >= status.games_done as usize || offset >= status.games {
            return Ok(games);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job of `total` games, `done` of them done (by index), read in windows of `window`.
    fn pages(total: u32, done: &[u32], window: u32, offset: u32) -> GetJobResultsResponse {
        let games = done
            .iter()
            .filter(|&&i| i >= offset && i < offset.saturating_add(window).min(total))
            .map(|&index| GameResult {
                index,
                ..GameResult::default()
            })
            .collect();
        GetJobResultsResponse {
            status: Some(JobStatus {
                games: total,
                games_done: done.len() as u32,
                ..JobStatus::default()
            }),
            games,
        }
    }

    async fn read(total: u32, done: &[u32], window: u32) -> (Vec<u32>, Vec<u32>) {
        let mut asked = Vec::new();
        let games = results_by_page(|offset| {
            asked.push(offset);
            let page = pages(total, done, window, offset);
            async move { Ok(page) }
        })
        .await
        .unwrap();
        (games.iter().map(|g| g.index).collect(), asked)
    }

    #[tokio::test]
    async fn job_results_follow_the_games_indexes_across_gaps() {
        // Every game done: whole windows.
        let all: Vec<u32> = (0..7).collect();
        assert_eq!(read(7, &all, 3).await, (all.clone(), vec![0, 3, 6]));
        // A game not done (or dropped by a cancel) in the first window: never a repeat.
        let (games, _) = read(7, &[0, 2, 3, 4, 5, 6], 3).await;
        assert_eq!(games, [0, 2, 3, 4, 5, 6]);
        // A window with no game done: the games after it are still read.
        let (games, _) = read(9, &[0, 1, 7, 8], 2).await;
        assert_eq!(games, [0, 1, 7, 8]);
        // A cancelled job's dropped tail is not walked once every game done is read.
        let (games, asked) = read(1000, &[0, 1, 2], 50).await;
        assert_eq!((games, asked), (vec![0, 1, 2], vec![0]));
        // No games.
        assert_eq!(read(0, &[], 50).await, (vec![], vec![0]));
    }
}
