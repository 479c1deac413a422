//! BPGN (bughouse PGN): tags, then the moves of both boards in the order they were played,
//! each numbered with its board letter (`1A.` White on A, `1a.` Black on A, `1B.`, `1b.`), with
//! the remaining clock in braces.
//!
//! Reading is lenient, for files from FICS and chess.com: clocks as `{298.21}` or
//! `{[%clk 0:04:58.2]}`, other comments, NAGs and variations skipped, a number attached to its
//! move (`1A.e4`), `...` ignored, drops as `N@f3`, `@f3` or `P@f3`, the BFEN start in a `[FEN]`
//! tag. Writing is strict: the seven-tag roster plus `WhiteA BlackA WhiteB BlackB`, every move
//! numbered, SAN as the rules service writes it, clocks with two decimals.

use super::{BoardId, Match, MatchError, Seat};
use crate::position::{Locale, Position};
use crate::types::Color;
use std::fmt;

/// One move of a BPGN game.
#[derive(Clone, Debug, PartialEq)]
pub struct BpgnMove {
    /// The board.
    pub board: BoardId,
    /// The colour that moved.
    pub color: Color,
    /// The move text (SAN after [`BpgnGame::validate`]).
    pub san: String,
    /// The mover's remaining clock in seconds, if the file gives it.
    pub clock: Option<f64>,
}

/// One game of a BPGN file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BpgnGame {
    /// Tags in file order.
    pub tags: Vec<(String, String)>,
    /// Moves of both boards, in the order played.
    pub moves: Vec<BpgnMove>,
    /// The termination marker (`1-0`, `0-1`, `1/2-1/2`, `*`), if present.
    pub result: Option<String>,
}

/// A BPGN text cannot be read, or a game in it is not a legal match.
#[derive(Clone, Debug, PartialEq)]
pub enum BpgnError {
    /// The text is not BPGN.
    Syntax {
        /// What is wrong and where.
        message: String,
    },
    /// The `[FEN]` tag is not a valid BFEN.
    Start {
        /// What is wrong.
        message: String,
    },
    /// A move cannot be played.
    Move {
        /// Its index among the game's moves (0-based).
        index: usize,
        /// The board and number as written (`12B.`).
        number: String,
        /// The move as written.
        text: String,
        /// Why.
        error: MatchError,
    },
}

impl fmt::Display for BpgnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BpgnError::Syntax { message } => write!(f, "BPGN syntax: {message}"),
            BpgnError::Start { message } => write!(f, "FEN tag: {message}"),
            BpgnError::Move {
                index,
                number,
                text,
                error,
            } => write!(f, "move {} ({number} {text}): {error}", index + 1),
        }
    }
}

impl std::error::Error for BpgnError {}

fn syntax(message: impl Into<String>) -> BpgnError {
    BpgnError::Syntax {
        message: message.into(),
    }
}

fn is_result(t: &str) -> bool {
    matches!(t, "1-0" | "0-1" | "1/2-1/2" | "*")
}

/// Seconds from a clock comment: `298.21`, or `[%clk 0:04:58.2]` (h:mm:ss or mm:ss).
fn parse_clock(comment: &str) -> Option<f64> {
    let c = comment.trim();
    if let Ok(secs) = c.parse::<f64>() {
        return secs.is_finite().then_some(secs);
    }
    let start = c.find("[%clk")? + 5;
    let end = start + c[start..].find(']')?;
    let mut secs = 0.0;
    for part in c[start..end].trim().split(':') {
        secs = secs * 60.0 + part.parse::<f64>().ok()?;
    }
    secs.is_finite().then_some(secs)
}

/// Reads a move number token such as `12A.` or `3b.`: (board, colour, rest after the dot).
fn move_number(token: &str) -> Option<(BoardId, Color, &str)> {
    let digits = token.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = &token[digits..];
    let mut chars = rest.chars();
    let (board, color) = match chars.next()? {
        'A' => (BoardId::A, Color::White),
        'a' => (BoardId::A, Color::Black),
        'B' => (BoardId::B, Color::White),
        'b' => (BoardId::B, Color::Black),
        _ => return None,
    };
    let after = chars.as_str().strip_prefix('.')?;
    Some((board, color, after.trim_start_matches('.')))
}

