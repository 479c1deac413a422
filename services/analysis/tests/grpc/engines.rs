//! External UCI engines behind the service: the real Debian `stockfish` and `fairy-stockfish`
//! (installed by `.ci/run` where missing) named per request or serving a variant by default,
//! ListEngines, batch jobs on them, the refusals naming `engine`, and engines that crash or hang
//! (small shell scripts speaking just enough UCI).

use super::*;
use arbiter_analysis::engines::EnginesConfig;
use arbiter_uci_client::EngineSpec;

const STOCKFISH: &str = "/usr/games/stockfish";
const FAIRY: &str = "/usr/games/fairy-stockfish";

/// The engines are required: a machine without them fails here rather than skipping silently.
fn engines_installed() {
    for path in [STOCKFISH, FAIRY] {
        assert!(
            std::path::Path::new(path).exists(),
            "{path} is missing: apt-get install stockfish fairy-stockfish (.ci/run does)"
        );
    }
}

fn with_engines(specs: &[&str], defaults: &[(CoreVariant, &str)]) -> AnalysisConfig {
    AnalysisConfig {
        engines: EnginesConfig {
            engines: specs
                .iter()
                .map(|s| EngineSpec::parse(s).unwrap())
                .collect(),
            defaults: defaults
                .iter()
                .map(|(v, n)| (*v, (*n).to_owned()))
                .collect(),
        },
        ..one_thread(8, 8)
    }
}

/// `uci` legal in `pos` of `variant`.
fn legal(variant: CoreVariant, text: &str, uci: &str) -> bool {
    let pos = AnyPosition::from_text(variant, text).unwrap();
    pos.parse_move(uci, Notation::Uci, Default::default())
        .is_ok()
}

#[tokio::test]
async fn requests_name_an_engine_and_results_name_the_engine_that_searched() {
    engines_installed();
    let mut s = start(with_engines(
        &[&format!("stockfish={STOCKFISH},hash=8")],
        &[],
    ))
    .await;
    let listed = s
        .client
        .list_engines(pb::ListEnginesRequest {})
        .await
        .unwrap()
        .into_inner()
        .engines;
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].name, "arbiter");
    assert!(listed[0].id.starts_with("Arbiter "), "{}", listed[0].id);
    assert!(listed[0].default_for.contains(&(Variant::Chess as i32)));
    assert_eq!(listed[1].name, "stockfish");
    assert!(listed[1].id.starts_with("Stockfish "), "{}", listed[1].id);
    assert!(listed[1].variants.contains(&(Variant::Chess as i32)));
    assert!(!listed[1].variants.contains(&(Variant::Glinski as i32)));
    assert!(listed[1].default_for.is_empty());

    // Named: Stockfish's lines come as a stream, its best move legal, its name on the result.
    let fen = "r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR w KQkq - 2 3";
    let mut req = analyze(Variant::Chess, fen, limits(8, 0, 0));
    req.engine = "stockfish".into();
    req.multipv = 2;
    let (infos, result) = drain(s.client.analyze(req).await.unwrap().into_inner()).await;
    assert!(!infos.is_empty(), "Stockfish's info lines are relayed");
    assert!(infos.iter().all(|i| i.multipv == 1 || i.multipv == 2));
    assert!(result.engine.starts_with("Stockfish "), "{}", result.engine);
    let found = result.best_move.unwrap();
    assert_eq!(found.uci, "f3f7", "mate in one");
    assert_eq!(found.san, "Qxf7#");
    assert_eq!(
        result.score.unwrap().value,
        Some(Value::Mate(1)),
        "the mate is reported as such"
    );
    assert_eq!(result.lines.len(), 2);
    // Not named: the built-in engine, which says so.
    let r = s
        .client
        .best_move(best(Variant::Chess, "", limits(3, 0, 0)))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert!(r.engine.starts_with("Arbiter "), "{}", r.engine);
    // History reaches the engine: moves played first, then its answer legal after them.
    let mut req = best(Variant::Chess, "", limits(6, 0, 0));
    req.moves = vec!["e4".into(), "e5".into(), "Nf3".into()];
    req.engine = "stockfish".into();
    let r = s
        .client
        .best_move(req)
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    let after = "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2";
    assert!(legal(CoreVariant::Chess, after, &r.best_move.unwrap().uci));

    // Refusals name the field.
    for (engine, variant, text) in [
        ("komodo", Variant::Chess, ""),
        ("stockfish", Variant::Glinski, ""),
        ("stockfish", Variant::Crazyhouse, ""),
    ] {
        let mut req = best(variant, text, limits(2, 0, 0));
        req.engine = engine.into();
        let e = s.client.best_move(req).await.unwrap_err();
        assert_eq!(
            e.code(),
            Code::InvalidArgument,
            "{engine} {variant:?}: {e:?}"
        );
        assert_eq!(bad_field(&e), "engine", "{e:?}");
    }
    // A worker names the few engines it runs, not thousands.
    let e = s
        .client
        .acquire_work(pb::AcquireWorkRequest {
            engines: vec!["stockfish".into(); 65],
            wait_ms: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(bad_field(&e), "engines");
    s.server.stop().await;
}

#[tokio::test]
async fn a_default_engine_serves_its_variant_and_fairy_stockfish_plays_crazyhouse() {
    engines_installed();
    let mut s = start(with_engines(
        &[
            &format!("stockfish={STOCKFISH},hash=8"),
            &format!("fsf={FAIRY},hash=8"),
        ],
        &[
            (CoreVariant::Chess, "stockfish"),
            (CoreVariant::Crazyhouse, "fsf"),
        ],
    ))
    .await;
    let r = s
        .client
        .best_move(best(Variant::Chess, "", limits(6, 0, 0)))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert!(r.engine.starts_with("Stockfish "), "{}", r.engine);
    // Black mates by dropping the rook held in reserve: only a drop wins at once.
    let zh = "6rk/5ppp/8/8/8/8/8/K7[r] b - - 0 1";
    let mut req = best(Variant::Crazyhouse, zh, limits(6, 0, 0));
    req.moves = vec![];
    let r = s
        .client
        .best_move(req)
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert!(r.engine.contains("Fairy-Stockfish"), "{}", r.engine);
    let m = r.best_move.unwrap();
    assert!(legal(CoreVariant::Crazyhouse, zh, &m.uci), "{}", m.uci);
    // Glinski has no external engine: its default stays the built-in one.
    let r = s
        .client
        .best_move(best(Variant::Glinski, "", limits(2, 0, 0)))
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert!(r.engine.starts_with("Arbiter "), "{}", r.engine);

    // A batch job on Fairy-Stockfish: every game's result names it, every better move legal.
    let pgn = "[Variant \"Crazyhouse\"]\n\n1. e4 d5 2. exd5 Qxd5 3. Nc3 Qa5 *\n";
    let mut submit = job("zh-fsf", pgn, 20_000);
    submit.engine = "fsf".into();
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
    let games = s
        .client
        .get_job_results(pb::GetJobResultsRequest {
            job_id: id,
            offset: 0,
            limit: 0,
        })
        .await
        .unwrap()
        .into_inner()
        .games;
    assert_eq!(games.len(), 1);
    assert!(games[0].error.is_empty(), "{}", games[0].error);
    assert!(
        games[0].engine.contains("Fairy-Stockfish"),
        "{}",
        games[0].engine
    );
    assert_eq!(games[0].plies.len(), 6);
    assert!(games[0].plies.iter().all(|p| p.eval_after.is_some()));
    // Mixed variants whose defaults differ need a named engine.
    let mixed = "[Event \"a\"]\n\n1. e4 *\n\n[Event \"b\"]\n[Variant \"Crazyhouse\"]\n\n1. e4 *\n";
    let e = s
        .client
        .submit_job(job("mixed", mixed, 1000))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(bad_field(&e), "engine");
    let mut named = job("mixed-named", mixed, 1000);
    named.engine = "fsf".into();
    s.client.submit_job(named).await.unwrap();
    s.server.stop().await;
}

/// A shell script in `dir` speaking just enough UCI, doing `on_go` when asked to search.
fn fake_engine(dir: &std::path::Path, name: &str, on_go: &str) -> String {
    let path = dir.join(name);
    let script = format!(
        "#!/bin/sh\n\
         while read -r line; do\n\
           case \"$line\" in\n\
             uci) echo 'id name Fake 1'; echo 'uciok' ;;\n\
             isready) echo 'readyok' ;;\n\
             go*) {on_go} ;;\n\
             quit) exit 0 ;;\n\
           esac\n\
         done\n"
    );
    // Written by a child process: a write descriptor of this one, inherited by a child that
    // another test's thread forks at that instant, would keep the script busy (ETXTBSY) when
    // the service starts it.
    let mut writer = std::process::Command::new("sh")
        .args(["-c", "cat > \"$1\" && chmod 755 \"$1\"", "sh"])
        .arg(&path)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut writer.stdin.take().unwrap(), script.as_bytes()).unwrap();
    assert!(
        writer.wait().unwrap().success(),
        "writing {}",
        path.display()
    );
    path.display().to_string()
}

