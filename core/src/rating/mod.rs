//! Ratings: Glicko-2 with continuous rating periods (the default) and FIDE's Elo.

pub mod elo;
pub mod glicko2;
