//! FEN: reading (lenient about counters, strict about everything that defines the position),
//! writing, and the checked step from an unvalidated [`Setup`] to a [`Chess`] position.
//!
//! Castling rights are read as X-FEN (`KQkq` name the outermost rook on each side of the king,
//! a file letter names another: `Gkq`) or Shredder-FEN (the rooks' files: `HAha`), and written
//! as X-FEN, which is plain `KQkq` for every standard chess position;
//! [`Setup::to_fen_with`] writes Shredder-FEN. A lenient reading ([`Chess::from_setup_lenient`])
//! drops castling rights and en passant squares that do not fit the board and reports each
//! [`Correction`].
//!
//! Errors are split like shakmaty's: [`FenError`] means the text cannot be parsed;
//! [`PositionError`] means it parses but describes a position that cannot occur.

use super::{Board, CastlingRights, Chess};
use crate::bitboard::{Bitboard, attacks};
use crate::position::{MAX_COUNTER, parse_counter};
use crate::position_text::PositionTextError;
use crate::types::{Color, Piece, Role, Square};
use std::fmt;
use std::str::FromStr;

/// An unvalidated position: what a FEN says, before checking that it can occur.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Setup {
    /// Piece placement.
    pub board: Board,
    /// Side to move.
    pub turn: Color,
    /// Castling rights.
    pub castling: CastlingRights,
    /// En passant target square, as written.
    pub ep_square: Option<Square>,
    /// Halfmove clock.
    pub halfmoves: u32,
    /// Fullmove number (at least 1).
    pub fullmoves: u32,
}

impl Default for Setup {
    fn default() -> Setup {
        Setup::from(Chess::new())
    }
}

impl From<Chess> for Setup {
    fn from(pos: Chess) -> Setup {
        Setup {
            board: pos.board,
            turn: pos.turn,
            castling: pos.castling,
            ep_square: pos.ep_square,
            halfmoves: pos.halfmoves,
            fullmoves: pos.fullmoves,
        }
    }
}

/// The FEN text cannot be parsed. Each variant names the field and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FenError {
    /// A FEN has 4 to 6 space-separated fields.
    FieldCount {
        /// Fields found.
        found: usize,
    },
    /// The placement does not have 8 ranks.
    RankCount {
        /// Ranks found.
        found: usize,
    },
    /// A rank describes more than 8 squares.
    RankTooLong {
        /// The rank (1 to 8).
        rank: u32,
    },
    /// A rank describes fewer than 8 squares.
    RankTooShort {
        /// The rank (1 to 8).
        rank: u32,
    },
    /// A character in the placement is neither a piece letter nor a digit 1–8.
    BadPiece {
        /// The character.
        found: char,
    },
    /// The side-to-move field is not `w` or `b`.
    BadTurn {
        /// The field.
        found: String,
    },
    /// The castling field is not `-` or up to four rights, each `K`, `Q`, `k`, `q` or a file
    /// letter (`A`–`H` White, `a`–`h` Black), at most one per side and wing.
    BadCastling {
        /// The field.
        found: String,
    },
    /// The en passant field is not `-` or a square.
    BadEnPassant {
        /// The field.
        found: String,
    },
    /// The halfmove clock is not a number.
    BadHalfmoveClock {
        /// The field.
        found: String,
    },
    /// The fullmove number is not a positive number.
    BadFullmoveNumber {
        /// The field.
        found: String,
    },
}

impl FenError {
    /// The FEN field the error is about (`placement`, `turn`, `castling`, `en_passant`,
    /// `halfmove_clock`, `fullmove_number`, or `fen` for the whole text).
    pub fn field(&self) -> &'static str {
        match self {
            FenError::FieldCount { .. } => "fen",
            FenError::RankCount { .. }
            | FenError::RankTooLong { .. }
            | FenError::RankTooShort { .. }
            | FenError::BadPiece { .. } => "placement",
            FenError::BadTurn { .. } => "turn",
            FenError::BadCastling { .. } => "castling",
            FenError::BadEnPassant { .. } => "en_passant",
            FenError::BadHalfmoveClock { .. } => "halfmove_clock",
            FenError::BadFullmoveNumber { .. } => "fullmove_number",
        }
    }
}

