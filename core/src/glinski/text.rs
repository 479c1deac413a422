//! The Glinski position string and move notations.
//!
//! Position string (as used by hexchess.club and the `hexchess` crate): eleven rank fields from
//! rank 11 down to rank 1, each listing its cells from file `a` toward `l` (ranks 1–6 have 11
//! cells, 7 has 9, 8 has 7, 9 has 5, 10 has 3, 11 has 1), runs of empty cells as decimal
//! numbers; then side to move, en passant cell or `-`, halfmove clock and fullmove number (the
//! last three may be left out: `-`, 0 and 1).
//!
//! Moves: the coordinate form `f10f11q` and the record form `Qe1-c3`, `e4xf5`, `f10-f11=Q+`.

use super::geometry::{
    Cell, FILE_LENGTH, PAWN_CAPTURES, PAWN_START, PAWN_STEP, PROMOTION, cell_name, from_file_rank,
    parse_cell, side,
};
use super::{Glinski, KEYS, bit};
use crate::chess::san::role_from_letter;
use crate::position::{Locale, MAX_COUNTER, parse_counter};
use crate::position_text::PositionTextError;
use crate::types::{Color, Piece, Role};

fn syntax(field: &'static str, message: impl Into<String>) -> PositionTextError {
    PositionTextError::syntax(field, message)
}

fn illegal(field: &'static str, message: impl Into<String>) -> PositionTextError {
    PositionTextError::illegal(field, message)
}

/// The files (0..11) that have a cell on `rank`, in order from `a`.
fn files_on_rank(rank: u8) -> impl Iterator<Item = u8> {
    (0..11u8).filter(move |&f| FILE_LENGTH[f as usize] >= rank)
}

fn read_rank(pos: &mut Glinski, rank: u8, field: &str) -> Result<(), PositionTextError> {
    let files: Vec<u8> = files_on_rank(rank).collect();
    let width = files.len();
    let bytes = field.as_bytes();
    let (mut i, mut cell) = (0, 0);
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            // Compare as text first so that a huge number cannot overflow.
            let run = if i - start > 2 {
                usize::MAX
            } else {
                field[start..i].parse().expect("one or two digits")
            };
            if run == 0 {
                return Err(syntax(
                    "placement",
                    format!("rank {rank}: empty run of length 0"),
                ));
            }
            if run > width - cell {
                return Err(syntax(
                    "placement",
                    format!("rank {rank} has {width} cells, '{field}' describes more"),
                ));
            }
            cell += run;
        } else {
            let c = field[i..].chars().next().expect("in bounds");
            let piece = Piece::from_char(c).ok_or_else(|| {
                syntax(
                    "placement",
                    format!("rank {rank}: invalid piece letter '{c}'"),
                )
            })?;
            if cell == width {
                return Err(syntax(
                    "placement",
                    format!("rank {rank} has {width} cells, '{field}' describes more"),
                ));
            }
            let at = from_file_rank(files[cell], rank).expect("cell on this rank");
            pos.toggle(piece.color, piece.role, at);
            cell += 1;
            i += c.len_utf8();
        }
    }
    if cell != width {
        return Err(syntax(
            "placement",
            format!("rank {rank} has {width} cells, '{field}' describes {cell}"),
        ));
    }
    Ok(())
}

