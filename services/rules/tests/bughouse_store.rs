//! The bughouse match store suite, run against both stores: the in-process one and a real Redis
//! started by testcontainers (image `redis:7`; on a machine without a registry
//! `deploy/build-redis-image.sh` builds it from Debian's redis-server, and `.ci/run` does that).
//!
//! Lifecycle, idempotent retries, refusals that leave the state unchanged, 64 concurrent clients
//! hammering both boards of 16 matches with the 64-unit conservation invariant checked after
//! every step, a Redis restart mid-match, and TTL expiry.

use arbiter_core::bughouse::{BoardId, Team};
use arbiter_core::{Color, Crazyhouse, Locale, Position};
use arbiter_rules::bughouse::redis_store::RedisStore;
use arbiter_rules::bughouse::store::{MatchStore, MemoryStore, Retention};
use arbiter_rules::bughouse::{Bughouse, BughouseError, MatchView, StoredEvent};
use std::sync::Arc;
use std::time::Duration;
use testcontainers::core::{IntoContainerPort, WaitFor};
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, GenericImage, ImageExt};

fn players(tag: &str) -> [String; 4] {
    ["wa", "ba", "wb", "bb"].map(|p| format!("{tag}-{p}"))
}

async fn mv<S: MatchStore>(
    b: &Bughouse<S>,
    id: &str,
    player: &str,
    board: BoardId,
    text: &str,
    ply: u32,
) -> Result<MatchView, BughouseError> {
    b.make_move(id, player, board, text, ply, Locale::English)
        .await
        .map(|(_, view, _)| view)
}

async fn lifecycle<S: MatchStore>(b: &Bughouse<S>) {
    let p = players("life");
    let m = b
        .create(p.clone(), "180+0".into(), None, None)
        .await
        .unwrap();
    assert_eq!(m.units(), 64);
    assert_eq!(m.boards[0].ply, 0);
    let id = m.id.clone();
    mv(b, &id, &p[0], BoardId::A, "e4", 0).await.unwrap();
    mv(b, &id, &p[1], BoardId::A, "d5", 1).await.unwrap();
    // White A takes: the black pawn goes to Black B (White A's partner).
    let v = mv(b, &id, &p[0], BoardId::A, "exd5", 2).await.unwrap();
    assert_eq!(v.boards[1].black_reserve, "p");
    assert_eq!(v.units(), 64);
    mv(b, &id, &p[2], BoardId::B, "Nf3", 0).await.unwrap();
    let v = mv(b, &id, &p[3], BoardId::B, "P@e4", 1).await.unwrap();
    assert_eq!(v.boards[1].black_reserve, "");
    assert_eq!(
        v.bfen(),
        "rnbqkbnr/ppp1pppp/8/3P4/8/8/PPPP1PPP/RNBQKBNR[] b KQkq - 0 2 | \
         rnbqkbnr/pppppppp/8/8/4p3/5N2/PPPPPPPP/RNBQKB1R[] w KQkq - 0 2"
    );
    // Events: 5 moves, a reserve change from the capture, one from the drop.
    let events = b.events(&id, 0).await.unwrap();
    assert_eq!(events.len(), 7);
    assert_eq!(events.last().unwrap().0, 7);
    assert_eq!(b.events(&id, 5).await.unwrap().len(), 2);
    // Draw offers: one team, then the other.
    let v = b.offer_draw(&id, &p[0]).await.unwrap();
    assert_eq!((v.draw_offers.clone(), v.outcome), (vec![1], None));
    let v = b.offer_draw(&id, &p[2]).await.unwrap();
    assert_eq!(v.outcome.unwrap().score.to_string(), "1/2-1/2");
    assert!(matches!(
        b.resign(&id, &p[0]).await,
        Err(BughouseError::FailedPrecondition {
            reason: "MATCH_OVER",
            ..
        })
    ));
    assert!(matches!(
        b.events(&id, 0).await.unwrap().last(),
        Some((
            _,
            StoredEvent::Match(arbiter_core::bughouse::MatchEvent::End(_))
        ))
    ));
    // Resignation: the resigning player's team loses.
    let m = b
        .create(players("resign"), String::new(), None, None)
        .await
        .unwrap();
    let v = b.resign(&m.id, "resign-wb").await.unwrap();
    assert_eq!(v.outcome.unwrap().winner(), Some(Team::One));
    // A client-chosen id can be used once.
    b.create(players("dup"), String::new(), None, Some("fixed-id".into()))
        .await
        .unwrap();
    assert!(matches!(
        b.create(players("dup"), String::new(), None, Some("fixed-id".into()))
            .await,
        Err(BughouseError::AlreadyExists(_))
    ));
}

