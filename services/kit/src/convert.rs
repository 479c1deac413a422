//! Core types to and from `arbiter.common.v1`, shared by every service. No rules here: decoding
//! turns wire values into core values (or a field error), encoding the reverse.
//!
//! Every match over a core enum is exhaustive, so a new variant, end reason or draw claim in the
//! core fails to compile here instead of going out as `UNSPECIFIED`.

use crate::error::ApiError;
use arbiter_core::{
    AnyMove, AnyPosition, Color, DrawClaim, EndReason, Locale, Notation, Outcome, Position,
    RuleOptions, Variant,
};
use arbiter_proto::common::v1 as common;

/// The core variant for a wire enum value; `field` names it in errors.
pub fn variant(value: i32, field: &str) -> Result<Variant, ApiError> {
    let v = common::Variant::try_from(value)
        .map_err(|_| ApiError::invalid(field, format!("unknown variant value {value}")))?;
    Ok(match v {
        common::Variant::Unspecified => {
            return Err(ApiError::invalid(field, "variant is required"));
        }
        common::Variant::Chess => Variant::Chess,
        common::Variant::Crazyhouse => Variant::Crazyhouse,
        common::Variant::Bughouse => Variant::Bughouse,
        common::Variant::Glinski => Variant::Glinski,
        common::Variant::Byzantine => Variant::Byzantine,
        common::Variant::ByzantineCitadel => Variant::ByzantineCitadel,
        common::Variant::Chess960 => Variant::Chess960,
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
        Variant::Chess960 => common::Variant::Chess960,
    }) as i32
}

/// Rule options from the wire.
pub fn rule_options(rules: &[common::RuleOption]) -> RuleOptions {
    RuleOptions(
        rules
            .iter()
            .map(|o| (o.name.clone(), o.value.clone()))
            .collect(),
    )
}

/// Rule options to the wire.
pub fn rule_options_to_proto(options: RuleOptions) -> Vec<common::RuleOption> {
    options
        .0
        .into_iter()
        .map(|(name, value)| common::RuleOption { name, value })
        .collect()
}

/// A position of `variant` from its text (the start when empty) and rule options. Errors name
/// `{field}.text` or `{field}.rules`.
pub fn position_from_parts(
    v: Variant,
    text: &str,
    options: &RuleOptions,
    field: &str,
) -> Result<AnyPosition, ApiError> {
    let text = (!text.trim().is_empty()).then_some(text);
    AnyPosition::with_rules(v, text, options).map_err(|e| {
        let sub = if e.field() == "rules" {
            "rules"
        } else {
            "text"
        };
        ApiError::invalid(format!("{field}.{sub}"), e.to_string())
    })
}

/// Decodes a position; `field` is its path in the request (`position`, `start`).
pub fn position(p: Option<&common::Position>, field: &str) -> Result<AnyPosition, ApiError> {
    let p = p.ok_or_else(|| ApiError::invalid(field, "position is required"))?;
    let v = variant(p.variant, &format!("{field}.variant"))?;
    position_from_parts(v, &p.text, &rule_options(&p.rules), field)
}

/// Encodes a position.
pub fn position_to_proto(p: &AnyPosition) -> common::Position {
    common::Position {
        variant: variant_to_proto(p.variant()),
        text: p.to_text(),
        rules: rule_options_to_proto(p.rule_options()),
    }
}

/// A legal move of `pos` in both notations.
pub fn move_to_proto(pos: &AnyPosition, m: AnyMove, locale: Locale) -> common::Move {
    common::Move {
        uci: m.to_string(),
        san: pos.move_to_san(m, locale),
    }
}

/// The notation a request asks for (unknown values read as the default, UCI then SAN).
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

/// The wire value of an end reason.
pub fn end_reason_to_proto(reason: EndReason) -> common::EndReason {
    match reason {
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
        EndReason::Aborted => common::EndReason::Aborted,
        EndReason::IllegalMove => common::EndReason::IllegalMove,
    }
}

/// Encodes an outcome.
pub fn outcome_to_proto(o: Outcome) -> common::Outcome {
    common::Outcome {
        // An aborted game has no result.
        score: (o.reason != EndReason::Aborted).then(|| common::Score {
            white_quarters: u32::from(o.score.quarters(Color::White)),
            black_quarters: u32::from(o.score.quarters(Color::Black)),
            text: o.score.to_string(),
        }),
        reason: end_reason_to_proto(o.reason) as i32,
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

/// Decodes a draw claim; `field` names it in errors.
pub fn claim(value: i32, field: &str) -> Result<DrawClaim, ApiError> {
    match common::DrawClaim::try_from(value) {
        Ok(common::DrawClaim::ThreefoldRepetition) => Ok(DrawClaim::ThreefoldRepetition),
        Ok(common::DrawClaim::FiftyMoveRule) => Ok(DrawClaim::FiftyMoveRule),
        Ok(common::DrawClaim::Unspecified) => Err(ApiError::invalid(field, "claim is required")),
        Err(_) => Err(ApiError::invalid(
            field,
            format!("unknown draw claim value {value}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_round_trips() {
        for v in Variant::ALL {
            assert_eq!(variant(variant_to_proto(v), "v"), Ok(v));
        }
        assert!(variant(0, "v").is_err());
        assert!(variant(99, "v").is_err());
    }

    #[test]
    fn every_end_reason_has_a_wire_value() {
        for r in EndReason::ALL {
            assert_ne!(end_reason_to_proto(r), common::EndReason::Unspecified);
        }
    }

    #[test]
    fn position_errors_name_the_field() {
        let e = position_from_parts(Variant::Chess, "8/8 w", &RuleOptions::default(), "start")
            .unwrap_err();
        assert_eq!(e.field(), Some("start.text"));
        let options = RuleOptions(vec![("stalemate".into(), "maybe".into())]);
        let e = position_from_parts(Variant::Byzantine, "", &options, "start").unwrap_err();
        assert_eq!(e.field(), Some("start.rules"));
        for c in [DrawClaim::ThreefoldRepetition, DrawClaim::FiftyMoveRule] {
            assert_eq!(claim(claim_to_proto(c), "claim"), Ok(c));
        }
        assert!(claim(0, "claim").is_err());
    }
}
