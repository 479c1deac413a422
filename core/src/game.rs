//! A game: a start position, the moves played, and every way it can end.
//!
//! The position alone decides checkmate, stalemate and dead positions
//! ([`Position::terminal`]); the history adds repetition and the move-count rules
//! ([`Position::draw_rules`]): claimable at the lower threshold (threefold, fifty moves),
//! automatic at the higher (fivefold, seventy-five moves). Players end games by resignation,
//! agreement, a claim, or a flag fall.
//!
//! [`GameState`] is a game as it stands: the position, the repetition keys since the last
//! irreversible move, and an ending the players declared. It is all the rules need to judge the
//! next move or claim, and small enough to store between requests (a hosted game keeps it in
//! its record). [`Game`] adds the start position and the moves, for replays and PGN.
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

/// A game as it stands: the current position, the repetition history since the last
/// irreversible move, and any ending the players declared (resignation, agreement, claim, flag).
///
/// Repetition keys ([`Position::repetition_key`]) are stable across processes and builds of the
/// same variant (pinned by tests), so a stored history stays valid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameState<P: Position> {
    position: P,
    /// Repetition key of each position since the last irreversible move; the current one last.
    keys: Vec<u64>,
    /// An ending decided by the players.
    declared: Option<Outcome>,
}

impl<P: Position> GameState<P> {
    /// A game starting (or taken up without history) at `position`.
    pub fn new(position: P) -> GameState<P> {
        let key = position.repetition_key();
        GameState {
            position,
            keys: vec![key],
            declared: None,
        }
    }

    /// A game taken up from stored parts: the position, the repetition keys of the positions
    /// since the last irreversible move in order (the key of `position` itself may be left out;
    /// it is added when missing), and the declared ending if any.
    pub fn resume(position: P, mut history: Vec<u64>, declared: Option<Outcome>) -> GameState<P> {
        let key = position.repetition_key();
        if history.last() != Some(&key) {
            history.push(key);
        }
        GameState {
            position,
            keys: history,
            declared,
        }
    }

    /// The current position.
    pub fn position(&self) -> &P {
        &self.position
    }

    /// The repetition keys since the last irreversible move, the current position's last (what
    /// [`GameState::resume`] takes back).
    pub fn history(&self) -> &[u64] {
        &self.keys
    }

    /// The ending the players declared, if any (see [`GameState::outcome`] for every ending).
    pub fn declared(&self) -> Option<Outcome> {
        self.declared
    }

