//! Decoding requests into core types and encoding core results into messages. No rules here.

use crate::error::RulesError;
use arbiter_core::{
    AnyPosition, DrawClaim, EndReason, IllegalReason, Locale, MoveError, Notation, Outcome,
    Position, RuleOptions, Variant,
};
use arbiter_proto::common::v1 as common;
use arbiter_proto::rules::v1 as rules;

/// The core variant for a wire enum value.
pub fn variant(value: i32, field: &str) -> Result<Variant, RulesError> {
    let v = common::Variant::try_from(value)
        .map_err(|_| RulesError::invalid(field, format!("unknown variant value {value}")))?;
    Ok(match v {
        common::Variant::Unspecified => {
            return Err(RulesError::invalid(field, "variant is required"));
        }
        common::Variant::Chess => Variant::Chess,
        common::Variant::Crazyhouse => Variant::Crazyhouse,
        common::Variant::Bughouse => Variant::Bughouse,
        common::Variant::Glinski => Variant::Glinski,
        common::Variant::Byzantine => Variant::Byzantine,
        common::Variant::ByzantineCitadel => Variant::ByzantineCitadel,
    })
}

/// The wire enum value of a core variant.
pub fn variant_to_proto(v: Variant) -> i32 {
    (match v {
        Variant::Chess => common::Variant::Chess,
        Variant::Crazyhouse => common::Variant::Crazyhouse,
        Variant::Bughouse => common::Variant::Bughouse,
        Variant::Glinski => common::Variant::Glinski,
        Variant::Byzantine => common::Variant::Byzantine,
        Variant::ByzantineCitadel => common::Variant::ByzantineCitadel,
        _ => common::Variant::Unspecified,
    }) as i32
}

/// Decodes a position; `field` is its path in the request (`position`, `start`).
pub fn position(p: Option<&common::Position>, field: &str) -> Result<AnyPosition, RulesError> {
    let p = p.ok_or_else(|| RulesError::invalid(field, "position is required"))?;
    let v = variant(p.variant, &format!("{field}.variant"))?;
    let text = (!p.text.trim().is_empty()).then_some(p.text.as_str());
    let options = RuleOptions(
        p.rules
            .iter()
            .map(|o| (o.name.clone(), o.value.clone()))
            .collect(),
    );
    AnyPosition::with_rules(v, text, &options).map_err(|e| {
        let sub = match e.field() {
            "variant" => "variant",
            "rules" => "rules",
            _ => "text",
        };
        RulesError::invalid(format!("{field}.{sub}"), e.to_string())
    })
}

/// Encodes a position.
pub fn position_to_proto(p: &AnyPosition) -> common::Position {
    common::Position {
        variant: variant_to_proto(p.variant()),
        text: p.to_text(),
        rules: p
            .rule_options()
            .0
            .into_iter()
            .map(|(name, value)| common::RuleOption { name, value })
            .collect(),
    }
}

/// The notation a request asks for.
pub fn notation(value: i32) -> Notation {
    match common::MoveNotation::try_from(value) {
        Ok(common::MoveNotation::Uci) => Notation::Uci,
        Ok(common::MoveNotation::San) => Notation::San,
        _ => Notation::Auto,
    }
}

/// The locale a request asks for (unknown values read as English).
pub fn locale(value: i32) -> Locale {
    match common::Locale::try_from(value) {
        Ok(common::Locale::Italian) => Locale::Italian,
        _ => Locale::English,
    }
}

/// Encodes an outcome.
pub fn outcome_to_proto(o: Outcome) -> common::Outcome {
    use arbiter_core::Color;
    let reason = match o.reason {
        EndReason::Checkmate => common::EndReason::Checkmate,
        EndReason::Stalemate => common::EndReason::Stalemate,
        EndReason::DeadPosition => common::EndReason::DeadPosition,
        EndReason::FivefoldRepetition => common::EndReason::FivefoldRepetition,
        EndReason::SeventyFiveMoveRule => common::EndReason::SeventyFiveMoveRule,
        EndReason::ThreefoldRepetition => common::EndReason::ThreefoldRepetition,
        EndReason::FiftyMoveRule => common::EndReason::FiftyMoveRule,
        EndReason::Agreement => common::EndReason::Agreement,
        EndReason::Resignation => common::EndReason::Resignation,
        EndReason::Timeout => common::EndReason::Timeout,
        EndReason::TimeoutVsInsufficientMaterial => {
            common::EndReason::TimeoutVsInsufficientMaterial
        }
        EndReason::BareKing => common::EndReason::BareKing,
        EndReason::CitadelEntry => common::EndReason::CitadelEntry,
        _ => common::EndReason::Unspecified,
    };
    common::Outcome {
        score: Some(common::Score {
            white_quarters: u32::from(o.score.quarters(Color::White)),
            black_quarters: u32::from(o.score.quarters(Color::Black)),
            text: o.score.to_string(),
        }),
        reason: reason as i32,
        reason_name: o.reason.name().to_owned(),
        automatic: o.reason.is_automatic(),
    }
}

/// Encodes a draw claim.
pub fn claim_to_proto(c: DrawClaim) -> i32 {
    (match c {
        DrawClaim::ThreefoldRepetition => common::DrawClaim::ThreefoldRepetition,
        DrawClaim::FiftyMoveRule => common::DrawClaim::FiftyMoveRule,
    }) as i32
}

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
                _ => rules::IllegalReason::Unspecified,
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
