//! Test support shared by Arbiter's crates: a real Redis in a container, through
//! testcontainers, that sets itself up; a TCP proxy that can lose a reply; and a gRPC server
//! under test on port 0 ([`grpc::TestServer`]).
//!
//! The tests use an image of their own, [`IMAGE`]:[`TAG`] (not the public `redis:7`, which a
//! machine may hold built with other settings). When it is missing, the first test that needs
//! it makes it, once per machine (other test processes wait on a lock):
//! 1. where a registry is reachable, the usual way: `docker pull redis:7`, tagged as ours;
//! 2. otherwise (CI here has no registry), `deploy/build-redis-image.sh` builds it from
//!    Debian's `redis-server` package.
//!
//! The container is started with explicit settings (append-only file, fsync on every write,
//! protected mode off), so either image behaves the same; a stopped and restarted container
//! keeps its data.
#![warn(missing_docs)]

pub mod grpc;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use testcontainers::core::{IntoContainerPort, WaitFor};
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, GenericImage, ImageExt};

/// The test image's name.
pub const IMAGE: &str = "arbiter-test/redis";
/// The test image's tag.
pub const TAG: &str = "7";

/// A running Redis.
pub struct Redis {
    /// The container (stopped and removed when dropped).
    pub container: ContainerAsync<GenericImage>,
    /// `redis://127.0.0.1:PORT`.
    pub url: String,
    /// The host port.
    pub port: u16,
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redis").field("url", &self.url).finish()
    }
}

/// A free local port (for a container whose port must stay the same across a restart).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free local port")
}

fn docker(args: &[&str]) -> bool {
    Command::new("docker")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn image_exists() -> bool {
    docker(&["image", "inspect", &format!("{IMAGE}:{TAG}")])
}

/// Holds a machine-wide lock (a directory) while it lives.
struct Lock(PathBuf);

impl Lock {
    fn take() -> Lock {
        let path = std::env::temp_dir().join("arbiter-test-redis-image.lock");
        let start = Instant::now();
        loop {
            match std::fs::create_dir(&path) {
                Ok(()) => return Lock(path),
                // A lock older than the longest build was left by a killed process.
                Err(_) if start.elapsed() > Duration::from_secs(600) => {
                    let _ = std::fs::remove_dir(&path);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Makes sure the test image exists (see the crate documentation).
pub fn ensure_image() {
    if image_exists() {
        return;
    }
    let _lock = Lock::take();
    if image_exists() {
        return;
    }
    if docker(&["pull", "redis:7"]) && docker(&["tag", "redis:7", &format!("{IMAGE}:{TAG}")]) {
        return;
    }
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/build-redis-image.sh");
    let status = Command::new("bash")
        .arg(&script)
        .env("REDIS_IMAGE", format!("{IMAGE}:{TAG}"))
        .status()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        status.success() && image_exists(),
        "building {IMAGE}:{TAG} with {} failed",
        script.display()
    );
}

async fn start(port: Option<u16>) -> Redis {
    start_with(port, &[]).await
}

async fn start_with(port: Option<u16>, extra: &[&str]) -> Redis {
    // Building may take a minute: keep it off the async workers.
    tokio::task::spawn_blocking(ensure_image)
        .await
        .expect("building the Redis image");
    let image = GenericImage::new(IMAGE, TAG)
        .with_exposed_port(6379.tcp())
        .with_wait_for(WaitFor::message_on_stdout("Ready to accept connections"));
    let mut cmd: Vec<String> = [
        "redis-server",
        "--protected-mode",
        "no",
        "--bind",
        "0.0.0.0",
        "--port",
        "6379",
        "--dir",
        "/data",
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
    ]
    .map(String::from)
    .into();
    cmd.extend(extra.iter().map(|a| (*a).to_owned()));
    let request = image.with_cmd(cmd);
    let request = match port {
        Some(p) => request.with_mapped_port(p, 6379.tcp()),
        None => request,
    };
    let container = request.start().await.expect("start the Redis container");
    let port = container
        .get_host_port_ipv4(6379.tcp())
        .await
        .expect("the container's port");
    Redis {
        container,
        url: format!("redis://127.0.0.1:{port}"),
        port,
    }
}

/// A fresh Redis on a free port.
pub async fn redis() -> Redis {
    start(None).await
}

/// A fresh Redis on host port `port` (which it keeps across a stop and start).
pub async fn redis_on(port: u16) -> Redis {
    start(Some(port)).await
}

/// A fresh Redis with extra `redis-server` arguments (`--requirepass`, `--maxmemory-policy`, …).
pub async fn redis_with(extra: &[&str]) -> Redis {
    start_with(None, extra).await
}

/// A TCP proxy in front of a server, for tests of lost replies: it forwards both ways, and when
/// told to, drops the next reply it sees from the server and cuts that connection (the client
/// then sees the request fail, although the server did the work).
#[derive(Debug)]
pub struct Proxy {
    /// The address clients connect to.
    pub addr: std::net::SocketAddr,
    drop_next: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Proxy {
    /// A proxy to `target`, on a free local port.
    pub async fn start(target: std::net::SocketAddr) -> Proxy {
        use std::sync::atomic::Ordering;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let addr = listener.local_addr().expect("the proxy's address");
        let drop_next = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&drop_next);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = tokio::net::TcpStream::connect(target).await else {
                    continue;
                };
                let flag = std::sync::Arc::clone(&flag);
                tokio::spawn(async move {
                    let (mut client_read, mut client_write) = client.into_split();
                    let (mut server_read, mut server_write) = server.into_split();
                    let upstream = tokio::spawn(async move {
                        let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
                    });
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        let n = match server_read.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        if flag.swap(false, Ordering::SeqCst) {
                            break; // the reply is lost, and the connection with it
                        }
                        if client_write.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                    upstream.abort();
                });
            }
        });
        Proxy { addr, drop_next }
    }

    /// Drops the next reply from the server (and that connection).
    pub fn drop_next_reply(&self) {
        self.drop_next
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }
}
