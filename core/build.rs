//! Generates the square-board attack tables at build time, so the hot move-generation loops read
//! plain `static` arrays (no lazy initialisation, no runtime check, no global mutable state).
//!
//! Emitted into `$OUT_DIR/chess_tables.rs`:
//! - `KNIGHT_ATTACKS`, `KING_ATTACKS`: `[u64; 64]`
//! - `PAWN_ATTACKS`: `[[u64; 64]; 2]` indexed by colour (white, black)
//! - `BETWEEN`: squares strictly between two aligned squares (0 when not aligned)
//! - `LINE`: the whole line through two aligned squares, both included (0 when not aligned)
//! - `ROOK_MAGICS`, `BISHOP_MAGICS`: fancy magic entries, `SLIDER_ATTACKS`: the shared table
//!
//! Magic numbers are found by a seeded search, so the output is deterministic.

use std::fmt::Write as _;
use std::path::PathBuf;

const ROOK_DIRS: [(i32, i32); 4] = [(1, 0), (-1, 0), (0, 1), (0, -1)];
const BISHOP_DIRS: [(i32, i32); 4] = [(1, 1), (1, -1), (-1, 1), (-1, -1)];
const KNIGHT_DELTAS: [(i32, i32); 8] = [
    (1, 2),
    (2, 1),
    (2, -1),
    (1, -2),
    (-1, -2),
    (-2, -1),
    (-2, 1),
    (-1, 2),
];
const KING_DELTAS: [(i32, i32); 8] = [
    (1, 0),
    (1, 1),
    (0, 1),
    (-1, 1),
    (-1, 0),
    (-1, -1),
    (0, -1),
    (1, -1),
];

fn on_board(f: i32, r: i32) -> bool {
    (0..8).contains(&f) && (0..8).contains(&r)
}

fn bit(f: i32, r: i32) -> u64 {
    1u64 << (r * 8 + f)
}

fn leaper(sq: i32, deltas: &[(i32, i32)]) -> u64 {
    let (f, r) = (sq % 8, sq / 8);
    deltas
        .iter()
        .filter(|&&(df, dr)| on_board(f + df, r + dr))
        .fold(0, |acc, &(df, dr)| acc | bit(f + df, r + dr))
}

fn slide(sq: i32, occ: u64, dirs: &[(i32, i32)]) -> u64 {
    let mut att = 0;
    for &(df, dr) in dirs {
        let (mut f, mut r) = (sq % 8 + df, sq / 8 + dr);
        while on_board(f, r) {
            att |= bit(f, r);
            if occ & bit(f, r) != 0 {
                break;
            }
            f += df;
            r += dr;
        }
    }
    att
}

/// Squares whose occupancy matters for a slider on `sq`: the rays without their last square.
fn relevant_mask(sq: i32, dirs: &[(i32, i32)]) -> u64 {
    let mut mask = 0;
    for &(df, dr) in dirs {
        let (mut f, mut r) = (sq % 8 + df, sq / 8 + dr);
        while on_board(f + df, r + dr) {
            mask |= bit(f, r);
            f += df;
            r += dr;
        }
    }
    mask
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn sparse(&mut self) -> u64 {
        self.next() & self.next() & self.next()
    }
}

struct Magic {
    mask: u64,
    magic: u64,
    shift: u32,
    offset: usize,
}

fn find_magics(dirs: &[(i32, i32)], rng: &mut Rng, table: &mut Vec<u64>) -> Vec<Magic> {
    let mut magics = Vec::with_capacity(64);
    for sq in 0..64 {
        let mask = relevant_mask(sq, dirs);
        let bits = mask.count_ones();
        let size = 1usize << bits;
        let mut occs = Vec::with_capacity(size);
        let mut atts = Vec::with_capacity(size);
        let mut sub = 0u64;
        loop {
            occs.push(sub);
            atts.push(slide(sq, sub, dirs));
            sub = sub.wrapping_sub(mask) & mask;
            if sub == 0 {
                break;
            }
        }
        let shift = 64 - bits;
        let mut used = vec![0u64; size];
        let mut epoch = vec![0u32; size];
        let mut attempt = 0u32;
        let magic = loop {
            let candidate = rng.sparse();
            if (mask.wrapping_mul(candidate) >> 56).count_ones() < 6 {
                continue;
            }
            attempt += 1;
            let ok = occs.iter().zip(&atts).all(|(&occ, &att)| {
                let idx = (occ.wrapping_mul(candidate) >> shift) as usize;
                if epoch[idx] != attempt {
                    epoch[idx] = attempt;
                    used[idx] = att;
                    true
                } else {
                    used[idx] == att
                }
            });
            if ok {
                break candidate;
            }
        };
        let offset = table.len();
        table.resize(offset + size, 0);
        for (&occ, &att) in occs.iter().zip(&atts) {
            table[offset + (occ.wrapping_mul(magic) >> shift) as usize] = att;
        }
        magics.push(Magic {
            mask,
            magic,
            shift,
            offset,
        });
    }
    magics
}

