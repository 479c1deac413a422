//! The serving scaffold every Arbiter service runs in: a [`Host`] collects the services of one
//! process (one, for a service's own binary; all of them, for `arbiter serve`) and serves them on
//! one listener with the standard health service, server reflection, a tracing span per request,
//! a unary deadline, TCP_NODELAY, message size limits (an oversize message is answered
//! `RESOURCE_EXHAUSTED`), and graceful shutdown on a caller-supplied future (tonic's pattern:
//! tests bind port 0 and pass a oneshot; `main` passes [`shutdown_signal`]).
//!
//! Health follows the services: each one reports its own status through
//! [`Host::health`]; the overall status (`""`) is `SERVING` while the process serves and
//! switches to `NOT_SERVING`, with every service, as soon as shutdown begins, so load balancers
//! stop sending traffic while in-flight requests finish.
//!
//! With `--tls-cert-file` and `--tls-key-file` the listener speaks TLS (and with
//! `--tls-client-ca-file`, mutual TLS), its certificate re-read while serving (see [`crate::tls`]);
//! `--health-listen` adds a plaintext listener that serves only the health service, for probes
//! that cannot present a client certificate. `--metrics-listen` serves Prometheus metrics on a
//! listener of its own and measures every call ([`crate::metrics`]).
//!
//! Browsers reach every service over gRPC-web (`application/grpc-web+proto` and
//! `application/grpc-web-text`, on HTTP/1.1 or HTTP/2) on the same port, through the same checks
//! as gRPC calls. `--web-root` serves a folder's static files there too (the reference page,
//! `clients/web`), and `--web-allow-origin` lets pages of other origins call the API (CORS).

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use tokio::net::TcpListener;
use tonic::codegen::http;
use tonic::server::NamedService;
use tonic::service::RoutesBuilder;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tonic_health::ServingStatus;
use tonic_health::pb::health_server::HealthServer;
use tonic_health::server::{HealthReporter, HealthService};

use crate::cpu::CpuPool;
use crate::gate::{Gate, GateLayer};
use crate::tls::{ServerTls, ServerTlsFiles, TlsError};

/// Any error that stops a server.
pub type ServeError = Box<dyn std::error::Error + Send + Sync>;

/// How a process serves, whatever its services. Every bound here is a flag ([`ServeArgs`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeConfig {
    /// Deadline for one unary request (streams are not bounded).
    pub request_timeout: Duration,
    /// Largest encoded request or response message, in bytes.
    pub max_message_bytes: usize,
    /// Whether gRPC server reflection is offered.
    pub reflection: bool,
    /// Requests handled at once by the whole process; more are refused with
    /// `RESOURCE_EXHAUSTED` (a stream counts until its first answer).
    pub max_concurrent_requests: usize,
    /// HTTP/2 streams one connection may have open.
    pub max_streams_per_connection: u32,
    /// How often an idle connection is pinged (HTTP/2 keepalive).
    pub keepalive_interval: Duration,
    /// How long a keepalive ping may go unanswered before the connection is closed.
    pub keepalive_timeout: Duration,
    /// How long a connection may live before the server asks the client to reconnect (`None`:
    /// for ever).
    pub max_connection_age: Option<Duration>,
    /// CPU-heavy jobs (perft, PGN import) run at once.
    pub max_cpu_jobs: usize,
    /// CPU-heavy requests that may wait for a turn; more are refused with
    /// `RESOURCE_EXHAUSTED`.
    pub max_cpu_queue: usize,
    /// The TLS certificate chain (PEM) to serve with; with `tls_key_file`. Neither: plaintext.
    pub tls_cert_file: Option<PathBuf>,
    /// The private key (PEM) of `tls_cert_file`.
    pub tls_key_file: Option<PathBuf>,
    /// Mutual TLS: the CA (PEM) that every client certificate must chain to; needs
    /// `tls_cert_file`.
    pub tls_client_ca_file: Option<PathBuf>,
    /// How often the TLS files are re-read (a change applies to new connections).
    pub tls_reload: Duration,
    /// A second, plaintext listener that serves only `grpc.health.v1.Health` (for Kubernetes
    /// probes under mutual TLS); bound at start, stopped with the server.
    pub health_listen: Option<SocketAddr>,
    /// Where Prometheus metrics are served (`None`: metrics off, and calls are not measured).
    pub metrics_listen: Option<SocketAddr>,
    /// A folder whose files are served at `/` on the gRPC port (GET and HEAD; `index.html` for
    /// a folder); `None`: no files, only the API.
    pub web_root: Option<PathBuf>,
    /// Origins (`https://play.example.com`) whose pages may call the API over gRPC-web (CORS
    /// answers for them); empty: same-origin pages only.
    pub web_allow_origins: Vec<String>,
}

