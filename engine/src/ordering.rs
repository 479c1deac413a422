//! Move ordering: the statistics the search learns about quiet moves, and the order it tries
//! moves in.
//!
//! A node tries, in this order: the transposition table's move; captures and other tactical moves
//! that do not lose material by static exchange (most valuable victim, least valuable attacker
//! first); the two killers of its ply (quiet moves that refuted a sibling); the counter-move (the
//! quiet move that last refuted the opponent's previous move); the other quiet moves by their
//! history; and last the tactical moves that lose material. A quiet move's history is the
//! butterfly table (side, move) plus two continuation histories: its record as the reply to the
//! move one ply and two plies before it (by piece and target square).
//!
//! [`Histories`] live in the [`Engine`](crate::Engine) across the searches of one game;
//! [`Orderer`] adds what one search keeps per ply (the killers and the moves on the current path).

use crate::hooks::{EnginePosition, MOVE_SLOTS, PIECE_TO_SLOTS};

/// Order score of the transposition table's move: first.
pub(crate) const TT_MOVE: i32 = 1 << 30;
/// Order score of a tactical move that does not lose material, before its MVV/LVA term.
const GOOD_TACTICAL: i32 = 4_000_000;
/// Order score of a tactical move that loses material, before its MVV/LVA term: after every quiet
/// move (histories stay within ±2×[`HISTORY_MAX`]).
const BAD_TACTICAL: i32 = -4_000_000;
/// Order scores of the first and second killer and of the counter-move. Every quiet move that
/// scores at least [`REFUTATION`] is one of these three.
const KILLER_1: i32 = 3_000_002;
const KILLER_2: i32 = 3_000_001;
pub(crate) const REFUTATION: i32 = 3_000_000;

/// Bound of each history entry: the update's gravity keeps `|h|` within it (and a continuation
/// entry within an `i16`).
pub(crate) const HISTORY_MAX: i32 = 16_384;
/// A cut-off's history bonus is this times depth², at most [`HISTORY_BONUS_MAX`].
const HISTORY_BONUS_PER_DEPTH2: i32 = 16;
const HISTORY_BONUS_MAX: i32 = 1_600;

/// Entries of the continuation histories: per side to move, per distance back (one or two
/// plies), per earlier move's and this move's [`EnginePosition::piece_to`] slot.
const CONTINUATION_LEN: usize = 2 * 2 * PIECE_TO_SLOTS * PIECE_TO_SLOTS;

/// Where the continuation history of the move `now` after the move `earlier`, made `back + 1`
/// plies before it, is kept.
fn cont_index(side: usize, back: usize, earlier: usize, now: usize) -> usize {
    ((side * 2 + back) * PIECE_TO_SLOTS + earlier) * PIECE_TO_SLOTS + now
}

/// No move (a null move, or before the root) in the stack of moves made.
pub(crate) const NO_SLOT: usize = usize::MAX;

/// MVV/LVA: the victim's value first, the attacker's to break ties.
fn mvv_lva<P: EnginePosition>(pos: &P, m: P::Move) -> i32 {
    pos.gain(m) * 16 - pos.mover_value(m) / 16
}

/// What the search learns about quiet moves over the searches of one game.
#[derive(Debug)]
pub(crate) struct Histories<M> {
    /// Butterfly history, per side and [`EnginePosition::move_slot`].
    butterfly: Vec<i32>,
    /// Continuation histories (see [`cont_index`]).
    continuation: Vec<i16>,
    /// The counter-move, per side and the opponent's previous move's slot.
    counter: Vec<Option<M>>,
}

impl<M: Copy> Histories<M> {
    pub(crate) fn new() -> Self {
        Histories {
            butterfly: vec![0; 2 * MOVE_SLOTS],
            continuation: vec![0; CONTINUATION_LEN],
            counter: vec![None; 2 * MOVE_SLOTS],
        }
    }

    /// Forgets everything learnt.
    pub(crate) fn clear(&mut self) {
        self.butterfly.iter_mut().for_each(|h| *h = 0);
        self.continuation.iter_mut().for_each(|h| *h = 0);
        self.counter.iter_mut().for_each(|c| *c = None);
    }
}

/// One search's move ordering: the game's [`Histories`], and per ply the killers and the move
/// made on the current path.
pub(crate) struct Orderer<'a, M> {
    histories: &'a mut Histories<M>,
    killers: Vec<[Option<M>; 2]>,
    /// The [`EnginePosition::piece_to`] slot of the move made at each ply of the current path
    /// ([`NO_SLOT`] for a null move).
    moved: Vec<usize>,
}

impl<'a, M: Copy + PartialEq> Orderer<'a, M> {
    /// An orderer for paths of up to `plies` plies.
    pub(crate) fn new(histories: &'a mut Histories<M>, plies: usize) -> Self {
        Orderer {
            histories,
            killers: vec![[None, None]; plies],
            moved: vec![NO_SLOT; plies],
        }
    }

    /// Records the move made at `ply` of the current path (`None`: a null move).
    pub(crate) fn made<P: EnginePosition<Move = M>>(&mut self, pos: &P, ply: usize, m: Option<M>) {
        self.moved[ply] = m.map_or(NO_SLOT, |m| pos.piece_to(m));
    }

