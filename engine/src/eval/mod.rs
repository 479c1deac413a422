//! Evaluation per variant, outside the rules code: each module implements
//! [`EnginePosition`](crate::EnginePosition) for its variant's position type.

pub mod byzantine;
pub mod chess;
pub mod crazyhouse;
pub mod glinski;

use arbiter_core::Color;
use std::sync::atomic::{AtomicU32, Ordering};

/// A term of the Glinski and Byzantine evaluations that can be switched off, to measure in
/// self-play what it is worth (`arbiter analyze --eval-off`, see `docs/engine.md`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Term {
    /// Mobility: attacked cells per piece against a typical count.
    Mobility = 0,
    /// Glinski: pieces (and the endgame king) nearer the centre.
    Centre = 1,
    /// Glinski: pawn advancement and passed pawns; Byzantine: blocked pawns.
    Pawns = 2,
    /// Glinski: king safety, own pieces next to the king, enemy pieces hitting its zone.
    /// (Byzantine has no such term: it was dropped after an SPRT.)
    King = 3,
    /// Byzantine: the danger of being left with a bare king (fewer than three pieces).
    Bare = 4,
    /// Byzantine Citadel: the king of the side behind drawn towards its far citadel.
    Citadel = 5,
}

impl Term {
    /// Every term, in order.
    pub const ALL: [Term; 6] = [
        Term::Mobility,
        Term::Centre,
        Term::Pawns,
        Term::King,
        Term::Bare,
        Term::Citadel,
    ];

    /// The term's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Term::Mobility => "mobility",
            Term::Centre => "centre",
            Term::Pawns => "pawns",
            Term::King => "king",
            Term::Bare => "bare",
            Term::Citadel => "citadel",
        }
    }

    /// The term named `name`.
    pub fn parse(name: &str) -> Option<Term> {
        Term::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// The switched-off terms, one bit per [`Term`]: process-wide, read with one relaxed load per
/// evaluation. Every term is on unless switched off.
static DISABLED: AtomicU32 = AtomicU32::new(0);

/// Switches off exactly `terms` (an empty slice switches every term back on), for the whole
/// process. Meant for ablation matches, set once before searching.
pub fn disable_terms(terms: &[Term]) {
    let mask = terms.iter().fold(0, |m, &t| m | 1 << t as u32);
    DISABLED.store(mask, Ordering::Relaxed);
}

/// The weight of `term`: 1 when on, 0 when switched off.
#[inline]
pub(crate) fn weight(term: Term) -> i32 {
    i32::from(DISABLED.load(Ordering::Relaxed) & (1 << term as u32) == 0)
}

/// A score from white's point of view, turned to the side to move's.
pub(crate) fn for_side(turn: Color, white: i32) -> i32 {
    if turn == Color::White { white } else { -white }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::EnginePosition;
    use arbiter_core::byzantine::{ByzantineRules, ByzantineVariant};
    use arbiter_core::{Byzantine, Glinski};

    #[test]
    fn terms_switch_off_and_back_on() {
        // Other tests in this binary only evaluate symmetric start positions, which every
        // switch leaves level, so flipping the process-wide switch here cannot disturb them.
        for t in Term::ALL {
            assert_eq!(Term::parse(t.name()), Some(t));
        }
        assert_eq!(Term::parse("material"), None);
        let mut glinski = Glinski::new();
        let first = glinski.legal_moves()[0];
        glinski.play_unchecked(first);
        let glinski_full = glinski.evaluate();
        disable_terms(&[Term::Mobility, Term::Centre]);
        assert_ne!(
            glinski.evaluate(),
            glinski_full,
            "after a move the sides differ"
        );
        disable_terms(&[]);
        assert_eq!(glinski.evaluate(), glinski_full);
        let byz = Byzantine::from_text(
            "4R11/16/16/8K3k3 w 0 1",
            ByzantineVariant::Plain,
            ByzantineRules::default(),
        )
        .unwrap();
        let full = byz.evaluate();
        disable_terms(&[Term::Bare]);
        assert_ne!(byz.evaluate(), full, "the bare-king term counts here");
        assert_eq!(weight(Term::Bare), 0);
        assert_eq!(weight(Term::Mobility), 1);
        disable_terms(&[]);
        assert_eq!(byz.evaluate(), full);
    }
}
