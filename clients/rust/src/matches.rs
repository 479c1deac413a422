//! [`Match`]: a hosted match and the seats this client holds in it.

use crate::error::Error;
use crate::retry::new_request_id;
use crate::watch::{Opener, ResumedStream, opening, resumed};
use crate::watch::{WatchStream, watch_events_after};
use crate::{Client, GrpcChannel, secret};
use arbiter_proto::common::v1::{DrawClaim, Position, Variant};
use arbiter_proto::matches::v1::match_service_client::MatchServiceClient;
use arbiter_proto::matches::v1::{
    AbortMatchRequest, AbortMatchResponse, Board, BoardState, ClaimDrawRequest, ClaimDrawResponse,
    CreateMatchRequest, DeclineDrawRequest, DeclineDrawResponse, ExportMatchRequest,
    ExportMatchResponse, GetMatchRequest, MakeMoveRequest, MakeMoveResponse, MatchOutcome,
    MatchState, OfferDrawRequest, OfferDrawResponse, ResignRequest, ResignResponse, Side,
};
use arbiter_proto::matches::v1::{
    AnswerTakebackRequest, AnswerTakebackResponse, ChatChannel, PostChatRequest, PostChatResponse,
    ProposeTakebackRequest, ProposeTakebackResponse, WatchChatRequest, WatchChatResponse,
    WatchSpectatorChatRequest, WatchSpectatorChatResponse,
};
use arbiter_proto::rules::v1::{
    ListLegalMovesRequest, ListLegalMovesResponse, RenderBoardRequest, RenderBoardResponse,
};
use std::future::Future;
use std::sync::{Arc, Mutex};
use tonic::metadata::{Ascii, MetadataValue};
use tonic::{Request, Response, Status};

/// A seat of a match: a board (A in a single-board game) and a colour. A [`Side`] alone is
/// that colour on board A.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SeatId {
    /// The board (`Board::A` for a single-board game; unset means A).
    pub board: Board,
    /// The colour.
    pub side: Side,
}

impl SeatId {
    /// The seat `side` on `board`.
    pub fn new(board: Board, side: Side) -> SeatId {
        SeatId { board, side }
    }

    /// The board as stored (unset is board A).
    pub(crate) fn board_key(self) -> i32 {
        match self.board {
            Board::Unspecified => Board::A as i32,
            b => b as i32,
        }
    }
}

impl From<Side> for SeatId {
    fn from(side: Side) -> SeatId {
        SeatId::new(Board::A, side)
    }
}

impl std::fmt::Display for SeatId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let board = if self.board_key() == Board::B as i32 {
            "B"
        } else {
            "A"
        };
        let side = match self.side {
            Side::White => "white",
            Side::Black => "black",
            Side::Unspecified => "unspecified",
        };
        write!(f, "{board}/{side}")
    }
}

/// How a match ended, in one line: the score and the reason (`1-0 checkmate`,
/// `1/2-1/2 agreement`, `aborted`).
pub fn outcome_text(outcome: &MatchOutcome) -> String {
    let o = outcome.outcome.clone().unwrap_or_default();
    let score = o.score.map(|s| s.text).unwrap_or_default();
    match (score.is_empty(), o.reason_name.is_empty()) {
        (false, false) => format!("{score} {}", o.reason_name),
        (false, true) => score,
        (true, false) => o.reason_name,
        (true, true) => "over".to_owned(),
    }
}

/// A match on the server, as this client sees it: its id, the seats whose tokens the client
/// holds (kept by the [`Client`], so every handle of the match shares them) and the latest
/// state an answer carried. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Match {
    client: Client,
    id: String,
    last: Arc<Mutex<Option<MatchState>>>,
}

/// A seated request: the match, the seat and the request id every one of them carries.
trait SeatedRequest: Clone {
    /// Its match id, board, side and request id.
    fn fields(&mut self) -> (&mut String, &mut i32, &mut i32, &mut String);
}

/// The answer of a seated call: the match's state after it, when it carries one.
trait SeatedAnswer {
    fn state(&self) -> Option<&MatchState>;
}

