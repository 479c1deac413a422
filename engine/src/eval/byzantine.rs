//! Byzantine (and Citadel) evaluation: material, mobility on the rings, blocked pawns, the
//! danger of being left with a bare king (which loses), and in the Citadel variant the
//! defender's path to its far citadel (entering it draws).
//!
//! There is no king-safety term: one (own pieces next to the king, enemy pieces hitting its
//! zone) cost about 50 Elo in self-play, and dropping it was accepted by SPRT
//! (docs/performance.md).

use super::{Term, weight};
use crate::hooks::EnginePosition;
use arbiter_core::byzantine::{ByzMove, ByzRole, CITADEL_BASE};
use arbiter_core::{Byzantine, Color, Position};

/// Material per role: pawn, knight, elephant, rook, counselor, king.
pub const MATERIAL: [i32; 6] = [100, 310, 140, 520, 170, 0];
/// Per attacked cell, per role.
const MOBILITY: [i32; 6] = [0, 4, 3, 2, 3, 0];
/// Typical mobility per role.
const MOBILITY_BASE: [i32; 6] = [0, 4, 2, 10, 2, 0];
/// A pawn that can neither step nor capture.
const BLOCKED: i32 = 10;
/// Per missing piece below three, for the side that could be left with a bare king.
const THIN: [i32; 4] = [250, 120, 40, 0];
/// Per ring nearer its far citadel, for a side behind in material (Citadel variant).
const CITADEL_PULL: i32 = 20;
const TEMPO: i32 = 10;

fn value(role: ByzRole) -> i32 {
    if role == ByzRole::King {
        20_000
    } else {
        MATERIAL[role as usize]
    }
}

fn ring(cell: u8) -> i32 {
    i32::from(cell / 16)
}

fn side_terms(pos: &Byzantine, color: Color) -> (i32, i32) {
    let us = pos.by_color(color);
    let mut score = 0;
    let mut pieces = 0;
    let mut material = 0;
    let (mobility, pawns) = (weight(Term::Mobility), weight(Term::Pawns));
    let mut bb = us;
    while bb != 0 {
        let c = bb.trailing_zeros() as u8;
        bb &= bb - 1;
        let Some((_, role, up)) = pos.piece_at(c) else {
            continue;
        };
        let r = role as usize;
        material += MATERIAL[r];
        if role != ByzRole::King {
            pieces += 1;
        }
        let reach = pos.targets(c, color, role, up);
        match role {
            ByzRole::Pawn => {
                // A pawn whose next cell is taken cannot move. (A pawn facing an enemy pawn
                // head-on is removed with it by the rules, so such pairs never stand.)
                if reach == 0 {
                    score -= pawns * BLOCKED;
                }
            }
            ByzRole::King => {}
            _ => {
                let n = (reach & !us).count_ones() as i32 - MOBILITY_BASE[r];
                score += mobility * MOBILITY[r] * n;
            }
        }
    }
    score += material;
    score -= weight(Term::Bare) * THIN[pieces.min(3)];
    (score, material)
}

impl EnginePosition for Byzantine {
    fn evaluate(&self) -> i32 {
        let (w, wm) = side_terms(self, Color::White);
        let (b, bm) = side_terms(self, Color::Black);
        let mut white = w - b;
        if self.variant() == arbiter_core::Variant::ByzantineCitadel && weight(Term::Citadel) == 1 {
            // The side behind wants its king near its far citadel; the rings count inwards
            // (a = 0, outermost … d = 3, next to the citadels).
            for (color, behind) in [(Color::White, bm - wm), (Color::Black, wm - bm)] {
                let king = self.pieces(color, ByzRole::King);
                if behind >= 200 && king != 0 {
                    let pull = CITADEL_PULL * ring(king.trailing_zeros() as u8);
                    white += if color == Color::White { pull } else { -pull };
                }
            }
        }
        let s = super::for_side(self.turn(), white);
        s + TEMPO
    }

    fn move_slot(&self, m: ByzMove) -> usize {
        usize::from(m.from) * 68 + usize::from(m.to)
    }

    fn piece_to(&self, m: ByzMove) -> usize {
        self.piece_at(m.from).map_or(0, |(_, r, _)| r as usize) * 128 + usize::from(m.to)
    }

    fn gain(&self, m: ByzMove) -> i32 {
        self.piece_at(m.to).map_or(0, |(_, r, _)| value(r))
    }

    fn mover_value(&self, m: ByzMove) -> i32 {
        self.piece_at(m.from).map_or(0, |(_, r, _)| value(r))
    }

    fn is_tactical(&self, m: ByzMove) -> bool {
        m.to < CITADEL_BASE && self.piece_at(m.to).is_some()
    }

    fn see_ge(&self, m: ByzMove, threshold: i32) -> bool {
        // The first exchange only, optimistic when the target might be undefended.
        let gain = self.gain(m);
        gain - self.mover_value(m) >= threshold || gain >= threshold
    }

    fn null_move_sound(&self) -> bool {
        let us = self.turn();
        self.by_color(us) & !self.pieces(us, ByzRole::Pawn) & !self.pieces(us, ByzRole::King) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbiter_core::byzantine::{ByzantineRules, ByzantineVariant};

    #[test]
    fn the_starts_are_level() {
        for board in [ByzantineVariant::Plain, ByzantineVariant::Citadel] {
            let p = Byzantine::start(board, ByzantineRules::default());
            assert_eq!(p.evaluate(), TEMPO);
            assert!(
                p.legal_moves()
                    .iter()
                    .all(|&m| p.move_slot(m) < crate::hooks::MOVE_SLOTS)
            );
        }
    }
}
