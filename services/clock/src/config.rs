//! The clock service's configuration, from flags and the environment (read in `main` only).

use arbiter_clocked::watchers::WatchLimits;
use arbiter_redis_conn::RedisConfig;
use std::time::Duration;

/// Everything the clock service is configured with.
#[derive(Clone, Debug)]
pub struct ClockConfig {
    /// Redis, or `None` to keep clocks in process.
    pub redis: Option<RedisConfig>,
    /// How long a clock is kept after its last change.
    pub ttl: Duration,
    /// Clocks held in process (without Redis).
    pub max_clocks: usize,
    /// Watch streams.
    pub watchers: WatchLimits,
    /// How often the store's health is checked.
    pub health_interval: Duration,
}

impl Default for ClockConfig {
    /// In process, kept 2 hours, at most 100,000 clocks.
    fn default() -> ClockConfig {
        ClockConfig {
            redis: None,
            ttl: Duration::from_secs(7200),
            max_clocks: 100_000,
            watchers: WatchLimits::default(),
            health_interval: Duration::from_secs(2),
        }
    }
}

/// The clock service's own flags (each also readable from the environment).
#[derive(clap::Args, Clone, Debug)]
pub struct ClockArgs {
    /// Lifetime of a standalone clock after its last change, in seconds.
    #[arg(long, env = "ARBITER_CLOCK_TTL_SECS", default_value_t = 7200)]
    pub clock_ttl_secs: u64,
    /// Standalone clocks held in this process without Redis; at the limit CreateClock is
    /// refused (RESOURCE_EXHAUSTED).
    #[arg(long, env = "ARBITER_MAX_CLOCKS", default_value_t = 100_000)]
    pub max_clocks: usize,
}

impl ClockArgs {
    /// The configuration, with the Redis the process was given (if any).
    pub fn config(&self, redis: Option<RedisConfig>) -> ClockConfig {
        ClockConfig {
            redis,
            ttl: Duration::from_secs(self.clock_ttl_secs.max(1)),
            max_clocks: self.max_clocks.max(1),
            ..ClockConfig::default()
        }
    }
}
