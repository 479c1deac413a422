//! The variant-generic position interface.
//!
//! Search code, perft and [`Game`](crate::Game) are written once against [`Position`] and
//! monomorphised per variant (static dispatch in hot loops). Services and the CLI use
//! [`AnyPosition`](crate::AnyPosition), an enum over the concrete positions that implements the
//! same trait (dynamic at the edge).

use crate::outcome::Outcome;
use crate::types::Color;
use crate::variant::Variant;
use std::fmt;
use std::hash::Hash;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

/// A reusable buffer that move generators fill without allocating (fixed-capacity for the
/// concrete variants, a `Vec` for the dynamic [`AnyPosition`](crate::AnyPosition)).
pub trait MoveBuffer<M>: Default + Clone + fmt::Debug + Deref<Target = [M]> + DerefMut {
    /// Appends a move.
    fn push(&mut self, m: M);
    /// Empties the buffer, keeping its storage.
    fn clear(&mut self);
    /// Keeps only the moves for which `keep` returns true.
    fn retain(&mut self, keep: impl FnMut(&M) -> bool);
}

impl<M: Copy + fmt::Debug, const N: usize> MoveBuffer<M> for arrayvec::ArrayVec<M, N> {
    #[inline]
    fn push(&mut self, m: M) {
        arrayvec::ArrayVec::push(self, m);
    }
    #[inline]
    fn clear(&mut self) {
        arrayvec::ArrayVec::clear(self);
    }
    fn retain(&mut self, mut keep: impl FnMut(&M) -> bool) {
        arrayvec::ArrayVec::retain(self, |m| keep(m));
    }
}

impl<M: Clone + fmt::Debug> MoveBuffer<M> for Vec<M> {
    #[inline]
    fn push(&mut self, m: M) {
        Vec::push(self, m);
    }
    #[inline]
    fn clear(&mut self) {
        Vec::clear(self);
    }
    fn retain(&mut self, keep: impl FnMut(&M) -> bool) {
        Vec::retain(self, keep);
    }
}

/// The largest halfmove clock and move number a position holds (a million: beyond any game).
/// Position strings with larger counters are refused, and playing saturates at this bound, so
/// counters never overflow and every position written reads back.
pub const MAX_COUNTER: u32 = 1_000_000;

/// A counter after one more ply, saturating at [`MAX_COUNTER`].
pub(crate) const fn tick(n: u32) -> u32 {
    if n >= MAX_COUNTER { MAX_COUNTER } else { n + 1 }
}

/// A counter read from a position string, if it is a number within [`MAX_COUNTER`] (at least
/// `min`).
pub(crate) fn parse_counter(text: &str, min: u32) -> Option<u32> {
    text.parse::<u32>()
        .ok()
        .filter(|n| (min..=MAX_COUNTER).contains(n))
}

/// The piece letters used by SAN-style notation, for input and output.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Locale {
    /// K Q R B N.
    #[default]
    English,
    /// The Italian letters of the original rule documents: R (re), D (donna), T (torre),
    /// A (alfiere), C (cavallo).
    Italian,
}

/// Which move notation a text uses.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Notation {
    /// Try UCI first, then SAN (what a human or a mixed client sends).
    #[default]
    Auto,
    /// Coordinate notation: `e2e4`, `e7e8q`, `N@f3`.
    Uci,
    /// Standard algebraic notation: `Nf3`, `exd5`, `O-O`, `e8=Q+`.
    San,
}

/// The draw rules a variant applies through the game history.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DrawRules {
    /// Repetition thresholds `(claimable, automatic)`, e.g. `(3, 5)`; `None` when repetition
    /// does not end the game.
    pub repetition: Option<(u32, u32)>,
    /// Move-rule thresholds in plies `(claimable, automatic)`, e.g. `(100, 150)`; `None` when the
    /// variant has no such rule.
    pub move_rule_plies: Option<(u32, u32)>,
}

