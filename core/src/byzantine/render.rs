//! Human views of a Byzantine position: a text table of the rings and an SVG of the circular
//! board (for platforms, and to check the geometry by eye).

use super::{ByzMove, ByzRole, Byzantine, CITADEL_BASE, Cell, piece_label};
use crate::figures::{Figure, LAST_MOVE_FILL, check_glow, piece_svg};
use crate::text_style::TextStyle;
use crate::types::{Color, Piece, Role};
use std::f64::consts::PI;
use std::fmt::Write as _;

/// The Unicode chess symbol of a Byzantine piece: the symbol of the chess piece with the same
/// role or descended from it. The elephant (alfil) takes the bishop's ♗ / ♝, the counselor
/// (fers) the queen's ♕ / ♛; king, rook, knight and pawn their own.
pub const fn symbol(color: Color, role: ByzRole) -> char {
    let role = match role {
        ByzRole::Pawn => Role::Pawn,
        ByzRole::Knight => Role::Knight,
        ByzRole::Elephant => Role::Bishop,
        ByzRole::Rook => Role::Rook,
        ByzRole::Counselor => Role::Queen,
        ByzRole::King => Role::King,
    };
    TextStyle::symbol(Piece { color, role })
}

/// A cell's text in `style`: `.` when empty, else the piece's letter or symbol, pawns followed
/// by their direction (`+` or `-`).
fn label(piece: Option<(Color, ByzRole, bool)>, style: TextStyle) -> String {
    match (piece, style) {
        (None, _) => ".".to_owned(),
        (Some((c, r, up)), TextStyle::Letters) => piece_label(c, r, up),
        (Some((c, r, up)), TextStyle::Symbols) => {
            let mut s = String::from(symbol(c, r));
            if r == ByzRole::Pawn {
                s.push(if up { '+' } else { '-' });
            }
            s
        }
    }
}

/// The rings as rows (`a` outermost first), cells 1 to 16 as columns; numbers wrap from 16 back
/// to 1, and the centre (with the citadels of the Citadel variant) lies below ring `d`. The same
/// as [`to_text_with`] in the [`TextStyle::Letters`] style.
pub fn to_text(pos: &Byzantine) -> String {
    to_text_with(pos, TextStyle::Letters)
}

/// The rings as [`to_text`], with the pieces written in `style`. [`TextStyle::Symbols`] uses
/// [`symbol`] (♔ ♖ ♘ ♙, elephant ♗, counselor ♕ for White; ♚ ♜ ♞ ♟, ♝, ♛ for Black), pawns
/// still followed by their direction; columns are counted in characters, so each symbol stands
/// where its letter would.
pub fn to_text_with(pos: &Byzantine, style: TextStyle) -> String {
    let mut out = String::from("   ");
    for n in 1..=16 {
        let _ = write!(out, "{n:>3}");
    }
    out.push('\n');
    for ring in 0..4u8 {
        let _ = write!(out, " {} ", (b'a' + ring) as char);
        for n in 0..16 {
            // Width pads by characters, not bytes.
            let _ = write!(out, "{:>3}", label(pos.piece_at(ring * 16 + n), style));
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
                format!(
                    "e{}:{}",
                    k + 1,
                    label(pos.piece_at(CITADEL_BASE + k), style)
                )
            );
        }
        out.push('\n');
    }
    let _ = writeln!(out, "{} to move", pos.turn);
    out
}

/// Highlights for [`to_svg_with`]; the default has none.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SvgOptions {
    /// The last move's origin and destination cells (a citadel entry ends on `64..68`), tinted.
    pub last_move: Option<(Cell, Cell)>,
    /// Whether to mark the side to move's king (the one that can be in check) with a red glow.
    pub check: bool,
}

impl SvgOptions {
    /// The highlights after `m` was played, with the side to move's king marked when `check`.
    pub fn after(m: ByzMove, check: bool) -> SvgOptions {
        SvgOptions {
            last_move: Some((m.from, m.to)),
            check,
        }
    }
}