impl fmt::Display for FenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FenError::FieldCount { found } => {
                write!(f, "expected 4 to 6 space-separated fields, found {found}")
            }
            FenError::RankCount { found } => {
                write!(
                    f,
                    "placement: expected 8 ranks separated by '/', found {found}"
                )
            }
            FenError::RankTooLong { rank } => write!(f, "placement: rank {rank} is too long"),
            FenError::RankTooShort { rank } => write!(f, "placement: rank {rank} is too short"),
            FenError::BadPiece { found } => write!(f, "placement: invalid piece letter '{found}'"),
            FenError::BadTurn { found } => {
                write!(f, "side to move: expected 'w' or 'b', found '{found}'")
            }
            FenError::BadCastling { found } => write!(f, "castling: invalid field '{found}'"),
            FenError::BadEnPassant { found } => {
                write!(f, "en passant: expected '-' or a square, found '{found}'")
            }
            FenError::BadHalfmoveClock { found } => {
                write!(
                    f,
                    "halfmove clock: expected a number up to {MAX_COUNTER}, found '{found}'"
                )
            }
            FenError::BadFullmoveNumber { found } => {
                write!(
                    f,
                    "fullmove number: expected a number from 1 to {MAX_COUNTER}, found '{found}'"
                )
            }
        }
    }
}

impl std::error::Error for FenError {}

/// The setup parses but cannot occur in a game.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PositionError {
    /// A side has no king.
    MissingKing(Color),
    /// A side has more than one king.
    TooManyKings(Color),
    /// A pawn stands on the first or last rank.
    PawnOnBackRank(Square),
    /// A side has more than 8 pawns.
    TooManyPawns(Color),
    /// A side has more than 16 pieces.
    TooManyPieces(Color),
    /// The side not to move is in check.
    OppositeCheck,
    /// The side to move is attacked by more pieces than any legal move can produce.
    ImpossibleCheck,
    /// A castling right whose king or rook is not on the back rank where it needs to be (the
    /// rook on the named file, on that side of the king).
    InvalidCastlingRight {
        /// The right, as its FEN letter.
        right: char,
    },
    /// A castling right that is valid only in Chess960 (standard chess needs the king on the e
    /// file and the rook on the a or h file).
    CastlingRookNotStandard {
        /// The right, as its FEN letter.
        right: char,
    },
    /// The en passant square cannot follow a double step of the side that just moved.
    InvalidEnPassant(Square),
}

impl PositionError {
    /// The FEN field the error is about.
    pub fn field(&self) -> &'static str {
        match self {
            PositionError::InvalidCastlingRight { .. }
            | PositionError::CastlingRookNotStandard { .. } => "castling",
            PositionError::InvalidEnPassant(_) => "en_passant",
            _ => "placement",
        }
    }
}

impl fmt::Display for PositionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PositionError::MissingKing(c) => write!(f, "{c} has no king"),
            PositionError::TooManyKings(c) => write!(f, "{c} has more than one king"),
            PositionError::PawnOnBackRank(sq) => write!(f, "pawn on the first or last rank ({sq})"),
            PositionError::TooManyPawns(c) => write!(f, "{c} has more than 8 pawns"),
            PositionError::TooManyPieces(c) => write!(f, "{c} has more than 16 pieces"),
            PositionError::OppositeCheck => f.write_str("the side not to move is in check"),
            PositionError::ImpossibleCheck => {
                f.write_str("the side to move is in an impossible check")
            }
            PositionError::InvalidCastlingRight { right } => write!(
                f,
                "castling right '{right}' needs the king and that rook on their start squares"
            ),
            PositionError::CastlingRookNotStandard { right } => write!(
                f,
                "castling right '{right}' names a rook off the a and h files or a king off the \
                 e file: that is a Chess960 position (variant chess960)"
            ),
            PositionError::InvalidEnPassant(sq) => write!(
                f,
                "en passant square {sq} does not follow a double pawn step of the side that just moved"
            ),
        }
    }
}

