//! Batch jobs on Redis Streams, against a real Redis (testcontainers): workers sharing a job
//! while one is killed, the dead-letter stream, cancellation, idempotent submission, expiry,
//! jobs and request ids scoped to their caller.

use super::{TWO_GAMES, job, position, watch_to_end};
use arbiter_analysis::batch::redis::{DEAD, GROUP, WORK};
use arbiter_analysis::batch::{BatchConfig, Caller, Game, GameSpec, JobSpec, analyse_game};
use arbiter_analysis::engines::EngineRegistry;
use arbiter_analysis::{AnalysisConfig, RedisConfig, WorkerConfig, run_workers};
use arbiter_core::{AnyPosition, Position, Variant as CoreVariant};
use arbiter_engine::{Limits, SystemTime, TimeSource};
use arbiter_proto::analysis::v1 as pb;
use arbiter_proto::common::v1::Variant;
use redis::AsyncCommands;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use tonic::Code;

/// The analysis service's Redis ACL user (deploy/redis/acl.conf).
const USER: &str = "arbiter-analysis";

fn redis_config(url: &str) -> RedisConfig {
    RedisConfig::plain(url)
}

/// The service on Redis with calls checked by `access`, once its health says it reaches Redis.
pub(crate) async fn start_on_redis_with(
    config: AnalysisConfig,
    access: arbiter_kit::access::AccessPolicy,
) -> super::Server {
    let s = super::start_with(config, access).await;
    s.server
        .health_becomes(
            arbiter_analysis::SERVICE_NAME,
            tonic_health::pb::health_check_response::ServingStatus::Serving,
        )
        .await;
    s
}

/// A service on Redis that only accepts jobs (`workers` 0) or also works on them.
/// The front end on Redis: `redis` is a URL or the analysis ACL user over TLS ([`USER`]).
fn front(redis: impl Into<RedisConfig>, workers: usize, ttl: Duration) -> AnalysisConfig {
    AnalysisConfig {
        batch: BatchConfig {
            workers,
            ttl,
            watch_poll: Duration::from_millis(50),
            ..BatchConfig::default()
        },
        redis: Some(redis.into()),
        ..AnalysisConfig::default()
    }
}

/// The service on Redis, once its health says it reaches Redis.
async fn start_on_redis(config: AnalysisConfig) -> super::Server {
    start_on_redis_with(config, arbiter_kit::access::AccessPolicy::development()).await
}

/// Worker processes' settings: quick to claim abandoned items.
fn quick(claim_idle_ms: u64, max_deliveries: u32) -> WorkerConfig {
    WorkerConfig {
        workers: 1,
        claim_idle: Duration::from_millis(claim_idle_ms),
        max_deliveries,
    }
}

/// A worker process, in this one: aborting the task kills it as SIGKILL would (its running
/// game stops, nothing is cleaned up, its item stays pending).
fn worker(redis: impl Into<RedisConfig>, config: WorkerConfig) -> tokio::task::JoinHandle<()> {
    let redis = redis.into();
    let time: Arc<dyn TimeSource> = Arc::new(SystemTime::new());
    tokio::spawn(async move {
        // Never shut down gracefully: only killed.
        let (_keep, rx) = tokio::sync::watch::channel(false);
        run_workers(&redis, config, time, EngineRegistry::builtin(), rx)
            .await
            .unwrap();
    })
}

