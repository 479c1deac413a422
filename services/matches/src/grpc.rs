//! The tonic handlers of `arbiter.matches.v1.MatchService`: decode the request and its
//! credential, call [`Matches`], encode the answer. Refusals become a `Status` through
//! `arbiter-kit`'s one map.

use crate::domain::{
    BoardStatus, ChatReader, Creation, ListFilter, Matches, MoveRequest, PlayedMove, SeatChannel,
    SeatRef, board_status, seats_of,
};
use crate::error::MatchError;
use crate::record::{ChatChannel, ChatEntry, ChatMessage, Record, StoredEvent};
use crate::store::{AnyStore, StoreError};
use arbiter_clocked::{EventLog, watch_stream};
use arbiter_core::bughouse::{BoardId, MatchOutcome, Seat, Team};
use arbiter_core::clock::{Clock, Phase};
use arbiter_core::{Color, Outcome, Variant};
use arbiter_kit::auth::bearer;
use arbiter_kit::convert::{
    claim, claim_to_proto, locale, outcome_to_proto, rule_options, rule_options_to_proto, variant,
    variant_to_proto,
};
use arbiter_kit::{ApiError, reply};
use arbiter_proto::common::v1 as common;
use arbiter_proto::matches::v1 as pb;
use arbiter_proto::matches::v1::match_service_server::{MatchService, MatchServiceServer};
use std::pin::Pin;
use std::sync::Arc;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

type Reply<T> = Result<Response<T>, Status>;

/// A match's events, as its watch stream reads them.
struct MatchLog {
    matches: Arc<Matches<AnyStore>>,
    id: String,
    bughouse: bool,
}

impl EventLog for MatchLog {
    type Event = StoredEvent;
    type Message = pb::WatchMatchResponse;

    async fn read(&self, after: u64, max: usize) -> Result<Vec<(u64, StoredEvent)>, Status> {
        self.matches
            .events(&self.id, after, max)
            .await
            .map_err(fail)
    }

    fn is_last(&self, e: &StoredEvent) -> bool {
        matches!(e, StoredEvent::End(_))
    }

    fn message(&self, seq: u64, e: &StoredEvent) -> pb::WatchMatchResponse {
        event_to(seq, e, self.bughouse)
    }

    /// Over, and every event sent: the stream is complete.
    async fn finished(&self, after: u64) -> Result<bool, Status> {
        let v = self.matches.get(&self.id).await.map_err(fail)?;
        Ok(v.outcome.is_some() && after >= v.last_seq)
    }
}

/// A chat's entries that one reader sees, as a watch stream reads them.
struct ChatLog<M> {
    matches: Arc<Matches<AnyStore>>,
    id: String,
    reader: ChatReader,
    make: fn(u64, &ChatEntry) -> M,
}

impl<M: Send + 'static> EventLog for ChatLog<M> {
    type Event = ChatEntry;
    type Message = M;

    async fn read(&self, after: u64, max: usize) -> Result<Vec<(u64, ChatEntry)>, Status> {
        self.matches
            .chat_for(&self.id, &self.reader, after, max)
            .await
            .map_err(fail)
    }

    fn is_last(&self, _: &ChatEntry) -> bool {
        false
    }

    fn message(&self, seq: u64, e: &ChatEntry) -> M {
        (self.make)(seq, e)
    }
}

/// A chat message on the wire.
fn chat_to(m: &ChatMessage) -> pb::ChatMessage {
    let (channel, team) = match m.channel {
        ChatChannel::Players => (pb::ChatChannel::Players, 0),
        ChatChannel::Team(t) => (pb::ChatChannel::Team, u32::from(t)),
        ChatChannel::Spectators => (pb::ChatChannel::Spectators, 0),
    };
    let seat = m.scope.split_once('/').and_then(|(b, c)| {
        let board = match b {
            "A" => BoardId::A,
            "B" => BoardId::B,
            _ => return None,
        };
        let color = match c {
            "w" => Color::White,
            "b" => Color::Black,
            _ => return None,
        };
        Some(pb::Seat {
            board: board_to(board),
            side: side_to(color),
            player_id: m.author.clone(),
        })
    });
    pb::ChatMessage {
        id: m.id,
        channel: channel as i32,
        team,
        author: m.author.clone(),
        seat,
        at_ms: m.at,
        text: m.text.clone(),
        deleted: m.deleted,
    }
}

