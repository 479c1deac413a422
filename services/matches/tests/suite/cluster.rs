//! The match store on a real Redis Cluster (three primaries, three replicas: local
//! `redis-server` processes, `arbiter_testkit::cluster`): the store suite as on one Redis, the
//! slot layout against the cluster's own hashing, and moves that go on while a slot of live
//! matches moves to another primary, while a primary hands over to its replica and while a
//! primary is killed: every match keeps its 64 units, no move is applied twice, every applied
//! move is one event, and (but for the kill, where Redis's asynchronous replication may lose the
//! last writes) every move a client was told was applied is there. And watchers on one replica
//! follow the moves made through another, over the groups' shard channels, while their slot
//! moves.

use crate::clocks::wait_over;
use crate::store::{
    SEATS, SHORT, Table, check_clock_events, create, creation, mv, random_move, redis_matches,
    suite, units,
};
use arbiter_core::bughouse::BoardId::{self, A, B};
use arbiter_core::{Color, Variant};
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

/// Flags that fall while their group's slot moves to another primary key by key, with two
/// replicas' flag workers running through the move: 8 short games of the moving group and 24 of
/// other groups each end on time exactly once, flagged at the deadline their clock set after the
/// last move (to the millisecond, whenever the worker got to it), with their clock events adding
/// up. The moving group's games are played last and the move starts before their first deadline;
/// it takes a key's pause per key (about 33 keys at 200 ms), longer than the games' 3 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flags_fall_at_their_deadlines_while_their_slot_moves() {
    use crate::clocks::{chess, play, redis_matches};
    let c = cluster().await;
    let url = c.url_as(USER);
    let (a, b) = (
        redis_matches(url.as_str().into()).await,
        redis_matches(url.as_str().into()).await,
    );
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let workers: Vec<_> = [&a, &b]
        .into_iter()
        .map(|m| {
            let (m, stopped) = (Arc::clone(m), stopped.clone());
            tokio::spawn(async move { m.run_flag_worker(stopped).await })
        })
        .collect();

    // Games are created until 8 are in the group of the first (one in 32 is); the games of
    // the other groups created on the way (up to 24) are played too, the rest never start.
    let layout = Layout::grouped();
    let slot_of = |id: &str| slot(layout.keys(id)[0].as_bytes());
    let (mut moving, mut others) = (Vec::new(), Vec::new());
    let mut moving_slot = None;
    for i in 0.. {
        let g = a.create(chess(&format!("f{i}"), "3s+0")).await.unwrap();
        let s = slot_of(&g.record.id);
        if *moving_slot.get_or_insert(s) == s {
            moving.push(g);
            if moving.len() == 8 {
                break;
            }
        } else if others.len() < 24 {
            others.push(g);
        }
    }
    let moving_slot = moving_slot.unwrap();
    let mut deadlines = HashMap::new();
    for g in others.iter().chain(&moving) {
        let id = &g.record.id;
        play(&*a, id, &g.seats, Color::White, "e4", 0)
            .await
            .unwrap();
        play(&*b, id, &g.seats, Color::Black, "e5", 1)
            .await
            .unwrap();
        let r = a.get(id).await.unwrap();
        let d = r.boards[0].clock.as_ref().unwrap().deadline().unwrap();
        assert_eq!(d.color, Color::White);
        deadlines.insert(id.clone(), d.at);
    }
    let first_due = moving
        .iter()
        .map(|g| deadlines[&g.record.id])
        .min()
        .unwrap();

    let to = c
        .primaries()
        .into_iter()
        .find(|&p| p != c.owner(moving_slot))
        .unwrap();
    let started = settled("now", || a.now()).await;
    assert!(
        started < first_due,
        "the first flag was due before the slot began to move"
    );
    let c = tokio::task::spawn_blocking(move || {
        let keys = c.migrate_slot(moving_slot, to, 1, Duration::from_millis(200));
        (c, keys)
    });
    let (c, keys) = c.await.unwrap();
    assert_eq!(c.owner(moving_slot), to);
    // The flags of the moving group were due while it moved.
    let moved_at = settled("now", || a.now()).await;
    assert!(
        moved_at > first_due,
        "the slot moved before the first flag was due"
    );

    // A flag whose script ran out of tries during the move waits for its claim's lease (5 s)
    // to lapse before the next claim: 20 s is ample.
    let waited = tokio::time::Instant::now();
    for g in moving.iter().chain(&others) {
        let id = &g.record.id;
        let left = Duration::from_secs(20).saturating_sub(waited.elapsed());
        let r = wait_over(&*b, id, left).await;
        let outcome = r.outcome.unwrap();
        assert_eq!(outcome.reason, arbiter_core::EndReason::Timeout, "{id}");
        assert_eq!(outcome.score, arbiter_core::Score::BLACK_WINS, "{id}");
        match r.boards[0].clock.as_ref().unwrap().phase() {
            arbiter_core::clock::Phase::Flagged { color, at } => {
                assert_eq!((color, at), (Color::White, deadlines[id]), "{id}");
            }
            other => panic!("{id}: {other:?}"),
        }
        let events = settled(id, || a.events(id, 0, usize::MAX)).await;
        let ends = events
            .iter()
            .filter(|(_, e)| matches!(e, StoredEvent::End(_)))
            .count();
        assert_eq!(ends, 1, "{id} ended exactly once");
        check_clock_events(&r, &events);
    }
    stop.send(true).unwrap();
    for w in workers {
        w.await.unwrap();
    }
    eprintln!(
        "{keys} keys moved in {} ms of store time after the first flag of their group was due",
        moved_at - first_due
    );
}

