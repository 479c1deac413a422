//! One dynamic type over every implemented variant, for services and the CLI ("dynamic at the
//! edge, static in the hot loops"). [`AnyPosition`] implements [`Position`] itself, so
//! [`Game<AnyPosition>`](crate::Game), perft and PGN work for any variant chosen at run time.
//!
//! Adding a variant means adding one arm to [`AnyPosition`] and [`AnyMove`] and to the
//! `dispatch!` macro below; callers do not change.

use crate::byzantine::{ByzMove, Byzantine, ByzantineRules, ByzantineVariant};
use crate::chess::{self, Chess, Correction};
use crate::crazyhouse::{Crazyhouse, HouseRules};
use crate::glinski::{Glinski, HexMove};
use crate::outcome::Outcome;
use crate::position::{DrawRules, Locale, MoveError, Notation, PerftError, PerftLimits, Position};
use crate::position_text::PositionTextError;
use crate::types::Color;
use crate::variant::Variant;
use std::fmt;

/// A position of any implemented variant.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AnyPosition {
    /// Standard chess.
    Chess(Chess),
    /// Crazyhouse, or one bughouse board (the position knows which).
    Crazyhouse(Crazyhouse),
    /// Byzantine chess or its Citadel variant (the position knows which, and its rule options).
    Byzantine(Byzantine),
    /// Glinski's hexagonal chess.
    Glinski(Glinski),
}

/// A move of any implemented variant (it belongs to positions of the same variant).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AnyMove {
    /// A move on the 8×8 board: chess, crazyhouse and bughouse (drops included).
    Chess(chess::Move),
    /// A Byzantine move.
    Byzantine(ByzMove),
    /// A Glinski move.
    Glinski(HexMove),
}

/// A rule option (`name=value`) that the variant does not have or does not accept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleOptionError(pub String);

impl fmt::Display for RuleOptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RuleOptionError {}

/// Per-game rule options, as `name=value` pairs (e.g. Byzantine `stalemate=loses`,
/// `facing_pawns=off`). Each variant documents the options it has; an empty set means the
/// variant's default rules.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleOptions(pub Vec<(String, String)>);

impl RuleOptions {
    /// Parses `name=value` texts.
    pub fn parse<'a>(
        items: impl IntoIterator<Item = &'a str>,
    ) -> Result<RuleOptions, RuleOptionError> {
        items
            .into_iter()
            .map(|item| {
                item.split_once('=')
                    .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
                    .ok_or_else(|| {
                        RuleOptionError(format!("rule option '{item}' is not name=value"))
                    })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(RuleOptions)
    }

    fn byzantine(&self) -> Result<ByzantineRules, RuleOptionError> {
        let mut rules = ByzantineRules::default();
        for (name, value) in &self.0 {
            rules.set(name, value).map_err(RuleOptionError)?;
        }
        Ok(rules)
    }

    /// The bughouse rules these options set (unknown names and values refused).
    pub fn bughouse(&self) -> Result<crate::bughouse::BughouseRules, RuleOptionError> {
        let mut rules = crate::bughouse::BughouseRules::default();
        for (name, value) in &self.0 {
            rules.set(name, value).map_err(RuleOptionError)?;
        }
        Ok(rules)
    }

    fn none_for(&self, variant: Variant) -> Result<(), RuleOptionError> {
        match self.0.first() {
            None => Ok(()),
            Some((name, _)) => Err(RuleOptionError(format!(
                "variant '{variant}' has no rule option '{name}'"
            ))),
        }
    }
}

fn chess_svg_options(m: Option<AnyMove>, check: bool) -> crate::chess::render::SvgOptions {
    match m {
        Some(AnyMove::Chess(m)) => crate::chess::render::SvgOptions::after(m, check),
        _ => crate::chess::render::SvgOptions {
            check,
            ..Default::default()
        },
    }
}

/// A rule option error as a position error on the field `rules`.
fn bad_option(e: RuleOptionError) -> PositionTextError {
    PositionTextError::Syntax {
        field: "rules",
        message: e.0,
    }
}

/// Whether a (trimmed) Chess960 position text is a start position's number.
fn is_start_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// The rules of a crazyhouse-family board.
fn house_rules(variant: Variant) -> HouseRules {
    if variant == Variant::Bughouse {
        HouseRules::Bughouse
    } else {
        HouseRules::Crazyhouse
    }
}

/// Perft split by first move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerftDivide {
    /// Each legal move in coordinate notation with the leaf count below it, sorted by the text.
    pub moves: Vec<(String, u64)>,
    /// The leaf count of the whole tree (1 at depth 0, where no move is made).
    pub total: u64,
}