impl std::error::Error for PositionError {}

impl From<FenError> for PositionTextError {
    fn from(e: FenError) -> Self {
        PositionTextError::syntax(e.field(), e.to_string())
    }
}

impl From<PositionError> for PositionTextError {
    fn from(e: PositionError) -> Self {
        PositionTextError::illegal(e.field(), e.to_string())
    }
}

/// Parses a FEN placement field. `~` after a piece marks it promoted (collected into the
/// returned set, for crazyhouse); plain chess callers ignore it.
pub(crate) fn parse_placement(text: &str) -> Result<(Board, Bitboard), FenError> {
    let ranks = text.split('/').count();
    if ranks != 8 {
        return Err(FenError::RankCount { found: ranks });
    }
    let mut board = Board::empty();
    let mut promoted = Bitboard::EMPTY;
    for (i, rank_text) in text.split('/').enumerate() {
        let rank = 7 - i as u32;
        let mut file = 0u32;
        let too_long = FenError::RankTooLong { rank: rank + 1 };
        let mut last: Option<Square> = None;
        for c in rank_text.chars() {
            match c {
                '1'..='8' => {
                    file += c as u32 - '0' as u32;
                    if file > 8 {
                        return Err(too_long);
                    }
                    last = None;
                }
                '~' => match last {
                    Some(sq) => promoted.add(sq),
                    None => return Err(FenError::BadPiece { found: c }),
                },
                _ => {
                    let piece = Piece::from_char(c).ok_or(FenError::BadPiece { found: c })?;
                    let sq = Square::from_coords(file, rank).ok_or(too_long.clone())?;
                    // Each square is visited once, so it is still empty: toggling places it.
                    board.toggle(piece, sq);
                    last = Some(sq);
                    file += 1;
                }
            }
        }
        if file < 8 {
            return Err(FenError::RankTooShort { rank: rank + 1 });
        }
    }
    Ok((board, promoted))
}

/// The file of `color`'s king when it stands on its back rank.
fn king_file_on_back_rank(board: &Board, color: Color) -> Option<u32> {
    let king = board.king_of(color)?;
    (king.rank() == color.fold(0, 7)).then(|| king.file())
}

/// `color`'s rooks on its back rank, as a bit set of files.
fn back_rank_rook_files(board: &Board, color: Color) -> u8 {
    let rank = color.fold(0, 7);
    let rooks = board.by_piece(Piece {
        color,
        role: Role::Rook,
    }) & Bitboard::rank(rank);
    rooks.fold(0, |files, sq| files | 1 << sq.file())
}

/// Reads the castling field against the placement: `K`/`Q` take the outermost rook on that side
/// of the king (the a or h file when there is none, which validation then refuses), a file
/// letter takes the rook on that file.
pub(crate) fn parse_castling(text: &str, board: &Board) -> Result<CastlingRights, FenError> {
    let bad = || FenError::BadCastling {
        found: text.to_owned(),
    };
    let mut rights = CastlingRights::NONE;
    if text == "-" {
        return Ok(rights);
    }
    if text.is_empty() || text.len() > 4 {
        return Err(bad());
    }
    for c in text.chars() {
        let color = if c.is_ascii_uppercase() {
            Color::White
        } else {
            Color::Black
        };
        let king_file = king_file_on_back_rank(board, color);
        let rooks = back_rank_rook_files(board, color);
        let (king_side, file) = match c.to_ascii_lowercase() {
            'k' => {
                let outer = king_file.and_then(|k| (k + 1..8).rev().find(|f| rooks & 1 << f != 0));
                (true, outer.unwrap_or(7))
            }
            'q' => {
                let outer = king_file.and_then(|k| (0..k).find(|f| rooks & 1 << f != 0));
                (false, outer.unwrap_or(0))
            }
            l @ 'a'..='h' => {
                let file = u32::from(l) - u32::from('a');
                (file > king_file.unwrap_or(3), file)
            }
            _ => return Err(bad()),
        };
        if rights.has(color, king_side) {
            return Err(bad());
        }
        rights.add_with_rook(color, king_side, file);
    }
    Ok(rights)
}

