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

/// For a process without a [`crate::Host`] (the batch worker): binds `addr`, installs the
/// recorder and serves `/metrics` in a task of its own until the runtime ends.
///
/// # Errors
/// The address cannot be bound (the message names the flag).
pub async fn serve_in_background(addr: SocketAddr) -> Result<tokio::task::JoinHandle<()>, String> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| format!("--metrics-listen {addr}: {e}"))?;
    let handle = install();
    tracing::info!(%addr, "metrics: listening (GET /metrics)");
    Ok(tokio::spawn(serve(
        listener,
        handle,
        std::future::pending(),
    )))
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

/// The `code` label of a `grpc-status` value: a code name, or `UNKNOWN` for anything else.
fn code_name(value: Option<&http::HeaderValue>) -> &'static str {
    value
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.parse::<usize>().ok())
        .and_then(|n| CODE_NAMES.get(n).copied())
        .unwrap_or("UNKNOWN")
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
    let known = crate::access::METHODS
        .iter()
        .map(|(p, _)| *p)
        .chain(OTHER_PATHS.iter().copied())
        .find(|p| *p == path);
    match known.and_then(|p| p.strip_prefix('/')?.split_once('/')) {
        Some((service, method)) => (service, method),
        None => ("unknown", "unknown"),
    }
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
        let (service, method) = method_labels(req.uri().path());
        let call = Call::begin(service, method);
        let received = metrics::counter!(
            "arbiter_grpc_messages_received_total",
            "service" => service,
            "method" => method
        );
        let req = req.map(|body| {
            tonic::body::Body::new(Counted {
                inner: body,
                frames: Framer::default(),
                counter: received,
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
            call.code = response
                .headers()
                .get("grpc-status")
                .map(|v| code_name(Some(v)));
            let sent = metrics::counter!(
                "arbiter_grpc_messages_sent_total",
                "service" => service,
                "method" => method
            );
            Ok(response.map(|body| {
                tonic::body::Body::new(Counted {
                    inner: body,
                    frames: Framer::default(),
                    counter: sent,
                    call: Some(call),
                })
            }))
        })
    }
}

/// One call being answered: counted in flight from its start, recorded once at its end.
struct Call {
    service: &'static str,
    method: &'static str,
    began: Instant,
    /// The status, once known (trailers-only headers, or the trailers).
    code: Option<&'static str>,
    /// Whether the answer reached its end (else, when dropped, the client went away).
    ended: bool,
}

impl Call {
    fn begin(service: &'static str, method: &'static str) -> Call {
        metrics::gauge!("arbiter_grpc_requests_in_flight", "service" => service, "method" => method)
            .increment(1.0);
        Call {
            service,
            method,
            began: Instant::now(),
            code: None,
            ended: false,
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        let (service, method) = (self.service, self.method);
        let code = match (self.ended, self.code) {
            (_, Some(code)) => code,
            // An answer that ended without a status (not gRPC's way) or was dropped early.
            (true, None) => "UNKNOWN",
            (false, None) => "CANCELLED",
        };
        metrics::gauge!("arbiter_grpc_requests_in_flight", "service" => service, "method" => method)
            .decrement(1.0);
        metrics::counter!(
            "arbiter_grpc_requests_total",
            "service" => service,
            "method" => method,
            "code" => code
        )
        .increment(1);
        metrics::histogram!(
            "arbiter_grpc_request_duration_seconds",
            "service" => service,
            "method" => method
        )
        .record(self.began.elapsed().as_secs_f64());
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
    counter: metrics::Counter,
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
                    call.code = Some(code_name(trailers.get("grpc-status")));
                    call.ended = true;
                }
            }
            Poll::Ready(Some(Err(status))) => {
                if let Some(call) = this.call.as_mut() {
                    call.code = Some(CODE_NAMES[status.code() as usize]);
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