const SIZE: f64 = 640.0;
const CENTRE: f64 = SIZE / 2.0;
/// Outer radius of ring a, b, c, d, then the inner edge of d (the centre's radius).
const RADII: [f64; 5] = [294.0, 238.0, 182.0, 126.0, 68.0];
/// The side of a piece figure's square on the rings, and in a citadel.
const FIGURE: f64 = 42.0;
const CITADEL_FIGURE: f64 = 38.0;
/// How far from the centre a citadel's piece stands.
const CITADEL_PIECE_RADIUS: f64 = 0.52 * RADII[4];

/// Angle of the start of cell `n0` (0-based): cell 1 sits at the bottom, numbers grow
/// counter-clockwise as seen on screen.
fn angle(n0: f64) -> f64 {
    PI / 2.0 - (n0 - 0.5) * (2.0 * PI / 16.0)
}

fn point(r: f64, a: f64) -> (f64, f64) {
    (CENTRE + r * a.cos(), CENTRE + r * a.sin())
}

/// The outline of `cell`: its outer and inner radius and its start and end angle.
fn bounds(cell: Cell) -> (f64, f64, f64, f64) {
    if cell >= CITADEL_BASE {
        let k = f64::from(cell - CITADEL_BASE);
        (RADII[4], 0.001, angle(4.0 * k), angle(4.0 * k + 4.0))
    } else {
        let (ring, n) = (usize::from(cell / 16), f64::from(cell % 16));
        (RADII[ring], RADII[ring + 1], angle(n), angle(n + 1.0))
    }
}

/// The centre of `cell`'s piece, and the angle its ring runs at there.
fn cell_centre(cell: Cell) -> (f64, f64, f64) {
    let (r_out, r_in, a0, a1) = bounds(cell);
    let r = if cell >= CITADEL_BASE {
        CITADEL_PIECE_RADIUS
    } else {
        (r_out + r_in) / 2.0
    };
    let a = (a0 + a1) / 2.0;
    let (x, y) = point(r, a);
    (x, y, a)
}

/// A sector path `d` attribute from `r_out` to `r_in` between angles `a0` and `a1`.
fn sector_path(r_out: f64, r_in: f64, a0: f64, a1: f64) -> String {
    let (x0, y0) = point(r_out, a0);
    let (x1, y1) = point(r_out, a1);
    let (x2, y2) = point(r_in, a1);
    let (x3, y3) = point(r_in, a0);
    format!(
        "M{x0:.1},{y0:.1} A{r_out},{r_out} 0 0 0 {x1:.1},{y1:.1} L{x2:.1},{y2:.1} A{r_in},{r_in} 0 0 1 {x3:.1},{y3:.1} Z"
    )
}

fn sector(out: &mut String, r_out: f64, r_in: f64, a0: f64, a1: f64, fill: &str) {
    let _ = writeln!(
        out,
        r##"<path d="{}" fill="{fill}" stroke="#555" stroke-width="1"/>"##,
        sector_path(r_out, r_in, a0, a1)
    );
}

fn figure(role: ByzRole) -> Figure {
    match role {
        ByzRole::Pawn => Figure::Pawn,
        ByzRole::Knight => Figure::Knight,
        ByzRole::Elephant => Figure::Elephant,
        ByzRole::Rook => Figure::Rook,
        ByzRole::Counselor => Figure::Counselor,
        ByzRole::King => Figure::King,
    }
}

/// The unit vector along the ring at angle `a`, pointing the way a pawn travels: towards higher
/// cell numbers (counter-clockwise on screen) when `up`.
fn travel(a: f64, up: bool) -> (f64, f64) {
    // Cell numbers grow as the angle shrinks: d(point)/d(number) points along (sin a, -cos a).
    let sign = if up { 1.0 } else { -1.0 };
    (sign * a.sin(), -sign * a.cos())
}

