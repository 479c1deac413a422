//! The 91-cell hexagonal board: coordinates, cell names, and the precomputed attack tables.
//!
//! Cells use axial coordinates (q, r) with q = file index − 5 and r = rank − 6 − min(q, 0), so a
//! cell exists when max(|q|, |r|, |q + r|) ≤ 5. They are indexed in an 11×11 parallelogram,
//! `(r + 5) * 11 + (q + 5)`, of which 91 entries exist, so a set of cells is a `u128` bitboard
//! (bits 0..121). Every direction is then a constant index step, and because the index order is
//! monotonic along every line, the first piece along a ray is the lowest (or highest) set bit of
//! `ray & occupied`.

use crate::types::Color;

/// A cell index (`0..121`, of which the 91 in [`VALID`] exist).
pub type Cell = u8;

/// A set of cells, one bit per [`Cell`].
pub type Bitboard = u128;

/// The index space of the parallelogram (121 entries, 91 of them cells).
pub const INDEX_SPACE: usize = 121;

/// The file letters, `a` to `l` without `j`.
pub const FILES: &[u8; 11] = b"abcdefghikl";

/// Cells per file (`a` 6 … `f` 11 … `l` 6).
pub const FILE_LENGTH: [u8; 11] = [6, 7, 8, 9, 10, 11, 10, 9, 8, 7, 6];

/// The 12 directions as (dq, dr): six orthogonal steps in cyclic order (through an edge), then
/// six diagonal steps (through a vertex), diagonal `i` lying between orthogonals `i` and `i + 1`.
pub const DIRECTIONS: [(i32, i32); 12] = [
    (0, 1),
    (1, 0),
    (1, -1),
    (0, -1),
    (-1, 0),
    (-1, 1),
    (1, 1),
    (2, -1),
    (1, -2),
    (-1, -1),
    (-2, 1),
    (-1, 2),
];

/// Whether direction `d` increases the cell index (then the nearest blocker is the lowest bit).
pub const POSITIVE: [bool; 12] = {
    let mut p = [false; 12];
    let mut d = 0;
    while d < 12 {
        let (dq, dr) = DIRECTIONS[d];
        p[d] = dr * 11 + dq > 0;
        d += 1;
    }
    p
};

const fn exists(q: i32, r: i32) -> bool {
    q.abs() <= 5 && r.abs() <= 5 && (q + r).abs() <= 5
}

/// The cell at axial `(q, r)`, if it exists.
pub const fn at(q: i32, r: i32) -> Option<Cell> {
    if exists(q, r) {
        Some(((r + 5) * 11 + q + 5) as Cell)
    } else {
        None
    }
}

/// The axial coordinates `(q, r)` of a cell.
pub const fn coords(cell: Cell) -> (i32, i32) {
    ((cell % 11) as i32 - 5, (cell / 11) as i32 - 5)
}

/// The cell on file `file` (0 = `a` … 10 = `l`) and rank `rank` (from 1), if it exists.
pub const fn from_file_rank(file: u8, rank: u8) -> Option<Cell> {
    if file > 10 || rank == 0 || rank > FILE_LENGTH[file as usize] {
        return None;
    }
    let q = file as i32 - 5;
    let min = if q < 0 { q } else { 0 };
    at(q, rank as i32 - 6 - min)
}

/// File index (0..11) and rank (from 1) of a cell.
pub const fn file_rank(cell: Cell) -> (u8, u8) {
    let (q, r) = coords(cell);
    let min = if q < 0 { q } else { 0 };
    ((q + 5) as u8, (r + 6 + min) as u8)
}

/// The colour class of a cell (0, 1 or 2); the centre `f6` is in class 0, the class of 31.
pub const fn colour_class(cell: Cell) -> u8 {
    let (q, r) = coords(cell);
    (q - r).rem_euclid(3) as u8
}

/// Parses a cell name such as `f6` or `e10`.
pub fn parse_cell(text: &str) -> Result<Cell, String> {
    let mut chars = text.chars();
    let Some(f) = chars.next() else {
        return Err("expected a cell such as f6".to_owned());
    };
    let Some(file) = FILES.iter().position(|&c| char::from(c) == f) else {
        return Err(if f == 'j' {
            format!("'{text}': there is no file j (files are a-i, k, l)")
        } else {
            format!("'{text}' is not a cell (files are a-i, k, l)")
        });
    };
    let digits = chars.as_str();
    if digits.is_empty() || digits.len() > 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "'{text}' is not a cell (expected a file and a rank)"
        ));
    }
    let rank: u8 = digits.parse().expect("one or two digits");
    from_file_rank(file as u8, rank).ok_or_else(|| {
        format!(
            "there is no cell {text}: file {f} has ranks 1 to {}",
            FILE_LENGTH[file]
        )
    })
}

