//! How games end: fractional scores, the reason, and the draws a player may claim.

use crate::types::Color;
use std::fmt;
use std::str::FromStr;

/// The points each side gets, in quarters of a point, so that the Glinski stalemate (¾–¼) is
/// exact. White's share is stored; black gets the rest of the one point.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Score {
    white_quarters: u8,
}

impl Score {
    /// 1–0.
    pub const WHITE_WINS: Score = Score { white_quarters: 4 };
    /// 0–1.
    pub const BLACK_WINS: Score = Score { white_quarters: 0 };
    /// ½–½.
    pub const DRAW: Score = Score { white_quarters: 2 };

    /// A score giving white `white_quarters` quarters (0 to 4).
    pub const fn from_white_quarters(white_quarters: u8) -> Option<Score> {
        if white_quarters <= 4 {
            Some(Score { white_quarters })
        } else {
            None
        }
    }

    /// The full point to `winner`.
    pub const fn win(winner: Color) -> Score {
        match winner {
            Color::White => Score::WHITE_WINS,
            Color::Black => Score::BLACK_WINS,
        }
    }

    /// `quarters` to `color`, the rest to the opponent.
    pub const fn quarters_to(color: Color, quarters: u8) -> Option<Score> {
        if quarters > 4 {
            return None;
        }
        Some(match color {
            Color::White => Score {
                white_quarters: quarters,
            },
            Color::Black => Score {
                white_quarters: 4 - quarters,
            },
        })
    }

    /// Quarters of a point scored by `color`.
    pub const fn quarters(self, color: Color) -> u8 {
        match color {
            Color::White => self.white_quarters,
            Color::Black => 4 - self.white_quarters,
        }
    }

    /// Points scored by `color` (0, 0.25, 0.5, 0.75 or 1), for ratings.
    pub fn points(self, color: Color) -> f64 {
        f64::from(self.quarters(color)) / 4.0
    }

    /// The side with the whole point, if any.
    pub const fn winner(self) -> Option<Color> {
        match self.white_quarters {
            4 => Some(Color::White),
            0 => Some(Color::Black),
            _ => None,
        }
    }
}

fn quarter_text(q: u8) -> &'static str {
    match q {
        0 => "0",
        1 => "1/4",
        2 => "1/2",
        3 => "3/4",
        _ => "1",
    }
}

impl fmt::Display for Score {
    /// PGN-style: `1-0`, `0-1`, `1/2-1/2`, `3/4-1/4`, `1/4-3/4`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-{}",
            quarter_text(self.white_quarters),
            quarter_text(4 - self.white_quarters)
        )
    }
}

/// The text is not a score such as `1-0` or `3/4-1/4`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScoreParseError(pub String);

impl fmt::Display for ScoreParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid score '{}' (expected 1-0, 0-1, 1/2-1/2, 3/4-1/4 or 1/4-3/4)",
            self.0
        )
    }
}

impl std::error::Error for ScoreParseError {}

impl FromStr for Score {
    type Err = ScoreParseError;
    fn from_str(s: &str) -> Result<Score, ScoreParseError> {
        let q = |t: &str| match t {
            "0" => Some(0),
            "1/4" | "¼" => Some(1),
            "1/2" | "½" => Some(2),
            "3/4" | "¾" => Some(3),
            "1" => Some(4),
            _ => None,
        };
        let (w, b) = s
            .split_once('-')
            .ok_or_else(|| ScoreParseError(s.to_owned()))?;
        match (q(w), q(b)) {
            (Some(w), Some(b)) if w + b == 4 => Ok(Score { white_quarters: w }),
            _ => Err(ScoreParseError(s.to_owned())),
        }
    }
}

/// Why a game ended. Names from [`EndReason::name`] are stable (kebab-case).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum EndReason {
    /// The side to move is checkmated.
    Checkmate,
    /// The side to move has no legal move and is not in check.
    Stalemate,
    /// No sequence of legal moves can end in mate (e.g. K v K): an automatic draw.
    DeadPosition,
    /// The same position for the fifth time: an automatic draw.
    FivefoldRepetition,
    /// 75 moves by each side without capture or pawn move: an automatic draw.
    SeventyFiveMoveRule,
    /// Threefold repetition, claimed by a player.
    ThreefoldRepetition,
    /// Fifty-move rule, claimed by a player.
    FiftyMoveRule,
    /// The players agreed a draw.
    Agreement,
    /// A player resigned.
    Resignation,
    /// A flag fell and the opponent could still mate.
    Timeout,
    /// A flag fell but the opponent cannot possibly mate by any series of legal moves: a draw.
    TimeoutVsInsufficientMaterial,
    /// Byzantine: a side was reduced to a bare king (a loss), or both were (a draw).
    BareKing,
    /// Byzantine Citadel: a king entered its far citadel (a draw).
    CitadelEntry,
    /// The game was called off with no result: a side did not make its first move in time, or a
    /// player aborted it before both sides had moved. The score that goes with it is meaningless
    /// (stored as ½–½); nothing is rated.
    Aborted,
    /// A player made a well-formed move that is illegal on the board, in a bughouse match
    /// created with the `illegal_move=loses` rule option: the player's team lost.
    IllegalMove,
}

