//! SVG piece figures for the board pictures of every variant.
//!
//! The figures are original to Arbiter: drawn for this project from plain SVG paths, rectangles
//! and circles on a 100 × 100 design grid, not derived from any existing piece set, and licensed
//! like the rest of the project (MIT OR Apache-2.0).
//!
//! Each figure stands on a common plinth, faces left where it has a face (knight, elephant) and
//! is built from up to four layers: the body (filled, with an outline), ivory parts (tusks),
//! detail lines and detail spots (eyes, jewels). White figures are light with dark outlines and
//! details; black figures are dark with light details, so both read on light and dark cells.
//!
//! [`piece_svg`] scales a figure into place; it is a pure function returning an SVG `<g>`
//! element marked `class="piece"`. The renderers' shared highlights (the last-move tint and the
//! red glow under a king in check) live here too, crate-internal.

use crate::types::Role;
use std::fmt::Write as _;

/// The side of the square design grid the figures are drawn on.
pub const GRID: f64 = 100.0;

/// A piece figure.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Figure {
    /// King: a crowned figure topped by a cross.
    King,
    /// Queen: a crown of five balled points.
    Queen,
    /// Rook: a tower with battlements.
    Rook,
    /// Bishop: a mitre with its cleft and a ball on top.
    Bishop,
    /// Knight: a horse's head facing left.
    Knight,
    /// Pawn: a ball on a collar and a flared body.
    Pawn,
    /// Byzantine counselor (fers): a wide turban with a diamond jewel and a plume.
    Counselor,
    /// Byzantine elephant (alfil): an elephant's head facing left, with ear, trunk and tusk.
    Elephant,
}

impl Figure {
    /// Every figure, in the order of the enum.
    pub const ALL: [Figure; 8] = [
        Figure::King,
        Figure::Queen,
        Figure::Rook,
        Figure::Bishop,
        Figure::Knight,
        Figure::Pawn,
        Figure::Counselor,
        Figure::Elephant,
    ];

    /// The figure of a chess role (chess, crazyhouse, bughouse and Glinski).
    pub const fn from_role(role: Role) -> Figure {
        match role {
            Role::King => Figure::King,
            Role::Queen => Figure::Queen,
            Role::Rook => Figure::Rook,
            Role::Bishop => Figure::Bishop,
            Role::Knight => Figure::Knight,
            Role::Pawn => Figure::Pawn,
        }
    }

    /// The lower-case English name, as written in the `data-figure` attribute.
    pub const fn name(self) -> &'static str {
        match self {
            Figure::King => "king",
            Figure::Queen => "queen",
            Figure::Rook => "rook",
            Figure::Bishop => "bishop",
            Figure::Knight => "knight",
            Figure::Pawn => "pawn",
            Figure::Counselor => "counselor",
            Figure::Elephant => "elephant",
        }
    }
}

impl From<Role> for Figure {
    fn from(role: Role) -> Figure {
        Figure::from_role(role)
    }
}

/// The layers of one figure on the design grid.
struct Drawing {
    /// Filled with the body colour and outlined.
    body: &'static str,
    /// Filled ivory and outlined, for either colour.
    ivory: &'static str,
    /// Stroked in the detail colour, not filled.
    lines: &'static str,
    /// Filled in the detail colour, not stroked.
    spots: &'static str,
}

/// The plinth every figure stands on.
const PLINTH: &str = r#"<rect x="22" y="80" width="56" height="10" rx="3"/>"#;

