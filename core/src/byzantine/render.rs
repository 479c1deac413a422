//! Human views of a Byzantine position: a text table of the rings and an SVG of the circular
//! board (for platforms, and to check the geometry by eye).

use super::{ByzRole, Byzantine, CITADEL_BASE, Cell, piece_label};
use crate::types::Color;
use std::f64::consts::PI;
use std::fmt::Write as _;

fn label(piece: Option<(Color, ByzRole, bool)>) -> String {
    piece.map_or_else(|| ".".to_owned(), |(c, r, up)| piece_label(c, r, up))
}

/// The rings as rows (`a` outermost first), cells 1 to 16 as columns; numbers wrap from 16 back
/// to 1, and the centre (with the citadels of the Citadel variant) lies below ring `d`.
pub fn to_text(pos: &Byzantine) -> String {
    let mut out = String::from("   ");
    for n in 1..=16 {
        let _ = write!(out, "{n:>3}");
    }
    out.push('\n');
    for ring in 0..4u8 {
        let _ = write!(out, " {} ", (b'a' + ring) as char);
        for n in 0..16 {
            let _ = write!(out, "{:>3}", label(pos.piece_at(ring * 16 + n)));
        }
        out.push('\n');
    }
    if pos.citadel_variant {
        out.push_str(" e ");
        for k in 0..4u8 {
            // Citadel e(k+1) adjoins d(4k+1)..d(4k+4): centre it under those columns.
            let _ = write!(
                out,
                "{:>12}",
                format!("e{}:{}", k + 1, label(pos.piece_at(CITADEL_BASE + k)))
            );
        }
        out.push('\n');
    }
    let _ = writeln!(out, "{} to move", pos.turn);
    out
}

const SIZE: f64 = 640.0;
const CENTRE: f64 = SIZE / 2.0;
/// Outer radius of ring a, b, c, d, then the inner edge of d (the centre's radius).
const RADII: [f64; 5] = [290.0, 230.0, 170.0, 110.0, 50.0];

/// Angle of the start of cell `n0` (0-based): cell 1 sits at the bottom, numbers grow
/// counter-clockwise as seen on screen.
fn angle(n0: f64) -> f64 {
    PI / 2.0 - (n0 - 0.5) * (2.0 * PI / 16.0)
}

fn point(r: f64, a: f64) -> (f64, f64) {
    (CENTRE + r * a.cos(), CENTRE + r * a.sin())
}

fn sector(out: &mut String, r_out: f64, r_in: f64, a0: f64, a1: f64, fill: &str) {
    let (x0, y0) = point(r_out, a0);
    let (x1, y1) = point(r_out, a1);
    let (x2, y2) = point(r_in, a1);
    let (x3, y3) = point(r_in, a0);
    let _ = writeln!(
        out,
        r##"<path d="M{x0:.1},{y0:.1} A{r_out},{r_out} 0 0 0 {x1:.1},{y1:.1} L{x2:.1},{y2:.1} A{r_in},{r_in} 0 0 1 {x3:.1},{y3:.1} Z" fill="{fill}" stroke="#555" stroke-width="1"/>"##
    );
}

fn piece_text(out: &mut String, x: f64, y: f64, piece: Option<(Color, ByzRole, bool)>) {
    let Some((color, _, _)) = piece else { return };
    let (fill, stroke) = match color {
        Color::White => ("#ffffff", "#000000"),
        Color::Black => ("#000000", "#ffffff"),
    };
    let _ = writeln!(
        out,
        r#"<text x="{x:.1}" y="{y:.1}" font-family="sans-serif" font-size="22" font-weight="bold" text-anchor="middle" dominant-baseline="central" fill="{fill}" stroke="{stroke}" stroke-width="0.8">{}</text>"#,
        label(piece)
    );
}

/// An SVG picture of the circular board: four rings of sixteen cells (`a` outermost), cell
/// numbers around the outside, pieces as letters (pawns with their direction), and for the
/// Citadel variant the four citadels in the centre.
pub fn to_svg(pos: &Byzantine) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{SIZE}" height="{SIZE}" viewBox="0 0 {SIZE} {SIZE}">"#
    );
    let _ = writeln!(
        out,
        r##"<rect width="{SIZE}" height="{SIZE}" fill="#f4f1ea"/>"##
    );
    for ring in 0..4usize {
        for n in 0..16usize {
            let fill = if (ring + n) % 2 == 0 {
                "#e8d3a9"
            } else {
                "#b58863"
            };
            let (a0, a1) = (angle(n as f64), angle(n as f64 + 1.0));
            sector(&mut out, RADII[ring], RADII[ring + 1], a0, a1, fill);
            let (x, y) = point((RADII[ring] + RADII[ring + 1]) / 2.0, (a0 + a1) / 2.0);
            piece_text(&mut out, x, y, pos.piece_at((ring * 16 + n) as Cell));
        }
    }
    if pos.citadel_variant {
        for k in 0..4usize {
            let (a0, a1) = (angle(4.0 * k as f64), angle(4.0 * k as f64 + 4.0));
            sector(&mut out, RADII[4], 0.001, a0, a1, "#9fb8a0");
            let (x, y) = point(RADII[4] / 2.0, (a0 + a1) / 2.0);
            let piece = pos.piece_at(CITADEL_BASE + k as Cell);
            if piece.is_some() {
                piece_text(&mut out, x, y, piece);
            } else {
                let _ = writeln!(
                    out,
                    r##"<text x="{x:.1}" y="{y:.1}" font-family="sans-serif" font-size="11" text-anchor="middle" dominant-baseline="central" fill="#333">e{}</text>"##,
                    k + 1
                );
            }
        }
    } else {
        let _ = writeln!(
            out,
            r##"<circle cx="{CENTRE}" cy="{CENTRE}" r="{}" fill="#d9d4c7" stroke="#555"/>"##,
            RADII[4]
        );
    }
    for n in 0..16 {
        let (x, y) = point(RADII[0] + 16.0, angle(n as f64 + 0.5));
        let _ = writeln!(
            out,
            r##"<text x="{x:.1}" y="{y:.1}" font-family="sans-serif" font-size="13" text-anchor="middle" dominant-baseline="central" fill="#333">{}</text>"##,
            n + 1
        );
    }
    for ring in 0..4 {
        let (x, y) = point((RADII[ring] + RADII[ring + 1]) / 2.0, angle(0.0));
        let _ = writeln!(
            out,
            r##"<text x="{x:.1}" y="{y:.1}" font-family="sans-serif" font-size="12" text-anchor="middle" dominant-baseline="central" fill="#1d3557">{}</text>"##,
            (b'a' + ring as u8) as char
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::byzantine::ByzantineRules;

    #[test]
    fn text_and_svg_show_every_piece() {
        let pos = Byzantine::start(true, ByzantineRules::default());
        let text = to_text(&pos);
        assert_eq!(text.lines().count(), 7);
        assert!(
            text.lines().nth(1).unwrap().starts_with(" a   K "),
            "{text}"
        );
        let svg = to_svg(&pos);
        assert!(svg.starts_with("<svg"));
        assert_eq!(svg.matches("<path").count(), 64 + 4);
        // 32 pieces, 4 empty citadel labels, 16 numbers, 4 ring letters.
        assert_eq!(svg.matches("<text").count(), 32 + 4 + 16 + 4);
    }
}
