//! Standard algebraic notation: strict writing, lenient reading (`0-0`, missing `+`, `e8Q`,
//! `exd6e.p.`, long forms such as `Ng1-f3`), English letters or the Italian locale.

use super::uci::diagnose;
use super::{Chess, Move, MoveKind};
use crate::bitboard::{Bitboard, attacks};
use crate::position::{IllegalReason, Locale, MoveError};
use crate::types::{Role, Square};

/// The piece letter of `role` in `locale` (`None` for the pawn).
pub fn role_letter(role: Role, locale: Locale) -> Option<char> {
    let letters = match locale {
        Locale::English => ['K', 'Q', 'R', 'B', 'N'],
        Locale::Italian => ['R', 'D', 'T', 'A', 'C'],
    };
    match role {
        Role::Pawn => None,
        Role::King => Some(letters[0]),
        Role::Queen => Some(letters[1]),
        Role::Rook => Some(letters[2]),
        Role::Bishop => Some(letters[3]),
        Role::Knight => Some(letters[4]),
    }
}

/// The role named by an upper-case piece letter in `locale` (`P` is the pawn in both).
pub fn role_from_letter(c: char, locale: Locale) -> Option<Role> {
    if c == 'P' {
        return Some(Role::Pawn);
    }
    [
        Role::King,
        Role::Queen,
        Role::Rook,
        Role::Bishop,
        Role::Knight,
    ]
    .into_iter()
    .find(|&r| role_letter(r, locale) == Some(c))
}

/// Writes the legal move `m` in SAN; with `suffix`, adds `+` or `#`.
pub fn write_san(pos: &Chess, m: Move, locale: Locale, suffix: bool) -> String {
    let mut s = String::with_capacity(8);
    let to = m.to();
    match m.kind() {
        MoveKind::Castle => s.push_str(if m.is_king_side() { "O-O" } else { "O-O-O" }),
        MoveKind::Drop(role) => {
            s.push(role_letter(role, locale).unwrap_or('P'));
            s.push('@');
            s.push_str(&to.to_string());
        }
        kind => {
            let from = m.from();
            let role = pos.board.role_at(from).unwrap_or(Role::Pawn);
            let capture = kind == MoveKind::EnPassant || pos.board.occupied().contains(to);
            if role == Role::Pawn {
                if capture {
                    s.push(from.file_char());
                }
            } else {
                s.push(role_letter(role, locale).expect("not a pawn"));
                // Disambiguate among other pieces of the same kind that can legally go to `to`.
                let others: Bitboard = pos
                    .legal_moves()
                    .iter()
                    .filter(|o| {
                        o.to() == to
                            && o.from() != from
                            && o.kind() == MoveKind::Normal
                            && pos.board.role_at(o.from()) == Some(role)
                    })
                    .fold(Bitboard::EMPTY, |acc, o| {
                        acc | Bitboard::from_square(o.from())
                    });
                if others.any() {
                    if (others & Bitboard::file(from.file())).is_empty() {
                        s.push(from.file_char());
                    } else if (others & Bitboard::rank(from.rank())).is_empty() {
                        s.push(from.rank_char());
                    } else {
                        s.push(from.file_char());
                        s.push(from.rank_char());
                    }
                }
            }
            if capture {
                s.push('x');
            }
            s.push_str(&to.to_string());
            if let MoveKind::Promotion(r) = kind {
                s.push('=');
                s.push(role_letter(r, locale).expect("not a pawn"));
            }
        }
    }
    if suffix {
        let mut after = *pos;
        after.play_unchecked(m);
        if after.checkers().any() {
            s.push(if after.legal_moves().is_empty() {
                '#'
            } else {
                '+'
            });
        }
    }
    s
}

/// What a SAN text says, before it is matched against the legal moves.
#[derive(Debug, Default)]
struct SanParts {
    role: Option<Role>,
    file: Option<u32>,
    rank: Option<u32>,
    to: Option<Square>,
    promotion: Option<Role>,
    castle: Option<bool>,
}

