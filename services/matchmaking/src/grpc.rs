//! The tonic handlers of `arbiter.matchmaking.v1.MatchmakingService`: decode, call the
//! [`Matchmaker`], encode. The only place (with [`crate::backend::GrpcMatches`], the match
//! service's client) where matchmaking's own types meet the protobuf messages: the conversions
//! both ways live here (but for the reader of found matches stored prost-encoded by earlier
//! versions, [`crate::legacy`]).

use crate::backend::MatchBackend;
use crate::domain::{
    ChallengeEvent, EloImport, GlickoImport, HistoryPage, ImportEntry, ImportOutcome, ImportReport,
    JoinEvent, JoinSpec, MAX_IMPORT_ENTRIES, Matchmaker, OfferSpec, QueueStatus, Rating,
    RatingChange,
};
use crate::error::{MatchmakingError, PARTNER_NOT_ALLOWED};
use crate::found::{FoundSeat, MatchFound};
use crate::offer::{ColorChoice, DeclineReason, Offer, OfferKind, OfferState, Terms};
use crate::pool::Pool;
use crate::ratings::{ChangeKind, System};
use crate::store::PoolStore;
use arbiter_core::Variant;
use arbiter_core::clock::{Speed, TimeControl};
use arbiter_core::pairing::wave::RatingRange;
use arbiter_kit::convert::{variant, variant_to_proto};
use arbiter_proto::common::v1 as common;
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

fn color_to_proto(c: ColorChoice) -> i32 {
    (match c {
        ColorChoice::Random => pb::ColorChoice::Random,
        ColorChoice::White => pb::ColorChoice::White,
        ColorChoice::Black => pb::ColorChoice::Black,
    }) as i32
}

fn rules_to_proto(rules: &[(String, String)]) -> Vec<common::RuleOption> {
    rules
        .iter()
        .map(|(name, value)| common::RuleOption {
            name: name.clone(),
            value: value.clone(),
        })
        .collect()
}

/// A challenge on the wire.
pub fn challenge_to_proto(o: Offer) -> pb::Challenge {
    let state = match o.state {
        OfferState::Open => pb::ChallengeState::Pending,
        OfferState::Accepting => pb::ChallengeState::Accepting,
        OfferState::Accepted => pb::ChallengeState::Accepted,
        OfferState::Declined => pb::ChallengeState::Declined,
        OfferState::Cancelled => pb::ChallengeState::Cancelled,
        OfferState::Expired => pb::ChallengeState::Expired,
    };
    pb::Challenge {
        challenge_id: o.id,
        challenger_id: o.owner,
        challenged_id: o.target.unwrap_or_default(),
        variant: variant_to_proto(o.terms.variant),
        rules: rules_to_proto(&o.terms.rules),
        time_control: o.terms.control.to_string(),
        rated: o.terms.rated,
        color: color_to_proto(o.terms.color),
        state: state as i32,
        decline_reason: o.reason.map_or(0, |r| i32::from(r.code())),
        match_id: o.match_id.unwrap_or_default(),
        created_at_ms: o.created_at,
        expires_at_ms: o.expires_at,
    }
}

/// A seek on the wire.
pub fn seek_to_proto(o: Offer) -> pb::Seek {
    let state = match o.state {
        OfferState::Open => pb::SeekState::Open,
        OfferState::Accepting => pb::SeekState::Accepting,
        OfferState::Accepted => pb::SeekState::Accepted,
        OfferState::Declined | OfferState::Cancelled => pb::SeekState::Cancelled,
        OfferState::Expired => pb::SeekState::Expired,
    };
    pb::Seek {
        seek_id: o.id,
        player_id: o.owner,
        variant: variant_to_proto(o.terms.variant),
        rules: rules_to_proto(&o.terms.rules),
        time_control: o.terms.control.to_string(),
        rated: o.terms.rated,
        color: color_to_proto(o.terms.color),
        range: o.terms.range.map(|r| pb::RatingRange {
            min: r.min,
            max: r.max,
        }),
        rating: o.rating,
        state: state as i32,
        match_id: o.match_id.unwrap_or_default(),
        created_at_ms: o.created_at,
        expires_at_ms: o.expires_at,
    }
}