fn chat_entry(seq: u64, e: &ChatEntry) -> pb::WatchChatResponse {
    pb::WatchChatResponse {
        id: seq,
        entry: Some(match e {
            ChatEntry::Message(m) => pb::watch_chat_response::Entry::Message(chat_to(m)),
            ChatEntry::Deleted { id, .. } => pb::watch_chat_response::Entry::DeletedId(*id),
        }),
    }
}

fn spectator_chat_entry(seq: u64, e: &ChatEntry) -> pb::WatchSpectatorChatResponse {
    pb::WatchSpectatorChatResponse {
        id: seq,
        entry: Some(match e {
            ChatEntry::Message(m) => pb::watch_spectator_chat_response::Entry::Message(chat_to(m)),
            ChatEntry::Deleted { id, .. } => {
                pb::watch_spectator_chat_response::Entry::DeletedId(*id)
            }
        }),
    }
}

/// The match service.
#[derive(Debug, Clone)]
pub struct MatchGrpc {
    inner: Arc<Matches<AnyStore>>,
    shutting_down: tokio::sync::watch::Receiver<bool>,
}

impl MatchGrpc {
    /// The service over `matches` (the host's access layer checks platform calls before they
    /// arrive); its watch streams end when `shutting_down` turns true.
    pub fn new(
        matches: Arc<Matches<AnyStore>>,
        shutting_down: tokio::sync::watch::Receiver<bool>,
    ) -> MatchGrpc {
        MatchGrpc {
            inner: matches,
            shutting_down,
        }
    }

    /// The tonic server, with the message size limit `max` (bytes).
    pub fn into_server(self, max: usize) -> MatchServiceServer<MatchGrpc> {
        MatchServiceServer::new(self)
            .max_decoding_message_size(max)
            .max_encoding_message_size(max)
    }
}

fn board_from(value: i32) -> Result<Option<BoardId>, MatchError> {
    match pb::Board::try_from(value) {
        Ok(pb::Board::Unspecified) => Ok(None),
        Ok(pb::Board::A) => Ok(Some(BoardId::A)),
        Ok(pb::Board::B) => Ok(Some(BoardId::B)),
        Err(_) => Err(MatchError::invalid(
            "board",
            format!("unknown board value {value}"),
        )),
    }
}

fn side_from(value: i32) -> Result<Option<Color>, MatchError> {
    match pb::Side::try_from(value) {
        Ok(pb::Side::Unspecified) => Ok(None),
        Ok(pb::Side::White) => Ok(Some(Color::White)),
        Ok(pb::Side::Black) => Ok(Some(Color::Black)),
        Err(_) => Err(MatchError::invalid(
            "side",
            format!("unknown side value {value}"),
        )),
    }
}

fn seat_ref(board: i32, side: i32) -> Result<SeatRef, MatchError> {
    Ok(SeatRef {
        board: board_from(board)?,
        color: side_from(side)?,
    })
}

fn board_to(b: BoardId) -> i32 {
    (match b {
        BoardId::A => pb::Board::A,
        BoardId::B => pb::Board::B,
    }) as i32
}

fn side_to(c: Color) -> i32 {
    (match c {
        Color::White => pb::Side::White,
        Color::Black => pb::Side::Black,
    }) as i32
}

fn outcome_to(o: &MatchOutcome, bughouse: bool) -> pb::MatchOutcome {
    pb::MatchOutcome {
        outcome: Some(outcome_to_proto(Outcome {
            score: o.score,
            reason: o.reason,
        })),
        board: if bughouse {
            o.board.map_or(pb::Board::Unspecified as i32, board_to)
        } else {
            pb::Board::Unspecified as i32
        },
        winning_team: if bughouse {
            match o.winner() {
                Some(Team::One) => 1,
                Some(Team::Two) => 2,
                None => 0,
            }
        } else {
            0
        },
    }
}

