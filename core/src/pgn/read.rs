//! Reading PGN: the lexer and the parser of games, variations, comments and tags, within [`PgnLimits`].

use std::ops::ControlFlow;

use super::*;

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

/// Reads every game of a PGN text, within [`PgnLimits::default`].
pub fn read_games(text: &str) -> Result<Vec<PgnGame>, PgnSyntaxError> {
    read_games_with(text, &PgnLimits::default())
}

/// A line open while reading: the main line or a variation.
struct OpenLine {
    /// `None` for the main line, else the index into [`PgnGame::variations`].
    id: Option<usize>,
    /// Plies played from the start of the game before the line's first move.
    first_ply: usize,
}

fn line_of(game: &mut PgnGame, id: Option<usize>) -> &mut Vec<PgnNode> {
    match id {
        None => &mut game.moves,
        Some(id) => &mut game.variations[id],
    }
}

/// Reads every game of a PGN text, stopping with an error at the first token that exceeds one
/// of `limits`.
pub fn read_games_with(text: &str, limits: &PgnLimits) -> Result<Vec<PgnGame>, PgnSyntaxError> {
    let mut games = Vec::new();
    read_games_each(text, limits, &mut |game, _| {
        games.push(game);
        ControlFlow::Continue(())
    })?;
    Ok(games)
}

