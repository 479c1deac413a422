//! Writing PGN: the roster of tags, movetext wrapped at 80 columns, comments and variations.

use super::*;

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
    /// The next token follows the previous one without a space (after `(`, or for `)`).
    glue: bool,
}

impl Wrapper {
    fn token(&mut self, t: &str) {
        self.put(t, true);
    }

    /// Writes `t`, starting a new line first when it would pass column 80 and `may_break`.
    fn put(&mut self, t: &str, may_break: bool) {
        let len = t.chars().count();
        let space = usize::from(!self.glue);
        if may_break && self.column > 0 && self.column + space + len > 80 {
            self.out.push('\n');
            self.column = 0;
        } else if self.column > 0 && !self.glue {
            self.out.push(' ');
            self.column += 1;
        }
        self.out.push_str(t);
        self.column += len;
        self.glue = false;
    }

    /// A token that sticks to the previous one when it fits on the line.
    fn glued(&mut self, t: &str) {
        self.glue = true;
        self.token(t);
    }

    /// A comment, broken between words to keep lines short (reading joins them again).
    fn comment(&mut self, c: &str) {
        let c = c.replace('}', ")");
        let mut words = c.split_whitespace().peekable();
        let mut first = true;
        if words.peek().is_none() {
            self.token("{}");
        }
        while let Some(word) = words.next() {
            let open = if first { "{" } else { "" };
            let close = if words.peek().is_none() { "}" } else { "" };
            // A line starting with `%` would be an escape line, ignored by readers.
            self.put(&format!("{open}{word}{close}"), !word.starts_with('%'));
            first = false;
        }
    }

    fn open_variation(&mut self) {
        self.token("(");
        self.glue = true;
    }
}

/// Writes the main line and its variations depth first with an explicit stack.
fn write_movetext(w: &mut Wrapper, game: &PgnGame, first_ply: usize, white_first: bool) {
    struct Frame<'a> {
        line: &'a [PgnNode],
        /// The move of the line being written.
        index: usize,
        /// `None` until the move itself is written, then its next variation.
        next_variation: Option<usize>,
        /// Plies before the line's first move (from the first ply of the game).
        first_ply: usize,
        /// Whether a black move needs its `N...` number (at the start and after interruptions).
        need_number: bool,
    }
    let mut written = vec![false; game.variations.len()];
    let mut stack = vec![Frame {
        line: &game.moves,
        index: 0,
        next_variation: None,
        first_ply,
        need_number: true,
    }];
    while let Some(top) = stack.last_mut() {
        let Some(node) = top.line.get(top.index) else {
            stack.pop();
            if !stack.is_empty() {
                w.glued(")");
            }
            continue;
        };
        let Some(next_variation) = top.next_variation else {
            // `ply` counts from 0 for the side that moved first in the game.
            let ply = top
                .first_ply
                .saturating_add(top.index)
                .saturating_add(usize::from(!white_first));
            let number = ply / 2 + 1;
            if ply.is_multiple_of(2) {
                w.token(&format!("{number}."));
            } else if top.need_number {
                w.token(&format!("{number}..."));
            }
            w.token(&node.san);
            for nag in &node.nags {
                w.token(&format!("${nag}"));
            }
            for c in &node.comments {
                w.comment(c);
            }
            top.need_number = !node.comments.is_empty() || !node.variations.is_empty();
            top.next_variation = Some(0);
            continue;
        };
        let Some(&id) = node.variations.get(next_variation) else {
            top.index += 1;
            top.next_variation = None;
            continue;
        };
        top.next_variation = Some(next_variation + 1);
        // Each variation is written once; dangling indices and empty lines are skipped.
        match (game.variations.get(id), written.get_mut(id)) {
            (Some(line), Some(seen)) if !*seen && !line.is_empty() => {
                *seen = true;
                let first_ply = top.first_ply.saturating_add(top.index);
                w.open_variation();
                stack.push(Frame {
                    line,
                    index: 0,
                    next_variation: None,
                    first_ply,
                    need_number: true,
                });
            }
            _ => {}
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
            glue: false,
        };
        for c in &self.intro_comments {
            w.comment(c);
        }
        // The first move's number comes from the FEN (fullmove number and side to move).
        let (first_ply, white_first) = self
            .tag("FEN")
            .and_then(|fen| {
                let mut fields = fen.split_whitespace().skip(1);
                let white = fields.next()? != "b";
                let full: usize = fields.nth(3).and_then(|n| n.parse().ok()).unwrap_or(1);
                Some(((full.max(1) - 1).saturating_mul(2), white))
            })
            .unwrap_or((0, true));
        write_movetext(&mut w, self, first_ply, white_first);
        w.token(if is_result(&self.result) {
            &self.result
        } else {
            "*"
        });
        writeln!(f, "{}", w.out)?;
        Ok(())
    }
}
