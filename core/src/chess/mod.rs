//! Standard chess under the FIDE Laws: bitboard position, legal move generation (pins and check
//! evasions computed, no make-and-test), copy-make, incremental Zobrist hashing, endings.
//!
//! The module layout follows the notations: [`fen`], [`uci`], [`san`]; PGN lives in
//! [`crate::pgn`] because it is shared by every variant.

mod board;
pub mod chess960;
pub mod fen;
pub(crate) mod movegen;
pub mod render;
pub mod san;
pub mod uci;
pub(crate) mod zobrist;

pub use board::Board;
pub use fen::{Correction, FenError, PositionError, Setup};

use crate::bitboard::{Bitboard, attacks};
use crate::outcome::{EndReason, Outcome};
use crate::position::{DrawRules, Locale, MoveError, Notation, Position, tick};
use crate::position_text::PositionTextError;
use crate::types::{Color, Piece, Role, Square};
use crate::variant::Variant;
use arrayvec::ArrayVec;
use std::fmt;

/// Legal moves of one chess position (at most 218 exist; the capacity leaves room).
pub type MoveList = ArrayVec<Move, 256>;

/// What a [`Move`] does besides moving a piece from one square to another.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum MoveKind {
    /// An ordinary move or capture (including pawn pushes).
    Normal,
    /// An en passant capture; the captured pawn is beside the origin square.
    EnPassant,
    /// Castling, stored as the king "taking" its own rook (`e1h1`): the origin is the king's
    /// square, the destination the castling rook's. The king ends on the g or c file and the
    /// rook beside it, in standard chess and Chess960 alike; UCI writes the standard form
    /// (`e1g1`) unless the position is a Chess960 one.
    Castle,
    /// A pawn promotes to the given role.
    Promotion(Role),
    /// A piece of the given role is dropped from the reserve (crazyhouse, bughouse).
    Drop(Role),
}

/// A move on the 8×8 board, packed into 16 bits: destination (6), origin (6), kind (4).
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct Move(u16);

const KIND_NORMAL: u16 = 0;
const KIND_EP: u16 = 1;
const KIND_CASTLE: u16 = 2;
const KIND_PROMO: u16 = 3; // + role index - 1 (knight = 3 … queen = 6)
const KIND_DROP: u16 = 8; // + role index (pawn = 8 … queen = 12)
const KIND_CASTLE_960: u16 = 13; // castling in a Chess960 position (written king-takes-rook)

impl Move {
    #[inline]
    const fn pack(from: Square, to: Square, kind: u16) -> Move {
        Move(to.index() as u16 | (from.index() as u16) << 6 | kind << 12)
    }

    /// An ordinary move or capture.
    #[inline]
    pub const fn normal(from: Square, to: Square) -> Move {
        Move::pack(from, to, KIND_NORMAL)
    }

    /// An en passant capture from `from` to the en passant square `to`.
    #[inline]
    pub const fn en_passant(from: Square, to: Square) -> Move {
        Move::pack(from, to, KIND_EP)
    }

    /// Castling with the king on `king` and the castling rook on `rook` (same rank; the rook's
    /// side of the king says which castling it is).
    #[inline]
    pub const fn castle(king: Square, rook: Square) -> Move {
        Move::pack(king, rook, KIND_CASTLE)
    }

    /// Castling as [`Move::castle`], in a Chess960 position when `chess960` (the move then
    /// displays in the king-takes-rook form, `e1h1`).
    #[inline]
    pub const fn castle_in(king: Square, rook: Square, chess960: bool) -> Move {
        Move::pack(
            king,
            rook,
            if chess960 {
                KIND_CASTLE_960
            } else {
                KIND_CASTLE
            },
        )
    }

    /// Whether this is castling in a Chess960 position.
    #[inline]
    pub const fn is_chess960_castle(self) -> bool {
        self.0 >> 12 == KIND_CASTLE_960
    }

    /// For a castling move: whether it is the king-side one (the rook on the h side of the
    /// king). Meaningless for other moves.
    #[inline]
    pub const fn is_king_side(self) -> bool {
        self.to().file() > self.from().file()
    }

