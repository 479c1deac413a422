//! `arbiter-worker`: batch-analysis workers on the job queue in Redis, as a process of their
//! own, for deployment (the same loop as `arbiter worker`). Configuration comes from flags and
//! the environment (see `--help`), read here and nowhere else.

use arbiter_analysis::WorkerArgs;
use arbiter_kit::probe::ProbeCommand;
use arbiter_kit::{init_tracing, shutdown_signal};
use clap::Parser;
use std::process::ExitCode;
use std::sync::Arc;

/// mimalloc, as in the other binaries: searches allocate little, but Redis replies many.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "arbiter-worker",
    version,
    about = "Arbiter's batch-analysis worker: analyses queued games from Redis Streams"
)]
struct Args {
    #[command(subcommand)]
    command: Option<ProbeCommand>,
    #[command(flatten)]
    worker: WorkerArgs,
}

#[tokio::main]
async fn main() -> Result<ExitCode, arbiter_kit::ServeError> {
    let args = Args::parse();
    if let Some(probe) = &args.command {
        let Some(listen) = args.worker.health_listen else {
            eprintln!("health-check: this worker serves no health port (--health-listen)");
            return Ok(ExitCode::FAILURE);
        };
        return Ok(probe.run(listen).await);
    }
    let traces = init_tracing(&args.worker.log, "arbiter-worker")?;
    arbiter_kit::tls::install_crypto_provider();
    let (redis, config) = args.worker.load()?;
    let metrics = match args.worker.metrics.metrics_listen {
        Some(addr) => Some(arbiter_kit::metrics::start_on(addr).await?),
        None => None,
    };
    let health = match args.worker.health_listen {
        Some(addr) => Some(tokio::net::TcpListener::bind(addr).await?),
        None => None,
    };
    let time: Arc<dyn arbiter_engine::TimeSource> = Arc::new(arbiter_engine::SystemTime::new());
    let engines = arbiter_analysis::engines::EngineRegistry::start(&args.worker.engines.config())?;
    arbiter_analysis::run_worker_process(
        &redis,
        config,
        time,
        Arc::clone(&engines),
        health,
        shutdown_signal(),
    )
    .await?;
    engines.shut_down();
    if let Some(metrics) = metrics {
        metrics.stop().await;
    }
    traces.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
