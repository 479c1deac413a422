//! Byzantine (circular) chess and its Citadel variant. Where the original rule document and the
//! literature disagree, the document's rule is the default and the literature's a rule option
//! ([`ByzantineRules`]): a stalemated side wins (or loses), and facing enemy pawns are removed
//! (or not). Endings are judged in the order citadel entry, checkmate, stalemate, bare king. The
//! rules and the position string are stated in `docs/rules.md`.
//!
//! The board is four rings (`a` outermost to `d` innermost) of sixteen cells; cell numbers wrap,
//! rings do not, and the centre cannot be crossed. Cells are indexed `ring * 16 + (number - 1)`,
//! so the 64 cells fit a `u64` bitboard. The Citadel variant adds four centre cells `e1`–`e4`
//! that only a king may enter (its far one), which ends the game in a draw; a king standing in a
//! citadel is kept apart from the bitboards.
//!
//! Legality is judged after the whole move, facing-pawn removals included. The generator does not
//! play moves to judge them: it finds the pieces that shield the king from a rook (the only slider)
//! and tests the few moves that need it against the board as it will be (see `gen_natural`).

mod attacks;
pub mod render;
mod text;
mod zobrist;

use crate::outcome::{EndReason, Outcome};
use crate::position::{DrawRules, IllegalReason, Locale, MoveError, Notation, Position, tick};
use crate::types::Color;
use crate::variant::Variant;
use arrayvec::ArrayVec;
use std::fmt;

use attacks::{
    COUNSELOR, ELEPHANT, KING, KNIGHT, PAWN_CAPTURE, PAWN_STEP, citadel_neighbours, ring_step_down,
    ring_step_up,
};
pub use attacks::{far_citadel, rook_attacks};

/// The origin and destination cells a coordinate move (`d2d3`, `d10e3`) names, read by its form
/// alone (no position: whether a piece can make it is not checked).
pub(crate) fn coordinate_cells(text: &str) -> Result<(Cell, Cell), &'static str> {
    text::parse_move(text)
}
use zobrist::KEYS;

/// A piece kind of Byzantine chess.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ByzRole {
    /// Pawn: one step along its ring in its own direction, captures diagonally forward.
    Pawn = 0,
    /// Knight: (ring ±1, number ±2) or (ring ±2, number ±1).
    Knight = 1,
    /// Elephant (alfil): leaps (ring ±2, number ±2).
    Elephant = 2,
    /// Rook: slides along its ring (both ways, wrapping) or radially.
    Rook = 3,
    /// Counselor (fers): one step (ring ±1, number ±1).
    Counselor = 4,
    /// King: one step in any of the eight directions.
    King = 5,
}

impl ByzRole {
    /// Every role, pawn first.
    pub const ALL: [ByzRole; 6] = [
        ByzRole::Pawn,
        ByzRole::Knight,
        ByzRole::Elephant,
        ByzRole::Rook,
        ByzRole::Counselor,
        ByzRole::King,
    ];

    /// Upper-case letter (`P N E R F K`).
    pub const fn letter(self) -> char {
        match self {
            ByzRole::Pawn => 'P',
            ByzRole::Knight => 'N',
            ByzRole::Elephant => 'E',
            ByzRole::Rook => 'R',
            ByzRole::Counselor => 'F',
            ByzRole::King => 'K',
        }
    }

    fn from_letter(c: char) -> Option<ByzRole> {
        ByzRole::ALL
            .into_iter()
            .find(|r| r.letter() == c.to_ascii_uppercase())
    }
}

/// What happens to a stalemated side (rule option `stalemate`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum StalemateRule {
    /// The original rule document's rule (default): the stalemated side wins.
    #[default]
    StalematedWins,
    /// Murray's reading: the stalemated side loses.
    StalematedLoses,
}

/// The rule options of Byzantine chess; the defaults are the original rule document's.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ByzantineRules {
    /// Option `stalemate`: `wins` (default) or `loses`.
    pub stalemate: StalemateRule,
    /// Option `facing_pawns`: `on` (default, enemy pawns face to face are removed) or `off`.
    pub facing_pawns: bool,
}