impl PerftDivide {
    fn new(depth: u32, mut moves: Vec<(String, u64)>) -> PerftDivide {
        moves.sort();
        let total = if depth == 0 {
            1
        } else {
            moves.iter().map(|(_, n)| n).sum()
        };
        PerftDivide { moves, total }
    }
}

/// Runs `$body` with `$p` bound to the concrete position, whatever the variant.
macro_rules! dispatch {
    ($self:expr, $p:ident => $body:expr) => {
        match $self {
            AnyPosition::Chess($p) => $body,
            AnyPosition::Crazyhouse($p) => $body,
            AnyPosition::Byzantine($p) => $body,
            AnyPosition::Glinski($p) => $body,
        }
    };
}

/// Unwraps a move for the concrete position `$p`'s variant, or evaluates `$mismatch`.
macro_rules! with_move {
    ($self:expr, $m:expr, ($p:ident, $mv:ident) => $body:expr, else $mismatch:expr) => {
        match ($self, $m) {
            (AnyPosition::Chess($p), AnyMove::Chess($mv)) => $body,
            (AnyPosition::Crazyhouse($p), AnyMove::Chess($mv)) => $body,
            (AnyPosition::Byzantine($p), AnyMove::Byzantine($mv)) => $body,
            (AnyPosition::Glinski($p), AnyMove::Glinski($mv)) => $body,
            _ => $mismatch,
        }
    };
}

impl AnyPosition {
    /// The start position of `variant` under its default rules.
    pub fn start(variant: Variant) -> Result<AnyPosition, PositionTextError> {
        AnyPosition::from_optional_text(variant, None)
    }

    /// Parses `variant`'s position string (FEN for chess) under its default rules.
    pub fn from_text(variant: Variant, text: &str) -> Result<AnyPosition, PositionTextError> {
        AnyPosition::from_optional_text(variant, Some(text))
    }

    /// The position `text` (the variant's start when `None`) under the rule `options`. For
    /// Chess960, `text` may also be a start position's number (`0` to `959`), and `None` is
    /// the classical arrangement (518).
    pub fn with_rules(
        variant: Variant,
        text: Option<&str>,
        options: &RuleOptions,
    ) -> Result<AnyPosition, PositionTextError> {
        match variant {
            Variant::Chess => {
                options.none_for(variant).map_err(bad_option)?;
                Ok(AnyPosition::Chess(match text {
                    None => Chess::new(),
                    Some(t) => Chess::from_fen(t)?,
                }))
            }
            Variant::Chess960 => {
                options.none_for(variant).map_err(bad_option)?;
                match text.map(str::trim) {
                    None => AnyPosition::chess960_start(chess::chess960::CLASSICAL),
                    // A start position by its number.
                    Some(t) if is_start_number(t) => {
                        AnyPosition::chess960_start(t.parse().unwrap_or(u32::MAX))
                    }
                    Some(t) => Ok(AnyPosition::Chess(Chess::from_fen_as(t, true)?)),
                }
            }
            Variant::Byzantine | Variant::ByzantineCitadel => {
                let rules = options.byzantine().map_err(bad_option)?;
                let board = if variant == Variant::ByzantineCitadel {
                    ByzantineVariant::Citadel
                } else {
                    ByzantineVariant::Plain
                };
                Ok(AnyPosition::Byzantine(match text {
                    None => Byzantine::start(board, rules),
                    Some(t) => Byzantine::from_text(t, board, rules)?,
                }))
            }
            Variant::Crazyhouse | Variant::Bughouse => {
                // A bughouse board takes the match's options (they change nothing on one
                // board); crazyhouse has none.
                if variant == Variant::Bughouse {
                    options.bughouse().map_err(bad_option)?;
                } else {
                    options.none_for(variant).map_err(bad_option)?;
                }
                let rules = house_rules(variant);
                Ok(AnyPosition::Crazyhouse(match text {
                    None => Crazyhouse::new(rules),
                    Some(t) => Crazyhouse::from_fen(t, rules)?,
                }))
            }
            Variant::Glinski => {
                options.none_for(variant).map_err(bad_option)?;
                Ok(AnyPosition::Glinski(match text {
                    None => Glinski::new(),
                    Some(t) => Glinski::from_text(t)?,
                }))
            }
        }
    }

