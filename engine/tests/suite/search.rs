//! The engine on every variant: forced wins (checked against a brute-force solver over the
//! core's rules), simple tactics, legality over random positions, every kind of limit, the stop
//! check interval, reproducibility and MultiPV.

use crate::{Frozen, Rng, search_with};
use arbiter_core::byzantine::{ByzantineRules, ByzantineVariant};
use arbiter_core::crazyhouse::HouseRules;
use arbiter_core::{Byzantine, Chess, Color, Crazyhouse, Glinski, Position};
use arbiter_engine::hooks::{MOVE_SLOTS, PIECE_TO_SLOTS};
use arbiter_engine::score::{MATE_BOUND, Reported};
use arbiter_engine::search::CHECK_EVERY;
use arbiter_engine::time::budget;
use arbiter_engine::{
    Control, Engine, EnginePosition, GameClock, Limits, SearchOptions, SearchResult, TimeSource,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A clock that advances one millisecond each time it is read, counting the reads.
struct Ticking {
    reads: AtomicU64,
}

impl TimeSource for Ticking {
    fn now_ms(&self) -> u64 {
        self.reads.fetch_add(1, Ordering::Relaxed)
    }
}

fn search<P: EnginePosition>(pos: &P, limits: Limits, multipv: usize) -> SearchResult<P::Move> {
    search_with(&mut Engine::<P>::new(8), pos, limits, multipv)
}

/// Positions met in random games from `start` (games end at their ending or after 120 plies).
fn random_positions<P: Position>(start: &P, seed: u64, count: usize) -> Vec<P> {
    let mut rng = Rng(seed | 1);
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let mut p = start.clone();
        for _ in 0..120 {
            if p.terminal().is_some() {
                break;
            }
            let moves = p.legal_moves();
            if moves.is_empty() {
                break;
            }
            p.play_unchecked(moves[rng.below(moves.len())]);
            out.push(p.clone());
            if out.len() == count {
                break;
            }
        }
    }
    out
}

/// Whether the side to move wins (a full point, by any ending) within `n` of its moves, by
/// brute force over the legal moves.
fn wins_within<P: Position>(pos: &P, n: u32) -> bool {
    if n == 0 {
        return false;
    }
    let us = pos.turn();
    pos.legal_moves().iter().any(|&m| {
        let mut child = pos.clone();
        child.play_unchecked(m);
        match child.terminal() {
            Some(o) => o.score.quarters(us) == 4,
            None => n > 1 && loses_within(&child, n - 1, us),
        }
    })
}

/// Whether every reply of the side to move lets `winner` win within `n` moves.
fn loses_within<P: Position>(pos: &P, n: u32, winner: Color) -> bool {
    let moves = pos.legal_moves();
    !moves.is_empty()
        && moves.iter().all(|&m| {
            let mut child = pos.clone();
            child.play_unchecked(m);
            match child.terminal() {
                Some(o) => o.score.quarters(winner) == 4,
                None => wins_within(&child, n),
            }
        })
}

/// In random positions with a forced win in 1 or 2 (found by brute force), the engine reports
/// that win, at that distance, and its move keeps it; where it reports a win in 3 in a position
/// with none in 2, brute force confirms it.
fn finds_forced_wins<P: EnginePosition>(start: &P, seed: u64, wanted: usize, need_two: bool) {
    finds_forced_wins_in(&random_positions(start, seed, 3_000), wanted, need_two);
}

fn finds_forced_wins_in<P: EnginePosition>(positions: &[P], wanted: usize, need_two: bool) {
    let mut found = [0usize; 4];
    for p in positions {
        if found[1] >= wanted && found[2] >= wanted {
            break;
        }
        let in1 = wins_within(p, 1);
        let in2 = !in1 && found[2] < wanted && p.legal_moves().len() <= 50 && wins_within(p, 2);
        let wanted_in1 = in1 && found[1] < wanted;
        if !wanted_in1 && !in2 {
            continue;
        }
        let n = if in1 { 1 } else { 2 };
        let r = search(p, Limits::depth(2 * n + 4), 1);
        assert_eq!(
            Reported::of(r.score),
            Reported::Mate(n as i32),
            "{}: a win in {n} exists",
            p.to_text()
        );
        let mut child = p.clone();
        child.play_unchecked(r.best.unwrap());
        let kept = match child.terminal() {
            Some(o) => o.score.quarters(p.turn()) == 4,
            None => n > 1 && loses_within(&child, n - 1, p.turn()),
        };
        assert!(
            kept,
            "{}: the move chosen does not keep the win",
            p.to_text()
        );
        found[n as usize] += 1;
    }
    assert!(
        found[1] >= wanted,
        "only {} positions with a win in 1",
        found[1]
    );
    assert!(
        !need_two || found[2] >= 1,
        "no position with a win in 2 met"
    );
    // Wins in 3 the engine reports are real (checked one ply deep by brute force).
    let mut checked = 0;
    for p in positions.iter().rev().take(120) {
        if checked >= 2 {
            break;
        }
        let r = search(p, Limits::depth(8), 1);
        if Reported::of(r.score) != Reported::Mate(3) || p.legal_moves().len() > 30 {
            continue;
        }
        assert!(
            !wins_within(p, 2),
            "{}: a shorter win was missed",
            p.to_text()
        );
        let mut child = p.clone();
        child.play_unchecked(r.best.unwrap());
        assert!(
            loses_within(&child, 2, p.turn()),
            "{}: no win in 3",
            p.to_text()
        );
        checked += 1;
    }
}