fn drawing(kind: Figure) -> Drawing {
    match kind {
        Figure::Pawn => Drawing {
            body: concat!(
                r#"<path d="M41,45 C41,58 35,68 27,80 L73,80 C65,68 59,58 59,45 Z"/>"#,
                r#"<rect x="34" y="41" width="32" height="7" rx="3.5"/>"#,
                r#"<circle cx="50" cy="28" r="12.5"/>"#,
            ),
            ivory: "",
            lines: r#"<path d="M28,80 H72"/>"#,
            spots: "",
        },
        Figure::Rook => Drawing {
            body: concat!(
                r#"<path d="M31,80 L35,38 L65,38 L69,80 Z"/>"#,
                r#"<rect x="27" y="71" width="46" height="9" rx="2"/>"#,
                r#"<path d="M26,38 V13 H37 V21 H45 V13 H55 V21 H63 V13 H74 V38 Z"/>"#,
            ),
            ivory: "",
            lines: r#"<path d="M28,30 H72 M36,38 H64 M32,71 H68 M29,80 H71"/>"#,
            spots: "",
        },
        Figure::Bishop => Drawing {
            body: concat!(
                r#"<path d="M40,62 C40,70 34,75 28,80 L72,80 C66,75 60,70 60,62 Z"/>"#,
                r#"<rect x="33" y="55" width="34" height="8" rx="4"/>"#,
                r#"<path d="M50,19 C35,29 30,43 36,55 L64,55 C70,43 65,29 50,19 Z"/>"#,
                r#"<circle cx="50" cy="13.5" r="6"/>"#,
            ),
            ivory: "",
            lines: r#"<path d="M58,29 L45,46 M29,80 H71"/>"#,
            spots: "",
        },
        Figure::Queen => Drawing {
            body: concat!(
                r#"<path d="M27,80 L17,34 L31,57 L33,28 L43,54 L50,23 L57,54 L67,28 L69,57 L83,34 L73,80 Z"/>"#,
                r#"<circle cx="17" cy="30" r="5"/><circle cx="33" cy="24" r="5"/>"#,
                r#"<circle cx="50" cy="19" r="5"/><circle cx="67" cy="24" r="5"/>"#,
                r#"<circle cx="83" cy="30" r="5"/>"#,
            ),
            ivory: "",
            lines: r#"<path d="M28,69 Q50,62 72,69 M29,80 H71"/>"#,
            spots: "",
        },
        Figure::King => Drawing {
            body: concat!(
                r#"<path d="M43,54 C43,42 45,35 50,29 C55,35 57,42 57,54 Z"/>"#,
                r#"<path d="M27,80 C13,63 15,40 33,40 C41,40 47,46 50,55 C53,46 59,40 67,40 C85,40 87,63 73,80 Z"/>"#,
                r#"<path d="M47,6 H53 V12 H59 V18 H53 V29 H47 V18 H41 V12 H47 Z"/>"#,
            ),
            ivory: "",
            lines: r#"<path d="M28,69 Q50,61 72,69 M50,56 V66 M29,80 H71"/>"#,
            spots: "",
        },
        Figure::Knight => Drawing {
            body: r#"<path d="M75,80 C80,60 78,36 62,22 L60,9 L52,18 C40,19 30,28 25,42 C21,49 20,55 25,58 C30,61 36,57 41,56 C45,55 48,53 51,51 C47,61 37,70 35,80 Z"/>"#,
            ivory: "",
            lines: r#"<path d="M63,26 C71,40 73,58 70,76 M36,80 H74"/>"#,
            spots: r#"<circle cx="43" cy="32" r="3.2"/><circle cx="27" cy="49" r="1.8"/>"#,
        },
        Figure::Counselor => Drawing {
            body: concat!(
                r#"<path d="M39,58 C39,68 33,74 28,80 L72,80 C67,74 61,68 61,58 Z"/>"#,
                r#"<rect x="32" y="53" width="36" height="8" rx="4"/>"#,
                r#"<path d="M50,6 C57,12 57,18 50,23 C43,18 43,12 50,6 Z"/>"#,
                r#"<path d="M50,20 C66,20 77,29 77,39 C77,49 65,54 50,54 C35,54 23,49 23,39 C23,29 34,20 50,20 Z"/>"#,
            ),
            ivory: "",
            lines: r#"<path d="M26,33 C40,41 60,41 74,33 M25,44 C40,51 60,51 75,44 M29,80 H71"/>"#,
            spots: r#"<path d="M50,30 L56,38 L50,46 L44,38 Z"/>"#,
        },
        Figure::Elephant => Drawing {
            body: r#"<path d="M72,80 C79,66 81,45 74,32 C67,19 49,14 37,20 C28,25 24,35 25,46 C26,56 24,64 20,70 C17,74 14,78 19,80 C24,81 27,77 28,72 C29,66 31,61 34,56 C38,58 42,59 45,58 C46,66 45,73 42,80 Z"/>"#,
            ivory: r#"<path d="M43,55 C40,62 32,66 22,64 C29,61 34,57 37,51 Z"/>"#,
            lines: concat!(
                r#"<path d="M53,26 C64,21 76,30 75,45 C74,58 66,66 57,63 C51,55 50,37 53,26 Z"/>"#,
                r#"<path d="M24,71 Q26,73 28,72 M43,80 H71"/>"#,
            ),
            spots: r#"<circle cx="39" cy="35" r="3.2"/>"#,
        },
    }
}

const WHITE_FILL: &str = "#f8f5ee";
const WHITE_LINE: &str = "#1f1f1f";
const BLACK_FILL: &str = "#2b2724";
const BLACK_LINE: &str = "#111111";
const BLACK_DETAIL: &str = "#ece6da";
const IVORY: &str = "#fffdf5";

