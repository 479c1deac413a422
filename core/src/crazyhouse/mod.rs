//! Crazyhouse, and one board of a bughouse match: chess in which a captured piece is kept (a
//! promoted one as a pawn) and may later be dropped instead of a move. The rules and the FEN with
//! reserves are stated in `docs/rules.md`.
//!
//! A [`Crazyhouse`] is a [`Chess`] position plus the two reserves (pieces in hand) and the set
//! of promoted pieces (`~` in FEN). Board moves come from the chess generator unchanged (a drop
//! never uncovers a check, so drops add to the legal set without touching its logic); drops go
//! on any empty square (pawns not on the 1st or 8th rank), or, in check from one slider, on the
//! squares between it and the king.
//!
//! The two variants differ in three places:
//! - **captures**: in crazyhouse the captured piece (a pawn if it was promoted) joins the
//!   capturer's reserve; on a bughouse board it leaves the board for the partner's reserve on the
//!   other board, which the match ([`crate::bughouse`]) handles;
//! - **mate**: bughouse checkmate needs, besides no legal move, a check that no drop could ever
//!   block (double check, contact, knight or pawn check); otherwise the player waits;
//! - **no legal move, no check**: stalemate (a draw) in crazyhouse; in bughouse the player waits.

mod text;

pub use text::{ReserveError, parse_drop};

use crate::bitboard::{Bitboard, attacks};
use crate::chess::san::write_san;
use crate::chess::uci::Uci;
use crate::chess::{self, Chess, Move, MoveKind, zobrist};
use crate::outcome::{EndReason, Outcome};
use crate::position::{DrawRules, IllegalReason, Locale, MoveError, Notation, Position};
use crate::types::{Color, Piece, Role, Square};
use crate::variant::Variant;
use arrayvec::ArrayVec;
use std::fmt;

/// The most pieces of one kind and colour a reserve can hold (all 16 pawns of a colour, in
/// bughouse; the Zobrist tables have a key for each count up to it).
pub const MAX_IN_RESERVE: u8 = 16;

/// The roles a reserve can hold, in FEN order (`QRBNP`).
pub const RESERVE_ROLES: [Role; 5] = [
    Role::Queen,
    Role::Rook,
    Role::Bishop,
    Role::Knight,
    Role::Pawn,
];

/// Both players' pieces in hand.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Reserves {
    /// `[color][role index]` (pawn 0 … queen 4).
    counts: [[u8; 5]; 2],
}

impl Reserves {
    /// Empty reserves.
    pub const EMPTY: Reserves = Reserves {
        counts: [[0; 5]; 2],
    };

    /// How many pieces of `role` `color` holds (0 for a king).
    pub fn count(&self, color: Color, role: Role) -> u8 {
        if role == Role::King {
            return 0;
        }
        self.counts[color.index()][role.index()]
    }

    /// Sets a count (at most [`MAX_IN_RESERVE`]; kings cannot be held).
    pub fn set(&mut self, color: Color, role: Role, n: u8) -> Result<(), ReserveError> {
        if role == Role::King {
            return Err(ReserveError("a king cannot be in a reserve".to_owned()));
        }
        if n > MAX_IN_RESERVE {
            return Err(ReserveError(format!(
                "at most {MAX_IN_RESERVE} pieces of one kind fit in a reserve"
            )));
        }
        self.counts[color.index()][role.index()] = n;
        Ok(())
    }

    /// Whether `color` holds nothing.
    pub fn is_empty_for(&self, color: Color) -> bool {
        self.counts[color.index()] == [0; 5]
    }

    /// The number of pieces held by `color`.
    pub fn total(&self, color: Color) -> u32 {
        self.counts[color.index()]
            .iter()
            .map(|&n| u32::from(n))
            .sum()
    }