/// Splits the movetext into tokens, with comments as single `{…}` tokens and variations
/// dropped.
fn tokens(text: &str) -> Result<Vec<String>, BpgnError> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    let mut depth = 0usize;
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut Vec<String>, depth: usize| {
        if !word.is_empty() {
            if depth == 0 {
                out.push(std::mem::take(word));
            } else {
                word.clear();
            }
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '{' => {
                flush(&mut word, &mut out, depth);
                let mut comment = String::from("{");
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(ch) => comment.push(ch),
                        None => return Err(syntax("unterminated comment")),
                    }
                }
                if depth == 0 {
                    out.push(comment);
                }
            }
            ';' => {
                flush(&mut word, &mut out, depth);
                for ch in chars.by_ref() {
                    if ch == '\n' {
                        break;
                    }
                }
            }
            '(' => {
                flush(&mut word, &mut out, depth);
                depth += 1;
            }
            ')' => {
                flush(&mut word, &mut out, depth);
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| syntax("')' without '('"))?;
            }
            c if c.is_whitespace() => flush(&mut word, &mut out, depth),
            c => word.push(c),
        }
    }
    flush(&mut word, &mut out, depth);
    if depth > 0 {
        return Err(syntax("unterminated variation"));
    }
    Ok(out)
}

/// Most games one BPGN text may hold.
pub const MAX_BPGN_GAMES: usize = 10_000;

/// Most moves (both boards together) one BPGN game may hold.
pub const MAX_BPGN_MOVES: usize = 8_192;

/// At most 40 characters of `s`, with `…` when cut (error messages quote input in part).
fn short(s: &str) -> String {
    match s.char_indices().nth(40) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

/// Reads every game of a BPGN text, within [`MAX_BPGN_GAMES`] games of at most
/// [`MAX_BPGN_MOVES`] moves each (checked while reading).
pub fn read_bpgn(text: &str) -> Result<Vec<BpgnGame>, BpgnError> {
    let mut games = Vec::new();
    let mut game = BpgnGame::default();
    let mut movetext = String::new();
    let mut in_moves = false;
    let finish = |game: &mut BpgnGame, movetext: &mut String, games: &mut Vec<BpgnGame>| {
        let moves = std::mem::take(movetext);
        parse_movetext(game, &moves)?;
        if !game.tags.is_empty() || !game.moves.is_empty() || game.result.is_some() {
            if games.len() == MAX_BPGN_GAMES {
                return Err(syntax(format!(
                    "more than {MAX_BPGN_GAMES} games in one text"
                )));
            }
            games.push(std::mem::take(game));
        }
        Ok::<(), BpgnError>(())
    };
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('[') && !l.starts_with("[%") {
            if in_moves {
                finish(&mut game, &mut movetext, &mut games)?;
                in_moves = false;
            }
            game.tags.push(parse_tag(l)?);
        } else if !l.is_empty() {
            in_moves = true;
            movetext.push_str(line);
            movetext.push('\n');
        }
    }
    finish(&mut game, &mut movetext, &mut games)?;
    Ok(games)
}

fn parse_tag(line: &str) -> Result<(String, String), BpgnError> {
    let inner = line
        .strip_prefix('[')
        .and_then(|l| l.strip_suffix(']'))
        .ok_or_else(|| syntax(format!("bad tag line '{}'", short(line))))?;
    let (name, value) = inner
        .trim()
        .split_once(char::is_whitespace)
        .ok_or_else(|| syntax(format!("bad tag line '{}'", short(line))))?;
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(syntax(format!(
            "tag name '{}': letters, digits and '_' only",
            short(name)
        )));
    }
    let value = value.trim();
    let value = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .ok_or_else(|| syntax(format!("tag {}: the value must be quoted", short(name))))?;
    Ok((
        name.to_owned(),
        value.replace("\\\"", "\"").replace("\\\\", "\\"),
    ))
}

