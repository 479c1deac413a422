//! `arbiter worker` as real processes on a real Redis: two share a job, one is killed with
//! SIGKILL mid-game, and the job still ends with every game recorded once; SIGTERM hands a
//! running game back at once.

use arbiter_analysis::Caps;
use arbiter_analysis::batch::redis::{GROUP, RedisJobs, WORK};
use arbiter_analysis::batch::{BatchConfig, Caller, JobState, JobStatus, decode_job};
use arbiter_analysis::convert;
use arbiter_proto::analysis::v1 as pb;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A worker process, killed when dropped (a failing test leaves none behind).
struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An `arbiter worker` process reaching Redis as the analysis ACL user over TLS with a client
/// certificate, every secret from a file in `dir` (as a deployment passes them).
fn worker(redis: &arbiter_testkit::Redis, dir: &std::path::Path, claim_idle_ms: u64) -> Worker {
    let [ca, cert, key] = redis.write_tls_files(dir);
    let password = dir.join("redis-password");
    std::fs::write(&password, arbiter_testkit::acl_password("arbiter-analysis")).unwrap();
    Worker(
        Command::new(env!("CARGO_BIN_EXE_arbiter"))
            .args(["worker", "--workers", "1", "--redis-url", redis.tls_url()])
            .args(["--redis-user", "arbiter-analysis"])
            .arg("--redis-password-file")
            .arg(&password)
            .arg("--redis-ca-file")
            .arg(&ca)
            .arg("--redis-cert-file")
            .arg(&cert)
            .arg("--redis-key-file")
            .arg(&key)
            .args(["--analysis-claim-idle-ms", &claim_idle_ms.to_string()])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn arbiter worker"),
    )
}

/// Pending items and their consumers (none before a worker made the group).
async fn pending(c: &mut redis::aio::MultiplexedConnection) -> Vec<(String, String)> {
    let reply: redis::RedisResult<redis::streams::StreamPendingCountReply> = redis::cmd("XPENDING")
        .arg(WORK)
        .arg(GROUP)
        .arg("-")
        .arg("+")
        .arg(100)
        .query_async(c)
        .await;
    match reply {
        Ok(r) => r.ids.into_iter().map(|p| (p.id, p.consumer)).collect(),
        Err(_) => Vec::new(),
    }
}

/// A job of `games` copies of a 24-move game, `nodes` a position.
async fn submit(jobs: &RedisJobs, id: &str, games: usize, nodes: u64) -> JobStatus {
    let game = "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O Be7 6. Re1 b5 7. Bb3 d6 \
                8. c3 O-O 9. h3 Nb8 10. d4 Nbd7 11. c4 c6 12. cxb5 axb5 *\n\n";
    let req = pb::SubmitJobRequest {
        request_id: id.to_owned(),
        games: Some(pb::submit_job_request::Games::Pgn(game.repeat(games))),
        per_ply: Some(pb::PlyLimit { depth: 0, nodes }),
        engine: String::new(),
    };
    let (rid, spec, fingerprint) = decode_job(
        &convert::submission(&req),
        &Caps::default(),
        &BatchConfig::default(),
    )
    .unwrap();
    jobs.submit(&Caller::anonymous(), &rid, &spec, fingerprint)
        .await
        .unwrap()
        .status
}

async fn until_done(jobs: &RedisJobs, id: &str) -> JobStatus {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let s = jobs.status(&Caller::anonymous(), id).await.unwrap();
        if s.state == JobState::Done {
            return s;
        }
        assert!(Instant::now() < deadline, "the job never ended: {s:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn worker_processes_share_a_job_and_survive_one_killed() {
    let redis = arbiter_testkit::redis().await;
    let jobs = RedisJobs::connect(&redis.url, BatchConfig::default())
        .await
        .unwrap();
    let mut c = redis::Client::open(redis.url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let status = submit(&jobs, "killed", 6, 20_000).await;
    let dir = tempfile::tempdir().unwrap();
    let mut a = worker(&redis, dir.path(), 500);
    let mut b = worker(&redis, dir.path(), 500);
    let a_tag = format!("-{}-", a.0.id());
    // SIGKILL A while it holds a game, once a game is done.
    let killed = loop {
        let s = jobs
            .status(&Caller::anonymous(), &status.job_id)
            .await
            .unwrap();
        let held = pending(&mut c).await;
        if let Some((item, _)) = held
            .iter()
            .find(|(_, who)| who.contains(&a_tag))
            .filter(|_| s.games_done >= 1)
        {
            a.0.kill().unwrap();
            a.0.wait().unwrap();
            break item.clone();
        }
        assert!(s.games_done < 6, "A never held a game");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let end = until_done(&jobs, &status.job_id).await;
    assert_eq!(end.games_done, 6);
    assert_eq!(
        end.positions_done, end.positions,
        "every position counted once"
    );
    let (_, results) = jobs
        .results(&Caller::anonymous(), &status.job_id, 0, 0)
        .await
        .unwrap();
    assert_eq!(
        results.iter().map(|r| r.index).collect::<Vec<_>>(),
        (0..6).collect::<Vec<_>>()
    );
    assert!(
        results
            .iter()
            .all(|r| r.error.is_empty() && r.plies.len() == 24)
    );
    // The same game and limit: the same result, whoever analysed it, even twice.
    assert!(
        results.windows(2).all(|w| w[0].plies == w[1].plies),
        "item {killed}"
    );
    assert!(pending(&mut c).await.is_empty());
    let left: usize = redis::cmd("XLEN")
        .arg(WORK)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(left, 0);

    // SIGTERM: B hands its running game back as a fresh item, and exits.
    let long = submit(&jobs, "long", 1, 2_000_000).await;
    while pending(&mut c).await.is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let t = Instant::now();
    assert!(
        Command::new("kill")
            .arg(b.0.id().to_string())
            .status()
            .unwrap()
            .success()
    );
    let exit = b.0.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert!(pending(&mut c).await.is_empty());
    let left: usize = redis::cmd("XLEN")
        .arg(WORK)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(left, 1, "the game is back in the queue");
    let _ = jobs
        .cancel(&Caller::anonymous(), &long.job_id)
        .await
        .unwrap();
}
