//! UCI (coordinate) move notation: `e2e4`, `e7e8q`, drops `N@f3`, the null move `0000`, and
//! castling as the king's move `e1g1` in standard chess or as the king taking its own rook
//! (`e1h1`, `b1a1`) in Chess960, as engines with `UCI_Chess960` write it. Reading accepts
//! both forms in both variants where they are unambiguous: a king-takes-own-rook text is always
//! castling, and a king's move to the g or c file is castling when no ordinary king move
//! matches it.

use super::{Chess, Move, MoveKind};
use crate::bitboard::{Bitboard, attacks};
use crate::position::{IllegalReason, MoveError};
use crate::types::{Piece, Role, Square};
use std::fmt;
use std::str::FromStr;

/// A move in UCI notation, parsed but not yet checked against a position.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Uci {
    /// A piece moves (`e2e4`, `e7e8q`).
    Normal {
        /// Origin.
        from: Square,
        /// Destination.
        to: Square,
        /// Promotion role, if given.
        promotion: Option<Role>,
    },
    /// A piece is dropped from the reserve (`N@f3`).
    Drop {
        /// The dropped role.
        role: Role,
        /// Destination.
        to: Square,
    },
    /// The null move `0000`.
    Null,
}

/// The text is not UCI notation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UciSyntaxError {
    /// What is wrong.
    pub reason: &'static str,
}

impl fmt::Display for UciSyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason)
    }
}

impl std::error::Error for UciSyntaxError {}

impl FromStr for Uci {
    type Err = UciSyntaxError;

    fn from_str(s: &str) -> Result<Uci, UciSyntaxError> {
        let err = |reason| Err(UciSyntaxError { reason });
        if s == "0000" {
            return Ok(Uci::Null);
        }
        if let Some((role, sq)) = s.split_once('@') {
            let mut chars = role.chars();
            let role = match (chars.next(), chars.next()) {
                (None, _) => Role::Pawn,
                (Some(c), None) if c.is_ascii_uppercase() || c == 'p' => match Role::from_char(c) {
                    Some(r) => r,
                    None => return err("unknown piece letter before '@'"),
                },
                _ => return err("a drop is a piece letter, '@' and a square (N@f3)"),
            };
            let to = match Square::parse(sq) {
                Some(sq) => sq,
                None => return err("invalid drop square"),
            };
            return Ok(Uci::Drop { role, to });
        }
        if !(4..=5).contains(&s.len()) || !s.is_ascii() {
            return err("expected 4 or 5 characters: origin, destination, optional promotion");
        }
        let (Some(from), Some(to)) = (Square::parse(&s[0..2]), Square::parse(&s[2..4])) else {
            return err("invalid square");
        };
        let promotion = match s[4..].chars().next() {
            None => None,
            Some(c) => match Role::from_char(c) {
                Some(r) => Some(r),
                None => return err("invalid promotion letter"),
            },
        };
        if from == to {
            return err("origin and destination are the same square");
        }
        Ok(Uci::Normal {
            from,
            to,
            promotion,
        })
    }
}

impl fmt::Display for Uci {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Uci::Normal {
                from,
                to,
                promotion,
            } => {
                write!(f, "{from}{to}")?;
                if let Some(r) = promotion {
                    write!(f, "{}", r.char())?;
                }
                Ok(())
            }
            Uci::Drop { role, to } => write!(f, "{}@{to}", role.char().to_ascii_uppercase()),
            Uci::Null => f.write_str("0000"),
        }
    }
}

impl Uci {
    /// The UCI form of a move: castling as the king's move to the g or c file, or (for
    /// castling in a Chess960 position) as the king taking its own rook.
    pub fn from_move(m: Move) -> Uci {
        Uci::from_move_as(m, m.is_chess960_castle())
    }

    /// The UCI form of a move; with `chess960`, castling is written as the king taking its own
    /// rook (`UCI_Chess960`).
    pub fn from_move_as(m: Move, chess960: bool) -> Uci {
        match m.kind() {
            MoveKind::Drop(role) => Uci::Drop { role, to: m.to() },
            MoveKind::Castle if !chess960 => Uci::Normal {
                from: m.from(),
                to: m.castling_targets().0,
                promotion: None,
            },
            kind => Uci::Normal {
                from: m.from(),
                to: m.to(),
                promotion: match kind {
                    MoveKind::Promotion(r) => Some(r),
                    _ => None,
                },
            },
        }
    }

