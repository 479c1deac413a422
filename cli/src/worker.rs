//! `arbiter worker --server URL --api-key-file F`: a remote batch-analysis worker over gRPC (the
//! fishnet model). It takes one game at a time per thread with `AcquireWork` (under a lease),
//! replays it, evaluates every position in the order the server documents with the engine the
//! job asked for (the built-in engine, or an external UCI engine given with the same `--engine`
//! name as the server's), and sends the evaluations with `SubmitWork`; the server checks them
//! and reviews the game. The worker never talks to Redis: its key needs the `analysis:worker`
//! scope. It asks only for games of the engines it runs.
//!
//! SIGINT or SIGTERM stops it: games being analysed are abandoned (their leases expire and the
//! server hands them to another worker), nothing more is taken.

use arbiter_analysis::EngineArgs;
use arbiter_analysis::batch::{JobSpec, evaluations};
use arbiter_analysis::convert::{position_evaluation, work_item_game};
use arbiter_analysis::engines::EngineRegistry;
use arbiter_cli::CliError;
use arbiter_client::proto::analysis::v1::{AcquireWorkRequest, SubmitWorkRequest, WorkItem};
use arbiter_client::{Client, ClientConfig, resolve_api_key};
use arbiter_engine::Limits;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tonic::Code;

/// The flags of a remote worker (`arbiter worker --server …`).
#[derive(clap::Args, Debug)]
pub struct RemoteArgs {
    /// Work for the analysis server at this address over gRPC (host:port, http://… or
    /// https://…) instead of the Redis queue: a remote worker, whose key needs the
    /// `analysis:worker` scope.
    #[arg(long)]
    pub server: Option<String>,
    /// A file whose first line is the worker's API key (else ARBITER_API_KEY holds the key).
    #[arg(long)]
    pub api_key_file: Option<PathBuf>,
    /// Speak TLS to the server, trusting this CA certificate (PEM).
    #[arg(long)]
    pub tls_ca_file: Option<PathBuf>,
    /// The name the server's certificate must carry (default: the address's host).
    #[arg(long)]
    pub tls_server_name: Option<String>,
    /// Games analysed at once (one engine thread each).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// How long each AcquireWork waits for a game when none is queued, in ms (the server caps
    /// it at 30 s).
    #[arg(long, default_value_t = 5_000)]
    pub wait_ms: u32,
    /// Exit when the queue is empty (a thread stops at its first AcquireWork that finds no
    /// game): for tests and measurements.
    #[arg(long)]
    pub once: bool,
}

/// Runs the remote worker until a signal (or, with `--once`, until the queue is empty).
///
/// # Errors
/// A bad flag or key file, or a refusal by the server (`PERMISSION_DENIED`: the key lacks the
/// scope, or it is refused for work).
pub fn run(args: &RemoteArgs, engines: &EngineArgs) -> Result<String, CliError> {
    arbiter_kit::tls::install_crypto_provider();
    let engines =
        EngineRegistry::start(&engines.config()).map_err(|e| CliError::input("--engine", e))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::io("cannot start the async runtime", e))?;
    runtime.block_on(async {
        let client = connect(args).await?;
        let stop = Arc::new(AtomicBool::new(false));
        {
            let stop = Arc::clone(&stop);
            tokio::spawn(async move {
                arbiter_kit::shutdown_signal().await;
                eprintln!("arbiter worker: stopping (games in progress are abandoned)");
                stop.store(true, Ordering::Relaxed);
            });
        }
        let done = Arc::new(AtomicU64::new(0));
        let mut slots = tokio::task::JoinSet::new();
        for _ in 0..args.threads.max(1) {
            slots.spawn(slot(
                client.clone(),
                Arc::clone(&engines),
                args.wait_ms,
                args.once,
                Arc::clone(&stop),
                Arc::clone(&done),
            ));
        }
        let mut failure = None;
        while let Some(r) = slots.join_next().await {
            match r {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    // One thread refused: the others stop too.
                    stop.store(true, Ordering::Relaxed);
                    failure.get_or_insert(e);
                }
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    failure.get_or_insert(CliError::failed(format!("a worker thread failed: {e}")));
                }
            }
        }
        engines.shut_down();
        match failure {
            Some(e) => Err(e),
            None => Ok(format!("{} games analysed", done.load(Ordering::Relaxed))),
        }
    })
}

async fn connect(args: &RemoteArgs) -> Result<Client, CliError> {
    let server = args
        .server
        .clone()
        .ok_or_else(|| CliError::input("--server", "a remote worker needs the server's address"))?;
    let mut config = ClientConfig::new(server);
    if let Some(key) = resolve_api_key(None, args.api_key_file.as_deref())
        .map_err(|e| CliError::input("--api-key-file", e))?
    {
        config = config.api_key(key);
    }
    if let Some(ca) = &args.tls_ca_file {
        config = config.tls_ca_file(ca);
    }
    if let Some(name) = &args.tls_server_name {
        config = config.tls_server_name(name);
    }
    Client::connect(config)
        .await
        .map_err(|e| CliError::input("--server", e))
}

/// Whether a failed call may be tried again (the server or the network away for a moment).
fn transient(code: Code) -> bool {
    matches!(
        code,
        Code::Unavailable | Code::DeadlineExceeded | Code::ResourceExhausted | Code::Unknown
    )
}

