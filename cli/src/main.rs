//! `arbiter`: the command-line front of Arbiter. Argument parsing only; the work is in the
//! library half of this crate and in `arbiter-core`.

use arbiter_cli::{CliError, load_position};
use arbiter_core::{Locale, Variant};
use clap::{Parser, Subcommand, ValueEnum};
use std::io::{Read, Write};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "arbiter",
    version,
    about = "Arbiter: chess rules, analysis and game services"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Copy, Clone, Debug, ValueEnum)]
enum LocaleArg {
    /// K Q R B N
    English,
    /// R D T A C (re, donna, torre, alfiere, cavallo)
    Italian,
}

impl From<LocaleArg> for Locale {
    fn from(l: LocaleArg) -> Locale {
        match l {
            LocaleArg::English => Locale::English,
            LocaleArg::Italian => Locale::Italian,
        }
    }
}

#[derive(clap::Args, Debug)]
struct PositionArgs {
    /// Variant name (chess, crazyhouse, bughouse, glinski, byzantine, byzantine-citadel).
    #[arg(long, default_value = "chess", value_parser = parse_variant)]
    variant: Variant,
    /// The position string (FEN for chess, the hexchess string for Glinski); the variant's start
    /// position when absent.
    #[arg(long)]
    position: Option<String>,
    /// A rule option NAME=VALUE, repeatable (Byzantine: stalemate=wins|loses,
    /// facing_pawns=on|off).
    #[arg(long = "rule", value_name = "NAME=VALUE")]
    rules: Vec<String>,
}

impl PositionArgs {
    fn load(&self) -> Result<arbiter_core::AnyPosition, CliError> {
        load_position(self.variant, self.position.as_deref(), &self.rules)
    }
}

fn parse_variant(s: &str) -> Result<Variant, String> {
    s.parse::<Variant>().map_err(|e| e.to_string())
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Count the leaf nodes of the legal move tree (the last line is the total alone).
    Perft {
        #[command(flatten)]
        pos: PositionArgs,
        /// Depth in plies.
        #[arg(long)]
        depth: u32,
        /// Print each first move with its count before the total.
        #[arg(long)]
        divide: bool,
    },
    /// List every legal move, one per line, in UCI notation.
    Moves {
        #[command(flatten)]
        pos: PositionArgs,
    },
    /// Play moves (UCI or SAN) and print the resulting position string.
    Play {
        #[command(flatten)]
        pos: PositionArgs,
        /// SAN piece letters of the moves.
        #[arg(long, value_enum, default_value = "english")]
        locale: LocaleArg,
        /// The moves, in order.
        moves: Vec<String>,
    },
    /// Print `ongoing` or the result and reason, plus any claimable draw, after optional moves.
    Status {
        #[command(flatten)]
        pos: PositionArgs,
        /// SAN piece letters of the moves.
        #[arg(long, value_enum, default_value = "english")]
        locale: LocaleArg,
        /// Moves to play first (their history counts for repetition).
        moves: Vec<String>,
    },
    /// Print the board as a text diagram, or as SVG with --svg (Glinski, Byzantine).
    Show {
        #[command(flatten)]
        pos: PositionArgs,
        /// Print an SVG picture instead of text.
        #[arg(long)]
        svg: bool,
    },
    /// Run every Arbiter service in this process on one port (embedded default: in-process
    /// storage, no Redis): the rules and bughouse services, with health and reflection.
    Serve {
        #[command(flatten)]
        server: arbiter_rules::ServerArgs,
    },
    /// Load generators for the services.
    Bench {
        #[command(subcommand)]
        target: BenchTarget,
    },
    /// Read PGN on stdin, validate every move, print normalised PGN.
    Pgn {
        /// Piece letters of the input SAN.
        #[arg(long, value_enum, default_value = "english")]
        locale: LocaleArg,
        /// Piece letters of the output SAN (defaults to the input locale).
        #[arg(long, value_enum)]
        output_locale: Option<LocaleArg>,
    },
    /// Read bughouse BPGN on stdin, play every game on both boards, print normalised BPGN
    Bpgn {
        /// Piece letters of the SAN, in and out.
        #[arg(long, value_enum, default_value = "english")]
        locale: LocaleArg,
    },
}

#[derive(Subcommand, Debug)]
enum BenchTarget {
    /// Drive the rules service: unary and streaming validation next to the no-op ceiling.
    Rules {
        /// Server to load, e.g. http://127.0.0.1:50051; without it an embedded server is started
        /// in this process on a free port.
        #[arg(long)]
        addr: Option<String>,
        /// Seconds per phase.
        #[arg(long, default_value_t = 5.0)]
        duration_secs: f64,
        /// Concurrent unary requests.
        #[arg(long, default_value_t = 64)]
        concurrency: usize,
        /// Concurrent streams in the streaming phases.
        #[arg(long, default_value_t = 4)]
        streams: usize,
    },
    /// Drive bughouse matches: many in parallel, random legal moves through MakeMove.
    Bughouse {
        /// Server to load; without it an embedded server is started in this process.
        #[arg(long)]
        addr: Option<String>,
        /// For the embedded server: keep matches in Redis at this URL (else in process).
        #[arg(long)]
        redis_url: Option<String>,
        /// Matches played at once (two clients each).
        #[arg(long, default_value_t = 64)]
        matches: usize,
        /// Seconds to play.
        #[arg(long, default_value_t = 10.0)]
        duration_secs: f64,
    },
}

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError(format!("cannot start the async runtime: {e}")))
}

