//! `arbiter-analysis`: the analysis service as its own process, for deployment. Configuration
//! comes from flags and the environment (see `--help`), read here and nowhere else.

use arbiter_analysis::{AnalysisArgs, RedisArgs};
use arbiter_kit::access::AccessArgs;
use arbiter_kit::probe::ProbeCommand;
use arbiter_kit::{ServeArgs, init_tracing, shutdown_signal};
use clap::Parser;
use std::process::ExitCode;

/// mimalloc: the gRPC paths allocate many small, short-lived buffers (docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "arbiter-analysis",
    version,
    about = "Arbiter's analysis service: live engine analysis of any variant (gRPC)"
)]
struct Args {
    #[command(subcommand)]
    command: Option<ProbeCommand>,
    #[command(flatten)]
    serve: ServeArgs,
    #[command(flatten)]
    access: AccessArgs,
    #[command(flatten)]
    analysis: AnalysisArgs,
    /// Batch jobs in Redis (shared with other replicas and `arbiter worker` processes).
    #[command(flatten)]
    redis: RedisArgs,
}

#[tokio::main]
async fn main() -> Result<ExitCode, arbiter_kit::ServeError> {
    let args = Args::parse();
    // One crypto provider (ring) for every TLS use of the process: gRPC and Redis.
    arbiter_kit::tls::install_crypto_provider();
    if let Some(probe) = &args.command {
        return Ok(probe.run(args.serve.listen).await);
    }
    let traces = init_tracing(&args.serve.log, "arbiter-analysis")?;
    let access = args.access.load()?;
    access.warn_if_exposed(args.serve.listen);
    let redis = args.redis.load()?;
    let listener = tokio::net::TcpListener::bind(args.serve.listen).await?;
    arbiter_analysis::serve(
        listener,
        args.serve.config(),
        args.analysis.config(redis),
        access,
        shutdown_signal(),
    )
    .await?;
    traces.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