    /// Reads a move in `notation` and checks it, without playing it. In a game that is over the
    /// answer is [`GameError::GameOver`], whatever the text; a text that is not a legal move
    /// otherwise gets the position's [`MoveError`].
    pub fn check_text(
        &self,
        text: &str,
        notation: Notation,
        locale: Locale,
    ) -> Result<P::Move, GameError> {
        if let Some(o) = self.outcome() {
            return Err(GameError::GameOver(o));
        }
        Ok(self.position.parse_move(text, notation, locale)?)
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

    /// Plays a move that [`GameState::check_text`] accepted on this unchanged state.
    pub fn play_checked(&mut self, m: P::Move) {
        self.push(m);
    }

    /// Reads a move in `notation` and plays it; returns the move.
    pub fn play_text(
        &mut self,
        text: &str,
        notation: Notation,
        locale: Locale,
    ) -> Result<P::Move, GameError> {
        let m = self.check_text(text, notation, locale)?;
        self.push(m);
        Ok(m)
    }

    /// Records a move known to be legal in a game that is not over.
    fn push(&mut self, m: P::Move) {
        self.position.play_unchecked(m);
        if self.position.halfmove_clock() == 0 {
            // An irreversible move: no earlier position can occur again.
            self.keys.clear();
        }
        self.keys.push(self.position.repetition_key());
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

    /// The draws either player may claim right now (none once the game is over).
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

    /// One line for people: the result and reason (`1-0 checkmate`), or `ongoing`, with the
    /// draws that can be claimed (`ongoing; claimable: threefold-repetition`).
    pub fn summary(&self) -> String {
        if let Some(o) = self.outcome() {
            return o.to_string();
        }
        let claims = self.claimable_draws();
        if claims.is_empty() {
            return "ongoing".to_owned();
        }
        let names: Vec<&str> = claims.iter().map(|c| c.name()).collect();
        format!("ongoing; claimable: {}", names.join(", "))
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

/// A position with its history: the start, the moves, and the [`GameState`] they lead to.
#[derive(Clone, Debug)]
pub struct Game<P: Position> {
    start: P,
    moves: Vec<P::Move>,
    state: GameState<P>,
}

impl<P: Position> Game<P> {
    /// A game starting at `start`.
    pub fn new(start: P) -> Game<P> {
        Game {
            state: GameState::new(start.clone()),
            start,
            moves: Vec::new(),
        }
    }

    /// The start position.
    pub fn start(&self) -> &P {
        &self.start
    }

    /// The current position.
    pub fn position(&self) -> &P {
        self.state.position()
    }

    /// The game as it stands (what the rules judge the next move by).
    pub fn state(&self) -> &GameState<P> {
        &self.state
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
        self.state.play(m)?;
        self.moves.push(m);
        Ok(())
    }

    /// Reads a move in `notation` and plays it; returns the move.
    pub fn play_text(
        &mut self,
        text: &str,
        notation: Notation,
        locale: Locale,
    ) -> Result<P::Move, GameError> {
        let m = self.state.play_text(text, notation, locale)?;
        self.moves.push(m);
        Ok(m)
    }

    /// How often the current position has occurred (1 the first time).
    pub fn repetition_count(&self) -> u32 {
        self.state.repetition_count()
    }

    /// The ending the rules impose by themselves, if any.
    pub fn automatic_outcome(&self) -> Option<Outcome> {
        self.state.automatic_outcome()
    }

    /// The result: a declared ending or an automatic one.
    pub fn outcome(&self) -> Option<Outcome> {
        self.state.outcome()
    }

    /// The draws either player may claim right now.
    pub fn claimable_draws(&self) -> Vec<DrawClaim> {
        self.state.claimable_draws()
    }

    /// One line for people: see [`GameState::summary`].
    pub fn summary(&self) -> String {
        self.state.summary()
    }

    /// Ends the game with a claimed draw, if the claim is valid now.
    pub fn claim_draw(&mut self, claim: DrawClaim) -> Result<Outcome, GameError> {
        self.state.claim_draw(claim)
    }

    /// `color` resigns.
    pub fn resign(&mut self, color: Color) -> Result<Outcome, GameError> {
        self.state.resign(color)
    }

    /// The players agree a draw.
    pub fn agree_draw(&mut self) -> Result<Outcome, GameError> {
        self.state.agree_draw()
    }

    /// `color`'s flag fell: a loss, unless the opponent cannot possibly mate (a draw).
    pub fn flag_fall(&mut self, color: Color) -> Result<Outcome, GameError> {
        self.state.flag_fall(color)
    }

    /// Records an ending decided elsewhere (e.g. a PGN result tag), if the game is not over.
    pub fn declare_result(
        &mut self,
        score: Score,
        reason: EndReason,
    ) -> Result<Outcome, GameError> {
        self.state.declare_result(score, reason)
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

#[cfg(test)]
mod state_tests {
    use super::*;
    use crate::chess::Chess;
    use crate::{AnyPosition, Variant};

    fn play_all<P: Position>(s: &mut GameState<P>, moves: &str) {
        for m in moves.split_whitespace() {
            s.play_text(m, Notation::Auto, Locale::English)
                .unwrap_or_else(|e| panic!("{m}: {e}"));
        }
    }

    #[test]
    fn a_resumed_state_judges_like_the_original() {
        let mut g = GameState::new(Chess::new());
        play_all(&mut g, "e4 e5 Nf3 Nc6 Ng1 Nb8 Nf3 Nc6 Ng1 Nb8");
        assert_eq!(g.claimable_draws(), vec![DrawClaim::ThreefoldRepetition]);
        // Only the positions since the last pawn move are kept.
        assert_eq!(g.history().len(), 9);
        let resumed = GameState::resume(*g.position(), g.history().to_vec(), None);
        assert_eq!(resumed, g);
        // The current key may be left out of the stored history.
        let mut short = g.history().to_vec();
        short.pop();
        assert_eq!(GameState::resume(*g.position(), short, None), g);
        let mut r = resumed;
        play_all(&mut r, "Nf3 Nc6 Ng1 Nb8");
        assert_eq!(r.outcome(), None);
        play_all(&mut r, "Nf3 Nc6 Ng1 Nb8");
        assert_eq!(
            r.outcome(),
            Some(Outcome::draw(EndReason::FivefoldRepetition))
        );
        assert_eq!(r.summary(), "1/2-1/2 fivefold-repetition");
    }

    #[test]
    fn a_finished_game_refuses_every_move_as_game_over() {
        let mut g = GameState::new(Chess::new());
        play_all(&mut g, "f3 e5 g4 Qh4#");
        for text in ["e4", "Ke2", "zz"] {
            assert!(
                matches!(
                    g.check_text(text, Notation::Auto, Locale::English),
                    Err(GameError::GameOver(_))
                ),
                "{text}"
            );
        }
        // A dead position ends the game although moves exist.
        let dead = GameState::new(Chess::from_fen("8/8/4k3/8/8/3K4/8/8 w - - 0 1").unwrap());
        assert!(matches!(
            dead.check_text("Ke2", Notation::Auto, Locale::English),
            Err(GameError::GameOver(_))
        ));
        // A declared ending too.
        let mut resigned = GameState::new(Chess::new());
        resigned.resign(Color::Black).unwrap();
        let back = GameState::resume(*resigned.position(), vec![], resigned.declared());
        assert_eq!(
            back.outcome(),
            Some(Outcome::win(Color::White, EndReason::Resignation))
        );
        assert_eq!(back.summary(), "1-0 resignation");
    }

    /// Stored hosted games keep repetition keys, so the keys must not change between builds.
    /// A change here needs a migration of stored histories (or clearing them).
    #[test]
    fn repetition_keys_are_stable() {
        let keys: Vec<(Variant, u64)> = Variant::ALL
            .into_iter()
            .map(|v| (v, AnyPosition::start(v).unwrap().repetition_key()))
            .collect();
        let expected: Vec<(Variant, u64)> = vec![
            (Variant::Chess, 0x8351_7133_94a4_ddd5),
            // Empty reserves add nothing: the crazyhouse start shares chess's key.
            (Variant::Crazyhouse, 0x8351_7133_94a4_ddd5),
            (Variant::Bughouse, 0x8351_7133_94a4_ddd5),
            (Variant::Glinski, 15_921_280_074_988_302_477),
            (Variant::Byzantine, 8_833_276_265_196_659_556),
            (Variant::ByzantineCitadel, 14_557_679_208_456_325_988),
            // Chess960's default start is the classical arrangement: the same key as chess.
            (Variant::Chess960, 0x8351_7133_94a4_ddd5),
        ];
        assert_eq!(keys, expected, "{keys:#x?}");
    }
}
