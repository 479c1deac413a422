//! `arbiter analyze-pgn`: analyses every position of the main line of each game in a PGN file,
//! locally (no server), on a pool of worker threads, and writes the games back annotated: each
//! move gets its evaluation (`[%eval …]`) and, when it gave away winning chances, a NAG and a
//! comment naming the engine's move (the classification of [`arbiter_engine::review`]).

use crate::CliError;
use arbiter_core::pgn::{PgnGame, PgnLimits, read_games_with};
use arbiter_core::{Locale, Notation, Position, Variant};
use arbiter_engine::analyze::AnalysisSettings;
use arbiter_engine::review::{
    GameAccuracy, GameLine, PositionEval, evaluate_position, review_game,
};
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

/// Reads the games, analyses every main-line position on `cfg.workers` threads, and returns the
/// annotated PGN and a summary per game; `progress` is called after each position.
pub fn review(
    text: &str,
    cfg: &ReviewConfig,
    progress: &mut dyn FnMut(&ReviewProgress),
) -> Result<(String, Vec<GameSummary>), CliError> {
    let mut games =
        read_games_with(text, &PgnLimits::default()).map_err(|e| CliError::input("FILE", e))?;
    if games.is_empty() {
        return Err(CliError::input("FILE", "no game in it"));
    }
    let mut tasks = Vec::with_capacity(games.len());
    for (g, game) in games.iter_mut().enumerate() {
        let fail = |e: &dyn std::fmt::Display| CliError::input(format!("FILE: game {}", g + 1), e);
        if game.variant().map_err(|e| fail(&e))? == Variant::Bughouse {
            return Err(fail(
                &"bughouse is not reviewed: a board's evaluation ignores the partner's game",
            ));
        }
        let replayed = game
            .validate(Locale::English, Locale::English)
            .map_err(|e| fail(&e))?;
        tasks.push(GameLine::replay(replayed.start(), replayed.moves()));
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
    let summaries = games
        .iter_mut()
        .zip(tasks.iter().zip(&found))
        .enumerate()
        .map(|(g, (game, (t, f)))| annotate(game, g, t, f))
        .collect();
    let mut out = String::new();
    for game in &games {
        out.push_str(&game.to_string());
        out.push('\n');
    }
    Ok((out, summaries))
}

/// Analyses every position of every game on `workers` threads; the results per game, in ply
/// order.
fn run_pool(
    games: &[GameLine],
    settings: &AnalysisSettings,
    workers: usize,
    progress: &mut dyn FnMut(&ReviewProgress),
) -> Vec<Vec<PositionEval>> {
    // Positions are handed out in order through one counter over (game, ply) pairs.
    let order: Vec<(usize, usize)> = games
        .iter()
        .enumerate()
        .flat_map(|(g, t)| (0..t.positions.len()).map(move |p| (g, p)))
        .collect();
    let next = AtomicUsize::new(0);
    let start = std::time::Instant::now();
    let (tx, rx) = std::sync::mpsc::channel::<(usize, usize, PositionEval)>();
    let mut found: Vec<Vec<Option<PositionEval>>> = games
        .iter()
        .map(|t| vec![None; t.positions.len()])
        .collect();
    std::thread::scope(|scope| {
        for _ in 0..workers.clamp(1, 64) {
            let (tx, next, order) = (tx.clone(), &next, &order);
            scope.spawn(move || {
                while let Some(&(g, p)) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let t = &games[g];
                    let e = evaluate_position(
                        &t.positions[p],
                        t.history(p),
                        settings,
                        &AtomicBool::new(false),
                        &SystemTime::new(),
                    );
                    if tx.send((g, p, e)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        for (done, (g, p, f)) in rx.into_iter().enumerate() {
            found[g][p] = Some(f);
            progress(&ReviewProgress {
                done: done + 1,
                total: order.len(),
                elapsed_s: start.elapsed().as_secs_f64(),
            });
        }
    });
    found
        .into_iter()
        .map(|g| {
            g.into_iter()
                .map(|f| f.expect("every position is analysed"))
                .collect()
        })
        .collect()
}

/// Writes the evaluations, NAGs and comments onto `game`'s main line.
fn annotate(game: &mut PgnGame, g: usize, tasks: &GameLine, evals: &[PositionEval]) -> GameSummary {
    let review = review_game(evals, &tasks.played);
    for (ply, (node, verdict)) in game.moves.iter_mut().zip(&review.moves).enumerate() {
        let mut comment = String::new();
        if let Some(j) = verdict.judgement {
            node.nags.retain(|&n| !(1..=6).contains(&n));
            node.nags.push(j.nag());
            let name = j.name();
            comment = format!("{}{}.", name[..1].to_uppercase(), &name[1..]);
            let before = &tasks.positions[ply];
            if let Some(best) = verdict.better.as_deref()
                && let Ok(m) = before.parse_move(best, Notation::Uci, Locale::English)
            {
                comment.push_str(&format!(
                    " {} was best.",
                    before.move_to_san(m, Locale::English)
                ));
            }
        }
        if let Some(eval) = evals[ply + 1].pgn_eval() {
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
        accuracy: review.accuracy,
        counts: review.counts,
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
    fn a_blunder_is_marked_and_every_move_gets_its_eval() {
        // 2. g4?? allows mate in one, and black mates.
        let pgn = "[Event \"t\"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n\n\
                   [Event \"u\"]\n[Variant \"Crazyhouse\"]\n\n1. e4 d5 2. exd5 *\n";
        let mut seen = Vec::new();
        let (one, summaries) = review(pgn, &cfg(1), &mut |p| seen.push(p.done)).unwrap();
        let (two, again) = review(pgn, &cfg(2), &mut |_| {}).unwrap();
        assert_eq!(one, two, "the worker count changes nothing");
        assert_eq!(summaries, again);
        assert_eq!(seen, (1..=9).collect::<Vec<_>>());
        // Whether 1. f3 counts as an inaccuracy depends on the search at 3000 nodes; that it
        // carries an evaluation, and that 2. g4 is a blunder, do not.
        // The writer wraps lines, so compare with the whitespace collapsed.
        let flat = one.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("2. g4 $4 {[%eval #-1] Blunder."), "{one}");
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
        for game in &back {
            for node in &game.moves[..3] {
                assert!(
                    node.comments[0].starts_with("[%eval "),
                    "{}: {one}",
                    node.san
                );
            }
        }
        // No evaluation after the mate: the game is over.
        assert!(flat.contains("Qh4# 0-1"), "{one}");
        assert!(back[0].moves[3].comments.is_empty(), "{one}");
        assert!(back[0].moves[3].nags.is_empty(), "{one}");
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
            assert!(e.to_string().contains(needle), "{pgn:?}: {e}");
        }
    }
}
