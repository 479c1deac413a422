//! Matchmaking's configuration, from flags and the environment (read in `main` only).

use arbiter_core::Variant;
use arbiter_core::clock::TimeControl;
use arbiter_core::rating::glicko2;
use arbiter_redis_conn::RedisConfig;
use std::time::Duration;

/// How waves and places behave.
#[derive(Clone, Debug, PartialEq)]
pub struct Tuning {
    /// A place's lease: a join stream renews it every third of it; a place whose server died is
    /// dropped after it.
    pub lease_ms: u64,
    /// Time between a replica's waves over every pool.
    pub wave_interval_ms: u64,
    /// Up to this much is added to each interval at random (replicas drift apart).
    pub wave_jitter_ms: u64,
    /// A join that brings a pool to this many waiting players starts a wave at once.
    pub wave_at: usize,
    /// Players one pool holds at most; further joins are refused (RESOURCE_EXHAUSTED).
    pub max_waiting: usize,
    /// Pools with players at once; a join that would open another is refused
    /// (RESOURCE_EXHAUSTED).
    pub max_pools: usize,
    /// The K nearest-rated allowed candidates each player brings into a wave's graph.
    pub candidates: usize,
    /// The pool lock's lease for one wave.
    pub wave_lock_ms: u64,
    /// A committed pairing whose match is still not created after this long is finished by the
    /// next wave (its replica died).
    pub recover_after_ms: u64,
    /// Retries of a `CreateMatch` that failed for a reason that may pass, within one wave.
    pub create_retries: u32,
    /// A pairing whose match still cannot be created this long after its wave (the match
    /// service unreachable) gives its players back to the pool.
    pub give_up_after_ms: u64,
    /// An accepted challenge's or seek's accept under way without a heartbeat for this long is
    /// presumed lost (its replica died, or its caller gave up after a failure that may pass)
    /// and is resumed by the next accept or this replica's resumer: never shorter than the
    /// longest `CreateMatch` of one accept ([`accept_stale_ms`]), so a live accept is never
    /// resumed by another.
    pub accept_stale_ms: u64,
    /// How often this replica looks for stale accepts to resume (0: never; tests).
    pub accept_resume_interval_ms: u64,
    /// Matches a wave creates at once.
    pub create_concurrency: usize,
    /// The lease of following a created match for its outcome.
    pub follow_lease_ms: u64,
    /// Pools (variant, time control) that pair by Elo instead of Glicko-2.
    pub elo_pools: Vec<(Variant, TimeControl)>,
    /// Glicko-2 settings.
    pub glicko: glicko2::Settings,
    /// How long a challenge stays pending before it expires.
    pub challenge_lifetime_ms: u64,
    /// How long a seek stays in the lobby before it expires.
    pub seek_lifetime_ms: u64,
    /// Pending challenges one challenger may have out at once; more are RESOURCE_EXHAUSTED.
    pub max_challenges_out: usize,
    /// Pending challenges one player may be sent at once; more are RESOURCE_EXHAUSTED.
    pub max_challenges_in: usize,
    /// Open seeks one player may have at once.
    pub max_seeks_per_player: usize,
    /// Open seeks in the lobby, every player's together.
    pub max_seeks: usize,
    /// Challenges (and, apart, seeks) one player may create per hour, ended ones included;
    /// more are RESOURCE_EXHAUSTED.
    pub max_offers_per_hour: usize,
    /// Challenge watch streams one player may hold open at once.
    pub max_watches_per_player: usize,
    /// Challenge watch streams this replica holds open at once, every player's together.
    pub max_watches: usize,
    /// Rating changes kept per player, variant and speed (the oldest dropped beyond it;
    /// [`crate::store::RATING_HISTORY_LIMIT`] unless set).
    pub rating_history: usize,
}

/// The stale time of an accept ([`Tuning::accept_stale_ms`]) for a match service asked with
/// `--matches-timeout-ms` `matches_timeout_ms` (each call's attempts all begin within it, each
/// answers within it: a call lasts at most twice it) up to `create_retries` more times after a
/// failure that may pass (pauses of at most 2.5 s between): twice that longest creation plus
/// 10 s for the store steps around it, and never under [`crate::store::ACCEPT_STALE_MS`]
/// (105 s with the defaults, 5 s and 3 retries).
#[must_use]
pub fn accept_stale_ms(matches_timeout_ms: u64, create_retries: u32) -> u64 {
    let attempts = u64::from(create_retries).saturating_add(1);
    let longest = attempts
        .saturating_mul(matches_timeout_ms.saturating_mul(2))
        .saturating_add(u64::from(create_retries).saturating_mul(2_500));
    longest
        .saturating_mul(2)
        .saturating_add(10_000)
        .max(crate::store::ACCEPT_STALE_MS)
}

