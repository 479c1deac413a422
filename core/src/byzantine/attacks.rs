//! The ring board's attack tables, built at compile time: leapers by cell, the rook's ring and
//! radial rays, pawn steps around the rings, and the citadels' neighbours.

use super::{CITADEL_BASE, Cell};
use crate::types::Color;

const fn cell_at(ring: i32, number0: i32) -> Option<usize> {
    if ring < 0 || ring > 3 {
        return None;
    }
    Some((ring * 16 + number0.rem_euclid(16)) as usize)
}

const fn leaper_table(deltas: &[(i32, i32)]) -> [u64; 64] {
    let mut t = [0u64; 64];
    let mut c = 0;
    while c < 64 {
        let (r, n) = ((c / 16) as i32, (c % 16) as i32);
        let mut i = 0;
        while i < deltas.len() {
            if let Some(to) = cell_at(r + deltas[i].0, n + deltas[i].1) {
                t[c] |= 1 << to;
            }
            i += 1;
        }
        c += 1;
    }
    t
}

pub(super) static KING: [u64; 64] = leaper_table(&[
    (1, 0),
    (-1, 0),
    (0, 1),
    (0, -1),
    (1, 1),
    (1, -1),
    (-1, 1),
    (-1, -1),
]);
pub(super) static COUNSELOR: [u64; 64] = leaper_table(&[(1, 1), (1, -1), (-1, 1), (-1, -1)]);
pub(super) static ELEPHANT: [u64; 64] = leaper_table(&[(2, 2), (2, -2), (-2, 2), (-2, -2)]);
pub(super) static KNIGHT: [u64; 64] = leaper_table(&[
    (1, 2),
    (1, -2),
    (-1, 2),
    (-1, -2),
    (2, 1),
    (2, -1),
    (-2, 1),
    (-2, -1),
]);
/// Pawn captures: `[0]` for pawns travelling `+`, `[1]` for `-`.
pub(super) static PAWN_CAPTURE: [[u64; 64]; 2] = [
    leaper_table(&[(1, 1), (-1, 1)]),
    leaper_table(&[(1, -1), (-1, -1)]),
];
pub(super) static PAWN_STEP: [[u64; 64]; 2] = [leaper_table(&[(0, 1)]), leaper_table(&[(0, -1)])];

/// Ring attacks of a rook standing on bit 0 of a sixteen-cell ring whose occupied cells are `occ`
/// (bit 0 ignored): every cell up to and including the first blocker each way round; all fifteen
/// others when the ring is empty.
const fn ring_attacks_from_zero(occ: u16) -> u16 {
    let blockers = occ & !1;
    if blockers == 0 {
        return 0xfffe;
    }
    let first = blockers.trailing_zeros(); // nearest blocker going up
    let last = 15 - blockers.leading_zeros(); // nearest blocker going down (wrapping)
    let up = ((2u32 << first) - 2) as u16; // bits 1..=first
    let down = (!((1u32 << last) - 1)) as u16; // bits last..=15
    up | down
}

/// Radial rook attacks: `[cell][occupancy of the cell's column]`, the column's four cells (rings
/// `a`..`d`) gathered into bits 0..4 by [`column_index`].
static RADIAL: [[u64; 16]; 64] = {
    let mut t = [[0u64; 16]; 64];
    let mut c = 0;
    while c < 64 {
        let (r, n) = ((c / 16) as i32, c % 16);
        let mut idx = 0;
        while idx < 16 {
            let mut att = 0u64;
            let mut dir = -1;
            while dir <= 1 {
                let mut rr = r + dir;
                while rr >= 0 && rr < 4 {
                    att |= 1 << (rr as usize * 16 + n);
                    if idx & (1 << rr) != 0 {
                        break;
                    }
                    rr += dir;
                }
                dir += 2;
            }
            t[c][idx] = att;
            idx += 1;
        }
        c += 1;
    }
    t
};

/// The occupancy of column `number0` (cells `number0`, `+16`, `+32`, `+48`) as four bits, ring `a`
/// in bit 0. One multiplication moves bit `16k` to bit `48 + k`; the partial products never
/// collide, so nothing carries.
#[inline]
fn column_index(occupied: u64, number0: u32) -> usize {
    const GATHER: u64 = (1 << 48) | (1 << 33) | (1 << 18) | (1 << 3);
    let column = (occupied >> number0) & 0x0001_0001_0001_0001;
    (column.wrapping_mul(GATHER) >> 48) as usize & 0xf
}

/// Cells a rook on `cell` attacks with `occupied` blocking: along its ring both ways (wrapping,
/// never back onto its own cell) and radially. The ring is rotated so the rook stands on bit 0 and
/// its attacks come from two bit scans; the radial attacks come from a table.
#[inline]
pub fn rook_attacks(cell: Cell, occupied: u64) -> u64 {
    let (ring, number) = (u32::from(cell / 16), u32::from(cell % 16));
    let ring_occ = (occupied >> (16 * ring)) as u16;
    let along = ring_attacks_from_zero(ring_occ.rotate_right(number)).rotate_left(number);
    (u64::from(along) << (16 * ring)) | RADIAL[cell as usize][column_index(occupied, number)]
}

/// Each pawn of `pawns` moved one cell along its ring towards higher numbers (wrapping 16 → 1).
#[inline]
pub(super) const fn ring_step_up(pawns: u64) -> u64 {
    ((pawns << 1) & 0xfffe_fffe_fffe_fffe) | ((pawns >> 15) & 0x0001_0001_0001_0001)
}

/// Each pawn of `pawns` moved one cell along its ring towards lower numbers (wrapping 1 → 16).
#[inline]
pub(super) const fn ring_step_down(pawns: u64) -> u64 {
    ((pawns >> 1) & 0x7fff_7fff_7fff_7fff) | ((pawns << 15) & 0x8000_8000_8000_8000)
}

/// The citadel a king of `color` may enter (its far one): `e3` for White, `e1` for Black.
pub const fn far_citadel(color: Color) -> Cell {
    match color {
        Color::White => CITADEL_BASE + 2,
        Color::Black => CITADEL_BASE,
    }
}

/// Inner-ring cells adjoining citadel `citadel` (`64..68`): e1 → d1–d4, … e4 → d13–d16.
pub(super) const fn citadel_neighbours(citadel: Cell) -> u64 {
    let k = (citadel - CITADEL_BASE) as u32;
    0xf << (48 + 4 * k)
}