    /// `color`'s pieces as FEN letters in `QRBNP` order (upper case for White).
    pub fn letters(&self, color: Color) -> String {
        let mut s = String::new();
        for role in RESERVE_ROLES {
            let c = Piece { color, role }.char();
            for _ in 0..self.count(color, role) {
                s.push(c);
            }
        }
        s
    }

    /// The FEN form without brackets: White's letters then Black's (`QRBNPqrbnp`).
    pub fn to_fen(&self) -> String {
        self.letters(Color::White) + &self.letters(Color::Black)
    }
}

/// Legal moves of a crazyhouse or bughouse position (board moves plus up to five kinds of drop
/// on every empty square; the worst case stays under 540).
pub type ZhMoveList = ArrayVec<Move, 640>;

/// Which of the two games a [`Crazyhouse`] position plays.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum HouseRules {
    /// Crazyhouse: captures join the capturer's reserve; ordinary mate and stalemate.
    Crazyhouse,
    /// One board of a bughouse match: captures leave for the partner's reserve, mate only when
    /// no drop could ever block, and a player without a move waits.
    Bughouse,
}

/// A crazyhouse position, or one board of a bughouse match.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct Crazyhouse {
    chess: Chess,
    promoted: Bitboard,
    reserves: Reserves,
    rules: HouseRules,
    /// The Zobrist keys of the reserves and the promoted set (the chess hash has the rest).
    extra_hash: u64,
}

impl fmt::Debug for Crazyhouse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.variant(), self.to_fen())
    }
}

fn reserve_key(color: Color, role: Role, n: u8) -> u64 {
    zobrist::KEYS.reserve[color.index()][role.index()][usize::from(n)]
}

impl Crazyhouse {
    /// The repetition key of the board alone: placement, side to move, castling rights and en
    /// passant square, without the reserves and the promotion marks (bughouse's optional
    /// threefold repetition, where reserves do not count).
    pub fn board_repetition_key(&self) -> u64 {
        self.chess.repetition_key()
    }

    /// The start position with empty reserves, under `rules`.
    pub fn new(rules: HouseRules) -> Crazyhouse {
        Crazyhouse::from_parts(Chess::new(), Bitboard::EMPTY, Reserves::EMPTY, rules)
    }

    pub(crate) fn from_parts(
        chess: Chess,
        promoted: Bitboard,
        reserves: Reserves,
        rules: HouseRules,
    ) -> Crazyhouse {
        let mut pos = Crazyhouse {
            chess,
            promoted,
            reserves,
            rules,
            extra_hash: 0,
        };
        pos.extra_hash = pos.compute_extra_hash();
        pos
    }

    fn compute_extra_hash(&self) -> u64 {
        let mut h = 0;
        for color in Color::ALL {
            for role in RESERVE_ROLES {
                h ^= reserve_key(color, role, self.reserves.count(color, role));
            }
        }
        for sq in self.promoted {
            h ^= zobrist::KEYS.promoted[sq.index()];
        }
        h
    }

    /// The Zobrist hash computed from scratch (play keeps it incrementally).
    pub fn compute_hash(&self) -> u64 {
        self.chess.compute_hash() ^ self.compute_extra_hash()
    }

    /// The board as a chess position (placement, side to move, castling, en passant, counters).
    pub fn chess(&self) -> &Chess {
        &self.chess
    }

    /// The reserves.
    pub fn reserves(&self) -> &Reserves {
        &self.reserves
    }

    /// Squares holding promoted pieces (they revert to pawns when captured).
    pub fn promoted(&self) -> Bitboard {
        self.promoted
    }

    /// Which game this position plays.
    pub fn rules(&self) -> HouseRules {
        self.rules
    }

    /// Whether this is a bughouse board (else crazyhouse).
    pub fn is_bughouse(&self) -> bool {
        self.rules == HouseRules::Bughouse
    }

