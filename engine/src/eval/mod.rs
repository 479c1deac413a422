//! Evaluation per variant, outside the rules code: each module implements
//! [`EnginePosition`](crate::EnginePosition) for its variant's position type.

pub mod byzantine;
pub mod chess;
pub mod crazyhouse;
pub mod glinski;
