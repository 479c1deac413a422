//! A game: a start position, the moves played, and every way it can end.
//!
//! The position alone decides checkmate, stalemate and dead positions
//! ([`Position::terminal`]); the history adds repetition and the move-count rules
//! ([`Position::draw_rules`]): claimable at the lower threshold (threefold, fifty moves),
//! automatic at the higher (fivefold, seventy-five moves). Players end games by resignation,
//! agreement, a claim, or a flag fall.

use crate::outcome::{DrawClaim, EndReason, Outcome, Score};
use crate::position::{IllegalReason, Locale, MoveError, Notation, Position};
use crate::types::Color;
use std::fmt;

/// A game action was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GameError {
    /// The game has already ended.
    GameOver(Outcome),
    /// The move cannot be read or is not legal.
    Move(MoveError),
    /// The draw cannot be claimed now.
    NotClaimable(DrawClaim),
}

impl fmt::Display for GameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GameError::GameOver(o) => write!(f, "the game is over ({o})"),
            GameError::Move(e) => e.fmt(f),
            GameError::NotClaimable(c) => write!(f, "a {c} draw cannot be claimed now"),
        }
    }
}

impl std::error::Error for GameError {}

impl From<MoveError> for GameError {
    fn from(e: MoveError) -> Self {
        GameError::Move(e)
    }
}

/// A position with its history.
#[derive(Clone, Debug)]
pub struct Game<P: Position> {
    start: P,
    position: P,
    moves: Vec<P::Move>,
    /// Repetition key of the position before the first move and after each move.
    keys: Vec<u64>,
    /// An ending decided by the players (resignation, agreement, claim, flag).
    declared: Option<Outcome>,
}

impl<P: Position> Game<P> {
    /// A game starting at `start`.
    pub fn new(start: P) -> Game<P> {
        let key = start.repetition_key();
        Game {
            position: start.clone(),
            start,
            moves: Vec::new(),
            keys: vec![key],
            declared: None,
        }
    }

    /// The start position.
    pub fn start(&self) -> &P {
        &self.start
    }

    /// The current position.
    pub fn position(&self) -> &P {
        &self.position
    }

    /// The moves played so far.
    pub fn moves(&self) -> &[P::Move] {
        &self.moves
    }

    /// Plies played.
    pub fn ply(&self) -> usize {
        self.moves.len()
    }

    /// Plays a move, refusing it if the game is over or the move is illegal.
    pub fn play(&mut self, m: P::Move) -> Result<(), GameError> {
        if let Some(o) = self.outcome() {
            return Err(GameError::GameOver(o));
        }
        if !self.position.is_legal(m) {
            let text = self.position.move_to_uci(m);
            return Err(GameError::Move(MoveError::Illegal {
                input: text,
                reason: IllegalReason::NoMatchingMove,
            }));
        }
        self.push(m);
        Ok(())
    }

    /// Records a move already known to be legal in a game that is not over.
    fn push(&mut self, m: P::Move) {
        self.position.play_unchecked(m);
        self.moves.push(m);
        self.keys.push(self.position.repetition_key());
    }

    /// Reads a move in `notation` and plays it; returns the move.
    pub fn play_text(
        &mut self,
        text: &str,
        notation: Notation,
        locale: Locale,
    ) -> Result<P::Move, GameError> {
        if let Some(o) = self.outcome() {
            return Err(GameError::GameOver(o));
        }
        // `parse_move` only returns legal moves and the game is not over: no second check.
        let m = self.position.parse_move(text, notation, locale)?;
        self.push(m);
        Ok(m)
    }

    /// How often the current position has occurred (1 the first time), counting only positions
    /// since the last irreversible move with the same side to move.
    pub fn repetition_count(&self) -> u32 {
        let current = *self.keys.last().expect("never empty");
        let window = (self.position.halfmove_clock() as usize).min(self.keys.len() - 1);
        let first = self.keys.len() - 1 - window;
        self.keys[first..]
            .iter()
            .rev()
            .step_by(2)
            .filter(|&&k| k == current)
            .count() as u32
    }

    /// The ending the rules impose by themselves, if any (mate, stalemate, dead position,
    /// fivefold repetition, 75-move rule, variant rules).
    pub fn automatic_outcome(&self) -> Option<Outcome> {
        if let Some(o) = self.position.terminal() {
            return Some(o);
        }
        let rules = self.position.draw_rules();
        if let Some((_, automatic)) = rules.repetition
            && self.repetition_count() >= automatic
        {
            return Some(Outcome::draw(EndReason::FivefoldRepetition));
        }
        if let Some((_, automatic)) = rules.move_rule_plies
            && self.position.halfmove_clock() >= automatic
        {
            return Some(Outcome::draw(EndReason::SeventyFiveMoveRule));
        }
        None
    }

