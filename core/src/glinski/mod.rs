//! Glinski's hexagonal chess: 91 hexagonal cells in eleven files (`a`–`l`, no `j`), the chess
//! pieces with moves along the six edge and six corner directions, nine pawns a side. The rules
//! and the position string are stated in `docs/rules.md`.
//!
//! The 91 cells live in a `u128` bitboard ([`geometry`]); sliders use precomputed rays with the
//! nearest blocker found by a bit scan. Move generation is fully legal in one pass, the way
//! fast square-board generators work: checkers and pins are found from the king first, so only
//! king steps and the rare en passant capture need a trial make.
//!
//! Rules beyond standard chess: pawns double-step from any of their side's start cells, capture
//! on the two edge-adjacent forward cells, may take en passant on any file, and promote on the
//! last cell of their file; there is no castling; stalemate scores ¾ to the stalemating side;
//! only king against king is dead.

pub mod geometry;
pub mod render;
mod text;

pub use geometry::{Bitboard, Cell, cell_name, parse_cell};

/// The origin and destination cells a coordinate move (`f10f11q`) names, read by its form alone
/// (no position: whether a piece can make it is not checked).
pub(crate) fn coordinate_cells(text: &str) -> Result<(Cell, Cell), String> {
    text::parse_coordinate(text).map(|m| (m.from, m.to))
}

use crate::chess::san::role_letter;
use crate::outcome::{EndReason, Outcome, Score};
use crate::position::{DrawRules, IllegalReason, Locale, MoveError, Notation, Position, tick};
use crate::types::{Color, Piece, Role};
use crate::variant::Variant;
use arrayvec::ArrayVec;
use geometry::{
    BISHOP_LINES, Cells, FILE_A, FILE_L, INDEX_SPACE, KING, KNIGHT, NONE, PAWN_CAPTURES,
    PAWN_START, PAWN_STEP, PROMOTION, RAYS, ROOK_LINES, VALID, bishop_attacks, nearest,
    rook_attacks, shift, side,
};
use std::fmt;

/// A Glinski move: origin, destination and promotion piece.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct HexMove {
    /// Origin cell.
    pub from: Cell,
    /// Destination cell.
    pub to: Cell,
    /// The piece a pawn reaching its last cell becomes.
    pub promotion: Option<Role>,
}

/// The move in coordinate notation (what `move_to_uci` returns).
impl fmt::Display for HexMove {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&cell_name(self.from))?;
        f.write_str(&cell_name(self.to))?;
        if let Some(p) = self.promotion {
            write!(f, "{}", p.char())?;
        }
        Ok(())
    }
}

impl fmt::Debug for HexMove {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Legal moves of one position. With at most 18 pieces a side (enforced when a position is
/// read) and at most 42 moves for any piece, 768 cannot overflow.
pub type HexMoveList = ArrayVec<HexMove, 768>;

struct Keys {
    pieces: [[[u64; INDEX_SPACE]; 6]; 2],
    ep: [u64; INDEX_SPACE],
    black: u64,
}

static KEYS: Keys = {
    let mut k = Keys {
        pieces: [[[0; INDEX_SPACE]; 6]; 2],
        ep: [0; INDEX_SPACE],
        black: 0,
    };
    let mut state: u64 = 0x476c_696e_736b_6921; // "Glinski!"
    let mut c = 0;
    while c < 2 {
        let mut r = 0;
        while r < 6 {
            let mut s = 0;
            while s < INDEX_SPACE {
                let (st, v) = crate::chess::zobrist::splitmix(state);
                state = st;
                k.pieces[c][r][s] = v;
                s += 1;
            }
            r += 1;
        }
        c += 1;
    }
    let mut s = 0;
    while s < INDEX_SPACE {
        let (st, v) = crate::chess::zobrist::splitmix(state);
        state = st;
        k.ep[s] = v;
        s += 1;
    }
    k.black = crate::chess::zobrist::splitmix(state).1;
    k
};

/// The start position string.
pub const START: &str =
    "b/qbk/n1b1n/r5r/ppppppppp/11/5P5/4P1P4/3P1B1P3/2P2B2P2/1PRNQBKNRP1 w - 0 1";

/// A Glinski position. Build one with [`Glinski::new`] or [`Glinski::from_text`] (which checks
/// that the position can occur); play legal moves from [`Position::legal_moves_into`].
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct Glinski {
    roles: [Bitboard; 6],
    colors: [Bitboard; 2],
    turn: Color,
    /// The cell a pawn skipped with its last double step, kept only while an enemy pawn stands
    /// ready to capture there.
    ep: Option<Cell>,
    halfmoves: u32,
    fullmoves: u32,
    hash: u64,
}

impl fmt::Debug for Glinski {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Glinski({})", self.to_text())
    }
}

impl Default for Glinski {
    fn default() -> Glinski {
        Glinski::new()
    }
}

#[inline(always)]
const fn bit(cell: Cell) -> Bitboard {
    1 << cell
}

impl Glinski {
    /// The start position.
    pub fn new() -> Glinski {
        Glinski::from_text(START).expect("the start position is valid")
    }

