//! Glinski evaluation: material on the hex board, mobility, the centre, pawn advancement and
//! passed pawns, and king safety.
//!
//! The starting values ([`HAND_SET`]) follow the published estimates for hexagonal chess (the
//! knight a little weaker and the rook a little stronger than on the square board, three
//! bishops of one colour class each); the weights in use ([`WEIGHTS`]) were then fitted to
//! self-play results by Texel's method. See `docs/engine.md`.

use super::{Term, weight};
use crate::hooks::EnginePosition;
use arbiter_core::glinski::HexMove;
use arbiter_core::glinski::geometry::{
    self, Bitboard, Cell, Cells, INDEX_SPACE, KING, KNIGHT, NONE, PAWN_CAPTURES, PAWN_STEP,
    PROMOTION, VALID, bishop_attacks, rook_attacks, side,
};
use arbiter_core::{Color, EndReason, Glinski, Outcome, Position, Role};
use std::sync::LazyLock;

/// The Glinski evaluation's weights, in centipawns. [`Weights::visit`] names each one for tuning
/// (`arbiter texel --variant glinski`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Weights {
    /// Material per role, pawn to queen.
    pub material: [i32; 5],
    /// Per free cell a piece attacks beyond its typical count, knight to queen (a free cell
    /// holds no piece of ours and is not attacked by an enemy pawn).
    pub mobility: [i32; 4],
    /// Per step towards the centre (0 on the rim to 5 at f6), pawn to king, middlegame; the
    /// endgame keeps the positive ones.
    pub centre: [i32; 6],
    /// The king's centralisation in the endgame, per step.
    pub king_centre_endgame: i32,
    /// A pawn per cell it has advanced (half of it in the middlegame).
    pub pawn_advance: i32,
    /// A passed pawn by the steps it still has to make (index 1 to 10; half of it in the
    /// middlegame). Index 0, a pawn on its last cell, cannot occur.
    pub passed: [i32; 11],
    /// Per own piece next to the king (up to four), middlegame.
    pub king_guard: i32,
    /// King-zone attack units per attacked cell, knight to queen; their sum over the side's
    /// pieces is squared (capped at 500) when two or more pieces attack.
    pub attack_units: [i32; 4],
    /// For the side to move.
    pub tempo: i32,
}

impl Weights {
    /// Every tuned weight with its name, in a fixed order.
    pub fn visit(&mut self, f: &mut dyn FnMut(&str, &mut i32)) {
        const ROLES: [&str; 6] = ["pawn", "knight", "bishop", "rook", "queen", "king"];
        for (i, v) in self.material.iter_mut().enumerate() {
            f(&format!("material.{}", ROLES[i]), v);
        }
        for (i, v) in self.mobility.iter_mut().enumerate() {
            f(&format!("mobility.{}", ROLES[i + 1]), v);
        }
        for (i, v) in self.centre.iter_mut().enumerate() {
            f(&format!("centre.{}", ROLES[i]), v);
        }
        f("king_centre_endgame", &mut self.king_centre_endgame);
        f("pawn_advance", &mut self.pawn_advance);
        for (left, v) in self
            .passed
            .iter_mut()
            .enumerate()
            .take(PASSED_TUNED + 1)
            .skip(1)
        {
            f(&format!("passed.{left}"), v);
        }
        f("king_guard", &mut self.king_guard);
        for (i, v) in self.attack_units.iter_mut().enumerate() {
            f(&format!("attack_units.{}", ROLES[i + 1]), v);
        }
        f("tempo", &mut self.tempo);
    }
}

/// The passed-pawn entries that are tuned: a pawn starts six steps from its last cell, so
/// farther ones barely occur in games.
const PASSED_TUNED: usize = 6;

/// The starting values: published estimates for the material, the rest set by hand.
pub const HAND_SET: Weights = Weights {
    material: [100, 290, 310, 490, 920],
    mobility: [3, 3, 2, 1],
    centre: [3, 6, 3, 0, 1, -6],
    king_centre_endgame: 10,
    pawn_advance: 4,
    passed: [0, 140, 100, 70, 50, 35, 25, 15, 10, 5, 0],
    king_guard: 8,
    attack_units: [2, 2, 3, 5],
    tempo: 10,
};

