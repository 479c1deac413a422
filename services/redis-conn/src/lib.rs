//! # arbiter-redis-conn
//!
//! How Arbiter's services with state reach Redis (the match, clock, matchmaking and analysis
//! services and the batch workers): the URL, ACL user, password and TLS files, read the same way
//! by every service ([`RedisArgs`], [`RedisTlsArgs`], flags and environment, resolved in `main`
//! into a [`RedisConfig`]) and kept out of logs ([`redact_url`]), and a connection made in the background and retried until Redis
//! answers ([`connect_in_background`], [`wait_connected`]), so that a service starts, and
//! reports `NOT_SERVING`, before Redis is up. [`script`]: named arguments for Lua scripts; [`packed`]: the packed-list encoding every store uses.
#![warn(missing_docs)]

pub mod metered;
pub mod packed;
pub mod script;

pub use metered::Connection;

use arbiter_kit::retry::{Backoff, RetryPolicy};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::time::Duration;

/// `url` with the password of its user information replaced by `***` (for logs).
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rsplit_once('@') {
        Some((user_info, host)) => {
            let user = user_info.split_once(':').map_or(user_info, |(u, _)| u);
            format!("{scheme}://{user}:***@{host}{}", &rest[authority_end..])
        }
        None => url.to_owned(),
    }
}

/// TLS to Redis (a `rediss://` URL): the certificate authority that signed the server's
/// certificate (without one, the system's roots) and, for Redis's `tls-auth-clients`, a client
/// certificate and key. All PEM, read once at start: a rotated CA or client certificate is
/// picked up by a restart (a rolling one; see docs/security.md).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct RedisTls {
    /// The CA certificates (PEM) that Redis's certificate must chain to.
    pub ca_pem: Option<Vec<u8>>,
    /// A client certificate chain and its private key (PEM), for mutual TLS.
    pub client: Option<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for RedisTls {
    /// Never shows the private key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTls")
            .field("ca", &self.ca_pem.as_ref().map(|_| "PEM"))
            .field("client_certificate", &self.client.is_some())
            .finish()
    }
}

/// How to reach Redis.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisConfig {
    /// `redis://host:port/db` or `rediss://host:port/db` (TLS), maybe with a user (and password)
    /// in it.
    pub url: String,
    /// An ACL user name that replaces the URL's.
    pub user: Option<String>,
    /// A password that replaces the URL's (read from a file or the environment).
    pub password: Option<String>,
    /// TLS settings beyond the URL's scheme (a CA, a client certificate); they need `rediss://`.
    pub tls: RedisTls,
}

impl std::fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &redact_url(&self.url))
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("tls", &self.tls)
            .finish()
    }
}

impl From<&str> for RedisConfig {
    /// A URL alone: its own user and password, no CA beyond the system's.
    fn from(url: &str) -> RedisConfig {
        RedisConfig::plain(url)
    }
}

impl From<&String> for RedisConfig {
    fn from(url: &String) -> RedisConfig {
        RedisConfig::plain(url)
    }
}

impl From<&RedisConfig> for RedisConfig {
    fn from(config: &RedisConfig) -> RedisConfig {
        config.clone()
    }
}

impl RedisConfig {
    /// A URL alone (its own user and password; for `rediss://`, the system's roots).
    pub fn plain(url: &str) -> RedisConfig {
        RedisConfig {
            url: url.to_owned(),
            user: None,
            password: None,
            tls: RedisTls::default(),
        }
    }

    /// Whether the URL asks for TLS (`rediss://`).
    pub fn is_tls(&self) -> bool {
        self.url.starts_with("rediss://")
    }

    /// The client for this configuration (no connection yet). TLS uses the process's rustls
    /// crypto provider, the one the gRPC servers and clients use
    /// (`arbiter_kit::tls::install_crypto_provider`).
    pub fn client(&self) -> Result<redis::Client, String> {
        use redis::IntoConnectionInfo;
        let mut info = self
            .url
            .as_str()
            .into_connection_info()
            .map_err(|e| format!("bad Redis URL {}: {e}", redact_url(&self.url)))?;
        if let Some(user) = &self.user {
            info.redis.username = Some(user.clone());
        }
        if let Some(password) = &self.password {
            info.redis.password = Some(password.clone());
        }
        let wants_tls = self.tls.ca_pem.is_some() || self.tls.client.is_some();
        if !self.is_tls() {
            if wants_tls {
                return Err(format!(
                    "a Redis CA or client certificate needs a rediss:// URL, not {}",
                    redact_url(&self.url)
                ));
            }
            return redis::Client::open(info).map_err(|e| e.to_string());
        }
        let certificates = redis::TlsCertificates {
            client_tls: self
                .tls
                .client
                .as_ref()
                .map(|(cert, key)| redis::ClientTlsConfig {
                    client_cert: cert.clone(),
                    client_key: key.clone(),
                }),
            root_cert: self.tls.ca_pem.clone(),
        };
        redis::Client::build_with_tls(info, certificates)
            .map_err(|e| format!("Redis TLS settings: {e}"))
    }
}