/// The number of CPUs this process may use (at least 1).
fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

impl Default for ServeConfig {
    fn default() -> ServeConfig {
        ServeConfig {
            request_timeout: Duration::from_secs(30),
            max_message_bytes: 4 << 20,
            reflection: true,
            max_concurrent_requests: 4096,
            max_streams_per_connection: 1024,
            keepalive_interval: Duration::from_secs(30),
            keepalive_timeout: Duration::from_secs(10),
            max_connection_age: Some(Duration::from_secs(3600)),
            max_cpu_jobs: cpus(),
            max_cpu_queue: 64,
            tls_cert_file: None,
            tls_key_file: None,
            tls_client_ca_file: None,
            tls_reload: Duration::from_secs(2),
            health_listen: None,
            metrics_listen: None,
            web_root: None,
            web_allow_origins: Vec::new(),
        }
    }
}

impl ServeConfig {
    /// The TLS files to serve with: `None` for plaintext.
    ///
    /// # Errors
    /// A certificate without its key (or the reverse), or a client CA without a certificate:
    /// the message names the flags.
    pub fn tls_files(&self) -> Result<Option<ServerTlsFiles>, TlsError> {
        match (&self.tls_cert_file, &self.tls_key_file) {
            (Some(cert), Some(key)) => {
                let mut files = ServerTlsFiles::new(cert, key);
                files.client_ca_file.clone_from(&self.tls_client_ca_file);
                Ok(Some(files))
            }
            (Some(_), None) => Err(TlsError::new(
                "--tls-cert-file (ARBITER_TLS_CERT_FILE) is given without --tls-key-file \
                 (ARBITER_TLS_KEY_FILE)",
            )),
            (None, Some(_)) => Err(TlsError::new(
                "--tls-key-file (ARBITER_TLS_KEY_FILE) is given without --tls-cert-file \
                 (ARBITER_TLS_CERT_FILE)",
            )),
            (None, None) if self.tls_client_ca_file.is_some() => Err(TlsError::new(
                "--tls-client-ca-file (ARBITER_TLS_CLIENT_CA_FILE) needs --tls-cert-file and \
                 --tls-key-file: mutual TLS is TLS first",
            )),
            (None, None) => Ok(None),
        }
    }
}

