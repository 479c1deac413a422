//! Remote workers over gRPC (`AcquireWork`, `SubmitWork`), in process and on Redis: a whole
//! job done by remote workers, leases that expire (a worker killed mid-game loses no game),
//! duplicate and stale submissions (one result per game in every order), garbage refused with
//! the key refused and lifted by a keys-file reload, and the scope.

use super::{BUGHOUSE, Server, TWO_GAMES, bad_field, bpgn_job, job, start, start_with};
use arbiter_analysis::AnalysisConfig;
use arbiter_analysis::batch::{BatchConfig, JobSpec, builtin_evaluations};
use arbiter_analysis::convert::{position_evaluation, work_item_game};
use arbiter_engine::{Limits, SystemTime};
use arbiter_kit::access::AccessPolicy;
use arbiter_kit::keys::{NewKey, new_key};
use arbiter_proto::analysis::v1 as pb;
use arbiter_proto::analysis::v1::analysis_service_client::AnalysisServiceClient;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};

type Client = AnalysisServiceClient<Channel>;

/// The analysis service in process with no worker thread of its own (remote workers alone
/// analyse), leases of `lease_ms`.
pub(crate) fn remote_only(lease_ms: u64) -> AnalysisConfig {
    AnalysisConfig {
        batch: BatchConfig {
            workers: 0,
            work_lease: Duration::from_millis(lease_ms),
            ..BatchConfig::default()
        },
        ..AnalysisConfig::default()
    }
}

fn worker_key(client: &str) -> NewKey {
    new_key(client, &["analysis:worker".into()], None, None).unwrap()
}

fn batch_key(client: &str) -> NewKey {
    new_key(client, &["analysis:batch".into()], None, None).unwrap()
}

fn ask<T>(key: Option<&str>, m: T) -> Request<T> {
    let mut r = Request::new(m);
    if let Some(key) = key {
        r.metadata_mut().insert("x-api-key", key.parse().unwrap());
    }
    r
}

async fn acquire(c: &mut Client, key: Option<&str>) -> Result<Option<pb::WorkItem>, Status> {
    c.acquire_work(ask(
        key,
        pb::AcquireWorkRequest {
            engines: vec![],
            wait_ms: 0,
        },
    ))
    .await
    .map(|r| r.into_inner().work)
}

/// The built-in engine's evaluations of a work item's positions, in its order.
pub(crate) fn evaluations(item: &pb::WorkItem) -> Vec<pb::PositionEvaluation> {
    let game = work_item_game(item).expect("the item's game replays");
    assert_eq!(game.positions(), u64::from(item.positions));
    let ply = item.per_ply.unwrap();
    let spec = JobSpec {
        games: vec![game.clone()],
        limits: if ply.depth > 0 {
            Limits::depth(ply.depth)
        } else {
            Limits::nodes(ply.nodes)
        },
        hash_mib: item.hash_mib as usize,
        engine: item.engine.clone(),
    };
    let stop = AtomicBool::new(false);
    builtin_evaluations(&game, &spec, &stop, &SystemTime::new(), &mut || {})
        .unwrap()
        .unwrap()
        .iter()
        .map(position_evaluation)
        .collect()
}

async fn submit(
    c: &mut Client,
    key: Option<&str>,
    lease: &str,
    evaluations: Vec<pb::PositionEvaluation>,
) -> Result<bool, Status> {
    c.submit_work(ask(
        key,
        pb::SubmitWorkRequest {
            lease_id: lease.to_owned(),
            evaluations,
            engine_id: "Remote 1.0".into(),
        },
    ))
    .await
    .map(|r| r.into_inner().duplicate)
}

/// Takes and completes games until none is left: how many.
async fn work_all(c: &mut Client, key: Option<&str>) -> usize {
    let mut n = 0;
    while let Some(item) = acquire(c, key).await.unwrap() {
        let e = evaluations(&item);
        assert!(!submit(c, key, &item.lease_id, e).await.unwrap());
        n += 1;
        assert!(n < 100, "the queue never empties");
    }
    n
}

async fn results(c: &mut Client, key: Option<&str>, id: &str) -> pb::GetJobResultsResponse {
    c.get_job_results(ask(
        key,
        pb::GetJobResultsRequest {
            job_id: id.to_owned(),
            ..Default::default()
        },
    ))
    .await
    .unwrap()
    .into_inner()
}

