//! PGN for every variant: lenient reading of many games per text (tags, comments, NAGs and
//! `!?`-style annotations, nested variations, null moves, `%` escape lines, results), validation
//! by replaying every move (variations too) through [`AnyPosition`], and strict export (Seven
//! Tag Roster first, strict SAN, lines of at most 80 characters).
//!
//! `[Variant]` selects the rules; `[FEN]` (with or without `[SetUp "1"]`) the start position.
//!
//! # Moves
//!
//! Moves are read in SAN (English or Italian letters, with the lenient forms the variants
//! accept); a move that does not read as SAN is tried as UCI (`g1f3`, `e7e8q`, `e1c1`), so whole
//! games written in coordinates validate. Either way they are written back in strict SAN.
//!
//! # Null moves
//!
//! Analysis lines pass the turn with a null move, written `--` (also read: `Z0`, `0000`,
//! `@@@@`). A null move is a [`PgnNode`] whose `san` is [`NULL_MOVE`] (`--`): the reader stores
//! every spelling as `--`, and `--` is what the writer prints. Validation replays it with
//! [`Position::null_move`]: a null move while in check (or after the game has ended) is an
//! illegal move naming its ply. In a variation the replay continues from the position with the
//! turn passed (repetitions are counted afresh from there). On the main line
//! [`PgnGame::validate`] refuses it ([`PgnGameError::NullMoveOnMainLine`]), because the main
//! line it returns is a [`Game`], whose moves are real moves; [`PgnGame::normalise`] does the
//! same checks and rewriting without building a [`Game`], and accepts null moves everywhere.
//!
//! # Variations
//!
//! The tree of variations is stored flat, so that no operation (reading, validation, writing,
//! `Clone`, `PartialEq`, `Drop`) recurses on the nesting depth of hostile input: every variation
//! line of a game, at any depth, is an entry of [`PgnGame::variations`] (in the order its `(`
//! appears in the text), and a move lists the alternatives to it in [`PgnNode::variations`] as
//! indices into that list.
//!
//! # Limits
//!
//! [`read_games_with`] stops as soon as the text exceeds one of its [`PgnLimits`] (number of
//! games, plies of a line, variations, nesting depth), with a [`PgnSyntaxError`] naming the limit
//! ([`PgnSyntaxError::limit`]) and the line; [`read_games`] applies [`PgnLimits::default`].

use crate::PositionTextError;
use crate::any::{AnyMove, AnyPosition};
use crate::game::{Game, GameError};
use crate::position::{IllegalReason, Locale, MoveError, Notation, Position};
use crate::variant::Variant;
use std::fmt;

mod read;
mod write;

pub use read::{read_games, read_games_each, read_games_with};

/// How a null move is written (and stored in [`PgnNode::san`]).
pub const NULL_MOVE: &str = "--";

/// Whether `text` is one of the spellings of a null move: `--`, `Z0`, `0000`, `@@@@`.
pub fn is_null_move(text: &str) -> bool {
    matches!(text, "--" | "Z0" | "0000" | "@@@@")
}

/// One move of a movetext with what is attached to it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PgnNode {
    /// The move as written (SAN or UCI; normalised to strict SAN by [`PgnGame::validate`]), or
    /// [`NULL_MOVE`] for a null move.
    pub san: String,
    /// Numeric annotation glyphs (`$1`, or `!` read as 1, `?` as 2, `!!` 3, `??` 4, `!?` 5,
    /// `?!` 6).
    pub nags: Vec<u8>,
    /// Comments after the move.
    pub comments: Vec<String>,
    /// Alternatives to this move, each a line starting from the position before it, as indices
    /// into [`PgnGame::variations`].
    pub variations: Vec<usize>,
}

impl PgnNode {
    /// Whether the node is a null move (any spelling, see [`is_null_move`]).
    pub fn is_null_move(&self) -> bool {
        is_null_move(&self.san)
    }
}

/// One game of a PGN text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PgnGame {
    /// Tag pairs in the order read.
    pub tags: Vec<(String, String)>,
    /// A comment before the first move.
    pub intro_comments: Vec<String>,
    /// The main line.
    pub moves: Vec<PgnNode>,
    /// Every variation line of the game, whatever its depth, in the order read; moves refer to
    /// them by index ([`PgnNode::variations`]). Each is referred to by one move at most: a
    /// variation no move refers to is ignored, and an index out of range or used twice is an
    /// error for [`PgnGame::validate`] and skipped by the writer.
    pub variations: Vec<Vec<PgnNode>>,
    /// The termination marker (`1-0`, `0-1`, `1/2-1/2`, `*`, or a fractional score such as
    /// `3/4-1/4` for variants that have them).
    pub result: String,
}