async fn retries_and_refusals<S: MatchStore>(b: &Bughouse<S>) {
    let p = players("retry");
    let id = b
        .create(p.clone(), String::new(), None, None)
        .await
        .unwrap()
        .id;
    let (first, _, dup) = b
        .make_move(&id, &p[0], BoardId::A, "e4", 0, Locale::English)
        .await
        .unwrap();
    assert!(!dup);
    // The same request again (a client retry after a lost answer) is a duplicate: no change.
    let (again, view, dup) = b
        .make_move(&id, &p[0], BoardId::A, "e4", 0, Locale::English)
        .await
        .unwrap();
    assert!(dup);
    assert_eq!((again.uci.as_str(), again.ply), (first.uci.as_str(), 1));
    assert_eq!(view.boards[0].ply, 1);
    let before = b.get(&id).await.unwrap();
    let refusals: Vec<(&str, BoardId, &str, u32, &str)> = vec![
        (&p[1], BoardId::A, "e4", 1, "move"),           // illegal
        (&p[1], BoardId::A, "N@f6", 1, "move"),         // drop of a piece not held
        ("stranger", BoardId::A, "e5", 1, "player_id"), // not in the match
        (&p[1], BoardId::B, "e5", 0, "board"),          // not their board
    ];
    for (player, board, text, ply, field) in refusals {
        match mv(b, &id, player, board, text, ply).await {
            Err(BughouseError::Invalid { field: f, .. }) => assert_eq!(f, field, "{text}"),
            other => panic!("{text}: {other:?}"),
        }
    }
    for (player, ply, reason) in [(&p[1], 0, "STALE_PLY"), (&p[0], 1, "NOT_YOUR_TURN")] {
        match mv(b, &id, player, BoardId::A, "e5", ply).await {
            Err(BughouseError::FailedPrecondition { reason: r, .. }) => assert_eq!(r, reason),
            other => panic!("{reason}: {other:?}"),
        }
    }
    assert!(matches!(
        b.get("no-such-match").await,
        Err(BughouseError::NotFound(_))
    ));
    assert_eq!(
        b.get(&id).await.unwrap(),
        before,
        "refusals changed nothing"
    );
}

/// 16 matches, one client per seat (64 in all), each playing random legal moves on its board
/// as fast as it can, and retrying some moves; after every applied move the match is read
/// back and must hold exactly 64 units.
async fn hammer<S: MatchStore>(b: Arc<Bughouse<S>>) {
    let mut ids = Vec::new();
    for i in 0..16 {
        let m = b
            .create(players(&format!("h{i}")), String::new(), None, None)
            .await
            .unwrap();
        ids.push((m.id, players(&format!("h{i}"))));
    }
    let mut tasks = Vec::new();
    for (i, (id, p)) in ids.iter().enumerate() {
        for (seat, player) in p.iter().enumerate() {
            let (b, id, player) = (b.clone(), id.clone(), player.clone());
            let board = if seat < 2 { BoardId::A } else { BoardId::B };
            let color = if seat % 2 == 0 {
                Color::White
            } else {
                Color::Black
            };
            let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ ((i * 4 + seat) as u64 + 1);
            tasks.push(tokio::spawn(async move {
                let mut played = 0;
                for _ in 0..400 {
                    if played >= 12 {
                        break;
                    }
                    let v = b.get(&id).await.unwrap();
                    if v.outcome.is_some() {
                        break;
                    }
                    let bv = &v.boards[board.index()];
                    if bv.turn != color {
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        continue;
                    }
                    let pos = Crazyhouse::from_fen(&bv.fen, true).unwrap();
                    let moves = pos.legal_moves();
                    if moves.is_empty() {
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        continue; // waiting for a piece from the partner
                    }
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let uci = pos.move_to_uci(moves[(rng % moves.len() as u64) as usize]);
                    let r = b
                        .make_move(&id, &player, board, &uci, bv.ply, Locale::English)
                        .await;
                    match r {
                        Ok((_, after, _)) => {
                            assert_eq!(after.units(), 64, "{}", after.bfen());
                            played += 1;
                            if rng.is_multiple_of(4) {
                                // A retry of the same request is never applied twice.
                                let (_, again, dup) = b
                                    .make_move(&id, &player, board, &uci, bv.ply, Locale::English)
                                    .await
                                    .unwrap();
                                assert!(dup);
                                assert_eq!(again.units(), 64);
                            }
                        }
                        Err(BughouseError::FailedPrecondition {
                            reason: "MATCH_OVER",
                            ..
                        }) => break,
                        Err(e) => panic!("{id} {player} {uci}: {e}"),
                    }
                    let now = b.get(&id).await.unwrap();
                    assert_eq!(now.units(), 64, "{}", now.bfen());
                }
                played
            }));
        }
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    assert!(total > 300, "only {total} moves were played");
    for (id, _) in ids {
        assert_eq!(b.get(&id).await.unwrap().units(), 64);
    }
}

async fn ttl_expiry<S: MatchStore>(b: &Bughouse<S>) {
    let m = b
        .create(players("ttl"), String::new(), None, None)
        .await
        .unwrap();
    mv(b, &m.id, "ttl-wa", BoardId::A, "e4", 0).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(matches!(
        b.get(&m.id).await,
        Err(BughouseError::NotFound(_))
    ));
}

const SHORT: Retention = Retention {
    ttl: Duration::from_millis(700),
    grace: Duration::from_millis(700),
};

#[tokio::test]
async fn memory_store_suite() {
    let b = Arc::new(Bughouse::new(MemoryStore::new(Retention::default())));
    lifecycle(&b).await;
    retries_and_refusals(&b).await;
    hammer(b).await;
    ttl_expiry(&Bughouse::new(MemoryStore::new(SHORT))).await;
}

/// A free local port for the container (fixed across a restart, so clients can reconnect).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn redis(port: u16) -> ContainerAsync<GenericImage> {
    GenericImage::new("redis", "7")
        .with_exposed_port(6379.tcp())
        .with_wait_for(WaitFor::message_on_stdout("Ready to accept connections"))
        .with_mapped_port(port, 6379.tcp())
        .start()
        .await
        .expect("start Redis (run deploy/build-redis-image.sh where no registry is reachable)")
}