async fn conn(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// Items pending in the group by consumer (none before a worker made the group).
async fn pending(c: &mut redis::aio::MultiplexedConnection) -> Vec<(String, String)> {
    let reply: redis::streams::StreamPendingCountReply = match redis::cmd("XPENDING")
        .arg(WORK)
        .arg(GROUP)
        .arg("-")
        .arg("+")
        .arg(100)
        .query_async(c)
        .await
    {
        Ok(r) => r,
        Err(e) if e.code() == Some("NOGROUP") => return Vec::new(),
        Err(e) => panic!("{e}"),
    };
    reply.ids.into_iter().map(|p| (p.id, p.consumer)).collect()
}

/// `n` chess games of `plies` moves, the same every run.
pub(crate) fn games(n: usize, plies: usize) -> Vec<Vec<String>> {
    (0..n)
        .map(|g| {
            let mut pos = AnyPosition::start(CoreVariant::Chess).unwrap();
            let mut moves = Vec::new();
            for i in 0..plies {
                let legal = pos.legal_moves();
                if legal.is_empty() || pos.terminal().is_some() {
                    break;
                }
                let m = legal[(g * 13 + i * 7 + 3) % legal.len()];
                moves.push(pos.move_to_uci(m));
                pos.play_unchecked(m);
            }
            moves
        })
        .collect()
}

pub(crate) fn move_lists(id: &str, list: &[Vec<String>], nodes: u64) -> pb::SubmitJobRequest {
    pb::SubmitJobRequest {
        request_id: id.to_owned(),
        games: Some(pb::submit_job_request::Games::MoveLists(pb::GameList {
            games: list
                .iter()
                .map(|moves| pb::GameMoves {
                    start: position(Variant::Chess, ""),
                    moves: moves.clone(),
                    notation: 0,
                })
                .collect(),
        })),
        per_ply: Some(pb::PlyLimit { depth: 0, nodes }),
        engine: String::new(),
    }
}

async fn all_results(
    client: &mut super::AnalysisServiceClient<super::Channel>,
    id: &str,
) -> Vec<pb::GameResult> {
    client
        .get_job_results(pb::GetJobResultsRequest {
            job_id: id.to_owned(),
            offset: 0,
            limit: 0,
        })
        .await
        .unwrap()
        .into_inner()
        .games
}

#[tokio::test]
async fn two_workers_share_a_job_and_one_killed_mid_game_loses_nothing() {
    let redis = arbiter_testkit::redis().await;
    let mut s = start_on_redis(front(redis.secure(USER), 0, Duration::from_secs(600))).await;
    let list = games(8, 30);
    let nodes = 20_000;
    let status = s
        .client
        .submit_job(move_lists("shared", &list, nodes))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    let mut c = conn(&redis.url).await;
    let a = worker(redis.secure(USER), quick(500, 3));
    let a_name = loop {
        if let Some((_, who)) = pending(&mut c).await.pop() {
            break who;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let b = worker(redis.secure(USER), quick(500, 3));
    // Kill A while it holds a game, once B has finished one.
    let (killed_item, killed_game) = loop {
        let done: u64 = c
            .hget(format!("an:j:{}", status.job_id), "done")
            .await
            .unwrap();
        let held = pending(&mut c).await;
        if let Some((item, _)) = held
            .iter()
            .find(|(_, who)| *who == a_name)
            .filter(|_| done >= 2)
        {
            a.abort();
            let _ = a.await;
            // Still pending, still A's: it was killed mid-game.
            if pending(&mut c)
                .await
                .iter()
                .any(|(i, who)| i == item && *who == a_name)
            {
                let range: redis::streams::StreamRangeReply =
                    c.xrange(WORK, item, item).await.unwrap();
                let game: String = range.ids[0].get("game").unwrap();
                break (item.clone(), game.parse::<usize>().unwrap());
            }
            panic!("the item finished while A was being killed");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let last = watch_to_end(&mut s.client, &status.job_id)
        .await
        .pop()
        .unwrap();
    assert_eq!(last.state, pb::JobState::Done as i32);
    assert_eq!(last.games_done, 8);
    assert_eq!(
        last.positions_done, last.positions,
        "every position counted once, although A's game was analysed twice"
    );
    let results = all_results(&mut s.client, &status.job_id).await;
    let indices: Vec<u32> = results.iter().map(|r| r.index).collect();
    assert_eq!(
        indices,
        (0..8).collect::<Vec<_>>(),
        "each game once, in order"
    );
    for (r, moves) in results.iter().zip(&list) {
        assert!(r.error.is_empty(), "{}", r.error);
        assert_eq!(r.plies.len(), moves.len());
    }
    // The game A was killed in was analysed again from its start, by B, to the same result.
    let game = GameSpec {
        start: AnyPosition::start(CoreVariant::Chess).unwrap(),
        moves: {
            let mut p = AnyPosition::start(CoreVariant::Chess).unwrap();
            list[killed_game]
                .iter()
                .map(|m| {
                    let mv = p
                        .parse_move(
                            m,
                            arbiter_core::Notation::Uci,
                            arbiter_core::Locale::English,
                        )
                        .unwrap();
                    p.play_unchecked(mv);
                    mv
                })
                .collect()
        },
    };
    let spec = JobSpec {
        games: vec![Game::Line(game)],
        limits: Limits::nodes(nodes),
        hash_mib: 16,
        engine: String::new(),
    };
    let alone = analyse_game(
        killed_game,
        &spec.games[0],
        &spec,
        &EngineRegistry::default(),
        &AtomicBool::new(false),
        &SystemTime::new(),
        &mut || {},
    )
    .unwrap();
    assert_eq!(
        results[killed_game],
        pb::GameResult::from(alone),
        "item {killed_item}"
    );
    // Nothing left: the stream is empty, nothing pending, nothing dead.
    let left: usize = c.xlen(WORK).await.unwrap();
    assert_eq!(left, 0);
    assert!(pending(&mut c).await.is_empty());
    let dead: usize = c.xlen(DEAD).await.unwrap();
    assert_eq!(dead, 0);
    let stored: usize = c.hlen(format!("an:j:{}:r", status.job_id)).await.unwrap();
    assert_eq!(stored, 8);
    b.abort();
    s.server.stop().await;
}

#[tokio::test]
async fn a_poison_item_goes_to_the_dead_letter_stream_and_its_game_fails() {
    let redis = arbiter_testkit::redis().await;
    let mut s = start_on_redis(front(redis.secure(USER), 0, Duration::from_secs(600))).await;
    let status = s
        .client
        .submit_job(job("poison", TWO_GAMES, 1000))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    // Game 1's item is replaced by one no worker can read.
    let mut c = conn(&redis.url).await;
    let all: redis::streams::StreamRangeReply = c.xrange_all(WORK).await.unwrap();
    let second = all
        .ids
        .iter()
        .find(|e| e.get::<String>("game").as_deref() == Some("1"))
        .unwrap();
    let _: usize = c.xdel(WORK, &[&second.id]).await.unwrap();
    let _: String = c
        .xadd(
            WORK,
            "*",
            &[
                ("job", status.job_id.as_bytes()),
                ("game", b"1".as_slice()),
                ("item", b"\xff\xffnot a game".as_slice()),
            ],
        )
        .await
        .unwrap();
    let w = worker(redis.secure(USER), quick(200, 2));
    let last = watch_to_end(&mut s.client, &status.job_id)
        .await
        .pop()
        .unwrap();
    assert_eq!(
        (last.state, last.games_done),
        (pb::JobState::Done as i32, 2)
    );
    let results = all_results(&mut s.client, &status.job_id).await;
    assert!(results[0].error.is_empty());
    assert_eq!(results[0].plies.len(), 4);
    assert!(
        results[1].error.contains("given up after 3 deliveries")
            && results[1].error.contains("cannot decode"),
        "{}",
        results[1].error
    );
    let dead: redis::streams::StreamRangeReply = c.xrange_all(DEAD).await.unwrap();
    assert_eq!(dead.ids.len(), 1);
    let entry = &dead.ids[0];
    assert_eq!(entry.get::<String>("job").unwrap(), status.job_id);
    assert_eq!(entry.get::<String>("game").unwrap(), "1");
    assert_eq!(entry.get::<String>("deliveries").unwrap(), "3");
    assert!(
        entry
            .get::<String>("error")
            .unwrap()
            .contains("cannot decode")
    );
    let payload: Vec<u8> = entry.get("payload").unwrap();
    assert_eq!(payload, b"\xff\xffnot a game");
    let left: usize = c.xlen(WORK).await.unwrap();
    assert_eq!(left, 0);
    assert!(pending(&mut c).await.is_empty());
    w.abort();
    s.server.stop().await;
}

/// A rolling upgrade: an item queued and a result stored by the previous version (both
/// prost-encoded) are read by this one, which writes its own encoding.
#[tokio::test]
async fn items_and_results_of_the_previous_version_are_read() {
    let redis = arbiter_testkit::redis().await;
    let mut s = start_on_redis(front(redis.secure(USER), 0, Duration::from_secs(600))).await;
    let status = s
        .client
        .submit_job(job("upgrade", TWO_GAMES, 1000))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    let mut c = conn(&redis.url).await;
    let all: redis::streams::StreamRangeReply = c.xrange_all(WORK).await.unwrap();
    let item = |game: &str| {
        all.ids
            .iter()
            .find(|e| e.get::<String>("game").as_deref() == Some(game))
            .unwrap()
    };
    // Written in this version's encoding.
    let new: Vec<u8> = item("0").get("item").unwrap();
    assert!(new.starts_with(b"gm1:"));
    // Game 1's item as the previous version queued it.
    let second = item("1");
    let payload: Vec<u8> = second.get("item").unwrap();
    let Ok(Game::Line(g)) = Game::from_item(&payload) else {
        panic!("a line");
    };
    let old = prost::Message::encode_to_vec(&pb::GameMoves {
        start: Some(arbiter_kit::convert::position_to_proto(&g.start)),
        moves: g.moves.iter().map(ToString::to_string).collect(),
        notation: arbiter_proto::common::v1::MoveNotation::Uci as i32,
    });
    let _: usize = c.xdel(WORK, &[&second.id]).await.unwrap();
    let _: String = c
        .xadd(
            WORK,
            "*",
            &[
                ("job", status.job_id.as_bytes()),
                ("game", b"1".as_slice()),
                ("item", old.as_slice()),
            ],
        )
        .await
        .unwrap();
    let w = worker(redis.secure(USER), quick(2_000, 3));
    let last = watch_to_end(&mut s.client, &status.job_id)
        .await
        .pop()
        .unwrap();
    assert_eq!(
        (last.state, last.games_done),
        (pb::JobState::Done as i32, 2)
    );
    let results = all_results(&mut s.client, &status.job_id).await;
    assert!(results.iter().all(|r| r.error.is_empty()), "{results:?}");
    assert_eq!(results[1].plies.len(), g.moves.len());
    let stored: Vec<u8> = c
        .hget(format!("an:j:{}:r", status.job_id), 1)
        .await
        .unwrap();
    assert!(stored.starts_with(b"gr2:"), "results are written anew");
    // Game 0's result as the previous version stored it: read back the same.
    let _: () = c
        .hset(
            format!("an:j:{}:r", status.job_id),
            0,
            prost::Message::encode_to_vec(&results[0]),
        )
        .await
        .unwrap();
    assert_eq!(all_results(&mut s.client, &status.job_id).await, results);
    w.abort();
    s.server.stop().await;
}

#[tokio::test]
async fn jobs_on_redis_are_idempotent_cancellable_and_expire() {
    let redis = arbiter_testkit::redis().await;
    // The service's own worker serves the queue.
    // Kept 3 s after their last progress: long enough to look at the cancelled job.
    let mut s = start_on_redis(front(redis.secure(USER), 1, Duration::from_secs(3))).await;
    let first = s
        .client
        .submit_job(job("same", TWO_GAMES, 1000))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    let again = s
        .client
        .submit_job(job("same", TWO_GAMES, 1000))
        .await
        .unwrap()
        .into_inner();
    let (again, again_duplicate) = (again.status.unwrap(), again.duplicate);
    assert_eq!(
        (again.job_id.as_str(), again_duplicate),
        (first.job_id.as_str(), true)
    );
    let other = s
        .client
        .submit_job(job("same", TWO_GAMES, 2000))
        .await
        .unwrap_err();
    assert_eq!(other.code(), Code::AlreadyExists);
    let last = watch_to_end(&mut s.client, &first.job_id)
        .await
        .pop()
        .unwrap();
    assert_eq!(
        (last.state, last.games_done, last.positions_done),
        (pb::JobState::Done as i32, 2, 9)
    );
    assert_eq!(all_results(&mut s.client, &first.job_id).await.len(), 2);

    // A bughouse match goes through the queue like any game.
    let zh = s
        .client
        .submit_job(super::bpgn_job("zh", super::BUGHOUSE, 1000))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    let last = watch_to_end(&mut s.client, &zh.job_id).await.pop().unwrap();
    assert_eq!(
        (last.state, last.positions_done),
        (pb::JobState::Done as i32, 16)
    );
    let boards: String = all_results(&mut s.client, &zh.job_id).await[0]
        .plies
        .iter()
        .map(|p| p.board.as_str())
        .collect();
    assert_eq!(boards, "AABABABB");

    // A long job, cancelled: it ends cancelled, and its items are dropped.
    let long = s
        .client
        .submit_job(move_lists("long", &games(20, 40), 50_000))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    let cancelled = s
        .client
        .cancel_job(pb::CancelJobRequest {
            job_id: long.job_id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    assert_eq!(cancelled.state, pb::JobState::Cancelled as i32);
    let mut c = conn(&redis.url).await;
    let drained = async {
        loop {
            let left: usize = c.xlen(WORK).await.unwrap();
            if left == 0 && pending(&mut c).await.is_empty() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), drained)
        .await
        .expect("the cancelled job's items are dropped");
    let after = s
        .client
        .get_job(pb::GetJobRequest {
            job_id: long.job_id.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    assert_eq!(after.state, pb::JobState::Cancelled as i32);
    assert!(after.games_done < 20);

    // Past their retention both jobs are gone, every key with them.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    for id in [&first.job_id, &long.job_id] {
        let gone = s
            .client
            .get_job(pb::GetJobRequest { job_id: id.clone() })
            .await
            .unwrap_err();
        assert_eq!(gone.code(), Code::NotFound);
        let gone = s
            .client
            .get_job_results(pb::GetJobResultsRequest {
                job_id: id.clone(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(gone.code(), Code::NotFound);
    }
    let keys: Vec<String> = c.keys("an:j:*").await.unwrap();
    assert!(keys.is_empty(), "{keys:?}");
    let keys: Vec<String> = c.keys("an:rid:*").await.unwrap();
    assert!(keys.is_empty(), "{keys:?}");
    // The request id is free again: a new job.
    let fresh = s
        .client
        .submit_job(job("same", TWO_GAMES, 1000))
        .await
        .unwrap()
        .into_inner();
    let (fresh, fresh_duplicate) = (fresh.status.unwrap(), fresh.duplicate);
    assert!(!fresh_duplicate);
    assert_ne!(fresh.job_id, first.job_id);
    s.server.stop().await;
}

/// On Redis as in process, request ids and jobs belong to their caller; the keys naming request
/// ids are bounded hashes of the caller and the id, never the id itself.
#[tokio::test]
async fn jobs_on_redis_belong_to_their_caller() {
    let redis = arbiter_testkit::redis().await;
    let mut s = start_on_redis(front(redis.secure(USER), 1, Duration::from_secs(600))).await;
    let (x, y) = super::jobs_belong_to_their_caller(&mut s.client).await;
    let mut c = conn(&redis.url).await;
    let keys: Vec<String> = c.keys("an:rid:*").await.unwrap();
    assert_eq!(keys.len(), 3, "X's, Y's and Z's: {keys:?}");
    for k in &keys {
        let digest = k.strip_prefix("an:rid:").unwrap();
        assert!(
            digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
            "{k}"
        );
    }
    let mut owners = Vec::new();
    for id in [&x, &y] {
        let owner: Option<String> = c.hget(format!("an:j:{id}"), "owner").await.unwrap();
        owners.push(owner);
    }
    assert!(
        owners
            .iter()
            .all(|o| o.as_ref().is_some_and(|o| o.len() == 64))
    );
    assert_ne!(owners[0], owners[1]);
    s.server.stop().await;
}

/// On Redis as in process, with API keys a job is its key's client's and its id is random;
/// the job's `owner` is the client's caller digest, and a job stored under an id of the form
/// before random ids (`job-<16 hex digits>-<n>`) is still found by it.
#[tokio::test]
async fn with_keys_jobs_on_redis_belong_to_the_keys_client_and_old_ids_are_read() {
    let redis = arbiter_testkit::redis().await;
    let (alice, bob) = (super::key_of("alice", None), super::key_of("bob", None));
    let mut s = start_on_redis_with(
        front(redis.secure(USER), 1, Duration::from_secs(600)),
        super::keys_policy(&[&alice, &bob]),
    )
    .await;
    let first = super::jobs_belong_to_their_key(&mut s.client, &alice.key, &bob.key).await;
    let mut c = conn(&redis.url).await;
    let owner: Option<String> = c.hget(format!("an:j:{first}"), "owner").await.unwrap();
    assert_eq!(owner, Some(Caller::client("alice").hex()));
    // The same job under an old-form id: found by alice, not by bob.
    let old = "job-00000000000000ab-42";
    for suffix in ["", ":r", ":p"] {
        let from = format!("an:j:{first}{suffix}");
        if c.exists(&from).await.unwrap() {
            let _: () = c
                .rename(&from, format!("an:j:{old}{suffix}"))
                .await
                .unwrap();
        }
    }
    let a = super::Who {
        key: Some(alice.key.as_str()),
        client_id: None,
    };
    let status = s
        .client
        .get_job(a.ask(pb::GetJobRequest { job_id: old.into() }))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    assert_eq!(
        (status.job_id.as_str(), status.state, status.games_done),
        (old, pb::JobState::Done as i32, 2)
    );
    let results = s
        .client
        .get_job_results(a.ask(pb::GetJobResultsRequest {
            job_id: old.into(),
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(results.games.len(), 2);
    let b = super::Who {
        key: Some(bob.key.as_str()),
        client_id: None,
    };
    super::nothing_to_see_as(&mut s.client, old, b).await;
    s.server.stop().await;
}

#[tokio::test]
async fn a_worker_stopping_gracefully_hands_its_game_back_at_once() {
    let redis = arbiter_testkit::redis().await;
    let mut s = start_on_redis(front(redis.secure(USER), 0, Duration::from_secs(600))).await;
    let status = s
        .client
        .submit_job(move_lists("handed-back", &games(1, 20), 50_000))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    let mut c = conn(&redis.url).await;
    // A claim timeout far longer than the test: only a hand-back lets the second worker in.
    let (stop, rx) = tokio::sync::watch::channel(false);
    let first = {
        let redis = redis.secure(USER);
        tokio::spawn(async move {
            let time: Arc<dyn TimeSource> = Arc::new(SystemTime::new());
            run_workers(
                &redis,
                quick(600_000, 3),
                time,
                EngineRegistry::builtin(),
                rx,
            )
            .await
        })
    };
    let held = loop {
        if let Some(p) = pending(&mut c).await.pop() {
            break p;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    stop.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(5), first)
        .await
        .expect("the worker stops within a heartbeat or two")
        .unwrap()
        .unwrap();
    assert!(pending(&mut c).await.is_empty(), "nothing left pending");
    let queued: redis::streams::StreamRangeReply = c.xrange_all(WORK).await.unwrap();
    assert_eq!(queued.ids.len(), 1);
    assert_ne!(queued.ids[0].id, held.0, "a fresh entry, first in line");
    let second = worker(redis.secure(USER), quick(600_000, 3));
    let last = watch_to_end(&mut s.client, &status.job_id)
        .await
        .pop()
        .unwrap();
    assert_eq!(
        (last.state, last.games_done, last.positions_done),
        (pb::JobState::Done as i32, 1, last.positions)
    );
    second.abort();
    s.server.stop().await;
}

/// Asks the worker's health port until it answers `SERVING` (`want`) or not, for up to 20 s.
async fn worker_health_becomes(addr: std::net::SocketAddr, want: bool) {
    let check = |name: &'static str| arbiter_kit::probe::check(addr, name, Duration::from_secs(2));
    for _ in 0..200 {
        let whole = check("").await;
        let named = check(arbiter_analysis::WORKER_HEALTH_NAME).await;
        if whole.is_ok() == want && named.is_ok() == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the worker's health did not become serving={want}");
}

#[tokio::test]
async fn a_worker_process_serves_health_that_follows_redis() {
    let redis = arbiter_testkit::redis_on(arbiter_testkit::free_port()).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let config = redis_config(&redis.url);
    let process = tokio::spawn(async move {
        let time: Arc<dyn TimeSource> = Arc::new(SystemTime::new());
        arbiter_analysis::run_worker_process(
            &config,
            quick(600_000, 3),
            time,
            EngineRegistry::builtin(),
            Some(listener),
            async {
                let _ = stopped.await;
            },
        )
        .await
    });
    worker_health_becomes(addr, true).await;
    // Redis goes away: the worker says so, and stays up (it keeps its game and retries).
    redis.container.stop().await.unwrap();
    worker_health_becomes(addr, false).await;
    assert!(!process.is_finished());
    redis.container.start().await.unwrap();
    worker_health_becomes(addr, true).await;
    // Shutdown: the workers stop, then the health port closes and the process returns.
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), process)
        .await
        .expect("the worker process stops")
        .unwrap()
        .unwrap();
    let e = arbiter_kit::probe::check(addr, "", Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(e.contains("cannot connect"), "{e}");
}

/// On Redis, a job that names an external engine is analysed by worker processes running an
/// engine of that name: the front end accepts it (it runs Stockfish too, so it knows the name),
/// a worker process given the same `--engine` analyses it, and every result names Stockfish.
#[tokio::test]
async fn a_job_on_stockfish_is_analysed_by_a_worker_process_that_runs_it() {
    let spec = arbiter_uci_client::EngineSpec::parse("stockfish=/usr/games/stockfish,hash=8")
        .expect("a spec");
    let engines = arbiter_analysis::engines::EnginesConfig {
        engines: vec![spec],
        defaults: vec![],
    };
    let redis = arbiter_testkit::redis().await;
    let mut config = front(redis.secure(USER), 0, Duration::from_secs(600));
    config.engines = engines.clone();
    let mut s = start_on_redis(config).await;
    let registry = EngineRegistry::start(&engines).expect("Stockfish starts");
    let worker = {
        let (redis, time) = (
            redis.secure(USER),
            Arc::new(SystemTime::new()) as Arc<dyn TimeSource>,
        );
        let registry = Arc::clone(&registry);
        tokio::spawn(async move {
            let (_keep, rx) = tokio::sync::watch::channel(false);
            run_workers(&redis, quick(30_000, 3), time, registry, rx)
                .await
                .unwrap();
        })
    };
    let mut submit = job("on-stockfish", TWO_GAMES, 5_000);
    submit.engine = "stockfish".into();
    // The second game is crazyhouse, which Stockfish does not play: refused, naming the field.
    let e = s.client.submit_job(submit.clone()).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    submit.games = Some(pb::submit_job_request::Games::Pgn(
        "1. e4 e5 2. Nf3 Nc6 *\n\n1. d4 d5 *\n".into(),
    ));
    let id = s
        .client
        .submit_job(submit)
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap()
        .job_id;
    let seen = watch_to_end(&mut s.client, &id).await;
    assert_eq!(seen.last().unwrap().state, pb::JobState::Done as i32);
    let games = all_results(&mut s.client, &id).await;
    assert_eq!(games.len(), 2);
    for g in &games {
        assert!(g.error.is_empty(), "{}", g.error);
        assert!(g.engine.starts_with("Stockfish "), "{}", g.engine);
        assert!(g.plies.iter().all(|p| p.eval_after.is_some()));
    }
    worker.abort();
    registry.shut_down();
    s.server.stop().await;
}
