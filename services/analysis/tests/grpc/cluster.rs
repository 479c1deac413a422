//! Batch analysis on a real Redis Cluster (three primaries, three replicas; `redis-server` of
//! this machine), as the analysis service's ACL user: remote workers' leases, refusals and
//! expiries as on one Redis; worker processes finishing jobs of many slot groups while one
//! group's slot migrates to another primary; the caps kept by the ledger across groups.

use super::Server;
use super::redis_jobs::{games, move_lists, start_on_redis_with};
use super::remote_work::{
    expired_leases_return_their_games, garbage_refuses_the_key_until_lifted, keys_file,
    remote_only, remote_workers_complete_jobs, the_worker_scope_is_needed,
};
use arbiter_analysis::batch::BatchConfig;
use arbiter_analysis::batch::redis::layout::Layout;
use arbiter_analysis::engines::EngineRegistry;
use arbiter_analysis::{AnalysisConfig, RedisConfig, WorkerConfig, run_workers};
use arbiter_engine::{SystemTime, TimeSource};
use arbiter_kit::access::AccessPolicy;
use arbiter_kit::keys::new_key;
use arbiter_proto::analysis::v1 as pb;
use arbiter_redis_conn::slots::slot;
use arbiter_testkit::cluster::RedisCluster;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tonic::Code;

/// The analysis service's ACL user (deploy/redis/acl.conf).
const USER: &str = "arbiter-analysis";

async fn cluster() -> RedisCluster {
    tokio::task::spawn_blocking(RedisCluster::start)
        .await
        .unwrap()
}

/// The service on the cluster with `config`, calls checked by `access`, once its health says it
/// reaches Redis.
async fn on_cluster(
    cluster: &RedisCluster,
    mut config: AnalysisConfig,
    access: AccessPolicy,
) -> Server {
    config.batch.watch_poll = Duration::from_millis(50);
    config.redis = Some(RedisConfig::plain(&cluster.url_as(USER)));
    start_on_redis_with(config, access).await
}

/// Submits the games `list` as job `name` at `nodes` a position.
async fn submit(
    s: &mut Server,
    name: &str,
    list: &[Vec<String>],
    nodes: u64,
) -> pb::SubmitJobResponse {
    s.client
        .submit_job(move_lists(name, list, nodes))
        .await
        .unwrap()
        .into_inner()
}

