//! The match host's operations, independent of gRPC: create, read, move, resign, offer and
//! claim draws, read events, for single-board games of every variant and bughouse matches.
//!
//! Each change is judged by the core on a snapshot of the stored record (the position, its
//! repetition history, the bughouse match with its reserves) and committed by the store in one
//! guarded step. A guard that fails (the board moved on, the snapshot was older than the store)
//! brings back the current record, on which the request is judged again; a request is refused
//! only on current data. A bughouse move commits reserve *deltas* (what left the mover's
//! reserve, what went to the partner's), which the core's match returns, so a concurrent move on
//! the other board, which can only add to this board's reserves, is never overwritten.
//!
//! Every change may carry a request id ([`RequestId`]: the seat's or the platform's, with the
//! fingerprint of the request). The store answers a remembered id without applying anything;
//! the same request again is a duplicate, another request under the id is refused
//! ([`MatchError::RequestIdReused`]). Each seat and the platform have a window of the latest
//! [`crate::record::REQUEST_WINDOW`] ids that changed the match.

use crate::config::MatchLimits;
use crate::error::{CLOCK_PAUSED, MatchError, NO_CLOCK, NOT_CLAIMABLE, NOT_YOUR_TURN, STALE_PLY};
use crate::record::{
    BoardRecord, Done, LastMove, Record, Remembered, RequestId, RequestKind, StoredEvent,
    encode_clock, pack,
};
use crate::seats::{SeatKey, random_hex};
use crate::store::{
    ChangeResult, ClockChange, ClockCommit, ClockPress, CreateResult, EndCommit, HistoryUpdate,
    MatchStore, MoveCommit, MoveResult, OfferCommit, ReserveDelta, Timing,
};
use crate::watchers::Watchers;
use arbiter_core::bughouse::{self, BoardId, Match, MatchOutcome, Seat, Team};
use arbiter_core::clock::{Clock, ClockError, Phase, TimeControl};
use arbiter_core::crazyhouse::HouseRules;
use arbiter_core::{
    AnyPosition, Color, Crazyhouse, DrawClaim, EndReason, GameError, GameState, Locale, Notation,
    Outcome, Position, RuleOptions, Score, Variant,
};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// Longest player id, in bytes.
pub const MAX_PLAYER_BYTES: usize = 128;
/// Longest time control reference, in bytes.
pub const MAX_TIME_CONTROL_BYTES: usize = 64;
/// Longest match id, in bytes.
pub const MAX_MATCH_ID_BYTES: usize = 64;
/// Longest creation request id, in bytes.
pub const MAX_REQUEST_ID_BYTES: usize = 128;
/// Longest move text, in bytes (checked on the text as sent, before anything else).
pub const MAX_MOVE_BYTES: usize = 32;
/// Longest start position string, in bytes (a BFEN of two crowded boards is under 200).
pub const MAX_START_BYTES: usize = 512;

/// How often a change is judged again on fresh data before the request is refused.
const ATTEMPTS: usize = 4;
/// Pauses, resumes and time added each add an event; past this many events in a match they are
/// refused (`RESOURCE_EXHAUSTED`). Moves alone stay below it: at most 12,000 plies per board
/// and 5 events per move.
pub const MAX_EVENTS_FOR_CLOCK_ACTIONS: u64 = 200_000;

/// A new match, as the platform describes it.
#[derive(Clone, Debug, Default)]
pub struct Creation {
    /// The idempotency key (may be empty).
    pub request_id: String,
    /// A chosen id (may be empty).
    pub match_id: String,
    /// The game (`Bughouse` for a two-board match).
    pub variant: Option<Variant>,
    /// The start position string (empty: the variant's start).
    pub start: String,
    /// Rule options.
    pub rules: RuleOptions,
    /// Player ids by seat.
    pub players: Vec<String>,
    /// The time control reference.
    pub time_control: String,
}

/// A created (or found again) match with its seat tokens.
#[derive(Clone, Debug)]
pub struct Created {
    /// The match.
    pub record: Arc<Record>,
    /// Each seat with its token, in creation order.
    pub seats: Vec<(Seat, String)>,
    /// False for a retried creation.
    pub created: bool,
}

/// A seat as a request names it: the board (unset for a single-board game) and the colour.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SeatRef {
    /// The board, if named.
    pub board: Option<BoardId>,
    /// The colour, if named.
    pub color: Option<Color>,
}

/// A move as played.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlayedMove {
    /// The board.
    pub board: BoardId,
    /// The board's ply after it.
    pub ply: u32,
    /// Who moved.
    pub side: Color,
    /// Coordinate notation.
    pub uci: String,
    /// SAN.
    pub san: String,
    /// The board's position string now (bughouse: with the reserves now).
    pub position: String,
}

/// The answer to a resignation, a draw offer or a claim.
#[derive(Clone, Debug)]
pub struct Changed {
    /// The match as it stands.
    pub record: Arc<Record>,
    /// True when the request's id was applied before: nothing changed now.
    pub duplicate: bool,
}

/// The answer to a move.
#[derive(Clone, Debug)]
pub struct MoveAnswer {
    /// The move.
    pub played: PlayedMove,
    /// The match after it.
    pub record: Arc<Record>,
    /// Check and claims of every board of `record`.
    pub status: Vec<BoardStatus>,
    /// True when the request repeated a move already applied.
    pub duplicate: bool,
    /// Unix ms on the store's time base at which `record` held: when the move was accepted, or
    /// for a duplicate, when the match was read.
    pub at: u64,
}

/// What the rules say about a board beyond its record: check, the draws that can be claimed,
/// and whether the side to move waits for a piece.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardStatus {
    /// The side to move.
    pub turn: Color,
    /// Whether the side to move is in check.
    pub check: bool,
    /// Draws either player may claim now.
    pub claims: Vec<DrawClaim>,
    /// True exactly when the match goes on and the side to move has no legal move without being
    /// mated: a bughouse player who must wait for a piece from the partner's board (in every
    /// other variant a side without a move has lost or drawn, so this is always false).
    pub waiting_for_piece: bool,
}

/// Whether the side to move on a bughouse board `pos` of a match that goes on waits for a piece:
/// no legal move, and not mated (under bughouse rules a player without a move who is not mated
/// waits, and the core's [`Crazyhouse::terminal`] is `None`).
fn waits_for_piece(pos: &Crazyhouse) -> bool {
    pos.legal_moves().is_empty() && pos.terminal().is_none()
}

/// The seats of a match, in creation order.
pub fn seats_of(record: &Record) -> &'static [Seat] {
    if record.is_bughouse() {
        &Seat::ALL
    } else {
        &Seat::ALL[..2]
    }
}

fn printable(text: &str) -> bool {
    !text.chars().any(char::is_control)
}

/// Checks a move's text exactly as sent, before anything else reads it: 1 to
/// [`MAX_MOVE_BYTES`] bytes, without whitespace or control characters. Nothing is trimmed, so
/// padding never turns a malformed text into a move.
fn check_move_text(text: &str) -> Result<(), MatchError> {
    if text.is_empty() {
        return Err(MatchError::invalid("move", "move is required"));
    }
    if text.len() > MAX_MOVE_BYTES {
        return Err(MatchError::invalid(
            "move",
            format!("at most {MAX_MOVE_BYTES} bytes (found {})", text.len()),
        ));
    }
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(MatchError::invalid(
            "move",
            "whitespace and control characters are not allowed",
        ));
    }
    Ok(())
}

