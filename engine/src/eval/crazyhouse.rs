//! Crazyhouse and one-board bughouse evaluation: the chess board terms with weights of their
//! own, pieces in hand valued apart from the board, king safety against drops (the empty
//! squares around the king the enemy could drop on, weighed by what the enemy holds), and the
//! initiative (a larger tempo: drops make every move count). The weights are fitted to the
//! results of crazyhouse self-play by Texel's method ([`crate::tune`]).
//!
//! A bughouse board is judged alone, with its current reserves: the partner's board is not seen.

use super::chess::{
    Pair, PawnCache, PawnStructure, board_score_with, gain_on, mover, piece_to, see_ge, slot, taper,
};
use crate::hooks::EnginePosition;
use arbiter_core::bitboard::{Bitboard, attacks};
use arbiter_core::chess::Move;
use arbiter_core::{Color, Crazyhouse, Outcome, Position, Role};
use std::sync::LazyLock;

/// The weights of the crazyhouse evaluation: the board terms of chess (with their own values)
/// and the terms of pieces in hand.
#[derive(Clone, Debug)]
pub struct Weights {
    /// The board terms, as chess's evaluation reads them.
    pub board: super::chess::Weights,
    /// A piece in hand is worth its middlegame board value plus this, per role (pawn to queen).
    pub in_hand: [i32; 5],
    /// Per enemy piece in hand, by role (pawn to queen), per empty square next to the king
    /// that no own piece guards (a hole it could be dropped on).
    pub drop_danger: [i32; 5],
    /// Per role the enemy holds (pawn to queen), per empty square no own piece guards from
    /// which a piece of that role dropped would check the king.
    pub drop_check: [i32; 5],
}

impl Weights {
    /// Walks every weight the evaluation reads, with a stable name, in a fixed order (the
    /// parameters of [`crate::tune`]): the board terms as
    /// [`chess::Weights::visit`](super::chess::Weights::visit) names them, then the hand terms.
    pub fn visit(&mut self, f: &mut dyn FnMut(&str, &mut i32)) {
        self.board.visit(f);
        // The names of the `HAND_ROLES`, in their order.
        const NAMES: [&str; 5] = ["pawn", "knight", "bishop", "rook", "queen"];
        let per_role = [
            ("in_hand", &mut self.in_hand),
            ("drop_danger", &mut self.drop_danger),
            ("drop_check", &mut self.drop_check),
        ];
        for (term, weights) in per_role {
            for (role, v) in NAMES.iter().zip(weights.iter_mut()) {
                f(&format!("{term}.{role}"), v);
            }
        }
    }
}

/// The weights the engine evaluates crazyhouse and bughouse boards with: the second round of
/// Texel's method (`arbiter texel generate --variant crazyhouse --seed 2`, played by the first
/// round's weights, then `arbiter texel tune`), accepted by SPRT against the first round.
pub static WEIGHTS: LazyLock<Weights> = LazyLock::new(|| Weights {
    board: super::chess::Weights {
        material: [
            Pair(145, 78),
            Pair(305, 166),
            Pair(381, 482),
            Pair(552, 47),
            Pair(790, 346),
            Pair(0, 0),
        ],
        centre: [
            Pair(26, 12),
            Pair(62, 11),
            Pair(34, 130),
            Pair(-37, 107),
            Pair(-21, -100),
            Pair(-98, -336),
        ],
        pawn_advance: Pair(-33, -4),
        mobility: [
            Pair(0, 0),
            Pair(24, 82),
            Pair(33, 72),
            Pair(36, -11),
            Pair(17, 25),
            Pair(0, 0),
        ],
        bishop_pair: Pair(141, -433),
        doubled: Pair(-21, 38),
        isolated: Pair(25, 47),
        passed: [
            Pair(0, 0),
            Pair(99, -395),
            Pair(-111, 411),
            Pair(34, 222),
            Pair(91, 298),
            Pair(322, -80),
            Pair(190, 604),
            Pair(0, 0),
        ],
        rook_open: Pair(51, 203),
        rook_half_open: Pair(44, 136),
        shield: 18,
        attack_units: [0, 5, 4, 6, 5, 0],
        tempo: 71,
    },
    in_hand: [-7, 1, -115, -169, -176],
    drop_danger: [-2, 24, 12, -9, -2],
    drop_check: [156, 185, 90, 120, 66],
});

fn value(role: Role) -> i32 {
    WEIGHTS.board.material[role.index()]
        .0
        .max(if role == Role::King { 20_000 } else { 0 })
}

/// The roles that can be in hand, in the order of [`Weights::in_hand`].
const HAND_ROLES: [Role; 5] = [
    Role::Pawn,
    Role::Knight,
    Role::Bishop,
    Role::Rook,
    Role::Queen,
];

