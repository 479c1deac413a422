//! Test support shared by Arbiter's crates: a real Redis in a container, through
//! testcontainers, that sets itself up; a TCP proxy that can lose a reply; and a gRPC server
//! under test on port 0 ([`grpc::TestServer`]); a Redis Cluster of local `redis-server` processes
//! ([`cluster::RedisCluster`]).
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
//!
//! [`redis()`] also serves TLS with client certificates (a certificate authority made for the
//! container with rcgen) and loads the services' minimal ACL (`deploy/redis/acl.conf`):
//! [`Redis::secure`] is the [`RedisConfig`] of one service's ACL user over TLS, which the stores'
//! tests use. The plaintext port's `default` user has every right, for tests that inspect or
//! break the data behind a service's back.
#![warn(missing_docs)]

pub mod cluster;
pub mod grpc;
pub mod metrics;

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

pub use arbiter_redis_conn::RedisConfig;

/// A running Redis.
pub struct Redis {
    /// The container (stopped and removed when dropped).
    pub container: ContainerAsync<GenericImage>,
    /// `redis://127.0.0.1:PORT` (plaintext, the all-powerful `default` user).
    pub url: String,
    /// The host port.
    pub port: u16,
    /// The TLS port and its client settings, where this Redis has them ([`redis()`]).
    secure: Option<Secure>,
}

/// The TLS side of a test Redis.
struct Secure {
    /// `rediss://127.0.0.1:PORT`.
    url: String,
    /// The CA that signed Redis's certificate and the client's.
    ca_pem: Vec<u8>,
    /// A client certificate and key (Redis runs with `tls-auth-clients yes`).
    client: (Vec<u8>, Vec<u8>),
}

/// The ACL users of `deploy/redis/acl.conf`, one per service, and the union `arbiter`.
pub const ACL_USERS: [&str; 5] = [
    "arbiter-matches",
    "arbiter-clock",
    "arbiter-matchmaking",
    "arbiter-analysis",
    "arbiter",
];

/// The test password of an ACL user.
pub fn acl_password(user: &str) -> String {
    format!("test-password-of-{user}")
}

/// The ACL template with the comments dropped and each user's test password added, plus a
/// `default` user with every right and no password.
pub(crate) fn render_acl() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/redis/acl.conf");
    let template = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut out = String::from("user default on nopass ~* &* +@all\n");
    for line in template.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let user = line
            .split_whitespace()
            .nth(1)
            .expect("a user line names its user");
        assert!(ACL_USERS.contains(&user), "{user} is not in ACL_USERS");
        out.push_str(&format!("{line} >{}\n", acl_password(user)));
    }
    out
}

/// A CA, a certificate for Redis at 127.0.0.1 and a client certificate, as PEM:
/// (ca, server cert, server key, client cert, client key).
fn certificates() -> [Vec<u8>; 5] {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "arbiter test Redis CA");
    let key = rcgen::KeyPair::generate().expect("a CA key");
    let issuer = rcgen::CertifiedIssuer::self_signed(params, key).expect("the CA certificate");
    let issue = |names: Vec<String>| {
        let key = rcgen::KeyPair::generate().expect("a key");
        let cert = rcgen::CertificateParams::new(names)
            .expect("certificate parameters")
            .signed_by(&key, &issuer)
            .expect("a certificate");
        (cert.pem().into_bytes(), key.serialize_pem().into_bytes())
    };
    let (server_cert, server_key) = issue(vec!["127.0.0.1".into(), "localhost".into()]);
    let (client_cert, client_key) = issue(vec!["arbiter-test-client".into()]);
    [
        issuer.pem().into_bytes(),
        server_cert,
        server_key,
        client_cert,
        client_key,
    ]
}

impl Redis {
    /// The configuration of the ACL user `user` (one of [`ACL_USERS`]) over TLS, with the
    /// container's CA and a client certificate.
    ///
    /// # Panics
    /// On a Redis without TLS ([`redis_on`], [`redis_with`]), or an unknown user.
    pub fn secure(&self, user: &str) -> RedisConfig {
        assert!(ACL_USERS.contains(&user), "{user} is not an ACL user");
        let secure = self
            .secure
            .as_ref()
            .expect("this Redis has no TLS port: start it with arbiter_testkit::redis()");
        RedisConfig {
            url: secure.url.clone(),
            user: Some(user.to_owned()),
            password: Some(acl_password(user)),
            tls: arbiter_redis_conn::RedisTls {
                ca_pem: Some(secure.ca_pem.clone()),
                client: Some(secure.client.clone()),
            },
        }
    }

    /// The PEM files of [`Redis::secure`] (CA, client certificate, client key) written into
    /// `dir`, for a binary's `--redis-ca-file`, `--redis-cert-file` and `--redis-key-file`.
    pub fn write_tls_files(&self, dir: &std::path::Path) -> [PathBuf; 3] {
        let secure = self.secure.as_ref().expect("this Redis has no TLS port");
        let files = [
            dir.join("redis-ca.pem"),
            dir.join("redis-client-cert.pem"),
            dir.join("redis-client-key.pem"),
        ];
        for (file, pem) in files
            .iter()
            .zip([&secure.ca_pem, &secure.client.0, &secure.client.1])
        {
            std::fs::write(file, pem).expect("write a PEM file");
        }
        files
    }

    /// The `rediss://` URL of the TLS port.
    pub fn tls_url(&self) -> &str {
        &self
            .secure
            .as_ref()
            .expect("this Redis has no TLS port")
            .url
    }
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
    start_with(port, &[], false).await
}

async fn start_with(port: Option<u16>, extra: &[&str], secure: bool) -> Redis {
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
    let mut tls = None;
    let image = if secure {
        let [ca, server_cert, server_key, client_cert, client_key] = certificates();
        cmd.extend(
            [
                "--tls-port",
                "6380",
                "--tls-cert-file",
                "/tls/redis-cert.pem",
                "--tls-key-file",
                "/tls/redis-key.pem",
                "--tls-ca-cert-file",
                "/tls/ca.pem",
                "--tls-auth-clients",
                "yes",
                "--aclfile",
                "/tls/users.acl",
            ]
            .map(String::from),
        );
        let image = image
            .with_exposed_port(6380.tcp())
            .with_copy_to("/tls/ca.pem", ca.clone())
            .with_copy_to("/tls/redis-cert.pem", server_cert)
            .with_copy_to("/tls/redis-key.pem", server_key)
            .with_copy_to("/tls/users.acl", render_acl().into_bytes());
        tls = Some((ca, (client_cert, client_key)));
        image
    } else {
        image.into()
    };
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
    let secure = match tls {
        Some((ca_pem, client)) => {
            let tls_port = container
                .get_host_port_ipv4(6380.tcp())
                .await
                .expect("the container's TLS port");
            Some(Secure {
                url: format!("rediss://127.0.0.1:{tls_port}"),
                ca_pem,
                client,
            })
        }
        None => None,
    };
    Redis {
        container,
        url: format!("redis://127.0.0.1:{port}"),
        port,
        secure,
    }
}

/// A fresh Redis on a free port, with a TLS port and the services' ACL users besides
/// ([`Redis::secure`]).
pub async fn redis() -> Redis {
    start_with(None, &[], true).await
}

/// A fresh Redis on host port `port` (which it keeps across a stop and start).
pub async fn redis_on(port: u16) -> Redis {
    start(Some(port)).await
}

/// A fresh Redis with extra `redis-server` arguments (`--requirepass`, `--maxmemory-policy`, …).
pub async fn redis_with(extra: &[&str]) -> Redis {
    start_with(None, extra, false).await
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