    /// For a castling move: where the king and the rook end (g and f files king side, c and d
    /// queen side, on the king's rank).
    #[inline]
    pub const fn castling_targets(self) -> (Square, Square) {
        let rank = self.from().rank();
        let (king_file, rook_file) = if self.is_king_side() { (6, 5) } else { (2, 3) };
        (
            Square::from_index_unchecked(rank * 8 + king_file),
            Square::from_index_unchecked(rank * 8 + rook_file),
        )
    }

    /// A promotion to `role` (knight, bishop, rook or queen; anything else is clamped to queen).
    #[inline]
    pub const fn promotion(from: Square, to: Square, role: Role) -> Move {
        let r = match role {
            Role::Knight | Role::Bishop | Role::Rook | Role::Queen => role.index() as u16,
            _ => Role::Queen.index() as u16,
        };
        Move::pack(from, to, KIND_PROMO + r - 1)
    }

    /// A drop of `role` on `to` (pawn to queen; a king is clamped to queen).
    #[inline]
    pub const fn drop(role: Role, to: Square) -> Move {
        let r = match role {
            Role::King => Role::Queen.index() as u16,
            _ => role.index() as u16,
        };
        Move::pack(to, to, KIND_DROP + r)
    }

    /// Destination square.
    #[inline]
    pub const fn to(self) -> Square {
        Square::from_index_unchecked((self.0 & 63) as u32)
    }

    /// Origin square (for a drop, the destination).
    #[inline]
    pub const fn from(self) -> Square {
        Square::from_index_unchecked(((self.0 >> 6) & 63) as u32)
    }

    /// The kind of move.
    #[inline]
    pub fn kind(self) -> MoveKind {
        match self.0 >> 12 {
            KIND_NORMAL => MoveKind::Normal,
            KIND_EP => MoveKind::EnPassant,
            KIND_CASTLE | KIND_CASTLE_960 => MoveKind::Castle,
            k @ 3..=6 => MoveKind::Promotion(Role::from_index(usize::from(k - 2)).expect("role")),
            k => MoveKind::Drop(Role::from_index(usize::from(k - KIND_DROP).min(4)).expect("role")),
        }
    }

    /// The promotion role, if this is a promotion.
    #[inline]
    pub fn promotion_role(self) -> Option<Role> {
        match self.kind() {
            MoveKind::Promotion(r) => Some(r),
            _ => None,
        }
    }

    /// Whether this is a drop.
    #[inline]
    pub const fn is_drop(self) -> bool {
        let kind = self.0 >> 12;
        kind >= KIND_DROP && kind < KIND_CASTLE_960
    }
}

/// The move in coordinate notation (what `move_to_uci` returns): castling as the king's move
/// (`e1g1`), or as the king taking its own rook (`e1h1`) in Chess960.
impl fmt::Display for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&uci::Uci::from_move(*self).to_string())
    }
}

impl fmt::Debug for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Castling rights: for each side and wing, whether castling is still allowed and with the
/// rook on which file. Standard chess uses the a and h files; Chess960 whichever files its
/// rooks started on (the king is wherever it stands on its back rank: a right implies it has
/// not moved).
///
/// The file of a right that is not held is kept at its default (h king side, a queen side), so
/// equal rights compare equal.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct CastlingRights {
    bits: u8,
    /// Rook files by right index (white king side, white queen side, black king side, black
    /// queen side).
    files: [u8; 4],
}

impl Default for CastlingRights {
    fn default() -> CastlingRights {
        CastlingRights::NONE
    }
}

const DEFAULT_FILES: [u8; 4] = [7, 0, 7, 0];

impl CastlingRights {
    /// No rights.
    pub const NONE: CastlingRights = CastlingRights {
        bits: 0,
        files: DEFAULT_FILES,
    };
    /// All four rights with the rooks on the a and h files (standard chess).
    pub const ALL: CastlingRights = CastlingRights {
        bits: 15,
        files: DEFAULT_FILES,
    };

    #[inline]
    const fn index(color: Color, king_side: bool) -> usize {
        color as usize * 2 + if king_side { 0 } else { 1 }
    }

