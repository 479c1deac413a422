//! # arbiter-analysis
//!
//! The analysis service (`arbiter.analysis.v1.AnalysisService`): engine analysis of a position
//! in any variant, live, over gRPC: a stream of progress and the final lines (`Analyze`), or the
//! best move alone (`BestMove`).
//!
//! - [`live`]: a request decoded into a search, the search run, its output encoded;
//! - [`batch`]: batch jobs (whole games reviewed move by move): their queue, results and
//!   workers, in process or on Redis Streams ([`run_workers`] is a worker process's loop);
//! - [`pool`]: the engine threads and their bounded queue, in which clients take turns;
//! - [`quota`]: the engine-time quota of each API key client for live analysis;
//! - [`service`]: the thin tonic handlers, and [`convert`]: the domain's values to and from
//!   protobuf, for them;
//! - [`domain`]: values shared by live analysis and batch jobs;
//! - [`error`]: why a call was refused ([`AnalysisError`]), mapped to a status in one place;
//! - [`caps`]: the bounds on one request;
//! - [`config`]: the configuration (caps, the pool's size, the queue) and its flags.
//!
//! Searches never run on the async workers: each runs on one of the pool's threads, with the
//! request's stop flag, raised when the call goes away. Serving (health, reflection, tracing,
//! shutdown) and the error → status map come from `arbiter-kit`; [`mount`] adds this service to
//! a [`Host`], [`serve`] runs it alone.
#![warn(missing_docs)]

pub mod batch;
pub mod caps;
pub mod config;
pub mod convert;
pub mod domain;
pub mod engines;
pub mod error;
pub mod legacy;
pub mod live;
mod metrics;
pub mod pool;
pub mod quota;
pub mod service;

pub use arbiter_redis_conn::{RedisArgs, RedisConfig};
pub use batch::redis::{WorkerConfig, run_workers};
pub use batch::worker::{WORKER_HEALTH_NAME, run_worker_process};
pub use caps::Caps;
pub use config::{AnalysisArgs, AnalysisConfig, EngineArgs, PoolConfig, QueueArgs, WorkerArgs};
pub use error::AnalysisError;
pub use service::Analysis;

use arbiter_kit::{Host, ServeConfig, ServeError};
use arbiter_proto::analysis::v1::analysis_service_server::AnalysisServiceServer;
use batch::redis::RedisJobs;
use batch::{JobQueue, Jobs};
use pool::SearchPool;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;

/// The fully-qualified gRPC name of the service.
pub const SERVICE_NAME: &str = "arbiter.analysis.v1.AnalysisService";

/// Adds the analysis service to `host` and starts its engine threads. Batch jobs go to Redis
/// when `config.redis` is set (the service's own `batch.workers` workers serve the queue beside
/// any worker processes, and health follows Redis), else to this process (health: serving, as
/// live analysis has no dependencies). When the host begins to shut down, running searches are
/// stopped (their callers get the result so far), waiting ones are refused, and the batch
/// workers stop (on Redis, handing their games back), so shutdown takes at most about a second.
///
/// # Errors
/// A bad Redis configuration, or engine threads that cannot be started.
pub async fn mount(host: &mut Host, config: AnalysisConfig) -> Result<(), ServeError> {
    let pool = SearchPool::start(config.pool.clone())?;
    let engines = {
        let config = config.engines.clone();
        // Starting an engine runs its process and waits for its handshake: blocking work.
        tokio::task::spawn_blocking(move || engines::EngineRegistry::start(&config))
            .await
            .map_err(|e| -> ServeError { format!("engines: {e}").into() })?
            .map_err(|e| -> ServeError { e.into() })?
    };
    let shutting_down = host.shutting_down();
    let jobs = match &config.redis {
        None => {
            let jobs = Jobs::start(
                config.batch.clone(),
                Arc::clone(&config.time),
                Arc::clone(&engines),
            )?;
            let mut down = shutting_down.clone();
            let stop = jobs.clone();
            tokio::spawn(async move {
                let _ = down.wait_for(|down| *down).await;
                stop.shut_down();
            });
            host.health()
                .set_serving::<AnalysisServiceServer<Analysis>>()
                .await;
            JobQueue::Memory(jobs)
        }
        Some(redis) => {
            let jobs = Arc::new(RedisJobs::open(redis, config.batch.clone())?);
            if config.batch.workers > 0 {
                let workers = WorkerConfig {
                    workers: config.batch.workers,
                    ..config.batch.queue.clone()
                };
                let (redis, time, engines, down) = (
                    redis.clone(),
                    Arc::clone(&config.time),
                    Arc::clone(&engines),
                    shutting_down.clone(),
                );
                tokio::spawn(async move {
                    if let Err(e) = run_workers(&redis, workers, time, engines, down).await {
                        tracing::error!(error = %e, "analysis workers cannot start");
                    }
                });
            }
            let probe = Arc::clone(&jobs);
            tokio::spawn(arbiter_kit::follow_health::<
                AnalysisServiceServer<Analysis>,
                _,
                _,
            >(
                host.health(),
                move || {
                    let jobs = Arc::clone(&probe);
                    async move { jobs.probe().await }
                },
                std::time::Duration::from_secs(2),
                shutting_down.clone(),
                "analysis job store",
            ));
            JobQueue::Redis(jobs)
        }
    };
    {
        let (pool, mut down) = (pool.clone(), shutting_down.clone());
        tokio::spawn(async move {
            let _ = down.wait_for(|down| *down).await;
            pool.shut_down();
        });
    }
    let max = host.config().max_message_bytes;
    let unary_timeout = host.config().request_timeout;
    let backends = service::Backends {
        pool,
        jobs,
        cpu: host.cpu(),
        shutting_down: shutting_down.clone(),
        engines: Arc::clone(&engines),
    };
    {
        // Restart counts reach the metrics every few seconds; the processes stop with the host.
        let mut down = shutting_down;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(5));
            loop {
                tokio::select! {
                    _ = tick.tick() => engines.report_metrics(),
                    _ = down.wait_for(|down| *down) => break,
                }
            }
            engines.shut_down();
        });
    }
    host.add_service(
        Analysis::new(
            config.caps,
            config.batch,
            backends,
            config.time,
            unary_timeout,
        )
        .into_server(max),
    );
    Ok(())
}

/// Serves the analysis service alone (with health and reflection) on `listener`, calls checked
/// by `access`, until `shutdown` completes.
pub async fn serve<F>(
    listener: TcpListener,
    serve: ServeConfig,
    config: AnalysisConfig,
    access: arbiter_kit::access::AccessPolicy,
    shutdown: F,
) -> Result<(), ServeError>
where
    F: Future<Output = ()> + Send,
{
    let mut host = Host::new(serve);
    host.set_access(access);
    mount(&mut host, config).await?;
    host.serve(listener, shutdown).await
}
