//! `arbiter-analysis`: the analysis service as its own process, for deployment. Configuration
//! comes from flags and the environment (see `--help`), read here and nowhere else.

use arbiter_analysis::AnalysisArgs;
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
}

#[tokio::main]
async fn main() -> Result<(), arbiter_kit::ServeError> {
    let args = Args::parse();
    init_tracing();
    let listener = tokio::net::TcpListener::bind(args.serve.listen).await?;
    arbiter_analysis::serve(
        listener,
        args.serve.config(),
        args.analysis.config(),
        shutdown_signal(),
    )
    .await
}