/// A challenge's lifetime unless configured: 10 minutes.
pub const DEFAULT_CHALLENGE_LIFETIME_MS: u64 = 600_000;
/// A seek's lifetime unless configured: 30 minutes.
pub const DEFAULT_SEEK_LIFETIME_MS: u64 = 1_800_000;
/// Pending challenges per challenger unless configured.
pub const DEFAULT_MAX_CHALLENGES_OUT: usize = 20;
/// Pending incoming challenges per player unless configured.
pub const DEFAULT_MAX_CHALLENGES_IN: usize = 50;
/// Open seeks per player unless configured.
pub const DEFAULT_MAX_SEEKS_PER_PLAYER: usize = 5;
/// Open seeks in the lobby unless configured.
pub const DEFAULT_MAX_SEEKS: usize = 10_000;
/// Challenges (and, apart, seeks) one player may create per hour unless configured.
pub const DEFAULT_MAX_OFFERS_PER_HOUR: usize = 200;
/// Challenge watch streams per player unless configured.
pub const DEFAULT_MAX_WATCHES_PER_PLAYER: usize = 4;
/// Challenge watch streams per replica unless configured.
pub const DEFAULT_MAX_WATCHES: usize = 10_000;

impl Default for Tuning {
    /// Leases of 15 s, waves every 5 s plus up to 1 s, at once from 64 players, at most 100,000
    /// per pool, 1,000 pools, 16 candidates, Glicko-2 everywhere with Glickman's defaults;
    /// challenges live 10 minutes (20 out, 50 in per player), seeks 30 minutes (5 per player,
    /// 10,000 in the lobby).
    fn default() -> Tuning {
        Tuning {
            lease_ms: 15_000,
            wave_interval_ms: 5_000,
            wave_jitter_ms: 1_000,
            wave_at: 64,
            max_waiting: 100_000,
            max_pools: 1_000,
            candidates: arbiter_core::pairing::wave::DEFAULT_CANDIDATES,
            wave_lock_ms: 30_000,
            recover_after_ms: 10_000,
            create_retries: 3,
            give_up_after_ms: 60_000,
            accept_stale_ms: crate::store::ACCEPT_STALE_MS,
            accept_resume_interval_ms: 10_000,
            create_concurrency: 16,
            follow_lease_ms: 60_000,
            elo_pools: Vec::new(),
            glicko: glicko2::Settings::default(),
            challenge_lifetime_ms: DEFAULT_CHALLENGE_LIFETIME_MS,
            seek_lifetime_ms: DEFAULT_SEEK_LIFETIME_MS,
            max_challenges_out: DEFAULT_MAX_CHALLENGES_OUT,
            max_challenges_in: DEFAULT_MAX_CHALLENGES_IN,
            max_seeks_per_player: DEFAULT_MAX_SEEKS_PER_PLAYER,
            max_seeks: DEFAULT_MAX_SEEKS,
            max_offers_per_hour: DEFAULT_MAX_OFFERS_PER_HOUR,
            max_watches_per_player: DEFAULT_MAX_WATCHES_PER_PLAYER,
            max_watches: DEFAULT_MAX_WATCHES,
            rating_history: crate::store::RATING_HISTORY_LIMIT,
        }
    }
}

/// Everything matchmaking is configured with.
#[derive(Clone, Debug, Default)]
pub struct MatchmakingConfig {
    /// Redis, or `None` to keep everything in process.
    pub redis: Option<RedisConfig>,
    /// Waves and places.
    pub tuning: Tuning,
    /// How often the store's health is checked.
    pub health_interval: Duration,
}

