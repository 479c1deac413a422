//! The match service's configuration. Values come from flags and environment variables, read in
//! `main` only ([`MatchesArgs`] is the flag definition `arbiter-matches` and `arbiter serve`
//! share; [`MatchesArgs::load`] reads the key and password files).

use crate::seats::SeatKey;
use crate::store::Retention;
use crate::store::redis::RedisConfig;
use crate::watchers::WatchLimits;
use std::path::PathBuf;
use std::time::Duration;

/// Where matches are kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreConfig {
    /// In this process (the embedded default of `arbiter serve`; lost on restart).
    Memory,
    /// In Redis, shared by every replica.
    Redis(RedisConfig),
}

impl StoreConfig {
    /// Redis at `url`, with the URL's own password if any.
    pub fn redis(url: impl Into<String>) -> StoreConfig {
        StoreConfig::Redis(RedisConfig::plain(&url.into()))
    }
}

pub use arbiter_redis_conn::redact_url;

/// Bounds on what the match service holds and accepts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MatchLimits {
    /// Matches held in process (in-process store); at the limit `CreateMatch` is refused.
    pub max_matches: usize,
    /// Plies one board may reach; further moves are refused.
    pub max_plies: u32,
    /// Watch streams, in total and per match.
    pub watchers: WatchLimits,
    /// How long each side of a single-board game with clocks has for its first move (untimed)
    /// before the game is aborted, in ms.
    pub first_move_ms: u64,
}

impl Default for MatchLimits {
    fn default() -> MatchLimits {
        MatchLimits {
            max_matches: 100_000,
            max_plies: 12_000,
            watchers: WatchLimits::default(),
            first_move_ms: 30_000,
        }
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
    /// Bounds.
    pub limits: MatchLimits,
    /// How often the store's health is checked.
    pub health_interval: Duration,
}

impl Default for MatchesConfig {
    /// In process, default retention and limits, a fresh random seat key.
    fn default() -> MatchesConfig {
        MatchesConfig {
            store: StoreConfig::Memory,
            retention: Retention::default(),
            cache_capacity: 10_000,
            seat_key: SeatKey::generate(),
            limits: MatchLimits::default(),
            health_interval: Duration::from_secs(2),
        }
    }
}

/// Flags of the match service (each also readable from the environment).
#[derive(clap::Args, Clone)]
pub struct MatchesArgs {
    /// Keep matches in Redis at this URL (e.g. redis://127.0.0.1:6379/0, rediss://host:6380/0
    /// for TLS, or redis://:PASSWORD@host:6379/0); without it they are kept in this process.
    #[arg(long, env = "ARBITER_REDIS_URL", hide_env_values = true)]
    pub redis_url: Option<String>,
    /// A file holding the Redis password (replaces one in the URL).
    #[arg(long, env = "ARBITER_REDIS_PASSWORD_FILE")]
    pub redis_password_file: Option<PathBuf>,
    /// The Redis password itself (prefer the environment or the file: a flag shows in process
    /// listings).
    #[arg(long, env = "ARBITER_REDIS_PASSWORD", hide_env_values = true)]
    pub redis_password: Option<String>,
    /// The Redis ACL user and TLS files.
    #[command(flatten)]
    pub redis_tls: arbiter_redis_conn::RedisTlsArgs,
    /// Lifetime of a live match without changes, in seconds.
    #[arg(long, env = "ARBITER_MATCH_TTL_SECS", default_value_t = 7200)]
    pub match_ttl_secs: u64,
    /// How long a finished match stays readable, in seconds.
    #[arg(long, env = "ARBITER_MATCH_GRACE_SECS", default_value_t = 600)]
    pub match_grace_secs: u64,
    /// Match snapshots kept in this process with Redis (a snapshot saves one read per move).
    #[arg(long, env = "ARBITER_MATCH_CACHE", default_value_t = 10_000)]
    pub match_cache: usize,
    /// Matches held in this process without Redis; at the limit CreateMatch is refused
    /// (RESOURCE_EXHAUSTED). Only finished or idle matches expire.
    #[arg(long, env = "ARBITER_MAX_MATCHES", default_value_t = MatchLimits::default().max_matches)]
    pub max_matches: usize,
    /// Plies one board may reach; further moves are refused (RESOURCE_EXHAUSTED).
    #[arg(long, env = "ARBITER_MAX_PLIES", default_value_t = MatchLimits::default().max_plies)]
    pub max_plies: u32,
    /// Watch streams open at once in this process.
    #[arg(long, env = "ARBITER_MAX_WATCHERS", default_value_t = WatchLimits::default().total)]
    pub max_watchers: usize,
    /// Watch streams open at once on one match.
    #[arg(long, env = "ARBITER_MAX_WATCHERS_PER_MATCH", default_value_t = WatchLimits::default().per_match)]
    pub max_watchers_per_match: usize,
    /// Seconds each side of a single-board game with clocks has for its first (untimed) move
    /// before the game is aborted with no result.
    #[arg(long, env = "ARBITER_FIRST_MOVE_SECS", default_value_t = 30)]
    pub first_move_secs: u64,
    /// Seconds between checks of the store's health (reachable; Redis evicting nothing).
    #[arg(long, env = "ARBITER_HEALTH_INTERVAL_SECS", default_value_t = 2)]
    pub health_interval_secs: u64,
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
            .field("redis_password_file", &self.redis_password_file)
            .field(
                "redis_password",
                &self.redis_password.as_ref().map(|_| "***"),
            )
            .field("redis_tls", &self.redis_tls)
            .field("match_ttl_secs", &self.match_ttl_secs)
            .field("match_grace_secs", &self.match_grace_secs)
            .field("match_cache", &self.match_cache)
            .field("max_matches", &self.max_matches)
            .field("max_plies", &self.max_plies)
            .field("max_watchers", &self.max_watchers)
            .field("max_watchers_per_match", &self.max_watchers_per_match)
            .field("first_move_secs", &self.first_move_secs)
            .field("health_interval_secs", &self.health_interval_secs)
            .field("seat_key_file", &self.seat_key_file)
            .field("seat_key", &self.seat_key.as_ref().map(|_| "***"))
            .finish()
    }
}