async fn submit_job(c: &mut Client, key: Option<&str>, req: pb::SubmitJobRequest) -> String {
    c.submit_job(ask(key, req))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap()
        .job_id
}

/// A job of line games and one of a bughouse match, done by one remote worker: every game once,
/// with its engine; a retried submission is a duplicate and changes nothing.
pub(crate) async fn remote_workers_complete_jobs(s: &mut Server) {
    let c = &mut s.client;
    let lines = submit_job(c, None, job("remote-1", TWO_GAMES, 500)).await;
    let bughouse = submit_job(c, None, bpgn_job("remote-2", BUGHOUSE, 500)).await;
    let first = acquire(c, None).await.unwrap().expect("a game");
    assert!(first.lease_id.starts_with("ls-"), "{}", first.lease_id);
    assert!(first.lease_expires_at_unix_ms > 0);
    assert_eq!(first.engine, "arbiter");
    let e = evaluations(&first);
    assert!(!submit(c, None, &first.lease_id, e.clone()).await.unwrap());
    assert!(
        submit(c, None, &first.lease_id, e).await.unwrap(),
        "a retry is a duplicate"
    );
    assert_eq!(work_all(c, None).await, 2);
    let r = results(c, None, &lines).await;
    let status = r.status.unwrap();
    assert_eq!((status.games, status.games_done), (2, 2));
    assert_eq!(status.state, pb::JobState::Done as i32);
    assert_eq!(status.positions_done, status.positions);
    assert_eq!(r.games.len(), 2);
    assert!(
        r.games
            .iter()
            .all(|g| g.engine == "Remote 1.0" && g.error.is_empty())
    );
    // Fool's mate, reviewed from the remote evaluations: Black's mate is no mistake.
    assert_eq!(r.games[0].plies.len(), 4);
    assert!(r.games[0].white_accuracy.is_some());
    let b = results(c, None, &bughouse).await;
    assert_eq!(b.status.unwrap().games_done, 1);
    assert_eq!(b.games[0].plies.len(), 8);
    assert_eq!(b.games[0].plies[7].board, "B");
    assert!(acquire(c, None).await.unwrap().is_none(), "nothing left");
    // A job cancelled while its game is leased records nothing more: the lease is not held.
    let cancelled = submit_job(c, None, job("remote-3", "1. e4 e5 *\n", 500)).await;
    let item = acquire(c, None).await.unwrap().expect("a game");
    c.cancel_job(ask(
        None,
        pb::CancelJobRequest {
            job_id: cancelled.clone(),
        },
    ))
    .await
    .unwrap();
    let e = submit(c, None, &item.lease_id, evaluations(&item))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    assert_eq!(results(c, None, &cancelled).await.games.len(), 0);
}

/// A worker killed mid-game (it took a game and never answers) loses nothing: its lease
/// expires, another worker takes the game; the first one's late result is then refused
/// (`FAILED_PRECONDITION`) and the game has one result. A late result whose game nobody took
/// again is still accepted.
pub(crate) async fn expired_leases_return_their_games(s: &mut Server, lease_ms: u64) {
    let c = &mut s.client;
    let id = submit_job(c, None, job("expiry", TWO_GAMES, 500)).await;
    let killed = acquire(c, None).await.unwrap().expect("a game");
    let late = evaluations(&killed);
    tokio::time::sleep(Duration::from_millis(lease_ms + 100)).await;
    // Another worker gets the killed one's game again (then the other game).
    let mut again = None;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while again.is_none() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the game never came back"
        );
        let item = acquire(c, None).await.unwrap();
        match item {
            Some(i) if i.moves == killed.moves && i.start == killed.start => again = Some(i),
            Some(other) => {
                let e = evaluations(&other);
                assert!(!submit(c, None, &other.lease_id, e).await.unwrap());
            }
            None => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    let again = again.unwrap();
    assert_ne!(again.lease_id, killed.lease_id);
    let e = submit(c, None, &killed.lease_id, late.clone())
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    assert!(
        !submit(c, None, &again.lease_id, evaluations(&again))
            .await
            .unwrap()
    );
    // The killed worker's result, once more: still not held.
    let e = submit(c, None, &killed.lease_id, late).await.unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    work_all(c, None).await;
    let r = results(c, None, &id).await;
    assert_eq!(r.status.unwrap().games_done, 2);
    assert_eq!(r.games.len(), 2);

    // A lease that expired whose game is still waiting: its result is taken.
    let id = submit_job(c, None, job("late", "1. e4 e5 *\n", 500)).await;
    let slow = acquire(c, None).await.unwrap().expect("a game");
    tokio::time::sleep(Duration::from_millis(lease_ms + 100)).await;
    assert!(
        !submit(c, None, &slow.lease_id, evaluations(&slow))
            .await
            .unwrap()
    );
    assert_eq!(results(c, None, &id).await.status.unwrap().games_done, 1);
    assert!(
        acquire(c, None).await.unwrap().is_none(),
        "the game is done: not handed out again"
    );
}