    /// Adds a piece to `color`'s reserve (bughouse: a piece sent by the partner).
    pub fn add_to_reserve(&mut self, color: Color, role: Role) -> Result<(), ReserveError> {
        let n = self.reserves.count(color, role);
        self.reserves.set(color, role, n + 1)?;
        self.extra_hash ^= reserve_key(color, role, n) ^ reserve_key(color, role, n + 1);
        Ok(())
    }

    fn take_from_reserve(&mut self, color: Color, role: Role) {
        let n = self.reserves.count(color, role);
        debug_assert!(n > 0, "dropping a piece not held");
        let m = n.saturating_sub(1);
        self.reserves.counts[color.index()][role.index()] = m;
        self.extra_hash ^= reserve_key(color, role, n) ^ reserve_key(color, role, m);
    }

    fn toggle_promoted(&mut self, sq: Square) {
        self.promoted.toggle(sq);
        self.extra_hash ^= zobrist::KEYS.promoted[sq.index()];
    }

    /// The unit `m` captures, as it goes to a reserve: the captured role, or a pawn for a
    /// promoted piece or en passant; `None` if `m` captures nothing.
    pub fn captured_unit(&self, m: Move) -> Option<Role> {
        match m.kind() {
            MoveKind::EnPassant => Some(Role::Pawn),
            MoveKind::Drop(_) | MoveKind::Castle => None,
            _ => {
                let role = self.chess.board().role_at(m.to())?;
                Some(if self.promoted.contains(m.to()) {
                    Role::Pawn
                } else {
                    role
                })
            }
        }
    }

    /// Squares where the side to move may drop a piece (before the pawn rank rule).
    fn drop_targets(&self) -> Bitboard {
        let checkers = self.chess.checkers();
        let empty = !self.chess.board().occupied();
        match checkers.single() {
            _ if checkers.more_than_one() => Bitboard::EMPTY,
            Some(checker) => attacks::between(self.king(), checker),
            None => empty,
        }
    }

    fn king(&self) -> Square {
        self.chess
            .board()
            .king_of(self.chess.turn())
            .expect("a validated position has one king per side")
    }

    /// Every legal move: the chess moves, then the drops.
    fn generate(&self, moves: &mut ZhMoveList) {
        let mut board_moves = chess::MoveList::new();
        self.chess.gen_legal(&mut board_moves);
        moves.extend(board_moves);
        let us = self.chess.turn();
        if self.reserves.is_empty_for(us) {
            return;
        }
        let targets = self.drop_targets();
        for role in RESERVE_ROLES {
            if self.reserves.count(us, role) == 0 {
                continue;
            }
            let squares = if role == Role::Pawn {
                targets & !Bitboard::BACKRANKS
            } else {
                targets
            };
            for to in squares {
                moves.push(Move::drop(role, to));
            }
        }
    }

    /// Every legal move.
    pub fn legal_moves(&self) -> ZhMoveList {
        let mut moves = ZhMoveList::new();
        self.generate(&mut moves);
        moves
    }

    /// Plays a legal move. In crazyhouse a capture joins the mover's reserve; on a bughouse
    /// board it leaves the board (see [`Crazyhouse::captured_unit`]).
    pub fn play_unchecked(&mut self, m: Move) {
        let us = self.chess.turn();
        if let MoveKind::Drop(role) = m.kind() {
            self.take_from_reserve(us, role);
            self.chess.play_drop(Piece { color: us, role }, m.to());
            return;
        }
        let captured = self.captured_unit(m);
        let (from, to) = (m.from(), m.to());
        if self.promoted.contains(to) {
            self.toggle_promoted(to);
        }
        if self.promoted.contains(from) {
            self.toggle_promoted(from);
            self.toggle_promoted(to);
        }
        if m.promotion_role().is_some() {
            self.toggle_promoted(to);
        }
        self.chess.play_unchecked(m);
        if let Some(role) = captured
            && !self.is_bughouse()
        {
            // A reserve of one kind cannot exceed 16 with 32 units in a crazyhouse game.
            let _ = self.add_to_reserve(us, role);
        }
    }

