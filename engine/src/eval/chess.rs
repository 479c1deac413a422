//! Standard chess evaluation, tapered between middlegame and endgame: material and piece-square
//! terms, mobility, pawn structure (doubled, isolated, passed pawns), rooks on open files, the
//! bishop pair, and king safety (pawn shield, attackers of the king's zone). Crazyhouse reuses
//! the board terms with its own weights ([`super::crazyhouse`]).
//!
//! The piece-square terms are formulas (centralisation, advancement), not tables typed in, so
//! that tuning adjusts a few weights. Weights are in [`Weights`], fitted by [`crate::tune`];
//! see `docs/engine.md` for how.

use crate::hooks::EnginePosition;
use arbiter_core::bitboard::{Bitboard, attacks};
use arbiter_core::chess::{Board, Move, MoveKind};
use arbiter_core::{Chess, Color, Outcome, Position, Role, Square};
use std::sync::LazyLock;

/// A middlegame and an endgame value.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Pair(pub i32, pub i32);

impl std::ops::Add for Pair {
    type Output = Pair;
    fn add(self, o: Pair) -> Pair {
        Pair(self.0 + o.0, self.1 + o.1)
    }
}
impl std::ops::Sub for Pair {
    type Output = Pair;
    fn sub(self, o: Pair) -> Pair {
        Pair(self.0 - o.0, self.1 - o.1)
    }
}
impl std::ops::AddAssign for Pair {
    fn add_assign(&mut self, o: Pair) {
        *self = *self + o;
    }
}
impl std::ops::Mul<i32> for Pair {
    type Output = Pair;
    fn mul(self, k: i32) -> Pair {
        Pair(self.0 * k, self.1 * k)
    }
}

/// The weights of the board evaluation.
#[derive(Clone, Debug)]
pub struct Weights {
    /// Material per role (pawn to queen; the king is 0).
    pub material: [Pair; 6],
    /// Per step of centralisation (0 to 3) per role.
    pub centre: [Pair; 6],
    /// Per rank a pawn has advanced.
    pub pawn_advance: Pair,
    /// Per attacked square, per role, around the role's typical count.
    pub mobility: [Pair; 6],
    /// Both bishops.
    pub bishop_pair: Pair,
    /// A doubled, an isolated pawn (penalties, positive numbers).
    pub doubled: Pair,
    /// An isolated pawn.
    pub isolated: Pair,
    /// A passed pawn, by relative rank.
    pub passed: [Pair; 8],
    /// A rook on an open and a half-open file.
    pub rook_open: Pair,
    /// A rook on a half-open file.
    pub rook_half_open: Pair,
    /// A pawn of the king's shield.
    pub shield: i32,
    /// King-zone attack units by attacking role (knight, bishop, rook, queen).
    pub attack_units: [i32; 6],
    /// The side to move's bonus.
    pub tempo: i32,
}

impl Weights {
    /// Walks every weight the evaluation reads, with a stable name, in a fixed order: the
    /// parameters of tuning ([`crate::tune`]). Entries the evaluation never reads (the king's
    /// material, pawn and king mobility, passers on the first and last ranks, pawn and king
    /// attack units) are left out. The attack units enter the evaluation squared, so a set of
    /// them and its negation evaluate alike.
    pub fn visit(&mut self, f: &mut dyn FnMut(&str, &mut i32)) {
        const ROLES: [&str; 6] = ["pawn", "knight", "bishop", "rook", "queen", "king"];
        fn pair(f: &mut dyn FnMut(&str, &mut i32), name: &str, p: &mut Pair) {
            f(&format!("{name}.mg"), &mut p.0);
            f(&format!("{name}.eg"), &mut p.1);
        }
        for (i, p) in self.material.iter_mut().enumerate().take(5) {
            pair(f, &format!("material.{}", ROLES[i]), p);
        }
        for (i, p) in self.centre.iter_mut().enumerate() {
            pair(f, &format!("centre.{}", ROLES[i]), p);
        }
        pair(f, "pawn_advance", &mut self.pawn_advance);
        for (i, p) in self.mobility.iter_mut().enumerate().take(5).skip(1) {
            pair(f, &format!("mobility.{}", ROLES[i]), p);
        }
        pair(f, "bishop_pair", &mut self.bishop_pair);
        pair(f, "doubled", &mut self.doubled);
        pair(f, "isolated", &mut self.isolated);
        for (rank, p) in self.passed.iter_mut().enumerate().take(7).skip(1) {
            pair(f, &format!("passed.rank{}", rank + 1), p);
        }
        pair(f, "rook_open", &mut self.rook_open);
        pair(f, "rook_half_open", &mut self.rook_half_open);
        f("shield", &mut self.shield);
        for (i, u) in self.attack_units.iter_mut().enumerate().take(5).skip(1) {
            f(&format!("attack_units.{}", ROLES[i]), u);
        }
        f("tempo", &mut self.tempo);
    }
}

