//! Each RPC as a plain function from request to response: decode (via `arbiter_kit::convert`),
//! call `arbiter-core`, encode. Synchronous and free of gRPC plumbing, so they are tested
//! directly and the tonic handlers stay one line each.

use crate::config::Limits;
use arbiter_core::pgn::{PgnGame, PgnLimits, read_games_with};
use arbiter_core::{
    AnyPosition, EndReason, Game, GameError, GameState, IllegalReason, Locale, MoveError, Notation,
    PerftError, PerftLimits, Position,
};
use arbiter_kit::ApiError;
use arbiter_kit::convert::{
    claim_to_proto, locale, move_to_proto, notation, outcome_to_proto, position, position_to_proto,
};
use arbiter_proto::common::v1 as common;
use arbiter_proto::rules::v1 as rules;
use rules::validate_move_response::Result as Verdict;
use std::sync::atomic::{AtomicBool, Ordering};

/// Encodes why a move text is not a legal move.
pub fn illegal_to_proto(e: &MoveError) -> rules::IllegalMove {
    let (reason, candidates) = match e {
        MoveError::Syntax { .. } => (rules::IllegalReason::Unparseable, Vec::new()),
        MoveError::Ambiguous { candidates, .. } => {
            (rules::IllegalReason::Ambiguous, candidates.clone())
        }
        MoveError::Illegal { reason, .. } => (
            match reason {
                IllegalReason::NoPiece { .. } => rules::IllegalReason::NoPiece,
                IllegalReason::WrongSide { .. } => rules::IllegalReason::WrongSide,
                IllegalReason::CannotReach => rules::IllegalReason::CannotReach,
                IllegalReason::Blocked => rules::IllegalReason::Blocked,
                IllegalReason::LeavesKingInCheck => rules::IllegalReason::LeavesKingInCheck,
                IllegalReason::PromotionRequired => rules::IllegalReason::PromotionRequired,
                IllegalReason::BadPromotion => rules::IllegalReason::BadPromotion,
                IllegalReason::CastlingNotAllowed => rules::IllegalReason::CastlingNotAllowed,
                IllegalReason::NoMatchingMove => rules::IllegalReason::NoMatchingMove,
                IllegalReason::GameOver => rules::IllegalReason::GameOver,
                IllegalReason::NotInReserve { .. } => rules::IllegalReason::NotInReserve,
            },
            Vec::new(),
        ),
    };
    rules::IllegalMove {
        reason: reason as i32,
        message: e.to_string(),
        candidates,
    }
}

/// The answer of a CPU-heavy request whose caller went away or ran out of time.
fn stopped() -> ApiError {
    ApiError::DeadlineExceeded("stopped: the request was cancelled or its deadline passed".into())
}

/// ValidateMove: a verdict for one move.
pub fn validate_move(
    req: &rules::ValidateMoveRequest,
) -> Result<rules::ValidateMoveResponse, ApiError> {
    let pos = position(req.position.as_ref(), "position")?;
    let locale = locale(req.locale);
    // The core judges the move in the game as it stands: a finished game refuses every move.
    let state = GameState::new(pos);
    let verdict = match state.check_text(&req.r#move, notation(req.notation), locale) {
        Ok(m) => {
            let pos = state.position();
            let mut after = pos.clone();
            after.play_unchecked(m);
            let outcome = after.terminal();
            Verdict::Legal(rules::LegalMove {
                r#move: Some(move_to_proto(pos, m, locale)),
                position_after: Some(position_to_proto(&after)),
                check: after.is_check(),
                checkmate: outcome.is_some_and(|o| o.reason == EndReason::Checkmate),
                outcome: outcome.map(outcome_to_proto),
            })
        }
        Err(GameError::Move(e)) => Verdict::Illegal(illegal_to_proto(&e)),
        Err(GameError::GameOver(_) | GameError::NotClaimable(_)) => {
            Verdict::Illegal(illegal_to_proto(&MoveError::Illegal {
                input: req.r#move.clone(),
                reason: IllegalReason::GameOver,
            }))
        }
    };
    Ok(rules::ValidateMoveResponse {
        result: Some(verdict),
        request_id: req.request_id.clone(),
    })
}

