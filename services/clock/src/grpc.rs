//! The tonic handlers of `arbiter.clock.v1.ClockService`: decode, call [`Clocks`], encode.

use crate::domain::{Answer, Clocks};
use crate::record::{ClockEvent, ClockRecord};
use crate::store::AnyStore;
use arbiter_clocked::{EventLog, watch_stream};
use arbiter_core::Color;
use arbiter_core::clock::Phase;
use arbiter_kit::{ApiError, reply};
use arbiter_proto::clock::v1 as pb;
use arbiter_proto::clock::v1::clock_service_server::{ClockService, ClockServiceServer};
use std::pin::Pin;
use std::sync::Arc;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

type Reply<T> = Result<Response<T>, Status>;

/// A clock's events, as its watch stream reads them.
struct ClockLog {
    clocks: Arc<Clocks<AnyStore>>,
    id: String,
}

impl EventLog for ClockLog {
    type Event = ClockEvent;
    type Message = pb::WatchClockResponse;

    async fn read(&self, after: u64, max: usize) -> Result<Vec<(u64, ClockEvent)>, Status> {
        Ok(self.clocks.events(&self.id, after, max).await?)
    }

    fn is_last(&self, e: &ClockEvent) -> bool {
        matches!(e, ClockEvent::Flag(_) | ClockEvent::Stopped)
    }

    fn message(&self, seq: u64, e: &ClockEvent) -> pb::WatchClockResponse {
        event_to(seq, e)
    }
}

/// The clock service.
#[derive(Debug, Clone)]
pub struct ClockGrpc {
    inner: Arc<Clocks<AnyStore>>,
    shutting_down: tokio::sync::watch::Receiver<bool>,
}

impl ClockGrpc {
    /// The service over `clocks` (the host's access layer checks platform calls before they
    /// arrive); watch streams end when `shutting_down` turns true.
    pub fn new(
        clocks: Arc<Clocks<AnyStore>>,
        shutting_down: tokio::sync::watch::Receiver<bool>,
    ) -> ClockGrpc {
        ClockGrpc {
            inner: clocks,
            shutting_down,
        }
    }

    /// The tonic server, with the message size limit `max`.
    pub fn into_server(self, max: usize) -> ClockServiceServer<ClockGrpc> {
        ClockServiceServer::new(self)
            .max_decoding_message_size(max)
            .max_encoding_message_size(max)
    }

    /// Encodes an answer as the call's response: `wrap` gets the state (as of now on the
    /// server's time base) and the duplicate flag.
    async fn answer<R>(
        &self,
        a: Answer,
        wrap: impl FnOnce(Option<pb::ClockState>, bool) -> R,
    ) -> Reply<R> {
        let now = self.inner.now().await.map_err(Status::from)?;
        reply(Ok::<_, ApiError>(wrap(
            Some(state_to(&a.record, now)),
            a.duplicate,
        )))
    }
}

fn side_from(value: i32, field: &str) -> Result<Color, ApiError> {
    match pb::Side::try_from(value) {
        Ok(pb::Side::White) => Ok(Color::White),
        Ok(pb::Side::Black) => Ok(Color::Black),
        Ok(pb::Side::Unspecified) => Err(ApiError::invalid(field, format!("{field} is required"))),
        Err(_) => Err(ApiError::invalid(
            field,
            format!("unknown side value {value}"),
        )),
    }
}

fn board_from(value: i32) -> Result<Option<usize>, ApiError> {
    match pb::Board::try_from(value) {
        Ok(pb::Board::Unspecified) => Ok(None),
        Ok(pb::Board::A) => Ok(Some(0)),
        Ok(pb::Board::B) => Ok(Some(1)),
        Err(_) => Err(ApiError::invalid(
            "board",
            format!("unknown board value {value}"),
        )),
    }
}

fn side_to(c: Color) -> i32 {
    (match c {
        Color::White => pb::Side::White,
        Color::Black => pb::Side::Black,
    }) as i32
}

fn board_to(i: usize) -> i32 {
    (if i == 0 { pb::Board::A } else { pb::Board::B }) as i32
}

fn state_to(r: &ClockRecord, now: u64) -> pb::ClockState {
    pb::ClockState {
        clock_id: r.id.clone(),
        time_control: r.control.to_string(),
        speed: r.control.speed().name().to_owned(),
        boards: r
            .boards
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let (running, since, phase) = match b.clock.phase() {
                    Phase::Running { turn, since } | Phase::Opening { turn, since, .. } => {
                        (side_to(turn), since, pb::Phase::Running)
                    }
                    Phase::Paused { .. } => (0, 0, pb::Phase::Paused),
                    Phase::Flagged { .. } | Phase::NoShow { .. } => (0, 0, pb::Phase::Flagged),
                    Phase::Stopped { .. } | Phase::Idle => (0, 0, pb::Phase::Stopped),
                };
                pb::BoardClock {
                    board: board_to(i),
                    white_ms: b.clock.side(Color::White).remaining_ms,
                    black_ms: b.clock.side(Color::Black).remaining_ms,
                    running,
                    running_since_ms: since,
                    deadline_ms: b.clock.deadline().map_or(0, |d| d.at),
                    phase: phase as i32,
                    ply: b.ply,
                }
            })
            .collect(),
        flag: r.flag.map(|f| pb::Flag {
            board: board_to(f.board),
            side: side_to(f.side),
            at_ms: f.at,
        }),
        over: r.over,
        last_seq: r.last_seq,
        server_time_ms: now,
    }
}

