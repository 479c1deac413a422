//! ProposeTakeback and AnswerTakeback: a player asks to take back their latest move (and the
//! opponent's reply after it, when the opponent has moved since); the opponent accepts or
//! declines. Only in matches created with takebacks (never bughouse, where a capture has already
//! fed the partner's reserve).
//!
//! A proposal belongs to the board's ply it was made at: any move makes it lapse. Accepting
//! replays the game's moves (the stored move events, earlier takebacks applied) up to the ply
//! the board goes back to, so position, repetition history and latest move are those the game
//! had there; the clock charges the running turn and hands the turn to the proposer (the first
//! moves are untimed again when the board goes back before them). Every commit is guarded by
//! the board's ply and the proposal as judged: a takeback racing a move has one winner.

use super::checks::check_request_id;
use super::{ATTEMPTS, Changed, Matches, SeatRef, corrupt, game_error, single_state};
use crate::error::{
    CLOCK_PAUSED, MatchError, NO_TAKEBACK, NOTHING_TO_TAKE_BACK, STALE_PLY, TAKEBACKS_OFF,
};
use crate::record::{LastMove, Record, RequestId, RequestKind, StoredEvent, encode_clock};
use crate::store::{ChangeResult, ClockChange, MatchStore, TakebackAction, TakebackCommit, Undo};
use arbiter_core::bughouse::{BoardId, Seat};
use arbiter_core::clock::ClockError;
use arbiter_core::{AnyPosition, Color, GameState, Locale, Notation, Position};

/// Plies a proposal by `side` takes back on `record`'s board: its latest move, and the reply
/// after it when the opponent has moved since (it is `side`'s turn).
fn plies_back(record: &Record, side: Color) -> Result<u32, MatchError> {
    let turn = single_state(record)?.position().turn();
    let k = if turn == side { 2 } else { 1 };
    if record.boards[0].ply < k {
        return Err(MatchError::precondition(
            NOTHING_TO_TAKE_BACK,
            format!("{side} has no move on the board to take back"),
        ));
    }
    Ok(k)
}

/// Why `record` takes no takeback request now, if it does not.
fn refusal(record: &Record) -> Option<MatchError> {
    if !record.takebacks {
        Some(MatchError::precondition(
            TAKEBACKS_OFF,
            "this match was created without takebacks",
        ))
    } else if record.outcome.is_some() {
        Some(MatchError::over())
    } else {
        None
    }
}

impl<S: MatchStore> Matches<S> {
    /// Proposes, for the seat's side, to take back its latest move (and the opponent's reply
    /// since). A proposal that stands already changes nothing; the other side's standing
    /// proposal is accepted instead.
    pub async fn propose_takeback(
        &self,
        id: &str,
        seat_ref: SeatRef,
        token: Option<&str>,
        request_id: Option<&str>,
    ) -> Result<Changed, MatchError> {
        self.takeback(id, seat_ref, token, request_id, None).await
    }

    /// Accepts or declines the other side's standing takeback proposal.
    pub async fn answer_takeback(
        &self,
        id: &str,
        seat_ref: SeatRef,
        token: Option<&str>,
        accept: bool,
        request_id: Option<&str>,
    ) -> Result<Changed, MatchError> {
        self.takeback(id, seat_ref, token, request_id, Some(accept))
            .await
    }

    /// A proposal (`answer` unset) or an answer, judged and committed.
    async fn takeback(
        &self,
        id: &str,
        seat_ref: SeatRef,
        token: Option<&str>,
        request_id: Option<&str>,
        answer: Option<bool>,
    ) -> Result<Changed, MatchError> {
        check_request_id(request_id)?;
        let (mut record, seat, mut fresh) = self.authorized(id, seat_ref, token).await?;
        let request = request_id.map(|r| match answer {
            None => RequestId::seat(seat.board, seat.color, r, RequestKind::ProposeTakeback, &[]),
            Some(a) => RequestId::seat(
                seat.board,
                seat.color,
                r,
                RequestKind::AnswerTakeback,
                &[if a { "accept" } else { "decline" }],
            ),
        });
        for _ in 0..ATTEMPTS {
            let judged = self.judge_takeback(&record, seat, answer).await;
            let action = match judged {
                Ok(Some(action)) => action,
                // A proposal that stands already: nothing new (and not remembered).
                Ok(None) => {
                    return Ok(Changed {
                        record,
                        duplicate: false,
                    });
                }
                Err(_) if !fresh => {
                    let now = self.get(id).await?;
                    self.reauthorized(&record, &now, seat_ref, token)?;
                    record = now;
                    fresh = true;
                    continue;
                }
                Err(e) => return self.refused_change(id, e, record, request.as_ref()).await,
            };
            let commit = TakebackCommit {
                nonce: record.nonce.clone(),
                ply: record.boards[0].ply,
                expected: record.takeback,
                action,
                request: request.clone(),
            };
            match self.store.commit_takeback(id, &commit).await? {
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
            "the board kept changing while the takeback was judged; read the match and retry",
        ))
    }

