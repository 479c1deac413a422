//! Prometheus metrics for every Arbiter process.
//!
//! Code records through the [`metrics`] facade (`metrics::counter!` and friends, anywhere);
//! [`install`] puts the Prometheus recorder of `metrics-exporter-prometheus` behind it, once per
//! process, with explicit histogram buckets ([`LATENCY_BUCKETS`] for every metric whose name ends
//! in `_seconds`), the process's CPU, memory, threads and file descriptors (`metrics-process`,
//! read at each scrape) and `arbiter_build_info`. [`serve`] answers `GET /metrics` in the
//! Prometheus text format on a listener of its own (`--metrics-listen`: [`MetricsArgs`]), through
//! hyper. Without a recorder the facade's calls do nothing, and servers leave out the per-RPC
//! layer ([`RpcMetricsLayer`]), so metrics cost nothing when they are off.
//!
//! Label values are bounded: a method is one of the API's (or `unknown`), a status one of the 17
//! gRPC codes; never a match id, a player or a client-chosen string.

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tonic::codegen::http;

/// Buckets of every latency histogram (metric names ending in `_seconds`), in seconds: from half
/// a millisecond (a move through an in-process store) to 30 s (a unary deadline).
pub const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Buckets of the other histograms (counts and sizes).
pub const COUNT_BUCKETS: &[f64] = &[
    1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0, 10000.0,
];

/// Connections the metrics listener serves at once; more wait to be accepted.
const MAX_CONNECTIONS: usize = 16;

/// How long a scrape connection may take to send its request line and headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// The metrics flag every binary shares.
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct MetricsArgs {
    /// Serve Prometheus metrics (`GET /metrics`, text format) on this address; off without it.
    #[arg(long, env = "ARBITER_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,
}

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the process's Prometheus recorder, once (later calls return the same handle), and
/// records `arbiter_build_info{version}` = 1. Needs no runtime.
pub fn install() -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY_BUCKETS)
                .and_then(|b| b.set_buckets(COUNT_BUCKETS))
                .expect("the bucket lists are not empty")
                .build_recorder();
            let handle = recorder.handle();
            if metrics::set_global_recorder(recorder).is_err() {
                tracing::warn!(
                    "another metrics recorder was installed first: /metrics stays empty"
                );
            }
            describe();
            process_collector().describe();
            metrics::gauge!("arbiter_build_info", "version" => env!("CARGO_PKG_VERSION")).set(1.0);
            handle
        })
        .clone()
}

/// Whether [`install`] has run in this process.
pub fn installed() -> bool {
    HANDLE.get().is_some()
}

/// Metric handles for a hot path, resolved at their first use after [`install`]: before it
/// (metrics off, or not installed yet) [`Resolved::get`] gives nothing and nothing is recorded,
/// so a handle taken too early never records into the void for ever. Recording through a
/// resolved handle costs an atomic add, where the `counter!` macros hash their labels into the
/// registry on every call.
#[derive(Debug)]
pub struct Resolved<T> {
    cell: OnceLock<T>,
}

impl<T> Default for Resolved<T> {
    fn default() -> Self {
        Resolved::new()
    }
}

impl<T> Resolved<T> {
    /// Nothing resolved yet.
    pub const fn new() -> Resolved<T> {
        Resolved {
            cell: OnceLock::new(),
        }
    }

    /// The handles, made by `make` the first time they are asked for once the recorder is
    /// installed; `None` before.
    pub fn get(&self, make: impl FnOnce() -> T) -> Option<&T> {
        if let Some(handles) = self.cell.get() {
            return Some(handles);
        }
        if !installed() {
            return None;
        }
        Some(self.cell.get_or_init(make))
    }
}

fn process_collector() -> &'static metrics_process::Collector {
    static COLLECTOR: OnceLock<metrics_process::Collector> = OnceLock::new();
    COLLECTOR.get_or_init(|| metrics_process::Collector::new("arbiter_"))
}

/// The text a scrape returns: the process's figures read now, then every metric.
pub fn render(handle: &PrometheusHandle) -> String {
    process_collector().collect();
    handle.render()
}

fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_gauge!(
        "arbiter_build_info",
        "1, labelled with the version of the running build"
    );
    describe_gauge!(
        "arbiter_serving",
        "1 while the health service reports the service SERVING, 0 otherwise (\"\": the server)"
    );
    describe_counter!(
        "arbiter_grpc_requests_total",
        "gRPC calls answered, by service, method and status code"
    );
    describe_histogram!(
        "arbiter_grpc_request_duration_seconds",
        Unit::Seconds,
        "time from a call's arrival to the end of its answer (for a stream, its whole life)"
    );
    describe_gauge!(
        "arbiter_grpc_requests_in_flight",
        "gRPC calls being answered (open streams included)"
    );
    describe_counter!(
        "arbiter_grpc_messages_received_total",
        "messages received on gRPC calls (one for a unary call)"
    );
    describe_counter!(
        "arbiter_grpc_messages_sent_total",
        "messages sent on gRPC calls (one for a unary call that succeeds)"
    );
}

/// Serves `GET /metrics` from `handle` on `listener` until `shutdown` completes (HTTP/1.1, at
/// most 16 connections at once, 5 s for a request's headers). Other paths answer 404, other
/// methods 405.
pub async fn serve<F>(listener: TcpListener, handle: PrometheusHandle, shutdown: F)
where
    F: Future<Output = ()> + Send,
{
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            () = &mut shutdown => return,
            permit = Arc::clone(&slots).acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => return,
            },
        };
        let stream = tokio::select! {
            () = &mut shutdown => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::debug!(error = %e, "metrics listener: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let handle = handle.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let service =
                hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let answer = scrape_answer(&req, &handle);
                    async move { Ok::<_, std::convert::Infallible>(answer) }
                });
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .keep_alive(true);
            let io = hyper_util::rt::TokioIo::new(stream);
            if let Err(e) = builder.serve_connection(io, service).await {
                tracing::debug!(error = %e, "metrics listener: connection ended");
            }
        });
    }
}

/// A metrics listener being served: [`Serving::stop`] ends it.
#[derive(Debug)]
pub struct Serving {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Serving {
    /// Stops serving and waits for the listener to close (open scrapes are dropped).
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

/// Installs the recorder and serves `/metrics` on `listener` in a task of its own, until
/// [`Serving::stop`] (or the runtime's end).
///
/// # Errors
/// The listener has no local address.
pub fn start(listener: TcpListener) -> std::io::Result<Serving> {
    let addr = listener.local_addr()?;
    let handle = install();
    tracing::info!(%addr, "metrics: listening (GET /metrics)");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(serve(listener, handle, async {
        let _ = stopped.await;
    }));
    Ok(Serving { stop, task })
}

/// For a process without a [`crate::Host`] (the batch worker): binds `addr` and [`start`]s
/// serving there.
///
/// # Errors
/// The address cannot be bound (the message names the flag).
pub async fn start_on(addr: SocketAddr) -> Result<Serving, String> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| format!("--metrics-listen {addr}: {e}"))?;
    start(listener).map_err(|e| format!("--metrics-listen {addr}: {e}"))
}

/// Keeps `arbiter_serving{service}` at 1 while `health` reports each of `names` (`""`: the
/// server as a whole) `SERVING`, else 0, following the health service's own watch streams
/// until the reporter goes away.
pub fn follow_serving(health: &tonic_health::server::HealthReporter, names: &[&'static str]) {
    use tokio_stream::StreamExt;
    use tonic_health::pb::health_server::Health;
    use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus};
    for &name in names {
        let service = tonic_health::server::HealthService::from_health_reporter(health.clone());
        tokio::spawn(async move {
            let request = tonic::Request::new(HealthCheckRequest {
                service: name.to_owned(),
            });
            let Ok(mut updates) = service
                .watch(request)
                .await
                .map(tonic::Response::into_inner)
            else {
                return;
            };
            let gauge = metrics::gauge!("arbiter_serving", "service" => name);
            while let Some(Ok(update)) = updates.next().await {
                let serving = update.status == ServingStatus::Serving as i32;
                gauge.set(if serving { 1.0 } else { 0.0 });
            }
        });
    }
}