/// Why a move that could be read is not legal here.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum IllegalReason {
    /// There is no piece on the origin square.
    NoPiece {
        /// The origin square.
        square: String,
    },
    /// The piece on the origin square belongs to the side not to move.
    WrongSide {
        /// The origin square.
        square: String,
    },
    /// The piece cannot move that way (geometry), whatever the rest of the board.
    CannotReach,
    /// The path is blocked, or the destination holds a piece of the mover.
    Blocked,
    /// The move would leave (or put) the mover's king in check.
    LeavesKingInCheck,
    /// A pawn reaching the last rank must name its promotion piece.
    PromotionRequired,
    /// The promotion piece is not allowed, or a promotion was named for a move that is not one.
    BadPromotion,
    /// Castling is not allowed here (rights lost, path occupied or attacked, king in check).
    CastlingNotAllowed,
    /// No piece of the named kind can make this move (SAN).
    NoMatchingMove,
    /// The game is already over.
    GameOver,
    /// A drop names a piece the mover does not hold (crazyhouse, bughouse).
    NotInReserve {
        /// The piece, as its FEN letter (`N` for a white knight).
        piece: char,
    },
}

impl fmt::Display for IllegalReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IllegalReason::NoPiece { square } => write!(f, "no piece on {square}"),
            IllegalReason::WrongSide { square } => {
                write!(f, "the piece on {square} belongs to the side not to move")
            }
            IllegalReason::CannotReach => f.write_str("the piece cannot move that way"),
            IllegalReason::Blocked => f.write_str("the path or destination is blocked"),
            IllegalReason::LeavesKingInCheck => f.write_str("the move leaves the king in check"),
            IllegalReason::PromotionRequired => f.write_str("the promotion piece is missing"),
            IllegalReason::BadPromotion => f.write_str("invalid promotion"),
            IllegalReason::CastlingNotAllowed => f.write_str("castling is not allowed here"),
            IllegalReason::NoMatchingMove => f.write_str("no piece of that kind can move there"),
            IllegalReason::GameOver => f.write_str("the game is over"),
            IllegalReason::NotInReserve { piece } => write!(f, "no '{piece}' in the reserve"),
        }
    }
}

/// A move text could not be turned into a legal move.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MoveError {
    /// The text is not a move in the expected notation (cannot parse).
    Syntax {
        /// The text as given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The text reads as a move, but that move is not legal here.
    Illegal {
        /// The text as given.
        input: String,
        /// Why not.
        reason: IllegalReason,
    },
    /// The SAN text matches several legal moves.
    Ambiguous {
        /// The text as given.
        input: String,
        /// The matching moves, in UCI.
        candidates: Vec<String>,
    },
}

impl MoveError {
    pub(crate) fn syntax(input: &str, reason: impl Into<String>) -> MoveError {
        MoveError::Syntax {
            input: input.to_owned(),
            reason: reason.into(),
        }
    }

    pub(crate) fn illegal(input: &str, reason: IllegalReason) -> MoveError {
        MoveError::Illegal {
            input: input.to_owned(),
            reason,
        }
    }

    /// The move text the error is about.
    pub fn input(&self) -> &str {
        match self {
            MoveError::Syntax { input, .. }
            | MoveError::Illegal { input, .. }
            | MoveError::Ambiguous { input, .. } => input,
        }
    }
}

impl fmt::Display for MoveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MoveError::Syntax { input, reason } => {
                write!(f, "cannot parse move '{input}': {reason}")
            }
            MoveError::Illegal { input, reason } => write!(f, "illegal move '{input}': {reason}"),
            MoveError::Ambiguous { input, candidates } => write!(
                f,
                "ambiguous move '{input}': matches {}",
                candidates.join(", ")
            ),
        }
    }
}

impl std::error::Error for MoveError {}