impl Default for ByzantineRules {
    fn default() -> ByzantineRules {
        ByzantineRules {
            stalemate: StalemateRule::StalematedWins,
            facing_pawns: true,
        }
    }
}

impl ByzantineRules {
    /// The options that differ from the defaults, as `name=value` pairs that [`set`](Self::set)
    /// reads back (empty for the default rules).
    pub fn to_options(&self) -> Vec<(String, String)> {
        let defaults = ByzantineRules::default();
        let mut out = Vec::new();
        if self.stalemate != defaults.stalemate {
            let value = match self.stalemate {
                StalemateRule::StalematedWins => "wins",
                StalemateRule::StalematedLoses => "loses",
            };
            out.push(("stalemate".to_owned(), value.to_owned()));
        }
        if self.facing_pawns != defaults.facing_pawns {
            let value = if self.facing_pawns { "on" } else { "off" };
            out.push(("facing_pawns".to_owned(), value.to_owned()));
        }
        out
    }

    /// Applies one `name=value` option (`stalemate=wins|loses`, `facing_pawns=on|off`).
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        match (name, value) {
            ("stalemate", "wins") => self.stalemate = StalemateRule::StalematedWins,
            ("stalemate", "loses") => self.stalemate = StalemateRule::StalematedLoses,
            ("facing_pawns", "on") => self.facing_pawns = true,
            ("facing_pawns", "off") => self.facing_pawns = false,
            ("stalemate", _) => return Err(format!("stalemate={value}: expected wins or loses")),
            ("facing_pawns", _) => return Err(format!("facing_pawns={value}: expected on or off")),
            _ => {
                return Err(format!(
                    "unknown rule option '{name}' (options: stalemate, facing_pawns)"
                ));
            }
        }
        Ok(())
    }
}

/// The text of a piece: its letter (upper case for White), pawns with their direction.
pub fn piece_label(color: Color, role: ByzRole, up: bool) -> String {
    let letter = role.letter();
    let mut s = String::with_capacity(2);
    s.push(if color == Color::White {
        letter
    } else {
        letter.to_ascii_lowercase()
    });
    if role == ByzRole::Pawn {
        s.push(if up { '+' } else { '-' });
    }
    s
}

/// A cell of the ring board (`0..64`), or a citadel (`64..68`, Citadel variant only).
pub type Cell = u8;

/// The first citadel index (`e1`); `e2`..`e4` follow.
pub const CITADEL_BASE: Cell = 64;

/// A move: origin and destination cells (a citadel entry goes to `64..68`).
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct ByzMove {
    /// Origin cell.
    pub from: Cell,
    /// Destination cell or citadel.
    pub to: Cell,
}

/// The move in coordinate notation (what `move_to_uci` returns).
impl fmt::Display for ByzMove {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", cell_name(self.from), cell_name(self.to))
    }
}

impl fmt::Debug for ByzMove {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// `a1`…`d16`, or `e1`…`e4` for citadels.
pub fn cell_name(cell: Cell) -> String {
    if cell >= CITADEL_BASE {
        format!("e{}", cell - CITADEL_BASE + 1)
    } else {
        format!("{}{}", (b'a' + cell / 16) as char, cell % 16 + 1)
    }
}

/// Legal moves of one Byzantine position (the most a position can have is far below this).
pub type ByzMoveList = ArrayVec<ByzMove, 256>;

/// What the generator needs to test a move against its own king: the king's cell, the enemy's
/// cells and the occupied cells before the move.
struct KingCheck {
    king: usize,
    enemy: u64,
    occupied: u64,
}

/// Which of the two boards a [`Byzantine`] position is played on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ByzantineVariant {
    /// Byzantine chess (`byzantine`): kings on the inner ring, an empty centre.
    Plain,
    /// The Citadel variant (`byzantine-citadel`): kings on the outer ring and four citadel cells
    /// in the centre.
    Citadel,
}