fn write_array(out: &mut String, name: &str, values: &[u64]) {
    writeln!(out, "pub(crate) static {name}: [u64; {}] = [", values.len()).unwrap();
    for chunk in values.chunks(8) {
        for v in chunk {
            write!(out, "{v:#x},").unwrap();
        }
        out.push('\n');
    }
    out.push_str("];\n");
}

fn write_square_matrix(out: &mut String, name: &str, f: impl Fn(i32, i32) -> u64) {
    writeln!(out, "pub(crate) static {name}: [[u64; 64]; 64] = [").unwrap();
    for a in 0..64 {
        out.push('[');
        for b in 0..64 {
            write!(out, "{:#x},", f(a, b)).unwrap();
        }
        out.push_str("],\n");
    }
    out.push_str("];\n");
}

fn write_magics(out: &mut String, name: &str, magics: &[Magic]) {
    writeln!(out, "pub(crate) static {name}: [Magic; 64] = [").unwrap();
    for m in magics {
        writeln!(
            out,
            "Magic {{ mask: {:#x}, magic: {:#x}, shift: {}, offset: {} }},",
            m.mask, m.magic, m.shift, m.offset
        )
        .unwrap();
    }
    out.push_str("];\n");
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let mut out = String::new();

    let knight: Vec<u64> = (0..64).map(|s| leaper(s, &KNIGHT_DELTAS)).collect();
    let king: Vec<u64> = (0..64).map(|s| leaper(s, &KING_DELTAS)).collect();
    write_array(&mut out, "KNIGHT_ATTACKS", &knight);
    write_array(&mut out, "KING_ATTACKS", &king);

    out.push_str("pub(crate) static PAWN_ATTACKS: [[u64; 64]; 2] = [\n");
    for dr in [1, -1] {
        out.push('[');
        for s in 0..64 {
            write!(out, "{:#x},", leaper(s, &[(-1, dr), (1, dr)])).unwrap();
        }
        out.push_str("],\n");
    }
    out.push_str("];\n");

    // Alignment: a and b share a rank, file or diagonal.
    let direction = |a: i32, b: i32| -> Option<(i32, i32)> {
        let (df, dr) = (b % 8 - a % 8, b / 8 - a / 8);
        if a == b {
            None
        } else if df == 0 || dr == 0 || df.abs() == dr.abs() {
            Some((df.signum(), dr.signum()))
        } else {
            None
        }
    };
    write_square_matrix(&mut out, "BETWEEN", |a, b| match direction(a, b) {
        None => 0,
        Some(d) => slide(a, 1u64 << b, &[d]) & !(1u64 << b),
    });
    write_square_matrix(&mut out, "LINE", |a, b| match direction(a, b) {
        None => 0,
        Some((df, dr)) => slide(a, 0, &[(df, dr), (-df, -dr)]) | (1u64 << a),
    });

    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut table = Vec::new();
    let rook = find_magics(&ROOK_DIRS, &mut rng, &mut table);
    let bishop = find_magics(&BISHOP_DIRS, &mut rng, &mut table);
    write_magics(&mut out, "ROOK_MAGICS", &rook);
    write_magics(&mut out, "BISHOP_MAGICS", &bishop);
    write_array(&mut out, "SLIDER_ATTACKS", &table);

    let path = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("chess_tables.rs");
    std::fs::write(path, out).expect("write chess_tables.rs");
}
