//! Found matches stored by releases before the stored form's version 1 (the protobuf
//! `MatchFound`, prost-encoded), read during a rolling upgrade: the one place outside the gRPC
//! module where matchmaking's types meet protobuf. The store reads every found match through
//! [`read_stored`].

use crate::found::{FoundSeat, MatchFound};
use arbiter_kit::convert::variant;
use arbiter_proto::matchmaking::v1 as pb;

impl From<pb::FoundSeat> for FoundSeat {
    fn from(s: pb::FoundSeat) -> FoundSeat {
        FoundSeat {
            player: s.player_id,
            board: s.board,
            side: s.side,
            rating: s.rating,
        }
    }
}

impl TryFrom<pb::MatchFound> for MatchFound {
    type Error = String;

    /// A found match from its message; a message without its seat or with an unknown variant
    /// is refused.
    fn try_from(f: pb::MatchFound) -> Result<MatchFound, String> {
        Ok(MatchFound {
            seat: f.seat.ok_or("no seat")?.into(),
            variant: variant(f.variant, "variant").map_err(|e| e.to_string())?,
            pool: f.pool,
            match_id: f.match_id,
            token: f.token,
            seats: f.seats.into_iter().map(Into::into).collect(),
            time_control: f.time_control,
            rated: f.rated,
        })
    }
}

/// Reads a stored found match: the stored form of [`crate::found`] (version 1), or, for a value
/// that does not begin with `v`, the `MatchFound` message prost-encoded as releases before
/// version 1 stored it. Such values are kept a day at most, so this fallback can go a release
/// after version 1.
///
/// # Errors
/// What is wrong with a value that is neither.
pub fn read_stored(stored: &[u8]) -> Result<MatchFound, String> {
    use prost::Message;
    if stored.first() == Some(&b'v') {
        return MatchFound::decode(stored);
    }
    let message = pb::MatchFound::decode(stored).map_err(|e| e.to_string())?;
    MatchFound::try_from(message)
}
