//! The bughouse match: two boards, four players in two teams, captures feeding the partner's
//! reserve (a promoted piece as a pawn), and the match ending with the first board that ends: a
//! mate, a resignation or a flag on either board decides it for the team; both teams' flags
//! falling at the same instant draw, and a draw by agreement needs both teams. The rules and the
//! formats (BFEN, BPGN) are stated in `docs/rules.md`.
//!
//! Team 1 is White on board A with Black on board B; team 2 is Black on A with White on B.
//! Partners sit on different boards and play opposite colours, so a piece captured by one
//! player (of the opponent's colour) is exactly the colour their partner plays with.
//!
//! A [`Match`] is a pure value: [`Match::play`] checks the mover, the board's ply (the version a
//! client believes is current, so retries and races are detected) and the move, and returns the
//! changes as [`MatchEvent`]s, or an error with the match unchanged. Storage (in-process or
//! Redis) and the service live outside the core.

mod bpgn;

pub use bpgn::{BpgnError, BpgnGame, BpgnMove, MAX_BPGN_GAMES, MAX_BPGN_MOVES, read_bpgn};

use crate::chess;
use crate::crazyhouse::Crazyhouse;
use crate::crazyhouse::HouseRules;
use crate::outcome::{EndReason, Outcome, Score};
use crate::position::{Locale, MoveError, Notation, Position};
use crate::position_text::PositionTextError;
use crate::types::{Color, Role};
use std::fmt;

/// One of the two boards.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BoardId {
    /// Board A.
    A,
    /// Board B.
    B,
}

impl BoardId {
    /// Both boards, A first.
    pub const BOTH: [BoardId; 2] = [BoardId::A, BoardId::B];

    /// 0 for A, 1 for B.
    pub const fn index(self) -> usize {
        match self {
            BoardId::A => 0,
            BoardId::B => 1,
        }
    }

    /// The other board.
    pub const fn other(self) -> BoardId {
        match self {
            BoardId::A => BoardId::B,
            BoardId::B => BoardId::A,
        }
    }

    /// `A` or `B`.
    pub const fn letter(self) -> char {
        match self {
            BoardId::A => 'A',
            BoardId::B => 'B',
        }
    }
}

impl fmt::Display for BoardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.letter())
    }
}

/// A player's place: a board and a colour.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Seat {
    /// The board.
    pub board: BoardId,
    /// The colour played there.
    pub color: Color,
}

impl Seat {
    /// The four seats: White A, Black A, White B, Black B.
    pub const ALL: [Seat; 4] = [
        Seat::new(BoardId::A, Color::White),
        Seat::new(BoardId::A, Color::Black),
        Seat::new(BoardId::B, Color::White),
        Seat::new(BoardId::B, Color::Black),
    ];

    /// A seat.
    pub const fn new(board: BoardId, color: Color) -> Seat {
        Seat { board, color }
    }

    /// The partner: the other board, the other colour.
    pub const fn partner(self) -> Seat {
        Seat::new(self.board.other(), self.color.other())
    }

    /// Team 1 (White A, Black B) or team 2 (Black A, White B).
    pub const fn team(self) -> Team {
        match (self.board, self.color) {
            (BoardId::A, Color::White) | (BoardId::B, Color::Black) => Team::One,
            _ => Team::Two,
        }
    }
}

/// One of the two teams.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Team {
    /// White on A and Black on B.
    One,
    /// Black on A and White on B.
    Two,
}

/// How a match ended: the score from team 1's point of view, the board that decided it, and why.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct MatchOutcome {
    /// Team 1's score as "white" and team 2's as "black" (`1-0`: team 1 won).
    pub score: Score,
    /// The board whose ending ended the match (`None` for a match-wide draw by agreement).
    pub board: Option<BoardId>,
    /// Why.
    pub reason: EndReason,
}

impl MatchOutcome {
    /// The match outcome for a board's outcome (board B's colours are team 2's White).
    pub fn from_board(board: BoardId, outcome: Outcome) -> MatchOutcome {
        let team1_color = Seat::new(board, Color::White).team();
        let score = match team1_color {
            Team::One => outcome.score,
            Team::Two => Score::quarters_to(Color::White, outcome.score.quarters(Color::Black))
                .expect("0 to 4 quarters"),
        };
        MatchOutcome {
            score,
            board: Some(board),
            reason: outcome.reason,
        }
    }