/// Implements [`SeatedRequest`] for the requests and [`SeatedAnswer`] for the answers carrying a
/// `state`.
macro_rules! seated {
    (requests: $($request:ty),*; answers: $($answer:ty),* $(,)?) => {
        $(impl SeatedRequest for $request {
            fn fields(&mut self) -> (&mut String, &mut i32, &mut i32, &mut String) {
                (&mut self.match_id, &mut self.board, &mut self.side, &mut self.request_id)
            }
        })*
        $(impl SeatedAnswer for $answer {
            fn state(&self) -> Option<&MatchState> {
                self.state.as_ref()
            }
        })*
    };
}

seated! {
    requests: MakeMoveRequest, ResignRequest, OfferDrawRequest, DeclineDrawRequest,
        ClaimDrawRequest, AbortMatchRequest, ProposeTakebackRequest, AnswerTakebackRequest,
        PostChatRequest;
    answers: MakeMoveResponse, ResignResponse, OfferDrawResponse, DeclineDrawResponse,
        ClaimDrawResponse, AbortMatchResponse, ProposeTakebackResponse, AnswerTakebackResponse,
}

impl SeatedAnswer for PostChatResponse {
    fn state(&self) -> Option<&MatchState> {
        None
    }
}

impl Match {
    fn new(client: Client, id: String, state: Option<MatchState>) -> Match {
        Match {
            client,
            id,
            last: Arc::new(Mutex::new(state)),
        }
    }

    /// The match id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The client this handle calls through.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The latest state an answer carried (no call).
    pub fn last_state(&self) -> Option<MatchState> {
        self.lock().clone()
    }