/// Standard chess weights, fitted by Texel's method on self-play positions (`arbiter texel`;
/// the commands and the result are in `docs/engine.md` and `docs/performance.md`).
pub static WEIGHTS: LazyLock<Weights> = LazyLock::new(|| Weights {
    material: [
        Pair(66, 113),
        Pair(295, 344),
        Pair(329, 371),
        Pair(399, 669),
        Pair(890, 1320),
        Pair(0, 0),
    ],
    centre: [
        Pair(8, -10),
        Pair(6, 24),
        Pair(5, 11),
        Pair(-3, 6),
        Pair(-1, 32),
        Pair(-15, 24),
    ],
    pawn_advance: Pair(-2, 3),
    mobility: [
        Pair(0, 0),
        Pair(8, 3),
        Pair(6, 7),
        Pair(6, 5),
        Pair(2, 9),
        Pair(0, 0),
    ],
    bishop_pair: Pair(11, 83),
    doubled: Pair(6, 7),
    isolated: Pair(9, 11),
    passed: [
        Pair(0, 0),
        Pair(-5, 40),
        Pair(17, 30),
        Pair(5, 57),
        Pair(14, 79),
        Pair(63, 140),
        Pair(122, 198),
        Pair(0, 0),
    ],
    rook_open: Pair(69, 4),
    rook_half_open: Pair(19, 34),
    shield: 3,
    attack_units: [0, 2, 2, 2, 3, 0],
    tempo: 5,
});

/// Typical mobility per role, subtracted so that the term is centred.
const MOBILITY_BASE: [i32; 6] = [0, 4, 6, 7, 13, 0];

/// Game phase weight per role (24 in the start position).
pub const PHASE: [i32; 6] = [0, 1, 1, 2, 4, 0];

/// Centralisation of a square: 0 on the rim to 3 in the centre.
fn centrality(sq: Square) -> i32 {
    let f = sq.file() as i32;
    let r = sq.rank() as i32;
    let df = if f < 4 { f } else { 7 - f };
    let dr = if r < 4 { r } else { 7 - r };
    df.min(dr)
}

/// Squares in front of a pawn on its file and the two beside it (white's view when `color` is
/// white): where enemy pawns stop it from being passed.
static FRONT_SPAN: LazyLock<[[Bitboard; 64]; 2]> = LazyLock::new(|| {
    let mut t = [[Bitboard(0); 64]; 2];
    for s in 0..64u32 {
        let f = s % 8;
        let r = s / 8;
        let files = Bitboard::file(f)
            | if f > 0 {
                Bitboard::file(f - 1)
            } else {
                Bitboard(0)
            }
            | if f < 7 {
                Bitboard::file(f + 1)
            } else {
                Bitboard(0)
            };
        let mut up = 0u64;
        for rr in r + 1..8 {
            up |= Bitboard::rank(rr).0;
        }
        let mut down = 0u64;
        for rr in 0..r {
            down |= Bitboard::rank(rr).0;
        }
        t[0][s as usize] = Bitboard(files.0 & up);
        t[1][s as usize] = Bitboard(files.0 & down);
    }
    t
});

