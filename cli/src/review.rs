//! `arbiter analyze-pgn`: analyses every position of the main line of each game in a PGN file,
//! locally (no server), on a pool of worker threads, and writes the games back annotated: each
//! move gets its evaluation (`[%eval …]`) and, when it gave away winning chances, a NAG and a
//! comment naming the engine's move (the classification of [`arbiter_engine::review`]).

use crate::CliError;
use arbiter_core::pgn::{PgnGame, PgnLimits, read_games_each};
use arbiter_core::{Locale, Notation, Position, Variant};
use arbiter_engine::analyze::{AnalysisSettings, Engines};
use arbiter_engine::review::{
    GameAccuracy, GameLine, PositionEval, evaluate_position_with, review_game,
};
use arbiter_engine::{Limits, SearchOptions, SystemTime};
use std::collections::BTreeMap;
use std::io::Write;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, mpsc};

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

/// Reads the games, analyses every main-line position on `cfg.workers` threads, and writes the
/// annotated games to `out` in their order as they are finished; `on_game` gets each game's
/// summary as it is written, `progress` is called after each position.
///
/// The games stream: a first pass reads and checks every game without keeping it (so a bad file
/// is refused before anything is written, and the positions are counted for the progress); the
/// second hands each game to one worker, which replays it, evaluates its positions in order on
/// engines it keeps (cleared for each game, so the result depends on the game alone, not on the
/// worker count), and annotates it. At most [`IN_FLIGHT_PER_WORKER`] games per worker are read,
/// analysed or waiting for an earlier one to be written at any time: memory does not grow with
/// the file.
pub fn review(
    text: &str,
    cfg: &ReviewConfig,
    out: &mut dyn Write,
    on_game: &mut dyn FnMut(&GameSummary),
    progress: &mut dyn FnMut(&ReviewProgress),
) -> Result<(), CliError> {
    let total = check_games(text)?;
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
    let workers = cfg.workers.clamp(1, 64);
    let in_flight = workers * IN_FLIGHT_PER_WORKER;
    let start = std::time::Instant::now();
    // A game may be read only with a ticket; a ticket comes back when its game is written.
    let (ticket_back, tickets) = mpsc::sync_channel::<()>(in_flight);
    for _ in 0..in_flight {
        ticket_back.send(()).expect("room for every ticket");
    }
    let (work_tx, work_rx) = mpsc::sync_channel::<(usize, PgnGame)>(in_flight);
    let work_rx = Mutex::new(work_rx);
    let (done_tx, done_rx) = mpsc::channel::<Done>();
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            // Checked already: reading again cannot fail.
            let mut number = 0;
            let _ = read_games_each(text, &LIMITS, &mut |game, _| {
                // No ticket: the writer stopped; a closed queue: every worker stopped.
                let sent = tickets.recv().is_ok() && work_tx.send((number, game)).is_ok();
                number += 1;
                if sent {
                    ControlFlow::Continue(())
                } else {
                    ControlFlow::Break(())
                }
            });
        });
        for _ in 0..workers {
            let (work_rx, done_tx, settings, stop) = (&work_rx, done_tx.clone(), &settings, &stop);
            scope.spawn(move || {
                let mut engines = Engines::new(settings.hash_mib);
                // Until the reader is done: after a failure the games still coming are
                // dropped unread, so that the reader never waits on a full queue.
                loop {
                    let job = work_rx.lock().map(|rx| rx.recv());
                    let Ok(Ok((g, game))) = job else { return };
                    if stop.load(Ordering::Relaxed) {
                        continue;
                    }
                    let done = review_one(g, game, &mut engines, settings, &done_tx);
                    if done_tx.send(done).is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                }
            });
        }
        drop(done_tx);
        // The writer owns the ticket returns: when it stops, the reader's next wait for a
        // ticket ends too.
        write_in_order(
            done_rx,
            total,
            start,
            ticket_back,
            out,
            on_game,
            progress,
            &stop,
        )
    })
}

/// What a reviewed file may hold: games and variations without a count (a game at a time is
/// held, and [`MAX_INPUT`] bounds the text), each game within the usual plies and nesting.
const LIMITS: PgnLimits = PgnLimits {
    max_games: usize::MAX,
    max_plies_per_game: 2048,
    max_variations: usize::MAX,
    max_depth: 64,
};

