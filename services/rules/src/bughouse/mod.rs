//! Bughouse matches kept by the rules service: the domain operations over a [`MatchStore`]
//! (create, move, read, resign, draw offers, events), independent of gRPC.
//!
//! A move is validated by `arbiter_core::bughouse::Match` on a snapshot of the stored match,
//! then committed by the store in one atomic step guarded by the board's ply. A snapshot can
//! only be behind the store in ways that keep the validation true: the other board may have
//! moved (which can only add pieces to this board's reserves), and this board's own changes are
//! caught by the ply guard. A retry of a move already applied (same board, same player, same
//! text, the ply just after) is answered as a duplicate without applying anything.

pub mod grpc;
pub mod loadgen;
pub mod redis_store;
pub mod store;

use arbiter_core::bughouse::{BoardId, Match, MatchError, MatchEvent, MatchOutcome, Seat, Team};
use arbiter_core::chess::MoveKind;
use arbiter_core::outcome::Score;
use arbiter_core::{Color, Crazyhouse, EndReason, Locale, PositionTextError};
use std::sync::atomic::{AtomicU64, Ordering};
use store::{EndResult, Fields, MatchStore, MoveCommit, MoveResult, StoreError, reserve_text};
use tokio::sync::Notify;

/// Why a bughouse request was refused (mapped to a gRPC status in [`crate::error`]).
#[derive(Debug)]
pub enum BughouseError {
    /// A malformed request or an illegal move: the field and what is wrong.
    Invalid {
        /// The request field (`move`, `player_id`, `board`, `start_bfen`, …).
        field: &'static str,
        /// What is wrong.
        description: String,
    },
    /// No match with that id (never created, or expired).
    NotFound(String),
    /// A match with that id exists already.
    AlreadyExists(String),
    /// The request does not fit the match's current state (stale ply, out of turn, over).
    FailedPrecondition {
        /// A stable machine-readable reason: `STALE_PLY`, `NOT_YOUR_TURN`, `MATCH_OVER`.
        reason: &'static str,
        /// What happened.
        description: String,
    },
    /// The store is unreachable; nothing was applied.
    Unavailable(StoreError),
}

impl From<StoreError> for BughouseError {
    fn from(e: StoreError) -> Self {
        BughouseError::Unavailable(e)
    }
}

impl std::fmt::Display for BughouseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BughouseError::Invalid { field, description } => write!(f, "{field}: {description}"),
            BughouseError::NotFound(id) => write!(f, "no match '{id}'"),
            BughouseError::AlreadyExists(id) => write!(f, "match '{id}' already exists"),
            BughouseError::FailedPrecondition { description, .. } => f.write_str(description),
            BughouseError::Unavailable(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for BughouseError {}

fn invalid(field: &'static str, description: impl Into<String>) -> BughouseError {
    BughouseError::Invalid {
        field,
        description: description.into(),
    }
}

fn precondition(reason: &'static str, description: impl Into<String>) -> BughouseError {
    BughouseError::FailedPrecondition {
        reason,
        description: description.into(),
    }
}

/// One board of a match as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardView {
    /// The FEN with both reserves.
    pub fen: String,
    /// Moves played.
    pub ply: u32,
    /// The side to move.
    pub turn: Color,
    /// White's reserve (`QRBNP` letters).
    pub white_reserve: String,
    /// Black's reserve.
    pub black_reserve: String,
}

/// A match as read from the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchView {
    /// The id.
    pub id: String,
    /// White A, Black A, White B, Black B.
    pub players: [String; 4],
    /// The time control reference.
    pub time_control: String,
    /// Boards A and B.
    pub boards: [BoardView; 2],
    /// The outcome once over.
    pub outcome: Option<MatchOutcome>,
    /// The latest event's sequence number.
    pub last_seq: u64,
    /// Teams offering a draw.
    pub draw_offers: Vec<u8>,
}

impl MatchView {
    /// `FEN_A | FEN_B`.
    pub fn bfen(&self) -> String {
        format!("{} | {}", self.boards[0].fen, self.boards[1].fen)
    }

    /// Units on both boards and in all reserves (64 in every match from the start).
    pub fn units(&self) -> u32 {
        self.boards
            .iter()
            .map(|b| {
                let placement = b.fen.split('[').next().unwrap_or("");
                (placement.chars().filter(char::is_ascii_alphabetic).count()
                    + b.white_reserve.len()
                    + b.black_reserve.len()) as u32
            })
            .sum()
    }
}