    /// Whether `color` may still castle on that side.
    #[inline]
    pub const fn has(self, color: Color, king_side: bool) -> bool {
        self.bits & 1 << CastlingRights::index(color, king_side) != 0
    }

    /// Adds a right with the rook on its standard file (h king side, a queen side).
    pub fn add(&mut self, color: Color, king_side: bool) {
        self.add_with_rook(color, king_side, if king_side { 7 } else { 0 });
    }

    /// Adds a right whose castling rook stands on `file` (0 = a … 7 = h) of `color`'s back rank.
    pub fn add_with_rook(&mut self, color: Color, king_side: bool, file: u32) {
        let i = CastlingRights::index(color, king_side);
        self.bits |= 1 << i;
        self.files[i] = (file & 7) as u8;
    }

    /// Removes a right.
    pub fn remove(&mut self, color: Color, king_side: bool) {
        let i = CastlingRights::index(color, king_side);
        self.bits &= !(1 << i);
        self.files[i] = DEFAULT_FILES[i];
    }

    /// The castling rook's square for a right that is held.
    #[inline]
    pub fn rook(self, color: Color, king_side: bool) -> Option<Square> {
        let i = CastlingRights::index(color, king_side);
        (self.bits & 1 << i != 0)
            .then(|| Square::from_index_unchecked(u32::from(self.files[i]) + color.fold(0, 56)))
    }

    /// Every right held, as (colour, king side, rook square).
    pub fn iter(self) -> impl Iterator<Item = (Color, bool, Square)> {
        [
            (Color::White, true),
            (Color::White, false),
            (Color::Black, true),
            (Color::Black, false),
        ]
        .into_iter()
        .filter_map(move |(c, k)| self.rook(c, k).map(|sq| (c, k, sq)))
    }

    /// Whether no right is left.
    pub const fn is_empty(self) -> bool {
        self.bits == 0
    }

    /// The raw 4-bit set.
    pub(crate) const fn bits(self) -> u8 {
        self.bits
    }

    /// The rights left after a move from `from` to `to` by a piece of `role` of `color`: a king
    /// move drops both of its side's rights, a move from or to a castling rook's square drops
    /// that right (the rook moved or was captured).
    #[inline]
    pub(crate) fn after_move(self, color: Color, role: Role, from: Square, to: Square) -> Self {
        let mut out = self;
        if role == Role::King {
            out.remove(color, true);
            out.remove(color, false);
        }
        for (c, k, rook) in self.iter() {
            if rook == from || rook == to {
                out.remove(c, k);
            }
        }
        out
    }

    /// The standard-chess FEN field: `KQkq`, a subset, or `-` (the rooks' files are not
    /// written; positions write [X-FEN](Setup) through [`Chess::to_fen`]).
    pub fn to_fen(self) -> String {
        if self.is_empty() {
            return "-".into();
        }
        [
            (Color::White, true, 'K'),
            (Color::White, false, 'Q'),
            (Color::Black, true, 'k'),
            (Color::Black, false, 'q'),
        ]
        .into_iter()
        .filter(|&(c, k, _)| self.has(c, k))
        .map(|(_, _, ch)| ch)
        .collect()
    }
}

/// A standard chess or Chess960 position: placement, side to move, castling rights (with their
/// rooks' files), en passant square, move counters and the incremental Zobrist hash.
///
/// Chess960 positions differ only in where castling rooks may start and in notation: FEN
/// writes X-FEN castling rights and UCI writes castling as the king taking its own rook.
///
/// Built from a [`Setup`] (checked: impossible positions are rejected with a
/// [`PositionError`]) or from FEN with [`Chess::from_fen`]. The en passant square is kept only
/// when a pawn of the side to move stands ready to capture, so FEN output omits a square no pawn
/// can use.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct Chess {
    pub(crate) board: Board,
    pub(crate) turn: Color,
    pub(crate) castling: CastlingRights,
    pub(crate) ep_square: Option<Square>,
    pub(crate) halfmoves: u32,
    pub(crate) fullmoves: u32,
    pub(crate) hash: u64,
    pub(crate) chess960: bool,
}