/// The terms of `color`'s pawns that depend on the pawns alone (positive is good for `color`):
/// material, centralisation, advancement, doubled, isolated and passed pawns.
fn pawn_terms(color: Color, our_pawns: Bitboard, their_pawns: Bitboard, w: &Weights) -> Pair {
    let mut total = Pair::default();
    let span = &FRONT_SPAN[color.index()];
    for sq in our_pawns {
        let rel = if color == Color::White {
            sq
        } else {
            sq.flip_vertical()
        };
        total += w.material[Role::Pawn.index()];
        total += w.centre[Role::Pawn.index()] * centrality(sq);
        total += w.pawn_advance * (rel.rank() as i32 - 1);
        let file = Bitboard::file(sq.file());
        if (our_pawns & file).more_than_one() {
            total = total - w.doubled;
        }
        let f = sq.file();
        let neighbours = (if f > 0 {
            Bitboard::file(f - 1)
        } else {
            Bitboard(0)
        }) | (if f < 7 {
            Bitboard::file(f + 1)
        } else {
            Bitboard(0)
        });
        if (our_pawns & neighbours).is_empty() {
            total = total - w.isolated;
        }
        if (span[sq.index()] & their_pawns).is_empty()
            && (span[sq.index()] & file & our_pawns).is_empty()
        {
            total += w.passed[rel.rank() as usize];
        }
    }
    total
}

/// What the pawns contribute, for both sides: the pawn terms (white's minus black's) and the
/// squares each side's pawns attack. It depends only on where the pawns stand, so the search's
/// evaluation keeps it in a [`PawnCache`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PawnStructure {
    /// White's pawn terms minus black's.
    pub score: Pair,
    /// The squares attacked by white's and by black's pawns ([`Color::index`]).
    pub attacks: [Bitboard; 2],
}

impl PawnStructure {
    /// The pawn structure of `board` under the weights `w`.
    pub fn of(board: &Board, w: &Weights) -> PawnStructure {
        let pawns = board.by_role(Role::Pawn);
        let white = pawns & board.by_color(Color::White);
        let black = pawns & board.by_color(Color::Black);
        let attacks_of = |color: Color, pawns: Bitboard| {
            pawns
                .into_iter()
                .fold(Bitboard(0), |a, sq| a | attacks::pawn(color, sq))
        };
        PawnStructure {
            score: pawn_terms(Color::White, white, black, w)
                - pawn_terms(Color::Black, black, white, w),
            attacks: [
                attacks_of(Color::White, white),
                attacks_of(Color::Black, black),
            ],
        }
    }
}

/// Entries of a [`PawnCache`] (a power of two): 2,048 of 48 bytes, 96 KiB.
const PAWN_CACHE_ENTRIES: usize = 2048;

/// [`PawnStructure`]s by the placement of the pawns, for one set of weights: a direct-mapped
/// table that keeps both sides' pawn bitboards, so a hit is exact. The pawns change in few moves,
/// so most evaluations in a search find their structure here.
#[derive(Debug)]
pub struct PawnCache {
    entries: Vec<Option<(Bitboard, Bitboard, PawnStructure)>>,
}

impl Default for PawnCache {
    fn default() -> Self {
        PawnCache {
            entries: vec![None; PAWN_CACHE_ENTRIES],
        }
    }
}