/// A Byzantine (or Byzantine Citadel) position with its rule options.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct Byzantine {
    roles: [u64; 6],
    colors: [u64; 2],
    /// Pawns travelling towards higher cell numbers (`+`); other pawns travel `-`.
    pawn_up: u64,
    /// A king standing in a citadel (the game is then over).
    citadel_king: Option<(Color, Cell)>,
    citadel_variant: bool,
    rules: ByzantineRules,
    turn: Color,
    halfmoves: u32,
    fullmoves: u32,
    hash: u64,
}

impl fmt::Debug for Byzantine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Byzantine({})", self.to_text())
    }
}

/// The start position string of Byzantine chess.
pub const START: &str = "RP+4p-rrp+4P-R/NP+4p-nnp+4P-N/EP+4p-eep+4P-E/KP+4p-fkp+4P-F w 0 1";
/// The start position string of the Citadel variant.
pub const CITADEL_START: &str =
    "KP+4p-fkp+4P-F/EP+4p-eep+4P-E/NP+4p-nnp+4P-N/RP+4p-rrp+4P-R/4 w 0 1";

impl Byzantine {
    /// The start position of `board`'s variant under `rules`.
    pub fn start(board: ByzantineVariant, rules: ByzantineRules) -> Byzantine {
        let text = match board {
            ByzantineVariant::Plain => START,
            ByzantineVariant::Citadel => CITADEL_START,
        };
        Byzantine::from_text(text, board, rules).expect("start position is valid")
    }

    /// Which board this position is played on.
    pub fn board_variant(&self) -> ByzantineVariant {
        if self.citadel_variant {
            ByzantineVariant::Citadel
        } else {
            ByzantineVariant::Plain
        }
    }

    /// The variant: [`Variant::Byzantine`] or [`Variant::ByzantineCitadel`].
    pub fn variant(&self) -> Variant {
        if self.citadel_variant {
            Variant::ByzantineCitadel
        } else {
            Variant::Byzantine
        }
    }

    /// The rule options in force.
    pub fn rules(&self) -> ByzantineRules {
        self.rules
    }

    /// The piece on `cell`: colour, role and, for pawns, whether it travels `+`.
    pub fn piece_at(&self, cell: Cell) -> Option<(Color, ByzRole, bool)> {
        if cell >= CITADEL_BASE {
            return self
                .citadel_king
                .filter(|&(_, c)| c == cell)
                .map(|(color, _)| (color, ByzRole::King, false));
        }
        let bit = 1u64 << cell;
        let color = if self.colors[0] & bit != 0 {
            Color::White
        } else if self.colors[1] & bit != 0 {
            Color::Black
        } else {
            return None;
        };
        Some((color, self.role_on(bit), self.pawn_up & bit != 0))
    }

    /// The occupied cells of the 64 ring cells (a king in a citadel is not among them).
    pub fn occupied(&self) -> u64 {
        self.colors[0] | self.colors[1]
    }

    /// The ring cells holding `color`'s pieces.
    pub fn by_color(&self, color: Color) -> u64 {
        self.colors[color.index()]
    }

    /// The ring cells holding `color`'s pieces of `role`.
    pub fn pieces(&self, color: Color, role: ByzRole) -> u64 {
        self.colors[color.index()] & self.roles[role as usize]
    }

    /// Adds or removes a piece, keeping the hash.
    fn toggle(&mut self, color: Color, role: ByzRole, up: bool, cell: Cell) {
        let bit = 1u64 << cell;
        self.colors[color.index()] ^= bit;
        self.roles[role as usize] ^= bit;
        self.hash ^= KEYS.pieces[color.index()][role as usize][cell as usize];
        if role == ByzRole::Pawn && up {
            self.pawn_up ^= bit;
            self.hash ^= KEYS.pawn_up[cell as usize];
        }
    }

    /// The Zobrist hash computed from scratch (play keeps it incrementally).
    pub fn compute_hash(&self) -> u64 {
        let mut h = 0;
        for color in Color::ALL {
            for role in ByzRole::ALL {
                let mut bb = self.pieces(color, role);
                while bb != 0 {
                    let c = bb.trailing_zeros() as usize;
                    h ^= KEYS.pieces[color.index()][role as usize][c];
                    bb &= bb - 1;
                }
            }
        }
        let mut up = self.pawn_up;
        while up != 0 {
            h ^= KEYS.pawn_up[up.trailing_zeros() as usize];
            up &= up - 1;
        }
        if let Some((color, c)) = self.citadel_king {
            h ^= KEYS.citadel[color.index()][usize::from(c - CITADEL_BASE)];
        }
        if self.turn == Color::Black {
            h ^= KEYS.black;
        }
        h
    }

