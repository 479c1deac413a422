//! Checks of request fields, before anything reads them.

use crate::error::MatchError;

/// Longest player id, in bytes.
pub const MAX_PLAYER_BYTES: usize = 128;
/// Longest time control reference, in bytes.
pub const MAX_TIME_CONTROL_BYTES: usize = 64;
/// Longest match id, in bytes.
pub const MAX_MATCH_ID_BYTES: usize = 64;
/// Longest creation request id, in bytes.
pub const MAX_REQUEST_ID_BYTES: usize = 128;
/// Longest move text, in bytes (checked on the text as sent, before anything else).
pub const MAX_MOVE_BYTES: usize = 32;
/// Longest start position string, in bytes (a BFEN of two crowded boards is under 200).
pub const MAX_START_BYTES: usize = 512;

pub(super) fn printable(text: &str) -> bool {
    !text.chars().any(char::is_control)
}

/// Checks a move's text exactly as sent, before anything else reads it: 1 to
/// [`MAX_MOVE_BYTES`] bytes, without whitespace or control characters. Nothing is trimmed, so
/// padding never turns a malformed text into a move.
pub(super) fn check_move_text(text: &str) -> Result<(), MatchError> {
    if text.is_empty() {
        return Err(MatchError::invalid("move", "move is required"));
    }
    if text.len() > MAX_MOVE_BYTES {
        return Err(MatchError::invalid(
            "move",
            format!("at most {MAX_MOVE_BYTES} bytes (found {})", text.len()),
        ));
    }
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(MatchError::invalid(
            "move",
            "whitespace and control characters are not allowed",
        ));
    }
    Ok(())
}

pub(super) fn check_text(field: &'static str, text: &str, max: usize) -> Result<(), MatchError> {
    if text.len() > max {
        return Err(MatchError::invalid(
            field,
            format!("at most {max} bytes (found {})", text.len()),
        ));
    }
    if !printable(text) {
        return Err(MatchError::invalid(
            field,
            "control characters are not allowed",
        ));
    }
    Ok(())
}

/// Checks an optional request id (an idempotency key).
pub(super) fn check_request_id(request_id: Option<&str>) -> Result<(), MatchError> {
    let Some(r) = request_id else { return Ok(()) };
    if r.is_empty() || r.len() > MAX_REQUEST_ID_BYTES || !r.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(MatchError::invalid(
            "request_id",
            format!("use 1 to {MAX_REQUEST_ID_BYTES} bytes of printable ASCII without spaces"),
        ));
    }
    Ok(())
}

/// Checks a match id named by a client.
pub fn check_match_id(id: &str) -> Result<(), MatchError> {
    if id.is_empty() {
        return Err(MatchError::invalid("match_id", "match_id is required"));
    }
    if id.len() > MAX_MATCH_ID_BYTES
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(MatchError::invalid(
            "match_id",
            format!("use at most {MAX_MATCH_ID_BYTES} letters, digits, '-' or '_'"),
        ));
    }
    Ok(())
}