/// The weights in use: fitted by Texel's method on Glinski self-play positions (`arbiter texel
/// --variant glinski`; the commands and the result are in `docs/engine.md` and
/// `docs/performance.md`). The attack units came out negative; they enter the evaluation
/// squared, so they are written positive (the same evaluation).
pub const WEIGHTS: Weights = Weights {
    material: [78, 299, 299, 686, 1209],
    mobility: [-4, -4, 2, -2],
    centre: [-9, 13, 4, 2, 4, 18],
    king_centre_endgame: -21,
    pawn_advance: 4,
    passed: [0, 204, 173, 129, 61, 19, 17, 15, 10, 5, 0],
    king_guard: 11,
    attack_units: [2, 1, 2, 3],
    tempo: 0,
};

/// Typical mobility per role, pawn to king (a fixed offset, not tuned: it only shifts
/// material).
const MOBILITY_BASE: [i32; 6] = [0, 5, 8, 10, 18, 0];

fn value(role: Role) -> i32 {
    if role == Role::King {
        20_000
    } else {
        WEIGHTS.material[role.index()]
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
fn side_terms(pos: &Glinski, color: Color, w: &Weights) -> (i32, i32, i32) {
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
            let m = if role == Role::King {
                0
            } else {
                w.material[role.index()]
            };
            mg += m;
            eg += m;
            if role != Role::Pawn {
                npm += m;
            }
            mg += centre * w.centre[role.index()] * t.centrality[f];
            eg += centre
                * if role == Role::King {
                    w.king_centre_endgame * t.centrality[f]
                } else {
                    w.centre[role.index()].max(0) * t.centrality[f]
                };
            let reach = match role {
                Role::Pawn => {
                    let left = t.to_promote[s][f];
                    let start = 10 - left;
                    mg += pawns * w.pawn_advance * start / 2;
                    eg += pawns * w.pawn_advance * start;
                    if t.span[s][f] & their_pawns == 0 {
                        let bonus = pawns * w.passed[left.clamp(0, 10) as usize];
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
                    mg += king * w.king_guard * guards.min(4);
                    continue;
                }
            };
            let free = reach & !us & !enemy_pawn_attacks;
            let n = free.count_ones() as i32 - MOBILITY_BASE[role.index()];
            let per_cell = w.mobility[role.index() - 1];
            mg += mobility * per_cell * n;
            eg += mobility * per_cell * n;
            let hits = (reach & zone).count_ones() as i32;
            if hits > 0 {
                attackers += 1;
                units += w.attack_units[role.index() - 1] * hits;
            }
        }
    }
    if attackers >= 2 {
        mg += king * (units * units).min(500);
    }
    (mg, eg, npm)
}

/// The evaluation of `pos` under the weights `w`, from the side to move's point of view.
pub fn evaluate_with(pos: &Glinski, w: &Weights) -> i32 {
    let (wm, we, wn) = side_terms(pos, Color::White, w);
    let (bm, be, bn) = side_terms(pos, Color::Black, w);
    // Phase: non-pawn material against the start's (2×(2N+3B+2R+Q)).
    let m = &w.material;
    let full = (2 * (2 * m[1] + 3 * m[2] + 2 * m[3] + m[4])).max(1);
    let phase = ((wn + bn) * 24 / full).clamp(0, 24);
    let white = ((wm - bm) * phase + (we - be) * (24 - phase)) / 24;
    super::for_side(pos.turn(), white) + w.tempo
}

impl EnginePosition for Glinski {
    fn evaluate(&self) -> i32 {
        evaluate_with(self, &WEIGHTS)
    }

    fn move_slot(&self, m: HexMove) -> usize {
        usize::from(m.from) * INDEX_SPACE + usize::from(m.to)
    }

    fn piece_to(&self, m: HexMove) -> usize {
        self.piece_at(m.from).map_or(0, |p| p.role.index()) * 128 + usize::from(m.to)
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
        assert_eq!(start.evaluate(), WEIGHTS.tempo);
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