/// Flags (each with an environment fallback) every server binary shares; `main` reads them.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "ARBITER_LISTEN", default_value = "127.0.0.1:50051")]
    pub listen: SocketAddr,
    /// Largest request or response message, in bytes.
    #[arg(long, env = "ARBITER_MAX_MESSAGE_BYTES", default_value_t = ServeConfig::default().max_message_bytes)]
    pub max_message_bytes: usize,
    /// Deadline of one unary request, in seconds.
    #[arg(long, env = "ARBITER_REQUEST_TIMEOUT_SECS", default_value_t = 30)]
    pub request_timeout_secs: u64,
    /// Do not offer gRPC server reflection.
    #[arg(long, env = "ARBITER_NO_REFLECTION")]
    pub no_reflection: bool,
    /// Requests handled at once by the whole process; more are refused (RESOURCE_EXHAUSTED).
    #[arg(long, env = "ARBITER_MAX_CONCURRENT_REQUESTS", default_value_t = ServeConfig::default().max_concurrent_requests)]
    pub max_concurrent_requests: usize,
    /// HTTP/2 streams one connection may have open.
    #[arg(long, env = "ARBITER_MAX_STREAMS_PER_CONNECTION", default_value_t = ServeConfig::default().max_streams_per_connection)]
    pub max_streams_per_connection: u32,
    /// Seconds between keepalive pings on an idle connection.
    #[arg(long, env = "ARBITER_KEEPALIVE_SECS", default_value_t = 30)]
    pub keepalive_secs: u64,
    /// Seconds a keepalive ping may go unanswered before the connection is closed.
    #[arg(long, env = "ARBITER_KEEPALIVE_TIMEOUT_SECS", default_value_t = 10)]
    pub keepalive_timeout_secs: u64,
    /// Seconds a connection may live before the client is asked to reconnect (0: for ever).
    #[arg(long, env = "ARBITER_MAX_CONNECTION_AGE_SECS", default_value_t = 3600)]
    pub max_connection_age_secs: u64,
    /// CPU-heavy jobs (perft, PGN import) run at once (default: the number of CPUs).
    #[arg(long, env = "ARBITER_MAX_CPU_JOBS")]
    pub max_cpu_jobs: Option<usize>,
    /// CPU-heavy requests that may wait for a turn; more are refused (RESOURCE_EXHAUSTED).
    #[arg(long, env = "ARBITER_MAX_CPU_QUEUE", default_value_t = ServeConfig::default().max_cpu_queue)]
    pub max_cpu_queue: usize,
    /// Serve TLS with this certificate chain (PEM, leaf first); needs --tls-key-file. Re-read
    /// while serving.
    #[arg(long, env = "ARBITER_TLS_CERT_FILE")]
    pub tls_cert_file: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert-file.
    #[arg(long, env = "ARBITER_TLS_KEY_FILE")]
    pub tls_key_file: Option<PathBuf>,
    /// Mutual TLS: every client must present a certificate chaining to a CA in this PEM file.
    #[arg(long, env = "ARBITER_TLS_CLIENT_CA_FILE")]
    pub tls_client_ca_file: Option<PathBuf>,
    /// Seconds between checks of the TLS files for a new certificate.
    #[arg(long, env = "ARBITER_TLS_RELOAD_SECS", default_value_t = 2)]
    pub tls_reload_secs: u64,
    /// Also serve the health service alone, in plaintext, on this address (for Kubernetes
    /// probes under mutual TLS).
    #[arg(long, env = "ARBITER_HEALTH_LISTEN")]
    pub health_listen: Option<SocketAddr>,
    /// Serve Prometheus metrics (`GET /metrics`) on this address, and measure every call.
    #[command(flatten)]
    pub metrics: crate::metrics::MetricsArgs,
    /// Serve the static files of this folder at `/` on the gRPC port (e.g. the reference page,
    /// clients/web); browsers call the API over gRPC-web on the same port.
    #[arg(long, env = "ARBITER_WEB_ROOT")]
    pub web_root: Option<PathBuf>,
    /// Let pages of this origin (e.g. `https://play.example.com`) call the API over gRPC-web
    /// (CORS); repeat the flag or separate origins with commas. Pages served by --web-root need
    /// none.
    #[arg(long, env = "ARBITER_WEB_ALLOW_ORIGINS", value_delimiter = ',')]
    pub web_allow_origin: Vec<String>,
    /// How log lines are written.
    #[command(flatten)]
    pub log: LogArgs,
}

impl ServeArgs {
    /// The configuration these flags describe.
    pub fn config(&self) -> ServeConfig {
        ServeConfig {
            request_timeout: Duration::from_secs(self.request_timeout_secs.max(1)),
            max_message_bytes: self.max_message_bytes,
            reflection: !self.no_reflection,
            max_concurrent_requests: self.max_concurrent_requests.max(1),
            max_streams_per_connection: self.max_streams_per_connection.max(1),
            keepalive_interval: Duration::from_secs(self.keepalive_secs.max(1)),
            keepalive_timeout: Duration::from_secs(self.keepalive_timeout_secs.max(1)),
            max_connection_age: (self.max_connection_age_secs > 0)
                .then(|| Duration::from_secs(self.max_connection_age_secs)),
            max_cpu_jobs: self.max_cpu_jobs.unwrap_or_else(cpus).max(1),
            max_cpu_queue: self.max_cpu_queue,
            tls_cert_file: self.tls_cert_file.clone(),
            tls_key_file: self.tls_key_file.clone(),
            tls_client_ca_file: self.tls_client_ca_file.clone(),
            tls_reload: Duration::from_secs(self.tls_reload_secs.max(1)),
            health_listen: self.health_listen,
            metrics_listen: self.metrics.metrics_listen,
            web_root: self.web_root.clone(),
            web_allow_origins: self.web_allow_origin.clone(),
        }
    }
}