impl FromStr for Setup {
    type Err = FenError;

    fn from_str(fen: &str) -> Result<Setup, FenError> {
        Setup::parse_with_promoted(fen).map(|(setup, _)| setup)
    }
}

impl Setup {
    /// Parses a FEN, also returning the squares whose pieces carry the `~` promoted marker
    /// (crazyhouse and bughouse keep them; chess ignores them).
    pub(crate) fn parse_with_promoted(fen: &str) -> Result<(Setup, Bitboard), FenError> {
        let mut fields = [""; 6];
        let mut count = 0;
        for field in fen.split_whitespace() {
            if count < 6 {
                fields[count] = field;
            }
            count += 1;
        }
        if !(4..=6).contains(&count) {
            return Err(FenError::FieldCount { found: count });
        }
        let fields = &fields[..count];
        let (board, promoted) = parse_placement(fields[0])?;
        let turn = match fields[1] {
            "w" => Color::White,
            "b" => Color::Black,
            other => {
                return Err(FenError::BadTurn {
                    found: other.to_owned(),
                });
            }
        };
        let castling = parse_castling(fields[2], &board)?;
        let ep_square = match fields[3] {
            "-" => None,
            s => Some(Square::parse(s).ok_or_else(|| FenError::BadEnPassant {
                found: s.to_owned(),
            })?),
        };
        let halfmoves = match fields.get(4) {
            None => 0,
            Some(s) => parse_counter(s, 0).ok_or_else(|| FenError::BadHalfmoveClock {
                found: (*s).to_owned(),
            })?,
        };
        let fullmoves = match fields.get(5) {
            None => 1,
            Some(s) => parse_counter(s, 1).ok_or_else(|| FenError::BadFullmoveNumber {
                found: (*s).to_owned(),
            })?,
        };
        Ok((
            Setup {
                board,
                turn,
                castling,
                ep_square,
                halfmoves,
                fullmoves,
            },
            promoted,
        ))
    }
}

impl Setup {
    /// The castling field: X-FEN (`KQkq` for the outermost rook on each side, the file letter
    /// for a rook with another rook further out), or Shredder-FEN with `shredder` (always the
    /// file letters, `HAha`).
    pub fn castling_field(&self, shredder: bool) -> String {
        let mut out = String::new();
        for (color, king_side, rook) in self.castling.iter() {
            let others = back_rank_rook_files(&self.board, color) & !(1u8 << rook.file());
            let outermost = if king_side {
                others >> rook.file() == 0
            } else {
                others & ((1u8 << rook.file()) - 1) == 0
            };
            let letter = if shredder || !outermost {
                char::from(b'a' + rook.file() as u8)
            } else if king_side {
                'k'
            } else {
                'q'
            };
            out.push(match color {
                Color::White => letter.to_ascii_uppercase(),
                Color::Black => letter,
            });
        }
        if out.is_empty() {
            out.push('-');
        }
        out
    }

    /// The FEN, with X-FEN castling rights or (with `shredder`) Shredder-FEN ones.
    pub fn to_fen_with(&self, shredder: bool) -> String {
        let mut s = String::with_capacity(90);
        self.board.write_placement(Bitboard::EMPTY, &mut s);
        format!(
            "{s} {} {} {} {} {}",
            self.turn.char(),
            self.castling_field(shredder),
            self.ep_square.map_or("-".to_owned(), |sq| sq.to_string()),
            self.halfmoves,
            self.fullmoves
        )
    }
}