    /// An empty board with White to move (only for building positions; not playable until
    /// checked by [`Glinski::from_text`]).
    fn empty() -> Glinski {
        Glinski {
            roles: [0; 6],
            colors: [0; 2],
            turn: Color::White,
            ep: None,
            halfmoves: 0,
            fullmoves: 1,
            hash: 0,
        }
    }

    /// The piece on `cell`.
    pub fn piece_at(&self, cell: Cell) -> Option<Piece> {
        let b = bit(cell);
        let color = if self.colors[0] & b != 0 {
            Color::White
        } else if self.colors[1] & b != 0 {
            Color::Black
        } else {
            return None;
        };
        Some(Piece {
            color,
            role: self.role_at(b),
        })
    }

    /// The role of the piece on the occupied cell `b` (pawns checked first: the most common).
    #[inline]
    fn role_at(&self, b: Bitboard) -> Role {
        if self.roles[0] & b != 0 {
            Role::Pawn
        } else if self.roles[1] & b != 0 {
            Role::Knight
        } else if self.roles[2] & b != 0 {
            Role::Bishop
        } else if self.roles[3] & b != 0 {
            Role::Rook
        } else if self.roles[4] & b != 0 {
            Role::Queen
        } else {
            Role::King
        }
    }

    /// The cells of `color`'s pieces of kind `role`.
    #[inline]
    pub fn pieces(&self, color: Color, role: Role) -> Bitboard {
        self.colors[side(color)] & self.roles[role.index()]
    }

    /// Every occupied cell.
    #[inline]
    pub fn occupied(&self) -> Bitboard {
        self.colors[0] | self.colors[1]
    }

    /// The cells of `color`'s pieces.
    #[inline]
    pub fn by_color(&self, color: Color) -> Bitboard {
        self.colors[side(color)]
    }

    /// The en passant cell (the cell the last double step skipped), when a pawn can use it.
    pub fn ep_cell(&self) -> Option<Cell> {
        self.ep
    }

    /// Adds or removes a piece, keeping the hash.
    #[inline(always)]
    fn toggle(&mut self, color: Color, role: Role, cell: Cell) {
        let b = bit(cell);
        self.colors[side(color)] ^= b;
        self.roles[role.index()] ^= b;
        self.hash ^= KEYS.pieces[side(color)][role.index()][cell as usize];
    }

    /// The Zobrist hash computed from scratch (play keeps it incrementally).
    pub fn compute_hash(&self) -> u64 {
        let mut h = 0;
        for color in Color::ALL {
            for role in Role::ALL {
                for c in Cells(self.pieces(color, role)) {
                    h ^= KEYS.pieces[side(color)][role.index()][c as usize];
                }
            }
        }
        if let Some(ep) = self.ep {
            h ^= KEYS.ep[ep as usize];
        }
        if self.turn == Color::Black {
            h ^= KEYS.black;
        }
        h
    }

