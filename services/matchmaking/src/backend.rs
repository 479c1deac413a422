//! The match service as matchmaking sees it: create a match, and wait for its end. The
//! composition root hands in [`GrpcMatches`] (the match service over gRPC, in the same process
//! or elsewhere); tests may hand in their own.

use arbiter_core::Variant;
use arbiter_kit::convert::variant_to_proto;
use arbiter_proto::matches::v1 as pb;
use arbiter_proto::matches::v1::match_service_client::MatchServiceClient;
use std::future::Future;
use std::time::Duration;
use tonic::transport::Channel;
use tonic::{Code, Request};

/// A match to create.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewMatch {
    /// The idempotency key: a retry with it finds the same match.
    pub request_id: String,
    /// The game.
    pub variant: Variant,
    /// The time control, in a notation the match service reads.
    pub time_control: String,
    /// The players in seat order: [white, black], or [white A, black A, white B, black B].
    pub players: Vec<String>,
}

/// A created match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreatedMatch {
    /// The match id.
    pub match_id: String,
    /// The seat tokens, in the order of the players.
    pub tokens: Vec<String>,
}

/// How a followed match ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchEnd {
    /// Over with a score: White's (team 1's) points in quarters, at `at_ms`.
    Scored {
        /// White's (team 1's) points × 4.
        white_quarters: u32,
        /// When the match service recorded the end (Unix ms).
        at_ms: u64,
    },
    /// Over with no result (aborted): nothing to rate.
    NoResult,
}

/// A failed call to the match service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendError {
    /// Whether the same call may succeed later (the service unreachable or overloaded).
    pub retryable: bool,
    /// What happened.
    pub message: String,
}

impl std::fmt::Display for BackendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for BackendError {}

/// The calls matchmaking makes on the match service.
pub trait MatchBackend: Send + Sync + 'static {
    /// Creates a match (idempotent by its request id).
    fn create(
        &self,
        m: &NewMatch,
    ) -> impl Future<Output = Result<CreatedMatch, BackendError>> + Send;

    /// Waits until `match_id` is over (returns at once if it is). `Err` with `retryable: false`
    /// only when the match is unknown (expired): any other failure may pass.
    fn wait_end(
        &self,
        match_id: &str,
    ) -> impl Future<Output = Result<MatchEnd, BackendError>> + Send;
}

/// The match service over gRPC, with the platform's bearer token when one is configured.
#[derive(Clone, Debug)]
pub struct GrpcMatches {
    channel: Channel,
    token: Option<String>,
    timeout: Duration,
}

impl GrpcMatches {
    /// Calls the match service on `channel`, with `token` as the bearer token of its platform
    /// calls, each call bounded by `timeout` (not the wait for a match's end).
    pub fn new(channel: Channel, token: Option<String>, timeout: Duration) -> GrpcMatches {
        GrpcMatches {
            channel,
            token,
            timeout,
        }
    }

    fn request<T>(&self, message: T, deadline: bool) -> Request<T> {
        let mut r = Request::new(message);
        if deadline {
            r.set_timeout(self.timeout);
        }
        if let Some(token) = &self.token
            && let Ok(value) = format!("Bearer {token}").parse()
        {
            r.metadata_mut().insert("authorization", value);
        }
        r
    }
}

fn backend_error(context: &str, s: &tonic::Status) -> BackendError {
    BackendError {
        retryable: matches!(
            s.code(),
            Code::Unavailable
                | Code::DeadlineExceeded
                | Code::ResourceExhausted
                | Code::Aborted
                | Code::Cancelled
                | Code::Unknown
                | Code::Internal
        ),
        message: format!("{context}: {:?}: {}", s.code(), s.message()),
    }
}

/// A failure while following a match: only an unknown match is final.
fn follow_error(context: &str, s: &tonic::Status) -> BackendError {
    BackendError {
        retryable: s.code() != Code::NotFound,
        message: format!("{context}: {:?}: {}", s.code(), s.message()),
    }
}

fn end_of(state: &pb::MatchState) -> Option<MatchEnd> {
    let outcome = state.outcome.as_ref()?;
    end_of_outcome(outcome, state.ended_at_ms)
}

fn end_of_outcome(outcome: &pb::MatchOutcome, at_ms: u64) -> Option<MatchEnd> {
    let o = outcome.outcome.as_ref()?;
    Some(match &o.score {
        Some(score) => MatchEnd::Scored {
            white_quarters: score.white_quarters,
            at_ms,
        },
        None => MatchEnd::NoResult,
    })
}

impl MatchBackend for GrpcMatches {
    async fn create(&self, m: &NewMatch) -> Result<CreatedMatch, BackendError> {
        let mut client = MatchServiceClient::new(self.channel.clone());
        let request = pb::CreateMatchRequest {
            request_id: m.request_id.clone(),
            match_id: String::new(),
            variant: variant_to_proto(m.variant),
            start: String::new(),
            rules: Vec::new(),
            players: m.players.clone(),
            time_control: m.time_control.clone(),
        };
        let r = client
            .create_match(self.request(request, true))
            .await
            .map_err(|s| backend_error("CreateMatch", &s))?
            .into_inner();
        let match_id = r.state.map(|s| s.match_id).unwrap_or_default();
        if match_id.is_empty() || r.seats.len() != m.players.len() {
            return Err(BackendError {
                retryable: false,
                message: "CreateMatch answered without the match or its seats".into(),
            });
        }
        Ok(CreatedMatch {
            match_id,
            tokens: r.seats.into_iter().map(|s| s.token).collect(),
        })
    }

    async fn wait_end(&self, match_id: &str) -> Result<MatchEnd, BackendError> {
        let mut client = MatchServiceClient::new(self.channel.clone());
        let state = client
            .get_match(self.request(
                pb::GetMatchRequest {
                    match_id: match_id.to_owned(),
                },
                true,
            ))
            .await
            .map_err(|s| follow_error("GetMatch", &s))?
            .into_inner()
            .state
            .unwrap_or_default();
        if let Some(end) = end_of(&state) {
            return Ok(end);
        }
        let mut events = client
            .watch_match(self.request(
                pb::WatchMatchRequest {
                    match_id: match_id.to_owned(),
                    after_seq: state.last_seq,
                },
                false,
            ))
            .await
            .map_err(|s| follow_error("WatchMatch", &s))?
            .into_inner();
        loop {
            match events.message().await {
                Ok(Some(event)) => {
                    if let Some(pb::watch_match_response::Event::End(outcome)) = event.event {
                        // The end event does not carry the instant; the state does.
                        let at_ms = client
                            .get_match(self.request(
                                pb::GetMatchRequest {
                                    match_id: match_id.to_owned(),
                                },
                                true,
                            ))
                            .await
                            .ok()
                            .and_then(|r| r.into_inner().state)
                            .map_or(0, |s| s.ended_at_ms);
                        return end_of_outcome(&outcome, at_ms).ok_or(BackendError {
                            retryable: true,
                            message: "end event without an outcome".into(),
                        });
                    }
                }
                Ok(None) => {
                    return Err(BackendError {
                        retryable: true,
                        message: "the watch stream ended before the match".into(),
                    });
                }
                Err(s) => return Err(follow_error("WatchMatch", &s)),
            }
        }
    }
}