/// Where a service that runs alone keeps its state (`--redis-url`, `--redis-password-file`,
/// and the TLS and ACL flags of [`RedisTlsArgs`]).
#[derive(clap::Args, Clone)]
pub struct RedisArgs {
    /// Keep state in Redis at this URL (`redis://host:6379/0`, or `rediss://host:6380/0` for
    /// TLS); without it, state is kept in this process.
    #[arg(long, env = "ARBITER_REDIS_URL", hide_env_values = true)]
    pub redis_url: Option<String>,
    /// A file holding the Redis password.
    #[arg(long, env = "ARBITER_REDIS_PASSWORD_FILE")]
    pub redis_password_file: Option<std::path::PathBuf>,
    /// The ACL user and TLS files.
    #[command(flatten)]
    pub tls: RedisTlsArgs,
}

impl std::fmt::Debug for RedisArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisArgs")
            .field("redis_url", &self.redis_url.as_deref().map(redact_url))
            .field("redis_password_file", &self.redis_password_file)
            .field("tls", &self.tls)
            .finish()
    }
}

/// The Redis ACL user and TLS files, shared by every service's Redis flags.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct RedisTlsArgs {
    /// The Redis ACL user to log in as (replaces a user in the URL); docs/security.md lists the
    /// minimal ACL of each service.
    #[arg(long, env = "ARBITER_REDIS_USER")]
    pub redis_user: Option<String>,
    /// A PEM file of the CA that signed Redis's certificate (with a rediss:// URL; without it,
    /// the system's roots).
    #[arg(long, env = "ARBITER_REDIS_CA_FILE")]
    pub redis_ca_file: Option<std::path::PathBuf>,
    /// A PEM client certificate for Redis (its `tls-auth-clients yes`); needs --redis-key-file.
    #[arg(long, env = "ARBITER_REDIS_CERT_FILE", requires = "redis_key_file")]
    pub redis_cert_file: Option<std::path::PathBuf>,
    /// The PEM private key of --redis-cert-file.
    #[arg(long, env = "ARBITER_REDIS_KEY_FILE", requires = "redis_cert_file")]
    pub redis_key_file: Option<std::path::PathBuf>,
}

fn read_file(path: &std::path::Path, flag: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("--{flag} {}: {e}", path.display()))
}

impl RedisTlsArgs {
    /// `config` with this user and these TLS files (read now). Refuses TLS files with a
    /// `redis://` URL, which would silently ignore them.
    pub fn apply(&self, mut config: RedisConfig) -> Result<RedisConfig, String> {
        if let Some(user) = &self.redis_user {
            config.user = Some(user.clone());
        }
        if let Some(path) = &self.redis_ca_file {
            config.tls.ca_pem = Some(read_file(path, "redis-ca-file")?);
        }
        if let (Some(cert), Some(key)) = (&self.redis_cert_file, &self.redis_key_file) {
            config.tls.client = Some((
                read_file(cert, "redis-cert-file")?,
                read_file(key, "redis-key-file")?,
            ));
        }
        // Building the client checks the URL and the PEM now, in `main`, not at first use.
        config.client()?;
        Ok(config)
    }
}

impl RedisArgs {
    /// The Redis configuration, reading the password and TLS files.
    pub fn load(&self) -> Result<Option<RedisConfig>, String> {
        let Some(url) = &self.redis_url else {
            return Ok(None);
        };
        let password = match &self.redis_password_file {
            Some(path) => Some(
                std::fs::read_to_string(path)
                    .map_err(|e| format!("--redis-password-file {}: {e}", path.display()))?
                    .trim()
                    .to_owned(),
            ),
            None => None,
        };
        let config = RedisConfig {
            password,
            ..RedisConfig::plain(url)
        };
        self.tls.apply(config).map(Some)
    }
}