    /// Chess960 start position `n` (0–959 in the standard numbering; 518 is the classical
    /// arrangement, which is also what [`AnyPosition::start`] gives for `chess960`).
    pub fn chess960_start(n: u32) -> Result<AnyPosition, PositionTextError> {
        Chess::chess960_start(n)
            .map(AnyPosition::Chess)
            .ok_or_else(|| PositionTextError::Syntax {
                field: "start_position",
                message: format!(
                    "Chess960 start positions are numbered 0 to {}, not {n}",
                    chess::chess960::COUNT - 1
                ),
            })
    }

    /// [`AnyPosition::with_rules`] read leniently, as python-chess reads FEN: castling rights
    /// that do not fit the board and en passant squares that cannot follow a double step are
    /// dropped, and each change is returned (an empty list means the text was read as
    /// written). An empty `text` is the variant's start, as for [`AnyPosition::with_rules`]. Only FEN-based variants (chess, Chess960, crazyhouse, bughouse) have such
    /// fields; the others read as strictly as ever.
    pub fn with_rules_lenient(
        variant: Variant,
        text: &str,
        options: &RuleOptions,
    ) -> Result<(AnyPosition, Vec<Correction>), PositionTextError> {
        let trimmed = text.trim();
        if trimmed.is_empty() || variant == Variant::Chess960 && is_start_number(trimmed) {
            // A start position, by default or by number: nothing to correct.
            let text = (!trimmed.is_empty()).then_some(trimmed);
            return Ok((AnyPosition::with_rules(variant, text, options)?, Vec::new()));
        }
        match variant {
            Variant::Chess | Variant::Chess960 => {
                options.none_for(variant).map_err(bad_option)?;
                let setup: chess::Setup = text.parse()?;
                let (pos, fixes) = Chess::from_setup_lenient(setup, variant == Variant::Chess960)?;
                Ok((AnyPosition::Chess(pos), fixes))
            }
            Variant::Crazyhouse | Variant::Bughouse => {
                // A bughouse board takes the match's options (they change nothing on one
                // board); crazyhouse has none.
                if variant == Variant::Bughouse {
                    options.bughouse().map_err(bad_option)?;
                } else {
                    options.none_for(variant).map_err(bad_option)?;
                }
                let rules = house_rules(variant);
                let (pos, fixes) = Crazyhouse::from_fen_lenient(text, rules)?;
                Ok((AnyPosition::Crazyhouse(pos), fixes))
            }
            _ => Ok((
                AnyPosition::with_rules(variant, Some(text), options)?,
                Vec::new(),
            )),
        }
    }

    /// The variant's start position when `text` is `None`, else the parsed text.
    pub fn from_optional_text(
        variant: Variant,
        text: Option<&str>,
    ) -> Result<AnyPosition, PositionTextError> {
        AnyPosition::with_rules(variant, text, &RuleOptions::default())
    }

    /// The board as text for humans (a diagram; not a position string).
    pub fn render_text(&self) -> String {
        self.render_text_with(crate::text_style::TextStyle::Letters)
    }

    /// The board as text for humans, as [`render_text`](Self::render_text), with the pieces
    /// written in `style` (FEN letters, or Unicode chess symbols; see
    /// [`TextStyle`](crate::TextStyle)). The diagrams' geometry is the same in both styles.
    pub fn render_text_with(&self, style: crate::text_style::TextStyle) -> String {
        use crate::chess::render::to_text_with;
        match self {
            AnyPosition::Chess(p) => to_text_with(p.board(), p.turn(), None, style),
            AnyPosition::Crazyhouse(p) => {
                to_text_with(p.chess().board(), p.turn(), Some(p.reserves()), style)
            }
            AnyPosition::Byzantine(p) => crate::byzantine::render::to_text_with(p, style),
            AnyPosition::Glinski(p) => crate::glinski::render::to_text_with(p, style),
        }
    }

