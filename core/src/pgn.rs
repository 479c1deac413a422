//! PGN for every variant: lenient reading of many games per text (tags, comments, NAGs and
//! `!?`-style annotations, nested variations, `%` escape lines, results), validation by replaying
//! every move (variations too) through [`AnyPosition`], and strict export (Seven Tag Roster
//! first, strict SAN, lines of at most 80 characters).
//!
//! `[Variant]` selects the rules; `[FEN]` (with or without `[SetUp "1"]`) the start position.

use crate::any::{AnyMove, AnyPosition, PositionTextError};
use crate::game::{Game, GameError};
use crate::position::{Locale, MoveError, Notation, Position};
use crate::variant::Variant;
use std::fmt;

/// One move of a movetext with what is attached to it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PgnNode {
    /// The move as written (SAN; normalised to strict SAN by [`PgnGame::validate`]).
    pub san: String,
    /// Numeric annotation glyphs (`$1`, or `!` read as 1, `?` as 2, `!!` 3, `??` 4, `!?` 5,
    /// `?!` 6).
    pub nags: Vec<u8>,
    /// Comments after the move.
    pub comments: Vec<String>,
    /// Alternatives to this move, each a line starting from the position before it.
    pub variations: Vec<Vec<PgnNode>>,
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
    /// The termination marker (`1-0`, `0-1`, `1/2-1/2`, `*`, or a fractional score such as
    /// `3/4-1/4` for variants that have them).
    pub result: String,
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
    /// A move is unreadable or illegal. `ply` counts from 1 on the line it stands on;
    /// `variation_depth` is 0 on the main line.
    Move {
        /// Ply number (1 = first move of the line).
        ply: usize,
        /// Nesting depth: 0 for the main line.
        variation_depth: usize,
        /// Why the move was refused.
        error: MoveError,
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
        }
    }
}

impl std::error::Error for PgnGameError {}

struct Lexer<'a> {
    text: &'a str,
    pos: usize,
    line: usize,
}

fn is_delimiter(c: char) -> bool {
    c.is_whitespace() || matches!(c, '{' | '}' | '(' | ')' | '[' | ']' | ';' | '"')
}

impl<'a> Lexer<'a> {
    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn at_line_start(&self) -> bool {
        self.text[..self.pos]
            .chars()
            .next_back()
            .is_none_or(|c| c == '\n')
    }

    fn skip_line(&mut self) {
        while let Some(c) = self.bump() {
            if c == '\n' {
                break;
            }
        }
    }

    fn until(&mut self, end: char) -> Option<String> {
        let mut s = String::new();
        loop {
            match self.bump()? {
                c if c == end => return Some(s),
                c => s.push(c),
            }
        }
    }

    fn word(&mut self) -> &'a str {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if is_delimiter(c) {
                break;
            }
            self.bump();
        }
        &self.text[start..self.pos]
    }
}

fn nag_of(suffix: &str) -> Option<u8> {
    Some(match suffix {
        "!" => 1,
        "?" => 2,
        "!!" => 3,
        "??" => 4,
        "!?" => 5,
        "?!" => 6,
        _ => return None,
    })
}

fn is_result(word: &str) -> bool {
    matches!(word, "1-0" | "0-1" | "1/2-1/2" | "*" | "½-½")
        || word.parse::<crate::outcome::Score>().is_ok()
}

