//! `arbiter worker --server URL --api-key-file F --once` as a real process against an analysis
//! server (in process, no worker of its own, API keys on): it takes every game of a job with
//! AcquireWork, evaluates them, submits them, and exits when the queue is empty; the job ends
//! with every game recorded, by the built-in engine; and a job on Stockfish, taken only by a
//! worker that runs an engine of that name.

use arbiter_analysis::batch::BatchConfig;
use arbiter_analysis::{AnalysisConfig, serve};
use arbiter_kit::ServeConfig;
use arbiter_kit::access::AccessPolicy;
use arbiter_kit::keys::{KeySet, new_key};
use arbiter_proto::analysis::v1 as pb;
use arbiter_proto::analysis::v1::analysis_service_client::AnalysisServiceClient;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn keyed<T>(key: &str, m: T) -> tonic::Request<T> {
    let mut r = tonic::Request::new(m);
    r.metadata_mut().insert("x-api-key", key.parse().unwrap());
    r
}

/// An analysis server with no batch worker of its own and `engines`, keys on: a platform key
/// (`analysis:batch`) and a worker key (`analysis:worker`, in a file).
struct Setup {
    addr: std::net::SocketAddr,
    client: AnalysisServiceClient<tonic::transport::Channel>,
    platform: String,
    key_file: std::path::PathBuf,
    dir: tempfile::TempDir,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<Result<(), arbiter_kit::ServeError>>,
}

async fn setup(engines: arbiter_analysis::engines::EnginesConfig) -> Setup {
    let platform = new_key("platform", &["analysis:batch".into()], None, None).unwrap();
    let worker = new_key("worker-1", &["analysis:worker".into()], None, None).unwrap();
    let keys = KeySet::parse(&format!("{}\n{}", platform.entry, worker.entry), None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("worker-key");
    std::fs::write(&key_file, format!("{}\n", worker.key)).unwrap();

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = AnalysisConfig {
        batch: BatchConfig {
            workers: 0,
            ..BatchConfig::default()
        },
        engines,
        ..AnalysisConfig::default()
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(
        listener,
        ServeConfig::default(),
        config,
        AccessPolicy::with_keys(keys),
        async {
            let _ = stopped.await;
        },
    ));
    let client = AnalysisServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    Setup {
        addr,
        client,
        platform: platform.key,
        key_file,
        dir,
        stop,
        server,
    }
}

/// `arbiter worker --server … --once` with `extra` flags, to its exit (at most 180 s): its
/// status and its stdout and stderr.
async fn worker_once(s: &Setup, extra: &[&str]) -> (std::process::ExitStatus, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args(["worker", "--server", &format!("http://{}", s.addr)])
        .arg("--api-key-file")
        .arg(&s.key_file)
        .args(["--once", "--wait-ms", "200"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn arbiter worker");
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("arbiter worker --once did not exit");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let output = child.wait_with_output().unwrap();
    (
        status,
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn a_job_on_stockfish_goes_to_a_worker_that_runs_it() {
    let stockfish = "/usr/games/stockfish";
    assert!(
        std::path::Path::new(stockfish).exists(),
        "apt-get install stockfish (.ci/run does)"
    );
    let spec = format!("stockfish={stockfish},hash=8");
    let mut s = setup(arbiter_analysis::engines::EnginesConfig {
        engines: vec![arbiter_uci_client::EngineSpec::parse(&spec).unwrap()],
        defaults: vec![],
    })
    .await;
    let job = s
        .client
        .submit_job(keyed(
            &s.platform,
            pb::SubmitJobRequest {
                request_id: "on-stockfish".into(),
                games: Some(pb::submit_job_request::Games::Pgn(
                    "1. e4 e5 2. Nf3 Nc6 *\n\n".repeat(2),
                )),
                per_ply: Some(pb::PlyLimit { depth: 6, nodes: 0 }),
                engine: "stockfish".into(),
            },
        ))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap()
        .job_id;
    // A worker without the engine is handed none of its games.
    let (status, stdout, stderr) = worker_once(&s, &[]).await;
    assert!(status.success(), "{stderr}");
    assert!(stdout.contains("0 games analysed"), "{stdout}");
    // One that runs it takes them all.
    let (status, stdout, stderr) = worker_once(&s, &["--engine", &spec]).await;
    assert!(status.success(), "{stderr}");
    assert!(stdout.contains("2 games analysed"), "{stdout} {stderr}");
    let results = s
        .client
        .get_job_results(keyed(
            &s.platform,
            pb::GetJobResultsRequest {
                job_id: job,
                ..Default::default()
            },
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(results.games.len(), 2);
    for g in &results.games {
        assert!(g.error.is_empty(), "{}", g.error);
        assert!(g.engine.starts_with("Stockfish "), "{}", g.engine);
        assert_eq!(g.plies.len(), 4);
    }
    let _ = s.stop.send(());
    let _ = s.server.await;
}

#[tokio::test]
async fn a_remote_worker_completes_a_job_and_exits_when_the_queue_is_empty() {
    let mut s = setup(Default::default()).await;
    let (addr, dir) = (s.addr, s.dir.path().to_owned());
    let platform_key = s.platform.clone();
    let client = &mut s.client;
    let game = "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 *\n\n";
    let job = client
        .submit_job(keyed(
            &platform_key,
            pb::SubmitJobRequest {
                request_id: "remote".into(),
                games: Some(pb::submit_job_request::Games::Pgn(game.repeat(3))),
                per_ply: Some(pb::PlyLimit {
                    depth: 0,
                    nodes: 2_000,
                }),
                engine: String::new(),
            },
        ))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap()
        .job_id;

    let (status, stdout, stderr) = worker_once(&s, &["--threads", "2"]).await;
    assert!(status.success(), "{status}: {stderr}");
    assert_eq!(stderr.matches("positions in").count(), 3, "{stderr}");
    assert!(stdout.contains("3 games analysed"));
    let client = &mut s.client;

    let results = client
        .get_job_results(keyed(
            &platform_key,
            pb::GetJobResultsRequest {
                job_id: job,
                ..Default::default()
            },
        ))
        .await
        .unwrap()
        .into_inner();
    let status = results.status.unwrap();
    assert_eq!(
        (status.games_done, status.state),
        (3, pb::JobState::Done as i32)
    );
    assert_eq!(results.games.len(), 3);
    for g in &results.games {
        assert!(g.engine.starts_with("Arbiter "), "{}", g.engine);
        assert_eq!(g.plies.len(), 6);
        assert!(g.white_accuracy.is_some());
    }
    // Every game came from the remote worker: the same evaluations as the in-process review.
    assert_eq!(results.games[0].plies, results.games[1].plies);

    // A key without the worker scope is refused at once (exit status, not a hang).
    let batch_file = dir.join("batch-key");
    std::fs::write(&batch_file, &platform_key).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args(["worker", "--server", &format!("http://{addr}")])
        .arg("--api-key-file")
        .arg(&batch_file)
        .args(["--once"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The server runs on this test's thread: wait without blocking it.
    let refused = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("PermissionDenied"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let _ = s.stop.send(());
    let _ = s.server.await;
}