fn serve(server: arbiter_rules::ServerArgs) -> Result<String, CliError> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    runtime()?.block_on(async {
        let listener = tokio::net::TcpListener::bind(server.listen)
            .await
            .map_err(|e| CliError(format!("--listen {}: {e}", server.listen)))?;
        arbiter_rules::serve(listener, server.config(), arbiter_rules::shutdown_signal())
            .await
            .map_err(|e| CliError(format!("server failed: {e}")))
    })?;
    Ok(String::new())
}

/// An embedded server on a free port with `config`: its URL and how to stop it.
async fn embedded(
    config: arbiter_rules::ServerConfig,
) -> Result<(String, EmbeddedServer), CliError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| CliError(format!("bind: {e}")))?;
    let url = format!(
        "http://{}",
        listener.local_addr().map_err(|e| CliError(e.to_string()))?
    );
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(arbiter_rules::serve(listener, config, async {
        let _ = rx.await;
    }));
    Ok((url, (tx, handle)))
}

type EmbeddedServer = (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), arbiter_rules::ServeError>>,
);

async fn connect(url: &str) -> Result<tonic::transport::Channel, CliError> {
    tonic::transport::Endpoint::from_shared(url.to_owned())
        .map_err(|e| CliError(format!("--addr {url}: {e}")))?
        .connect()
        .await
        .map_err(|e| CliError(format!("--addr {url}: {e}")))
}

fn bench_bughouse(
    addr: Option<String>,
    redis_url: Option<String>,
    matches: usize,
    duration_secs: f64,
) -> Result<String, CliError> {
    let cfg = arbiter_rules::bughouse::loadgen::BughouseBenchConfig {
        duration: std::time::Duration::from_secs_f64(duration_secs),
        matches,
    };
    let store = match (&addr, &redis_url) {
        (Some(_), _) => "remote".to_owned(),
        (None, Some(_)) => "redis".to_owned(),
        (None, None) => "in-process".to_owned(),
    };
    runtime()?.block_on(async {
        let (url, stop) = match addr {
            Some(url) => (url, None),
            None => {
                let config = arbiter_rules::ServerConfig {
                    match_store: match redis_url {
                        Some(u) => arbiter_rules::config::MatchStoreConfig::Redis(u),
                        None => arbiter_rules::config::MatchStoreConfig::Memory,
                    },
                    ..Default::default()
                };
                let (url, server) = embedded(config).await?;
                (url, Some(server))
            }
        };
        let channel = connect(&url).await?;
        let result = arbiter_rules::bughouse::loadgen::run(channel, &cfg)
            .await
            .map_err(|e| CliError(format!("bench failed: {e}")))?;
        if let Some((tx, handle)) = stop {
            let _ = tx.send(());
            let _ = handle.await;
        }
        Ok(arbiter_rules::bughouse::loadgen::report(
            &result, &cfg, &store,
        ))
    })
}

fn bench(target: BenchTarget) -> Result<String, CliError> {
    let (addr, duration_secs, concurrency, streams) = match target {
        BenchTarget::Rules {
            addr,
            duration_secs,
            concurrency,
            streams,
        } => (addr, duration_secs, concurrency, streams),
        BenchTarget::Bughouse {
            addr,
            redis_url,
            matches,
            duration_secs,
        } => return bench_bughouse(addr, redis_url, matches, duration_secs),
    };
    let cfg = arbiter_rules::loadgen::BenchConfig {
        duration: std::time::Duration::from_secs_f64(duration_secs),
        concurrency,
        streams,
    };
    runtime()?.block_on(async {
        let (url, stop) = match addr {
            Some(url) => (url, None),
            None => {
                let (url, server) = embedded(Default::default()).await?;
                (url, Some(server))
            }
        };
        let channel = connect(&url).await?;
        let phases = arbiter_rules::loadgen::run(channel, &cfg)
            .await
            .map_err(|e| CliError(format!("bench failed: {e}")))?;
        if let Some((tx, handle)) = stop {
            let _ = tx.send(());
            let _ = handle.await;
        }
        Ok(arbiter_rules::loadgen::report(&phases, &cfg))
    })
}

fn run(cli: Cli) -> Result<String, CliError> {
    Ok(match cli.command {
        Command::Perft { pos, depth, divide } => {
            let p = pos.load()?;
            arbiter_cli::perft(&p, depth, divide)
        }
        Command::Moves { pos } => arbiter_cli::moves(&pos.load()?),
        Command::Play { pos, locale, moves } => {
            let p = pos.load()?;
            arbiter_cli::play(p, &moves, locale.into())?
        }
        Command::Status { pos, locale, moves } => {
            let p = pos.load()?;
            arbiter_cli::status(p, &moves, locale.into())?
        }
        Command::Show { pos, svg } => arbiter_cli::show(&pos.load()?, svg)?,
        Command::Serve { server } => serve(server)?,
        Command::Bench { target } => bench(target)?,
        Command::Bpgn { locale } => {
            let mut input = String::new();
            std::io::stdin()
                .read_to_string(&mut input)
                .map_err(|e| CliError(format!("reading stdin: {e}")))?;
            arbiter_cli::bpgn(&input, locale.into())?
        }
        Command::Pgn {
            locale,
            output_locale,
        } => {
            let mut input = String::new();
            std::io::stdin()
                .read_to_string(&mut input)
                .map_err(|e| CliError(format!("reading stdin: {e}")))?;
            arbiter_cli::pgn(
                &input,
                locale.into(),
                output_locale.unwrap_or(locale).into(),
            )?
        }
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(out) => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (e.g. `| head`) is not an error worth reporting.
            let _ = stdout.write_all(out.as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("arbiter: {e}");
            ExitCode::from(2)
        }
    }
}