/// Games handed out per worker at most (being analysed, queued, or finished and waiting for an
/// earlier game to be written).
pub const IN_FLIGHT_PER_WORKER: usize = 4;

/// What a worker reports.
enum Done {
    /// One more position analysed.
    Position,
    /// A game reviewed: its number in the file (from 0), its annotated text and its summary.
    Game(usize, String, GameSummary),
    /// A game that could not be reviewed (its number, the error).
    Failed(CliError),
}

/// Reviews game number `g` (from 0) on `engines`, cleared first; a [`Done::Position`] is sent
/// after each position.
fn review_one(
    g: usize,
    mut game: PgnGame,
    engines: &mut Engines,
    settings: &AnalysisSettings,
    done: &mpsc::Sender<Done>,
) -> Done {
    let line = match replay(&mut game, g) {
        Ok(line) => line,
        Err(e) => return Done::Failed(e),
    };
    engines.clear();
    let (never, time) = (AtomicBool::new(false), SystemTime::new());
    let mut evals = Vec::with_capacity(line.positions.len());
    for (p, pos) in line.positions.iter().enumerate() {
        evals.push(evaluate_position_with(
            engines,
            pos,
            line.history(p),
            settings,
            &never,
            &time,
        ));
        if done.send(Done::Position).is_err() {
            break;
        }
    }
    if evals.len() < line.positions.len() {
        return Done::Failed(CliError::input("FILE", "stopped"));
    }
    let summary = annotate(&mut game, g, &line, &evals);
    let mut text = game.to_string();
    text.push('\n');
    Done::Game(g, text, summary)
}

/// Writes the reviewed games in their order as they arrive, and reports progress; gives a
/// ticket back for each game written. On a failure, raises `stop` and returns the error.
#[allow(clippy::too_many_arguments)]
fn write_in_order(
    done: mpsc::Receiver<Done>,
    total: usize,
    start: std::time::Instant,
    ticket_back: mpsc::SyncSender<()>,
    out: &mut dyn Write,
    on_game: &mut dyn FnMut(&GameSummary),
    progress: &mut dyn FnMut(&ReviewProgress),
    stop: &AtomicBool,
) -> Result<(), CliError> {
    let mut waiting: BTreeMap<usize, (String, GameSummary)> = BTreeMap::new();
    let (mut next, mut positions) = (0usize, 0usize);
    let fail = |e: CliError| {
        stop.store(true, Ordering::Relaxed);
        Err(e)
    };
    for message in done {
        match message {
            Done::Position => {
                positions += 1;
                progress(&ReviewProgress {
                    done: positions,
                    total,
                    elapsed_s: start.elapsed().as_secs_f64(),
                });
            }
            Done::Failed(e) => return fail(e),
            Done::Game(g, text, summary) => {
                waiting.insert(g, (text, summary));
                while let Some((text, summary)) = waiting.remove(&next) {
                    match out.write_all(text.as_bytes()) {
                        Ok(()) => {}
                        // A reader that has seen enough (`| head`): stop, not an error.
                        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                            stop.store(true, Ordering::Relaxed);
                            return Ok(());
                        }
                        Err(e) => return fail(CliError::io("the output", e)),
                    }
                    on_game(&summary);
                    next += 1;
                    // The reader may be done (no one takes the ticket): that is fine.
                    let _ = ticket_back.try_send(());
                }
            }
        }
    }
    out.flush().or_else(|e| fail(CliError::io("the output", e)))
}

/// Reads and checks every game (readable, legal, not bughouse) without keeping any; the number
/// of positions to analyse.
fn check_games(text: &str) -> Result<usize, CliError> {
    let mut positions = 0usize;
    let mut games = 0usize;
    let mut failed = None;
    read_games_each(text, &LIMITS, &mut |mut game, _| {
        games += 1;
        match replay(&mut game, games - 1) {
            Ok(line) => {
                positions += line.positions.len();
                ControlFlow::Continue(())
            }
            Err(e) => {
                failed = Some(e);
                ControlFlow::Break(())
            }
        }
    })
    .map_err(|e| CliError::input("FILE", e))?;
    if let Some(e) = failed {
        return Err(e);
    }
    if games == 0 {
        return Err(CliError::input("FILE", "no game in it"));
    }
    Ok(positions)
}