impl PawnCache {
    /// The pawn structure of `board` under `w`, from the cache or computed and stored. Every
    /// call on one cache must pass the same weights.
    pub fn get(&mut self, board: &Board, w: &Weights) -> PawnStructure {
        let pawns = board.by_role(Role::Pawn);
        let white = pawns & board.by_color(Color::White);
        let black = pawns & board.by_color(Color::Black);
        let mixed = (white.0 ^ black.0.rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let i = (mixed >> (64 - PAWN_CACHE_ENTRIES.trailing_zeros())) as usize;
        match self.entries[i] {
            Some((w0, b0, found)) if w0 == white && b0 == black => found,
            _ => {
                let made = PawnStructure::of(board, w);
                self.entries[i] = Some((white, black, made));
                made
            }
        }
    }
}

/// The board terms of `color` besides its pawns' own (positive is good for `color`), with the
/// phase weight of its pieces; `pawns` is the board's pawn structure.
pub fn side_terms(board: &Board, color: Color, w: &Weights, pawns: &PawnStructure) -> (Pair, i32) {
    let us = board.by_color(color);
    let them = board.by_color(!color);
    let occupied = board.occupied();
    let our_pawns = us & board.by_role(Role::Pawn);
    let their_pawns = them & board.by_role(Role::Pawn);
    let pawn_attacks = pawns.attacks[(!color).index()];
    let mut total = Pair::default();
    let mut phase = 0;
    let their_king = board.king_of(!color);
    let zone = their_king.map_or(Bitboard(0), |k| attacks::king(k) | Bitboard::from_square(k));
    let mut units = 0;
    let mut attackers = 0;
    for role in [
        Role::Knight,
        Role::Bishop,
        Role::Rook,
        Role::Queen,
        Role::King,
    ] {
        let pieces = us & board.by_role(role);
        for sq in pieces {
            total += w.material[role.index()];
            phase += PHASE[role.index()];
            total += w.centre[role.index()] * centrality(sq);
            let reach = match role {
                // Not in the loop: the pawns' terms are the pawn structure's.
                Role::Pawn => continue,
                Role::Knight => attacks::knight(sq),
                Role::Bishop => attacks::bishop(sq, occupied),
                Role::Rook => {
                    let file = Bitboard::file(sq.file());
                    if (file & our_pawns).is_empty() {
                        total += if (file & their_pawns).is_empty() {
                            w.rook_open
                        } else {
                            w.rook_half_open
                        };
                    }
                    attacks::rook(sq, occupied)
                }
                Role::Queen => attacks::queen(sq, occupied),
                Role::King => {
                    // The pawn shield: own pawns on the three files around the king, one or two
                    // ranks ahead.
                    let f = sq.file();
                    let mut shield = 0;
                    for df in [-1i32, 0, 1] {
                        let ff = f as i32 + df;
                        if !(0..8).contains(&ff) {
                            continue;
                        }
                        let ahead = if color == Color::White {
                            [sq.rank() as i32 + 1, sq.rank() as i32 + 2]
                        } else {
                            [sq.rank() as i32 - 1, sq.rank() as i32 - 2]
                        };
                        for r in ahead {
                            if (0..8).contains(&r)
                                && (our_pawns
                                    & Bitboard::file(ff as u32)
                                    & Bitboard::rank(r as u32))
                                .any()
                            {
                                shield += 1;
                                break;
                            }
                        }
                    }
                    total += Pair(w.shield * shield, 0);
                    continue;
                }
            };
            let free = reach & !us & !pawn_attacks;
            total += w.mobility[role.index()] * (free.count() as i32 - MOBILITY_BASE[role.index()]);
            let hits = reach & zone;
            if hits.any() {
                attackers += 1;
                units += w.attack_units[role.index()] * hits.count() as i32;
            }
        }
    }
    if (us & board.by_role(Role::Bishop)).more_than_one() {
        total += w.bishop_pair;
    }
    if attackers >= 2 {
        total += Pair((units * units).min(600), 0);
    }
    (total, phase)
}

/// Blends a middlegame and an endgame score by the phase (0 to 24).
pub fn taper(p: Pair, phase: i32) -> i32 {
    let phase = phase.clamp(0, 24);
    (p.0 * phase + p.1 * (24 - phase)) / 24
}

/// White's board score (before tapering) and the phase.
pub fn board_score(board: &Board, w: &Weights) -> (Pair, i32) {
    board_score_with(board, w, &PawnStructure::of(board, w))
}

/// [`board_score`], given the board's pawn structure (from a [`PawnCache`]).
pub fn board_score_with(board: &Board, w: &Weights, pawns: &PawnStructure) -> (Pair, i32) {
    let (white, pw) = side_terms(board, Color::White, w, pawns);
    let (black, pb) = side_terms(board, Color::Black, w, pawns);
    (white - black + pawns.score, pw + pb)
}

/// Scales a score down when the side ahead has no pawns and too little extra material to
/// win (a minor piece up, or less).
fn drawish_scale(board: &Board, score: i32, w: &Weights) -> i32 {
    let strong = if score > 0 {
        Color::White
    } else {
        Color::Black
    };
    let pawns = board.by_color(strong) & board.by_role(Role::Pawn);
    if pawns.any() {
        return score;
    }
    let npm = |c: Color| -> i32 {
        [Role::Knight, Role::Bishop, Role::Rook, Role::Queen]
            .into_iter()
            .map(|r| {
                (board.by_color(c) & board.by_role(r)).count() as i32 * w.material[r.index()].1
            })
            .sum()
    };
    if npm(strong) - npm(!strong) < 400 {
        score / 8
    } else {
        score
    }
}

/// The evaluation of `pos` under the weights `w`, from the side to move's point of view: what
/// the search uses, with [`WEIGHTS`].
pub fn evaluate_with(pos: &Chess, w: &Weights) -> i32 {
    evaluate_given(pos, w, &PawnStructure::of(pos.board(), w))
}

/// [`evaluate_with`], given the board's pawn structure.
fn evaluate_given(pos: &Chess, w: &Weights, pawns: &PawnStructure) -> i32 {
    let board = pos.board();
    let (score, phase) = board_score_with(board, w, pawns);
    let white = drawish_scale(board, taper(score, phase), w);
    super::for_side(pos.turn(), white) + w.tempo
}

thread_local! {
    /// The search's pawn structures under [`WEIGHTS`], per thread (each search is on one).
    static PAWNS: std::cell::RefCell<PawnCache> = std::cell::RefCell::default();
}

/// The value of a role for exchanges (middlegame material).
pub fn value(role: Role) -> i32 {
    WEIGHTS.material[role.index()]
        .0
        .max(if role == Role::King { 20_000 } else { 0 })
}

/// What `m` captures and promotes to, by `value` (0 for quiet moves).
pub fn gain_on(board: &Board, m: Move, value: impl Fn(Role) -> i32) -> i32 {
    let captured = match m.kind() {
        MoveKind::EnPassant => value(Role::Pawn),
        MoveKind::Castle | MoveKind::Drop(_) => 0,
        _ => board.role_at(m.to()).map_or(0, &value),
    };
    let promotion = m
        .promotion_role()
        .map_or(0, |r| value(r) - value(Role::Pawn));
    captured + promotion
}

/// The role that moves (or is dropped).
pub fn mover(board: &Board, m: Move) -> Role {
    match m.kind() {
        MoveKind::Drop(r) => r,
        _ => board.role_at(m.from()).unwrap_or(Role::Pawn),
    }
}

/// Static exchange evaluation: whether the exchanges on `m`'s destination leave `turn` (the
/// side playing `m`) at least `threshold` up, each side recapturing with its least valuable
/// attacker (x-rays through the pieces that have gone are seen; pins are not). A dropped piece
/// is exchanged like a moved one: a knight dropped where a pawn takes it loses the knight.
pub fn see_ge(
    board: &Board,
    turn: Color,
    m: Move,
    threshold: i32,
    value: impl Fn(Role) -> i32,
) -> bool {
    if matches!(m.kind(), MoveKind::Castle | MoveKind::Promotion(_)) {
        return 0 >= threshold || gain_on(board, m, &value) >= threshold;
    }
    let to = m.to();
    let mut swap = gain_on(board, m, &value) - threshold;
    if swap < 0 {
        return false;
    }
    let moving = mover(board, m);
    swap = value(moving) - swap;
    if swap <= 0 {
        return true;
    }
    // A drop empties no square: only its destination fills.
    let from = if m.is_drop() {
        Bitboard(0)
    } else {
        Bitboard::from_square(m.from())
    };
    let mut occupied = board.occupied() ^ from ^ Bitboard::from_square(to);
    if m.kind() == MoveKind::EnPassant
        && let Some(captured) = Square::from_coords(to.file(), m.from().rank())
    {
        occupied ^= Bitboard::from_square(captured);
    }
    exchange(board, to, turn, occupied, swap, &value)
}

fn exchange(
    board: &Board,
    to: Square,
    mover: Color,
    mut occupied: Bitboard,
    mut swap: i32,
    value: &impl Fn(Role) -> i32,
) -> bool {
    let diagonal = board.bishops_and_queens();
    let straight = board.rooks_and_queens();
    let mut attackers = (board.attackers_to(to, Color::White, occupied)
        | board.attackers_to(to, Color::Black, occupied))
        & occupied;
    let mut side = mover;
    let mut res = 1;
    loop {
        side = !side;
        attackers &= occupied;
        let ours = attackers & board.by_color(side);
        if ours.is_empty() {
            break;
        }
        res ^= 1;
        let Some(role) = Role::ALL
            .into_iter()
            .find(|&r| (ours & board.by_role(r)).any())
        else {
            break;
        };
        if role == Role::King {
            return if (attackers & !board.by_color(side)).any() {
                res ^ 1 != 0
            } else {
                res != 0
            };
        }
        swap = value(role) - swap;
        if swap < res {
            break;
        }
        let from = (ours & board.by_role(role)).first().expect("an attacker");
        occupied ^= Bitboard::from_square(from);
        attackers = attackers
            | (attacks::bishop(to, occupied) & diagonal)
            | (attacks::rook(to, occupied) & straight);
    }
    res != 0
}

/// The history slot of a move of the 8×8 board.
pub fn slot(m: Move) -> usize {
    match m.kind() {
        MoveKind::Drop(r) => 4096 + r.index() * 64 + m.to().index(),
        _ => m.from().index() * 64 + m.to().index(),
    }
}

/// The continuation-history slot of a move of the 8×8 board: the role that moves (or is
/// dropped) and the destination.
pub fn piece_to(board: &Board, m: Move) -> usize {
    mover(board, m).index() * 128 + m.to().index()
}

impl EnginePosition for Chess {
    const CHEAP_LEGALITY: bool = true;