fn parse_movetext(game: &mut BpgnGame, text: &str) -> Result<(), BpgnError> {
    let mut next: Option<(BoardId, Color)> = None;
    for token in tokens(text)? {
        if let Some(comment) = token.strip_prefix('{') {
            if let (Some(clock), Some(last)) = (parse_clock(comment), game.moves.last_mut())
                && last.clock.is_none()
            {
                last.clock = Some(clock);
            }
            continue;
        }
        if is_result(&token) {
            game.result = Some(token);
            continue;
        }
        if token.starts_with('$') || token.chars().all(|c| c == '.') {
            continue;
        }
        let mut san = token.as_str();
        if let Some((board, color, rest)) = move_number(&token) {
            next = Some((board, color));
            if rest.is_empty() {
                continue;
            }
            san = rest;
        }
        let (board, color) = next.take().ok_or_else(|| {
            syntax(format!(
                "move '{}' has no board number before it",
                short(&token)
            ))
        })?;
        if game.moves.len() == MAX_BPGN_MOVES {
            return Err(syntax(format!(
                "a game of more than {MAX_BPGN_MOVES} moves"
            )));
        }
        game.moves.push(BpgnMove {
            board,
            color,
            san: san.to_owned(),
            clock: None,
        });
    }
    Ok(())
}

impl BpgnGame {
    /// The value of a tag.
    pub fn tag(&self, name: &str) -> Option<&str> {
        self.tags
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Plays every move in order (reserves flow between the boards as they would have), writes
    /// the moves back as SAN, and returns the match after the last move.
    pub fn validate(&mut self, locale: Locale) -> Result<Match, BpgnError> {
        let mut m = match self.tag("FEN") {
            Some(bfen) => Match::from_bfen(bfen).map_err(|e| BpgnError::Start {
                message: e.to_string(),
            })?,
            None => Match::new(),
        };
        for (index, mv) in self.moves.iter_mut().enumerate() {
            let seat = Seat::new(mv.board, mv.color);
            let number = number_text(m.board(mv.board).fullmove_number(), seat);
            let events = m
                .play(seat, &mv.san, m.ply(mv.board), locale)
                .map_err(|error| BpgnError::Move {
                    index,
                    number,
                    text: mv.san.clone(),
                    error,
                })?;
            if let Some(super::MatchEvent::Move { san, .. }) = events.first() {
                mv.san = san.clone();
            }
        }
        Ok(m)
    }
}

/// `12A.` for White on A at move 12, `12a.` for Black.
fn number_text(n: u32, seat: Seat) -> String {
    let letter = match seat.color {
        Color::White => seat.board.letter(),
        Color::Black => seat.board.letter().to_ascii_lowercase(),
    };
    format!("{n}{letter}.")
}

const ROSTER: [&str; 10] = [
    "Event",
    "Site",
    "Date",
    "Round",
    "WhiteA",
    "BlackA",
    "WhiteB",
    "BlackB",
    "TimeControl",
    "Result",
];

impl fmt::Display for BpgnGame {
    /// Strict BPGN: the roster tags first (`?` when missing), the other tags after, moves
    /// numbered per board with clocks, the result last. Move numbers are recomputed from the
    /// start position (the `[FEN]` tag) so a hand-numbered file comes out consistent.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let result = self
            .result
            .clone()
            .or_else(|| {
                self.tag("Result")
                    .filter(|r| is_result(r))
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| "*".to_owned());
        for name in ROSTER {
            let value = if name == "Result" {
                result.as_str()
            } else {
                self.tag(name).unwrap_or("?")
            };
            writeln!(f, "[{name} \"{}\"]", escape(value))?;
        }
        for (name, value) in &self.tags {
            if !ROSTER.contains(&name.as_str()) {
                writeln!(f, "[{name} \"{}\"]", escape(value))?;
            }
        }
        writeln!(f)?;
        let mut numbers = self
            .tag("FEN")
            .and_then(|bfen| Match::from_bfen(bfen).ok())
            .map_or([1, 1], |m| {
                BoardId::BOTH.map(|b| m.board(b).fullmove_number())
            });
        let mut line = String::new();
        for mv in &self.moves {
            let seat = Seat::new(mv.board, mv.color);
            let i = mv.board.index();
            let mut item = format!("{} {}", number_text(numbers[i], seat), mv.san);
            if mv.color == Color::Black {
                numbers[i] += 1;
            }
            if let Some(c) = mv.clock {
                item.push_str(&format!(" {{{c:.2}}}"));
            }
            if !line.is_empty() && line.len() + item.len() >= 80 {
                writeln!(f, "{line}")?;
                line.clear();
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&item);
        }
        if !line.is_empty() && line.len() + result.len() >= 80 {
            writeln!(f, "{line}")?;
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&result);
        writeln!(f, "{line}")
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"")
}
