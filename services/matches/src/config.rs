//! The match service's configuration. Values come from flags and environment variables, read in
//! `main` only ([`MatchesArgs`] is the flag definition `arbiter-matches` and `arbiter serve`
//! share; [`MatchesArgs::load`] reads the key file).

use crate::seats::SeatKey;
use crate::store::Retention;
use std::path::PathBuf;
use std::time::Duration;

/// Where matches are kept.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreConfig {
    /// In this process (the embedded default of `arbiter serve`; lost on restart).
    Memory,
    /// In Redis at this URL (`redis://host:6379/0`), shared by every replica.
    Redis(String),
}

impl std::fmt::Debug for StoreConfig {
    /// Never shows a password of the Redis URL.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreConfig::Memory => f.write_str("Memory"),
            StoreConfig::Redis(url) => write!(f, "Redis({})", redact_url(url)),
        }
    }
}

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

/// Everything the match service is configured with.
#[derive(Clone, Debug)]
pub struct MatchesConfig {
    /// The store.
    pub store: StoreConfig,
    /// How long matches are kept.
    pub retention: Retention,
    /// How many match snapshots a Redis-backed process keeps (each saves a read per move).
    pub cache_capacity: usize,
    /// The secret of seat tokens.
    pub seat_key: SeatKey,
}

impl Default for MatchesConfig {
    /// In process, default retention, a fresh random seat key.
    fn default() -> MatchesConfig {
        MatchesConfig {
            store: StoreConfig::Memory,
            retention: Retention::default(),
            cache_capacity: 10_000,
            seat_key: SeatKey::generate(),
        }
    }
}

/// Flags of the match service (each also readable from the environment).
#[derive(clap::Args, Clone)]
pub struct MatchesArgs {
    /// Keep matches in Redis at this URL (e.g. redis://127.0.0.1:6379/0, or
    /// redis://:PASSWORD@host:6379/0); without it they are kept in this process.
    #[arg(long, env = "ARBITER_REDIS_URL", hide_env_values = true)]
    pub redis_url: Option<String>,
    /// Lifetime of a live match without moves, in seconds.
    #[arg(long, env = "ARBITER_MATCH_TTL_SECS", default_value_t = 7200)]
    pub match_ttl_secs: u64,
    /// How long a finished match stays readable, in seconds.
    #[arg(long, env = "ARBITER_MATCH_GRACE_SECS", default_value_t = 600)]
    pub match_grace_secs: u64,
    /// Match snapshots kept in this process with Redis (a snapshot saves one read per move).
    #[arg(long, env = "ARBITER_MATCH_CACHE", default_value_t = 10_000)]
    pub match_cache: usize,
    /// A file holding the secret seat tokens are signed with (at least 32 bytes). Required with
    /// --redis-url (every replica must share it, and tokens must outlive restarts); without a
    /// store in Redis a random key is drawn at start.
    #[arg(long, env = "ARBITER_SEAT_KEY_FILE")]
    pub seat_key_file: Option<PathBuf>,
    /// The seat key itself (prefer the environment or the file: a flag shows in process
    /// listings).
    #[arg(long, env = "ARBITER_SEAT_KEY", hide_env_values = true)]
    pub seat_key: Option<String>,
}

impl std::fmt::Debug for MatchesArgs {
    /// Never shows the seat key or a Redis password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatchesArgs")
            .field("redis_url", &self.redis_url.as_deref().map(redact_url))
            .field("match_ttl_secs", &self.match_ttl_secs)
            .field("match_grace_secs", &self.match_grace_secs)
            .field("match_cache", &self.match_cache)
            .field("seat_key_file", &self.seat_key_file)
            .field("seat_key", &self.seat_key.as_ref().map(|_| "***"))
            .finish()
    }
}

impl MatchesArgs {
    /// The configuration these flags describe, reading the key file. Call it from `main`.
    pub fn load(&self) -> Result<MatchesConfig, String> {
        let material = match (&self.seat_key_file, &self.seat_key) {
            (Some(path), _) => Some(
                std::fs::read(path)
                    .map_err(|e| format!("--seat-key-file {}: {e}", path.display()))?,
            ),
            (None, Some(key)) => Some(key.as_bytes().to_vec()),
            (None, None) => None,
        };
        let seat_key = match (material, &self.redis_url) {
            (Some(m), _) => SeatKey::from_material(&m).map_err(|e| format!("seat key: {e}"))?,
            (None, None) => SeatKey::generate(),
            (None, Some(_)) => {
                return Err(
                    "--redis-url needs a seat key (--seat-key-file or ARBITER_SEAT_KEY): \
                     every replica must sign seat tokens with the same key, and tokens must \
                     outlive restarts"
                        .into(),
                );
            }
        };
        Ok(MatchesConfig {
            store: match &self.redis_url {
                Some(url) => StoreConfig::Redis(url.clone()),
                None => StoreConfig::Memory,
            },
            retention: Retention {
                ttl: Duration::from_secs(self.match_ttl_secs.max(1)),
                grace: Duration::from_secs(self.match_grace_secs.max(1)),
            },
            cache_capacity: self.match_cache,
            seat_key,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redact_url("redis://:s3cret@10.0.0.5:6379/0"),
            "redis://:***@10.0.0.5:6379/0"
        );
        assert_eq!(
            redact_url("redis://app:s3cret@host/1"),
            "redis://app:***@host/1"
        );
        assert_eq!(redact_url("redis://host:6379"), "redis://host:6379");
        let shown = format!("{:?}", StoreConfig::Redis("redis://u:hunter2@h:1".into()));
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}