/// A query to one node as the `default` user.
async fn node(port: u16) -> redis::aio::MultiplexedConnection {
    redis::Client::open(RedisCluster::node_url(port))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// The ledger's count of jobs (`an:{an}:jobs`, on the primary of its slot).
async fn ledger_jobs(cluster: &RedisCluster) -> usize {
    let [key, _] = Layout::ledger_keys();
    let mut c = node(cluster.owner(slot(key.as_bytes()))).await;
    redis::cmd("ZCARD")
        .arg(&key)
        .query_async(&mut c)
        .await
        .unwrap()
}

#[tokio::test]
async fn remote_workers_on_a_cluster_lease_expire_and_are_refused_as_on_one_redis() {
    let cluster = cluster().await;
    let mut s = on_cluster(&cluster, remote_only(60_000), AccessPolicy::development()).await;
    remote_workers_complete_jobs(&mut s).await;
    s.server.stop().await;

    cluster.flush_all();
    let mut s = on_cluster(&cluster, remote_only(300), AccessPolicy::development()).await;
    expired_leases_return_their_games(&mut s, 300).await;
    s.server.stop().await;

    cluster.flush_all();
    let platform = new_key("platform", &["analysis:batch".into()], None, None).unwrap();
    let bad = new_key("w1", &["analysis:worker".into()], None, None).unwrap();
    let good = new_key("w2", &["analysis:worker".into()], None, None).unwrap();
    let (path, policy) = keys_file("cluster", &[&platform, &bad, &good]);
    let mut s = on_cluster(&cluster, remote_only(60_000), policy).await;
    garbage_refuses_the_key_until_lifted(&mut s, &path, [&platform, &bad, &good]).await;
    the_worker_scope_is_needed(&mut s, &platform).await;
    s.server.stop().await;
}

/// A worker process on the cluster (aborting the task kills it).
fn worker(cluster: &RedisCluster) -> tokio::task::JoinHandle<()> {
    let redis = RedisConfig::plain(&cluster.url_as(USER));
    let time: Arc<dyn TimeSource> = Arc::new(SystemTime::new());
    tokio::spawn(async move {
        let (_keep, rx) = tokio::sync::watch::channel(false);
        let config = WorkerConfig {
            workers: 2,
            claim_idle: Duration::from_millis(2_000),
            max_deliveries: 5,
        };
        run_workers(&redis, config, time, EngineRegistry::builtin(), rx)
            .await
            .unwrap();
    })
}

// Multi-threaded: the migration blocks a thread of its own while the workers run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_finish_jobs_of_many_groups_while_a_slot_migrates_and_the_ledger_caps_jobs() {
    let cluster = cluster().await;
    let front = AnalysisConfig {
        batch: BatchConfig {
            workers: 0,
            ttl: Duration::from_secs(600),
            ..BatchConfig::default()
        },
        ..AnalysisConfig::default()
    };
    let mut s = on_cluster(&cluster, front, AccessPolicy::development()).await;
    // Long enough (2 x 30 plies at 2,000 nodes a job) for the work to outlast the migration.
    let list = games(2, 30);
    let mut ids = Vec::new();
    for j in 0..12 {
        let made = submit(&mut s, &format!("spread-{j}"), &list, 2_000).await;
        assert!(!made.duplicate);
        ids.push(made.status.unwrap().job_id);
    }
    // A retry is the same job, and takes no second place in the ledger.
    let again = submit(&mut s, "spread-3", &list, 2_000).await;
    assert!(again.duplicate);
    assert_eq!(again.status.unwrap().job_id, ids[3]);
    assert_eq!(ledger_jobs(&cluster).await, 12);
    // The jobs live in their groups, over more than one primary.
    let layout = Layout::cluster();
    let mut owners = BTreeSet::new();
    for id in &ids {
        let key = format!("{}j:{id}", layout.prefix_of(id));
        let owner = cluster.owner(slot(key.as_bytes()));
        let mut c = node(owner).await;
        let exists: bool = redis::cmd("EXISTS")
            .arg(&key)
            .query_async(&mut c)
            .await
            .unwrap();
        assert!(exists, "{key} on {owner}");
        owners.insert(owner);
    }
    assert!(owners.len() >= 2, "{owners:?}");

    let workers = [worker(&cluster), worker(&cluster)];
    let status = |id: String| {
        let mut client = s.client.clone();
        async move {
            client
                .get_job(pb::GetJobRequest { job_id: id })
                .await
                .unwrap()
                .into_inner()
                .status
                .unwrap()
        }
    };
    let done = |st: &pb::JobStatus| st.state == pb::JobState::Done as i32;
    // Once the workers are under way, the slot of the group of a job still running moves to
    // another primary, its keys two at a time.
    let migration = async {
        let moving = loop {
            let mut running = None;
            let mut started = false;
            for id in &ids {
                let st = status(id.clone()).await;
                started |= st.positions_done > 0;
                if !done(&st) && running.is_none() {
                    running = Some(id.clone());
                }
            }
            if started {
                break running.expect("the jobs take longer than their first positions");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let key = layout.work(layout.group_of(&moving));
        let moved_slot = slot(key.as_bytes());
        let from = cluster.owner(moved_slot);
        let to = *cluster.primaries().iter().find(|&&p| p != from).unwrap();
        let keys = tokio::task::block_in_place(|| {
            cluster.migrate_slot(moved_slot, to, 2, Duration::from_millis(100))
        });
        assert!(keys > 0, "the group's keys moved");
        assert_eq!(cluster.owner(moved_slot), to);
        // The work went on across the migration: not every job was done before it ended.
        let mut all_done = true;
        for id in &ids {
            all_done &= done(&status(id.clone()).await);
        }
        assert!(!all_done, "the jobs ended before the migration did");
    };
    let finish = async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(180);
        for id in &ids {
            loop {
                let st = status(id.clone()).await;
                if done(&st) {
                    assert_eq!((st.games, st.games_done), (2, 2), "{id}");
                    assert_eq!(st.positions_done, st.positions, "{id}");
                    break;
                }
                assert!(tokio::time::Instant::now() < deadline, "{id}: {st:?}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    tokio::join!(migration, finish);
    for id in &ids {
        let r = s
            .client
            .get_job_results(pb::GetJobResultsRequest {
                job_id: id.clone(),
                offset: 0,
                limit: 0,
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.games.len(), 2, "{id}");
        assert!(r.games.iter().all(|g| g.error.is_empty()), "{id}: {r:?}");
    }
    for w in workers {
        w.abort();
    }
    s.server.stop().await;

    // The caps count the jobs of every group: a second front with room for 14 takes two more,
    // then refuses; a retry of a stored job is still answered; expired jobs leave the ledger
    // (two of different groups: their expiries are read from two slots at once).
    let capped = AnalysisConfig {
        batch: BatchConfig {
            workers: 0,
            max_jobs: 14,
            ttl: Duration::from_millis(1_500),
            ..BatchConfig::default()
        },
        ..AnalysisConfig::default()
    };
    let mut s = on_cluster(&cluster, capped, AccessPolicy::development()).await;
    let mut short = Vec::new();
    for name in ["capped-0", "capped-2"] {
        let made = submit(&mut s, name, &list, 300).await;
        short.push(made.status.unwrap().job_id);
    }
    assert_ne!(layout.group_of(&short[0]), layout.group_of(&short[1]));
    let e = s
        .client
        .submit_job(move_lists("capped-1", &list, 300))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    let retry = submit(&mut s, "capped-0", &list, 300).await;
    assert!(retry.duplicate);
    assert_eq!(ledger_jobs(&cluster).await, 14);
    // The 12 done jobs keep their 600 s; the two new ones expire after 1.5 s, and their places
    // are free.
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let made = submit(&mut s, "capped-1", &list, 300).await;
    assert!(!made.duplicate);
    assert_eq!(ledger_jobs(&cluster).await, 13);
    s.server.stop().await;
}
