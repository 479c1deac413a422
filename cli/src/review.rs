//! `arbiter analyze-pgn`: analyses every position of the main line of each game in a PGN file,
//! locally (no server), on a pool of worker threads, and writes the games back annotated: each
//! move gets its evaluation (`[%eval …]`) and, when it gave away winning chances, a NAG and a
//! comment naming the engine's move (the classification of [`arbiter_engine::review`]).

use crate::CliError;
use arbiter_core::pgn::{PgnGame, PgnLimits, read_games_with};
use arbiter_core::{AnyPosition, Color, Locale, Notation, Position, Variant};
use arbiter_engine::analyze::{AnalysisSettings, analyze};
use arbiter_engine::review::{GameAccuracy, Judgement, game_accuracy, judge};
use arbiter_engine::score::{MATE, Reported, outcome_score};
use arbiter_engine::{Limits, SearchOptions, SystemTime};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The largest PGN file read, in bytes.
pub const MAX_INPUT: usize = 64 << 20;

/// How to analyse.
#[derive(Clone, Copy, Debug)]
pub struct ReviewConfig {
    /// Depth per position (`None`: the node limit).
    pub depth: Option<u32>,
    /// Nodes per position (`None`: the depth limit).
    pub nodes: Option<u64>,
    /// Positions analysed at once, one thread each.
    pub workers: usize,
    /// Transposition table of each search, MiB.
    pub hash_mib: usize,
}

/// Where a run stands, for the progress display.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReviewProgress {
    /// Positions analysed.
    pub done: usize,
    /// Positions to analyse.
    pub total: usize,
    /// Seconds since the start.
    pub elapsed_s: f64,
}

impl ReviewProgress {
    /// Positions per second so far.
    pub fn rate(&self) -> f64 {
        self.done as f64 / self.elapsed_s.max(1e-3)
    }

    /// Seconds left at the rate so far (`None` before the first position).
    pub fn eta_s(&self) -> Option<f64> {
        (self.done > 0).then(|| (self.total - self.done) as f64 / self.rate())
    }
}

/// What a game's review found.
#[derive(Clone, Debug, PartialEq)]
pub struct GameSummary {
    /// The game's number in the file, from 1.
    pub number: usize,
    /// Each player's accuracy.
    pub accuracy: GameAccuracy,
    /// Inaccuracies, mistakes and blunders of white, then of black.
    pub counts: [[usize; 3]; 2],
}

impl std::fmt::Display for GameSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pct = |a: Option<f64>| a.map_or("-".to_owned(), |a| format!("{a:.1}"));
        let [w, b] = self.counts;
        write!(
            f,
            "game {}: accuracy white {} black {}; white {}/{}/{}, black {}/{}/{} \
             (inaccuracies/mistakes/blunders)",
            self.number,
            pct(self.accuracy.white),
            pct(self.accuracy.black),
            w[0],
            w[1],
            w[2],
            b[0],
            b[1],
            b[2]
        )
    }
}

/// A position to analyse, with the repetition keys of the game's positions before it and the
/// move played from it (UCI; none after the last move).
struct Task {
    position: AnyPosition,
    played: Option<String>,
    history: Vec<u64>,
}

/// The analysis of one position: white's score (engine units), the `[%eval]` text (none for
/// a finished game) and the engine's move (UCI).
#[derive(Clone, Debug)]
struct Found {
    white: i32,
    eval: Option<String>,
    best: Option<String>,
}

/// An engine score from a reported one (mate distances kept; "mated now" as mated).
fn score_of(r: Reported) -> i32 {
    match r {
        Reported::Cp(cp) => cp,
        Reported::Mate(n) if n > 0 => MATE - (2 * n - 1),
        Reported::Mate(n) => -(MATE - 2 * n.abs()),
    }
}

fn analyse(task: &Task, settings: &AnalysisSettings) -> Found {
    let pos = &task.position;
    let us = pos.turn();
    let to_white = |s: i32| if us == Color::White { s } else { -s };
    // A finished game is scored by its result, not searched.
    if let Some(outcome) = pos.terminal() {
        return Found {
            white: outcome_score(&outcome, Color::White, 0),
            eval: None,
            best: None,
        };
    }
    let stop = AtomicBool::new(false);
    let a = analyze(
        pos,
        &task.history,
        settings,
        &stop,
        &SystemTime::new(),
        &mut |_| {},
    );
    Found {
        white: to_white(score_of(a.score)),
        eval: Some(eval_text(a.score, us)),
        best: a.best,
    }
}