fn seat_to(record: &Record, i: usize, seat: Seat) -> pb::Seat {
    pb::Seat {
        board: board_to(seat.board),
        side: side_to(seat.color),
        player_id: record.players.get(i).cloned().unwrap_or_default(),
    }
}

fn common_move(uci: &str, san: &str) -> common::Move {
    common::Move {
        uci: uci.to_owned(),
        san: san.to_owned(),
    }
}

fn clock_to(clock: &Clock) -> pb::BoardClock {
    let (running, since, phase) = match clock.phase() {
        Phase::Idle => (None, 0, pb::ClockPhase::Unspecified),
        Phase::Opening { turn, since, .. } => (Some(turn), since, pb::ClockPhase::Opening),
        Phase::Running { turn, since } => (Some(turn), since, pb::ClockPhase::Running),
        Phase::Paused { .. } => (None, 0, pb::ClockPhase::Paused),
        Phase::Flagged { .. } => (None, 0, pb::ClockPhase::Flagged),
        Phase::NoShow { .. } => (None, 0, pb::ClockPhase::NoShow),
        Phase::Stopped { .. } => (None, 0, pb::ClockPhase::Stopped),
    };
    pb::BoardClock {
        white_ms: clock.side(Color::White).remaining_ms,
        black_ms: clock.side(Color::Black).remaining_ms,
        running: running.map_or(pb::Side::Unspecified as i32, side_to),
        running_since_ms: since,
        deadline_ms: clock.deadline().map_or(0, |d| d.at),
        phase: phase as i32,
    }
}

/// The wire form of a match (`status` from [`board_status`]) as it held at `now` (Unix ms).
fn state_to(record: &Record, status: &[BoardStatus], now: u64) -> pb::MatchState {
    let bughouse = record.is_bughouse();
    let boards = record
        .boards
        .iter()
        .zip(status)
        .zip(BoardId::BOTH)
        .map(|((b, s), id)| {
            let [white_reserve, black_reserve] = b.reserve_letters(record.variant);
            pb::BoardState {
                board: board_to(id),
                position: b.full_position(bughouse),
                ply: b.ply,
                side_to_move: side_to(s.turn),
                check: s.check,
                white_reserve,
                black_reserve,
                claimable_draws: s.claims.iter().map(|&c| claim_to_proto(c)).collect(),
                last_move: b.last.as_ref().map(|l| common_move(&l.uci, &l.san)),
                clock: b.clock.as_ref().map(clock_to),
                waiting_for_piece: s.waiting_for_piece,
            }
        })
        .collect();
    pb::MatchState {
        match_id: record.id.clone(),
        variant: variant_to_proto(record.variant),
        rules: rule_options_to_proto(record.rules.clone()),
        seats: seats_of(record)
            .iter()
            .enumerate()
            .map(|(i, &s)| seat_to(record, i, s))
            .collect(),
        time_control: record.time_control.clone(),
        boards,
        outcome: record.outcome.as_ref().map(|o| outcome_to(o, bughouse)),
        last_seq: record.last_seq,
        draw_offers: [Color::White, Color::Black]
            .into_iter()
            .zip(record.draw_offers)
            .filter(|&(_, offers)| offers)
            .map(|(c, _)| side_to(c))
            .collect(),
        start: record.start.clone(),
        server_time_ms: now,
        speed: record
            .control
            .as_ref()
            .map_or_else(String::new, |c| c.speed().name().to_owned()),
        ended_at_ms: record.ended_at.unwrap_or(0),
        takebacks: record.takebacks,
        takeback_offer: record
            .standing_takeback()
            .map_or(pb::Side::Unspecified as i32, side_to),
    }
}