    /// The winning team, if any.
    pub fn winner(&self) -> Option<Team> {
        self.score.winner().map(|c| match c {
            Color::White => Team::One,
            Color::Black => Team::Two,
        })
    }
}

/// Something that happened in a match, in order (what watchers are sent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MatchEvent {
    /// A move was played on a board.
    Move {
        /// The board.
        board: BoardId,
        /// The board's ply after the move (1 for the first move).
        ply: u32,
        /// The move in UCI (`e2e4`, `N@f3`).
        uci: String,
        /// The move in SAN.
        san: String,
        /// The board's FEN after the move.
        fen: String,
    },
    /// A reserve changed (a drop took a piece, or a capture on the other board sent one).
    Reserve {
        /// The board whose player holds the reserve.
        board: BoardId,
        /// The colour of the player (and of the pieces).
        color: Color,
        /// The reserve now, in FEN letters (`QRBNP` upper case for White).
        pieces: String,
    },
    /// The match ended.
    End(MatchOutcome),
}

/// A move as a match played it, with its effects beyond the board's placement: what left the
/// mover's reserve and what went to the partner's. A store applies these as deltas, so a
/// concurrent move on the other board (which can only add to this board's reserves) is never
/// overwritten.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Played {
    /// Who moved (and so on which board).
    pub seat: Seat,
    /// The board's ply after the move (1 for the first move).
    pub ply: u32,
    /// The move in UCI (`e2e4`, `N@f3`).
    pub uci: String,
    /// The move in SAN.
    pub san: String,
    /// The board's FEN after the move, with the reserves as this match held them.
    pub fen: String,
    /// The piece a drop took from the mover's reserve.
    pub dropped: Option<Role>,
    /// A capture's unit (a promoted piece counts as a pawn) and the partner's seat it went to.
    pub sent: Option<(Seat, Role)>,
    /// The match outcome, when the move ended the match.
    pub outcome: Option<MatchOutcome>,
}

/// A match action was refused; the match is unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MatchError {
    /// The match has already ended.
    MatchOver,
    /// It is not this seat's turn on its board.
    NotYourTurn {
        /// The seat that tried to move.
        seat: Seat,
    },
    /// The client's ply for the board is not the current one (a stale or repeated request).
    StalePly {
        /// The board.
        board: BoardId,
        /// The ply the client sent.
        expected: u32,
        /// The board's real ply.
        actual: u32,
    },
    /// The move cannot be read or is not legal.
    Move(MoveError),
    /// The capture would overflow the partner's reserve (only in a match set up from a BFEN
    /// with more pieces than a real match has).
    ReserveFull,
}

impl fmt::Display for MatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatchError::MatchOver => f.write_str("the match is over"),
            MatchError::NotYourTurn { seat } => {
                write!(f, "it is not {}'s turn on board {}", seat.color, seat.board)
            }
            MatchError::StalePly {
                board,
                expected,
                actual,
            } => write!(
                f,
                "board {board} is at ply {actual}, the request expected ply {expected}"
            ),
            MatchError::Move(e) => e.fmt(f),
            MatchError::ReserveFull => f.write_str("the partner's reserve cannot hold more"),
        }
    }
}

impl std::error::Error for MatchError {}

/// The total units in a match: 32 pieces per board (a promoted piece counts as its pawn).
pub const UNITS: u32 = 64;

/// What happens to a well-formed move that is illegal on its board.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum IllegalMoveRule {
    /// Refused, and the player moves again (online play; the default).
    #[default]
    Refused,
    /// The player's team loses the match (over-the-board bughouse).
    Loses,
}

/// A bughouse match's rule options (`name=value`): `illegal_move=refused|loses` and
/// `repetition=off|threefold`. The defaults are online play's: an illegal move is refused, and a
/// board has no repetition rule.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct BughouseRules {
    /// What an illegal move does.
    pub illegal_move: IllegalMoveRule,
    /// Whether a player may claim a draw when a board's position occurs for the third time
    /// (the placement, side to move, castling rights and en passant square; reserves and
    /// promotion marks do not count). The claim draws the match.
    pub threefold: bool,
}