/// An evaluation reported from `turn`'s side as PGN's `[%eval …]` writes it: pawns from white's
/// side, or `#N` (white mates in N) / `#-N` (black does).
fn eval_text(score: Reported, turn: Color) -> String {
    let sign = if turn == Color::White { 1 } else { -1 };
    match score {
        Reported::Cp(cp) => format!("{:.2}", f64::from(sign * cp) / 100.0),
        Reported::Mate(n) => format!("#{}", sign * n),
    }
}

/// Reads the games, analyses every main-line position on `cfg.workers` threads, and returns the
/// annotated PGN and a summary per game; `progress` is called after each position.
pub fn review(
    text: &str,
    cfg: &ReviewConfig,
    progress: &mut dyn FnMut(&ReviewProgress),
) -> Result<(String, Vec<GameSummary>), CliError> {
    let mut games =
        read_games_with(text, &PgnLimits::default()).map_err(|e| CliError(format!("FILE: {e}")))?;
    if games.is_empty() {
        return Err(CliError("FILE: no game in it".into()));
    }
    let mut tasks = Vec::new();
    let mut starts = Vec::new();
    for (g, game) in games.iter_mut().enumerate() {
        let fail = |e: &dyn std::fmt::Display| CliError(format!("FILE: game {}: {e}", g + 1));
        if game.variant().map_err(|e| fail(&e))? == Variant::Bughouse {
            return Err(fail(
                &"bughouse is not reviewed: a board's evaluation ignores the partner's game",
            ));
        }
        let played = game
            .validate(Locale::English, Locale::English)
            .map_err(|e| fail(&e))?;
        let mut pos = played.start().clone();
        starts.push((tasks.len(), pos.turn()));
        let mut history = Vec::new();
        for &m in played.moves() {
            tasks.push(Task {
                played: Some(pos.move_to_uci(m)),
                position: pos.clone(),
                history: history.clone(),
            });
            history.push(pos.repetition_key());
            pos.play_unchecked(m);
        }
        tasks.push(Task {
            played: None,
            position: pos,
            history,
        });
    }
    let settings = AnalysisSettings {
        limits: Limits {
            depth: cfg.depth,
            nodes: cfg.nodes,
            ..Limits::default()
        },
        options: SearchOptions {
            multipv: 1,
            move_overhead_ms: 0,
        },
        hash_mib: cfg.hash_mib,
    };
    let found = run_pool(&tasks, &settings, cfg.workers, progress);
    let mut summaries = Vec::new();
    for (g, game) in games.iter_mut().enumerate() {
        let first = starts[g].0;
        let count = game.moves.len() + 1;
        let scores: Vec<i32> = found[first..first + count]
            .iter()
            .map(|f| f.white)
            .collect();
        summaries.push(annotate(
            game,
            g,
            &tasks[first..first + count],
            &found[first..first + count],
            &scores,
            starts[g].1,
        ));
    }
    let mut out = String::new();
    for game in &games {
        out.push_str(&game.to_string());
        out.push('\n');
    }
    Ok((out, summaries))
}