fn byzantine(board: ByzantineVariant) -> Byzantine {
    Byzantine::start(board, ByzantineRules::default())
}

#[test]
fn forced_wins_chess() {
    finds_forced_wins(&Chess::new(), 1, 4, true);
}

#[test]
fn forced_wins_crazyhouse() {
    finds_forced_wins(&Crazyhouse::new(HouseRules::Crazyhouse), 2, 4, true);
}

/// Random Glinski positions with few pieces (king, queen and rook against a king and a pawn):
/// random games on the hex board rarely leave a win in 2 with few enough moves to check.
fn sparse_glinski(seed: u64, count: usize) -> Vec<Glinski> {
    use arbiter_core::glinski::geometry::{FILE_LENGTH, from_file_rank};
    let mut rng = Rng(seed | 1);
    let mut out = Vec::new();
    while out.len() < count {
        let mut board = std::collections::HashMap::new();
        for piece in ['K', 'Q', 'R', 'k', 'p'] {
            loop {
                let file = rng.below(11) as u8;
                let rank = 1 + rng.below(usize::from(FILE_LENGTH[usize::from(file)])) as u8;
                let cell = from_file_rank(file, rank).unwrap();
                if let std::collections::hash_map::Entry::Vacant(e) = board.entry(cell) {
                    e.insert(piece);
                    break;
                }
            }
        }
        let mut ranks = Vec::new();
        for rank in (1..=11u8).rev() {
            let mut field = String::new();
            let mut empty = 0;
            for file in 0..11u8 {
                let Some(cell) = from_file_rank(file, rank) else {
                    continue;
                };
                match board.get(&cell) {
                    Some(&c) => {
                        if empty > 0 {
                            field.push_str(&empty.to_string());
                            empty = 0;
                        }
                        field.push(c);
                    }
                    None => empty += 1,
                }
            }
            if empty > 0 {
                field.push_str(&empty.to_string());
            }
            ranks.push(field);
        }
        if let Ok(p) = Glinski::from_text(&format!("{} w - 0 1", ranks.join("/")))
            && p.terminal().is_none()
        {
            out.push(p);
        }
    }
    out
}

#[test]
fn forced_wins_glinski() {
    // Random games give wins in 1; positions with few pieces give the wins in 2.
    finds_forced_wins(&Glinski::new(), 3, 4, false);
    finds_forced_wins_in(&sparse_glinski(3, 400), 2, true);
}

#[test]
fn forced_wins_byzantine() {
    finds_forced_wins(&byzantine(ByzantineVariant::Plain), 4, 4, true);
    finds_forced_wins(&byzantine(ByzantineVariant::Citadel), 5, 4, true);
}

#[test]
fn a_chess_mate_in_one_on_the_back_rank() {
    let p = Chess::from_fen("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1").unwrap();
    let r = search(&p, Limits::depth(4), 1);
    assert_eq!(Reported::of(r.score), Reported::Mate(1));
    assert_eq!(p.move_to_uci(r.best.unwrap()), "d1d8");
}

fn best_text<P: EnginePosition>(pos: &P, depth: u32) -> (String, i32) {
    let r = search(pos, Limits::depth(depth), 1);
    (pos.move_to_uci(r.best.unwrap()), r.score)
}

