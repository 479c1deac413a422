//! The match store on a real Redis Cluster (three primaries, three replicas: local
//! `redis-server` processes, `arbiter_testkit::cluster`): the store suite as on one Redis, the
//! slot layout against the cluster's own hashing, and moves that go on while a slot of live
//! matches moves to another primary, while a primary hands over to its replica and while a
//! primary is killed: every match keeps its 64 units, no move is applied twice, every applied
//! move is one event, and (but for the kill, where Redis's asynchronous replication may lose the
//! last writes) every move a client was told was applied is there.

use crate::store::{SHORT, Table, create, creation, mv, redis_matches, suite, units};
use arbiter_core::bughouse::BoardId::{self, A, B};
use arbiter_core::{AnyPosition, Color, Position, Variant};
use arbiter_matches::record::StoredEvent;
use arbiter_matches::store::redis::{CLUSTER_GROUPS, Layout, RedisStore};
use arbiter_matches::store::{Retention, StoreError};
use arbiter_matches::{MatchError, Matches};
use arbiter_redis_conn::slots::slot;
use arbiter_testkit::cluster::RedisCluster;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The match service's ACL user, which every test here runs as.
const USER: &str = "arbiter-matches";

/// A cluster, started off the async workers (it takes a few seconds).
async fn cluster() -> RedisCluster {
    tokio::task::spawn_blocking(RedisCluster::start)
        .await
        .unwrap()
}

/// On one thread, as on one Redis: the suite's retries follow their moves before another
/// client's move can come between.
#[tokio::test]
async fn the_store_suite_runs_on_a_cluster_and_spreads_over_its_primaries() {
    let c = cluster().await;
    suite(
        Arc::new(redis_matches(&c.url_as(USER), Retention::default()).await),
        redis_matches(&c.url_as(USER), SHORT).await,
    )
    .await;
    // The suite's matches are on every primary.
    let mut finished = 0;
    let layout = Layout::grouped();
    for p in c.primaries() {
        let client = redis::Client::open(RedisCluster::node_url(p)).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let keys: u64 = redis::cmd("DBSIZE").query_async(&mut conn).await.unwrap();
        assert!(keys > 0, "primary {p} holds no key");
        // Each finished match is in its own group's stream, under its own id.
        for stream in layout.finished_streams() {
            if c.owner(slot(stream.as_bytes())) != p {
                continue;
            }
            let entries: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
                .arg(&stream)
                .arg("-")
                .arg("+")
                .query_async(&mut conn)
                .await
                .unwrap();
            for (_, fields) in entries {
                let id = &fields.iter().find(|(k, _)| k == "match_id").unwrap().1;
                let state = &layout.keys(id)[3];
                assert_eq!(
                    slot(state.as_bytes()),
                    slot(stream.as_bytes()),
                    "{id} in {stream}"
                );
                finished += 1;
            }
        }
    }
    assert!(finished > 0, "no finished match in any stream");
}

/// A player's matches are in the index of each match's group; listing reads them all and
/// pages through them newest first.
#[tokio::test]
async fn a_players_matches_are_listed_across_the_groups() {
    use arbiter_matches::store::MatchStore;
    let c = cluster().await;
    let m = redis_matches(&c.url_as(USER), Retention::default()).await;
    let mut ids = Vec::new();
    for _ in 0..40 {
        ids.push(create(&m, creation(Variant::Chess, "lister")).await.id);
        // Distinct creation times, so that the order is the creation order.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let layout = Layout::grouped();
    let groups: std::collections::HashSet<usize> = ids
        .iter()
        .map(|id| layout.groups().unwrap().group_of(id))
        .collect();
    assert!(
        groups.len() > 10,
        "40 matches in only {} groups",
        groups.len()
    );
    let first = m
        .store()
        .player_matches("lister-w", None, 15)
        .await
        .unwrap();
    let rest = m
        .store()
        .player_matches("lister-w", first.last(), 100)
        .await
        .unwrap();
    let listed: Vec<String> = first
        .iter()
        .chain(&rest)
        .map(|(_, id)| id.clone())
        .collect();
    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();
    assert_eq!(listed, newest_first);
}

/// The layout's keys hash as the cluster hashes them, each match's keys and its group's index
/// share a slot, and the groups spread evenly over the three primaries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_layout_puts_each_match_in_one_slot_and_the_groups_over_every_primary() {
    let c = cluster().await;
    let port = c.primaries()[0];
    let client = redis::Client::open(RedisCluster::node_url(port)).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let layout = Layout::grouped();
    for id in ["m1", "a-match-id", "m0123456789abcdef", "x:y:z", "é"] {
        let keys = layout.keys(id);
        let mut slots = Vec::new();
        for k in keys.iter().chain(&layout.chat_keys(id)) {
            let theirs: u16 = redis::cmd("CLUSTER")
                .arg("KEYSLOT")
                .arg(k)
                .query_async(&mut conn)
                .await
                .unwrap();
            assert_eq!(slot(k.as_bytes()), theirs, "{k}");
            slots.push(theirs);
        }
        assert!(slots.windows(2).all(|w| w[0] == w[1]), "{id}: {slots:?}");
    }
    let groups = layout.groups().unwrap();
    assert_eq!(groups.count(), usize::from(CLUSTER_GROUPS));
    let mut per_primary: HashMap<u16, usize> = HashMap::new();
    for tag in groups.tags() {
        *per_primary
            .entry(c.owner(slot(tag.as_bytes())))
            .or_default() += 1;
    }
    assert_eq!(per_primary.len(), 3, "{per_primary:?}");
    assert!(
        per_primary.values().all(|&n| (10..=11).contains(&n)),
        "{per_primary:?}"
    );
}

