//! Request ids as a match remembers them: what each did ([`Done`]), the kinds of request and
//! their fingerprints ([`RequestId`]), and the per-seat window of the latest ids.

use super::{Corrupt, board_letter, corrupt, pack, side_letter, unpack};
use arbiter_core::Color;
use arbiter_core::bughouse::BoardId;

/// How many request ids a match remembers per scope: per seat (the ids its player sent), and
/// for the platform's clock actions (`PauseClocks`, `ResumeClocks`, `AddTime`). The latest
/// requests that changed the match are kept; the oldest is forgotten when a new one is applied.
///
/// An id is only needed while its answer may have been lost, that is while the client may still
/// retry it: a player has one move per turn in flight, and a retry follows within seconds. 64
/// ids per seat cover 64 requests in flight or awaiting their retry, far more than any client
/// pipelines, while bounding a match's memory of requests to 5 × 64 ids (about 100 KB with the
/// longest ids, a few KB with usual ones) however many requests arrive. A request id older than
/// its seat's latest 64 applied ids is not recognised any more: sent again, it is judged as a
/// new request (a stale move is then `STALE_PLY`).
pub const REQUEST_WINDOW: usize = 64;

/// What a request applied under an id did, as its match remembers it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Done {
    /// A move: the sequence number of its move event.
    Move {
        /// The event's sequence number.
        seq: u64,
    },
    /// A resignation or a claimed draw.
    Ended,
    /// A draw offer.
    Offered,
    /// A draw offer declined.
    Declined,
    /// A takeback proposed, declined or accepted.
    Takeback,
    /// A platform's clock action (pause, resume, time added).
    Clock,
}

impl Done {
    /// The stored value (`M17`, `E`, `D`, `X`, `K`).
    pub fn encode(&self) -> String {
        match self {
            Done::Move { seq } => format!("M{seq}"),
            Done::Ended => "E".into(),
            Done::Offered => "D".into(),
            Done::Declined => "X".into(),
            Done::Takeback => "T".into(),
            Done::Clock => "K".into(),
        }
    }

    /// Reads a stored value.
    pub fn decode(text: &str) -> Result<Done, Corrupt> {
        match text {
            "E" => Ok(Done::Ended),
            "D" => Ok(Done::Offered),
            "X" => Ok(Done::Declined),
            "T" => Ok(Done::Takeback),
            "K" => Ok(Done::Clock),
            _ => text
                .strip_prefix('M')
                .and_then(|n| n.parse().ok())
                .map(|seq| Done::Move { seq })
                .ok_or_else(|| corrupt(format!("bad request record '{text}'"))),
        }
    }
}

/// The kind of a request that takes a request id.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// `MakeMove`.
    Move,
    /// `Resign`.
    Resign,
    /// `OfferDraw`.
    OfferDraw,
    /// `ClaimDraw`.
    ClaimDraw,
    /// `PauseClocks`.
    PauseClocks,
    /// `ResumeClocks`.
    ResumeClocks,
    /// `AddTime`.
    AddTime,
    /// `AbortMatch`.
    Abort,
    /// `DeclineDraw`.
    DeclineDraw,
    /// `ProposeTakeback`.
    ProposeTakeback,
    /// `AnswerTakeback`.
    AnswerTakeback,
    /// `PostChat`.
    Chat,
    /// `PostSpectatorChat`.
    SpectatorChat,
}

impl RequestKind {
    /// The stable name fingerprints are made of.
    pub const fn name(self) -> &'static str {
        match self {
            RequestKind::Move => "move",
            RequestKind::Resign => "resign",
            RequestKind::OfferDraw => "offer-draw",
            RequestKind::ClaimDraw => "claim-draw",
            RequestKind::PauseClocks => "pause-clocks",
            RequestKind::ResumeClocks => "resume-clocks",
            RequestKind::AddTime => "add-time",
            RequestKind::Abort => "abort",
            RequestKind::DeclineDraw => "decline-draw",
            RequestKind::ProposeTakeback => "propose-takeback",
            RequestKind::AnswerTakeback => "answer-takeback",
            RequestKind::Chat => "chat",
            RequestKind::SpectatorChat => "spectator-chat",
        }
    }

    /// Whether a request of this kind can have done `done` (for entries stored without a
    /// fingerprint).
    fn could_have_done(self, done: Done) -> bool {
        matches!(
            (self, done),
            (RequestKind::Move, Done::Move { .. })
                | (RequestKind::Resign | RequestKind::ClaimDraw, Done::Ended)
                | (RequestKind::OfferDraw, Done::Offered)
                | (
                    RequestKind::PauseClocks | RequestKind::ResumeClocks | RequestKind::AddTime,
                    Done::Clock
                )
        )
    }
}

