//! Waves, places and ratings against both stores, with a match service that records what it is
//! asked: no player is paired twice, leavers and disconnected players are never paired, two
//! replicas sharing one Redis never pair a player twice, a replica killed mid-wave loses nobody,
//! a failed creation puts the players back, and ratings change once per match.

use arbiter_core::Variant;
use arbiter_core::clock::TimeControl;
use arbiter_matchmaking::MatchmakingError;
use arbiter_matchmaking::Tuning;
use arbiter_matchmaking::backend::{BackendError, CreatedMatch, MatchBackend, MatchEnd, NewMatch};
use arbiter_matchmaking::domain::{JoinEvent, JoinSpec, Matchmaker, Ticket};
use arbiter_matchmaking::pool::{Follow, Pairing, Pool};
use arbiter_matchmaking::store::memory::MemoryStore;
use arbiter_matchmaking::store::redis::RedisStore;
use arbiter_matchmaking::store::{Applied, Place, PoolStore};
use arbiter_redis_conn::RedisConfig;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the fake match service does with a creation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Creates at once.
    Create,
    /// Creates after a pause.
    Slow(u64),
    /// Never answers (the replica is as good as dead once it calls).
    Hang,
    /// Refuses for good.
    Refuse,
    /// Cannot be reached (a failure that may pass).
    Unreachable,
}

#[derive(Clone)]
struct FakeMatches {
    mode: Mode,
    /// Every request id asked, in order (repeats included).
    asked: Arc<Mutex<Vec<NewMatch>>>,
}

impl FakeMatches {
    fn new(mode: Mode) -> FakeMatches {
        FakeMatches {
            mode,
            asked: Arc::default(),
        }
    }

    fn asked(&self) -> Vec<NewMatch> {
        self.asked.lock().unwrap().clone()
    }
}