/// With keys: garbage results are `INVALID_ARGUMENT` naming the field; the key is refused
/// (`PERMISSION_DENIED` naming the keys-file line), its other lease returns at once, another
/// key finishes the job; the line, added to the keys file, lifts the refusal at the reload.
pub(crate) async fn garbage_refuses_the_key_until_lifted(
    s: &mut Server,
    keys_file: &std::path::Path,
    keys: [&NewKey; 3],
) {
    let [platform, bad, good] = keys;
    let (p, b, g) = (
        Some(platform.key.as_str()),
        Some(bad.key.as_str()),
        Some(good.key.as_str()),
    );
    let c = &mut s.client;
    let id = submit_job(c, p, job("garbage", TWO_GAMES, 500)).await;
    let one = acquire(c, b).await.unwrap().expect("a game");
    let two = acquire(c, b).await.unwrap().expect("another game");
    assert!(acquire(c, g).await.unwrap().is_none(), "both are leased");
    // Not the owner: a lease is its worker's.
    let e = submit(c, g, &one.lease_id, evaluations(&one))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    let mut illegal = evaluations(&one);
    illegal[1].best_move = "e1e8".into();
    let e = submit(c, b, &one.lease_id, illegal).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert_eq!(bad_field(&e), "evaluations[1].best_move");
    // Refused now, for both calls; the message names the line that lifts it.
    let refused = acquire(c, b).await.unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
    let message = refused.message().to_owned();
    let line_at = message.find("lift_work_refusal = \"wr-").expect(&message);
    let line: String = message[line_at..]
        .chars()
        .scan(0, |quotes, ch| {
            (*quotes < 2).then(|| {
                *quotes += usize::from(ch == '"');
                ch
            })
        })
        .collect();
    let e = submit(c, b, &two.lease_id, evaluations(&two))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    // Both its games came back at once: the good key finishes the job.
    assert_eq!(work_all(c, g).await, 2);
    let r = results(c, p, &id).await;
    assert_eq!(r.status.unwrap().games_done, 2);
    // Wrong counts and missing scores are named too (and refuse that key in turn).
    let id2 = submit_job(c, p, job("garbage-2", "1. e4 e5 *\n", 500)).await;
    let item = acquire(c, g).await.unwrap().expect("a game");
    let mut short = evaluations(&item);
    short.pop();
    let e = submit(c, g, &item.lease_id, short).await.unwrap_err();
    assert_eq!(bad_field(&e), "evaluations");
    assert_eq!(
        acquire(c, g).await.unwrap_err().code(),
        Code::PermissionDenied
    );

    // The operator adds the line to the bad key's table: after the reload it works again.
    let text = std::fs::read_to_string(keys_file).unwrap();
    let lifted = text.replace(&bad.entry, &format!("{}{line}\n", bad.entry));
    assert_ne!(lifted, text);
    std::fs::write(keys_file, lifted).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let item = loop {
        match acquire(c, b).await {
            Ok(item) => break item,
            Err(e) if e.code() == Code::PermissionDenied => {
                assert!(tokio::time::Instant::now() < deadline, "never lifted");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{e:?}"),
        }
    };
    let item = item.expect("the refused key's game came back");
    let mut missing = evaluations(&item);
    missing[0].score = None;
    let e = submit(c, b, &item.lease_id, missing).await.unwrap_err();
    assert_eq!(bad_field(&e), "evaluations[0].score");
    // A new refusal: the old line does not lift it.
    let again = acquire(c, b).await.unwrap_err();
    assert_eq!(again.code(), Code::PermissionDenied);
    assert!(!again.message().contains(&line), "a fresh refusal id");
    let _ = id2;
}

/// A key without `analysis:worker` cannot take or submit work.
pub(crate) async fn the_worker_scope_is_needed(s: &mut Server, batch_only: &NewKey) {
    let k = Some(batch_only.key.as_str());
    let e = acquire(&mut s.client, k).await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    let e = submit(&mut s.client, k, "ls-0", vec![]).await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
}

/// A keys file of `keys` in a fresh directory, and the policy reading it (reloaded every
/// 50 ms).
pub(crate) fn keys_file(name: &str, keys: &[&NewKey]) -> (std::path::PathBuf, AccessPolicy) {
    let dir = std::env::temp_dir().join(format!(
        "arbiter-remote-{name}-{}-{}",
        std::process::id(),
        arbiter_kit::process_now()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("keys.toml");
    let text: Vec<&str> = keys.iter().map(|k| k.entry.as_str()).collect();
    std::fs::write(&path, text.join("\n")).unwrap();
    let policy = AccessPolicy::from_file(path.clone(), None, Duration::from_millis(50)).unwrap();
    (path, policy)
}

#[tokio::test]
async fn remote_workers_complete_jobs_in_process() {
    let mut s = start(remote_only(60_000)).await;
    remote_workers_complete_jobs(&mut s).await;
    s.server.stop().await;
}

#[tokio::test]
async fn expired_leases_return_their_games_in_process() {
    let mut s = start(remote_only(300)).await;
    expired_leases_return_their_games(&mut s, 300).await;
    s.server.stop().await;
}

#[tokio::test]
async fn garbage_refuses_the_key_until_lifted_in_process() {
    let (platform, bad, good) = (batch_key("platform"), worker_key("w1"), worker_key("w2"));
    let (path, policy) = keys_file("memory", &[&platform, &bad, &good]);
    let mut s = start_with(remote_only(60_000), policy).await;
    garbage_refuses_the_key_until_lifted(&mut s, &path, [&platform, &bad, &good]).await;
    the_worker_scope_is_needed(&mut s, &platform).await;
    s.server.stop().await;
}

// ---- The same on Redis ----

/// The service on Redis (the analysis ACL user over TLS) with no worker of its own, leases of
/// `lease_ms`, calls checked by `access`; once its health says it reaches Redis.
async fn on_redis(redis: &arbiter_testkit::Redis, lease_ms: u64, access: AccessPolicy) -> Server {
    let mut config = remote_only(lease_ms);
    config.batch.watch_poll = Duration::from_millis(50);
    config.redis = Some(redis.secure("arbiter-analysis"));
    super::redis_jobs::start_on_redis_with(config, access).await
}

#[tokio::test]
async fn remote_workers_complete_jobs_on_redis() {
    let redis = arbiter_testkit::redis().await;
    let mut s = on_redis(&redis, 60_000, AccessPolicy::development()).await;
    remote_workers_complete_jobs(&mut s).await;
    s.server.stop().await;
}

#[tokio::test]
async fn expired_leases_return_their_games_on_redis() {
    let redis = arbiter_testkit::redis().await;
    let mut s = on_redis(&redis, 300, AccessPolicy::development()).await;
    expired_leases_return_their_games(&mut s, 300).await;
    s.server.stop().await;
}

#[tokio::test]
async fn garbage_refuses_the_key_until_lifted_on_redis() {
    let redis = arbiter_testkit::redis().await;
    let (platform, bad, good) = (batch_key("platform"), worker_key("w1"), worker_key("w2"));
    let (path, policy) = keys_file("redis", &[&platform, &bad, &good]);
    let mut s = on_redis(&redis, 60_000, policy).await;
    garbage_refuses_the_key_until_lifted(&mut s, &path, [&platform, &bad, &good]).await;
    the_worker_scope_is_needed(&mut s, &platform).await;
    s.server.stop().await;
}
