//! The search over any variant, with moves in the coordinate notation that
//! [`Position::move_to_uci`] writes: what the CLI's `analyze` and the services use.

use crate::hooks::EnginePosition;
use crate::nnue::Evaluation;
use crate::score::Reported;
use crate::search::{Control, Engine, Info, SearchOptions};
use crate::time::{Limits, TimeSource};
use crate::tt::Bound;
use arbiter_core::{AnyPosition, Position};
use std::fmt;
use std::sync::atomic::AtomicBool;

/// Progress of an analysis, moves as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// The iteration's depth.
    pub depth: u32,
    /// The deepest ply reached.
    pub seldepth: u32,
    /// Which line (1 = best).
    pub multipv: usize,
    /// The line's score, from the side to move.
    pub score: Reported,
    /// Nodes so far.
    pub nodes: u64,
    /// Nodes per second so far.
    pub nps: u64,
    /// Per mille of the table used.
    pub hashfull: u32,
    /// Milliseconds so far.
    pub time_ms: u64,
    /// The line, in coordinate notation.
    pub pv: Vec<String>,
}

impl fmt::Display for Progress {
    /// A UCI `info` line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "info depth {} seldepth {} multipv {} score {} nodes {} nps {} hashfull {} time {}",
            self.depth,
            self.seldepth,
            self.multipv,
            self.score,
            self.nodes,
            self.nps,
            self.hashfull,
            self.time_ms
        )?;
        if !self.pv.is_empty() {
            write!(f, " pv {}", self.pv.join(" "))?;
        }
        Ok(())
    }
}

/// One line of the result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnalysisLine {
    /// Its score, from the side to move.
    pub score: Reported,
    /// How the score bounds the true one (see [`Line::bound`](crate::Line::bound)).
    pub bound: Bound,
    /// Its moves, in coordinate notation.
    pub pv: Vec<String>,
}

/// The result of an analysis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Analysis {
    /// The best move, in coordinate notation; `None` when there is no legal move.
    pub best: Option<String>,
    /// The expected reply.
    pub ponder: Option<String>,
    /// The lines, best first.
    pub lines: Vec<AnalysisLine>,
    /// The score of the position (the first line's, or the ending's when no move is legal).
    pub score: Reported,
    /// How `score` bounds the true one (exact unless a stopped iteration proved only a bound).
    pub bound: Bound,
    /// The deepest completed iteration.
    pub depth: u32,
    /// Nodes searched.
    pub nodes: u64,
    /// Milliseconds used.
    pub time_ms: u64,
}

/// The moves of `pv` from `pos`, in coordinate notation.
pub fn pv_text<P: Position>(pos: &P, pv: &[P::Move]) -> Vec<String> {
    let mut p = pos.clone();
    let mut out = Vec::with_capacity(pv.len());
    for &m in pv {
        out.push(p.move_to_uci(m));
        p.play_unchecked(m);
    }
    out
}

/// Settings of an analysis.
#[derive(Debug, Clone, Copy)]
pub struct AnalysisSettings {
    /// The limits.
    pub limits: Limits,
    /// MultiPV and move overhead.
    pub options: SearchOptions,
    /// The transposition table's size in MiB.
    pub hash_mib: usize,
}

fn run<P: EnginePosition>(
    pos: &P,
    history: &[u64],
    settings: &AnalysisSettings,
    stop: &AtomicBool,
    time: &dyn TimeSource,
    progress: &mut dyn FnMut(&Progress),
    settle: &mut dyn FnMut(Limits) -> Limits,
) -> Analysis {
    let mut engine = Engine::<P>::new(settings.hash_mib);
    run_on(
        &mut engine,
        pos,
        history,
        settings,
        stop,
        time,
        progress,
        settle,
    )
}

/// An engine per variant, made when first needed and then kept: a run of searches (the
/// positions of a game under review) reuses its table and histories instead of allocating and
/// clearing new ones for every position, which costs more than a shallow search itself.
#[derive(Default)]
pub struct Engines {
    hash_mib: usize,
    chess: Option<Engine<arbiter_core::Chess>>,
    crazyhouse: Option<Engine<arbiter_core::Crazyhouse>>,
    glinski: Option<Engine<arbiter_core::Glinski>>,
    byzantine: Option<Engine<arbiter_core::Byzantine>>,
    evaluation: Evaluation,
}