/// A pawn's direction mark: a dart-shaped arrowhead centred on (`x`, `y`) pointing along `t`.
fn direction_mark(out: &mut String, x: f64, y: f64, t: (f64, f64), size: f64, up: bool) {
    let (tx, ty) = t;
    // The tip, one back corner, the notch between them, the other back corner.
    let at = |along: f64, across: f64| {
        (
            x + (tx * along - ty * across) * size,
            y + (ty * along + tx * across) * size,
        )
    };
    let (tip, left, notch, right) = (
        at(0.13, 0.0),
        at(-0.11, 0.12),
        at(-0.04, 0.0),
        at(-0.11, -0.12),
    );
    let _ = writeln!(
        out,
        r##"<path class="pawn-direction" data-direction="{}" d="M{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="#1c64c8" stroke="#ffffff" stroke-width="{:.1}" stroke-linejoin="round"/>"##,
        if up { "+" } else { "-" },
        tip.0,
        tip.1,
        left.0,
        left.1,
        notch.0,
        notch.1,
        right.0,
        right.1,
        0.04 * size,
    );
}

fn draw_piece(out: &mut String, cell: Cell, piece: Option<(Color, ByzRole, bool)>) {
    let Some((color, role, up)) = piece else {
        return;
    };
    let (x, y, a) = cell_centre(cell);
    let size = if cell >= CITADEL_BASE {
        CITADEL_FIGURE
    } else {
        FIGURE
    };
    let white = color == Color::White;
    if role == ByzRole::Pawn {
        // The pawn steps back a little and its direction mark stands in front of it.
        let (tx, ty) = travel(a, up);
        let (px, py) = (x - tx * 0.1 * size, y - ty * 0.1 * size);
        out.push_str(&piece_svg(Figure::Pawn, white, px, py, 0.9 * size));
        out.push('\n');
        let (mx, my) = (x + tx * 0.3 * size, y + ty * 0.3 * size - 0.04 * size);
        direction_mark(out, mx, my, (tx, ty), size, up);
    } else {
        out.push_str(&piece_svg(figure(role), white, x, y, size));
        out.push('\n');
    }
}

/// An SVG picture of the position, without highlights.
pub fn to_svg(pos: &Byzantine) -> String {
    to_svg_with(pos, &SvgOptions::default())
}