    /// Whether `color`'s king stands on the board and is attacked.
    pub fn king_attacked(&self, color: Color) -> bool {
        let king = self.pieces(color, ByzRole::King);
        if king == 0 {
            return false; // in a citadel: nothing attacks it
        }
        let them = !color;
        self.attacked_by(
            king.trailing_zeros() as usize,
            self.colors[them.index()],
            self.occupied(),
        )
    }

    /// Whether any of the pieces on `attackers` (cells of one colour) attacks `cell`, with
    /// `occupied` blocking the rooks. Callers pass the board as it will be after a move (a
    /// captured or removed piece left out of both sets), which is how legality is tested without
    /// playing the move.
    #[inline]
    fn attacked_by(&self, cell: usize, attackers: u64, occupied: u64) -> bool {
        let of = |role: ByzRole| self.roles[role as usize] & attackers;
        let pawns = of(ByzRole::Pawn);
        KNIGHT[cell] & of(ByzRole::Knight) != 0
            || ELEPHANT[cell] & of(ByzRole::Elephant) != 0
            || COUNSELOR[cell] & of(ByzRole::Counselor) != 0
            || KING[cell] & of(ByzRole::King) != 0
            // A `+` pawn attacks (ring ±1, n + 1): it stands at (ring ±1, n - 1) from the cell.
            || PAWN_CAPTURE[1][cell] & pawns & self.pawn_up != 0
            || PAWN_CAPTURE[0][cell] & pawns & !self.pawn_up != 0
            || rook_attacks(cell as Cell, occupied) & of(ByzRole::Rook) != 0
    }

    /// The `-` pawns that have an enemy `+` pawn just behind them: one pawn of each pair standing
    /// face to face (the other is one cell lower). A pawn has one next cell, so the pairs are
    /// disjoint.
    fn facing_heads(&self) -> u64 {
        let white = self.pieces(Color::White, ByzRole::Pawn);
        let black = self.pieces(Color::Black, ByzRole::Pawn);
        let up = self.pawn_up;
        ring_step_up(white & up) & black & !up | ring_step_up(black & up) & white & !up
    }

    /// The role of the piece on the ring cell `bit` (a single bit of an occupied cell).
    #[inline(always)]
    fn role_on(&self, bit: u64) -> ByzRole {
        let r = &self.roles;
        if r[ByzRole::Pawn as usize] & bit != 0 {
            ByzRole::Pawn
        } else if r[ByzRole::Knight as usize] & bit != 0 {
            ByzRole::Knight
        } else if r[ByzRole::Elephant as usize] & bit != 0 {
            ByzRole::Elephant
        } else if r[ByzRole::Rook as usize] & bit != 0 {
            ByzRole::Rook
        } else if r[ByzRole::Counselor as usize] & bit != 0 {
            ByzRole::Counselor
        } else {
            ByzRole::King
        }
    }

    /// `us`'s pieces that shield the king on `king` from an enemy rook: moving one off the line
    /// may expose the king. (Rooks are the only sliders; every other attack is a fixed leap.)
    fn pinned(&self, king: usize, us: Color, occupied: u64) -> u64 {
        let rooks = self.pieces(!us, ByzRole::Rook);
        if rook_attacks(king as Cell, 0) & rooks == 0 {
            return 0; // no enemy rook on the king's ring or column
        }
        let mut shields = rook_attacks(king as Cell, occupied) & self.colors[us.index()];
        let mut pinned = 0;
        while shields != 0 {
            let bit = shields & shields.wrapping_neg();
            shields ^= bit;
            if rook_attacks(king as Cell, occupied ^ bit) & rooks != 0 {
                pinned |= bit;
            }
        }
        pinned
    }

