//! CreateMatch: a new match from the platform's description, or the same one again for a retry.

use super::Matches;
use super::checks::{
    MAX_PLAYER_BYTES, MAX_REQUEST_ID_BYTES, MAX_START_BYTES, MAX_TIME_CONTROL_BYTES,
    check_match_id, check_text, printable,
};
use super::corrupt;
use crate::error::MatchError;
use crate::record::{BoardRecord, Record, pack};
use crate::seats::{random_bytes, random_hex};
use crate::store::{CreateResult, MatchStore};
use arbiter_core::bughouse::{BoardId, Match, Seat};
use arbiter_core::clock::{Clock, TimeControl};
use arbiter_core::{Color, GameState, Position, RuleOptions, Variant};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// A new match, as the platform describes it.
#[derive(Clone, Debug, Default)]
pub struct Creation {
    /// The idempotency key (may be empty).
    pub request_id: String,
    /// A chosen id (may be empty).
    pub match_id: String,
    /// The game (`Bughouse` for a two-board match).
    pub variant: Option<Variant>,
    /// The start position string (empty: the variant's start).
    pub start: String,
    /// Rule options.
    pub rules: RuleOptions,
    /// Player ids by seat.
    pub players: Vec<String>,
    /// The time control reference.
    pub time_control: String,
    /// Whether the players may take moves back (single boards, and clocks of one stage without
    /// a move count).
    pub takebacks: bool,
}

/// A created (or found again) match with its seat tokens.
#[derive(Clone, Debug)]
pub struct Created {
    /// The match.
    pub record: Arc<Record>,
    /// Each seat with its token, in creation order.
    pub seats: Vec<(Seat, String)>,
    /// False for a retried creation.
    pub created: bool,
}

/// The boards a match starts from, with what the record keeps of its start.
struct Start {
    /// The start position string as stored (canonical; BFEN for bughouse).
    text: String,
    /// What the creation asked for, for the retry digest: `text`, except for a Chess960 start
    /// drawn at random, where a retry must not depend on the draw.
    asked: String,
    boards: Vec<BoardRecord>,
    rules: RuleOptions,
    /// The side to move on each board.
    turns: Vec<Color>,
}

/// The time control of a creation (`None` without clocks), checked and parsed.
fn time_control(text: &str) -> Result<Option<TimeControl>, MatchError> {
    let text = text.trim();
    check_text("time_control", text, MAX_TIME_CONTROL_BYTES)?;
    if text.is_empty() {
        return Ok(None);
    }
    TimeControl::parse(text)
        .map(Some)
        .map_err(|e| MatchError::invalid("time_control", e.to_string()))
}

/// The player ids of a `variant` match, trimmed and checked: as many as it has seats, none
/// empty, none too long or with control characters, none twice.
fn players(variant: Variant, given: &[String]) -> Result<Vec<String>, MatchError> {
    let expected = if variant == Variant::Bughouse { 4 } else { 2 };
    if given.len() != expected {
        return Err(MatchError::invalid(
            "players",
            format!(
                "a {variant} match has {expected} players (found {})",
                given.len()
            ),
        ));
    }
    let mut players: Vec<String> = Vec::with_capacity(expected);
    for (i, p) in given.iter().enumerate() {
        let p = p.trim();
        if p.is_empty() {
            return Err(MatchError::invalid(
                "players",
                format!("player {} is empty", i + 1),
            ));
        }
        if p.len() > MAX_PLAYER_BYTES || !printable(p) {
            return Err(MatchError::invalid(
                "players",
                format!(
                    "player {} must be at most {MAX_PLAYER_BYTES} bytes without control \
                     characters",
                    i + 1
                ),
            ));
        }
        if players.iter().any(|q| q == p) {
            return Err(MatchError::invalid(
                "players",
                format!("player {} appears twice", i + 1),
            ));
        }
        players.push(p.to_owned());
    }
    Ok(players)
}