    /// The counter-move to the opponent's `previous` move, if one is known.
    pub(crate) fn counter<P: EnginePosition<Move = M>>(
        &self,
        pos: &P,
        previous: Option<M>,
    ) -> Option<M> {
        let side = pos.turn().index();
        previous.and_then(|p| self.histories.counter[side * MOVE_SLOTS + pos.move_slot(p)])
    }

    /// The order score of `m` at `ply`: higher is tried first (see the module's order).
    pub(crate) fn score<P: EnginePosition<Move = M>>(
        &self,
        pos: &P,
        m: M,
        tt_move: Option<M>,
        counter: Option<M>,
        ply: usize,
    ) -> i32 {
        if Some(m) == tt_move {
            return TT_MOVE;
        }
        if pos.is_tactical(m) {
            let base = if pos.see_ge(m, 0) {
                GOOD_TACTICAL
            } else {
                BAD_TACTICAL
            };
            return base + mvv_lva(pos, m);
        }
        let k = &self.killers[ply];
        if k[0] == Some(m) {
            return KILLER_1;
        }
        if k[1] == Some(m) {
            return KILLER_2;
        }
        if counter == Some(m) {
            return REFUTATION;
        }
        self.quiet_history(pos, m, ply)
    }

    /// The slots of the moves one and two plies before `ply` (each [`NO_SLOT`] when none).
    fn earlier_moves(&self, ply: usize) -> [usize; 2] {
        let back = |n: usize| {
            if ply >= n {
                self.moved[ply - n]
            } else {
                NO_SLOT
            }
        };
        [back(1), back(2)]
    }

    /// A quiet move's history: the butterfly table plus the continuation histories after the
    /// last two moves (each within ±[`HISTORY_MAX`]).
    pub(crate) fn quiet_history<P: EnginePosition<Move = M>>(
        &self,
        pos: &P,
        m: M,
        ply: usize,
    ) -> i32 {
        let side = pos.turn().index();
        let now = pos.piece_to(m);
        let mut h = self.histories.butterfly[side * MOVE_SLOTS + pos.move_slot(m)];
        for (back, earlier) in self.earlier_moves(ply).into_iter().enumerate() {
            if earlier != NO_SLOT {
                h += i32::from(self.histories.continuation[cont_index(side, back, earlier, now)]);
            }
        }
        h
    }

    /// Adds `bonus` (negative: a malus) to a quiet move's histories, with a gravity that keeps
    /// each entry within ±[`HISTORY_MAX`].
    fn update_history<P: EnginePosition<Move = M>>(
        &mut self,
        pos: &P,
        m: M,
        bonus: i32,
        ply: usize,
    ) {
        let side = pos.turn().index();
        let h = &mut self.histories.butterfly[side * MOVE_SLOTS + pos.move_slot(m)];
        *h += bonus - *h * bonus.abs() / HISTORY_MAX;
        let now = pos.piece_to(m);
        for (back, e) in self.earlier_moves(ply).into_iter().enumerate() {
            if e == NO_SLOT {
                continue;
            }
            let c = &mut self.histories.continuation[cont_index(side, back, e, now)];
            let v = i32::from(*c);
            // The same gravity keeps |v| within HISTORY_MAX, which fits an i16.
            *c = (v + bonus - v * bonus.abs() / HISTORY_MAX) as i16;
        }
    }

    /// A quiet move `m` cut off at `ply` with `depth` left, after the quiet moves `tried` failed:
    /// its histories rise and theirs fall, it becomes the ply's first killer and the
    /// counter-move to `previous`.
    pub(crate) fn quiet_cutoff<P: EnginePosition<Move = M>>(
        &mut self,
        pos: &P,
        m: M,
        tried: &[M],
        depth: i32,
        ply: usize,
        previous: Option<M>,
    ) {
        let bonus = (depth * depth * HISTORY_BONUS_PER_DEPTH2).min(HISTORY_BONUS_MAX);
        self.update_history(pos, m, bonus, ply);
        for &q in tried {
            self.update_history(pos, q, -bonus, ply);
        }
        let k = &mut self.killers[ply];
        if k[0] != Some(m) {
            k[1] = k[0];
            k[0] = Some(m);
        }
        if let Some(p) = previous {
            let side = pos.turn().index();
            self.histories.counter[side * MOVE_SLOTS + pos.move_slot(p)] = Some(m);
        }
    }
}

/// Brings the best-scored of `order[i..]` to `i` (a selection step: most nodes cut off after one
/// or two moves, so sorting them all would be wasted).
pub(crate) fn pick_next<M: Copy>(order: &mut [(i32, M)], i: usize) {
    let mut top = i;
    for j in i + 1..order.len() {
        if order[j].0 > order[top].0 {
            top = j;
        }
    }
    order.swap(i, top);
}

/// Quiescence's order: tactical moves by MVV/LVA, the others (check evasions, quiet checks)
/// after them in generation order.
pub(crate) fn order_quiescence<P: EnginePosition>(
    pos: &P,
    moves: &[P::Move],
    order: &mut Vec<(i32, P::Move)>,
) {
    order.clear();
    order.extend(moves.iter().map(|&m| {
        let s = if pos.is_tactical(m) {
            mvv_lva(pos, m)
        } else {
            0
        };
        (s, m)
    }));
    order.sort_by_key(|&(s, _)| std::cmp::Reverse(s));
}
