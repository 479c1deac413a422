//! Challenges and seeks: offers of a game made by one player, to one other player (a
//! [`OfferKind::Challenge`]) or to anyone in the lobby (a [`OfferKind::Seek`]), and what the
//! store keeps of them.
//!
//! An offer is **open** until it is accepted, declined (challenges), cancelled or it expires.
//! Accepting is two steps, each atomic in the store: the offer turns **accepting** (by one
//! player, under one accept request id: a second acceptor is refused), then, once its match
//! exists, **accepted** with the match id, its players' matches found and the match filed to be
//! followed for its outcome — the same records a pool pairing writes.
//!
//! The first step is a committed pairing for both players: it is refused while either holds an
//! unacknowledged match found or is being matched (a pool pairing, or another offer's accept),
//! and it takes both out of any pool and marks them being matched (waves skip them, Join
//! answers `MATCHING`) until the second step, or the release of an accept whose match the
//! match service refused. The marks never lapse while the offer is accepting: an accept that
//! went without a heartbeat for the stale time ([`crate::config::Tuning::accept_stale_ms`]) is
//! resumed (its acceptor, its match request id), never replaced, by the next accept or by a
//! replica's resumer.
//!
//! # Stored form
//!
//! The terms ([`Terms::encode`]): the packed list (as [`crate::found`] packs) of variant name,
//! canonical time control, rated (`1`/`0`), colour (`random`, `white`, `black`), the range's
//! ends (both empty without one), then each rule option as name and value.

use crate::found::{MatchFound, pack, unpack};
use crate::pool::Pool;
use arbiter_core::Variant;
use arbiter_core::clock::TimeControl;
use arbiter_core::pairing::wave::RatingRange;
use sha2::{Digest, Sha256};

/// A challenge (to one player) or a seek (to the lobby).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OfferKind {
    /// From one player to another.
    Challenge,
    /// An open offer in the lobby.
    Seek,
}

impl OfferKind {
    /// The short name used in store keys and ids (`ch`, `sk`).
    pub fn tag(self) -> &'static str {
        match self {
            OfferKind::Challenge => "ch",
            OfferKind::Seek => "sk",
        }
    }
}

/// The colour the offering player takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColorChoice {
    /// Decided at random (by the offer's id: the same on every retry).
    Random,
    /// The offering player plays White.
    White,
    /// The offering player plays Black.
    Black,
}

impl ColorChoice {
    fn name(self) -> &'static str {
        match self {
            ColorChoice::Random => "random",
            ColorChoice::White => "white",
            ColorChoice::Black => "black",
        }
    }

    fn from_name(text: &str) -> Option<ColorChoice> {
        Some(match text {
            "random" => ColorChoice::Random,
            "white" => ColorChoice::White,
            "black" => ColorChoice::Black,
            _ => return None,
        })
    }
}

/// Why a challenge was declined (lichess's reasons).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum DeclineReason {
    Generic,
    Later,
    TooFast,
    TooSlow,
    TimeControl,
    Rated,
    Casual,
    Standard,
    Variant,
    NoBot,
    OnlyBot,
}

impl DeclineReason {
    /// Every reason, in the order of their wire numbers (1, 2, …).
    pub const ALL: [DeclineReason; 11] = [
        DeclineReason::Generic,
        DeclineReason::Later,
        DeclineReason::TooFast,
        DeclineReason::TooSlow,
        DeclineReason::TimeControl,
        DeclineReason::Rated,
        DeclineReason::Casual,
        DeclineReason::Standard,
        DeclineReason::Variant,
        DeclineReason::NoBot,
        DeclineReason::OnlyBot,
    ];

    /// The stored code (`1` … `11`, as the wire numbers).
    pub fn code(self) -> u8 {
        let i = DeclineReason::ALL
            .iter()
            .position(|r| *r == self)
            .unwrap_or(0);
        u8::try_from(i + 1).unwrap_or(1)
    }

    /// The reason of a stored code.
    pub fn from_code(code: u8) -> Option<DeclineReason> {
        DeclineReason::ALL
            .get(usize::from(code).checked_sub(1)?)
            .copied()
    }
}