/// A stored event, decoded.
#[derive(Clone, Debug, PartialEq)]
pub enum StoredEvent {
    /// A match event.
    Match(MatchEvent),
    /// A team offered a draw.
    DrawOffer(u8),
}

/// A move as played (for the response).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlayedMove {
    /// The board.
    pub board: BoardId,
    /// The board's ply after it.
    pub ply: u32,
    /// UCI.
    pub uci: String,
    /// SAN.
    pub san: String,
    /// The board's FEN after it.
    pub fen: String,
}

const SEAT_FIELDS: [&str; 4] = ["wa", "ba", "wb", "bb"];

fn board_char(b: BoardId) -> char {
    b.letter()
}

fn side_char(c: Color) -> char {
    match c {
        Color::White => 'w',
        Color::Black => 'b',
    }
}

/// Splits a crazyhouse FEN into (placement, reserve, rest).
fn split_fen(fen: &str) -> (&str, &str, &str) {
    let (first, rest) = fen.split_once(' ').unwrap_or((fen, ""));
    match first.split_once('[') {
        Some((placement, res)) => (placement, res.trim_end_matches(']'), rest),
        None => (first, "", rest),
    }
}

/// Encodes a match event as a stored line.
fn encode_event(e: &MatchEvent) -> String {
    match e {
        MatchEvent::Move {
            board,
            ply,
            uci,
            san,
            fen,
        } => format!("M\t{board}\t{ply}\t{uci}\t{san}\t{fen}"),
        MatchEvent::Reserve {
            board,
            color,
            pieces,
        } => format!("R\t{board}\t{}\t{pieces}", side_char(*color)),
        MatchEvent::End(o) => encode_outcome(o),
    }
}

fn encode_outcome(o: &MatchOutcome) -> String {
    format!(
        "E\t{}\t{}\t{}",
        o.score.quarters(Color::White),
        o.board.map_or('-', board_char),
        o.reason.name()
    )
}

fn parse_board(s: &str) -> Option<BoardId> {
    match s {
        "A" => Some(BoardId::A),
        "B" => Some(BoardId::B),
        _ => None,
    }
}

fn decode_outcome(parts: &[&str]) -> Option<MatchOutcome> {
    Some(MatchOutcome {
        score: Score::from_white_quarters(parts.get(1)?.parse().ok()?)?,
        board: parse_board(parts.get(2)?),
        reason: EndReason::from_name(parts.get(3)?)?,
    })
}

/// Decodes a stored event line (`None` for a corrupt line, which is skipped).
pub fn decode_event(line: &str) -> Option<StoredEvent> {
    let parts: Vec<&str> = line.split('\t').collect();
    Some(match *parts.first()? {
        "M" => StoredEvent::Match(MatchEvent::Move {
            board: parse_board(parts.get(1)?)?,
            ply: parts.get(2)?.parse().ok()?,
            uci: (*parts.get(3)?).to_owned(),
            san: (*parts.get(4)?).to_owned(),
            fen: (*parts.get(5)?).to_owned(),
        }),
        "R" => StoredEvent::Match(MatchEvent::Reserve {
            board: parse_board(parts.get(1)?)?,
            color: if *parts.get(2)? == "w" {
                Color::White
            } else {
                Color::Black
            },
            pieces: parts.get(3).copied().unwrap_or("").to_owned(),
        }),
        "E" => StoredEvent::Match(MatchEvent::End(decode_outcome(&parts)?)),
        "D" => StoredEvent::DrawOffer(parts.get(1)?.parse().ok()?),
        _ => return None,
    })
}

fn team_number(t: Team) -> u8 {
    match t {
        Team::One => 1,
        Team::Two => 2,
    }
}

/// Bughouse matches over a store, with a wake-up for watchers in this process.
#[derive(Debug)]
pub struct Bughouse<S> {
    store: S,
    changed: Notify,
    next_id: AtomicU64,
}