impl Default for Chess {
    fn default() -> Chess {
        Chess::new()
    }
}

impl fmt::Debug for Chess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = if self.chess960 { "Chess960" } else { "Chess" };
        write!(f, "{name}({})", self.to_fen())
    }
}

impl fmt::Display for Chess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_fen())
    }
}

impl Chess {
    /// The standard start position.
    pub fn new() -> Chess {
        let mut pos = Chess {
            board: Board::standard(),
            turn: Color::White,
            castling: CastlingRights::ALL,
            ep_square: None,
            halfmoves: 0,
            fullmoves: 1,
            hash: 0,
            chess960: false,
        };
        pos.hash = pos.compute_hash();
        pos
    }

    /// Parses and validates a FEN (standard chess: castling rooks on the a and h files).
    pub fn from_fen(fen: &str) -> Result<Chess, PositionTextError> {
        Chess::from_fen_as(fen, false)
    }

    /// Parses and validates a FEN as standard chess or (with `chess960`) as a Chess960
    /// position, whose castling field may be X-FEN (`KQkq` for the outermost rooks, file
    /// letters for others) or Shredder-FEN (`HAha`).
    pub fn from_fen_as(fen: &str, chess960: bool) -> Result<Chess, PositionTextError> {
        let setup: Setup = fen.parse()?;
        Ok(Chess::from_setup_as(setup, chess960)?)
    }

    /// Whether this is a Chess960 position (X-FEN output, king-takes-rook castling in UCI).
    pub fn is_chess960(&self) -> bool {
        self.chess960
    }

    /// The FEN with Shredder-FEN castling rights (the rooks' files: `HAha`).
    pub fn to_shredder_fen(&self) -> String {
        Setup::from(*self).to_fen_with(true)
    }

    /// The FEN of this position.
    pub fn to_fen(&self) -> String {
        Setup::from(*self).to_string()
    }

    /// Piece placement.
    pub fn board(&self) -> &Board {
        &self.board
    }

    /// The side to move.
    pub fn turn(&self) -> Color {
        self.turn
    }

    /// Castling rights.
    pub fn castling_rights(&self) -> CastlingRights {
        self.castling
    }

    /// The en passant square, kept only when a pawn of the side to move could capture there.
    pub fn ep_square(&self) -> Option<Square> {
        self.ep_square
    }

    /// The king square of the side to move.
    #[inline]
    pub(crate) fn our_king(&self) -> Square {
        self.board
            .king_of(self.turn)
            .expect("a validated position has one king per side")
    }

    /// Enemy pieces giving check.
    #[inline]
    pub fn checkers(&self) -> Bitboard {
        let king = self.our_king();
        self.board
            .attackers_to(king, !self.turn, self.board.occupied())
    }

    /// Whether the legal move `m` gives check, read from the attack tables without playing it:
    /// a direct check by the piece on its destination (the promoted or dropped role for those
    /// moves), or a discovered one by a slider of the mover's that the vacated origin uncovers.
    /// En passant and castling, which move or remove a second piece, are played on a copy.
    /// The search asks this of moves it may prune before making them.
    pub fn gives_check(&self, m: Move) -> bool {
        let us = self.turn;
        let Some(king) = self.board.king_of(!us) else {
            return false;
        };
        let (role, from) = match m.kind() {
            MoveKind::Normal => (
                self.board
                    .role_at(m.from())
                    .expect("a piece on the origin square"),
                Some(m.from()),
            ),
            MoveKind::Promotion(role) => (role, Some(m.from())),
            MoveKind::Drop(role) => (role, None),
            MoveKind::EnPassant | MoveKind::Castle => {
                let mut after = *self;
                after.play_unchecked(m);
                return after.checkers().any();
            }
        };
        let to = m.to();
        let mut occupied = self.board.occupied();
        if let Some(from) = from {
            occupied.discard(from);
        }
        occupied.add(to);
        // (A king never attacks the other: the position is legal.)
        if attacks::piece(us, role, to, occupied).contains(king) {
            return true;
        }
        // A drop only adds a blocker. A move uncovers a line only when its origin is aligned
        // with the king and its destination leaves that line.
        let Some(from) = from else {
            return false;
        };
        let line = attacks::line(from, king);
        if line.is_empty() || line.contains(to) {
            return false;
        }
        // The position was legal, so none of the mover's other sliders attacked the king
        // before: any that does now was uncovered.
        let mut others = self.board.by_color(us);
        others.discard(from);
        (((attacks::rook(king, occupied) & self.board.rooks_and_queens())
            | (attacks::bishop(king, occupied) & self.board.bishops_and_queens()))
            & others)
            .any()
    }

