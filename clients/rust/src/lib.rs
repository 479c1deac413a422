//! # arbiter-client
//!
//! A Rust client for Arbiter's gRPC API, following the client contract that every Arbiter
//! client shares (docs/clients.md):
//!
//! - **connection**: an address (`host:port`, `http://…` or `https://…`), an API key sent as
//!   `x-api-key` on every call, plaintext or TLS (a CA file, a client certificate for mutual
//!   TLS, a server name); see [`ClientConfig`];
//! - **retries**: reads and every state change carrying a `request_id` are retried on
//!   `UNAVAILABLE`, on an attempt's own `DEADLINE_EXCEEDED`, and on a `RESOURCE_EXHAUSTED` that is
//!   a rate limit or a full server; exponential backoff from 100 ms, factor 2, cap 2 s, full
//!   jitter, at most 6 attempts within the overall budget (30 s); see [`RetryPolicy`]. The client
//!   makes a UUID v4 request id for every state change the caller gives none, and sends the same
//!   id on every attempt, so the server applies it exactly once;
//! - **seat tokens**: kept per (match, seat) from `CreateMatch` (or [`Client::attach`]) and sent
//!   as `authorization: Bearer <token>` on seated calls; see [`Match`];
//! - **watching**: [`Match::watch`] yields each event once, in order, reconnecting with
//!   `after_seq` after a break, and ends after the `end` event; see [`watch_events`].
//!
//! The generated messages and clients are re-exported as [`proto`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), arbiter_client::Error> {
//! use arbiter_client::{Client, ClientConfig, proto::matches::v1::Side};
//! let client = Client::connect(ClientConfig::new("127.0.0.1:50051").api_key_from_env()).await?;
//! let game = client.create_chess_match("alice", "bob").await?;
//! game.play(Side::White, "e2e4").await?;
//! game.play(Side::Black, "e7e5").await?;
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

mod config;
mod error;
mod flows;
mod matches;
mod retry;
mod watch;

pub use arbiter_proto as proto;
pub use config::{ClientConfig, read_key_file, resolve_api_key};
pub use error::Error;
pub use flows::{BatchOutcome, JobProgress};
pub use matches::{Match, SeatId, outcome_text};
pub use retry::{RetryPolicy, is_retryable, new_request_id};
pub use watch::{
    EventStream, ResumedStream, WatchSource, WatchStream, watch_events, watch_events_after,
};

use arbiter_proto::analysis::v1::analysis_service_client::AnalysisServiceClient;
use arbiter_proto::clock::v1::clock_service_client::ClockServiceClient;
use arbiter_proto::matches::v1::match_service_client::MatchServiceClient;
use arbiter_proto::matchmaking::v1::matchmaking_service_client::MatchmakingServiceClient;
use arbiter_proto::rules::v1::rules_service_client::RulesServiceClient;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tonic::{Request, Status};

/// The channel every generated client of a [`Client`] runs on: the connection with the
/// [`Auth`] interceptor.
pub type GrpcChannel = InterceptedService<Channel, Auth>;

/// The interceptor that adds the client's `x-api-key` (and `x-client-id`, when configured) to
/// every call. Its `Debug` output never shows the key.
#[derive(Clone, Default)]
pub struct Auth {
    api_key: Option<MetadataValue<Ascii>>,
    client_id: Option<MetadataValue<Ascii>>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("client_id", &self.client_id)
            .finish()
    }
}

impl tonic::service::Interceptor for Auth {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(key) = &self.api_key {
            request.metadata_mut().insert("x-api-key", key.clone());
        }
        if let Some(id) = &self.client_id {
            request.metadata_mut().insert("x-client-id", id.clone());
        }
        Ok(request)
    }
}

/// Seat tokens by (match id, board, side); boards normalised (unset is board A).
type Tokens = Arc<Mutex<HashMap<(String, i32, i32), String>>>;

/// A connection to an Arbiter server (every service on one address, as `arbiter serve`), with
/// the contract's retries and the seat tokens it was given. Cheap to clone: clones share the
/// connection and the tokens.
#[derive(Clone, Debug)]
pub struct Client {
    channel: GrpcChannel,
    policy: RetryPolicy,
    tokens: Tokens,
}

