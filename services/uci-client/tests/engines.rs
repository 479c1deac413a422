//! Against the real engines: Debian's Stockfish (`/usr/games/stockfish`) and Fairy-Stockfish
//! (`/usr/games/fairy-stockfish`). Each test prints a notice and passes when its engine is not
//! installed.

use arbiter_core::{AnyMove, AnyPosition, Locale, Notation, Position, Variant};
use arbiter_engine::Limits;
use arbiter_engine::score::Reported;
use arbiter_uci_client::{EnginePool, EngineSpec, Search, UciError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const STOCKFISH: &str = "/usr/games/stockfish";
const FAIRY: &str = "/usr/games/fairy-stockfish";

fn pool(path: &str, spec: &str) -> Option<EnginePool> {
    if !std::path::Path::new(path).exists() {
        eprintln!("NOTICE: {path} is not installed; skipping");
        return None;
    }
    Some(EnginePool::start(EngineSpec::parse(spec).expect("spec")).expect("engine starts"))
}

fn position(variant: Variant, fen: Option<&str>) -> AnyPosition {
    AnyPosition::from_optional_text(variant, fen).expect("position")
}

fn line(pos: &AnyPosition, moves: &[&str]) -> Vec<AnyMove> {
    let mut p = pos.clone();
    moves
        .iter()
        .map(|t| {
            let m = p.parse_move(t, Notation::Uci, Locale::English).expect(t);
            p.play_unchecked(m);
            m
        })
        .collect()
}

fn after(pos: &AnyPosition, moves: &[AnyMove]) -> AnyPosition {
    let mut p = pos.clone();
    for &m in moves {
        p.play_unchecked(m);
    }
    p
}

fn assert_legal(pos: &AnyPosition, text: &str) -> AnyMove {
    let m = pos
        .parse_move(text, Notation::Uci, Locale::English)
        .unwrap_or_else(|e| panic!("{text} in {pos}: {e}"));
    assert!(pos.is_legal(m), "{text} in {pos}");
    m
}

fn search<'a>(start: &'a AnyPosition, moves: &'a [AnyMove], depth: u32) -> Search<'a> {
    Search {
        start,
        moves,
        limits: Limits::depth(depth),
        multipv: 1,
    }
}

#[test]
fn stockfish_names_itself_and_plays_chess() {
    let Some(sf) = pool(STOCKFISH, "sf=/usr/games/stockfish") else {
        return;
    };
    assert_eq!(sf.name(), "sf");
    assert!(sf.id().contains("Stockfish"), "{}", sf.id());
    assert!(sf.id().chars().any(|c| c.is_ascii_digit()), "{}", sf.id());
    assert!(sf.supports(Variant::Chess));
    assert!(sf.supports(Variant::Chess960));
    assert!(!sf.supports(Variant::Crazyhouse));
    assert!(!sf.supports(Variant::Glinski));
    let zh = position(Variant::Crazyhouse, None);
    let stop = AtomicBool::new(false);
    match sf.analyze(&search(&zh, &[], 4), &stop, &mut |_| {}) {
        Err(e @ UciError::Unsupported { .. }) => assert!(e.to_string().contains("'sf'")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn stockfish_depth_8_on_several_positions() {
    let Some(sf) = pool(STOCKFISH, "sf=/usr/games/stockfish,hash=8") else {
        return;
    };
    let stop = AtomicBool::new(false);
    for fen in [
        None,
        Some("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"),
        Some("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"),
        Some("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1"),
        Some("rnbqkb1r/pp1p1ppp/2p5/4P3/2B5/8/PPP1NnPP/RNBQK2R w KQkq - 0 6"),
    ] {
        let start = position(Variant::Chess, fen);
        let mut infos = 0;
        let a = sf
            .analyze(&search(&start, &[], 8), &stop, &mut |p| {
                infos += 1;
                assert!(!p.pv.is_empty());
            })
            .expect("analysis");
        let best = a.best.as_deref().expect("a move");
        assert_legal(&start, best);
        assert_eq!(a.depth, 8, "{fen:?}");
        assert!(infos >= 8, "{fen:?}: {infos} info lines");
        assert_eq!(a.lines.len(), 1);
        assert_eq!(a.lines[0].pv[0], best);
        assert!(a.nodes > 0);
        if let Some(p) = &a.ponder {
            let m = assert_legal(&start, best);
            assert_legal(&start.play(m).unwrap(), p);
        }
    }
}

#[test]
fn multipv_3_gives_3_lines_and_a_mate_in_1_is_mate_1() {
    let Some(sf) = pool(STOCKFISH, "sf=/usr/games/stockfish") else {
        return;
    };
    let stop = AtomicBool::new(false);
    let start = position(Variant::Chess, None);
    let mut session = sf.session(&stop).expect("session");
    session.new_game().expect("new game");
    let a = session
        .analyze(
            &Search {
                multipv: 3,
                ..search(&start, &[], 8)
            },
            &stop,
            &mut |_| {},
        )
        .expect("analysis");
    assert_eq!(a.lines.len(), 3);
    let firsts: std::collections::HashSet<&str> =
        a.lines.iter().map(|l| l.pv[0].as_str()).collect();
    assert_eq!(firsts.len(), 3, "{:?}", a.lines);
    for l in &a.lines {
        assert_legal(&start, &l.pv[0]);
    }
    // Back to one line on the same process.
    let mate = position(Variant::Chess, Some("6k1/5ppp/8/8/8/8/8/K2R4 w - - 0 1"));
    let a = session
        .analyze(&search(&mate, &[], 8), &stop, &mut |_| {})
        .expect("analysis");
    assert_eq!(a.best.as_deref(), Some("d1d8"));
    assert_eq!(a.score, Reported::Mate(1));
    assert_eq!(a.lines.len(), 1);
}

#[test]
fn the_line_of_moves_reaches_the_engine() {
    let Some(sf) = pool(STOCKFISH, "sf=/usr/games/stockfish") else {
        return;
    };
    let stop = AtomicBool::new(false);
    let start = position(Variant::Chess, None);
    // Black to move after these: a best move legal only for Black there proves the engine
    // searched the position after the line.
    let moves = line(&start, &["e2e4", "e7e5", "g1f3", "b8c6", "f1b5"]);
    let a = sf
        .analyze(&search(&start, &moves, 8), &stop, &mut |_| {})
        .expect("analysis");
    assert_legal(&after(&start, &moves), a.best.as_deref().unwrap());

    // A repetition: after Nf3 Nf6 Ng1 Ng8 twice the start position stands for the third time.
    let shuffle = line(
        &start,
        &[
            "g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1",
        ],
    );
    let a = sf
        .analyze(&search(&start, &shuffle, 8), &stop, &mut |_| {})
        .expect("analysis");
    assert_legal(&after(&start, &shuffle), a.best.as_deref().unwrap());
    // Nf6-g8 repeats the start position a third time: the engine, seeing the history, scores
    // that line a draw; whatever it picks, its score is no big edge for either side.
    match a.score {
        Reported::Cp(cp) => assert!(cp.abs() < 150, "{cp}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_raised_stop_ends_an_infinite_search_with_a_move() {
    let Some(sf) = pool(STOCKFISH, "sf=/usr/games/stockfish") else {
        return;
    };
    let stop = AtomicBool::new(false);
    let start = position(Variant::Chess, None);
    let began = Instant::now();
    let a = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(500));
            stop.store(true, Ordering::Relaxed);
        });
        sf.analyze(
            &Search {
                limits: Limits {
                    infinite: true,
                    ..Limits::default()
                },
                ..search(&start, &[], 0)
            },
            &stop,
            &mut |_| {},
        )
    })
    .expect("analysis");
    assert!(began.elapsed() < Duration::from_secs(20));
    assert_legal(&start, a.best.as_deref().expect("a move"));
    assert!(a.depth >= 1);
}

#[test]
fn an_ended_position_is_answered_without_the_engine() {
    let Some(sf) = pool(STOCKFISH, "sf=/usr/games/stockfish") else {
        return;
    };
    let stop = AtomicBool::new(false);
    let mated = position(Variant::Chess, Some("3R2k1/5ppp/8/8/8/8/8/K7 b - - 1 1"));
    let a = sf
        .analyze(&search(&mated, &[], 8), &stop, &mut |_| {
            panic!("no progress")
        })
        .expect("analysis");
    assert_eq!(a.best, None);
    assert_eq!(a.score, Reported::Mate(0));
    let stalemate = position(Variant::Chess, Some("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"));
    let a = sf
        .analyze(&search(&stalemate, &[], 8), &stop, &mut |_| {})
        .expect("analysis");
    assert_eq!((a.best, a.score), (None, Reported::Cp(0)));
    // An illegal line is the caller's error.
    let start = position(Variant::Chess, None);
    let e2e4 = line(&start, &["e2e4"]);
    let twice = [e2e4[0], e2e4[0]];
    match sf.analyze(&search(&start, &twice, 4), &stop, &mut |_| {}) {
        Err(UciError::InvalidSearch { message, .. }) => assert!(message.contains("move 2")),
        other => panic!("{other:?}"),
    }
    assert_eq!(sf.restarts(), 0);
}

#[test]
fn two_processes_search_at_once() {
    let Some(sf) = pool(STOCKFISH, "sf=/usr/games/stockfish,processes=2") else {
        return;
    };
    let stop = AtomicBool::new(false);
    let start = position(Variant::Chess, None);
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                let a = sf
                    .analyze(&search(&start, &[], 6), &stop, &mut |_| {})
                    .expect("analysis");
                assert_legal(&start, a.best.as_deref().unwrap());
            });
        }
    });
    assert!(sf.processes() <= 2);
    sf.shut_down();
    assert_eq!(sf.processes(), 0);
    assert!(matches!(sf.session(&stop), Err(UciError::ShutDown { .. })));
}