    /// The Zobrist hash computed from scratch (for checks; play keeps it incrementally).
    pub fn compute_hash(&self) -> u64 {
        let mut h = 0;
        for color in Color::ALL {
            for role in Role::ALL {
                for sq in self.board.by_piece(Piece { color, role }) {
                    h ^= zobrist::piece(color, role, sq);
                }
            }
        }
        // Which rights are held, not their rooks' files: a game's castling rooks never change,
        // so two positions of one game differ in rights only by the rights held.
        h ^= zobrist::castling(self.castling.bits());
        if let Some(ep) = self.ep_square {
            h ^= zobrist::ep_file(ep.file());
        }
        if self.turn == Color::Black {
            h ^= zobrist::black_to_move();
        }
        h
    }

    /// Sets the en passant square after a double step to `ep` if an enemy pawn could take there.
    #[inline]
    fn set_ep_if_capturable(&mut self, ep: Square) {
        let capturers = attacks::pawn(self.turn, ep)
            & self.board.by_piece(Piece {
                color: !self.turn,
                role: Role::Pawn,
            });
        if capturers.any() {
            self.ep_square = Some(ep);
            self.hash ^= zobrist::ep_file(ep.file());
        }
    }

    #[inline]
    fn put(&mut self, piece: Piece, sq: Square) {
        self.board.toggle(piece, sq);
        self.hash ^= zobrist::piece(piece.color, piece.role, sq);
    }

    /// Places `piece` from a reserve on the empty square `to` and passes the turn (crazyhouse
    /// and bughouse drops; the caller keeps the reserves). A pawn drop resets the halfmove
    /// clock, as a pawn move does (python-chess 1.11 adds one for every drop instead; see
    /// `docs/rules.md`).
    pub(crate) fn play_drop(&mut self, piece: Piece, to: Square) {
        if let Some(ep) = self.ep_square.take() {
            self.hash ^= zobrist::ep_file(ep.file());
        }
        self.put(piece, to);
        self.halfmoves = if piece.role == Role::Pawn {
            0
        } else {
            tick(self.halfmoves)
        };
        if self.turn == Color::Black {
            self.fullmoves = tick(self.fullmoves);
        }
        self.turn = !self.turn;
        self.hash ^= zobrist::black_to_move();
    }

