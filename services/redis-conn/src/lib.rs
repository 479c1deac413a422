//! # arbiter-redis-conn
//!
//! How Arbiter's services with state reach Redis (the match, clock, matchmaking and analysis
//! services and the batch workers): the URL and password, read the same way by every service
//! ([`RedisArgs`], flags and environment, resolved in `main` into a [`RedisConfig`]) and kept out
//! of logs ([`redact_url`]), and a connection made in the background and retried until Redis
//! answers ([`connect_in_background`], [`wait_connected`]), so that a service starts, and
//! reports `NOT_SERVING`, before Redis is up. [`script`]: named arguments for Lua scripts; [`packed`]: the packed-list encoding every store uses.
#![warn(missing_docs)]

pub mod packed;
pub mod script;

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

/// How to reach Redis.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisConfig {
    /// `redis://host:port/db`, maybe with a user (and password) in it.
    pub url: String,
    /// A password that replaces the URL's (read from a file or the environment).
    pub password: Option<String>,
}

impl std::fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &redact_url(&self.url))
            .field("password", &self.password.as_ref().map(|_| "***"))
            .finish()
    }
}

impl RedisConfig {
    /// The client for this configuration (no connection yet).
    pub fn client(&self) -> Result<redis::Client, String> {
        use redis::IntoConnectionInfo;
        let mut info = self
            .url
            .as_str()
            .into_connection_info()
            .map_err(|e| format!("bad Redis URL {}: {e}", redact_url(&self.url)))?;
        if let Some(password) = &self.password {
            info.redis.password = Some(password.clone());
        }
        redis::Client::open(info).map_err(|e| e.to_string())
    }
}

/// Where a service that runs alone keeps its state (`--redis-url`, `--redis-password-file`).
#[derive(clap::Args, Clone)]
pub struct RedisArgs {
    /// Keep state in Redis at this URL; without it, state is kept in this process.
    #[arg(long, env = "ARBITER_REDIS_URL", hide_env_values = true)]
    pub redis_url: Option<String>,
    /// A file holding the Redis password.
    #[arg(long, env = "ARBITER_REDIS_PASSWORD_FILE")]
    pub redis_password_file: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for RedisArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisArgs")
            .field("redis_url", &self.redis_url.as_deref().map(redact_url))
            .field("redis_password_file", &self.redis_password_file)
            .finish()
    }
}

impl RedisArgs {
    /// The Redis configuration, reading the password file.
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
        Ok(Some(RedisConfig {
            url: url.clone(),
            password,
        }))
    }
}

/// A Redis connection that a background task establishes (retrying with backoff up to 5 s):
/// empty until it has connected, then a [`ConnectionManager`] that reconnects by itself, with
/// 2 s connection and response timeouts. `scripts` are loaded up front, so that no change pays
/// a `NOSCRIPT` round trip (and a lost reply is the change's own); after a Redis restart the
/// client loads them again on `NOSCRIPT`. `what` names the store in the logs. Needs a Tokio
/// runtime.
pub fn connect_in_background(
    client: redis::Client,
    what: &'static str,
    scripts: Vec<redis::Script>,
) -> std::sync::Arc<std::sync::OnceLock<ConnectionManager>> {
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
                    let _ = slot.set(c);
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
pub async fn wait_connected(
    conn: &std::sync::OnceLock<ConnectionManager>,
    within: Duration,
) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while conn.get().is_none() {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    true
}
