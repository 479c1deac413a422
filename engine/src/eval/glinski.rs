//! Glinski evaluation: material on the hex board, mobility, the centre, pawn advancement and
//! passed pawns, and king safety.
//!
//! Starting values follow the published estimates for hexagonal chess (the knight a little
//! weaker and the rook a little stronger than on the square board, three bishops of one colour
//! class each); see `docs/engine.md`.

use super::{Term, weight};
use crate::hooks::EnginePosition;
use arbiter_core::glinski::HexMove;
use arbiter_core::glinski::geometry::{
    self, Bitboard, Cell, Cells, INDEX_SPACE, KING, KNIGHT, NONE, PAWN_CAPTURES, PAWN_STEP,
    PROMOTION, VALID, bishop_attacks, rook_attacks, side,
};
use arbiter_core::{Color, EndReason, Glinski, Outcome, Position, Role};
use std::sync::LazyLock;

/// Material per role, pawn to king.
pub const MATERIAL: [i32; 6] = [100, 290, 310, 490, 920, 0];
/// Per attacked cell, per role.
const MOBILITY: [i32; 6] = [0, 3, 3, 2, 1, 0];
/// Typical mobility per role.
const MOBILITY_BASE: [i32; 6] = [0, 5, 8, 10, 18, 0];
/// Per step towards the centre (0 on the rim to 5 at f6), per role.
const CENTRE: [i32; 6] = [3, 6, 3, 0, 1, -6];
/// The king's centralisation in the endgame, per step.
const KING_CENTRE_ENDGAME: i32 = 10;
/// A pawn per cell it has advanced, then a passed pawn by cells left to promote.
const PAWN_ADVANCE: i32 = 4;
const PASSED: [i32; 11] = [0, 140, 100, 70, 50, 35, 25, 15, 10, 5, 0];
/// Own pieces next to the king, and king-zone attack units.
const KING_GUARD: i32 = 8;
const ATTACK_UNITS: [i32; 6] = [0, 2, 2, 3, 5, 0];
const TEMPO: i32 = 10;

fn value(role: Role) -> i32 {
    if role == Role::King {
        20_000
    } else {
        MATERIAL[role.index()]
    }
}

struct Tables {
    /// Steps from the centre cell: 5 minus the hex distance.
    centrality: [i32; INDEX_SPACE],
    /// Steps a pawn of each side still has to make to promote.
    to_promote: [[i32; INDEX_SPACE]; 2],
    /// Cells that stop a pawn of each side from being passed.
    span: [[Bitboard; INDEX_SPACE]; 2],
}

static TABLES: LazyLock<Tables> = LazyLock::new(|| {
    let mut t = Tables {
        centrality: [0; INDEX_SPACE],
        to_promote: [[0; INDEX_SPACE]; 2],
        span: [[0; INDEX_SPACE]; 2],
    };
    for cell in Cells(VALID) {
        let (q, r) = geometry::coords(cell);
        let distance = (q.abs() + r.abs() + (q + r).abs()) / 2;
        t.centrality[cell as usize] = 5 - distance;
        for s in 0..2 {
            let mut steps = 0;
            let mut c = cell;
            let mut span: Bitboard = 0;
            while PROMOTION[s] & (1u128 << c) == 0 {
                let next = PAWN_STEP[s][c as usize];
                if next == NONE {
                    break;
                }
                span |= PAWN_CAPTURES[s][c as usize];
                c = next;
                span |= 1u128 << c;
                steps += 1;
            }
            t.to_promote[s][cell as usize] = steps;
            t.span[s][cell as usize] = span;
        }
    }
    t
});

fn bit(c: Cell) -> Bitboard {
    1u128 << c
}