fn scrape_answer(
    req: &http::Request<hyper::body::Incoming>,
    handle: &PrometheusHandle,
) -> http::Response<http_body_util::Full<Bytes>> {
    let (status, content_type, body) = if req.uri().path() != "/metrics" {
        (
            http::StatusCode::NOT_FOUND,
            "text/plain",
            Bytes::from_static(b"not found: GET /metrics\n"),
        )
    } else if req.method() != http::Method::GET && req.method() != http::Method::HEAD {
        (
            http::StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            Bytes::from_static(b"GET /metrics\n"),
        )
    } else {
        (
            http::StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            Bytes::from(render(handle)),
        )
    };
    let mut response = http::Response::new(http_body_util::Full::new(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(content_type),
    );
    response
}

/// The canonical names of the gRPC status codes, by number (the `code` label).
const CODE_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// The index in [`CODE_NAMES`] of `UNKNOWN`.
const UNKNOWN: usize = 2;
/// The index in [`CODE_NAMES`] of `CANCELLED`.
const CANCELLED: usize = 1;

/// The code of a `grpc-status` value: its number when it is one of the 17, else `UNKNOWN`.
fn code_number(value: &http::HeaderValue) -> usize {
    value
        .to_str()
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .filter(|n| *n < CODE_NAMES.len())
        .unwrap_or(UNKNOWN)
}

/// The `code` label of a `grpc-status` value: a code name, or `UNKNOWN` for anything else.
#[cfg(test)]
fn code_name(value: Option<&http::HeaderValue>) -> &'static str {
    CODE_NAMES[value.map_or(UNKNOWN, code_number)]
}

/// The paths served besides the API's own ([`crate::access::METHODS`]).
const OTHER_PATHS: &[&str] = &[
    "/grpc.health.v1.Health/Check",
    "/grpc.health.v1.Health/Watch",
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

/// The (service, method) labels of a request path: a known method's own names, else
/// (`unknown`, `unknown`), so that no client can add label values.
pub fn method_labels(path: &str) -> (&'static str, &'static str) {
    let t = table();
    t.names[t.slot(path)]
}

/// The metric handles of one method, resolved once: recording through a handle costs an
/// atomic add, where the `counter!` macros would hash the labels into the registry on every
/// call.
struct MethodMetrics {
    service: &'static str,
    method: &'static str,
    in_flight: metrics::Gauge,
    duration: metrics::Histogram,
    received: metrics::Counter,
    sent: metrics::Counter,
    /// `arbiter_grpc_requests_total` by code, each registered at its first use (so that a
    /// scrape shows only the codes that happened).
    by_code: [OnceLock<metrics::Counter>; 17],
}

impl MethodMetrics {
    fn new(service: &'static str, method: &'static str) -> MethodMetrics {
        let labels = [("service", service), ("method", method)];
        MethodMetrics {
            service,
            method,
            in_flight: metrics::gauge!("arbiter_grpc_requests_in_flight", &labels),
            duration: metrics::histogram!("arbiter_grpc_request_duration_seconds", &labels),
            received: metrics::counter!("arbiter_grpc_messages_received_total", &labels),
            sent: metrics::counter!("arbiter_grpc_messages_sent_total", &labels),
            by_code: Default::default(),
        }
    }

    fn requests(&self, code: usize) -> &metrics::Counter {
        let code = code.min(CODE_NAMES.len() - 1);
        self.by_code[code].get_or_init(|| {
            metrics::counter!(
                "arbiter_grpc_requests_total",
                "service" => self.service,
                "method" => self.method,
                "code" => CODE_NAMES[code]
            )
        })
    }
}

/// Every method's handles, each resolved at the method's first call (so that a scrape lists
/// only the methods called); the last slot is `unknown`.
struct MethodTable {
    index: std::collections::HashMap<&'static str, usize>,
    names: Vec<(&'static str, &'static str)>,
    slots: Vec<OnceLock<MethodMetrics>>,
}

fn table() -> &'static MethodTable {
    static TABLE: OnceLock<MethodTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        // Handles taken before the recorder is installed would record nowhere for ever.
        install();
        let mut index = std::collections::HashMap::new();
        let mut names = Vec::new();
        let paths = crate::access::METHODS
            .iter()
            .map(|(p, _)| *p)
            .chain(OTHER_PATHS.iter().copied());
        for path in paths {
            let Some((service, method)) = path.strip_prefix('/').and_then(|p| p.split_once('/'))
            else {
                continue;
            };
            if !index.contains_key(path) {
                index.insert(path, names.len());
                names.push((service, method));
            }
        }
        names.push(("unknown", "unknown"));
        let slots = names.iter().map(|_| OnceLock::new()).collect();
        MethodTable {
            index,
            names,
            slots,
        }
    })
}

impl MethodTable {
    /// The slot of the method at `path` (the last, `unknown`, for a path that is not one).
    fn slot(&self, path: &str) -> usize {
        self.index
            .get(path)
            .copied()
            .unwrap_or(self.names.len() - 1)
    }
}