    /// An SVG picture of the board with its pieces as figures (crazyhouse and bughouse with the
    /// reserves), the king of the side to move marked when in check, and `last_move` (the move
    /// that led here, if known) highlighted.
    pub fn render_svg(&self, last_move: Option<AnyMove>) -> String {
        let check = self.is_check();
        match (self, last_move) {
            (AnyPosition::Chess(p), m) => {
                let options = chess_svg_options(m, check);
                crate::chess::render::to_svg_with(p, &options)
            }
            (AnyPosition::Crazyhouse(p), m) => {
                let options = chess_svg_options(m, check);
                crate::chess::render::crazyhouse_to_svg_with(p, &options)
            }
            (AnyPosition::Byzantine(p), m) => {
                let options = match m {
                    Some(AnyMove::Byzantine(m)) => {
                        crate::byzantine::render::SvgOptions::after(m, check)
                    }
                    _ => crate::byzantine::render::SvgOptions {
                        check,
                        ..Default::default()
                    },
                };
                crate::byzantine::render::to_svg_with(p, &options)
            }
            (AnyPosition::Glinski(p), m) => {
                let options = match m {
                    Some(AnyMove::Glinski(m)) => {
                        crate::glinski::render::SvgOptions::after(m, check)
                    }
                    _ => crate::glinski::render::SvgOptions {
                        check,
                        ..Default::default()
                    },
                };
                crate::glinski::render::to_svg_with(p, &options)
            }
        }
    }

    /// Like [`render_svg`](Self::render_svg), with the last move given by its coordinate (UCI)
    /// text (`e2e4`, `N@f3`, `f10f11q`, `d10e3`): what a viewer has who knows a position and
    /// the move that led to it but not the position before (a bughouse board, whose moves
    /// cannot be replayed alone). Only the text's form and squares are read; whether a piece
    /// could make the move is not checked. The null move `0000` marks nothing.
    ///
    /// # Errors
    /// [`MoveError::Syntax`] when the text is not a coordinate move of this variant.
    pub fn render_svg_marking(&self, last_move: &str) -> Result<String, MoveError> {
        let check = self.is_check();
        let syntax = |reason: &str| MoveError::syntax(last_move, reason);
        Ok(match self {
            AnyPosition::Chess(_) | AnyPosition::Crazyhouse(_) => {
                use crate::chess::uci::Uci;
                let uci: Uci = last_move
                    .parse()
                    .map_err(|e: crate::chess::uci::UciSyntaxError| syntax(e.reason))?;
                let options = crate::chess::render::SvgOptions {
                    last_move: match uci {
                        Uci::Normal { from, to, .. } => Some((Some(from), to)),
                        Uci::Drop { to, .. } => Some((None, to)),
                        Uci::Null => None,
                    },
                    check,
                };
                match self {
                    AnyPosition::Crazyhouse(p) => {
                        crate::chess::render::crazyhouse_to_svg_with(p, &options)
                    }
                    AnyPosition::Chess(p) => crate::chess::render::to_svg_with(p, &options),
                    _ => unreachable!("matched above"),
                }
            }
            AnyPosition::Glinski(p) => {
                let (from, to) = crate::glinski::coordinate_cells(last_move)
                    .map_err(|reason| syntax(&reason))?;
                let options = crate::glinski::render::SvgOptions {
                    last_move: Some((from, to)),
                    check,
                };
                crate::glinski::render::to_svg_with(p, &options)
            }
            AnyPosition::Byzantine(p) => {
                let (from, to) = crate::byzantine::coordinate_cells(last_move).map_err(syntax)?;
                let options = crate::byzantine::render::SvgOptions {
                    last_move: Some((from, to)),
                    check,
                };
                crate::byzantine::render::to_svg_with(p, &options)
            }
        })
    }

    /// The rule options this position's game uses that differ from the variant's defaults.
    pub fn rule_options(&self) -> RuleOptions {
        match self {
            AnyPosition::Chess(_) | AnyPosition::Crazyhouse(_) | AnyPosition::Glinski(_) => {
                RuleOptions::default()
            }
            AnyPosition::Byzantine(p) => RuleOptions(p.rules().to_options()),
        }
    }

    /// Parses a move and returns it with its UCI and SAN spellings.
    pub fn parse_and_describe(
        &self,
        text: &str,
        notation: Notation,
        locale: Locale,
    ) -> Result<(AnyMove, String, String), MoveError> {
        let m = self.parse_move(text, notation, locale)?;
        Ok((m, self.move_to_uci(m), self.move_to_san(m, locale)))
    }

