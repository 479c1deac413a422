//! Remote workers over gRPC (`AcquireWork`, `SubmitWork`, scope `analysis:worker`): the
//! values both job stores share, the check of a submission, and the ids of leases and
//! refusals.
//!
//! - A worker is its API key (by id), or in development mode (no keys) its caller
//!   ([`WorkerId`]). A lease is bound to the worker that took it.
//! - A lease ([`WorkItem`]) holds one game of a job until it expires (`--work-lease-ms`); then
//!   the game returns to the queue. A submission on a lease that expired is still accepted while
//!   no other worker has taken the game; once another has, it is `FAILED_PRECONDITION`. Each
//!   game's result is recorded once: whichever submission comes second is answered
//!   `duplicate`, and changes nothing.
//! - A submission is checked ([`check`]) before the server reviews the game from it: one
//!   evaluation per position, a score in range with a known bound and a legal best move in
//!   every position that does not end the game, no best move in one that does (a score there
//!   is ignored), an engine id of 1 to 128 printable characters. Results that fail are
//!   `INVALID_ARGUMENT` naming the field (`evaluations[17].best_move`); the worker is then
//!   refused for work under a fresh refusal id ([`new_refusal_id`]), and its other leases
//!   return to the queue at once, until the operator lifts the refusal in the keys file
//!   (`lift_work_refusal = "wr-…"` in the key's table: [`refusal_message`]).

use super::{Caller, Game, GameResult, JobSpec, evaluate_game, game_result};
use crate::error::AnalysisError;
use arbiter_core::{AnyPosition, Locale, Notation, Position};
use arbiter_engine::analyze::Analysis;
use arbiter_engine::review::PositionEval;
use arbiter_engine::score::Reported;
use arbiter_engine::tt::Bound;
use std::sync::atomic::AtomicBool;

/// The longest an `AcquireWork` waits for a game (its `wait_ms` is cut to this).
pub const MAX_WAIT_MS: u32 = 30_000;
/// The longest engine id of a submission, in characters.
pub const MAX_ENGINE_ID_CHARS: usize = 128;
/// The largest centipawn score accepted.
pub const MAX_CP: i32 = 100_000;
/// The largest mate distance accepted, in moves.
pub const MAX_MATE: i32 = 1_000;

/// Who a remote worker is: its API key (`key:<id>`), or in development mode its caller
/// (`caller:<digest>`). Leases and refusals belong to it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WorkerId(String);

impl WorkerId {
    /// The worker presenting the key `key_id`.
    pub fn key(key_id: &str) -> WorkerId {
        WorkerId(format!("key:{key_id}"))
    }

    /// A worker without a key (development mode): its caller.
    pub fn caller(caller: &Caller) -> WorkerId {
        WorkerId(format!("caller:{}", caller.hex()))
    }

    /// The worker as stored and logged.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether it is a key's (whose refusals the keys file lifts).
    pub fn is_key(&self) -> bool {
        self.0.starts_with("key:")
    }
}

impl std::fmt::Display for WorkerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A game leased to a remote worker.
#[derive(Clone, Debug)]
pub struct WorkItem {
    /// The lease's id.
    pub lease_id: String,
    /// When it expires, Unix ms.
    pub expires_at_unix_ms: i64,
    /// The game (its positions in the documented order: [`evaluate_game`]).
    pub game: Game,
    /// The job's per-ply limit, the table size, its engine.
    pub spec: JobSpec,
}

/// One position's evaluation as a remote worker sent it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemoteEval {
    /// Its score from the side to move (`None`: unset).
    pub score: Option<Reported>,
    /// How the score bounds the true one (`None`: unspecified).
    pub bound: Option<Bound>,
    /// The engine's move in UCI (empty: none).
    pub best_move: String,
    /// Nodes searched.
    pub nodes: u64,
}

/// A remote worker's submission.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkResult {
    /// The lease.
    pub lease_id: String,
    /// One evaluation per position.
    pub evaluations: Vec<RemoteEval>,
    /// The engine's own name and version.
    pub engine_id: String,
}