#[test]
fn simple_tactics_win_material() {
    // A knight fork of king and queen (the pawn keeps the ending alive: K+N v K is dead).
    let fork = Chess::from_fen("6k1/8/2q5/5N2/8/8/P7/6K1 w - - 0 1").unwrap();
    let (m, s) = best_text(&fork, 6);
    assert_eq!(m, "f5e7");
    assert!(s > 300, "{s}: the queen is won (K+N+P v K remains)");
    let zh = Crazyhouse::from_fen(
        "6k1/8/2q5/5N2/8/8/8/6K1[] w - - 0 1",
        HouseRules::Crazyhouse,
    )
    .unwrap();
    let (m, s) = best_text(&zh, 6);
    assert_eq!(m, "f5e7");
    assert!(s > 500, "{s}");
    // A Glinski rook takes a queen standing on its file.
    let hex = Glinski::from_text("k/3/5/7/9/11/5q5/11/11/11/K4R5 w - 0 1").unwrap();
    let (m, s) = best_text(&hex, 5);
    assert_eq!(m, "f1f5");
    assert!(s > 500, "{s}");
    // A Byzantine rook takes an undefended rook along its ring.
    let ring = Byzantine::from_text(
        "R3r11/8p-7/9K3k2/16 w 0 1",
        ByzantineVariant::Plain,
        ByzantineRules::default(),
    )
    .unwrap();
    let (m, s) = best_text(&ring, 5);
    assert_eq!(m, "a1a5");
    assert!(s > 300, "{s}");
}

/// Every best move and every principal variation is legal, in random positions of every
/// variant (bughouse boards included).
fn always_legal<P: EnginePosition>(start: &P, seed: u64, count: usize) {
    let mut engine = Engine::<P>::new(4);
    let stop = AtomicBool::new(false);
    let options = SearchOptions {
        multipv: 2,
        move_overhead_ms: 0,
    };
    for p in random_positions(start, seed, count) {
        let r = engine.search(
            &p,
            &[],
            &Limits::nodes(400),
            &options,
            Control {
                stop: &stop,
                time: &Frozen,
            },
            &mut |_| {},
        );
        let legal = p.legal_moves();
        match r.best {
            None => assert!(legal.is_empty()),
            Some(best) => assert!(legal.contains(&best), "{}", p.to_text()),
        }
        for line in &r.lines {
            let mut q = p.clone();
            for &m in &line.pv {
                assert!(q.legal_moves().contains(&m), "{}: illegal pv", p.to_text());
                q.play_unchecked(m);
            }
        }
    }
}

#[test]
fn never_an_illegal_move() {
    always_legal(&Chess::new(), 11, 1_500);
    always_legal(&Crazyhouse::new(HouseRules::Crazyhouse), 12, 1_000);
    always_legal(&Crazyhouse::new(HouseRules::Bughouse), 13, 1_000);
    always_legal(&Glinski::new(), 14, 1_000);
    always_legal(&byzantine(ByzantineVariant::Plain), 15, 1_000);
    always_legal(&byzantine(ByzantineVariant::Citadel), 16, 1_000);
}

/// Every legal move of random positions of `start`'s variant fits the history tables: its
/// butterfly slot below `MOVE_SLOTS`, its piece-and-destination slot below `PIECE_TO_SLOTS`
/// (the search indexes its tables with them unchecked by anything else).
fn slots_fit<P: EnginePosition>(start: &P, seed: u64, count: usize) {
    for p in random_positions(start, seed, count) {
        for &m in p.legal_moves().iter() {
            assert!(p.move_slot(m) < MOVE_SLOTS, "{}", p.to_text());
            assert!(p.piece_to(m) < PIECE_TO_SLOTS, "{}", p.to_text());
        }
    }
}

#[test]
fn every_move_fits_the_history_tables() {
    slots_fit(&Chess::new(), 21, 2_000);
    slots_fit(&Crazyhouse::new(HouseRules::Crazyhouse), 22, 2_000);
    slots_fit(&Crazyhouse::new(HouseRules::Bughouse), 23, 2_000);
    slots_fit(&Glinski::new(), 24, 2_000);
    slots_fit(&byzantine(ByzantineVariant::Plain), 25, 2_000);
    slots_fit(&byzantine(ByzantineVariant::Citadel), 26, 2_000);
}

#[test]
fn depth_and_node_limits_hold() {
    let p = Chess::new();
    let r = search(&p, Limits::depth(5), 1);
    assert_eq!(r.depth, 5);
    for n in [1, 100, 5_000, 40_000] {
        let r = search(&p, Limits::nodes(n), 1);
        assert!(r.nodes <= n, "{} > {n}", r.nodes);
        assert!(r.best.is_some());
    }
    // Stopped before any line has a searched score: every line reports its static estimate,
    // never a mate.
    let r = search(&p, Limits::nodes(1), 5);
    assert_eq!(r.lines.len(), 5);
    assert!(
        r.lines.iter().all(|l| l.score.abs() < 1_000),
        "{:?}",
        r.lines
    );
    // A node-limited search from a fresh engine is reproducible.
    let a = search(&Glinski::new(), Limits::nodes(30_000), 3);
    let b = search(&Glinski::new(), Limits::nodes(30_000), 3);
    assert_eq!(a, b);
}

