//! The match service's domain metrics (every name and meaning: docs/operations.md):
//! `arbiter_match_moves_applied_total{variant}`, `arbiter_match_moves_refused_total{reason}`,
//! `arbiter_matches_created_total{variant}` and `arbiter_matches_ended_total{variant,reason}`.
//! Every label value is a fixed name: a variant's, an end reason's, a refusal's.

use crate::error::MatchError;
use crate::record::Record;
use arbiter_core::Variant;
use arbiter_kit::metrics::Resolved;

/// The moves counter of each variant (in [`Variant::ALL`]'s order), resolved once: a move is
/// the service's hottest path.
static APPLIED: Resolved<Vec<metrics::Counter>> = Resolved::new();

/// A move was applied (not a retry answered from memory) in a match of `variant`.
pub(crate) fn move_applied(variant: Variant) {
    let counters = APPLIED.get(|| {
        Variant::ALL
            .iter()
            .map(|v| metrics::counter!("arbiter_match_moves_applied_total", "variant" => v.name()))
            .collect()
    });
    if let Some(counters) = counters {
        counters[variant.index()].increment(1);
    }
}

/// The `reason` label of a refused move: the refusal's stable reason, or its kind.
pub(crate) fn refusal_reason(e: &MatchError) -> &'static str {
    match e {
        MatchError::Invalid { field: "move", .. } => "bad_move",
        MatchError::Invalid { .. } => "invalid",
        MatchError::NotFound(_) => "not_found",
        MatchError::AlreadyExists(_) => "already_exists",
        MatchError::RequestIdReused(_) => "request_id_reused",
        MatchError::Precondition { reason, .. } => reason,
        MatchError::Unauthenticated(_) => "unauthenticated",
        MatchError::PermissionDenied(_) => "permission_denied",
        MatchError::Exhausted { .. } => "exhausted",
        MatchError::Store(_) => "store",
    }
}

/// A move was refused with `e`.
pub(crate) fn move_refused(e: &MatchError) {
    metrics::counter!("arbiter_match_moves_refused_total", "reason" => refusal_reason(e))
        .increment(1);
}

/// A match of `variant` was created (not a retry of a creation).
pub(crate) fn created(variant: Variant) {
    metrics::counter!("arbiter_matches_created_total", "variant" => variant.name()).increment(1);
}

/// A change was applied that left `record` as it is: counted as the match's end if it is over
/// now (a change is never applied to a match that was over already).
pub(crate) fn changed(record: &Record) {
    if let Some(outcome) = &record.outcome {
        metrics::counter!(
            "arbiter_matches_ended_total",
            "variant" => record.variant.name(),
            "reason" => outcome.reason.name()
        )
        .increment(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_reasons_are_fixed_names() {
        let cases = [
            (
                MatchError::invalid("move", "e9 is off the board"),
                "bad_move",
            ),
            (MatchError::invalid("board", "no board C"), "invalid"),
            (MatchError::over(), "MATCH_OVER"),
            (MatchError::NotFound("m".into()), "not_found"),
        ];
        for (e, reason) in cases {
            assert_eq!(refusal_reason(&e), reason);
        }
    }
}