/// Bounds on what [`read_games_with`] accepts, checked while reading (the reader stops at the
/// first token beyond a limit).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct PgnLimits {
    /// Most games in one text.
    pub max_games: usize,
    /// Most plies of the main line of a game. A variation may not reach beyond this ply either
    /// (counting from the start of the game), which bounds the work of validating it.
    pub max_plies_per_game: usize,
    /// Most variations in the whole text (all games and depths together).
    pub max_variations: usize,
    /// Deepest nesting of variations (1: variations, but none inside a variation; 0: none).
    pub max_depth: usize,
}

impl Default for PgnLimits {
    /// 10,000 games; 2,048 plies (the rules service's default `max_moves`); 10,000 variations;
    /// nesting depth 64 (far beyond annotated games, which rarely nest more than a few levels).
    fn default() -> PgnLimits {
        PgnLimits {
            max_games: 10_000,
            max_plies_per_game: 2048,
            max_variations: 10_000,
            max_depth: 64,
        }
    }
}

/// Which of the [`PgnLimits`] a text exceeded.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum PgnLimit {
    /// [`PgnLimits::max_games`].
    Games,
    /// [`PgnLimits::max_plies_per_game`].
    PliesPerGame,
    /// [`PgnLimits::max_variations`].
    Variations,
    /// [`PgnLimits::max_depth`].
    Depth,
}

impl PgnLimit {
    /// The name of the limit's field in [`PgnLimits`] (`max_games`, …).
    pub fn name(self) -> &'static str {
        match self {
            PgnLimit::Games => "max_games",
            PgnLimit::PliesPerGame => "max_plies_per_game",
            PgnLimit::Variations => "max_variations",
            PgnLimit::Depth => "max_depth",
        }
    }
}

impl fmt::Display for PgnLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The PGN text cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgnSyntaxError {
    /// The game (1-based) where reading failed.
    pub game: usize,
    /// The line (1-based).
    pub line: usize,
    /// What is wrong.
    pub message: String,
    /// The limit exceeded, when that is why reading stopped (the text may be fine otherwise).
    pub limit: Option<PgnLimit>,
}

impl fmt::Display for PgnSyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "game {}, line {}: {}",
            self.game, self.line, self.message
        )
    }
}

impl std::error::Error for PgnSyntaxError {}

/// A game reads as PGN but does not replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PgnGameError {
    /// The `[Variant]` tag names no known variant.
    UnknownVariant(String),
    /// The `[FEN]` tag (or the variant) is not usable.
    Position(PositionTextError),
    /// A move is unreadable or illegal (a null move while in check is illegal). `ply` counts
    /// from 1 on the line it stands on; `variation_depth` is 0 on the main line.
    Move {
        /// Ply number (1 = first move of the line).
        ply: usize,
        /// Nesting depth: 0 for the main line.
        variation_depth: usize,
        /// Why the move was refused.
        error: MoveError,
    },
    /// [`PgnGame::validate`] met a null move on the main line, which a [`Game`] cannot hold
    /// ([`PgnGame::normalise`] accepts it).
    NullMoveOnMainLine {
        /// Ply number on the main line (1 = first move).
        ply: usize,
    },
    /// A move refers to a variation that does not exist or that another move already refers
    /// to (only possible in a game built by hand, not in one read from text).
    BadVariation {
        /// The index into [`PgnGame::variations`].
        index: usize,
    },
}

impl fmt::Display for PgnGameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PgnGameError::UnknownVariant(v) => write!(f, "unknown [Variant \"{v}\"]"),
            PgnGameError::Position(e) => write!(f, "[FEN]: {e}"),
            PgnGameError::Move {
                ply,
                variation_depth: 0,
                error,
            } => write!(f, "ply {ply}: {error}"),
            PgnGameError::Move {
                ply,
                variation_depth,
                error,
            } => write!(
                f,
                "ply {ply} of a variation (depth {variation_depth}): {error}"
            ),
            PgnGameError::NullMoveOnMainLine { ply } => write!(
                f,
                "ply {ply}: a null move on the main line cannot be replayed as a game (null \
                 moves are accepted in variations)"
            ),
            PgnGameError::BadVariation { index } => write!(
                f,
                "a move refers to variation {index}, which does not exist or is already used"
            ),
        }
    }
}

impl std::error::Error for PgnGameError {}

fn tag_value<'t>(tags: &'t [(String, String)], name: &str) -> Option<&'t str> {
    tags.iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

impl PgnGame {
    /// The value of tag `name`.
    pub fn tag(&self, name: &str) -> Option<&str> {
        tag_value(&self.tags, name)
    }

