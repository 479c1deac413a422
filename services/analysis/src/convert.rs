//! The domain's values to and from `arbiter.analysis.v1` messages: the one place, beside the
//! handlers of [`crate::service`] that use it, where the service's protobuf types meet its
//! domain (batch jobs, live analysis). [`crate::legacy`] alone also reads protobuf: the
//! values the previous version stored.

// The batch side's types from their own module (not through `batch`, whose storage reads old
// items through this one).
use crate::batch::types::{
    GameResult, GamesInput, JobState, JobStatus, ListedGame, PlyResult, Submission, Submitted,
    Verdict,
};
use crate::domain::{MoveText, StartInput, VariantInput};
use crate::live::{LiveInfo, LiveLine, LiveRequest, LiveResult, StopReason};
use arbiter_engine::Bound;
use arbiter_engine::score::Reported;
use arbiter_kit::convert::{locale, notation, outcome_to_proto, rule_options, variant};
use arbiter_proto::analysis::v1 as pb;
use arbiter_proto::common::v1 as common;
use sha2::{Digest, Sha256};

/// A submission as the batch side reads it, with the fingerprint of its content: SHA-256 of
/// the request's encoding without its id (a specified hash, so processes of different builds
/// sharing jobs agree on it).
pub fn submission(req: &pb::SubmitJobRequest) -> Submission {
    let mut content = req.clone();
    content.request_id.clear();
    let digest = Sha256::digest(prost::Message::encode_to_vec(&content));
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    let ply = req.per_ply.unwrap_or_default();
    Submission {
        request_id: req.request_id.clone(),
        games: req.games.as_ref().map(|g| match g {
            pb::submit_job_request::Games::Pgn(text) => GamesInput::Pgn(text.clone()),
            pb::submit_job_request::Games::MoveLists(list) => {
                GamesInput::MoveLists(list.games.iter().map(listed_game).collect())
            }
            pb::submit_job_request::Games::Bpgn(text) => GamesInput::Bpgn(text.clone()),
        }),
        per_ply_depth: ply.depth,
        per_ply_nodes: ply.nodes,
        fingerprint: u64::from_be_bytes(first),
    }
}

/// A listed game as sent (its start and moves unchecked).
pub fn listed_game(g: &pb::GameMoves) -> ListedGame {
    ListedGame {
        start: g.start.as_ref().map(start_input),
        moves: g.moves.clone(),
        notation: notation(g.notation),
    }
}

fn start_input(p: &common::Position) -> StartInput {
    StartInput {
        variant: if p.variant == common::Variant::Unspecified as i32 {
            VariantInput::Missing
        } else {
            variant(p.variant, "").map_or(VariantInput::Unknown(p.variant), VariantInput::Known)
        },
        text: p.text.clone(),
        rules: rule_options(&p.rules),
    }
}

/// Encodes an engine score.
pub fn score_to_proto(r: Reported) -> pb::EngineScore {
    pb::EngineScore {
        value: Some(match r {
            Reported::Cp(cp) => pb::engine_score::Value::Cp(cp),
            Reported::Mate(n) => pb::engine_score::Value::Mate(n),
        }),
    }
}

impl From<JobState> for pb::JobState {
    fn from(s: JobState) -> pb::JobState {
        match s {
            JobState::Queued => pb::JobState::Queued,
            JobState::Running => pb::JobState::Running,
            JobState::Done => pb::JobState::Done,
            JobState::Cancelled => pb::JobState::Cancelled,
        }
    }
}

impl From<JobStatus> for pb::JobStatus {
    fn from(s: JobStatus) -> pb::JobStatus {
        pb::JobStatus {
            job_id: s.job_id,
            state: pb::JobState::from(s.state) as i32,
            games: s.games,
            games_done: s.games_done,
            positions: s.positions,
            positions_done: s.positions_done,
            expires_at_unix_ms: s.expires_at_unix_ms,
        }
    }
}

impl From<Submitted> for pb::SubmitJobResponse {
    fn from(s: Submitted) -> pb::SubmitJobResponse {
        pb::SubmitJobResponse {
            status: Some(s.status.into()),
            duplicate: s.duplicate,
        }
    }
}

/// A move in both notations.
pub fn move_to_proto(m: MoveText) -> common::Move {
    common::Move {
        uci: m.uci,
        san: m.san,
    }
}

impl From<Verdict> for pb::Judgement {
    fn from(v: Verdict) -> pb::Judgement {
        match v {
            Verdict::Unjudged => pb::Judgement::Unspecified,
            Verdict::Good => pb::Judgement::Good,
            Verdict::Inaccuracy => pb::Judgement::Inaccuracy,
            Verdict::Mistake => pb::Judgement::Mistake,
            Verdict::Blunder => pb::Judgement::Blunder,
        }
    }
}