    /// Plays a legal move (copy-make: callers keep the previous position if they need it).
    #[inline]
    pub fn play_unchecked(&mut self, m: Move) {
        let us = self.turn;
        let them = !us;
        let from = m.from();
        let to = m.to();
        if let Some(ep) = self.ep_square.take() {
            self.hash ^= zobrist::ep_file(ep.file());
        }
        self.halfmoves = tick(self.halfmoves);
        let old_rights = self.castling.bits();
        match m.kind() {
            MoveKind::Normal | MoveKind::Promotion(_) => {
                let role = self
                    .board
                    .role_at(from)
                    .expect("a piece on the origin square");
                if let Some(captured) = self.board.role_at(to) {
                    self.put(
                        Piece {
                            color: them,
                            role: captured,
                        },
                        to,
                    );
                    self.halfmoves = 0;
                }
                self.put(Piece { color: us, role }, from);
                let placed = m.promotion_role().unwrap_or(role);
                self.put(
                    Piece {
                        color: us,
                        role: placed,
                    },
                    to,
                );
                if role == Role::Pawn {
                    self.halfmoves = 0;
                    if from.index().abs_diff(to.index()) == 16 {
                        let ep =
                            Square::from_index_unchecked((from.index() + to.index()) as u32 / 2);
                        self.set_ep_if_capturable(ep);
                    }
                }
                // Rights are lost only by king moves and moves from or to a castling rook's
                // square, which is on a back rank.
                let back_rank = |sq: Square| sq.rank() == 0 || sq.rank() == 7;
                if old_rights != 0 && (role == Role::King || back_rank(from) || back_rank(to)) {
                    self.castling = self.castling.after_move(us, role, from, to);
                }
            }
            MoveKind::EnPassant => {
                let captured = Square::from_coords(to.file(), from.rank()).expect("on board");
                self.put(
                    Piece {
                        color: them,
                        role: Role::Pawn,
                    },
                    captured,
                );
                self.put(
                    Piece {
                        color: us,
                        role: Role::Pawn,
                    },
                    from,
                );
                self.put(
                    Piece {
                        color: us,
                        role: Role::Pawn,
                    },
                    to,
                );
                self.halfmoves = 0;
            }
            MoveKind::Castle => {
                // `to` holds the rook; lift both pieces before placing them, since the king
                // may land where the rook stood (or stay where it is) in Chess960.
                let (king_to, rook_to) = m.castling_targets();
                let king = Piece {
                    color: us,
                    role: Role::King,
                };
                let rook = Piece {
                    color: us,
                    role: Role::Rook,
                };
                self.put(king, from);
                self.put(rook, to);
                self.put(king, king_to);
                self.put(rook, rook_to);
                self.castling.remove(us, true);
                self.castling.remove(us, false);
            }
            MoveKind::Drop(role) => {
                self.put(Piece { color: us, role }, to);
            }
        }
        if self.castling.bits() != old_rights {
            self.hash ^= zobrist::castling(old_rights) ^ zobrist::castling(self.castling.bits());
        }
        self.turn = them;
        self.hash ^= zobrist::black_to_move();
        if us == Color::Black {
            self.fullmoves = tick(self.fullmoves);
        }
    }

    /// Every legal move.
    pub fn legal_moves(&self) -> MoveList {
        let mut moves = MoveList::new();
        self.gen_legal(&mut moves);
        moves
    }

    /// Whether an en passant capture is legal now.
    pub fn has_legal_ep(&self) -> bool {
        let Some(ep) = self.ep_square else {
            return false;
        };
        let king = self.our_king();
        let pawns = self.board.by_piece(Piece {
            color: self.turn,
            role: Role::Pawn,
        });
        let mut capturers = attacks::pawn(!self.turn, ep) & pawns;
        Iterator::any(&mut capturers, |from| self.ep_is_legal(king, from, ep))
    }

    /// Whether `color` has material that could deliver mate by some series of legal moves.
    ///
    /// Sound for every answer `false`: a bare king; a lone knight against a bare king; bishops
    /// only, all on one square colour, against a king with at most bishops of that same colour.
    /// Everything else answers `true`, including rare positions where mate is in fact
    /// impossible (e.g. fully blocked pawn chains); see `docs/rules.md`.
    pub fn can_possibly_mate(&self, color: Color) -> bool {
        let b = &self.board;
        let ours = b.by_color(color) & !b.by_role(Role::King);
        let theirs = b.by_color(!color) & !b.by_role(Role::King);
        if ours.is_empty() {
            return false;
        }
        if (ours & (b.by_role(Role::Pawn) | b.rooks_and_queens())).any() {
            return true;
        }
        let knights = ours & b.by_role(Role::Knight);
        let bishops = b.by_role(Role::Bishop);
        if knights.is_empty() {
            let one_colour =
                (bishops & Bitboard::DARK).is_empty() || (bishops & Bitboard::LIGHT).is_empty();
            let only_bishops_against = (theirs & !bishops).is_empty();
            return !(one_colour && only_bishops_against);
        }
        if knights.count() == 1 && (ours & bishops).is_empty() {
            return theirs.any();
        }
        true
    }

    /// Whether no series of legal moves can end in checkmate for either side (an automatic
    /// draw). Covers K v K, K+minor v K, and bishops all on one colour.
    pub fn is_dead_position(&self) -> bool {
        !self.can_possibly_mate(Color::White) && !self.can_possibly_mate(Color::Black)
    }