fn split_san(text: &str, locale: Locale) -> Result<SanParts, &'static str> {
    let mut s = text.trim_end_matches(['+', '#', '!', '?']);
    for suffix in ["e.p.", "ep"] {
        if let Some(rest) = s.strip_suffix(suffix) {
            s = rest.trim_end();
        }
    }
    if s.is_empty() {
        return Err("empty move");
    }
    let castle_key: String = s
        .chars()
        .filter(|&c| c != '-')
        .map(|c| if c == '0' || c == 'o' { 'O' } else { c })
        .collect();
    match castle_key.as_str() {
        "OO" => {
            return Ok(SanParts {
                castle: Some(true),
                ..SanParts::default()
            });
        }
        "OOO" => {
            return Ok(SanParts {
                castle: Some(false),
                ..SanParts::default()
            });
        }
        _ => {}
    }
    let mut chars: Vec<char> = s.chars().collect();
    let mut parts = SanParts::default();

    // Promotion: "=Q", "(Q)", "Q" or "q" after the destination.
    if chars.len() >= 3 {
        let n = chars.len();
        let last = chars[n - 1];
        if last == ')' && n >= 4 && chars[n - 3] == '(' {
            parts.promotion =
                Some(promotion_role(chars[n - 2], locale).ok_or("invalid promotion piece")?);
            chars.truncate(n - 3);
        } else if last.is_ascii_alphabetic() && !last.is_ascii_digit() {
            if chars[n - 2] == '=' {
                parts.promotion =
                    Some(promotion_role(last, locale).ok_or("invalid promotion piece")?);
                chars.truncate(n - 2);
            } else if chars[n - 2].is_ascii_digit() {
                parts.promotion =
                    Some(promotion_role(last, locale).ok_or("invalid promotion piece")?);
                chars.truncate(n - 1);
            }
        }
    }
    if chars.len() < 2 {
        return Err("missing destination square");
    }
    let n = chars.len();
    let to: String = chars[n - 2..].iter().collect();
    parts.to = Some(Square::parse(&to).ok_or("missing or invalid destination square")?);
    chars.truncate(n - 2);
    if matches!(chars.last(), Some('x' | ':' | '-')) {
        chars.pop();
    }
    let mut rest = &chars[..];
    if let Some(&c) = rest.first()
        && c.is_ascii_uppercase()
    {
        parts.role = Some(role_from_letter(c, locale).ok_or("unknown piece letter")?);
        rest = &rest[1..];
    }
    match rest {
        [] => {}
        [f @ 'a'..='h'] => parts.file = Some(*f as u32 - 'a' as u32),
        [r @ '1'..='8'] => parts.rank = Some(*r as u32 - '1' as u32),
        [f @ 'a'..='h', r @ '1'..='8'] => {
            parts.file = Some(*f as u32 - 'a' as u32);
            parts.rank = Some(*r as u32 - '1' as u32);
        }
        _ => return Err("unexpected characters before the destination square"),
    }
    Ok(parts)
}

fn promotion_role(c: char, locale: Locale) -> Option<Role> {
    let role = role_from_letter(c.to_ascii_uppercase(), locale)?;
    matches!(role, Role::Queen | Role::Rook | Role::Bishop | Role::Knight).then_some(role)
}

