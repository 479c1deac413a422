//! The 960 start positions of Chess960 (Fischer random chess), numbered 0–959 in the standard
//! (Scharnagl) numbering, in which 518 is the classical start position.
//!
//! A number `n` places the back rank as follows: `n % 4` puts the light-squared bishop on the
//! b, d, f or h file; `(n / 4) % 4` the dark-squared bishop on the a, c, e or g file;
//! `(n / 16) % 6` the queen on that empty square (counting from the a file); `n / 96` (0–9)
//! picks the two knights' places among the five squares left (`NN---`, `N-N--`, `N--N-`,
//! `N---N`, `-NN--`, `-N-N-`, `-N--N`, `--NN-`, `--N-N`, `---NN`); the three squares left take
//! rook, king, rook in that order. Black mirrors White.

use super::{Board, CastlingRights, Chess};
use crate::types::{Color, Piece, Role, Square};

/// How many Chess960 start positions there are.
pub const COUNT: u32 = 960;

/// The number of the classical start position.
pub const CLASSICAL: u32 = 518;

/// Where the two knights go among the five squares left after the bishops and the queen.
const KNIGHTS: [(usize, usize); 10] = [
    (0, 1),
    (0, 2),
    (0, 3),
    (0, 4),
    (1, 2),
    (1, 3),
    (1, 4),
    (2, 3),
    (2, 4),
    (3, 4),
];

/// The back rank of start position `n` (a to h), or `None` when `n` is 960 or more.
pub fn back_rank(n: u32) -> Option<[Role; 8]> {
    if n >= COUNT {
        return None;
    }
    let mut rank: [Option<Role>; 8] = [None; 8];
    let n = n as usize;
    rank[2 * (n % 4) + 1] = Some(Role::Bishop);
    rank[2 * ((n / 4) % 4)] = Some(Role::Bishop);
    let empty = |rank: &[Option<Role>; 8]| -> Vec<usize> {
        (0..8).filter(|&f| rank[f].is_none()).collect()
    };
    let free = empty(&rank);
    rank[free[(n / 16) % 6]] = Some(Role::Queen);
    let free = empty(&rank);
    let (a, b) = KNIGHTS[n / 96];
    rank[free[a]] = Some(Role::Knight);
    rank[free[b]] = Some(Role::Knight);
    let free = empty(&rank);
    rank[free[0]] = Some(Role::Rook);
    rank[free[1]] = Some(Role::King);
    rank[free[2]] = Some(Role::Rook);
    Some(rank.map(|r| r.expect("every file filled")))
}

/// The number of the start position whose back rank is `rank`, if it is one.
pub fn number_of(rank: &[Role; 8]) -> Option<u32> {
    (0..COUNT).find(|&n| back_rank(n).as_ref() == Some(rank))
}

impl Chess {
    /// Chess960 start position `n` (0–959; 518 is the classical arrangement), with all four
    /// castling rights. `None` when `n` is out of range.
    pub fn chess960_start(n: u32) -> Option<Chess> {
        let rank = back_rank(n)?;
        let mut board = Board::empty();
        let mut castling = CastlingRights::NONE;
        let king_file = rank.iter().position(|&r| r == Role::King).expect("a king") as u32;
        for color in Color::ALL {
            let (back, pawns) = color.fold((0, 1), (7, 6));
            for (file, &role) in rank.iter().enumerate() {
                let file = file as u32;
                board.toggle(
                    Piece { color, role },
                    Square::from_coords(file, back).expect("on board"),
                );
                board.toggle(
                    Piece {
                        color,
                        role: Role::Pawn,
                    },
                    Square::from_coords(file, pawns).expect("on board"),
                );
                if role == Role::Rook {
                    castling.add_with_rook(color, file > king_file, file);
                }
            }
        }
        let mut pos = Chess {
            board,
            turn: Color::White,
            castling,
            ep_square: None,
            halfmoves: 0,
            fullmoves: 1,
            hash: 0,
            chess960: true,
        };
        pos.hash = pos.compute_hash();
        Some(pos)
    }

    /// The Chess960 start position number of this position's arrangement, when it is a start
    /// position (all pieces home, all four rights, White to move, no move made).
    pub fn chess960_number(&self) -> Option<u32> {
        let mut rank = [Role::Pawn; 8];
        for (file, slot) in rank.iter_mut().enumerate() {
            *slot = self
                .board
                .role_at(Square::from_coords(file as u32, 0).expect("on board"))?;
        }
        let n = number_of(&rank)?;
        let start = Chess::chess960_start(n)?;
        (start.board == self.board
            && start.castling == self.castling
            && self.turn == Color::White
            && self.ep_square.is_none())
        .then_some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::{Position, perft};

    #[test]
    fn numbering_matches_the_standard_tables() {
        let fen = |n| Chess::chess960_start(n).unwrap().to_fen();
        assert_eq!(
            fen(518),
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
        );
        assert_eq!(
            fen(0),
            "bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w KQkq - 0 1"
        );
        assert_eq!(
            fen(959),
            "rkrnnqbb/pppppppp/8/8/8/8/PPPPPPPP/RKRNNQBB w KQkq - 0 1"
        );
        assert!(Chess::chess960_start(960).is_none());
        let mut seen = std::collections::HashSet::new();
        for n in 0..COUNT {
            let pos = Chess::chess960_start(n).unwrap();
            assert!(seen.insert(pos.board), "{n} repeats a back rank");
            assert_eq!(pos.chess960_number(), Some(n));
            assert_eq!(Chess::from_fen_as(&pos.to_fen(), true).unwrap(), pos);
            assert_eq!(
                Chess::from_fen_as(&pos.to_shredder_fen(), true).unwrap(),
                pos
            );
        }
        assert_eq!(perft(&Chess::chess960_start(518).unwrap(), 3), 8902);
        assert_eq!(
            Chess::chess960_start(518).unwrap().variant().name(),
            "chess960"
        );
    }
}
