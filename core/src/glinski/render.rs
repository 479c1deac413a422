//! Human views of a Glinski position: a hex-grid text diagram and an SVG picture (for
//! platforms, and to check the geometry by eye).
//!
//! Both draw the board the usual way: files as vertical columns (`a` left, `l` right), each
//! file half a cell higher than its outer neighbour, `f1` the bottom corner and `f11` the top.
//! With axial coordinates a cell's height in half-cells is `2r + q`.

use super::Glinski;
use super::geometry::{Cells, FILES, VALID, at, cell_name, colour_class, coords};
use crate::types::Color;
use std::fmt::Write as _;

/// A text diagram: one line per half-cell of height (21 lines), each cell as its piece letter
/// (upper case White) or `.`, files four columns apart, file letters underneath.
pub fn to_text(pos: &Glinski) -> String {
    let mut out = String::new();
    for y in (-10..=10).rev() {
        let mut line = String::from("  ");
        // Cells of this height have q of the same parity as y, r = (y - q) / 2.
        for q in -5..=5i32 {
            if (y - q) % 2 != 0 {
                continue;
            }
            let Some(c) = at(q, (y - q) / 2) else {
                continue;
            };
            let col = 2 + 4 * (q + 5) as usize;
            while line.len() < col {
                line.push(' ');
            }
            line.push(pos.piece_at(c).map_or('.', |p| p.char()));
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

/// Hexagon circumradius in SVG units.
const R: f64 = 30.0;
const SQRT3: f64 = 1.732_050_807_568_877_2;
const WIDTH: f64 = 20.0 * R;
const HEIGHT: f64 = 12.0 * SQRT3 * R;

/// The three cell colours (class 0 holds the centre `f6`).
const FILLS: [&str; 3] = ["#d2a56d", "#f0d9b5", "#a77b4f"];

fn centre(q: i32, r: i32) -> (f64, f64) {
    (
        WIDTH / 2.0 + 1.5 * R * f64::from(q),
        HEIGHT / 2.0 - SQRT3 * R * (f64::from(r) + f64::from(q) / 2.0),
    )
}

/// An SVG picture: 91 flat-topped hexagons in the three colours, pieces as letters (white
/// letters outlined in black, black letters outlined in white), cell names in empty cells and
/// file letters along the bottom.
pub fn to_svg(pos: &Glinski) -> String {
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
        let (q, r) = coords(c);
        let (x, y) = centre(q, r);
        let mut points = String::new();
        for k in 0..6 {
            let a = std::f64::consts::PI / 3.0 * f64::from(k);
            let _ = write!(points, "{:.1},{:.1} ", x + R * a.cos(), y + R * a.sin());
        }
        let _ = writeln!(
            out,
            r##"<polygon points="{}" fill="{}" stroke="#555" stroke-width="1"/>"##,
            points.trim_end(),
            FILLS[colour_class(c) as usize]
        );
        match pos.piece_at(c) {
            Some(p) => {
                let (fill, stroke) = match p.color {
                    Color::White => ("#ffffff", "#000000"),
                    Color::Black => ("#000000", "#ffffff"),
                };
                let _ = writeln!(
                    out,
                    r#"<text x="{x:.1}" y="{y:.1}" font-family="sans-serif" font-size="24" font-weight="bold" text-anchor="middle" dominant-baseline="central" fill="{fill}" stroke="{stroke}" stroke-width="0.8">{}</text>"#,
                    p.char().to_ascii_uppercase()
                );
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

    #[test]
    fn text_diagram_of_the_start() {
        let text = to_text(&Glinski::new());
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
    fn svg_shows_every_cell_and_piece() {
        let svg = to_svg(&Glinski::new());
        assert!(svg.starts_with("<svg"));
        assert_eq!(svg.matches("<polygon").count(), 91);
        // 36 pieces, 55 empty-cell names, 11 file letters.
        assert_eq!(svg.matches("<text").count(), 36 + 55 + 11);
        for fill in FILLS {
            assert!(svg.contains(fill));
        }
    }
}