/// Where an offer stands (as stored: an open offer past its expiry reads as [`OfferState::Expired`]
/// through [`Offer::state_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OfferState {
    /// Waiting for an acceptor.
    Open,
    /// Accepted; the match is being created.
    Accepting,
    /// Accepted; the match exists.
    Accepted,
    /// Declined by the challenged player.
    Declined,
    /// Cancelled by the offering player.
    Cancelled,
    /// Not accepted in time.
    Expired,
}

impl OfferState {
    /// The stored name.
    pub fn name(self) -> &'static str {
        match self {
            OfferState::Open => "open",
            OfferState::Accepting => "accepting",
            OfferState::Accepted => "accepted",
            OfferState::Declined => "declined",
            OfferState::Cancelled => "cancelled",
            OfferState::Expired => "expired",
        }
    }

    /// The state of a stored name.
    pub fn from_name(text: &str) -> Option<OfferState> {
        Some(match text {
            "open" => OfferState::Open,
            "accepting" => OfferState::Accepting,
            "accepted" => OfferState::Accepted,
            "declined" => OfferState::Declined,
            "cancelled" => OfferState::Cancelled,
            "expired" => OfferState::Expired,
            _ => return None,
        })
    }
}

/// What is offered: the game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Terms {
    /// The game.
    pub variant: Variant,
    /// The time control.
    pub control: TimeControl,
    /// Rated or casual.
    pub rated: bool,
    /// The offering player's colour.
    pub color: ColorChoice,
    /// Seeks: the ratings an acceptor must have.
    pub range: Option<RatingRange>,
    /// The variant's rule options (name, value).
    pub rules: Vec<(String, String)>,
}

impl Terms {
    /// The pool these terms would be (its name files the match's ratings, as a pool's).
    pub fn pool(&self) -> Pool {
        Pool {
            variant: self.variant,
            control: self.control.clone(),
            rated: self.rated,
        }
    }

    /// The stored form (see the module documentation); also what two creations with one
    /// request id are compared by.
    pub fn encode(&self) -> String {
        let mut items = vec![
            self.variant.name().to_owned(),
            self.control.to_string(),
            if self.rated { "1" } else { "0" }.to_owned(),
            self.color.name().to_owned(),
            self.range.map_or(String::new(), |r| r.min.to_string()),
            self.range.map_or(String::new(), |r| r.max.to_string()),
        ];
        for (name, value) in &self.rules {
            items.push(name.clone());
            items.push(value.clone());
        }
        pack(&items)
    }

    /// Reads [`Terms::encode`]'s form.
    pub fn decode(text: &str) -> Option<Terms> {
        let items = unpack(text)?;
        if items.len() < 6 || items.len() % 2 != 0 {
            return None;
        }
        let range = match (items[4].as_str(), items[5].as_str()) {
            ("", "") => None,
            (min, max) => Some(RatingRange {
                min: min.parse().ok()?,
                max: max.parse().ok()?,
            }),
        };
        Some(Terms {
            variant: items[0].parse().ok()?,
            control: TimeControl::parse(&items[1]).ok()?,
            rated: match items[2].as_str() {
                "1" => true,
                "0" => false,
                _ => return None,
            },
            color: ColorChoice::from_name(&items[3])?,
            range,
            rules: items[6..]
                .chunks_exact(2)
                .map(|c| (c[0].clone(), c[1].clone()))
                .collect(),
        })
    }
}

/// A challenge or a seek as the store keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offer {
    /// Challenge or seek.
    pub kind: OfferKind,
    /// The id (`ch-…`, `sk-…`).
    pub id: String,
    /// The offering player (challenger, seeker).
    pub owner: String,
    /// Challenges: the challenged player.
    pub target: Option<String>,
    /// The game.
    pub terms: Terms,
    /// The owner's rating in the terms' variant and speed when the offer was made.
    pub rating: i32,
    /// The stored state (see [`Offer::state_at`]).
    pub state: OfferState,
    /// Declined challenges: why.
    pub reason: Option<DeclineReason>,
    /// Accepting or accepted: who accepted.
    pub acceptor: Option<String>,
    /// Accepting or accepted: the accept's request id.
    pub accept_request: Option<String>,
    /// Accepted: the match.
    pub match_id: Option<String>,
    /// Accepted: the acceptor's match found, as recorded (a retried accept answers it).
    pub found: Option<MatchFound>,
    /// When it was made (Unix ms, the store's time).
    pub created_at: u64,
    /// When an open offer expires (Unix ms, the store's time).
    pub expires_at: u64,
    /// When it last changed (Unix ms, the store's time).
    pub updated_at: u64,
}