#[test]
fn stockfish_plays_chess960_castling_as_king_takes_rook() {
    let Some(sf) = pool(STOCKFISH, "sf=/usr/games/stockfish") else {
        return;
    };
    let stop = AtomicBool::new(false);
    // Castling is legal for White (king f1, rooks a1 and h1 with g1 and h... free).
    let start = position(
        Variant::Chess960,
        Some("rk3r2/pppppppp/8/8/8/8/PPPPPPPP/RK3R2 w KQkq - 0 1"),
    );
    let a = sf
        .analyze(&search(&start, &[], 6), &stop, &mut |_| {})
        .expect("analysis");
    assert_legal(&start, a.best.as_deref().unwrap());
    // The line with a castling in it reaches the engine in its form.
    let castle = line(&start, &["b1a1"]);
    let a = sf
        .analyze(&search(&start, &castle, 6), &stop, &mut |_| {})
        .expect("analysis");
    assert_legal(&after(&start, &castle), a.best.as_deref().unwrap());
}

#[test]
fn fairy_stockfish_drops_to_mate_and_switches_variants() {
    let Some(fsf) = pool(FAIRY, "fsf=/usr/games/fairy-stockfish") else {
        return;
    };
    assert!(fsf.id().contains("Fairy-Stockfish"), "{}", fsf.id());
    for v in [Variant::Chess, Variant::Crazyhouse, Variant::Bughouse] {
        assert!(fsf.supports(v), "{v}");
    }
    assert!(!fsf.supports(Variant::Byzantine));
    let stop = AtomicBool::new(false);
    let mut session = fsf.session(&stop).expect("session");
    // White mates by dropping the rook on the back rank; Black holds a pawn.
    let zh = position(
        Variant::Crazyhouse,
        Some("6k1/5ppp/8/8/8/8/8/K7[Rp] w - - 0 1"),
    );
    let a = session
        .analyze(&search(&zh, &[], 6), &stop, &mut |p| {
            assert!(!p.pv.is_empty())
        })
        .expect("analysis");
    let best = a.best.as_deref().unwrap();
    assert!(best.starts_with("R@") && best.ends_with('8'), "{best}");
    let m = assert_legal(&zh, best);
    assert!(zh.play(m).unwrap().terminal().is_some(), "{best} mates");
    assert_eq!(a.score, Reported::Mate(1));

    // Chess on the same process, then crazyhouse again, with drops in the line.
    let start = position(Variant::Chess, None);
    let a = session
        .analyze(&search(&start, &[], 6), &stop, &mut |_| {})
        .expect("chess");
    let best = a.best.as_deref().unwrap();
    assert!(!best.contains('@'));
    assert_legal(&start, best);
    let zh_start = position(
        Variant::Crazyhouse,
        Some("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R[Pn] w KQkq - 2 3"),
    );
    let moves = line(&zh_start, &["P@d5", "N@d4", "f3d4"]);
    let a = session
        .analyze(&search(&zh_start, &moves, 6), &stop, &mut |_| {})
        .expect("crazyhouse");
    assert_legal(&after(&zh_start, &moves), a.best.as_deref().unwrap());

    // A bughouse board with a promoted queen.
    let bug = position(
        Variant::Bughouse,
        Some("r3k2r/pppq1ppp/2n5/8/8/2N5/PPPQ~1PPP/R3K2R[NNp] w KQkq - 0 12"),
    );
    let a = session
        .analyze(&search(&bug, &[], 5), &stop, &mut |_| {})
        .expect("bughouse");
    assert_legal(&bug, a.best.as_deref().unwrap());
    assert_eq!(fsf.restarts(), 0);
}

