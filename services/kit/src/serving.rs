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

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpListener;
use tonic::codegen::http;
use tonic::server::NamedService;
use tonic::service::RoutesBuilder;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

/// Any error that stops a server.
pub type ServeError = Box<dyn std::error::Error + Send + Sync>;

/// How a process serves, whatever its services.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeConfig {
    /// Deadline for one unary request (streams are not bounded).
    pub request_timeout: Duration,
    /// Largest encoded request or response message, in bytes.
    pub max_message_bytes: usize,
    /// Whether gRPC server reflection is offered.
    pub reflection: bool,
}

impl Default for ServeConfig {
    fn default() -> ServeConfig {
        ServeConfig {
            request_timeout: Duration::from_secs(30),
            max_message_bytes: 4 << 20,
            reflection: true,
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
}

impl ServeArgs {
    /// The configuration these flags describe.
    pub fn config(&self) -> ServeConfig {
        ServeConfig {
            request_timeout: Duration::from_secs(self.request_timeout_secs.max(1)),
            max_message_bytes: self.max_message_bytes,
            reflection: !self.no_reflection,
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
}

impl Host {
    /// An empty host serving with `config` (the health service is already in).
    pub fn new(config: ServeConfig) -> Host {
        let (health, health_service) = tonic_health::server::health_reporter();
        let mut routes = RoutesBuilder::default();
        routes.add_service(health_service);
        Host {
            config,
            routes,
            health,
            names: Vec::new(),
        }
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
    pub async fn serve<F>(self, listener: TcpListener, shutdown: F) -> Result<(), ServeError>
    where
        F: Future<Output = ()> + Send,
    {
        let Host {
            config,
            mut routes,
            health,
            names,
        } = self;
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
        tracing::info!(%addr, services = ?names, reflection = config.reflection, "listening");
        let draining = {
            let health = health.clone();
            let names = names.clone();
            async move {
                shutdown.await;
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
        Server::builder()
            .timeout(config.request_timeout)
            .layer(tower::util::MapResponseLayer::new(
                oversize_as_resource_exhausted,
            ))
            .trace_fn(|req| tracing::info_span!("grpc", method = %req.uri().path()))
            .add_routes(routes.routes())
            .serve_with_incoming_shutdown(
                // No Nagle: small unary replies must not wait for the peer's delayed ACK.
                TcpIncoming::from(listener).with_nodelay(Some(true)),
                draining,
            )
            .await?;
        tracing::info!("stopped");
        Ok(())
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

/// Sets up `tracing` for a binary: human-readable lines on stderr, filtered by `RUST_LOG`
/// (default `info`). Call it once, from `main`.
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