    /// `by`'s pieces attacking `cell` with `occupied` as the blockers.
    #[inline]
    pub fn attackers(&self, cell: Cell, by: Color, occupied: Bitboard) -> Bitboard {
        let c = cell as usize;
        let queens = self.roles[Role::Queen.index()];
        let orth = self.roles[Role::Rook.index()] | queens;
        let diag = self.roles[Role::Bishop.index()] | queens;
        let mut att = KNIGHT[c] & self.roles[Role::Knight.index()]
            | KING[c] & self.roles[Role::King.index()]
            // A `by` pawn attacks `cell` from where an opposite pawn on `cell` would capture.
            | PAWN_CAPTURES[side(!by)][c] & self.roles[Role::Pawn.index()];
        let them = self.colors[side(by)];
        if ROOK_LINES[c] & orth & them != 0 {
            att |= rook_attacks(c, occupied) & orth;
        }
        if BISHOP_LINES[c] & diag & them != 0 {
            att |= bishop_attacks(c, occupied) & diag;
        }
        att & them
    }

    /// Whether `color`'s king is attacked.
    pub fn king_attacked(&self, color: Color) -> bool {
        let king = self.pieces(color, Role::King);
        king != 0 && self.attackers(king.trailing_zeros() as Cell, !color, self.occupied()) != 0
    }

    /// Whether `color` has nothing but its king.
    pub fn is_bare(&self, color: Color) -> bool {
        self.colors[side(color)] & !self.roles[Role::King.index()] == 0
    }

    /// Pushes the pawn move `from`→`to`, as four promotions on a last cell.
    #[inline(always)]
    fn push_pawn(moves: &mut HexMoveList, us: Color, from: Cell, to: Cell) {
        if PROMOTION[side(us)] & bit(to) != 0 {
            for role in Role::PROMOTIONS {
                moves.push(HexMove {
                    from,
                    to,
                    promotion: Some(role),
                });
            }
        } else {
            moves.push(HexMove {
                from,
                to,
                promotion: None,
            });
        }
    }