/// What a store knows of a lease a submission names.
#[derive(Debug)]
pub enum Leased {
    /// Held by this worker (or expired, its game not taken by another): its game, to check
    /// the submission against.
    Open {
        /// The game's index in its job.
        index: usize,
        /// The game and its job's settings (`spec.games` holds the game alone).
        spec: JobSpec,
    },
    /// Its results were recorded already: a retry.
    Accepted,
}

fn random_hex(bytes: usize) -> Result<String, AnalysisError> {
    let mut bits = vec![0u8; bytes];
    getrandom::fill(&mut bits)
        .map_err(|e| AnalysisError::Unavailable(format!("no random source: {e}")))?;
    Ok(arbiter_kit::hex(&bits))
}

/// A new lease id: `ls-` and 32 lowercase hex digits (128 random bits: a lease cannot be
/// guessed, and it is bound to its worker besides).
///
/// # Errors
/// `UNAVAILABLE` when the system has no random source.
pub fn new_lease_id() -> Result<String, AnalysisError> {
    Ok(format!("ls-{}", random_hex(16)?))
}

/// A new refusal id: `wr-`, the time in Unix ms, `-` and 16 lowercase hex digits
/// (`wr-1764892800000-3f9a0c1d2e4b5a69`).
///
/// # Errors
/// `UNAVAILABLE` when the system has no random source.
pub fn new_refusal_id() -> Result<String, AnalysisError> {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    Ok(format!("wr-{ms}-{}", random_hex(8)?))
}

/// The keys-file line that lifts refusal `id`.
pub fn lift_line(id: &str) -> String {
    format!("lift_work_refusal = \"{id}\"")
}

/// The `PERMISSION_DENIED` of a worker refused under `id`: it names the keys-file line that
/// lifts the refusal.
pub fn refusal_message(worker: &WorkerId, id: &str) -> AnalysisError {
    let how = if worker.is_key() {
        format!(
            "an operator lifts it by adding the line `{}` to this key's [[key]] table in the \
             keys file",
            lift_line(id)
        )
    } else {
        "without API keys (development mode) it lasts until the job store forgets it (in \
         process: a restart; on Redis: the field of this caller in `an:refusals`, or on a \
         Redis Cluster in every group's `an:{<tag>}:refusals`)"
            .to_owned()
    };
    AnalysisError::WorkRefused(format!(
        "this worker is refused for work (refusal {id}): results it submitted failed the \
         server's check; {how}"
    ))
}

/// The `FAILED_PRECONDITION` of a lease not held.
pub fn not_held(lease_id: &str) -> AnalysisError {
    AnalysisError::LeaseNotHeld(format!(
        "lease {} is unknown, another worker's, or expired and its game taken by another \
         worker",
        arbiter_kit::error::quote(lease_id)
    ))
}

/// Checks a submission against game `index` of its lease, then reviews the game from it: the
/// game's result, recorded with the submission's engine id.
///
/// # Errors
/// `INVALID_ARGUMENT` naming the first field that fails the check.
pub fn check(index: usize, spec: &JobSpec, work: &WorkResult) -> Result<GameResult, AnalysisError> {
    let game = &spec.games[0];
    let id = &work.engine_id;
    if id.is_empty() || id.chars().count() > MAX_ENGINE_ID_CHARS || id.chars().any(char::is_control)
    {
        return Err(AnalysisError::invalid(
            "engine_id",
            format!("1 to {MAX_ENGINE_ID_CHARS} printable characters are required"),
        ));
    }
    let positions = game.positions();
    if work.evaluations.len() as u64 != positions {
        return Err(AnalysisError::invalid(
            "evaluations",
            format!(
                "{} evaluations; the game has {positions} positions (one evaluation each, in \
                 the order of WorkItem)",
                work.evaluations.len()
            ),
        ));
    }
    let mut failed: Option<AnalysisError> = None;
    let mut next = 0usize;
    let stop = AtomicBool::new(false);
    let evals = evaluate_game(game, spec, &stop, &mut || {}, &mut |pos, _, _, _| {
        let i = next;
        next += 1;
        one(pos, &work.evaluations[i], i).map_err(|e| {
            let text = e.to_string();
            failed = Some(e);
            text
        })
    });
    match evals {
        Some(Ok(evals)) => Ok(game_result(index, game, &evals, id)),
        _ => Err(failed.unwrap_or_else(|| AnalysisError::invalid("evaluations", "not checked"))),
    }
}