impl MatchGrpc {
    /// The wire form of `record`, stamped with the store's time now.
    async fn state(&self, record: &Record) -> Result<pb::MatchState, Status> {
        let now = self.inner.now().await.map_err(fail)?;
        let status = board_status(record).map_err(fail)?;
        Ok(state_to(record, &status, now))
    }
}

fn played_to(m: &PlayedMove) -> pb::PlayedMove {
    pb::PlayedMove {
        board: board_to(m.board),
        ply: m.ply,
        r#move: Some(common_move(&m.uci, &m.san)),
        position: m.position.clone(),
        side: side_to(m.side),
    }
}

fn event_to(seq: u64, e: &StoredEvent, bughouse: bool) -> pb::WatchMatchResponse {
    use pb::watch_match_response::Event;
    let event = match e {
        StoredEvent::Move {
            board,
            ply,
            side,
            uci,
            san,
            position,
        } => Event::Move(pb::PlayedMove {
            board: board_to(*board),
            ply: *ply,
            r#move: Some(common_move(uci, san)),
            position: position.clone(),
            side: side_to(*side),
        }),
        StoredEvent::Reserve {
            board,
            side,
            pieces,
        } => Event::Reserve(pb::Reserve {
            board: board_to(*board),
            side: side_to(*side),
            pieces: pieces.clone(),
        }),
        StoredEvent::DrawOffer(side) => Event::DrawOffer(side_to(*side)),
        StoredEvent::DrawDeclined(side) => Event::DrawDeclined(side_to(*side)),
        StoredEvent::TakebackOffer(side) => Event::TakebackOffer(side_to(*side)),
        StoredEvent::TakebackDeclined(side) => Event::TakebackDeclined(side_to(*side)),
        StoredEvent::Takeback {
            board,
            ply,
            position,
        } => Event::Takeback(pb::Takeback {
            board: board_to(*board),
            ply: *ply,
            position: position.clone(),
        }),
        StoredEvent::End(o) => Event::End(outcome_to(o, bughouse)),
        StoredEvent::Clock {
            board,
            remaining_ms,
            running,
            at,
        } => Event::Clock(pb::ClockSnapshot {
            board: board_to(*board),
            white_ms: remaining_ms[0],
            black_ms: remaining_ms[1],
            running: running.map_or(pb::Side::Unspecified as i32, side_to),
            at_ms: *at,
        }),
    };
    pb::WatchMatchResponse {
        seq,
        event: Some(event),
    }
}

impl MatchGrpc {
    /// A watch stream of the chat entries `reader` sees in match `id`, after `after`.
    fn chat_stream<M: Send + 'static>(
        &self,
        id: String,
        reader: ChatReader,
        after: u64,
        make: fn(u64, &ChatEntry) -> M,
    ) -> Result<impl Stream<Item = Result<M, Status>> + Send + use<M>, Status> {
        let watch = self
            .inner
            .watchers()
            .join(&id)
            .map_err(|e| Status::from(ApiError::exhausted("", e.message("match"))))?;
        let log = ChatLog {
            matches: Arc::clone(&self.inner),
            id,
            reader,
            make,
        };
        Ok(watch_stream(log, watch, after, self.shutting_down.clone()))
    }
}

/// A request id as the domain takes it (`None` when the field is empty).
fn request_id(r: &str) -> Option<&str> {
    (!r.is_empty()).then_some(r)
}

/// The seat token of a call, if any (a malformed `authorization` entry is `UNAUTHENTICATED`).
fn token<T>(request: &Request<T>) -> Result<Option<String>, Status> {
    bearer(request.metadata())
        .map(|t| t.map(str::to_owned))
        .map_err(Status::from)
}

/// The client's status for a refusal. A store failure is logged here with its detail; the
/// client gets a plain message (no Redis or script text).
fn fail(e: MatchError) -> Status {
    match &e {
        MatchError::Store(StoreError::Unavailable(detail)) => {
            tracing::warn!(%detail, "match store unavailable");
            Status::from(ApiError::Unavailable(
                "the match store cannot be reached".into(),
            ))
        }
        MatchError::Store(StoreError::Corrupt(detail)) => {
            tracing::error!(%detail, "a stored match cannot be read");
            Status::from(ApiError::DataLoss("the stored match cannot be read".into()))
        }
        _ => Status::from(ApiError::from(e)),
    }
}

