//! The search, written once for every variant: iterative deepening, principal variation search
//! with aspiration windows, a transposition table (read by quiescence too), quiescence search,
//! check extensions, null-move pruning, late-move reductions, futility pruning, razoring and
//! static-exchange pruning (tighter when the position is not improving), killer, counter-move,
//! history and continuation-history ordering, mate-distance scoring and MultiPV.
//!
//! It is single-threaded and deterministic: with a node limit and a fresh (or cleared) table, the
//! same position gives the same result. It reads the stop flag, the node count and the time
//! every [`CHECK_EVERY`] nodes, and the node limit at every node.

use crate::hooks::EnginePosition;
use crate::nnue::{Accumulator, Network};
use crate::ordering::{
    HISTORY_MAX, Histories, Orderer, REFUTATION, TT_MOVE, order_quiescence, pick_next,
};
use crate::score::{
    INFINITE, MATE, MATE_BOUND, MAX_PLY, Reported, from_tt, is_mate, outcome_score, to_tt,
};
use crate::time::{Budget, Limits, TimeSource, budget};
use crate::tt::{Bound, Table};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The stop flag and the clock are read once every this many nodes (and between iterations), so
/// a raised flag or an expired deadline stops the search within that many nodes.
pub const CHECK_EVERY: u64 = 1024;

/// Settings of one search besides its limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchOptions {
    /// Principal variations to report (1 to 64; more than the legal moves gives them all).
    pub multipv: usize,
    /// Time kept back per move for communication, in ms.
    pub move_overhead_ms: u64,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            multipv: 1,
            move_overhead_ms: 30,
        }
    }
}

/// How a search is stopped from outside, and the clock it reads.
#[derive(Clone, Copy)]
pub struct Control<'a> {
    /// Raised (from any thread) to stop the search.
    pub stop: &'a AtomicBool,
    /// The time source for time limits.
    pub time: &'a dyn TimeSource,
}

impl std::fmt::Debug for Control<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control")
            .field("stop", &self.stop.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Progress reported while searching: one per finished line of each iteration.
#[derive(Debug, Clone, Copy)]
pub struct Info<'a, M> {
    /// The iteration's depth.
    pub depth: u32,
    /// The deepest ply reached in it.
    pub seldepth: u32,
    /// Which line (1 = best).
    pub multipv: usize,
    /// The line's score, centipawns from the side to move (see [`crate::score`]).
    pub score: i32,
    /// Nodes searched so far.
    pub nodes: u64,
    /// Milliseconds since the search started.
    pub time_ms: u64,
    /// Per mille of the table used by this search.
    pub hashfull: u32,
    /// The line's moves.
    pub pv: &'a [M],
}

impl<M> Info<'_, M> {
    /// Nodes per second so far.
    pub fn nps(&self) -> u64 {
        self.nodes * 1000 / self.time_ms.max(1)
    }

    /// The score as UCI reports it.
    pub fn reported(&self) -> Reported {
        Reported::of(self.score)
    }
}

/// One principal variation of the result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line<M> {
    /// Its score, centipawns from the side to move.
    pub score: i32,
    /// How `score` bounds the line's true score: exact, except when a stopped iteration had
    /// proved only a bound for it (the move failed high: at least this; or the best move failed
    /// low: at most this), as Stockfish marks `lowerbound`/`upperbound`.
    pub bound: Bound,
    /// Its moves, the first being the line's move at the root.
    pub pv: Vec<M>,
}

/// What a search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchResult<M> {
    /// The move to play; `None` only when the position has no legal move.
    pub best: Option<M>,
    /// The expected reply, when the principal variation has one.
    pub ponder: Option<M>,
    /// The best lines, best first (as many as asked for and legal moves allow); empty when the
    /// position has no legal move.
    pub lines: Vec<Line<M>>,
    /// The score when the position has no legal move: the ending's score, or the static
    /// evaluation for a bughouse player who waits; else the first line's.
    pub score: i32,
    /// The deepest iteration completed (0 when stopped before the first one finished).
    pub depth: u32,
    /// Nodes searched.
    pub nodes: u64,
    /// Milliseconds used.
    pub time_ms: u64,
}

#[derive(Debug, Clone)]
struct RootMove<M> {
    mv: M,
    score: i32,
    /// How `score` bounds the move's true score in this iteration.
    bound: Bound,
    previous: i32,
    pv: Vec<M>,
    /// Nodes searched under this move in the current iteration (time management).
    nodes: u64,
}

/// A search engine for positions of type `P`: the transposition table and the ordering
/// statistics it keeps between searches of one game.
#[derive(Debug)]
pub struct Engine<P: EnginePosition> {
    tt: Table<P::Move>,
    histories: Histories<P::Move>,
    /// The network that evaluates instead of [`EnginePosition::evaluate`], where the variant
    /// gives it pieces ([`EnginePosition::nnue_pieces`]).
    network: Option<Arc<Network>>,
    /// One per ply, kept between searches (each records the position it describes).
    accumulators: Vec<Accumulator>,
}

