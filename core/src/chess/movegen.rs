//! Legal move generation without make-and-test: checkers and pinned pieces are computed once,
//! then every piece is limited to the squares that resolve check and stay on its pin line.
//! Only en passant (where two pieces leave a rank at once) is verified by a direct attack test.
//!
//! One pass can be narrowed ([`Filter`]) to the pieces on some squares and to tactical moves
//! only, so that a search can test one move's legality, or generate the captures alone for
//! quiescence, without generating every move. A narrowed pass yields exactly the moves of the
//! full one that pass the filter, in the same order.

use super::{Chess, Move, MoveKind, MoveList};
use crate::bitboard::{Bitboard, attacks};
use crate::types::{Color, Piece, Role, Square};

/// Which of the legal moves one generation pass produces.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Filter {
    /// Only moves of the pieces on these squares.
    pub(crate) from: Bitboard,
    /// Only tactical moves: captures (en passant included) and promotions.
    pub(crate) tactical_only: bool,
}

impl Filter {
    /// Every legal move.
    pub(crate) const ALL: Filter = Filter {
        from: Bitboard::FULL,
        tactical_only: false,
    };
    /// Captures and promotions.
    pub(crate) const TACTICAL: Filter = Filter {
        from: Bitboard::FULL,
        tactical_only: true,
    };
}

impl Chess {
    /// Our pieces that stand alone between our king and an enemy slider (absolutely pinned).
    #[inline]
    pub(crate) fn pinned(&self, king: Square) -> Bitboard {
        let b = &self.board;
        let us = self.turn;
        let them = b.by_color(!us);
        let occupied = b.occupied();
        let snipers = (attacks::rook(king, Bitboard::EMPTY) & b.rooks_and_queens()
            | attacks::bishop(king, Bitboard::EMPTY) & b.bishops_and_queens())
            & them;
        let mut pinned = Bitboard::EMPTY;
        for sniper in snipers {
            let between = attacks::between(king, sniper) & occupied;
            if !between.more_than_one() {
                pinned |= between;
            }
        }
        pinned & b.by_color(us)
    }

    /// Whether the en passant capture `from` → `ep` leaves our king safe.
    pub(crate) fn ep_is_legal(&self, king: Square, from: Square, ep: Square) -> bool {
        let b = &self.board;
        let captured = Square::from_coords(ep.file(), from.rank()).expect("on board");
        let occupied =
            (b.occupied() ^ Bitboard::from_square(from) ^ Bitboard::from_square(captured))
                | Bitboard::from_square(ep);
        let attackers =
            b.attackers_to(king, !self.turn, occupied) & !Bitboard::from_square(captured);
        attackers.is_empty()
    }

    /// Appends every legal move to `moves`.
    pub(crate) fn gen_legal(&self, moves: &mut MoveList) {
        self.gen_filtered(moves, Filter::ALL);
    }

    /// Whether the move `m` (of any chess position) is legal here: only the moves of the piece
    /// on its origin square are generated.
    pub(crate) fn is_legal_move(&self, m: Move) -> bool {
        if matches!(m.kind(), MoveKind::Drop(_)) {
            return false;
        }
        let mut moves = MoveList::new();
        self.gen_filtered(
            &mut moves,
            Filter {
                from: Bitboard::from_square(m.from()),
                tactical_only: false,
            },
        );
        moves.contains(&m)
    }

    /// Appends the legal moves that pass `filter` to `moves`, in the order of the full pass.
    pub(crate) fn gen_filtered(&self, moves: &mut MoveList, filter: Filter) {
        let b = &self.board;
        let us = self.turn;
        let them = !us;
        let ours = b.by_color(us);
        let occupied = b.occupied();
        let king = self.our_king();
        let checkers = b.attackers_to(king, them, occupied);
        // Where pieces (and pawns, capturing) may go as far as the filter is concerned.
        let wanted = if filter.tactical_only {
            b.by_color(them)
        } else {
            Bitboard::FULL
        };

        // King steps: test each target with the king lifted off the board, so sliders see
        // through the square it leaves.
        if filter.from.contains(king) {
            let without_king = occupied ^ Bitboard::from_square(king);
            for to in attacks::king(king) & !ours & wanted {
                if b.attackers_to(to, them, without_king).is_empty() {
                    moves.push(Move::normal(king, to));
                }
            }
        }

        let target = match checkers.single() {
            _ if checkers.more_than_one() => return,
            Some(checker) => attacks::between(king, checker) | checkers,
            None => {
                if !filter.tactical_only && filter.from.contains(king) {
                    self.gen_castling(king, moves);
                }
                !ours
            }
        };

        let pinned = self.pinned(king);
        let pieces = ours & filter.from;

        for from in b.by_role(Role::Knight) & pieces & !pinned {
            for to in attacks::knight(from) & target & wanted {
                moves.push(Move::normal(from, to));
            }
        }
        for from in b.bishops_and_queens() & pieces {
            let mut to_set = attacks::bishop(from, occupied) & target & wanted;
            if pinned.contains(from) {
                to_set &= attacks::line(king, from);
            }
            for to in to_set {
                moves.push(Move::normal(from, to));
            }
        }
        for from in b.rooks_and_queens() & pieces {
            let mut to_set = attacks::rook(from, occupied) & target & wanted;
            if pinned.contains(from) {
                to_set &= attacks::line(king, from);
            }
            for to in to_set {
                moves.push(Move::normal(from, to));
            }
        }

        self.gen_pawns(king, target, pinned, filter, moves);

        if let Some(ep) = self.ep_square {
            let pawns = b.by_piece(Piece {
                color: us,
                role: Role::Pawn,
            }) & filter.from;
            for from in attacks::pawn(them, ep) & pawns {
                if self.ep_is_legal(king, from, ep) {
                    moves.push(Move::en_passant(from, ep));
                }
            }
        }
    }