    /// Perft (leaf count to `depth`), run on the concrete position type so the hot loop is
    /// statically dispatched.
    pub fn perft(&self, depth: u32) -> u64 {
        dispatch!(self, p => crate::position::perft(p, depth))
    }

    /// Perft split by first move, statically dispatched: each legal move in UCI with its leaf
    /// count, sorted by the UCI text, and the total.
    pub fn perft_divide(&self, depth: u32) -> PerftDivide {
        PerftDivide::new(
            depth,
            dispatch!(self, p => crate::position::perft_divide(p, depth)
                .into_iter()
                .map(|(m, n)| (p.move_to_uci(m), n))
                .collect()),
        )
    }

    /// [`perft`](crate::perft) within a node budget and a stop flag, statically dispatched.
    pub fn perft_bounded(&self, depth: u32, limits: PerftLimits<'_>) -> Result<u64, PerftError> {
        dispatch!(self, p => crate::position::perft_bounded(p, depth, limits))
    }

    /// [`AnyPosition::perft_divide`] within a node budget for the whole tree and a stop flag.
    pub fn perft_divide_bounded(
        &self,
        depth: u32,
        limits: PerftLimits<'_>,
    ) -> Result<PerftDivide, PerftError> {
        let moves = dispatch!(self, p => crate::position::perft_divide_bounded(p, depth, limits)?
            .into_iter()
            .map(|(m, n)| (p.move_to_uci(m), n))
            .collect());
        Ok(PerftDivide::new(depth, moves))
    }

    /// This position with `m` played, or `None` if `m` is not legal here.
    pub fn play(&self, m: AnyMove) -> Option<AnyPosition> {
        if !self.is_legal(m) {
            return None;
        }
        let mut next = self.clone();
        next.play_unchecked(m);
        Some(next)
    }
}

/// The move in coordinate notation (`e2e4`, `N@f3`, `f10f11q`, `d10e3`).
impl fmt::Display for AnyMove {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnyMove::Chess(m) => m.fmt(f),
            AnyMove::Byzantine(m) => m.fmt(f),
            AnyMove::Glinski(m) => m.fmt(f),
        }
    }
}

impl fmt::Display for AnyPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}

impl Position for AnyPosition {
    type Move = AnyMove;
    type MoveList = Vec<AnyMove>;

    fn variant(&self) -> Variant {
        dispatch!(self, p => p.variant())
    }

    fn turn(&self) -> Color {
        dispatch!(self, p => Position::turn(p))
    }

    fn legal_moves_into(&self, moves: &mut Vec<AnyMove>) {
        moves.clear();
        match self {
            AnyPosition::Chess(p) => {
                moves.extend(p.legal_moves().iter().map(|&m| AnyMove::Chess(m)))
            }
            AnyPosition::Crazyhouse(p) => {
                moves.extend(p.legal_moves().iter().map(|&m| AnyMove::Chess(m)))
            }
            AnyPosition::Byzantine(p) => {
                moves.extend(p.legal_moves().iter().map(|&m| AnyMove::Byzantine(m)));
            }
            AnyPosition::Glinski(p) => {
                moves.extend(p.legal_moves().iter().map(|&m| AnyMove::Glinski(m)));
            }
        }
    }

    fn is_capture(&self, m: AnyMove) -> bool {
        with_move!(self, m, (p, m) => p.is_capture(m), else false)
    }

    fn is_legal(&self, m: AnyMove) -> bool {
        with_move!(self, m, (p, m) => p.is_legal(m), else false)
    }

    fn play_unchecked(&mut self, m: AnyMove) {
        with_move!(self, m, (p, m) => p.play_unchecked(m), else ())
    }

    fn is_check(&self) -> bool {
        dispatch!(self, p => p.is_check())
    }

    fn zobrist(&self) -> u64 {
        dispatch!(self, p => p.zobrist())
    }

    fn repetition_key(&self) -> u64 {
        dispatch!(self, p => p.repetition_key())
    }

    fn halfmove_clock(&self) -> u32 {
        dispatch!(self, p => p.halfmove_clock())
    }

    fn fullmove_number(&self) -> u32 {
        dispatch!(self, p => p.fullmove_number())
    }