/// `op`'s answer, asked again while the store answers unavailable (up to 100 times, 100 ms
/// apart): right after a slot moves or a primary is lost, a client under load may still be
/// learning the new map, and a request of its may time out, as a client's retry would cover.
async fn settled<T, F: Future<Output = Result<T, MatchError>>>(
    what: &str,
    mut op: impl FnMut() -> F,
) -> T {
    let mut tries = 0;
    loop {
        match op().await {
            Ok(answer) => return answer,
            Err(MatchError::Store(StoreError::Unavailable(e))) if tries < 100 => {
                tries += 1;
                eprintln!("{what}: {e}; asking again");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{what}: {e}"),
        }
    }
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
        let Some(uci) = random_move(&mut rng, &r, board, color) else {
            tokio::time::sleep(Duration::from_millis(3)).await;
            continue;
        };
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
/// event with the next ply of its board (none twice); every clock charged exactly the time
/// between its moves ([`check_clock_events`]); and, with `all_acknowledged`, every move a client
/// was told was applied is there.
async fn check_matches(
    m: &Matches<RedisStore>,
    tables: &[Arc<Table>],
    acknowledged: &HashMap<(String, usize), Vec<u32>>,
    all_acknowledged: bool,
) -> u32 {
    let mut moves = 0;
    for t in tables {
        let (r, events) = settled(&t.id, || async {
            Ok((m.get(&t.id).await?, m.events(&t.id, 0, usize::MAX).await?))
        })
        .await;
        assert_eq!(units(&r), 64, "{}", t.id);
        check_clock_events(&r, &events);
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
            for (s, (board, color)) in SEATS.into_iter().enumerate() {
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

/// Two whole match services on a cluster, a match created through `one` and watched through
/// `two`, for the watcher tests below.
struct Watched {
    one: crate::support::Server,
    two: crate::support::Server,
    table: crate::support::Table,
    watch: tonic::Streaming<arbiter_proto::matches::v1::WatchMatchResponse>,
    /// The match's slot, and its group's shard channel.
    slot: u16,
    channel: String,
}

impl Watched {
    async fn start(c: &RedisCluster) -> Watched {
        use crate::hardening::{SERVICE, chess_game, config, start};
        use crate::support::{Client as _, create_from};
        use arbiter_matches::StoreConfig;
        use arbiter_proto::matches::v1 as pb;
        use tonic_health::pb::health_check_response::ServingStatus;
        let url = c.url_as(USER);
        let one = start(config(StoreConfig::redis(url.clone()))).await;
        let two = start(config(StoreConfig::redis(url))).await;
        one.health_becomes(SERVICE, ServingStatus::Serving).await;
        two.health_becomes(SERVICE, ServingStatus::Serving).await;
        let table = create_from(&mut one.client(), chess_game(["ann", "bob"], "")).await;
        let layout = Layout::grouped();
        let slot = slot(layout.keys(&table.id)[0].as_bytes());
        let tag = layout.groups().unwrap().tag_of(&table.id).to_owned();
        let channel = format!("arbiter:matches:changes:{{{tag}}}");
        assert_eq!(arbiter_redis_conn::slots::slot(channel.as_bytes()), slot);
        let watch = two
            .client()
            .watch_match(pb::WatchMatchRequest {
                match_id: table.id.clone(),
                after_seq: 0,
            })
            .await
            .unwrap()
            .into_inner();
        let w = Watched {
            one,
            two,
            table,
            watch,
            slot,
            channel,
        };
        w.subscribed(c).await;
        w
    }

    /// Subscribers on the group's shard channel, as the slot's owner counts them, and on the
    /// cluster-wide channel of one Redis.
    fn subscribers(&self, c: &RedisCluster) -> (u64, u64) {
        let node = redis::Client::open(RedisCluster::node_url(c.owner(self.slot))).unwrap();
        let mut conn = node.get_connection().unwrap();
        let shard: (String, u64) = redis::cmd("PUBSUB")
            .arg("SHARDNUMSUB")
            .arg(&self.channel)
            .query(&mut conn)
            .unwrap();
        let plain: (String, u64) = redis::cmd("PUBSUB")
            .arg("NUMSUB")
            .arg("arbiter:matches:changes")
            .query(&mut conn)
            .unwrap();
        (shard.1, plain.1)
    }

    /// Waits until the watching replica (only) is subscribed on the shard channel, where the
    /// slot is now, and nobody on the cluster-wide channel.
    async fn subscribed(&self, c: &RedisCluster) {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while self.subscribers(c) != (1, 0) {
            assert!(
                std::time::Instant::now() < deadline,
                "subscribers (shard, cluster-wide): {:?}",
                self.subscribers(c)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Plays the move of `ply` through `one` (tried again while the cluster is unavailable)
    /// and waits for `two`'s watcher to stream it, within `within`.
    async fn play_and_hear(&mut self, ply: u32, mv: &str, within: Duration) {
        use crate::support::{A, BLACK, Client as _, WHITE, make_move};
        let side = if ply.is_multiple_of(2) { WHITE } else { BLACK };
        let mut c1 = self.one.client();
        let started = std::time::Instant::now();
        loop {
            match make_move(&mut c1, &self.table, A, side, mv, ply).await {
                Ok(_) => break,
                Err(e)
                    if e.code() == tonic::Code::Unavailable
                        && started.elapsed() < Duration::from_secs(60) =>
                {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(e) => panic!("move {ply}: {e:?}"),
            }
        }
        eprintln!("move {ply} applied after {:?}", started.elapsed());
        let event = tokio::time::timeout(within, self.watch.message())
            .await
            .expect("the other replica's watcher is woken")
            .unwrap()
            .expect("an event");
        assert_eq!(event.seq, u64::from(ply) + 1, "{event:?}");
    }

    async fn stop(self) {
        drop(self.watch);
        self.one.stop().await;
        self.two.stop().await;
    }
}

/// A watcher on one replica hears every move made through another over the shard channel of
/// the match's slot group (`SPUBLISH`/`SSUBSCRIBE`; nothing on the cluster-wide channel), and
/// goes on hearing them after the slot moves to another primary (Redis ends the shard's
/// subscriptions; the replica subscribes again where the slot went and wakes its watchers).
#[tokio::test]
async fn watchers_hear_moves_on_their_groups_shard_channel_while_its_slot_moves() {
    let c = cluster().await;
    let mut w = Watched::start(&c).await;
    let within = Duration::from_secs(10);
    w.play_and_hear(0, "e4", within).await;
    w.play_and_hear(1, "e5", within).await;
    // Between the second and the third move the match's slot moves.
    let slot = w.slot;
    let to = c
        .primaries()
        .into_iter()
        .find(|&p| p != c.owner(slot))
        .unwrap();
    let c = tokio::task::spawn_blocking(move || {
        c.migrate_slot(slot, to, 1, Duration::from_millis(20));
        c
    })
    .await
    .unwrap();
    assert_eq!(c.owner(slot), to);
    w.play_and_hear(2, "Nf3", within).await;
    w.play_and_hear(3, "Nc6", within).await;
    // Subscribed again, where the slot is now.
    w.subscribed(&c).await;
    w.stop().await;
}

/// The primary of a watched match goes silent (SIGSTOP: its connections neither close nor
/// answer, as with a host that lost power) and its replica takes over: both replicas' stores
/// connect again from the slot map after their requests time out, the watching replica finds
/// the silent subscription by its pings and subscribes where the slot is now, and its watcher
/// hears the moves made after.
#[tokio::test]
async fn moves_and_watchers_go_on_after_a_primary_goes_silent_and_fails_over() {
    let c = cluster().await;
    let mut w = Watched::start(&c).await;
    w.play_and_hear(0, "e4", Duration::from_secs(10)).await;
    let silent = c.owner(w.slot);
    let mut c = c;
    let c = tokio::task::spawn_blocking(move || {
        c.freeze_primary(silent);
        c
    })
    .await
    .unwrap();
    assert_ne!(c.owner(w.slot), silent);
    // The first move waits for its requests to time out (retried on the silent connection)
    // before the store connects again: `play_and_hear` tries for up to 60 s.
    let within = Duration::from_secs(20);
    w.play_and_hear(1, "e5", within).await;
    w.play_and_hear(2, "Nf3", within).await;
    w.subscribed(&c).await;
    w.stop().await;
}