#[tonic::async_trait]
impl MatchService for MatchGrpc {
    async fn create_match(
        &self,
        request: Request<pb::CreateMatchRequest>,
    ) -> Reply<pb::CreateMatchResponse> {
        let r = request.into_inner();
        let v: Option<Variant> = match r.variant {
            0 => None,
            value => Some(variant(value, "variant").map_err(Status::from)?),
        };
        let created = self
            .inner
            .create(Creation {
                request_id: r.request_id,
                match_id: r.match_id,
                variant: v,
                start: r.start,
                rules: rule_options(&r.rules),
                players: r.players,
                time_control: r.time_control,
                takebacks: r.takebacks,
            })
            .await
            .map_err(fail)?;
        let record = &created.record;
        let state = self.state(record).await?;
        reply(Ok::<_, ApiError>({
            pb::CreateMatchResponse {
                state: Some(state),
                seats: created
                    .seats
                    .iter()
                    .enumerate()
                    .map(|(i, (seat, token))| pb::SeatCredential {
                        seat: Some(seat_to(record, i, *seat)),
                        token: token.clone(),
                    })
                    .collect(),
                created: created.created,
            }
        }))
    }

    async fn get_match(
        &self,
        request: Request<pb::GetMatchRequest>,
    ) -> Reply<pb::GetMatchResponse> {
        let r = request.into_inner();
        let record = self.inner.get(&r.match_id).await.map_err(fail)?;
        let state = self.state(&record).await?;
        reply(Ok::<_, ApiError>(pb::GetMatchResponse {
            state: Some(state),
        }))
    }

    async fn make_move(
        &self,
        request: Request<pb::MakeMoveRequest>,
    ) -> Reply<pb::MakeMoveResponse> {
        let token = token(&request)?;
        let r = request.into_inner();
        let seat = seat_ref(r.board, r.side).map_err(fail)?;
        let lag_ms = u64::try_from(r.lag_ms)
            .map_err(|_| fail(MatchError::invalid("lag_ms", "must not be negative")))?;
        let answer = self
            .inner
            .play(
                &r.match_id,
                MoveRequest {
                    seat,
                    token: token.as_deref(),
                    text: &r.r#move,
                    expected_ply: r.expected_ply,
                    locale: locale(r.locale),
                    request_id: request_id(&r.request_id),
                    lag_ms,
                },
            )
            .await
            .map_err(fail)?;
        // The move's own time (when the store accepted it; with clocks, when the opponent's turn
        // began), or for a duplicate when the match was read.
        reply(Ok::<_, ApiError>(pb::MakeMoveResponse {
            r#move: Some(played_to(&answer.played)),
            state: Some(state_to(&answer.record, &answer.status, answer.at)),
            duplicate: answer.duplicate,
        }))
    }

    async fn resign(&self, request: Request<pb::ResignRequest>) -> Reply<pb::ResignResponse> {
        let token = token(&request)?;
        let r = request.into_inner();
        let seat = seat_ref(r.board, r.side).map_err(fail)?;
        let done = self
            .inner
            .resign(
                &r.match_id,
                seat,
                token.as_deref(),
                request_id(&r.request_id),
            )
            .await
            .map_err(fail)?;
        let state = self.state(&done.record).await?;
        reply(Ok::<_, ApiError>(pb::ResignResponse {
            state: Some(state),
            duplicate: done.duplicate,
        }))
    }

    async fn offer_draw(
        &self,
        request: Request<pb::OfferDrawRequest>,
    ) -> Reply<pb::OfferDrawResponse> {
        let token = token(&request)?;
        let r = request.into_inner();
        let seat = seat_ref(r.board, r.side).map_err(fail)?;
        let done = self
            .inner
            .offer_draw(
                &r.match_id,
                seat,
                token.as_deref(),
                request_id(&r.request_id),
            )
            .await
            .map_err(fail)?;
        let state = self.state(&done.record).await?;
        reply(Ok::<_, ApiError>(pb::OfferDrawResponse {
            state: Some(state),
            duplicate: done.duplicate,
        }))
    }