/// Position `i`'s evaluation, checked.
fn one(pos: &AnyPosition, e: &RemoteEval, i: usize) -> Result<PositionEval, AnalysisError> {
    let field = |f: &str| format!("evaluations[{i}].{f}");
    if let Some(ended) = PositionEval::ending(pos) {
        if !e.best_move.is_empty() {
            return Err(AnalysisError::invalid(
                field("best_move"),
                "the position ends the game: no move is legal",
            ));
        }
        return Ok(ended);
    }
    let score = match e.score {
        None => {
            return Err(AnalysisError::invalid(
                field("score"),
                "required: the position does not end the game",
            ));
        }
        Some(Reported::Cp(cp)) if !(-MAX_CP..=MAX_CP).contains(&cp) => {
            return Err(AnalysisError::invalid(
                field("score.cp"),
                format!("{cp} is out of range (-{MAX_CP} to {MAX_CP})"),
            ));
        }
        Some(Reported::Mate(n)) if n == 0 || !(-MAX_MATE..=MAX_MATE).contains(&n) => {
            return Err(AnalysisError::invalid(
                field("score.mate"),
                format!("{n} is out of range (1 to {MAX_MATE}, or -1 to -{MAX_MATE})"),
            ));
        }
        Some(s) => s,
    };
    let Some(bound) = e.bound else {
        return Err(AnalysisError::invalid(
            field("bound"),
            "required: EXACT, LOWER or UPPER",
        ));
    };
    if e.best_move.is_empty() {
        return Err(AnalysisError::invalid(
            field("best_move"),
            "required: the position does not end the game",
        ));
    }
    let mv = pos
        .parse_move(&e.best_move, Notation::Uci, Locale::English)
        .map_err(|err| {
            AnalysisError::invalid(
                field("best_move"),
                format!(
                    "{} is not a legal move in UCI here: {err}",
                    arbiter_kit::error::quote(&e.best_move)
                ),
            )
        })?;
    Ok(PositionEval::searched(
        pos,
        Analysis {
            best: Some(pos.move_to_uci(mv)),
            ponder: None,
            lines: Vec::new(),
            score,
            bound,
            depth: 0,
            nodes: e.nodes,
            time_ms: 0,
        },
    ))
}

/// The game of a work item as a remote worker reads it: its start's variant, text (a BFEN in
/// bughouse) and rule options, and its moves in UCI (seat-prefixed in bughouse), replayed:
/// every move legal in turn.
///
/// # Errors
/// What cannot be read or played, in words.
pub fn game_of_item(
    variant: arbiter_core::Variant,
    text: &str,
    rules: &arbiter_core::RuleOptions,
    moves: &[String],
) -> Result<Game, String> {
    let rules: Vec<String> = rules
        .0
        .iter()
        .flat_map(|(name, value)| [name.clone(), value.clone()])
        .collect();
    let mut fields = vec![
        variant.name().to_owned(),
        text.to_owned(),
        super::record::pack(&rules),
    ];
    fields.extend(moves.iter().cloned());
    let item = format!(
        "{}{}",
        super::record::ITEM_TAG,
        super::record::pack(&fields)
    );
    super::record::decode_item(item.as_bytes())
}

