//! `arbiter-clock`: the clock service as its own process. Configuration comes from flags and
//! the environment (see `--help`), read here and nowhere else.

use arbiter_clock::{ClockArgs, RedisArgs};
use arbiter_kit::access::AccessArgs;
use arbiter_kit::probe::ProbeCommand;
use arbiter_kit::{ServeArgs, init_tracing, shutdown_signal};
use clap::Parser;
use std::process::ExitCode;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "arbiter-clock",
    version,
    about = "Arbiter's clock service: time sync and standalone clocks (gRPC)"
)]
struct Args {
    #[command(subcommand)]
    command: Option<ProbeCommand>,
    #[command(flatten)]
    serve: ServeArgs,
    #[command(flatten)]
    redis: RedisArgs,
    #[command(flatten)]
    clock: ClockArgs,
    #[command(flatten)]
    access: AccessArgs,
}

#[tokio::main]
async fn main() -> Result<ExitCode, arbiter_kit::ServeError> {
    let args = Args::parse();
    // One crypto provider (ring) for every TLS use of the process: gRPC and Redis.
    arbiter_kit::tls::install_crypto_provider();
    if let Some(probe) = &args.command {
        return Ok(probe.run(args.serve.listen).await);
    }
    let traces = init_tracing(&args.serve.log, "arbiter-clock")?;
    let config = args.clock.config(args.redis.load()?);
    let access = args.access.load()?;
    access.warn_if_exposed(args.serve.listen);
    let listener = tokio::net::TcpListener::bind(args.serve.listen).await?;
    arbiter_clock::serve(
        listener,
        args.serve.config(),
        config,
        access,
        shutdown_signal(),
    )
    .await?;
    traces.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