impl From<PlyResult> for pb::PlyResult {
    fn from(p: PlyResult) -> pb::PlyResult {
        pb::PlyResult {
            r#move: Some(move_to_proto(p.played)),
            eval_after: p.eval_after.map(score_to_proto),
            judgement: pb::Judgement::from(p.verdict) as i32,
            better: p.better.map(move_to_proto),
            board: p.board,
        }
    }
}

impl From<GameResult> for pb::GameResult {
    fn from(r: GameResult) -> pb::GameResult {
        let [wi, wm, wb] = r.white_counts;
        let [bi, bm, bb] = r.black_counts;
        pb::GameResult {
            index: r.index,
            start_eval: r.start_eval.map(score_to_proto),
            plies: r.plies.into_iter().map(Into::into).collect(),
            white_accuracy: r.white_accuracy,
            black_accuracy: r.black_accuracy,
            white_inaccuracies: wi,
            white_mistakes: wm,
            white_blunders: wb,
            black_inaccuracies: bi,
            black_mistakes: bm,
            black_blunders: bb,
            error: r.error,
            engine: r.engine,
        }
    }
}

/// The fields the two live requests share.
fn live_request(
    position: Option<&common::Position>,
    moves: &[String],
    notation_value: i32,
    locale_value: i32,
    limits: Option<&pb::SearchLimits>,
    multipv: u32,
    engine: &str,
) -> LiveRequest {
    let limits = limits.copied().unwrap_or_default();
    LiveRequest {
        position: position.map(start_input),
        moves: moves.to_vec(),
        notation: notation(notation_value),
        locale: locale(locale_value),
        depth: limits.depth,
        nodes: limits.nodes,
        movetime_ms: limits.movetime_ms,
        multipv,
        engine: engine.to_owned(),
    }
}

/// An `Analyze` request as live analysis reads it.
pub fn analyze_request(r: &pb::AnalyzeRequest) -> LiveRequest {
    live_request(
        r.position.as_ref(),
        &r.moves,
        r.notation,
        r.locale,
        r.limits.as_ref(),
        r.multipv,
        &r.engine,
    )
}

/// A `BestMove` request as live analysis reads it: one line.
pub fn best_move_request(r: &pb::BestMoveRequest) -> LiveRequest {
    live_request(
        r.position.as_ref(),
        &r.moves,
        r.notation,
        r.locale,
        r.limits.as_ref(),
        1,
        &r.engine,
    )
}

/// Encodes a score's bound.
pub fn bound_to_proto(b: Bound) -> pb::ScoreBound {
    match b {
        Bound::Exact => pb::ScoreBound::Exact,
        Bound::Lower => pb::ScoreBound::Lower,
        Bound::Upper => pb::ScoreBound::Upper,
    }
}

impl From<StopReason> for pb::StopReason {
    fn from(r: StopReason) -> pb::StopReason {
        match r {
            StopReason::Limit => pb::StopReason::Limit,
            StopReason::ServerCap => pb::StopReason::ServerCap,
            StopReason::NoMove => pb::StopReason::NoMove,
            StopReason::Shutdown => pb::StopReason::Shutdown,
        }
    }
}

fn line_to_proto(pv: Vec<MoveText>) -> Vec<common::Move> {
    pv.into_iter().map(move_to_proto).collect()
}

impl From<LiveInfo> for pb::AnalysisInfo {
    fn from(i: LiveInfo) -> pb::AnalysisInfo {
        pb::AnalysisInfo {
            depth: i.depth,
            seldepth: i.seldepth,
            multipv: i.multipv,
            score: Some(score_to_proto(i.score)),
            nodes: i.nodes,
            nps: i.nps,
            hashfull: i.hashfull,
            time_ms: i.time_ms,
            pv: line_to_proto(i.pv),
        }
    }
}

impl From<LiveLine> for pb::AnalysisLine {
    fn from(l: LiveLine) -> pb::AnalysisLine {
        pb::AnalysisLine {
            score: Some(score_to_proto(l.score)),
            pv: line_to_proto(l.pv),
            bound: bound_to_proto(l.bound) as i32,
        }
    }
}