/// The moves of `game` as a work item gives them: UCI, prefixed in bughouse by the seat's
/// letter (`Ae2e4`, `bP@f6`).
pub fn item_moves(game: &Game) -> Vec<String> {
    let item = super::record::encode_item(game);
    let body = item
        .strip_prefix(super::record::ITEM_TAG)
        .unwrap_or_default();
    super::record::unpack(body)
        .map(|f| f.iter().skip(3).map(|s| (*s).to_owned()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::GameSpec;
    use arbiter_core::{GameState, Variant};
    use arbiter_engine::Limits;

    fn spec(moves: &[&str]) -> JobSpec {
        let start = AnyPosition::start(Variant::Chess).unwrap();
        let mut state = GameState::new(start.clone());
        let moves = moves
            .iter()
            .map(|m| state.play_text(m, Notation::Auto, Locale::English).unwrap())
            .collect();
        JobSpec {
            games: vec![Game::Line(GameSpec { start, moves })],
            limits: Limits::depth(1),
            hash_mib: 1,
            engine: String::new(),
        }
    }

    fn eval(best: &str, cp: i32) -> RemoteEval {
        RemoteEval {
            score: Some(Reported::Cp(cp)),
            bound: Some(Bound::Exact),
            best_move: best.into(),
            nodes: 10,
        }
    }

    fn work(evals: Vec<RemoteEval>) -> WorkResult {
        WorkResult {
            lease_id: "ls-x".into(),
            evaluations: evals,
            engine_id: "Test 1".into(),
        }
    }

    #[test]
    fn good_results_are_reviewed_and_bad_ones_named() {
        // Fool's mate: the last position ends the game.
        let s = spec(&["f3", "e5", "g4", "Qh4#"]);
        let good = vec![
            eval("e2e4", 20),
            eval("e7e5", 30),
            eval("e2e4", -40),
            eval("d8h4", 500),
            RemoteEval::default(),
        ];
        let r = check(3, &s, &work(good.clone())).unwrap();
        assert_eq!(
            (r.index, r.engine.as_str(), r.plies.len()),
            (3, "Test 1", 4)
        );
        let err = |evals: Vec<RemoteEval>| check(0, &s, &work(evals)).unwrap_err().to_string();
        assert!(err(good[..4].to_vec()).starts_with("evaluations: 4 evaluations"));
        let mut bad = good.clone();
        bad[2].best_move = "e2e5".into();
        assert!(err(bad).starts_with("evaluations[2].best_move"));
        let mut bad = good.clone();
        bad[1].score = None;
        assert!(err(bad).starts_with("evaluations[1].score"));
        let mut bad = good.clone();
        bad[1].score = Some(Reported::Mate(0));
        assert!(err(bad).starts_with("evaluations[1].score.mate"));
        // The extremes of the wire's int32, whose absolute value does not fit.
        for cp in [100_001, -100_001, i32::MIN, i32::MAX] {
            let mut bad = good.clone();
            bad[0].score = Some(Reported::Cp(cp));
            assert!(err(bad).starts_with("evaluations[0].score.cp"), "{cp}");
        }
        for n in [i32::MIN, i32::MAX, -1001] {
            let mut bad = good.clone();
            bad[0].score = Some(Reported::Mate(n));
            assert!(err(bad).starts_with("evaluations[0].score.mate"), "{n}");
        }
        let mut bad = good.clone();
        bad[0].bound = None;
        assert!(err(bad).starts_with("evaluations[0].bound"));
        let mut bad = good.clone();
        bad[4].best_move = "e2e4".into();
        assert!(err(bad).starts_with("evaluations[4].best_move"));
        let mut w = work(good);
        w.engine_id = String::new();
        assert!(
            check(0, &s, &w)
                .unwrap_err()
                .to_string()
                .starts_with("engine_id")
        );
        w.engine_id = "x".repeat(129);
        assert!(check(0, &s, &w).is_err());
    }

    #[test]
    fn ids_have_their_forms() {
        let lease = new_lease_id().unwrap();
        assert!(lease.starts_with("ls-") && lease.len() == 35);
        let refusal = new_refusal_id().unwrap();
        assert!(refusal.starts_with("wr-"), "{refusal}");
        assert_eq!(refusal.split('-').count(), 3);
        let worker = WorkerId::key("0123456789ab");
        assert!(
            refusal_message(&worker, &refusal)
                .to_string()
                .contains(&format!("lift_work_refusal = \"{refusal}\""))
        );
        assert_eq!(
            item_moves(&spec(&["e4", "e5"]).games[0]),
            vec!["e2e4".to_owned(), "e7e5".to_owned()]
        );
    }
}
