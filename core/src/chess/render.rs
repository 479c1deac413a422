//! Human views of an 8×8 position (chess, crazyhouse, one bughouse board): a text diagram and
//! an SVG picture with the pieces as [figures](crate::figures), White at the bottom.

use super::{Board, Chess, Move};
use crate::crazyhouse::{Crazyhouse, Reserves};
use crate::figures::{Figure, LAST_MOVE_FILL, check_glow, piece_svg};
use crate::text_style::TextStyle;
use crate::types::{Color, Piece, Role, Square};
use std::fmt::Write as _;

/// A text diagram: ranks 8 to 1 as lines of piece letters (upper case White) or `.`, the rank
/// number first, file letters underneath, then the pieces in hand (when `reserves` is given)
/// and the side to move. The same as [`to_text_with`] in the [`TextStyle::Letters`] style.
pub fn to_text(board: &Board, turn: Color, reserves: Option<&Reserves>) -> String {
    to_text_with(board, turn, reserves, TextStyle::Letters)
}

/// A text diagram as [`to_text`], with the pieces written in `style`. In the
/// [`TextStyle::Symbols`] style the board shows ♔♕♖♗♘♙ for White and ♚♛♜♝♞♟ for Black, and the
/// pieces in hand are White's symbols, ` | `, then Black's (`in hand: ♕♙♙ | ♞`; `-` for an empty
/// side) instead of the FEN letters in brackets (`in hand: [QPPn]`).
pub fn to_text_with(
    board: &Board,
    turn: Color,
    reserves: Option<&Reserves>,
    style: TextStyle,
) -> String {
    let mailbox = board.mailbox();
    let mut out = String::new();
    for rank in (0..8).rev() {
        out.push(char::from(b'1' + rank as u8));
        for file in 0..8 {
            let sq = Square::from_coords(file, rank).expect("on board");
            out.push(' ');
            out.push(mailbox[sq.index()].map_or('.', |pc| style.piece_char(pc)));
        }
        out.push('\n');
    }
    out.push_str("  a b c d e f g h\n");
    if let Some(r) = reserves {
        match style {
            TextStyle::Letters => {
                let _ = writeln!(out, "in hand: [{}]", r.to_fen());
            }
            TextStyle::Symbols => {
                let _ = writeln!(
                    out,
                    "in hand: {} | {}",
                    reserve_symbols(r, Color::White),
                    reserve_symbols(r, Color::Black)
                );
            }
        }
    }
    let _ = writeln!(out, "{turn} to move");
    out
}

/// `color`'s pieces in hand as symbols, strongest first (`QRBNP` order), or `-` when none.
fn reserve_symbols(reserves: &Reserves, color: Color) -> String {
    let held: String = RESERVE_ROLES
        .iter()
        .flat_map(|&role| {
            let symbol = TextStyle::symbol(Piece { color, role });
            std::iter::repeat_n(symbol, usize::from(reserves.count(color, role)))
        })
        .collect();
    if held.is_empty() {
        "-".to_owned()
    } else {
        held
    }
}

/// Highlights for [`to_svg_with`] and [`crazyhouse_to_svg_with`]; the default has none.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SvgOptions {
    /// The last move, tinted: its origin (`None` for a drop) and destination.
    pub last_move: Option<(Option<Square>, Square)>,
    /// Whether to mark the side to move's king (the one that can be in check) with a red glow.
    pub check: bool,
}

impl SvgOptions {
    /// The highlights after `m` was played (castling tints the king's squares), with the side
    /// to move's king marked when `check`.
    pub fn after(m: Move, check: bool) -> SvgOptions {
        let from = (!m.is_drop()).then(|| m.from());
        SvgOptions {
            last_move: Some((from, m.to())),
            check,
        }
    }
}

/// Side of a square in SVG units.
const SQ: f64 = 56.0;
/// Board origin: room for the rank numbers on the left.
const X0: f64 = 24.0;
const Y0: f64 = 12.0;
const BOARD: f64 = 8.0 * SQ;
/// Room for the file letters under the board and a margin on the right.
const BOTTOM: f64 = 26.0;
const RIGHT: f64 = 12.0;
/// The reserves' column, right of the board (crazyhouse and bughouse).
const PANEL_GAP: f64 = 10.0;
const PANEL: f64 = 72.0;