/// Reads a secret from `file` when one is named, else takes `value`.
fn secret(
    file: Option<&PathBuf>,
    value: Option<&String>,
    flag: &str,
) -> Result<Option<Vec<u8>>, String> {
    match (file, value) {
        (Some(path), _) => std::fs::read(path)
            .map(Some)
            .map_err(|e| format!("--{flag}-file {}: {e}", path.display())),
        (None, Some(v)) => Ok(Some(v.as_bytes().to_vec())),
        (None, None) => Ok(None),
    }
}

impl MatchesArgs {
    /// The configuration these flags describe, reading the key and password files. Call it
    /// from `main`.
    pub fn load(&self) -> Result<MatchesConfig, String> {
        let material = secret(
            self.seat_key_file.as_ref(),
            self.seat_key.as_ref(),
            "seat-key",
        )?;
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
        let password = secret(
            self.redis_password_file.as_ref(),
            self.redis_password.as_ref(),
            "redis-password",
        )?
        .map(|p| {
            String::from_utf8(p.trim_ascii().to_vec())
                .map_err(|_| "the Redis password is not UTF-8".to_owned())
        })
        .transpose()?;
        Ok(MatchesConfig {
            store: match &self.redis_url {
                Some(url) => StoreConfig::Redis(self.redis_tls.apply(RedisConfig {
                    password,
                    ..RedisConfig::plain(url)
                })?),
                None => StoreConfig::Memory,
            },
            retention: Retention {
                ttl: Duration::from_secs(self.match_ttl_secs.max(1)),
                grace: Duration::from_secs(self.match_grace_secs.max(1)),
            },
            cache_capacity: self.match_cache,
            seat_key,
            limits: MatchLimits {
                max_matches: self.max_matches.max(1),
                max_plies: self.max_plies.max(1),
                watchers: WatchLimits {
                    total: self.max_watchers,
                    per_match: self.max_watchers_per_match,
                },
                first_move_ms: self.first_move_secs.clamp(1, 86_400) * 1000,
            },
            health_interval: Duration::from_secs(self.health_interval_secs.max(1)),
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
        let shown = format!(
            "{:?}",
            StoreConfig::Redis(RedisConfig {
                password: Some("hunter3".into()),
                ..RedisConfig::plain("redis://u:hunter2@h:1")
            })
        );
        assert!(
            !shown.contains("hunter2") && !shown.contains("hunter3"),
            "{shown}"
        );
    }
}
