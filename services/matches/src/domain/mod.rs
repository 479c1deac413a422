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
//!
//! One module per RPC, each an `impl` block of [`Matches`]: `create` (CreateMatch),
//! `make_move` (MakeMove: plan on a snapshot, commit, answer retries),
//! `resign`, `abort` (AbortMatch), `takeback` (ProposeTakeback, AnswerTakeback), `offer_draw`, `decline_draw`, `claim_draw`, `export`
//! (ExportMatch: PGN or BPGN from the events), `listing` (ListMatches), `chat` (PostChat, PostSpectatorChat,
//! DeleteChatMessage, and reading a channel for WatchChat and WatchSpectatorChat),
//! `clocks` (PauseClocks, ResumeClocks, AddTime), and `flag` (ending a
//! match on time, the step of the flag worker). GetMatch and WatchMatch read through
//! [`Matches::get`] and [`Matches::events`] here, with [`board_status`] (`status`);
//! `checks` holds the field limits every request is checked against first. What
//! every change shares (authorizing a seat, judging again on fresh data, answering a
//! remembered request id) is in this module.

mod abort;
mod chat;
mod checks;
mod claim_draw;
mod clocks;
mod create;
mod decline_draw;
mod export;
mod flag;
mod listing;
mod make_move;
mod offer_draw;
mod resign;
mod status;
mod takeback;

pub use chat::{ChatReader, MAX_AUTHOR_BYTES, MAX_CHAT_BYTES, SeatChannel};
pub use checks::{
    MAX_MATCH_ID_BYTES, MAX_MOVE_BYTES, MAX_PLAYER_BYTES, MAX_REQUEST_ID_BYTES, MAX_START_BYTES,
    MAX_TIME_CONTROL_BYTES, check_match_id,
};
pub use clocks::MAX_EVENTS_FOR_CLOCK_ACTIONS;
pub use create::{Created, Creation};
pub use export::Exported;
pub use listing::{DEFAULT_PAGE_SIZE, ListFilter, MAX_PAGE_SIZE, MatchPage};
pub use make_move::{MoveAnswer, MoveRequest, PlayedMove};
pub use status::{BoardStatus, board_status};

use crate::config::MatchLimits;
use crate::error::{MatchError, NOT_CLAIMABLE};
use crate::record::{Done, Record, Remembered, RequestId, StoredEvent};
use crate::seats::SeatKey;
use crate::store::{ChangeResult, MatchStore};
use crate::watchers::Watchers;
use arbiter_core::bughouse::{BoardId, BughouseRules, Match, MatchOutcome, Seat, Team};
use arbiter_core::crazyhouse::HouseRules;
use arbiter_core::{AnyPosition, Color, Crazyhouse, GameError, GameState, Outcome};
use std::sync::Arc;

/// How often a change is judged again on fresh data before the request is refused.
const ATTEMPTS: usize = 4;

/// A seat as a request names it: the board (unset for a single-board game) and the colour.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SeatRef {
    /// The board, if named.
    pub board: Option<BoardId>,
    /// The colour, if named.
    pub color: Option<Color>,
}

/// The answer to a resignation, a draw offer or a claim.
#[derive(Clone, Debug)]
pub struct Changed {
    /// The match as it stands.
    pub record: Arc<Record>,
    /// True when the request's id was applied before: nothing changed now.
    pub duplicate: bool,
}

/// The seats of a match, in creation order.
pub fn seats_of(record: &Record) -> &'static [Seat] {
    if record.is_bughouse() {
        &Seat::ALL
    } else {
        &Seat::ALL[..2]
    }
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

/// The bughouse rule options of `record`.
fn bughouse_rules(record: &Record) -> Result<BughouseRules, MatchError> {
    record.rules.bughouse().map_err(|e| corrupt(e.0))
}

/// A single-board outcome as stored (no board; White's score).
fn single_outcome(o: Outcome) -> MatchOutcome {
    MatchOutcome {
        score: o.score,
        board: None,
        reason: o.reason,
    }
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

/// `RESOURCE_EXHAUSTED` once `record` holds [`MAX_EVENTS_FOR_CLOCK_ACTIONS`] events: no more
/// clock actions, draw offers or declines.
fn events_full(record: &Record) -> Option<MatchError> {
    (record.last_seq >= MAX_EVENTS_FOR_CLOCK_ACTIONS).then(|| MatchError::Exhausted {
        field: "",
        description: format!(
            "this match holds {MAX_EVENTS_FOR_CLOCK_ACTIONS} events: no more clock actions, draw offers or declines"
        ),
    })
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
            watchers: Arc::new(Watchers::new(limits.watchers, "match")),
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

    /// A seat's action of `kind` with no content (resign, offer a draw): the request id checked,
    /// the seat authorized, and the request id bound to the seat and the action.
    async fn seat_action(
        &self,
        id: &str,
        seat_ref: SeatRef,
        token: Option<&str>,
        request_id: Option<&str>,
        kind: crate::record::RequestKind,
    ) -> Result<(Arc<Record>, Seat, Option<RequestId>), MatchError> {
        checks::check_request_id(request_id)?;
        let (record, seat, _) = self.authorized(id, seat_ref, token).await?;
        let request = request_id.map(|r| RequestId::seat(seat.board, seat.color, r, kind, &[]));
        Ok((record, seat, request))
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

    async fn change(
        &self,
        id: &str,
        result: ChangeResult,
        request: Option<&RequestId>,
    ) -> Result<Changed, MatchError> {
        match result {
            ChangeResult::Applied(record) => {
                self.watchers.wake(id);
                crate::metrics::changed(&record);
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
        Ok(self.store.deadlines().now().await?)
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
