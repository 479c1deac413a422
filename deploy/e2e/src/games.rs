//! What the players of the day play: a scripted game that ends in mate, random legal moves that
//! never give check (so they never end a game by themselves), and the piece count of a bughouse
//! match (which a lost or duplicated piece would change).

use arbiter_core::{AnyMove, AnyPosition, Locale, Notation, Position, Variant};

/// Morphy's "Opera game" (Paris, 1858) in coordinate notation: 33 plies, ending in mate with a
/// rook on the eighth rank next to the king, protected by a bishop. The check touches the king,
/// so no drop could block it: it is mate in bughouse too, whatever the reserves hold.
pub const OPERA: [&str; 33] = [
    "e2e4", "e7e5", "g1f3", "d7d6", "d2d4", "c8g4", "d4e5", "g4f3", "d1f3", "d6e5", "f1c4", "g8f6",
    "f3b3", "d8e7", "b1c3", "c7c6", "c1g5", "b7b5", "c3b5", "c6b5", "c4b5", "b8d7", "e1c1", "a8d8",
    "d1d7", "d8d7", "h1d1", "e7e6", "b5d7", "f6d7", "b3b8", "d7b8", "d1d8",
];

/// A seeded xorshift64 generator: the same seed gives the same choices, so a chess game of
/// random moves is the same game on every run (its moves depend only on its positions).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (0 is replaced: xorshift needs a non-zero state).
    pub fn new(seed: u64) -> Rng {
        Rng(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }

    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value below `n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// A random legal move of `position` that does not give check, in coordinate notation; a
/// checking move only when nothing else is legal; `None` when there is no legal move (a bughouse
/// player waiting for a piece, or the game is over).
///
/// A move that gives no check cannot mate, so a game of these moves never ends in mate; the
/// plans of the day end their games themselves.
pub fn quiet_move(position: &AnyPosition, rng: &mut Rng) -> Option<String> {
    let legal = position.legal_moves();
    if legal.is_empty() {
        return None;
    }
    let quiet: Vec<_> = legal
        .iter()
        .copied()
        .filter(|&m| !position.gives_check(m))
        .collect();
    let m = if quiet.is_empty() {
        legal[rng.below(legal.len())]
    } else {
        quiet[rng.below(quiet.len())]
    };
    Some(position.move_to_uci(m))
}

/// The position of a board as the match service sends it (`BoardState.position`).
///
/// # Errors
/// The parser's message, when the text is not a position of `variant`.
pub fn board_position(variant: Variant, text: &str) -> Result<AnyPosition, String> {
    if text.is_empty() {
        return AnyPosition::start(variant).map_err(|e| format!("{variant:?} start: {e}"));
    }
    AnyPosition::from_text(variant, text).map_err(|e| format!("{text:?}: {e}"))
}

/// Plays the coordinate-notation move `uci` on `position`.
///
/// # Errors
/// When the move cannot be read or is not legal there.
pub fn play_uci(position: &AnyPosition, uci: &str) -> Result<AnyPosition, String> {
    let m: AnyMove = position
        .parse_move(uci, Notation::Uci, Locale::default())
        .map_err(|e| format!("{uci}: {e}"))?;
    position.play(m).ok_or_else(|| format!("{uci}: refused"))
}

/// White's and Black's pieces on a board's placement (the FEN's first field, without a
/// bracketed reserve) plus the given reserves (FEN letters). In a bughouse match every captured
/// piece goes to a reserve of its own colour on the other board, so across both boards each
/// colour always counts 32.
pub fn piece_count(position: &str, white_reserve: &str, black_reserve: &str) -> (usize, usize) {
    let placement = position.split(' ').next().unwrap_or("");
    let placement = placement.split('[').next().unwrap_or("");
    let count = |s: &str, upper: bool| {
        s.chars()
            .filter(|c| c.is_ascii_alphabetic() && c.is_ascii_uppercase() == upper)
            .count()
    };
    (
        count(placement, true) + count(white_reserve, true),
        count(placement, false) + count(black_reserve, false),
    )
}