    /// Whether `color` has nothing but its king.
    pub fn is_bare(&self, color: Color) -> bool {
        self.colors[color.index()] & !self.roles[ByzRole::King as usize] == 0
    }

    /// Whether the game is decided before any move (a king in a citadel, or the side not to move
    /// bare): such a position has no legal moves.
    fn is_decided(&self) -> bool {
        self.citadel_king.is_some() || self.is_bare(!self.turn)
    }

    /// Targets of the piece on `from` ignoring check (captures included, own pieces excluded):
    /// for evaluation (mobility) as well as move generation.
    pub fn targets(&self, from: Cell, color: Color, role: ByzRole, up: bool) -> u64 {
        let f = from as usize;
        let own = self.colors[color.index()];
        let enemy = self.colors[(!color).index()];
        let dir = usize::from(!up);
        match role {
            ByzRole::Pawn => {
                (PAWN_STEP[dir][f] & !self.occupied()) | (PAWN_CAPTURE[dir][f] & enemy)
            }
            ByzRole::Knight => KNIGHT[f] & !own,
            ByzRole::Elephant => ELEPHANT[f] & !own,
            ByzRole::Counselor => COUNSELOR[f] & !own,
            ByzRole::King => KING[f] & !own,
            ByzRole::Rook => rook_attacks(from, self.occupied()) & !own,
        }
    }

    /// Moves that obey piece movement and king safety, regardless of a decided game.
    ///
    /// Legality without playing the move: with the king out of check, a move of a piece that
    /// shields no rook line to the king is legal unless it is a pawn move that removes a facing
    /// pair (the removal may open a line); every other move is tested by asking whether the king
    /// (or, for a king move, its destination) is attacked on the board as it will be, the
    /// captured and removed pieces left out. A position with no king on the ring or with a
    /// facing pair already on the board (only from text) falls back to playing each move.
    fn gen_natural(&self, moves: &mut ByzMoveList) {
        let us = self.turn;
        let king = self.pieces(us, ByzRole::King);
        let facing = self.rules.facing_pawns;
        // A facing pair already on the board is possible only in a position read from text
        // (play removes every such pair).
        if king == 0 || (facing && self.facing_heads() != 0) {
            return self.gen_natural_by_play(moves);
        }
        let k = king.trailing_zeros() as usize;
        let occupied = self.occupied();
        let own = self.colors[us.index()];
        let enemy = self.colors[(!us).index()];
        // In check every move is tested; otherwise only those of shielding pieces.
        let tested = if self.attacked_by(k, enemy, occupied) {
            !0
        } else {
            self.pinned(k, us, occupied)
        };
        let check = KingCheck {
            king: k,
            enemy,
            occupied,
        };
        // Pawns, `+` then `-`. A pawn landing face to face with an enemy pawn leaves the board
        // with it, which may open a line to the king: those moves are always tested.
        let own_pawns = self.pieces(us, ByzRole::Pawn);
        let enemy_pawns = enemy & self.roles[ByzRole::Pawn as usize];
        for up in [true, false] {
            let dir = usize::from(!up);
            let (mut pawns, facing_cells) = if up {
                let opposing = enemy_pawns & !self.pawn_up;
                (own_pawns & self.pawn_up, ring_step_down(opposing))
            } else {
                let opposing = enemy_pawns & self.pawn_up;
                (own_pawns & !self.pawn_up, ring_step_up(opposing))
            };
            let facing_cells = if facing { facing_cells } else { 0 };
            while pawns != 0 {
                let from_bit = pawns & pawns.wrapping_neg();
                pawns ^= from_bit;
                let f = from_bit.trailing_zeros() as usize;
                let mut targets = (PAWN_STEP[dir][f] & !occupied) | (PAWN_CAPTURE[dir][f] & enemy);
                if targets & facing_cells == 0 {
                    self.push_targets(&check, tested & from_bit != 0, from_bit, targets, moves);
                    continue;
                }
                while targets != 0 {
                    let to_bit = targets & targets.wrapping_neg();
                    targets ^= to_bit;
                    let to = to_bit.trailing_zeros() as usize;
                    let removed = if to_bit & facing_cells != 0 {
                        to_bit | PAWN_STEP[dir][to]
                    } else {
                        0
                    };
                    if (tested & from_bit == 0 && removed == 0)
                        || self.king_safe_after(&check, from_bit, to_bit, removed)
                    {
                        moves.push(ByzMove {
                            from: f as Cell,
                            to: to as Cell,
                        });
                    }
                }
            }
        }

        // Leapers and rooks.
        for (role, table) in [
            (ByzRole::Knight, &KNIGHT),
            (ByzRole::Elephant, &ELEPHANT),
            (ByzRole::Counselor, &COUNSELOR),
        ] {
            let mut pieces = self.pieces(us, role);
            while pieces != 0 {
                let from_bit = pieces & pieces.wrapping_neg();
                pieces ^= from_bit;
                let targets = table[from_bit.trailing_zeros() as usize] & !own;
                self.push_targets(&check, tested & from_bit != 0, from_bit, targets, moves);
            }
        }
        let mut rooks = self.pieces(us, ByzRole::Rook);
        while rooks != 0 {
            let from_bit = rooks & rooks.wrapping_neg();
            rooks ^= from_bit;
            let targets = rook_attacks(from_bit.trailing_zeros() as Cell, occupied) & !own;
            self.push_targets(&check, tested & from_bit != 0, from_bit, targets, moves);
        }

        // The king: its destination must not be attacked once it has left its cell (so a rook
        // checking along a line still covers the cells behind it).
        let mut targets = KING[k] & !own;
        while targets != 0 {
            let to_bit = targets & targets.wrapping_neg();
            targets ^= to_bit;
            let to = to_bit.trailing_zeros() as usize;
            if !self.attacked_by(to, enemy & !to_bit, (occupied ^ king) | to_bit) {
                moves.push(ByzMove {
                    from: k as Cell,
                    to: to as Cell,
                });
            }
        }
        self.push_citadel_entry(k as Cell, ByzRole::King, moves);
    }

