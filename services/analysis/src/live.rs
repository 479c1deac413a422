//! Live analysis as plain functions: a request ([`LiveRequest`]) decoded into a [`Query`] (the
//! position reached, its history, the effective limits), the search run on the calling thread,
//! its progress ([`LiveInfo`]) and result ([`LiveResult`]) with their lines in both notations.
//! The handlers in [`crate::service`] only move these between the network and the pool
//! (`crate::convert` turns them to and from protobuf).

use crate::caps::{Caps, MAX_DEPTH};
use crate::domain::{MoveText, StartInput, start_position};
use crate::engines::{EngineChoice, EngineRegistry};
use crate::error::AnalysisError;
use arbiter_core::{AnyMove, AnyPosition, GameState, Locale, Notation, Outcome, Position};
use arbiter_engine::analyze::{AnalysisSettings, Progress};
use arbiter_engine::score::{Reported, outcome_score};
use arbiter_engine::{Bound, Limits, SearchOptions, TimeSource};
use std::sync::atomic::AtomicBool;

/// A decoded request: what to search and for how long.
#[derive(Debug, Clone)]
pub struct Query {
    /// The position analysed (after the request's moves).
    pub position: AnyPosition,
    /// The request's start position.
    pub start: AnyPosition,
    /// The request's moves from `start` to `position`.
    pub moves: Vec<AnyMove>,
    /// The engine that searches.
    pub engine: EngineChoice,
    /// The repetition keys of the positions before it since the last irreversible move.
    pub history: Vec<u64>,
    /// The ending the rules impose in the position, if any: then nothing is searched.
    pub outcome: Option<Outcome>,
    /// The request's own limits (unset ones are `None`).
    pub requested: Limits,
    /// The limits searched with: the request's, with the server's caps filling the gaps.
    pub limits: Limits,
    /// Lines to report.
    pub multipv: usize,
    /// SAN piece letters of the lines.
    pub locale: Locale,
    /// The transposition table, MiB.
    pub hash_mib: usize,
}

/// A live request as sent (Analyze, or BestMove with one line), not yet checked.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveRequest {
    /// The start position; `None` when the request gave none.
    pub position: Option<StartInput>,
    /// Moves played from it, as text.
    pub moves: Vec<String>,
    /// How the moves are written.
    pub notation: Notation,
    /// The moves' and the lines' piece letters.
    pub locale: Locale,
    /// The depth limit (0: none).
    pub depth: u32,
    /// The node limit (0: the server's cap).
    pub nodes: u64,
    /// The time limit, ms (0: the server's cap).
    pub movetime_ms: u64,
    /// Lines to report (0 counts as 1).
    pub multipv: u32,
    /// The engine named (empty: the server's default for the variant).
    pub engine: String,
}

/// One progress report of a search: an iteration's line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveInfo {
    /// The iteration's depth.
    pub depth: u32,
    /// The deepest ply reached.
    pub seldepth: u32,
    /// Which line (1 the best).
    pub multipv: u32,
    /// Its score, from the side to move.
    pub score: Reported,
    /// Nodes searched.
    pub nodes: u64,
    /// Nodes per second.
    pub nps: u64,
    /// How full the transposition table is, per mille.
    pub hashfull: u32,
    /// Time searched, ms.
    pub time_ms: u64,
    /// The line, in both notations.
    pub pv: Vec<MoveText>,
}

/// Why a search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// It reached one of the request's own limits.
    Limit,
    /// It reached a cap the server (or the call's deadline) added.
    ServerCap,
    /// Nothing to search: the game is over, or the side to move has no move.
    NoMove,
    /// Stopped from outside: the caller went away, or the server shuts down.
    Shutdown,
}

/// One line of a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveLine {
    /// Its score, from the side to move.
    pub score: Reported,
    /// How the score bounds the true one.
    pub bound: Bound,
    /// Its moves, in both notations.
    pub pv: Vec<MoveText>,
}