/// A position of some variant: everything search, perft, games and services need.
///
/// Implementations are cheap to clone (copy-make), `Send + Sync`, and hold no global state.
pub trait Position: Clone + Send + Sync + fmt::Debug + 'static {
    /// A move of this variant.
    type Move: Copy + Eq + Hash + fmt::Debug + Send + Sync + 'static;
    /// The buffer legal moves are generated into.
    type MoveList: MoveBuffer<Self::Move>;

    /// The variant this position belongs to.
    fn variant(&self) -> Variant;

    /// The side to move.
    fn turn(&self) -> Color;

    /// Replaces the contents of `moves` with every legal move.
    fn legal_moves_into(&self, moves: &mut Self::MoveList);

    /// Every legal move, in a new buffer.
    fn legal_moves(&self) -> Self::MoveList {
        let mut moves = Self::MoveList::default();
        self.legal_moves_into(&mut moves);
        moves
    }

    /// Whether `m` captures (for quiescence search and SAN).
    fn is_capture(&self, m: Self::Move) -> bool;

    /// Replaces the contents of `moves` with the legal captures (and other tactical moves the
    /// variant counts, such as promotions).
    fn capture_moves_into(&self, moves: &mut Self::MoveList) {
        self.legal_moves_into(moves);
        moves.retain(|&m| self.is_capture(m));
    }

    /// Whether `m` is legal here.
    fn is_legal(&self, m: Self::Move) -> bool {
        self.legal_moves().contains(&m)
    }

    /// Plays a move known to be legal (from [`Position::legal_moves_into`]). Playing anything
    /// else leaves the position in an unspecified (but memory-safe) state.
    fn play_unchecked(&mut self, m: Self::Move);

    /// Whether the side to move is in check.
    fn is_check(&self) -> bool;

    /// Whether the legal move `m` gives check. The default plays `m` on a copy; chess and
    /// crazyhouse answer from their attack tables without playing it.
    fn gives_check(&self, m: Self::Move) -> bool {
        let mut after = self.clone();
        after.play_unchecked(m);
        after.is_check()
    }

    /// Incrementally maintained Zobrist hash of everything that defines the position for search.
    fn zobrist(&self) -> u64;

    /// The key under which positions are compared for repetition (placement, side to move,
    /// castling rights, and en passant only when an en passant capture is legal).
    fn repetition_key(&self) -> u64;

    /// Plies since the last irreversible move (capture or pawn move).
    fn halfmove_clock(&self) -> u32;

    /// The move number, starting at 1 and incremented after black's move.
    fn fullmove_number(&self) -> u32;

    /// The position with the turn passed, when the variant and position allow it (not in check).
    fn null_move(&self) -> Option<Self>;

    /// How the game ends here judged from the position alone (checkmate, stalemate, dead
    /// position, variant-specific terminal rules), or `None` while play goes on. History-based
    /// rules (repetition, move rule) are applied by [`Game`](crate::Game).
    fn terminal(&self) -> Option<Outcome>;

    /// The variant's repetition and move-count draw rules.
    fn draw_rules(&self) -> DrawRules;

    /// Whether `color` could still checkmate by some series of legal moves (used when the other
    /// side's flag falls). Must never answer `false` when mate is possible.
    fn can_possibly_mate(&self, color: Color) -> bool;

    /// The variant's position string (FEN for the square-board variants).
    fn to_text(&self) -> String;

    /// The move in UCI-style coordinate notation.
    fn move_to_uci(&self, m: Self::Move) -> String;

    /// The legal move `m` in SAN-style notation with `+`/`#` suffix.
    fn move_to_san(&self, m: Self::Move, locale: Locale) -> String;

    /// Reads a move text and checks that it is legal here.
    fn parse_move(
        &self,
        text: &str,
        notation: Notation,
        locale: Locale,
    ) -> Result<Self::Move, MoveError>;
}

/// Counts the leaf nodes of the legal move tree to `depth` (bulk-counting the last ply).
pub fn perft<P: Position>(pos: &P, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let moves = pos.legal_moves();
    if depth == 1 {
        return moves.len() as u64;
    }
    moves
        .iter()
        .map(|&m| {
            let mut child = pos.clone();
            child.play_unchecked(m);
            perft(&child, depth - 1)
        })
        .sum()
}

/// Perft split by first move: each legal move with the leaf count below it.
pub fn perft_divide<P: Position>(pos: &P, depth: u32) -> Vec<(P::Move, u64)> {
    if depth == 0 {
        return Vec::new();
    }
    pos.legal_moves()
        .iter()
        .map(|&m| {
            let mut child = pos.clone();
            child.play_unchecked(m);
            (m, perft(&child, depth - 1))
        })
        .collect()
}

/// Why a bounded perft gave up.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PerftError {
    /// It would count more than its node budget.
    BudgetExceeded {
        /// The budget that was exceeded.
        budget: u64,
    },
    /// Its stop flag was raised (a deadline passed, or the caller went away).
    Stopped,
}

impl fmt::Display for PerftError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PerftError::BudgetExceeded { budget } => {
                write!(f, "perft exceeded its budget of {budget} nodes")
            }
            PerftError::Stopped => f.write_str("perft was stopped"),
        }
    }
}

