//! The tonic handlers of `arbiter.rules.v1.BughouseService`: decode, call [`Bughouse`], encode.
//! Errors become a `Status` through `From<BughouseError>` in [`crate::error`].

use super::store::AnyStore;
use super::{Bughouse, BughouseError, MatchView, PlayedMove, StoredEvent};
use crate::convert::{locale, outcome_to_proto};
use arbiter_core::bughouse::{BoardId, MatchEvent, MatchOutcome, Team};
use arbiter_core::{Color, Outcome};
use arbiter_proto::common::v1 as common;
use arbiter_proto::rules::v1 as pb;
use arbiter_proto::rules::v1::bughouse_service_server::{BughouseService, BughouseServiceServer};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

type Reply<T> = Result<Response<T>, Status>;

/// How often a watcher re-reads the store when nothing in this process woke it (changes made
/// by other instances sharing a Redis store).
const WATCH_POLL: Duration = Duration::from_millis(250);

/// The bughouse service over a store.
#[derive(Debug, Clone)]
pub struct BughouseGrpc {
    inner: Arc<Bughouse<AnyStore>>,
}

impl BughouseGrpc {
    /// A service keeping its matches in `store`.
    pub fn new(store: AnyStore) -> BughouseGrpc {
        BughouseGrpc {
            inner: Arc::new(Bughouse::new(store)),
        }
    }

    /// The tonic server.
    pub fn into_server(self, max_message_bytes: usize) -> BughouseServiceServer<BughouseGrpc> {
        BughouseServiceServer::new(self)
            .max_decoding_message_size(max_message_bytes)
            .max_encoding_message_size(max_message_bytes)
    }
}

fn board_from(value: i32) -> Result<BoardId, BughouseError> {
    match pb::Board::try_from(value) {
        Ok(pb::Board::A) => Ok(BoardId::A),
        Ok(pb::Board::B) => Ok(BoardId::B),
        _ => Err(BughouseError::Invalid {
            field: "board",
            description: "board must be BOARD_A or BOARD_B".into(),
        }),
    }
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

fn outcome_to(o: &MatchOutcome) -> pb::MatchOutcome {
    let common = outcome_to_proto(Outcome {
        score: o.score,
        reason: o.reason,
    });
    pb::MatchOutcome {
        score: common.score,
        board: o.board.map_or(pb::Board::Unspecified as i32, board_to),
        reason: common.reason,
        reason_name: common.reason_name,
        winning_team: match o.winner() {
            Some(Team::One) => 1,
            Some(Team::Two) => 2,
            None => 0,
        },
    }
}

fn state_to(v: &MatchView) -> pb::MatchState {
    let board = |i: usize| {
        let b = &v.boards[i];
        pb::BoardState {
            fen: b.fen.clone(),
            ply: b.ply,
            side_to_move: side_to(b.turn),
            white_reserve: b.white_reserve.clone(),
            black_reserve: b.black_reserve.clone(),
        }
    };
    let [white_a, black_a, white_b, black_b] = v.players.clone();
    pb::MatchState {
        match_id: v.id.clone(),
        players: Some(pb::Players {
            white_a,
            black_a,
            white_b,
            black_b,
        }),
        time_control: v.time_control.clone(),
        board_a: Some(board(0)),
        board_b: Some(board(1)),
        bfen: v.bfen(),
        outcome: v.outcome.as_ref().map(outcome_to),
        last_seq: v.last_seq,
        draw_offers: v.draw_offers.iter().map(|&t| u32::from(t)).collect(),
    }
}

fn move_to(m: &PlayedMove) -> pb::BoardMove {
    pb::BoardMove {
        board: board_to(m.board),
        ply: m.ply,
        r#move: Some(common::Move {
            uci: m.uci.clone(),
            san: m.san.clone(),
        }),
        fen: m.fen.clone(),
    }
}

fn event_to(seq: u64, e: &StoredEvent) -> pb::MatchEvent {
    use pb::match_event::Event;
    let event = match e {
        StoredEvent::Match(MatchEvent::Move {
            board,
            ply,
            uci,
            san,
            fen,
        }) => Event::Move(move_to(&PlayedMove {
            board: *board,
            ply: *ply,
            uci: uci.clone(),
            san: san.clone(),
            fen: fen.clone(),
        })),
        StoredEvent::Match(MatchEvent::Reserve {
            board,
            color,
            pieces,
        }) => Event::Reserve(pb::Reserve {
            board: board_to(*board),
            side: side_to(*color),
            pieces: pieces.clone(),
        }),
        StoredEvent::Match(MatchEvent::End(o)) => Event::End(outcome_to(o)),
        StoredEvent::DrawOffer(team) => Event::DrawOffer(u32::from(*team)),
    };
    pb::MatchEvent {
        seq,
        event: Some(event),
    }
}