/// The two boards of a bughouse match from its BFEN (empty: the start), neither of them over.
fn bughouse_start(c: &Creation) -> Result<Start, MatchError> {
    let rules = c
        .rules
        .bughouse()
        .map_err(|e| MatchError::invalid("start.rules", arbiter_kit::error::quote(&e.0)))?;
    let m = if c.start.trim().is_empty() {
        Match::new()
    } else {
        Match::from_bfen(&c.start).map_err(|e| MatchError::invalid("start.text", e.to_string()))?
    };
    if m.board(BoardId::A).terminal().is_some() || m.board(BoardId::B).terminal().is_some() {
        return Err(MatchError::invalid(
            "start.text",
            "a board of this position has already ended",
        ));
    }
    let board = |b: BoardId| {
        let pos = m.board(b);
        let fen = pos.to_fen();
        // The board without its reserve part: the record keeps reserves apart.
        let (placement, rest) = fen.split_once(' ').unwrap_or((&fen, ""));
        let placement = placement.split('[').next().unwrap_or(placement);
        // With the threefold option, every board position since the start counts (a capture
        // or a pawn move does not make a bughouse board's past unreachable: pieces come back
        // as drops).
        let history = if rules.threefold {
            vec![pos.board_repetition_key()]
        } else {
            Vec::new()
        };
        BoardRecord::new(
            format!("{placement} {rest}"),
            [
                pos.reserves().letters(Color::White),
                pos.reserves().letters(Color::Black).to_ascii_lowercase(),
            ],
            history,
        )
    };
    Ok(Start {
        text: m.to_bfen(),
        asked: m.to_bfen(),
        boards: vec![board(BoardId::A), board(BoardId::B)],
        rules: RuleOptions(rules.options()),
        turns: vec![m.board(BoardId::A).turn(), m.board(BoardId::B).turn()],
    })
}

/// The Chess960 start positions a creation without a start draws from, uniformly.
const RANDOM_CHESS960: &str = "random";

/// The one board of a `variant` game from its position string and rule options, not over. A
/// Chess960 game without a start position begins from one drawn at random from the 960.
fn single_start(variant: Variant, c: &Creation) -> Result<Start, MatchError> {
    let drawn = variant == Variant::Chess960 && c.start.trim().is_empty();
    let text = if drawn {
        let n = u32::from_le_bytes(random_bytes::<4>()) % arbiter_core::chess::chess960::COUNT;
        n.to_string()
    } else {
        c.start.clone()
    };
    let pos = arbiter_kit::convert::position_from_parts(variant, &text, &c.rules, "start")
        .map_err(|e| match e.field() {
            Some("start.rules") => MatchError::invalid("start.rules", e.description()),
            _ => MatchError::invalid("start.text", e.description()),
        })?;
    let state = GameState::new(pos);
    if let Some(o) = state.outcome() {
        return Err(MatchError::invalid(
            "start.text",
            format!("the game has already ended in this position ({o})"),
        ));
    }
    let pos = state.position();
    Ok(Start {
        text: pos.to_text(),
        asked: if drawn {
            RANDOM_CHESS960.to_owned()
        } else {
            pos.to_text()
        },
        boards: vec![BoardRecord::new(
            pos.to_text(),
            Default::default(),
            state.history().to_vec(),
        )],
        rules: pos.rule_options(),
        turns: vec![pos.turn()],
    })
}

/// The digest of what a creation asks for (variant, start, rules, players, time control): a
/// retry must ask for the same match to be handed its tokens again.
fn spec_digest(variant: Variant, start: &Start, players: &[String], time_control: &str) -> String {
    let rule_items: Vec<&str> = start
        .rules
        .0
        .iter()
        .flat_map(|(n, v)| [n.as_str(), v.as_str()])
        .collect();
    let canonical = pack(&[
        variant.name(),
        &start.asked,
        &pack(&rule_items),
        &pack(players),
        time_control,
    ]);
    arbiter_kit::hex(&Sha256::digest(canonical.as_bytes()))
}