#[test]
fn time_is_read_every_check_interval_and_respected() {
    // A clock that moves one millisecond per read: a 50 ms search may read it about 50 times,
    // and between two reads it searches at most CHECK_EVERY nodes.
    let clock = Ticking {
        reads: AtomicU64::new(0),
    };
    let mut engine = Engine::<Chess>::new(8);
    let stop = AtomicBool::new(false);
    let r = engine.search(
        &Chess::new(),
        &[],
        &Limits::movetime(50),
        &SearchOptions {
            multipv: 1,
            move_overhead_ms: 0,
        },
        Control {
            stop: &stop,
            time: &clock,
        },
        &mut |_| {},
    );
    let reads = clock.reads.load(Ordering::Relaxed);
    assert!(r.best.is_some());
    assert!(reads <= 200, "{reads} reads");
    assert!(
        r.nodes <= (reads + 1) * CHECK_EVERY,
        "{} nodes, {reads} reads",
        r.nodes
    );
    assert!(reads >= 50, "it searched until the time was spent");
}

#[test]
fn a_clocked_search_starts_no_iteration_after_its_soft_budget_and_ends_by_the_hard_one() {
    // 2.5 s left and no increment: a soft budget of 100 ms, a hard one of 500 (one millisecond
    // per read of the clock, a read every CHECK_EVERY nodes at most).
    let limits = Limits {
        clock: Some(GameClock {
            time_ms: [2_500, 2_500],
            increment_ms: [0, 0],
            moves_to_go: None,
        }),
        ..Limits::default()
    };
    let b = budget(&limits, Color::White, 0).unwrap();
    assert_eq!((b.soft_ms, b.hard_ms), (100, 500));
    for fen in [
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
        "8/5pk1/6p1/8/2Q5/6P1/5PK1/4r3 w - - 0 40",
    ] {
        let pos = Chess::from_fen(fen).unwrap();
        let clock = Ticking {
            reads: AtomicU64::new(0),
        };
        let stop = AtomicBool::new(false);
        let mut finished = Vec::new();
        let r = Engine::<Chess>::new(8).search(
            &pos,
            &[],
            &limits,
            &SearchOptions {
                multipv: 1,
                move_overhead_ms: 0,
            },
            Control {
                stop: &stop,
                time: &clock,
            },
            &mut |i| finished.push(i.time_ms),
        );
        assert!(r.best.is_some(), "{fen}");
        // Each iteration after the first began where the one before finished: before the soft
        // budget (what share of it depends on how settled the search is).
        let (last, started) = finished.split_last().expect("an iteration finished");
        assert!(
            started.iter().all(|&t| t < b.soft_ms),
            "{fen}: {finished:?}"
        );
        assert!(
            *last <= b.hard_ms && r.time_ms <= b.hard_ms + 1,
            "{fen}: {r:?}"
        );
    }
}

/// A clock that raises the stop flag at its third read.
struct Stopper<'a> {
    reads: AtomicU64,
    stop: &'a AtomicBool,
}

impl TimeSource for Stopper<'_> {
    fn now_ms(&self) -> u64 {
        if self.reads.fetch_add(1, Ordering::Relaxed) == 2 {
            self.stop.store(true, Ordering::Relaxed);
        }
        0
    }
}

#[test]
fn the_stop_flag_ends_an_infinite_search_within_the_interval() {
    let stop = AtomicBool::new(false);
    let clock = Stopper {
        reads: AtomicU64::new(0),
        stop: &stop,
    };
    let mut engine = Engine::<Crazyhouse>::new(8);
    let limits = Limits {
        infinite: true,
        ..Limits::default()
    };
    let mut last_info_nodes = 0;
    let r = engine.search(
        &Crazyhouse::new(HouseRules::Crazyhouse),
        &[],
        &limits,
        &SearchOptions::default(),
        Control {
            stop: &stop,
            time: &clock,
        },
        &mut |i| last_info_nodes = i.nodes,
    );
    assert!(r.best.is_some());
    // The flag is read at most CHECK_EVERY nodes after it was raised; the info callback reads
    // the clock too, so the flag was raised after at most the nodes of the last report.
    assert!(
        r.nodes <= last_info_nodes + 2 * CHECK_EVERY,
        "{} nodes after a stop raised by {last_info_nodes}",
        r.nodes
    );
    // Raised before the search starts: it still returns a legal move.
    let stop = AtomicBool::new(true);
    let mut engine = Engine::<Chess>::new(8);
    let r = engine.search(
        &Chess::new(),
        &[],
        &limits,
        &SearchOptions::default(),
        Control {
            stop: &stop,
            time: &Frozen,
        },
        &mut |_| {},
    );
    assert!(Chess::new().legal_moves().contains(&r.best.unwrap()));
}