impl Glinski {
    /// Reads a position string and checks that the position can occur: one king a side, at
    /// most 9 pawns and 18 pieces a side with no more promoted pieces than missing pawns, no
    /// pawn on its own last cell, the side not to move not in check, and an en passant cell
    /// that follows a double step (dropped when no pawn can capture there).
    pub fn from_text(text: &str) -> Result<Glinski, PositionTextError> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        if !(2..=5).contains(&fields.len()) {
            return Err(syntax(
                "position",
                format!(
                    "expected placement, side to move, en passant cell, halfmove clock and \
                     fullmove number (2 to 5 fields), found {} fields",
                    fields.len()
                ),
            ));
        }
        let mut pos = Glinski::empty();
        let ranks: Vec<&str> = fields[0].split('/').collect();
        if ranks.len() != 11 {
            return Err(syntax(
                "placement",
                format!(
                    "expected 11 rank fields separated by '/' (rank 11 first), found {}",
                    ranks.len()
                ),
            ));
        }
        for (i, field) in ranks.iter().enumerate() {
            read_rank(&mut pos, 11 - i as u8, field)?;
        }
        pos.turn = match fields[1] {
            "w" => Color::White,
            "b" => Color::Black,
            other => {
                return Err(syntax(
                    "turn",
                    format!("side to move: expected 'w' or 'b', found '{other}'"),
                ));
            }
        };
        if pos.turn == Color::Black {
            pos.hash ^= KEYS.black;
        }
        let ep = match fields.get(2).copied() {
            None | Some("-") => None,
            Some(t) => Some(
                parse_cell(t).map_err(|e| syntax("en_passant", format!("en passant cell: {e}")))?,
            ),
        };
        if let Some(t) = fields.get(3) {
            pos.halfmoves = parse_counter(t, 0).ok_or_else(|| {
                syntax(
                    "halfmove_clock",
                    format!("halfmove clock: expected a number up to {MAX_COUNTER}, found '{t}'"),
                )
            })?;
        }
        if let Some(t) = fields.get(4) {
            pos.fullmoves = parse_counter(t, 1).ok_or_else(|| {
                syntax(
                    "fullmove_number",
                    format!(
                        "fullmove number: expected a number from 1 to {MAX_COUNTER}, found '{t}'"
                    ),
                )
            })?;
        }
        validate_material(&pos)?;
        if let Some(ep) = ep {
            validate_ep(&pos, ep)?;
            // Kept only while a pawn stands ready to capture.
            if PAWN_CAPTURES[side(!pos.turn)][ep as usize] & pos.pieces(pos.turn, Role::Pawn) != 0 {
                pos.ep = Some(ep);
                pos.hash ^= KEYS.ep[ep as usize];
            }
        }
        if pos.king_attacked(!pos.turn) {
            return Err(illegal(
                "placement",
                format!("{} is in check but it is {}'s turn", !pos.turn, pos.turn),
            ));
        }
        Ok(pos)
    }
}

fn validate_material(pos: &Glinski) -> Result<(), PositionTextError> {
    for color in Color::ALL {
        let count = |role| pos.pieces(color, role).count_ones();
        let kings = count(Role::King);
        if kings != 1 {
            return Err(illegal(
                "placement",
                format!("{color} has {kings} kings (exactly one is needed)"),
            ));
        }
        let pawns = count(Role::Pawn);
        let promoted = count(Role::Queen).saturating_sub(1)
            + count(Role::Rook).saturating_sub(2)
            + count(Role::Bishop).saturating_sub(3)
            + count(Role::Knight).saturating_sub(2);
        if pawns + promoted > 9 {
            return Err(illegal(
                "placement",
                format!(
                    "{color} has {pawns} pawns and {promoted} pieces beyond the starting set \
                     (at most 9 together: only pawns promote)"
                ),
            ));
        }
        if let Some(c) = super::Cells(pos.pieces(color, Role::Pawn) & PROMOTION[side(color)]).next()
        {
            return Err(illegal(
                "placement",
                format!(
                    "{color} pawn on {}, its last cell (it must have promoted)",
                    cell_name(c)
                ),
            ));
        }
    }
    Ok(())
}

/// The en passant cell must be the empty cell skipped by a double step the side not to move
/// just made: its pawn one step beyond, its start cell empty.
fn validate_ep(pos: &Glinski, ep: Cell) -> Result<(), PositionTextError> {
    let mover = !pos.turn;
    let origin = PAWN_STEP[side(pos.turn)][ep as usize];
    let landing = PAWN_STEP[side(mover)][ep as usize];
    let occ = pos.occupied();
    let ok = origin != super::NONE
        && landing != super::NONE
        && PAWN_START[side(mover)] & bit(origin) != 0
        && occ & (bit(origin) | bit(ep)) == 0
        && pos.pieces(mover, Role::Pawn) & bit(landing) != 0;
    if ok {
        Ok(())
    } else {
        Err(illegal(
            "en_passant",
            format!(
                "en passant cell {} does not follow a double pawn step of {mover}",
                cell_name(ep)
            ),
        ))
    }
}

/// Writes the position string.
pub(super) fn write(pos: &Glinski) -> String {
    let mut out = String::with_capacity(96);
    for rank in (1..=11u8).rev() {
        let mut empty = 0;
        for file in files_on_rank(rank) {
            let cell = from_file_rank(file, rank).expect("cell on this rank");
            match pos.piece_at(cell) {
                None => empty += 1,
                Some(p) => {
                    if empty > 0 {
                        out.push_str(&empty.to_string());
                        empty = 0;
                    }
                    out.push(p.char());
                }
            }
        }
        if empty > 0 {
            out.push_str(&empty.to_string());
        }
        if rank > 1 {
            out.push('/');
        }
    }
    let ep = pos.ep.map_or_else(|| "-".to_owned(), cell_name);
    out.push_str(&format!(
        " {} {ep} {} {}",
        pos.turn.char(),
        pos.halfmoves,
        pos.fullmoves
    ));
    out
}

