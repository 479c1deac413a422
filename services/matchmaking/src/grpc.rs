//! The tonic handlers of `arbiter.matchmaking.v1.MatchmakingService`: decode, call the
//! [`Matchmaker`], encode. The only place (with [`crate::backend::GrpcMatches`], the match
//! service's client) where matchmaking's own types meet the protobuf messages: the conversions
//! both ways live here (but for the reader of found matches stored prost-encoded by earlier
//! versions, [`crate::legacy`]).

use crate::backend::MatchBackend;
use crate::domain::{JoinEvent, JoinSpec, Matchmaker, QueueStatus, Rating};
use crate::error::{MatchmakingError, PARTNER_NOT_ALLOWED};
use crate::found::{FoundSeat, MatchFound};
use crate::pool::Pool;
use crate::store::PoolStore;
use arbiter_core::Variant;
use arbiter_core::clock::TimeControl;
use arbiter_core::pairing::wave::RatingRange;
use arbiter_kit::convert::{variant, variant_to_proto};
use arbiter_proto::matchmaking::v1 as pb;
use arbiter_proto::matchmaking::v1::matchmaking_service_server::{
    MatchmakingService, MatchmakingServiceServer,
};
use std::pin::Pin;
use std::sync::Arc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status};

type Reply<T> = Result<Response<T>, Status>;

/// The reply of a handler: the answer, or the error as its status.
fn reply<T>(r: Result<T, MatchmakingError>) -> Reply<T> {
    r.map(Response::new).map_err(Status::from)
}

impl From<FoundSeat> for pb::FoundSeat {
    fn from(s: FoundSeat) -> pb::FoundSeat {
        pb::FoundSeat {
            player_id: s.player,
            board: s.board,
            side: s.side,
            rating: s.rating,
        }
    }
}

impl From<MatchFound> for pb::MatchFound {
    fn from(f: MatchFound) -> pb::MatchFound {
        pb::MatchFound {
            pool: f.pool,
            match_id: f.match_id,
            seat: Some(f.seat.into()),
            token: f.token,
            seats: f.seats.into_iter().map(Into::into).collect(),
            variant: variant_to_proto(f.variant),
            time_control: f.time_control,
            rated: f.rated,
        }
    }
}

impl From<QueueStatus> for pb::QueueStatus {
    fn from(s: QueueStatus) -> pb::QueueStatus {
        pb::QueueStatus {
            pool: s.pool,
            position: s.position,
            waiting: s.waiting,
            waves_missed: s.waves_missed,
            estimated_wait_ms: s.estimated_wait_ms,
            rating: s.rating,
        }
    }
}

impl From<JoinEvent> for pb::JoinResponse {
    fn from(e: JoinEvent) -> pb::JoinResponse {
        pb::JoinResponse {
            event: Some(match e {
                JoinEvent::Status(s) => pb::join_response::Event::Status(s.into()),
                JoinEvent::Found(f) => pb::join_response::Event::MatchFound(f.into()),
            }),
        }
    }
}

impl From<Rating> for pb::Rating {
    fn from(r: Rating) -> pb::Rating {
        pb::Rating {
            variant: variant_to_proto(r.variant),
            speed: r.speed,
            glicko_rating: r.glicko_rating,
            glicko_deviation: r.glicko_deviation,
            glicko_volatility: r.glicko_volatility,
            elo: r.elo,
            games: r.games,
        }
    }
}

/// The longest player id, in bytes.
pub const MAX_PLAYER_ID_BYTES: usize = 128;
/// The most players one join may block.
pub const MAX_BLOCKED: usize = 100;
/// The longest time-control text, in bytes.
pub const MAX_TIME_CONTROL_BYTES: usize = 64;
/// The longest match id, in bytes.
pub const MAX_MATCH_ID_BYTES: usize = 128;
/// Ratings outside ±100,000 are not ratings.
const RATING_LIMIT: i32 = 100_000;

/// The matchmaking service.
pub struct MatchmakingGrpc<S, B> {
    inner: Arc<Matchmaker<S, B>>,
    shutting_down: tokio::sync::watch::Receiver<bool>,
}

impl<S, B> std::fmt::Debug for MatchmakingGrpc<S, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatchmakingGrpc").finish_non_exhaustive()
    }
}

impl<S: PoolStore, B: MatchBackend> MatchmakingGrpc<S, B> {
    /// The service over `matchmaker` (the host's access layer checks every call before it
    /// arrives); join streams end when `shutting_down` turns true.
    pub fn new(
        matchmaker: Arc<Matchmaker<S, B>>,
        shutting_down: tokio::sync::watch::Receiver<bool>,
    ) -> MatchmakingGrpc<S, B> {
        MatchmakingGrpc {
            inner: matchmaker,
            shutting_down,
        }
    }