    /// The result: a declared ending (resignation, agreement, claim, flag) or an automatic one.
    pub fn outcome(&self) -> Option<Outcome> {
        self.declared.or_else(|| self.automatic_outcome())
    }

    /// The draws the side to move (or either player, per the Laws) may claim right now.
    pub fn claimable_draws(&self) -> Vec<DrawClaim> {
        if self.outcome().is_some() {
            return Vec::new();
        }
        let rules = self.position.draw_rules();
        let mut claims = Vec::new();
        if rules
            .repetition
            .is_some_and(|(claim, _)| self.repetition_count() >= claim)
        {
            claims.push(DrawClaim::ThreefoldRepetition);
        }
        if rules
            .move_rule_plies
            .is_some_and(|(claim, _)| self.position.halfmove_clock() >= claim)
        {
            claims.push(DrawClaim::FiftyMoveRule);
        }
        claims
    }

    fn declare(&mut self, outcome: Outcome) -> Result<Outcome, GameError> {
        if let Some(o) = self.outcome() {
            return Err(GameError::GameOver(o));
        }
        self.declared = Some(outcome);
        Ok(outcome)
    }

    /// Ends the game with a claimed draw, if the claim is valid now.
    pub fn claim_draw(&mut self, claim: DrawClaim) -> Result<Outcome, GameError> {
        if let Some(o) = self.outcome() {
            return Err(GameError::GameOver(o));
        }
        if !self.claimable_draws().contains(&claim) {
            return Err(GameError::NotClaimable(claim));
        }
        self.declare(Outcome::draw(claim.reason()))
    }

    /// `color` resigns.
    pub fn resign(&mut self, color: Color) -> Result<Outcome, GameError> {
        self.declare(Outcome::win(!color, EndReason::Resignation))
    }

    /// The players agree a draw.
    pub fn agree_draw(&mut self) -> Result<Outcome, GameError> {
        self.declare(Outcome::draw(EndReason::Agreement))
    }

    /// `color`'s flag fell: a loss, unless the opponent cannot possibly mate (a draw).
    pub fn flag_fall(&mut self, color: Color) -> Result<Outcome, GameError> {
        let outcome = if self.position.can_possibly_mate(!color) {
            Outcome::win(!color, EndReason::Timeout)
        } else {
            Outcome::draw(EndReason::TimeoutVsInsufficientMaterial)
        };
        self.declare(outcome)
    }

