//! `arbiter-analysis`: the analysis service as its own process, for deployment. Configuration
//! comes from flags and the environment (see `--help`), read here and nowhere else.

use arbiter_analysis::{AnalysisArgs, RedisArgs};
use arbiter_kit::{ServeArgs, init_tracing, shutdown_signal};
use clap::Parser;

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
    #[command(flatten)]
    serve: ServeArgs,
    #[command(flatten)]
    analysis: AnalysisArgs,
    /// Batch jobs in Redis (shared with other replicas and `arbiter worker` processes).
    #[command(flatten)]
    redis: RedisArgs,
}

#[tokio::main]
async fn main() -> Result<(), arbiter_kit::ServeError> {
    let args = Args::parse();
    init_tracing();
    let redis = args.redis.load()?;
    let listener = tokio::net::TcpListener::bind(args.serve.listen).await?;
    arbiter_analysis::serve(
        listener,
        args.serve.config(),
        args.analysis.config(redis),
        shutdown_signal(),
    )
    .await
}