impl<S: MatchStore> Bughouse<S> {
    /// Matches kept in `store`.
    pub fn new(store: S) -> Bughouse<S> {
        Bughouse {
            store,
            changed: Notify::new(),
            next_id: AtomicU64::new(0),
        }
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Woken whenever this process changes a match (watchers also poll, for changes made by
    /// other instances sharing the store).
    pub fn changed(&self) -> &Notify {
        &self.changed
    }

    fn new_id(&self) -> String {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        format!("m{nanos:x}{n:x}{:x}", std::process::id())
    }

    /// Creates a match.
    pub async fn create(
        &self,
        players: [String; 4],
        time_control: String,
        start_bfen: Option<&str>,
        id: Option<String>,
    ) -> Result<MatchView, BughouseError> {
        for (i, p) in players.iter().enumerate() {
            if p.trim().is_empty() {
                return Err(invalid("players", format!("player {} is empty", i + 1)));
            }
            if p.chars().any(char::is_control) || p.len() > 128 {
                return Err(invalid(
                    "players",
                    format!("player {} must be at most 128 printable characters", i + 1),
                ));
            }
            if players[..i].contains(p) {
                return Err(invalid("players", format!("player '{p}' appears twice")));
            }
        }
        let id = match id {
            Some(id) if !id.is_empty() => {
                if id.len() > 64
                    || !id
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                {
                    return Err(invalid(
                        "match_id",
                        "use at most 64 letters, digits, '-' or '_'",
                    ));
                }
                id
            }
            _ => self.new_id(),
        };
        let start = match start_bfen {
            Some(b) if !b.trim().is_empty() => Match::from_bfen(b)
                .map_err(|e: PositionTextError| invalid("start_bfen", e.to_string()))?,
            _ => Match::new(),
        };
        let mut fields = Fields::new();
        for (f, p) in SEAT_FIELDS.iter().zip(&players) {
            fields.insert((*f).to_owned(), p.clone());
        }
        fields.insert("tc".into(), time_control);
        fields.insert("over".into(), "0".into());
        for b in BoardId::BOTH {
            let pos = start.board(b);
            let fen = pos.to_fen();
            let (placement, _, rest) = split_fen(&fen);
            let bc = board_char(b);
            fields.insert(format!("fen:{bc}"), format!("{placement} {rest}"));
            fields.insert(format!("ply:{bc}"), "0".into());
            for color in Color::ALL {
                for (role, letter) in arbiter_core::crazyhouse::RESERVE_ROLES
                    .into_iter()
                    .zip(['Q', 'R', 'B', 'N', 'P'])
                {
                    fields.insert(
                        store::reserve_field(bc, side_char(color), letter),
                        pos.reserves().count(color, role).to_string(),
                    );
                }
            }
        }
        if !self.store.create(&id, &fields, &[]).await? {
            return Err(BughouseError::AlreadyExists(id));
        }
        self.get(&id).await
    }

    async fn load(&self, id: &str) -> Result<(Fields, u64), BughouseError> {
        self.store
            .load(id)
            .await?
            .ok_or_else(|| BughouseError::NotFound(id.to_owned()))
    }

    /// Reads a match.
    pub async fn get(&self, id: &str) -> Result<MatchView, BughouseError> {
        let (fields, last_seq) = self.load(id).await?;
        view(id, &fields, last_seq)
    }

    /// The seat of `player` in the stored match.
    fn seat_of(fields: &Fields, player: &str) -> Result<Seat, BughouseError> {
        SEAT_FIELDS
            .iter()
            .position(|f| fields.get(*f).is_some_and(|p| p == player))
            .map(|i| Seat::ALL[i])
            .ok_or_else(|| {
                invalid(
                    "player_id",
                    format!("'{player}' does not play in this match"),
                )
            })
    }

    /// Plays a move for `player` on `board`, if that board is at `expected_ply`.
    pub async fn make_move(
        &self,
        id: &str,
        player: &str,
        board: BoardId,
        text: &str,
        expected_ply: u32,
        locale: Locale,
    ) -> Result<(PlayedMove, MatchView, bool), BughouseError> {
        let (fields, _) = self.load(id).await?;
        let seat = Self::seat_of(&fields, player)?;
        if seat.board != board {
            return Err(invalid(
                "board",
                format!("'{player}' plays on board {}, not {board}", seat.board),
            ));
        }
        let mut m = restore(&fields)?;
        let bc = board_char(board);
        let mv = match m.check(seat, text, expected_ply, locale) {
            Ok(mv) => mv,
            Err(MatchError::StalePly { actual, .. }) => {
                let last = fields
                    .get(&format!("last:{bc}"))
                    .cloned()
                    .unwrap_or_default();
                let request = (player, board, text, expected_ply);
                return self.stale_or_duplicate(id, &last, actual, request).await;
            }
            Err(e) => return Err(match_error(e)),
        };
        // What the store must do with reserves, read from the board before the move.
        let drop = match mv.kind() {
            MoveKind::Drop(role) => Some(role.char().to_ascii_uppercase()),
            _ => None,
        };
        let partner = seat.partner();
        let capture = m.board(board).captured_unit(mv).map(|role| {
            (
                role.char().to_ascii_uppercase(),
                board_char(partner.board),
                side_char(partner.color),
            )
        });
        let events = m.play_checked(seat, mv, locale);
        let Some(MatchEvent::Move {
            ply, uci, san, fen, ..
        }) = events.first().cloned()
        else {
            unreachable!("a played move's first event is the move")
        };
        let end = events.iter().find_map(|e| match e {
            MatchEvent::End(o) => Some(encode_outcome(o)),
            _ => None,
        });
        let (placement, _, rest) = split_fen(&fen);
        let commit = MoveCommit {
            board: bc,
            expected_ply,
            side: side_char(seat.color),
            fen: format!("{placement} {rest}"),
            drop,
            capture,
            last: format!("{ply}\t{uci}\t{text}\t{player}\t{san}"),
            move_event: encode_event(&events[0]),
            end_event: end,
        };
        let view = match self.store.commit_move(id, &commit).await? {
            MoveResult::Applied {
                last_seq, fields, ..
            } => view(id, &fields, last_seq)?,
            MoveResult::Stale { ply: actual, last } => {
                let request = (player, board, text, expected_ply);
                return self.stale_or_duplicate(id, &last, actual, request).await;
            }
            MoveResult::Over => return Err(precondition("MATCH_OVER", "the match is over")),
            MoveResult::NotInReserve => {
                return Err(precondition(
                    "STALE_PLY",
                    "the dropped piece was used by a concurrent move; reload the match",
                ));
            }
            MoveResult::Missing => return Err(BughouseError::NotFound(id.to_owned())),
        };
        self.changed.notify_waiters();
        let fen = view.boards[board.index()].fen.clone();
        Ok((
            PlayedMove {
                board,
                ply,
                uci,
                san,
                fen,
            },
            view,
            false,
        ))
    }

    /// The answer to a move whose board is no longer at `expected_ply`: the same move already
    /// applied by the same request (a retry: answered as a duplicate, nothing changes), or
    /// `STALE_PLY`. `last` is the board's `last:` field, `actual` its ply.
    async fn stale_or_duplicate(
        &self,
        id: &str,
        last: &str,
        actual: u32,
        (player, board, text, expected_ply): (&str, BoardId, &str, u32),
    ) -> Result<(PlayedMove, MatchView, bool), BughouseError> {
        if let Some(played) = duplicate_of(last, expected_ply, text, player, board) {
            let view = self.get(id).await?;
            let fen = view.boards[board.index()].fen.clone();
            return Ok((PlayedMove { fen, ..played }, view, true));
        }
        Err(precondition(
            "STALE_PLY",
            format!("board {board} is at ply {actual}, the request expected {expected_ply}"),
        ))
    }

    /// Resigns for `player`'s team.
    pub async fn resign(&self, id: &str, player: &str) -> Result<MatchView, BughouseError> {
        let (fields, _) = self.load(id).await?;
        let seat = Self::seat_of(&fields, player)?;
        let mut m = restore(&fields)?;
        let outcome = m.resign(seat).map_err(match_error)?;
        match self.store.end(id, &encode_outcome(&outcome)).await? {
            EndResult::Applied { .. } => {}
            EndResult::Over => return Err(precondition("MATCH_OVER", "the match is over")),
            EndResult::Missing => return Err(BughouseError::NotFound(id.to_owned())),
        }
        self.changed.notify_waiters();
        self.get(id).await
    }

    /// Records `player`'s team's draw offer; the match is drawn once both teams offer.
    pub async fn offer_draw(&self, id: &str, player: &str) -> Result<MatchView, BughouseError> {
        let (fields, _) = self.load(id).await?;
        let seat = Self::seat_of(&fields, player)?;
        let team = team_number(seat.team());
        let draw = MatchOutcome {
            score: Score::DRAW,
            board: None,
            reason: EndReason::Agreement,
        };
        match self
            .store
            .offer_draw(id, team, &format!("D\t{team}"), &encode_outcome(&draw))
            .await?
        {
            EndResult::Applied { .. } => {}
            EndResult::Over => return Err(precondition("MATCH_OVER", "the match is over")),
            EndResult::Missing => return Err(BughouseError::NotFound(id.to_owned())),
        }
        self.changed.notify_waiters();
        self.get(id).await
    }

    /// The events after sequence number `after`.
    pub async fn events(
        &self,
        id: &str,
        after: u64,
    ) -> Result<Vec<(u64, StoredEvent)>, BughouseError> {
        if after == 0 {
            self.load(id).await?;
        }
        Ok(self
            .store
            .events(id, after)
            .await?
            .into_iter()
            .filter_map(|(seq, line)| decode_event(&line).map(|e| (seq, e)))
            .collect())
    }
}

/// `last` is `ply \t uci \t text \t player \t san`: whether it records this very request
/// already applied.
fn duplicate_of(
    last: &str,
    expected_ply: u32,
    text: &str,
    player: &str,
    board: BoardId,
) -> Option<PlayedMove> {
    let parts: Vec<&str> = last.split('\t').collect();
    let ply: u32 = parts.first()?.parse().ok()?;
    let (uci, sent, by, san) = (parts.get(1)?, parts.get(2)?, parts.get(3)?, parts.get(4)?);
    (ply == expected_ply + 1 && *by == player && (*sent == text.trim() || *uci == text.trim()))
        .then(|| PlayedMove {
            board,
            ply,
            uci: (*uci).to_owned(),
            san: (*san).to_owned(),
            fen: String::new(),
        })
}

fn match_error(e: MatchError) -> BughouseError {
    match e {
        MatchError::MatchOver => precondition("MATCH_OVER", "the match is over"),
        MatchError::NotYourTurn { .. } => precondition("NOT_YOUR_TURN", e.to_string()),
        MatchError::StalePly { .. } => precondition("STALE_PLY", e.to_string()),
        MatchError::Move(m) => invalid("move", m.to_string()),
        MatchError::ReserveFull => invalid("move", e.to_string()),
    }
}

/// The board of `fields` with its reserves, as a position.
fn stored_board(fields: &Fields, b: BoardId) -> Result<Crazyhouse, BughouseError> {
    let bc = board_char(b);
    let corrupt =
        |what: &str| BughouseError::Unavailable(StoreError(format!("corrupt match: {what}")));
    let fen = fields
        .get(&format!("fen:{bc}"))
        .ok_or_else(|| corrupt("no board"))?;
    let (placement, _, rest) = split_fen(fen);
    let reserve = format!(
        "{}{}",
        reserve_text(fields, bc, 'w'),
        reserve_text(fields, bc, 'b')
    );
    Crazyhouse::from_fen(&format!("{placement}[{reserve}] {rest}"), true)
        .map_err(|e| corrupt(&e.to_string()))
}

fn restore(fields: &Fields) -> Result<Match, BughouseError> {
    let boards = [
        stored_board(fields, BoardId::A)?,
        stored_board(fields, BoardId::B)?,
    ];
    let ply = |b: char| {
        fields
            .get(&format!("ply:{b}"))
            .and_then(|p| p.parse().ok())
            .unwrap_or(0)
    };
    Ok(Match::restore(
        boards,
        [ply('A'), ply('B')],
        stored_outcome(fields),
    ))
}

/// The outcome a stored match records, if it has ended.
fn stored_outcome(fields: &Fields) -> Option<MatchOutcome> {
    let line = fields.get("outcome")?;
    decode_outcome(&line.split('\t').collect::<Vec<_>>())
}

/// The match as stored, assembled from the fields without re-validating the boards (they were
/// written from validated positions; moves validate them again on their way in).
fn view(id: &str, fields: &Fields, last_seq: u64) -> Result<MatchView, BughouseError> {
    let corrupt =
        |what: &str| BughouseError::Unavailable(StoreError(format!("corrupt match: {what}")));
    let board = |b: BoardId| -> Result<BoardView, BughouseError> {
        let bc = board_char(b);
        let stored = fields
            .get(&format!("fen:{bc}"))
            .ok_or_else(|| corrupt("no board"))?;
        let (placement, _, rest) = split_fen(stored);
        let (white_reserve, black_reserve) =
            (reserve_text(fields, bc, 'w'), reserve_text(fields, bc, 'b'));
        let turn = match rest.split(' ').next() {
            Some("w") => Color::White,
            Some("b") => Color::Black,
            _ => return Err(corrupt("side to move")),
        };
        Ok(BoardView {
            fen: format!("{placement}[{white_reserve}{black_reserve}] {rest}"),
            ply: fields
                .get(&format!("ply:{bc}"))
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| corrupt("ply"))?,
            turn,
            white_reserve,
            black_reserve,
        })
    };
    Ok(MatchView {
        id: id.to_owned(),
        players: SEAT_FIELDS.map(|f| fields.get(f).cloned().unwrap_or_default()),
        time_control: fields.get("tc").cloned().unwrap_or_default(),
        boards: [board(BoardId::A)?, board(BoardId::B)?],
        outcome: stored_outcome(fields),
        last_seq,
        draw_offers: [1u8, 2]
            .into_iter()
            .filter(|t| fields.get(&format!("draw:{t}")).is_some_and(|v| v == "1"))
            .collect(),
    })
}