/// The name of a cell (`f6`, `e10`).
pub fn cell_name(cell: Cell) -> String {
    let (file, rank) = file_rank(cell);
    format!("{}{rank}", char::from(FILES[file as usize]))
}

/// The 91 cells.
pub const VALID: Bitboard = {
    let mut bb = 0;
    let mut i = 0;
    while i < INDEX_SPACE {
        let (q, r) = coords(i as Cell);
        if exists(q, r) {
            bb |= 1 << i;
        }
        i += 1;
    }
    bb
};

const fn step(cell: usize, dq: i32, dr: i32) -> Option<Cell> {
    let (q, r) = coords(cell as Cell);
    at(q + dq, r + dr)
}

const fn leaper(deltas: &[(i32, i32)]) -> [Bitboard; INDEX_SPACE] {
    let mut t = [0; INDEX_SPACE];
    let mut c = 0;
    while c < INDEX_SPACE {
        if VALID & (1 << c) != 0 {
            let mut i = 0;
            while i < deltas.len() {
                if let Some(to) = step(c, deltas[i].0, deltas[i].1) {
                    t[c] |= 1 << to;
                }
                i += 1;
            }
        }
        c += 1;
    }
    t
}

/// `RAYS[d][c]`: the cells from `c` (exclusive) to the edge in direction `d`. The table has 128
/// entries per direction, with empty rays for the indices that are not cells (0 and 121..128
/// among them): [`ray_attacks`] uses bits 0 and 127 as sentinels.
pub static RAYS: [[Bitboard; 128]; 12] = {
    let mut t = [[0; 128]; 12];
    let mut d = 0;
    while d < 12 {
        let mut c = 0;
        while c < INDEX_SPACE {
            if VALID & (1 << c) != 0 {
                let mut cur = c;
                while let Some(next) = step(cur, DIRECTIONS[d].0, DIRECTIONS[d].1) {
                    t[d][c] |= 1 << next;
                    cur = next as usize;
                }
            }
            c += 1;
        }
        d += 1;
    }
    t
};

const fn lines(first: usize) -> [Bitboard; INDEX_SPACE] {
    let mut t = [0; INDEX_SPACE];
    let mut c = 0;
    while c < INDEX_SPACE {
        let mut d = first;
        while d < first + 6 {
            t[c] |= RAYS[d][c];
            d += 1;
        }
        c += 1;
    }
    t
}

/// Every cell on an orthogonal line from a cell (a rook's moves on an empty board).
pub static ROOK_LINES: [Bitboard; INDEX_SPACE] = lines(0);
/// Every cell on a diagonal line from a cell (a bishop's moves on an empty board).
pub static BISHOP_LINES: [Bitboard; INDEX_SPACE] = lines(6);

const fn knight_deltas() -> [(i32, i32); 12] {
    let mut out = [(0, 0); 12];
    let mut i = 0;
    while i < 6 {
        let (aq, ar) = DIRECTIONS[i];
        let (bq, br) = DIRECTIONS[(i + 1) % 6];
        let (cq, cr) = DIRECTIONS[(i + 5) % 6];
        out[2 * i] = (2 * aq + bq, 2 * ar + br);
        out[2 * i + 1] = (2 * aq + cq, 2 * ar + cr);
        i += 1;
    }
    out
}

/// Knight targets: two orthogonal steps then one turned 60°.
pub static KNIGHT: [Bitboard; INDEX_SPACE] = leaper(&knight_deltas());
/// King targets: one step in any of the 12 directions.
pub static KING: [Bitboard; INDEX_SPACE] = leaper(&DIRECTIONS);
/// Pawn capture targets, `[color][cell]`: White (−1,+1) and (+1,0), Black (+1,−1) and (−1,0).
pub static PAWN_CAPTURES: [[Bitboard; INDEX_SPACE]; 2] =
    [leaper(&[(-1, 1), (1, 0)]), leaper(&[(1, -1), (-1, 0)])];

/// No cell (for the step tables).
pub const NONE: Cell = u8::MAX;

