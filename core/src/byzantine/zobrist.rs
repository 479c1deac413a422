//! Zobrist keys of Byzantine positions, generated at compile time.

/// Zobrist keys: `[color][role][cell]`, pawn direction, side to move, citadel kings.
pub(super) struct Keys {
    pub(super) pieces: [[[u64; 64]; 6]; 2],
    pub(super) pawn_up: [u64; 64],
    pub(super) black: u64,
    pub(super) citadel: [[u64; 4]; 2],
}

const fn keys() -> Keys {
    let mut k = Keys {
        pieces: [[[0; 64]; 6]; 2],
        pawn_up: [0; 64],
        black: 0,
        citadel: [[0; 4]; 2],
    };
    let mut state: u64 = 0x4279_7a61_6e74_696e; // "Byzantin"
    const fn next(state: &mut u64) -> u64 {
        let (st, v) = crate::chess::zobrist::splitmix(*state);
        *state = st;
        v
    }
    let mut c = 0;
    while c < 2 {
        let mut r = 0;
        while r < 6 {
            let mut s = 0;
            while s < 64 {
                k.pieces[c][r][s] = next(&mut state);
                s += 1;
            }
            r += 1;
        }
        let mut i = 0;
        while i < 4 {
            k.citadel[c][i] = next(&mut state);
            i += 1;
        }
        c += 1;
    }
    let mut s = 0;
    while s < 64 {
        k.pawn_up[s] = next(&mut state);
        s += 1;
    }
    k.black = next(&mut state);
    k
}

pub(super) static KEYS: Keys = keys();