#[test]
fn a_variants_key_narrows_what_the_pool_serves() {
    let Some(fsf) = pool(FAIRY, "fsf=/usr/games/fairy-stockfish,variants=crazyhouse") else {
        return;
    };
    assert_eq!(fsf.variants(), [Variant::Crazyhouse]);
    let Err(e) = EnginePool::start(
        EngineSpec::parse("sf=/usr/games/stockfish,variants=chess+crazyhouse").unwrap(),
    ) else {
        panic!("Stockfish plays no crazyhouse");
    };
    assert!(
        matches!(
            e,
            UciError::Unsupported {
                variant: Variant::Crazyhouse,
                ..
            }
        ),
        "{e}"
    );
    let Err(e) =
        EnginePool::start(EngineSpec::parse("sf=/usr/games/stockfish,No Such Option=1").unwrap())
    else {
        panic!("an unknown option");
    };
    assert!(e.to_string().contains("No Such Option"), "{e}");
    let sf = EnginePool::start(
        EngineSpec::parse("sf=/usr/games/stockfish,Skill Level=3,threads=2,hash=32").unwrap(),
    )
    .expect("options the engine has");
    assert_eq!(sf.spec().threads, 2);
}

#[test]
fn a_position_that_crashes_stockfish_leaves_the_pool_working() {
    let Some(sf) = pool(STOCKFISH, "sf=/usr/games/stockfish") else {
        return;
    };
    let stop = AtomicBool::new(false);
    // Legal for the core (White in check from the f2 pawn, an en passant square set);
    // Stockfish 15.1 dies of it with a segmentation fault.
    let odd = position(
        Variant::Chess,
        Some("rnbqk1nr/bb3p1p/1q2r3/2pPp3/3P4/7P/1PP1NpPP/R1BQKBNR w KQkq c6 0 1"),
    );
    match sf.analyze(&search(&odd, &[], 8), &stop, &mut |_| {}) {
        Ok(a) => {
            // A Stockfish that survives it must still answer a legal move.
            assert_legal(&odd, a.best.as_deref().unwrap());
        }
        Err(e @ UciError::Crashed { .. }) => {
            assert!(e.to_string().contains("'sf'"), "{e}");
            assert_eq!(sf.restarts(), 1, "one restart for the retry");
        }
        Err(e) => panic!("{e}"),
    }
    let start = position(Variant::Chess, None);
    let a = sf
        .analyze(&search(&start, &[], 6), &stop, &mut |_| {})
        .expect("the pool goes on");
    assert_legal(&start, a.best.as_deref().unwrap());
}