#[test]
fn multipv_gives_distinct_lines_best_first() {
    let p = Chess::from_fen("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
        .unwrap();
    let r = search(&p, Limits::depth(6), 4);
    assert_eq!(r.lines.len(), 4);
    for w in r.lines.windows(2) {
        assert!(w[0].score >= w[1].score);
        assert_ne!(w[0].pv[0], w[1].pv[0]);
    }
    assert_eq!(r.best, Some(r.lines[0].pv[0]));
    // More lines than moves: every move once.
    let few = Chess::from_fen("7k/8/8/8/8/8/8/K7 w - - 0 1").unwrap();
    let r = search(&few, Limits::depth(3), 10);
    assert_eq!(r.lines.len(), 3);
    assert!(r.lines.iter().all(|l| l.score.abs() < MATE_BOUND));
}

#[test]
fn multipv_reports_each_depth_as_one_ranked_block() {
    // Several positions and depths, so that a later line outscoring an earlier one (a search
    // instability that does happen) is among the cases.
    let fens = [
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    ];
    for fen in fens {
        let p = Chess::from_fen(fen).unwrap();
        let mut engine = Engine::<Chess>::new(8);
        let stop = AtomicBool::new(false);
        let options = SearchOptions {
            multipv: 3,
            move_overhead_ms: 0,
        };
        let mut reports: Vec<(u32, usize, i32, String)> = Vec::new();
        let r = engine.search(
            &p,
            &[],
            &Limits::depth(6),
            &options,
            Control {
                stop: &stop,
                time: &Frozen,
            },
            &mut |i| reports.push((i.depth, i.multipv, i.score, format!("{:?}", i.pv))),
        );
        assert_eq!(reports.len(), 6 * 3, "{fen}");
        for (d, block) in reports.chunks(3).enumerate() {
            for (k, (depth, multipv, _, _)) in block.iter().enumerate() {
                assert_eq!((*depth, *multipv), (d as u32 + 1, k + 1), "{fen}");
            }
            for w in block.windows(2) {
                assert!(
                    w[0].2 >= w[1].2,
                    "{fen}: depth {} not ranked: {block:?}",
                    d + 1
                );
            }
        }
        let last = &reports[reports.len() - 3..];
        for (line, report) in r.lines.iter().zip(last) {
            assert_eq!(
                (line.score, format!("{:?}", line.pv)),
                (report.2, report.3.clone())
            );
        }
    }
}

#[test]
fn a_position_without_moves_gives_its_ending() {
    // Stalemate: no move, a draw.
    let p = Chess::from_fen("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1").unwrap();
    let r = search(&p, Limits::depth(3), 1);
    assert_eq!((r.best, r.score), (None, 0));
}

#[test]
fn a_stopped_iteration_marks_its_bounds() {
    use arbiter_engine::Bound;
    let kiwipete =
        Chess::from_fen("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1")
            .unwrap();
    // A finished iteration proves exact scores for every line.
    for depth in 1..=6 {
        let r = search(&kiwipete, Limits::depth(depth), 3);
        assert!(
            r.lines.iter().all(|l| l.bound == Bound::Exact),
            "depth {depth}"
        );
    }
    // Node limits stop iterations midway: some stop after a move failed high or low there,
    // and then say so; a stop before any such result keeps the last finished iteration's exact
    // score.
    let mut seen = [0usize; 3];
    for nodes in (2_000..80_000).step_by(1_531) {
        let r = search(&kiwipete, Limits::nodes(nodes), 1);
        let line = &r.lines[0];
        assert_eq!(r.score, line.score);
        seen[match line.bound {
            Bound::Exact => 0,
            Bound::Lower => 1,
            Bound::Upper => 2,
        }] += 1;
    }
    assert!(seen[0] > 0 && seen[1] + seen[2] > 0, "{seen:?}");
}