/// The services of one process, to be served on one listener.
#[derive(Debug)]
pub struct Host {
    config: ServeConfig,
    routes: RoutesBuilder,
    health: HealthReporter,
    names: Vec<&'static str>,
    cpu: CpuPool,
    shutting_down: tokio::sync::watch::Sender<bool>,
    access: crate::access::AccessPolicy,
    health_listener: Option<TcpListener>,
    metrics_listener: Option<TcpListener>,
}

impl Host {
    /// An empty host serving with `config` (the health service is already in).
    pub fn new(config: ServeConfig) -> Host {
        if config.metrics_listen.is_some() {
            // Before the services are mounted, so that the series they declare at start (at
            // 0) are recorded.
            crate::metrics::install();
        }
        let (health, health_service) = tonic_health::server::health_reporter();
        let mut routes = RoutesBuilder::default();
        routes.add_service(health_service);
        let cpu = CpuPool::new(config.max_cpu_jobs, config.max_cpu_queue);
        Host {
            config,
            routes,
            health,
            names: Vec::new(),
            cpu,
            shutting_down: tokio::sync::watch::channel(false).0,
            access: crate::access::AccessPolicy::development(),
            health_listener: None,
            metrics_listener: None,
        }
    }

    /// Serves the health service alone, in plaintext, on `listener` too (rather than binding
    /// the configuration's `health_listen`): for tests on port 0.
    pub fn with_health_listener(mut self, listener: TcpListener) -> Host {
        self.health_listener = Some(listener);
        self
    }

    /// Serves Prometheus metrics on `listener` (instead of binding the configuration's
    /// `metrics_listen`), and measures every call: for tests on port 0.
    pub fn with_metrics_listener(mut self, listener: TcpListener) -> Host {
        crate::metrics::install();
        self.metrics_listener = Some(listener);
        self
    }

    /// Turns true when shutdown begins: long-lived work (watch streams, background tasks) ends
    /// then, so that the server stops in bounded time.
    pub fn shutting_down(&self) -> tokio::sync::watch::Receiver<bool> {
        self.shutting_down.subscribe()
    }

    /// Who may call what (development mode until set): every call is checked against the
    /// method → scope table with this policy's keys before any service sees it.
    pub fn set_access(&mut self, policy: crate::access::AccessPolicy) -> &mut Host {
        tracing::info!("{}", policy.describe());
        self.access = policy;
        self
    }

    /// The process's pool for CPU-heavy work, shared by its services.
    pub fn cpu(&self) -> CpuPool {
        self.cpu.clone()
    }

    /// How this host serves (services take their message size limit from it).
    pub fn config(&self) -> &ServeConfig {
        &self.config
    }

    /// The health reporter: each service sets its own status through it.
    pub fn health(&self) -> HealthReporter {
        self.health.clone()
    }