/// A search's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveResult {
    /// The best move, if any.
    pub best_move: Option<MoveText>,
    /// The expected reply to it, if known.
    pub ponder: Option<MoveText>,
    /// The score, from the side to move.
    pub score: Reported,
    /// The lines, best first.
    pub lines: Vec<LiveLine>,
    /// The depth reached.
    pub depth: u32,
    /// Nodes searched.
    pub nodes: u64,
    /// Time searched, ms.
    pub time_ms: u64,
    /// How the score bounds the true one.
    pub bound: Bound,
    /// The ending the rules impose in the position, if any (then nothing was searched).
    pub outcome: Option<Outcome>,
    /// Why the search ended.
    pub stop_reason: StopReason,
    /// The engine's own name and version.
    pub engine: String,
}

/// Decodes a request under `caps`, for one of `engines`. Errors name the field: `position.*`,
/// `moves[i]`, `limits.depth` and `engine` (out of range, unknown: `INVALID_ARGUMENT`),
/// `limits.nodes`, `limits.movetime_ms`, `multipv` and `moves` (over a cap:
/// `RESOURCE_EXHAUSTED`).
pub fn decode(
    f: &LiveRequest,
    caps: &Caps,
    engines: &EngineRegistry,
) -> Result<Query, AnalysisError> {
    let start = start_position(f.position.as_ref(), "position")?;
    let engine = engines.resolve(&f.engine, start.variant(), "engine")?;
    if f.depth > MAX_DEPTH {
        return Err(AnalysisError::invalid(
            "limits.depth",
            format!(
                "{} is out of range (1 to {MAX_DEPTH}, or 0 for none)",
                f.depth
            ),
        ));
    }
    within("limits.nodes", f.nodes, caps.max_nodes, "nodes")?;
    within("limits.movetime_ms", f.movetime_ms, caps.max_time_ms, "ms")?;
    within(
        "multipv",
        u64::from(f.multipv),
        u64::from(caps.max_multipv),
        "lines",
    )?;
    within(
        "moves",
        f.moves.len() as u64,
        caps.max_moves as u64,
        "moves",
    )?;
    let (read_as, locale) = (f.notation, f.locale);
    let mut game = GameState::new(start.clone());
    let moves = f
        .moves
        .iter()
        .enumerate()
        .map(|(i, text)| {
            game.play_text(text, read_as, locale)
                .map_err(|e| AnalysisError::invalid(format!("moves[{i}]"), e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let keys = game.history();
    let requested = Limits {
        depth: (f.depth > 0).then_some(f.depth),
        nodes: (f.nodes > 0).then_some(f.nodes),
        movetime_ms: (f.movetime_ms > 0).then_some(f.movetime_ms),
        ..Limits::default()
    };
    Ok(Query {
        history: keys[..keys.len() - 1].to_vec(),
        outcome: game.automatic_outcome(),
        position: game.position().clone(),
        start,
        moves,
        engine,
        limits: Limits {
            nodes: Some(requested.nodes.unwrap_or(caps.max_nodes)),
            movetime_ms: Some(requested.movetime_ms.unwrap_or(caps.max_time_ms)),
            ..requested
        },
        requested,
        multipv: f.multipv.max(1) as usize,
        locale,
        hash_mib: caps.hash_mib,
    })
}

/// `RESOURCE_EXHAUSTED` on `field` when `value` (counted in `unit`) is over the server's `cap`.
pub(crate) fn within(field: &str, value: u64, cap: u64, unit: &str) -> Result<(), AnalysisError> {
    if value > cap {
        return Err(AnalysisError::exhausted(
            field,
            format!("{value} {unit} exceed the server's cap of {cap} {unit}"),
        ));
    }
    Ok(())
}

/// A line of coordinate moves from `pos`, each in UCI and SAN. The engine wrote the moves, so
/// each is legal in turn; the line stops at a move that is not (never expected).
fn line(pos: &AnyPosition, moves: &[String], locale: Locale) -> Vec<MoveText> {
    let mut p = pos.clone();
    let mut out = Vec::with_capacity(moves.len());
    for text in moves {
        let Ok(m) = p.parse_move(text, Notation::Uci, locale) else {
            break;
        };
        out.push(MoveText::of(&p, m, locale));
        p.play_unchecked(m);
    }
    out
}

/// One progress report of a search from `pos`, its line in both notations.
pub fn info(pos: &AnyPosition, p: &Progress, locale: Locale) -> LiveInfo {
    LiveInfo {
        depth: p.depth,
        seldepth: p.seldepth,
        multipv: p.multipv as u32,
        score: p.score,
        nodes: p.nodes,
        nps: p.nps,
        hashfull: p.hashfull,
        time_ms: p.time_ms,
        pv: line(pos, &p.pv, locale),
    }
}

/// Time kept back from a call's deadline for sending the answer, in ms: a search under a
/// deadline stops this long before it. Sending takes a millisecond or two once the search has
/// stopped (docs/performance.md); the rest absorbs a loaded machine's scheduling delays.
pub const DEADLINE_MARGIN_MS: u64 = 50;

/// How long a search may think, in ms, when its answer is due at `deadline_ms` and the clock
/// reads `now_ms` (both on the search's clock): what is left, less `margin_ms` for sending the
/// answer. `None` when that leaves nothing.
pub fn thinking_time(deadline_ms: u64, now_ms: u64, margin_ms: u64) -> Option<u64> {
    deadline_ms
        .checked_sub(now_ms)?
        .checked_sub(margin_ms)
        .filter(|&t| t > 0)
}

/// `limits` under a call's deadline that leaves `left` ms to think: the time limit becomes
/// `left` when that is sooner than the limits' own. Returns the limits and whether the
/// deadline cut them.
fn under_deadline(mut limits: Limits, left: Option<u64>) -> (Limits, bool) {
    let cut = left.is_some_and(|d| limits.movetime_ms.is_none_or(|t| d < t));
    if cut {
        limits.movetime_ms = left;
    }
    (limits, cut)
}

/// Runs `query` on this thread until its limits, `stop`, or the call's deadline (`deadline_ms`,
/// a time on `time`'s clock, if any) ends it; `on_info` gets each progress report as it comes.
/// Under a deadline the search stops [`DEADLINE_MARGIN_MS`] before it, counting the time its
/// tables take to allocate. Returns the result.
///
/// # Errors
/// `UNAVAILABLE` when an external engine failed (crashed or stopped answering twice in a row,
/// or broke the protocol).
pub fn run(
    query: &Query,
    stop: &AtomicBool,
    time: &dyn TimeSource,
    deadline_ms: Option<u64>,
    on_info: &mut dyn FnMut(LiveInfo),
) -> Result<LiveResult, AnalysisError> {
    let pos = &query.position;
    let engine = query.engine.id();
    // Nothing searched: no move, no line, nothing counted.
    let unsearched = |score, bound, outcome| LiveResult {
        best_move: None,
        ponder: None,
        score,
        lines: Vec::new(),
        depth: 0,
        nodes: 0,
        time_ms: 0,
        bound,
        outcome,
        stop_reason: StopReason::NoMove,
        engine: engine.clone(),
    };
    if let Some(o) = query.outcome {
        // The ending's score is known exactly.
        return Ok(unsearched(
            Reported::of(outcome_score(&o, pos.turn(), 0)),
            Bound::Exact,
            Some(o),
        ));
    }
    let mut progress = |p: &Progress| on_info(info(pos, p, query.locale));
    let settings = AnalysisSettings {
        limits: query.limits,
        options: SearchOptions {
            multipv: query.multipv,
            move_overhead_ms: 0,
        },
        hash_mib: query.hash_mib,
    };
    // The deadline becomes a time limit only once the engine's tables are allocated, so that
    // their allocation counts against it. A deadline that leaves nothing still gets a 1 ms
    // search, whose move is sent at once.
    let (mut limits, mut cut_by_deadline) = (query.limits, false);
    let a = crate::engines::search(
        &query.engine,
        &query.start,
        &query.moves,
        pos,
        &query.history,
        &settings,
        stop,
        time,
        &mut progress,
        &mut |own| {
            let left = deadline_ms
                .map(|d| thinking_time(d, time.now_ms(), DEADLINE_MARGIN_MS).unwrap_or(1));
            (limits, cut_by_deadline) = under_deadline(own, left);
            limits
        },
    )
    .map_err(AnalysisError::Unavailable)?;
    let Some(best) = a.best.as_deref() else {
        return Ok(unsearched(a.score, a.bound, None));
    };
    let first = line(pos, &[best.to_owned()], query.locale);
    let reply = a.ponder.as_ref().and_then(|p| {
        let mut after = pos.clone();
        let m = after.parse_move(best, Notation::Uci, query.locale).ok()?;
        after.play_unchecked(m);
        line(&after, std::slice::from_ref(p), query.locale).pop()
    });
    Ok(LiveResult {
        best_move: first.into_iter().next(),
        ponder: reply,
        score: a.score,
        lines: a
            .lines
            .iter()
            .map(|l| LiveLine {
                score: l.score,
                bound: l.bound,
                pv: line(pos, &l.pv, query.locale),
            })
            .collect(),
        depth: a.depth,
        nodes: a.nodes,
        time_ms: a.time_ms,
        bound: a.bound,
        outcome: None,
        stop_reason: if stop.load(std::sync::atomic::Ordering::Relaxed) {
            // Raised from outside: the caller is gone (nobody reads this), or the server stopped
            // every search to shut down.
            StopReason::Shutdown
        } else {
            stop_reason(query, &limits, cut_by_deadline, a.depth, a.nodes, a.time_ms)
        },
        engine,
    })
}

/// Whether the search ended on the request's own terms, or on a cap the server (or the call's
/// deadline) added.
fn stop_reason(
    query: &Query,
    searched: &Limits,
    cut_by_deadline: bool,
    depth: u32,
    nodes: u64,
    time_ms: u64,
) -> StopReason {
    let r = &query.requested;
    let own = r.depth.is_some_and(|d| depth >= d)
        || r.nodes.is_some_and(|n| nodes >= n)
        || (!cut_by_deadline && r.movetime_ms.is_some_and(|t| time_ms >= t));
    let capped = (r.nodes.is_none() && searched.nodes.is_some_and(|n| nodes >= n))
        || ((r.movetime_ms.is_none() || cut_by_deadline)
            && searched.movetime_ms.is_some_and(|t| time_ms >= t));
    if capped && !own {
        StopReason::ServerCap
    } else {
        StopReason::Limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::analyze_request;
    use arbiter_proto::analysis::v1 as pb;
    use arbiter_proto::common::v1 as common;
    use arbiter_proto::common::v1::Variant;

    fn request(text: &str, moves: &[&str], limits: pb::SearchLimits) -> pb::AnalyzeRequest {
        pb::AnalyzeRequest {
            position: Some(common::Position {
                variant: Variant::Chess as i32,
                text: text.to_owned(),
                rules: vec![],
            }),
            moves: moves.iter().map(|m| (*m).to_owned()).collect(),
            limits: Some(limits),
            ..pb::AnalyzeRequest::default()
        }
    }

    fn depth(d: u32) -> pb::SearchLimits {
        pb::SearchLimits {
            depth: d,
            ..pb::SearchLimits::default()
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        /// Whatever the request holds, decoding gives a query within the caps or a refusal
        /// naming a field of the request; it never panics.
        #[test]
        fn any_request_decodes_or_names_a_field(
            variant in 0i32..9,
            text in proptest::prop_oneof![
                proptest::strategy::Just(String::new()),
                "[ -~]{0,80}",
                proptest::strategy::Just("8/8/8/8/8/8/8/K6k w - - 0 1".to_owned()),
            ],
            moves in proptest::collection::vec(
                proptest::prop_oneof!["[a-h][1-8][a-h][1-8]", "[NBRQK]?[a-h][1-8]", "\\PC{0,6}"],
                0..12,
            ),
            depth in proptest::prop_oneof![0u32..70, proptest::strategy::Just(u32::MAX)],
            nodes in proptest::prop_oneof![0u64..2_000, proptest::strategy::Just(u64::MAX)],
            movetime in proptest::prop_oneof![0u64..200, proptest::strategy::Just(u64::MAX)],
            multipv in proptest::prop_oneof![0u32..12, proptest::strategy::Just(u32::MAX)],
        ) {
            let caps = Caps {
                max_nodes: 1000,
                max_time_ms: 100,
                max_multipv: 4,
                max_moves: 8,
                hash_mib: 1,
            };
            let r = pb::AnalyzeRequest {
                position: Some(common::Position { variant, text, rules: vec![] }),
                moves,
                limits: Some(pb::SearchLimits { depth, nodes, movetime_ms: movetime }),
                multipv,
                ..pb::AnalyzeRequest::default()
            };
            match decode(&analyze_request(&r), &caps, &EngineRegistry::default()) {
                Ok(q) => {
                    proptest::prop_assert!(q.limits.nodes.is_some_and(|n| (1..=1000).contains(&n)));
                    proptest::prop_assert!(q.limits.movetime_ms.is_some_and(|t| (1..=100).contains(&t)));
                    proptest::prop_assert!((1..=4).contains(&q.multipv));
                    proptest::prop_assert!(q.limits.depth.is_none_or(|d| (1..=MAX_DEPTH).contains(&d)));
                }
                Err(e) => {
                    let field = e.field().unwrap_or_default().to_owned();
                    let known = ["position", "limits.", "multipv", "moves"];
                    proptest::prop_assert!(
                        known.iter().any(|k| field.starts_with(k)),
                        "{e}"
                    );
                }
            }
        }
    }

    #[test]
    fn unset_limits_take_the_caps() {
        let caps = Caps::default();
        let q = decode(
            &analyze_request(&request("", &[], depth(3))),
            &caps,
            &EngineRegistry::default(),
        )
        .unwrap();
        assert_eq!(q.requested, Limits::depth(3));
        assert_eq!(q.limits.nodes, Some(caps.max_nodes));
        assert_eq!(q.limits.movetime_ms, Some(caps.max_time_ms));
        assert_eq!(q.multipv, 1);
    }

    #[test]
    fn errors_name_the_field() {
        let caps = Caps {
            max_nodes: 1000,
            max_time_ms: 100,
            max_multipv: 2,
            max_moves: 2,
            hash_mib: 1,
        };
        let field = |r: &pb::AnalyzeRequest| {
            let e = decode(&analyze_request(r), &caps, &EngineRegistry::default()).unwrap_err();
            (e.code(), e.field().unwrap_or("").to_owned())
        };
        use tonic::Code::{InvalidArgument as Bad, ResourceExhausted as Over};
        let mut r = request("", &[], depth(65));
        assert_eq!(field(&r), (Bad, "limits.depth".into()));
        r.limits = Some(pb::SearchLimits {
            nodes: 1001,
            ..Default::default()
        });
        assert_eq!(field(&r), (Over, "limits.nodes".into()));
        r.limits = Some(pb::SearchLimits {
            movetime_ms: 101,
            ..Default::default()
        });
        assert_eq!(field(&r), (Over, "limits.movetime_ms".into()));
        r.limits = None;
        r.multipv = 3;
        assert_eq!(field(&r), (Over, "multipv".into()));
        r.multipv = 0;
        r.moves = vec!["e4".into(); 3];
        assert_eq!(field(&r), (Over, "moves".into()));
        r.moves = vec!["e4".into(), "e4".into()];
        assert_eq!(field(&r), (Bad, "moves[1]".into()));
        r.moves.clear();
        r.position.as_mut().unwrap().text = "8/8/8 w".into();
        assert_eq!(field(&r), (Bad, "position.text".into()));
        r.position.as_mut().unwrap().variant = 0;
        assert_eq!(field(&r), (Bad, "position.variant".into()));
        r.position = None;
        assert_eq!(field(&r), (Bad, "position".into()));
    }

    #[test]
    fn moves_make_the_history_and_a_finished_game_is_not_searched() {
        let caps = Caps::default();
        // Knights out and back twice: the start position occurs a third time.
        let shuffle = ["Nf3", "Nf6", "Ng1", "Ng8", "Nf3", "Nf6", "Ng1", "Ng8"];
        let q = decode(
            &analyze_request(&request("", &shuffle, depth(2))),
            &caps,
            &EngineRegistry::default(),
        )
        .unwrap();
        assert_eq!(q.history.len(), 8);
        assert!(q.outcome.is_none(), "threefold is only claimable");
        // Fool's mate: the game is over, nothing is searched.
        let q = decode(
            &analyze_request(&request("", &["f3", "e5", "g4", "Qh4#"], depth(2))),
            &caps,
            &EngineRegistry::default(),
        )
        .unwrap();
        let r = run(
            &q,
            &AtomicBool::new(false),
            &arbiter_engine::SystemTime::new(),
            None,
            &mut |_| panic!("no search"),
        )
        .unwrap();
        assert_eq!(r.stop_reason, StopReason::NoMove);
        assert!(r.best_move.is_none());
        assert_eq!(
            r.outcome.unwrap().reason,
            arbiter_core::EndReason::Checkmate
        );
        assert_eq!(r.score, Reported::Mate(0));
    }

    #[test]
    fn lines_carry_san() {
        let caps = Caps::default();
        // White mates in one: Qxf7#.
        let q = decode(
            &analyze_request(&request(
                "r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR w KQkq - 2 3",
                &[],
                depth(3),
            )),
            &caps,
            &EngineRegistry::default(),
        )
        .unwrap();
        let mut infos = Vec::new();
        let r = run(
            &q,
            &AtomicBool::new(false),
            &arbiter_engine::SystemTime::new(),
            None,
            &mut |i| infos.push(i),
        )
        .unwrap();
        let best = r.best_move.unwrap();
        assert_eq!((best.uci.as_str(), best.san.as_str()), ("f3f7", "Qxf7#"));
        assert_eq!(r.score, Reported::Mate(1));
        assert_eq!(r.stop_reason, StopReason::Limit);
        assert!(!infos.is_empty());
        assert_eq!(infos.last().unwrap().pv[0].san, "Qxf7#");
    }

    #[test]
    fn thinking_time_is_what_the_deadline_leaves_less_the_margin() {
        assert_eq!(thinking_time(1_000, 0, 50), Some(950));
        assert_eq!(thinking_time(1_000, 400, 50), Some(550));
        assert_eq!(thinking_time(1_000, 949, 50), Some(1));
        // Within the margin, at or past the deadline: nothing left.
        assert_eq!(thinking_time(1_000, 950, 50), None);
        assert_eq!(thinking_time(1_000, 990, 50), None);
        assert_eq!(thinking_time(1_000, 1_000, 50), None);
        assert_eq!(thinking_time(1_000, 5_000, 50), None);
        assert_eq!(thinking_time(u64::MAX, 0, 0), Some(u64::MAX));
        assert_eq!(thinking_time(0, u64::MAX, 50), None);
    }

    #[test]
    fn a_deadline_cuts_only_a_later_time_limit() {
        let own = Limits {
            movetime_ms: Some(300),
            ..Limits::depth(9)
        };
        assert_eq!(under_deadline(own, None), (own, false));
        assert_eq!(under_deadline(own, Some(500)), (own, false));
        let (cut, by_deadline) = under_deadline(own, Some(200));
        assert_eq!(
            (cut.movetime_ms, cut.depth, by_deadline),
            (Some(200), Some(9), true)
        );
        let (cut, by_deadline) = under_deadline(Limits::depth(9), Some(700));
        assert_eq!((cut.movetime_ms, by_deadline), (Some(700), true));
    }

    /// Moves on 1 ms at every reading, from `start`.
    struct Ticking(std::sync::atomic::AtomicU64);

    impl TimeSource for Ticking {
        fn now_ms(&self) -> u64 {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        }
    }

    /// Time already gone when the search starts (the wait for an engine, its tables'
    /// allocation) is taken off what the deadline leaves: the search ends the margin before
    /// the deadline on its clock.
    #[test]
    fn a_search_under_a_deadline_stops_the_margin_before_it() {
        let caps = Caps {
            max_time_ms: 600_000,
            max_nodes: u64::MAX,
            ..Caps::default()
        };
        let q = decode(
            &analyze_request(&request("", &[], pb::SearchLimits::default())),
            &caps,
            &EngineRegistry::default(),
        )
        .unwrap();
        for (started, deadline) in [(0, 200), (700, 1_000), (1_000, 1_300)] {
            let clock = Ticking(std::sync::atomic::AtomicU64::new(started));
            let r = run(
                &q,
                &AtomicBool::new(false),
                &clock,
                Some(deadline),
                &mut |_| {},
            )
            .unwrap();
            let stopped = clock.0.load(std::sync::atomic::Ordering::Relaxed);
            assert!(
                stopped <= deadline - DEADLINE_MARGIN_MS + 3,
                "from {started}, due {deadline}: the clock read {stopped} at the end"
            );
            // Stopped at the first reading past the limit, one more dating the result.
            assert!(r.time_ms <= deadline - started - DEADLINE_MARGIN_MS + 2);
            assert_eq!(r.stop_reason, StopReason::ServerCap);
            assert!(r.best_move.is_some());
        }
        // Nothing left: a 1 ms search, stopped at its first look at the clock, still moves.
        let clock = Ticking(std::sync::atomic::AtomicU64::new(990));
        let r = run(
            &q,
            &AtomicBool::new(false),
            &clock,
            Some(1_000),
            &mut |_| {},
        )
        .unwrap();
        assert!(r.best_move.is_some());
        assert!(
            r.nodes <= arbiter_engine::search::CHECK_EVERY,
            "{}",
            r.nodes
        );
        assert_eq!(r.stop_reason, StopReason::ServerCap);
    }

    #[test]
    fn a_cap_that_ends_the_search_is_reported() {
        let caps = Caps {
            max_nodes: 5000,
            ..Caps::default()
        };
        let q = decode(
            &analyze_request(&request("", &[], depth(30))),
            &caps,
            &EngineRegistry::default(),
        )
        .unwrap();
        let r = run(
            &q,
            &AtomicBool::new(false),
            &arbiter_engine::SystemTime::new(),
            None,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(r.nodes, 5000);
        assert_eq!(r.stop_reason, StopReason::ServerCap);
        let q = decode(
            &analyze_request(&request(
                "",
                &[],
                pb::SearchLimits {
                    nodes: 4000,
                    ..Default::default()
                },
            )),
            &caps,
            &EngineRegistry::default(),
        )
        .unwrap();
        let r = run(
            &q,
            &AtomicBool::new(false),
            &arbiter_engine::SystemTime::new(),
            None,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(r.nodes, 4000);
        assert_eq!(r.stop_reason, StopReason::Limit);
    }
}
