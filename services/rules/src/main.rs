//! `arbiter-rules`: the rules service as its own process, for deployment. Configuration comes
//! from flags and the environment (see `--help`), read here and nowhere else.

use arbiter_kit::access::AccessArgs;
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
    access: AccessArgs,
    #[command(flatten)]
    rules: RulesArgs,
}

#[tokio::main]
async fn main() -> Result<ExitCode, arbiter_kit::ServeError> {
    let args = Args::parse();
    // One crypto provider (ring) for every TLS use of the process: gRPC and Redis.
    arbiter_kit::tls::install_crypto_provider();
    if let Some(probe) = &args.command {
        return Ok(probe.run(args.serve.listen).await);
    }
    let traces = init_tracing(&args.serve.log, "arbiter-rules")?;
    let access = args.access.load()?;
    access.warn_if_exposed(args.serve.listen);
    let listener = tokio::net::TcpListener::bind(args.serve.listen).await?;
    arbiter_rules::serve(
        listener,
        args.serve.config(),
        args.rules.limits(),
        access,
        shutdown_signal(),
    )
    .await?;
    traces.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
