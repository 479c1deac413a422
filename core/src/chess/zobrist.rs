//! Zobrist keys for the 8×8 board, generated at compile time from a fixed seed.

use crate::types::{Color, Role, Square};

/// One step of splitmix64: the next state and its output (shared by every variant's keys).
pub(crate) const fn splitmix(state: u64) -> (u64, u64) {
    let state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (state, z ^ (z >> 31))
}

/// Every key the square-board variants use, in one table.
pub(crate) struct Keys {
    pieces: [[[u64; 64]; 6]; 2],
    castling: [u64; 16],
    ep_file: [u64; 8],
    black_to_move: u64,
    /// Reserve counts for crazyhouse and bughouse: `[color][role][count]`.
    pub(crate) reserve: [[[u64; 17]; 5]; 2],
    /// Marks a piece standing on a square as promoted (crazyhouse, bughouse).
    pub(crate) promoted: [u64; 64],
}

const fn generate() -> Keys {
    let mut keys = Keys {
        pieces: [[[0; 64]; 6]; 2],
        castling: [0; 16],
        ep_file: [0; 8],
        black_to_move: 0,
        reserve: [[[0; 17]; 5]; 2],
        promoted: [0; 64],
    };
    let mut state = 0x4172_6269_7465_7221; // "Arbiter!"
    let mut c = 0;
    while c < 2 {
        let mut r = 0;
        while r < 6 {
            let mut s = 0;
            while s < 64 {
                let (st, v) = splitmix(state);
                state = st;
                keys.pieces[c][r][s] = v;
                s += 1;
            }
            r += 1;
        }
        c += 1;
    }
    // Castling keys: one per right, combined by xor so that the key of a set of rights is the
    // xor of its members (the empty set hashes to 0).
    let mut single = [0u64; 4];
    let mut i = 0;
    while i < 4 {
        let (st, v) = splitmix(state);
        state = st;
        single[i] = v;
        i += 1;
    }
    let mut set = 0;
    while set < 16 {
        let mut k = 0;
        let mut bit = 0;
        while bit < 4 {
            if set & (1 << bit) != 0 {
                k ^= single[bit];
            }
            bit += 1;
        }
        keys.castling[set] = k;
        set += 1;
    }
    let mut f = 0;
    while f < 8 {
        let (st, v) = splitmix(state);
        state = st;
        keys.ep_file[f] = v;
        f += 1;
    }
    let (st, v) = splitmix(state);
    state = st;
    keys.black_to_move = v;
    let mut c = 0;
    while c < 2 {
        let mut r = 0;
        while r < 5 {
            let mut n = 1; // zero pieces in reserve hashes to 0
            while n < 17 {
                let (st, v) = splitmix(state);
                state = st;
                keys.reserve[c][r][n] = v;
                n += 1;
            }
            r += 1;
        }
        c += 1;
    }
    let mut s = 0;
    while s < 64 {
        let (st, v) = splitmix(state);
        state = st;
        keys.promoted[s] = v;
        s += 1;
    }
    keys
}

pub(crate) static KEYS: Keys = generate();

#[inline]
pub(crate) fn piece(color: Color, role: Role, sq: Square) -> u64 {
    KEYS.pieces[color.index()][role.index()][sq.index()]
}

#[inline]
pub(crate) fn castling(rights: u8) -> u64 {
    KEYS.castling[usize::from(rights & 15)]
}

#[inline]
pub(crate) fn ep_file(file: u32) -> u64 {
    KEYS.ep_file[(file & 7) as usize]
}

#[inline]
pub(crate) fn black_to_move() -> u64 {
    KEYS.black_to_move
}
