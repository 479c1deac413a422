//! The Byzantine position string and move notation.
//!
//! `RP+4p-rrp+4P-R/NP+4p-nnp+4P-N/EP+4p-eep+4P-E/KP+4p-fkp+4P-F w 0 1`: four ring fields
//! (`a` to `d`, cells 1..16 in order; runs of empty cells as decimal lengths read greedily; pawns
//! with their direction suffix), a fifth field for the citadels `e1..e4` in the Citadel variant,
//! then side to move, halfmove clock and fullmove number.

use super::{
    ByzRole, Byzantine, ByzantineRules, ByzantineVariant, CITADEL_BASE, Cell, cell_name,
    far_citadel, piece_label,
};
use crate::position::{MAX_COUNTER, parse_counter};
use crate::position_text::PositionTextError;
use crate::types::Color;

fn syntax(field: &'static str, message: impl Into<String>) -> PositionTextError {
    PositionTextError::syntax(field, message)
}

fn illegal(message: impl Into<String>) -> PositionTextError {
    PositionTextError::illegal("placement", message)
}

/// Reads one field of `cells` cells: pieces (pawns with `+`/`-`) and runs of empty cells.
/// Calls `place(index, color, role, up)` for each piece.
fn read_cells(
    text: &str,
    cells: usize,
    name: &str,
    mut place: impl FnMut(usize, Color, ByzRole, bool) -> Result<(), PositionTextError>,
) -> Result<(), PositionTextError> {
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut cell = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        if c.is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let run: usize = text[start..i]
                .parse()
                .map_err(|_| syntax("placement", format!("ring {name}: bad number")))?;
            if run == 0 {
                return Err(syntax(
                    "placement",
                    format!("ring {name}: empty run of length 0"),
                ));
            }
            // `cell <= cells` holds here, so this cannot overflow (a fuzzed run near usize::MAX
            // once did).
            if run > cells - cell {
                return Err(syntax(
                    "placement",
                    format!("ring {name} has more than {cells} cells"),
                ));
            }
            cell += run;
        } else {
            let role = ByzRole::from_letter(c).ok_or_else(|| {
                syntax(
                    "placement",
                    format!("ring {name}: invalid piece letter '{c}'"),
                )
            })?;
            let color = if c.is_ascii_uppercase() {
                Color::White
            } else {
                Color::Black
            };
            i += 1;
            let mut up = false;
            if role == ByzRole::Pawn {
                match bytes.get(i) {
                    Some(b'+') => up = true,
                    Some(b'-') => {}
                    _ => {
                        return Err(syntax(
                            "placement",
                            format!("ring {name}: a pawn needs its direction '+' or '-'"),
                        ));
                    }
                }
                i += 1;
            } else if matches!(bytes.get(i), Some(b'+' | b'-')) {
                return Err(syntax(
                    "placement",
                    format!("ring {name}: only pawns carry a direction"),
                ));
            }
            if cell >= cells {
                return Err(syntax(
                    "placement",
                    format!("ring {name} has more than {cells} cells"),
                ));
            }
            place(cell, color, role, up)?;
            cell += 1;
        }
        if cell > cells {
            return Err(syntax(
                "placement",
                format!("ring {name} has more than {cells} cells"),
            ));
        }
    }
    if cell < cells {
        return Err(syntax(
            "placement",
            format!("ring {name} has fewer than {cells} cells"),
        ));
    }
    Ok(())
}