/// The pause before retry `attempt` (0-based): 100 ms doubling, at most 5 s.
fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(100u64.saturating_mul(1 << attempt.min(6))).min(Duration::from_secs(5))
}

/// One worker thread: takes, analyses and submits games until stopped.
async fn slot(
    client: Client,
    engines: Arc<EngineRegistry>,
    wait_ms: u32,
    once: bool,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
) -> Result<(), CliError> {
    let mut analysis = client.analysis();
    let mut attempt = 0;
    while !stop.load(Ordering::Relaxed) {
        let mut req = tonic::Request::new(AcquireWorkRequest {
            engines: engines.names().into_iter().map(str::to_owned).collect(),
            wait_ms,
        });
        req.set_timeout(Duration::from_millis(u64::from(wait_ms) + 10_000));
        let item = match analysis.acquire_work(req).await {
            Ok(r) => {
                attempt = 0;
                r.into_inner().work
            }
            Err(e) if transient(e.code()) => {
                eprintln!(
                    "arbiter worker: AcquireWork: {} ({:?}); retrying",
                    e.message(),
                    e.code()
                );
                tokio::time::sleep(backoff(attempt)).await;
                attempt += 1;
                continue;
            }
            Err(e) => {
                return Err(CliError::failed(format!(
                    "AcquireWork refused ({:?}): {}",
                    e.code(),
                    e.message()
                )));
            }
        };
        let Some(item) = item else {
            if once {
                return Ok(());
            }
            continue;
        };
        let started = Instant::now();
        let (lease, positions) = (item.lease_id.clone(), item.positions);
        let expires = item.lease_expires_at_unix_ms;
        let evaluations = {
            let (stop, engines) = (Arc::clone(&stop), Arc::clone(&engines));
            tokio::task::spawn_blocking(move || evaluate(&item, &engines, &stop))
                .await
                .map_err(|e| CliError::failed(format!("the analysis failed: {e}")))?
        };
        let (evaluations, engine_id) = match evaluations {
            Ok(Some(e)) => e,
            // Stopped: the lease simply expires.
            Ok(None) => return Ok(()),
            Err(e) => {
                // A game this build cannot replay: leave it to another worker.
                eprintln!("arbiter worker: lease {lease}: cannot analyse the game: {e}");
                continue;
            }
        };
        let mut attempt = 0;
        let duplicate = loop {
            let mut req = tonic::Request::new(SubmitWorkRequest {
                lease_id: lease.clone(),
                evaluations: evaluations.clone(),
                engine_id: engine_id.clone(),
            });
            req.set_timeout(Duration::from_secs(30));
            match analysis.submit_work(req).await {
                Ok(r) => break Some(r.into_inner().duplicate),
                Err(e)
                    if transient(e.code())
                        && now_ms() < expires
                        && !stop.load(Ordering::Relaxed) =>
                {
                    tokio::time::sleep(backoff(attempt)).await;
                    attempt += 1;
                }
                Err(e) if e.code() == Code::FailedPrecondition || transient(e.code()) => {
                    eprintln!(
                        "arbiter worker: lease {lease}: not recorded: {}",
                        e.message()
                    );
                    break None;
                }
                Err(e) => {
                    return Err(CliError::failed(format!(
                        "SubmitWork refused ({:?}): {}",
                        e.code(),
                        e.message()
                    )));
                }
            }
        };
        if let Some(duplicate) = duplicate {
            done.fetch_add(1, Ordering::Relaxed);
            eprintln!(
                "arbiter worker: lease {lease}: {positions} positions in {} ms{}",
                started.elapsed().as_millis(),
                if duplicate { " (recorded before)" } else { "" }
            );
        }
    }
    Ok(())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The evaluations of a game and the engine's own name and version.
type Evaluated = (
    Vec<arbiter_client::proto::analysis::v1::PositionEvaluation>,
    String,
);

/// Every position of `item`'s game evaluated on this thread by the engine the job asked for,
/// in the documented order; `None` when stopped.
fn evaluate(
    item: &WorkItem,
    engines: &EngineRegistry,
    stop: &AtomicBool,
) -> Result<Option<Evaluated>, String> {
    let engine = engines.by_name(&item.engine).ok_or_else(|| {
        format!(
            "the job asks for engine {:?}, which this worker does not run (it runs {})",
            item.engine,
            engines.names().join(", ")
        )
    })?;
    let game = work_item_game(item)?;
    let ply = item.per_ply.unwrap_or_default();
    let limits = match (ply.depth, ply.nodes) {
        (d @ 1.., _) => Limits::depth(d),
        (_, n @ 1..) => Limits::nodes(n),
        _ => return Err("the item has no per-ply limit".into()),
    };
    let spec = JobSpec {
        games: vec![game.clone()],
        limits,
        hash_mib: (item.hash_mib as usize).clamp(1, 4096),
        engine: item.engine.clone(),
    };
    let time = arbiter_engine::SystemTime::new();
    match evaluations(&game, &spec, &engine, stop, &time, &mut || {}) {
        None => Ok(None),
        Some(Err(e)) => Err(e),
        Some(Ok((evals, id))) => Ok(Some((evals.iter().map(position_evaluation).collect(), id))),
    }
}