    /// Adds a gRPC service. Its health starts `NOT_SERVING` until the service reports otherwise.
    pub fn add_service<S>(&mut self, service: S) -> &mut Host
    where
        S: tower::Service<
                http::Request<tonic::body::Body>,
                Response = http::Response<tonic::body::Body>,
                Error = std::convert::Infallible,
            > + NamedService
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        self.routes.add_service(service);
        self.names.push(S::NAME);
        self
    }

    /// The fully-qualified names of the services added so far.
    pub fn service_names(&self) -> &[&'static str] {
        &self.names
    }

    /// Serves every added service on `listener` until `shutdown` completes; then health turns
    /// `NOT_SERVING`, no new connection is accepted, and in-flight requests are finished before
    /// this returns.
    ///
    /// With TLS configured, the files are read first (an unusable file is an error here, before
    /// serving) and re-read every `tls_reload`; the health-only listener, if any, is bound
    /// first too, and stops when the server has stopped.
    pub async fn serve<F>(self, listener: TcpListener, shutdown: F) -> Result<(), ServeError>
    where
        F: Future<Output = ()> + Send,
    {
        let Host {
            config,
            mut routes,
            health,
            names,
            cpu: _,
            access,
            shutting_down,
            health_listener,
            metrics_listener,
        } = self;
        let tls = match config.tls_files()? {
            Some(files) => Some(ServerTls::load(files)?),
            None => None,
        };
        let cors = crate::web::cors(&config.web_allow_origins)?;
        let web_root = match &config.web_root {
            Some(root) => Some(crate::web::check_root(root)?),
            None => None,
        };
        let health_listener =
            bind_or(health_listener, config.health_listen, "--health-listen").await?;
        let metrics_listener =
            bind_or(metrics_listener, config.metrics_listen, "--metrics-listen").await?;
        if config.reflection {
            let reflection = || {
                tonic_reflection::server::Builder::configure()
                    .register_encoded_file_descriptor_set(arbiter_proto::FILE_DESCRIPTOR_SET)
                    .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            };
            routes.add_service(reflection().build_v1()?);
            routes.add_service(reflection().build_v1alpha()?);
        }
        health.set_service_status("", ServingStatus::Serving).await;
        let addr = listener.local_addr()?;
        let transport = match &tls {
            Some(tls) if tls.is_mutual() => "mutual TLS",
            Some(_) => "TLS",
            None => "plaintext",
        };
        tracing::info!(%addr, services = ?names, reflection = config.reflection, transport, web_root = ?config.web_root, "listening");
        if tls.is_none() && !addr.ip().is_loopback() {
            tracing::warn!(
                %addr,
                "serving plaintext beyond loopback: traffic, credentials included, travels in \
                 clear (--tls-cert-file and --tls-key-file turn TLS on)"
            );
        }
        let health_only = match health_listener {
            Some(listener) => {
                let health_addr = listener.local_addr()?;
                tracing::info!(addr = %health_addr, "health only, plaintext: listening");
                let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
                let server = Server::builder()
                    .timeout(config.request_timeout)
                    .add_service(HealthServer::new(HealthService::from_health_reporter(
                        health.clone(),
                    )))
                    .serve_with_incoming_shutdown(
                        TcpIncoming::from(listener).with_nodelay(Some(true)),
                        async {
                            let _ = stopped.await;
                        },
                    );
                Some((stop, tokio::spawn(server)))
            }
            None => None,
        };
        let metrics_server = match metrics_listener {
            Some(listener) => {
                let mut watched = vec![""];
                watched.extend(names.iter().copied());
                crate::metrics::follow_serving(&health, &watched);
                Some(crate::metrics::start(listener)?)
            }
            None => None,
        };
        let metered = metrics_server.is_some();
        let draining = {
            let health = health.clone();
            let names = names.clone();
            async move {
                shutdown.await;
                shutting_down.send_replace(true);
                health
                    .set_service_status("", ServingStatus::NotServing)
                    .await;
                for name in names {
                    health
                        .set_service_status(name, ServingStatus::NotServing)
                        .await;
                }
                tracing::info!("shutting down: finishing in-flight requests");
            }
        };
        let mut server = Server::builder()
            // HTTP/1.1 too: browsers' gRPC-web calls and the static files.
            .accept_http1(true)
            .timeout(config.request_timeout)
            .max_concurrent_streams(config.max_streams_per_connection)
            .http2_keepalive_interval(Some(config.keepalive_interval))
            .http2_keepalive_timeout(Some(config.keepalive_timeout));
        if let Some(age) = config.max_connection_age {
            server = server.max_connection_age(age);
        }
        let router = server
            // Outermost: every layer below, and the service, log inside the call's span.
            .layer(RequestSpanLayer)
            // Preflight requests are answered before any check (they carry no key).
            .layer(tower::util::option_layer(cors))
            // gRPC-web in, gRPC-web out: everything below sees gRPC, refusals included.
            .layer(crate::web::BrowserLayer)
            // So that calls refused by the layers below are measured too.
            .layer(tower::util::option_layer(
                metered.then_some(crate::metrics::RpcMetricsLayer),
            ))
            .layer(ConcurrencyLimit::layer(config.max_concurrent_requests))
            .layer(GateLayer(access))
            .layer(tower::util::MapResponseLayer::new(
                oversize_as_resource_exhausted,
            ))
            .add_routes(match web_root {
                Some(root) => crate::web::with_files(routes.routes(), root),
                None => routes.routes(),
            });
        let served = match tls {
            Some(tls) => {
                router
                    .serve_with_incoming_shutdown(
                        tls.incoming(listener, config.tls_reload),
                        draining,
                    )
                    .await
            }
            None => {
                router
                    .serve_with_incoming_shutdown(
                        // No Nagle: small unary replies must not wait for the peer's delayed ACK.
                        TcpIncoming::from(listener).with_nodelay(Some(true)),
                        draining,
                    )
                    .await
            }
        };
        if let Some((stop, mut task)) = health_only {
            // The health port answered NOT_SERVING while the server drained; now it goes too.
            let _ = stop.send(());
            match tokio::time::timeout(Duration::from_secs(1), &mut task).await {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(e))) => tracing::warn!(error = %e, "the health-only listener failed"),
                Ok(Err(e)) => tracing::warn!(error = %e, "the health-only listener failed"),
                Err(_) => {
                    // A health Watch stream never ends by itself: do not wait for it.
                    task.abort();
                    let _ = task.await;
                }
            }
        }
        if let Some(metrics) = metrics_server {
            // Scraped until the end, then stopped.
            metrics.stop().await;
        }
        served?;
        tracing::info!("stopped");
        Ok(())
    }
}