impl Offer {
    /// The state at `now`: an open offer past its expiry is expired.
    pub fn state_at(&self, now: u64) -> OfferState {
        if self.state == OfferState::Open && now >= self.expires_at {
            OfferState::Expired
        } else {
            self.state
        }
    }

    /// The `CreateMatch` request id of the accept under way: derived from the offer, the
    /// acceptor and the accept's request id, so every retry of that accept (on any replica)
    /// asks for the same match, and another accept never does.
    pub fn match_request_id(&self) -> String {
        let mut h = Sha256::new();
        h.update(self.acceptor.as_deref().unwrap_or("").as_bytes());
        h.update([0x1f]);
        h.update(self.accept_request.as_deref().unwrap_or("").as_bytes());
        let hex = arbiter_kit::hex(&h.finalize()[..8]);
        format!("mm-{}-{hex}", self.id)
    }

    /// The players in seat order, [white, black], once accepted: the owner's colour choice,
    /// a random choice decided by the offer's id (the same on every retry).
    pub fn seating(&self, acceptor: &str) -> [String; 2] {
        let owner_white = match self.terms.color {
            ColorChoice::White => true,
            ColorChoice::Black => false,
            ColorChoice::Random => Sha256::digest(self.id.as_bytes())[0] & 1 == 0,
        };
        if owner_white {
            [self.owner.clone(), acceptor.to_owned()]
        } else {
            [acceptor.to_owned(), self.owner.clone()]
        }
    }
}

/// A new offer for the store to file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewOffer {
    /// Challenge or seek.
    pub kind: OfferKind,
    /// A fresh id (unused unless the offer is new).
    pub id: String,
    /// The offering player.
    pub owner: String,
    /// Challenges: the challenged player.
    pub target: Option<String>,
    /// The game.
    pub terms: Terms,
    /// The owner's rating now.
    pub rating: i32,
    /// The creation's request id (scoped to the owner).
    pub request_id: String,
    /// How long it stays open.
    pub lifetime_ms: u64,
}

impl NewOffer {
    /// What two creations with one request id are compared by: the kind, the challenged player
    /// and the terms.
    pub fn fingerprint(&self) -> String {
        pack(&[
            self.kind.tag().to_owned(),
            self.target.clone().unwrap_or_default(),
            self.terms.encode(),
        ])
    }

    /// The offer as filed at `now`.
    pub fn filed(&self, now: u64) -> Offer {
        Offer {
            kind: self.kind,
            id: self.id.clone(),
            owner: self.owner.clone(),
            target: self.target.clone(),
            terms: self.terms.clone(),
            rating: self.rating,
            state: OfferState::Open,
            reason: None,
            acceptor: None,
            accept_request: None,
            match_id: None,
            found: None,
            created_at: now,
            expires_at: now.saturating_add(self.lifetime_ms),
            updated_at: now,
        }
    }
}

/// The bounds a creation is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OfferLimits {
    /// Open offers of this kind per owner.
    pub per_owner: usize,
    /// Challenges: pending incoming challenges per challenged player.
    pub per_target: usize,
    /// Seeks: open seeks in the lobby.
    pub total: usize,
    /// Offers of this kind one owner may create per [`OfferLimits::window_ms`] (ended ones
    /// included: what bounds the ended offers the store remembers).
    pub created: usize,
    /// The window [`OfferLimits::created`] counts in (ms; a fixed window from the owner's
    /// first creation in it).
    pub window_ms: u64,
}