impl BughouseRules {
    /// Applies one `name=value` option.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        match (name, value) {
            ("illegal_move", "refused") => self.illegal_move = IllegalMoveRule::Refused,
            ("illegal_move", "loses") => self.illegal_move = IllegalMoveRule::Loses,
            ("repetition", "off") => self.threefold = false,
            ("repetition", "threefold") => self.threefold = true,
            ("illegal_move", _) => {
                return Err(format!("illegal_move={value}: expected refused or loses"));
            }
            ("repetition", _) => {
                return Err(format!("repetition={value}: expected off or threefold"));
            }
            _ => {
                return Err(format!(
                    "unknown rule option '{name}' (options: illegal_move, repetition)"
                ));
            }
        }
        Ok(())
    }

    /// The options that differ from the defaults, as `name=value` pairs in a fixed order.
    pub fn options(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if self.illegal_move == IllegalMoveRule::Loses {
            out.push(("illegal_move".to_owned(), "loses".to_owned()));
        }
        if self.threefold {
            out.push(("repetition".to_owned(), "threefold".to_owned()));
        }
        out
    }
}

/// A bughouse match: two boards with their reserves, the ply of each board, and the outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Match {
    boards: [Crazyhouse; 2],
    plies: [u32; 2],
    outcome: Option<MatchOutcome>,
}

impl Default for Match {
    fn default() -> Match {
        Match::new()
    }
}

impl Match {
    /// Both boards at the start position, reserves empty.
    pub fn new() -> Match {
        Match {
            boards: [
                Crazyhouse::new(HouseRules::Bughouse),
                Crazyhouse::new(HouseRules::Bughouse),
            ],
            plies: [0, 0],
            outcome: None,
        }
    }

    /// A match from a BFEN (`FEN_A | FEN_B`, each with its reserves). Plies start at 0.
    pub fn from_bfen(bfen: &str) -> Result<Match, PositionTextError> {
        let (a, b) = bfen
            .split_once('|')
            .ok_or_else(|| PositionTextError::Syntax {
                field: "bfen",
                message: "expected two board FENs separated by '|'".to_owned(),
            })?;
        let m = Match {
            boards: [
                Crazyhouse::from_fen(a.trim(), HouseRules::Bughouse)?,
                Crazyhouse::from_fen(b.trim(), HouseRules::Bughouse)?,
            ],
            plies: [0, 0],
            outcome: None,
        };
        Ok(m)
    }

    /// A match from stored parts: both boards (with their reserves), the plies played on each,
    /// and the outcome if it has ended (for stores that keep a match between requests).
    pub fn restore(
        boards: [Crazyhouse; 2],
        plies: [u32; 2],
        outcome: Option<MatchOutcome>,
    ) -> Match {
        Match {
            boards,
            plies,
            outcome,
        }
    }

    /// The BFEN: `FEN_A | FEN_B`.
    pub fn to_bfen(&self) -> String {
        format!("{} | {}", self.boards[0].to_fen(), self.boards[1].to_fen())
    }

    /// A board.
    pub fn board(&self, board: BoardId) -> &Crazyhouse {
        &self.boards[board.index()]
    }

    /// Moves played on a board so far (the version clients send back).
    pub fn ply(&self, board: BoardId) -> u32 {
        self.plies[board.index()]
    }

    /// The reserve of a seat.
    pub fn reserve(&self, seat: Seat) -> String {
        self.board(seat.board).reserves().letters(seat.color)
    }

    /// The outcome, once the match has ended.
    pub fn outcome(&self) -> Option<MatchOutcome> {
        self.outcome
    }

    /// Units on both boards and in all four reserves (always [`UNITS`] for a match from the
    /// start; checked by the tests after every step).
    pub fn units(&self) -> u32 {
        self.boards
            .iter()
            .map(|b| {
                b.chess().board().occupied().count()
                    + b.reserves().total(Color::White)
                    + b.reserves().total(Color::Black)
            })
            .sum()
    }

    /// Plays `text` for `seat` if the board is at `expected_ply`; returns the events in order.
    /// On any error the match is unchanged.
    pub fn play(
        &mut self,
        seat: Seat,
        text: &str,
        expected_ply: u32,
        locale: Locale,
    ) -> Result<Vec<MatchEvent>, MatchError> {
        let m = self.check(seat, text, expected_ply, locale)?;
        let played = self.play_checked(seat, m, locale);
        Ok(self.events_of(&played))
    }