/// Refuses a request at once with `RESOURCE_EXHAUSTED` while the process already handles its
/// maximum of requests (no queue: a client retries with backoff, as gRPC clients do).
#[derive(Clone, Debug)]
struct ConcurrencyLimit {
    permits: std::sync::Arc<tokio::sync::Semaphore>,
}

impl ConcurrencyLimit {
    fn layer(max: usize) -> GateLayer<ConcurrencyLimit> {
        GateLayer(ConcurrencyLimit {
            permits: std::sync::Arc::new(tokio::sync::Semaphore::new(max.max(1))),
        })
    }
}

impl Gate for ConcurrencyLimit {
    type Pass = tokio::sync::OwnedSemaphorePermit;

    fn admit<B>(&self, _: &mut http::Request<B>) -> Result<Self::Pass, tonic::Status> {
        std::sync::Arc::clone(&self.permits)
            .try_acquire_owned()
            .map_err(|_| {
                tonic::Status::resource_exhausted(
                    "the server is handling its maximum of requests; retry later",
                )
            })
    }
}

/// tonic reports a message over the size limit as `OUT_OF_RANGE`; gRPC's convention (and this
/// API's contract) is `RESOURCE_EXHAUSTED`. Such a status is sent before any handler runs, as a
/// trailers-only response, so rewriting the header is enough.
fn oversize_as_resource_exhausted<B>(mut resp: http::Response<B>) -> http::Response<B> {
    let headers = resp.headers_mut();
    let oversize = headers.get("grpc-status").is_some_and(|v| v == "11")
        && headers
            .get("grpc-message")
            .and_then(|m| m.to_str().ok())
            .is_some_and(|m| m.contains("length%20too%20large") || m.contains("length too large"));
    if oversize {
        headers.insert("grpc-status", http::HeaderValue::from_static("8"));
    }
    resp
}

/// Completes on SIGTERM or ctrl-c (SIGINT): the shutdown future `main` passes to a server.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!("cannot listen for ctrl-c: {e}");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!("cannot listen for SIGTERM: {e}");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("ctrl-c: shutting down"),
        () = term => tracing::info!("SIGTERM: shutting down"),
    }
}

/// `listener` if given, else a listener bound to `addr` if given (an error names `flag`).
async fn bind_or(
    listener: Option<TcpListener>,
    addr: Option<SocketAddr>,
    flag: &str,
) -> Result<Option<TcpListener>, String> {
    match (listener, addr) {
        (Some(listener), _) => Ok(Some(listener)),
        (None, Some(addr)) => TcpListener::bind(addr)
            .await
            .map(Some)
            .map_err(|e| format!("{flag} {addr}: {e}")),
        (None, None) => Ok(None),
    }
}