    /// Whether the king stays safe once `from_bit` → `to_bit` is played and `removed` (a facing
    /// pair, or nothing) has left the board.
    #[inline(always)]
    fn king_safe_after(&self, check: &KingCheck, from_bit: u64, to_bit: u64, removed: u64) -> bool {
        let after = ((check.occupied ^ from_bit) | to_bit) & !removed;
        !self.attacked_by(check.king, check.enemy & !to_bit & !removed, after)
    }

    /// Pushes a move from `from_bit` to each of `targets`, testing each one when `test`.
    #[inline(always)]
    fn push_targets(
        &self,
        check: &KingCheck,
        test: bool,
        from_bit: u64,
        mut targets: u64,
        moves: &mut ByzMoveList,
    ) {
        let from = from_bit.trailing_zeros() as Cell;
        while targets != 0 {
            let to_bit = targets & targets.wrapping_neg();
            targets ^= to_bit;
            if !test || self.king_safe_after(check, from_bit, to_bit, 0) {
                moves.push(ByzMove {
                    from,
                    to: to_bit.trailing_zeros() as Cell,
                });
            }
        }
    }

    /// Citadel entry: a king step from an adjoining inner-ring cell into its far citadel; nothing
    /// attacks a citadel, so it is legal even out of check.
    #[inline]
    fn push_citadel_entry(&self, from: Cell, role: ByzRole, moves: &mut ByzMoveList) {
        let us = self.turn;
        if role == ByzRole::King
            && self.citadel_variant
            && citadel_neighbours(far_citadel(us)) & (1 << from) != 0
        {
            moves.push(ByzMove {
                from,
                to: far_citadel(us),
            });
        }
    }

    /// [`gen_natural`](Self::gen_natural) by playing each pseudo-legal move on a copy and testing
    /// the king: for the positions it does not cover, and as its reference in tests.
    fn gen_natural_by_play(&self, moves: &mut ByzMoveList) {
        let us = self.turn;
        let mut own = self.colors[us.index()];
        while own != 0 {
            let from = own.trailing_zeros() as Cell;
            own &= own - 1;
            let (_, role, up) = self.piece_at(from).expect("own piece");
            let mut targets = self.targets(from, us, role, up);
            while targets != 0 {
                let to = targets.trailing_zeros() as Cell;
                targets &= targets - 1;
                let m = ByzMove { from, to };
                let mut after = *self;
                after.play_unchecked(m);
                if !after.king_attacked(us) {
                    moves.push(m);
                }
            }
            self.push_citadel_entry(from, role, moves);
        }
    }