/// An SVG picture of the circular board: four rings of sixteen cells (`a` outermost), cell
/// numbers around the outside, pieces as [figures](crate::figures) (pawns with a chevron
/// pointing the way they travel), for the Citadel variant the four citadels in the centre, and
/// the highlights of `options` (tinted last-move cells, a red glow under a king in check).
pub fn to_svg_with(pos: &Byzantine, options: &SvgOptions) -> String {
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
        }
    }
    if pos.citadel_variant {
        for k in 0..4u8 {
            let (r_out, r_in, a0, a1) = bounds(CITADEL_BASE + k);
            sector(&mut out, r_out, r_in, a0, a1, "#9fb8a0");
        }
    } else {
        let _ = writeln!(
            out,
            r##"<circle cx="{CENTRE}" cy="{CENTRE}" r="{}" fill="#d9d4c7" stroke="#555"/>"##,
            RADII[4]
        );
    }
    if let Some((from, to)) = options.last_move {
        for cell in [from, to] {
            let (r_out, r_in, a0, a1) = bounds(cell);
            let _ = writeln!(
                out,
                r#"<path class="last-move" d="{}" {LAST_MOVE_FILL}/>"#,
                sector_path(r_out, r_in, a0, a1)
            );
        }
    }
    let cells = if pos.citadel_variant {
        CITADEL_BASE + 4
    } else {
        CITADEL_BASE
    };
    if options.check
        && let Some(king) = (0..cells).find(
            |&c| matches!(pos.piece_at(c), Some((color, ByzRole::King, _)) if color == pos.turn),
        )
    {
        let (x, y, _) = cell_centre(king);
        out.push_str(&check_glow(x, y, 0.62 * FIGURE));
        out.push('\n');
    }
    for cell in 0..CITADEL_BASE {
        draw_piece(&mut out, cell, pos.piece_at(cell));
    }
    if pos.citadel_variant {
        for k in 0..4u8 {
            let cell = CITADEL_BASE + k;
            let piece = pos.piece_at(cell);
            if piece.is_some() {
                draw_piece(&mut out, cell, piece);
            } else {
                let (x, y, _) = cell_centre(cell);
                let _ = writeln!(
                    out,
                    r##"<text x="{x:.1}" y="{y:.1}" font-family="sans-serif" font-size="11" text-anchor="middle" dominant-baseline="central" fill="#333">e{}</text>"##,
                    k + 1
                );
            }
        }
    }
    for n in 0..16 {
        let (x, y) = point(RADII[0] + 14.0, angle(n as f64 + 0.5));
        let _ = writeln!(
            out,
            r##"<text x="{x:.1}" y="{y:.1}" font-family="sans-serif" font-size="13" text-anchor="middle" dominant-baseline="central" fill="#333">{}</text>"##,
            n + 1
        );
    }
    for ring in 0..4 {
        // On the line between cells 16 and 1, near the ring's inner edge (where figures are
        // narrowest).
        let (x, y) = point(RADII[ring + 1] + 9.0, angle(0.0));
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
    use crate::byzantine::{ByzantineRules, ByzantineVariant};
    use crate::{AnyPosition, Variant};

    fn start(variant: Variant) -> Byzantine {
        match AnyPosition::start(variant).expect("start") {
            AnyPosition::Byzantine(p) => p,
            other => panic!("not Byzantine: {other:?}"),
        }
    }

    fn well_formed(svg: &str) {
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<g").count(), svg.matches("</g>").count());
    }

    #[test]
    fn text_and_svg_show_every_piece() {
        let pos = start(Variant::ByzantineCitadel);
        let text = to_text(&pos);
        assert_eq!(text.lines().count(), 7);
        assert!(
            text.lines().nth(1).unwrap().starts_with(" a   K "),
            "{text}"
        );
        let svg = to_svg(&pos);
        well_formed(&svg);
        // 64 cells and 4 citadels, then the figures' own paths.
        assert_eq!(
            svg.matches(r#"<path d="M"#).count() - figure_paths(&svg),
            64 + 4
        );
        assert_eq!(svg.matches(r#"class="piece""#).count(), 32);
        assert_eq!(svg.matches(r#"data-figure="counselor""#).count(), 2);
        assert_eq!(svg.matches(r#"data-figure="elephant""#).count(), 4);
        assert_eq!(svg.matches(r#"class="pawn-direction""#).count(), 16);
        // 4 empty citadel labels, 16 numbers, 4 ring letters; no piece letters.
        assert_eq!(svg.matches("<text").count(), 4 + 16 + 4);
        assert!(!svg.contains("last-move") && !svg.contains(r#"class="check""#));
        let plain = to_svg(&start(Variant::Byzantine));
        well_formed(&plain);
        assert_eq!(plain.matches(r#"class="piece""#).count(), 32);
        assert_eq!(plain.matches("<text").count(), 16 + 4);
    }

    /// Each line of `letters` and `symbols` as characters: the same count, the same character
    /// wherever the letters diagram has no piece letter.
    fn same_geometry(letters: &str, symbols: &str) {
        assert_eq!(letters.lines().count(), symbols.lines().count());
        let last = letters.lines().count() - 1;
        for (i, (l, s)) in letters.lines().zip(symbols.lines()).enumerate() {
            if i == last {
                // The side to move.
                assert_eq!(l, s);
                continue;
            }
            let (l, s): (Vec<char>, Vec<char>) = (l.chars().collect(), s.chars().collect());
            assert_eq!(l.len(), s.len(), "{l:?} / {s:?}");
            for (j, (&a, &b)) in l.iter().zip(&s).enumerate() {
                // A piece letter: the ring letters and citadel names (`e1:`) are followed by a
                // space or a digit.
                let piece = a.is_ascii_alphabetic()
                    && i > 0
                    && j > 1
                    && !(a == 'e' && l.get(j + 1).is_some_and(char::is_ascii_digit));
                if piece {
                    let role = ByzRole::from_letter(a).expect("a piece letter");
                    let color = if a.is_ascii_uppercase() {
                        Color::White
                    } else {
                        Color::Black
                    };
                    assert_eq!(b, symbol(color, role), "{l:?} / {s:?}");
                } else {
                    assert_eq!(a, b, "{l:?} / {s:?}");
                }
            }
        }
    }

    #[test]
    fn symbol_text_keeps_the_geometry() {
        for variant in [Variant::Byzantine, Variant::ByzantineCitadel] {
            let pos = start(variant);
            let letters = to_text(&pos);
            assert_eq!(letters, to_text_with(&pos, TextStyle::Letters));
            let symbols = to_text_with(&pos, TextStyle::Symbols);
            same_geometry(&letters, &symbols);
            let board: String = symbols.lines().skip(1).take(4).collect();
            assert!(
                !board.contains(|c: char| c.is_ascii_uppercase()),
                "{symbols}"
            );
            assert_eq!(board.matches(['♙', '♟']).count(), 16, "{symbols}");
            assert_eq!(board.matches(['♗', '♝']).count(), 4, "{symbols}");
            assert_eq!(board.matches(['♕', '♛']).count(), 2, "{symbols}");
            assert_eq!(board.matches(['♔', '♚']).count(), 2, "{symbols}");
            assert_eq!(board.matches("♙+").count() + board.matches("♟+").count(), 8);
            assert_eq!(board.matches("♙-").count() + board.matches("♟-").count(), 8);
        }
        let citadel = to_text_with(&start(Variant::ByzantineCitadel), TextStyle::Symbols);
        assert!(
            citadel.lines().nth(1).unwrap().starts_with(" a   ♔ "),
            "{citadel}"
        );
        let citadels: String = (1..=4).map(|k| format!("        e{k}:.")).collect();
        assert_eq!(citadel.lines().nth(5).unwrap(), format!(" e {citadels}"));
    }

    #[test]
    fn symbol_text_of_an_occupied_citadel() {
        // The white king in citadel e3: its symbol where its letter was, the citadel row as
        // wide as before.
        let pos = Byzantine::from_text(
            "k15/4R6r4/16/16/2K1 b 1 1",
            ByzantineVariant::Citadel,
            ByzantineRules::default(),
        )
        .expect("position");
        let letters = to_text(&pos);
        assert!(letters.contains("e3:K"), "{letters}");
        let symbols = to_text_with(&pos, TextStyle::Symbols);
        same_geometry(&letters, &symbols);
        assert!(symbols.contains("        e3:♔"), "{symbols}");
        assert!(
            symbols.lines().nth(1).unwrap().starts_with(" a   ♚  .  ."),
            "{symbols}"
        );
        assert!(symbols.contains("♖") && symbols.contains("♜"), "{symbols}");
    }

    /// How many `<path d="M` the piece figures hold.
    fn figure_paths(svg: &str) -> usize {
        svg.lines()
            .filter(|l| l.starts_with(r#"<g class="piece""#))
            .map(|l| l.matches(r#"<path d="M"#).count())
            .sum()
    }

    #[test]
    fn pawn_direction_marks_differ() {
        let pos = start(Variant::Byzantine);
        let svg = to_svg(&pos);
        let marks: Vec<&str> = svg
            .lines()
            .filter(|l| l.starts_with(r#"<path class="pawn-direction""#))
            .collect();
        assert_eq!(marks.len(), 16);
        let up = marks
            .iter()
            .filter(|l| l.contains(r#"data-direction="+""#))
            .count();
        let down = marks
            .iter()
            .filter(|l| l.contains(r#"data-direction="-""#))
            .count();
        assert_eq!((up, down), (8, 8));
        // The same cell with a `+` and a `-` pawn: the darts point opposite ways.
        let mut a = String::new();
        let mut b = String::new();
        direction_mark(&mut a, 100.0, 100.0, travel(0.3, true), FIGURE, true);
        direction_mark(&mut b, 100.0, 100.0, travel(0.3, false), FIGURE, false);
        assert_ne!(a, b);
        // The tip: the path's first point.
        let tip = |s: &str| -> (f64, f64) {
            let d = s.split(r#" d="M"#).nth(1).unwrap();
            let (x, rest) = d.split_once(',').unwrap();
            let y = rest.split(' ').next().unwrap();
            (x.parse().unwrap(), y.parse().unwrap())
        };
        let ((xa, ya), (xb, yb)) = (tip(&a), tip(&b));
        let centre = (100.0, 100.0);
        assert!(((xa - centre.0) + (xb - centre.0)).abs() < 0.2);
        assert!(((ya - centre.1) + (yb - centre.1)).abs() < 0.2);
        // At the bottom (cell 1), `+` points right on screen: towards cell 2.
        let mut bottom = String::new();
        direction_mark(&mut bottom, 0.0, 0.0, travel(PI / 2.0, true), FIGURE, true);
        assert!(tip(&bottom).0 > 0.0);
        assert!(tip(&bottom).1.abs() < 0.1);
        // Drawn on the board, the `+` pawn of a2 and the `-` pawn of a15 face each other's
        // ways: a2's mark lies right of its cell centre at the bottom, a15's left of its own.
        let mark = |cell: Cell| -> String {
            let mut out = String::new();
            draw_piece(&mut out, cell, pos.piece_at(cell));
            out
        };
        let (a2, a15) = (mark(1), mark(14));
        assert!(a2.contains(r#"data-direction="+""#) && a15.contains(r#"data-direction="-""#));
        let mark_tip = |s: &str| tip(s.lines().nth(1).unwrap());
        assert!(mark_tip(&a2).0 > cell_centre(1).0);
        assert!(mark_tip(&a15).0 < cell_centre(14).0);
    }

    #[test]
    fn svg_highlights_only_when_asked() {
        let pos = start(Variant::ByzantineCitadel);
        let plain = to_svg_with(&pos, &SvgOptions::default());
        assert_eq!(plain, to_svg(&pos));
        let moved = SvgOptions::after(ByzMove { from: 1, to: 2 }, false);
        let svg = to_svg_with(&pos, &moved);
        well_formed(&svg);
        assert_eq!(svg.matches(r#"class="last-move""#).count(), 2);
        assert!(!svg.contains(r#"class="check""#));
        // A citadel can be tinted too.
        let entry = SvgOptions {
            last_move: Some((48, CITADEL_BASE)),
            check: true,
        };
        let svg = to_svg_with(&pos, &entry);
        well_formed(&svg);
        let (r_out, r_in, a0, a1) = bounds(CITADEL_BASE);
        assert!(svg.contains(&format!(
            r#"class="last-move" d="{}""#,
            sector_path(r_out, r_in, a0, a1)
        )));
        assert_eq!(svg.matches(r#"class="check""#).count(), 1);
        // White to move: the glow is under the white king, on a1 in the Citadel variant.
        let (x, y, _) = cell_centre(0);
        assert!(svg.contains(&format!(r#"class="check" cx="{x:.1}" cy="{y:.1}""#)));
        assert!(svg.find(r#"class="check""#) < svg.find(r#"class="piece""#));
    }
}
