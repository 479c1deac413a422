//! The `arbiter bench` command: its arguments ([`BenchTarget`]) and the orchestration of each
//! bench ([`run`]): the server to load (the one named, or one embedded by the host program),
//! worker processes, the reference measured in the same run, and the report.
//!
//! This crate knows no service: a bench that starts its own server asks the program that runs
//! it (the [`Host`]: the `arbiter` binary built with its `bench` feature) for an embedded
//! server with the settings of an [`Embedded`], and for worker processes.

use arbiter_core::Variant;
use clap::Subcommand;
use std::future::Future;
use std::time::Duration;
use tonic::transport::Channel;

/// What `arbiter bench` measures, with its settings.
#[derive(Subcommand, Debug)]
pub enum BenchTarget {
    /// Batch jobs: positions/s through embedded servers with 1 and 2 batch workers, against
    /// the engine alone on one thread, in the same run.
    Jobs {
        /// Games in the job (random legal chess games).
        #[arg(long, default_value_t = 40)]
        games: usize,
        /// Moves per game.
        #[arg(long, default_value_t = 60)]
        plies: usize,
        /// Nodes per position.
        #[arg(long, default_value_t = 20_000)]
        nodes: u64,
        /// Seed of the games.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Queue the job in this Redis and analyse it in `arbiter worker` processes (1, then
        /// 2, each with one worker), instead of in the embedded server's own threads.
        #[arg(long, conflicts_with = "remote")]
        redis_url: Option<String>,
        /// Analyse the job in remote workers over gRPC (`arbiter worker --server`, 1 then 2
        /// processes with one thread each), the embedded server analysing nothing itself.
        #[arg(long)]
        remote: bool,
        /// Search with this external UCI engine (`NAME=PATH[,KEY=VALUE]...`, as the server's
        /// `--engine`): the job names it, and the reference is the engine program alone on the
        /// same positions, driven over UCI with the least code.
        #[arg(
            long,
            value_name = "NAME=PATH[,KEY=VALUE]...",
            conflicts_with = "remote"
        )]
        engine: Option<String>,
    },
    /// Live analysis: time to the first info, and cancel latency (one engine thread).
    Analysis {
        /// Server to measure (its analysis service should have one engine thread:
        /// `--analysis-threads 1`); without it an embedded server with one is started.
        #[arg(long)]
        addr: Option<String>,
        /// Trials of each measurement.
        #[arg(long, default_value_t = 200)]
        trials: usize,
        /// How long the endless search runs before it is cancelled, in ms.
        #[arg(long, default_value_t = 20)]
        run_ms: u64,
    },
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
    /// Drive hosted matches: many in parallel, random legal moves through MakeMove.
    Matches {
        /// Server to load; without it an embedded server is started in this process.
        #[arg(long)]
        addr: Option<String>,
        /// For the embedded server: keep matches in Redis at this URL (else in process).
        #[arg(long)]
        redis_url: Option<String>,
        /// The variant played (bughouse: two-board matches, two clients each).
        #[arg(long, default_value = "bughouse", value_parser = parse_variant)]
        variant: Variant,
        /// Matches played at once.
        #[arg(long, default_value_t = 64)]
        matches: usize,
        /// Seconds to play.
        #[arg(long, default_value_t = 10.0)]
        duration_secs: f64,
        /// The platform token, sent in x-api-key, when the server has one (for creating matches).
        #[arg(long, env = "ARBITER_PLATFORM_TOKEN", hide_env_values = true)]
        platform_token: Option<String>,
        /// The matches' time control (empty: no clocks).
        #[arg(long, default_value = "")]
        time_control: String,
    },
    /// Hosted games with clocks under an open-loop move rate, against the same load without
    /// clocks, and the delay of flags falling with no move sent.
    Clocks {
        /// Server to load (run the bench as a separate process on the server's machine); without
        /// it an embedded server is started in this process.
        #[arg(long)]
        addr: Option<String>,
        /// For the embedded server: keep matches in Redis at this URL.
        #[arg(long)]
        redis_url: Option<String>,
        /// Games moved by the load.
        #[arg(long, default_value_t = 10_000)]
        games: usize,
        /// Moves sent per second.
        #[arg(long, default_value_t = 2_000.0)]
        rate: f64,
        /// Seconds of load for each kind (without and with clocks), in alternated stretches.
        #[arg(long, default_value_t = 30.0)]
        duration_secs: f64,
        /// The time control of the clocked games.
        #[arg(long, default_value = "30+0")]
        time_control: String,
        /// Games left to flag during the clocked run.
        #[arg(long, default_value_t = 500)]
        flags: usize,
        /// The platform token, sent in x-api-key, when the server has one.
        #[arg(long, env = "ARBITER_PLATFORM_TOKEN", hide_env_values = true)]
        platform_token: Option<String>,
    },
    /// A platform's load on a whole deployment: games with clocks moved at an open-loop rate,
    /// a watcher on each, games left to flag, and pool joins, all at once (see
    /// tools/system-load.sh, which runs it against the compose topology and `arbiter serve`).
    System {
        /// The deployment's address (the compose proxy, or an `arbiter serve`).
        #[arg(long)]
        addr: String,
        /// Games moved by the load, each with a watcher.
        #[arg(long, default_value_t = 2_000)]
        games: usize,
        /// Moves per second per game.
        #[arg(long, default_value_t = 1.0)]
        moves_per_game_per_sec: f64,
        /// Seconds of load.
        #[arg(long, default_value_t = 300.0)]
        duration_secs: f64,
        /// The time control of the moved games (and of the pool joined).
        #[arg(long, default_value = "10+5")]
        time_control: String,
        /// Games left to flag during the run.
        #[arg(long, default_value_t = 200)]
        flags: usize,
        /// Players joining the pool per second.
        #[arg(long, default_value_t = 2.0)]
        joins_per_sec: f64,
        /// HTTP/2 connections the watch streams are spread over.
        #[arg(long, default_value_t = 32)]
        connections: usize,
        /// The platform token, sent in x-api-key, when the server has one.
        #[arg(long, env = "ARBITER_PLATFORM_TOKEN", hide_env_values = true)]
        platform_token: Option<String>,
        /// TLS to the deployment (an `https://` address): its CA, and a client certificate
        /// under mutual TLS.
        #[command(flatten)]
        tls: arbiter_kit::tls::ClientTlsArgs,
    },
}