/// Reads every game of a PGN text.
pub fn read_games(text: &str) -> Result<Vec<PgnGame>, PgnSyntaxError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lx = Lexer {
        text,
        pos: 0,
        line: 1,
    };
    let mut games = Vec::new();
    let mut game = PgnGame::default();
    // Stack of open lines: the main line at the bottom, one entry per open variation.
    let mut lines: Vec<Vec<PgnNode>> = vec![Vec::new()];
    let mut in_movetext = false;
    let err = |lx: &Lexer, n: usize, m: &str| PgnSyntaxError {
        game: n,
        line: lx.line,
        message: m.to_owned(),
    };

    fn finish(game: &mut PgnGame, lines: &mut [Vec<PgnNode>], games: &mut Vec<PgnGame>) -> bool {
        if lines.len() != 1 {
            return false;
        }
        let mut g = std::mem::take(game);
        g.moves = std::mem::take(&mut lines[0]);
        if g.result.is_empty() {
            // Without a termination marker, fall back on the Result tag, but only when it is a
            // result: anything else (e.g. "0-0", which reads as castling) becomes "*".
            g.result = tag_value(&g.tags, "Result")
                .filter(|r| is_result(r))
                .unwrap_or("*")
                .to_owned();
        }
        if !g.tags.is_empty() || !g.moves.is_empty() || !g.intro_comments.is_empty() {
            games.push(g);
        }
        true
    }

    while let Some(c) = lx.peek() {
        let number = games.len() + 1;
        match c {
            _ if c.is_whitespace() => {
                lx.bump();
            }
            '%' if lx.at_line_start() => lx.skip_line(),
            ';' => lx.skip_line(),
            '[' => {
                if in_movetext {
                    // A tag after movetext without a result: the previous game ended there.
                    if !finish(&mut game, &mut lines, &mut games) {
                        return Err(err(&lx, number, "unclosed variation before the next game"));
                    }
                    in_movetext = false;
                }
                lx.bump();
                let inner = lx
                    .until(']')
                    .ok_or_else(|| err(&lx, number, "unterminated tag"))?;
                game.tags
                    .push(parse_tag(&inner).map_err(|m| err(&lx, number, m))?);
            }
            '{' => {
                lx.bump();
                let comment = lx
                    .until('}')
                    .ok_or_else(|| err(&lx, number, "unterminated comment"))?;
                let comment = comment.split_whitespace().collect::<Vec<_>>().join(" ");
                in_movetext = true;
                let depth = lines.len();
                match lines.last_mut().expect("never empty").last_mut() {
                    Some(node) => node.comments.push(comment),
                    None if depth == 1 => game.intro_comments.push(comment),
                    None => {} // a comment opening a variation: kept nowhere, harmless
                }
            }
            '(' => {
                lx.bump();
                in_movetext = true;
                if lines.last().expect("never empty").is_empty() {
                    return Err(err(&lx, number, "a variation must follow a move"));
                }
                lines.push(Vec::new());
            }
            ')' => {
                lx.bump();
                if lines.len() == 1 {
                    return Err(err(&lx, number, "')' without an open variation"));
                }
                let variation = lines.pop().expect("checked");
                if !variation.is_empty() {
                    let parent = lines.last_mut().expect("never empty");
                    parent
                        .last_mut()
                        .expect("checked when opened")
                        .variations
                        .push(variation);
                }
            }
            '$' => {
                lx.bump();
                let digits = lx.word();
                let nag: u8 = digits
                    .parse()
                    .map_err(|_| err(&lx, number, "a NAG is '$' and a number up to 255"))?;
                match lines.last_mut().expect("never empty").last_mut() {
                    Some(node) => node.nags.push(nag),
                    None => return Err(err(&lx, number, "a NAG must follow a move")),
                }
            }
            '}' | ']' | '"' => {
                return Err(err(&lx, number, &format!("unexpected '{c}'")));
            }
            _ => {
                let word = lx.word();
                in_movetext = true;
                if is_result(word) {
                    if lines.len() != 1 {
                        return Err(err(&lx, number, "result inside a variation"));
                    }
                    game.result = word.replace('½', "1/2");
                    finish(&mut game, &mut lines, &mut games);
                    in_movetext = false;
                    continue;
                }
                // Strip a move number ("12." or "12...") possibly glued to the move ("12.e4").
                let digits = word.trim_start_matches(|c: char| c.is_ascii_digit());
                let rest = if digits.len() < word.len() && digits.starts_with('.') {
                    digits.trim_start_matches('.')
                } else {
                    word
                };
                if rest.is_empty() {
                    continue;
                }
                if rest == "--" || rest == "Z0" {
                    return Err(err(&lx, number, "null moves are not supported"));
                }
                let san = rest.trim_end_matches(['!', '?']);
                if san.is_empty() {
                    return Err(err(&lx, number, &format!("unexpected '{rest}'")));
                }
                let mut node = PgnNode {
                    san: san.to_owned(),
                    ..PgnNode::default()
                };
                let suffix = &rest[san.len()..];
                if !suffix.is_empty() {
                    node.nags.push(nag_of(suffix).ok_or_else(|| {
                        err(&lx, number, &format!("unknown annotation '{suffix}'"))
                    })?);
                }
                lines.last_mut().expect("never empty").push(node);
            }
        }
    }
    let number = games.len() + 1;
    if !finish(&mut game, &mut lines, &mut games) {
        return Err(err(&lx, number, "unclosed variation at end of input"));
    }
    Ok(games)
}