/// Matchmaking's own flags (each also readable from the environment).
#[derive(clap::Args, Clone, Debug)]
pub struct MatchmakingArgs {
    /// Seconds a waiting player's place lasts without its join stream renewing it.
    #[arg(long, env = "ARBITER_MM_LEASE_SECS", default_value_t = 15)]
    pub mm_lease_secs: u64,
    /// Milliseconds between waves.
    #[arg(long, env = "ARBITER_MM_WAVE_INTERVAL_MS", default_value_t = 5_000)]
    pub mm_wave_interval_ms: u64,
    /// Up to this many milliseconds added to each wave interval at random.
    #[arg(long, env = "ARBITER_MM_WAVE_JITTER_MS", default_value_t = 1_000)]
    pub mm_wave_jitter_ms: u64,
    /// A pool reaching this many waiting players runs a wave at once.
    #[arg(long, env = "ARBITER_MM_WAVE_AT", default_value_t = 64)]
    pub mm_wave_at: usize,
    /// Waiting players one pool holds at most.
    #[arg(long, env = "ARBITER_MM_MAX_WAITING", default_value_t = 100_000)]
    pub mm_max_waiting: usize,
    /// Pools with waiting players at once (each variant, time control and rated/casual is one).
    #[arg(long, env = "ARBITER_MM_MAX_POOLS", default_value_t = 1_000)]
    pub mm_max_pools: usize,
    /// Nearest-rated candidates per player in a wave's graph.
    #[arg(long, env = "ARBITER_MM_CANDIDATES", default_value_t = 16)]
    pub mm_candidates: usize,
    /// A pool (`variant/time control`, e.g. `chess/90/40+30, 30+30`) that pairs by Elo rather
    /// than Glicko-2; repeat for several.
    #[arg(
        long = "mm-elo-pool",
        env = "ARBITER_MM_ELO_POOLS",
        value_delimiter = ';'
    )]
    pub mm_elo_pools: Vec<String>,
    /// The rating deviation of a new player (Glicko-2; lichess uses 500).
    #[arg(long, env = "ARBITER_MM_NEW_DEVIATION", default_value_t = 350.0)]
    pub mm_new_deviation: f64,
    /// Glicko-2's τ (lichess uses 0.75).
    #[arg(long, env = "ARBITER_MM_TAU", default_value_t = 0.5)]
    pub mm_tau: f64,
    /// Seconds a challenge stays pending before it expires.
    #[arg(
        long,
        env = "ARBITER_MM_CHALLENGE_LIFETIME_SECS",
        default_value_t = 600
    )]
    pub mm_challenge_lifetime_secs: u64,
    /// Seconds a seek stays in the lobby before it expires.
    #[arg(long, env = "ARBITER_MM_SEEK_LIFETIME_SECS", default_value_t = 1800)]
    pub mm_seek_lifetime_secs: u64,
    /// Pending challenges one challenger may have out at once.
    #[arg(long, env = "ARBITER_MM_MAX_CHALLENGES_OUT", default_value_t = 20)]
    pub mm_max_challenges_out: usize,
    /// Pending challenges one player may be sent at once.
    #[arg(long, env = "ARBITER_MM_MAX_CHALLENGES_IN", default_value_t = 50)]
    pub mm_max_challenges_in: usize,
    /// Open seeks one player may have at once.
    #[arg(long, env = "ARBITER_MM_MAX_SEEKS_PER_PLAYER", default_value_t = 5)]
    pub mm_max_seeks_per_player: usize,
    /// Open seeks in the lobby.
    #[arg(long, env = "ARBITER_MM_MAX_SEEKS", default_value_t = 10_000)]
    pub mm_max_seeks: usize,
    /// Challenges (and, apart, seeks) one player may create per hour, ended ones included.
    #[arg(long, env = "ARBITER_MM_MAX_OFFERS_PER_HOUR", default_value_t = 200)]
    pub mm_max_offers_per_hour: usize,
    /// Challenge watch streams one player may hold open at once (on one replica).
    #[arg(long, env = "ARBITER_MM_MAX_WATCHES_PER_PLAYER", default_value_t = 4)]
    pub mm_max_watches_per_player: usize,
    /// Challenge watch streams one replica holds open at once.
    #[arg(long, env = "ARBITER_MM_MAX_WATCHES", default_value_t = 10_000)]
    pub mm_max_watches: usize,
}