/// The drop danger to `color`'s king: the empty squares around it no own piece guards, times
/// the enemy's pieces in hand by role; and, per role the enemy holds, the unguarded empty
/// squares a drop of that role would check from.
fn drop_danger(pos: &Crazyhouse, color: Color, w: &Weights) -> i32 {
    let board = pos.chess().board();
    let Some(king) = board.king_of(color) else {
        return 0;
    };
    let occupied = board.occupied();
    let mut guarded = Bitboard(0);
    for sq in board.by_color(color) & !board.by_role(Role::King) {
        let role = board.role_at(sq).unwrap_or(Role::Pawn);
        guarded |= attacks::piece(color, role, sq, occupied);
    }
    let open = !occupied & !guarded;
    let holes = (attacks::king(king) & open).count() as i32;
    let r = pos.reserves();
    let them = !color;
    let mut danger = 0;
    for (i, role) in HAND_ROLES.into_iter().enumerate() {
        let held = i32::from(r.count(them, role));
        if held == 0 {
            continue;
        }
        danger += holes * held * w.drop_danger[i];
        let checks = match role {
            // An enemy pawn checks from where our pawn on the king's square would capture;
            // pawns are never dropped on the first or last rank.
            Role::Pawn => attacks::pawn(color, king) & !(Bitboard::rank(0) | Bitboard::rank(7)),
            Role::Knight => attacks::knight(king),
            Role::Bishop => attacks::bishop(king, occupied),
            Role::Rook => attacks::rook(king, occupied),
            _ => attacks::queen(king, occupied),
        };
        danger += (checks & open).count() as i32 * w.drop_check[i];
    }
    danger
}

thread_local! {
    /// The search's pawn structures under the crazyhouse [`WEIGHTS`], per thread.
    static PAWNS: std::cell::RefCell<PawnCache> = std::cell::RefCell::default();
}

/// The evaluation of `pos` under the weights `w`, from the side to move's point of view: what
/// the search uses, with [`WEIGHTS`].
pub fn evaluate_with(pos: &Crazyhouse, w: &Weights) -> i32 {
    evaluate_given(pos, w, &PawnStructure::of(pos.chess().board(), &w.board))
}

/// [`evaluate_with`], given the board's pawn structure.
fn evaluate_given(pos: &Crazyhouse, w: &Weights, pawns: &PawnStructure) -> i32 {
    let (mut score, phase) = board_score_with(pos.chess().board(), &w.board, pawns);
    let r = pos.reserves();
    for (i, role) in HAND_ROLES.into_iter().enumerate() {
        let v = w.board.material[i].0 + w.in_hand[i];
        let n = i32::from(r.count(Color::White, role)) - i32::from(r.count(Color::Black, role));
        score += Pair(v * n, v * n);
    }
    // Drops keep the middlegame going: the phase never falls far.
    let phase = phase.max(16);
    let danger = drop_danger(pos, Color::Black, w) - drop_danger(pos, Color::White, w);
    let white = taper(score, phase) + danger;
    super::for_side(pos.turn(), white) + w.board.tempo
}

impl EnginePosition for Crazyhouse {
    const CHEAP_LEGALITY: bool = true;

    fn evaluate(&self) -> i32 {
        let pawns = PAWNS.with_borrow_mut(|cache| cache.get(self.chess().board(), &WEIGHTS.board));
        evaluate_given(self, &WEIGHTS, &pawns)
    }

    fn move_slot(&self, m: Move) -> usize {
        slot(m)
    }

    fn piece_to(&self, m: Move) -> usize {
        piece_to(self.chess().board(), m)
    }

    fn gain(&self, m: Move) -> i32 {
        // A capture also puts the piece in the capturer's hand: it counts twice.
        let g = gain_on(self.chess().board(), m, value);
        if self.is_capture(m) { g * 2 } else { g }
    }

    fn mover_value(&self, m: Move) -> i32 {
        value(mover(self.chess().board(), m))
    }

    fn is_tactical(&self, m: Move) -> bool {
        self.is_capture(m) || m.promotion_role() == Some(Role::Queen)
    }

    fn see_ge(&self, m: Move, threshold: i32) -> bool {
        see_ge(self.chess().board(), self.turn(), m, threshold, value)
    }

    fn null_move_sound(&self) -> bool {
        true
    }

    fn quiescence_extras(&self, out: &mut Self::MoveList) {
        let mut all = Self::MoveList::default();
        self.legal_moves_into(&mut all);
        for &m in all.iter() {
            let quiet_queen = m.promotion_role() == Some(Role::Queen) && !self.is_capture(m);
            if quiet_queen || (m.is_drop() && self.gives_check(m)) {
                out.push(m);
            }
        }
    }