impl Byzantine {
    /// Parses a position string of `byzantine` (or `byzantine-citadel` when `citadel`).
    pub fn from_text(
        text: &str,
        board: ByzantineVariant,
        rules: ByzantineRules,
    ) -> Result<Byzantine, PositionTextError> {
        let citadel = board == ByzantineVariant::Citadel;
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.len() != 4 {
            return Err(syntax(
                "fen",
                format!(
                    "expected placement, side, halfmove clock and move number, found {} fields",
                    fields.len()
                ),
            ));
        }
        let rings: Vec<&str> = fields[0].split('/').collect();
        let expected = if citadel { 5 } else { 4 };
        if rings.len() != expected {
            return Err(syntax(
                "placement",
                format!(
                    "expected {expected} '/'-separated fields (rings a-d{}), found {}",
                    if citadel { " and the citadels" } else { "" },
                    rings.len()
                ),
            ));
        }
        let mut pos = Byzantine {
            roles: [0; 6],
            colors: [0; 2],
            pawn_up: 0,
            citadel_king: None,
            citadel_variant: citadel,
            rules,
            turn: Color::White,
            halfmoves: 0,
            fullmoves: 1,
            hash: 0,
        };
        for (ring, field) in rings.iter().take(4).enumerate() {
            let name = ((b'a' + ring as u8) as char).to_string();
            read_cells(field, 16, &name, |i, color, role, up| {
                let cell = (ring * 16 + i) as Cell;
                pos.colors[color.index()] |= 1 << cell;
                pos.roles[role as usize] |= 1 << cell;
                if up {
                    pos.pawn_up |= 1 << cell;
                }
                Ok(())
            })?;
        }
        if citadel {
            let mut found = None;
            read_cells(rings[4], 4, "e", |i, color, role, _| {
                if role != ByzRole::King {
                    return Err(illegal(format!(
                        "only a king may stand in a citadel (e{})",
                        i + 1
                    )));
                }
                if found.is_some() {
                    return Err(illegal("two kings in the citadels"));
                }
                found = Some((color, CITADEL_BASE + i as Cell));
                Ok(())
            })?;
            pos.citadel_king = found;
        }
        pos.turn = match fields[1] {
            "w" => Color::White,
            "b" => Color::Black,
            other => {
                return Err(syntax(
                    "turn",
                    format!("expected 'w' or 'b', found '{other}'"),
                ));
            }
        };
        pos.halfmoves = parse_counter(fields[2], 0).ok_or_else(|| {
            syntax(
                "halfmove_clock",
                format!(
                    "expected a number up to {MAX_COUNTER}, found '{}'",
                    fields[2]
                ),
            )
        })?;
        pos.fullmoves = parse_counter(fields[3], 1).ok_or_else(|| {
            syntax(
                "fullmove_number",
                format!(
                    "expected a number from 1 to {MAX_COUNTER}, found '{}'",
                    fields[3]
                ),
            )
        })?;
        for color in Color::ALL {
            let on_board = pos.pieces(color, ByzRole::King).count_ones();
            let in_citadel = u32::from(pos.citadel_king.is_some_and(|(c, _)| c == color));
            match on_board + in_citadel {
                0 => return Err(illegal(format!("{color} has no king"))),
                1 => {}
                _ => return Err(illegal(format!("{color} has more than one king"))),
            }
        }
        if let Some((color, c)) = pos.citadel_king
            && c != far_citadel(color)
        {
            return Err(illegal(format!(
                "a {color} king may only stand in its far citadel {}, not {}",
                cell_name(far_citadel(color)),
                cell_name(c)
            )));
        }
        if pos.king_attacked(!pos.turn) {
            return Err(illegal("the side not to move is in check"));
        }
        pos.hash = pos.compute_hash();
        Ok(pos)
    }
}

/// Writes the position string.
pub(super) fn write(pos: &Byzantine) -> String {
    let mut out = String::with_capacity(80);
    let write_cells = |cells: &mut dyn Iterator<Item = Option<(Color, ByzRole, bool)>>,
                       out: &mut String| {
        let mut empty = 0;
        for piece in cells {
            match piece {
                None => empty += 1,
                Some((color, role, up)) => {
                    if empty > 0 {
                        out.push_str(&empty.to_string());
                        empty = 0;
                    }
                    out.push_str(&piece_label(color, role, up));
                }
            }
        }
        if empty > 0 {
            out.push_str(&empty.to_string());
        }
    };
    for ring in 0..4u8 {
        if ring > 0 {
            out.push('/');
        }
        write_cells(&mut (0..16).map(|i| pos.piece_at(ring * 16 + i)), &mut out);
    }
    if pos.citadel_variant {
        out.push('/');
        write_cells(
            &mut (0..4).map(|i| pos.piece_at(CITADEL_BASE + i)),
            &mut out,
        );
    }
    out.push_str(&format!(
        " {} {} {}",
        pos.turn.char(),
        pos.halfmoves,
        pos.fullmoves
    ));
    out
}

/// Reads a cell name: ring letter `a`–`d` with number `1`–`16`, or citadel `e1`–`e4`.
fn parse_cell(s: &str) -> Option<Cell> {
    let mut chars = s.chars();
    let ring = chars.next()?;
    let number: u8 = chars.as_str().parse().ok()?;
    if chars.as_str().starts_with('0') {
        return None;
    }
    match ring {
        'a'..='d' if (1..=16).contains(&number) => Some((ring as u8 - b'a') * 16 + number - 1),
        'e' if (1..=4).contains(&number) => Some(CITADEL_BASE + number - 1),
        _ => None,
    }
}

/// Reads `<from><to>` (e.g. `d2d3`, `a1a16`, `d10e3`).
pub(super) fn parse_move(text: &str) -> Result<(Cell, Cell), &'static str> {
    if !text.is_ascii() || text.len() < 4 || text.len() > 6 {
        return Err("expected two cells such as d2d3 or a1a16");
    }
    // The destination starts at the second ring letter.
    let split = text[1..]
        .find(|c: char| c.is_ascii_lowercase())
        .map(|i| i + 1)
        .ok_or("expected two cells such as d2d3 or a1a16")?;
    let from = parse_cell(&text[..split]).ok_or("invalid origin cell (a1..d16)")?;
    let to = parse_cell(&text[split..]).ok_or("invalid destination cell (a1..d16, e1..e4)")?;
    if from >= CITADEL_BASE {
        return Err("nothing moves out of a citadel");
    }
    Ok((from, to))
}
