//! A whole wave through the service next to its pairing computation alone, in the same run.
//!
//! `cargo bench -p arbiter-matchmaking --bench wave` (add `ARBITER_BENCH_REDIS_URL=redis://…`
//! to measure the Redis store too; it must be an empty database, which the bench fills).
//!
//! For pools of 1,000 and 10,000 players with seeded ratings (stored as rating records, so the
//! service reads them as it does in production), it times: the joins (one at a time, as the
//! join RPC makes them), then one `Matchmaker::wave` (the lock, the read of the places, the
//! pairing, the commit, the creation of every match through a match service that answers at once,
//! the found matches stored), and, as the reference, `domain::plan` on the same players (the
//! core's exact matching, which is all the wave computes). The ratio wave / plan is what the
//! store and the bookkeeping cost on top of the pairing.

use arbiter_core::Variant;
use arbiter_core::clock::TimeControl;
use arbiter_core::rating::glicko2;
use arbiter_matchmaking::Tuning;
use arbiter_matchmaking::backend::{BackendError, CreatedMatch, MatchBackend, MatchEnd, NewMatch};
use arbiter_matchmaking::domain::{JoinSpec, Matchmaker, plan};
use arbiter_matchmaking::pool::Pool;
use arbiter_matchmaking::ratings::Record;
use arbiter_matchmaking::store::memory::MemoryStore;
use arbiter_matchmaking::store::redis::RedisStore;
use arbiter_matchmaking::store::{PoolStore, RatingWrite};
use std::time::Instant;

/// A match service that creates every match at once.
struct Immediate;

impl MatchBackend for Immediate {
    async fn create(&self, m: &NewMatch) -> Result<CreatedMatch, BackendError> {
        Ok(CreatedMatch {
            match_id: m.request_id.clone(),
            tokens: m.players.iter().map(|p| format!("t-{p}")).collect(),
        })
    }

    async fn wait_end(&self, _match_id: &str) -> Result<MatchEnd, BackendError> {
        std::future::pending().await
    }
}

/// SplitMix64, for reproducible ratings.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

async fn run<S: PoolStore>(label: &str, store: S, n: usize, tag: &str) {
    let pool = Pool {
        variant: Variant::Chess,
        control: TimeControl::parse("3+2").expect("a time control"),
        rated: true,
    };
    let name = pool.name();
    let settings = glicko2::Settings::default();
    let mut seed = n as u64;
    for i in 0..n {
        let mut record = Record::new(&settings);
        // A bell around 1500: the sum of four uniforms over ±400.
        let spread: i64 = (0..4).map(|_| (next(&mut seed) % 401) as i64 - 200).sum();
        record.glicko.rating = 1500.0 + spread as f64;
        store
            .apply_ratings(
                &format!("seed-{tag}-{i}"),
                &[RatingWrite {
                    player: format!("{tag}-{i}"),
                    key: pool.rating_key(),
                    old: None,
                    new: record.encode(),
                    // Seeding only: the history is never read here.
                    change: String::new(),
                }],
                1,
            )
            .await
            .expect("seeding a rating");
    }
    let mm = Matchmaker::new(
        store,
        Immediate,
        Tuning {
            max_waiting: 1_000_000,
            wave_interval_ms: 3_600_000,
            create_concurrency: 64,
            ..Tuning::default()
        },
    );
    let started = Instant::now();
    for i in 0..n {
        mm.join(JoinSpec {
            player: format!("{tag}-{i}"),
            pool: pool.clone(),
            range: None,
            blocked: Vec::new(),
            partner: None,
        })
        .await
        .expect("a join");
    }
    let joins = started.elapsed();
    let waiting = mm.store().waiting(&name).await.expect("the places");
    let started = Instant::now();
    let reference = plan(&waiting, false, 16, 1);
    let planned = started.elapsed();
    let started = Instant::now();
    let report = mm.wave(&name).await.expect("a wave");
    let wave = started.elapsed();
    println!(
        "| {label} | {n} | {:.0} | {:.1} ms | {:.1} ms | {:.1}× | {} |",
        n as f64 / joins.as_secs_f64(),
        planned.as_secs_f64() * 1e3,
        wave.as_secs_f64() * 1e3,
        wave.as_secs_f64() / planned.as_secs_f64(),
        report.created * 2,
    );
    assert_eq!(report.created, reference.pairings.len());
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        println!("| store | players | joins/s | plan | wave | wave / plan | paired |");
        println!("|---|---|---|---|---|---|---|");
        for n in [1_000, 10_000] {
            run("memory", MemoryStore::new(), n, &format!("m{n}")).await;
        }
        if let Ok(url) = std::env::var("ARBITER_BENCH_REDIS_URL") {
            for n in [1_000, 10_000] {
                let store = RedisStore::connect(&url).await.expect("Redis");
                run("redis", store, n, &format!("r{n}")).await;
            }
        }
    });
}
