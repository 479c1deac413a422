//! `arbiter-rules`: the rules service as its own process, for deployment. Configuration comes
//! from flags and the environment (see `--help`), read here and nowhere else.

use arbiter_rules::{ServerArgs, serve, shutdown_signal};
use clap::Parser;
use tracing_subscriber::EnvFilter;

#[derive(Parser, Debug)]
#[command(
    name = "arbiter-rules",
    version,
    about = "Arbiter's rules service (gRPC)"
)]
struct Args {
    #[command(flatten)]
    server: ServerArgs,
}

#[tokio::main]
async fn main() -> Result<(), arbiter_rules::ServeError> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    let listener = tokio::net::TcpListener::bind(args.server.listen).await?;
    serve(listener, args.server.config(), shutdown_signal()).await
}