    fn decided(&self) -> Option<Outcome> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbiter_core::crazyhouse::HouseRules;

    #[test]
    fn pieces_in_hand_count_and_the_start_is_level() {
        let start = Crazyhouse::new(HouseRules::Crazyhouse);
        assert_eq!(start.evaluate(), WEIGHTS.board.tempo);
        let text = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[Nn] w KQkq - 0 1";
        let even = Crazyhouse::from_fen(text, HouseRules::Crazyhouse).unwrap();
        assert_eq!(even.evaluate(), WEIGHTS.board.tempo);
        let text = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[N] w KQkq - 0 1";
        let up = Crazyhouse::from_fen(text, HouseRules::Crazyhouse).unwrap();
        assert!(up.evaluate() > 300);
    }

    #[test]
    fn drop_checks_count_the_open_squares_a_held_piece_would_check_from() {
        let pos = |text: &str| Crazyhouse::from_fen(text, HouseRules::Crazyhouse).unwrap();
        // What the drop-check weight of `role` adds to the side to move's evaluation.
        let checks = |text: &str, role: usize| {
            let p = pos(text);
            let mut w = WEIGHTS.clone();
            w.drop_check = [0; 5];
            let without = evaluate_with(&p, &w);
            w.drop_check[role] = 100;
            evaluate_with(&p, &w) - without
        };
        // Black holds a knight: c2, d3, f3 and g2 check the white king on e1.
        assert_eq!(checks("4k3/8/8/8/8/8/8/4K3[n] w - - 0 1", 1), -400);
        assert_eq!(checks("4k3/8/8/8/8/8/8/4K3[n] b - - 0 1", 1), 400);
        // A bishop on g2 stands on one of them and guards f3.
        assert_eq!(checks("4k3/8/8/8/8/8/6B1/4K3[n] w - - 0 1", 1), -200);
        // Nothing held, nothing counted; a held bishop does not count for the knight.
        assert_eq!(checks("4k3/8/8/8/8/8/8/4K3 w - - 0 1", 1), 0);
        assert_eq!(checks("4k3/8/8/8/8/8/8/4K3[b] w - - 0 1", 1), 0);
        // Pawns: d2 and f2 check a king on e1; d8 and f8 would check one on e7, but a pawn is
        // never dropped on the last rank.
        assert_eq!(checks("4k3/8/8/8/8/8/8/4K3[p] w - - 0 1", 0), -200);
        assert_eq!(checks("8/4K3/8/8/8/8/8/k7[p] w - - 0 1", 0), 0);
        // White holds a rook: the black king on a8 is checked along the open a-file (a1–a7)
        // and the eighth rank (b8–h8); a black rook on b1 guards a1 and b8.
        assert_eq!(checks("k7/8/8/8/8/8/8/4K3[R] w - - 0 1", 3), 1400);
        assert_eq!(checks("k7/8/8/8/8/8/8/1r2K3[R] w - - 0 1", 3), 1200);
    }

    #[test]
    fn a_dropped_piece_is_exchanged_like_a_moved_one() {
        let pos = |text: &str| Crazyhouse::from_fen(text, HouseRules::Crazyhouse).unwrap();
        let drop = |p: &Crazyhouse, uci: &str| {
            p.parse_move(uci, Default::default(), Default::default())
                .unwrap()
        };
        // A knight dropped where a pawn takes it loses the knight, defended or not.
        let hanging = pos("4k3/8/3p4/8/8/8/8/4K3[N] w - - 0 1");
        assert!(!hanging.see_ge(drop(&hanging, "N@e5"), 0));
        assert!(
            hanging.see_ge(drop(&hanging, "N@e4"), 0),
            "nothing attacks e4"
        );
        let defended = pos("4k3/8/3p4/8/3P4/8/8/4K3[N] w - - 0 1");
        assert!(!defended.see_ge(drop(&defended, "N@e5"), 0), "N for P");
        assert!(defended.see_ge(drop(&defended, "N@e5"), -200));
        // Attacked by a rook and defended by a pawn: the rook would lose itself for the knight.
        let rook = pos("4k3/8/8/4r3/8/8/3P4/4K3[N] w - - 0 1");
        assert!(rook.see_ge(drop(&rook, "N@e3"), 0));
        // The same for Black, the side to move, dropping.
        let black = pos("4k3/8/8/8/8/8/3P4/4K3[n] b - - 0 1");
        assert!(!black.see_ge(drop(&black, "N@e3"), 0));
        assert!(black.see_ge(drop(&black, "N@e4"), 0));
    }
}