    /// Sets (or adds) a tag.
    pub fn set_tag(&mut self, name: &str, value: impl Into<String>) {
        let value = value.into();
        match self.tags.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => self.tags.push((name.to_owned(), value)),
        }
    }

    /// The variant named by `[Variant]` (standard chess when absent).
    pub fn variant(&self) -> Result<Variant, PgnGameError> {
        match self.tag("Variant") {
            None => Ok(Variant::Chess),
            Some(v) => {
                Variant::from_pgn_name(v).ok_or_else(|| PgnGameError::UnknownVariant(v.to_owned()))
            }
        }
    }

    /// The start position: `[FEN]` if present, else the variant's start.
    pub fn start_position(&self) -> Result<AnyPosition, PgnGameError> {
        AnyPosition::from_optional_text(self.variant()?, self.tag("FEN"))
            .map_err(PgnGameError::Position)
    }

    /// Replays every move (variations included), rewriting each to strict SAN in
    /// `write_locale`, and returns the main line as a [`Game`]. Null moves are accepted in
    /// variations only (see the [module documentation](self)).
    pub fn validate(
        &mut self,
        read_locale: Locale,
        write_locale: Locale,
    ) -> Result<Game<AnyPosition>, PgnGameError> {
        self.replay(read_locale, write_locale, false)
    }

    /// [`validate`](Self::validate) for callers that need only the checked, normalised record:
    /// the same checks and rewriting, but a null move is accepted on the main line too (no
    /// [`Game`] is built from it).
    pub fn normalise(
        &mut self,
        read_locale: Locale,
        write_locale: Locale,
    ) -> Result<(), PgnGameError> {
        self.replay(read_locale, write_locale, true).map(drop)
    }

    /// Replays the tree depth first with an explicit stack (one frame per open line, each with
    /// the game as it stands on that line), variations of a move before the move itself.
    fn replay(
        &mut self,
        read_locale: Locale,
        write_locale: Locale,
        main_line_null_moves: bool,
    ) -> Result<Game<AnyPosition>, PgnGameError> {
        struct Frame {
            line: Option<usize>,
            /// The next move of the line to play.
            next: usize,
            /// The next of that move's variations to replay.
            next_variation: usize,
            depth: usize,
            game: Game<AnyPosition>,
        }
        let start = self.start_position()?;
        let mut used = vec![false; self.variations.len()];
        let mut stack = vec![Frame {
            line: None,
            next: 0,
            next_variation: 0,
            depth: 0,
            game: Game::new(start),
        }];
        while let Some(top) = stack.last_mut() {
            let line = match top.line {
                None => &mut self.moves,
                Some(id) => &mut self.variations[id],
            };
            let Some(node) = line.get_mut(top.next) else {
                let done = stack.pop().expect("not empty");
                if stack.is_empty() {
                    return Ok(done.game);
                }
                continue;
            };
            if let Some(&id) = node.variations.get(top.next_variation) {
                top.next_variation += 1;
                if used.get(id) != Some(&false) {
                    return Err(PgnGameError::BadVariation { index: id });
                }
                used[id] = true;
                let branch = Frame {
                    line: Some(id),
                    next: 0,
                    next_variation: 0,
                    depth: top.depth + 1,
                    game: top.game.clone(),
                };
                stack.push(branch);
                continue;
            }
            top.next += 1;
            top.next_variation = 0;
            let ply = top.next;
            if top.depth == 0 && node.is_null_move() && !main_line_null_moves {
                return Err(PgnGameError::NullMoveOnMainLine { ply });
            }
            play_node(
                &mut top.game,
                node,
                ply,
                top.depth,
                read_locale,
                write_locale,
            )?;
        }
        unreachable!("the main line's frame returns")
    }

    /// A PGN record of a game played through the API, with the given tags (the result is taken
    /// from the game).
    pub fn from_game(
        game: &Game<AnyPosition>,
        tags: Vec<(String, String)>,
        locale: Locale,
    ) -> PgnGame {
        let mut pos = game.start().clone();
        let mut moves = Vec::with_capacity(game.ply());
        for &m in game.moves() {
            moves.push(PgnNode {
                san: pos.move_to_san(m, locale),
                ..PgnNode::default()
            });
            pos.play_unchecked(m);
        }
        let result = game
            .outcome()
            .map_or("*".to_owned(), |o| o.score.to_string());
        let mut pgn = PgnGame {
            tags,
            moves,
            result: result.clone(),
            ..PgnGame::default()
        };
        pgn.set_tag("Result", result);
        let start = game.start();
        if start.variant() != Variant::Chess {
            pgn.set_tag("Variant", start.variant().pgn_name());
        }
        // A Chess960 game always names its start position (readers cannot guess it).
        if start.variant() == Variant::Chess960
            || start.to_text()
                != AnyPosition::start(start.variant())
                    .map(|p| p.to_text())
                    .unwrap_or_default()
        {
            pgn.set_tag("SetUp", "1");
            pgn.set_tag("FEN", start.to_text());
        }
        pgn
    }
}