    /// The legal move this UCI names in `pos`, or why there is none.
    pub fn to_move(self, pos: &Chess) -> Result<Move, IllegalReason> {
        let (from, to, promotion) = match self {
            Uci::Normal {
                from,
                to,
                promotion,
            } => (from, to, promotion),
            Uci::Drop { .. } => return Err(IllegalReason::CannotReach),
            Uci::Null => return Err(IllegalReason::CannotReach),
        };
        let legal = pos.legal_moves();
        let king_moves = pos.board.piece_at(from)
            == Some(Piece {
                color: pos.turn,
                role: Role::King,
            });
        let own_rook = Some(Piece {
            color: pos.turn,
            role: Role::Rook,
        });
        let castles = || {
            legal
                .iter()
                .copied()
                .filter(|m| m.kind() == MoveKind::Castle)
        };
        if king_moves && pos.board.piece_at(to) == own_rook {
            // King takes own rook: castling with that rook, in either variant.
            return castles()
                .find(|m| m.from() == from && m.to() == to)
                .ok_or(IllegalReason::CastlingNotAllowed);
        }
        let found = legal.iter().copied().find(|m| {
            m.kind() != MoveKind::Castle
                && m.from() == from
                && m.to() == to
                && m.promotion_role() == promotion
        });
        if let Some(m) = found {
            return Ok(m);
        }
        if king_moves && promotion.is_none() {
            // The king's move to its castling square (e1g1), when no ordinary move matches.
            if let Some(m) = castles().find(|m| m.from() == from && m.castling_targets().0 == to) {
                return Ok(m);
            }
        }
        Err(diagnose(pos, from, to, promotion))
    }
}

/// Explains why `from`-`to` (with `promotion`) is not a legal move in `pos`.
pub(crate) fn diagnose(
    pos: &Chess,
    from: Square,
    to: Square,
    promotion: Option<Role>,
) -> IllegalReason {
    let b = &pos.board;
    let us = pos.turn;
    let Some(piece) = b.piece_at(from) else {
        return IllegalReason::NoPiece {
            square: from.to_string(),
        };
    };
    if piece.color != us {
        return IllegalReason::WrongSide {
            square: from.to_string(),
        };
    }
    let occupied = b.occupied();
    let ours = b.by_color(us);
    let last_rank = to.rank() == us.fold(7, 0);
    if piece.role == Role::King
        && from.rank() == to.rank()
        && from.rank() == us.fold(0, 7)
        && (from.file().abs_diff(to.file()) == 2
            || (matches!(to.file(), 2 | 6) && !attacks::king(from).contains(to)))
    {
        return IllegalReason::CastlingNotAllowed;
    }
    let (geometry, reach) = match piece.role {
        Role::Pawn => {
            let dir: i32 = us.fold(8, -8);
            let one = from.offset(dir);
            let two = one.and_then(|s| s.offset(dir));
            let start = from.rank() == us.fold(1, 6);
            let mut geometry = attacks::pawn(us, from);
            let mut reach = attacks::pawn(us, from) & b.by_color(!us);
            if let Some(ep) = pos.ep_square {
                reach |= attacks::pawn(us, from) & Bitboard::from_square(ep);
            }
            if let Some(one) = one {
                geometry.add(one);
                if !occupied.contains(one) {
                    reach.add(one);
                    if let Some(two) = two.filter(|_| start)
                        && !occupied.contains(two)
                    {
                        reach.add(two);
                    }
                }
            }
            if let Some(two) = two.filter(|_| start) {
                geometry.add(two);
            }
            (geometry, reach)
        }
        Role::Knight => (attacks::knight(from), attacks::knight(from)),
        Role::King => (attacks::king(from), attacks::king(from)),
        Role::Bishop => (
            attacks::bishop(from, Bitboard::EMPTY),
            attacks::bishop(from, occupied),
        ),
        Role::Rook => (
            attacks::rook(from, Bitboard::EMPTY),
            attacks::rook(from, occupied),
        ),
        Role::Queen => (
            attacks::queen(from, Bitboard::EMPTY),
            attacks::queen(from, occupied),
        ),
    };
    if !geometry.contains(to) {
        return IllegalReason::CannotReach;
    }
    if !(reach & !ours).contains(to) {
        return IllegalReason::Blocked;
    }
    let is_promotion = piece.role == Role::Pawn && last_rank;
    match promotion {
        None if is_promotion => return IllegalReason::PromotionRequired,
        Some(_) if !is_promotion => return IllegalReason::BadPromotion,
        Some(Role::Pawn | Role::King) => return IllegalReason::BadPromotion,
        _ => {}
    }
    IllegalReason::LeavesKingInCheck
}

/// Whether `text` has the shape of a UCI move (so [`Notation::Auto`](crate::Notation) reads it
/// as UCI rather than SAN).
pub fn looks_like_uci(text: &str) -> bool {
    let b = text.as_bytes();
    let sq = |f: u8, r: u8| (b'a'..=b'h').contains(&f) && (b'1'..=b'8').contains(&r);
    match b {
        [b'0', b'0', b'0', b'0'] => true,
        [p, b'@', f, r] => p.is_ascii_uppercase() && sq(*f, *r),
        [f1, r1, f2, r2] => sq(*f1, *r1) && sq(*f2, *r2),
        [f1, r1, f2, r2, p] => sq(*f1, *r1) && sq(*f2, *r2) && p.is_ascii_alphabetic(),
        [b'@', f, r] => sq(*f, *r),
        _ => false,
    }
}