/// A Redis connection that a background task establishes (retrying with backoff up to 5 s):
/// empty until it has connected, then a [`ConnectionManager`] that reconnects by itself (its
/// round trips measured under `what`: [`Connection`]), with
/// 2 s connection and response timeouts. `scripts` are loaded up front, so that no change pays
/// a `NOSCRIPT` round trip (and a lost reply is the change's own); after a Redis restart the
/// client loads them again on `NOSCRIPT`. `what` names the store in the logs. Needs a Tokio
/// runtime.
pub fn connect_in_background(
    client: redis::Client,
    what: &'static str,
    scripts: Vec<redis::Script>,
) -> std::sync::Arc<std::sync::OnceLock<Connection>> {
    let conn = std::sync::Arc::new(std::sync::OnceLock::new());
    let slot = std::sync::Arc::clone(&conn);
    tokio::spawn(async move {
        let mut backoff = Backoff::new(RetryPolicy::RECONNECT);
        loop {
            let manager = ConnectionManagerConfig::new()
                .set_connection_timeout(Duration::from_secs(2))
                .set_response_timeout(Duration::from_secs(2))
                .set_number_of_retries(2)
                .set_max_delay(500);
            match ConnectionManager::new_with_config(client.clone(), manager).await {
                Ok(mut c) => {
                    for s in &scripts {
                        if let Err(e) = s.prepare_invoke().load_async(&mut c).await {
                            tracing::warn!(error = %e, "{what}: cannot load a script yet");
                        }
                    }
                    let _ = slot.set(Connection::new(c, what));
                    tracing::info!("{what} connected to Redis");
                    return;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "{what}: cannot connect to Redis yet; retrying");
                    backoff.wait().await;
                }
            }
        }
    });
    conn
}

/// Waits until a connection from [`connect_in_background`] is there, for up to `within` (tests
/// and tools); false if it is not.
pub async fn wait_connected(conn: &std::sync::OnceLock<Connection>, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while conn.get().is_none() {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(user: Option<&str>, files: [Option<std::path::PathBuf>; 3]) -> RedisTlsArgs {
        let [ca, cert, key] = files;
        RedisTlsArgs {
            redis_user: user.map(str::to_owned),
            redis_ca_file: ca,
            redis_cert_file: cert,
            redis_key_file: key,
        }
    }

    #[test]
    fn tls_files_need_a_rediss_url() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\n").unwrap();
        let e = args(None, [Some(ca.clone()), None, None])
            .apply(RedisConfig::plain("redis://127.0.0.1:6379"))
            .unwrap_err();
        assert!(e.contains("rediss://"), "{e}");
        // A file that is not there is named with its flag.
        let e = args(None, [Some(dir.path().join("nope.pem")), None, None])
            .apply(RedisConfig::plain("rediss://127.0.0.1:6380"))
            .unwrap_err();
        assert!(
            e.contains("--redis-ca-file") && e.contains("nope.pem"),
            "{e}"
        );
    }

    #[test]
    fn a_plain_url_and_a_tls_url_without_files_build_clients() {
        assert!(
            RedisConfig::plain("redis://127.0.0.1:6379")
                .client()
                .is_ok()
        );
        assert!(
            RedisConfig::plain("rediss://127.0.0.1:6380")
                .client()
                .is_ok()
        );
        assert!(RedisConfig::plain("http://127.0.0.1").client().is_err());
    }

    #[test]
    fn the_user_flag_replaces_the_urls_user() {
        let c = args(Some("arbiter-clock"), [None, None, None])
            .apply(RedisConfig::plain("redis://someone:pw@127.0.0.1:6379"))
            .unwrap();
        let info = c.client().unwrap().get_connection_info().clone();
        assert_eq!(info.redis.username.as_deref(), Some("arbiter-clock"));
        assert_eq!(info.redis.password.as_deref(), Some("pw"));
    }

    #[test]
    fn secrets_never_show_in_debug() {
        let c = RedisConfig {
            password: Some("hunter3".into()),
            tls: RedisTls {
                ca_pem: Some(b"ca".to_vec()),
                client: Some((b"cert".to_vec(), b"PRIVATE-KEY-BYTES".to_vec())),
            },
            ..RedisConfig::plain("rediss://u:hunter2@h:6380")
        };
        let shown = format!("{c:?}");
        for secret in ["hunter2", "hunter3", "PRIVATE-KEY-BYTES"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }
}