/// Reads SAN leniently and returns the legal move it names in `pos`.
pub fn parse_san(pos: &Chess, text: &str, locale: Locale) -> Result<Move, MoveError> {
    if text.contains('@') {
        return Err(MoveError::illegal(text, IllegalReason::NoMatchingMove));
    }
    let parts = split_san(text.trim(), locale).map_err(|r| MoveError::syntax(text, r))?;
    let legal = pos.legal_moves();
    if let Some(king_side) = parts.castle {
        return legal
            .iter()
            .copied()
            .find(|m| m.kind() == MoveKind::Castle && m.is_king_side() == king_side)
            .ok_or_else(|| MoveError::illegal(text, IllegalReason::CastlingNotAllowed));
    }
    let to = parts.to.expect("set unless castling");
    let role = parts.role.unwrap_or(Role::Pawn);
    let from_ok = |from: Square| {
        parts.file.is_none_or(|f| from.file() == f) && parts.rank.is_none_or(|r| from.rank() == r)
    };
    // Without a file, a pawn move is a push: `d5` never means `exd5`.
    let pawn_push_ok =
        |from: Square| role != Role::Pawn || parts.file.is_some() || from.file() == to.file();
    // Castling read as a king move (`Kg1`) lands on the king's square, not the rook's.
    let lands = |m: &Move| match m.kind() {
        MoveKind::Castle => m.castling_targets().0,
        _ => m.to(),
    };
    let shape_ok = |m: &Move| {
        lands(m) == to
            && pos.board.role_at(m.from()) == Some(role)
            && from_ok(m.from())
            && pawn_push_ok(m.from())
    };
    let mut matching: Vec<Move> = legal
        .iter()
        .copied()
        .filter(|m| shape_ok(m) && m.promotion_role() == parts.promotion)
        .collect();
    // In Chess960 `Kb1` may name both a king step and castling that lands there: the step.
    if matching.len() > 1 && matching.iter().any(|m| m.kind() != MoveKind::Castle) {
        matching.retain(|m| m.kind() != MoveKind::Castle);
    }
    match matching.as_slice() {
        [m] => Ok(*m),
        [] => {
            if legal
                .iter()
                .any(|m| shape_ok(m) && m.promotion_role().is_some())
            {
                let reason = if parts.promotion.is_none() {
                    IllegalReason::PromotionRequired
                } else {
                    IllegalReason::BadPromotion
                };
                return Err(MoveError::illegal(text, reason));
            }
            if parts.promotion.is_some() && legal.iter().any(shape_ok) {
                return Err(MoveError::illegal(text, IllegalReason::BadPromotion));
            }
            Err(MoveError::illegal(
                text,
                explain(pos, role, to, &from_ok, parts.promotion),
            ))
        }
        many => Err(MoveError::Ambiguous {
            input: text.to_owned(),
            candidates: many.iter().map(|m| m.to_string()).collect(),
        }),
    }
}

/// Why no legal move matches: if some piece of that kind could make the move but for a pin or
/// check, say so; otherwise no such piece can go there.
fn explain(
    pos: &Chess,
    role: Role,
    to: Square,
    from_ok: &dyn Fn(Square) -> bool,
    promotion: Option<Role>,
) -> IllegalReason {
    let b = &pos.board;
    let candidates = b.by_piece(crate::types::Piece {
        color: pos.turn,
        role,
    });
    let occupied = b.occupied();
    for from in candidates.filter(|&f| from_ok(f)) {
        let reach = match role {
            Role::Knight => attacks::knight(from),
            Role::Bishop => attacks::bishop(from, occupied),
            Role::Rook => attacks::rook(from, occupied),
            Role::Queen => attacks::queen(from, occupied),
            Role::King => attacks::king(from),
            Role::Pawn => Bitboard::FULL,
        };
        if reach.contains(to) {
            let reason = diagnose(pos, from, to, promotion);
            if reason == IllegalReason::LeavesKingInCheck {
                return reason;
            }
        }
    }
    IllegalReason::NoMatchingMove
}

#[cfg(test)]
mod tests {
    use super::*;

    fn san_of(fen: &str, uci: &str) -> String {
        let pos = Chess::from_fen(fen).unwrap();
        let m = super::super::uci::parse_legal(&pos, uci).unwrap();
        write_san(&pos, m, Locale::English, true)
    }

    #[test]
    fn writes_strict_san() {
        let start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
        assert_eq!(san_of(start, "g1f3"), "Nf3");
        assert_eq!(san_of(start, "e2e4"), "e4");
        let kiwi = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1";
        assert_eq!(san_of(kiwi, "e1g1"), "O-O");
        assert_eq!(san_of(kiwi, "e1c1"), "O-O-O");
        assert_eq!(san_of(kiwi, "d5e6"), "dxe6");
        assert_eq!(san_of(kiwi, "e5f7"), "Nxf7");
        assert_eq!(san_of("4k3/8/8/8/8/8/8/R4RK1 w - - 0 1", "a1d1"), "Rad1");
        assert_eq!(san_of("4k3/8/8/8/8/8/8/R3K2R w - - 0 1", "a1d1"), "Rd1");
        assert_eq!(san_of("4k3/8/8/8/R7/8/8/R3K3 w - - 0 1", "a1a2"), "R1a2");
        assert_eq!(san_of("7k/8/8/8/Q1Q5/8/Q7/4K3 w - - 0 1", "a4b3"), "Qa4b3");
        assert_eq!(san_of("7k/4P3/8/8/8/8/8/4K3 w - - 0 1", "e7e8q"), "e8=Q+");
        assert_eq!(san_of("6k1/5ppp/8/8/8/8/8/R3K3 w - - 0 1", "a1a8"), "Ra8#");
    }

