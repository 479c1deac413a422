//! `arbiter-rules`: the rules service as its own process, for deployment. Configuration comes
//! from flags and the environment (see `--help`), read here and nowhere else.

use arbiter_kit::probe::ProbeCommand;
use arbiter_kit::{ServeArgs, init_tracing, shutdown_signal};
use arbiter_rules::RulesArgs;
use clap::Parser;
use std::process::ExitCode;

/// mimalloc: the gRPC paths allocate many small, short-lived buffers (docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "arbiter-rules",
    version,
    about = "Arbiter's rules service (gRPC)"
)]
struct Args {
    #[command(subcommand)]
    command: Option<ProbeCommand>,
    #[command(flatten)]
    serve: ServeArgs,
    #[command(flatten)]
    rules: RulesArgs,
}

#[tokio::main]
async fn main() -> Result<ExitCode, arbiter_kit::ServeError> {
    let args = Args::parse();
    if let Some(probe) = &args.command {
        return Ok(probe.run(args.serve.listen).await);
    }
    init_tracing();
    let listener = tokio::net::TcpListener::bind(args.serve.listen).await?;
    arbiter_rules::serve(
        listener,
        args.serve.config(),
        args.rules.limits(),
        shutdown_signal(),
    )
    .await?;
    Ok(ExitCode::SUCCESS)
}