/// Plays one move (or null move) of a line, rewriting it to strict SAN.
fn play_node(
    game: &mut Game<AnyPosition>,
    node: &mut PgnNode,
    ply: usize,
    depth: usize,
    read_locale: Locale,
    write_locale: Locale,
) -> Result<(), PgnGameError> {
    let to_err = |error| PgnGameError::Move {
        ply,
        variation_depth: depth,
        error,
    };
    let game_over = |input: &str| {
        to_err(MoveError::Illegal {
            input: input.to_owned(),
            reason: IllegalReason::GameOver,
        })
    };
    if node.is_null_move() {
        if game.outcome().is_some() {
            return Err(game_over(&node.san));
        }
        let passed = game.position().null_move().ok_or_else(|| {
            to_err(MoveError::Illegal {
                input: node.san.clone(),
                reason: IllegalReason::LeavesKingInCheck,
            })
        })?;
        node.san = NULL_MOVE.to_owned();
        // A `Game` holds real moves only: the line goes on from the position with the turn
        // passed (its repetitions counted from there).
        *game = Game::new(passed);
        return Ok(());
    }
    let pos = game.position();
    // SAN first (the PGN standard, and what ambiguous tokens mean), then UCI coordinates.
    let m: AnyMove = match pos.parse_move(&node.san, Notation::San, read_locale) {
        Ok(m) => m,
        Err(san_error) => pos
            .parse_move(&node.san, Notation::Uci, read_locale)
            .map_err(|_| to_err(san_error))?,
    };
    node.san = pos.move_to_san(m, write_locale);
    game.play(m).map_err(|e| match e {
        GameError::Move(e) => to_err(e),
        GameError::GameOver(_) | GameError::NotClaimable(_) => game_over(&node.san),
    })
}