    fn evaluate(&self) -> i32 {
        let w = &*WEIGHTS;
        let pawns = PAWNS.with_borrow_mut(|cache| cache.get(self.board(), w));
        evaluate_given(self, w, &pawns)
    }

    fn move_slot(&self, m: Move) -> usize {
        slot(m)
    }

    fn nnue_pieces(&self) -> Option<crate::nnue::Pieces> {
        let board = self.board();
        let mut pieces = [[0; 6]; 2];
        for (c, color) in [Color::White, Color::Black].into_iter().enumerate() {
            let own = board.by_color(color);
            for (r, role) in Role::ALL.into_iter().enumerate() {
                pieces[c][r] = (own & board.by_role(role)).0;
            }
        }
        Some(pieces)
    }

    fn built_in_network() -> Option<std::sync::Arc<crate::nnue::Network>> {
        Some(crate::nnue::chess())
    }

    fn piece_to(&self, m: Move) -> usize {
        piece_to(self.board(), m)
    }

    fn gain(&self, m: Move) -> i32 {
        gain_on(self.board(), m, value)
    }

    fn mover_value(&self, m: Move) -> i32 {
        value(mover(self.board(), m))
    }

    fn is_tactical(&self, m: Move) -> bool {
        Position::is_capture(self, m) || m.promotion_role() == Some(Role::Queen)
    }

