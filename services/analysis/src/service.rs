//! The tonic handlers: decode the request ([`crate::live::decode`]), queue the search on the
//! [`SearchPool`] under the caller's client name, and hand its progress and result back. The
//! request's stop flag is raised when the call goes away (the client cancels, or its deadline
//! passes and the stream or future is dropped), which stops the search within
//! [`CHECK_EVERY`](arbiter_engine::search::CHECK_EVERY) nodes, or drops it unrun if it is still
//! waiting.
//!
//! **Who calls.** With API keys configured, every accepted call carries its key's
//! [`Client`] (`arbiter_kit::access`): that client owns the jobs it submits ([`caller`]), names
//! its turn in the live queue ([`client_name`]: `key:<name>`), and pays live searches from its
//! engine-time quota ([`crate::quota`]); `x-client-id` is then ignored. Without keys
//! (development mode) `x-client-id` names the caller, as before keys existed.

use crate::batch::{BatchConfig, Caller, Game, JobQueue, decode_job, remote};
use crate::caps::Caps;
use crate::convert;
use crate::engines::EngineRegistry;
use crate::error::AnalysisError;
use crate::live::{self, LiveInfo, Query};
use crate::pool::{Job, SearchPool, Turn};
use crate::quota::{EngineQuotas, charge_of};
use arbiter_core::Position;
use arbiter_engine::TimeSource;
use arbiter_kit::access::Client;
use arbiter_kit::cpu::{CpuPool, RaiseOnDrop};
use arbiter_proto::analysis::v1 as pb;
use arbiter_proto::analysis::v1::analysis_service_server::{
    AnalysisService, AnalysisServiceServer,
};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status};

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// The most engines an `AcquireWork` may name.
pub const MAX_WORKER_ENGINES: usize = 64;

/// The metadata key naming the client in development mode (no API keys): its turn in the live
/// queue, and the caller of batch calls (whose request ids and jobs are its own, see
/// [`Caller`]). A call accepted on an API key is its key's client, whatever this says.
pub const CLIENT_ID_KEY: &str = "x-client-id";

/// The longest client name kept; a longer `x-client-id` is cut (it only names a queue).
pub const MAX_CLIENT_ID_BYTES: usize = 128;

/// What the service runs its work on.
#[derive(Clone, Debug)]
pub struct Backends {
    /// The live searches' engine threads.
    pub pool: SearchPool,
    /// Batch jobs: their queue and results (in process, or on Redis).
    pub jobs: JobQueue,
    /// The process's pool for CPU-heavy request decoding (a job's PGN).
    pub cpu: CpuPool,
    /// Turns true when the server begins to shut down: job watchers end then.
    pub shutting_down: watch::Receiver<bool>,
    /// The engines requests may name: the built-in one and the configured external ones.
    pub engines: Arc<EngineRegistry>,
}

/// The analysis service.
#[derive(Clone)]
pub struct Analysis {
    caps: Arc<Caps>,
    batch: Arc<BatchConfig>,
    backends: Backends,
    time: Arc<dyn TimeSource>,
    unary_timeout: Duration,
    /// The engine-time quotas of live analysis, shared by every call of this service (so per
    /// process: per replica).
    quotas: Arc<EngineQuotas>,
}

impl std::fmt::Debug for Analysis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analysis")
            .field("caps", &self.caps)
            .field("batch", &self.batch)
            .field("backends", &self.backends)
            .finish_non_exhaustive()
    }
}

impl Analysis {
    /// A service enforcing `caps` and `batch`, working on `backends` with time read from
    /// `time`. Unary searches (BestMove) end by `unary_timeout` (the server's request deadline)
    /// at the latest.
    pub fn new(
        caps: Caps,
        batch: BatchConfig,
        backends: Backends,
        time: Arc<dyn TimeSource>,
        unary_timeout: Duration,
    ) -> Analysis {
        Analysis {
            caps: Arc::new(caps),
            batch: Arc::new(batch),
            backends,
            time,
            unary_timeout,
            quotas: Arc::new(EngineQuotas::new()),
        }
    }