/// Analyses every task on `workers` threads; the results in task order.
fn run_pool(
    tasks: &[Task],
    settings: &AnalysisSettings,
    workers: usize,
    progress: &mut dyn FnMut(&ReviewProgress),
) -> Vec<Found> {
    let next = AtomicUsize::new(0);
    let start = std::time::Instant::now();
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Found)>();
    let mut found: Vec<Option<Found>> = vec![None; tasks.len()];
    std::thread::scope(|scope| {
        for _ in 0..workers.clamp(1, 64) {
            let (tx, next) = (tx.clone(), &next);
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= tasks.len() || tx.send((i, analyse(&tasks[i], settings))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        for (done, (i, f)) in rx.into_iter().enumerate() {
            found[i] = Some(f);
            progress(&ReviewProgress {
                done: done + 1,
                total: tasks.len(),
                elapsed_s: start.elapsed().as_secs_f64(),
            });
        }
    });
    found
        .into_iter()
        .map(|f| f.expect("every task is analysed"))
        .collect()
}

/// Writes the evaluations, NAGs and comments onto `game`'s main line.
fn annotate(
    game: &mut PgnGame,
    g: usize,
    tasks: &[Task],
    found: &[Found],
    scores: &[i32],
    first: Color,
) -> GameSummary {
    let mut counts = [[0usize; 3]; 2];
    for (ply, node) in game.moves.iter_mut().enumerate() {
        let mover = tasks[ply].position.turn();
        let mut comment = String::new();
        // The engine's own choice is never a mistake, whatever the next search says of it.
        let engine_choice = found[ply].best.is_some() && found[ply].best == tasks[ply].played;
        if let Some(j) = judge(scores[ply], scores[ply + 1], mover).filter(|_| !engine_choice) {
            counts[usize::from(mover == Color::Black)][match j {
                Judgement::Inaccuracy => 0,
                Judgement::Mistake => 1,
                Judgement::Blunder => 2,
            }] += 1;
            node.nags.retain(|&n| !(1..=6).contains(&n));
            node.nags.push(j.nag());
            let name = j.name();
            comment = format!("{}{}.", name[..1].to_uppercase(), &name[1..]);
            let before = &tasks[ply].position;
            if let Some(best) = found[ply].best.as_deref()
                && let Ok(m) = before.parse_move(best, Notation::Uci, Locale::English)
            {
                comment.push_str(&format!(
                    " {} was best.",
                    before.move_to_san(m, Locale::English)
                ));
            }
        }
        if let Some(eval) = &found[ply + 1].eval {
            let eval = format!("[%eval {eval}]");
            comment = if comment.is_empty() {
                eval
            } else {
                format!("{eval} {comment}")
            };
        }
        if !comment.is_empty() {
            node.comments.insert(0, comment);
        }
    }
    if !game.moves.is_empty() {
        game.set_tag("Annotator", "Arbiter");
    }
    GameSummary {
        number: g + 1,
        accuracy: game_accuracy(first, scores[0], &scores[1..]),
        counts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(workers: usize) -> ReviewConfig {
        ReviewConfig {
            depth: None,
            nodes: Some(3000),
            workers,
            hash_mib: 1,
        }
    }

    #[test]
    fn scores_round_trip_through_reports() {
        // The side to move mates on odd plies and is mated on even ones.
        for s in [
            0,
            35,
            -270,
            MATE - 1,
            MATE - 7,
            -(MATE - 2),
            -(MATE - 8),
            -MATE,
        ] {
            assert_eq!(score_of(Reported::of(s)), s, "{s}");
        }
        assert_eq!(eval_text(Reported::Cp(35), Color::White), "0.35");
        assert_eq!(eval_text(Reported::Cp(120), Color::Black), "-1.20");
        assert_eq!(eval_text(Reported::Mate(3), Color::White), "#3");
        assert_eq!(eval_text(Reported::Mate(1), Color::Black), "#-1");
        assert_eq!(eval_text(Reported::Mate(-2), Color::Black), "#2");
    }

    #[test]
    fn a_blunder_is_marked_and_every_move_gets_its_eval() {
        // 2...Qh4 hangs nothing, but 3.g4?? allows mate in one; black mates.
        let pgn = "[Event \"t\"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n\n\
                   [Event \"u\"]\n[Variant \"Crazyhouse\"]\n\n1. e4 d5 2. exd5 *\n";
        let mut seen = Vec::new();
        let (one, summaries) = review(pgn, &cfg(1), &mut |p| seen.push(p.done)).unwrap();
        let (two, again) = review(pgn, &cfg(2), &mut |_| {}).unwrap();
        assert_eq!(one, two, "the worker count changes nothing");
        assert_eq!(summaries, again);
        assert_eq!(seen, (1..=9).collect::<Vec<_>>());
        assert!(one.contains("1. f3 {[%eval "), "{one}");
        assert!(one.contains("2. g4 $4 {[%eval #-1] Blunder."), "{one}");
        // No evaluation after the mate: the game is over.
        assert!(one.contains("Qh4# 0-1"), "{one}");
        assert!(one.contains("[Annotator \"Arbiter\"]"));
        assert_eq!(summaries.len(), 2);
        assert_eq!(summaries[0].counts[0][2], 1, "{}", summaries[0]);
        assert!(summaries[0].accuracy.white.unwrap() < summaries[0].accuracy.black.unwrap());
        assert!(
            summaries[1]
                .to_string()
                .starts_with("game 2: accuracy white ")
        );
        // The output reads back as the same games.
        let back = read_games_with(&one, &PgnLimits::default()).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].moves.len(), 4);
    }

    #[test]
    fn bad_files_are_refused_with_the_game_named() {
        for (pgn, needle) in [
            ("", "no game"),
            ("1. e4 e5 2. Ke3 *\n", "game 1:"),
            (
                "[Variant \"Bughouse\"]\n\n1. e4 *\n",
                "bughouse is not reviewed",
            ),
            ("[Variant \"Nonsense\"]\n\n1. e4 *\n", "game 1:"),
        ] {
            let e = review(pgn, &cfg(1), &mut |_| {}).unwrap_err();
            assert!(e.0.contains(needle), "{pgn:?}: {}", e.0);
        }
    }
}