/// Flags fall on a cluster as on one Redis: two replicas' flag workers read every group's
/// deadline index, end each timed-out game exactly once, and take over the claims of a replica
/// that died.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flags_fall_exactly_once_on_a_cluster() {
    let c = cluster().await;
    crate::clocks::flags_fall_once(
        c.url_as(USER).as_str().into(),
        c.url_as(USER).as_str().into(),
    )
    .await;
}

/// One seat's client: plays random legal moves, and records each move it was told was applied.
async fn player(
    m: Arc<Matches<RedisStore>>,
    t: Arc<Table>,
    board: BoardId,
    color: Color,
    mut rng: u64,
    stop: Arc<AtomicBool>,
) -> (u32, Vec<u32>) {
    let mut acknowledged = Vec::new();
    let mut failures = 0;
    while !stop.load(Ordering::Relaxed) {
        let r = match m.get(&t.id).await {
            Ok(r) => r,
            Err(MatchError::Store(StoreError::Unavailable(_))) => {
                failures += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
            Err(e) => panic!("{}: {e}", t.id),
        };
        assert_eq!(units(&r), 64, "{}", t.id);
        if r.outcome.is_some() {
            break;
        }
        let b = &r.boards[board.index()];
        let pos = AnyPosition::from_text(Variant::Bughouse, &b.full_position(true)).unwrap();
        let moves = pos.legal_moves();
        if pos.turn() != color || moves.is_empty() {
            tokio::time::sleep(Duration::from_millis(3)).await;
            continue;
        }
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let uci = moves[(rng % moves.len() as u64) as usize].to_string();
        match mv(&m, &t, board, color, &uci, b.ply).await {
            Ok(a) => {
                assert_eq!(units(&a.record), 64);
                assert!(!a.duplicate);
                acknowledged.push(b.ply + 1);
                // A human pace, so that the games outlast the change under way.
                tokio::time::sleep(Duration::from_millis(15)).await;
            }
            Err(e) if e.reason() == Some("MATCH_OVER") => break,
            // The request failed while the cluster changed, or lost the race to a retry of
            // its own whose reply was lost: read again and go on.
            Err(MatchError::Store(StoreError::Unavailable(_))) => failures += 1,
            Err(e) if e.reason() == Some("STALE_PLY") || e.reason() == Some("NOT_YOUR_TURN") => {
                failures += 1;
            }
            Err(e) => panic!("{} {uci}: {e}", t.id),
        }
    }
    (failures, acknowledged)
}

/// What a fault run checks at the end of each match: 64 units; every applied move is one
/// event with the next ply of its board (none twice); and, with `all_acknowledged`, every move
/// a client was told was applied is there.
async fn check_matches(
    m: &Matches<RedisStore>,
    tables: &[Arc<Table>],
    acknowledged: &HashMap<(String, usize), Vec<u32>>,
    all_acknowledged: bool,
) -> u32 {
    let mut moves = 0;
    for t in tables {
        // Right after a kill the client may still be learning the new map: a read that fails
        // as unavailable is tried again (for up to 10 s).
        let mut tries = 0;
        let (r, events) = loop {
            let read = async {
                Ok::<_, MatchError>((m.get(&t.id).await?, m.events(&t.id, 0, usize::MAX).await?))
            };
            match read.await {
                Ok(read) => break read,
                Err(MatchError::Store(StoreError::Unavailable(e))) if tries < 100 => {
                    tries += 1;
                    eprintln!("{}: {e}; reading again", t.id);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("{}: {e}", t.id),
            }
        };
        assert_eq!(units(&r), 64, "{}", t.id);
        let mut plies = [Vec::new(), Vec::new()];
        for (_, e) in events {
            if let StoredEvent::Move { board, ply, .. } = e {
                plies[board.index()].push(ply);
            }
        }
        for b in [A, B] {
            let want: Vec<u32> = (1..=r.boards[b.index()].ply).collect();
            assert_eq!(plies[b.index()], want, "{} board {b:?}", t.id);
            moves += r.boards[b.index()].ply;
            if all_acknowledged {
                let told = acknowledged
                    .get(&(t.id.clone(), b.index()))
                    .map_or(0, |v| v.iter().copied().max().unwrap_or(0));
                assert!(
                    told <= r.boards[b.index()].ply,
                    "{} board {b:?}: ply {told} was acknowledged, the board is at {}",
                    t.id,
                    r.boards[b.index()].ply
                );
            }
            // Each clock is within its control (180 minutes, no increment) and still running.
            let clock = r.boards[b.index()].clock.as_ref().unwrap();
            for side in [Color::White, Color::Black] {
                let left = clock.side(side).remaining_ms;
                assert!(left > 0 && left <= 10_800_000, "{}: {left}", t.id);
            }
        }
        // Random moves may mate; no clock may have run out in a few seconds of 180 minutes.
        assert!(
            r.outcome
                .as_ref()
                .is_none_or(|o| o.reason != arbiter_core::EndReason::Timeout),
            "{}: {:?}",
            t.id,
            r.outcome
        );
    }
    moves
}

/// Bughouse matches played by 4 clients each, while (1) the slot of the first match's group
/// moves to another primary key by key, (2) a primary hands over to its replica (manual
/// failover), (3) a primary is killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moves_go_on_through_a_slot_migration_a_failover_and_a_killed_primary() {
    let c = Arc::new(std::sync::Mutex::new(cluster().await));
    let url = c.lock().unwrap().url_as(USER);
    let m = Arc::new(redis_matches(url.as_str(), Retention::default()).await);
    let layout = Layout::grouped();

    // Phase by phase: new matches, played while the cluster changes under them; then checked.
    for phase in ["migration", "failover", "kill"] {
        let mut tables = Vec::new();
        for i in 0..12 {
            tables.push(Arc::new(
                create(&m, creation(Variant::Bughouse, &format!("{phase}{i}"))).await,
            ));
        }
        // The slot of the first match is the one that moves, or whose primary fails.
        let moved_slot = slot(layout.keys(&tables[0].id)[0].as_bytes());
        let stop = Arc::new(AtomicBool::new(false));
        let mut clients = Vec::new();
        for (i, t) in tables.iter().enumerate() {
            for (s, (board, color)) in [
                (A, Color::White),
                (A, Color::Black),
                (B, Color::White),
                (B, Color::Black),
            ]
            .into_iter()
            .enumerate()
            {
                let rng = 0x9E37_79B9_7F4A_7C15u64 ^ ((i * 4 + s) as u64 + 1) ^ phase.len() as u64;
                let task = tokio::spawn(player(
                    Arc::clone(&m),
                    Arc::clone(t),
                    board,
                    color,
                    rng,
                    Arc::clone(&stop),
                ));
                clients.push((t.id.clone(), board.index(), task));
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let cluster = Arc::clone(&c);
        let changed = tokio::task::spawn_blocking(move || {
            let mut c = cluster.lock().unwrap();
            match phase {
                "migration" => {
                    let from = c.owner(moved_slot);
                    let to = c.primaries().into_iter().find(|&p| p != from).unwrap();
                    let keys = c.migrate_slot(moved_slot, to, 2, Duration::from_millis(150));
                    assert!(keys > 0, "the slot held no key");
                    assert_eq!(c.owner(moved_slot), to);
                }
                "failover" => {
                    let primary = c.owner(moved_slot);
                    c.failover(primary);
                }
                _ => {
                    let primary = c.owner(moved_slot);
                    c.kill_primary(primary);
                }
            }
        });
        changed.await.unwrap();
        tokio::time::sleep(Duration::from_millis(700)).await;
        stop.store(true, Ordering::Relaxed);
        let mut acknowledged: HashMap<(String, usize), Vec<u32>> = HashMap::new();
        let mut failures = 0;
        for (id, board, task) in clients {
            let (f, acks) = task.await.unwrap();
            failures += f;
            acknowledged.entry((id, board)).or_default().extend(acks);
        }
        let moves = check_matches(&m, &tables, &acknowledged, phase != "kill").await;
        eprintln!("{phase}: {moves} moves in all, {failures} requests failed or lost a race");
    }
}
