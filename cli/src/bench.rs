//! The host of `arbiter bench` (the `bench` feature): embedded servers from the composition
//! root, and `arbiter worker` processes of this same binary. The benches themselves are in
//! `arbiter-bench`.

use arbiter_bench::command::{Embedded, Host};

/// Servers in this process, workers as processes of this binary.
pub struct Embedder;

/// A server started by [`Embedder`]: how to stop it, and its task.
pub struct Running {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), arbiter_kit::ServeError>>,
}

/// The server configuration for `settings`: the defaults, with what the bench asks for.
fn config(settings: &Embedded) -> Result<arbiter_server::ServerConfig, String> {
    let mut config = arbiter_server::ServerConfig::default();
    if let Some(threads) = settings.analysis_threads {
        config.analysis.pool.threads = threads;
    }
    if let Some(workers) = settings.batch_workers {
        config.analysis.batch.workers = workers;
    }
    if let Some(url) = &settings.jobs_redis {
        config.analysis.redis = Some(arbiter_analysis::RedisConfig::plain(url));
    }
    if let Some(url) = &settings.matches_redis {
        config.matches.store = arbiter_server::StoreConfig::redis(url.clone());
    }
    config.analysis.engines.engines = settings
        .engines
        .iter()
        .map(|spec| arbiter_uci_client::EngineSpec::parse(spec))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("--engine: {e}"))?;
    Ok(config)
}

impl Host for Embedder {
    type Server = Running;

    async fn serve(&self, settings: &Embedded) -> Result<(String, Running), String> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("bind: {e}"))?;
        let url = format!(
            "http://{}",
            listener.local_addr().map_err(|e| e.to_string())?
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(arbiter_server::serve(listener, config(settings)?, async {
            let _ = stopped.await;
        }));
        Ok((url, Running { stop, task }))
    }

    async fn stop(&self, server: Running) {
        let _ = server.stop.send(());
        let _ = server.task.await;
    }

    /// An `arbiter worker` process on the Redis at `url`, with one worker, quiet.
    fn spawn_worker(&self, url: &str) -> Result<std::process::Child, String> {
        let exe = std::env::current_exe().map_err(|e| format!("this program: {e}"))?;
        std::process::Command::new(exe)
            .args(["worker", "--workers", "1", "--redis-url", url])
            .env("RUST_LOG", "warn")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start a worker process: {e}"))
    }

    /// An `arbiter worker --server` process taking work from `url` over gRPC, one thread, quiet.
    fn spawn_remote_worker(&self, url: &str) -> Result<std::process::Child, String> {
        let exe = std::env::current_exe().map_err(|e| format!("this program: {e}"))?;
        std::process::Command::new(exe)
            .args(["worker", "--server", url, "--threads", "1"])
            .env("RUST_LOG", "warn")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start a remote worker process: {e}"))
    }
}