impl MatchmakingArgs {
    /// The configuration, with the Redis the process was given (if any).
    ///
    /// # Errors
    /// A bad `--mm-elo-pool` or Glicko-2 setting.
    pub fn config(&self, redis: Option<RedisConfig>) -> Result<MatchmakingConfig, String> {
        let mut elo_pools = Vec::new();
        for text in &self.mm_elo_pools {
            let text = text.trim();
            let (variant, control) = text
                .split_once('/')
                .ok_or_else(|| format!("--mm-elo-pool {text:?}: expected variant/time control"))?;
            let variant: Variant = variant
                .parse()
                .map_err(|e| format!("--mm-elo-pool {text:?}: {e}"))?;
            let control =
                TimeControl::parse(control).map_err(|e| format!("--mm-elo-pool {text:?}: {e}"))?;
            elo_pools.push((variant, control));
        }
        let glicko = glicko2::Settings {
            default_deviation: self.mm_new_deviation,
            max_deviation: self
                .mm_new_deviation
                .max(glicko2::Settings::default().max_deviation),
            tau: self.mm_tau,
            ..glicko2::Settings::default()
        };
        glicko
            .validate()
            .map_err(|e| format!("--mm-new-deviation / --mm-tau: {e}"))?;
        let lease_ms = self.mm_lease_secs.clamp(1, 3600) * 1000;
        Ok(MatchmakingConfig {
            redis,
            tuning: Tuning {
                lease_ms,
                wave_interval_ms: self.mm_wave_interval_ms.max(10),
                wave_jitter_ms: self.mm_wave_jitter_ms,
                wave_at: self.mm_wave_at.max(2),
                max_waiting: self.mm_max_waiting.max(1),
                max_pools: self.mm_max_pools.max(1),
                candidates: self.mm_candidates.clamp(1, 256),
                elo_pools,
                glicko,
                challenge_lifetime_ms: self.mm_challenge_lifetime_secs.clamp(1, 86_400) * 1000,
                seek_lifetime_ms: self.mm_seek_lifetime_secs.clamp(1, 86_400) * 1000,
                max_challenges_out: self.mm_max_challenges_out.max(1),
                max_challenges_in: self.mm_max_challenges_in.max(1),
                max_seeks_per_player: self.mm_max_seeks_per_player.max(1),
                max_seeks: self.mm_max_seeks.max(1),
                max_offers_per_hour: self.mm_max_offers_per_hour.max(1),
                max_watches_per_player: self.mm_max_watches_per_player.max(1),
                max_watches: self.mm_max_watches.max(1),
                ..Tuning::default()
            },
            health_interval: Duration::from_secs(2),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        mm: MatchmakingArgs,
    }

    fn config(args: &[&str]) -> Result<MatchmakingConfig, String> {
        let mut all = vec!["test"];
        all.extend_from_slice(args);
        Cli::try_parse_from(all).unwrap().mm.config(None)
    }

    #[test]
    fn elo_pools_and_glicko_settings_are_read_and_checked() {
        let c = config(&[
            "--mm-elo-pool",
            "chess/90/40+30, 30+30",
            "--mm-elo-pool",
            "glinski/3|2",
            "--mm-new-deviation",
            "500",
            "--mm-tau",
            "0.75",
        ])
        .unwrap();
        assert_eq!(c.tuning.elo_pools.len(), 2);
        assert_eq!(c.tuning.elo_pools[1].0, Variant::Glinski);
        assert_eq!(c.tuning.elo_pools[1].1, TimeControl::parse("3+2").unwrap());
        assert_eq!(c.tuning.glicko.default_deviation, 500.0);
        assert_eq!(c.tuning.glicko.max_deviation, 500.0);
        assert_eq!(c.tuning.glicko.tau, 0.75);
        assert!(
            config(&["--mm-elo-pool", "chess"])
                .unwrap_err()
                .contains("--mm-elo-pool")
        );
        assert!(config(&["--mm-elo-pool", "chess/soon"]).is_err());
        assert!(config(&["--mm-elo-pool", "checkers/3+2"]).is_err());
        assert!(config(&["--mm-tau=-1"]).unwrap_err().contains("--mm-tau"));
        let defaults = config(&[]).unwrap();
        assert_eq!(defaults.tuning, Tuning::default());
        let c = config(&[
            "--mm-challenge-lifetime-secs",
            "30",
            "--mm-max-challenges-out",
            "3",
            "--mm-max-seeks",
            "0",
        ])
        .unwrap();
        assert_eq!(c.tuning.challenge_lifetime_ms, 30_000);
        assert_eq!(c.tuning.max_challenges_out, 3);
        assert_eq!(c.tuning.max_seeks, 1);
    }

    #[test]
    fn the_stale_time_outlasts_the_longest_creation() {
        assert_eq!(accept_stale_ms(5_000, 3), 105_000);
        assert_eq!(accept_stale_ms(1, 0), crate::store::ACCEPT_STALE_MS);
        assert!(accept_stale_ms(60_000, 3) > 4 * 120_000 + 3 * 2_500);
    }
}