    /// Charges the search of `query`, due by `deadline`, to `client`'s engine-time quota (see
    /// [`crate::quota`]); nothing without a client or a quota.
    fn charge(
        &self,
        client: Option<&Client>,
        query: &Query,
        deadline: Option<u64>,
    ) -> Result<(), AnalysisError> {
        if client.and_then(Client::engine_ms_per_minute).is_none() {
            return Ok(());
        }
        let left = deadline.map(|d| d.saturating_sub(self.time.now_ms()));
        self.quotas.charge(client, charge_of(query, left))
    }

    /// The tonic server for this service, with the message size limit `max` (bytes) applied.
    pub fn into_server(self, max: usize) -> AnalysisServiceServer<Analysis> {
        AnalysisServiceServer::new(self)
            .max_decoding_message_size(max)
            .max_encoding_message_size(max)
    }

    /// Queues `query` for `client`, to be answered by `deadline` (a time on the service's
    /// clock, if any). On an engine thread, `on_info` gets each progress report (returning
    /// false when nobody listens any more, which stops the search) and `done` the result or the
    /// refusal. Returns the request's stop flag.
    fn submit(
        &self,
        client: &str,
        query: Query,
        deadline: Option<u64>,
        mut on_info: Option<Box<dyn FnMut(LiveInfo) -> bool + Send>>,
        done: Box<dyn FnOnce(Result<pb::AnalysisResult, Status>) + Send>,
    ) -> Result<Arc<AtomicBool>, Status> {
        let stop = Arc::new(AtomicBool::new(false));
        let time = Arc::clone(&self.time);
        // The call's span, for the search's own on the engine thread.
        let call = tracing::Span::current();
        let job: Job = Box::new(move |turn| match turn {
            Turn::Refused(e) => done(Err(e.into())),
            Turn::Run(stop) => {
                let span = tracing::info_span!(
                    parent: &call,
                    "analysis search",
                    otel.name = "analysis.search",
                    variant = %query.position.variant(),
                    depth = tracing::field::Empty,
                    nodes = tracing::field::Empty
                );
                let _entered = span.enter();
                if deadline.is_some_and(|d| time.now_ms() >= d) {
                    return done(Err(AnalysisError::DeadlineExceeded(
                        "the call's deadline passed while it waited for an engine".into(),
                    )
                    .into()));
                }
                let started = Instant::now();
                let result = live::run(&query, stop, &*time, deadline, &mut |info| {
                    if let Some(f) = on_info.as_mut()
                        && !f(info)
                    {
                        stop.store(true, Ordering::Relaxed);
                    }
                });
                let result = match result {
                    Ok(result) => result,
                    Err(e) => {
                        tracing::warn!(engine = query.engine.name(), error = %e, "search failed");
                        return done(Err(e.into()));
                    }
                };
                crate::metrics::searched("live", result.nodes);
                span.record("depth", result.depth);
                span.record("nodes", result.nodes);
                tracing::debug!(
                    variant = %query.position.variant(),
                    depth = result.depth,
                    nodes = result.nodes,
                    ms = started.elapsed().as_millis() as u64,
                    "analysis done"
                );
                done(Ok(result.into()));
            }
        });
        self.backends.pool.submit(client, Arc::clone(&stop), job)?;
        Ok(stop)
    }
}

/// The most `info` messages a stream holds that its client has not read yet. Further infos are
/// dropped until the client catches up (the result is always sent), so a client that reads
/// slowly, or not at all, costs bounded memory and never holds an engine thread.
pub const MAX_UNREAD_INFOS: usize = 256;

/// Counts the infos of one stream that are queued but not yet read.
#[derive(Clone, Debug, Default)]
struct Unread(Arc<AtomicUsize>);