/// The FEN with X-FEN castling rights (plain `KQkq` in standard chess).
impl fmt::Display for Setup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_fen_with(false))
    }
}

/// Checks the placement rules shared by chess and crazyhouse: kings, back-rank pawns, counts
/// (`check_counts` is off for crazyhouse, where reserves change the arithmetic).
pub(crate) fn validate_board(board: &Board, check_counts: bool) -> Result<(), PositionError> {
    for color in Color::ALL {
        match board
            .by_piece(Piece {
                color,
                role: Role::King,
            })
            .count()
        {
            0 => return Err(PositionError::MissingKing(color)),
            1 => {}
            _ => return Err(PositionError::TooManyKings(color)),
        }
        if check_counts {
            if board
                .by_piece(Piece {
                    color,
                    role: Role::Pawn,
                })
                .count()
                > 8
            {
                return Err(PositionError::TooManyPawns(color));
            }
            if board.by_color(color).count() > 16 {
                return Err(PositionError::TooManyPieces(color));
            }
        }
    }
    if let Some(sq) = (board.by_role(Role::Pawn) & Bitboard::BACKRANKS).first() {
        return Err(PositionError::PawnOnBackRank(sq));
    }
    Ok(())
}

/// Checks one castling right against the placement: the king on its back rank, the rook on the
/// named square on that side of it, and (unless `chess960`) the standard files.
fn check_castling_right(
    board: &Board,
    color: Color,
    king_side: bool,
    rook: Square,
    chess960: bool,
) -> Result<(), PositionError> {
    let letter = match (color, king_side) {
        (Color::White, true) => 'K',
        (Color::White, false) => 'Q',
        (Color::Black, true) => 'k',
        (Color::Black, false) => 'q',
    };
    let king_file = king_file_on_back_rank(board, color);
    let fits = king_file.is_some_and(|k| (rook.file() > k) == king_side)
        && board.piece_at(rook)
            == Some(Piece {
                color,
                role: Role::Rook,
            });
    if !fits {
        return Err(PositionError::InvalidCastlingRight { right: letter });
    }
    if !chess960 && (king_file != Some(4) || rook.file() != if king_side { 7 } else { 0 }) {
        return Err(PositionError::CastlingRookNotStandard { right: letter });
    }
    Ok(())
}

/// A change a lenient reading made to the text it was given (strict reading refuses instead).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Correction {
    /// A castling right that does not fit the board was dropped (the error strict reading
    /// gives says why).
    DroppedCastlingRight(PositionError),
    /// An en passant square that cannot follow a double pawn step was dropped.
    DroppedEnPassant(Square),
}

impl Correction {
    /// The FEN field corrected (`castling` or `en_passant`).
    pub fn field(&self) -> &'static str {
        match self {
            Correction::DroppedCastlingRight(_) => "castling",
            Correction::DroppedEnPassant(_) => "en_passant",
        }
    }
}

impl fmt::Display for Correction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Correction::DroppedCastlingRight(e) => write!(f, "dropped: {e}"),
            Correction::DroppedEnPassant(sq) => write!(
                f,
                "dropped en passant square {sq}: it does not follow a double pawn step of the \
                 side that just moved"
            ),
        }
    }
}

/// Checks an en passant square: on the right rank, empty with the square behind it empty, and
/// the pawn that just double-stepped in front of it.
pub(crate) fn validate_ep(board: &Board, turn: Color, ep: Square) -> Result<(), PositionError> {
    let err = Err(PositionError::InvalidEnPassant(ep));
    if ep.rank() != turn.fold(5, 2) {
        return err;
    }
    let pushed = Square::from_coords(ep.file(), turn.fold(4, 3)).expect("on board");
    let origin = Square::from_coords(ep.file(), turn.fold(6, 1)).expect("on board");
    if board.occupied().contains(ep)
        || board.occupied().contains(origin)
        || board.piece_at(pushed)
            != Some(Piece {
                color: !turn,
                role: Role::Pawn,
            })
    {
        return err;
    }
    Ok(())
}

