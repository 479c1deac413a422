//! Faulty engines, written as small `/bin/sh` scripts: crashes, hangs, an over-long line, an
//! illegal best move, a missing executable; and the pool's bound on processes.

use arbiter_core::{AnyPosition, Locale, Notation, Position, Variant};
use arbiter_engine::Limits;
use arbiter_uci_client::{EnginePool, EngineSpec, Search, UciError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A fake engine: answers `uci` and `isready`, logs what it reads to `log`, its pid to
/// `pids`, and runs `on_go` on `go`.
fn fake(dir: &Path, name: &str, on_go: &str) -> PathBuf {
    let path = dir.join(name);
    let log = dir.join(format!("{name}.log"));
    let pids = dir.join(format!("{name}.pids"));
    let script = format!(
        r#"#!/bin/sh
echo $$ >> '{pids}'
while IFS= read -r line; do
  echo "$line" >> '{log}'
  case "$line" in
    uci) echo "id name Fake Engine 0.1"; echo "option name Hash type spin default 16 min 1 max 1024"; echo "option name MultiPV type spin default 1 min 1 max 10"; echo uciok ;;
    isready) echo readyok ;;
    go*) {on_go} ;;
    quit) exit 0 ;;
  esac
done
"#,
        pids = pids.display(),
        log = log.display(),
    );
    std::fs::write(&path, script).expect("write script");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

const ANSWER: &str = r#"echo "info depth 1 seldepth 2 multipv 1 score cp 17 nodes 30 nps 3000 hashfull 0 time 10 pv e2e4 e7e5"; echo "bestmove e2e4 ponder e7e5""#;

/// A pool of the fake engine at `path`. A script this process has just written can be "busy"
/// for an instant (`ETXTBSY`, os error 26): another test's thread that forks a child between our
/// write and its close leaves the child holding the write descriptor until it execs. That start
/// is tried again (the tests run on threads of one process; an engine on a real machine is not
/// being written while it is started).
fn start(path: &Path, extra: &str) -> Result<EnginePool, UciError> {
    let spec = EngineSpec::parse(&format!("fake={}{extra}", path.display())).expect("spec");
    let mut tries = 0;
    loop {
        match EnginePool::start(spec.clone()) {
            Err(UciError::Spawn { message, .. })
                if message.contains("os error 26") && tries < 50 =>
            {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            r => return r,
        }
    }
}

fn chess() -> AnyPosition {
    AnyPosition::start(Variant::Chess).unwrap()
}

fn depth(start: &AnyPosition, d: u32) -> Search<'_> {
    Search {
        start,
        moves: &[],
        limits: Limits::depth(d),
        multipv: 1,
    }
}

fn pids(dir: &Path, name: &str) -> Vec<u32> {
    std::fs::read_to_string(dir.join(format!("{name}.pids")))
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim().parse().expect("pid"))
        .collect()
}

fn gone(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn a_fake_engine_answers_and_its_moves_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = fake(dir.path(), "ok.sh", ANSWER);
    let pool = start(&path, ",hash=4").expect("start");
    assert_eq!(pool.id(), "Fake Engine 0.1");
    assert_eq!(pool.variants(), [Variant::Chess]);
    let stop = AtomicBool::new(false);
    let pos = chess();
    let mut seen = Vec::new();
    let a = pool
        .analyze(&depth(&pos, 3), &stop, &mut |p| seen.push(p.to_string()))
        .expect("analysis");
    assert_eq!(a.best.as_deref(), Some("e2e4"));
    assert_eq!(a.ponder.as_deref(), Some("e7e5"));
    assert_eq!(a.lines[0].pv, ["e2e4", "e7e5"]);
    assert_eq!(
        seen,
        [
            "info depth 1 seldepth 2 multipv 1 score cp 17 nodes 30 nps 3000 hashfull 0 time 10 pv e2e4 e7e5"
        ]
    );
    // The line of moves reaches the engine, in order, with the start as `startpos`.
    let mut p = pos.clone();
    let moves: Vec<_> = ["g1f3", "g8f6", "f3g1", "f6g8"]
        .iter()
        .map(|t| {
            let m = p.parse_move(t, Notation::Uci, Locale::English).unwrap();
            p.play_unchecked(m);
            m
        })
        .collect();
    pool.analyze(
        &Search {
            moves: &moves,
            multipv: 2,
            ..depth(&pos, 5)
        },
        &stop,
        &mut |_| {},
    )
    .expect("analysis");
    let log = std::fs::read_to_string(dir.path().join("ok.sh.log")).unwrap();
    assert!(log.contains("setoption name Hash value 4\n"), "{log}");
    assert!(log.contains("setoption name MultiPV value 2\n"), "{log}");
    assert!(
        log.contains("position startpos moves g1f3 g8f6 f3g1 f6g8\ngo depth 5\n"),
        "{log}"
    );
    assert_eq!(pool.restarts(), 0);
}