fn is_result(word: &str) -> bool {
    matches!(word, "1-0" | "0-1" | "1/2-1/2" | "*" | "½-½")
        || word.parse::<crate::outcome::Score>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"[Event "Casual"]
[Site "?"]
[White "A \"quoted\" name"]
[Result "1-0"]

{Opening comment} 1. e4 e5 2. Nf3 $1 Nc6 {A comment} (2... d6 3. d4 (3. Bc4) 3... exd4) 3. Bb5!? a6
% an escaped line
4. Ba4 ; rest of line
Nf6 5. O-O 1-0

[Event "Second"]
[Result "0-1"]

1.f3 e5 2.g4 Qh4# 0-1
"#;

    fn validated(text: &str) -> PgnGame {
        let mut g = read_games(text).unwrap().remove(0);
        g.validate(Locale::English, Locale::English).unwrap();
        g
    }

    /// Writes `g`, reads it back and checks that the same record (variations included) comes
    /// back and validates; returns the text.
    fn round_trip(g: &PgnGame) -> String {
        let text = g.to_string();
        let mut again = read_games(&text).unwrap().remove(0);
        again.normalise(Locale::English, Locale::English).unwrap();
        assert_eq!(
            (&again.moves, &again.variations, &again.result),
            (&g.moves, &g.variations, &g.result),
            "{text}"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        text
    }

    fn flat(text: &str) -> String {
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn reads_many_games_with_everything() {
        let games = read_games(SAMPLE).unwrap();
        assert_eq!(games.len(), 2);
        let g = &games[0];
        assert_eq!(g.tag("White"), Some("A \"quoted\" name"));
        assert_eq!(g.intro_comments, vec!["Opening comment"]);
        assert_eq!(g.moves.len(), 9);
        assert_eq!(g.moves[2].nags, vec![1]);
        assert_eq!(g.moves[3].comments, vec!["A comment"]);
        assert_eq!(g.moves[3].variations.len(), 1);
        let variation = &g.variations[g.moves[3].variations[0]];
        assert_eq!(variation[1].variations.len(), 1);
        assert_eq!(g.variations.len(), 2);
        assert_eq!(g.moves[4].nags, vec![5]);
        assert_eq!(g.result, "1-0");
        assert_eq!(games[1].moves.len(), 4);
    }

    #[test]
    fn validates_and_round_trips() {
        let mut games = read_games(SAMPLE).unwrap();
        for g in &mut games {
            g.validate(Locale::English, Locale::English).unwrap();
        }
        let text: String = games.iter().map(|g| format!("{g}\n")).collect();
        let mut again = read_games(&text).unwrap();
        for g in &mut again {
            g.validate(Locale::English, Locale::English).unwrap();
        }
        for (a, b) in games.iter().zip(&again) {
            assert_eq!(
                (&a.moves, &a.variations, &a.result, &a.intro_comments),
                (&b.moves, &b.variations, &b.result, &b.intro_comments)
            );
            for (name, value) in &a.tags {
                assert_eq!(b.tag(name), Some(value.as_str()));
            }
        }
        assert!(text.lines().all(|l| l.chars().count() <= 80));
        assert!(
            flat(&text)
                .contains("2. Nf3 $1 Nc6 {A comment} (2... d6 3. d4 (3. Bc4) 3... exd4) 3. Bb5 $5")
        );
        assert!(text.contains("[Date \"????.??.??\"]"));
    }

    #[test]
    fn illegal_move_names_the_ply() {
        let mut g = read_games("1. e4 e5 2. Ke3 *").unwrap().remove(0);
        match g.validate(Locale::English, Locale::English) {
            Err(PgnGameError::Move {
                ply: 3,
                variation_depth: 0,
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
        let mut g = read_games("1. e4 (1. e5) *").unwrap().remove(0);
        assert!(matches!(
            g.validate(Locale::English, Locale::English),
            Err(PgnGameError::Move {
                ply: 1,
                variation_depth: 1,
                ..
            })
        ));
    }

    #[test]
    fn fen_and_variant_tags() {
        let text = "[Variant \"Standard\"]\n[SetUp \"1\"]\n[FEN \"4k3/8/8/8/8/8/8/R3K3 b - - 0 40\"]\n\n40... Kd7 41. Ra7+ *";
        let mut g = read_games(text).unwrap().remove(0);
        let game = g.validate(Locale::English, Locale::English).unwrap();
        assert_eq!(game.ply(), 2);
        assert!(g.to_string().contains("40... Kd7 41. Ra7+ *"));
        let mut bad = read_games("[Variant \"Atomic\"]\n\n1. e4 *")
            .unwrap()
            .remove(0);
        assert!(matches!(
            bad.validate(Locale::English, Locale::English),
            Err(PgnGameError::UnknownVariant(_))
        ));
    }

    #[test]
    fn syntax_errors() {
        for text in [
            "[Event \"x\"",
            "1. e4 {open",
            "1. e4 (1. d4",
            ") 1. e4",
            "1. e4 $x",
            "[Event x]",
        ] {
            let e = read_games(text).unwrap_err();
            assert_eq!(e.limit, None, "{text}");
        }
    }

    /// Found by the `pgn` fuzz target: a Result tag that is not a result ("0-0") must not be
    /// written as the termination marker, where it would read back as castling.
    #[test]
    fn bogus_result_tag_is_not_a_termination_marker() {
        let mut g = read_games("[Result \"0-0\"]\n\n{c} 1.;g4 e5\n")
            .unwrap()
            .remove(0);
        assert_eq!(g.result, "*");
        g.validate(Locale::English, Locale::English).unwrap();
        let text = g.to_string();
        let mut again = read_games(&text).unwrap().remove(0);
        again.validate(Locale::English, Locale::English).unwrap();
        assert!(again.moves.is_empty());
        let odd = PgnGame {
            result: "0-0".into(),
            ..PgnGame::default()
        };
        assert!(odd.to_string().ends_with("*\n"));
    }

    #[test]
    fn export_from_game() {
        let mut game = Game::new(AnyPosition::start(Variant::Chess).unwrap());
        for m in ["f3", "e5", "g4", "Qh4#"] {
            game.play_text(m, Notation::San, Locale::English).unwrap();
        }
        let pgn = PgnGame::from_game(&game, vec![], Locale::English);
        let text = pgn.to_string();
        assert!(text.contains("[Result \"0-1\"]"));
        assert!(text.contains("1. f3 e5 2. g4 Qh4# 0-1"));
    }

    /// Analysis variations pass the turn with `--` (ChessBase) or `Z0` (and `0000`, `@@@@`):
    /// all read as a null move, replay with the turn passed and are written `--`.
    #[test]
    fn null_moves_in_variations() {
        let g = validated(
            "1. e4 e5 2. Nf3 (2. -- Nc6 3. Nf3 (3. @@@@ d6)) (2. Z0 d5 3. exd5) 2... Nc6 \
             (2... 0000 3. Bc4!) 3. Bb5 *",
        );
        let v = |i: usize| {
            g.variations[i]
                .iter()
                .map(|n| n.san.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(v(0), ["--", "Nc6", "Nf3"]);
        assert_eq!(v(1), ["--", "d6"]);
        assert_eq!(v(2), ["--", "d5", "exd5"]);
        assert_eq!(v(3), ["--", "Bc4"]);
        assert!(g.variations.iter().all(|l| l[0].is_null_move()));
        let text = round_trip(&g);
        assert!(
            flat(&text).contains(
                "2. Nf3 (2. -- Nc6 3. Nf3 (3. -- d6)) (2. -- d5 3. exd5) 2... Nc6 (2... -- 3. \
                 Bc4 $1) 3. Bb5 *"
            ),
            "{text}"
        );
        // Passing while in check is illegal, and named by its ply and depth.
        let mut g = read_games("1. e4 f5 2. Qh5+ g6 (2... -- 3. Qxe8#) *")
            .unwrap()
            .remove(0);
        match g.validate(Locale::English, Locale::English) {
            Err(
                e @ PgnGameError::Move {
                    ply: 1,
                    variation_depth: 1,
                    ..
                },
            ) => assert!(e.to_string().contains("'--'"), "{e}"),
            other => panic!("{other:?}"),
        }
        // The line goes on from the position with the turn passed: here black moves twice.
        let mut g = read_games("1. e4 (1. -- e5 2. -- e4 3. d4) *")
            .unwrap()
            .remove(0);
        g.validate(Locale::English, Locale::English).unwrap();
        let mut g = read_games("1. e4 (1. -- e5 2. -- e4 3. -- e3 4. -- exd2+ 5. --) *")
            .unwrap()
            .remove(0);
        assert!(matches!(
            g.validate(Locale::English, Locale::English),
            Err(PgnGameError::Move {
                ply: 9,
                variation_depth: 1,
                ..
            })
        ));
    }

    /// A null move on the main line cannot go into the returned `Game`: `validate` refuses it
    /// naming the ply; `normalise` checks and writes it.
    #[test]
    fn null_moves_on_the_main_line() {
        let text = "1. e4 Z0 2. d4 -- 3. c4 e5 *";
        let mut g = read_games(text).unwrap().remove(0);
        let e = g.validate(Locale::English, Locale::English).unwrap_err();
        assert_eq!(e, PgnGameError::NullMoveOnMainLine { ply: 2 });
        assert!(e.to_string().starts_with("ply 2: "), "{e}");
        let mut g = read_games(text).unwrap().remove(0);
        g.normalise(Locale::English, Locale::English).unwrap();
        let written = round_trip(&g);
        assert!(
            flat(&written).contains("1. e4 -- 2. d4 -- 3. c4 e5 *"),
            "{written}"
        );
        let mut g = read_games("1. e4 f5 2. Qh5+ -- *").unwrap().remove(0);
        assert!(matches!(
            g.normalise(Locale::English, Locale::English),
            Err(PgnGameError::Move {
                ply: 4,
                variation_depth: 0,
                ..
            })
        ));
    }

    /// Engine matches (CCRL and others) record games in UCI coordinates: they validate and are
    /// written back in SAN.
    #[test]
    fn games_in_uci_moves() {
        let mut g = read_games(
            "[Result \"1-0\"]\n\ng1f3 d7d5 g2g3 c8g4 f1g2 b8d7 e1g1 e7e5 d2d3 f8d6 b1d2 g8e7 \
             (g8f6 d2b3 e8g8) c2c4 e8g8 c4d5 0000 1-0",
        )
        .unwrap()
        .remove(0);
        let e = g.validate(Locale::English, Locale::English).unwrap_err();
        assert_eq!(e, PgnGameError::NullMoveOnMainLine { ply: 16 });
        g.moves.pop();
        let game = g.validate(Locale::English, Locale::English).unwrap();
        assert_eq!(game.ply(), 15);
        let text = round_trip(&g);
        assert!(
            flat(&text).contains(
                "1. Nf3 d5 2. g3 Bg4 3. Bg2 Nd7 4. O-O e5 5. d3 Bd6 6. Nbd2 Ne7 (6... Ngf6 7. \
                 Nb3 O-O) 7. c4 O-O 8. cxd5 1-0"
            ),
            "{text}"
        );
        // Promotion, queen-side castling and en passant in coordinates.
        let g = validated(
            "[FEN \"r3k3/7P/8/8/4p3/8/3P4/R3K3 w Qq - 0 1\"]\n\n1. d2d4 e4d3 2. e1c1 e8c8 \
             3. h7h8q *",
        );
        let sans: Vec<&str> = g.moves.iter().map(|n| n.san.as_str()).collect();
        assert_eq!(sans, ["d4", "exd3", "O-O-O", "O-O-O", "h8=Q"]);
        // A token that reads as SAN keeps its SAN meaning; unreadable moves report the SAN error.
        let mut g = read_games("1. e4 e5 2. g1g3 *").unwrap().remove(0);
        match g.validate(Locale::English, Locale::English) {
            Err(PgnGameError::Move { ply: 3, error, .. }) => assert_eq!(error.input(), "g1g3"),
            other => panic!("{other:?}"),
        }
    }

    /// `(1. d4 (1. c4 (1. c4 …)))` 20,000 deep: 160 KB that used to overflow the stack.
    fn deeply_nested(depth: usize) -> String {
        let mut text = String::from("1. e4 ");
        for i in 0..depth {
            text.push_str(if i % 2 == 0 { "(1. d4 " } else { "(1. c4 " });
        }
        text.push_str(&")".repeat(depth));
        text.push_str(" *\n");
        text
    }

    /// Runs `f` on a thread with a 256 KiB stack: anything recursing on the input depth fails.
    fn on_small_stack(f: impl FnOnce() + Send + 'static) {
        std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(f)
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn deep_nesting_does_not_recurse() {
        on_small_stack(|| {
            let text = deeply_nested(20_000);
            assert!(text.len() > 150_000);
            let limits = PgnLimits {
                max_depth: 30_000,
                max_variations: 30_000,
                ..PgnLimits::default()
            };
            let mut games = read_games_with(&text, &limits).unwrap();
            let mut g = games.remove(0);
            assert_eq!(g.variations.len(), 20_000);
            g.validate(Locale::English, Locale::English).unwrap();
            let written = g.to_string();
            assert!(written.lines().all(|l| l.chars().count() <= 80));
            let mut again = read_games_with(&written, &limits).unwrap().remove(0);
            again.validate(Locale::English, Locale::English).unwrap();
            let copy = again.clone();
            assert_eq!(copy, again);
            assert_eq!(again.moves, g.moves);
            assert_eq!(again.variations, g.variations);
            assert!(!format!("{copy:?}").is_empty());
            drop((g, again, copy, games));
        });
    }

    #[test]
    fn deep_nesting_is_refused_by_default() {
        let text = format!("[Event \"x\"]\n\n1. e4 *\n\n{}", deeply_nested(20_000));
        let e = read_games(&text).unwrap_err();
        assert_eq!(e.limit, Some(PgnLimit::Depth));
        assert_eq!((e.game, e.line), (2, 5));
        assert!(e.to_string().contains("max_depth"), "{e}");
        // 64 levels are fine.
        let mut g = read_games(&deeply_nested(64)).unwrap().remove(0);
        g.validate(Locale::English, Locale::English).unwrap();
        assert!(read_games(&deeply_nested(65)).is_err());
    }

    #[test]
    fn long_games_are_refused_while_reading() {
        // Knights out and back, ten moves a line: 100,000 plies.
        let cycle = ["Nf3", "Nf6", "Ng1", "Ng8"];
        let mut text = String::new();
        for ply in 0..100_000 {
            if ply % 2 == 0 {
                text.push_str(&format!("{}. ", ply / 2 + 1));
            }
            text.push_str(cycle[ply % 4]);
            text.push(if ply % 20 == 19 { '\n' } else { ' ' });
        }
        text.push('*');
        let e = read_games(&text).unwrap_err();
        assert_eq!(e.limit, Some(PgnLimit::PliesPerGame));
        // Ply 2,049 stands on line 103 (20 plies a line).
        assert_eq!((e.game, e.line), (1, 103));
        assert!(e.to_string().contains("max_plies_per_game"), "{e}");
        // Exactly at the limit is fine; a variation may not reach beyond it either.
        let limits = PgnLimits {
            max_plies_per_game: 4,
            ..PgnLimits::default()
        };
        assert!(read_games_with("1. e4 e5 2. Nf3 Nc6 *", &limits).is_ok());
        assert!(read_games_with("1. e4 e5 2. Nf3 Nc6 3. Bb5 *", &limits).is_err());
        let e = read_games_with("1. e4 e5 2. Nf3 (2. Nc3 Nc6 3. Bc4) *", &limits).unwrap_err();
        assert_eq!(e.limit, Some(PgnLimit::PliesPerGame));
    }

    #[test]
    fn game_and_variation_counts_are_limited() {
        let limits = PgnLimits {
            max_games: 2,
            max_variations: 2,
            ..PgnLimits::default()
        };
        assert_eq!(
            read_games_with("1. e4 *\n1. d4 *\n", &limits)
                .unwrap()
                .len(),
            2
        );
        let e = read_games_with("1. e4 *\n1. d4 *\n1. c4 *\n", &limits).unwrap_err();
        assert_eq!((e.limit, e.game, e.line), (Some(PgnLimit::Games), 3, 3));
        // Variations count over the whole text.
        let text = "1. e4 (1. d4) *\n1. e4 (1. d4) *\n1. e4 (1. c4) *\n";
        let e = read_games_with(text, &limits).unwrap_err();
        assert_eq!(
            (e.limit, e.game, e.line),
            (Some(PgnLimit::Variations), 3, 3)
        );
        let none = PgnLimits {
            max_depth: 0,
            ..PgnLimits::default()
        };
        assert_eq!(
            read_games_with("1. e4 (1. d4) *", &none).unwrap_err().limit,
            Some(PgnLimit::Depth)
        );
        // The defaults.
        assert_eq!(
            PgnLimits::default(),
            PgnLimits {
                max_games: 10_000,
                max_plies_per_game: 2048,
                max_variations: 10_000,
                max_depth: 64,
            }
        );
    }

    #[test]
    fn long_comments() {
        let words: Vec<String> = (0..100_000).map(|i| format!("word{i}")).collect();
        let long = words.join(" \n\t ");
        let giant = "x".repeat(200_000);
        let text = format!("{{{long}}} 1. e4 {{{giant}}} e5 {{{long}}} (1... c5 {{{long}}}) *");
        let g = validated(&text);
        let joined = words.join(" ");
        assert_eq!(g.intro_comments, [joined.as_str()]);
        assert_eq!(g.moves[0].comments, [giant.as_str()]);
        assert_eq!(g.moves[1].comments, [joined.as_str()]);
        assert_eq!(g.variations[0][0].comments, [joined.as_str()]);
        let written = g.to_string();
        // Comments are broken between words; only the single 200,000-letter word is longer.
        assert!(
            written
                .lines()
                .all(|l| l.chars().count() <= 80 || l.contains(&giant))
        );
        let mut again = read_games(&written).unwrap().remove(0);
        again.validate(Locale::English, Locale::English).unwrap();
        assert!(
            (&again.intro_comments, &again.moves, &again.variations)
                == (&g.intro_comments, &g.moves, &g.variations)
        );
        // A comment word never starts a line with `%` (an escape line for readers).
        let pct = vec!["%eval"; 1000].join(" ");
        let g = validated(&format!("1. e4 {{{pct}}} *"));
        let written = g.to_string();
        assert!(written.lines().all(|l| !l.starts_with('%')), "{written}");
        let again = read_games(&written).unwrap().remove(0);
        assert_eq!(again.moves, g.moves);
        // An unterminated long comment is an error on the last line.
        let e = read_games(&format!("1. e4 {{{long}")).unwrap_err();
        assert_eq!(e.line, 1 + 99_999);
    }

    /// A hand-built tree with a cycle or a dangling index neither loops nor panics.
    #[test]
    fn games_are_handed_out_one_at_a_time_with_where_they_end() {
        let text = "\u{feff}[Event \"a\"]\n\n1. e4 e5 1-0\n\n1. d4 *\n[Event \"c\"]\n1. c4\n";
        let mut seen = Vec::new();
        read_games_each(text, &PgnLimits::default(), &mut |game, end| {
            seen.push((game.moves.len(), game.result.clone(), end));
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
        let ends: Vec<usize> = seen.iter().map(|s| s.2).collect();
        assert_eq!(
            seen.iter().map(|s| (s.0, s.1.as_str())).collect::<Vec<_>>(),
            [(2, "1-0"), (1, "*"), (1, "*")]
        );
        // Each ends after its result (or before the next game's tags), the last at the end.
        assert_eq!(&text[..ends[0]], "\u{feff}[Event \"a\"]\n\n1. e4 e5 1-0");
        assert!(text[ends[0]..ends[1]].trim_end().ends_with("1. d4 *"));
        assert_eq!(ends[2], text.len());
        // The same games as reading them all at once.
        let all = read_games_with(text, &PgnLimits::default()).unwrap();
        assert_eq!(all.len(), 3);
        // Stopping early reads no further (the error after the first game is never reached).
        let mut count = 0;
        read_games_each(
            "1. e4 *\n1. e4 {unterminated",
            &PgnLimits::default(),
            &mut |_, _| {
                count += 1;
                std::ops::ControlFlow::Break(())
            },
        )
        .unwrap();
        assert_eq!(count, 1);
        // An error comes after the games before it were handed out.
        let mut count = 0;
        let e = read_games_each(
            "1. e4 *\n1. e4 {unterminated",
            &PgnLimits::default(),
            &mut |_, _| {
                count += 1;
                std::ops::ControlFlow::Continue(())
            },
        )
        .unwrap_err();
        assert_eq!((count, e.game), (1, 2));
    }

    #[test]
    fn hand_built_variation_indices() {
        let node = |san: &str, variations: Vec<usize>| PgnNode {
            san: san.into(),
            variations,
            ..PgnNode::default()
        };
        let mut g = PgnGame {
            moves: vec![node("e4", vec![0, 7])],
            variations: vec![vec![node("d4", vec![0])]],
            result: "*".into(),
            ..PgnGame::default()
        };
        assert!(flat(&g.to_string()).ends_with("1. e4 (1. d4) *"));
        assert_eq!(
            g.clone()
                .validate(Locale::English, Locale::English)
                .unwrap_err(),
            PgnGameError::BadVariation { index: 0 }
        );
        g.variations[0][0].variations.clear();
        assert_eq!(
            g.validate(Locale::English, Locale::English).unwrap_err(),
            PgnGameError::BadVariation { index: 7 }
        );
    }
}