/// What filing a new offer did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Created {
    /// Filed now.
    New(Offer),
    /// The request id was used before with the same terms: that offer (as it now stands).
    Existing(Offer),
    /// The request id was used before with other terms: nothing changed.
    Conflict,
    /// The owner holds their maximum of open offers.
    OwnerFull,
    /// The owner created their maximum of offers of this kind in the current window.
    OwnerRate,
    /// The challenged player holds their maximum of pending challenges.
    TargetFull,
    /// The lobby holds its maximum of seeks.
    LobbyFull,
}

/// What an accept's first step did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Accepting {
    /// The offer is now accepting under this acceptor and request id.
    Started(Offer),
    /// The same acceptor and request id accepted before: the offer as it stands (accepting or
    /// accepted).
    Again(Offer),
    /// Another accept under way went without a heartbeat for the stale time (its replica died,
    /// or its caller gave up after a failure that may pass): the same accept (its acceptor,
    /// its request id) is now continued by the caller, with a fresh heartbeat. It is never
    /// replaced.
    Resumed(Offer),
    /// Not open (another acceptor's, declined, cancelled, expired): the offer as it stands.
    NotOpen(Offer),
    /// This player (the owner or the acceptor) holds an unacknowledged match found or is being
    /// matched (a pool pairing, or another offer's accept): nothing changed.
    Busy(String),
    /// No such offer.
    Missing,
}

/// What ending an offer (decline, cancel) did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ended {
    /// Ended now, or ended the same way before: the offer as it stands.
    Done(Offer),
    /// The player is not the one who may end it this way: nothing changed.
    NotYours(Offer),
    /// Not open: the offer as it stands.
    NotOpen(Offer),
    /// No such offer.
    Missing,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms() -> Terms {
        Terms {
            variant: Variant::Byzantine,
            control: TimeControl::parse("3|2").unwrap(),
            rated: true,
            color: ColorChoice::Black,
            range: Some(RatingRange { min: -5, max: 1800 }),
            rules: vec![("stalemate".into(), "loses".into())],
        }
    }

    #[test]
    fn terms_round_trip_and_bad_ones_are_refused() {
        let t = terms();
        assert_eq!(Terms::decode(&t.encode()), Some(t.clone()));
        let bare = Terms {
            range: None,
            rules: Vec::new(),
            color: ColorChoice::Random,
            ..t
        };
        assert_eq!(Terms::decode(&bare.encode()), Some(bare));
        assert_eq!(Terms::decode("3:abc"), None);
        assert_eq!(
            Terms::decode(&pack(&["chess", "3+2", "2", "white", "", ""])),
            None
        );
    }

    #[test]
    fn decline_codes_round_trip() {
        for r in DeclineReason::ALL {
            assert_eq!(DeclineReason::from_code(r.code()), Some(r));
        }
        assert_eq!(DeclineReason::from_code(0), None);
        assert_eq!(DeclineReason::from_code(12), None);
    }

    #[test]
    fn seating_and_request_ids_are_stable() {
        let mut o = Offer {
            kind: OfferKind::Seek,
            id: "sk-1".into(),
            owner: "ann".into(),
            target: None,
            terms: terms(),
            rating: 1500,
            state: OfferState::Open,
            reason: None,
            acceptor: Some("bob".into()),
            accept_request: Some("r1".into()),
            match_id: None,
            found: None,
            created_at: 1,
            expires_at: 10,
            updated_at: 1,
        };
        assert_eq!(o.seating("bob"), ["bob".to_owned(), "ann".to_owned()]);
        assert_eq!(o.state_at(9), OfferState::Open);
        assert_eq!(o.state_at(10), OfferState::Expired);
        let id = o.match_request_id();
        assert_eq!(id, o.match_request_id());
        o.accept_request = Some("r2".into());
        assert_ne!(id, o.match_request_id());
        o.terms.color = ColorChoice::Random;
        let seats = o.seating("bob");
        assert_eq!(seats, o.seating("bob"));
        assert!(seats.contains(&"ann".to_owned()) && seats.contains(&"bob".to_owned()));
    }
}