    #[test]
    fn reads_leniently() {
        let pos =
            Chess::from_fen("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1")
                .unwrap();
        for (text, uci) in [
            ("0-0", "e1g1"),
            ("O-O-O", "e1c1"),
            ("o-o", "e1g1"),
            ("dxe6", "d5e6"),
            ("de6", "d5e6"),
            ("Nxf7!", "e5f7"),
            ("Nf7", "e5f7"),
            ("Ne5xf7", "e5f7"),
            ("Qxf6+?", "f3f6"),
            ("Kg1", "e1g1"),
        ] {
            let m =
                parse_san(&pos, text, Locale::English).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(format!("{m:?}"), uci, "{text}");
        }
        let promo = Chess::from_fen("7k/4P3/8/8/8/8/8/4K3 w - - 0 1").unwrap();
        for text in ["e8=Q", "e8Q", "e8q", "e8(Q)", "e8=Q+"] {
            assert_eq!(
                format!("{:?}", parse_san(&promo, text, Locale::English).unwrap()),
                "e7e8q"
            );
        }
        assert!(matches!(
            parse_san(&promo, "e8", Locale::English),
            Err(MoveError::Illegal {
                reason: IllegalReason::PromotionRequired,
                ..
            })
        ));
    }

    #[test]
    fn errors_are_precise() {
        let start = Chess::new();
        assert!(matches!(
            parse_san(&start, "Zf3", Locale::English),
            Err(MoveError::Syntax { .. })
        ));
        assert!(matches!(
            parse_san(&start, "N", Locale::English),
            Err(MoveError::Syntax { .. })
        ));
        assert!(matches!(
            parse_san(&start, "Nf4", Locale::English),
            Err(MoveError::Illegal {
                reason: IllegalReason::NoMatchingMove,
                ..
            })
        ));
        assert!(matches!(
            parse_san(&start, "O-O", Locale::English),
            Err(MoveError::Illegal {
                reason: IllegalReason::CastlingNotAllowed,
                ..
            })
        ));
        let two_knights = Chess::from_fen("4k3/8/8/8/8/8/8/2N1K1N1 w - - 0 1").unwrap();
        assert!(matches!(
            parse_san(&two_knights, "Ne2", Locale::English),
            Err(MoveError::Ambiguous { .. })
        ));
        let pinned = Chess::from_fen("4k3/4r3/8/8/8/8/4N3/4K3 w - - 0 1").unwrap();
        assert!(matches!(
            parse_san(&pinned, "Nc3", Locale::English),
            Err(MoveError::Illegal {
                reason: IllegalReason::LeavesKingInCheck,
                ..
            })
        ));
    }

    #[test]
    fn italian_locale() {
        let start = Chess::new();
        let m = parse_san(&start, "Cf3", Locale::Italian).unwrap();
        assert_eq!(write_san(&start, m, Locale::Italian, true), "Cf3");
        let promo = Chess::from_fen("7k/4P3/8/8/8/8/8/4K3 w - - 0 1").unwrap();
        let m = parse_san(&promo, "e8=D", Locale::Italian).unwrap();
        assert_eq!(write_san(&promo, m, Locale::Italian, true), "e8=D+");
        let castle = Chess::from_fen("4k3/8/8/8/8/8/8/4K2R w K - 0 1").unwrap();
        assert_eq!(
            format!("{:?}", parse_san(&castle, "Rf1", Locale::Italian).unwrap()),
            "e1f1"
        );
        assert_eq!(
            format!("{:?}", parse_san(&castle, "Tf1", Locale::Italian).unwrap()),
            "h1f1"
        );
    }
}