    /// Every legal move, or with `captures_only` the legal captures alone (en passant
    /// included) in the same order: checkers and pins first; no trial make except for king
    /// steps' attack test and en passant.
    fn generate(&self, moves: &mut HexMoveList, captures_only: bool) {
        let us = self.turn;
        let them = !us;
        let own = self.colors[side(us)];
        let enemy = self.colors[side(them)];
        let occ = own | enemy;
        let king_bb = own & self.roles[Role::King.index()];
        if king_bb == 0 {
            return; // cannot happen in a checked position
        }
        let k = king_bb.trailing_zeros() as Cell;
        let ku = k as usize;

        // King steps: the target must be safe with the king lifted off its cell (so that it
        // cannot hide behind itself along a checking ray).
        let lifted = occ ^ king_bb;
        // Where a piece may go as far as `captures_only` is concerned.
        let wanted = if captures_only { enemy } else { !0 };
        for to in Cells(KING[ku] & !own & wanted) {
            if self.attackers(to, them, lifted) == 0 {
                moves.push(HexMove {
                    from: k,
                    to,
                    promotion: None,
                });
            }
        }

        let checkers = self.attackers(k, them, occ);
        if checkers.count_ones() > 1 {
            return;
        }

        let queens = self.roles[Role::Queen.index()];
        let orth = (self.roles[Role::Rook.index()] | queens) & enemy;
        let diag = (self.roles[Role::Bishop.index()] | queens) & enemy;

        // Cells a non-king move must reach to answer a check: the checker or the line to it.
        let mut check_mask = !0;
        if checkers != 0 {
            check_mask = checkers;
            if let Some(rays) = RAYS.iter().find(|rays| rays[ku] & checkers != 0) {
                check_mask = rays[ku] ^ rays[checkers.trailing_zeros() as usize];
            }
        }

        // Pins: an own piece that is the only one between the king and an enemy slider moving
        // along that line may move only along it.
        let mut pinned: Bitboard = 0;
        let mut pin_lines: ArrayVec<(Cell, Bitboard), 12> = ArrayVec::new();
        let any_slider_on_a_line = ROOK_LINES[ku] & orth | BISHOP_LINES[ku] & diag != 0;
        let directions = if any_slider_on_a_line { 12 } else { 0 };
        for (d, rays) in RAYS.iter().enumerate().take(directions) {
            let ray = rays[ku];
            let sliders = if d < 6 { orth } else { diag };
            if ray & sliders == 0 {
                continue;
            }
            let blockers = ray & occ;
            let first = nearest(d, blockers);
            if own & (1 << first) == 0 {
                continue;
            }
            let beyond = rays[first] & occ;
            if beyond == 0 {
                continue;
            }
            let second = nearest(d, beyond);
            if sliders & (1 << second) != 0 {
                pinned |= 1 << first;
                pin_lines.push((first as Cell, ray ^ rays[second]));
            }
        }
        let line_of = |cell: Cell| -> Bitboard {
            if pinned & bit(cell) == 0 {
                return !0;
            }
            pin_lines
                .iter()
                .find(|(c, _)| *c == cell)
                .map_or(!0, |&(_, line)| line)
        };

        let target_mask = !own & check_mask & wanted;
        let mut push_all = |from: Cell, targets: Bitboard| {
            for to in Cells(targets & target_mask & line_of(from)) {
                moves.push(HexMove {
                    from,
                    to,
                    promotion: None,
                });
            }
        };
        // A pinned knight has no move along its pin line, so it can be skipped outright.
        for from in Cells(own & self.roles[Role::Knight.index()] & !pinned) {
            push_all(from, KNIGHT[from as usize]);
        }
        let queens = own & self.roles[Role::Queen.index()];
        for from in Cells(own & self.roles[Role::Rook.index()] | queens) {
            push_all(from, rook_attacks(from as usize, occ));
        }
        for from in Cells(own & self.roles[Role::Bishop.index()] | queens) {
            push_all(from, bishop_attacks(from as usize, occ));
        }

        let s = side(us);
        let pawns = own & self.roles[Role::Pawn.index()];

        // Unpinned pawns, set-wise: shift the whole set one step (a file never changes on a
        // straight step; capture shifts leave out the edge file they would wrap from).
        let free = pawns & !pinned;
        let (step, cap_left, cap_right): (i32, (i32, Bitboard), (i32, Bitboard)) = match us {
            // White captures at (-1,+1) = +10 (not from file a) and (+1,0) = +1 (not from l).
            Color::White => (11, (10, !FILE_A), (1, !FILE_L)),
            // Black captures at (+1,-1) = -10 (not from file l) and (-1,0) = -1 (not from a).
            Color::Black => (-11, (-10, !FILE_L), (-1, !FILE_A)),
        };
        let empty = !occ & VALID;
        // Pushes capture nothing: none when only captures are asked for.
        let pushing = if captures_only { 0 } else { !0 };
        let single = shift(free, step) & empty & pushing;
        let double = shift(shift(free & PAWN_START[s], step) & empty, step) & empty & pushing;
        for to in Cells(single & check_mask) {
            Self::push_pawn(moves, us, (i32::from(to) - step) as Cell, to);
        }
        for to in Cells(double & check_mask) {
            moves.push(HexMove {
                from: (i32::from(to) - 2 * step) as Cell,
                to,
                promotion: None,
            });
        }
        for (delta, sources) in [cap_left, cap_right] {
            for to in Cells(shift(free & sources, delta) & enemy & check_mask) {
                Self::push_pawn(moves, us, (i32::from(to) - delta) as Cell, to);
            }
        }

        // Pinned pawns one by one, within their pin line.
        for from in Cells(pawns & pinned) {
            let f = from as usize;
            let allowed = check_mask & line_of(from);
            let one = PAWN_STEP[s][f];
            if !captures_only && one != NONE && occ & bit(one) == 0 {
                if allowed & bit(one) != 0 {
                    Self::push_pawn(moves, us, from, one);
                }
                if PAWN_START[s] & bit(from) != 0 {
                    let two = PAWN_STEP[s][one as usize];
                    if two != NONE && occ & bit(two) == 0 && allowed & bit(two) != 0 {
                        moves.push(HexMove {
                            from,
                            to: two,
                            promotion: None,
                        });
                    }
                }
            }
            for to in Cells(PAWN_CAPTURES[s][f] & enemy & allowed) {
                Self::push_pawn(moves, us, from, to);
            }
        }

        // En passant: removing two pawns from different lines can expose the king in ways the
        // pin test does not see, so each capture is tested by making it.
        if let Some(ep) = self.ep {
            for from in Cells(PAWN_CAPTURES[side(them)][ep as usize] & pawns) {
                let m = HexMove {
                    from,
                    to: ep,
                    promotion: None,
                };
                let mut after = *self;
                after.play_unchecked(m);
                if !after.king_attacked(us) {
                    moves.push(m);
                }
            }
        }
    }