/// The main line of game number `g` (from 0), checked.
fn replay(game: &mut PgnGame, g: usize) -> Result<GameLine, CliError> {
    let fail = |e: &dyn std::fmt::Display| CliError::input(format!("FILE: game {}", g + 1), e);
    if game.variant().map_err(|e| fail(&e))? == Variant::Bughouse {
        return Err(fail(
            &"bughouse is not reviewed: a board's evaluation ignores the partner's game",
        ));
    }
    let replayed = game
        .validate(Locale::English, Locale::English)
        .map_err(|e| fail(&e))?;
    Ok(GameLine::replay(replayed.start(), replayed.moves()))
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

    /// The review's output and summaries, collected.
    fn review(
        pgn: &str,
        cfg: &ReviewConfig,
        progress: &mut dyn FnMut(&ReviewProgress),
    ) -> Result<(String, Vec<GameSummary>), CliError> {
        let (mut out, mut summaries) = (Vec::new(), Vec::new());
        super::review(
            pgn,
            cfg,
            &mut out,
            &mut |s| summaries.push(s.clone()),
            progress,
        )?;
        Ok((String::from_utf8(out).unwrap(), summaries))
    }

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
        let back = read_games_each_collect(&one);
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
    fn many_games_come_out_in_their_order_whatever_the_workers() {
        // Games of different lengths, so that workers finish them out of order.
        let mut pgn = String::new();
        let lines = [
            "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 *",
            "1. d4 *",
            "1. c4 e5 2. g3 *",
            "*",
        ];
        for i in 0..23 {
            pgn.push_str(&format!(
                "[Event \"{i}\"]\n\n{}\n\n",
                lines[i % lines.len()]
            ));
        }
        let quick = ReviewConfig {
            depth: Some(2),
            nodes: None,
            workers: 1,
            hash_mib: 1,
        };
        let (one, first) = review(&pgn, &quick, &mut |_| {}).unwrap();
        for workers in [2, 3, 8] {
            let mut last = 0;
            let (many, again) = review(&pgn, &ReviewConfig { workers, ..quick }, &mut |p| {
                assert_eq!(p.done, last + 1);
                assert_eq!(p.total, 6 * 7 + 6 * 2 + 6 * 4 + 5);
                last = p.done;
            })
            .unwrap();
            assert_eq!(one, many, "{workers} workers");
            assert_eq!(first, again);
        }
        let numbers: Vec<usize> = first.iter().map(|s| s.number).collect();
        assert_eq!(numbers, (1..=23).collect::<Vec<_>>());
        let events: Vec<String> = read_games_each_collect(&one)
            .iter()
            .map(|g| g.tag("Event").unwrap().to_owned())
            .collect();
        assert_eq!(events, (0..23).map(|i| i.to_string()).collect::<Vec<_>>());
    }

    fn read_games_each_collect(text: &str) -> Vec<PgnGame> {
        let mut games = Vec::new();
        read_games_each(text, &LIMITS, &mut |g, _| {
            games.push(g);
            ControlFlow::Continue(())
        })
        .unwrap();
        games
    }

    #[test]
    fn a_file_may_hold_more_games_than_the_readers_default_limit() {
        let many = PgnLimits::default().max_games + 1;
        let text = "[Event \"e\"]\n\n*\n\n".repeat(many);
        assert_eq!(check_games(&text).unwrap(), many);
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
            // Refused before anything is written, even after a good game.
            if !pgn.is_empty() {
                let text = format!("1. e4 e5 *\n\n{pgn}");
                let mut out = Vec::new();
                let e =
                    super::review(&text, &cfg(2), &mut out, &mut |_| {}, &mut |_| {}).unwrap_err();
                let later = needle.replace("game 1:", "game 2:");
                assert!(e.to_string().contains(&later), "{pgn:?}: {e}");
                assert!(out.is_empty());
            }
            let e = review(pgn, &cfg(1), &mut |_| {}).unwrap_err();
            assert!(e.to_string().contains(needle), "{pgn:?}: {e}");
        }
    }
}