    /// The move `text` would be for `seat` if its board is at `expected_ply`, without playing
    /// it (for callers that need the move itself before committing it elsewhere).
    pub fn check(
        &self,
        seat: Seat,
        text: &str,
        expected_ply: u32,
        locale: Locale,
    ) -> Result<chess::Move, MatchError> {
        if self.outcome.is_some() {
            return Err(MatchError::MatchOver);
        }
        let i = seat.board.index();
        if self.plies[i] != expected_ply {
            return Err(MatchError::StalePly {
                board: seat.board,
                expected: expected_ply,
                actual: self.plies[i],
            });
        }
        let pos = &self.boards[i];
        if pos.turn() != seat.color {
            return Err(MatchError::NotYourTurn { seat });
        }
        let m = pos
            .parse_move(text, Notation::Auto, locale)
            .map_err(MatchError::Move)?;
        if let Some(role) = pos.captured_unit(m) {
            let partner = seat.partner();
            let held = self
                .board(partner.board)
                .reserves()
                .count(partner.color, role);
            if held >= crate::crazyhouse::MAX_IN_RESERVE {
                return Err(MatchError::ReserveFull);
            }
        }
        Ok(m)
    }

    /// Plays a move that [`Match::check`] accepted for `seat` on this unchanged match, and
    /// returns what it did, reserve effects included (what a store commits).
    pub fn play_checked(&mut self, seat: Seat, m: chess::Move, locale: Locale) -> Played {
        let i = seat.board.index();
        let pos = self.boards[i];
        let san = pos.move_to_san(m, locale);
        let captured = pos.captured_unit(m);
        self.boards[i].play_unchecked(m);
        self.plies[i] += 1;
        let dropped = match m.kind() {
            chess::MoveKind::Drop(role) => Some(role),
            _ => None,
        };
        let sent = captured.map(|role| {
            // The captured piece has the opponent's colour, which is the partner's colour;
            // `check` made sure the reserve has room.
            let partner = seat.partner();
            self.boards[partner.board.index()]
                .add_to_reserve(partner.color, role)
                .expect("checked before the move");
            (partner, role)
        });
        let outcome = self.boards[i].terminal().map(|o| {
            let o = MatchOutcome::from_board(seat.board, o);
            self.outcome = Some(o);
            o
        });
        Played {
            seat,
            ply: self.plies[i],
            uci: pos.move_to_uci(m),
            san,
            fen: self.boards[i].to_fen(),
            dropped,
            sent,
            outcome,
        }
    }

    /// The events of a move this match has just played, in order: the move, the mover's reserve
    /// after a drop, the partner's reserve after a capture, the end.
    pub fn events_of(&self, played: &Played) -> Vec<MatchEvent> {
        let seat = played.seat;
        let mut events = Vec::with_capacity(4);
        events.push(MatchEvent::Move {
            board: seat.board,
            ply: played.ply,
            uci: played.uci.clone(),
            san: played.san.clone(),
            fen: played.fen.clone(),
        });
        if played.dropped.is_some() {
            events.push(MatchEvent::Reserve {
                board: seat.board,
                color: seat.color,
                pieces: self.reserve(seat),
            });
        }
        if let Some((partner, _)) = played.sent {
            events.push(MatchEvent::Reserve {
                board: partner.board,
                color: partner.color,
                pieces: self.reserve(partner),
            });
        }
        if let Some(o) = played.outcome {
            events.push(MatchEvent::End(o));
        }
        events
    }

    /// Ends the match by a player's resignation: their team loses.
    pub fn resign(&mut self, seat: Seat) -> Result<MatchOutcome, MatchError> {
        self.end(
            seat.board,
            Outcome::win(!seat.color, EndReason::Resignation),
        )
    }

    /// Ends the match by a player's flag fall: their team loses (material may still arrive, so
    /// thin material never saves it).
    pub fn flag_fall(&mut self, seat: Seat) -> Result<MatchOutcome, MatchError> {
        self.end(seat.board, Outcome::win(!seat.color, EndReason::Timeout))
    }

    /// Ends the match drawn by agreement of both teams.
    pub fn agree_draw(&mut self) -> Result<MatchOutcome, MatchError> {
        if self.outcome.is_some() {
            return Err(MatchError::MatchOver);
        }
        let o = MatchOutcome {
            score: Score::DRAW,
            board: None,
            reason: EndReason::Agreement,
        };
        self.outcome = Some(o);
        Ok(o)
    }

    fn end(&mut self, board: BoardId, outcome: Outcome) -> Result<MatchOutcome, MatchError> {
        if self.outcome.is_some() {
            return Err(MatchError::MatchOver);
        }
        let o = MatchOutcome::from_board(board, outcome);
        self.outcome = Some(o);
        Ok(o)
    }
}

#[cfg(test)]
mod tests;