    /// Every legal move.
    pub fn legal_moves(&self) -> HexMoveList {
        let mut moves = HexMoveList::new();
        self.generate(&mut moves, false);
        moves
    }

    /// Plays a legal move.
    pub fn play_unchecked(&mut self, m: HexMove) {
        let us = self.turn;
        let them = !us;
        let role = self.role_at(bit(m.from));
        if let Some(ep) = self.ep.take() {
            self.hash ^= KEYS.ep[ep as usize];
            if role == Role::Pawn && m.to == ep {
                // En passant: the captured pawn stands one step beyond the skipped cell.
                self.toggle(them, Role::Pawn, PAWN_STEP[side(them)][ep as usize]);
            }
        }
        self.halfmoves = tick(self.halfmoves);
        if self.colors[side(them)] & bit(m.to) != 0 {
            let captured = self.role_at(bit(m.to));
            self.toggle(them, captured, m.to);
            self.halfmoves = 0;
        }
        self.toggle(us, role, m.from);
        self.toggle(us, m.promotion.unwrap_or(role), m.to);
        if role == Role::Pawn {
            self.halfmoves = 0;
            if m.from.abs_diff(m.to) == 22 {
                // A double step (two cells of 11 index steps along the file).
                let skipped = (m.from + m.to) / 2;
                if PAWN_CAPTURES[side(us)][skipped as usize] & self.pieces(them, Role::Pawn) != 0 {
                    self.ep = Some(skipped);
                    self.hash ^= KEYS.ep[skipped as usize];
                }
            }
        }
        self.turn = them;
        self.hash ^= KEYS.black;
        if us == Color::Black {
            self.fullmoves = tick(self.fullmoves);
        }
    }

    /// The ending judged from the position: checkmate (1–0 / 0–1), stalemate (¾ to the
    /// stalemating side), or king against king (dead, ½–½).
    pub fn terminal(&self) -> Option<Outcome> {
        let us = self.turn;
        if self.legal_moves().is_empty() {
            return Some(if self.king_attacked(us) {
                Outcome::win(!us, EndReason::Checkmate)
            } else {
                Outcome {
                    score: Score::quarters_to(!us, 3).expect("3 quarters"),
                    reason: EndReason::Stalemate,
                }
            });
        }
        if self.is_bare(Color::White) && self.is_bare(Color::Black) {
            return Some(Outcome::draw(EndReason::DeadPosition));
        }
        None
    }