const LIGHT: &str = "#f0d9b5";
const DARK: &str = "#b58863";

/// The roles that can be held, in the order their figures are listed.
const RESERVE_ROLES: [Role; 5] = [
    Role::Queen,
    Role::Rook,
    Role::Bishop,
    Role::Knight,
    Role::Pawn,
];

/// The top-left corner of `sq`.
fn corner(sq: Square) -> (f64, f64) {
    (
        X0 + SQ * f64::from(sq.file()),
        Y0 + SQ * f64::from(7 - sq.rank()),
    )
}

/// An SVG picture of a chess position, without highlights.
pub fn to_svg(pos: &Chess) -> String {
    to_svg_with(pos, &SvgOptions::default())
}

/// An SVG picture of a chess position: the 8×8 board with White at the bottom, file letters
/// under it and rank numbers left of it, pieces as figures, and the highlights of `options`.
pub fn to_svg_with(pos: &Chess, options: &SvgOptions) -> String {
    board_svg(pos.board(), pos.turn(), None, options)
}

/// An SVG picture of a crazyhouse or bughouse board, without highlights.
pub fn crazyhouse_to_svg(pos: &Crazyhouse) -> String {
    crazyhouse_to_svg_with(pos, &SvgOptions::default())
}

/// An SVG picture of a crazyhouse or bughouse board: as [`to_svg_with`], with both sides'
/// pieces in hand as small figures and counts in a column right of the board (Black's beside
/// the top half, White's beside the bottom half).
pub fn crazyhouse_to_svg_with(pos: &Crazyhouse, options: &SvgOptions) -> String {
    board_svg(
        pos.chess().board(),
        pos.chess().turn(),
        Some(pos.reserves()),
        options,
    )
}

/// An SVG picture of `board` (with `reserves` drawn when given); `turn` says whose king
/// `options.check` marks.
pub fn board_svg(
    board: &Board,
    turn: Color,
    reserves: Option<&Reserves>,
    options: &SvgOptions,
) -> String {
    let width = X0
        + BOARD
        + RIGHT
        + if reserves.is_some() {
            PANEL_GAP + PANEL
        } else {
            0.0
        };
    let height = Y0 + BOARD + BOTTOM;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">"#
    );
    let _ = writeln!(
        out,
        r##"<rect width="{width}" height="{height}" fill="#f4f1ea"/>"##
    );
    for index in 0..64 {
        let sq = Square::new(index).expect("on board");
        let (x, y) = corner(sq);
        let fill = if sq.is_light() { LIGHT } else { DARK };
        let _ = writeln!(
            out,
            r#"<rect x="{x}" y="{y}" width="{SQ}" height="{SQ}" fill="{fill}"/>"#
        );
    }
    let _ = writeln!(
        out,
        r##"<rect x="{X0}" y="{Y0}" width="{BOARD}" height="{BOARD}" fill="none" stroke="#555" stroke-width="1"/>"##
    );
    if let Some((from, to)) = options.last_move {
        for sq in from.into_iter().chain([to]) {
            let (x, y) = corner(sq);
            let _ = writeln!(
                out,
                r#"<rect class="last-move" x="{x}" y="{y}" width="{SQ}" height="{SQ}" {LAST_MOVE_FILL}/>"#
            );
        }
    }
    if options.check
        && let Some(king) = board.king_of(turn)
    {
        let (x, y) = corner(king);
        out.push_str(&check_glow(x + SQ / 2.0, y + SQ / 2.0, SQ * 0.62));
        out.push('\n');
    }
    for (sq, piece) in board.pieces() {
        let (x, y) = corner(sq);
        out.push_str(&piece_svg(
            Figure::from_role(piece.role),
            piece.color == Color::White,
            x + SQ / 2.0,
            y + SQ / 2.0,
            SQ * 0.9,
        ));
        out.push('\n');
    }
    for i in 0..8u8 {
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-family="sans-serif" font-size="14" text-anchor="middle" dominant-baseline="central" fill="#1d3557">{}</text>"##,
            X0 + SQ * (f64::from(i) + 0.5),
            Y0 + BOARD + BOTTOM / 2.0,
            char::from(b'a' + i)
        );
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-family="sans-serif" font-size="14" text-anchor="middle" dominant-baseline="central" fill="#1d3557">{}</text>"##,
            X0 / 2.0,
            Y0 + SQ * (7.5 - f64::from(i)),
            char::from(b'1' + i)
        );
    }
    if let Some(reserves) = reserves {
        reserves_svg(&mut out, reserves);
    }
    out.push_str("</svg>\n");
    out
}