#[tokio::test]
async fn redis_store_suite() {
    let port = free_port();
    let _container = redis(port).await;
    let url = format!("redis://127.0.0.1:{port}");
    let b = Arc::new(Bughouse::new(
        RedisStore::connect(&url, Retention::default())
            .await
            .unwrap(),
    ));
    lifecycle(&b).await;
    retries_and_refusals(&b).await;
    hammer(b).await;
    ttl_expiry(&Bughouse::new(
        RedisStore::connect(&url, SHORT).await.unwrap(),
    ))
    .await;
}

/// Redis stops mid-match: requests fail as `Unavailable` with nothing applied, and once it is
/// back (its append-only file keeps the data) the match continues with every unit in place.
#[tokio::test]
async fn redis_restart_mid_match() {
    let port = free_port();
    let container = redis(port).await;
    let url = format!("redis://127.0.0.1:{port}");
    let b = Bughouse::new(
        RedisStore::connect(&url, Retention::default())
            .await
            .unwrap(),
    );
    let p = players("restart");
    let id = b
        .create(p.clone(), String::new(), None, None)
        .await
        .unwrap()
        .id;
    mv(&b, &id, &p[0], BoardId::A, "e4", 0).await.unwrap();
    mv(&b, &id, &p[1], BoardId::A, "d5", 1).await.unwrap();
    mv(&b, &id, &p[0], BoardId::A, "exd5", 2).await.unwrap();
    let before = b.get(&id).await.unwrap();

    container.stop().await.unwrap();
    match mv(&b, &id, &p[2], BoardId::B, "e4", 0).await {
        Err(BughouseError::Unavailable(_)) => {}
        other => panic!("expected Unavailable, got {other:?}"),
    }
    assert!(matches!(
        b.get(&id).await,
        Err(BughouseError::Unavailable(_))
    ));
    container.start().await.unwrap();

    // The service recovers by itself once Redis answers again.
    let mut after = None;
    for _ in 0..100 {
        match b.get(&id).await {
            Ok(v) => {
                after = Some(v);
                break;
            }
            Err(BughouseError::Unavailable(_)) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    let after = after.expect("Redis came back");
    assert_eq!(after, before, "nothing lost, nothing half-applied");
    assert_eq!(after.units(), 64);
    let v = mv(&b, &id, &p[3], BoardId::B, "P@e5", 0).await;
    assert!(
        matches!(v, Err(BughouseError::FailedPrecondition { .. })),
        "{v:?}"
    );
    mv(&b, &id, &p[2], BoardId::B, "e4", 0).await.unwrap();
    let v = mv(&b, &id, &p[3], BoardId::B, "P@e5", 1).await.unwrap();
    assert_eq!(v.units(), 64);
    assert_eq!(v.boards[1].black_reserve, "");
}