impl EndReason {
    /// Every reason, in declaration order.
    pub const ALL: [EndReason; 15] = [
        EndReason::Checkmate,
        EndReason::Stalemate,
        EndReason::DeadPosition,
        EndReason::FivefoldRepetition,
        EndReason::SeventyFiveMoveRule,
        EndReason::ThreefoldRepetition,
        EndReason::FiftyMoveRule,
        EndReason::Agreement,
        EndReason::Resignation,
        EndReason::Timeout,
        EndReason::TimeoutVsInsufficientMaterial,
        EndReason::BareKing,
        EndReason::CitadelEntry,
        EndReason::Aborted,
        EndReason::IllegalMove,
    ];

    /// The reason with this stable name.
    pub fn from_name(name: &str) -> Option<EndReason> {
        EndReason::ALL.into_iter().find(|r| r.name() == name)
    }

    /// Stable kebab-case name, e.g. `checkmate`, `dead-position`, `fifty-move-rule`.
    pub const fn name(self) -> &'static str {
        match self {
            EndReason::Checkmate => "checkmate",
            EndReason::Stalemate => "stalemate",
            EndReason::DeadPosition => "dead-position",
            EndReason::FivefoldRepetition => "fivefold-repetition",
            EndReason::SeventyFiveMoveRule => "seventy-five-move-rule",
            EndReason::ThreefoldRepetition => "threefold-repetition",
            EndReason::FiftyMoveRule => "fifty-move-rule",
            EndReason::Agreement => "agreement",
            EndReason::Resignation => "resignation",
            EndReason::Timeout => "timeout",
            EndReason::TimeoutVsInsufficientMaterial => "timeout-vs-insufficient-material",
            EndReason::BareKing => "bare-king",
            EndReason::CitadelEntry => "citadel-entry",
            EndReason::Aborted => "aborted",
            EndReason::IllegalMove => "illegal-move",
        }
    }

    /// Whether the rules ended the game by themselves (no player action or claim needed).
    pub const fn is_automatic(self) -> bool {
        matches!(
            self,
            EndReason::Checkmate
                | EndReason::Stalemate
                | EndReason::DeadPosition
                | EndReason::FivefoldRepetition
                | EndReason::SeventyFiveMoveRule
                | EndReason::BareKing
                | EndReason::CitadelEntry
        )
    }
}

impl fmt::Display for EndReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A finished game: the score and why.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Outcome {
    /// Points to each side.
    pub score: Score,
    /// What ended the game.
    pub reason: EndReason,
}

impl Outcome {
    /// A decisive outcome.
    pub const fn win(winner: Color, reason: EndReason) -> Outcome {
        Outcome {
            score: Score::win(winner),
            reason,
        }
    }

    /// A drawn outcome (½–½).
    pub const fn draw(reason: EndReason) -> Outcome {
        Outcome {
            score: Score::DRAW,
            reason,
        }
    }
}

impl fmt::Display for Outcome {
    /// `1-0 checkmate`, `1/2-1/2 stalemate`, `3/4-1/4 stalemate`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.score, self.reason)
    }
}

/// A draw a player may claim (the game goes on until someone does).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DrawClaim {
    /// The current position has occurred three times.
    ThreefoldRepetition,
    /// Fifty moves by each side without capture or pawn move.
    FiftyMoveRule,
}

impl DrawClaim {
    /// Stable kebab-case name.
    pub const fn name(self) -> &'static str {
        match self {
            DrawClaim::ThreefoldRepetition => "threefold-repetition",
            DrawClaim::FiftyMoveRule => "fifty-move-rule",
        }
    }

    /// The reason recorded when the claim is made.
    pub const fn reason(self) -> EndReason {
        match self {
            DrawClaim::ThreefoldRepetition => EndReason::ThreefoldRepetition,
            DrawClaim::FiftyMoveRule => EndReason::FiftyMoveRule,
        }
    }
}

impl fmt::Display for DrawClaim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_print_and_parse() {
        for (text, q) in [
            ("1-0", 4),
            ("0-1", 0),
            ("1/2-1/2", 2),
            ("3/4-1/4", 3),
            ("1/4-3/4", 1),
        ] {
            let s: Score = text.parse().unwrap();
            assert_eq!(s.quarters(Color::White), q);
            assert_eq!(s.to_string(), text);
        }
        assert!("1-1".parse::<Score>().is_err());
        assert!("*".parse::<Score>().is_err());
        assert_eq!(
            Score::quarters_to(Color::Black, 3).unwrap().to_string(),
            "1/4-3/4"
        );
        assert_eq!(Score::DRAW.points(Color::Black), 0.5);
    }
}