/// Both reserves in the column right of the board: Black's beside the top half, White's beside
/// the bottom half, one row per held role (figure, then the count).
fn reserves_svg(out: &mut String, reserves: &Reserves) {
    let x = X0 + BOARD + PANEL_GAP;
    let half = BOARD / 2.0;
    let row = half / 5.0;
    for (color, top) in [(Color::Black, Y0), (Color::White, Y0 + half)] {
        let _ = writeln!(
            out,
            r##"<rect class="reserve-panel" x="{x}" y="{:.1}" width="{PANEL}" height="{:.1}" rx="6" fill="#e4ddcc" stroke="#b9ad94" stroke-width="1"/>"##,
            top + 2.0,
            half - 4.0
        );
        let held = RESERVE_ROLES
            .iter()
            .map(|&role| (role, reserves.count(color, role)))
            .filter(|&(_, n)| n > 0);
        for (i, (role, n)) in held.enumerate() {
            let cy = top + row * (i as f64 + 0.5);
            let _ = write!(
                out,
                r#"<g class="reserve" data-color="{}" data-count="{n}">"#,
                color.name()
            );
            out.push_str(&piece_svg(
                Figure::from_role(role),
                color == Color::White,
                x + 24.0,
                cy,
                row * 0.9,
            ));
            let _ = writeln!(
                out,
                r##"<text x="{:.1}" y="{cy:.1}" font-family="sans-serif" font-size="15" font-weight="bold" text-anchor="middle" dominant-baseline="central" fill="#1d3557">{n}</text></g>"##,
                x + 56.0
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AnyPosition;
    use crate::variant::Variant;

    fn chess_start() -> Chess {
        match AnyPosition::start(Variant::Chess).expect("start") {
            AnyPosition::Chess(p) => p,
            other => panic!("not chess: {other:?}"),
        }
    }

    fn crazyhouse_start() -> Crazyhouse {
        match AnyPosition::start(Variant::Crazyhouse).expect("start") {
            AnyPosition::Crazyhouse(p) => p,
            other => panic!("not crazyhouse: {other:?}"),
        }
    }

    fn balanced(svg: &str) {
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<g").count(), svg.matches("</g>").count());
        assert_eq!(svg.matches("<svg").count(), 1);
    }

    #[test]
    fn text_diagram_of_the_start() {
        let pos = chess_start();
        let text = to_text(pos.board(), pos.turn(), None);
        assert_eq!(
            text,
            "8 r n b q k b n r\n7 p p p p p p p p\n6 . . . . . . . .\n5 . . . . . . . .\n\
             4 . . . . . . . .\n3 . . . . . . . .\n2 P P P P P P P P\n1 R N B Q K B N R\n\
             \x20 a b c d e f g h\nwhite to move\n"
        );
        let zh = crazyhouse_start();
        let text = to_text(zh.chess().board(), zh.chess().turn(), Some(zh.reserves()));
        assert!(
            text.ends_with("  a b c d e f g h\nin hand: []\nwhite to move\n"),
            "{text}"
        );
    }

    #[test]
    fn text_diagram_matches_the_position_diagram() {
        let mut zh = crazyhouse_start();
        zh.add_to_reserve(Color::Black, Role::Knight).expect("room");
        for pos in [
            AnyPosition::Chess(chess_start()),
            AnyPosition::Crazyhouse(zh),
        ] {
            let text = match &pos {
                AnyPosition::Chess(p) => to_text(p.board(), p.turn(), None),
                AnyPosition::Crazyhouse(p) => {
                    to_text(p.chess().board(), p.chess().turn(), Some(p.reserves()))
                }
                other => panic!("not an 8×8 board: {other:?}"),
            };
            assert_eq!(text, pos.render_text());
        }
    }

    #[test]
    fn symbol_diagram_of_the_start() {
        let pos = chess_start();
        let text = to_text_with(pos.board(), pos.turn(), None, TextStyle::Symbols);
        assert_eq!(
            text,
            "8 ♜ ♞ ♝ ♛ ♚ ♝ ♞ ♜\n7 ♟ ♟ ♟ ♟ ♟ ♟ ♟ ♟\n6 . . . . . . . .\n5 . . . . . . . .\n\
             4 . . . . . . . .\n3 . . . . . . . .\n2 ♙ ♙ ♙ ♙ ♙ ♙ ♙ ♙\n1 ♖ ♘ ♗ ♕ ♔ ♗ ♘ ♖\n\
             \x20 a b c d e f g h\nwhite to move\n"
        );
        // The letters style is the plain diagram, and both have the same shape.
        let letters = to_text_with(pos.board(), pos.turn(), None, TextStyle::Letters);
        assert_eq!(letters, to_text(pos.board(), pos.turn(), None));
        same_shape(&letters, &text);
    }

    /// Each line of `a` and `b` has the same length in characters, with `.` and spaces at the
    /// same places.
    fn same_shape(a: &str, b: &str) {
        assert_eq!(a.lines().count(), b.lines().count(), "{a}\n{b}");
        for (la, lb) in a.lines().zip(b.lines()) {
            assert_eq!(la.chars().count(), lb.chars().count(), "{la:?} / {lb:?}");
            for (ca, cb) in la.chars().zip(lb.chars()) {
                assert_eq!(
                    ca == ' ' || ca == '.',
                    cb == ' ' || cb == '.',
                    "{la:?} / {lb:?}"
                );
            }
        }
    }

    #[test]
    fn symbol_diagram_shows_the_reserves_as_symbols() {
        let mut zh = crazyhouse_start();
        let empty = to_text_with(
            zh.chess().board(),
            zh.chess().turn(),
            Some(zh.reserves()),
            TextStyle::Symbols,
        );
        assert!(
            empty.ends_with("  a b c d e f g h\nin hand: - | -\nwhite to move\n"),
            "{empty}"
        );
        zh.add_to_reserve(Color::White, Role::Pawn).expect("room");
        zh.add_to_reserve(Color::White, Role::Queen).expect("room");
        zh.add_to_reserve(Color::White, Role::Pawn).expect("room");
        zh.add_to_reserve(Color::Black, Role::Knight).expect("room");
        let board = zh.chess().board();
        let text = to_text_with(
            board,
            zh.chess().turn(),
            Some(zh.reserves()),
            TextStyle::Symbols,
        );
        assert!(text.contains("\nin hand: ♕♙♙ | ♞\n"), "{text}");
        assert!(text.starts_with("8 ♜ ♞ ♝ ♛ ♚ ♝ ♞ ♜\n"), "{text}");
        let letters = to_text(board, zh.chess().turn(), Some(zh.reserves()));
        assert!(letters.contains("\nin hand: [QPPn]\n"), "{letters}");
        // Only a Black reserve.
        let mut black = crazyhouse_start();
        black
            .add_to_reserve(Color::Black, Role::Rook)
            .expect("room");
        let text = to_text_with(
            black.chess().board(),
            black.chess().turn(),
            Some(black.reserves()),
            TextStyle::Symbols,
        );
        assert!(text.contains("\nin hand: - | ♜\n"), "{text}");
    }

    #[test]
    fn symbol_diagram_matches_the_position_diagram() {
        let mut zh = crazyhouse_start();
        zh.add_to_reserve(Color::White, Role::Bishop).expect("room");
        for pos in [
            AnyPosition::Chess(chess_start()),
            AnyPosition::Crazyhouse(zh),
        ] {
            for style in TextStyle::ALL {
                let text = match &pos {
                    AnyPosition::Chess(p) => to_text_with(p.board(), p.turn(), None, style),
                    AnyPosition::Crazyhouse(p) => to_text_with(
                        p.chess().board(),
                        p.chess().turn(),
                        Some(p.reserves()),
                        style,
                    ),
                    other => panic!("not an 8×8 board: {other:?}"),
                };
                assert_eq!(text, pos.render_text_with(style));
            }
            assert_eq!(pos.render_text(), pos.render_text_with(TextStyle::Letters));
        }
    }

    #[test]
    fn svg_of_the_start_shows_board_and_pieces() {
        let svg = to_svg(&chess_start());
        balanced(&svg);
        assert_eq!(svg.matches(r#"class="piece""#).count(), 32);
        assert_eq!(svg.matches(r#"data-color="white""#).count(), 16);
        assert_eq!(svg.matches(r#"data-figure="knight""#).count(), 4);
        assert_eq!(svg.matches(r#"data-figure="pawn""#).count(), 16);
        assert_eq!(svg.matches(&format!(r#"fill="{LIGHT}""#)).count(), 32);
        assert_eq!(svg.matches(&format!(r#"fill="{DARK}""#)).count(), 32);
        // 8 file letters and 8 rank numbers.
        assert_eq!(svg.matches("<text").count(), 16);
        assert!(svg.contains(LIGHT) && svg.contains(DARK));
        assert!(!svg.contains("last-move") && !svg.contains(r#"class="check""#));
        assert!(!svg.contains("reserve"));
    }

    #[test]
    fn svg_highlights_only_when_asked() {
        let pos = Chess::from_fen("rnbqkbnr/ppppp2p/5p2/6pQ/4P3/8/PPPP1PPP/RNB1KBNR b KQkq - 1 3")
            .expect("fen");
        let plain = to_svg(&pos);
        assert!(!plain.contains("last-move") && !plain.contains(r#"class="check""#));
        let e8 = Square::parse("e8").expect("square");
        let h5 = Square::parse("h5").expect("square");
        let d1 = Square::parse("d1").expect("square");
        let m = Move::normal(d1, h5);
        let svg = to_svg_with(&pos, &SvgOptions::after(m, true));
        balanced(&svg);
        assert_eq!(svg.matches(r#"class="last-move""#).count(), 2);
        assert_eq!(svg.matches(r#"class="check""#).count(), 1);
        // The glow sits on the black king's square, e8.
        let (x, y) = corner(e8);
        assert!(svg.contains(&format!(
            r#"class="check" cx="{:.1}" cy="{:.1}""#,
            x + SQ / 2.0,
            y + SQ / 2.0
        )));
        // Glow and tints lie under the pieces.
        assert!(svg.find(r#"class="check""#) < svg.find(r#"class="piece""#));
        let only_move = SvgOptions {
            last_move: Some((Some(d1), h5)),
            check: false,
        };
        let svg = to_svg_with(&pos, &only_move);
        assert_eq!(svg.matches(r#"class="last-move""#).count(), 2);
        assert!(!svg.contains(r#"class="check""#));
    }

    #[test]
    fn crazyhouse_svg_draws_the_reserves() {
        let start = crazyhouse_start();
        let svg = crazyhouse_to_svg(&start);
        balanced(&svg);
        assert_eq!(svg.matches(r#"class="reserve-panel""#).count(), 2);
        assert_eq!(svg.matches(r#"class="reserve""#).count(), 0);
        let mut pos = start;
        pos.add_to_reserve(Color::White, Role::Queen).expect("room");
        pos.add_to_reserve(Color::Black, Role::Pawn).expect("room");
        pos.add_to_reserve(Color::Black, Role::Pawn).expect("room");
        pos.add_to_reserve(Color::Black, Role::Knight)
            .expect("room");
        let svg = crazyhouse_to_svg(&pos);
        balanced(&svg);
        assert_eq!(svg.matches(r#"class="reserve""#).count(), 3);
        assert_eq!(svg.matches(r#"class="piece""#).count(), 32 + 3);
        assert!(svg.contains(r#"<g class="reserve" data-color="black" data-count="2">"#));
        assert!(svg.contains(r#"<g class="reserve" data-color="white" data-count="1">"#));
        // A drop tints its destination only.
        let e4 = Square::parse("e4").expect("square");
        let drop = SvgOptions {
            last_move: Some((None, e4)),
            check: false,
        };
        let svg = crazyhouse_to_svg_with(&pos, &drop);
        assert_eq!(svg.matches(r#"class="last-move""#).count(), 1);
    }
}