    /// Whether the side to move, in check with no legal move, is mated under bughouse rules:
    /// no drop could ever block the check (double check, or a checker with nothing between it
    /// and the king: contact, knight, pawn).
    pub fn is_bughouse_mate(&self) -> bool {
        let checkers = self.chess.checkers();
        match checkers.single() {
            _ if checkers.more_than_one() => true,
            Some(checker) => attacks::between(self.king(), checker).is_empty(),
            None => false,
        }
    }

    /// The ending judged from the position (see the module documentation for how the two
    /// variants differ); a bughouse player without a move who is not mated waits: `None`.
    pub fn terminal(&self) -> Option<Outcome> {
        let us = self.chess.turn();
        if self.legal_moves().is_empty() {
            let in_check = self.chess.checkers().any();
            return match (in_check, self.is_bughouse()) {
                (true, false) => Some(Outcome::win(!us, EndReason::Checkmate)),
                (true, true) => self
                    .is_bughouse_mate()
                    .then_some(Outcome::win(!us, EndReason::Checkmate)),
                (false, false) => Some(Outcome::draw(EndReason::Stalemate)),
                (false, true) => None,
            };
        }
        if !self.is_bughouse() && !self.can_possibly_mate(Color::White) {
            return Some(Outcome::draw(EndReason::DeadPosition));
        }
        None
    }

    /// Crazyhouse: a side can mate while any piece other than the kings exists (a bare king
    /// can still capture and drop it). Bughouse: always, since material may arrive from the
    /// other board.
    pub fn can_possibly_mate(&self, _color: Color) -> bool {
        if self.is_bughouse() {
            return true;
        }
        let b = self.chess.board();
        (b.occupied() & !b.by_role(Role::King)).any()
            || !self.reserves.is_empty_for(Color::White)
            || !self.reserves.is_empty_for(Color::Black)
    }

    /// The FEN with the reserves in brackets and `~` after promoted pieces.
    pub fn to_fen(&self) -> String {
        text::write(self)
    }

    /// Why the drop of `role` on `to` is not legal here.
    fn diagnose_drop(&self, role: Role, to: Square) -> IllegalReason {
        let us = self.chess.turn();
        if role == Role::King {
            return IllegalReason::CannotReach;
        }
        if self.reserves.count(us, role) == 0 {
            return IllegalReason::NotInReserve {
                piece: Piece { color: us, role }.char(),
            };
        }
        if self.chess.board().occupied().contains(to) {
            return IllegalReason::Blocked;
        }
        if role == Role::Pawn && Bitboard::BACKRANKS.contains(to) {
            return IllegalReason::CannotReach;
        }
        IllegalReason::LeavesKingInCheck
    }

    fn parse_drop_move(&self, text: &str, locale: Locale) -> Result<Move, MoveError> {
        let (role, to) = parse_drop(text, locale).map_err(|r| MoveError::syntax(text, r))?;
        let m = Move::drop(role, to);
        if role != Role::King && self.legal_moves().contains(&m) {
            Ok(m)
        } else {
            Err(MoveError::illegal(text, self.diagnose_drop(role, to)))
        }
    }
}

impl Position for Crazyhouse {
    type Move = Move;
    type MoveList = ZhMoveList;

    fn variant(&self) -> Variant {
        if self.is_bughouse() {
            Variant::Bughouse
        } else {
            Variant::Crazyhouse
        }
    }

    fn turn(&self) -> Color {
        self.chess.turn()
    }

    fn legal_moves_into(&self, moves: &mut ZhMoveList) {
        moves.clear();
        self.generate(moves);
    }

    fn is_capture(&self, m: Move) -> bool {
        !m.is_drop() && self.chess.is_capture(m)
    }

