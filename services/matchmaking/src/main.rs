//! `arbiter-matchmaking`: the matchmaking service as its own process. Configuration comes from
//! flags and the environment (see `--help`), read here and nowhere else.

use arbiter_kit::access::AccessArgs;
use arbiter_kit::probe::ProbeCommand;
use arbiter_kit::{ServeArgs, init_tracing, shutdown_signal};
use arbiter_matchmaking::{MatchesArgs, MatchmakingArgs, RedisArgs};
use clap::Parser;
use std::process::ExitCode;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "arbiter-matchmaking",
    version,
    about = "Arbiter's matchmaking: pools, pairing waves and ratings (gRPC)"
)]
struct Args {
    #[command(subcommand)]
    command: Option<ProbeCommand>,
    #[command(flatten)]
    serve: ServeArgs,
    #[command(flatten)]
    redis: RedisArgs,
    #[command(flatten)]
    matchmaking: MatchmakingArgs,
    #[command(flatten)]
    matches: MatchesArgs,
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
    let traces = init_tracing(&args.serve.log, "arbiter-matchmaking")?;
    let mut config = args.matchmaking.config(args.redis.load()?)?;
    config.tuning.accept_stale_ms = arbiter_matchmaking::config::accept_stale_ms(
        args.matches.matches_timeout_ms,
        config.tuning.create_retries,
    );
    let access = args.access.load()?;
    let backend = args.matches.connect(args.access.platform.token()?)?;
    access.warn_if_exposed(args.serve.listen);
    let listener = tokio::net::TcpListener::bind(args.serve.listen).await?;
    arbiter_matchmaking::serve(
        listener,
        args.serve.config(),
        config,
        access,
        backend,
        shutdown_signal(),
    )
    .await?;
    traces.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
