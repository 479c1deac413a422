//! Values shared by live analysis and batch jobs, in the domain's terms: a start position as a
//! request gives it ([`StartInput`], checked by [`start_position`]), and a move in both
//! notations ([`MoveText`]).

use crate::error::AnalysisError;
use arbiter_core::{AnyMove, AnyPosition, Locale, Position, RuleOptions, Variant};
use arbiter_kit::convert::position_from_parts;

/// A start position as sent: its variant, its text (the variant's start when empty) and its
/// rule options.
#[derive(Clone, Debug, PartialEq)]
pub struct StartInput {
    /// The variant.
    pub variant: VariantInput,
    /// The position's text.
    pub text: String,
    /// Rule options.
    pub rules: RuleOptions,
}

/// A variant as sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VariantInput {
    /// A known variant.
    Known(Variant),
    /// None was given.
    Missing,
    /// A value this build does not know.
    Unknown(i32),
}

/// A move in both notations (SAN in English).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MoveText {
    /// UCI.
    pub uci: String,
    /// SAN.
    pub san: String,
}

impl MoveText {
    /// The legal move `m` of `pos` in both notations (SAN in `locale`).
    pub fn of(pos: &AnyPosition, m: AnyMove, locale: Locale) -> MoveText {
        MoveText {
            uci: m.to_string(),
            san: pos.move_to_san(m, locale),
        }
    }
}

/// A start position as sent (`field` names it in errors: `{field}.variant`, `{field}.text`,
/// `{field}.rules`), as every service reads a position: required, of a known variant, its
/// text and rules valid.
///
/// # Errors
/// `INVALID_ARGUMENT` naming the field.
pub fn start_position(p: Option<&StartInput>, field: &str) -> Result<AnyPosition, AnalysisError> {
    let p = p.ok_or_else(|| AnalysisError::invalid(field, "position is required"))?;
    let v = match p.variant {
        VariantInput::Known(v) => v,
        VariantInput::Missing => {
            return Err(AnalysisError::invalid(
                format!("{field}.variant"),
                "variant is required",
            ));
        }
        VariantInput::Unknown(value) => {
            return Err(AnalysisError::invalid(
                format!("{field}.variant"),
                format!("unknown variant value {value}"),
            ));
        }
    };
    Ok(position_from_parts(v, &p.text, &p.rules, field)?)
}
