//! Human views of a Glinski position: a hex-grid text diagram and an SVG picture (for
//! platforms, and to check the geometry by eye).
//!
//! Both draw the board the usual way: files as vertical columns (`a` left, `l` right), each
//! file half a cell higher than its outer neighbour, `f1` the bottom corner and `f11` the top.
//! With axial coordinates a cell's height in half-cells is `2r + q`.

use super::geometry::{Cell, Cells, FILES, VALID, at, cell_name, colour_class, coords};
use super::{Glinski, HexMove};
use crate::figures::{Figure, LAST_MOVE_FILL, check_glow, piece_svg};
use crate::text_style::TextStyle;
use crate::types::{Color, Role};
use std::fmt::Write as _;

/// A text diagram: one line per half-cell of height (21 lines), each cell as its piece letter
/// (upper case White) or `.`, files four columns apart, file letters underneath. The same as
/// [`to_text_with`] in the [`TextStyle::Letters`] style.
pub fn to_text(pos: &Glinski) -> String {
    to_text_with(pos, TextStyle::Letters)
}

/// A text diagram as [`to_text`], with the pieces written in `style` ([`TextStyle::Symbols`]:
/// ♔♕♖♗♘♙ for White, ♚♛♜♝♞♟ for Black). Every cell is one character in either style, so each
/// symbol stands in the column its letter would.
pub fn to_text_with(pos: &Glinski, style: TextStyle) -> String {
    let mut out = String::new();
    for y in (-10..=10).rev() {
        let mut line = String::from("  ");
        // The line's width in characters (a symbol is one character but several bytes).
        let mut width = 2;
        // Cells of this height have q of the same parity as y, r = (y - q) / 2.
        for q in -5..=5i32 {
            if (y - q) % 2 != 0 {
                continue;
            }
            let Some(c) = at(q, (y - q) / 2) else {
                continue;
            };
            let col = 2 + 4 * (q + 5) as usize;
            while width < col {
                line.push(' ');
                width += 1;
            }
            line.push(pos.piece_at(c).map_or('.', |p| style.piece_char(p)));
            width += 1;
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str("  ");
    for (i, f) in FILES.iter().enumerate() {
        if i > 0 {
            out.push_str("   ");
        }
        out.push(char::from(*f));
    }
    out.push('\n');
    let _ = writeln!(out, "{} to move", pos.turn);
    out
}

/// Highlights for [`to_svg_with`]; the default has none.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SvgOptions {
    /// The last move's origin and destination cells, tinted.
    pub last_move: Option<(Cell, Cell)>,
    /// Whether to mark the side to move's king (the one that can be in check) with a red glow.
    pub check: bool,
}

impl SvgOptions {
    /// The highlights after `m` was played, with the side to move's king marked when `check`.
    pub fn after(m: HexMove, check: bool) -> SvgOptions {
        SvgOptions {
            last_move: Some((m.from, m.to)),
            check,
        }
    }
}

/// Hexagon circumradius in SVG units.
const R: f64 = 30.0;
const SQRT3: f64 = 1.732_050_807_568_877_2;
const WIDTH: f64 = 20.0 * R;
const HEIGHT: f64 = 12.0 * SQRT3 * R;
/// The side of a piece figure's square.
const FIGURE: f64 = 1.55 * R;

/// The three cell colours (class 0 holds the centre `f6`).
const FILLS: [&str; 3] = ["#d2a56d", "#f0d9b5", "#a77b4f"];

fn centre(q: i32, r: i32) -> (f64, f64) {
    (
        WIDTH / 2.0 + 1.5 * R * f64::from(q),
        HEIGHT / 2.0 - SQRT3 * R * (f64::from(r) + f64::from(q) / 2.0),
    )
}

fn cell_centre(c: Cell) -> (f64, f64) {
    let (q, r) = coords(c);
    centre(q, r)
}

/// The corners of the flat-topped hexagon around (`x`, `y`), as a `points` attribute.
fn hexagon(x: f64, y: f64) -> String {
    let mut points = String::new();
    for k in 0..6 {
        let a = std::f64::consts::PI / 3.0 * f64::from(k);
        let _ = write!(points, "{:.1},{:.1} ", x + R * a.cos(), y + R * a.sin());
    }
    points.truncate(points.trim_end().len());
    points
}

/// An SVG picture of the position, without highlights.
pub fn to_svg(pos: &Glinski) -> String {
    to_svg_with(pos, &SvgOptions::default())
}

/// An SVG picture: 91 flat-topped hexagons in the three colours, pieces as
/// [figures](crate::figures), cell names in empty cells, file letters along the bottom, and the
/// highlights of `options` (tinted last-move cells, a red glow under a king in check).
pub fn to_svg_with(pos: &Glinski, options: &SvgOptions) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT:.0}" viewBox="0 0 {WIDTH} {HEIGHT:.0}">"#
    );
    let _ = writeln!(
        out,
        r##"<rect width="{WIDTH}" height="{HEIGHT:.0}" fill="#f4f1ea"/>"##
    );
    for c in Cells(VALID) {
        let (x, y) = cell_centre(c);
        let _ = writeln!(
            out,
            r##"<polygon points="{}" fill="{}" stroke="#555" stroke-width="1"/>"##,
            hexagon(x, y),
            FILLS[colour_class(c) as usize]
        );
    }
    if let Some((from, to)) = options.last_move {
        for c in [from, to] {
            let (x, y) = cell_centre(c);
            let _ = writeln!(
                out,
                r#"<polygon class="last-move" points="{}" {LAST_MOVE_FILL}/>"#,
                hexagon(x, y)
            );
        }
    }
    if options.check
        && let Some(king) = Cells(pos.pieces(pos.turn, Role::King)).next()
    {
        let (x, y) = cell_centre(king);
        out.push_str(&check_glow(x, y, R * 0.95));
        out.push('\n');
    }
    for c in Cells(VALID) {
        let (x, y) = cell_centre(c);
        match pos.piece_at(c) {
            Some(p) => {
                out.push_str(&piece_svg(
                    Figure::from_role(p.role),
                    p.color == Color::White,
                    x,
                    y,
                    FIGURE,
                ));
                out.push('\n');
            }
            None => {
                let _ = writeln!(
                    out,
                    r##"<text x="{x:.1}" y="{y:.1}" font-family="sans-serif" font-size="10" text-anchor="middle" dominant-baseline="central" fill="#5a4a3a">{}</text>"##,
                    cell_name(c)
                );
            }
        }
    }
    for (i, f) in FILES.iter().enumerate() {
        let q = i as i32 - 5;
        // Below the file's first cell.
        let r = -5 - q.min(0);
        let (x, y) = centre(q, r);
        let _ = writeln!(
            out,
            r##"<text x="{x:.1}" y="{:.1}" font-family="sans-serif" font-size="14" text-anchor="middle" dominant-baseline="central" fill="#1d3557">{}</text>"##,
            y + SQRT3 * R * 0.5 + 12.0,
            char::from(*f)
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::glinski::parse_cell;
    use crate::types::Piece;

    #[test]
    fn text_diagram_of_the_start() {
        let text = to_text(&start());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 23);
        // f11 (a black bishop) alone on the top line, in the f column.
        assert_eq!(lines[0], format!("{}b", " ".repeat(22)));
        // f1, the white bishop at the bottom corner.
        assert_eq!(lines[20], format!("{}B", " ".repeat(22)));
        assert_eq!(lines[21], "  a   b   c   d   e   f   g   h   i   k   l");
        // Height -4: b2, d3 (pawn), f4, h3 (pawn), k2.
        assert_eq!(lines[14], "      .       P       .       P       .");
        // Height 9: e10 (queen) and g10 (king); the bishop f10 sits half a cell lower.
        assert_eq!(lines[1], format!("{}q{}k", " ".repeat(18), " ".repeat(7)));
        assert_eq!(text.matches(['p', 'P']).count(), 18);
        let board: String = lines[..21].concat();
        assert_eq!(board.chars().filter(char::is_ascii_alphabetic).count(), 36);
        assert_eq!(board.matches('.').count(), 55);
        assert_eq!(lines[22], "white to move");
    }

    #[test]
    fn symbol_diagram_keeps_the_geometry() {
        let pos = start();
        let letters = to_text(&pos);
        assert_eq!(letters, to_text_with(&pos, TextStyle::Letters));
        let symbols = to_text_with(&pos, TextStyle::Symbols);
        let lines: Vec<&str> = symbols.lines().collect();
        assert_eq!(lines.len(), 23);
        assert_eq!(lines[0], format!("{}♝", " ".repeat(22)));
        assert_eq!(lines[1], format!("{}♛{}♚", " ".repeat(18), " ".repeat(7)));
        assert_eq!(lines[14], "      .       ♙       .       ♙       .");
        assert_eq!(lines[19], format!("{}♕{}♔", " ".repeat(18), " ".repeat(7)));
        assert_eq!(lines[20], format!("{}♗", " ".repeat(22)));
        assert_eq!(symbols.matches(['♙', '♟']).count(), 18);
        assert_eq!(symbols.matches(['♘', '♞']).count(), 4);
        assert_eq!(symbols.matches(['♖', '♜']).count(), 4);
        assert_eq!(symbols.matches(['♗', '♝']).count(), 6);
        assert!(!lines[..21].concat().contains(char::is_alphabetic));
        // Line by line, the same characters at the same character positions, a symbol where
        // a letter was; the file letters and the side to move unchanged.
        let letter_lines: Vec<&str> = letters.lines().collect();
        for (l, s) in letter_lines[..21].iter().zip(&lines[..21]) {
            let (l, s): (Vec<char>, Vec<char>) = (l.chars().collect(), s.chars().collect());
            assert_eq!(l.len(), s.len(), "{l:?} / {s:?}");
            for (&a, &b) in l.iter().zip(&s) {
                let expected = Piece::from_char(a).map_or(a, TextStyle::symbol);
                assert_eq!(b, expected, "{l:?} / {s:?}");
            }
        }
        assert_eq!(letter_lines[21..], lines[21..]);
    }

    #[test]
    fn symbol_diagram_after_moves() {
        // After f5f6 e7e6 Qe1-c3.
        let pos = Glinski::from_text(
            "b/qbk/n1b1n/r5r/ppp1ppppp/4pP5/11/4P1P4/2QP1B1P3/2P2B2P2/1PRN1BKNRP1 b - 1 2",
        )
        .expect("position");
        let (letters, symbols) = (to_text(&pos), to_text_with(&pos, TextStyle::Symbols));
        assert_eq!(
            letters
                .lines()
                .map(|l| l.chars().count())
                .collect::<Vec<_>>(),
            symbols
                .lines()
                .map(|l| l.chars().count())
                .collect::<Vec<_>>()
        );
        assert!(symbols.ends_with("black to move\n"), "{symbols}");
    }

    fn start() -> Glinski {
        match crate::AnyPosition::start(crate::Variant::Glinski).expect("start") {
            crate::AnyPosition::Glinski(p) => p,
            other => panic!("not Glinski: {other:?}"),
        }
    }

    fn well_formed(svg: &str) {
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<g").count(), svg.matches("</g>").count());
    }

    #[test]
    fn svg_shows_every_cell_and_piece() {
        let svg = to_svg(&start());
        well_formed(&svg);
        assert_eq!(svg.matches("<polygon").count(), 91);
        // Every piece of the start as a figure: 9 pawns, 3 bishops, 2 knights, 2 rooks, a
        // queen and a king a side.
        assert_eq!(svg.matches(r#"class="piece""#).count(), 36);
        assert_eq!(svg.matches(r#"data-figure="pawn""#).count(), 18);
        assert_eq!(svg.matches(r#"data-figure="bishop""#).count(), 6);
        assert_eq!(svg.matches(r#"data-color="black""#).count(), 18);
        // 55 empty-cell names, 11 file letters, no piece letters.
        assert_eq!(svg.matches("<text").count(), 55 + 11);
        assert!(svg.contains(">f6</text>"));
        for fill in FILLS {
            assert!(svg.contains(fill));
        }
        assert!(!svg.contains("last-move") && !svg.contains(r#"class="check""#));
    }

    #[test]
    fn svg_highlights_only_when_asked() {
        let pos = start();
        let (from, to) = (
            parse_cell("f5").expect("cell"),
            parse_cell("f7").expect("cell"),
        );
        let moved = SvgOptions {
            last_move: Some((from, to)),
            check: false,
        };
        let svg = to_svg_with(&pos, &moved);
        well_formed(&svg);
        assert_eq!(svg.matches(r#"class="last-move""#).count(), 2);
        assert!(!svg.contains(r#"class="check""#));
        let (x, y) = cell_centre(to);
        assert!(svg.contains(&format!(r#"class="last-move" points="{}""#, hexagon(x, y))));
        let svg = to_svg_with(
            &pos,
            &SvgOptions::after(
                HexMove {
                    from,
                    to,
                    promotion: None,
                },
                true,
            ),
        );
        well_formed(&svg);
        assert_eq!(svg.matches(r#"class="last-move""#).count(), 2);
        assert_eq!(svg.matches(r#"class="check""#).count(), 1);
        // White is to move: the glow sits on the white king's cell, g1, under the pieces.
        let (x, y) = cell_centre(parse_cell("g1").expect("cell"));
        assert!(svg.contains(&format!(r#"class="check" cx="{x:.1}" cy="{y:.1}""#)));
        assert!(svg.find(r#"class="check""#) < svg.find(r#"class="piece""#));
        let plain = to_svg_with(&pos, &SvgOptions::default());
        assert_eq!(plain, to_svg(&pos));
        assert!(!plain.contains("last-move") && !plain.contains(r#"class="check""#));
    }
}