impl Chess {
    /// Validates a setup as standard chess. The en passant square is dropped (normalised away)
    /// when no pawn of the side to move stands ready to capture on it.
    pub fn from_setup(setup: Setup) -> Result<Chess, PositionError> {
        Chess::from_setup_as(setup, false)
    }

    /// Validates a setup as standard chess or (with `chess960`) as a Chess960 position, where
    /// castling rooks may stand on any file with the king between them.
    pub fn from_setup_as(setup: Setup, chess960: bool) -> Result<Chess, PositionError> {
        Chess::checked(setup, true, chess960, None)
    }

    /// Validates a setup leniently, as python-chess reads FEN: castling rights that do not fit
    /// the board and en passant squares that cannot follow a double step are dropped, each
    /// reported as a [`Correction`]. Everything else is checked as strictly as
    /// [`Chess::from_setup_as`] checks it.
    pub fn from_setup_lenient(
        setup: Setup,
        chess960: bool,
    ) -> Result<(Chess, Vec<Correction>), PositionError> {
        let mut corrections = Vec::new();
        let pos = Chess::checked(setup, true, chess960, Some(&mut corrections))?;
        Ok((pos, corrections))
    }

    /// The one validation path; with `corrections`, unfit castling rights and en passant
    /// squares are dropped and reported instead of refused.
    pub(crate) fn checked(
        mut setup: Setup,
        check_counts: bool,
        chess960: bool,
        mut corrections: Option<&mut Vec<Correction>>,
    ) -> Result<Chess, PositionError> {
        let board = setup.board;
        validate_board(&board, check_counts)?;
        for (color, king_side, rook) in setup.castling.iter() {
            if let Err(e) = check_castling_right(&board, color, king_side, rook, chess960) {
                match corrections.as_deref_mut() {
                    Some(list) => {
                        setup.castling.remove(color, king_side);
                        list.push(Correction::DroppedCastlingRight(e));
                    }
                    None => return Err(e),
                }
            }
        }
        if let Some(ep) = setup.ep_square
            && let Err(e) = validate_ep(&board, setup.turn, ep)
        {
            match corrections {
                Some(list) => {
                    setup.ep_square = None;
                    list.push(Correction::DroppedEnPassant(ep));
                }
                None => return Err(e),
            }
        }
        let them_king = board.king_of(!setup.turn).expect("validated");
        if board
            .attackers_to(them_king, setup.turn, board.occupied())
            .any()
        {
            return Err(PositionError::OppositeCheck);
        }
        let our_king = board.king_of(setup.turn).expect("validated");
        let checkers = board.attackers_to(our_king, !setup.turn, board.occupied());
        if checkers.count() > 2
            || (checkers.count() == 2 && {
                let mut it = checkers;
                let (a, c) = (it.next().expect("two"), it.next().expect("two"));
                // Two checkers on one line through the king cannot both have been uncovered by
                // one move.
                attacks::aligned(a, c, our_king)
            })
        {
            return Err(PositionError::ImpossibleCheck);
        }
        let mut pos = Chess {
            board,
            turn: setup.turn,
            castling: setup.castling,
            ep_square: None,
            halfmoves: setup.halfmoves,
            fullmoves: setup.fullmoves.max(1),
            hash: 0,
            chess960,
        };
        if let Some(ep) = setup.ep_square {
            let capturers = attacks::pawn(!setup.turn, ep)
                & board.by_piece(Piece {
                    color: setup.turn,
                    role: Role::Pawn,
                });
            if capturers.any() {
                pos.ep_square = Some(ep);
            }
        }
        pos.hash = pos.compute_hash();
        Ok(pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn syntax_err(fen: &str) -> FenError {
        fen.parse::<Setup>().unwrap_err()
    }

    fn position_err(fen: &str) -> PositionError {
        Chess::from_setup(fen.parse().expect("parses")).unwrap_err()
    }

    #[test]
    fn start_round_trip() {
        let start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
        assert_eq!(Chess::from_fen(start).unwrap().to_fen(), start);
        assert_eq!(Chess::new().to_fen(), start);
    }

    #[test]
    fn syntax_errors_name_the_problem() {
        use FenError::*;
        let f = syntax_err;
        assert_eq!(f("8/8/8/8/8/8/8/8"), FieldCount { found: 1 });
        assert_eq!(f("8/8/8/8/8/8/8 w - - 0 1"), RankCount { found: 7 });
        assert_eq!(f("9/8/8/8/8/8/8/8 w - - 0 1"), BadPiece { found: '9' });
        assert_eq!(
            f("ppppppppp/8/8/8/8/8/8/8 w - - 0 1"),
            RankTooLong { rank: 8 }
        );
        assert_eq!(f("7/8/8/8/8/8/8/8 w - - 0 1"), RankTooShort { rank: 8 });
        assert_eq!(f("4x3/8/8/8/8/8/8/8 w - - 0 1"), BadPiece { found: 'x' });
        assert!(matches!(f("4k3/8/8/8/8/8/8/4K3 x - - 0 1"), BadTurn { .. }));
        assert!(matches!(
            f("4k3/8/8/8/8/8/8/4K3 w KX - 0 1"),
            BadCastling { .. }
        ));
        assert!(matches!(
            f("4k3/8/8/8/8/8/8/4K3 w KK - 0 1"),
            BadCastling { .. }
        ));
        assert!(matches!(
            f("4k3/8/8/8/8/8/8/4K3 w - e9 0 1"),
            BadEnPassant { .. }
        ));
        assert!(matches!(
            f("4k3/8/8/8/8/8/8/4K3 w - - x 1"),
            BadHalfmoveClock { .. }
        ));
        assert!(matches!(
            f("4k3/8/8/8/8/8/8/4K3 w - - 0 0"),
            BadFullmoveNumber { .. }
        ));
    }

    #[test]
    fn impossible_positions_name_the_problem() {
        use PositionError::*;
        let p = position_err;
        assert_eq!(p("8/8/8/8/8/8/8/4K3 w - - 0 1"), MissingKing(Color::Black));
        assert_eq!(
            p("4k3/8/8/8/8/8/8/3KK3 w - - 0 1"),
            TooManyKings(Color::White)
        );
        assert_eq!(
            p("4k3/8/8/8/8/8/8/P3K3 w - - 0 1"),
            PawnOnBackRank(Square::parse("a1").unwrap())
        );
        assert_eq!(p("4k3/8/8/8/8/8/4R3/4K3 w - - 0 1"), OppositeCheck);
        assert_eq!(
            p("4k3/8/8/8/8/8/8/4K3 w K - 0 1"),
            InvalidCastlingRight { right: 'K' }
        );
        assert!(matches!(
            p("4k3/8/8/8/8/8/8/4K3 w - e6 0 1"),
            InvalidEnPassant(_)
        ));
        assert_eq!(
            p("4k3/8/8/8/8/8/PPPPPPPP/P3K3 w - - 0 1").field(),
            "placement"
        );
    }

    #[test]
    fn ep_square_kept_only_when_capturable() {
        let with_capturer = "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2";
        assert_eq!(
            Chess::from_fen(with_capturer).unwrap().to_fen(),
            with_capturer
        );
        let without = Chess::from_fen("4k3/8/8/3p4/8/8/8/4K3 w - d6 0 2").unwrap();
        assert_eq!(without.to_fen(), "4k3/8/8/3p4/8/8/8/4K3 w - - 0 2");
    }

    #[test]
    fn four_field_epd_gets_default_counters() {
        let p = Chess::from_fen("4k3/8/8/8/8/8/8/4K3 b - -").unwrap();
        assert_eq!(p.to_fen(), "4k3/8/8/8/8/8/8/4K3 b - - 0 1");
    }
}
