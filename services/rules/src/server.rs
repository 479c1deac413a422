//! Serving: the rules service with the standard health service and server reflection, request
//! tracing, a unary deadline, and graceful shutdown on a caller-supplied future (tonic's
//! pattern: tests bind port 0 and pass a oneshot; `main` passes SIGTERM/ctrl-c).

use crate::bughouse::grpc::BughouseGrpc;
use crate::bughouse::redis_store::RedisStore;
use crate::bughouse::store::{AnyStore, MemoryStore};
use crate::config::{MatchStoreConfig, ServerConfig};
use crate::service::Rules;
use arbiter_proto::rules::v1::bughouse_service_server::BughouseServiceServer;
use arbiter_proto::rules::v1::rules_service_server::RulesServiceServer;
use std::future::Future;
use tokio::net::TcpListener;
use tonic::codegen::http;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;

/// Any error that stops a server.
pub type ServeError = Box<dyn std::error::Error + Send + Sync>;

/// The fully-qualified gRPC names of the services a server built here exposes (for health
/// checks and tests).
pub const SERVICE_NAMES: [&str; 5] = [
    "arbiter.rules.v1.RulesService",
    "arbiter.rules.v1.BughouseService",
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
];

/// Serves every Arbiter service available (today: rules and bughouse matches, with the match
/// store the configuration names), plus health and reflection, on
/// `listener` until `shutdown` completes; in-flight requests are finished before returning.
pub async fn serve<F>(
    listener: TcpListener,
    config: ServerConfig,
    shutdown: F,
) -> Result<(), ServeError>
where
    F: Future<Output = ()> + Send,
{
    let store = match &config.match_store {
        MatchStoreConfig::Memory => AnyStore::Memory(MemoryStore::new(config.retention)),
        MatchStoreConfig::Redis(url) => {
            AnyStore::Redis(RedisStore::connect(url, config.retention).await?)
        }
    };
    tracing::info!(store = ?config.match_store, "bughouse match store");
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<RulesServiceServer<Rules>>().await;
    health
        .set_serving::<BughouseServiceServer<BughouseGrpc>>()
        .await;
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(arbiter_proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let reflection_v1 = reflection().build_v1()?;
    let reflection_v1alpha = reflection().build_v1alpha()?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, "arbiter listening");
    Server::builder()
        .timeout(config.request_timeout)
        .layer(tower::util::MapResponseLayer::new(
            oversize_as_resource_exhausted,
        ))
        .trace_fn(|req| tracing::info_span!("grpc", method = %req.uri().path()))
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(BughouseGrpc::new(store).into_server(config.limits.max_message_bytes))
        .add_service(Rules::new(config.limits).into_server())
        .serve_with_incoming_shutdown(
            // No Nagle: small unary replies must not wait for the peer's delayed ACK.
            TcpIncoming::from(listener).with_nodelay(Some(true)),
            shutdown,
        )
        .await?;
    tracing::info!("arbiter stopped");
    Ok(())
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

/// Completes on SIGTERM or ctrl-c (SIGINT): the shutdown future `main` passes to [`serve`].
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