    /// What a takeback request of `seat` does on `record`: `Ok(None)` for a proposal that
    /// stands already.
    async fn judge_takeback(
        &self,
        record: &Record,
        seat: Seat,
        answer: Option<bool>,
    ) -> Result<Option<TakebackAction>, MatchError> {
        if let Some(e) = refusal(record) {
            return Err(e);
        }
        let standing = record.standing_takeback();
        let accept = match answer {
            None => match standing {
                Some(s) if s == seat.color => return Ok(None),
                // The other side's proposal stands: proposing back accepts it.
                Some(_) => true,
                None => {
                    plies_back(record, seat.color)?;
                    return Ok(Some(TakebackAction::Propose(seat.color)));
                }
            },
            Some(a) => match standing {
                Some(s) if s != seat.color => a,
                _ => {
                    return Err(MatchError::precondition(
                        NO_TAKEBACK,
                        "no takeback proposal of the other side stands",
                    ));
                }
            },
        };
        if !accept {
            return Ok(Some(TakebackAction::Decline));
        }
        let proposer = !seat.color;
        let back = plies_back(record, proposer)?;
        Ok(Some(TakebackAction::Accept(Box::new(
            self.undo(record, proposer, back).await?,
        ))))
    }

    /// The board of `record` taken back `back` plies, for `proposer` to move.
    async fn undo(&self, record: &Record, proposer: Color, back: u32) -> Result<Undo, MatchError> {
        let board = &record.boards[0];
        let target = board.ply - back;
        // The moves on the board now, in order: every move event, earlier takebacks applied.
        let mut moves: Vec<String> = Vec::with_capacity(board.ply as usize);
        for (_, event) in self.events(&record.id, 0, usize::MAX).await? {
            match event {
                StoredEvent::Move { uci, .. } => moves.push(uci),
                StoredEvent::Takeback { ply, .. } => moves.truncate(ply as usize),
                _ => {}
            }
        }
        if moves.len() != board.ply as usize {
            return Err(corrupt("the move events do not add up to the board's ply"));
        }
        let start = AnyPosition::with_rules(record.variant, Some(&record.start), &record.rules)
            .map_err(corrupt)?;
        let mut state = GameState::new(start);
        let mut last = None;
        for (i, uci) in moves.iter().take(target as usize).enumerate() {
            let side = state.position().turn();
            let m = state
                .check_text(uci, Notation::Uci, Locale::English)
                .map_err(game_error)?;
            let san = state.position().move_to_san(m, Locale::English);
            state.play_checked(m);
            last = Some(LastMove {
                ply: i as u32 + 1,
                side,
                text: uci.clone(),
                uci: uci.clone(),
                san,
                at: 0,
            });
        }
        let position = state.position().to_text();
        let mut events = vec![
            StoredEvent::Takeback {
                board: BoardId::A,
                ply: target,
                position: position.clone(),
            }
            .encode(),
        ];
        let clock = match &board.clock {
            None => None,
            Some(clock) => {
                let now = self.store.deadlines().now().await?;
                let undone: Vec<Color> = if back == 2 {
                    vec![!proposer, proposer]
                } else {
                    vec![proposer]
                };
                let window = match record.control.as_ref().and_then(|c| c.days_per_move()) {
                    Some(_) => record.control.as_ref().map_or(0, |c| c.longest_turn_ms()),
                    None => self.first_move_ms,
                };
                let mut after = clock.clone();
                match after.take_back(&undone, proposer, target, Some(window), now) {
                    Ok(()) => {}
                    Err(ClockError::Paused) => {
                        return Err(MatchError::precondition(
                            CLOCK_PAUSED,
                            "the clocks are paused; take back after the resume",
                        ));
                    }
                    Err(ClockError::OutOfTime(_)) => {
                        // A flag fell before the answer came: the game ends on time instead.
                        self.end_on_time(&record.id).await?;
                        return Err(MatchError::over());
                    }
                    Err(e) => return Err(corrupt(e.to_string())),
                }
                events.push(StoredEvent::clock(BoardId::A, &after, now).encode());
                Some(ClockChange {
                    board: BoardId::A,
                    expected: encode_clock(clock),
                    clock: after,
                })
            }
        };
        Ok(Undo {
            position,
            ply: target,
            last,
            history: state.history().to_vec(),
            clock,
            events,
        })
    }
}