/// A request id remembered under `request`'s field, judged against `request`: `Ok(Some)` with
/// what it did when it is the same request (a retry), `Ok(None)` when the id is unknown, and
/// [`MatchError::RequestIdReused`] (`ALREADY_EXISTS`) when another request used the id.
fn recall(remembered: Option<Remembered>, request: &RequestId) -> Result<Option<Done>, MatchError> {
    match remembered {
        None => Ok(None),
        Some(r) if r.is_same_request(request) => Ok(Some(r.done)),
        Some(_) => Err(MatchError::RequestIdReused(request.id.clone())),
    }
}

/// The stable name of a locale in a move's fingerprint.
fn locale_name(locale: Locale) -> &'static str {
    match locale {
        Locale::English => "en",
        Locale::Italian => "it",
    }
}

fn check_text(field: &'static str, text: &str, max: usize) -> Result<(), MatchError> {
    if text.len() > max {
        return Err(MatchError::invalid(
            field,
            format!("at most {max} bytes (found {})", text.len()),
        ));
    }
    if !printable(text) {
        return Err(MatchError::invalid(
            field,
            "control characters are not allowed",
        ));
    }
    Ok(())
}

/// Checks an optional request id (an idempotency key).
fn check_request_id(request_id: Option<&str>) -> Result<(), MatchError> {
    let Some(r) = request_id else { return Ok(()) };
    if r.is_empty() || r.len() > MAX_REQUEST_ID_BYTES || !r.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(MatchError::invalid(
            "request_id",
            format!("use 1 to {MAX_REQUEST_ID_BYTES} bytes of printable ASCII without spaces"),
        ));
    }
    Ok(())
}

/// Checks a match id named by a client.
pub fn check_match_id(id: &str) -> Result<(), MatchError> {
    if id.is_empty() {
        return Err(MatchError::invalid("match_id", "match_id is required"));
    }
    if id.len() > MAX_MATCH_ID_BYTES
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(MatchError::invalid(
            "match_id",
            format!("use at most {MAX_MATCH_ID_BYTES} letters, digits, '-' or '_'"),
        ));
    }
    Ok(())
}

fn corrupt(what: impl std::fmt::Display) -> MatchError {
    MatchError::Store(crate::store::StoreError::Corrupt(format!(
        "corrupt match record: {what}"
    )))
}

/// The single board of `record` as a game state (position, history).
fn single_state(record: &Record) -> Result<GameState<AnyPosition>, MatchError> {
    let board = &record.boards[0];
    let pos = AnyPosition::with_rules(record.variant, Some(&board.position), &record.rules)
        .map_err(corrupt)?;
    Ok(GameState::resume(pos, board.history.clone(), None))
}

/// The bughouse match of `record`, as the core plays it.
fn bughouse_match(record: &Record) -> Result<Match, MatchError> {
    let board = |i: usize| {
        Crazyhouse::from_fen(&record.boards[i].full_position(true), HouseRules::Bughouse)
            .map_err(corrupt)
    };
    Ok(Match::restore(
        [board(0)?, board(1)?],
        [record.boards[0].ply, record.boards[1].ply],
        record.outcome,
    ))
}

/// Check and claimable draws of every board of `record`.
pub fn board_status(record: &Record) -> Result<Vec<BoardStatus>, MatchError> {
    if record.is_bughouse() {
        let m = bughouse_match(record)?;
        Ok(BoardId::BOTH
            .into_iter()
            .map(|b| {
                let pos = m.board(b);
                BoardStatus {
                    turn: pos.turn(),
                    check: pos.is_check(),
                    claims: Vec::new(),
                    waiting_for_piece: record.outcome.is_none() && waits_for_piece(pos),
                }
            })
            .collect())
    } else {
        let state = single_state(record)?;
        Ok(vec![BoardStatus {
            turn: state.position().turn(),
            check: state.position().is_check(),
            claims: if record.outcome.is_some() {
                Vec::new()
            } else {
                state.claimable_draws()
            },
            waiting_for_piece: false,
        }])
    }
}

/// A single-board outcome as stored (no board; White's score).
fn single_outcome(o: Outcome) -> MatchOutcome {
    MatchOutcome {
        score: o.score,
        board: None,
        reason: o.reason,
    }
}

/// Whether two records of a match have the same clocks.
fn clocks_equal(a: &Record, b: &Record) -> bool {
    a.boards.len() == b.boards.len()
        && a.boards
            .iter()
            .zip(&b.boards)
            .all(|(x, y)| x.clock == y.clock)
}

/// The simple delay of each stage of `record`'s time control (empty without clocks).
fn delays_of(record: &Record) -> Vec<u64> {
    record.control.as_ref().map_or_else(Vec::new, |c| {
        c.stages()
            .iter()
            .map(|s| s.bonus.simple_delay_ms())
            .collect()
    })
}

/// The refusal of a press the clock cannot take.
fn clock_refusal(e: ClockError) -> MatchError {
    match e {
        ClockError::Paused => {
            MatchError::precondition(CLOCK_PAUSED, "the clocks are paused; wait for the resume")
        }
        ClockError::Over | ClockError::OutOfTime(_) => MatchError::over(),
        other => MatchError::precondition(NOT_YOUR_TURN, other.to_string()),
    }
}

/// The press that goes with `mover`'s move on `board` of `record`, if the match has clocks.
fn clock_press(
    record: &Record,
    board: BoardId,
    mover: Color,
    lag_ms: u64,
) -> Result<Option<ClockPress>, MatchError> {
    let Some(clock) = &record.boards[board.index()].clock else {
        return Ok(None);
    };
    let plan = clock.plan_press(mover, lag_ms).map_err(clock_refusal)?;
    Ok(Some(ClockPress {
        expected: encode_clock(clock),
        plan,
        mover,
        after: clock.advanced(mover),
        opening_window: match clock.phase() {
            Phase::Opening {
                other_moved: false,
                window_ms,
                ..
            } => Some(window_ms),
            _ => None,
        },
        delays: delays_of(record),
    }))
}

/// The side of the match a seat belongs to: its colour, or in bughouse its team (White for
/// team 1), as scores and draw offers count them.
fn match_side(record: &Record, seat: Seat) -> Color {
    if record.is_bughouse() {
        match seat.team() {
            Team::One => Color::White,
            Team::Two => Color::Black,
        }
    } else {
        seat.color
    }
}

/// What a planned move commits, and how to answer it.
struct Plan {
    commit: MoveCommit,
    played: PlayedMove,
    /// Check and claims of every board after the move, as the plan saw them.
    status: Vec<BoardStatus>,
    /// Bughouse: the other board and the ply the plan saw it at (its status holds only if it
    /// has not moved since; reserves do not change check or turn).
    other: Option<(usize, u32)>,
}

