//! What the search needs from a variant beyond the rules: its evaluation and the few facts move
//! ordering and pruning rely on. The rules themselves come from [`Position`]; each variant's
//! implementation lives in [`crate::eval`], outside the rules code.

use arbiter_core::{Outcome, Position};

/// History and counter-move tables have this many slots per side; [`EnginePosition::move_slot`]
/// maps every move of a variant below it.
pub const MOVE_SLOTS: usize = 16_384;

/// Continuation-history tables are indexed by pairs of slots below this;
/// [`EnginePosition::piece_to`] maps every move of a variant below it (six roles, destinations
/// below 128).
pub const PIECE_TO_SLOTS: usize = 6 * 128;

/// A position the engine can search: the rules ([`Position`]) plus evaluation and ordering hooks.
pub trait EnginePosition: Position {
    /// The static evaluation in centipawns, from the side to move's point of view.
    fn evaluate(&self) -> i32;

    /// A slot below [`MOVE_SLOTS`] that identifies `m` well enough for history tables (origin and
    /// destination; drops by piece and destination).
    fn move_slot(&self, m: Self::Move) -> usize;

    /// A slot below [`PIECE_TO_SLOTS`] naming the piece that makes `m` (its role, or the role
    /// dropped) and its destination, for continuation histories: how good a move is as a reply
    /// to an earlier one.
    fn piece_to(&self, m: Self::Move) -> usize;

    /// The material `m` wins at once: the captured piece's value plus a promotion's gain
    /// (0 for a quiet move).
    fn gain(&self, m: Self::Move) -> i32;

    /// The value of the piece that moves (for least-valuable-attacker ordering).
    fn mover_value(&self, m: Self::Move) -> i32;

    /// Whether `m` is tactical: searched in quiescence, never reduced as a quiet move.
    fn is_tactical(&self, m: Self::Move) -> bool {
        self.gain(m) > 0 || self.is_capture(m)
    }

    /// Whether the static exchange on `m`'s destination ends at least `threshold` up for the
    /// mover. Variants without an exchange evaluator answer from the first exchange only:
    /// the gain, minus the mover when the destination is defended is unknown (so, optimistic).
    fn see_ge(&self, m: Self::Move, threshold: i32) -> bool {
        self.gain(m) >= threshold
    }

    /// Whether passing the turn is a sound test here (null-move pruning): false when the side
    /// to move has so little material that zugzwang is likely.
    fn null_move_sound(&self) -> bool;

    /// Quiet moves quiescence search adds at its first ply (crazyhouse: drops that give check).
    fn quiescence_extras(&self, _out: &mut Self::MoveList) {}

    /// Whether [`Position::is_legal`] costs much less than generating every move (chess and
    /// crazyhouse generate only the moves of one piece). When it does, the search tries the
    /// transposition table's move before generating the others, and skips generating them when
    /// that move cuts off; otherwise it generates every move first, as that test would.
    const CHEAP_LEGALITY: bool = false;

    /// The pieces as a network of [`crate::nnue`] reads them, for variants played on an 8×8
    /// board of the six standard roles and nothing else (standard chess); `None` (the default)
    /// where no network applies, and the search evaluates with [`evaluate`](Self::evaluate).
    fn nnue_pieces(&self) -> Option<crate::nnue::Pieces> {
        None
    }

    /// The network a new [`Engine`](crate::Engine) for this variant evaluates with: the one
    /// built into the engine for it ([`crate::nnue::chess`] for standard chess), or `None`
    /// (the default) for the hand-written [`evaluate`](Self::evaluate).
    fn built_in_network() -> Option<std::sync::Arc<crate::nnue::Network>> {
        None
    }

    /// An ending the rules declare while moves remain (dead positions, bare kings), checked at
    /// every node; `None` for most positions. Endings without legal moves are found by the
    /// search through [`Position::terminal`].
    fn decided(&self) -> Option<Outcome> {
        None
    }
}