    fn null_move(&self) -> Option<AnyPosition> {
        match self {
            AnyPosition::Chess(p) => p.null_move().map(AnyPosition::Chess),
            AnyPosition::Crazyhouse(p) => p.null_move().map(AnyPosition::Crazyhouse),
            AnyPosition::Byzantine(p) => p.null_move().map(AnyPosition::Byzantine),
            AnyPosition::Glinski(p) => p.null_move().map(AnyPosition::Glinski),
        }
    }

    fn terminal(&self) -> Option<Outcome> {
        dispatch!(self, p => Position::terminal(p))
    }

    fn draw_rules(&self) -> DrawRules {
        dispatch!(self, p => p.draw_rules())
    }

    fn can_possibly_mate(&self, color: Color) -> bool {
        dispatch!(self, p => Position::can_possibly_mate(p, color))
    }

    fn to_text(&self) -> String {
        dispatch!(self, p => p.to_text())
    }

    fn move_to_uci(&self, m: AnyMove) -> String {
        match m {
            AnyMove::Chess(m) => chess::uci::Uci::from_move(m).to_string(),
            AnyMove::Byzantine(m) => format!("{m:?}"),
            AnyMove::Glinski(m) => format!("{m:?}"),
        }
    }

    fn move_to_san(&self, m: AnyMove, locale: Locale) -> String {
        with_move!(self, m, (p, m) => p.move_to_san(m, locale), else self.move_to_uci(m))
    }

    fn parse_move(
        &self,
        text: &str,
        notation: Notation,
        locale: Locale,
    ) -> Result<AnyMove, MoveError> {
        match self {
            AnyPosition::Chess(p) => p.parse_move(text, notation, locale).map(AnyMove::Chess),
            AnyPosition::Crazyhouse(p) => p.parse_move(text, notation, locale).map(AnyMove::Chess),
            AnyPosition::Byzantine(p) => {
                p.parse_move(text, notation, locale).map(AnyMove::Byzantine)
            }
            AnyPosition::Glinski(p) => p.parse_move(text, notation, locale).map(AnyMove::Glinski),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks(svg: &str) -> usize {
        svg.matches(r#"class="last-move""#).count()
    }

    /// The last move's text marks the same squares as the move itself, in every variant.
    #[test]
    fn a_marked_last_move_reads_like_the_played_one() {
        let cases = [
            (Variant::Chess, "e2e4"),
            (Variant::Crazyhouse, "g1f3"),
            (Variant::Glinski, "f5f6"),
            (Variant::Byzantine, "a2a3"),
        ];
        for (variant, text) in cases {
            let start = AnyPosition::start(variant).expect("start");
            let m = start
                .parse_move(text, Notation::Uci, Locale::English)
                .unwrap_or_else(|e| panic!("{variant:?} {text}: {e}"));
            let after = start.play(m).expect("legal");
            let played = after.render_svg(Some(m));
            let marked = after.render_svg_marking(text).expect("coordinate form");
            assert_eq!(played, marked, "{variant:?} {text}");
            assert_eq!(marks(&marked), 2, "{variant:?} {text}");
        }
    }

    #[test]
    fn drops_mark_one_square_and_the_null_move_none() {
        let pos = AnyPosition::from_text(
            Variant::Crazyhouse,
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[N] w KQkq - 0 1",
        )
        .expect("position");
        assert_eq!(marks(&pos.render_svg_marking("N@f3").expect("drop")), 1);
        assert_eq!(marks(&pos.render_svg_marking("0000").expect("null")), 0);
    }

    #[test]
    fn text_of_another_form_is_refused_as_syntax() {
        let chess = AnyPosition::start(Variant::Chess).expect("start");
        let glinski = AnyPosition::start(Variant::Glinski).expect("start");
        let byzantine = AnyPosition::start(Variant::Byzantine).expect("start");
        for (pos, text) in [
            (&chess, "e4"),
            (&chess, "e2e9"),
            (&chess, "\u{0}\u{7f}"),
            (&glinski, "f10f12"),
            (&glinski, "Qe1-c3"),
            (&byzantine, "a1a17"),
            (&byzantine, "e1a1"),
            (&byzantine, ""),
        ] {
            match pos.render_svg_marking(text) {
                Err(MoveError::Syntax { input, .. }) => assert_eq!(input, text),
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }
}