    /// Plays a move (pseudo-legal is enough: used to test king safety), including the removal
    /// of facing pawns.
    pub fn play_unchecked(&mut self, m: ByzMove) {
        let us = self.turn;
        let them = !us;
        let from_bit = 1u64 << m.from;
        assert!(
            self.colors[us.index()] & from_bit != 0,
            "a piece of the side to move on the origin cell"
        );
        let role = self.role_on(from_bit);
        let up = self.pawn_up & from_bit != 0;
        self.halfmoves = tick(self.halfmoves);
        if m.to >= CITADEL_BASE {
            self.toggle(us, ByzRole::King, false, m.from);
            self.citadel_king = Some((us, m.to));
            self.hash ^= KEYS.citadel[us.index()][usize::from(m.to - CITADEL_BASE)];
        } else {
            let to_bit = 1u64 << m.to;
            if self.colors[them.index()] & to_bit != 0 {
                let captured = self.role_on(to_bit);
                self.toggle(them, captured, self.pawn_up & to_bit != 0, m.to);
                self.halfmoves = 0;
            }
            self.toggle(us, role, up, m.from);
            self.toggle(us, role, up, m.to);
            if role == ByzRole::Pawn {
                self.halfmoves = 0;
                if self.rules.facing_pawns {
                    self.remove_facing_pawns();
                }
            }
        }
        self.turn = them;
        self.hash ^= KEYS.black;
        if us == Color::Black {
            self.fullmoves = tick(self.fullmoves);
        }
    }

    /// Removes every enemy pair of pawns standing face to face on a ring: a pawn whose next cell
    /// holds an enemy pawn travelling the other way (whose next cell is therefore the first
    /// pawn's). The pairs are found set-wise by [`facing_heads`](Self::facing_heads).
    fn remove_facing_pawns(&mut self) {
        let heads = self.facing_heads();
        if heads == 0 {
            return;
        }
        let white = self.pieces(Color::White, ByzRole::Pawn);
        let up = self.pawn_up;
        let mut gone = heads | ring_step_down(heads);
        while gone != 0 {
            let cell = gone.trailing_zeros() as Cell;
            gone &= gone - 1;
            let color = if white & (1 << cell) != 0 {
                Color::White
            } else {
                Color::Black
            };
            self.toggle(color, ByzRole::Pawn, up & (1 << cell) != 0, cell);
        }
    }

    /// Every legal move (none once the game is decided).
    pub fn legal_moves(&self) -> ByzMoveList {
        let mut moves = ByzMoveList::new();
        Position::legal_moves_into(self, &mut moves);
        moves
    }

    /// The ending, checked in this order: citadel entry, checkmate, stalemate, bare king.
    pub fn terminal(&self) -> Option<Outcome> {
        if self.citadel_king.is_some() {
            return Some(Outcome::draw(EndReason::CitadelEntry));
        }
        let mut natural = ByzMoveList::new();
        self.gen_natural(&mut natural);
        let us = self.turn;
        if natural.is_empty() {
            if self.king_attacked(us) {
                return Some(Outcome::win(!us, EndReason::Checkmate));
            }
            let winner = match self.rules.stalemate {
                StalemateRule::StalematedWins => us,
                StalemateRule::StalematedLoses => !us,
            };
            return Some(Outcome::win(winner, EndReason::Stalemate));
        }
        if self.is_bare(!us) {
            return Some(if self.is_bare(us) {
                Outcome::draw(EndReason::BareKing)
            } else {
                Outcome::win(us, EndReason::BareKing)
            });
        }
        None
    }