/// Reads the games of a PGN text one at a time, as [`read_games_with`] does, handing each to
/// `each` as soon as it is read, with the byte offset in `text` where its reading ended: a
/// caller that processes games as they come holds one at a time, whatever the text's size.
/// `each` stops the reading by returning [`ControlFlow::Break`].
///
/// # Errors
/// The first syntax error or exceeded limit, as [`read_games_with`]; the games before it have
/// been handed out by then.
pub fn read_games_each(
    text: &str,
    limits: &PgnLimits,
    each: &mut dyn FnMut(PgnGame, usize) -> ControlFlow<()>,
) -> Result<(), PgnSyntaxError> {
    let bom = if text.starts_with('\u{feff}') {
        '\u{feff}'.len_utf8()
    } else {
        0
    };
    let text = &text[bom..];
    // Games read and handed out so far; `games` holds the one just finished until then.
    let mut read = 0usize;
    let mut lx = Lexer {
        text,
        pos: 0,
        line: 1,
    };
    let mut games = Vec::new();
    let mut game = PgnGame::default();
    // Stack of open lines: the main line at the bottom, one entry per open variation.
    let main = || OpenLine {
        id: None,
        first_ply: 0,
    };
    let mut open: Vec<OpenLine> = vec![main()];
    let mut variations_read = 0usize;
    let mut in_movetext = false;
    let err = |lx: &Lexer, n: usize, m: &str| PgnSyntaxError {
        game: n,
        line: lx.line,
        message: m.to_owned(),
        limit: None,
    };
    let over = |lx: &Lexer, n: usize, limit: PgnLimit, m: String| PgnSyntaxError {
        game: n,
        line: lx.line,
        message: format!("{m} (limit {limit})"),
        limit: Some(limit),
    };

    // Ends the game being read; `Ok(false)` while a variation is still open.
    let finish = |lx: &Lexer,
                  game: &mut PgnGame,
                  open: &mut Vec<OpenLine>,
                  games: &mut Vec<PgnGame>,
                  read: usize|
     -> Result<bool, PgnSyntaxError> {
        if open.len() != 1 {
            return Ok(false);
        }
        let mut g = std::mem::take(game);
        if g.result.is_empty() {
            // Without a termination marker, fall back on the Result tag, but only when it is a
            // result: anything else (e.g. "0-0", which reads as castling) becomes "*".
            g.result = tag_value(&g.tags, "Result")
                .filter(|r| is_result(r))
                .unwrap_or("*")
                .to_owned();
        }
        if !g.tags.is_empty() || !g.moves.is_empty() || !g.intro_comments.is_empty() {
            if read + games.len() >= limits.max_games {
                return Err(over(
                    lx,
                    read + games.len() + 1,
                    PgnLimit::Games,
                    format!("more than {} games", limits.max_games),
                ));
            }
            games.push(g);
        }
        *open = vec![main()];
        Ok(true)
    };

    while let Some(c) = lx.peek() {
        if deliver(&mut games, &mut read, bom + lx.pos, each).is_break() {
            return Ok(());
        }
        let number = read + 1;
        match c {
            _ if c.is_whitespace() => {
                lx.bump();
            }
            '%' if lx.at_line_start() => lx.skip_line(),
            ';' => lx.skip_line(),
            '[' => {
                if in_movetext {
                    // A tag after movetext without a result: the previous game ended there.
                    if !finish(&lx, &mut game, &mut open, &mut games, read)? {
                        return Err(err(&lx, number, "unclosed variation before the next game"));
                    }
                    in_movetext = false;
                    if deliver(&mut games, &mut read, bom + lx.pos, each).is_break() {
                        return Ok(());
                    }
                }
                let number = read + 1;
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
                let depth = open.len();
                let top = open.last().expect("never empty").id;
                match line_of(&mut game, top).last_mut() {
                    Some(node) => node.comments.push(comment),
                    None if depth == 1 => game.intro_comments.push(comment),
                    None => {} // a comment opening a variation: kept nowhere, harmless
                }
            }
            '(' => {
                lx.bump();
                in_movetext = true;
                let top = open.last().expect("never empty");
                let (parent, parent_first_ply) = (top.id, top.first_ply);
                let parent_len = line_of(&mut game, parent).len();
                if parent_len == 0 {
                    return Err(err(&lx, number, "a variation must follow a move"));
                }
                if open.len() > limits.max_depth {
                    return Err(over(
                        &lx,
                        number,
                        PgnLimit::Depth,
                        format!("variations nested more than {} deep", limits.max_depth),
                    ));
                }
                if variations_read >= limits.max_variations {
                    return Err(over(
                        &lx,
                        number,
                        PgnLimit::Variations,
                        format!("more than {} variations", limits.max_variations),
                    ));
                }
                variations_read += 1;
                let id = game.variations.len();
                game.variations.push(Vec::new());
                line_of(&mut game, parent)
                    .last_mut()
                    .expect("checked")
                    .variations
                    .push(id);
                open.push(OpenLine {
                    id: Some(id),
                    // The variation replaces the parent line's last move.
                    first_ply: parent_first_ply + parent_len - 1,
                });
            }
            ')' => {
                lx.bump();
                if open.len() == 1 {
                    return Err(err(&lx, number, "')' without an open variation"));
                }
                let closed = open.pop().expect("checked").id.expect("not the main line");
                if game.variations[closed].is_empty() {
                    // An empty variation holds no move, so nothing was opened inside it: it is
                    // the last one read, and the last one its parent move refers to.
                    debug_assert_eq!(closed + 1, game.variations.len());
                    game.variations.pop();
                    let parent = open.last().expect("never empty").id;
                    line_of(&mut game, parent)
                        .last_mut()
                        .expect("checked when opened")
                        .variations
                        .pop();
                }
            }
            '$' => {
                lx.bump();
                let digits = lx.word();
                let nag: u8 = digits
                    .parse()
                    .map_err(|_| err(&lx, number, "a NAG is '$' and a number up to 255"))?;
                let top = open.last().expect("never empty").id;
                match line_of(&mut game, top).last_mut() {
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
                    if open.len() != 1 {
                        return Err(err(&lx, number, "result inside a variation"));
                    }
                    game.result = word.replace('½', "1/2");
                    finish(&lx, &mut game, &mut open, &mut games, read)?;
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
                let san = rest.trim_end_matches(['!', '?']);
                if san.is_empty() {
                    return Err(err(&lx, number, &format!("unexpected '{rest}'")));
                }
                let mut node = PgnNode {
                    san: if is_null_move(san) { NULL_MOVE } else { san }.to_owned(),
                    ..PgnNode::default()
                };
                let suffix = &rest[san.len()..];
                if !suffix.is_empty() {
                    node.nags.push(nag_of(suffix).ok_or_else(|| {
                        err(&lx, number, &format!("unknown annotation '{suffix}'"))
                    })?);
                }
                let top = open.last().expect("never empty");
                let (id, first_ply) = (top.id, top.first_ply);
                let line = line_of(&mut game, id);
                let ply = first_ply + line.len() + 1;
                if ply > limits.max_plies_per_game {
                    let max = limits.max_plies_per_game;
                    let message = if id.is_none() {
                        format!("a main line longer than {max} plies")
                    } else {
                        format!("a variation reaching ply {ply}, beyond {max} plies")
                    };
                    return Err(over(&lx, number, PgnLimit::PliesPerGame, message));
                }
                line.push(node);
            }
        }
    }
    if deliver(&mut games, &mut read, bom + lx.pos, each).is_break() {
        return Ok(());
    }
    let number = read + 1;
    if !finish(&lx, &mut game, &mut open, &mut games, read)? {
        return Err(err(&lx, number, "unclosed variation at end of input"));
    }
    let _ = deliver(&mut games, &mut read, bom + lx.pos, each);
    Ok(())
}

/// Hands the finished games (one at most) to `each`, ended at byte `end`.
fn deliver(
    games: &mut Vec<PgnGame>,
    read: &mut usize,
    end: usize,
    each: &mut dyn FnMut(PgnGame, usize) -> ControlFlow<()>,
) -> ControlFlow<()> {
    for game in games.drain(..) {
        *read += 1;
        each(game, end)?;
    }
    ControlFlow::Continue(())
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