/// A request id as a change carries it to the store: the window it belongs to, its `done` field,
/// and the fingerprint of the request sent under it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestId {
    /// The id as the client sent it.
    pub id: String,
    /// The window of ids it belongs to ([`REQUEST_WINDOW`]): the seat (`A/w`) or `platform`.
    pub scope: String,
    /// The field of the `done` hash: the scope, `/`, the id.
    pub field: String,
    /// The kind of the request.
    pub kind: RequestKind,
    /// 16 hex digits of SHA-256 over the kind and the content of the request: the same id sent
    /// with a different request has another fingerprint.
    pub fingerprint: String,
}

impl RequestId {
    /// The id `id` of a request of `kind` with `content` (the request's fields that say what it
    /// does, in a fixed order), sent by the seat on `board` playing `side`: request ids are the
    /// clients' own, so each seat has its own.
    pub fn seat(
        board: BoardId,
        side: Color,
        id: &str,
        kind: RequestKind,
        content: &[&str],
    ) -> RequestId {
        RequestId::new(
            format!("{}/{}", board_letter(board), side_letter(side)),
            id,
            kind,
            content,
        )
    }

    /// The id `id` of a platform's request of `kind` with `content`.
    pub fn platform(id: &str, kind: RequestKind, content: &[&str]) -> RequestId {
        RequestId::new("platform".into(), id, kind, content)
    }

    fn new(scope: String, id: &str, kind: RequestKind, content: &[&str]) -> RequestId {
        use sha2::{Digest, Sha256};
        let mut items = vec![kind.name()];
        items.extend_from_slice(content);
        let digest = Sha256::digest(pack(&items).as_bytes());
        RequestId {
            id: id.to_owned(),
            field: format!("{scope}/{id}"),
            scope,
            kind,
            fingerprint: arbiter_kit::hex(&digest[..8]),
        }
    }

    /// The stored form a script takes: packed `scope, field, fingerprint`.
    pub fn encode(&self) -> String {
        pack(&[&self.scope, &self.field, &self.fingerprint])
    }
}

/// What a match remembers of a request applied under an id, in its `done` hash under the
/// request's field ([`RequestId::field`]): what it did, and its fingerprint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remembered {
    /// What the request did.
    pub done: Done,
    /// The request's fingerprint (empty for entries stored before fingerprints were kept).
    pub fingerprint: String,
}

impl Remembered {
    /// The stored value: packed `what, fingerprint` (`3:M172:…`).
    pub fn encode(&self) -> String {
        pack(&[self.done.encode().as_str(), &self.fingerprint])
    }

    /// Reads a stored value; a bare `M17`, `E`, `D` or `K` (stored before fingerprints were
    /// kept) reads with an empty fingerprint.
    pub fn decode(text: &str) -> Result<Remembered, Corrupt> {
        if !text.starts_with(|c: char| c.is_ascii_digit()) {
            return Ok(Remembered {
                done: Done::decode(text)?,
                fingerprint: String::new(),
            });
        }
        match unpack(text)?.as_slice() {
            [done, fingerprint] => Ok(Remembered {
                done: Done::decode(done)?,
                fingerprint: (*fingerprint).to_owned(),
            }),
            _ => Err(corrupt(format!("bad request record '{text}'"))),
        }
    }

    /// Whether `request` is the request remembered under its id (a retry), rather than another
    /// request reusing the id. An entry without a fingerprint is taken as the same request when
    /// the kinds agree.
    pub fn is_same_request(&self, request: &RequestId) -> bool {
        if self.fingerprint.is_empty() {
            request.kind.could_have_done(self.done)
        } else {
            self.fingerprint == request.fingerprint
        }
    }
}

/// Whether a field of a `done` hash is window bookkeeping (a scope's counter `A/w#` or one of
/// its slots `A/w#17`), not a remembered request (`A/w/<id>`).
pub fn is_window_field(field: &str) -> bool {
    let scope_end = if field.starts_with("platform") {
        "platform".len()
    } else {
        3
    };
    field.as_bytes().get(scope_end) == Some(&b'#')
}