impl Unread {
    /// Whether one more info may be queued (and counts it if so).
    fn admit(&self) -> bool {
        self.0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < MAX_UNREAD_INFOS).then_some(n + 1)
            })
            .is_ok()
    }

    /// One queued info was read.
    fn taken(&self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The queue a request waits in: its API key's client (`key:<name>`) when it came with one
/// (then `x-client-id` is ignored); else (development mode) its `x-client-id` (cut to
/// [`MAX_CLIENT_ID_BYTES`]: `id:<id>`), else its peer's IP address (not the port: one client,
/// many connections: `ip:<address>`), else one shared name.
pub fn client_name<T>(req: &Request<T>) -> String {
    if let Some(client) = Client::of(req) {
        return format!("key:{}", client.name());
    }
    if let Some(id) = req
        .metadata()
        .get(CLIENT_ID_KEY)
        .and_then(|v| v.to_str().ok())
        .filter(|id| !id.is_empty())
    {
        let mut end = id.len().min(MAX_CLIENT_ID_BYTES);
        while !id.is_char_boundary(end) {
            end -= 1;
        }
        return format!("id:{}", &id[..end]);
    }
    match req.remote_addr() {
        Some(addr) => format!("ip:{}", addr.ip()),
        None => "unknown".to_owned(),
    }
}

/// The caller of a batch call: its API key's client ([`Caller::client`]) when it came with one
/// (then `x-client-id` is ignored, and cannot name a key's client); else (development mode) its
/// `x-client-id` (all of it), else the anonymous caller. Not the peer's address, which changes
/// with every connection: a client that reconnected would lose its jobs.
pub fn caller<T>(req: &Request<T>) -> Caller {
    match Client::of(req) {
        Some(client) => Caller::client(client.name()),
        None => Caller::new(req.metadata().get(CLIENT_ID_KEY).map(|v| v.as_bytes())),
    }
}

/// The remote worker a call comes from: its API key (by id) when it came with one; else
/// (development mode) its caller.
pub fn worker_of<T>(req: &Request<T>) -> remote::WorkerId {
    match Client::of(req) {
        Some(client) => remote::WorkerId::key(client.key_id()),
        None => remote::WorkerId::caller(&caller(req)),
    }
}

impl Analysis {
    /// The remote worker of a call, unless it is refused for work: `PERMISSION_DENIED` naming
    /// the keys-file line that lifts the refusal. A key whose `lift_work_refusal` names its
    /// refusal has it lifted here, and works again.
    async fn admit_worker<T>(&self, req: &Request<T>) -> Result<remote::WorkerId, AnalysisError> {
        let worker = worker_of(req);
        let jobs = &self.backends.jobs;
        let Some(refusal) = jobs.work_refusal(&worker).await? else {
            return Ok(worker);
        };
        let lifted = Client::of(req).and_then(Client::lift_work_refusal);
        if lifted == Some(refusal.as_str()) {
            jobs.lift_work_refusal(&worker, &refusal).await?;
            tracing::warn!(worker = %worker, refusal = %refusal, "a remote worker's refusal was lifted");
            return Ok(worker);
        }
        Err(remote::refusal_message(&worker, &refusal))
    }
}

/// The call's deadline from its `grpc-timeout` header, and at most `cap` from now: a time on
/// `time`'s clock (whose reading is `now_ms`).
fn deadline<T>(req: &Request<T>, cap: Option<Duration>, now_ms: u64) -> Option<u64> {
    let asked = req
        .metadata()
        .get("grpc-timeout")
        .and_then(|v| v.to_str().ok())
        .and_then(parse_grpc_timeout);
    let timeout = match (asked, cap) {
        (Some(a), Some(c)) => Some(a.min(c)),
        (a, c) => a.or(c),
    };
    timeout.map(|t| now_ms.saturating_add(u64::try_from(t.as_millis()).unwrap_or(u64::MAX)))
}

/// A `grpc-timeout` value: at most 8 digits and a unit (`H`, `M`, `S`, `m`, `u`, `n`).
fn parse_grpc_timeout(v: &str) -> Option<Duration> {
    if v.len() < 2 || v.len() > 9 {
        return None;
    }
    let (digits, unit) = v.split_at(v.len() - 1);
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

#[tonic::async_trait]
impl AnalysisService for Analysis {
    type AnalyzeStream = BoxStream<pb::AnalyzeResponse>;

    async fn analyze(
        &self,
        req: Request<pb::AnalyzeRequest>,
    ) -> Result<Response<Self::AnalyzeStream>, Status> {
        let client = client_name(&req);
        let deadline = deadline(&req, None, self.time.now_ms());
        let query = live::decode(
            &convert::analyze_request(req.get_ref()),
            &self.caps,
            &self.backends.engines,
        )?;
        self.charge(Client::of(&req), &query, deadline)?;
        let (tx, rx) = mpsc::unbounded_channel();
        let unread = Unread::default();
        let (info_tx, gate) = (tx.clone(), unread.clone());
        let on_info = Box::new(move |info: LiveInfo| {
            if info_tx.is_closed() {
                return false;
            }
            if gate.admit() {
                let _ = info_tx.send(Ok(pb::AnalyzeResponse {
                    update: Some(pb::analyze_response::Update::Info(info.into())),
                }));
            }
            true
        });
        let done = Box::new(move |r: Result<pb::AnalysisResult, Status>| {
            let _ = tx.send(r.map(|result| pb::AnalyzeResponse {
                update: Some(pb::analyze_response::Update::Result(result)),
            }));
        });
        let stop = self.submit(&client, query, deadline, Some(on_info), done)?;
        // The stream holds the guard: dropping it (the client went away) stops the search.
        let guard = RaiseOnDrop(stop);
        let out = UnboundedReceiverStream::new(rx).map(move |update| {
            let _ = &guard;
            if let Ok(pb::AnalyzeResponse {
                update: Some(pb::analyze_response::Update::Info(_)),
            }) = &update
            {
                unread.taken();
            }
            update
        });
        Ok(Response::new(Box::pin(out)))
    }

    async fn best_move(
        &self,
        req: Request<pb::BestMoveRequest>,
    ) -> Result<Response<pb::BestMoveResponse>, Status> {
        let client = client_name(&req);
        let deadline = deadline(&req, Some(self.unary_timeout), self.time.now_ms());
        let query = live::decode(
            &convert::best_move_request(req.get_ref()),
            &self.caps,
            &self.backends.engines,
        )?;
        self.charge(Client::of(&req), &query, deadline)?;
        let (tx, rx) = oneshot::channel();
        let done = Box::new(move |r| {
            let _ = tx.send(r);
        });
        let stop = self.submit(&client, query, deadline, None, done)?;
        // Dropped with this future: when the call is cancelled or times out.
        let _guard = RaiseOnDrop(stop);
        match rx.await {
            Ok(r) => r.map(|result| {
                Response::new(pb::BestMoveResponse {
                    result: Some(result),
                })
            }),
            Err(_) => Err(Status::from(AnalysisError::Unavailable(
                "the search ended without a result".into(),
            ))),
        }
    }

    async fn submit_job(
        &self,
        req: Request<pb::SubmitJobRequest>,
    ) -> Result<Response<pb::SubmitJobResponse>, Status> {
        let caller = caller(&req);
        let req = req.into_inner();
        let (caps, batch) = (Arc::clone(&self.caps), Arc::clone(&self.batch));
        let engines = Arc::clone(&self.backends.engines);
        // Reading and checking the games (up to the message size of PGN) is CPU work.
        let decoded = self
            .backends
            .cpu
            .run(move |_| {
                let (request_id, mut spec, fingerprint) =
                    decode_job(&convert::submission(&req), &caps, &batch)?;
                spec.engine =
                    engines.resolve_job(&req.engine, spec.games.iter().map(Game::variant))?;
                Ok::<_, AnalysisError>((request_id, spec, fingerprint))
            })
            .await?;
        let (request_id, spec, fingerprint) = decoded?;
        let submitted = self
            .backends
            .jobs
            .submit(&caller, request_id, spec, fingerprint)
            .await?;
        Ok(Response::new(submitted.into()))
    }

    async fn get_job(
        &self,
        req: Request<pb::GetJobRequest>,
    ) -> Result<Response<pb::GetJobResponse>, Status> {
        let status = self
            .backends
            .jobs
            .status(&caller(&req), &req.get_ref().job_id)
            .await?;
        Ok(Response::new(pb::GetJobResponse {
            status: Some(status.into()),
        }))
    }

    type WatchJobStream = BoxStream<pb::WatchJobResponse>;

    async fn watch_job(
        &self,
        req: Request<pb::WatchJobRequest>,
    ) -> Result<Response<Self::WatchJobStream>, Status> {
        let mut status = self
            .backends
            .jobs
            .watch(&caller(&req), &req.get_ref().job_id)
            .await?;
        let mut shutting_down = self.backends.shutting_down.clone();
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(async move {
            loop {
                // The borrow (a lock guard) must end before the await below.
                let now = { status.borrow_and_update().clone() };
                let end = now.state.ended();
                let message = pb::WatchJobResponse {
                    status: Some(now.into()),
                };
                if tx.send(Ok(message)).await.is_err() || end {
                    return;
                }
                tokio::select! {
                    changed = status.changed() => {
                        if changed.is_err() {
                            // The job was forgotten (expired) while watched.
                            let _ = tx.send(Err(Status::not_found("the job expired"))).await;
                            return;
                        }
                    }
                    () = async {
                        // Only whether it happened: the borrow it returns must not live on.
                        let _ = shutting_down.wait_for(|down| *down).await;
                    } => {
                        let _ = tx
                            .send(Err(Status::unavailable(
                                "the server is shutting down; watch again to resume",
                            )))
                            .await;
                        return;
                    }
                    () = tx.closed() => return,
                }
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }

    async fn get_job_results(
        &self,
        req: Request<pb::GetJobResultsRequest>,
    ) -> Result<Response<pb::GetJobResultsResponse>, Status> {
        let r = req.get_ref();
        let (status, games) = self
            .backends
            .jobs
            .results(
                &caller(&req),
                &r.job_id,
                r.offset as usize,
                r.limit as usize,
            )
            .await?;
        Ok(Response::new(pb::GetJobResultsResponse {
            status: Some(status.into()),
            games: games.into_iter().map(Into::into).collect(),
        }))
    }

    async fn cancel_job(
        &self,
        req: Request<pb::CancelJobRequest>,
    ) -> Result<Response<pb::CancelJobResponse>, Status> {
        let status = self
            .backends
            .jobs
            .cancel(&caller(&req), &req.get_ref().job_id)
            .await?;
        Ok(Response::new(pb::CancelJobResponse {
            status: Some(status.into()),
        }))
    }

    async fn list_engines(
        &self,
        _req: Request<pb::ListEnginesRequest>,
    ) -> Result<Response<pb::ListEnginesResponse>, Status> {
        Ok(Response::new(pb::ListEnginesResponse {
            engines: self
                .backends
                .engines
                .describe()
                .into_iter()
                .map(Into::into)
                .collect(),
        }))
    }

    async fn acquire_work(
        &self,
        req: Request<pb::AcquireWorkRequest>,
    ) -> Result<Response<pb::AcquireWorkResponse>, Status> {
        let worker = self.admit_worker(&req).await?;
        let r = req.get_ref();
        // A worker names the few engines it runs: a longer list is not a worker's.
        if r.engines.len() > MAX_WORKER_ENGINES || r.engines.iter().any(|e| e.len() > 64) {
            return Err(AnalysisError::invalid(
                "engines",
                format!("at most {MAX_WORKER_ENGINES} names of at most 64 bytes each"),
            )
            .into());
        }
        let wait = Duration::from_millis(u64::from(r.wait_ms.min(remote::MAX_WAIT_MS)));
        // Never past the call's own deadline (less a margin to answer).
        let wait = match deadline(&req, None, self.time.now_ms()) {
            Some(d) => wait.min(Duration::from_millis(
                d.saturating_sub(self.time.now_ms()).saturating_sub(200),
            )),
            None => wait,
        };
        let item = self
            .backends
            .jobs
            .acquire(&worker, &r.engines, wait)
            .await?;
        if let Some(item) = &item {
            tracing::debug!(worker = %worker, lease = %item.lease_id, "remote work leased");
        }
        Ok(Response::new(pb::AcquireWorkResponse {
            work: item.map(convert::work_item),
        }))
    }

    async fn submit_work(
        &self,
        req: Request<pb::SubmitWorkRequest>,
    ) -> Result<Response<pb::SubmitWorkResponse>, Status> {
        let worker = self.admit_worker(&req).await?;
        let work = convert::work_result(req.get_ref());
        let jobs = &self.backends.jobs;
        let (index, spec) = match jobs.leased(&worker, &work.lease_id).await {
            Ok(remote::Leased::Accepted) => {
                crate::metrics::work_submitted("duplicate");
                return Ok(Response::new(pb::SubmitWorkResponse { duplicate: true }));
            }
            Ok(remote::Leased::Open { index, spec }) => (index, spec),
            Err(e) => {
                if matches!(e, AnalysisError::LeaseNotHeld(_)) {
                    crate::metrics::work_submitted("stale");
                }
                return Err(e.into());
            }
        };
        let positions = spec.positions();
        let lease_id = work.lease_id.clone();
        // Replaying the game and checking every move is CPU work.
        let checked = self
            .backends
            .cpu
            .run(move |_| remote::check(index, &spec, &work))
            .await?;
        let result = match checked {
            Ok(result) => result,
            Err(e) => {
                crate::metrics::work_submitted("rejected");
                let (refusal, returned) = jobs.refuse_worker(&worker).await?;
                crate::metrics::work_refused();
                if returned > 0 {
                    crate::metrics::leases_ended("returned", returned);
                }
                tracing::warn!(
                    worker = %worker,
                    refusal = %refusal,
                    lease = %lease_id,
                    leases_returned = returned,
                    reason = %e,
                    "a remote worker's results failed the check: its key is refused for work \
                     until the refusal is lifted in the keys file"
                );
                return Err(e.into());
            }
        };
        let duplicate = jobs
            .record_work(&worker, &lease_id, result, positions)
            .await
            .inspect_err(|e| {
                if matches!(e, AnalysisError::LeaseNotHeld(_)) {
                    crate::metrics::work_submitted("stale");
                }
            })?;
        crate::metrics::work_submitted(if duplicate { "duplicate" } else { "accepted" });
        Ok(Response::new(pb::SubmitWorkResponse { duplicate }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts_parse() {
        assert_eq!(parse_grpc_timeout("5S"), Some(Duration::from_secs(5)));
        assert_eq!(parse_grpc_timeout("250m"), Some(Duration::from_millis(250)));
        assert_eq!(parse_grpc_timeout("2H"), Some(Duration::from_secs(7200)));
        assert_eq!(
            parse_grpc_timeout("99999999n"),
            Some(Duration::from_nanos(99_999_999))
        );
        for bad in ["", "S", "5", "123456789S", "5s", "-5S", "5 S", "５S"] {
            assert_eq!(parse_grpc_timeout(bad), None, "{bad}");
        }
    }

    #[test]
    fn unread_infos_are_bounded() {
        let unread = Unread::default();
        assert!((0..MAX_UNREAD_INFOS).all(|_| unread.admit()));
        assert!(!unread.admit(), "the client is behind: the info is dropped");
        unread.taken();
        assert!(unread.admit(), "room again once it reads one");
        assert!(!unread.admit());
    }

    #[test]
    fn batch_callers_are_their_whole_client_id_else_anonymous() {
        let mut req = Request::new(());
        assert_eq!(caller(&req), Caller::anonymous());
        req.metadata_mut()
            .insert(CLIENT_ID_KEY, "platform-7".parse().unwrap());
        assert_eq!(caller(&req), Caller::new(Some(b"platform-7")));
        // Not cut as the queue's name is: ids sharing their first 128 bytes are two callers.
        let long = |tail: &str| {
            let mut r = Request::new(());
            let id = format!("{}{tail}", "x".repeat(MAX_CLIENT_ID_BYTES));
            r.metadata_mut().insert(CLIENT_ID_KEY, id.parse().unwrap());
            r
        };
        assert_eq!(client_name(&long("a")), client_name(&long("b")));
        assert_ne!(caller(&long("a")), caller(&long("b")));
    }

    /// A request as the access layer hands it on after accepting `key` (a key of client
    /// `name`), with `x-client-id` set to `id`.
    fn keyed(name: &str, id: Option<&str>) -> Request<()> {
        use arbiter_kit::access::{API_KEY_HEADER, AccessPolicy};
        let k = arbiter_kit::keys::new_key(name, &["analysis:batch".into()], None, None).unwrap();
        let set = arbiter_kit::keys::KeySet::parse(&k.entry, None).unwrap();
        let mut headers = tonic::codegen::http::HeaderMap::new();
        headers.insert(API_KEY_HEADER, k.key.parse().unwrap());
        let client = AccessPolicy::with_keys(set)
            .check(
                "/arbiter.analysis.v1.AnalysisService/GetJob",
                &headers,
                None,
            )
            .unwrap()
            .expect("a key's client");
        let mut req = Request::new(());
        req.extensions_mut().insert(client);
        if let Some(id) = id {
            req.metadata_mut()
                .insert(CLIENT_ID_KEY, id.parse().unwrap());
        }
        req
    }

    #[test]
    fn a_key_names_the_caller_and_x_client_id_cannot_impersonate_it() {
        let alice = keyed("alice", None);
        assert_eq!(caller(&alice), Caller::client("alice"));
        assert_eq!(client_name(&alice), "key:alice");
        // x-client-id is ignored with a key: another key's client sending alice's name is
        // still itself.
        let bob_as_alice = keyed("bob", Some("alice"));
        assert_eq!(caller(&bob_as_alice), Caller::client("bob"));
        assert_eq!(client_name(&bob_as_alice), "key:bob");
        // Without a key, an x-client-id equal to a key's client name is another caller, and
        // another queue.
        let mut dev = Request::new(());
        dev.metadata_mut()
            .insert(CLIENT_ID_KEY, "alice".parse().unwrap());
        assert_ne!(caller(&dev), caller(&alice));
        assert_ne!(client_name(&dev), client_name(&alice));
        let mut dev = Request::new(());
        dev.metadata_mut()
            .insert(CLIENT_ID_KEY, "key:alice".parse().unwrap());
        assert_ne!(caller(&dev), caller(&alice));
        assert_ne!(client_name(&dev), client_name(&alice));
        // Two keys of one client are one caller.
        assert_eq!(caller(&keyed("alice", Some("x"))), caller(&alice));
    }

    #[test]
    fn clients_are_named_by_id_else_address() {
        let mut req = Request::new(());
        assert_eq!(client_name(&req), "unknown");
        req.metadata_mut()
            .insert(CLIENT_ID_KEY, "platform-7".parse().unwrap());
        assert_eq!(client_name(&req), "id:platform-7");
        let long = "x".repeat(1000);
        req.metadata_mut()
            .insert(CLIENT_ID_KEY, long.parse().unwrap());
        assert_eq!(client_name(&req).len(), 3 + MAX_CLIENT_ID_BYTES);
    }
}