    /// Why `from`→`to` is not legal here.
    fn diagnose(&self, from: Cell, to: Cell) -> IllegalReason {
        let Some((color, role, up)) = self.piece_at(from) else {
            return IllegalReason::NoPiece {
                square: cell_name(from),
            };
        };
        if color != self.turn {
            return IllegalReason::WrongSide {
                square: cell_name(from),
            };
        }
        if self.is_decided() {
            return IllegalReason::GameOver;
        }
        if to >= CITADEL_BASE {
            return IllegalReason::CannotReach;
        }
        if self.targets(from, color, role, up) & (1 << to) != 0 {
            return IllegalReason::LeavesKingInCheck;
        }
        let f = from as usize;
        let geometry = match role {
            ByzRole::Rook => rook_attacks(from, 0),
            ByzRole::Pawn => PAWN_STEP[usize::from(!up)][f] | PAWN_CAPTURE[usize::from(!up)][f],
            ByzRole::Knight => KNIGHT[f],
            ByzRole::Elephant => ELEPHANT[f],
            ByzRole::Counselor => COUNSELOR[f],
            ByzRole::King => KING[f],
        };
        if geometry & (1 << to) != 0 {
            IllegalReason::Blocked
        } else {
            IllegalReason::CannotReach
        }
    }
}

impl Position for Byzantine {
    type Move = ByzMove;
    type MoveList = ByzMoveList;

    fn variant(&self) -> Variant {
        Byzantine::variant(self)
    }

    fn turn(&self) -> Color {
        self.turn
    }

    fn legal_moves_into(&self, moves: &mut ByzMoveList) {
        moves.clear();
        if !self.is_decided() {
            self.gen_natural(moves);
        }
    }

    fn is_capture(&self, m: ByzMove) -> bool {
        m.to < CITADEL_BASE && self.colors[(!self.turn).index()] & (1 << m.to) != 0
    }

    fn play_unchecked(&mut self, m: ByzMove) {
        Byzantine::play_unchecked(self, m);
    }

    fn is_check(&self) -> bool {
        self.king_attacked(self.turn)
    }

    fn zobrist(&self) -> u64 {
        self.hash
    }

    fn repetition_key(&self) -> u64 {
        self.hash
    }

    fn halfmove_clock(&self) -> u32 {
        self.halfmoves
    }

    fn fullmove_number(&self) -> u32 {
        self.fullmoves
    }

    fn null_move(&self) -> Option<Byzantine> {
        if self.is_check() || self.is_decided() {
            return None;
        }
        let mut p = *self;
        p.turn = !p.turn;
        p.hash ^= KEYS.black;
        p.halfmoves = tick(p.halfmoves);
        if self.turn == Color::Black {
            p.fullmoves = tick(p.fullmoves);
        }
        Some(p)
    }

    fn terminal(&self) -> Option<Outcome> {
        Byzantine::terminal(self)
    }

    fn draw_rules(&self) -> DrawRules {
        DrawRules {
            repetition: Some((3, 5)),
            move_rule_plies: None,
        }
    }

    /// A side with a bare king can neither mate nor bare the opponent; anything more might.
    fn can_possibly_mate(&self, color: Color) -> bool {
        !self.is_bare(color)
    }

    fn to_text(&self) -> String {
        text::write(self)
    }

    fn move_to_uci(&self, m: ByzMove) -> String {
        m.to_string()
    }

    /// Byzantine chess has only the coordinate notation (`d2d3`, `d10e3`).
    fn move_to_san(&self, m: ByzMove, _locale: Locale) -> String {
        m.to_string()
    }

    fn parse_move(
        &self,
        text: &str,
        _notation: Notation,
        _locale: Locale,
    ) -> Result<ByzMove, MoveError> {
        let text = text.trim();
        let (from, to) = text::parse_move(text).map_err(|r| MoveError::syntax(text, r))?;
        if (from >= CITADEL_BASE || to >= CITADEL_BASE) && !self.citadel_variant {
            return Err(MoveError::syntax(
                text,
                "citadel cells e1-e4 exist only in byzantine-citadel",
            ));
        }
        let m = ByzMove { from, to };
        if self.legal_moves().contains(&m) {
            Ok(m)
        } else {
            Err(MoveError::illegal(text, self.diagnose(from, to)))
        }
    }
}

#[cfg(test)]
mod tests;
