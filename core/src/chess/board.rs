//! Piece placement on the 8×8 board.

use crate::bitboard::{Bitboard, attacks};
use crate::types::{Color, Piece, Role, Square};
use std::fmt;

/// Where the pieces stand: one bitboard per role and one per colour.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct Board {
    roles: [Bitboard; 6],
    colors: [Bitboard; 2],
}

impl Default for Board {
    fn default() -> Board {
        Board::standard()
    }
}

impl Board {
    /// No pieces.
    pub const fn empty() -> Board {
        Board {
            roles: [Bitboard::EMPTY; 6],
            colors: [Bitboard::EMPTY; 2],
        }
    }

    /// The standard start position.
    pub const fn standard() -> Board {
        Board {
            roles: [
                Bitboard(0x00ff_0000_0000_ff00),
                Bitboard(0x4200_0000_0000_0042),
                Bitboard(0x2400_0000_0000_0024),
                Bitboard(0x8100_0000_0000_0081),
                Bitboard(0x0800_0000_0000_0008),
                Bitboard(0x1000_0000_0000_0010),
            ],
            colors: [Bitboard(0xffff), Bitboard(0xffff_0000_0000_0000)],
        }
    }

    /// Every occupied square.
    #[inline]
    pub fn occupied(&self) -> Bitboard {
        self.colors[0] | self.colors[1]
    }

    /// The squares of `color`'s pieces.
    #[inline]
    pub fn by_color(&self, color: Color) -> Bitboard {
        self.colors[color.index()]
    }

    /// The squares of pieces of `role`, both colours.
    #[inline]
    pub fn by_role(&self, role: Role) -> Bitboard {
        self.roles[role.index()]
    }

    /// The squares of `piece`.
    #[inline]
    pub fn by_piece(&self, piece: Piece) -> Bitboard {
        self.roles[piece.role.index()] & self.colors[piece.color.index()]
    }

    /// Rooks and queens.
    #[inline]
    pub fn rooks_and_queens(&self) -> Bitboard {
        self.roles[Role::Rook.index()] | self.roles[Role::Queen.index()]
    }

    /// Bishops and queens.
    #[inline]
    pub fn bishops_and_queens(&self) -> Bitboard {
        self.roles[Role::Bishop.index()] | self.roles[Role::Queen.index()]
    }

    /// The king of `color`, if exactly one stands on the board.
    #[inline]
    pub fn king_of(&self, color: Color) -> Option<Square> {
        (self.roles[Role::King.index()] & self.colors[color.index()]).single()
    }

    /// The role of the piece on `sq`.
    #[inline]
    pub fn role_at(&self, sq: Square) -> Option<Role> {
        if !self.occupied().contains(sq) {
            return None;
        }
        Role::ALL
            .into_iter()
            .find(|r| self.roles[r.index()].contains(sq))
    }

    /// The colour of the piece on `sq`.
    #[inline]
    pub fn color_at(&self, sq: Square) -> Option<Color> {
        if self.colors[0].contains(sq) {
            Some(Color::White)
        } else if self.colors[1].contains(sq) {
            Some(Color::Black)
        } else {
            None
        }
    }

    /// The piece on `sq`.
    #[inline]
    pub fn piece_at(&self, sq: Square) -> Option<Piece> {
        let color = self.color_at(sq)?;
        let role = self.role_at(sq)?;
        Some(Piece { color, role })
    }

    /// Removes and returns the piece on `sq`.
    pub fn remove_piece_at(&mut self, sq: Square) -> Option<Piece> {
        let piece = self.piece_at(sq)?;
        self.toggle(piece, sq);
        Some(piece)
    }

    /// Puts `piece` on `sq`, replacing whatever stood there.
    pub fn set_piece_at(&mut self, sq: Square, piece: Piece) {
        self.remove_piece_at(sq);
        self.toggle(piece, sq);
    }

    /// Flips `piece`'s presence on `sq` (the caller keeps the board consistent).
    #[inline]
    pub(crate) fn toggle(&mut self, piece: Piece, sq: Square) {
        self.roles[piece.role.index()].toggle(sq);
        self.colors[piece.color.index()].toggle(sq);
    }

    /// Pieces of `attacker` that attack `sq`, with `occupied` as the blocking set.
    #[inline]
    pub fn attackers_to(&self, sq: Square, attacker: Color, occupied: Bitboard) -> Bitboard {
        (attacks::rook(sq, occupied) & self.rooks_and_queens()
            | attacks::bishop(sq, occupied) & self.bishops_and_queens()
            | attacks::knight(sq) & self.roles[Role::Knight.index()]
            | attacks::king(sq) & self.roles[Role::King.index()]
            | attacks::pawn(!attacker, sq) & self.roles[Role::Pawn.index()])
            & self.colors[attacker.index()]
    }

    /// The piece on every square, indexed by [`Square::index`] (one pass over the bitboards).
    pub fn mailbox(&self) -> [Option<Piece>; 64] {
        let mut squares = [None; 64];
        for color in Color::ALL {
            for role in Role::ALL {
                for sq in self.by_piece(Piece { color, role }) {
                    squares[sq.index()] = Some(Piece { color, role });
                }
            }
        }
        squares
    }

    /// Every piece with its square, a1 first.
    pub fn pieces(&self) -> impl Iterator<Item = (Square, Piece)> + '_ {
        self.occupied()
            .map(move |sq| (sq, self.piece_at(sq).expect("occupied square has a piece")))
    }

    /// Writes the FEN placement field (`rnbqkbnr/pppppppp/8/…`). Squares in `promoted` get a
    /// `~` after their letter (crazyhouse and bughouse).
    pub fn write_placement(&self, promoted: Bitboard, out: &mut String) {
        let mailbox = self.mailbox();
        for rank in (0..8).rev() {
            let mut empty = 0;
            for file in 0..8 {
                let sq = Square::from_coords(file, rank).expect("in range");
                match mailbox[sq.index()] {
                    None => empty += 1,
                    Some(p) => {
                        if empty > 0 {
                            out.push(char::from(b'0' + empty));
                            empty = 0;
                        }
                        out.push(p.char());
                        if promoted.contains(sq) {
                            out.push('~');
                        }
                    }
                }
            }
            if empty > 0 {
                out.push(char::from(b'0' + empty));
            }
            if rank > 0 {
                out.push('/');
            }
        }
    }
}

impl fmt::Debug for Board {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.write_placement(Bitboard::EMPTY, &mut s);
        write!(f, "Board({s})")
    }
}
