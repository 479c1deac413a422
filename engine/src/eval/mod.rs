//! Evaluation per variant, outside the rules code: each module implements
//! [`EnginePosition`](crate::EnginePosition) for its variant's position type.

pub mod byzantine;
pub mod chess;
pub mod crazyhouse;
pub mod glinski;

use arbiter_core::Color;

/// A score from white's point of view, turned to the side to move's.
pub(crate) fn for_side(turn: Color, white: i32) -> i32 {
    if turn == Color::White { white } else { -white }
}