fn parse_tag(inner: &str) -> Result<(String, String), &'static str> {
    let inner = inner.trim();
    let (name, rest) = inner
        .split_once(|c: char| c.is_whitespace())
        .ok_or("a tag is [Name \"value\"]")?;
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err("invalid tag name");
    }
    let rest = rest.trim();
    let body = rest
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .ok_or("a tag value is quoted")?;
    let mut value = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(e @ ('"' | '\\')) => value.push(e),
                Some(other) => {
                    value.push('\\');
                    value.push(other);
                }
                None => value.push('\\'),
            }
        } else {
            value.push(c);
        }
    }
    Ok((name.to_owned(), value))
}

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

    /// Replays every move (variations included), rewriting each to strict SAN in `locale`, and
    /// returns the main line as a [`Game`].
    pub fn validate(
        &mut self,
        read_locale: Locale,
        write_locale: Locale,
    ) -> Result<Game<AnyPosition>, PgnGameError> {
        let start = self.start_position()?;
        let mut game = Game::new(start);
        normalise_line(&mut game, &mut self.moves, 0, read_locale, write_locale)?;
        Ok(game)
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
        if start.to_text()
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

fn normalise_line(
    game: &mut Game<AnyPosition>,
    line: &mut [PgnNode],
    depth: usize,
    read_locale: Locale,
    write_locale: Locale,
) -> Result<(), PgnGameError> {
    for (i, node) in line.iter_mut().enumerate() {
        let before = game.clone();
        for variation in &mut node.variations {
            let mut branch = before.clone();
            normalise_line(&mut branch, variation, depth + 1, read_locale, write_locale)?;
        }
        let to_err = |error| PgnGameError::Move {
            ply: i + 1,
            variation_depth: depth,
            error,
        };
        let m: AnyMove = game
            .position()
            .parse_move(&node.san, Notation::San, read_locale)
            .map_err(to_err)?;
        node.san = game.position().move_to_san(m, write_locale);
        game.play(m).map_err(|e| match e {
            GameError::Move(e) => to_err(e),
            GameError::GameOver(_) | GameError::NotClaimable(_) => to_err(MoveError::Illegal {
                input: node.san.clone(),
                reason: crate::position::IllegalReason::GameOver,
            }),
        })?;
    }
    Ok(())
}

const ROSTER: [(&str, &str); 7] = [
    ("Event", "?"),
    ("Site", "?"),
    ("Date", "????.??.??"),
    ("Round", "?"),
    ("White", "?"),
    ("Black", "?"),
    ("Result", "*"),
];

struct Wrapper {
    out: String,
    column: usize,
}

impl Wrapper {
    fn token(&mut self, t: &str) {
        if self.column > 0 && self.column + 1 + t.chars().count() > 80 {
            self.out.push('\n');
            self.column = 0;
        } else if self.column > 0 {
            self.out.push(' ');
            self.column += 1;
        }
        self.out.push_str(t);
        self.column += t.chars().count();
    }
}

fn write_line(w: &mut Wrapper, line: &[PgnNode], first_ply: usize, white_first: bool) {
    let mut need_number = true;
    for (i, node) in line.iter().enumerate() {
        // `ply` counts from 0 for the side that moved first in the game.
        let ply = first_ply + i + usize::from(!white_first);
        let number = ply / 2 + 1;
        if ply.is_multiple_of(2) {
            w.token(&format!("{number}."));
        } else if need_number {
            w.token(&format!("{number}..."));
        }
        w.token(&node.san);
        for nag in &node.nags {
            w.token(&format!("${nag}"));
        }
        for c in &node.comments {
            w.token(&format!("{{{}}}", c.replace('}', ")")));
        }
        need_number = !node.comments.is_empty() || !node.variations.is_empty();
        for v in &node.variations {
            w.token("(");
            // Tokens inside the variation are separated normally; the opening parenthesis sticks.
            let before = w.out.len();
            write_line(w, v, first_ply + i, white_first);
            if w.out[before..].starts_with(' ') {
                w.out.remove(before);
                w.column = w.column.saturating_sub(1);
            }
            w.out.push(')');
            w.column += 1;
        }
    }
}

impl fmt::Display for PgnGame {
    /// Strict export: the Seven Tag Roster in order (with `?` defaults), the other tags, a blank
    /// line, the movetext wrapped at 80 columns, the result, a blank line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let escape = |v: &str| v.replace('\\', "\\\\").replace('"', "\\\"");
        for (name, default) in ROSTER {
            let value = if name == "Result" {
                if is_result(&self.result) {
                    self.result.as_str()
                } else {
                    "*"
                }
            } else {
                self.tag(name).unwrap_or(default)
            };
            writeln!(f, "[{name} \"{}\"]", escape(value))?;
        }
        for (name, value) in &self.tags {
            if !ROSTER.iter().any(|(n, _)| n == name) {
                writeln!(f, "[{name} \"{}\"]", escape(value))?;
            }
        }
        writeln!(f)?;
        let mut w = Wrapper {
            out: String::new(),
            column: 0,
        };
        for c in &self.intro_comments {
            w.token(&format!("{{{}}}", c.replace('}', ")")));
        }
        // The first move's number comes from the FEN (fullmove number and side to move).
        let (first_ply, white_first) = self
            .tag("FEN")
            .and_then(|fen| {
                let mut fields = fen.split_whitespace().skip(1);
                let white = fields.next()? != "b";
                let full: usize = fields.nth(3).and_then(|n| n.parse().ok()).unwrap_or(1);
                Some(((full.max(1) - 1) * 2, white))
            })
            .unwrap_or((0, true));
        write_line(&mut w, &self.moves, first_ply, white_first);
        w.token(if is_result(&self.result) {
            &self.result
        } else {
            "*"
        });
        writeln!(f, "{}", w.out)?;
        Ok(())
    }
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
        assert_eq!(g.moves[3].variations[0][1].variations.len(), 1);
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
                (&a.moves, &a.result, &a.intro_comments),
                (&b.moves, &b.result, &b.intro_comments)
            );
            for (name, value) in &a.tags {
                assert_eq!(b.tag(name), Some(value.as_str()));
            }
        }
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(text.lines().all(|l| l.chars().count() <= 80));
        assert!(
            flat.contains("2. Nf3 $1 Nc6 {A comment} (2... d6 3. d4 (3. Bc4) 3... exd4) 3. Bb5 $5")
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
            assert!(read_games(text).is_err(), "{text}");
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
}
