//! # arbiter-core
//!
//! The rules of every game Arbiter serves, their notations, and game logic, as pure Rust with no
//! I/O. Services, the CLI and the engine build on it.
//!
//! - [`Position`]: the variant-generic interface (legal moves into a reusable buffer, copy-make,
//!   Zobrist hash, check, terminal rules, notation). Hot code is generic over it.
//! - [`Chess`]: standard chess ([`chess`] holds its FEN, UCI and SAN modules).
//! - [`Crazyhouse`]: crazyhouse and single bughouse boards (drops, reserves, promoted pieces);
//!   [`bughouse`]: the two-board match, BFEN and BPGN.
//! - [`Glinski`]: Glinski's hexagonal chess; [`Byzantine`]: Byzantine (circular) chess.
//! - [`AnyPosition`]: one dynamic type over every implemented variant, for services and the CLI.
//! - [`TextStyle`]: letters or Unicode chess symbols in the text diagrams of every variant.
//! - [`Game`]: a position plus its history, knowing every ending (automatic and claimable).
//! - [`pgn`]: PGN reading and writing for any variant.
//! - [`clock`]: time controls and the clock state machine (lag compensation, delays, stages).
//! - [`rating`]: Glicko-2 and FIDE Elo; [`pairing`]: exact minimum-cost pairing of a pool's
//!   waves, and bughouse teams.
#![warn(missing_docs)]

pub mod any;
pub mod bitboard;
pub mod bughouse;
pub mod byzantine;
pub mod chess;
pub mod clock;
pub mod crazyhouse;
pub mod figures;
pub mod game;
pub mod glinski;
pub mod outcome;
pub mod pairing;
pub mod pgn;
pub mod position;
pub mod position_text;
pub mod rating;
pub mod text_style;
pub mod types;
pub mod variant;

pub use any::{AnyMove, AnyPosition, PerftDivide, RuleOptionError, RuleOptions};
pub use byzantine::Byzantine;
pub use chess::Chess;
pub use crazyhouse::Crazyhouse;
pub use game::{Game, GameError, GameState};
pub use glinski::Glinski;
pub use outcome::{DrawClaim, EndReason, Outcome, Score};
pub use position::{
    DrawRules, IllegalReason, Locale, MAX_COUNTER, MoveBuffer, MoveError, Notation, PerftError,
    PerftLimits, Position, perft, perft_bounded, perft_divide, perft_divide_bounded,
};
pub use position_text::PositionTextError;
pub use text_style::TextStyle;
pub use types::{Color, Piece, Role, Square};
pub use variant::{UnknownVariant, Variant};