/// The figure `kind` in White's (`white`) or Black's colours, `size` SVG units square, centred
/// on (`cx`, `cy`): a `<g class="piece">` element with a `transform`, its `data-figure` the
/// figure's [name](Figure::name) and its `data-color` `white` or `black`.
pub fn piece_svg(kind: Figure, white: bool, cx: f64, cy: f64, size: f64) -> String {
    let d = drawing(kind);
    let scale = size / GRID;
    let (fill, line, detail, color) = if white {
        (WHITE_FILL, WHITE_LINE, WHITE_LINE, "white")
    } else {
        (BLACK_FILL, BLACK_LINE, BLACK_DETAIL, "black")
    };
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<g class="piece" data-figure="{}" data-color="{color}" transform="translate({:.2},{:.2}) scale({scale:.4})" stroke-linejoin="round" stroke-linecap="round">"#,
        kind.name(),
        cx - size / 2.0,
        cy - size / 2.0,
    );
    let _ = write!(
        out,
        r#"<g fill="{fill}" stroke="{line}" stroke-width="3">{PLINTH}{}</g>"#,
        d.body
    );
    if !d.ivory.is_empty() {
        let _ = write!(
            out,
            r#"<g fill="{IVORY}" stroke="{line}" stroke-width="2.5">{}</g>"#,
            d.ivory
        );
    }
    if !d.lines.is_empty() {
        let _ = write!(
            out,
            r#"<g fill="none" stroke="{detail}" stroke-width="2.5">{}</g>"#,
            d.lines
        );
    }
    if !d.spots.is_empty() {
        let _ = write!(out, r#"<g fill="{detail}" stroke="none">{}</g>"#, d.spots);
    }
    out.push_str("</g>");
    out
}

/// The tint laid over the origin and destination cells of the last move.
pub(crate) const LAST_MOVE_FILL: &str = r##"fill="#e8d23a" fill-opacity="0.5""##;

/// A red glow of radius `r` centred on (`cx`, `cy`), under a king in check: a `<circle
/// class="check">` with its radial gradient defined alongside.
pub(crate) fn check_glow(cx: f64, cy: f64, r: f64) -> String {
    format!(
        concat!(
            r##"<defs><radialGradient id="arbiter-check-glow">"##,
            r##"<stop offset="0" stop-color="#ff2020" stop-opacity="1"/>"##,
            r##"<stop offset="0.45" stop-color="#e31010" stop-opacity="0.85"/>"##,
            r##"<stop offset="1" stop-color="#b00000" stop-opacity="0"/>"##,
            r##"</radialGradient></defs>"##,
            r##"<circle class="check" cx="{:.1}" cy="{:.1}" r="{:.1}" fill="url(#arbiter-check-glow)"/>"##,
        ),
        cx, cy, r
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_figure_is_one_balanced_group() {
        for kind in Figure::ALL {
            for white in [true, false] {
                let g = piece_svg(kind, white, 50.0, 50.0, 40.0);
                assert!(g.starts_with(r#"<g class="piece""#), "{g}");
                assert!(g.ends_with("</g>"));
                assert_eq!(g.matches("<g").count(), g.matches("</g>").count());
                assert_eq!(g.matches(r#"class="piece""#).count(), 1);
                assert!(g.contains(&format!(r#"data-figure="{}""#, kind.name())));
                assert!(g.contains("translate(30.00,30.00) scale(0.4000)"), "{g}");
            }
        }
    }

    #[test]
    fn colours_differ_by_side() {
        let w = piece_svg(Figure::Knight, true, 0.0, 0.0, 45.0);
        let b = piece_svg(Figure::Knight, false, 0.0, 0.0, 45.0);
        assert!(w.contains(WHITE_FILL) && !w.contains(BLACK_FILL));
        assert!(b.contains(BLACK_FILL) && b.contains(BLACK_DETAIL));
        assert!(w.contains(r#"data-color="white""#) && b.contains(r#"data-color="black""#));
    }

    #[test]
    fn figures_are_distinct() {
        let shapes: Vec<String> = Figure::ALL
            .iter()
            .map(|&k| {
                let d = drawing(k);
                format!("{}{}{}{}", d.body, d.ivory, d.lines, d.spots)
            })
            .collect();
        for (i, a) in shapes.iter().enumerate() {
            for b in &shapes[i + 1..] {
                assert_ne!(a, b);
            }
        }
        for role in crate::types::Role::ALL {
            assert_eq!(Figure::from(role), Figure::from_role(role));
        }
    }
}
