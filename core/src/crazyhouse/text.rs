//! Crazyhouse FEN (`placement[reserve] turn castling ep half full`, `~` after promoted pieces,
//! as lichess and python-chess write it; the reserve as a ninth `/` field is accepted too) and
//! drop notation (`N@f3`, `@e4` for a pawn).

use super::{Crazyhouse, HouseRules, Reserves};
use crate::chess::Chess;
use crate::chess::fen::{Correction, Setup};
use crate::chess::san::role_from_letter;
use crate::position::Locale;
use crate::position_text::PositionTextError;
use crate::types::{Piece, Role, Square};
use std::fmt;

/// A reserve text or count is not acceptable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReserveError(pub String);

impl fmt::Display for ReserveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReserveError {}

impl Reserves {
    /// Reads a reserve (`QRBNPqrbnp`, any order; `-` or empty for none).
    pub fn parse(text: &str) -> Result<Reserves, ReserveError> {
        let mut r = Reserves::EMPTY;
        if text == "-" {
            return Ok(r);
        }
        for c in text.chars() {
            let piece = Piece::from_char(c)
                .filter(|p| p.role != Role::King)
                .ok_or_else(|| ReserveError(format!("reserve: invalid piece letter '{c}'")))?;
            let n = r.count(piece.color, piece.role);
            r.set(piece.color, piece.role, n + 1)
                .map_err(|e| ReserveError(format!("reserve: too many '{c}': {e}")))?;
        }
        Ok(r)
    }
}

fn syntax(field: &'static str, message: impl Into<String>) -> PositionTextError {
    PositionTextError::Syntax {
        field,
        message: message.into(),
    }
}

impl Crazyhouse {
    /// Parses and validates a crazyhouse FEN, for a game under `rules`. The counts of
    /// standard chess (16 pieces, 8 pawns) do not apply; kings, back-rank pawns, castling, en
    /// passant and the side not to move being in check are checked as in chess, and `~` may mark
    /// only pieces other than pawns and kings.
    pub fn from_fen(fen: &str, rules: HouseRules) -> Result<Crazyhouse, PositionTextError> {
        Crazyhouse::read(fen, rules, None)
    }

    /// [`Crazyhouse::from_fen`], read leniently: castling rights that do not fit the board and
    /// impossible en passant squares are dropped and reported (see
    /// [`Chess::from_setup_lenient`]).
    pub fn from_fen_lenient(
        fen: &str,
        rules: HouseRules,
    ) -> Result<(Crazyhouse, Vec<Correction>), PositionTextError> {
        let mut corrections = Vec::new();
        let pos = Crazyhouse::read(fen, rules, Some(&mut corrections))?;
        Ok((pos, corrections))
    }

    fn read(
        fen: &str,
        rules: HouseRules,
        corrections: Option<&mut Vec<Correction>>,
    ) -> Result<Crazyhouse, PositionTextError> {
        let fen = fen.trim();
        let (first, rest) = fen.split_once(char::is_whitespace).unwrap_or((fen, ""));
        let (placement, reserve) = if let Some(open) = first.find('[') {
            let inner = first[open + 1..]
                .strip_suffix(']')
                .ok_or_else(|| syntax("reserve", "reserve: expected ']' after the pieces"))?;
            (&first[..open], inner)
        } else if first.split('/').count() == 9 {
            first.rsplit_once('/').expect("nine fields")
        } else {
            (first, "")
        };
        let reserves = Reserves::parse(reserve).map_err(|e| syntax("reserve", e.0))?;
        let (setup, promoted) = Setup::parse_with_promoted(&format!("{placement} {rest}"))
            .map_err(PositionTextError::from)?;
        let chess =
            Chess::checked(setup, false, false, corrections).map_err(PositionTextError::from)?;
        let board = chess.board();
        let bad = promoted & (board.by_role(Role::Pawn) | board.by_role(Role::King));
        if let Some(sq) = bad.first() {
            return Err(PositionTextError::Illegal {
                field: "placement",
                message: format!("the piece on {sq} cannot be marked promoted ('~')"),
            });
        }
        Ok(Crazyhouse::from_parts(chess, promoted, reserves, rules))
    }
}

/// Writes the FEN: placement with `~`, the reserves in brackets, then the chess fields.
pub(super) fn write(pos: &Crazyhouse) -> String {
    let mut out = String::with_capacity(100);
    pos.chess.board().write_placement(pos.promoted, &mut out);
    out.push('[');
    out.push_str(&pos.reserves.to_fen());
    out.push(']');
    let chess_fen = Setup::from(pos.chess).to_string();
    let rest = chess_fen.split_once(' ').map_or("", |(_, r)| r);
    out.push(' ');
    out.push_str(rest);
    out
}

/// Reads a drop: `N@f3`, `n@f3`, `@e4` or `P@e4` for a pawn, Italian letters with the Italian
/// locale, with optional `+`/`#`/`!`/`?` suffixes.
pub fn parse_drop(text: &str, locale: Locale) -> Result<(Role, Square), String> {
    let body = text.trim().trim_end_matches(['+', '#', '!', '?']);
    let (piece, square) = body
        .split_once('@')
        .ok_or_else(|| "a drop is written like N@f3".to_owned())?;
    let role = match piece {
        "" => Role::Pawn,
        p if p.chars().count() == 1 => {
            let c = p.chars().next().expect("one char");
            if c.is_ascii_uppercase() {
                role_from_letter(c, locale).or_else(|| Role::from_char(c.to_ascii_lowercase()))
            } else {
                Role::from_char(c)
            }
            .ok_or_else(|| format!("'{c}' is not a piece letter"))?
        }
        _ => return Err(format!("'{piece}' is not a piece letter")),
    };
    let to = Square::parse(square).ok_or_else(|| format!("'{square}' is not a square"))?;
    Ok((role, to))
}