/// Parses UCI text and checks it against `pos`.
pub fn parse_legal(pos: &Chess, text: &str) -> Result<Move, MoveError> {
    let uci: Uci = text
        .parse()
        .map_err(|e: UciSyntaxError| MoveError::syntax(text, e.reason))?;
    if matches!(uci, Uci::Drop { .. }) {
        return Err(MoveError::illegal(text, IllegalReason::CannotReach));
    }
    uci.to_move(pos).map_err(|r| MoveError::illegal(text, r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::Position;

    fn reason(fen: &str, uci: &str) -> IllegalReason {
        let pos = Chess::from_fen(fen).unwrap();
        match parse_legal(&pos, uci) {
            Err(MoveError::Illegal { reason, .. }) => reason,
            other => panic!("expected illegal, got {other:?}"),
        }
    }

    #[test]
    fn round_trip_and_syntax() {
        for s in ["e2e4", "e7e8q", "N@f3", "P@e4", "0000"] {
            assert_eq!(s.parse::<Uci>().unwrap().to_string(), s);
        }
        for s in [
            "", "e2", "e2e9", "e2e4x", "i2e4", "e2e4qq", "e2e2", "X@e4", "Nf3",
        ] {
            assert!(s.parse::<Uci>().is_err(), "{s}");
        }
    }

    #[test]
    fn illegal_reasons() {
        let start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
        assert_eq!(
            reason(start, "e3e4"),
            IllegalReason::NoPiece {
                square: "e3".into()
            }
        );
        assert_eq!(
            reason(start, "e7e5"),
            IllegalReason::WrongSide {
                square: "e7".into()
            }
        );
        assert_eq!(reason(start, "a1a3"), IllegalReason::Blocked);
        assert_eq!(reason(start, "g1g3"), IllegalReason::CannotReach);
        assert_eq!(reason(start, "e1g1"), IllegalReason::CastlingNotAllowed);
        assert_eq!(reason(start, "e2e4q"), IllegalReason::BadPromotion);
        assert_eq!(
            reason("4k3/P7/8/8/8/8/8/4K3 w - - 0 1", "a7a8"),
            IllegalReason::PromotionRequired
        );
        assert_eq!(
            reason("4k3/8/8/8/8/4r3/8/4K3 w - - 0 1", "e1e2"),
            IllegalReason::LeavesKingInCheck
        );
        // Pinned knight.
        assert_eq!(
            reason("4k3/4r3/8/8/8/8/4N3/4K3 w - - 0 1", "e2c3"),
            IllegalReason::LeavesKingInCheck
        );
    }

    #[test]
    fn king_takes_rook_castling() {
        let pos = Chess::from_fen("4k3/8/8/8/8/8/8/4K2R w K - 0 1").unwrap();
        let m = parse_legal(&pos, "e1h1").unwrap();
        assert_eq!(m.kind(), MoveKind::Castle);
        assert_eq!(Uci::from_move(m).to_string(), "e1g1");
        assert_eq!(parse_legal(&pos, "e1g1").unwrap(), m);
        assert_eq!(Uci::from_move_as(m, true).to_string(), "e1h1");
    }

    #[test]
    fn chess960_castling_forms() {
        let sq = |s: &str| Square::parse(s).unwrap();
        // King b1, rooks a1 and g1: the king lands on the g1 rook's square.
        let pos = Chess::from_fen_as("1k6/8/8/8/8/8/8/RK4R1 w GA - 0 1", true).unwrap();
        let short = parse_legal(&pos, "b1g1").unwrap();
        assert_eq!(short.kind(), MoveKind::Castle);
        assert_eq!(short.castling_targets(), (sq("g1"), sq("f1")));
        let long = parse_legal(&pos, "b1a1").unwrap();
        assert_eq!(long.castling_targets(), (sq("c1"), sq("d1")));
        assert_eq!(pos.move_to_uci(long), "b1a1");
        // b1c1 is an ordinary king move here, so the standard form cannot mean castling.
        assert_eq!(parse_legal(&pos, "b1c1").unwrap().kind(), MoveKind::Normal);
        // The king already on g1: it stays, the rook jumps to f1.
        let pos = Chess::from_fen_as("6k1/8/8/8/8/8/8/6KR w H - 0 1", true).unwrap();
        let m = parse_legal(&pos, "g1h1").unwrap();
        assert_eq!(m.kind(), MoveKind::Castle);
        let mut after = pos;
        after.play_unchecked(m);
        assert_eq!(after.to_fen(), "6k1/8/8/8/8/8/8/5RK1 b - - 1 1");
    }
}