/// ValidateMoveStream: like [`validate_move`], but a malformed request is answered in-band
/// (a stream message without its `request` is malformed on the field `request`).
pub fn validate_move_in_stream(
    req: &rules::ValidateMoveStreamRequest,
) -> rules::ValidateMoveStreamResponse {
    let answer = match &req.request {
        Some(req) => validate_move(req).map_err(|e| (e, req.request_id.clone())),
        None => Err((ApiError::invalid("request", "required"), String::new())),
    };
    let response = answer.unwrap_or_else(|(e, request_id)| rules::ValidateMoveResponse {
        result: Some(Verdict::Error(rules::RequestError {
            field: e.field().unwrap_or_default().to_owned(),
            message: e.description().to_owned(),
        })),
        request_id,
    });
    rules::ValidateMoveStreamResponse {
        response: Some(response),
    }
}

/// ReadPosition: the position in canonical form, read strictly or leniently (with the
/// corrections).
pub fn read_position(
    req: &rules::ReadPositionRequest,
) -> Result<rules::ReadPositionResponse, ApiError> {
    let (pos, corrections) = if req.lenient {
        let p = req
            .position
            .as_ref()
            .ok_or_else(|| ApiError::invalid("position", "position is required"))?;
        let variant = arbiter_kit::convert::variant(p.variant, "position.variant")?;
        let options = arbiter_kit::convert::rule_options(&p.rules);
        AnyPosition::with_rules_lenient(variant, &p.text, &options).map_err(|e| {
            let sub = if e.field() == "rules" {
                "rules"
            } else {
                "text"
            };
            ApiError::invalid(format!("position.{sub}"), e.to_string())
        })?
    } else {
        (position(req.position.as_ref(), "position")?, Vec::new())
    };
    let (shredder_fen, chess960_start) = match &pos {
        AnyPosition::Chess(c) => (
            c.to_shredder_fen(),
            c.is_chess960().then(|| c.chess960_number()).flatten(),
        ),
        _ => (String::new(), None),
    };
    Ok(rules::ReadPositionResponse {
        position: Some(position_to_proto(&pos)),
        corrections: corrections
            .iter()
            .map(|c| rules::PositionCorrection {
                field: c.field().to_owned(),
                message: c.to_string(),
            })
            .collect(),
        shredder_fen,
        chess960_start,
    })
}

/// ListLegalMoves.
pub fn list_legal_moves(
    req: &rules::ListLegalMovesRequest,
) -> Result<rules::ListLegalMovesResponse, ApiError> {
    let pos = position(req.position.as_ref(), "position")?;
    let locale = locale(req.locale);
    let mut moves: Vec<common::Move> = pos
        .legal_moves()
        .iter()
        .map(|&m| move_to_proto(&pos, m, locale))
        .collect();
    moves.sort_by(|a, b| a.uci.cmp(&b.uci));
    Ok(rules::ListLegalMovesResponse {
        moves,
        check: pos.is_check(),
    })
}

fn check_move_count(count: usize, limits: &Limits) -> Result<(), ApiError> {
    if count > limits.max_moves {
        return Err(ApiError::exhausted(
            "moves",
            format!(
                "{count} moves exceed the limit of {} per request",
                limits.max_moves
            ),
        ));
    }
    Ok(())
}

/// Replays `moves` from `start`; the error names `moves[i]`.
fn replay(
    start: AnyPosition,
    moves: &[String],
    notation: Notation,
    locale: Locale,
    limits: &Limits,
    mut each: impl FnMut(&AnyPosition, arbiter_core::AnyMove, &AnyPosition),
) -> Result<Game<AnyPosition>, ApiError> {
    check_move_count(moves.len(), limits)?;
    let mut game = Game::new(start);
    for (i, text) in moves.iter().enumerate() {
        let before = game.position().clone();
        let m = game
            .play_text(text, notation, locale)
            .map_err(|e| ApiError::invalid(format!("moves[{i}]"), e.to_string()))?;
        each(&before, m, game.position());
    }
    Ok(game)
}

