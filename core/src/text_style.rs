//! How the text diagrams write their pieces: FEN-style letters, or Unicode chess symbols.
//!
//! Every variant's text diagram (`chess::render::to_text_with`, `glinski::render::to_text_with`,
//! `byzantine::render::to_text_with`, and [`AnyPosition::render_text_with`]) takes a
//! [`TextStyle`]. In the [`Symbols`](TextStyle::Symbols) style each piece is one character, like
//! its letter, so the diagrams keep their geometry: a symbol stands exactly where the letter
//! stood, and empty cells stay `.`.
//!
//! | Role | White | Black | Letters |
//! |------|-------|-------|---------|
//! | King | ♔ | ♚ | `K` `k` |
//! | Queen | ♕ | ♛ | `Q` `q` |
//! | Rook | ♖ | ♜ | `R` `r` |
//! | Bishop | ♗ | ♝ | `B` `b` |
//! | Knight | ♘ | ♞ | `N` `n` |
//! | Pawn | ♙ | ♟ | `P` `p` |
//!
//! Byzantine chess has no bishop or queen; its two old pieces take the symbols of the modern
//! pieces that descend from them: the elephant (alfil, letter `E`) is drawn ♗ / ♝ and the
//! counselor (fers, letter `F`) ♕ / ♛. Byzantine pawns keep their direction mark after the
//! symbol (`♙+`, `♟-`).
//!
//! [`AnyPosition::render_text_with`]: crate::AnyPosition::render_text_with

use crate::types::{Color, Piece, Role};

/// The way a text diagram writes a piece. The default is [`Letters`](TextStyle::Letters).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum TextStyle {
    /// FEN letters: upper case for White (`K Q R B N P`), lower case for Black.
    #[default]
    Letters,
    /// Unicode chess symbols: White `♔ ♕ ♖ ♗ ♘ ♙`, Black `♚ ♛ ♜ ♝ ♞ ♟`.
    Symbols,
}

impl TextStyle {
    /// Both styles, letters first.
    pub const ALL: [TextStyle; 2] = [TextStyle::Letters, TextStyle::Symbols];

    /// The character for `piece` in this style: its FEN letter, or its [symbol](Self::symbol).
    pub const fn piece_char(self, piece: Piece) -> char {
        match self {
            TextStyle::Letters => piece.char(),
            TextStyle::Symbols => TextStyle::symbol(piece),
        }
    }

    /// The Unicode chess symbol of `piece` (U+2654 to U+265F): White ♔♕♖♗♘♙, Black ♚♛♜♝♞♟.
    pub const fn symbol(piece: Piece) -> char {
        match (piece.color, piece.role) {
            (Color::White, Role::King) => '♔',
            (Color::White, Role::Queen) => '♕',
            (Color::White, Role::Rook) => '♖',
            (Color::White, Role::Bishop) => '♗',
            (Color::White, Role::Knight) => '♘',
            (Color::White, Role::Pawn) => '♙',
            (Color::Black, Role::King) => '♚',
            (Color::Black, Role::Queen) => '♛',
            (Color::Black, Role::Rook) => '♜',
            (Color::Black, Role::Bishop) => '♝',
            (Color::Black, Role::Knight) => '♞',
            (Color::Black, Role::Pawn) => '♟',
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_piece_has_its_own_symbol() {
        let mut seen = Vec::new();
        for color in Color::ALL {
            for role in Role::ALL {
                let piece = Piece { color, role };
                assert_eq!(TextStyle::Letters.piece_char(piece), piece.char());
                let symbol = TextStyle::Symbols.piece_char(piece);
                assert_eq!(symbol, TextStyle::symbol(piece));
                assert!(('\u{2654}'..='\u{265f}').contains(&symbol), "{symbol}");
                assert!(!seen.contains(&symbol));
                seen.push(symbol);
            }
        }
        let row = |color| -> String {
            [
                Role::King,
                Role::Queen,
                Role::Rook,
                Role::Bishop,
                Role::Knight,
                Role::Pawn,
            ]
            .into_iter()
            .map(|role| TextStyle::symbol(Piece { color, role }))
            .collect()
        };
        assert_eq!(row(Color::White), "♔♕♖♗♘♙");
        assert_eq!(row(Color::Black), "♚♛♜♝♞♟");
        assert_eq!(TextStyle::default(), TextStyle::Letters);
    }
}