    async fn propose_takeback(
        &self,
        request: Request<pb::ProposeTakebackRequest>,
    ) -> Reply<pb::ProposeTakebackResponse> {
        let token = token(&request)?;
        let r = request.into_inner();
        let seat = seat_ref(r.board, r.side).map_err(fail)?;
        let done = self
            .inner
            .propose_takeback(
                &r.match_id,
                seat,
                token.as_deref(),
                request_id(&r.request_id),
            )
            .await
            .map_err(fail)?;
        let state = self.state(&done.record).await?;
        reply(Ok::<_, ApiError>(pb::ProposeTakebackResponse {
            state: Some(state),
            duplicate: done.duplicate,
        }))
    }

    async fn answer_takeback(
        &self,
        request: Request<pb::AnswerTakebackRequest>,
    ) -> Reply<pb::AnswerTakebackResponse> {
        let token = token(&request)?;
        let r = request.into_inner();
        let seat = seat_ref(r.board, r.side).map_err(fail)?;
        let done = self
            .inner
            .answer_takeback(
                &r.match_id,
                seat,
                token.as_deref(),
                r.accept,
                request_id(&r.request_id),
            )
            .await
            .map_err(fail)?;
        let state = self.state(&done.record).await?;
        reply(Ok::<_, ApiError>(pb::AnswerTakebackResponse {
            state: Some(state),
            duplicate: done.duplicate,
        }))
    }

    async fn decline_draw(
        &self,
        request: Request<pb::DeclineDrawRequest>,
    ) -> Reply<pb::DeclineDrawResponse> {
        let token = token(&request)?;
        let r = request.into_inner();
        let seat = seat_ref(r.board, r.side).map_err(fail)?;
        let done = self
            .inner
            .decline_draw(
                &r.match_id,
                seat,
                token.as_deref(),
                request_id(&r.request_id),
            )
            .await
            .map_err(fail)?;
        let state = self.state(&done.record).await?;
        reply(Ok::<_, ApiError>(pb::DeclineDrawResponse {
            state: Some(state),
            duplicate: done.duplicate,
        }))
    }

    async fn abort_match(
        &self,
        request: Request<pb::AbortMatchRequest>,
    ) -> Reply<pb::AbortMatchResponse> {
        let token = token(&request)?;
        let r = request.into_inner();
        let seat = seat_ref(r.board, r.side).map_err(fail)?;
        let done = self
            .inner
            .abort(
                &r.match_id,
                seat,
                token.as_deref(),
                request_id(&r.request_id),
            )
            .await
            .map_err(fail)?;
        let state = self.state(&done.record).await?;
        reply(Ok::<_, ApiError>(pb::AbortMatchResponse {
            state: Some(state),
            duplicate: done.duplicate,
        }))
    }

    async fn post_chat(
        &self,
        request: Request<pb::PostChatRequest>,
    ) -> Reply<pb::PostChatResponse> {
        let token = token(&request)?;
        let r = request.into_inner();
        let seat = seat_ref(r.board, r.side).map_err(fail)?;
        let channel = match pb::ChatChannel::try_from(r.channel) {
            Ok(pb::ChatChannel::Unspecified | pb::ChatChannel::Players) => SeatChannel::Players,
            Ok(pb::ChatChannel::Team) => SeatChannel::Team,
            _ => {
                return Err(fail(MatchError::invalid(
                    "channel",
                    "a seat posts to CHAT_CHANNEL_PLAYERS or CHAT_CHANNEL_TEAM",
                )));
            }
        };
        let (message, duplicate) = self
            .inner
            .post_chat(
                &r.match_id,
                seat,
                token.as_deref(),
                channel,
                &r.text,
                request_id(&r.request_id),
            )
            .await
            .map_err(fail)?;
        reply(Ok::<_, ApiError>(pb::PostChatResponse {
            message: Some(chat_to(&message)),
            duplicate,
        }))
    }