/// The cell straight ahead of a pawn, `[color][cell]` (White up the file, Black down), or
/// [`NONE`].
pub static PAWN_STEP: [[Cell; INDEX_SPACE]; 2] = {
    let mut t = [[NONE; INDEX_SPACE]; 2];
    let mut c = 0;
    while c < INDEX_SPACE {
        if VALID & (1 << c) != 0 {
            if let Some(to) = step(c, 0, 1) {
                t[0][c] = to;
            }
            if let Some(to) = step(c, 0, -1) {
                t[1][c] = to;
            }
        }
        c += 1;
    }
    t
};

const fn cells(list: &[(u8, u8)]) -> Bitboard {
    let mut bb = 0;
    let mut i = 0;
    while i < list.len() {
        match from_file_rank(list[i].0, list[i].1) {
            Some(c) => bb |= 1 << c,
            None => panic!("not a cell"),
        }
        i += 1;
    }
    bb
}

/// The pawn start cells, `[color]`: White b1 c2 d3 e4 f5 g4 h3 i2 k1, Black b7 … k7.
pub const PAWN_START: [Bitboard; 2] = [
    cells(&[
        (1, 1),
        (2, 2),
        (3, 3),
        (4, 4),
        (5, 5),
        (6, 4),
        (7, 3),
        (8, 2),
        (9, 1),
    ]),
    cells(&[
        (1, 7),
        (2, 7),
        (3, 7),
        (4, 7),
        (5, 7),
        (6, 7),
        (7, 7),
        (8, 7),
        (9, 7),
    ]),
];

/// The promotion cells, `[color]`: each file's last cell for White, rank 1 for Black.
pub const PROMOTION: [Bitboard; 2] = {
    let mut t = [0; 2];
    let mut f = 0;
    while f < 11 {
        t[0] |= cells(&[(f, FILE_LENGTH[f as usize])]);
        t[1] |= cells(&[(f, 1)]);
        f += 1;
    }
    t
};

const fn file_cells(q: i32) -> Bitboard {
    let mut bb = 0;
    let mut r = -5;
    while r <= 5 {
        if let Some(c) = at(q, r) {
            bb |= 1 << c;
        }
        r += 1;
    }
    bb
}

/// The cells of file `a` (q = −5).
pub const FILE_A: Bitboard = file_cells(-5);
/// The cells of file `l` (q = +5).
pub const FILE_L: Bitboard = file_cells(5);

/// Shifts every cell of `bb` by the index step `delta` (bits pushed past either end vanish).
#[inline(always)]
pub const fn shift(bb: Bitboard, delta: i32) -> Bitboard {
    if delta >= 0 {
        bb << delta
    } else {
        bb >> -delta
    }
}

/// Index into per-colour tables.
pub const fn side(color: Color) -> usize {
    match color {
        Color::White => 0,
        Color::Black => 1,
    }
}

/// The nearest cell of `blockers` (non-empty, all on ray `d`) along direction `d`.
#[inline(always)]
pub fn nearest(d: usize, blockers: Bitboard) -> usize {
    if POSITIVE[d] {
        blockers.trailing_zeros() as usize
    } else {
        127 - blockers.leading_zeros() as usize
    }
}

/// Cells attacked along direction `d` from `cell` with `occupied` blocking (the blocker
/// included).
///
/// Branch-free: a sentinel bit beyond the far end of every ray (bit 127 for rays that run up the
/// index order, bit 0 for the others; neither is a cell, so their rays are empty) stands in for
/// "no blocker", and `ray ^ RAYS[d][sentinel]` is then the whole ray.
#[inline(always)]
pub fn ray_attacks(d: usize, cell: usize, occupied: Bitboard) -> Bitboard {
    let ray = RAYS[d][cell];
    let blockers = ray & occupied;
    let nearest = if POSITIVE[d] {
        (blockers | 1 << 127).trailing_zeros() as usize
    } else {
        127 - (blockers | 1).leading_zeros() as usize
    };
    ray ^ RAYS[d][nearest]
}

/// Rook attacks: the six orthogonal directions.
#[inline]
pub fn rook_attacks(cell: usize, occupied: Bitboard) -> Bitboard {
    ray_attacks(0, cell, occupied)
        | ray_attacks(1, cell, occupied)
        | ray_attacks(2, cell, occupied)
        | ray_attacks(3, cell, occupied)
        | ray_attacks(4, cell, occupied)
        | ray_attacks(5, cell, occupied)
}