    /// Records an ending decided elsewhere (e.g. a PGN result tag), if the game is not over.
    pub fn declare_result(
        &mut self,
        score: Score,
        reason: EndReason,
    ) -> Result<Outcome, GameError> {
        self.declare(Outcome { score, reason })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::Chess;

    fn game_from(fen: &str) -> Game<Chess> {
        Game::new(Chess::from_fen(fen).unwrap())
    }

    fn play_all(g: &mut Game<Chess>, moves: &str) {
        for m in moves.split_whitespace() {
            g.play_text(m, Notation::Auto, Locale::English)
                .unwrap_or_else(|e| panic!("{m}: {e}"));
        }
    }

    #[test]
    fn checkmate_and_stalemate() {
        let mut g = Game::new(Chess::new());
        play_all(&mut g, "f3 e5 g4 Qh4#");
        assert_eq!(
            g.outcome(),
            Some(Outcome::win(Color::Black, EndReason::Checkmate))
        );
        assert!(matches!(
            g.play_text("e4", Notation::San, Locale::English),
            Err(GameError::GameOver(_))
        ));
        let g = game_from("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1");
        assert_eq!(g.outcome(), Some(Outcome::draw(EndReason::Stalemate)));
    }

    #[test]
    fn dead_positions() {
        for fen in [
            "8/8/4k3/8/8/3K4/8/8 w - - 0 1",
            "8/8/4k3/8/8/3KB3/8/8 w - - 0 1",
            "8/8/4k3/8/8/3KN3/8/8 w - - 0 1",
            "8/8/4kb2/8/8/3KB3/8/8 w - - 0 1",
        ] {
            assert_eq!(
                game_from(fen).outcome(),
                Some(Outcome::draw(EndReason::DeadPosition)),
                "{fen}"
            );
        }
        for fen in [
            "8/8/4k1b1/8/8/3KB3/8/8 w - - 0 1", // opposite-coloured bishops
            "8/8/4kn2/8/8/3KN3/8/8 w - - 0 1",
            "8/8/4k3/8/8/3KNN2/8/8 w - - 0 1",
            "8/8/4k3/8/8/3K4/7p/8 w - - 0 1",
        ] {
            assert_eq!(game_from(fen).outcome(), None, "{fen}");
        }
    }

    #[test]
    fn repetition_claim_then_automatic() {
        let mut g = Game::new(Chess::new());
        let cycle = "Nf3 Nf6 Ng1 Ng8";
        play_all(&mut g, cycle);
        assert_eq!(g.repetition_count(), 2);
        assert!(g.claimable_draws().is_empty());
        play_all(&mut g, cycle);
        assert_eq!(g.claimable_draws(), vec![DrawClaim::ThreefoldRepetition]);
        assert_eq!(g.outcome(), None);
        play_all(&mut g, cycle);
        play_all(&mut g, cycle);
        assert_eq!(
            g.outcome(),
            Some(Outcome::draw(EndReason::FivefoldRepetition))
        );
    }

    #[test]
    fn claim_threefold() {
        let mut g = Game::new(Chess::new());
        assert_eq!(
            g.claim_draw(DrawClaim::ThreefoldRepetition),
            Err(GameError::NotClaimable(DrawClaim::ThreefoldRepetition))
        );
        play_all(&mut g, "Nf3 Nf6 Ng1 Ng8 Nf3 Nf6 Ng1 Ng8");
        assert_eq!(
            g.claim_draw(DrawClaim::ThreefoldRepetition).unwrap(),
            Outcome::draw(EndReason::ThreefoldRepetition)
        );
    }

    #[test]
    fn ep_right_counts_for_repetition_only_when_legal() {
        // After 1.e4 the e3 square is not capturable: the position after the knights dance back
        // is the same as directly after 1.e4.
        let mut g = Game::new(Chess::new());
        play_all(&mut g, "e4 Nf6 Nf3 Ng8 Ng1 Nf6 Nf3 Ng8 Ng1");
        assert_eq!(g.repetition_count(), 3);
        // Here black's d4 pawn can take on e3 after e2-e4, so the first occurrence differs.
        let mut g = game_from("4k3/8/8/8/3p4/8/4P3/4K1N1 w - - 0 1");
        play_all(&mut g, "e4 Kd7 Nf3 Ke8 Ng1 Kd7 Nf3 Ke8 Ng1");
        assert_eq!(g.repetition_count(), 2);
    }

    #[test]
    fn move_rules() {
        let g = game_from("4k3/8/8/8/8/8/8/R3K3 w - - 100 80");
        assert_eq!(g.claimable_draws(), vec![DrawClaim::FiftyMoveRule]);
        let g = game_from("4k3/8/8/8/8/8/8/R3K3 w - - 150 100");
        assert_eq!(
            g.outcome(),
            Some(Outcome::draw(EndReason::SeventyFiveMoveRule))
        );
        // Checkmate on the move that reaches 150 plies still wins.
        let g = game_from("R3k3/8/4K3/8/8/8/8/8 b - - 150 100");
        assert_eq!(g.outcome().unwrap().reason, EndReason::Checkmate);
    }

    #[test]
    fn flag_fall() {
        let mut g = game_from("4k3/8/8/8/8/8/8/R3K3 w - - 0 1");
        assert_eq!(
            g.flag_fall(Color::Black).unwrap(),
            Outcome::win(Color::White, EndReason::Timeout)
        );
        let mut g = game_from("4k3/8/8/8/8/8/8/R3K3 w - - 0 1");
        assert_eq!(
            g.flag_fall(Color::White).unwrap(),
            Outcome::draw(EndReason::TimeoutVsInsufficientMaterial)
        );
        // A lone knight can mate when the defender has a piece to block its own king.
        let mut g = game_from("4k3/4p3/8/8/8/8/8/1N2K3 w - - 0 1");
        assert_eq!(
            g.flag_fall(Color::Black).unwrap().reason,
            EndReason::Timeout
        );
        // A lone bishop against pawns can mate too (the pawns may block their king).
        let mut g = game_from("4k3/8/8/8/8/8/PP6/K1b5 w - - 0 1");
        assert_eq!(
            g.flag_fall(Color::White).unwrap().reason,
            EndReason::Timeout
        );
    }

    #[test]
    fn resign_and_agree() {
        let mut g = Game::new(Chess::new());
        assert_eq!(g.resign(Color::White).unwrap().score, Score::BLACK_WINS);
        assert!(g.agree_draw().is_err());
        let mut g = Game::new(Chess::new());
        assert_eq!(g.agree_draw().unwrap().reason, EndReason::Agreement);
    }
}