fn status_of(game: &Game<AnyPosition>) -> rules::GameStatus {
    rules::GameStatus {
        outcome: game.outcome().map(outcome_to_proto),
        claimable_draws: game
            .claimable_draws()
            .into_iter()
            .map(claim_to_proto)
            .collect(),
        check: game.position().is_check(),
        repetition_count: game.repetition_count(),
        halfmove_clock: game.position().halfmove_clock(),
        summary: game.summary(),
    }
}

/// ApplyMoves.
pub fn apply_moves(
    req: &rules::ApplyMovesRequest,
    limits: &Limits,
) -> Result<rules::ApplyMovesResponse, ApiError> {
    let start = position(req.start.as_ref(), "start")?;
    let locale = locale(req.locale);
    let mut applied = Vec::with_capacity(req.moves.len());
    let game = replay(
        start,
        &req.moves,
        notation(req.notation),
        locale,
        limits,
        |before, m, after| {
            applied.push(rules::AppliedMove {
                r#move: Some(move_to_proto(before, m, locale)),
                position_after: if req.include_intermediate {
                    after.to_text()
                } else {
                    String::new()
                },
            });
        },
    )?;
    Ok(rules::ApplyMovesResponse {
        moves: applied,
        final_position: Some(position_to_proto(game.position())),
        status: Some(status_of(&game)),
    })
}

/// GetGameStatus.
pub fn game_status(
    req: &rules::GetGameStatusRequest,
    limits: &Limits,
) -> Result<rules::GetGameStatusResponse, ApiError> {
    let start = position(req.start.as_ref(), "start")?;
    let game = replay(
        start,
        &req.moves,
        notation(req.notation),
        locale(req.locale),
        limits,
        |_, _, _| {},
    )?;
    Ok(rules::GetGameStatusResponse {
        status: Some(status_of(&game)),
        position: Some(position_to_proto(game.position())),
    })
}

/// ConvertMove.
pub fn convert_move(
    req: &rules::ConvertMoveRequest,
) -> Result<rules::ConvertMoveResponse, ApiError> {
    let pos = position(req.position.as_ref(), "position")?;
    let m = pos
        .parse_move(
            &req.r#move,
            notation(req.notation),
            locale(req.input_locale),
        )
        .map_err(|e| ApiError::invalid("move", e.to_string()))?;
    Ok(rules::ConvertMoveResponse {
        r#move: Some(move_to_proto(&pos, m, locale(req.output_locale))),
    })
}

fn tags_to_proto(tags: &[(String, String)]) -> Vec<rules::Tag> {
    tags.iter()
        .map(|(name, value)| rules::Tag {
            name: name.clone(),
            value: value.clone(),
        })
        .collect()
}

/// ImportPgn.
pub fn import_pgn(
    req: &rules::ImportPgnRequest,
    limits: &Limits,
    stop: &AtomicBool,
) -> Result<rules::ImportPgnResponse, ApiError> {
    if req.pgn.len() > limits.max_pgn_bytes {
        return Err(ApiError::exhausted(
            "pgn",
            format!(
                "{} bytes exceed the limit of {} bytes",
                req.pgn.len(),
                limits.max_pgn_bytes
            ),
        ));
    }
    let read_limits = PgnLimits {
        max_plies_per_game: limits.max_moves,
        ..PgnLimits::default()
    };
    let mut games = read_games_with(&req.pgn, &read_limits).map_err(|e| match e.limit {
        Some(_) => ApiError::exhausted("pgn", e.to_string()),
        None => ApiError::invalid("pgn", e.to_string()),
    })?;
    let (read, write) = (locale(req.input_locale), locale(req.output_locale));
    let mut out = Vec::with_capacity(games.len());
    for (i, pgn) in games.iter_mut().enumerate() {
        if stop.load(Ordering::Relaxed) {
            return Err(stopped());
        }
        let game = pgn
            .validate(read, write)
            .map_err(|e| ApiError::invalid("pgn", format!("game {}: {e}", i + 1)))?;
        check_move_count(game.ply(), limits)?;
        let mut pos = game.start().clone();
        let mut moves = Vec::with_capacity(game.ply());
        for &m in game.moves() {
            moves.push(move_to_proto(&pos, m, write));
            pos.play_unchecked(m);
        }
        out.push(rules::PgnGame {
            tags: tags_to_proto(&pgn.tags),
            start: Some(position_to_proto(game.start())),
            moves,
            result: pgn.result.clone(),
            outcome: game.automatic_outcome().map(outcome_to_proto),
            normalized_pgn: pgn.to_string(),
        });
    }
    Ok(rules::ImportPgnResponse { games: out })
}