fn required<'a>(value: &'a str, field: &'static str) -> Result<&'a str, BughouseError> {
    if value.trim().is_empty() {
        Err(BughouseError::Invalid {
            field,
            description: format!("{field} is required"),
        })
    } else {
        Ok(value)
    }
}

#[tonic::async_trait]
impl BughouseService for BughouseGrpc {
    async fn create_match(
        &self,
        request: Request<pb::CreateMatchRequest>,
    ) -> Reply<pb::CreateMatchResponse> {
        let r = request.into_inner();
        let p = r.players.ok_or_else(|| {
            Status::from(BughouseError::Invalid {
                field: "players",
                description: "players are required".into(),
            })
        })?;
        let view = self
            .inner
            .create(
                [p.white_a, p.black_a, p.white_b, p.black_b],
                r.time_control,
                Some(r.start_bfen.as_str()),
                Some(r.match_id),
            )
            .await?;
        Ok(Response::new(pb::CreateMatchResponse {
            state: Some(state_to(&view)),
        }))
    }

    async fn make_move(
        &self,
        request: Request<pb::MakeMoveRequest>,
    ) -> Reply<pb::MakeMoveResponse> {
        let r = request.into_inner();
        let board = board_from(r.board)?;
        let (played, view, duplicate) = self
            .inner
            .make_move(
                required(&r.match_id, "match_id")?,
                required(&r.player_id, "player_id")?,
                board,
                required(&r.r#move, "move")?,
                r.expected_ply,
                locale(r.locale),
            )
            .await?;
        Ok(Response::new(pb::MakeMoveResponse {
            r#move: Some(move_to(&played)),
            state: Some(state_to(&view)),
            duplicate,
        }))
    }

    async fn get_match(
        &self,
        request: Request<pb::GetMatchRequest>,
    ) -> Reply<pb::GetMatchResponse> {
        let r = request.into_inner();
        let view = self.inner.get(required(&r.match_id, "match_id")?).await?;
        Ok(Response::new(pb::GetMatchResponse {
            state: Some(state_to(&view)),
        }))
    }

    async fn resign(&self, request: Request<pb::ResignRequest>) -> Reply<pb::ResignResponse> {
        let r = request.into_inner();
        let view = self
            .inner
            .resign(
                required(&r.match_id, "match_id")?,
                required(&r.player_id, "player_id")?,
            )
            .await?;
        Ok(Response::new(pb::ResignResponse {
            state: Some(state_to(&view)),
        }))
    }

    async fn offer_draw(
        &self,
        request: Request<pb::OfferDrawRequest>,
    ) -> Reply<pb::OfferDrawResponse> {
        let r = request.into_inner();
        let view = self
            .inner
            .offer_draw(
                required(&r.match_id, "match_id")?,
                required(&r.player_id, "player_id")?,
            )
            .await?;
        Ok(Response::new(pb::OfferDrawResponse {
            state: Some(state_to(&view)),
        }))
    }

    type WatchMatchStream = Pin<Box<dyn Stream<Item = Result<pb::MatchEvent, Status>> + Send>>;

    async fn watch_match(
        &self,
        request: Request<pb::WatchMatchRequest>,
    ) -> Reply<Self::WatchMatchStream> {
        let r = request.into_inner();
        let id = required(&r.match_id, "match_id")?.to_owned();
        self.inner.get(&id).await?; // NOT_FOUND before the stream starts
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        let inner = self.inner.clone();
        tokio::spawn(async move {
            let mut after = r.after_seq;
            loop {
                // Register for wake-ups before reading, so no change slips between the two.
                let notified = inner.changed().notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                let events = match inner.events(&id, after).await {
                    Ok(e) => e,
                    Err(e) => {
                        let _ = tx.send(Err(Status::from(e))).await;
                        return;
                    }
                };
                let mut ended = false;
                for (seq, e) in &events {
                    after = *seq;
                    ended |= matches!(e, StoredEvent::Match(MatchEvent::End(_)));
                    if tx.send(Ok(event_to(*seq, e))).await.is_err() {
                        return;
                    }
                }
                if ended {
                    return;
                }
                if events.is_empty() {
                    match inner.get(&id).await {
                        // Over, and every event sent: the stream is complete.
                        Ok(v) if v.outcome.is_some() && after >= v.last_seq => return,
                        Ok(_) => {}
                        Err(e) => {
                            let _ = tx.send(Err(Status::from(e))).await;
                            return;
                        }
                    }
                }
                tokio::select! {
                    () = &mut notified => {}
                    () = tokio::time::sleep(WATCH_POLL) => {}
                    () = tx.closed() => return,
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}