    /// Checkmate, stalemate or dead position, judged from the position alone.
    pub fn terminal(&self) -> Option<Outcome> {
        let mut moves = MoveList::new();
        self.gen_legal(&mut moves);
        if moves.is_empty() {
            return Some(if self.checkers().any() {
                Outcome::win(!self.turn, EndReason::Checkmate)
            } else {
                Outcome::draw(EndReason::Stalemate)
            });
        }
        self.is_dead_position()
            .then_some(Outcome::draw(EndReason::DeadPosition))
    }
}

impl Position for Chess {
    type Move = Move;
    type MoveList = MoveList;

    fn variant(&self) -> Variant {
        if self.chess960 {
            Variant::Chess960
        } else {
            Variant::Chess
        }
    }

    #[inline]
    fn turn(&self) -> Color {
        self.turn
    }

    #[inline]
    fn legal_moves_into(&self, moves: &mut MoveList) {
        moves.clear();
        self.gen_legal(moves);
    }

    #[inline]
    fn is_capture(&self, m: Move) -> bool {
        match m.kind() {
            MoveKind::EnPassant => true,
            MoveKind::Castle | MoveKind::Drop(_) => false,
            _ => self.board.by_color(!self.turn).contains(m.to()),
        }
    }

    /// Captures and promotions, generated alone (not filtered from every move).
    fn capture_moves_into(&self, moves: &mut MoveList) {
        moves.clear();
        self.gen_filtered(moves, movegen::Filter::TACTICAL);
    }

    /// Generates only the moves of the piece on `m`'s origin square.
    fn is_legal(&self, m: Move) -> bool {
        self.is_legal_move(m)
    }

    #[inline]
    fn play_unchecked(&mut self, m: Move) {
        Chess::play_unchecked(self, m);
    }

    #[inline]
    fn is_check(&self) -> bool {
        self.checkers().any()
    }

    #[inline]
    fn gives_check(&self, m: Move) -> bool {
        Chess::gives_check(self, m)
    }

    #[inline]
    fn zobrist(&self) -> u64 {
        self.hash
    }

    fn repetition_key(&self) -> u64 {
        match self.ep_square {
            Some(ep) if !self.has_legal_ep() => self.hash ^ zobrist::ep_file(ep.file()),
            _ => self.hash,
        }
    }

    fn halfmove_clock(&self) -> u32 {
        self.halfmoves
    }

    fn fullmove_number(&self) -> u32 {
        self.fullmoves
    }

    fn null_move(&self) -> Option<Chess> {
        if self.is_check() {
            return None;
        }
        let mut p = *self;
        if let Some(ep) = p.ep_square.take() {
            p.hash ^= zobrist::ep_file(ep.file());
        }
        p.turn = !p.turn;
        p.hash ^= zobrist::black_to_move();
        p.halfmoves = tick(p.halfmoves);
        if self.turn == Color::Black {
            p.fullmoves = tick(p.fullmoves);
        }
        Some(p)
    }

    fn terminal(&self) -> Option<Outcome> {
        Chess::terminal(self)
    }

    fn draw_rules(&self) -> DrawRules {
        DrawRules {
            repetition: Some((3, 5)),
            move_rule_plies: Some((100, 150)),
        }
    }

    fn can_possibly_mate(&self, color: Color) -> bool {
        Chess::can_possibly_mate(self, color)
    }

    fn to_text(&self) -> String {
        self.to_fen()
    }

    fn move_to_uci(&self, m: Move) -> String {
        uci::Uci::from_move(m).to_string()
    }

    fn move_to_san(&self, m: Move, locale: Locale) -> String {
        san::write_san(self, m, locale, true)
    }

    fn parse_move(
        &self,
        text: &str,
        notation: Notation,
        locale: Locale,
    ) -> Result<Move, MoveError> {
        let text = text.trim();
        match notation {
            Notation::Uci => uci::parse_legal(self, text),
            Notation::San => san::parse_san(self, text, locale),
            Notation::Auto => {
                if uci::looks_like_uci(text) {
                    uci::parse_legal(self, text)
                } else {
                    san::parse_san(self, text, locale)
                }
            }
        }
    }
}