/// Keeps service `S`'s health in step with `probe` (its store or dependency) until `shutdown`
/// turns true: `SERVING` while the probe succeeds, `NOT_SERVING` while it fails, checked every
/// `interval`; each change is logged with its reason (`what` names the dependency). `S` is
/// `NOT_SERVING` from the start, until the first probe succeeds (not unknown to health checks).
pub async fn follow_health<S, P, Fut>(
    health: HealthReporter,
    probe: P,
    interval: Duration,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
    what: &'static str,
) where
    S: NamedService,
    P: Fn() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    health.set_not_serving::<S>().await;
    let mut serving: Option<bool> = None;
    loop {
        if *shutdown.borrow() {
            return;
        }
        let result = probe().await;
        let now = result.is_ok();
        if serving != Some(now) && !*shutdown.borrow() {
            match &result {
                Ok(()) => {
                    tracing::info!("{what} healthy: serving");
                    health.set_serving::<S>().await;
                }
                Err(reason) => {
                    tracing::warn!(%reason, "{what} unhealthy: not serving");
                    health.set_not_serving::<S>().await;
                }
            }
            serving = Some(now);
        }
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            _ = shutdown.wait_for(|down| *down) => return,
        }
    }
}

/// How log lines are written (`--log-format`, `ARBITER_LOG_FORMAT`).
#[derive(clap::ValueEnum, Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines (the default).
    #[default]
    Text,
    /// One JSON object per line (tracing-subscriber's): the time, level, target, message and
    /// fields, and the fields of the request's span (`method`, `request_id`, `client`).
    Json,
}

/// The logging and tracing flags every binary shares.
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct LogArgs {
    /// Log lines as text or as JSON objects (filtered by RUST_LOG either way).
    #[arg(long, env = "ARBITER_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Export traces over OTLP/gRPC to this collector (`http://collector:4317`); off without
    /// it.
    #[arg(long, env = "ARBITER_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,
}

/// Sets up `tracing` for a binary: lines on stderr in `log.log_format`, filtered by `RUST_LOG`
/// (default `info`), and with `log.otlp_endpoint` the spans (at `info` and above) exported as
/// traces of the service `service`. Call it once, from `main`, within the Tokio runtime; shut
/// the returned exporter down at exit.
///
/// # Errors
/// The OTLP endpoint cannot be used.
pub fn init_tracing(log: &LogArgs, service: &'static str) -> Result<crate::trace::Tracing, String> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let lines = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let lines = match log.log_format {
        LogFormat::Text => lines.boxed(),
        LogFormat::Json => lines
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .flatten_event(true)
            .boxed(),
    };
    let (traces, tracing) = match &log.otlp_endpoint {
        Some(endpoint) => {
            let (layer, tracing) = crate::trace::layer(endpoint, service)?;
            let layer = layer.with_filter(tracing_subscriber::filter::LevelFilter::INFO);
            (Some(layer), tracing)
        }
        None => (None, crate::trace::Tracing::default()),
    };
    let _ = tracing_subscriber::registry()
        .with(lines.with_filter(filter))
        .with(traces)
        .try_init();
    Ok(tracing)
}

/// The tower layer that gives every call its `grpc` span (fields `method`, `request_id` from
/// `x-request-id`, and `client`, recorded once an API key is accepted), entered while the call
/// is made and while its answer is computed: what the layers below and the handler log carries
/// them.
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestSpanLayer;

impl<S> tower::Layer<S> for RequestSpanLayer {
    type Service = RequestSpan<S>;

    fn layer(&self, inner: S) -> RequestSpan<S> {
        RequestSpan { inner }
    }
}

/// The service of [`RequestSpanLayer`].
#[derive(Clone, Debug)]
pub struct RequestSpan<S> {
    inner: S,
}

impl<S, B> tower::Service<http::Request<B>> for RequestSpan<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = tracing::instrument::Instrumented<S::Future>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        use tracing::Instrument;
        let span = tracing::info_span!(
            "grpc",
            otel.name = %req.uri().path(),
            otel.kind = "server",
            method = %req.uri().path(),
            request_id = request_id(&req),
            client = tracing::field::Empty,
            trace_id = tracing::field::Empty
        );
        crate::trace::adopt(&span, req.headers());
        let answer = span.in_scope(|| self.inner.call(req));
        answer.instrument(span)
    }
}

/// The `x-request-id` a client sent, when it is short printable ASCII (else none): for the
/// request's span.
fn request_id<B>(req: &http::Request<B>) -> Option<&str> {
    req.headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128)
}