    /// The board's captures, generated alone: no quiet move or drop is generated to be
    /// filtered out.
    fn capture_moves_into(&self, moves: &mut ZhMoveList) {
        moves.clear();
        let mut board_moves = chess::MoveList::new();
        self.chess
            .gen_filtered(&mut board_moves, chess::movegen::Filter::TACTICAL);
        moves.extend(
            board_moves
                .into_iter()
                .filter(|&m| self.chess.is_capture(m)),
        );
    }

    /// A drop from the reserve checked directly; a board move by generating only the moves of
    /// the piece on its origin square.
    fn is_legal(&self, m: Move) -> bool {
        match m.kind() {
            MoveKind::Drop(role) => {
                let us = self.chess.turn();
                RESERVE_ROLES.contains(&role)
                    && self.reserves.count(us, role) > 0
                    && self.drop_targets().contains(m.to())
                    && !(role == Role::Pawn && Bitboard::BACKRANKS.contains(m.to()))
            }
            _ => self.chess.is_legal_move(m),
        }
    }

    fn play_unchecked(&mut self, m: Move) {
        Crazyhouse::play_unchecked(self, m);
    }

    fn is_check(&self) -> bool {
        self.chess.is_check()
    }

    fn gives_check(&self, m: Move) -> bool {
        self.chess.gives_check(m)
    }

    fn zobrist(&self) -> u64 {
        self.chess.zobrist() ^ self.extra_hash
    }

    /// Placement, side, castling, legal en passant, and the reserves.
    fn repetition_key(&self) -> u64 {
        self.chess.repetition_key() ^ self.extra_hash
    }

    fn halfmove_clock(&self) -> u32 {
        self.chess.halfmove_clock()
    }

    fn fullmove_number(&self) -> u32 {
        self.chess.fullmove_number()
    }

    fn null_move(&self) -> Option<Crazyhouse> {
        let chess = self.chess.null_move()?;
        Some(Crazyhouse { chess, ..*self })
    }

    fn terminal(&self) -> Option<Outcome> {
        Crazyhouse::terminal(self)
    }

    /// Crazyhouse: repetition as in chess, no move-count rule (drops keep material in play).
    /// Bughouse: neither (repetition on a board is off by default).
    fn draw_rules(&self) -> DrawRules {
        DrawRules {
            repetition: (!self.is_bughouse()).then_some((3, 5)),
            move_rule_plies: None,
        }
    }

    fn can_possibly_mate(&self, color: Color) -> bool {
        Crazyhouse::can_possibly_mate(self, color)
    }

    fn to_text(&self) -> String {
        self.to_fen()
    }

    fn move_to_uci(&self, m: Move) -> String {
        Uci::from_move(m).to_string()
    }

    /// SAN, drops as `N@f3`; `#` only for a mate under this variant's rules.
    fn move_to_san(&self, m: Move, locale: Locale) -> String {
        let mut san = write_san(&self.chess, m, locale, false);
        let mut after = *self;
        after.play_unchecked(m);
        if after.is_check() {
            let mate = after
                .terminal()
                .is_some_and(|o| o.reason == EndReason::Checkmate);
            san.push(if mate { '#' } else { '+' });
        }
        san
    }

    fn parse_move(
        &self,
        input: &str,
        notation: Notation,
        locale: Locale,
    ) -> Result<Move, MoveError> {
        let text = input.trim();
        if text.contains('@') {
            // UCI drops use the English letters; SAN drops the locale's (in Italian `R@e2` is a
            // king, `T@e2` a rook). Auto tries the locale first, then English.
            return match notation {
                Notation::Uci => self.parse_drop_move(text, Locale::English),
                Notation::San => self.parse_drop_move(text, locale),
                Notation::Auto => self
                    .parse_drop_move(text, locale)
                    .or_else(|e| self.parse_drop_move(text, Locale::English).map_err(|_| e)),
            };
        }
        let m = self.chess.parse_move(text, notation, locale)?;
        debug_assert!(self.legal_moves().contains(&m));
        Ok(m)
    }
}

#[cfg(test)]
mod tests;