impl From<ChallengeEvent> for pb::WatchChallengesResponse {
    fn from(e: ChallengeEvent) -> pb::WatchChallengesResponse {
        let kind = match e.kind {
            OfferState::Open | OfferState::Accepting => pb::ChallengeEventKind::Created,
            OfferState::Accepted => pb::ChallengeEventKind::Accepted,
            OfferState::Declined => pb::ChallengeEventKind::Declined,
            OfferState::Cancelled => pb::ChallengeEventKind::Cancelled,
            OfferState::Expired => pb::ChallengeEventKind::Expired,
        };
        pb::WatchChallengesResponse {
            kind: kind as i32,
            challenge: Some(challenge_to_proto(e.challenge)),
            match_found: e.found.map(Into::into),
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
/// The longest request id, challenge id or seek id, in bytes.
pub const MAX_ID_BYTES: usize = 128;
/// The most rule options of a challenge or seek.
pub const MAX_RULES: usize = 8;
/// The longest rule option name or value, in bytes.
pub const MAX_RULE_BYTES: usize = 64;
/// Seeks in a lobby page unless asked otherwise.
pub const DEFAULT_PAGE_SIZE: usize = 50;
/// The most seeks in one lobby page.
pub const MAX_PAGE_SIZE: usize = 200;
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
    let control = time_control(&r.time_control)?;
    let range = rating_range(r.range.as_ref())?;
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

/// Checks a time control's text and reads it.
fn time_control(text: &str) -> Result<TimeControl, MatchmakingError> {
    if text.is_empty() {
        return Err(MatchmakingError::invalid(
            "time_control",
            "time_control is required",
        ));
    }
    if text.len() > MAX_TIME_CONTROL_BYTES {
        return Err(MatchmakingError::invalid(
            "time_control",
            format!(
                "time_control is {} bytes; at most {MAX_TIME_CONTROL_BYTES}",
                text.len()
            ),
        ));
    }
    TimeControl::parse(text).map_err(|e| MatchmakingError::invalid("time_control", e.to_string()))
}

/// Checks a rating range.
fn rating_range(range: Option<&pb::RatingRange>) -> Result<Option<RatingRange>, MatchmakingError> {
    let Some(range) = range else {
        return Ok(None);
    };
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
    Ok(Some(RatingRange {
        min: range.min,
        max: range.max,
    }))
}

/// Checks an id of the API (a request id, a challenge or seek id): 1 to 128 bytes, no control
/// characters.
fn api_id(value: &str, field: &str) -> Result<String, MatchmakingError> {
    if value.len() > MAX_ID_BYTES {
        return Err(MatchmakingError::invalid(
            field,
            format!("{field} is {} bytes; at most {MAX_ID_BYTES}", value.len()),
        ));
    }
    player_id(value, field)
}

/// Checks the terms of a challenge or seek.
fn terms(
    variant_value: i32,
    rules: &[common::RuleOption],
    control: &str,
    rated: bool,
    color: i32,
    range: Option<&pb::RatingRange>,
) -> Result<Terms, MatchmakingError> {
    let variant: Variant = variant(variant_value, "variant")
        .map_err(|e| MatchmakingError::invalid("variant", e.description()))?;
    if variant == Variant::Bughouse {
        return Err(MatchmakingError::invalid(
            "variant",
            "bughouse matches have four players: join a bughouse pool instead",
        ));
    }
    if rules.len() > MAX_RULES {
        return Err(MatchmakingError::invalid(
            "rules",
            format!("{} rule options; at most {MAX_RULES}", rules.len()),
        ));
    }
    let mut options = Vec::with_capacity(rules.len());
    for (i, r) in rules.iter().enumerate() {
        for text in [&r.name, &r.value] {
            if text.is_empty() || text.len() > MAX_RULE_BYTES || text.chars().any(char::is_control)
            {
                return Err(MatchmakingError::invalid(
                    format!("rules[{i}]"),
                    format!(
                        "a rule option's name and value are 1 to {MAX_RULE_BYTES} bytes without control characters"
                    ),
                ));
            }
        }
        options.push((r.name.clone(), r.value.clone()));
    }
    arbiter_core::AnyPosition::with_rules(
        variant,
        None,
        &arbiter_core::RuleOptions(options.clone()),
    )
    .map_err(|e| MatchmakingError::invalid("rules", e.to_string()))?;
    let control = time_control(control)?;
    let color = match pb::ColorChoice::try_from(color) {
        Ok(pb::ColorChoice::Unspecified | pb::ColorChoice::Random) => ColorChoice::Random,
        Ok(pb::ColorChoice::White) => ColorChoice::White,
        Ok(pb::ColorChoice::Black) => ColorChoice::Black,
        Err(_) => {
            return Err(MatchmakingError::invalid(
                "color",
                format!("unknown color choice {color}"),
            ));
        }
    };
    let range = rating_range(range)?;
    if range.is_some() && !rated {
        return Err(MatchmakingError::invalid(
            "range",
            "only rated seeks take a rating range",
        ));
    }
    Ok(Terms {
        variant,
        control,
        rated,
        color,
        range,
        rules: options,
    })
}

/// Decodes and checks a challenge.
///
/// # Errors
/// `INVALID_ARGUMENT` naming the field.
pub fn challenge_spec(r: &pb::CreateChallengeRequest) -> Result<OfferSpec, MatchmakingError> {
    let request_id = api_id(&r.request_id, "request_id")?;
    let owner = player_id(&r.challenger_id, "challenger_id")?;
    let target = player_id(&r.challenged_id, "challenged_id")?;
    if owner == target {
        return Err(MatchmakingError::invalid(
            "challenged_id",
            "a player cannot challenge themselves",
        ));
    }
    let terms = terms(r.variant, &r.rules, &r.time_control, r.rated, r.color, None)?;
    Ok(OfferSpec {
        kind: OfferKind::Challenge,
        owner,
        target: Some(target),
        terms,
        request_id,
    })
}

/// Decodes and checks a seek.
///
/// # Errors
/// `INVALID_ARGUMENT` naming the field.
pub fn seek_spec(r: &pb::CreateSeekRequest) -> Result<OfferSpec, MatchmakingError> {
    let request_id = api_id(&r.request_id, "request_id")?;
    let owner = player_id(&r.player_id, "player_id")?;
    let terms = terms(
        r.variant,
        &r.rules,
        &r.time_control,
        r.rated,
        r.color,
        r.range.as_ref(),
    )?;
    Ok(OfferSpec {
        kind: OfferKind::Seek,
        owner,
        target: None,
        terms,
        request_id,
    })
}

/// Reads a lobby page token (`<expiry>.<seek id>`, as [`page_token`] writes it).
fn page_after(token: &str) -> Result<Option<(u64, String)>, MatchmakingError> {
    if token.is_empty() {
        return Ok(None);
    }
    let bad = || MatchmakingError::invalid("page_token", "not a page token of ListSeeks");
    if token.len() > MAX_ID_BYTES + 24 {
        return Err(bad());
    }
    let (at, id) = token.split_once('.').ok_or_else(bad)?;
    let at = at.parse().map_err(|_| bad())?;
    Ok(Some((at, api_id(id, "page_token")?)))
}

/// The token of the page after `(expiry, id)`.
fn page_token(next: Option<(u64, String)>) -> String {
    next.map_or(String::new(), |(at, id)| format!("{at}.{id}"))
}

fn decline_reason(value: i32) -> Result<DeclineReason, MatchmakingError> {
    if value == 0 {
        return Ok(DeclineReason::Generic);
    }
    u8::try_from(value)
        .ok()
        .and_then(DeclineReason::from_code)
        .ok_or_else(|| {
            MatchmakingError::invalid("reason", format!("unknown decline reason {value}"))
        })
}

/// The lowest imported rating (Glicko-2 or Elo).
pub const MIN_IMPORTED_RATING: f64 = 100.0;
/// The highest imported rating (Glicko-2 or Elo).
pub const MAX_IMPORTED_RATING: f64 = 4_000.0;
/// The highest imported Glicko-2 deviation (a newcomer's).
pub const MAX_IMPORTED_DEVIATION: f64 = 350.0;

/// Reads a speed category by name (`blitz`).
fn speed(name: &str, field: &str) -> Result<Speed, MatchmakingError> {
    Speed::ALL
        .into_iter()
        .find(|s| s.name() == name)
        .ok_or_else(|| {
            MatchmakingError::invalid(
                field,
                format!(
                    "{field} must be bullet, blitz, rapid, classical or correspondence, not {:?}",
                    name.chars().take(32).collect::<String>()
                ),
            )
        })
}

/// Checks one import entry (`at` names it: `entries[3]`).
fn import_entry(e: &pb::RatingImportEntry, at: &str) -> Result<ImportEntry, MatchmakingError> {
    let field = |f: &str| format!("{at}.{f}");
    let player = player_id(&e.player_id, &field("player_id"))?;
    let variant = variant(e.variant, "variant")
        .map_err(|err| MatchmakingError::invalid(field("variant"), err.description()))?;
    let speed = speed(&e.speed, &field("speed"))?;
    let rating_in_range = |x: f64, name: &str| {
        if (MIN_IMPORTED_RATING..=MAX_IMPORTED_RATING).contains(&x) {
            Ok(())
        } else {
            Err(MatchmakingError::invalid(
                field(name),
                format!(
                    "{} is {x}; a rating lies within {MIN_IMPORTED_RATING}–{MAX_IMPORTED_RATING}",
                    field(name)
                ),
            ))
        }
    };
    let glicko = match &e.glicko {
        None => None,
        Some(g) => {
            rating_in_range(g.rating, "glicko.rating")?;
            if !(g.deviation > 0.0 && g.deviation <= MAX_IMPORTED_DEVIATION) {
                return Err(MatchmakingError::invalid(
                    field("glicko.deviation"),
                    format!(
                        "{} is {}; a deviation is greater than 0 and at most {MAX_IMPORTED_DEVIATION}",
                        field("glicko.deviation"),
                        g.deviation
                    ),
                ));
            }
            if !(g.volatility > 0.0 && g.volatility < 1.0) {
                return Err(MatchmakingError::invalid(
                    field("glicko.volatility"),
                    format!(
                        "{} is {}; a volatility lies strictly between 0 and 1",
                        field("glicko.volatility"),
                        g.volatility
                    ),
                ));
            }
            Some(GlickoImport {
                rating: g.rating,
                deviation: g.deviation,
                volatility: g.volatility,
            })
        }
    };
    let elo = match &e.elo {
        None => None,
        Some(x) => {
            rating_in_range(f64::from(x.rating), "elo.rating")?;
            Some(EloImport {
                rating: u16::try_from(x.rating)
                    .map_err(|_| MatchmakingError::invalid(field("elo.rating"), "out of range"))?,
                games: x.games,
                reached_2400: x.reached_2400,
            })
        }
    };
    if glicko.is_none() && elo.is_none() {
        return Err(MatchmakingError::invalid(
            field("glicko"),
            format!("{at} imports no rating: give glicko, elo or both"),
        ));
    }
    Ok(ImportEntry {
        player,
        variant,
        speed,
        glicko,
        elo,
    })
}

/// Checks an import: its request id, 1 to [`MAX_IMPORT_ENTRIES`] entries, each valid, at most
/// one per player, variant and speed.
///
/// # Errors
/// `INVALID_ARGUMENT` naming the field (`entries[3].glicko.deviation`).
pub fn import_spec(
    r: &pb::ImportRatingsRequest,
) -> Result<(String, Vec<ImportEntry>), MatchmakingError> {
    let request = api_id(&r.request_id, "request_id")?;
    if r.entries.is_empty() || r.entries.len() > MAX_IMPORT_ENTRIES {
        return Err(MatchmakingError::invalid(
            "entries",
            format!(
                "an import has 1 to {MAX_IMPORT_ENTRIES} entries, not {}",
                r.entries.len()
            ),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    let mut entries = Vec::with_capacity(r.entries.len());
    for (i, e) in r.entries.iter().enumerate() {
        let at = format!("entries[{i}]");
        let entry = import_entry(e, &at)?;
        if !seen.insert((entry.player.clone(), entry.variant, entry.speed)) {
            return Err(MatchmakingError::invalid(
                format!("{at}.player_id"),
                format!("{at} repeats an earlier entry's player, variant and speed"),
            ));
        }
        entries.push(entry);
    }
    Ok((request, entries))
}

impl From<ImportReport> for pb::ImportRatingsResponse {
    fn from(r: ImportReport) -> pb::ImportRatingsResponse {
        pb::ImportRatingsResponse {
            outcomes: r
                .outcomes
                .into_iter()
                .map(|o| match o {
                    ImportOutcome::Imported => pb::ImportOutcome::Imported,
                    ImportOutcome::SkippedExisting => pb::ImportOutcome::SkippedExisting,
                    ImportOutcome::Overwritten => pb::ImportOutcome::Overwritten,
                } as i32)
                .collect(),
            replayed: r.replayed,
        }
    }
}

/// A history change as the API shows it (only `system`'s part, when given).
fn change_to_proto(c: RatingChange, system: Option<System>) -> pb::RatingChange {
    let RatingChange { change, before, .. } = c;
    let after = change.after;
    let glicko = (change.glicko && system != Some(System::Elo)).then_some(pb::GlickoChange {
        rating_before: before.glicko.rating,
        rating_after: after.glicko.rating,
        deviation_before: before.glicko.deviation,
        deviation_after: after.glicko.deviation,
        volatility_before: before.glicko.volatility,
        volatility_after: after.glicko.volatility,
    });
    let elo = (change.elo && system != Some(System::Glicko2)).then_some(pb::EloChange {
        rating_before: u32::from(before.elo.rating),
        rating_after: u32::from(after.elo.rating),
        games_before: before.elo.games,
        games_after: after.elo.games,
    });
    pb::RatingChange {
        kind: match change.kind {
            ChangeKind::Match => pb::RatingChangeKind::Match,
            ChangeKind::Import => pb::RatingChangeKind::Import,
        } as i32,
        at_ms: change.at_ms,
        match_id: change.match_id,
        opponent_ids: change.opponents,
        score_quarters: change.score_quarters,
        glicko,
        elo,
        first: change.before.is_none(),
    }
}

/// Reads a rating history page token (a change's sequence number).
fn history_after(token: &str) -> Result<Option<u64>, MatchmakingError> {
    if token.is_empty() {
        return Ok(None);
    }
    token
        .parse::<u64>()
        .ok()
        .filter(|&n| n > 0 && token.len() <= 20)
        .map(Some)
        .ok_or_else(|| {
            MatchmakingError::invalid("page_token", "not a page token of GetRatingHistory")
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

    async fn import_ratings(
        &self,
        request: Request<pb::ImportRatingsRequest>,
    ) -> Reply<pb::ImportRatingsResponse> {
        let r = request.get_ref();
        let (request_id, entries) = import_spec(r)?;
        let report = self
            .inner
            .import_ratings(&request_id, &entries, r.overwrite)
            .await;
        reply(report.map(Into::into))
    }

    async fn get_rating_history(
        &self,
        request: Request<pb::GetRatingHistoryRequest>,
    ) -> Reply<pb::GetRatingHistoryResponse> {
        let r = request.get_ref();
        let player = player_id(&r.player_id, "player_id")?;
        let variant = variant(r.variant, "variant")
            .map_err(|e| MatchmakingError::invalid("variant", e.description()))?;
        let speed = speed(&r.speed, "speed")?;
        let system = match pb::RatingSystem::try_from(r.system) {
            Ok(pb::RatingSystem::Unspecified) => None,
            Ok(pb::RatingSystem::Glicko2) => Some(System::Glicko2),
            Ok(pb::RatingSystem::Elo) => Some(System::Elo),
            Err(_) => {
                return Err(MatchmakingError::invalid(
                    "system",
                    format!("unknown rating system {}", r.system),
                )
                .into());
            }
        };
        let size = match usize::try_from(r.page_size).unwrap_or(MAX_PAGE_SIZE) {
            0 => DEFAULT_PAGE_SIZE,
            n => n.min(MAX_PAGE_SIZE),
        };
        let after = history_after(&r.page_token)?;
        let page = self
            .inner
            .rating_history(&player, variant, speed, system, after, size)
            .await;
        reply(page.map(|HistoryPage { changes, next }| {
            pb::GetRatingHistoryResponse {
                changes: changes
                    .into_iter()
                    .map(|c| change_to_proto(c, system))
                    .collect(),
                next_page_token: next.map_or(String::new(), |n| n.to_string()),
            }
        }))
    }

    type WatchChallengesStream =
        Pin<Box<dyn Stream<Item = Result<pb::WatchChallengesResponse, Status>> + Send>>;

    async fn create_challenge(
        &self,
        request: Request<pb::CreateChallengeRequest>,
    ) -> Reply<pb::CreateChallengeResponse> {
        let spec = challenge_spec(request.get_ref())?;
        let challenge = self.inner.create_offer(spec).await;
        reply(challenge.map(|c| pb::CreateChallengeResponse {
            challenge: Some(challenge_to_proto(c)),
        }))
    }

    async fn accept_challenge(
        &self,
        request: Request<pb::AcceptChallengeRequest>,
    ) -> Reply<pb::AcceptChallengeResponse> {
        let r = request.get_ref();
        let id = api_id(&r.challenge_id, "challenge_id")?;
        let player = player_id(&r.player_id, "player_id")?;
        let request_id = api_id(&r.request_id, "request_id")?;
        let accepted = self
            .inner
            .accept_offer(OfferKind::Challenge, &id, &player, &request_id)
            .await;
        reply(accepted.map(|(c, found)| pb::AcceptChallengeResponse {
            challenge: Some(challenge_to_proto(c)),
            match_found: Some(found.into()),
        }))
    }

    async fn decline_challenge(
        &self,
        request: Request<pb::DeclineChallengeRequest>,
    ) -> Reply<pb::DeclineChallengeResponse> {
        let r = request.get_ref();
        let id = api_id(&r.challenge_id, "challenge_id")?;
        let player = player_id(&r.player_id, "player_id")?;
        let reason = decline_reason(r.reason)?;
        let declined = self
            .inner
            .end_offer(OfferKind::Challenge, &id, &player, Some(reason))
            .await;
        reply(declined.map(|c| pb::DeclineChallengeResponse {
            challenge: Some(challenge_to_proto(c)),
        }))
    }

    async fn cancel_challenge(
        &self,
        request: Request<pb::CancelChallengeRequest>,
    ) -> Reply<pb::CancelChallengeResponse> {
        let r = request.get_ref();
        let id = api_id(&r.challenge_id, "challenge_id")?;
        let player = player_id(&r.player_id, "player_id")?;
        let cancelled = self
            .inner
            .end_offer(OfferKind::Challenge, &id, &player, None)
            .await;
        reply(cancelled.map(|c| pb::CancelChallengeResponse {
            challenge: Some(challenge_to_proto(c)),
        }))
    }

    async fn get_challenge(
        &self,
        request: Request<pb::GetChallengeRequest>,
    ) -> Reply<pb::GetChallengeResponse> {
        let id = api_id(&request.get_ref().challenge_id, "challenge_id")?;
        let challenge = self.inner.offer(OfferKind::Challenge, &id).await;
        reply(challenge.map(|c| pb::GetChallengeResponse {
            challenge: Some(challenge_to_proto(c)),
        }))
    }

    async fn watch_challenges(
        &self,
        request: Request<pb::WatchChallengesRequest>,
    ) -> Reply<Self::WatchChallengesStream> {
        let player = player_id(&request.get_ref().player_id, "player_id")?;
        let ticket = self.inner.open_watch(&player)?;
        let (tx, rx) = tokio::sync::mpsc::channel(32);
        let inner = Arc::clone(&self.inner);
        let shutdown = self.shutting_down.clone();
        tokio::spawn(async move { inner.watch_challenges(ticket, tx, shutdown).await });
        let events = ReceiverStream::new(rx).map(|event| {
            event
                .map(pb::WatchChallengesResponse::from)
                .map_err(Status::from)
        });
        Ok(Response::new(Box::pin(events)))
    }

    async fn create_seek(
        &self,
        request: Request<pb::CreateSeekRequest>,
    ) -> Reply<pb::CreateSeekResponse> {
        let spec = seek_spec(request.get_ref())?;
        let seek = self.inner.create_offer(spec).await;
        reply(seek.map(|s| pb::CreateSeekResponse {
            seek: Some(seek_to_proto(s)),
        }))
    }

    async fn list_seeks(
        &self,
        request: Request<pb::ListSeeksRequest>,
    ) -> Reply<pb::ListSeeksResponse> {
        let r = request.get_ref();
        let variant = if r.variant == 0 {
            None
        } else {
            Some(
                variant(r.variant, "variant")
                    .map_err(|e| MatchmakingError::invalid("variant", e.description()))?,
            )
        };
        let size = match usize::try_from(r.page_size) {
            Ok(0) => DEFAULT_PAGE_SIZE,
            Ok(n) if n <= MAX_PAGE_SIZE => n,
            _ => {
                return Err(MatchmakingError::invalid(
                    "page_size",
                    format!(
                        "page_size {} lies outside 0–{MAX_PAGE_SIZE} (0: {DEFAULT_PAGE_SIZE})",
                        r.page_size
                    ),
                )
                .into());
            }
        };
        let after = page_after(&r.page_token)?;
        let page = self.inner.list_seeks(variant, after, size).await;
        reply(page.map(|p| pb::ListSeeksResponse {
            seeks: p.seeks.into_iter().map(seek_to_proto).collect(),
            next_page_token: page_token(p.next),
        }))
    }

    async fn accept_seek(
        &self,
        request: Request<pb::AcceptSeekRequest>,
    ) -> Reply<pb::AcceptSeekResponse> {
        let r = request.get_ref();
        let id = api_id(&r.seek_id, "seek_id")?;
        let player = player_id(&r.player_id, "player_id")?;
        let request_id = api_id(&r.request_id, "request_id")?;
        let accepted = self
            .inner
            .accept_offer(OfferKind::Seek, &id, &player, &request_id)
            .await;
        reply(accepted.map(|(s, found)| pb::AcceptSeekResponse {
            seek: Some(seek_to_proto(s)),
            match_found: Some(found.into()),
        }))
    }

    async fn cancel_seek(
        &self,
        request: Request<pb::CancelSeekRequest>,
    ) -> Reply<pb::CancelSeekResponse> {
        let r = request.get_ref();
        let id = api_id(&r.seek_id, "seek_id")?;
        let player = player_id(&r.player_id, "player_id")?;
        let cancelled = self
            .inner
            .end_offer(OfferKind::Seek, &id, &player, None)
            .await;
        reply(cancelled.map(|s| pb::CancelSeekResponse {
            seek: Some(seek_to_proto(s)),
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