fn event_to(seq: u64, e: &ClockEvent) -> pb::WatchClockResponse {
    use pb::watch_clock_response::Event;
    let event = match e {
        ClockEvent::Snapshot {
            board,
            remaining_ms,
            running,
            at,
        } => Event::Snapshot(pb::Snapshot {
            board: board_to(*board),
            white_ms: remaining_ms[0],
            black_ms: remaining_ms[1],
            running: running.map_or(0, side_to),
            at_ms: *at,
        }),
        ClockEvent::Flag(f) => Event::Flag(pb::Flag {
            board: board_to(f.board),
            side: side_to(f.side),
            at_ms: f.at,
        }),
        ClockEvent::Stopped => Event::Stopped(true),
    };
    pb::WatchClockResponse {
        seq,
        event: Some(event),
    }
}

#[tonic::async_trait]
impl ClockService for ClockGrpc {
    async fn sync(&self, request: Request<pb::SyncRequest>) -> Reply<pb::SyncResponse> {
        let received = self.inner.now().await.map_err(Status::from)?;
        let t1 = request.into_inner().client_send_ms;
        // One reading of the time authority serves as receive and send time: whatever the
        // server spends on it counts in the client's round trip, never in the offset.
        Ok(Response::new(pb::SyncResponse {
            client_send_ms: t1,
            server_receive_ms: received,
            server_send_ms: received,
        }))
    }

    async fn create_clock(
        &self,
        request: Request<pb::CreateClockRequest>,
    ) -> Reply<pb::CreateClockResponse> {
        let r = request.into_inner();
        let first = match r.first {
            0 => Color::White,
            v => side_from(v, "first").map_err(Status::from)?,
        };
        let boards = if r.boards == 0 { 1 } else { r.boards };
        let a = self
            .inner
            .create(&r.clock_id, &r.time_control, boards, first)
            .await
            .map_err(Status::from)?;
        self.answer(a, |state, duplicate| pb::CreateClockResponse {
            state,
            duplicate,
        })
        .await
    }

    async fn get_clock(
        &self,
        request: Request<pb::GetClockRequest>,
    ) -> Reply<pb::GetClockResponse> {
        let r = request.into_inner();
        let record = self.inner.get(&r.clock_id).await.map_err(Status::from)?;
        let answer = Answer {
            record,
            duplicate: false,
        };
        self.answer(answer, |state, _| pb::GetClockResponse { state })
            .await
    }

    async fn press(&self, request: Request<pb::PressRequest>) -> Reply<pb::PressResponse> {
        let r = request.into_inner();
        let board = board_from(r.board).map_err(Status::from)?;
        let side = side_from(r.side, "side").map_err(Status::from)?;
        let lag = u64::try_from(r.lag_ms)
            .map_err(|_| Status::from(ApiError::invalid("lag_ms", "must not be negative")))?;
        let a = self
            .inner
            .press(&r.clock_id, board, side, r.ply, lag)
            .await
            .map_err(Status::from)?;
        self.answer(a, |state, duplicate| pb::PressResponse { state, duplicate })
            .await
    }

    async fn pause_clock(
        &self,
        request: Request<pb::PauseClockRequest>,
    ) -> Reply<pb::PauseClockResponse> {
        let r = request.into_inner();
        let a = self
            .inner
            .pause(&r.clock_id, &r.request_id)
            .await
            .map_err(Status::from)?;
        self.answer(a, |state, duplicate| pb::PauseClockResponse {
            state,
            duplicate,
        })
        .await
    }

    async fn resume_clock(
        &self,
        request: Request<pb::ResumeClockRequest>,
    ) -> Reply<pb::ResumeClockResponse> {
        let r = request.into_inner();
        let a = self
            .inner
            .resume(&r.clock_id, &r.request_id)
            .await
            .map_err(Status::from)?;
        self.answer(a, |state, duplicate| pb::ResumeClockResponse {
            state,
            duplicate,
        })
        .await
    }

    async fn add_time(&self, request: Request<pb::AddTimeRequest>) -> Reply<pb::AddTimeResponse> {
        let r = request.into_inner();
        let board = board_from(r.board).map_err(Status::from)?;
        let side = side_from(r.side, "side").map_err(Status::from)?;
        let a = self
            .inner
            .add_time(&r.clock_id, board, side, r.ms, &r.request_id)
            .await
            .map_err(Status::from)?;
        self.answer(a, |state, duplicate| pb::AddTimeResponse {
            state,
            duplicate,
        })
        .await
    }

    async fn stop_clock(
        &self,
        request: Request<pb::StopClockRequest>,
    ) -> Reply<pb::StopClockResponse> {
        let r = request.into_inner();
        let a = self
            .inner
            .stop(&r.clock_id, &r.request_id)
            .await
            .map_err(Status::from)?;
        self.answer(a, |state, duplicate| pb::StopClockResponse {
            state,
            duplicate,
        })
        .await
    }

    type WatchClockStream =
        Pin<Box<dyn Stream<Item = Result<pb::WatchClockResponse, Status>> + Send>>;

    async fn watch_clock(
        &self,
        request: Request<pb::WatchClockRequest>,
    ) -> Reply<Self::WatchClockStream> {
        let r = request.into_inner();
        let id = r.clock_id;
        self.inner.get(&id).await.map_err(Status::from)?;
        let watch = self
            .inner
            .watchers()
            .join(&id)
            .map_err(|e| Status::from(ApiError::exhausted("", e.message("clock"))))?;
        let log = ClockLog {
            clocks: Arc::clone(&self.inner),
            id,
        };
        let stream = watch_stream(log, watch, r.after_seq, self.shutting_down.clone());
        Ok(Response::new(Box::pin(stream)))
    }
}