#[tokio::test]
async fn an_engine_that_crashes_or_hangs_fails_the_call_and_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let crash = fake_engine(dir.path(), "crash.sh", "exit 3");
    let hang = fake_engine(dir.path(), "hang.sh", "exec sleep 600");
    let mut s = start(with_engines(
        &[&format!("crash={crash}"), &format!("hang={hang},timeout=1")],
        &[],
    ))
    .await;
    for engine in ["crash", "hang"] {
        let mut req = best(Variant::Chess, "", limits(4, 0, 0));
        req.engine = engine.into();
        let e = tokio::time::timeout(Duration::from_secs(60), s.client.best_move(req))
            .await
            .expect("a failed engine does not hold the call")
            .unwrap_err();
        assert_eq!(e.code(), Code::Unavailable, "{engine}: {e:?}");
        assert!(e.message().contains(engine), "{engine}: {}", e.message());
    }
    // The service still answers, on the built-in engine and on the replaced processes.
    let r = s
        .client
        .best_move(best(Variant::Chess, "", limits(2, 0, 0)))
        .await
        .unwrap()
        .into_inner();
    assert!(r.result.unwrap().best_move.is_some());
    let mut req = best(Variant::Chess, "", limits(2, 0, 0));
    req.engine = "crash".into();
    assert_eq!(
        s.client.best_move(req).await.unwrap_err().code(),
        Code::Unavailable
    );
    s.server.stop().await;
}

#[tokio::test]
async fn a_server_whose_engine_cannot_start_does_not_start() {
    let config = with_engines(&["ghost=/nonexistent/engine"], &[]);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let e = serve(
        listener,
        ServeConfig::default(),
        config,
        AccessPolicy::development(),
        std::future::pending(),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("ghost"), "{e}");
    let config = with_engines(&[], &[(CoreVariant::Chess, "stockfish")]);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let e = serve(
        listener,
        ServeConfig::default(),
        config,
        AccessPolicy::development(),
        std::future::pending(),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("--default-engine"), "{e}");
}