    /// Why `from`→`to` (with `promotion`) is not a legal move here.
    fn diagnose(&self, from: Cell, to: Cell, promotion: Option<Role>) -> IllegalReason {
        let Some(piece) = self.piece_at(from) else {
            return IllegalReason::NoPiece {
                square: cell_name(from),
            };
        };
        if piece.color != self.turn {
            return IllegalReason::WrongSide {
                square: cell_name(from),
            };
        }
        let s = side(self.turn);
        let f = from as usize;
        let reaches_last = piece.role == Role::Pawn && PROMOTION[s] & bit(to) != 0;
        match promotion {
            None if reaches_last => return IllegalReason::PromotionRequired,
            Some(_) if !reaches_last => return IllegalReason::BadPromotion,
            Some(Role::Pawn | Role::King) => return IllegalReason::BadPromotion,
            _ => {}
        }
        let geometry = match piece.role {
            Role::Pawn => {
                let one = PAWN_STEP[s][f];
                let mut g = PAWN_CAPTURES[s][f];
                if one != NONE {
                    g |= bit(one);
                    if PAWN_START[s] & bit(from) != 0 && PAWN_STEP[s][one as usize] != NONE {
                        g |= bit(PAWN_STEP[s][one as usize]);
                    }
                }
                g
            }
            Role::Knight => KNIGHT[f],
            Role::Bishop => bishop_attacks(f, 0),
            Role::Rook => rook_attacks(f, 0),
            Role::Queen => rook_attacks(f, 0) | bishop_attacks(f, 0),
            Role::King => KING[f],
        };
        if geometry & bit(to) == 0 {
            return IllegalReason::CannotReach;
        }
        // Reachable by geometry: is it a move that only king safety forbids?
        if self.pseudo_legal(from, to) {
            IllegalReason::LeavesKingInCheck
        } else {
            IllegalReason::Blocked
        }
    }

    /// Whether `from`→`to` obeys piece movement, ignoring the mover's king.
    fn pseudo_legal(&self, from: Cell, to: Cell) -> bool {
        let us = self.turn;
        let s = side(us);
        let f = from as usize;
        let occ = self.occupied();
        let own = self.colors[s];
        let enemy = self.colors[side(!us)];
        if own & bit(to) != 0 {
            return false;
        }
        match self.role_at(bit(from)) {
            Role::Pawn => {
                let one = PAWN_STEP[s][f];
                let empty = |c: Cell| c != NONE && occ & bit(c) == 0;
                (to == one && empty(one))
                    || (PAWN_START[s] & bit(from) != 0
                        && empty(one)
                        && to == PAWN_STEP[s][one as usize]
                        && empty(to))
                    || (PAWN_CAPTURES[s][f] & bit(to) != 0
                        && (enemy & bit(to) != 0 || self.ep == Some(to)))
            }
            Role::Knight => KNIGHT[f] & bit(to) != 0,
            Role::Bishop => bishop_attacks(f, occ) & bit(to) != 0,
            Role::Rook => rook_attacks(f, occ) & bit(to) != 0,
            Role::Queen => (rook_attacks(f, occ) | bishop_attacks(f, occ)) & bit(to) != 0,
            Role::King => KING[f] & bit(to) != 0,
        }
    }

    /// Whether an en passant capture is legal now (repetition counts the en passant right only
    /// then).
    fn ep_capture_legal(&self) -> bool {
        let Some(ep) = self.ep else { return false };
        self.legal_moves()
            .iter()
            .any(|m| m.to == ep && self.roles[Role::Pawn.index()] & bit(m.from) != 0)
    }

    /// The legal move `m` in the record notation: `Qe1-c3`, `e4xf5`, `f10-f11=Q`, with a `+`
    /// or `#` suffix.
    pub fn move_to_record(&self, m: HexMove, locale: Locale) -> String {
        let mut out = String::with_capacity(12);
        let role = self.role_at(bit(m.from));
        if let Some(letter) = role_letter(role, locale) {
            out.push(letter);
        }
        out.push_str(&cell_name(m.from));
        let capture = self.is_capture(m);
        out.push(if capture { 'x' } else { '-' });
        out.push_str(&cell_name(m.to));
        if let Some(p) = m.promotion {
            out.push('=');
            out.push(role_letter(p, locale).expect("a promotion piece has a letter"));
        }
        let mut after = *self;
        after.play_unchecked(m);
        if after.king_attacked(after.turn) {
            out.push(if after.legal_moves().is_empty() {
                '#'
            } else {
                '+'
            });
        }
        out
    }
}

impl Position for Glinski {
    type Move = HexMove;
    type MoveList = HexMoveList;