impl fmt::Debug for Engines {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engines")
            .field("hash_mib", &self.hash_mib)
            .field("evaluation", &self.evaluation)
            .finish_non_exhaustive()
    }
}

impl Engines {
    /// Engines whose tables are about `hash_mib` MiB each (made on first use).
    pub fn new(hash_mib: usize) -> Engines {
        Engines {
            hash_mib,
            ..Engines::default()
        }
    }

    /// Engines that evaluate as `evaluation` says (the default: each variant's built-in
    /// network where it has one).
    pub fn with_evaluation(self, evaluation: Evaluation) -> Engines {
        Engines {
            evaluation,
            chess: None,
            crazyhouse: None,
            glinski: None,
            byzantine: None,
            ..self
        }
    }

    /// The size of each engine's table, MiB.
    pub fn hash_mib(&self) -> usize {
        self.hash_mib
    }

    /// Forgets everything the engines learnt: a search after this answers as a fresh engine's
    /// would. Cheap after short searches (only the table slots they filled are emptied).
    pub fn clear(&mut self) {
        fn clear<P: EnginePosition>(engine: &mut Option<Engine<P>>) {
            if let Some(engine) = engine {
                engine.clear();
            }
        }
        clear(&mut self.chess);
        clear(&mut self.crazyhouse);
        clear(&mut self.glinski);
        clear(&mut self.byzantine);
    }

    /// [`analyze`] on the kept engine of `pos`'s variant (its table's size is this value's,
    /// not `settings.hash_mib`), learning from the searches before it since the last
    /// [`clear`](Self::clear).
    pub fn analyze(
        &mut self,
        pos: &AnyPosition,
        history: &[u64],
        settings: &AnalysisSettings,
        stop: &AtomicBool,
        time: &dyn TimeSource,
        progress: &mut dyn FnMut(&Progress),
    ) -> Analysis {
        fn on<'e, P: EnginePosition>(
            engine: &'e mut Option<Engine<P>>,
            hash_mib: usize,
            evaluation: &Evaluation,
            pos: &P,
        ) -> &'e mut Engine<P> {
            engine.get_or_insert_with(|| {
                Engine::with_network(hash_mib, evaluation.network_for::<P>(pos.variant().name()))
            })
        }
        let hash = self.hash_mib;
        let net = &self.evaluation;
        let settle = &mut |l| l;
        match pos {
            AnyPosition::Chess(p) => run_on(
                on(&mut self.chess, hash, net, p),
                p,
                history,
                settings,
                stop,
                time,
                progress,
                settle,
            ),
            AnyPosition::Crazyhouse(p) => run_on(
                on(&mut self.crazyhouse, hash, net, p),
                p,
                history,
                settings,
                stop,
                time,
                progress,
                settle,
            ),
            AnyPosition::Glinski(p) => run_on(
                on(&mut self.glinski, hash, net, p),
                p,
                history,
                settings,
                stop,
                time,
                progress,
                settle,
            ),
            AnyPosition::Byzantine(p) => run_on(
                on(&mut self.byzantine, hash, net, p),
                p,
                history,
                settings,
                stop,
                time,
                progress,
                settle,
            ),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn run_on<P: EnginePosition>(
    engine: &mut Engine<P>,
    pos: &P,
    history: &[u64],
    settings: &AnalysisSettings,
    stop: &AtomicBool,
    time: &dyn TimeSource,
    progress: &mut dyn FnMut(&Progress),
    settle: &mut dyn FnMut(Limits) -> Limits,
) -> Analysis {
    // The limits are settled only now, once the table is allocated (see `analyze_settled`).
    let limits = settle(settings.limits);
    let mut on_info = |i: &Info<'_, P::Move>| {
        progress(&Progress {
            depth: i.depth,
            seldepth: i.seldepth,
            multipv: i.multipv,
            score: i.reported(),
            nodes: i.nodes,
            nps: i.nps(),
            hashfull: i.hashfull,
            time_ms: i.time_ms,
            pv: pv_text(pos, i.pv),
        })
    };
    let r = engine.search(
        pos,
        history,
        &limits,
        &settings.options,
        Control { stop, time },
        &mut on_info,
    );
    Analysis {
        best: r.best.map(|m| pos.move_to_uci(m)),
        ponder: r.ponder.map(|m| {
            let mut p = pos.clone();
            if let Some(b) = r.best {
                p.play_unchecked(b);
            }
            p.move_to_uci(m)
        }),
        lines: r
            .lines
            .iter()
            .map(|l| AnalysisLine {
                score: Reported::of(l.score),
                bound: l.bound,
                pv: pv_text(pos, &l.pv),
            })
            .collect(),
        score: Reported::of(r.score),
        bound: r.lines.first().map_or(Bound::Exact, |l| l.bound),
        depth: r.depth,
        nodes: r.nodes,
        time_ms: r.time_ms,
    }
}