/// The handles of the method at `path` (`unknown` for a path that is not a method).
fn method_of(path: &str) -> &'static MethodMetrics {
    let t = table();
    let i = t.slot(path);
    t.slots[i].get_or_init(|| {
        let (service, method) = t.names[i];
        MethodMetrics::new(service, method)
    })
}

/// The tower layer that measures every gRPC call of a server: `arbiter_grpc_requests_total`,
/// `…_request_duration_seconds`, `…_requests_in_flight`, `…_messages_received_total` and
/// `…_messages_sent_total` (their meanings: docs/operations.md). A call ends when
/// its answer's last frame has gone (its status read from the trailers, or from the headers of a
/// trailers-only answer); an answer dropped before its end (the client went away) counts as
/// `CANCELLED`.
#[derive(Clone, Copy, Debug, Default)]
pub struct RpcMetricsLayer;

impl<S> tower::Layer<S> for RpcMetricsLayer {
    type Service = RpcMetrics<S>;

    fn layer(&self, inner: S) -> RpcMetrics<S> {
        RpcMetrics { inner }
    }
}

/// The service of [`RpcMetricsLayer`].
#[derive(Clone, Debug)]
pub struct RpcMetrics<S> {
    inner: S,
}

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S> tower::Service<http::Request<tonic::body::Body>> for RpcMetrics<S>
where
    S: tower::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<tonic::body::Body>,
        > + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        let metrics = method_of(req.uri().path());
        let call = Call::begin(metrics);
        let req = req.map(|body| {
            tonic::body::Body::new(Counted {
                inner: body,
                frames: Framer::default(),
                counter: &metrics.received,
                call: None,
            })
        });
        let future = self.inner.call(req);
        Box::pin(async move {
            let mut call = call;
            let response = match future.await {
                Ok(response) => response,
                Err(e) => {
                    // No answer at all (not a gRPC status): counted as UNKNOWN.
                    call.ended = true;
                    return Err(e);
                }
            };
            call.code = response.headers().get("grpc-status").map(code_number);
            Ok(response.map(|body| {
                tonic::body::Body::new(Counted {
                    inner: body,
                    frames: Framer::default(),
                    counter: &metrics.sent,
                    call: Some(call),
                })
            }))
        })
    }
}

/// One call being answered: counted in flight from its start, recorded once at its end.
struct Call {
    metrics: &'static MethodMetrics,
    began: Instant,
    /// The status code, once known (trailers-only headers, or the trailers).
    code: Option<usize>,
    /// Whether the answer reached its end (else, when dropped, the client went away).
    ended: bool,
}