    fn see_ge(&self, m: Move, threshold: i32) -> bool {
        see_ge(self.board(), self.turn(), m, threshold, value)
    }

    fn null_move_sound(&self) -> bool {
        let b = self.board();
        let ours = b.by_color(self.turn());
        (ours & !b.by_role(Role::Pawn) & !b.by_role(Role::King)).any()
    }

    fn decided(&self) -> Option<Outcome> {
        // Only a few pieces can make a dead position; the check is cheap then.
        if self.board().occupied().count() <= 4 && self.is_dead_position() {
            return Some(Outcome::draw(arbiter_core::EndReason::DeadPosition));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chess(fen: &str) -> Chess {
        Chess::from_fen(fen).unwrap()
    }

    #[test]
    fn the_start_is_balanced_and_mirrors_agree() {
        let start = Chess::new();
        assert_eq!(start.evaluate(), WEIGHTS.tempo);
        let a = chess("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3");
        let b = chess("rnbqkb1r/pppp1ppp/5n2/4p3/4P3/2N5/PPPP1PPP/R1BQKBNR b KQkq - 2 3");
        assert_eq!(a.evaluate(), b.evaluate());
    }

    /// One cache over thousands of positions of random games (far more pawn structures than it
    /// has entries, so entries are replaced and indices shared): every answer is the structure
    /// computed afresh, and the search's evaluation (cached) is the tuner's (uncached).
    #[test]
    fn the_pawn_cache_answers_what_a_fresh_computation_does() {
        let mut cache = PawnCache::default();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut positions = 0;
        for _ in 0..200 {
            let mut pos = Chess::new();
            for _ in 0..60 {
                let board = pos.board();
                assert_eq!(
                    cache.get(board, &WEIGHTS),
                    PawnStructure::of(board, &WEIGHTS)
                );
                assert_eq!(
                    pos.evaluate(),
                    evaluate_with(&pos, &WEIGHTS),
                    "{}",
                    pos.to_text()
                );
                positions += 1;
                let moves = pos.legal_moves();
                if moves.is_empty() {
                    break;
                }
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                pos.play_unchecked(moves[(state % moves.len() as u64) as usize]);
            }
        }
        assert!(positions > 5 * PAWN_CACHE_ENTRIES, "{positions} positions");
    }

    #[test]
    fn material_counts() {
        let up = chess("rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
        assert!(up.evaluate() > 700);
        let down = chess("rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR b KQkq - 0 1");
        assert!(down.evaluate() < -700);
    }

    #[test]
    fn exchanges() {
        // Pawn takes a defended knight: wins material.
        let p = chess("4k3/8/3p4/4n3/3P4/8/8/4K3 w - - 0 1");
        let m = p
            .parse_move("d4e5", Default::default(), Default::default())
            .unwrap();
        assert!(p.see_ge(m, 0) && p.see_ge(m, 200));
        // Queen takes a pawn defended by a pawn: loses.
        let q = chess("4k3/8/3p4/4p3/8/8/4Q3/4K3 w - - 0 1");
        let m = q
            .parse_move("e2e5", Default::default(), Default::default())
            .unwrap();
        assert!(!q.see_ge(m, 0));
        // Rook takes a pawn defended by a rook, with a second rook behind: an x-ray wins it.
        let r = chess("4r1k1/4r3/8/4p3/8/8/4R3/4R1K1 w - - 0 1");
        let m = r
            .parse_move("e2e5", Default::default(), Default::default())
            .unwrap();
        assert!(!r.see_ge(m, 1), "R×P, R×R, R×R, R×R loses the exchange");
        let r2 = chess("6k1/4r3/8/4p3/8/8/4R3/4R1K1 w - - 0 1");
        let m = r2
            .parse_move("e2e5", Default::default(), Default::default())
            .unwrap();
        assert!(r2.see_ge(m, 0), "R×P, R×R, R×R wins a pawn");
    }
}