impl std::error::Error for PerftError {}

/// Limits of a bounded perft: a node budget for the whole tree, and a flag that stops it early.
/// The flag is read at every interior node two or more plies above the leaves.
#[derive(Copy, Clone, Debug)]
pub struct PerftLimits<'a> {
    /// Most leaves counted.
    pub budget: u64,
    /// Raised by someone else to stop the count.
    pub stop: &'a AtomicBool,
}

fn perft_budgeted<P: Position>(
    pos: &P,
    depth: u32,
    remaining: &mut u64,
    limits: PerftLimits<'_>,
) -> Result<u64, PerftError> {
    let exceeded = PerftError::BudgetExceeded {
        budget: limits.budget,
    };
    if depth == 0 {
        *remaining = remaining.checked_sub(1).ok_or(exceeded)?;
        return Ok(1);
    }
    let moves = pos.legal_moves();
    if depth == 1 {
        *remaining = remaining.checked_sub(moves.len() as u64).ok_or(exceeded)?;
        return Ok(moves.len() as u64);
    }
    if limits.stop.load(Ordering::Relaxed) {
        return Err(PerftError::Stopped);
    }
    let mut total = 0;
    for &m in moves.iter() {
        let mut child = pos.clone();
        child.play_unchecked(m);
        total += perft_budgeted(&child, depth - 1, remaining, limits)?;
    }
    Ok(total)
}

/// Perft split by first move that gives up as soon as more than the budget of leaves would be
/// counted in total, or the stop flag is raised (for servers that must bound the work a request
/// can cause).
pub fn perft_divide_bounded<P: Position>(
    pos: &P,
    depth: u32,
    limits: PerftLimits<'_>,
) -> Result<Vec<(P::Move, u64)>, PerftError> {
    let mut remaining = limits.budget;
    if depth == 0 {
        return if limits.budget >= 1 {
            Ok(Vec::new())
        } else {
            Err(PerftError::BudgetExceeded {
                budget: limits.budget,
            })
        };
    }
    let mut out = Vec::new();
    for &m in pos.legal_moves().iter() {
        let mut child = pos.clone();
        child.play_unchecked(m);
        let n = perft_budgeted(&child, depth - 1, &mut remaining, limits)?;
        out.push((m, n));
    }
    Ok(out)
}

/// [`perft`] that gives up as soon as more than the budget of leaves would be counted, or the
/// stop flag is raised.
pub fn perft_bounded<P: Position>(
    pos: &P,
    depth: u32,
    limits: PerftLimits<'_>,
) -> Result<u64, PerftError> {
    let mut remaining = limits.budget;
    perft_budgeted(pos, depth, &mut remaining, limits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Chess;

    fn limits(budget: u64, stop: &AtomicBool) -> PerftLimits<'_> {
        PerftLimits { budget, stop }
    }

    #[test]
    fn bounded_perft_stops_at_the_budget() {
        let pos = Chess::new();
        let go = AtomicBool::new(false);
        assert_eq!(perft_bounded(&pos, 3, limits(8902, &go)), Ok(8902));
        assert_eq!(
            perft_bounded(&pos, 3, limits(8901, &go)),
            Err(PerftError::BudgetExceeded { budget: 8901 })
        );
        let split = perft_divide_bounded(&pos, 2, limits(400, &go)).unwrap();
        assert_eq!(split.iter().map(|(_, n)| n).sum::<u64>(), 400);
        assert!(perft_divide_bounded(&pos, 2, limits(399, &go)).is_err());
        assert_eq!(perft_bounded(&pos, 0, limits(1, &go)), Ok(1));
        assert!(perft_bounded(&pos, 0, limits(0, &go)).is_err());
    }

    #[test]
    fn a_raised_flag_stops_perft() {
        let pos = Chess::new();
        let stop = AtomicBool::new(true);
        assert_eq!(
            perft_bounded(&pos, 4, limits(u64::MAX, &stop)),
            Err(PerftError::Stopped)
        );
        assert_eq!(
            perft_divide_bounded(&pos, 3, limits(u64::MAX, &stop)),
            Err(PerftError::Stopped)
        );
        // One ply above the leaves nothing is checked: shallow counts finish.
        assert_eq!(perft_bounded(&pos, 1, limits(u64::MAX, &stop)), Ok(20));
    }
}