/// Analyses `pos` with a fresh engine (so a node-limited analysis is reproducible).
///
/// `history` holds the repetition keys (`Position::repetition_key`) of the positions before `pos` in its
/// game, oldest first, so that the search sees repetitions through them; empty when the game is
/// unknown.
pub fn analyze(
    pos: &AnyPosition,
    history: &[u64],
    settings: &AnalysisSettings,
    stop: &AtomicBool,
    time: &dyn TimeSource,
    progress: &mut dyn FnMut(&Progress),
) -> Analysis {
    analyze_settled(pos, history, settings, stop, time, progress, &mut |l| l)
}

/// [`analyze`], with the limits settled by `settle` (given `settings.limits`) once the engine's
/// tables are allocated and just before the search starts: a caller with a deadline works out
/// the time left then, so that the allocation (from a millisecond to tens of them on a cold
/// process or a loaded machine) counts against the deadline.
pub fn analyze_settled(
    pos: &AnyPosition,
    history: &[u64],
    settings: &AnalysisSettings,
    stop: &AtomicBool,
    time: &dyn TimeSource,
    progress: &mut dyn FnMut(&Progress),
    settle: &mut dyn FnMut(Limits) -> Limits,
) -> Analysis {
    match pos {
        AnyPosition::Chess(p) => run(p, history, settings, stop, time, progress, settle),
        AnyPosition::Crazyhouse(p) => run(p, history, settings, stop, time, progress, settle),
        AnyPosition::Glinski(p) => run(p, history, settings, stop, time, progress, settle),
        AnyPosition::Byzantine(p) => run(p, history, settings, stop, time, progress, settle),
    }
}

fn greedy_on<P: EnginePosition>(pos: &P, pick: &mut dyn FnMut(usize) -> usize) -> Option<String> {
    let us = pos.turn();
    let moves = pos.legal_moves();
    let mut best: Vec<P::Move> = Vec::new();
    let mut best_score = i32::MIN;
    for &m in moves.iter() {
        let mut child = pos.clone();
        child.play_unchecked(m);
        let score = match child.terminal() {
            Some(o) => crate::score::outcome_score(&o, us, 1),
            None => -child.evaluate(),
        };
        if score > best_score {
            best_score = score;
            best.clear();
        }
        if score == best_score {
            best.push(m);
        }
    }
    if best.is_empty() {
        return None;
    }
    Some(pos.move_to_uci(best[pick(best.len())]))
}

/// The one-ply greedy player, the reference opponent for variants no outside engine plays: it
/// takes a win on the spot, else the move after which the static evaluation is best for it
/// (no search), breaking ties with `pick(n)` (an index below `n`). `None` without a legal move.
pub fn greedy(pos: &AnyPosition, pick: &mut dyn FnMut(usize) -> usize) -> Option<String> {
    match pos {
        AnyPosition::Chess(p) => greedy_on(p, pick),
        AnyPosition::Crazyhouse(p) => greedy_on(p, pick),
        AnyPosition::Glinski(p) => greedy_on(p, pick),
        AnyPosition::Byzantine(p) => greedy_on(p, pick),
    }
}