/// `color`'s terms (material, mobility, centre, pawns, king safety), middlegame and endgame,
/// and its non-pawn material.
fn side_terms(pos: &Glinski, color: Color) -> (i32, i32, i32) {
    let t = &*TABLES;
    let s = side(color);
    let occupied = pos.occupied();
    let us = pos.by_color(color);
    let their_pawns = pos.pieces(!color, Role::Pawn);
    let mut enemy_pawn_attacks: Bitboard = 0;
    for c in Cells(their_pawns) {
        enemy_pawn_attacks |= PAWN_CAPTURES[side(!color)][c as usize];
    }
    let their_king = pos.pieces(!color, Role::King).trailing_zeros() as usize;
    let zone = if their_king < INDEX_SPACE {
        KING[their_king] | (1u128 << their_king)
    } else {
        0
    };
    let (mut mg, mut eg, mut npm) = (0, 0, 0);
    let (mut units, mut attackers) = (0, 0);
    let (mobility, centre, pawns, king) = (
        weight(Term::Mobility),
        weight(Term::Centre),
        weight(Term::Pawns),
        weight(Term::King),
    );
    for role in Role::ALL {
        for c in Cells(pos.pieces(color, role)) {
            let f = c as usize;
            let m = MATERIAL[role.index()];
            mg += m;
            eg += m;
            if role != Role::Pawn {
                npm += m;
            }
            mg += centre * CENTRE[role.index()] * t.centrality[f];
            eg += centre
                * if role == Role::King {
                    KING_CENTRE_ENDGAME * t.centrality[f]
                } else {
                    CENTRE[role.index()].max(0) * t.centrality[f]
                };
            let reach = match role {
                Role::Pawn => {
                    let left = t.to_promote[s][f];
                    let start = 10 - left;
                    mg += pawns * PAWN_ADVANCE * start / 2;
                    eg += pawns * PAWN_ADVANCE * start;
                    if t.span[s][f] & their_pawns == 0 {
                        let bonus = pawns * PASSED[left.clamp(0, 10) as usize];
                        mg += bonus / 2;
                        eg += bonus;
                    }
                    continue;
                }
                Role::Knight => KNIGHT[f],
                Role::Bishop => bishop_attacks(f, occupied),
                Role::Rook => rook_attacks(f, occupied),
                Role::Queen => rook_attacks(f, occupied) | bishop_attacks(f, occupied),
                Role::King => {
                    let guards = (KING[f] & us).count_ones() as i32;
                    mg += king * KING_GUARD * guards.min(4);
                    continue;
                }
            };
            let free = reach & !us & !enemy_pawn_attacks;
            let n = free.count_ones() as i32 - MOBILITY_BASE[role.index()];
            mg += mobility * MOBILITY[role.index()] * n;
            eg += mobility * MOBILITY[role.index()] * n;
            let hits = (reach & zone).count_ones() as i32;
            if hits > 0 {
                attackers += 1;
                units += ATTACK_UNITS[role.index()] * hits;
            }
        }
    }
    if attackers >= 2 {
        mg += king * (units * units).min(500);
    }
    (mg, eg, npm)
}

impl EnginePosition for Glinski {
    fn evaluate(&self) -> i32 {
        let (wm, we, wn) = side_terms(self, Color::White);
        let (bm, be, bn) = side_terms(self, Color::Black);
        // Phase: non-pawn material against the start's (2×(2N+3B+2R+Q)).
        let full = 2 * (2 * MATERIAL[1] + 3 * MATERIAL[2] + 2 * MATERIAL[3] + MATERIAL[4]);
        let phase = ((wn + bn) * 24 / full).clamp(0, 24);
        let white = ((wm - bm) * phase + (we - be) * (24 - phase)) / 24;
        let s = super::for_side(self.turn(), white);
        s + TEMPO
    }

    fn move_slot(&self, m: HexMove) -> usize {
        usize::from(m.from) * INDEX_SPACE + usize::from(m.to)
    }

    fn gain(&self, m: HexMove) -> i32 {
        let captured = match self.piece_at(m.to) {
            Some(p) => value(p.role),
            None if self.ep_cell() == Some(m.to)
                && self.piece_at(m.from).is_some_and(|p| p.role == Role::Pawn) =>
            {
                value(Role::Pawn)
            }
            None => 0,
        };
        captured + m.promotion.map_or(0, |r| value(r) - value(Role::Pawn))
    }

    fn mover_value(&self, m: HexMove) -> i32 {
        self.piece_at(m.from).map_or(0, |p| value(p.role))
    }

    fn is_tactical(&self, m: HexMove) -> bool {
        self.piece_at(m.to).is_some() || m.promotion == Some(Role::Queen) || self.gain(m) > 0
    }

    fn see_ge(&self, m: HexMove, threshold: i32) -> bool {
        // The first exchange only: a capture by a cheaper piece, or of an undefended piece.
        let gain = self.gain(m);
        if gain - self.mover_value(m) >= threshold {
            return true;
        }
        let them = !self.turn();
        let defended = self.attackers(m.to, them, self.occupied() & !bit(m.from)) != 0;
        if defended {
            gain - self.mover_value(m) >= threshold
        } else {
            gain >= threshold
        }
    }

    fn quiescence_extras(&self, out: &mut Self::MoveList) {
        // Queen promotions that capture nothing (captures are already in).
        for &m in self.legal_moves().iter() {
            if m.promotion == Some(Role::Queen) && self.piece_at(m.to).is_none() {
                out.push(m);
            }
        }
    }

    fn null_move_sound(&self) -> bool {
        let us = self.turn();
        self.by_color(us) & !self.pieces(us, Role::Pawn) & !self.pieces(us, Role::King) != 0
    }

    fn decided(&self) -> Option<Outcome> {
        (self.is_bare(Color::White) && self.is_bare(Color::Black))
            .then_some(Outcome::draw(EndReason::DeadPosition))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_is_level_and_pawn_tables_are_sane() {
        let start = Glinski::new();
        assert_eq!(start.evaluate(), TEMPO);
        // Every pawn start cell is some steps from promotion; promotion cells are 0.
        for (s, (last, start)) in PROMOTION.iter().zip(geometry::PAWN_START).enumerate() {
            for c in Cells(*last) {
                assert_eq!(TABLES.to_promote[s][c as usize], 0);
            }
            for c in Cells(start) {
                assert!(TABLES.to_promote[s][c as usize] > 0);
            }
        }
        assert!(
            start
                .legal_moves()
                .iter()
                .all(|&m| start.move_slot(m) < crate::hooks::MOVE_SLOTS)
        );
    }
}
