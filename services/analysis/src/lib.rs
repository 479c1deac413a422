//! # arbiter-analysis
//!
//! The analysis service (`arbiter.analysis.v1.AnalysisService`): engine analysis of a position
//! in any variant, live, over gRPC: a stream of progress and the final lines (`Analyze`), or the
//! best move alone (`BestMove`).
//!
//! - [`live`]: a request decoded into a search, the search run, its output encoded;
//! - [`batch`]: batch jobs (whole games reviewed move by move), their in-process queue,
//!   results and workers;
//! - [`pool`]: the engine threads and their bounded queue, in which clients take turns;
//! - [`service`]: the thin tonic handlers;
//! - [`config`]: the caps on one request, the pool's size, and their flags.
//!
//! Searches never run on the async workers: each runs on one of the pool's threads, with the
//! request's stop flag, raised when the call goes away. Serving (health, reflection, tracing,
//! shutdown) and the error → status map come from `arbiter-kit`; [`mount`] adds this service to
//! a [`Host`], [`serve`] runs it alone.
#![warn(missing_docs)]

pub mod batch;
pub mod config;
pub mod live;
pub mod pool;
pub mod service;

pub use config::{AnalysisArgs, AnalysisConfig, Caps, PoolConfig};
pub use service::Analysis;

use arbiter_kit::{Host, ServeConfig, ServeError};
use arbiter_proto::analysis::v1::analysis_service_server::AnalysisServiceServer;
use batch::Jobs;
use pool::SearchPool;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;

/// The fully-qualified gRPC name of the service.
pub const SERVICE_NAME: &str = "arbiter.analysis.v1.AnalysisService";

/// Adds the analysis service to `host`, starts its engine threads, and reports it serving (live
/// analysis has no dependencies). When the host begins to shut down, running searches are
/// stopped (their callers get the result so far) and waiting ones are refused, so shutdown
/// takes at most one node-check interval of search.
pub async fn mount(host: &mut Host, config: AnalysisConfig) -> Result<(), ServeError> {
    let pool = SearchPool::start(config.pool.clone())?;
    let jobs = Jobs::start(config.batch.clone(), Arc::clone(&config.time))?;
    let mut shutting_down = host.shutting_down();
    {
        let (pool, jobs) = (pool.clone(), jobs.clone());
        tokio::spawn(async move {
            let _ = shutting_down.wait_for(|down| *down).await;
            pool.shut_down();
            jobs.shut_down();
        });
    }
    let max = host.config().max_message_bytes;
    let unary_timeout = host.config().request_timeout;
    let backends = service::Backends {
        pool,
        jobs,
        cpu: host.cpu(),
        shutting_down: host.shutting_down(),
    };
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
    host.health()
        .set_serving::<AnalysisServiceServer<Analysis>>()
        .await;
    Ok(())
}

/// Serves the analysis service alone (with health and reflection) on `listener` until
/// `shutdown` completes.
pub async fn serve<F>(
    listener: TcpListener,
    serve: ServeConfig,
    config: AnalysisConfig,
    shutdown: F,
) -> Result<(), ServeError>
where
    F: Future<Output = ()> + Send,
{
    let mut host = Host::new(serve);
    mount(&mut host, config).await?;
    host.serve(listener, shutdown).await
}