impl Client {
    /// Connects to the server `config` names. The connection is made lazily (on the first
    /// call, and again after it breaks), so a server that is not up yet is retried like any
    /// unavailable one; the configuration (address, key file, TLS files) is checked here.
    pub async fn connect(config: ClientConfig) -> Result<Client, Error> {
        let endpoint = config.endpoint()?;
        let channel = endpoint.connect_lazy();
        let auth = Auth {
            api_key: config
                .api_key_value()
                .map(|k| secret(k, "the API key"))
                .transpose()?,
            client_id: config
                .client_id_value()
                .map(|k| {
                    k.parse()
                        .map_err(|_| Error::Config("the client id is not printable ASCII".into()))
                })
                .transpose()?,
        };
        Ok(Client {
            channel: InterceptedService::new(channel, auth),
            policy: config.retry_policy_value(),
            tokens: Arc::default(),
        })
    }

    /// The retry policy of this client's calls.
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// The generated rules client on this connection (no retries of its own).
    pub fn rules(&self) -> RulesServiceClient<GrpcChannel> {
        RulesServiceClient::new(self.channel.clone())
    }

    /// The generated match client on this connection (no retries, no seat tokens of its own).
    pub fn matches(&self) -> MatchServiceClient<GrpcChannel> {
        MatchServiceClient::new(self.channel.clone())
    }

    /// The generated clock client on this connection.
    pub fn clock(&self) -> ClockServiceClient<GrpcChannel> {
        ClockServiceClient::new(self.channel.clone())
    }

    /// The generated matchmaking client on this connection.
    pub fn matchmaking(&self) -> MatchmakingServiceClient<GrpcChannel> {
        MatchmakingServiceClient::new(self.channel.clone())
    }

    /// The generated analysis client on this connection.
    pub fn analysis(&self) -> AnalysisServiceClient<GrpcChannel> {
        AnalysisServiceClient::new(self.channel.clone())
    }

    /// Runs one idempotent unary call under the contract's retries: `attempt` is called once
    /// per attempt with that attempt's deadline (set it on the request with
    /// [`tonic::Request::set_timeout`]; the client also enforces it). Build the request inside
    /// `attempt`, with the same request id on every attempt.
    pub async fn retrying<T, F, Fut>(&self, attempt: F) -> Result<T, Error>
    where
        F: FnMut(Duration) -> Fut,
        Fut: Future<Output = Result<T, Status>>,
    {
        retry::run(&self.policy, true, attempt).await
    }

    /// Remembers `token` as the seat's token of `match_id` (what [`Client::create_match`] does
    /// with the tokens it gets).
    pub fn set_token(&self, match_id: &str, seat: impl Into<SeatId>, token: &str) {
        let seat = seat.into();
        self.tokens
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(
                (match_id.to_owned(), seat.board_key(), seat.side as i32),
                token.to_owned(),
            );
    }

    /// The token this client holds for the seat of `match_id`, if any.
    pub fn token(&self, match_id: &str, seat: impl Into<SeatId>) -> Option<String> {
        let seat = seat.into();
        self.tokens
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&(match_id.to_owned(), seat.board_key(), seat.side as i32))
            .cloned()
    }
}

impl Client {
    /// One idempotent unary call under the contract's retries: `request` (carrying its request
    /// id, for a state change) is sent on every attempt, on the generated client `service`
    /// makes, with the attempt's deadline and, for a seated call, `bearer` as its
    /// `authorization`.
    pub(crate) async fn unary<S, Req, Resp, F, Fut>(
        &self,
        service: fn(&Client) -> S,
        bearer: Option<&MetadataValue<Ascii>>,
        request: Req,
        call: F,
    ) -> Result<Resp, Error>
    where
        Req: Clone,
        F: Fn(S, Request<Req>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<Resp>, Status>>,
    {
        let (request, call) = (&request, &call);
        self.retrying(|deadline| {
            let mut r = timed(request.clone(), deadline);
            if let Some(value) = bearer {
                r.metadata_mut().insert("authorization", value.clone());
            }
            let answer = call(service(self), r);
            async move { answer.await.map(tonic::Response::into_inner) }
        })
        .await
    }
}

/// A unary request with an attempt's deadline.
pub(crate) fn timed<T>(message: T, deadline: Duration) -> Request<T> {
    let mut request = Request::new(message);
    request.set_timeout(deadline);
    request
}

/// A metadata value that never shows in `Debug` output (a credential: the API key, a seat
/// token's `Bearer` header); `what` names it in the error when it is not printable ASCII.
pub(crate) fn secret(value: &str, what: &str) -> Result<MetadataValue<Ascii>, Error> {
    let mut parsed: MetadataValue<Ascii> = value
        .parse()
        .map_err(|_| Error::Config(format!("{what} is not printable ASCII")))?;
    parsed.set_sensitive(true);
    Ok(parsed)
}