/// The settings of an embedded server a bench asks its [`Host`] for; `None` keeps the
/// server's default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Embedded {
    /// Engine threads of the live analysis pool.
    pub analysis_threads: Option<usize>,
    /// In-process batch workers.
    pub batch_workers: Option<usize>,
    /// Keep batch jobs in the Redis at this URL (analysed by worker processes).
    pub jobs_redis: Option<String>,
    /// Keep hosted matches in the Redis at this URL.
    pub matches_redis: Option<String>,
    /// External UCI engines of the analysis service (`--engine` texts).
    pub engines: Vec<String>,
}

/// What a bench needs from the program that runs it.
pub trait Host {
    /// A running embedded server.
    type Server;
    /// Starts a server with `settings` on a free loopback port: its URL, and the server.
    fn serve(
        &self,
        settings: &Embedded,
    ) -> impl Future<Output = Result<(String, Self::Server), String>>;
    /// Stops a server started by [`Host::serve`] and waits for it.
    fn stop(&self, server: Self::Server) -> impl Future<Output = ()>;
    /// Starts a worker process with one batch worker on the Redis at `url`.
    fn spawn_worker(&self, url: &str) -> Result<std::process::Child, String>;
    /// Starts a remote worker process (one thread) taking work from the server at `url` over
    /// gRPC.
    fn spawn_remote_worker(&self, url: &str) -> Result<std::process::Child, String>;
}

fn parse_variant(s: &str) -> Result<Variant, String> {
    s.parse::<Variant>().map_err(|e| e.to_string())
}