/// A move as read from text, before it is checked against the position.
pub(super) struct ParsedMove {
    /// The piece letter of the record form, if given.
    pub role: Option<Role>,
    pub from: Cell,
    pub to: Cell,
    pub promotion: Option<Role>,
}

/// Reads a cell name starting at byte `*i`: a file letter and the rank digits.
fn read_cell(text: &str, i: &mut usize) -> Result<Cell, String> {
    let bytes = text.as_bytes();
    let start = *i;
    if start >= bytes.len() || !bytes[start].is_ascii_lowercase() {
        return Err(format!(
            "expected a cell such as f6 at '{}'",
            &text[start.min(text.len())..]
        ));
    }
    let mut end = start + 1;
    while end < bytes.len() && bytes[end].is_ascii_digit() {
        end += 1;
    }
    *i = end;
    parse_cell(&text[start..end])
}

/// Strict coordinate form: `<from><to>[q|r|b|n]`, lower case.
pub(super) fn parse_coordinate(text: &str) -> Result<ParsedMove, String> {
    if !text.is_ascii() {
        return Err("expected a coordinate move such as g4g5 or f10f11q".to_owned());
    }
    let mut i = 0;
    let from = read_cell(text, &mut i)?;
    let to = read_cell(text, &mut i)?;
    let promotion = match &text[i..] {
        "" => None,
        rest => {
            let mut chars = rest.chars();
            let c = chars.next().expect("non-empty");
            if chars.next().is_some() || !c.is_ascii_lowercase() {
                return Err(format!(
                    "unexpected '{rest}' after the move (a promotion is one lower-case letter)"
                ));
            }
            Some(Role::from_char(c).ok_or_else(|| format!("'{c}' is not a piece letter"))?)
        }
    };
    Ok(ParsedMove {
        role: None,
        from,
        to,
        promotion,
    })
}

/// Lenient record form: optional piece letter, origin, optional `-`/`x`/`:`, destination,
/// optional promotion (`=Q`, `Q`, `q`, `(Q)`), optional `+`/`#`/`!`/`?` and `e.p.` suffixes.
/// The coordinate form is a special case.
pub(super) fn parse_record(text: &str, locale: Locale) -> Result<ParsedMove, String> {
    if !text.is_ascii() {
        return Err("expected a move such as Qe1-c3, e4xf5 or f10-f11=Q".to_owned());
    }
    let mut body = text.trim_end_matches(['+', '#', '!', '?']);
    for suffix in ["e.p.", "ep"] {
        if let Some(rest) = body.strip_suffix(suffix) {
            body = rest.trim_end();
            break;
        }
    }
    body = body.trim_end_matches(['+', '#', '!', '?']);
    if body.is_empty() {
        return Err("empty move".to_owned());
    }
    let bytes = body.as_bytes();
    let mut i = 0;
    let mut role = None;
    if bytes[0].is_ascii_uppercase() {
        let c = char::from(bytes[0]);
        role = Some(
            role_from_letter(c, locale)
                .ok_or_else(|| format!("'{c}' is not a piece letter in this locale"))?,
        );
        i = 1;
    }
    let from = read_cell(body, &mut i)?;
    if matches!(bytes.get(i), Some(b'-' | b'x' | b':')) {
        i += 1;
    }
    let to = read_cell(body, &mut i)?;
    let mut rest = &body[i..];
    let mut promotion = None;
    if !rest.is_empty() {
        rest = rest.strip_prefix('=').unwrap_or(rest);
        let inner = rest
            .strip_prefix('(')
            .and_then(|r| r.strip_suffix(')'))
            .unwrap_or(rest);
        let mut chars = inner.chars();
        let c = chars
            .next()
            .ok_or("'=' must be followed by a piece letter")?;
        if chars.next().is_some() {
            return Err(format!("unexpected '{}' after the move", &body[i..]));
        }
        promotion = Some(
            if c.is_ascii_lowercase() {
                Role::from_char(c)
            } else {
                role_from_letter(c, locale)
            }
            .ok_or_else(|| format!("'{c}' is not a piece letter"))?,
        );
    }
    Ok(ParsedMove {
        role,
        from,
        to,
        promotion,
    })
}
