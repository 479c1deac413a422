//! MakeMove: a move judged on a snapshot, planned, and committed in one guarded step.

use super::checks::{check_move_text, check_request_id};
use super::status::{BoardStatus, board_status, bughouse_claims, waits_for_piece};
use super::{
    ATTEMPTS, Matches, SeatRef, bughouse_match, bughouse_rules, corrupt, delays_of, game_error,
    match_side, recall, single_outcome, single_state,
};
use crate::error::{CLOCK_PAUSED, ILLEGAL_MOVE_LOST, MatchError, NOT_YOUR_TURN, STALE_PLY};
use crate::record::{Done, LastMove, Record, RequestId, RequestKind, StoredEvent, encode_clock};
use crate::store::{
    ChangeResult, ClockPress, EndCommit, HistoryUpdate, MatchStore, MoveCommit, MoveResult,
    ReserveDelta,
};
use arbiter_core::bughouse::{self, BoardId, IllegalMoveRule, MatchOutcome, Seat};
use arbiter_core::clock::{ClockError, Phase};
use arbiter_core::{Color, EndReason, Locale, MoveError, Notation, Outcome, Position};
use std::sync::Arc;

/// A move request as a seat sends it.
#[derive(Copy, Clone, Debug)]
pub struct MoveRequest<'a> {
    /// The seat that moves.
    pub seat: SeatRef,
    /// The seat's bearer token.
    pub token: Option<&'a str>,
    /// The move exactly as sent: 1 to [`MAX_MOVE_BYTES`](super::MAX_MOVE_BYTES) bytes without
    /// whitespace or control characters, checked before anything else (nothing is trimmed).
    pub text: &'a str,
    /// The ply the seat's board must be at: the move is played only there.
    pub expected_ply: u32,
    /// The language of piece letters in `text`.
    pub locale: Locale,
    /// An idempotency key: a retry of the same request (text, ply, locale) is answered as a
    /// duplicate, and the id sent with another request is [`MatchError::RequestIdReused`].
    pub request_id: Option<&'a str>,
    /// With clocks, the lag the client reports (compensated within its quota). A measurement,
    /// not part of the request: a retry may report another.
    pub lag_ms: u64,
}

impl MoveRequest<'_> {
    /// The request id of this move by `seat`, with what the request does: its text (as sent),
    /// the ply and the locale that reads it.
    fn request_id(&self, seat: Seat) -> Option<RequestId> {
        let ply = self.expected_ply.to_string();
        self.request_id.map(|r| {
            RequestId::seat(
                seat.board,
                seat.color,
                r,
                RequestKind::Move,
                &[self.text, &ply, locale_name(self.locale)],
            )
        })
    }
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

/// The stable name of a locale in a move's fingerprint.
fn locale_name(locale: Locale) -> &'static str {
    match locale {
        Locale::English => "en",
        Locale::Italian => "it",
    }
}

/// The answer to a well-formed move that was illegal, in a bughouse match created with
/// `illegal_move=loses`: the match is over, lost by the mover's team.
fn illegal_move_lost(why: &str) -> MatchError {
    MatchError::precondition(
        ILLEGAL_MOVE_LOST,
        format!(
            "{why}: under this match's illegal_move=loses rule the move lost the match for the \
             mover's team"
        ),
    )
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
    /// A well-formed move illegal on its board, in a bughouse match whose rules make that a
    /// loss: what is wrong with it.
    Loses(String),
    /// Refused for good on this record.
    Refused(MatchError),
}

impl From<MatchError> for Refusal {
    fn from(e: MatchError) -> Self {
        Refusal::Refused(e)
    }
}

