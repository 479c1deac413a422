//! The match service as matchmaking sees it: create a match, and wait for its end. The
//! composition root hands in [`GrpcMatches`] (the match service over gRPC, in the same process
//! or elsewhere); tests may hand in their own.
//!
//! [`GrpcMatches`] survives the match service's replicas coming and going (a rolling upgrade, a
//! pod rescheduled, a proxy's backend swapped): its channel connects again by itself after a
//! connection is lost, HTTP/2 keepalive notices a connection whose peer vanished without closing
//! it, each call is retried on a failure that passes ([`arbiter_kit::retry::transient`]) with
//! backoff and jitter — safe because both calls are idempotent: `GetMatch` reads, and
//! `CreateMatch` carries the pairing's request id, which the match service remembers, so a
//! retry after a lost answer gets the same match — and a `WatchMatch` stream that breaks is
//! opened again from the last event seen (`after_seq`).

use arbiter_core::Variant;
use arbiter_kit::convert::variant_to_proto;
use arbiter_kit::retry::{Backoff, RetryPolicy, transient};
use arbiter_proto::matches::v1 as pb;
use arbiter_proto::matches::v1::match_service_client::MatchServiceClient;
use std::future::Future;
use std::time::Duration;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};

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
    /// The variant's rule options (name, value); none for pool pairings.
    pub rules: Vec<(String, String)>,
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

/// The match service over gRPC, presenting an API key (`x-api-key`) when one is configured.
#[derive(Clone, Debug)]
pub struct GrpcMatches {
    channel: Channel,
    token: Option<String>,
    timeout: Duration,
    retry: RetryPolicy,
}

impl GrpcMatches {
    /// Calls the match service on `channel`, with `token` as the API key (`x-api-key`) of
    /// its calls (a key with scope `matches:create`), each attempt bounded by `timeout` (not the wait for a match's end). A call that
    /// fails for a reason that passes is retried by [`GrpcMatches::default_retry`]`(timeout)`.
    pub fn new(channel: Channel, token: Option<String>, timeout: Duration) -> GrpcMatches {
        GrpcMatches {
            channel,
            token,
            timeout,
            retry: GrpcMatches::default_retry(timeout),
        }
    }

    /// The retries of one call unless set otherwise: delays from 100 ms doubling up to 1 s
    /// (each drawn at random up to that), at most 8 attempts, none begun later than `timeout`
    /// after the first. A replica restarting is ridden over within the call; an attempt that
    /// hangs until its own timeout is not repeated here (the wave that asked retries later,
    /// with the same request id).
    pub fn default_retry(timeout: Duration) -> RetryPolicy {
        RetryPolicy {
            base: Duration::from_millis(100),
            cap: Duration::from_secs(1),
            max_attempts: 8,
            deadline: Some(timeout),
        }
    }

    /// The same client retrying its calls (and resuming a broken watch) by `retry`.
    pub fn with_retry(mut self, retry: RetryPolicy) -> GrpcMatches {
        self.retry = retry;
        self
    }

    fn request<T>(&self, message: T, deadline: bool) -> Request<T> {
        let mut r = Request::new(message);
        if deadline {
            r.set_timeout(self.timeout);
        }
        if let Some(token) = &self.token
            && let Ok(value) = token.parse()
        {
            r.metadata_mut()
                .insert(arbiter_kit::access::API_KEY_HEADER, value);
        }
        // The wave's trace continues in the match service.
        arbiter_kit::trace::inject(r.metadata_mut());
        r
    }

    /// Runs one idempotent call with retries, logging each retry.
    async fn call<T, F, Fut>(&self, what: &'static str, call: F) -> Result<T, Status>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Status>>,
    {
        self.retry
            .run_with(
                transient,
                |s, delay| {
                    tracing::debug!(call = what, code = ?s.code(), error = %s.message(), ?delay, "the match service failed; retrying");
                },
                call,
            )
            .await
    }

    /// The match as it stands (a read: retried).
    async fn get(&self, match_id: &str) -> Result<pb::MatchState, Status> {
        let client = MatchServiceClient::new(self.channel.clone());
        let r = self
            .call("GetMatch", || {
                let mut client = client.clone();
                let request = self.request(
                    pb::GetMatchRequest {
                        match_id: match_id.to_owned(),
                    },
                    true,
                );
                async move { client.get_match(request).await }
            })
            .await?;
        Ok(r.into_inner().state.unwrap_or_default())
    }

    /// Follows the match's events from `*after` until its end event, moving `*after` past
    /// each event seen. A stream that ends before the end event is `UNAVAILABLE` (a replica
    /// that went away closed it).
    async fn watch(&self, match_id: &str, after: &mut u64) -> Result<pb::MatchOutcome, Status> {
        let mut client = MatchServiceClient::new(self.channel.clone());
        let mut events = client
            .watch_match(self.request(
                pb::WatchMatchRequest {
                    match_id: match_id.to_owned(),
                    after_seq: *after,
                },
                false,
            ))
            .await?
            .into_inner();
        while let Some(event) = events.message().await? {
            *after = (*after).max(event.seq);
            if let Some(pb::watch_match_response::Event::End(outcome)) = event.event {
                return Ok(outcome);
            }
        }
        Err(Status::unavailable(
            "the watch stream ended before the match",
        ))
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
        let client = MatchServiceClient::new(self.channel.clone());
        let request = pb::CreateMatchRequest {
            request_id: m.request_id.clone(),
            match_id: String::new(),
            variant: variant_to_proto(m.variant),
            start: String::new(),
            rules: m
                .rules
                .iter()
                .map(|(name, value)| arbiter_proto::common::v1::RuleOption {
                    name: name.clone(),
                    value: value.clone(),
                })
                .collect(),
            players: m.players.clone(),
            time_control: m.time_control.clone(),
            // Matchmaking's matches (pools, challenges, seeks) take no moves back.
            takebacks: false,
        };
        // Every attempt sends the same request id and content: the match service answers a
        // repeat with the match it created, so a lost answer never creates a second match.
        let r = self
            .call("CreateMatch", || {
                let mut client = client.clone();
                let request = self.request(request.clone(), true);
                async move { client.create_match(request).await }
            })
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
        let state = self
            .get(match_id)
            .await
            .map_err(|s| follow_error("GetMatch", &s))?;
        if let Some(end) = end_of(&state) {
            return Ok(end);
        }
        // Follow the events from the state read. A broken stream is opened again from the last
        // event seen, with backoff; a stream that had delivered events, or had lasted longer
        // than the longest delay, ends a run of failures, and the next failure starts the
        // schedule afresh (a watch may last hours before its replica goes away).
        let mut after = state.last_seq;
        let mut backoff = Backoff::new(self.retry);
        let outcome = loop {
            let (before, began) = (after, tokio::time::Instant::now());
            match self.watch(match_id, &mut after).await {
                Ok(outcome) => break outcome,
                Err(s) if transient(&s) => {
                    tracing::debug!(match_id, after_seq = after, code = ?s.code(), error = %s.message(), "the watch stream broke; resuming");
                    if !backoff.wait_after(began, after > before).await {
                        return Err(follow_error("WatchMatch", &s));
                    }
                }
                Err(s) => return Err(follow_error("WatchMatch", &s)),
            }
        };
        // The end event does not carry the instant; the state does.
        let at_ms = self
            .get(match_id)
            .await
            .map_err(|s| follow_error("GetMatch", &s))?
            .ended_at_ms;
        end_of_outcome(&outcome, at_ms).ok_or(BackendError {
            retryable: true,
            message: "end event without an outcome".into(),
        })
    }
}
