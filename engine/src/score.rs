//! Search scores: centipawns from the side to move, with mate (and other forced wins) encoded
//! near the ends of the range, and how a finished game scores.

use arbiter_core::{Color, Outcome};

/// Larger than any score.
pub const INFINITE: i32 = 32_000;
/// A win on the board now (checkmate given, or any other full-point ending); a win found `n`
/// plies from the root scores `MATE - n`.
pub const MATE: i32 = 31_000;
/// The deepest ply a search reaches (extensions included).
pub const MAX_PLY: usize = 128;
/// Scores at least this large (in absolute value) are forced wins or losses.
pub const MATE_BOUND: i32 = MATE - MAX_PLY as i32;
/// What a ¾–¼ ending (the Glinski stalemate) is worth to the side with ¾: the evaluation at
/// which the win probability model of [`win_chance`] gives 75%, rounded. A sure quarter-point
/// advantage is thus preferred to a draw and to a small edge, but not to a large one.
pub const QUARTER_POINT: i32 = 300;

/// The score, for the side to move at `ply` plies from the root, of a game that ended with
/// `outcome` in the position where `to_move` is to move.
pub fn outcome_score(outcome: &Outcome, to_move: Color, ply: usize) -> i32 {
    let ply = ply as i32;
    match outcome.score.quarters(to_move) {
        4 => MATE - ply,
        3 => QUARTER_POINT,
        2 => 0,
        1 => -QUARTER_POINT,
        _ => -(MATE - ply),
    }
}

/// Whether `score` is a forced win or loss.
pub fn is_mate(score: i32) -> bool {
    score.abs() >= MATE_BOUND
}

/// A score as UCI prints it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Reported {
    /// Centipawns from the side to move.
    Cp(i32),
    /// A forced win in this many moves (negative: the side to move is lost in that many).
    Mate(i32),
}

impl Reported {
    /// The reported form of a search score.
    pub fn of(score: i32) -> Reported {
        let score = score.clamp(-MATE, MATE);
        if score >= MATE_BOUND {
            Reported::Mate((MATE - score + 1) / 2)
        } else if score <= -MATE_BOUND {
            Reported::Mate(-((MATE + score) / 2))
        } else {
            Reported::Cp(score)
        }
    }
}

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reported::Cp(cp) => write!(f, "cp {cp}"),
            Reported::Mate(n) => write!(f, "mate {n}"),
        }
    }
}

/// The winning chance (0 to 1) of the side with an evaluation of `cp`, on the logistic curve
/// lichess uses for its accuracy figures.
pub fn win_chance(cp: i32) -> f64 {
    let cp = f64::from(cp.clamp(-1000, 1000));
    1.0 / (1.0 + (-0.003_682_08 * cp).exp())
}

/// A score stored in the transposition table: mate scores relative to the node, not the root.
pub(crate) fn to_tt(score: i32, ply: usize) -> i32 {
    if score >= MATE_BOUND {
        score + ply as i32
    } else if score <= -MATE_BOUND {
        score - ply as i32
    } else {
        score
    }
}

/// A score read from the transposition table at `ply`.
/// A mate that would fall out of the mate range at a deep ply stays a mate, at the bound.
pub(crate) fn from_tt(score: i32, ply: usize) -> i32 {
    if score >= MATE_BOUND {
        (score - ply as i32).max(MATE_BOUND)
    } else if score <= -MATE_BOUND {
        (score + ply as i32).min(-MATE_BOUND)
    } else {
        score
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbiter_core::{EndReason, Score};

    #[test]
    fn mates_report_in_moves() {
        assert_eq!(Reported::of(MATE - 1), Reported::Mate(1));
        assert_eq!(Reported::of(MATE - 3), Reported::Mate(2));
        assert_eq!(Reported::of(-(MATE - 2)), Reported::Mate(-1));
        assert_eq!(Reported::of(-MATE), Reported::Mate(0));
        assert_eq!(Reported::of(35), Reported::Cp(35));
        assert_eq!(Reported::of(MATE - 5).to_string(), "mate 3");
        // Out of range never turns into a mate for the other side.
        assert_eq!(Reported::of(-31_999), Reported::Mate(0));
        assert_eq!(Reported::of(INFINITE), Reported::Mate(0));
    }

    #[test]
    fn outcomes_score_from_the_side_to_move() {
        let mated = Outcome::win(Color::White, EndReason::Checkmate);
        assert_eq!(outcome_score(&mated, Color::Black, 3), -(MATE - 3));
        assert_eq!(outcome_score(&mated, Color::White, 3), MATE - 3);
        let glinski = Outcome {
            score: Score::quarters_to(Color::White, 3).unwrap(),
            reason: EndReason::Stalemate,
        };
        assert_eq!(outcome_score(&glinski, Color::Black, 1), -QUARTER_POINT);
        assert_eq!(
            outcome_score(&Outcome::draw(EndReason::Stalemate), Color::White, 1),
            0
        );
        assert!((win_chance(QUARTER_POINT) - 0.75).abs() < 0.01);
    }

    #[test]
    fn table_scores_round_trip() {
        for s in [MATE - 4, -(MATE - 7), 120, -3] {
            assert_eq!(from_tt(to_tt(s, 9), 9), s);
        }
        // A stored mate read deep in the tree stays a mate.
        assert!(is_mate(from_tt(MATE_BOUND + 2, 60)));
        assert!(is_mate(from_tt(-(MATE_BOUND + 2), 60)));
    }
}