impl MatchBackend for FakeMatches {
    async fn create(&self, m: &NewMatch) -> Result<CreatedMatch, BackendError> {
        self.asked.lock().unwrap().push(m.clone());
        match self.mode {
            Mode::Create => {}
            Mode::Slow(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
            Mode::Hang => std::future::pending::<()>().await,
            Mode::Refuse | Mode::Unreachable => {
                return Err(BackendError {
                    retryable: self.mode == Mode::Unreachable,
                    message: format!("{:?}", self.mode),
                });
            }
        }
        Ok(CreatedMatch {
            match_id: format!("match-{}", m.request_id),
            tokens: m.players.iter().map(|p| format!("token-{p}")).collect(),
        })
    }

    async fn wait_end(&self, _match_id: &str) -> Result<MatchEnd, BackendError> {
        std::future::pending().await
    }
}

fn tuning() -> Tuning {
    Tuning {
        wave_interval_ms: 3_600_000,
        recover_after_ms: 0,
        ..Tuning::default()
    }
}

fn pool(variant: Variant) -> Pool {
    Pool {
        variant,
        control: TimeControl::parse("3+2").unwrap(),
        rated: true,
    }
}

fn spec(player: &str, variant: Variant) -> JoinSpec {
    JoinSpec {
        player: player.to_owned(),
        pool: pool(variant),
        range: None,
        blocked: Vec::new(),
        partner: None,
    }
}

async fn join<S: PoolStore>(mm: &Matchmaker<S, FakeMatches>, player: &str) -> u64 {
    match mm.join(spec(player, Variant::Chess)).await.unwrap() {
        Ticket::Waiting { session, .. } => session,
        other => panic!("{player}: {other:?}"),
    }
}

/// The players waiting in pool `name`, longest first.
async fn waiting_players<S: PoolStore>(store: &S, name: &str) -> Vec<String> {
    store
        .waiting(name)
        .await
        .unwrap()
        .into_iter()
        .map(|w| w.entry.player)
        .collect()
}

/// Every player of every match created (by request id, repeats of one id counted once), and a
/// check that no player sits in two different matches.
fn players_of(asked: &[NewMatch]) -> HashMap<String, String> {
    let mut seat_of: HashMap<String, String> = HashMap::new();
    for m in asked {
        for p in &m.players {
            if let Some(other) = seat_of.insert(p.clone(), m.request_id.clone()) {
                assert_eq!(
                    other, m.request_id,
                    "{p} paired twice: {other} and {}",
                    m.request_id
                );
            }
        }
    }
    seat_of
}

async fn no_player_twice_and_leavers_never_paired<S: PoolStore>(store: S) {
    let backend = FakeMatches::new(Mode::Create);
    let mm = Matchmaker::new(store, backend.clone(), tuning());
    let name = pool(Variant::Chess).name();
    for i in 0..41 {
        join(&mm, &format!("p{i:02}")).await;
    }
    // Joining again keeps one place; leaving takes it away.
    join(&mm, "p00").await;
    for i in [3, 7, 11] {
        assert!(mm.leave(&format!("p{i:02}")).await.unwrap());
    }
    assert!(!mm.leave("p03").await.unwrap());
    let report = mm.wave(&name).await.unwrap();
    assert!(report.ran);
    assert_eq!(report.waiting, 38);
    assert_eq!(report.created, 19);
    let paired = players_of(&backend.asked());
    assert_eq!(paired.len(), 38);
    for i in [3, 7, 11] {
        assert!(!paired.contains_key(&format!("p{i:02}")));
    }
    // Everyone paired has their match found; a second wave finds nobody left to pair.
    for player in paired.keys() {
        let found = mm.store().found(player).await.unwrap();
        assert_eq!(found.len(), 1, "{player}");
    }
    let again = mm.wave(&name).await.unwrap();
    assert_eq!(again.created, 0);
    assert_eq!(players_of(&backend.asked()).len(), 38);
    // A player with a match found must acknowledge it before joining again.
    let someone = paired.keys().next().unwrap().clone();
    assert!(matches!(
        mm.join(spec(&someone, Variant::Chess)).await.unwrap(),
        Ticket::Found(f) if f.len() == 1
    ));
}

async fn disconnect_removes_the_player<S: PoolStore>(store: S) {
    let mm = Arc::new(Matchmaker::new(
        store,
        FakeMatches::new(Mode::Create),
        tuning(),
    ));
    let name = pool(Variant::Chess).name();
    let ticket = mm.join(spec("leaver", Variant::Chess)).await.unwrap();
    let Ticket::Waiting { session, .. } = ticket.clone() else {
        panic!("{ticket:?}")
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let (_down_tx, down) = tokio::sync::watch::channel(false);
    let held = tokio::spawn({
        let mm = Arc::clone(&mm);
        async move { mm.hold(ticket, tx, down).await }
    });
    let first = rx.recv().await.unwrap().unwrap();
    assert!(matches!(
        first,
        JoinEvent::Status(ref s) if s.waiting == 1 && s.position == 1
    ));
    drop(rx);
    tokio::time::timeout(Duration::from_secs(5), held)
        .await
        .expect("the hold ends when the client goes away")
        .unwrap();
    assert_eq!(
        mm.store()
            .place(&name, "leaver", session, 1000)
            .await
            .unwrap(),
        Place::Gone
    );
    assert!(mm.store().waiting(&name).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_on_one_redis_never_pair_a_player_twice() {
    let redis = arbiter_testkit::redis().await;
    // Locks of a few ms, shorter than a creation and about as long as a wave's reads: the
    // replicas keep taking the pool from each other mid-wave, so they run waves over the same
    // players at once, and only the fencing number and the commit's check that every member
    // still waits keep their pairings apart.
    let short = Tuning {
        wave_lock_ms: 4,
        ..tuning()
    };
    let a_backend = FakeMatches::new(Mode::Slow(10));
    let b_backend = FakeMatches::new(Mode::Slow(10));
    let a = Arc::new(Matchmaker::new(
        RedisStore::connect(redis.secure("arbiter-matchmaking"))
            .await
            .unwrap(),
        a_backend.clone(),
        short.clone(),
    ));
    let b = Arc::new(Matchmaker::new(
        RedisStore::connect(redis.secure("arbiter-matchmaking"))
            .await
            .unwrap(),
        b_backend.clone(),
        short,
    ));
    let name = pool(Variant::Chess).name();
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    let mut loops = Vec::new();
    for replica in [Arc::clone(&a), Arc::clone(&b)] {
        let name = name.clone();
        let stop = stop.clone();
        loops.push(tokio::spawn(async move {
            while !*stop.borrow() {
                let _ = replica.wave(&name).await;
                tokio::task::yield_now().await;
            }
        }));
    }
    let expected = 240;
    for i in 0..expected {
        let player = format!("p{i}");
        if i % 2 == 0 {
            join(&a, &player).await;
        } else {
            join(&b, &player).await;
        }
        if i % 8 == 0 {
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop_tx.send(true).unwrap();
    for l in loops {
        l.await.unwrap();
    }
    // Whatever was left mid-way is finished by later waves.
    let settled = Tuning {
        wave_lock_ms: 30_000,
        ..tuning()
    };
    let last_backend = FakeMatches::new(Mode::Create);
    let last = Matchmaker::new(
        RedisStore::connect(redis.secure("arbiter-matchmaking"))
            .await
            .unwrap(),
        last_backend.clone(),
        settled,
    );
    last.wave(&name).await.unwrap();
    let mut asked = a_backend.asked();
    asked.extend(b_backend.asked());
    asked.extend(last_backend.asked());
    let paired = players_of(&asked);
    // Every player is paired once, or still waits; nobody is lost.
    let waiting: HashSet<String> = waiting_players(last.store(), &name)
        .await
        .into_iter()
        .collect();
    assert!(paired.len() >= expected - 2, "{} paired", paired.len());
    assert_eq!(paired.len() + waiting.len(), expected, "{waiting:?}");
    for p in &waiting {
        assert!(!paired.contains_key(p));
    }
    for p in paired.keys() {
        assert_eq!(last.store().found(p).await.unwrap().len(), 1, "{p}");
    }
}

#[tokio::test]
async fn a_replica_killed_mid_wave_loses_nobody() {
    let redis = arbiter_testkit::redis().await;
    let dying_backend = FakeMatches::new(Mode::Hang);
    let dying = Arc::new(Matchmaker::new(
        RedisStore::connect(redis.secure("arbiter-matchmaking"))
            .await
            .unwrap(),
        dying_backend.clone(),
        Tuning {
            wave_lock_ms: 200,
            ..tuning()
        },
    ));
    let name = pool(Variant::Chess).name();
    for i in 0..10 {
        join(&dying, &format!("k{i}")).await;
    }
    // The replica commits its pairings, calls the match service, and dies there.
    let wave = tokio::spawn({
        let dying = Arc::clone(&dying);
        let name = name.clone();
        async move { dying.wave(&name).await }
    });
    for _ in 0..100 {
        if dying_backend.asked().len() == 5 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    wave.abort();
    let planned: HashSet<String> = dying_backend
        .asked()
        .into_iter()
        .map(|m| m.request_id)
        .collect();
    assert_eq!(planned.len(), 5);
    // Nobody waits, and nobody has a match yet: the pairings are being made.
    let survivor_backend = FakeMatches::new(Mode::Create);
    let survivor = Matchmaker::new(
        RedisStore::connect(redis.secure("arbiter-matchmaking"))
            .await
            .unwrap(),
        survivor_backend.clone(),
        tuning(),
    );
    assert!(survivor.store().waiting(&name).await.unwrap().is_empty());
    assert_eq!(survivor.store().making(&name).await.unwrap().len(), 5);
    // Another replica's wave, once the lock has run out, finishes them with the same request
    // ids (so the match service hands back the same matches).
    tokio::time::sleep(Duration::from_millis(250)).await;
    let report = survivor.wave(&name).await.unwrap();
    assert_eq!(report.recovered, 5);
    let recovered: HashSet<String> = survivor_backend
        .asked()
        .into_iter()
        .map(|m| m.request_id)
        .collect();
    assert_eq!(recovered, planned);
    let paired = players_of(&survivor_backend.asked());
    assert_eq!(paired.len(), 10);
    for i in 0..10 {
        assert_eq!(
            survivor
                .store()
                .found(&format!("k{i}"))
                .await
                .unwrap()
                .len(),
            1
        );
    }
}

async fn a_failed_creation_puts_the_players_back<S: PoolStore>(store: S) {
    let mm = Matchmaker::new(store, FakeMatches::new(Mode::Refuse), tuning());
    let name = pool(Variant::Chess).name();
    let s1 = join(&mm, "f1").await;
    let s2 = join(&mm, "f2").await;
    let report = mm.wave(&name).await.unwrap();
    assert_eq!((report.created, report.failed), (0, 1));
    let back: Vec<String> = waiting_players(mm.store(), &name).await;
    assert_eq!(back, ["f1", "f2"]);
    // Their streams still hold their places.
    assert!(matches!(
        mm.store().place(&name, "f1", s1, 1000).await.unwrap(),
        Place::Waiting(_)
    ));
    assert!(matches!(
        mm.store().place(&name, "f2", s2, 1000).await.unwrap(),
        Place::Waiting(_)
    ));
}

async fn ratings_change_once_per_match<S: PoolStore>(store: S) {
    let mm = Arc::new(Matchmaker::new(
        store,
        FakeMatches::new(Mode::Create),
        tuning(),
    ));
    let follow = Follow {
        match_id: "m1".into(),
        pool: pool(Variant::Chess).name(),
        players: vec!["w".into(), "b".into()],
    };
    let end = MatchEnd::Scored {
        white_quarters: 4,
        at_ms: 1_700_000_000_000,
    };
    // Two replicas settle the same match at once, then one again: one update in all.
    let (x, y) = tokio::join!(mm.settle(&follow, end), mm.settle(&follow, end));
    let mut results = [x.unwrap(), y.unwrap()];
    results.sort_by_key(|a| *a == Applied::Done);
    assert_eq!(results, [Applied::Already, Applied::Done]);
    assert_eq!(mm.settle(&follow, end).await.unwrap(), Applied::Already);
    let white = mm.ratings("w").await.unwrap();
    let black = mm.ratings("b").await.unwrap();
    assert_eq!((white.len(), black.len()), (1, 1));
    assert_eq!((white[0].elo, black[0].elo), (1520, 1480));
    assert_eq!((white[0].games, black[0].games), (1, 1));
    assert!(white[0].glicko_rating > 1500.0 && black[0].glicko_rating < 1500.0);
    assert_eq!(white[0].speed, "blitz");

    // A second match of the same players moves them again; a casual one does not.
    let second = Follow {
        match_id: "m2".into(),
        ..follow.clone()
    };
    assert_eq!(mm.settle(&second, end).await.unwrap(), Applied::Done);
    assert_eq!(mm.ratings("w").await.unwrap()[0].games, 2);
    let casual = Follow {
        match_id: "m3".into(),
        pool: Pool {
            rated: false,
            ..pool(Variant::Chess)
        }
        .name(),
        ..follow.clone()
    };
    assert_eq!(mm.settle(&casual, end).await.unwrap(), Applied::Done);
    let aborted = Follow {
        match_id: "m4".into(),
        ..follow
    };
    assert_eq!(
        mm.settle(&aborted, MatchEnd::NoResult).await.unwrap(),
        Applied::Done
    );
    assert_eq!(mm.ratings("w").await.unwrap()[0].games, 2);
}

async fn bughouse_waves_form_teams<S: PoolStore>(store: S) {
    let backend = FakeMatches::new(Mode::Create);
    let mm = Matchmaker::new(store, backend.clone(), tuning());
    let name = pool(Variant::Bughouse).name();
    let partnered = |a: &str, b: &str| JoinSpec {
        partner: Some(b.to_owned()),
        ..spec(a, Variant::Bughouse)
    };
    for s in [
        partnered("ann", "bob"),
        partnered("bob", "ann"),
        // Cid names a partner who never joins: cid waits.
        partnered("cid", "zed"),
        spec("dan", Variant::Bughouse),
        spec("eve", Variant::Bughouse),
    ] {
        assert!(matches!(mm.join(s).await.unwrap(), Ticket::Waiting { .. }));
    }
    let report = mm.wave(&name).await.unwrap();
    assert_eq!(report.created, 1);
    let asked = backend.asked();
    let m = &asked[0];
    assert_eq!(m.variant, Variant::Bughouse);
    // Team 1 is white A + black B, team 2 black A + white B; ann and bob play together.
    let team_of = |p: &str| {
        let i = m.players.iter().position(|x| x == p).unwrap();
        if i == 0 || i == 3 { 1 } else { 2 }
    };
    assert_eq!(team_of("ann"), team_of("bob"));
    assert_eq!(team_of("dan"), team_of("eve"));
    assert_ne!(team_of("ann"), team_of("dan"));
    let waiting: Vec<String> = waiting_players(mm.store(), &name).await;
    assert_eq!(waiting, ["cid"]);
}

async fn pools_and_places_are_bounded<S: PoolStore>(store: S) {
    let mm = Matchmaker::new(
        store,
        FakeMatches::new(Mode::Create),
        Tuning {
            max_waiting: 2,
            max_pools: 1,
            ..tuning()
        },
    );
    join(&mm, "a").await;
    join(&mm, "b").await;
    // Taking one's own place over is not a new player.
    join(&mm, "b").await;
    let full = mm.join(spec("c", Variant::Chess)).await.unwrap_err();
    assert_eq!(full.code(), tonic::Code::ResourceExhausted);
    let other_pool = mm.join(spec("d", Variant::Glinski)).await.unwrap_err();
    assert_eq!(other_pool.code(), tonic::Code::ResourceExhausted);
    assert!(other_pool.description().contains("pools"), "{other_pool:?}");
    // Once the pool empties, another may open.
    assert!(mm.leave("a").await.unwrap());
    assert!(mm.leave("b").await.unwrap());
    mm.wave(&pool(Variant::Chess).name()).await.unwrap();
    assert!(matches!(
        mm.join(spec("d", Variant::Glinski)).await.unwrap(),
        Ticket::Waiting { .. }
    ));
}

async fn a_full_pool_costs_the_place_held_elsewhere<S: PoolStore>(store: S) {
    let mm = Matchmaker::new(
        store,
        FakeMatches::new(Mode::Create),
        Tuning {
            max_waiting: 1,
            ..tuning()
        },
    );
    join(&mm, "a").await;
    assert!(matches!(
        mm.join(spec("b", Variant::Glinski)).await.unwrap(),
        Ticket::Waiting { .. }
    ));
    let full = mm.join(spec("a", Variant::Glinski)).await.unwrap_err();
    assert_eq!(full.code(), tonic::Code::ResourceExhausted);
    let chess = pool(Variant::Chess).name();
    assert!(waiting_players(mm.store(), &chess).await.is_empty());
    assert!(!mm.leave("a").await.unwrap(), "a waits nowhere");
}

async fn an_unreachable_match_service_keeps_the_pairing_then_gives_it_back<S: PoolStore + Clone>(
    store: S,
) {
    let backend = FakeMatches::new(Mode::Unreachable);
    let mm = Matchmaker::new(
        store,
        backend.clone(),
        Tuning {
            create_retries: 1,
            ..tuning()
        },
    );
    let name = pool(Variant::Chess).name();
    join(&mm, "u1").await;
    join(&mm, "u2").await;
    // The match may exist (a timeout): the pairing waits for a later wave, same request id.
    let first = mm.wave(&name).await.unwrap();
    assert_eq!((first.created, first.failed, first.pending), (0, 0, 1));
    assert!(mm.store().waiting(&name).await.unwrap().is_empty());
    assert_eq!(mm.store().making(&name).await.unwrap().len(), 1);
    let second = mm.wave(&name).await.unwrap();
    assert_eq!(second.pending, 1);
    let ids: HashSet<String> = backend.asked().into_iter().map(|m| m.request_id).collect();
    assert_eq!(
        ids.len(),
        1,
        "every attempt asks for the same match: {ids:?}"
    );
    // Once it has failed for long enough, the players go back into the pool.
    let impatient = Matchmaker::new(
        mm.store().clone(),
        backend,
        Tuning {
            create_retries: 0,
            give_up_after_ms: 0,
            ..tuning()
        },
    );
    let third = impatient.wave(&name).await.unwrap();
    // The old pairing is given back, the same wave pairs the two again, and that fails too.
    assert_eq!(third.failed, 2);
    assert!(impatient.store().making(&name).await.unwrap().is_empty());
    let back: Vec<String> = waiting_players(impatient.store(), &name).await;
    assert_eq!(back, ["u1", "u2"]);
}

async fn a_player_gone_while_matched_is_not_put_back<S: PoolStore>(store: S) {
    let name = pool(Variant::Chess).name();
    let mm = Matchmaker::new(store, FakeMatches::new(Mode::Refuse), tuning());
    let s1 = join(&mm, "g1").await;
    join(&mm, "g2").await;
    let store = mm.store();
    let fence = store.lock(&name, 30_000).await.unwrap().unwrap();
    let pairing = Pairing {
        id: "g-pairing".into(),
        members: vec!["g1".into(), "g2".into()],
    };
    assert_eq!(
        store.commit(&name, fence, &[pairing], &[]).await.unwrap(),
        Some(vec![true])
    );
    // g1's stream closes while the match is being made.
    assert!(!store.leave("g1", Some(s1)).await.unwrap());
    assert!(matches!(
        mm.join(spec("g1", Variant::Chess)).await.unwrap_err(),
        MatchmakingError::Precondition {
            reason: "MATCHING",
            ..
        }
    ));
    // The creation fails: g2 goes back, g1 does not, and may join again.
    assert!(store.unmake(&name, "g-pairing").await.unwrap());
    assert_eq!(waiting_players(store, &name).await, ["g2"]);
    assert!(matches!(
        mm.join(spec("g1", Variant::Chess)).await.unwrap(),
        Ticket::Waiting { .. }
    ));
    // A stale fence commits nothing.
    assert_eq!(
        store.commit(&name, fence, &[], &[]).await.unwrap(),
        Some(vec![])
    );
    store.unlock(&name, fence).await.unwrap();
    let newer = store.lock(&name, 30_000).await.unwrap().unwrap();
    assert!(newer > fence);
    assert_eq!(store.commit(&name, fence, &[], &[]).await.unwrap(), None);
}

/// A wave of more pairings than Lua's `unpack` takes at once (about 8,000) commits in one step.
#[tokio::test]
async fn redis_commits_a_wave_of_many_pairings() {
    let redis = arbiter_testkit::redis().await;
    let store = RedisStore::connect(redis.secure("arbiter-matchmaking"))
        .await
        .unwrap();
    let mm = Matchmaker::new(store, FakeMatches::new(Mode::Create), tuning());
    join(&mm, "x0").await;
    join(&mm, "x1").await;
    let name = pool(Variant::Chess).name();
    let fence = mm.store().lock(&name, 30_000).await.unwrap().unwrap();
    let mut pairings: Vec<Pairing> = (0..10_000)
        .map(|i| Pairing {
            id: format!("gone-{i}"),
            members: vec![format!("g{i}a"), format!("g{i}b")],
        })
        .collect();
    pairings.push(Pairing {
        id: "real".into(),
        members: vec!["x0".into(), "x1".into()],
    });
    let unpaired: Vec<String> = (0..20_000).map(|i| format!("u{i}")).collect();
    let done = mm
        .store()
        .commit(&name, fence, &pairings, &unpaired)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done.len(), 10_001);
    assert_eq!(done.iter().filter(|d| **d).count(), 1);
    assert!(done[10_000]);
    assert_eq!(mm.store().making(&name).await.unwrap().len(), 1);
}

/// Runs each store-generic test above against the in-process store (`memory_<name>`), a fresh
/// Redis (`redis_<name>`), and, all in one test, a Redis Cluster (`on_a_cluster`).
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(super::MemoryStore::new()).await;
                }
            )*
        }
        mod redis {
            $(
                #[tokio::test]
                async fn $name() {
                    let redis = arbiter_testkit::redis().await;
                    super::$name(super::RedisStore::connect(redis.secure("arbiter-matchmaking")).await.unwrap()).await;
                }
            )*
        }
        /// Every test above, in turn, on one Redis Cluster (emptied between tests), as the
        /// matchmaking user: each pool in its own slot, the players' side in another.
        #[tokio::test]
        async fn on_a_cluster() {
            let cluster = tokio::task::spawn_blocking(arbiter_testkit::cluster::RedisCluster::start)
                .await
                .unwrap();
            let url = cluster.url_as("arbiter-matchmaking");
            $(
                cluster.flush_all();
                $name(RedisStore::connect(url.as_str()).await.unwrap()).await;
            )*
        }
    };
}

on_both_stores!(
    no_player_twice_and_leavers_never_paired,
    disconnect_removes_the_player,
    a_failed_creation_puts_the_players_back,
    ratings_change_once_per_match,
    bughouse_waves_form_teams,
    pools_and_places_are_bounded,
    a_full_pool_costs_the_place_held_elsewhere,
    an_unreachable_match_service_keeps_the_pairing_then_gives_it_back,
    a_player_gone_while_matched_is_not_put_back,
);

/// On a Redis Cluster each pool's keys live in the pool's own slot (`mm:q:{<pool>}:…`), apart
/// from the players' states (`mm:{mm}:…`): pools spread over the primaries, and a pool whose
/// slot moves to another primary while its players wait runs its next wave there.
#[tokio::test]
async fn pools_live_in_their_own_slots_and_follow_a_moved_slot_on_a_cluster() {
    let cluster = tokio::task::spawn_blocking(arbiter_testkit::cluster::RedisCluster::start)
        .await
        .unwrap();
    let store = RedisStore::connect(cluster.url_as("arbiter-matchmaking").as_str())
        .await
        .unwrap();
    let backend = FakeMatches::new(Mode::Create);
    let mm = Matchmaker::new(store, backend.clone(), tuning());
    let variants = [Variant::Chess, Variant::Glinski, Variant::Byzantine];
    for (i, v) in variants.iter().enumerate() {
        for p in ["a", "b"] {
            let player = format!("{p}{i}");
            assert!(matches!(
                mm.join(spec(&player, *v)).await.unwrap(),
                Ticket::Waiting { .. }
            ));
        }
    }
    let admin = ::redis::Client::open(arbiter_testkit::cluster::RedisCluster::node_url(
        cluster.primaries()[0],
    ))
    .unwrap();
    let mut admin = admin.get_multiplexed_async_connection().await.unwrap();
    let slot_of = async |conn: &mut ::redis::aio::MultiplexedConnection, key: &str| -> u16 {
        ::redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query_async(conn)
            .await
            .unwrap()
    };
    let central = slot_of(&mut admin, "mm:{mm}:who").await;
    let mut owners = HashSet::from([cluster.owner(central)]);
    let mut slots = Vec::new();
    for v in variants {
        let name = pool(v).name();
        let key = format!("mm:q:{{{name}}}:e");
        let slot = slot_of(&mut admin, &key).await;
        assert_ne!(slot, central, "{name}");
        // The pool's places are on the primary that serves its slot.
        let owner = cluster.owner(slot);
        let on_owner =
            ::redis::Client::open(arbiter_testkit::cluster::RedisCluster::node_url(owner))
                .unwrap()
                .get_multiplexed_async_connection()
                .await
                .unwrap();
        let places: usize = ::redis::cmd("HLEN")
            .arg(&key)
            .query_async(&mut on_owner.clone())
            .await
            .unwrap();
        assert_eq!(places, 2, "{name} on port {owner}");
        owners.insert(owner);
        slots.push((name, slot, owner));
    }
    assert!(owners.len() >= 2, "one primary holds everything: {slots:?}");
    // The chess pool's slot moves to another primary while its players wait.
    let (chess, slot, from) = slots[0].clone();
    let to = cluster
        .primaries()
        .into_iter()
        .find(|p| *p != from)
        .unwrap();
    let moved = cluster.migrate_slot(slot, to, 1, Duration::from_millis(20));
    assert!(moved >= 4, "the pool's keys moved: {moved}");
    assert_eq!(cluster.owner(slot), to);
    for (name, _, _) in &slots {
        let report = mm.wave(name).await.unwrap();
        assert_eq!(report.created, 1, "{name}: {report:?}");
        assert!(waiting_players(mm.store(), name).await.is_empty());
    }
    let asked = backend.asked();
    assert_eq!(asked.len(), 3);
    let players: HashSet<&String> = asked.iter().flat_map(|m| &m.players).collect();
    assert_eq!(players.len(), 6, "no player twice");
    assert!(mm.store().making(&chess).await.unwrap().is_empty());
}

/// Two replicas, three pools, waves over every pool on both replicas without pause, and 160
/// players on eight tasks joining pools at random (switching pools as they go), leaving, and
/// acknowledging their matches found to join again: 3,200 calls. Whatever the interleaving: a
/// join that finds matches found finds one (a player is never in two pairings at once), nobody
/// waits in two pools, and every pool with players is listed for waves.
async fn random_joins_leaves_and_waves_keep_every_player_in_one_place(redis: RedisConfig) {
    let short = Tuning {
        wave_lock_ms: 200,
        ..tuning()
    };
    let backends = [
        FakeMatches::new(Mode::Slow(5)),
        FakeMatches::new(Mode::Slow(5)),
    ];
    let mut replicas = Vec::new();
    for b in &backends {
        replicas.push(Arc::new(Matchmaker::new(
            RedisStore::connect(redis.clone()).await.unwrap(),
            b.clone(),
            short.clone(),
        )));
    }
    let variants = [Variant::Chess, Variant::Glinski, Variant::Byzantine];
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    let mut loops = Vec::new();
    for r in &replicas {
        for v in variants {
            let (r, stop, name) = (Arc::clone(r), stop.clone(), pool(v).name());
            loops.push(tokio::spawn(async move {
                while !*stop.borrow() {
                    let _ = r.wave(&name).await;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }));
        }
    }
    let doubles = Arc::new(Mutex::new(Vec::<String>::new()));
    let found_joins = Arc::new(Mutex::new(0usize));
    let mut tasks = Vec::new();
    for t in 0..8u64 {
        let replicas: Vec<_> = replicas.iter().map(Arc::clone).collect();
        let (doubles, found_joins) = (Arc::clone(&doubles), Arc::clone(&found_joins));
        tasks.push(tokio::spawn(async move {
            // Xorshift, seeded per task: the same calls every run (their interleaving varies).
            let mut seed = 12_345 + t * 7_919;
            let mut rnd = move || {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed
            };
            for _ in 0..400 {
                let player = format!("s{t}-{}", rnd() % 20);
                let r = &replicas[(rnd() % 2) as usize];
                let v = variants[(rnd() % 3) as usize];
                if rnd() % 4 == 0 {
                    let _ = r.leave(&player).await;
                } else if let Ok(Ticket::Found(found)) = r.join(spec(&player, v)).await {
                    *found_joins.lock().unwrap() += 1;
                    if found.len() > 1 {
                        doubles.lock().unwrap().push(format!("{player}: {found:?}"));
                    }
                    for f in found {
                        r.acknowledge(&player, &f.match_id).await.unwrap();
                    }
                }
                if rnd() % 3 == 0 {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    stop_tx.send(true).unwrap();
    for l in loops {
        l.await.unwrap();
    }
    assert!(
        doubles.lock().unwrap().is_empty(),
        "{:?}",
        doubles.lock().unwrap()
    );
    // The waves ran while the players came and went (not only at the end).
    assert!(*found_joins.lock().unwrap() > 20);
    let store = RedisStore::connect(redis).await.unwrap();
    let listed = store.pools().await.unwrap();
    let mut seen: HashMap<String, String> = HashMap::new();
    for v in variants {
        let name = pool(v).name();
        for p in waiting_players(&store, &name).await {
            assert!(listed.contains(&name), "{p} waits in {name}, not listed");
            if let Some(other) = seen.insert(p.clone(), name.clone()) {
                panic!("{p} waits in {other} and in {name}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn random_joins_leaves_and_waves_keep_every_player_in_one_place_on_redis() {
    let redis = arbiter_testkit::redis().await;
    random_joins_leaves_and_waves_keep_every_player_in_one_place(
        redis.secure("arbiter-matchmaking"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn random_joins_leaves_and_waves_keep_every_player_in_one_place_on_a_cluster() {
    let cluster = tokio::task::spawn_blocking(arbiter_testkit::cluster::RedisCluster::start)
        .await
        .unwrap();
    random_joins_leaves_and_waves_keep_every_player_in_one_place(RedisConfig::plain(
        &cluster.url_as("arbiter-matchmaking"),
    ))
    .await;
}