/// Why a move cannot be planned on a record.
enum Refusal {
    /// The board is at another ply (a retry, a race, or a stale snapshot).
    Stale { actual: u32 },
    /// Refused for good on this record.
    Refused(MatchError),
}

impl From<MatchError> for Refusal {
    fn from(e: MatchError) -> Self {
        Refusal::Refused(e)
    }
}

fn game_error(e: GameError) -> MatchError {
    match e {
        GameError::GameOver(_) => MatchError::over(),
        GameError::Move(m) => MatchError::invalid("move", m.to_string()),
        GameError::NotClaimable(c) => {
            MatchError::precondition(NOT_CLAIMABLE, format!("a {c} draw cannot be claimed now"))
        }
    }
}

fn plan_single(
    record: &Record,
    seat: Seat,
    text: &str,
    expected_ply: u32,
    locale: Locale,
    lag_ms: u64,
) -> Result<Plan, Refusal> {
    if record.outcome.is_some() {
        return Err(MatchError::over().into());
    }
    let board = &record.boards[0];
    if board.ply != expected_ply {
        return Err(Refusal::Stale { actual: board.ply });
    }
    let mut state = single_state(record)?;
    if state.position().turn() != seat.color {
        return Err(MatchError::precondition(
            NOT_YOUR_TURN,
            format!("it is {}'s turn", state.position().turn()),
        )
        .into());
    }
    let m = state
        .check_text(text, Notation::Auto, locale)
        .map_err(game_error)?;
    let clock = clock_press(record, BoardId::A, seat.color, lag_ms)?;
    let san = state.position().move_to_san(m, locale);
    let uci = m.to_string();
    state.play_checked(m);
    let after = state.position();
    let key = after.repetition_key();
    let history = if after.halfmove_clock() == 0 {
        HistoryUpdate::Reset(key)
    } else {
        HistoryUpdate::Append(key)
    };
    let ply = board.ply + 1;
    let position = after.to_text();
    let end = state.automatic_outcome().map(single_outcome);
    let status = vec![BoardStatus {
        turn: after.turn(),
        check: after.is_check(),
        claims: if end.is_some() {
            Vec::new()
        } else {
            state.claimable_draws()
        },
        waiting_for_piece: false,
    }];
    Ok(Plan {
        commit: MoveCommit {
            nonce: record.nonce.clone(),
            board: BoardId::A,
            expected_ply,
            position: position.clone(),
            history: Some(history),
            take: None,
            give: None,
            last: LastMove {
                ply,
                side: seat.color,
                text: text.to_owned(),
                uci: uci.clone(),
                san: san.clone(),
                at: 0,
            },
            move_event: move_event_prefix(BoardId::A, ply, seat.color, &uci, &san),
            side: seat.color,
            end,
            request: None,
            clock,
        },
        played: PlayedMove {
            board: BoardId::A,
            ply,
            side: seat.color,
            uci,
            san,
            position,
        },
        status,
        other: None,
    })
}

fn move_event_prefix(board: BoardId, ply: u32, side: Color, uci: &str, san: &str) -> String {
    let full = StoredEvent::Move {
        board,
        ply,
        side,
        uci: uci.to_owned(),
        san: san.to_owned(),
        position: String::new(),
    }
    .encode();
    // The store appends the position; drop the empty one encoded here ("0:").
    full[..full.len() - 2].to_owned()
}

fn plan_bughouse(
    record: &Record,
    seat: Seat,
    text: &str,
    expected_ply: u32,
    locale: Locale,
    lag_ms: u64,
) -> Result<Plan, Refusal> {
    let mut m = bughouse_match(record)?;
    let mv = match m.check(seat, text, expected_ply, locale) {
        Ok(mv) => mv,
        Err(bughouse::MatchError::StalePly { actual, .. }) => {
            return Err(Refusal::Stale { actual });
        }
        Err(bughouse::MatchError::MatchOver) => return Err(MatchError::over().into()),
        Err(e @ bughouse::MatchError::NotYourTurn { .. }) => {
            return Err(MatchError::precondition(NOT_YOUR_TURN, e.to_string()).into());
        }
        Err(bughouse::MatchError::Move(e)) => {
            return Err(MatchError::invalid("move", e.to_string()).into());
        }
        Err(e @ bughouse::MatchError::ReserveFull) => {
            return Err(MatchError::invalid("move", e.to_string()).into());
        }
    };
    let clock = clock_press(record, seat.board, seat.color, lag_ms)?;
    let played = m.play_checked(seat, mv, locale);
    let status = BoardId::BOTH
        .into_iter()
        .map(|b| BoardStatus {
            turn: m.board(b).turn(),
            check: m.board(b).is_check(),
            claims: Vec::new(),
            waiting_for_piece: played.outcome.is_none() && waits_for_piece(m.board(b)),
        })
        .collect();
    let other = seat.board.other();
    let letter = |role: arbiter_core::Role| role.char().to_ascii_uppercase();
    let position = {
        // The board without its reserve part: the store keeps reserves apart.
        let (placement, rest) = played.fen.split_once(' ').unwrap_or((&played.fen, ""));
        let placement = placement.split('[').next().unwrap_or(placement);
        format!("{placement} {rest}")
    };
    Ok(Plan {
        commit: MoveCommit {
            nonce: record.nonce.clone(),
            board: seat.board,
            expected_ply,
            position,
            history: None,
            take: played.dropped.map(|role| ReserveDelta {
                board: seat.board,
                side: seat.color,
                piece: letter(role),
            }),
            give: played.sent.map(|(partner, role)| ReserveDelta {
                board: partner.board,
                side: partner.color,
                piece: letter(role),
            }),
            last: LastMove {
                ply: played.ply,
                side: seat.color,
                text: text.to_owned(),
                uci: played.uci.clone(),
                san: played.san.clone(),
                at: 0,
            },
            move_event: move_event_prefix(
                seat.board,
                played.ply,
                seat.color,
                &played.uci,
                &played.san,
            ),
            side: match_side(record, seat),
            end: played.outcome,
            request: None,
            clock,
        },
        played: PlayedMove {
            board: seat.board,
            ply: played.ply,
            side: seat.color,
            uci: played.uci,
            san: played.san,
            position: played.fen,
        },
        status,
        other: Some((other.index(), record.boards[other.index()].ply)),
    })
}

/// The match host over a store.
#[derive(Debug)]
pub struct Matches<S> {
    store: S,
    key: SeatKey,
    watchers: Arc<Watchers>,
    max_plies: u32,
    first_move_ms: u64,
}

impl<S: MatchStore> Matches<S> {
    /// Matches kept in `store`, seat tokens signed with `key`, within `limits`.
    pub fn new(store: S, key: SeatKey, limits: MatchLimits) -> Matches<S> {
        Matches {
            store,
            key,
            watchers: Arc::new(Watchers::new(limits.watchers)),
            max_plies: limits.max_plies,
            first_move_ms: limits.first_move_ms,
        }
    }