impl From<LiveResult> for pb::AnalysisResult {
    fn from(r: LiveResult) -> pb::AnalysisResult {
        pb::AnalysisResult {
            best_move: r.best_move.map(move_to_proto),
            ponder: r.ponder.map(move_to_proto),
            score: Some(score_to_proto(r.score)),
            lines: r.lines.into_iter().map(Into::into).collect(),
            depth: r.depth,
            nodes: r.nodes,
            time_ms: r.time_ms,
            outcome: r.outcome.map(outcome_to_proto),
            stop_reason: pb::StopReason::from(r.stop_reason) as i32,
            bound: bound_to_proto(r.bound) as i32,
            engine: r.engine,
        }
    }
}

impl From<crate::engines::EngineDescription> for pb::EngineInfo {
    fn from(e: crate::engines::EngineDescription) -> pb::EngineInfo {
        pb::EngineInfo {
            name: e.name,
            id: e.id,
            variants: e
                .variants
                .into_iter()
                .map(arbiter_kit::convert::variant_to_proto)
                .collect(),
            default_for: e
                .default_for
                .into_iter()
                .map(arbiter_kit::convert::variant_to_proto)
                .collect(),
        }
    }
}

/// A leased game as `AcquireWork` hands it to a remote worker.
pub fn work_item(w: crate::batch::remote::WorkItem) -> pb::WorkItem {
    use crate::batch::Game;
    let start = match &w.game {
        Game::Line(g) => arbiter_kit::convert::position_to_proto(&g.start),
        Game::Bughouse(b) => common::Position {
            variant: arbiter_kit::convert::variant_to_proto(arbiter_core::Variant::Bughouse),
            text: b.start.to_bfen(),
            rules: Vec::new(),
        },
    };
    pb::WorkItem {
        lease_id: w.lease_id,
        lease_expires_at_unix_ms: w.expires_at_unix_ms,
        start: Some(start),
        moves: crate::batch::remote::item_moves(&w.game),
        per_ply: Some(pb::PlyLimit {
            depth: w.spec.limits.depth.unwrap_or(0),
            nodes: w.spec.limits.nodes.unwrap_or(0),
        }),
        engine: if w.spec.engine.is_empty() {
            "arbiter".to_owned()
        } else {
            w.spec.engine.clone()
        },
        positions: u32::try_from(w.game.positions()).unwrap_or(u32::MAX),
        hash_mib: u32::try_from(w.spec.hash_mib).unwrap_or(u32::MAX),
    }
}

/// A remote worker's submission as the batch side reads it.
pub fn work_result(req: &pb::SubmitWorkRequest) -> crate::batch::remote::WorkResult {
    crate::batch::remote::WorkResult {
        lease_id: req.lease_id.clone(),
        evaluations: req
            .evaluations
            .iter()
            .map(|e| crate::batch::remote::RemoteEval {
                score: e.score.and_then(|s| match s.value {
                    Some(pb::engine_score::Value::Cp(cp)) => Some(Reported::Cp(cp)),
                    Some(pb::engine_score::Value::Mate(n)) => Some(Reported::Mate(n)),
                    None => None,
                }),
                bound: match pb::ScoreBound::try_from(e.bound) {
                    Ok(pb::ScoreBound::Exact) => Some(Bound::Exact),
                    Ok(pb::ScoreBound::Lower) => Some(Bound::Lower),
                    Ok(pb::ScoreBound::Upper) => Some(Bound::Upper),
                    Ok(pb::ScoreBound::Unspecified) | Err(_) => None,
                },
                best_move: e.best_move.clone(),
                nodes: e.nodes,
            })
            .collect(),
        engine_id: req.engine_id.clone(),
    }
}

/// A position's evaluation as a remote worker submits it (`SubmitWork`): a position that ends
/// the game has no score and no move.
pub fn position_evaluation(e: &arbiter_engine::review::PositionEval) -> pb::PositionEvaluation {
    pb::PositionEvaluation {
        score: e.reported.map(|(r, _)| score_to_proto(r)),
        bound: e
            .reported
            .map_or(pb::ScoreBound::Unspecified, |(_, b)| bound_to_proto(b)) as i32,
        best_move: e.best.clone().unwrap_or_default(),
        nodes: e.nodes,
    }
}

/// The game of a work item (`AcquireWork`), replayed (see
/// [`crate::batch::remote::game_of_item`]).
///
/// # Errors
/// A start or a move that cannot be read or played, in words.
pub fn work_item_game(w: &pb::WorkItem) -> Result<crate::batch::Game, String> {
    let start = w.start.clone().unwrap_or_default();
    let v = variant(start.variant, "start.variant").map_err(|e| e.to_string())?;
    crate::batch::remote::game_of_item(v, &start.text, &rule_options(&start.rules), &w.moves)
}