    /// The token this client holds for `seat`, if any.
    pub fn token(&self, seat: impl Into<SeatId>) -> Option<String> {
        self.client.token(&self.id, seat)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<MatchState>> {
        self.last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn remember(&self, state: Option<&MatchState>) {
        if let Some(s) = state {
            *self.lock() = Some(s.clone());
        }
    }

    /// Reads the match (GetMatch, retried).
    pub async fn state(&self) -> Result<MatchState, Error> {
        let state = self.client.get_match(&self.id).await?;
        self.remember(Some(&state));
        Ok(state)
    }

    /// The match as PGN (BPGN for bughouse) as it stands (ExportMatch, retried).
    pub async fn export(&self) -> Result<ExportMatchResponse, Error> {
        let request = ExportMatchRequest {
            match_id: self.id.clone(),
        };
        self.client
            .unary(Client::matches, None, request, |mut c, r| async move {
                c.export_match(r).await
            })
            .await
    }

    /// The board of `seat` as last known, read again when it is not that seat's turn there
    /// (the opponent may have moved since).
    async fn board_for(&self, seat: SeatId) -> Result<BoardState, Error> {
        let find = |state: &MatchState| {
            state
                .boards
                .iter()
                .find(|b| {
                    b.board == seat.board_key()
                        || (b.board == Board::Unspecified as i32 && seat.board_key() == 1)
                })
                .cloned()
        };
        let cached = self.last_state().as_ref().and_then(find);
        if let Some(b) = cached.filter(|b| b.side_to_move == seat.side as i32) {
            return Ok(b);
        }
        let state = self.state().await?;
        find(&state)
            .ok_or_else(|| Error::Protocol(format!("match {} has no board {seat}", self.id)))
    }

    /// `seat`'s token as the `authorization` value of a seated call.
    fn bearer(&self, seat: SeatId) -> Result<MetadataValue<Ascii>, Error> {
        let token = self.token(seat).ok_or_else(|| Error::NoToken {
            match_id: self.id.clone(),
            seat: seat.to_string(),
        })?;
        let what = format!("the seat token of {seat} in match {}", self.id);
        secret(&format!("Bearer {token}"), &what)
    }

    /// A seated call for `seat`: `request` gets this match's id, the seat and a new request id
    /// (kept on every retry), and goes with the seat's token (see [`Match::send`]).
    async fn seated<Req, Resp, F, Fut>(
        &self,
        seat: SeatId,
        mut request: Req,
        call: F,
    ) -> Result<Resp, Error>
    where
        Req: SeatedRequest,
        Resp: SeatedAnswer,
        F: Fn(MatchServiceClient<GrpcChannel>, Request<Req>) -> Fut,
        Fut: Future<Output = Result<Response<Resp>, Status>>,
    {
        let (_, board, side, _) = request.fields();
        (*board, *side) = (seat.board as i32, seat.side as i32);
        self.send(seat, request, call).await
    }

    /// Sends a seated request for `seat` with its token, retried (the request id, made here when
    /// empty, is the same on every attempt), and remembers the state it answers.
    async fn send<Req, Resp, F, Fut>(
        &self,
        seat: SeatId,
        mut request: Req,
        call: F,
    ) -> Result<Resp, Error>
    where
        Req: SeatedRequest,
        Resp: SeatedAnswer,
        F: Fn(MatchServiceClient<GrpcChannel>, Request<Req>) -> Fut,
        Fut: Future<Output = Result<Response<Resp>, Status>>,
    {
        let bearer = self.bearer(seat)?;
        let (match_id, _, _, request_id) = request.fields();
        match_id.clone_from(&self.id);
        if request_id.is_empty() {
            *request_id = new_request_id();
        }
        let answer = self
            .client
            .unary(Client::matches, Some(&bearer), request, call)
            .await?;
        self.remember(answer.state());
        Ok(answer)
    }

    /// Plays `mv` (coordinate notation or SAN) for `seat` at the board's current ply, with a
    /// new request id (kept on every retry: the move is applied once).
    pub async fn play(&self, seat: impl Into<SeatId>, mv: &str) -> Result<MakeMoveResponse, Error> {
        let seat = seat.into();
        let board = self.board_for(seat).await?;
        self.make_move(MakeMoveRequest {
            match_id: self.id.clone(),
            board: seat.board as i32,
            side: seat.side as i32,
            r#move: mv.to_owned(),
            expected_ply: board.ply,
            ..MakeMoveRequest::default()
        })
        .await
    }

    /// MakeMove as given (its match id is this match's; a request id is made when empty), with
    /// the seat's token.
    pub async fn make_move(&self, request: MakeMoveRequest) -> Result<MakeMoveResponse, Error> {
        let seat = SeatId::new(
            Board::try_from(request.board).unwrap_or(Board::A),
            Side::try_from(request.side).unwrap_or(Side::Unspecified),
        );
        let result = self
            .send(
                seat,
                request,
                |mut c, r| async move { c.make_move(r).await },
            )
            .await;
        if result.is_err() {
            *self.lock() = None;
        }
        result
    }

    /// Resigns for `seat`'s side (a new request id, kept on every retry).
    pub async fn resign(&self, seat: impl Into<SeatId>) -> Result<ResignResponse, Error> {
        let request = ResignRequest::default();
        self.seated(
            seat.into(),
            request,
            |mut c, r| async move { c.resign(r).await },
        )
        .await
    }

    /// Offers a draw for `seat`'s side, or accepts the other side's offer.
    pub async fn offer_draw(&self, seat: impl Into<SeatId>) -> Result<OfferDrawResponse, Error> {
        let request = OfferDrawRequest::default();
        self.seated(seat.into(), request, |mut c, r| async move {
            c.offer_draw(r).await
        })
        .await
    }

    /// Declines the other side's standing draw offer.
    pub async fn decline_draw(
        &self,
        seat: impl Into<SeatId>,
    ) -> Result<DeclineDrawResponse, Error> {
        let request = DeclineDrawRequest::default();
        self.seated(seat.into(), request, |mut c, r| async move {
            c.decline_draw(r).await
        })
        .await
    }

    /// Claims a draw the rules allow now (threefold repetition, the fifty-move rule).
    pub async fn claim_draw(
        &self,
        seat: impl Into<SeatId>,
        claim: DrawClaim,
    ) -> Result<ClaimDrawResponse, Error> {
        let request = ClaimDrawRequest {
            claim: claim as i32,
            ..ClaimDrawRequest::default()
        };
        self.seated(seat.into(), request, |mut c, r| async move {
            c.claim_draw(r).await
        })
        .await
    }

    /// Aborts the match before both sides have moved.
    pub async fn abort(&self, seat: impl Into<SeatId>) -> Result<AbortMatchResponse, Error> {
        let request = AbortMatchRequest::default();
        self.seated(seat.into(), request, |mut c, r| async move {
            c.abort_match(r).await
        })
        .await
    }

    /// Proposes to take back `seat`'s latest move (matches created with `takebacks`).
    pub async fn propose_takeback(
        &self,
        seat: impl Into<SeatId>,
    ) -> Result<ProposeTakebackResponse, Error> {
        let request = ProposeTakebackRequest::default();
        self.seated(seat.into(), request, |mut c, r| async move {
            c.propose_takeback(r).await
        })
        .await
    }

    /// Accepts (`accept`) or declines the other side's standing takeback proposal.
    pub async fn answer_takeback(
        &self,
        seat: impl Into<SeatId>,
        accept: bool,
    ) -> Result<AnswerTakebackResponse, Error> {
        let request = AnswerTakebackRequest {
            accept,
            ..AnswerTakebackRequest::default()
        };
        self.seated(seat.into(), request, |mut c, r| async move {
            c.answer_takeback(r).await
        })
        .await
    }

    /// Posts `text` to the players' channel for `seat` (a request id made here and kept on
    /// every retry: posted once).
    pub async fn post_chat(
        &self,
        seat: impl Into<SeatId>,
        text: &str,
    ) -> Result<PostChatResponse, Error> {
        let request = PostChatRequest {
            channel: ChatChannel::Players as i32,
            text: text.to_owned(),
            ..PostChatRequest::default()
        };
        self.seated(seat.into(), request, |mut c, r| async move {
            c.post_chat(r).await
        })
        .await
    }

    /// `seat`'s chat channels (the players' and, in bughouse, its team's) after message
    /// `after_id`, with the seat's token: each entry once, in order, resumed after a break from
    /// the last entry's id (as [`Match::watch`]); it goes on until dropped.
    pub fn watch_chat(
        &self,
        seat: impl Into<SeatId>,
        after_id: u64,
    ) -> Result<ResumedStream<WatchChatResponse>, Error> {
        let seat = seat.into();
        let bearer = self.bearer(seat)?;
        let (client, id) = (self.client.clone(), self.id.clone());
        let deadline = self.client.retry_policy().attempt_timeout;
        let open: Opener<WatchChatResponse> = Box::new(move |after_id| {
            let mut c = client.matches();
            let mut r = Request::new(WatchChatRequest {
                match_id: id.clone(),
                board: seat.board as i32,
                side: seat.side as i32,
                after_id,
            });
            r.metadata_mut().insert("authorization", bearer.clone());
            Box::pin(opening(deadline, "WatchChat", async move {
                c.watch_chat(r).await
            }))
        });
        Ok(resumed(
            open,
            |e| e.id,
            |_| false,
            format!("the chat of {}", self.id),
            after_id,
            self.client.retry_policy().clone(),
        ))
    }

    /// The spectators' chat after message `after_id`, resumed as [`Match::watch_chat`].
    pub fn watch_spectator_chat(&self, after_id: u64) -> ResumedStream<WatchSpectatorChatResponse> {
        let (client, id) = (self.client.clone(), self.id.clone());
        let deadline = self.client.retry_policy().attempt_timeout;
        let open: Opener<WatchSpectatorChatResponse> = Box::new(move |after_id| {
            let mut c = client.matches();
            let request = WatchSpectatorChatRequest {
                match_id: id.clone(),
                after_id,
            };
            Box::pin(opening(deadline, "WatchSpectatorChat", async move {
                c.watch_spectator_chat(request).await
            }))
        });
        resumed(
            open,
            |e| e.id,
            |_| false,
            format!("the spectators' chat of {}", self.id),
            after_id,
            self.client.retry_policy().clone(),
        )
    }

    /// The match's events from the beginning, each once, resumed after breaks; the stream ends
    /// after the `end` event (see [`crate::watch_events`]).
    pub fn watch(&self) -> WatchStream {
        self.watch_after(0)
    }

    /// The match's events after `after_seq`, as [`Match::watch`].
    pub fn watch_after(&self, after_seq: u64) -> WatchStream {
        watch_events_after(
            self.client.clone(),
            &self.id,
            after_seq,
            self.client.retry_policy().clone(),
        )
    }
}

impl Client {
    /// Creates a match (CreateMatch; a request id is made when empty, so a retry finds the
    /// same match) and keeps its seat tokens.
    pub async fn create_match(&self, mut request: CreateMatchRequest) -> Result<Match, Error> {
        if request.request_id.is_empty() {
            request.request_id = new_request_id();
        }
        let answer = self
            .unary(Client::matches, None, request, |mut c, r| async move {
                c.create_match(r).await
            })
            .await?;
        let state = answer
            .state
            .ok_or_else(|| Error::Protocol("CreateMatch answered no state".into()))?;
        for credential in &answer.seats {
            if let Some(seat) = &credential.seat {
                let id = SeatId::new(
                    Board::try_from(seat.board).unwrap_or(Board::A),
                    Side::try_from(seat.side).unwrap_or(Side::Unspecified),
                );
                self.set_token(&state.match_id, id, &credential.token);
            }
        }
        Ok(Match::new(
            self.clone(),
            state.match_id.clone(),
            Some(state),
        ))
    }

    /// Creates a chess game between `white` and `black` without clocks, this client holding
    /// both seats.
    pub async fn create_chess_match(&self, white: &str, black: &str) -> Result<Match, Error> {
        self.create_match(CreateMatchRequest {
            variant: Variant::Chess as i32,
            players: vec![white.to_owned(), black.to_owned()],
            ..CreateMatchRequest::default()
        })
        .await
    }

    /// A handle on an existing match whose `seat` this client plays with `token` (a token
    /// from the platform, or from matchmaking).
    pub fn attach(&self, match_id: &str, seat: impl Into<SeatId>, token: &str) -> Match {
        self.set_token(match_id, seat, token);
        Match::new(self.clone(), match_id.to_owned(), None)
    }

    /// A handle on an existing match: a spectator's (it can read, export and watch), and a
    /// player's for every seat whose token this client holds.
    pub fn open_match(&self, match_id: &str) -> Match {
        Match::new(self.clone(), match_id.to_owned(), None)
    }

    /// Reads a match (GetMatch, retried).
    pub async fn get_match(&self, match_id: &str) -> Result<MatchState, Error> {
        let request = GetMatchRequest {
            match_id: match_id.to_owned(),
        };
        let answer = self
            .unary(Client::matches, None, request, |mut c, r| async move {
                c.get_match(r).await
            })
            .await?;
        answer
            .state
            .ok_or_else(|| Error::Protocol("GetMatch answered no state".into()))
    }

    /// The legal moves of a position (ListLegalMoves, retried).
    pub async fn legal_moves(&self, position: Position) -> Result<ListLegalMovesResponse, Error> {
        let request = ListLegalMovesRequest {
            position: Some(position),
            ..ListLegalMovesRequest::default()
        };
        self.unary(Client::rules, None, request, |mut c, r| async move {
            c.list_legal_moves(r).await
        })
        .await
    }

    /// Draws a position as an SVG picture (RenderBoard, retried).
    pub async fn render_board(
        &self,
        request: RenderBoardRequest,
    ) -> Result<RenderBoardResponse, Error> {
        self.unary(Client::rules, None, request, |mut c, r| async move {
            c.render_board(r).await
        })
        .await
    }

    /// Draws `variant`'s position `text` (its start when empty) as an SVG document.
    pub async fn render_position(&self, variant: Variant, text: &str) -> Result<String, Error> {
        let answer = self
            .render_board(RenderBoardRequest {
                position: Some(Position {
                    variant: variant as i32,
                    text: text.to_owned(),
                    rules: Vec::new(),
                }),
                ..RenderBoardRequest::default()
            })
            .await?;
        Ok(answer.svg)
    }
}