    fn variant(&self) -> Variant {
        Variant::Glinski
    }

    fn turn(&self) -> Color {
        self.turn
    }

    fn legal_moves_into(&self, moves: &mut HexMoveList) {
        moves.clear();
        self.generate(moves, false);
    }

    /// The captures, generated alone (not filtered from every move).
    fn capture_moves_into(&self, moves: &mut HexMoveList) {
        moves.clear();
        self.generate(moves, true);
    }

    fn is_capture(&self, m: HexMove) -> bool {
        self.colors[side(!self.turn)] & bit(m.to) != 0
            || (Some(m.to) == self.ep && self.roles[Role::Pawn.index()] & bit(m.from) != 0)
    }

    fn play_unchecked(&mut self, m: HexMove) {
        Glinski::play_unchecked(self, m);
    }

    fn is_check(&self) -> bool {
        self.king_attacked(self.turn)
    }

    fn zobrist(&self) -> u64 {
        self.hash
    }

    fn repetition_key(&self) -> u64 {
        match self.ep {
            Some(ep) if !self.ep_capture_legal() => self.hash ^ KEYS.ep[ep as usize],
            _ => self.hash,
        }
    }

    fn halfmove_clock(&self) -> u32 {
        self.halfmoves
    }

    fn fullmove_number(&self) -> u32 {
        self.fullmoves
    }

    fn null_move(&self) -> Option<Glinski> {
        if self.is_check() {
            return None;
        }
        let mut p = *self;
        if let Some(ep) = p.ep.take() {
            p.hash ^= KEYS.ep[ep as usize];
        }
        p.turn = !p.turn;
        p.hash ^= KEYS.black;
        p.halfmoves = tick(p.halfmoves);
        if self.turn == Color::Black {
            p.fullmoves = tick(p.fullmoves);
        }
        Some(p)
    }

    fn terminal(&self) -> Option<Outcome> {
        Glinski::terminal(self)
    }

    fn draw_rules(&self) -> DrawRules {
        DrawRules {
            repetition: Some((3, 5)),
            move_rule_plies: Some((100, 150)),
        }
    }

    /// Anything beyond a bare king might mate on this board (two knights can), so only a bare
    /// king cannot.
    fn can_possibly_mate(&self, color: Color) -> bool {
        !self.is_bare(color)
    }

    fn to_text(&self) -> String {
        text::write(self)
    }

    fn move_to_uci(&self, m: HexMove) -> String {
        m.to_string()
    }

    /// The record notation (`Qe1-c3`, `e4xf5`, `f10-f11=Q+`).
    fn move_to_san(&self, m: HexMove, locale: Locale) -> String {
        self.move_to_record(m, locale)
    }

    /// Reads the coordinate form (`g4g5`, `f10f11q`) or the record form (`Qe1-c3`, `e4xf5`,
    /// `f10-f11=Q+`); [`Notation::Uci`] accepts only the coordinate form.
    fn parse_move(
        &self,
        input: &str,
        notation: Notation,
        locale: Locale,
    ) -> Result<HexMove, MoveError> {
        let trimmed = input.trim();
        let parsed = match notation {
            Notation::Uci => text::parse_coordinate(trimmed),
            Notation::San | Notation::Auto => text::parse_record(trimmed, locale),
        }
        .map_err(|reason| MoveError::syntax(trimmed, reason))?;
        let m = HexMove {
            from: parsed.from,
            to: parsed.to,
            promotion: parsed.promotion,
        };
        if let Some(role) = parsed.role
            && self.piece_at(m.from).is_some_and(|p| p.role != role)
        {
            return Err(MoveError::illegal(trimmed, IllegalReason::NoMatchingMove));
        }
        if self.legal_moves().contains(&m) {
            Ok(m)
        } else {
            Err(MoveError::illegal(
                trimmed,
                self.diagnose(m.from, m.to, m.promotion),
            ))
        }
    }
}

#[cfg(test)]
mod tests;