    /// Castling moves (the side to move is not in check). One rule covers standard chess and
    /// Chess960: every square the king and the rook cross or land on is empty but for those two
    /// pieces, no square the king crosses is attacked (tested with the king lifted), and the
    /// king's landing square is not attacked once both pieces have moved.
    fn gen_castling(&self, king: Square, moves: &mut MoveList) {
        let us = self.turn;
        let b = &self.board;
        let occupied = b.occupied();
        for king_side in [true, false] {
            let Some(rook) = self.castling.rook(us, king_side) else {
                continue;
            };
            let m = Move::castle_in(king, rook, self.chess960);
            let (king_to, rook_to) = m.castling_targets();
            let king_path = attacks::between(king, king_to) | Bitboard::from_square(king_to);
            let rook_path = attacks::between(rook, rook_to) | Bitboard::from_square(rook_to);
            let movers = Bitboard::from_square(king) | Bitboard::from_square(rook);
            if (occupied & !movers & (king_path | rook_path)).any() {
                continue;
            }
            let without_king = occupied ^ Bitboard::from_square(king);
            let mut crossed = attacks::between(king, king_to);
            if Iterator::any(&mut crossed, |sq| {
                b.attackers_to(sq, !us, without_king).any()
            }) {
                continue;
            }
            let after = (occupied & !movers)
                | Bitboard::from_square(king_to)
                | Bitboard::from_square(rook_to);
            if b.attackers_to(king_to, !us, after).any() {
                continue;
            }
            moves.push(m);
        }
    }

    #[inline]
    fn push_pawn_move(from: Square, to: Square, moves: &mut MoveList) {
        if Bitboard::BACKRANKS.contains(to) {
            for role in Role::PROMOTIONS {
                moves.push(Move::promotion(from, to, role));
            }
        } else {
            moves.push(Move::normal(from, to));
        }
    }

    /// Pawn moves (not en passant) to `target`, of the pawns `filter` names; pushes only when
    /// they promote if it asks for tactical moves.
    fn gen_pawns(
        &self,
        king: Square,
        target: Bitboard,
        pinned: Bitboard,
        filter: Filter,
        moves: &mut MoveList,
    ) {
        let b = &self.board;
        let us = self.turn;
        let pawns = b.by_piece(Piece {
            color: us,
            role: Role::Pawn,
        }) & filter.from;
        // Push targets: every one, or only the promotions.
        let push_target = if filter.tactical_only {
            target & Bitboard::BACKRANKS
        } else {
            target
        };
        let theirs = b.by_color(!us);
        let empty = !b.occupied();
        let (up, third_rank): (i32, u32) = match us {
            Color::White => (8, 2),
            Color::Black => (-8, 5),
        };
        let back = |to: Square, delta: i32| {
            Square::from_index_unchecked((to.index() as i32 - delta) as u32)
        };

        // Unpinned pawns, set-wise.
        let free = pawns & !pinned;
        let single = free.forward(us) & empty;
        let double = (single & Bitboard::rank(third_rank)).forward(us) & empty & push_target;
        for to in single & push_target {
            Chess::push_pawn_move(back(to, up), to, moves);
        }
        for to in double {
            moves.push(Move::normal(back(to, 2 * up), to));
        }
        // Captures towards the a-file and towards the h-file.
        let (west, east) = match us {
            Color::White => (
                Bitboard((free & !Bitboard::file(0)).0 << 7),
                Bitboard((free & !Bitboard::file(7)).0 << 9),
            ),
            Color::Black => (
                Bitboard((free & !Bitboard::file(0)).0 >> 9),
                Bitboard((free & !Bitboard::file(7)).0 >> 7),
            ),
        };
        let (west_delta, east_delta) = match us {
            Color::White => (7, 9),
            Color::Black => (-9, -7),
        };
        for to in west & theirs & target {
            Chess::push_pawn_move(back(to, west_delta), to, moves);
        }
        for to in east & theirs & target {
            Chess::push_pawn_move(back(to, east_delta), to, moves);
        }

        // Pinned pawns move only along the pin line.
        for from in pawns & pinned {
            let line = attacks::line(king, from);
            let one = back(from, -up);
            if empty.contains(one) && line.contains(one) {
                if push_target.contains(one) {
                    Chess::push_pawn_move(from, one, moves);
                }
                let two = back(one, -up);
                if from.rank() == us.fold(1, 6) && empty.contains(two) && push_target.contains(two)
                {
                    moves.push(Move::normal(from, two));
                }
            }
            for to in attacks::pawn(us, from) & theirs & target & line {
                Chess::push_pawn_move(from, to, moves);
            }
        }
    }
}
