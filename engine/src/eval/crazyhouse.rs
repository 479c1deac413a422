//! Crazyhouse and one-board bughouse evaluation: the chess board terms with crazyhouse's
//! lower values for the long-range pieces, pieces in hand worth more than on the board, king
//! safety against drops (the empty squares around the king the enemy could drop on, weighed by
//! what the enemy holds), and the initiative (a larger tempo: drops make every move count).
//!
//! A bughouse board is judged alone, with its current reserves: the partner's board is not seen.

use super::chess::{
    Pair, PawnCache, Weights, board_score_with, gain_on, mover, piece_to, see_ge, slot, taper,
};
use crate::hooks::EnginePosition;
use arbiter_core::bitboard::{Bitboard, attacks};
use arbiter_core::chess::Move;
use arbiter_core::{Color, Crazyhouse, Outcome, Position, Role};
use std::sync::LazyLock;

/// The board weights of crazyhouse.
pub static WEIGHTS: LazyLock<Weights> = LazyLock::new(|| Weights {
    material: [
        Pair(100, 100),
        Pair(300, 300),
        Pair(320, 320),
        Pair(420, 440),
        Pair(780, 800),
        Pair(0, 0),
    ],
    mobility: [
        Pair(0, 0),
        Pair(3, 3),
        Pair(3, 3),
        Pair(2, 2),
        Pair(1, 1),
        Pair(0, 0),
    ],
    shield: 18,
    attack_units: [0, 3, 2, 3, 5, 0],
    tempo: 25,
    // The board terms below were the chess values when these weights were set; they are
    // spelt out so that tuning the chess weights leaves crazyhouse as measured.
    centre: [
        Pair(4, 0),
        Pair(10, 8),
        Pair(5, 5),
        Pair(0, 2),
        Pair(2, 8),
        Pair(-12, 15),
    ],
    pawn_advance: Pair(3, 10),
    bishop_pair: Pair(30, 50),
    doubled: Pair(10, 20),
    isolated: Pair(10, 15),
    passed: [
        Pair(0, 0),
        Pair(0, 10),
        Pair(5, 15),
        Pair(10, 25),
        Pair(25, 50),
        Pair(45, 90),
        Pair(75, 140),
        Pair(0, 0),
    ],
    rook_open: Pair(25, 10),
    rook_half_open: Pair(12, 5),
});

/// A piece in hand is worth its board value plus this, per role.
const IN_HAND: [i32; 6] = [40, 40, 20, 20, 30, 0];

/// Per enemy piece in hand, per empty square next to the king that no own piece guards.
const DROP_DANGER: i32 = 6;

fn value(role: Role) -> i32 {
    WEIGHTS.material[role.index()]
        .0
        .max(if role == Role::King { 20_000 } else { 0 })
}

/// The drop danger to `color`'s king: empty, unguarded squares around it times the enemy's
/// pieces in hand (knights and queens count double).
fn drop_danger(pos: &Crazyhouse, color: Color) -> i32 {
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
    let holes = (attacks::king(king) & !occupied & !guarded).count() as i32;
    let r = pos.reserves();
    let them = !color;
    let hand = i32::from(r.count(them, Role::Pawn))
        + 2 * i32::from(r.count(them, Role::Knight))
        + i32::from(r.count(them, Role::Bishop))
        + i32::from(r.count(them, Role::Rook))
        + 2 * i32::from(r.count(them, Role::Queen));
    holes * hand * DROP_DANGER
}

thread_local! {
    /// The search's pawn structures under the crazyhouse [`WEIGHTS`], per thread.
    static PAWNS: std::cell::RefCell<PawnCache> = std::cell::RefCell::default();
}

impl EnginePosition for Crazyhouse {
    const CHEAP_LEGALITY: bool = true;

    fn evaluate(&self) -> i32 {
        let board = self.chess().board();
        let w = &*WEIGHTS;
        let pawns = PAWNS.with_borrow_mut(|cache| cache.get(board, w));
        let (mut score, phase) = board_score_with(board, w, &pawns);
        let r = self.reserves();
        for role in [
            Role::Pawn,
            Role::Knight,
            Role::Bishop,
            Role::Rook,
            Role::Queen,
        ] {
            let v = WEIGHTS.material[role.index()].0 + IN_HAND[role.index()];
            let n = i32::from(r.count(Color::White, role)) - i32::from(r.count(Color::Black, role));
            score += Pair(v * n, v * n);
        }
        // Drops keep the middlegame going: the phase never falls far.
        let phase = phase.max(16);
        let danger = drop_danger(self, Color::Black) - drop_danger(self, Color::White);
        let white = taper(score, phase) + danger;
        let s = super::for_side(self.turn(), white);
        s + WEIGHTS.tempo
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
        assert_eq!(start.evaluate(), WEIGHTS.tempo);
        let text = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[Nn] w KQkq - 0 1";
        let even = Crazyhouse::from_fen(text, HouseRules::Crazyhouse).unwrap();
        assert_eq!(even.evaluate(), WEIGHTS.tempo);
        let text = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[N] w KQkq - 0 1";
        let up = Crazyhouse::from_fen(text, HouseRules::Crazyhouse).unwrap();
        assert!(up.evaluate() > 300);
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