#[test]
fn an_illegal_best_move_is_a_protocol_error_and_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = fake(
        dir.path(),
        "illegal.sh",
        r#"echo "info depth 1 score cp 1 pv e2e5 e7e5"; echo "bestmove e2e5""#,
    );
    let pool = start(&path, "").expect("start");
    let stop = AtomicBool::new(false);
    let pos = chess();
    let mut progress = 0;
    match pool.analyze(&depth(&pos, 3), &stop, &mut |_| progress += 1) {
        Err(e @ UciError::Protocol { .. }) => {
            assert!(e.to_string().contains("'fake'"), "{e}");
            assert!(e.to_string().contains("e2e5"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(progress, 0, "a pv cut to nothing is not reported");
    assert_eq!(pool.restarts(), 1);
    assert_eq!(pids(dir.path(), "illegal.sh").len(), 2);
    assert!(gone(pids(dir.path(), "illegal.sh")[0]));
}

#[test]
fn a_crash_on_every_go_is_crashed_after_one_retry() {
    let dir = tempfile::tempdir().unwrap();
    let path = fake(dir.path(), "crash.sh", "exit 3");
    let pool = start(&path, "").expect("start");
    let stop = AtomicBool::new(false);
    let pos = chess();
    let mut session = pool.session(&stop).unwrap();
    match session.analyze(&depth(&pos, 3), &stop, &mut |_| {}) {
        Err(e @ UciError::Crashed { .. }) => assert!(e.to_string().contains("'fake'"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(pool.restarts(), 1);
    let started = pids(dir.path(), "crash.sh");
    assert_eq!(started.len(), 2, "the first and the retry");
    assert!(started.iter().all(|&p| gone(p)), "killed and reaped");
    assert_eq!(session.pid(), None);
    // The next search starts a fresh process (and fails the same way).
    assert!(matches!(
        session.analyze(&depth(&pos, 3), &stop, &mut |_| {}),
        Err(UciError::Crashed { .. })
    ));
    assert_eq!(pool.restarts(), 3);
    drop(session);
    assert_eq!(pool.processes(), 0);
    // A new session starts a process again.
    assert!(pool.session(&stop).unwrap().pid().is_some());
}

#[test]
fn a_crash_on_the_first_go_only_is_retried_transparently() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("crashed-once");
    let on_go = format!(
        "if [ -e '{m}' ]; then {ANSWER}; else : > '{m}'; exit 3; fi",
        m = marker.display()
    );
    let path = fake(dir.path(), "once.sh", &on_go);
    let pool = start(&path, "").expect("start");
    let stop = AtomicBool::new(false);
    let pos = chess();
    let a = pool
        .analyze(&depth(&pos, 3), &stop, &mut |_| {})
        .expect("the retry succeeds");
    assert_eq!(a.best.as_deref(), Some("e2e4"));
    assert_eq!(pool.restarts(), 1);
    let a = pool
        .analyze(&depth(&pos, 3), &stop, &mut |_| {})
        .expect("and goes on");
    assert_eq!(a.best.as_deref(), Some("e2e4"));
    assert_eq!(pool.restarts(), 1);
}

#[test]
fn a_hang_is_detected_and_the_processes_killed() {
    let dir = tempfile::tempdir().unwrap();
    let path = fake(dir.path(), "hang.sh", "exec sleep 1000");
    let pool = start(&path, ",timeout=1").expect("start");
    let stop = AtomicBool::new(false);
    let pos = chess();
    let began = Instant::now();
    match pool.analyze(&depth(&pos, 3), &stop, &mut |_| {}) {
        Err(e @ UciError::Hung { .. }) => {
            assert!(e.to_string().contains("'fake'"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert!(began.elapsed() < Duration::from_secs(20));
    assert_eq!(pool.restarts(), 1);
    let started = pids(dir.path(), "hang.sh");
    assert_eq!(started.len(), 2);
    assert!(
        started.iter().all(|&p| gone(p)),
        "{started:?} killed and reaped"
    );
}

#[test]
fn an_engine_silent_at_start_is_a_spawn_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mute.sh");
    std::fs::write(&path, "#!/bin/sh\nexec sleep 1000\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let began = Instant::now();
    match start(&path, ",timeout=1") {
        Err(e @ UciError::Spawn { .. }) => assert!(e.to_string().contains("hung"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(began.elapsed() < Duration::from_secs(20));
    // Not an engine at all.
    match start(Path::new("/bin/true"), "") {
        Err(e @ UciError::Spawn { .. }) => assert!(e.to_string().contains("uciok"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_missing_executable_is_a_spawn_error() {
    match start(Path::new("/nonexistent/engine"), "") {
        Err(e @ UciError::Spawn { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("'fake'") && text.contains("/nonexistent/engine"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_megabyte_line_is_a_protocol_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = fake(
        dir.path(),
        "flood.sh",
        r#"head -c 1048576 /dev/zero | tr '\0' x; echo; echo "bestmove e2e4""#,
    );
    let pool = start(&path, "").expect("start");
    let stop = AtomicBool::new(false);
    let pos = chess();
    match pool.analyze(&depth(&pos, 3), &stop, &mut |_| {}) {
        Err(UciError::Protocol { message, .. }) => assert!(message.contains("longer"), "{message}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(pool.restarts(), 1);
}

#[test]
fn the_pool_is_bounded_and_a_waiter_can_be_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let path = fake(dir.path(), "one.sh", ANSWER);
    let pool = start(&path, ",processes=1").expect("start");
    let never = AtomicBool::new(false);
    let first = pool.session(&never).expect("first");
    let (tx, rx) = mpsc::channel();
    let waiter = {
        let pool = pool.clone();
        std::thread::spawn(move || {
            let never = AtomicBool::new(false);
            let s = pool.session(&never);
            tx.send(()).unwrap();
            let pos = chess();
            s.expect("second")
                .analyze(&depth(&pos, 2), &never, &mut |_| {})
                .expect("analysis")
        })
    };
    assert!(
        rx.recv_timeout(Duration::from_millis(500)).is_err(),
        "the second session waits"
    );
    let pid = first.pid();
    drop(first);
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the second gets the process");
    assert_eq!(waiter.join().unwrap().best.as_deref(), Some("e2e4"));
    assert_eq!(pool.processes(), 1);

    // A raised stop ends the wait.
    let held = pool.session(&never).expect("held");
    assert_eq!(held.pid(), pid, "the same process, kept");
    let stop = AtomicBool::new(false);
    let began = Instant::now();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(200));
            stop.store(true, Ordering::Relaxed);
        });
        pool.session(&stop)
    });
    assert!(matches!(r, Err(UciError::Stopped { .. })), "{r:?}");
    assert!(began.elapsed() < Duration::from_secs(20));
    drop(held);
}

#[test]
fn processes_are_killed_with_the_pool() {
    let dir = tempfile::tempdir().unwrap();
    let path = fake(dir.path(), "bye.sh", ANSWER);
    let pool = start(&path, ",processes=2").expect("start");
    let never = AtomicBool::new(false);
    let a = pool.session(&never).unwrap();
    let b = pool.session(&never).unwrap();
    let ids = [a.pid().unwrap(), b.pid().unwrap()];
    drop((a, b));
    assert_eq!(pool.processes(), 2);
    drop(pool);
    assert!(ids.iter().all(|&p| gone(p)), "{ids:?}");
}