/// Bishop attacks: the six diagonal directions.
#[inline]
pub fn bishop_attacks(cell: usize, occupied: Bitboard) -> Bitboard {
    ray_attacks(6, cell, occupied)
        | ray_attacks(7, cell, occupied)
        | ray_attacks(8, cell, occupied)
        | ray_attacks(9, cell, occupied)
        | ray_attacks(10, cell, occupied)
        | ray_attacks(11, cell, occupied)
}

/// Iterates over the cells of a bitboard, lowest first.
#[derive(Clone, Debug)]
pub struct Cells(pub Bitboard);

impl Iterator for Cells {
    type Item = Cell;
    #[inline]
    fn next(&mut self) -> Option<Cell> {
        if self.0 == 0 {
            return None;
        }
        let c = self.0.trailing_zeros() as Cell;
        self.0 &= self.0 - 1;
        Some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(bb: Bitboard) -> Vec<String> {
        let mut v: Vec<String> = Cells(bb).map(cell_name).collect();
        v.sort();
        v
    }

    #[test]
    fn board_shape() {
        assert_eq!(VALID.count_ones(), 91);
        // ray_attacks relies on bits 0 and 127 not being cells.
        assert_eq!(VALID & (1 | 1 << 127), 0);
        let mut classes = [0; 3];
        for c in Cells(VALID) {
            classes[colour_class(c) as usize] += 1;
            assert_eq!(parse_cell(&cell_name(c)), Ok(c));
        }
        assert_eq!(classes, [31, 30, 30]);
        assert_eq!(colour_class(parse_cell("f6").unwrap()), 0);
        assert!(parse_cell("j3").unwrap_err().contains("no file j"));
        assert!(parse_cell("a7").unwrap_err().contains("ranks 1 to 6"));
        assert!(parse_cell("f12").is_err());
        assert!(parse_cell("f").is_err());
        assert!(parse_cell("f011").is_err());
    }

    #[test]
    fn knight_from_f6_matches_the_spec() {
        let f6 = parse_cell("f6").unwrap() as usize;
        assert_eq!(
            names(KNIGHT[f6]),
            [
                "c4", "c5", "d3", "d7", "e3", "e8", "g3", "g8", "h3", "h7", "i4", "i5"
            ]
        );
        // Never on a rook or bishop line.
        assert_eq!(
            KNIGHT[f6] & (rook_attacks(f6, 0) | bishop_attacks(f6, 0)),
            0
        );
    }

    #[test]
    fn pawn_geometry_matches_the_spec() {
        let e4 = parse_cell("e4").unwrap() as usize;
        assert_eq!(names(PAWN_CAPTURES[0][e4]), ["d4", "f5"]);
        let f6 = parse_cell("f6").unwrap() as usize;
        assert_eq!(names(PAWN_CAPTURES[1][f6]), ["e5", "g5"]);
        assert_eq!(cell_name(PAWN_STEP[0][e4]), "e5");
        assert_eq!(cell_name(PAWN_STEP[1][f6]), "f5");
        assert_eq!(PAWN_STEP[0][parse_cell("f11").unwrap() as usize], NONE);
        assert_eq!(
            names(PROMOTION[0]),
            [
                "a6", "b7", "c8", "d9", "e10", "f11", "g10", "h9", "i8", "k7", "l6"
            ]
        );
        assert_eq!(PROMOTION[1].count_ones(), 11);
    }

    #[test]
    fn slider_geometry() {
        let f6 = parse_cell("f6").unwrap() as usize;
        // From the centre a rook sees 5 cells each way, a bishop 2 each way.
        assert_eq!(rook_attacks(f6, 0).count_ones(), 30);
        assert_eq!(bishop_attacks(f6, 0).count_ones(), 12);
        assert_eq!(KING[f6].count_ones(), 12);
        // Bishops keep their colour class.
        for c in Cells(VALID) {
            for t in Cells(bishop_attacks(c as usize, 0)) {
                assert_eq!(colour_class(c), colour_class(t));
            }
        }
        let f1 = parse_cell("f1").unwrap() as usize;
        assert_eq!(
            names(bishop_attacks(f1, 0)),
            ["a6", "b5", "c4", "d3", "e2", "g2", "h3", "i4", "k5", "l6"]
        );
        assert_eq!(rook_attacks(f1, 0).count_ones(), 20);
        // A blocker stops the ray and is itself attacked.
        let d3 = 1u128 << parse_cell("d3").unwrap();
        assert_eq!(
            names(bishop_attacks(f1, d3)),
            ["d3", "e2", "g2", "h3", "i4", "k5", "l6"]
        );
    }
}