/// The hidden layers a search keeps with `network`: one per ply (none without a network).
fn accumulators(network: Option<&Network>) -> Vec<Accumulator> {
    match network {
        Some(net) => vec![Accumulator::new(net); MAX_PLY + 2],
        None => Vec::new(),
    }
}

impl<P: EnginePosition> Engine<P> {
    /// An engine with a transposition table of about `hash_mib` MiB, evaluating with the
    /// variant's built-in network where it has one ([`EnginePosition::built_in_network`]:
    /// standard chess), else with its hand-written evaluation; [`set_network`](Self::set_network)
    /// changes that.
    pub fn new(hash_mib: usize) -> Engine<P> {
        Engine::with_network(hash_mib, P::built_in_network())
    }

    /// An engine with a transposition table of about `hash_mib` MiB, evaluating with `network`
    /// (`None`: the variant's own evaluation), as [`set_network`](Self::set_network) on a new
    /// engine would, without first setting up the built-in one.
    pub fn with_network(hash_mib: usize, network: Option<Arc<Network>>) -> Engine<P> {
        Engine {
            tt: Table::new(hash_mib),
            histories: Histories::new(),
            accumulators: accumulators(network.as_deref()),
            network,
        }
    }

    /// Evaluates with `network` from now on (`None`: the variant's own evaluation). The caller
    /// checks that the network is for this variant ([`Network::variant`]); a position whose
    /// variant gives no pieces to a network ([`EnginePosition::nnue_pieces`]) keeps its own
    /// evaluation regardless. The table is cleared: its stored evaluations were the other's.
    pub fn set_network(&mut self, network: Option<Arc<Network>>) {
        self.accumulators = accumulators(network.as_deref());
        self.network = network;
        self.clear();
    }

    /// The network in use, if any.
    pub fn network(&self) -> Option<&Arc<Network>> {
        self.network.as_ref()
    }

    /// Forgets everything learnt (a new game, or a reproducible search).
    pub fn clear(&mut self) {
        self.tt.clear();
        self.histories.clear();
    }

    /// Replaces the table with an empty one of about `hash_mib` MiB.
    pub fn resize(&mut self, hash_mib: usize) {
        self.tt = Table::new(hash_mib);
    }

    /// Searches `root` under `limits`.
    ///
    /// `history` holds the repetition keys
    /// ([`Position::repetition_key`](arbiter_core::Position::repetition_key)) of the game's
    /// earlier positions, oldest first, for repetitions: the keys the game's own threefold rule
    /// compares, so a position after a double pawn push repeats one without it when no en
    /// passant capture is possible. `control`'s flag ends the search when raised;
    /// its clock is read for time limits; `info` receives each finished line.
    pub fn search(
        &mut self,
        root: &P,
        history: &[u64],
        limits: &Limits,
        options: &SearchOptions,
        control: Control<'_>,
        info: &mut dyn FnMut(&Info<'_, P::Move>),
    ) -> SearchResult<P::Move> {
        self.tt.new_search();
        let Control { stop, time } = control;
        let start = time.now_ms();
        let mut keys = Vec::with_capacity(history.len() + MAX_PLY + 2);
        keys.extend_from_slice(history);
        keys.push(root.repetition_key());
        let mut w = Worker {
            tt: &mut self.tt,
            network: self.network.as_deref(),
            accumulators: &mut self.accumulators,
            ordering: Orderer::new(&mut self.histories, MAX_PLY + 2),
            evals: vec![-INFINITE; MAX_PLY + 2],
            pv: (0..MAX_PLY + 2)
                .map(|_| Vec::with_capacity(MAX_PLY))
                .collect(),
            order: vec![Vec::new(); MAX_PLY + 2],
            quiets: vec![Vec::new(); MAX_PLY + 2],
            excluded: vec![None; MAX_PLY + 2],
            root_depth: 0,
            keys,
            null_floor: 0,
            nodes: 0,
            seldepth: 0,
            max_nodes: limits.nodes,
            budget: budget(limits, root.turn(), options.move_overhead_ms),
            start,
            stop,
            time,
            aborted: false,
        };
        w.iterate(root, limits, options, info)
    }
}

struct Worker<'a, P: EnginePosition> {
    tt: &'a mut Table<P::Move>,
    network: Option<&'a Network>,
    /// The network's hidden layer per ply of the current path (see [`Worker::evaluate`]).
    accumulators: &'a mut [Accumulator],
    ordering: Orderer<'a, P::Move>,
    /// The static evaluation at each ply of the current path (`-INFINITE` in check), to tell
    /// whether the side to move is improving on its position two plies earlier.
    evals: Vec<i32>,
    pv: Vec<Vec<P::Move>>,
    order: Vec<Vec<(i32, P::Move)>>,
    quiets: Vec<Vec<P::Move>>,
    /// The move a singular-extension search at each ply leaves out (see [`Worker::negamax`]).
    excluded: Vec<Option<P::Move>>,
    /// The depth of the current iteration: extensions stop at twice as many plies from the root.
    root_depth: i32,
    keys: Vec<u64>,
    /// Index in `keys` of the position after the latest null move on the path (0: none).
    null_floor: usize,
    nodes: u64,
    seldepth: usize,
    max_nodes: Option<u64>,
    budget: Option<Budget>,
    start: u64,
    stop: &'a AtomicBool,
    time: &'a dyn TimeSource,
    aborted: bool,
}