impl<S: MatchStore> Matches<S> {
    /// Creates a match (the caller has checked the platform credential). The same creation
    /// again with the same request id answers with the stored match and the same tokens; any
    /// other creation of an existing id is refused.
    pub async fn create(&self, c: Creation) -> Result<Created, MatchError> {
        let variant = c
            .variant
            .ok_or_else(|| MatchError::invalid("variant", "variant is required"))?;
        check_text("request_id", &c.request_id, MAX_REQUEST_ID_BYTES)?;
        if !c.request_id.is_ascii() {
            return Err(MatchError::invalid("request_id", "use printable ASCII"));
        }
        let control = time_control(&c.time_control)?;
        let time_control = control
            .as_ref()
            .map_or_else(String::new, ToString::to_string);
        let players = players(variant, &c.players)?;
        if c.start.len() > MAX_START_BYTES {
            return Err(MatchError::invalid(
                "start.text",
                format!("at most {MAX_START_BYTES} bytes"),
            ));
        }
        let mut start = if variant == Variant::Bughouse {
            bughouse_start(&c)?
        } else {
            single_start(variant, &c)?
        };
        if c.takebacks {
            if variant == Variant::Bughouse {
                return Err(MatchError::invalid(
                    "takebacks",
                    "bughouse has no takebacks: a capture has already fed the partner's reserve",
                ));
            }
            if control
                .as_ref()
                .is_some_and(|c| c.stages().len() > 1 || c.stages()[0].moves.is_some())
            {
                return Err(MatchError::invalid(
                    "takebacks",
                    "takebacks need a time control of one stage without a move count",
                ));
            }
        }
        let mut spec = spec_digest(variant, &start, &players, &time_control);
        if c.takebacks {
            // Only a creation with takebacks differs: older digests stay valid.
            spec.push_str("+tb");
        }
        let id = self.match_id(&c)?;
        if let Some(control) = &control {
            self.start_clocks(&mut start, control, variant == Variant::Bughouse)
                .await?;
        }
        let record = Record {
            id,
            nonce: random_hex(),
            spec,
            request_key: if c.request_id.is_empty() {
                String::new()
            } else {
                self.key.request_key(&c.request_id)
            },
            variant,
            rules: start.rules,
            players,
            time_control,
            control,
            start: start.text,
            boards: start.boards,
            outcome: None,
            ended_at: None,
            draw_offers: [false, false],
            takebacks: c.takebacks,
            takeback: None,
            last_seq: 0,
        };
        let (stored, created) = self.store_new(&record).await?;
        if created {
            crate::metrics::created(variant);
        }
        Ok(Created {
            seats: self.tokens(&stored),
            record: stored,
            created,
        })
    }

    /// The id of a new match: the one the platform chose, else one derived from the request id
    /// (so that a retry finds the same match), else a random one.
    fn match_id(&self, c: &Creation) -> Result<String, MatchError> {
        if !c.match_id.is_empty() {
            check_match_id(&c.match_id)?;
            Ok(c.match_id.clone())
        } else if !c.request_id.is_empty() {
            Ok(self.key.derive_id(&c.request_id))
        } else {
            Ok(format!("m{}", random_hex()))
        }
    }

    /// Starts the clocks of every board at the store's time. Bughouse: four clocks started
    /// together; a single board: lichess's start (each side's first move untimed, within the
    /// first-move window).
    async fn start_clocks(
        &self,
        start: &mut Start,
        control: &TimeControl,
        bughouse: bool,
    ) -> Result<(), MatchError> {
        let now = self.store.deadlines().now().await?;
        // A correspondence player has the whole allowance for a first move too.
        let window = match control.days_per_move() {
            Some(_) => control.longest_turn_ms(),
            None => self.first_move_ms,
        };
        for (b, &turn) in start.boards.iter_mut().zip(&start.turns) {
            let mut clock = Clock::new(control.clone());
            let started = if bughouse {
                clock.start(turn, now)
            } else {
                clock.start_after_first_moves(turn, now, window)
            };
            started.map_err(|e| corrupt(e.to_string()))?;
            b.clock = Some(clock);
        }
        Ok(())
    }

    /// Stores a new match: `(stored, true)` when created, the existing match with `false` for
    /// a retry (the same request id with the same content: only then are the tokens of an
    /// existing match handed out again), refused otherwise.
    async fn store_new(&self, record: &Record) -> Result<(Arc<Record>, bool), MatchError> {
        match self.store.create(record).await? {
            CreateResult::Created(r) => Ok((r, true)),
            CreateResult::Full(max) => Err(MatchError::Exhausted {
                field: "",
                description: format!("this server holds its maximum of {max} matches; retry later"),
            }),
            CreateResult::Exists(r)
                if !record.request_key.is_empty()
                    && r.request_key == record.request_key
                    && r.spec == record.spec =>
            {
                Ok((r, false))
            }
            CreateResult::Exists(_) => Err(MatchError::AlreadyExists(record.id.clone())),
        }
    }
}