    async fn post_spectator_chat(
        &self,
        request: Request<pb::PostSpectatorChatRequest>,
    ) -> Reply<pb::PostSpectatorChatResponse> {
        let r = request.into_inner();
        let (message, duplicate) = self
            .inner
            .post_spectator_chat(&r.match_id, &r.author, &r.text, request_id(&r.request_id))
            .await
            .map_err(fail)?;
        reply(Ok::<_, ApiError>(pb::PostSpectatorChatResponse {
            message: Some(chat_to(&message)),
            duplicate,
        }))
    }

    async fn delete_chat_message(
        &self,
        request: Request<pb::DeleteChatMessageRequest>,
    ) -> Reply<pb::DeleteChatMessageResponse> {
        let r = request.into_inner();
        let message = self
            .inner
            .delete_chat(&r.match_id, r.message_id)
            .await
            .map_err(fail)?;
        reply(Ok::<_, ApiError>(pb::DeleteChatMessageResponse {
            message: Some(chat_to(&message)),
        }))
    }

    type WatchChatStream =
        Pin<Box<dyn Stream<Item = Result<pb::WatchChatResponse, Status>> + Send>>;

    async fn watch_chat(
        &self,
        request: Request<pb::WatchChatRequest>,
    ) -> Reply<Self::WatchChatStream> {
        let token = token(&request)?;
        let r = request.into_inner();
        let seat = seat_ref(r.board, r.side).map_err(fail)?;
        let reader = self
            .inner
            .chat_reader(&r.match_id, seat, token.as_deref())
            .await
            .map_err(fail)?;
        let stream = self.chat_stream(r.match_id, reader, r.after_id, chat_entry)?;
        Ok(Response::new(Box::pin(stream)))
    }

    type WatchSpectatorChatStream =
        Pin<Box<dyn Stream<Item = Result<pb::WatchSpectatorChatResponse, Status>> + Send>>;

    async fn watch_spectator_chat(
        &self,
        request: Request<pb::WatchSpectatorChatRequest>,
    ) -> Reply<Self::WatchSpectatorChatStream> {
        let r = request.into_inner();
        // NOT_FOUND before the stream starts.
        self.inner.get(&r.match_id).await.map_err(fail)?;
        let stream = self.chat_stream(
            r.match_id,
            ChatReader::spectator(),
            r.after_id,
            spectator_chat_entry,
        )?;
        Ok(Response::new(Box::pin(stream)))
    }

    async fn list_matches(
        &self,
        request: Request<pb::ListMatchesRequest>,
    ) -> Reply<pb::ListMatchesResponse> {
        let r = request.into_inner();
        let filter = ListFilter {
            variant: match r.variant {
                0 => None,
                value => Some(variant(value, "variant").map_err(Status::from)?),
            },
            finished: match pb::MatchStateFilter::try_from(r.state) {
                Ok(pb::MatchStateFilter::Unspecified) => None,
                Ok(pb::MatchStateFilter::Live) => Some(false),
                Ok(pb::MatchStateFilter::Finished) => Some(true),
                Err(_) => {
                    return Err(fail(MatchError::invalid(
                        "state",
                        format!("unknown state filter {}", r.state),
                    )));
                }
            },
        };
        let page = self
            .inner
            .list(&r.player_id, filter, r.page_size, &r.page_token)
            .await
            .map_err(fail)?;
        // One reading of the store's time for the whole page (each state says when it held).
        let now = self.inner.now().await.map_err(fail)?;
        let mut matches = Vec::with_capacity(page.matches.len());
        for (created_ms, record) in &page.matches {
            let status = board_status(record).map_err(fail)?;
            matches.push(pb::MatchListing {
                state: Some(state_to(record, &status, now)),
                created_ms: *created_ms,
            });
        }
        reply(Ok::<_, ApiError>(pb::ListMatchesResponse {
            matches,
            next_page_token: page.next_page_token,
        }))
    }