    /// The watchers of this process: every change made here wakes its match's watchers (the
    /// Redis store's announcements wake them for changes made by other replicas).
    pub fn watchers(&self) -> &Arc<Watchers> {
        &self.watchers
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Whether the store works: `Err` with the reason while it cannot serve (for health).
    pub async fn probe(&self) -> Result<(), String> {
        self.store.probe().await
    }

    /// The tokens of every seat of `record`.
    pub fn tokens(&self, record: &Record) -> Vec<(Seat, String)> {
        seats_of(record)
            .iter()
            .map(|&s| (s, self.key.token(&record.id, &record.nonce, s)))
            .collect()
    }

    /// Creates a match (the caller has checked the platform credential). The same creation
    /// again with the same request id answers with the stored match and the same tokens; any
    /// other creation of an existing id is refused.
    pub async fn create(&self, c: Creation) -> Result<Created, MatchError> {
        let variant = c
            .variant
            .ok_or_else(|| MatchError::invalid("variant", "variant is required"))?;
        let bughouse = variant == Variant::Bughouse;
        check_text("request_id", &c.request_id, MAX_REQUEST_ID_BYTES)?;
        if !c.request_id.is_ascii() {
            return Err(MatchError::invalid("request_id", "use printable ASCII"));
        }
        let time_control = c.time_control.trim();
        check_text("time_control", time_control, MAX_TIME_CONTROL_BYTES)?;
        let control = if time_control.is_empty() {
            None
        } else {
            Some(
                TimeControl::parse(time_control)
                    .map_err(|e| MatchError::invalid("time_control", e.to_string()))?,
            )
        };
        let canonical_tc = control
            .as_ref()
            .map_or_else(String::new, ToString::to_string);
        let time_control = canonical_tc.as_str();
        let expected = if bughouse { 4 } else { 2 };
        if c.players.len() != expected {
            return Err(MatchError::invalid(
                "players",
                format!(
                    "a {variant} match has {expected} players (found {})",
                    c.players.len()
                ),
            ));
        }
        let mut players: Vec<String> = Vec::with_capacity(expected);
        for (i, p) in c.players.iter().enumerate() {
            let p = p.trim();
            if p.is_empty() {
                return Err(MatchError::invalid(
                    "players",
                    format!("player {} is empty", i + 1),
                ));
            }
            if p.len() > MAX_PLAYER_BYTES || !printable(p) {
                return Err(MatchError::invalid(
                    "players",
                    format!(
                        "player {} must be at most {MAX_PLAYER_BYTES} bytes without control \
                         characters",
                        i + 1
                    ),
                ));
            }
            if players.iter().any(|q| q == p) {
                return Err(MatchError::invalid(
                    "players",
                    format!("player {} appears twice", i + 1),
                ));
            }
            players.push(p.to_owned());
        }
        if c.start.len() > MAX_START_BYTES {
            return Err(MatchError::invalid(
                "start.text",
                format!("at most {MAX_START_BYTES} bytes"),
            ));
        }
        let (start, boards, rules, turns) = if bughouse {
            if let Some((name, _)) = c.rules.0.first() {
                return Err(MatchError::invalid(
                    "start.rules",
                    format!(
                        "bughouse has no rule option '{}'",
                        arbiter_kit::error::quote(name)
                    ),
                ));
            }
            let m = if c.start.trim().is_empty() {
                Match::new()
            } else {
                Match::from_bfen(&c.start)
                    .map_err(|e| MatchError::invalid("start.text", e.to_string()))?
            };
            if m.board(BoardId::A).terminal().is_some() || m.board(BoardId::B).terminal().is_some()
            {
                return Err(MatchError::invalid(
                    "start.text",
                    "a board of this position has already ended",
                ));
            }
            let board = |b: BoardId| {
                let pos = m.board(b);
                let fen = pos.to_fen();
                let (placement, rest) = fen.split_once(' ').unwrap_or((&fen, ""));
                let placement = placement.split('[').next().unwrap_or(placement);
                BoardRecord::new(
                    format!("{placement} {rest}"),
                    [
                        pos.reserves().letters(Color::White),
                        pos.reserves().letters(Color::Black).to_ascii_lowercase(),
                    ],
                    Vec::new(),
                )
            };
            (
                m.to_bfen(),
                vec![board(BoardId::A), board(BoardId::B)],
                RuleOptions::default(),
                vec![m.board(BoardId::A).turn(), m.board(BoardId::B).turn()],
            )
        } else {
            let pos =
                arbiter_kit::convert::position_from_parts(variant, &c.start, &c.rules, "start")
                    .map_err(|e| match e.field() {
                        Some("start.rules") => MatchError::invalid("start.rules", e.description()),
                        _ => MatchError::invalid("start.text", e.description()),
                    })?;
            let state = GameState::new(pos);
            if let Some(o) = state.outcome() {
                return Err(MatchError::invalid(
                    "start.text",
                    format!("the game has already ended in this position ({o})"),
                ));
            }
            let pos = state.position();
            (
                pos.to_text(),
                vec![BoardRecord::new(
                    pos.to_text(),
                    Default::default(),
                    state.history().to_vec(),
                )],
                pos.rule_options(),
                vec![pos.turn()],
            )
        };
        let spec = {
            let rule_items: Vec<&str> = rules
                .0
                .iter()
                .flat_map(|(n, v)| [n.as_str(), v.as_str()])
                .collect();
            let canonical = pack(&[
                variant.name(),
                &start,
                &pack(&rule_items),
                &pack(&players),
                time_control,
            ]);
            arbiter_kit::hex(&Sha256::digest(canonical.as_bytes()))
        };
        let id = if !c.match_id.is_empty() {
            check_match_id(&c.match_id)?;
            c.match_id.clone()
        } else if !c.request_id.is_empty() {
            self.key.derive_id(&c.request_id)
        } else {
            format!("m{}", random_hex())
        };
        let request_key = if c.request_id.is_empty() {
            String::new()
        } else {
            self.key.request_key(&c.request_id)
        };
        let mut boards = boards;
        if let Some(control) = &control {
            // Bughouse: four clocks started together; a single board: lichess's start (each
            // side's first move untimed, within the first-move window).
            let now = self.store.now().await?;
            for (b, &turn) in boards.iter_mut().zip(&turns) {
                let mut clock = Clock::new(control.clone());
                let started = if bughouse {
                    clock.start(turn, now)
                } else {
                    clock.start_after_first_moves(turn, now, self.first_move_ms)
                };
                started.map_err(|e| corrupt(e.to_string()))?;
                b.clock = Some(clock);
            }
        }
        let record = Record {
            id: id.clone(),
            nonce: random_hex(),
            spec,
            request_key,
            variant,
            rules,
            players,
            time_control: time_control.to_owned(),
            control,
            start,
            boards,
            outcome: None,
            ended_at: None,
            draw_offers: [false, false],
            last_seq: 0,
        };
        // A retry is the same request id with the same content: only then are the tokens of an
        // existing match handed out again.
        let (stored, created) = match self.store.create(&record).await? {
            CreateResult::Created(r) => (r, true),
            CreateResult::Full(max) => {
                return Err(MatchError::Exhausted {
                    field: "",
                    description: format!(
                        "this server holds its maximum of {max} matches; retry later"
                    ),
                });
            }
            CreateResult::Exists(r)
                if !record.request_key.is_empty()
                    && r.request_key == record.request_key
                    && r.spec == record.spec =>
            {
                (r, false)
            }
            CreateResult::Exists(_) => return Err(MatchError::AlreadyExists(id)),
        };

        Ok(Created {
            seats: self.tokens(&stored),
            record: stored,
            created,
        })
    }

    /// Reads a match as stored now.
    pub async fn get(&self, id: &str) -> Result<Arc<Record>, MatchError> {
        check_match_id(id)?;
        self.store
            .load(id)
            .await?
            .ok_or_else(|| MatchError::NotFound(id.to_owned()))
    }

    async fn snapshot(&self, id: &str) -> Result<(Arc<Record>, bool), MatchError> {
        check_match_id(id)?;
        self.store
            .snapshot(id)
            .await?
            .ok_or_else(|| MatchError::NotFound(id.to_owned()))
    }

    /// The seat `r` names in `record`, if the record has it.
    fn seat(record: &Record, r: SeatRef) -> Result<Seat, MatchError> {
        let color = r
            .color
            .ok_or_else(|| MatchError::invalid("side", "side is required"))?;
        let board = match (record.is_bughouse(), r.board) {
            (true, Some(b)) => b,
            (true, None) => {
                return Err(MatchError::invalid(
                    "board",
                    "a bughouse match needs the board (BOARD_A or BOARD_B)",
                ));
            }
            (false, None | Some(BoardId::A)) => BoardId::A,
            (false, Some(BoardId::B)) => {
                return Err(MatchError::invalid(
                    "board",
                    "a single-board game has only board A",
                ));
            }
        };
        Ok(Seat::new(board, color))
    }

    /// Checks `token` for `seat` of `record`.
    fn authorize(
        &self,
        record: &Record,
        seat: Seat,
        token: Option<&str>,
    ) -> Result<(), MatchError> {
        let token = token.ok_or_else(|| {
            MatchError::Unauthenticated("this call needs the seat's bearer token".into())
        })?;
        if self.key.verify(&record.id, &record.nonce, seat, token) {
            Ok(())
        } else {
            Err(MatchError::PermissionDenied(format!(
                "the token is not that of {} on board {} in this match",
                seat.color, seat.board
            )))
        }
    }

    /// Loads the record for an action of `seat_ref` with `token`: from the snapshot, and again
    /// from the store when the snapshot refuses the token (it may predate a re-creation).
    async fn authorized(
        &self,
        id: &str,
        seat_ref: SeatRef,
        token: Option<&str>,
    ) -> Result<(Arc<Record>, Seat, bool), MatchError> {
        let (mut record, mut fresh) = self.snapshot(id).await?;
        loop {
            let seat = Self::seat(&record, seat_ref)?;
            match self.authorize(&record, seat, token) {
                Ok(()) => return Ok((record, seat, fresh)),
                Err(MatchError::PermissionDenied(_)) if !fresh => {
                    record = self.get(id).await?;
                    fresh = true;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Plays `text` for the seat `seat_ref` (whose token is `token`) if its board is at
    /// `expected_ply`; with clocks, `lag_ms` is the lag the client reports (compensated within
    /// its quota). `text` is taken exactly as sent: 1 to [`MAX_MOVE_BYTES`] bytes without
    /// whitespace or control characters, checked before anything else (nothing is trimmed).
    /// With a `request_id`, a retry of the same request (text, ply, locale) is answered as a
    /// duplicate, and the id sent with another request is [`MatchError::RequestIdReused`].
    #[allow(clippy::too_many_arguments)]
    pub async fn play(
        &self,
        id: &str,
        seat_ref: SeatRef,
        token: Option<&str>,
        text: &str,
        expected_ply: u32,
        locale: Locale,
        request_id: Option<&str>,
        lag_ms: u64,
    ) -> Result<MoveAnswer, MatchError> {
        check_move_text(text)?;
        check_request_id(request_id)?;
        let (mut record, mut seat, mut fresh) = self.authorized(id, seat_ref, token).await?;
        // What the request does: its text (as sent), the ply and the locale that reads it. The
        // reported lag is a measurement, not part of the request: a retry may report another.
        let ply_text = expected_ply.to_string();
        let request = request_id.map(|r| {
            RequestId::seat(
                seat.board,
                seat.color,
                r,
                RequestKind::Move,
                &[text, &ply_text, locale_name(locale)],
            )
        });
        let refused = |e: MatchError, record: Arc<Record>| {
            let request = request.clone();
            async move {
                let Some(request) = &request else {
                    return Err(e);
                };
                match recall(self.store.done(id, &request.field).await?, request)? {
                    Some(Done::Move { seq }) => self.replayed(id, seq, record).await,
                    _ => Err(e),
                }
            }
        };
        for _ in 0..ATTEMPTS {
            // The board first: a retry of a move already applied is answered as such even when
            // that move ended the match.
            let actual = record.boards[seat.board.index()].ply;
            let plan = if actual != expected_ply {
                Err(Refusal::Stale { actual })
            } else if actual >= self.max_plies {
                Err(Refusal::Refused(MatchError::Exhausted {
                    field: "move",
                    description: format!(
                        "board {} has reached this server's limit of {} plies",
                        seat.board, self.max_plies
                    ),
                }))
            } else if record.is_bughouse() {
                plan_bughouse(&record, seat, text, expected_ply, locale, lag_ms)
            } else {
                plan_single(&record, seat, text, expected_ply, locale, lag_ms)
            };
            let plan = match plan {
                Ok(plan) => plan,
                Err(_) if !fresh => {
                    // Judged on an old snapshot: judge again on the record as stored.
                    let now = self.get(id).await?;
                    seat = self.reauthorized(&record, &now, seat_ref, token)?;
                    record = now;
                    fresh = true;
                    continue;
                }
                Err(Refusal::Stale { actual }) => {
                    // With a request id, only the id tells a retry; without one, the same seat,
                    // text and ply do.
                    let text_retry = request.is_none();
                    return match self.duplicate_or_stale(
                        &record,
                        seat,
                        text_retry.then_some(text),
                        expected_ply,
                        actual,
                    ) {
                        Ok(mut answer) => {
                            answer.at = self.store.now().await?;
                            Ok(answer)
                        }
                        Err(e) => refused(e, record).await,
                    };
                }
                Err(Refusal::Refused(e)) => return refused(e, record).await,
            };
            let mut commit = plan.commit;
            commit.request = request.clone();
            match self.store.commit_move(id, &commit).await? {
                MoveResult::Applied(after) => {
                    self.watchers.wake(id);
                    let board = &after.boards[plan.played.board.index()];
                    let played = PlayedMove {
                        position: board.full_position(after.is_bughouse()),
                        ..plan.played
                    };
                    // The plan's view holds unless the other board moved meanwhile.
                    let status = match plan.other {
                        Some((i, ply)) if after.boards[i].ply != ply => board_status(&after)?,
                        _ => plan.status,
                    };
                    let at = after.boards[plan.played.board.index()]
                        .last
                        .as_ref()
                        .map_or(0, |l| l.at);
                    return Ok(MoveAnswer {
                        played,
                        record: after,
                        status,
                        duplicate: false,
                        at,
                    });
                }
                MoveResult::Stale(now) | MoveResult::Over(now) => {
                    seat = self.reauthorized(&record, &now, seat_ref, token)?;
                    record = now;
                    fresh = true;
                }
                MoveResult::Done(remembered, now) => {
                    let request = commit.request.as_ref().ok_or_else(|| {
                        corrupt("the store answered a move without a request id as done")
                    })?;
                    return match recall(Some(remembered), request)? {
                        Some(Done::Move { seq }) => self.replayed(id, seq, now).await,
                        _ => Err(MatchError::RequestIdReused(request.id.clone())),
                    };
                }
                MoveResult::Late(_) => {
                    // A flag fell before the move came: the match ends on time, not with it.
                    self.end_on_time(id).await?;
                    return refused(MatchError::over(), self.get(id).await?).await;
                }
                MoveResult::Missing => return Err(MatchError::NotFound(id.to_owned())),
            }
        }
        Err(MatchError::precondition(
            STALE_PLY,
            "the board kept changing while the move was judged; read the match and retry",
        ))
    }

    /// The answer to a move request applied before (its request id is known): the move as it
    /// was played, from its event, and the match as it stands now.
    async fn replayed(
        &self,
        id: &str,
        seq: u64,
        record: Arc<Record>,
    ) -> Result<MoveAnswer, MatchError> {
        let event = self.store.events(id, seq - 1, 1).await?;
        let Some((_, line)) = event.first() else {
            return Err(MatchError::Store(crate::store::StoreError::Corrupt(
                format!("the move event {seq} a request points to is missing"),
            )));
        };
        let StoredEvent::Move {
            board,
            ply,
            side,
            uci,
            san,
            position,
        } = StoredEvent::decode(line)?
        else {
            return Err(MatchError::Store(crate::store::StoreError::Corrupt(
                format!("event {seq} a request points to is not a move"),
            )));
        };
        Ok(MoveAnswer {
            played: PlayedMove {
                board,
                ply,
                side,
                uci,
                san,
                position,
            },
            status: board_status(&record)?,
            record,
            duplicate: true,
            at: self.store.now().await?,
        })
    }

    /// The seat again when the record a request is judged on is replaced by `now`: the token was
    /// checked against `before`, so a match created again under the same id (another nonce)
    /// must accept it anew.
    fn reauthorized(
        &self,
        before: &Record,
        now: &Record,
        seat_ref: SeatRef,
        token: Option<&str>,
    ) -> Result<Seat, MatchError> {
        let seat = Self::seat(now, seat_ref)?;
        if now.nonce != before.nonce {
            self.authorize(now, seat, token)?;
        }
        Ok(seat)
    }

    /// The answer to a move whose board is no longer at `expected_ply`: the same move already
    /// applied by the same seat (a retry known by its `text`: answered as a duplicate, nothing
    /// changes), or `STALE_PLY` (`MATCH_OVER` once the match has ended).
    fn duplicate_or_stale(
        &self,
        record: &Arc<Record>,
        seat: Seat,
        text: Option<&str>,
        expected_ply: u32,
        actual: u32,
    ) -> Result<MoveAnswer, MatchError> {
        let board = &record.boards[seat.board.index()];
        if let Some(text) = text
            && let Some(last) = &board.last
            && expected_ply.checked_add(1) == Some(actual)
            && last.ply == actual
            && last.side == seat.color
            && (last.text == text || last.uci == text)
        {
            return Ok(MoveAnswer {
                played: PlayedMove {
                    board: seat.board,
                    ply: last.ply,
                    side: last.side,
                    uci: last.uci.clone(),
                    san: last.san.clone(),
                    position: board.full_position(record.is_bughouse()),
                },
                status: board_status(record)?,
                record: Arc::clone(record),
                duplicate: true,
                at: 0, // the caller reads the time
            });
        }
        if record.outcome.is_some() {
            return Err(MatchError::over());
        }
        Err(MatchError::precondition(
            STALE_PLY,
            format!(
                "board {} is at ply {actual}, the request expected {expected_ply}",
                seat.board
            ),
        ))
    }

    /// Resigns for the seat's side (in bughouse, its team).
    pub async fn resign(
        &self,
        id: &str,
        seat_ref: SeatRef,
        token: Option<&str>,
        request_id: Option<&str>,
    ) -> Result<Changed, MatchError> {
        check_request_id(request_id)?;
        let (record, seat, _) = self.authorized(id, seat_ref, token).await?;
        let request = request_id
            .map(|r| RequestId::seat(seat.board, seat.color, r, RequestKind::Resign, &[]));
        let loss = Outcome::win(!seat.color, EndReason::Resignation);
        let outcome = if record.is_bughouse() {
            MatchOutcome::from_board(seat.board, loss)
        } else {
            single_outcome(loss)
        };
        let commit = EndCommit {
            nonce: record.nonce.clone(),
            guard: None,
            outcome,
            request: request.clone(),
            delays: delays_of(&record),
        };
        let result = self.store.commit_end(id, &commit).await?;
        self.change(id, result, request.as_ref()).await
    }

    /// Records the seat's side's draw offer; the match is drawn once both sides offer.
    pub async fn offer_draw(
        &self,
        id: &str,
        seat_ref: SeatRef,
        token: Option<&str>,
        request_id: Option<&str>,
    ) -> Result<Changed, MatchError> {
        check_request_id(request_id)?;
        let (record, seat, _) = self.authorized(id, seat_ref, token).await?;
        let request = request_id
            .map(|r| RequestId::seat(seat.board, seat.color, r, RequestKind::OfferDraw, &[]));
        let commit = OfferCommit {
            nonce: record.nonce.clone(),
            side: match_side(&record, seat),
            agreed: MatchOutcome {
                score: Score::DRAW,
                board: None,
                reason: EndReason::Agreement,
            },
            request: request.clone(),
            delays: delays_of(&record),
        };
        let result = self.store.commit_offer(id, &commit).await?;
        self.change(id, result, request.as_ref()).await
    }

    /// Ends the game with a draw the rules allow `seat_ref`'s side to claim now.
    pub async fn claim_draw(
        &self,
        id: &str,
        seat_ref: SeatRef,
        token: Option<&str>,
        claim: DrawClaim,
        request_id: Option<&str>,
    ) -> Result<Changed, MatchError> {
        check_request_id(request_id)?;
        let (mut record, seat, mut fresh) = self.authorized(id, seat_ref, token).await?;
        let request = request_id.map(|r| {
            RequestId::seat(
                seat.board,
                seat.color,
                r,
                RequestKind::ClaimDraw,
                &[claim.name()],
            )
        });
        for _ in 0..ATTEMPTS {
            let refusal = if record.is_bughouse() {
                Some(MatchError::precondition(
                    NOT_CLAIMABLE,
                    "bughouse boards have neither repetition nor a move-count rule",
                ))
            } else if record.outcome.is_some() {
                Some(MatchError::over())
            } else {
                None
            };
            if let Some(e) = refusal {
                return self.refused_change(id, e, record, request.as_ref()).await;
            }
            let mut state = single_state(&record)?;
            let outcome = match state.claim_draw(claim) {
                Ok(o) => o,
                Err(_) if !fresh => {
                    let now = self.get(id).await?;
                    self.reauthorized(&record, &now, seat_ref, token)?;
                    record = now;
                    fresh = true;
                    continue;
                }
                Err(e) => {
                    return self
                        .refused_change(id, game_error(e), record, request.as_ref())
                        .await;
                }
            };
            let commit = EndCommit {
                nonce: record.nonce.clone(),
                guard: Some((BoardId::A, record.boards[0].ply)),
                outcome: single_outcome(outcome),
                request: request.clone(),
                delays: delays_of(&record),
            };
            match self.store.commit_end(id, &commit).await? {
                ChangeResult::Stale(now) => {
                    self.reauthorized(&record, &now, seat_ref, token)?;
                    record = now;
                    fresh = true;
                }
                other => return self.change(id, other, request.as_ref()).await,
            }
        }
        Err(MatchError::precondition(
            STALE_PLY,
            "the board kept changing while the claim was judged; read the match and retry",
        ))
    }

    async fn change(
        &self,
        id: &str,
        result: ChangeResult,
        request: Option<&RequestId>,
    ) -> Result<Changed, MatchError> {
        match result {
            ChangeResult::Applied(record) => {
                self.watchers.wake(id);
                Ok(Changed {
                    record,
                    duplicate: false,
                })
            }
            ChangeResult::Done(remembered, record) => {
                let request = request.ok_or_else(|| {
                    corrupt("the store answered a change without a request id as done")
                })?;
                recall(Some(remembered), request)?;
                Ok(Changed {
                    record,
                    duplicate: true,
                })
            }
            ChangeResult::Over(record) => {
                self.refused_change(id, MatchError::over(), record, request)
                    .await
            }
            // Only a re-created match changes the nonce under a resignation or an offer.
            ChangeResult::Stale(_) => Err(MatchError::PermissionDenied(
                "the match was created again since; the token is not valid any more".into(),
            )),
            ChangeResult::Late(_) => {
                self.end_on_time(id).await?;
                let record = self.get(id).await?;
                self.refused_change(id, MatchError::over(), record, request)
                    .await
            }
            ChangeResult::Missing => Err(MatchError::NotFound(id.to_owned())),
        }
    }

    /// A change refused with `e` on `record`, unless its request id is remembered: applied
    /// before by the same request (then the answer is that it was, with the match as it
    /// stands), or used by another request ([`MatchError::RequestIdReused`]).
    async fn refused_change(
        &self,
        id: &str,
        e: MatchError,
        record: Arc<Record>,
        request: Option<&RequestId>,
    ) -> Result<Changed, MatchError> {
        if let Some(request) = request
            && recall(self.store.done(id, &request.field).await?, request)?.is_some()
        {
            return Ok(Changed {
                record,
                duplicate: true,
            });
        }
        Err(e)
    }

    /// The store's time (Unix ms): the time base of the clocks.
    pub async fn now(&self) -> Result<u64, MatchError> {
        Ok(self.store.now().await?)
    }

    /// Ends match `id` on time if one of its deadlines has passed: a flag (a loss, a draw when
    /// the opponent cannot possibly mate; in bughouse always a loss for the team, both boards'
    /// clocks stopping at that instant) or a no-show (aborted, no result). Idempotent: a match
    /// already over, or not due, is left alone (and filed again at its real deadline). Returns
    /// whether this call ended it.
    pub async fn end_on_time(&self, id: &str) -> Result<bool, MatchError> {
        self.end_on_time_at(id, tokio::time::Instant::now()).await
    }

    /// [`Self::end_on_time`], judged at once but committed not before `not_before` (the flag
    /// worker claims games ahead of their deadlines).
    pub async fn end_on_time_at(
        &self,
        id: &str,
        not_before: tokio::time::Instant,
    ) -> Result<bool, MatchError> {
        for _ in 0..ATTEMPTS {
            let Some(record) = self.store.load(id).await? else {
                self.store.reindex(id, None).await?;
                return Ok(false);
            };
            if record.outcome.is_some() {
                self.store.reindex(id, None).await?;
                return Ok(false);
            }
            // The earliest deadline; the store applies the end only once it has passed (by its
            // own time), so no read of the time is needed here.
            let due = record
                .boards
                .iter()
                .enumerate()
                .filter_map(|(i, b)| Some((BoardId::BOTH[i], b.clock.as_ref()?.deadline()?)))
                .min_by_key(|(_, d)| d.at);
            let Some((board, deadline)) = due else {
                self.store.reindex(id, None).await?;
                return Ok(false);
            };
            // Bughouse: flags of both teams falling at the same instant draw the match.
            let simultaneous = record.is_bughouse().then(|| {
                let other = board.other();
                let d = record.boards[other.index()].clock.as_ref()?.deadline()?;
                let teams_differ =
                    Seat::new(other, d.color).team() != Seat::new(board, deadline.color).team();
                (d.at == deadline.at && !d.no_show && teams_differ).then_some(other)
            });
            let simultaneous = simultaneous.flatten();
            let outcome = if let Some(_other) = simultaneous {
                MatchOutcome {
                    score: Score::DRAW,
                    board: None,
                    reason: EndReason::Timeout,
                }
            } else if deadline.no_show {
                MatchOutcome {
                    score: Score::DRAW,
                    board: record.is_bughouse().then_some(board),
                    reason: EndReason::Aborted,
                }
            } else if record.is_bughouse() {
                let mut m = bughouse_match(&record)?;
                m.flag_fall(Seat::new(board, deadline.color))
                    .map_err(|e| corrupt(e.to_string()))?
            } else {
                let mut state = single_state(&record)?;
                single_outcome(
                    state
                        .flag_fall(deadline.color)
                        .map_err(|e| corrupt(e.to_string()))?,
                )
            };
            let mut clocks = Vec::new();
            let mut events = Vec::new();
            for (i, b) in record.boards.iter().enumerate() {
                let Some(clock) = &b.clock else { continue };
                let mut after = clock.clone();
                let id_b = BoardId::BOTH[i];
                if id_b == board || simultaneous == Some(id_b) {
                    after
                        .expire(deadline.at)
                        .map_err(|e| corrupt(e.to_string()))?;
                } else if after.stop(deadline.at).is_err() {
                    continue;
                }
                events.push(StoredEvent::clock(id_b, &after, deadline.at).encode());
                clocks.push(ClockChange {
                    board: id_b,
                    expected: encode_clock(clock),
                    clock: after,
                });
            }
            let commit = ClockCommit {
                nonce: record.nonce.clone(),
                clocks,
                timing: Timing::Due(deadline.at),
                events,
                end: Some(outcome),
                request: None,
            };
            // Judged ahead of the deadline (see `arbiter_timekeeping::run_flag_worker`):
            // committed at it.
            tokio::time::sleep_until(not_before).await;
            match self.store.commit_clock(id, &commit).await? {
                ChangeResult::Applied(_) => {
                    self.watchers.wake(id);
                    tracing::debug!(match_id = id, deadline = deadline.at, "ended on time");
                    return Ok(true);
                }
                ChangeResult::Over(_) | ChangeResult::Missing => return Ok(false),
                ChangeResult::Stale(now)
                    if now.nonce == record.nonce && clocks_equal(&now, &record) =>
                {
                    // Not due yet: file it again at its real deadline.
                    self.store.reindex(id, now.deadline()).await?;
                    return Ok(false);
                }
                // Changed meanwhile (a move in time): judge again.
                _ => {}
            }
        }
        Ok(false)
    }

    /// Ends on time every match whose deadline has passed, until `shutdown` turns true (the
    /// shared flag worker of `arbiter-timekeeping` over this service's store). Several replicas
    /// may run it: each claims due matches with a lease, and ending a match is idempotent.
    pub async fn run_flag_worker(&self, shutdown: tokio::sync::watch::Receiver<bool>) {
        arbiter_timekeeping::run_flag_worker(self, shutdown).await;
    }

    /// Pauses every running clock of the match (a platform action), at the store's time.
    pub async fn pause_clocks(
        &self,
        id: &str,
        request_id: Option<&str>,
    ) -> Result<Changed, MatchError> {
        self.clock_action(id, request_id, RequestKind::PauseClocks, |clock, now| {
            clock.pause(now)
        })
        .await
    }

    /// Resumes the match's paused clocks (a platform action).
    pub async fn resume_clocks(
        &self,
        id: &str,
        request_id: Option<&str>,
    ) -> Result<Changed, MatchError> {
        self.clock_action(id, request_id, RequestKind::ResumeClocks, |clock, now| {
            clock.resume(now)
        })
        .await
    }

    /// Gives `ms` more to the clock of `seat_ref` (a platform action).
    pub async fn add_time(
        &self,
        id: &str,
        seat_ref: SeatRef,
        ms: u64,
        request_id: Option<&str>,
    ) -> Result<Changed, MatchError> {
        if ms == 0 {
            return Err(MatchError::invalid("ms", "must be positive"));
        }
        check_request_id(request_id)?;
        let record = self.get(id).await?;
        let seat = Self::seat(&record, seat_ref)?;
        let ms_text = ms.to_string();
        let request = request_id.map(|r| {
            RequestId::platform(
                r,
                RequestKind::AddTime,
                &[
                    crate::record::board_letter(seat.board),
                    crate::record::side_letter(seat.color),
                    &ms_text,
                ],
            )
        });
        self.clock_action_on(id, request, Some(seat.board), |clock, now| {
            clock.add_time(seat.color, ms, now)
        })
        .await
    }

    async fn clock_action(
        &self,
        id: &str,
        request_id: Option<&str>,
        kind: RequestKind,
        f: impl Fn(&mut Clock, u64) -> Result<(), ClockError>,
    ) -> Result<Changed, MatchError> {
        check_request_id(request_id)?;
        let request = request_id.map(|r| RequestId::platform(r, kind, &[]));
        self.clock_action_on(id, request, None, f).await
    }

    /// Applies `f` at the store's time to the clocks of `board` (every board if `None`), as one
    /// guarded step with a snapshot event per clock changed.
    async fn clock_action_on(
        &self,
        id: &str,
        request: Option<RequestId>,
        board: Option<BoardId>,
        f: impl Fn(&mut Clock, u64) -> Result<(), ClockError>,
    ) -> Result<Changed, MatchError> {
        for _ in 0..ATTEMPTS {
            let record = self.get(id).await?;
            if record.control.is_none() {
                return Err(MatchError::precondition(
                    NO_CLOCK,
                    "this match has no clocks",
                ));
            }
            if record.outcome.is_some() {
                return self
                    .refused_change(id, MatchError::over(), record, request.as_ref())
                    .await;
            }
            if record.last_seq >= MAX_EVENTS_FOR_CLOCK_ACTIONS {
                let full = MatchError::Exhausted {
                    field: "",
                    description: format!(
                        "this match holds {MAX_EVENTS_FOR_CLOCK_ACTIONS} events: no more clock actions"
                    ),
                };
                return self
                    .refused_change(id, full, record, request.as_ref())
                    .await;
            }
            let now = self.store.now().await?;
            let mut clocks = Vec::new();
            let mut events = Vec::new();
            for (i, b) in record.boards.iter().enumerate() {
                let id_b = BoardId::BOTH[i];
                if board.is_some_and(|x| x != id_b) {
                    continue;
                }
                let Some(clock) = &b.clock else { continue };
                let mut after = clock.clone();
                match f(&mut after, now) {
                    Ok(()) => {}
                    Err(ClockError::OutOfTime(_)) => {
                        self.end_on_time(id).await?;
                        let record = self.get(id).await?;
                        return self
                            .refused_change(id, MatchError::over(), record, request.as_ref())
                            .await;
                    }
                    Err(e) => {
                        let refusal = match e {
                            ClockError::Over => MatchError::over(),
                            // AddTime beyond the most a side may hold (100 days).
                            e @ ClockError::TooMuchTime { .. } => {
                                MatchError::invalid("ms", e.to_string())
                            }
                            other => MatchError::precondition(CLOCK_PAUSED, other.to_string()),
                        };
                        return self
                            .refused_change(id, refusal, record, request.as_ref())
                            .await;
                    }
                }
                events.push(StoredEvent::clock(id_b, &after, now).encode());
                clocks.push(ClockChange {
                    board: id_b,
                    expected: encode_clock(clock),
                    clock: after,
                });
            }
            let commit = ClockCommit {
                nonce: record.nonce.clone(),
                clocks,
                timing: Timing::Live,
                events,
                end: None,
                request: request.clone(),
            };
            match self.store.commit_clock(id, &commit).await? {
                ChangeResult::Stale(_) => continue,
                other => return self.change(id, other, request.as_ref()).await,
            }
        }
        Err(MatchError::precondition(
            STALE_PLY,
            "the match kept changing while the clock action was judged; retry",
        ))
    }

    /// At most `max` events after sequence number `after`.
    pub async fn events(
        &self,
        id: &str,
        after: u64,
        max: usize,
    ) -> Result<Vec<(u64, StoredEvent)>, MatchError> {
        check_match_id(id)?;
        self.store
            .events(id, after, max)
            .await?
            .into_iter()
            .map(|(seq, line)| Ok((seq, StoredEvent::decode(&line)?)))
            .collect()
    }
}

impl<S: MatchStore> arbiter_timekeeping::DeadlineSource for Matches<S> {
    type Error = MatchError;

    async fn next_deadline(&self) -> Result<(Option<u64>, u64), MatchError> {
        Ok(self.store.next_deadline().await?)
    }

    async fn claim_due(
        &self,
        ahead: u64,
        lease: u64,
        max: usize,
    ) -> Result<arbiter_timekeeping::Claimed, MatchError> {
        Ok(self.store.claim_due(ahead, lease, max).await?)
    }

    async fn end_on_time(
        &self,
        id: &str,
        not_before: tokio::time::Instant,
    ) -> Result<bool, MatchError> {
        Matches::end_on_time_at(self, id, not_before).await
    }

    fn deadline_changed(&self) -> Arc<tokio::sync::Notify> {
        self.store.deadline_changed()
    }
}