/// A duration given in seconds on the command line: finite and not negative.
fn seconds(flag: &str, secs: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(secs)
        .map_err(|_| format!("{flag} {secs}: give a number of seconds, 0 or more"))
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

async fn connect(url: &str) -> Result<Channel, String> {
    connect_with(url, None).await
}

/// [`connect`] over TLS when `tls` is given.
async fn connect_with(
    url: &str,
    tls: Option<&tonic::transport::ClientTlsConfig>,
) -> Result<Channel, String> {
    let mut endpoint = tonic::transport::Endpoint::from_shared(url.to_owned())
        .map_err(|e| format!("--addr {url}: {e}"))?;
    if let Some(tls) = tls {
        endpoint = endpoint
            .tls_config(tls.clone())
            .map_err(|e| format!("--addr {url}: {e}"))?;
    }
    endpoint
        .connect()
        .await
        .map_err(|e| format!("--addr {url}: {e}"))
}

/// Runs `work` against `addr`, or against a server embedded by `host` with `settings` when
/// there is none, once the server reports `service` as serving (at most 30 s: a Redis may
/// still be starting).
async fn against<H, T, F, Fut>(
    host: &H,
    addr: Option<String>,
    service: &str,
    settings: Embedded,
    work: F,
) -> Result<T, String>
where
    H: Host,
    F: FnOnce(Channel) -> Fut,
    Fut: Future<Output = Result<T, tonic::Status>>,
{
    let (url, server) = match addr {
        Some(url) => (url, None),
        None => {
            let (url, server) = host.serve(&settings).await?;
            (url, Some(server))
        }
    };
    let result = async {
        let channel = connect(&url).await?;
        match crate::wait_until_serving(channel.clone(), service, Duration::from_secs(30)).await {
            Ok(()) => work(channel)
                .await
                .map_err(|e| format!("bench failed: {e}")),
            Err(e) => Err(format!("bench not started: {e}")),
        }
    }
    .await;
    if let Some(server) = server {
        host.stop(server).await;
    }
    result
}

/// Where a match bench's games are kept, as its report names it, and the embedded server it
/// asks for when no `addr` is given (matches in the Redis at `redis_url`, else in process).
fn match_server(addr: Option<&str>, redis_url: Option<String>) -> (&'static str, Embedded) {
    let store = match (addr, &redis_url) {
        (Some(_), _) => "remote",
        (None, Some(_)) => "redis",
        (None, None) => "in-process",
    };
    let config = Embedded {
        matches_redis: redis_url,
        ..Embedded::default()
    };
    (store, config)
}

/// Runs `work` against the match service at `addr`, or, without one, against a match service
/// `host` embeds (its matches in Redis at `redis_url`, or in process); the result, with where
/// the matches were kept (`remote`, `redis`, `in-process`).
fn against_matches<H, T, F, Fut>(
    host: &H,
    addr: Option<String>,
    redis_url: Option<String>,
    work: F,
) -> Result<(T, &'static str), String>
where
    H: Host,
    F: FnOnce(Channel) -> Fut,
    Fut: Future<Output = Result<T, tonic::Status>>,
{
    let (store, config) = match_server(addr.as_deref(), redis_url);
    runtime()?.block_on(async {
        let result = against(host, addr, "arbiter.matches.v1.MatchService", config, work).await?;
        Ok((result, store))
    })
}

/// One job through an embedded server whose own batch workers analyse nothing (0 of them),
/// served by `workers` remote worker processes over gRPC: positions per second.
async fn remote_run<H: Host>(
    host: &H,
    list: &[crate::jobs::Moves],
    nodes: u64,
    workers: usize,
    run: u128,
) -> Result<crate::jobs::ServiceRun, String> {
    let (url, server) = host
        .serve(&Embedded {
            batch_workers: Some(0),
            ..Embedded::default()
        })
        .await?;
    let result = async {
        let channel = connect(&url).await?;
        crate::wait_until_serving(
            channel.clone(),
            "arbiter.analysis.v1.AnalysisService",
            Duration::from_secs(30),
        )
        .await
        .map_err(|e| format!("bench not started: {e}"))?;
        let mut processes = Vec::new();
        for _ in 0..workers {
            processes.push(host.spawn_remote_worker(&url)?);
        }
        let rate =
            crate::jobs::service(channel, list, nodes, "", &format!("{run}-remote-{workers}"))
                .await
                .map_err(|e| format!("bench failed: {e}"));
        for mut p in processes {
            let _ = p.kill();
            let _ = p.wait();
        }
        rate
    }
    .await;
    host.stop(server).await;
    result
}

/// Runs the bench `target` asks for, on `host`'s embedded servers when it names no server, and
/// returns its report.
pub fn run<H: Host>(target: BenchTarget, host: &H) -> Result<String, String> {
    match target {
        BenchTarget::Jobs {
            games,
            plies,
            nodes,
            seed,
            redis_url,
            remote,
            engine,
        } => {
            let cfg = crate::jobs::JobsBenchConfig {
                games: games.clamp(1, 1000),
                plies: plies.clamp(1, 1000),
                nodes: nodes.clamp(1, 10_000_000),
                seed,
            };
            let list = crate::jobs::games(&cfg);
            // An external engine: its name (what the job asks for) and its program.
            let external = engine
                .as_deref()
                .map(|spec| {
                    let (name, rest) = spec
                        .split_once('=')
                        .ok_or_else(|| format!("--engine {spec}: expected NAME=PATH"))?;
                    let path = rest.split(',').next().unwrap_or_default();
                    Ok::<_, String>((name.to_owned(), path.to_owned()))
                })
                .transpose()?;
            let reference = |list: &[crate::jobs::Moves]| match &external {
                None => Ok(crate::jobs::raw(list, cfg.nodes)),
                Some((_, path)) => crate::jobs::raw_uci(list, cfg.nodes, path),
            };
            // The reference is measured before and after the service runs, and averaged, so
            // that a drift of the machine's speed during the run cancels out.
            let raw_before = reference(&list)?;
            let runtime = runtime()?;
            let mut rates = Vec::new();
            // Unique per run: a job store in Redis outlives the run.
            let run = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            let job_engine = external.as_ref().map_or("", |(name, _)| name.as_str());
            for workers in [1, 2] {
                // With Redis, the workers are processes of their own.
                let processes = match &redis_url {
                    None => Vec::new(),
                    Some(url) => (0..workers)
                        .map(|_| host.spawn_worker(url))
                        .collect::<Result<Vec<_>, _>>()?,
                };
                let rate = if remote {
                    runtime.block_on(remote_run(host, &list, cfg.nodes, workers, run))
                } else {
                    runtime.block_on(against(
                        host,
                        None,
                        "arbiter.analysis.v1.AnalysisService",
                        Embedded {
                            batch_workers: Some(if redis_url.is_some() { 0 } else { workers }),
                            jobs_redis: redis_url.clone(),
                            engines: engine.iter().cloned().collect(),
                            ..Embedded::default()
                        },
                        |channel| {
                            let list = list.clone();
                            async move {
                                crate::jobs::service(
                                    channel,
                                    &list,
                                    cfg.nodes,
                                    job_engine,
                                    &format!("{run}-{workers}"),
                                )
                                .await
                            }
                        },
                    ))
                };
                for mut p in processes {
                    let _ = p.kill();
                    let _ = p.wait();
                }
                rates.push(rate?);
            }
            let raw_after = reference(&list)?;
            let mode = if remote {
                crate::jobs::Mode::RemoteWorkers
            } else if redis_url.is_some() {
                crate::jobs::Mode::RedisProcesses
            } else {
                crate::jobs::Mode::InProcess
            };
            Ok(crate::jobs::report(
                &cfg,
                mode,
                crate::jobs::positions(&list),
                [raw_before, raw_after],
                rates[0],
                rates[1],
            ))
        }
        BenchTarget::Analysis {
            addr,
            trials,
            run_ms,
        } => {
            let cfg = crate::analysis::AnalysisBenchConfig {
                trials: trials.clamp(1, 100_000),
                run_before_cancel: Duration::from_millis(run_ms),
            };
            runtime()?.block_on(async {
                let rows = against(
                    host,
                    addr,
                    "arbiter.analysis.v1.AnalysisService",
                    Embedded {
                        analysis_threads: Some(1),
                        ..Embedded::default()
                    },
                    |channel| {
                        let cfg = cfg.clone();
                        async move { crate::analysis::run(channel, &cfg).await }
                    },
                )
                .await?;
                Ok(crate::analysis::report(&rows, &cfg))
            })
        }
        BenchTarget::Rules {
            addr,
            duration_secs,
            concurrency,
            streams,
        } => {
            let cfg = crate::rules::BenchConfig {
                duration: seconds("--duration-secs", duration_secs)?,
                concurrency,
                streams,
            };
            runtime()?.block_on(async {
                let phases = against(
                    host,
                    addr,
                    "arbiter.rules.v1.RulesService",
                    Embedded::default(),
                    |channel| {
                        let cfg = cfg.clone();
                        async move { crate::rules::run(channel, &cfg).await }
                    },
                )
                .await?;
                Ok(crate::rules::report(&phases, &cfg))
            })
        }
        BenchTarget::Matches {
            addr,
            redis_url,
            variant,
            matches,
            duration_secs,
            platform_token,
            time_control,
        } => {
            let cfg = crate::matches::MatchBenchConfig {
                duration: seconds("--duration-secs", duration_secs)?,
                matches,
                variant,
                platform_token,
                time_control,
            };
            let (result, store) = against_matches(host, addr, redis_url, |channel| async {
                crate::matches::run(channel, &cfg).await
            })?;
            Ok(crate::matches::report(&result, &cfg, store))
        }
        BenchTarget::System {
            addr,
            games,
            moves_per_game_per_sec,
            duration_secs,
            time_control,
            flags,
            joins_per_sec,
            connections,
            platform_token,
            tls,
        } => {
            let tls = match tls.client_tls().map_err(|e| e.to_string())? {
                Some(t) => Some(t.config().map_err(|e| e.to_string())?),
                None => None,
            };
            let cfg = crate::system::SystemBenchConfig {
                games: games.max(1),
                moves_per_game_per_sec,
                duration: seconds("--duration-secs", duration_secs)?,
                time_control,
                flags,
                joins_per_sec,
                platform_token,
            };
            runtime()?.block_on(async {
                let channel = connect_with(&addr, tls.as_ref()).await?;
                // The whole process's health: behind the compose proxy, health calls reach a
                // rules replica, which knows no other service.
                crate::wait_until_serving(channel.clone(), "", Duration::from_secs(60))
                    .await
                    .map_err(|e| format!("bench not started: {e}"))?;
                let mut extra = Vec::new();
                for _ in 1..connections.max(1) {
                    extra.push(connect_with(&addr, tls.as_ref()).await?);
                }
                let result = crate::system::run(channel, extra, &cfg)
                    .await
                    .map_err(|e| format!("bench failed: {e}"))?;
                Ok(crate::system::report(&result, &cfg, &addr))
            })
        }
        BenchTarget::Clocks {
            addr,
            redis_url,
            games,
            rate,
            duration_secs,
            time_control,
            flags,
            platform_token,
        } => {
            let cfg = crate::clocks::ClockBenchConfig {
                games: games.max(1),
                rate,
                duration: seconds("--duration-secs", duration_secs)?,
                time_control,
                flags,
                platform_token,
            };
            let (result, store) = against_matches(host, addr, redis_url, |channel| async {
                crate::clocks::run(channel, &cfg).await
            })?;
            Ok(crate::clocks::report(&result, &cfg, store))
        }
    }
}