    async fn export_match(
        &self,
        request: Request<pb::ExportMatchRequest>,
    ) -> Reply<pb::ExportMatchResponse> {
        let r = request.into_inner();
        let exported = self.inner.export(&r.match_id).await.map_err(fail)?;
        reply(Ok::<_, ApiError>(pb::ExportMatchResponse {
            pgn: exported.text,
            bpgn: exported.bughouse,
            last_seq: exported.last_seq,
        }))
    }

    async fn claim_draw(
        &self,
        request: Request<pb::ClaimDrawRequest>,
    ) -> Reply<pb::ClaimDrawResponse> {
        let token = token(&request)?;
        let r = request.into_inner();
        let seat = seat_ref(r.board, r.side).map_err(fail)?;
        let what = claim(r.claim, "claim").map_err(Status::from)?;
        let done = self
            .inner
            .claim_draw(
                &r.match_id,
                seat,
                token.as_deref(),
                what,
                request_id(&r.request_id),
            )
            .await
            .map_err(fail)?;
        let state = self.state(&done.record).await?;
        reply(Ok::<_, ApiError>(pb::ClaimDrawResponse {
            state: Some(state),
            duplicate: done.duplicate,
        }))
    }

    async fn pause_clocks(
        &self,
        request: Request<pb::PauseClocksRequest>,
    ) -> Reply<pb::PauseClocksResponse> {
        let r = request.into_inner();
        let done = self
            .inner
            .pause_clocks(&r.match_id, request_id(&r.request_id))
            .await
            .map_err(fail)?;
        let state = self.state(&done.record).await?;
        reply(Ok::<_, ApiError>(pb::PauseClocksResponse {
            state: Some(state),
            duplicate: done.duplicate,
        }))
    }

    async fn resume_clocks(
        &self,
        request: Request<pb::ResumeClocksRequest>,
    ) -> Reply<pb::ResumeClocksResponse> {
        let r = request.into_inner();
        let done = self
            .inner
            .resume_clocks(&r.match_id, request_id(&r.request_id))
            .await
            .map_err(fail)?;
        let state = self.state(&done.record).await?;
        reply(Ok::<_, ApiError>(pb::ResumeClocksResponse {
            state: Some(state),
            duplicate: done.duplicate,
        }))
    }

    async fn add_time(&self, request: Request<pb::AddTimeRequest>) -> Reply<pb::AddTimeResponse> {
        let r = request.into_inner();
        let seat = seat_ref(r.board, r.side).map_err(fail)?;
        if r.ms == 0 || r.ms > 86_400_000 {
            return Err(fail(MatchError::invalid("ms", "must be 1 to 86,400,000")));
        }
        let done = self
            .inner
            .add_time(&r.match_id, seat, r.ms, request_id(&r.request_id))
            .await
            .map_err(fail)?;
        let state = self.state(&done.record).await?;
        reply(Ok::<_, ApiError>(pb::AddTimeResponse {
            state: Some(state),
            duplicate: done.duplicate,
        }))
    }

    type WatchMatchStream =
        Pin<Box<dyn Stream<Item = Result<pb::WatchMatchResponse, Status>> + Send>>;

    async fn watch_match(
        &self,
        request: Request<pb::WatchMatchRequest>,
    ) -> Reply<Self::WatchMatchStream> {
        let r = request.into_inner();
        let id = r.match_id;
        // NOT_FOUND before the stream starts.
        let bughouse = self.inner.get(&id).await.map_err(fail)?.is_bughouse();
        let watch = self
            .inner
            .watchers()
            .join(&id)
            .map_err(|e| Status::from(ApiError::exhausted("", e.message("match"))))?;
        let log = MatchLog {
            matches: Arc::clone(&self.inner),
            id,
            bughouse,
        };
        let stream = watch_stream(log, watch, r.after_seq, self.shutting_down.clone());
        Ok(Response::new(Box::pin(stream)))
    }
}