fn plan_single(record: &Record, seat: Seat, req: &MoveRequest<'_>) -> Result<Plan, Refusal> {
    let MoveRequest {
        text,
        expected_ply,
        locale,
        lag_ms,
        ..
    } = *req;
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

fn plan_bughouse(record: &Record, seat: Seat, req: &MoveRequest<'_>) -> Result<Plan, Refusal> {
    let MoveRequest {
        text,
        expected_ply,
        locale,
        lag_ms,
        ..
    } = *req;
    let mut m = bughouse_match(record)?;
    let rules = bughouse_rules(record)?;
    let mv = match m.check(seat, text, expected_ply, locale) {
        Ok(mv) => mv,
        Err(bughouse::MatchError::StalePly { actual, .. }) => {
            return Err(Refusal::Stale { actual });
        }
        Err(bughouse::MatchError::MatchOver) => return Err(MatchError::over().into()),
        Err(e @ bughouse::MatchError::NotYourTurn { .. }) => {
            return Err(MatchError::precondition(NOT_YOUR_TURN, e.to_string()).into());
        }
        Err(bughouse::MatchError::Move(e @ MoveError::Illegal { .. }))
            if rules.illegal_move == IllegalMoveRule::Loses =>
        {
            return Err(Refusal::Loses(e.to_string()));
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
    // Under the threefold option every position of the board counts (see the creation).
    let history = rules
        .threefold
        .then(|| HistoryUpdate::Append(m.board(seat.board).board_repetition_key()));
    let claims = |b: BoardId| {
        let mut keys = record.boards[b.index()].history.clone();
        if let (true, Some(HistoryUpdate::Append(k))) = (b == seat.board, history) {
            keys.push(k);
        }
        bughouse_claims(&keys)
    };
    let status = BoardId::BOTH
        .into_iter()
        .map(|b| BoardStatus {
            turn: m.board(b).turn(),
            check: m.board(b).is_check(),
            claims: if played.outcome.is_some() {
                Vec::new()
            } else {
                claims(b)
            },
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
            history,
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

impl<S: MatchStore> Matches<S> {
    /// Plays `req.text` for the seat `req.seat` if its board is at `req.expected_ply`; see
    /// [`MoveRequest`] for what each field means and how a retry is told.
    pub async fn play(&self, id: &str, req: MoveRequest<'_>) -> Result<MoveAnswer, MatchError> {
        let answer = self.judge_and_play(id, req).await;
        match &answer {
            Ok(a) if !a.duplicate => {
                crate::metrics::move_applied(a.record.variant);
                crate::metrics::changed(&a.record);
            }
            Ok(_) => {}
            Err(e) => crate::metrics::move_refused(e),
        }
        answer
    }

    async fn judge_and_play(
        &self,
        id: &str,
        req: MoveRequest<'_>,
    ) -> Result<MoveAnswer, MatchError> {
        check_move_text(req.text)?;
        check_request_id(req.request_id)?;
        let (mut record, mut seat, mut fresh) = self.authorized(id, req.seat, req.token).await?;
        let request = req.request_id(seat);
        for _ in 0..ATTEMPTS {
            let plan = match self.plan(&record, seat, &req) {
                Ok(plan) => plan,
                Err(_) if !fresh => {
                    // Judged on an old snapshot: judge again on the record as stored.
                    let now = self.get(id).await?;
                    seat = self.reauthorized(&record, &now, req.seat, req.token)?;
                    record = now;
                    fresh = true;
                    continue;
                }
                Err(Refusal::Stale { actual }) => {
                    return self
                        .stale(id, record, seat, &req, request.as_ref(), actual)
                        .await;
                }
                Err(Refusal::Refused(e)) => {
                    return self.refused_move(id, e, record, request.as_ref()).await;
                }
                Err(Refusal::Loses(why)) => {
                    // The board as judged: a move since refuses the loss, to be judged again.
                    let commit = EndCommit {
                        nonce: record.nonce.clone(),
                        guard: vec![(seat.board, req.expected_ply)],
                        outcome: MatchOutcome::from_board(
                            seat.board,
                            Outcome::win(!seat.color, EndReason::IllegalMove),
                        ),
                        request: request.clone(),
                        delays: delays_of(&record),
                    };
                    match self.store.commit_end(id, &commit).await? {
                        ChangeResult::Stale(now) => {
                            seat = self.reauthorized(&record, &now, req.seat, req.token)?;
                            record = now;
                            fresh = true;
                            continue;
                        }
                        ChangeResult::Applied(_) => {
                            self.watchers.wake(id);
                            return Err(illegal_move_lost(&why));
                        }
                        ChangeResult::Done(remembered, _) => {
                            let request = request.as_ref().ok_or_else(|| {
                                corrupt("the store answered a change without a request id as done")
                            })?;
                            return match recall(Some(remembered), request)? {
                                Some(Done::Ended) => Err(illegal_move_lost(&why)),
                                Some(Done::Move { seq }) => {
                                    let now = self.get(id).await?;
                                    self.replayed(id, seq, now).await
                                }
                                _ => Err(MatchError::RequestIdReused(request.id.clone())),
                            };
                        }
                        ChangeResult::Over(now) => {
                            return self
                                .refused_move(id, MatchError::over(), now, request.as_ref())
                                .await;
                        }
                        ChangeResult::Late(_) => {
                            self.end_on_time(id).await?;
                            let now = self.get(id).await?;
                            return self
                                .refused_move(id, MatchError::over(), now, request.as_ref())
                                .await;
                        }
                        ChangeResult::Missing => return Err(MatchError::NotFound(id.to_owned())),
                    }
                }
            };
            let mut commit = plan.commit;
            commit.request = request.clone();
            match self.store.commit_move(id, &commit).await? {
                MoveResult::Applied(after) => {
                    self.watchers.wake(id);
                    return Self::applied(after, plan.played, plan.status, plan.other);
                }
                MoveResult::Stale(now) | MoveResult::Over(now) => {
                    seat = self.reauthorized(&record, &now, req.seat, req.token)?;
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
                    let now = self.get(id).await?;
                    return self
                        .refused_move(id, MatchError::over(), now, request.as_ref())
                        .await;
                }
                MoveResult::Missing => return Err(MatchError::NotFound(id.to_owned())),
            }
        }
        Err(MatchError::precondition(
            STALE_PLY,
            "the board kept changing while the move was judged; read the match and retry",
        ))
    }

    /// The move of `req` for `seat`, planned on `record`: the board first (a retry of a move
    /// already applied is answered as such even when that move ended the match), then the
    /// server's ply limit, then the rules of the match's variant.
    fn plan(&self, record: &Record, seat: Seat, req: &MoveRequest<'_>) -> Result<Plan, Refusal> {
        let actual = record.boards[seat.board.index()].ply;
        if actual != req.expected_ply {
            return Err(Refusal::Stale { actual });
        }
        if actual >= self.max_plies {
            return Err(Refusal::Refused(MatchError::Exhausted {
                field: "move",
                description: format!(
                    "board {} has reached this server's limit of {} plies",
                    seat.board, self.max_plies
                ),
            }));
        }
        if record.is_bughouse() {
            plan_bughouse(record, seat, req)
        } else {
            plan_single(record, seat, req)
        }
    }

    /// The answer to an applied move: the position as stored, and the plan's view of every
    /// board unless the other board moved meanwhile.
    fn applied(
        after: Arc<Record>,
        played: PlayedMove,
        status: Vec<BoardStatus>,
        other: Option<(usize, u32)>,
    ) -> Result<MoveAnswer, MatchError> {
        let board = &after.boards[played.board.index()];
        let played = PlayedMove {
            position: board.full_position(after.is_bughouse()),
            ..played
        };
        let status = match other {
            Some((i, ply)) if after.boards[i].ply != ply => board_status(&after)?,
            _ => status,
        };
        let at = board.last.as_ref().map_or(0, |l| l.at);
        Ok(MoveAnswer {
            played,
            record: after,
            status,
            duplicate: false,
            at,
        })
    }

    /// The answer to a move whose board is at `actual`, not at the ply the request expected:
    /// a retry of the move applied (known by its request id, or without one by the same seat,
    /// text and ply), else the refusal.
    async fn stale(
        &self,
        id: &str,
        record: Arc<Record>,
        seat: Seat,
        req: &MoveRequest<'_>,
        request: Option<&RequestId>,
        actual: u32,
    ) -> Result<MoveAnswer, MatchError> {
        let text_retry = request.is_none().then_some(req.text);
        match self.duplicate_or_stale(&record, seat, text_retry, req.expected_ply, actual) {
            Ok(mut answer) => {
                answer.at = self.store.deadlines().now().await?;
                Ok(answer)
            }
            Err(e) => self.refused_move(id, e, record, request).await,
        }
    }

    /// A move refused with `e` on `record`, unless its request id is remembered as that of a
    /// move applied before (then the answer is that move, as a duplicate).
    async fn refused_move(
        &self,
        id: &str,
        e: MatchError,
        record: Arc<Record>,
        request: Option<&RequestId>,
    ) -> Result<MoveAnswer, MatchError> {
        let Some(request) = request else {
            return Err(e);
        };
        match recall(self.store.done(id, &request.field).await?, request)? {
            Some(Done::Move { seq }) => self.replayed(id, seq, record).await,
            // Only an illegal move that lost the match ends it under a move's request id.
            Some(Done::Ended) => Err(illegal_move_lost("it was illegal on its board")),
            _ => Err(e),
        }
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
            at: self.store.deadlines().now().await?,
        })
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
}