impl Call {
    fn begin(metrics: &'static MethodMetrics) -> Call {
        metrics.in_flight.increment(1.0);
        Call {
            metrics,
            began: Instant::now(),
            code: None,
            ended: false,
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        let code = match (self.ended, self.code) {
            (_, Some(code)) => code,
            // An answer that ended without a status (not gRPC's way) or was dropped early.
            (true, None) => UNKNOWN,
            (false, None) => CANCELLED,
        };
        let m = self.metrics;
        m.in_flight.decrement(1.0);
        m.requests(code).increment(1);
        m.duration.record(self.began.elapsed().as_secs_f64());
    }
}

/// Counts the gRPC messages in a stream of bytes: each is a 5-byte prefix (a flag and a
/// big-endian length) and that many bytes, split across frames anyhow.
#[derive(Debug, Default)]
struct Framer {
    header: [u8; 5],
    have: usize,
    remaining: u64,
}

impl Framer {
    /// The messages that begin in `data`.
    fn feed(&mut self, mut data: &[u8]) -> u64 {
        let mut started = 0;
        while !data.is_empty() {
            if self.remaining > 0 {
                let take = self.remaining.min(data.len() as u64);
                self.remaining -= take;
                data = &data[take as usize..];
                continue;
            }
            let take = (5 - self.have).min(data.len());
            self.header[self.have..self.have + take].copy_from_slice(&data[..take]);
            self.have += take;
            data = &data[take..];
            if self.have == 5 {
                started += 1;
                self.have = 0;
                let len = [
                    self.header[1],
                    self.header[2],
                    self.header[3],
                    self.header[4],
                ];
                self.remaining = u64::from(u32::from_be_bytes(len));
            }
        }
        started
    }
}

/// A body whose messages are counted; for an answer, it also ends the [`Call`].
struct Counted {
    inner: tonic::body::Body,
    frames: Framer,
    counter: &'static metrics::Counter,
    call: Option<Call>,
}

impl HttpBody for Counted {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    let n = this.frames.feed(data);
                    if n > 0 {
                        this.counter.increment(n);
                    }
                } else if let (Some(trailers), Some(call)) =
                    (frame.trailers_ref(), this.call.as_mut())
                {
                    call.code = Some(trailers.get("grpc-status").map_or(UNKNOWN, code_number));
                    call.ended = true;
                }
            }
            Poll::Ready(Some(Err(status))) => {
                if let Some(call) = this.call.as_mut() {
                    call.code = Some(status.code() as usize);
                    call.ended = true;
                }
            }
            Poll::Ready(None) => {
                if let Some(call) = this.call.as_mut() {
                    call.ended = true;
                }
                // Recorded now, not when the connection gets round to dropping the body.
                this.call = None;
            }
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// `request` sent on a new connection to `addr`: the answer's status line.
    async fn ask(addr: SocketAddr, request: &[u8]) -> String {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let _ = s.write_all(request).await;
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer).await;
        String::from_utf8_lossy(&answer)
            .lines()
            .next()
            .unwrap_or("")
            .to_owned()
    }

    #[tokio::test]
    async fn hostile_scrapers_cannot_take_the_listener() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let serving = start(listener).unwrap();
        let get = b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        assert!(ask(addr, get).await.contains("200"));
        // A megabyte of headers is refused, and the listener serves on.
        let mut huge = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
        huge.extend(std::iter::repeat_n(b'a', 1 << 20));
        huge.extend_from_slice(b"\r\n\r\n");
        let refused = ask(addr, &huge).await;
        assert!(!refused.contains("200"), "{refused}");
        // Garbage and control characters: an error answer or a closed connection.
        assert!(
            !ask(addr, b"\x00\x01\x02 /metrics\r\n\r\n")
                .await
                .contains("200")
        );
        // Twenty silent connections hold every slot; they are dropped after the header
        // timeout, and a scrape that waited gets its answer.
        let mut idle = Vec::new();
        for _ in 0..20 {
            idle.push(tokio::net::TcpStream::connect(addr).await.unwrap());
        }
        let answered = tokio::time::timeout(HEADER_TIMEOUT * 4, ask(addr, get))
            .await
            .expect("a scrape is answered once the silent connections time out");
        assert!(answered.contains("200"), "{answered}");
        drop(idle);
        serving.stop().await;
    }

    #[test]
    fn messages_are_counted_across_frames() {
        let message = |len: u32| {
            let mut m = vec![0u8];
            m.extend_from_slice(&len.to_be_bytes());
            m.extend(std::iter::repeat_n(7u8, len as usize));
            m
        };
        let mut bytes = message(3);
        bytes.extend(message(0));
        bytes.extend(message(70_000));
        bytes.extend(message(1));
        // Whole, then one byte at a time, then in odd pieces: always 4 messages.
        assert_eq!(Framer::default().feed(&bytes), 4);
        let mut f = Framer::default();
        assert_eq!(bytes.iter().map(|b| f.feed(&[*b])).sum::<u64>(), 4);
        let mut f = Framer::default();
        assert_eq!(bytes.chunks(7).map(|c| f.feed(c)).sum::<u64>(), 4);
    }

    #[test]
    fn labels_are_bounded() {
        assert_eq!(
            method_labels("/arbiter.rules.v1.RulesService/ValidateMove"),
            ("arbiter.rules.v1.RulesService", "ValidateMove")
        );
        assert_eq!(
            method_labels("/grpc.health.v1.Health/Check"),
            ("grpc.health.v1.Health", "Check")
        );
        for hostile in [
            "/arbiter.rules.v1.RulesService/ValidateMove2",
            "/x/y",
            "",
            "/",
            "/arbiter.rules.v1.RulesService/ValidateMove/extra",
        ] {
            assert_eq!(method_labels(hostile), ("unknown", "unknown"), "{hostile}");
        }
        assert_eq!(code_name(Some(&http::HeaderValue::from_static("0"))), "OK");
        assert_eq!(
            code_name(Some(&http::HeaderValue::from_static("16"))),
            "UNAUTHENTICATED"
        );
        for bad in ["17", "-1", "x", "99999999999999999999"] {
            assert_eq!(
                code_name(Some(&http::HeaderValue::from_static(bad))),
                "UNKNOWN"
            );
        }
        assert_eq!(code_name(None), "UNKNOWN");
    }
}