/// ExportPgn.
pub fn export_pgn(
    req: &rules::ExportPgnRequest,
    limits: &Limits,
) -> Result<rules::ExportPgnResponse, ApiError> {
    let start = position(req.start.as_ref(), "start")?;
    let locale = locale(req.locale);
    let game = replay(
        start,
        &req.moves,
        notation(req.notation),
        locale,
        limits,
        |_, _, _| {},
    )?;
    for (i, tag) in req.tags.iter().enumerate() {
        if tag.name.is_empty()
            || !tag
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(ApiError::invalid(
                format!("tags[{i}].name"),
                "a tag name is letters, digits and '_'",
            ));
        }
    }
    let tags = req
        .tags
        .iter()
        .map(|t| (t.name.clone(), t.value.clone()))
        .collect();
    Ok(rules::ExportPgnResponse {
        pgn: PgnGame::from_game(&game, tags, locale).to_string(),
    })
}

/// Perft, bounded by the request's and the server's node budget, and stopped when `stop` is
/// raised. CPU-heavy: the handler runs it in the process's CPU pool.
pub fn perft(
    req: &rules::PerftRequest,
    limits: &Limits,
    stop: &AtomicBool,
) -> Result<rules::PerftResponse, ApiError> {
    let pos = position(req.position.as_ref(), "position")?;
    if req.depth > limits.max_perft_depth {
        return Err(ApiError::invalid(
            "depth",
            format!(
                "depth {} is over the maximum of {}",
                req.depth, limits.max_perft_depth
            ),
        ));
    }
    let budget = match req.node_budget {
        0 => limits.max_perft_nodes,
        n => n.min(limits.max_perft_nodes),
    };
    let limits = PerftLimits { budget, stop };
    let refused = |e: PerftError| match e {
        PerftError::BudgetExceeded { .. } => ApiError::exhausted("node_budget", e.to_string()),
        PerftError::Stopped => stopped(),
    };
    if req.divide {
        let split = pos
            .perft_divide_bounded(req.depth, limits)
            .map_err(refused)?;
        Ok(rules::PerftResponse {
            nodes: split.total,
            divide: split
                .moves
                .into_iter()
                .map(|(uci, nodes)| rules::PerftDivide { uci, nodes })
                .collect(),
        })
    } else {
        Ok(rules::PerftResponse {
            nodes: pos.perft_bounded(req.depth, limits).map_err(refused)?,
            divide: Vec::new(),
        })
    }
}

/// RenderBoard: the position after `moves` (or `position` itself) as an SVG picture, the last
/// move tinted (the last of `moves`, or `last_move` read by its form alone).
pub fn render_board(
    req: &rules::RenderBoardRequest,
    limits: &Limits,
) -> Result<rules::RenderBoardResponse, ApiError> {
    let start = position(req.position.as_ref(), "position")?;
    let (pos, svg) = if req.moves.is_empty() {
        let svg = if req.last_move.is_empty() {
            start.render_svg(None)
        } else {
            start
                .render_svg_marking(&req.last_move)
                .map_err(|e| ApiError::invalid("last_move", e.to_string()))?
        };
        (start, svg)
    } else {
        if !req.last_move.is_empty() {
            return Err(ApiError::invalid(
                "last_move",
                "give either moves (the last one is marked) or last_move, not both",
            ));
        }
        let mut last = None;
        let game = replay(
            start,
            &req.moves,
            notation(req.notation),
            locale(req.locale),
            limits,
            |_, m, _| last = Some(m),
        )?;
        let pos = game.position().clone();
        let svg = pos.render_svg(last);
        (pos, svg)
    };
    Ok(rules::RenderBoardResponse {
        svg,
        check: pos.is_check(),
        position: Some(position_to_proto(&pos)),
    })
}