// The margins of the search, in centipawns and plies. Each rule holds up to its `*_MAX_DEPTH`
// plies left. A change to one changes the engine's play: measure it by self-play against the
// build before (docs/engine.md) before keeping it.

/// Half-width of the first aspiration window around the previous iteration's score (from depth
/// 4); doubled after each failure.
const ASPIRATION_WINDOW: i32 = 25;
/// Reverse futility: a non-PV node whose static evaluation beats beta by this much per ply left
/// (one ply less when improving) returns it.
const REVERSE_FUTILITY_MAX_DEPTH: i32 = 6;
const REVERSE_FUTILITY_MARGIN: i32 = 80;
/// Razoring: a node whose evaluation is this much per ply below alpha is tried in quiescence
/// first and returns when that fails low too.
const RAZOR_MAX_DEPTH: i32 = 2;
const RAZOR_MARGIN: i32 = 250;
/// Null-move reduction: this base, plus a ply per [`NULL_MOVE_DEPTH_DIVISOR`] plies left, plus a
/// ply per [`NULL_MOVE_EVAL_DIVISOR`] centipawns of evaluation above beta (at most
/// [`NULL_MOVE_EVAL_MAX`]).
const NULL_MOVE_BASE: i32 = 3;
const NULL_MOVE_DEPTH_DIVISOR: i32 = 6;
const NULL_MOVE_EVAL_DIVISOR: i32 = 200;
const NULL_MOVE_EVAL_MAX: i32 = 3;
/// Internal iterative reduction: a node without a table move searches a ply shallower from this
/// depth.
const IIR_MIN_DEPTH: i32 = 6;
/// A capture or check is pruned when the static exchange loses more than this per ply left.
const SEE_LOUD_MAX_DEPTH: i32 = 6;
const SEE_LOUD_MARGIN: i32 = 90;
/// Late-move pruning of quiet moves, after `2 + depth²` quiet moves (`3 + 2·depth²` when
/// improving).
const LATE_MOVE_MAX_DEPTH: i32 = 5;
/// Futility pruning of quiet moves: evaluation plus this base and this much per ply left is
/// still at most alpha.
const FUTILITY_MAX_DEPTH: i32 = 3;
const FUTILITY_BASE: i32 = 100;
const FUTILITY_PER_DEPTH: i32 = 120;
/// A quiet move is pruned when the exchange on its square loses more than this times depth².
const SEE_QUIET_MAX_DEPTH: i32 = 7;
const SEE_QUIET_MARGIN: i32 = 25;
/// Late-move reductions apply from this depth, to quiet moves after the first two (three at PV
/// nodes); a quiet move's history moves its reduction by one ply per this much.
const LMR_MIN_DEPTH: i32 = 3;
const LMR_HISTORY_DIVISOR: i32 = 16_384;
/// Delta pruning in quiescence: a capture that, won outright, still leaves the static
/// evaluation this far below alpha is not tried.
const DELTA_MARGIN: i32 = 200;
/// Singular extensions: from this depth, a table move whose stored lower or exact bound is at
/// least `depth − SINGULAR_DEPTH_MARGIN` plies deep is tested against the other moves searched
/// to half the depth, with a window `SINGULAR_MARGIN` centipawns per ply below its score.
/// Accepted on a 5+0.05 clock (docs/performance.md); at 30,000–40,000 nodes a move, where
/// searches seldom reach this depth, earlier forms from depth 6 were level or behind.
const SINGULAR_MIN_DEPTH: i32 = 8;
const SINGULAR_DEPTH_MARGIN: i32 = 3;
const SINGULAR_MARGIN: i32 = 2;

/// Late-move reduction for a move searched `index`-th at `depth`: `0.5 + ln(depth)·ln(index) /
/// 2.4` plies, before the adjustments for PV nodes, improvement and history.
fn reduction(depth: i32, index: usize) -> i32 {
    let d = f64::from(depth.max(1));
    let m = (index.max(1)) as f64;
    (0.5 + d.ln() * m.ln() / 2.4) as i32
}

