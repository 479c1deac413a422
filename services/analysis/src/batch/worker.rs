//! A batch worker process (`arbiter-worker`, or `arbiter worker`): [`run_workers`] on the queue
//! in Redis, beside a small gRPC port that serves only the standard health service, so that an
//! orchestrator can tell a live worker from a stuck one without a probe program in the image.
//!
//! Health: the whole process (`""`) and [`WORKER_HEALTH_NAME`] are `SERVING` while Redis answers
//! a `PING` (checked every [`HEALTH_INTERVAL`]) and `NOT_SERVING` while it does not, and from the
//! moment shutdown begins; the workers then hand their games back and the port closes last.

use super::BatchConfig;
use super::redis::{RedisJobs, WorkerConfig, run_workers};
use arbiter_engine::TimeSource;
use arbiter_redis_conn::RedisConfig;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tonic_health::ServingStatus;

/// The health service name a worker reports beside the whole process's (`""`).
pub const WORKER_HEALTH_NAME: &str = "arbiter.analysis.v1.Worker";

/// How often a worker checks that Redis answers.
pub const HEALTH_INTERVAL: Duration = Duration::from_secs(2);

/// Runs `config.workers` workers on the queue in `redis` until `shutdown` completes, serving
/// gRPC health on `health` when given. Returns when every worker has stopped.
///
/// # Errors
/// A bad Redis configuration, or a health port that fails.
pub async fn run_worker_process<F>(
    redis: &RedisConfig,
    config: WorkerConfig,
    time: Arc<dyn TimeSource>,
    engines: Arc<crate::engines::EngineRegistry>,
    health: Option<TcpListener>,
    shutdown: F,
) -> Result<(), String>
where
    F: Future<Output = ()> + Send + 'static,
{
    let (down_tx, down) = watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = down_tx.send(true);
    });
    let health_task = match health {
        Some(listener) => Some(serve_health(redis, listener, down.clone())?),
        None => None,
    };
    let result = run_workers(redis, config, time, engines, down).await;
    if let Some((stop, task)) = health_task {
        let _ = stop.send(());
        match task.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(format!("health port: {e}")),
            Err(e) => return Err(format!("health port: {e}")),
        }
    }
    result
}

type HealthTask = (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), tonic::transport::Error>>,
);

/// Starts the health port on `listener`: its status follows Redis until `down` turns true
/// (then `NOT_SERVING`); the port itself stops when the returned sender fires.
fn serve_health(
    redis: &RedisConfig,
    listener: TcpListener,
    mut down: watch::Receiver<bool>,
) -> Result<HealthTask, String> {
    let (reporter, service) = tonic_health::server::health_reporter();
    if arbiter_kit::metrics::installed() {
        arbiter_kit::metrics::follow_serving(&reporter, &["", WORKER_HEALTH_NAME]);
    }
    // Its own connection, only for the probe: a PING must not queue behind a blocked read.
    let jobs = RedisJobs::open(redis, BatchConfig::default())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let set = |status: ServingStatus| {
            let reporter = reporter.clone();
            async move {
                reporter.set_service_status("", status).await;
                reporter
                    .set_service_status(WORKER_HEALTH_NAME, status)
                    .await;
            }
        };
        set(ServingStatus::NotServing).await;
        let mut serving: Option<bool> = None;
        loop {
            if *down.borrow() {
                break;
            }
            let probe = jobs.probe().await;
            if serving != Some(probe.is_ok()) && !*down.borrow() {
                match &probe {
                    Ok(()) => {
                        tracing::info!("Redis answers: worker serving");
                        set(ServingStatus::Serving).await;
                    }
                    Err(reason) => {
                        tracing::warn!(%reason, "Redis does not answer: worker not serving");
                        set(ServingStatus::NotServing).await;
                    }
                }
                serving = Some(probe.is_ok());
            }
            tokio::select! {
                () = tokio::time::sleep(HEALTH_INTERVAL) => {}
                _ = down.wait_for(|d| *d) => break,
            }
        }
        set(ServingStatus::NotServing).await;
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tracing::info!(%addr, "worker health listening");
    let task = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming_shutdown(
                tonic::transport::server::TcpIncoming::from(listener),
                async {
                    let _ = stopped.await;
                },
            ),
    );
    Ok((stop, task))
}