    /// The tonic server, with the message size limit `max`.
    pub fn into_server(self, max: usize) -> MatchmakingServiceServer<MatchmakingGrpc<S, B>> {
        MatchmakingServiceServer::new(self)
            .max_decoding_message_size(max)
            .max_encoding_message_size(max)
    }
}

/// Checks a player id: 1 to 128 bytes, no control characters.
fn player_id(value: &str, field: &str) -> Result<String, MatchmakingError> {
    if value.is_empty() {
        return Err(MatchmakingError::invalid(
            field,
            format!("{field} is required"),
        ));
    }
    if value.len() > MAX_PLAYER_ID_BYTES {
        return Err(MatchmakingError::invalid(
            field,
            format!(
                "{field} is {} bytes; at most {MAX_PLAYER_ID_BYTES}",
                value.len()
            ),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(MatchmakingError::invalid(
            field,
            format!("{field} holds a control character"),
        ));
    }
    Ok(value.to_owned())
}

/// Decodes and checks a join.
///
/// # Errors
/// `INVALID_ARGUMENT` naming the field.
pub fn join_spec(r: &pb::JoinRequest) -> Result<JoinSpec, MatchmakingError> {
    let player = player_id(&r.player_id, "player_id")?;
    let variant: Variant = variant(r.variant, "variant")
        .map_err(|e| MatchmakingError::invalid("variant", e.description()))?;
    if r.time_control.is_empty() {
        return Err(MatchmakingError::invalid(
            "time_control",
            "time_control is required",
        ));
    }
    if r.time_control.len() > MAX_TIME_CONTROL_BYTES {
        return Err(MatchmakingError::invalid(
            "time_control",
            format!(
                "time_control is {} bytes; at most {MAX_TIME_CONTROL_BYTES}",
                r.time_control.len()
            ),
        ));
    }
    let control = TimeControl::parse(&r.time_control)
        .map_err(|e| MatchmakingError::invalid("time_control", e.to_string()))?;
    let range = match &r.range {
        None => None,
        Some(range) => {
            if range.min > range.max {
                return Err(MatchmakingError::invalid(
                    "range",
                    format!("range min {} is above max {}", range.min, range.max),
                ));
            }
            if range.min < -RATING_LIMIT || range.max > RATING_LIMIT {
                return Err(MatchmakingError::invalid(
                    "range",
                    format!("range ends lie within ±{RATING_LIMIT}"),
                ));
            }
            Some(RatingRange {
                min: range.min,
                max: range.max,
            })
        }
    };
    if r.blocked.len() > MAX_BLOCKED {
        return Err(MatchmakingError::invalid(
            "blocked",
            format!("{} blocked players; at most {MAX_BLOCKED}", r.blocked.len()),
        ));
    }
    let mut blocked = Vec::with_capacity(r.blocked.len());
    for (i, b) in r.blocked.iter().enumerate() {
        blocked.push(player_id(b, &format!("blocked[{i}]"))?);
    }
    blocked.sort_unstable();
    blocked.dedup();
    let partner = if r.partner_id.is_empty() {
        None
    } else {
        if variant != Variant::Bughouse {
            return Err(MatchmakingError::precondition(
                PARTNER_NOT_ALLOWED,
                format!("only bughouse has partners, not {}", variant.name()),
            ));
        }
        let partner = player_id(&r.partner_id, "partner_id")?;
        if partner == player {
            return Err(MatchmakingError::invalid(
                "partner_id",
                "a player cannot partner themselves",
            ));
        }
        Some(partner)
    };
    Ok(JoinSpec {
        player,
        pool: Pool {
            variant,
            control,
            rated: r.rated,
        },
        range,
        blocked,
        partner,
    })
}

#[tonic::async_trait]
impl<S: PoolStore, B: MatchBackend> MatchmakingService for MatchmakingGrpc<S, B> {
    type JoinStream = Pin<Box<dyn Stream<Item = Result<pb::JoinResponse, Status>> + Send>>;

    async fn join(&self, request: Request<pb::JoinRequest>) -> Reply<Self::JoinStream> {
        let spec = join_spec(request.get_ref())?;
        let ticket = self.inner.join(spec).await?;
        let (tx, rx) = tokio::sync::mpsc::channel(8);
        let inner = Arc::clone(&self.inner);
        let shutdown = self.shutting_down.clone();
        tokio::spawn(async move { inner.hold(ticket, tx, shutdown).await });
        let events = ReceiverStream::new(rx)
            .map(|event| event.map(pb::JoinResponse::from).map_err(Status::from));
        Ok(Response::new(Box::pin(events)))
    }

    async fn leave(&self, request: Request<pb::LeaveRequest>) -> Reply<pb::LeaveResponse> {
        let player = player_id(&request.get_ref().player_id, "player_id")?;
        let left = self.inner.leave(&player).await;
        reply(left.map(|left| pb::LeaveResponse { left }))
    }

    async fn acknowledge(
        &self,
        request: Request<pb::AcknowledgeRequest>,
    ) -> Reply<pb::AcknowledgeResponse> {
        let r = request.get_ref();
        let player = player_id(&r.player_id, "player_id")?;
        if r.match_id.is_empty() || r.match_id.len() > MAX_MATCH_ID_BYTES {
            return Err(MatchmakingError::invalid(
                "match_id",
                format!("match_id must be 1 to {MAX_MATCH_ID_BYTES} bytes"),
            )
            .into());
        }
        let acknowledged = self.inner.acknowledge(&player, &r.match_id).await;
        reply(acknowledged.map(|acknowledged| pb::AcknowledgeResponse { acknowledged }))
    }

    async fn get_ratings(
        &self,
        request: Request<pb::GetRatingsRequest>,
    ) -> Reply<pb::GetRatingsResponse> {
        let player = player_id(&request.get_ref().player_id, "player_id")?;
        let ratings = self.inner.ratings(&player).await;
        reply(ratings.map(|ratings| pb::GetRatingsResponse {
            ratings: ratings.into_iter().map(Into::into).collect(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::legacy::read_stored;

    fn join(player: &str, variant: i32, tc: &str) -> pb::JoinRequest {
        pb::JoinRequest {
            player_id: player.into(),
            variant,
            time_control: tc.into(),
            ..pb::JoinRequest::default()
        }
    }

    fn field(r: Result<JoinSpec, MatchmakingError>) -> String {
        r.unwrap_err().field().unwrap_or("").to_owned()
    }

    #[test]
    fn joins_are_checked_field_by_field() {
        let ok = join_spec(&join("alice", 1, "3|2")).unwrap();
        assert_eq!(ok.pool.name(), "chess/3+2/casual");
        assert_eq!(field(join_spec(&join("", 1, "3+2"))), "player_id");
        assert_eq!(field(join_spec(&join("a\u{7}", 1, "3+2"))), "player_id");
        assert_eq!(
            field(join_spec(&join(&"x".repeat(129), 1, "3+2"))),
            "player_id"
        );
        assert_eq!(field(join_spec(&join("a", 0, "3+2"))), "variant");
        assert_eq!(field(join_spec(&join("a", 99, "3+2"))), "variant");
        assert_eq!(field(join_spec(&join("a", 1, ""))), "time_control");
        assert_eq!(field(join_spec(&join("a", 1, "3+x"))), "time_control");
        assert_eq!(
            field(join_spec(&join("a", 1, &"9".repeat(65)))),
            "time_control"
        );
        let mut r = join("a", 1, "3+2");
        r.range = Some(pb::RatingRange { min: 10, max: 5 });
        assert_eq!(field(join_spec(&r)), "range");
        r.range = Some(pb::RatingRange {
            min: i32::MIN,
            max: 5,
        });
        assert_eq!(field(join_spec(&r)), "range");
        let mut r = join("a", 1, "3+2");
        r.blocked = vec!["b".into(); 101];
        assert_eq!(field(join_spec(&r)), "blocked");
        r.blocked = vec!["b".into(), "\n".into()];
        assert_eq!(field(join_spec(&r)), "blocked[1]");
        let mut r = join("a", 1, "3+2");
        r.partner_id = "b".into();
        assert!(matches!(
            join_spec(&r),
            Err(MatchmakingError::Precondition {
                reason: "PARTNER_NOT_ALLOWED",
                ..
            })
        ));
        let mut r = join("a", 3, "3+2");
        r.partner_id = "a".into();
        assert_eq!(field(join_spec(&r)), "partner_id");
        r.partner_id = "b".into();
        assert_eq!(join_spec(&r).unwrap().partner.as_deref(), Some("b"));
    }

    #[test]
    fn found_matches_stored_prost_encoded_by_earlier_versions_are_read() {
        use prost::Message;
        let seat = |player: &str, board, side| FoundSeat {
            player: player.into(),
            board,
            side,
            rating: 1450,
        };
        let found = MatchFound {
            pool: "bughouse/3+2/casual".into(),
            match_id: "m-7".into(),
            seat: seat("c", 2, 1),
            token: "tok".into(),
            seats: vec![
                seat("a", 1, 1),
                seat("b", 1, 2),
                seat("c", 2, 1),
                seat("d", 2, 2),
            ],
            variant: Variant::Bughouse,
            time_control: "3+2".into(),
            rated: false,
        };
        // What earlier versions stored: the message itself.
        let old = pb::MatchFound::from(found.clone()).encode_to_vec();
        assert_eq!(read_stored(&old), Ok(found.clone()));
        // What this version stores reads back the same.
        assert_eq!(read_stored(found.encode().as_bytes()), Ok(found.clone()));
        // Unreadable old values are refused.
        let mut no_seat = pb::MatchFound::from(found);
        no_seat.seat = None;
        assert!(read_stored(&no_seat.encode_to_vec()).is_err());
        assert!(read_stored(b"\xff\xff\xff").is_err());
    }
}