impl<P: EnginePosition> Worker<'_, P> {
    /// The static evaluation of `pos`, `ply` plies from the root: the network's when there is
    /// one for it, else the variant's own. The network's hidden layer at `ply` starts from
    /// whichever is nearer to `pos`, the parent's (at `ply − 1`, usually one move away) or the
    /// one left at this ply by a sibling, and takes only the pieces that differ.
    fn evaluate(&mut self, pos: &P, ply: usize) -> i32 {
        if let Some(net) = self.network
            && let Some(pieces) = pos.nnue_pieces()
        {
            let (before, rest) = self.accumulators.split_at_mut(ply);
            let acc = &mut rest[0];
            if let Some(parent) = before.last()
                && parent.distance(&pieces) < acc.distance(&pieces)
            {
                acc.copy_from(parent);
            }
            acc.update(net, &pieces);
            return net.evaluate(acc, pos.turn().index());
        }
        pos.evaluate()
    }

    fn elapsed(&self) -> u64 {
        self.time.now_ms().saturating_sub(self.start)
    }

    /// Counts a node; true when the search must stop.
    #[inline]
    fn tick(&mut self) -> bool {
        if self.aborted {
            return true;
        }
        if self.max_nodes.is_some_and(|max| self.nodes >= max) {
            self.aborted = true;
            return true;
        }
        self.nodes += 1;
        if self.nodes.is_multiple_of(CHECK_EVERY) {
            if self.stop.load(Ordering::Relaxed) {
                self.aborted = true;
            } else if let Some(b) = self.budget
                && self.elapsed() >= b.hard_ms
            {
                self.aborted = true;
            }
        }
        self.aborted
    }

    fn iterate(
        &mut self,
        root: &P,
        limits: &Limits,
        options: &SearchOptions,
        info: &mut dyn FnMut(&Info<'_, P::Move>),
    ) -> SearchResult<P::Move> {
        let mut moves = P::MoveList::default();
        root.legal_moves_into(&mut moves);
        if moves.is_empty() {
            let score = match root.terminal() {
                Some(o) => outcome_score(&o, root.turn(), 0),
                None => self.evaluate(root, 0),
            };
            return SearchResult {
                best: None,
                ponder: None,
                lines: Vec::new(),
                score,
                depth: 0,
                nodes: 0,
                time_ms: self.elapsed(),
            };
        }
        let tt_move = self.tt.probe(root.zobrist()).and_then(|e| e.mv);
        let mut ordered: Vec<(i32, P::Move)> = moves
            .iter()
            .map(|&m| (self.ordering.score(root, m, tt_move, None, 0), m))
            .collect();
        ordered.sort_by_key(|&(s, _)| std::cmp::Reverse(s));
        let mut root_moves: Vec<RootMove<P::Move>> = ordered
            .into_iter()
            .map(|(_, mv)| {
                // Until a search scores it, a move is worth its static estimate: a search
                // stopped early still reports a sensible score for every line.
                let mut child = root.clone();
                child.play_unchecked(mv);
                let estimate = match child.terminal() {
                    Some(o) => -outcome_score(&o, child.turn(), 1),
                    None => -self.evaluate(&child, 1),
                };
                RootMove {
                    mv,
                    score: -INFINITE,
                    bound: Bound::Exact,
                    previous: estimate.clamp(-MATE, MATE),
                    pv: vec![mv],
                    nodes: 0,
                }
            })
            .collect();
        let lines = options.multipv.clamp(1, 64).min(root_moves.len());
        let max_depth = limits
            .depth
            .unwrap_or(MAX_PLY as u32 - 8)
            .clamp(1, MAX_PLY as u32 - 8);
        let mut completed = 0;
        // Time management on a clock: how long the best move has held, and its last score.
        let mut settling = crate::time::Settling::default();
        for depth in 1..=max_depth {
            for rm in root_moves.iter_mut() {
                rm.score = -INFINITE;
                rm.nodes = 0;
            }
            self.seldepth = 0;
            for line in 0..lines {
                let previous = root_moves[line].previous;
                let mut delta = ASPIRATION_WINDOW;
                let (mut alpha, mut beta) =
                    if depth >= 4 && previous > -INFINITE && !is_mate(previous) {
                        (
                            (previous - delta).max(-INFINITE),
                            (previous + delta).min(INFINITE),
                        )
                    } else {
                        (-INFINITE, INFINITE)
                    };
                loop {
                    let score = self.root(root, depth as i32, alpha, beta, line, &mut root_moves);
                    root_moves[line..].sort_by_key(|rm| std::cmp::Reverse(rm.score));
                    if self.aborted {
                        break;
                    }
                    if score <= alpha && alpha > -INFINITE {
                        beta = (alpha + beta) / 2;
                        alpha = (score - delta).max(-INFINITE);
                    } else if score >= beta && beta < INFINITE {
                        beta = (score + delta).min(INFINITE);
                    } else {
                        break;
                    }
                    delta = delta.saturating_mul(2);
                }
                // A later line can score above an earlier one (the searches differ in their
                // windows and tables): the lines found so far are kept sorted.
                root_moves[..=line].sort_by_key(|rm| std::cmp::Reverse(rm.score));
                if self.aborted {
                    break;
                }
            }
            if self.aborted {
                break;
            }
            // The iteration's lines are reported together, once all are found and sorted, so
            // that the last report under each number is the final ranking, best first (as
            // Stockfish does). A GUI keeps the last line per number.
            let seldepth = self.seldepth as u32;
            let (time_ms, hashfull) = (self.elapsed(), self.tt.hashfull());
            for (line, rm) in root_moves.iter().take(lines).enumerate() {
                info(&Info {
                    depth,
                    seldepth,
                    multipv: line + 1,
                    score: rm.score,
                    nodes: self.nodes,
                    time_ms,
                    hashfull,
                    pv: &rm.pv,
                });
            }
            completed = depth;
            for rm in root_moves.iter_mut().filter(|rm| rm.score > -INFINITE) {
                rm.previous = rm.score;
            }
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            if !limits.infinite
                && let Some(b) = self.budget
            {
                let elapsed = self.elapsed();
                // An iteration takes a few times the previous one: on a clock, a search whose
                // best move has settled starts none after part of the soft budget (more of it
                // while the best move changes, is contested or loses score), and a forced move
                // is not thought over. A fixed time is used to the end.
                let share = match limits.clock {
                    Some(_) => {
                        let best = &root_moves[0];
                        let total: u64 = root_moves.iter().map(|rm| rm.nodes).sum();
                        let fraction =
                            (depth >= 6 && total > 0).then(|| best.nodes as f64 / total as f64);
                        settling.share(best.mv, best.score, fraction)
                    }
                    None => 1.0,
                };
                if elapsed as f64 >= b.soft_ms as f64 * share
                    || (limits.clock.is_some() && root_moves.len() == 1 && depth >= 4)
                {
                    break;
                }
            }
        }
        // A line whose score of the unfinished iteration is unknown keeps the last one's.
        let lines: Vec<Line<P::Move>> = root_moves
            .iter()
            .take(lines)
            .map(|rm| {
                let (score, bound) = if rm.score > -INFINITE {
                    (rm.score, rm.bound)
                } else {
                    (rm.previous, Bound::Exact)
                };
                Line {
                    score,
                    bound,
                    pv: rm.pv.clone(),
                }
            })
            .collect();
        let best = root_moves[0].mv;
        SearchResult {
            best: Some(best),
            ponder: root_moves[0].pv.get(1).copied(),
            score: lines[0].score,
            lines,
            depth: completed,
            nodes: self.nodes,
            time_ms: self.elapsed(),
        }
    }

    /// Searches the root moves from `first` on; the others are the lines already found in this
    /// iteration (MultiPV).
    fn root(
        &mut self,
        pos: &P,
        depth: i32,
        mut alpha: i32,
        beta: i32,
        first: usize,
        root_moves: &mut [RootMove<P::Move>],
    ) -> i32 {
        let mut best = -INFINITE;
        let window_low = alpha;
        self.root_depth = depth;
        self.pv[0].clear();
        self.evals[0] = if pos.is_check() {
            -INFINITE
        } else {
            self.evaluate(pos, 0)
        };
        for (i, rm) in root_moves.iter_mut().enumerate().skip(first) {
            let m = rm.mv;
            self.ordering.made(pos, 0, Some(m));
            let mut child = pos.clone();
            child.play_unchecked(m);
            self.keys.push(child.repetition_key());
            let before = self.nodes;
            let score = if i == first {
                -self.negamax(&child, depth - 1, -beta, -alpha, 1, Some(m), true)
            } else {
                let mut s = -self.negamax(&child, depth - 1, -alpha - 1, -alpha, 1, Some(m), true);
                if s > alpha && s < beta {
                    s = -self.negamax(&child, depth - 1, -beta, -alpha, 1, Some(m), true);
                }
                s
            };
            self.keys.pop();
            rm.nodes += self.nodes - before;
            if self.aborted {
                break;
            }
            if i == first || score > alpha {
                rm.score = score;
                rm.bound = if score >= beta {
                    Bound::Lower
                } else if score <= window_low {
                    Bound::Upper
                } else {
                    Bound::Exact
                };
                rm.pv.clear();
                rm.pv.push(m);
                rm.pv.extend_from_slice(&self.pv[1]);
            } else {
                rm.score = -INFINITE;
            }
            if score > best {
                best = score;
            }
            if score > alpha {
                alpha = score;
                if score >= beta {
                    break;
                }
            }
        }
        best
    }

    /// Whether the game is drawn by repetition or the move rule at this node.
    fn is_draw(&self, pos: &P) -> bool {
        let rules = pos.draw_rules();
        let halfmoves = pos.halfmove_clock() as usize;
        // Mate on the move that reaches the move rule's count still counts as mate.
        if let Some((claim, _)) = rules.move_rule_plies
            && halfmoves >= claim as usize
            && (!pos.is_check() || !pos.legal_moves().is_empty())
        {
            return true;
        }
        if rules.repetition.is_some() {
            let n = self.keys.len();
            let key = self.keys[n - 1];
            // Never across a null move: positions before it were not reached by moves.
            let reach = (n - 1 - self.null_floor).min(halfmoves);
            let mut back = 4;
            while back <= reach {
                if self.keys[n - 1 - back] == key {
                    return true;
                }
                back += 2;
            }
        }
        false
    }

    fn set_pv(&mut self, ply: usize, m: P::Move) {
        let (head, tail) = self.pv.split_at_mut(ply + 1);
        let line = &mut head[ply];
        line.clear();
        line.push(m);
        line.extend_from_slice(&tail[0]);
    }

    #[allow(clippy::too_many_arguments)]
    fn negamax(
        &mut self,
        pos: &P,
        mut depth: i32,
        mut alpha: i32,
        mut beta: i32,
        ply: usize,
        previous: Option<P::Move>,
        null_ok: bool,
    ) -> i32 {
        let pv_node = beta - alpha > 1;
        self.pv[ply].clear();
        if self.is_draw(pos) {
            return 0;
        }
        if let Some(o) = pos.decided() {
            return outcome_score(&o, pos.turn(), ply);
        }
        alpha = alpha.max(-(MATE - ply as i32));
        beta = beta.min(MATE - ply as i32 - 1);
        if alpha >= beta {
            return alpha;
        }
        if ply >= MAX_PLY - 1 {
            return self.evaluate(pos, ply);
        }
        let in_check = pos.is_check();
        if in_check {
            depth += 1;
        }
        if depth <= 0 {
            return self.quiesce(pos, alpha, beta, ply, 0);
        }
        if self.tick() {
            return 0;
        }
        self.seldepth = self.seldepth.max(ply);
        let key = pos.zobrist();
        // A singular-extension search of this node leaves the table move out: it neither takes
        // the stored bound nor the stored move (it searches the others), and stores nothing.
        let excluded = self.excluded[ply];
        let entry = self.tt.probe(key);
        let tt_move = if excluded.is_some() {
            None
        } else {
            entry.and_then(|e| e.mv)
        };
        if let Some(e) = entry
            && excluded.is_none()
            && !pv_node
            && i32::from(e.depth) >= depth
        {
            let s = from_tt(e.score, ply);
            match e.bound {
                Bound::Exact => return s,
                Bound::Lower if s >= beta => return s,
                Bound::Upper if s <= alpha => return s,
                _ => {}
            }
        }
        // Staged generation: where one move's legality is cheap to test, a legal table move is
        // searched before the other moves are generated, and they are not generated at all
        // when it cuts off. (A legal move exists, so the position is not terminal.)
        let early = if P::CHEAP_LEGALITY {
            tt_move.filter(|&m| pos.is_legal(m))
        } else {
            None
        };
        let mut moves = P::MoveList::default();
        if early.is_none() {
            pos.legal_moves_into(&mut moves);
            if moves.is_empty() {
                return match pos.terminal() {
                    Some(o) => outcome_score(&o, pos.turn(), ply),
                    None => self.evaluate(pos, ply),
                };
            }
        }
        let eval = if in_check {
            -INFINITE
        } else {
            match entry {
                Some(e) => e.eval,
                None => self.evaluate(pos, ply),
            }
        };
        self.evals[ply] = eval;
        // Better than two plies ago (or unknown then: in check, or before the root)?
        let improving = !in_check
            && (ply < 2 || self.evals[ply - 2] == -INFINITE || eval > self.evals[ply - 2]);
        if !pv_node && !in_check {
            if depth <= REVERSE_FUTILITY_MAX_DEPTH
                && eval - REVERSE_FUTILITY_MARGIN * (depth - i32::from(improving)) >= beta
                && !is_mate(beta)
            {
                return eval;
            }
            if depth <= RAZOR_MAX_DEPTH && eval + RAZOR_MARGIN * depth <= alpha && !is_mate(alpha) {
                let q = self.quiesce(pos, alpha, alpha + 1, ply, 0);
                if q <= alpha {
                    return q;
                }
            }
            // The reduced search after a pass keeps at least one ply: in quiescence alone it
            // could not see a quiet mate the pass allows.
            let r = NULL_MOVE_BASE
                + depth / NULL_MOVE_DEPTH_DIVISOR
                + ((eval - beta) / NULL_MOVE_EVAL_DIVISOR).clamp(0, NULL_MOVE_EVAL_MAX);
            if null_ok
                && excluded.is_none()
                && depth - 1 - r >= 1
                && eval >= beta
                && !is_mate(beta)
                && pos.null_move_sound()
                && let Some(passed) = pos.null_move()
            {
                self.keys.push(passed.repetition_key());
                self.ordering.made(pos, ply, None);
                let floor = std::mem::replace(&mut self.null_floor, self.keys.len() - 1);
                let s = -self.negamax(
                    &passed,
                    depth - 1 - r,
                    -beta,
                    -beta + 1,
                    ply + 1,
                    None,
                    false,
                );
                self.null_floor = floor;
                self.keys.pop();
                if self.aborted {
                    return 0;
                }
                if s >= beta {
                    return if is_mate(s) { beta } else { s };
                }
            }
        }
        if tt_move.is_none() && excluded.is_none() && depth >= IIR_MIN_DEPTH {
            depth -= 1;
        }
        let counter = self.ordering.counter(pos, previous);
        let mut order = std::mem::take(&mut self.order[ply]);
        order.clear();
        match early {
            Some(m) => order.push((TT_MOVE, m)),
            None => self.score_moves(pos, &moves, tt_move, counter, ply, &mut order),
        }
        let mut best = -INFINITE;
        let mut best_move = None;
        let mut searched = 0usize;
        let mut quiets = std::mem::take(&mut self.quiets[ply]);
        quiets.clear();
        // Set when the node ends inside the loop (an abort, or a multi-cut): the buffers above
        // go back to their slots before the return, whichever way the loop is left.
        let mut exit = None;
        let mut i = 0;
        loop {
            if i == 1 && early.is_some() {
                // The table move did not cut off: every move is generated and ordered as a full
                // generation orders them (the table move first, moved to the front by the same
                // swap), by the histories as they stand after the table move's search.
                pos.legal_moves_into(&mut moves);
                order.clear();
                self.score_moves(pos, &moves, tt_move, counter, ply, &mut order);
                pick_next(&mut order, 0);
            }
            if i >= order.len() {
                break;
            }
            pick_next(&mut order, i);
            let (order_score, m) = order[i];
            i += 1;
            if Some(m) == excluded {
                continue;
            }
            let tactical = pos.is_tactical(m);
            // Pruning is decided before the move is made: a pruned move costs no copy. Whether a
            // non-tactical move gives check is asked only when it decides: when the quiet rules
            // would prune it, or the rule for captures and checks would.
            if !pv_node && !in_check && searched > 0 && best > -MATE_BOUND && !is_mate(alpha) {
                // A capture or check that loses more than a pawn a ply of depth left.
                let loud_prune =
                    || depth <= SEE_LOUD_MAX_DEPTH && !pos.see_ge(m, -SEE_LOUD_MARGIN * depth);
                let prune = if tactical {
                    loud_prune()
                } else {
                    // Late moves, when the position is not improving, are pruned sooner.
                    let late = if improving {
                        3 + 2 * depth * depth
                    } else {
                        2 + depth * depth
                    };
                    let quiet_prune = (depth <= LATE_MOVE_MAX_DEPTH
                        && quiets.len() >= late as usize)
                        || (depth <= FUTILITY_MAX_DEPTH
                            && eval + FUTILITY_BASE + FUTILITY_PER_DEPTH * depth <= alpha)
                        // A quiet move that loses material in the exchange on its square.
                        || (depth <= SEE_QUIET_MAX_DEPTH
                            && !pos.see_ge(m, -SEE_QUIET_MARGIN * depth * depth));
                    if quiet_prune {
                        !pos.gives_check(m) || loud_prune()
                    } else {
                        loud_prune() && pos.gives_check(m)
                    }
                };
                if prune {
                    continue;
                }
            }
            // Singular extension: when every other move falls well short of the table move's
            // stored score, searched to half the depth, the table move is searched a ply deeper;
            // when even the others beat beta, the node cuts off (several moves refute the
            // line); when the table move alone is expected to beat beta, a ply shallower.
            let mut extension = 0;
            if Some(m) == tt_move
                && depth >= SINGULAR_MIN_DEPTH
                && (ply as i32) < 2 * self.root_depth
                && let Some(e) = entry
                && e.bound != Bound::Upper
                && i32::from(e.depth) >= depth - SINGULAR_DEPTH_MARGIN
                && let tt_score = from_tt(e.score, ply)
                && !is_mate(tt_score)
            {
                let singular_beta = tt_score - SINGULAR_MARGIN * depth;
                self.excluded[ply] = Some(m);
                let s = self.negamax(
                    pos,
                    (depth - 1) / 2,
                    singular_beta - 1,
                    singular_beta,
                    ply,
                    previous,
                    false,
                );
                self.excluded[ply] = None;
                if self.aborted {
                    exit = Some(0);
                    break;
                }
                if s < singular_beta {
                    extension = 1;
                } else if singular_beta >= beta {
                    exit = Some(singular_beta);
                    break;
                } else if tt_score >= beta {
                    extension = -1;
                }
            }
            let mut child = pos.clone();
            child.play_unchecked(m);
            let gives_check = child.is_check();
            let quiet = !tactical && !gives_check;
            self.ordering.made(pos, ply, Some(m));
            self.keys.push(child.repetition_key());
            let new_depth = depth - 1 + extension;
            let score = if searched == 0 {
                -self.negamax(&child, new_depth, -beta, -alpha, ply + 1, Some(m), true)
            } else {
                let mut r = 0;
                if depth >= LMR_MIN_DEPTH
                    && searched >= 2 + usize::from(pv_node)
                    && quiet
                    && !in_check
                {
                    r = reduction(depth, searched);
                    if pv_node {
                        r -= 1;
                    }
                    if !improving {
                        r += 1;
                    }
                    if order_score >= REFUTATION {
                        // Killers and the counter-move: reduced less, by their record too.
                        r -= 1;
                        r -= self
                            .ordering
                            .quiet_history(pos, m, ply)
                            .clamp(-2 * HISTORY_MAX, 2 * HISTORY_MAX)
                            / LMR_HISTORY_DIVISOR;
                    } else {
                        r -= order_score.clamp(-2 * HISTORY_MAX, 2 * HISTORY_MAX)
                            / LMR_HISTORY_DIVISOR;
                    }
                    r = r.clamp(0, new_depth - 1);
                }
                let mut s = -self.negamax(
                    &child,
                    new_depth - r,
                    -alpha - 1,
                    -alpha,
                    ply + 1,
                    Some(m),
                    true,
                );
                if s > alpha && r > 0 {
                    s = -self.negamax(
                        &child,
                        new_depth,
                        -alpha - 1,
                        -alpha,
                        ply + 1,
                        Some(m),
                        true,
                    );
                }
                if s > alpha && s < beta {
                    s = -self.negamax(&child, new_depth, -beta, -alpha, ply + 1, Some(m), true);
                }
                s
            };
            self.keys.pop();
            if self.aborted {
                exit = Some(0);
                break;
            }
            searched += 1;
            if score > best {
                best = score;
                if score > alpha {
                    best_move = Some(m);
                    alpha = score;
                    self.set_pv(ply, m);
                    if score >= beta {
                        if !tactical {
                            self.ordering
                                .quiet_cutoff(pos, m, &quiets, depth, ply, previous);
                        }
                        break;
                    }
                }
            }
            if !tactical {
                quiets.push(m);
            }
        }
        self.order[ply] = order;
        self.quiets[ply] = quiets;
        if let Some(score) = exit {
            return score;
        }
        if excluded.is_some() {
            // The best of the other moves (pruning spares the first one searched); `-INFINITE`
            // when the excluded move is the only one, which makes it singular.
            return best;
        }
        let bound = if best >= beta {
            Bound::Lower
        } else if best_move.is_some() {
            Bound::Exact
        } else {
            Bound::Upper
        };
        let stored_eval = if in_check { 0 } else { eval };
        self.tt
            .store(key, best_move, to_tt(best, ply), stored_eval, depth, bound);
        best
    }

    /// Fills `order` with `moves` and their order scores.
    fn score_moves(
        &self,
        pos: &P,
        moves: &[P::Move],
        tt_move: Option<P::Move>,
        counter: Option<P::Move>,
        ply: usize,
        order: &mut Vec<(i32, P::Move)>,
    ) {
        order.extend(
            moves
                .iter()
                .map(|&m| (self.ordering.score(pos, m, tt_move, counter, ply), m)),
        );
    }

    fn quiesce(&mut self, pos: &P, mut alpha: i32, beta: i32, ply: usize, qply: usize) -> i32 {
        self.pv[ply].clear();
        if self.tick() {
            return 0;
        }
        self.seldepth = self.seldepth.max(ply);
        if let Some(o) = pos.decided() {
            return outcome_score(&o, pos.turn(), ply);
        }
        if ply >= MAX_PLY - 1 {
            return self.evaluate(pos, ply);
        }
        // A stored result of any depth bounds quiescence; the stored evaluation saves one.
        let entry = self.tt.probe(pos.zobrist());
        if let Some(e) = entry {
            let s = from_tt(e.score, ply);
            match e.bound {
                Bound::Exact => return s,
                Bound::Lower if s >= beta => return s,
                Bound::Upper if s <= alpha => return s,
                _ => {}
            }
        }
        let in_check = pos.is_check();
        let mut moves = P::MoveList::default();
        let mut best;
        let stand;
        if in_check {
            pos.legal_moves_into(&mut moves);
            if moves.is_empty() {
                return match pos.terminal() {
                    Some(o) => outcome_score(&o, pos.turn(), ply),
                    None => self.evaluate(pos, ply),
                };
            }
            best = -INFINITE;
            stand = -INFINITE;
        } else {
            stand = match entry {
                Some(e) => e.eval,
                None => self.evaluate(pos, ply),
            };
            if stand >= beta {
                return stand;
            }
            alpha = alpha.max(stand);
            best = stand;
            pos.capture_moves_into(&mut moves);
            if qply == 0 {
                pos.quiescence_extras(&mut moves);
            }
        }
        let mut order = std::mem::take(&mut self.order[ply]);
        order_quiescence(pos, &moves, &mut order);
        for &(_, m) in order.iter() {
            if !in_check {
                if pos.is_tactical(m) && stand + pos.gain(m) + DELTA_MARGIN <= alpha {
                    continue;
                }
                if !pos.see_ge(m, 0) {
                    continue;
                }
            }
            let mut child = pos.clone();
            child.play_unchecked(m);
            let score = -self.quiesce(&child, -beta, -alpha, ply + 1, qply + 1);
            if self.aborted {
                break;
            }
            if score > best {
                best = score;
                if score > alpha {
                    alpha = score;
                    self.set_pv(ply, m);
                    if score >= beta {
                        break;
                    }
                }
            }
        }
        self.order[ply] = order;
        if self.aborted {
            return 0;
        }
        best
    }
}
