//! The stored schema of a hosted match, in one place: the typed [`Record`], its fields in a
//! Redis hash (or the in-process store), the events, and how each is encoded and decoded. Both
//! stores use this module; the Lua scripts of the Redis store write the same fields.
//!
//! ## Keys
//! A bughouse match lives in `bug:{<id>}:state` (a hash), `bug:{<id>}:events` (a list) and
//! `bug:{<id>}:done` (a hash); a single-board game in `game:{<id>}:state`, `…:events` and
//! `…:done`. The braces are a Redis
//! Cluster hash tag: every key of one match is in one slot, as the scripts need.
//!
//! ## Fields
//! | field | holds |
//! |---|---|
//! | `v` | schema version ([`SCHEMA`]) |
//! | `nonce` | 128 random bits drawn at creation; seat tokens are bound to it |
//! | `spec` | fingerprint of the creation (a retried creation must match it) |
//! | `rid` | keyed hash of the creation's request id (a retry must present the same id) |
//! | `variant` | the variant's stable name |
//! | `rules` | rule options, packed `name, value, …` |
//! | `players` | player ids by seat, packed |
//! | `tc` | time control reference |
//! | `start` | the start position string (bughouse: BFEN) |
//! | `over` | `1` once the match has ended |
//! | `outcome` | packed `white quarters, board (A/B/-), reason name, ended (Unix ms)` |
//! | `tb` | `1` when the players may take moves back (absent otherwise) |
//! | `tbp` | a takeback proposal: packed `side, ply` (it stands while the board is at that ply) |
//! | `draw:w` `draw:b` | `1` while White (bughouse: team 1) / Black (team 2) offers a draw |
//! | `pos:A` `pos:B` | the board's position string (bughouse: the FEN without the reserve) |
//! | `ply:A` `ply:B` | moves played on the board |
//! | `last:A` `last:B` | packed `ply, side, text as sent, uci, san, accepted (Unix ms)` of the board's latest move (records written before the time was kept lack the last item) |
//! | `hist:A` | single board: repetition keys since the last irreversible move, 16 hex digits each; bughouse with `repetition=threefold`: the board's keys without reserves since the start |
//! | `keep` | Redis only, a correspondence game: its live lifetime in ms (longer than the configured one), which every change keeps |
//! | `res:A:w` … `res:B:b` | bughouse: a reserve in FEN letters, `QRBNP` order |
//! | `ck:A` `ck:B` | with a time control: the board clock's phase, packed ([`encode_phase`]) |
//! | `ck:A:w` … `ck:B:b` | with a time control: one side's clock, packed `remaining ms, quota ms, moves, stage, moves in stage` |
//! | `dl:A` `dl:B` | with a time control: the board's next deadline (Unix ms), empty when none |
//!
//! A match with clocks is also in the sorted set `arbiter:matches:deadlines` (member the match
//! id, score its earliest deadline in Unix ms) while a clock runs.
//!
//! ## Packing
//! A packed list is each item as its byte length in decimal, `:`, and the item's bytes
//! (`1:M1:A…`): client-supplied text (player ids, move text) can hold any character without
//! ever shifting a neighbour, and a reader checks every length against what is left. Composite
//! fields (players, the last move, the outcome) and events are packed lists; a whole record
//! travels from Redis as the hash's flat field/value array.
//!
//! ## Requests applied
//! A third key, `…:done` (a hash), remembers the requests applied under a request id, per
//! scope: each seat (`A/w`, `A/b`, `B/w`, `B/b`) and the platform (`platform`). The field
//! `<scope>/<request id>` holds a packed `what, fingerprint` ([`Remembered`]): what the request
//! did ([`Done`]: `M<seq>` for a move, its event's sequence number; `E` for a resignation, a
//! claim or an abort; `D` for a draw offer; `X` for a declined offer; `K` for a clock action) and the fingerprint of the request (its
//! kind and content, [`RequestId`]). A retry with the same id and fingerprint is answered from
//! it; the same id with another fingerprint is refused. Only the latest [`REQUEST_WINDOW`]
//! requests of each scope are kept, in a ring: `<scope>#` counts the scope's requests and
//! `<scope>#<n mod window>` names the field of its n-th, which the next request to take that
//! slot deletes. A request that changed nothing (an offer while the side's offer stands) is not
//! remembered.
//!
//! ## Events
//! The event list holds packed lines: `M, board, ply, side, uci, san, position` (a move),
//! `R, board, side, pieces` (a reserve after a drop or a capture on the partner's board),
//! `D, side` (a draw offer), `X, side` (that side's offer lapsed: the other side moved or
//! declined it),
//! `E, white quarters, board, reason` (the end), `C, board, white ms, black ms, running side
//! (w/b/-), Unix ms` (a clock snapshot, after every timed move, flag, pause, resume and time
//! added). The sequence number of
//! an event is its position in the list, from 1.

pub use arbiter_clocked::fields::{
    Corrupt, encode_clock, encode_phase, encode_side, pack, pack_into, side_letter, unpack,
};
use arbiter_clocked::fields::{corrupt, decode_clock, parse_side};
use arbiter_core::bughouse::{BoardId, MatchOutcome};
use arbiter_core::clock::{Clock, TimeControl};
use arbiter_core::outcome::Score;
use arbiter_core::{Color, EndReason, RuleOptions, Variant};

mod chat;
mod events;
mod requests;

pub use chat::{ChatChannel, ChatEntry, ChatMessage};
pub use events::StoredEvent;
pub use requests::{Done, REQUEST_WINDOW, Remembered, RequestId, RequestKind, is_window_field};

/// The schema version written in every record.
pub const SCHEMA: &str = "1";

/// The letter of a board in fields and events.
pub fn board_letter(b: BoardId) -> &'static str {
    match b {
        BoardId::A => "A",
        BoardId::B => "B",
    }
}

fn parse_board(s: &str) -> Result<BoardId, Corrupt> {
    match s {
        "A" => Ok(BoardId::A),
        "B" => Ok(BoardId::B),
        _ => Err(corrupt(format!("bad board '{s}'"))),
    }
}

fn parse_num<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, Corrupt> {
    s.parse().map_err(|_| corrupt(format!("bad {what} '{s}'")))
}

/// The latest move of a board, kept to recognise a retried request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LastMove {
    /// The board's ply after it.
    pub ply: u32,
    /// Who moved.
    pub side: Color,
    /// The move text exactly as the client sent it.
    pub text: String,
    /// The move in coordinate notation.
    pub uci: String,
    /// The move in SAN.
    pub san: String,
    /// When the store accepted the move (Unix ms, the store's time base): set by the store as
    /// it applies the move (a commit carries 0), and 0 in records written before it was kept.
    pub at: u64,
}

impl LastMove {
    /// The stored form.
    pub fn encode(&self) -> String {
        let mut out = self.encode_sent();
        pack_into(&mut out, &[self.at.to_string().as_str()]);
        out
    }

    /// The stored form without the acceptance time, which the Redis move script appends at its
    /// own time.
    pub fn encode_sent(&self) -> String {
        pack(&[
            self.ply.to_string().as_str(),
            side_letter(self.side),
            &self.text,
            &self.uci,
            &self.san,
        ])
    }

    fn decode(text: &str) -> Result<LastMove, Corrupt> {
        let parts = unpack(text)?;
        let (parts, at) = match parts.as_slice() {
            [head @ .., at] if parts.len() == 6 => (head, parse_num(at, "move time")?),
            _ => (parts.as_slice(), 0),
        };
        match parts {
            [ply, side, sent, uci, san] => Ok(LastMove {
                ply: parse_num(ply, "ply")?,
                side: parse_side(side)?,
                text: (*sent).to_owned(),
                uci: (*uci).to_owned(),
                san: (*san).to_owned(),
                at,
            }),
            _ => Err(corrupt("bad last move")),
        }
    }
}

/// The stored form of an outcome.
pub fn encode_outcome(o: &MatchOutcome) -> String {
    pack(&[
        o.score.quarters(Color::White).to_string().as_str(),
        o.board.map_or("-", board_letter),
        o.reason.name(),
    ])
}

/// An outcome as stored, with the instant the store appended when it recorded the end (absent
/// in records written before the instant was kept).
fn decode_outcome_parts(parts: &[&str]) -> Result<(MatchOutcome, Option<u64>), Corrupt> {
    let (parts, ended) = match parts {
        [head @ .., ended] if parts.len() == 4 => (head, Some(parse_num(ended, "ended")?)),
        _ => (parts, None),
    };
    match parts {
        [quarters, board, reason] => Ok((
            MatchOutcome {
                score: Score::from_white_quarters(parse_num(quarters, "score")?)
                    .ok_or_else(|| corrupt("score out of range"))?,
                board: match *board {
                    "-" => None,
                    b => Some(parse_board(b)?),
                },
                reason: EndReason::from_name(reason)
                    .ok_or_else(|| corrupt(format!("unknown end reason '{reason}'")))?,
            },
            ended,
        )),
        _ => Err(corrupt("bad outcome")),
    }
}

/// The stored deadline of a board (`dl:` field): Unix ms, or empty.
pub fn encode_deadline(c: Option<&Clock>) -> String {
    c.and_then(Clock::deadline)
        .map_or(String::new(), |d| d.at.to_string())
}

/// One board of a stored match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardRecord {
    /// The position string (a bughouse board's FEN without the reserve part).
    pub position: String,
    /// Moves played on the board.
    pub ply: u32,
    /// Bughouse: White's and Black's reserves in FEN letters (empty otherwise).
    pub reserves: [String; 2],
    /// Single board: the repetition keys since the last irreversible move.
    pub history: Vec<u64>,
    /// The latest move.
    pub last: Option<LastMove>,
    /// The board's clock, when the match has a time control.
    pub clock: Option<Clock>,
}

impl BoardRecord {
    /// A board before its first move, without a clock.
    pub fn new(position: String, reserves: [String; 2], history: Vec<u64>) -> BoardRecord {
        BoardRecord {
            position,
            ply: 0,
            reserves,
            history,
            last: None,
            clock: None,
        }
    }

    /// White's and Black's reserves: a bughouse board's stored ones, a crazyhouse board's read
    /// from the brackets of its position, none for the other variants.
    pub fn reserve_letters(&self, variant: Variant) -> [String; 2] {
        match variant {
            Variant::Bughouse => self.reserves.clone(),
            Variant::Crazyhouse => {
                let inner = self
                    .position
                    .split_whitespace()
                    .next()
                    .and_then(|p| p.split_once('['))
                    .map_or("", |(_, r)| r.trim_end_matches(']'));
                [
                    inner.chars().filter(char::is_ascii_uppercase).collect(),
                    inner.chars().filter(char::is_ascii_lowercase).collect(),
                ]
            }
            _ => Default::default(),
        }
    }

    /// A bughouse board's FEN with both reserves in brackets (the position string otherwise).
    pub fn full_position(&self, bughouse: bool) -> String {
        if !bughouse {
            return self.position.clone();
        }
        let at = self.position.find(' ').unwrap_or(self.position.len());
        let (placement, rest) = self.position.split_at(at);
        format!(
            "{placement}[{}{}]{rest}",
            self.reserves[0], self.reserves[1]
        )
    }
}

/// A hosted match as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The id.
    pub id: String,
    /// Random bits drawn at creation (seat tokens are bound to them).
    pub nonce: String,
    /// The fingerprint of the creation request.
    pub spec: String,
    /// The keyed hash of the creation's request id (empty without one): a retried creation
    /// must present the same request id to be given the seat tokens again.
    pub request_key: String,
    /// The game; [`Variant::Bughouse`] is a two-board match.
    pub variant: Variant,
    /// Rule options that differ from the variant's defaults.
    pub rules: RuleOptions,
    /// Player ids by seat: white, black; or white A, black A, white B, black B.
    pub players: Vec<String>,
    /// The time control in its canonical human form (empty: no clocks).
    pub time_control: String,
    /// The time control, when the match has clocks.
    pub control: Option<TimeControl>,
    /// The start position string (bughouse: BFEN).
    pub start: String,
    /// One board, or A and B.
    pub boards: Vec<BoardRecord>,
    /// The outcome once over (single board: White's score, no board).
    pub outcome: Option<MatchOutcome>,
    /// When the store recorded the end (Unix ms on the store's time base), once over. For a loss
    /// on time the flag fell at the deadline; this is when the end was committed.
    pub ended_at: Option<u64>,
    /// Whether White (team 1) and Black (team 2) offer a draw.
    pub draw_offers: [bool; 2],
    /// Whether the players may take moves back (chosen at creation; single boards only).
    pub takebacks: bool,
    /// A takeback proposal: the side that proposed it and the board's ply then. It stands only
    /// while the board is still at that ply ([`Record::standing_takeback`]).
    pub takeback: Option<(Color, u32)>,
    /// The number of events so far (the latest event's sequence number).
    pub last_seq: u64,
}

/// Boards by index.
pub const BOARDS: [BoardId; 2] = [BoardId::A, BoardId::B];

/// The fields a record's changes touch (everything else is written once, at creation), in the
/// order a move script returns them.
pub const MUTABLE_FIELDS: [&str; 23] = [
    "over", "outcome", "draw:w", "draw:b", "pos:A", "ply:A", "last:A", "hist:A", "res:A:w",
    "res:A:b", "pos:B", "ply:B", "last:B", "hist:B", "res:B:w", "res:B:b", "ck:A", "ck:A:w",
    "ck:A:b", "ck:B", "ck:B:w", "ck:B:b", "tbp",
];

/// The raw values of a record, by field.
#[derive(Default)]
struct Slots {
    v: Option<String>,
    nonce: Option<String>,
    spec: Option<String>,
    rid: Option<String>,
    variant: Option<String>,
    rules: Option<String>,
    players: Option<String>,
    tc: Option<String>,
    start: Option<String>,
    over: Option<String>,
    outcome: Option<String>,
    draw: [bool; 2],
    tb: Option<String>,
    tbp: Option<String>,
    pos: [Option<String>; 2],
    ply: [Option<String>; 2],
    last: [Option<String>; 2],
    hist: [Option<String>; 2],
    res: [[Option<String>; 2]; 2],
    ck: [[Option<String>; 3]; 2],
}

impl Slots {
    /// Files `value` under `name` (unknown names are ignored).
    fn set(&mut self, name: &str, value: String) {
        match name {
            "v" => self.v = Some(value),
            "nonce" => self.nonce = Some(value),
            "spec" => self.spec = Some(value),
            "rid" => self.rid = Some(value),
            "variant" => self.variant = Some(value),
            "rules" => self.rules = Some(value),
            "players" => self.players = Some(value),
            "tc" => self.tc = Some(value),
            "start" => self.start = Some(value),
            "over" => self.over = Some(value),
            "outcome" => self.outcome = Some(value),
            "draw:w" => self.draw[0] = value == "1",
            "draw:b" => self.draw[1] = value == "1",
            "tb" => self.tb = Some(value),
            "tbp" => self.tbp = Some(value),
            "pos:A" => self.pos[0] = Some(value),
            "pos:B" => self.pos[1] = Some(value),
            "ply:A" => self.ply[0] = Some(value),
            "ply:B" => self.ply[1] = Some(value),
            "last:A" => self.last[0] = Some(value),
            "last:B" => self.last[1] = Some(value),
            "hist:A" => self.hist[0] = Some(value),
            "hist:B" => self.hist[1] = Some(value),
            "res:A:w" => self.res[0][0] = Some(value),
            "res:A:b" => self.res[0][1] = Some(value),
            "res:B:w" => self.res[1][0] = Some(value),
            "res:B:b" => self.res[1][1] = Some(value),
            "ck:A" => self.ck[0][0] = Some(value),
            "ck:A:w" => self.ck[0][1] = Some(value),
            "ck:A:b" => self.ck[0][2] = Some(value),
            "ck:B" => self.ck[1][0] = Some(value),
            "ck:B:w" => self.ck[1][1] = Some(value),
            "ck:B:b" => self.ck[1][2] = Some(value),
            _ => {}
        }
    }
}

impl Record {
    /// Whether this is a two-board bughouse match.
    pub fn is_bughouse(&self) -> bool {
        self.variant == Variant::Bughouse
    }

    /// The fields of the record, for creation.
    pub fn to_fields(&self) -> Vec<(String, String)> {
        let mut f: Vec<(String, String)> = vec![
            ("v".into(), SCHEMA.into()),
            ("nonce".into(), self.nonce.clone()),
            ("spec".into(), self.spec.clone()),
            ("rid".into(), self.request_key.clone()),
            ("variant".into(), self.variant.name().into()),
            (
                "rules".into(),
                pack(
                    &self
                        .rules
                        .0
                        .iter()
                        .flat_map(|(n, v)| [n.as_str(), v.as_str()])
                        .collect::<Vec<_>>(),
                ),
            ),
            ("players".into(), pack(&self.players)),
            ("tc".into(), self.time_control.clone()),
            ("start".into(), self.start.clone()),
            (
                "over".into(),
                if self.outcome.is_some() { "1" } else { "0" }.into(),
            ),
        ];
        if let Some(o) = &self.outcome {
            let mut stored = encode_outcome(o);
            if let Some(at) = self.ended_at {
                stored.push_str(&pack(&[at.to_string().as_str()]));
            }
            f.push(("outcome".into(), stored));
        }
        if self.takebacks {
            f.push(("tb".into(), "1".into()));
        }
        if let Some((side, ply)) = self.takeback {
            f.push((
                "tbp".into(),
                pack(&[side_letter(side), ply.to_string().as_str()]),
            ));
        }
        for (c, offers) in [Color::White, Color::Black]
            .into_iter()
            .zip(self.draw_offers)
        {
            if offers {
                f.push((format!("draw:{}", side_letter(c)), "1".into()));
            }
        }
        for (b, board) in BOARDS.into_iter().zip(&self.boards) {
            let l = board_letter(b);
            f.push((format!("pos:{l}"), board.position.clone()));
            f.push((format!("ply:{l}"), board.ply.to_string()));
            if let Some(last) = &board.last {
                f.push((format!("last:{l}"), last.encode()));
            }
            if self.is_bughouse() {
                for (c, r) in [Color::White, Color::Black]
                    .into_iter()
                    .zip(&board.reserves)
                {
                    f.push((format!("res:{l}:{}", side_letter(c)), r.clone()));
                }
            }
            // A bughouse board has a history only under the threefold option.
            if !self.is_bughouse() || !board.history.is_empty() {
                f.push((format!("hist:{l}"), encode_history(&board.history)));
            }
            if let Some(clock) = &board.clock {
                let [phase, white, black] = encode_clock(clock);
                f.push((format!("ck:{l}"), phase));
                f.push((format!("ck:{l}:w"), white));
                f.push((format!("ck:{l}:b"), black));
                f.push((format!("dl:{l}"), encode_deadline(Some(clock))));
            }
        }
        f
    }

    /// The earliest deadline of the match's running clocks (Unix ms), if any.
    pub fn deadline(&self) -> Option<u64> {
        self.boards
            .iter()
            .filter_map(|b| b.clock.as_ref()?.deadline())
            .map(|d| d.at)
            .min()
    }

    /// Decodes a record from its fields, given as owned `(name, value)` pairs in any order
    /// (`id` and the event count come from outside). Unknown fields are ignored.
    pub fn from_pairs(
        id: &str,
        pairs: impl IntoIterator<Item = (String, String)>,
        last_seq: u64,
    ) -> Result<Record, Corrupt> {
        let mut f = Slots::default();
        for (name, value) in pairs {
            f.set(&name, value);
        }
        fn need(slot: Option<String>, name: &str) -> Result<String, Corrupt> {
            slot.ok_or_else(|| corrupt(format!("no field '{name}'")))
        }
        let version = need(f.v.take(), "v")?;
        if version != SCHEMA {
            return Err(corrupt(format!("unknown schema version '{version}'")));
        }
        let variant: Variant = need(f.variant.take(), "variant")?
            .parse()
            .map_err(|_| corrupt("unknown variant"))?;
        let rules_text = need(f.rules.take(), "rules")?;
        let rules = unpack(&rules_text)?;
        if !rules.len().is_multiple_of(2) {
            return Err(corrupt("odd rule option list"));
        }
        let rules = RuleOptions(
            rules
                .chunks(2)
                .map(|p| (p[0].to_owned(), p[1].to_owned()))
                .collect(),
        );
        let bughouse = variant == Variant::Bughouse;
        let players: Vec<String> = unpack(&need(f.players.take(), "players")?)?
            .into_iter()
            .map(str::to_owned)
            .collect();
        if players.len() != if bughouse { 4 } else { 2 } {
            return Err(corrupt("wrong number of players"));
        }
        let mut record = Record {
            id: id.to_owned(),
            nonce: need(f.nonce.take(), "nonce")?,
            spec: need(f.spec.take(), "spec")?,
            request_key: need(f.rid.take(), "rid")?,
            variant,
            rules,
            players,
            time_control: need(f.tc.take(), "tc")?,
            control: None,
            start: need(f.start.take(), "start")?,
            boards: Vec::new(),
            outcome: None,
            ended_at: None,
            draw_offers: [false; 2],
            takebacks: f.tb.take().is_some_and(|v| v == "1"),
            takeback: None,
            last_seq,
        };
        // A record written before clocks existed has no clock field: it has no clocks.
        if f.ck.iter().flatten().any(Option::is_some) {
            record.control = Some(
                TimeControl::parse(&record.time_control)
                    .map_err(|e| corrupt(format!("bad time control: {e}")))?,
            );
        }
        record.set_mutable(f)?;
        Ok(record)
    }

    /// This record with its changeable fields replaced by `values`, given in the order of
    /// [`MUTABLE_FIELDS`] (`None` for an absent field): what a move script returns, since the
    /// rest of a record never changes after creation.
    pub fn with_mutable(
        &self,
        values: Vec<Option<String>>,
        last_seq: u64,
    ) -> Result<Record, Corrupt> {
        if values.len() != MUTABLE_FIELDS.len() {
            return Err(corrupt("wrong number of changeable fields"));
        }
        let mut f = Slots::default();
        for (name, value) in MUTABLE_FIELDS.into_iter().zip(values) {
            if let Some(v) = value {
                f.set(name, v);
            }
        }
        let mut record = Record {
            id: self.id.clone(),
            nonce: self.nonce.clone(),
            spec: self.spec.clone(),
            request_key: self.request_key.clone(),
            variant: self.variant,
            rules: self.rules.clone(),
            players: self.players.clone(),
            time_control: self.time_control.clone(),
            control: self.control.clone(),
            start: self.start.clone(),
            boards: Vec::new(),
            outcome: None,
            ended_at: None,
            draw_offers: [false; 2],
            takebacks: self.takebacks,
            takeback: None,
            last_seq,
        };
        record.set_mutable(f)?;
        Ok(record)
    }

    /// Decodes the changeable part (boards, outcome, draw offers) from `f`.
    fn set_mutable(&mut self, f: Slots) -> Result<(), Corrupt> {
        fn need(slot: Option<String>, name: &str) -> Result<String, Corrupt> {
            slot.ok_or_else(|| corrupt(format!("no field '{name}'")))
        }
        let bughouse = self.is_bughouse();
        let board_fields = f
            .pos
            .into_iter()
            .zip(f.ply)
            .zip(f.last)
            .zip(f.hist)
            .zip(f.res)
            .zip(f.ck);
        for (i, (((((pos, ply), last), hist), [white, black]), ck)) in board_fields.enumerate() {
            if i == if bughouse { 2 } else { 1 } {
                break;
            }
            let (reserves, history) = if bughouse {
                let history = hist.map_or(Ok(Vec::new()), |h| decode_history(&h))?;
                ([need(white, "res:w")?, need(black, "res:b")?], history)
            } else {
                (Default::default(), decode_history(&need(hist, "hist")?)?)
            };
            self.boards.push(BoardRecord {
                position: need(pos, "pos")?,
                ply: parse_num(&need(ply, "ply")?, "ply")?,
                reserves,
                history,
                last: match last {
                    Some(t) => Some(LastMove::decode(&t)?),
                    None => None,
                },
                clock: match (&self.control, ck) {
                    (None, _) => None,
                    (Some(control), [Some(p), Some(w), Some(b)]) => {
                        Some(decode_clock(control, [&p, &w, &b])?)
                    }
                    (Some(_), _) => return Err(corrupt("a board without its clock")),
                },
            });
        }
        (self.outcome, self.ended_at) = match need(f.over, "over")?.as_str() {
            "1" => {
                let (o, at) = decode_outcome_parts(&unpack(&need(f.outcome, "outcome")?)?)?;
                (Some(o), at)
            }
            "0" => (None, None),
            other => return Err(corrupt(format!("bad 'over' value '{other}'"))),
        };
        self.draw_offers = f.draw;
        self.takeback = match f.tbp {
            None => None,
            Some(v) => match unpack(&v)?.as_slice() {
                [side, ply] => Some((parse_side(side)?, parse_num(ply, "takeback ply")?)),
                _ => return Err(corrupt("bad takeback proposal")),
            },
        };
        Ok(())
    }

    /// The takeback proposal that stands now: made at the board's current ply, the match not
    /// over.
    pub fn standing_takeback(&self) -> Option<Color> {
        let (side, ply) = self.takeback?;
        (self.outcome.is_none() && self.boards.first().is_some_and(|b| b.ply == ply))
            .then_some(side)
    }

    /// Decodes a record from a `field, value, field, value, …` list (what the Redis scripts
    /// return).
    pub fn from_list(id: &str, items: Vec<String>, last_seq: u64) -> Result<Record, Corrupt> {
        if !items.len().is_multiple_of(2) {
            return Err(corrupt("odd field list"));
        }
        let mut items = items.into_iter();
        let pairs = std::iter::from_fn(move || Some((items.next()?, items.next()?)));
        Record::from_pairs(id, pairs, last_seq)
    }
}

/// The stored form of a repetition history.
pub fn encode_history(keys: &[u64]) -> String {
    keys.iter().map(|k| format!("{k:016x}")).collect()
}

fn decode_history(text: &str) -> Result<Vec<u64>, Corrupt> {
    if !text.len().is_multiple_of(16) || !text.is_ascii() {
        return Err(corrupt("bad history"));
    }
    (0..text.len())
        .step_by(16)
        .map(|i| u64::from_str_radix(&text[i..i + 16], 16).map_err(|_| corrupt("bad history")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Whatever bytes a store returns, decoding answers with a value or `Corrupt`: never a
        /// panic.
        #[test]
        fn decoding_never_panics(
            text in ".{0,200}",
            fields in proptest::collection::vec((".{0,12}", ".{0,40}"), 0..40),
        ) {
            let _ = unpack(&text);
            let _ = StoredEvent::decode(&text);
            let _ = Done::decode(&text);
            let _ = Record::from_pairs("m", fields.clone(), 0);
            let mut with_schema = fields;
            with_schema.push(("v".into(), SCHEMA.into()));
            with_schema.push(("variant".into(), "bughouse".into()));
            let _ = Record::from_pairs("m", with_schema, 0);
        }

        /// Any list of strings packs and unpacks to itself.
        #[test]
        fn packing_round_trips(items in proptest::collection::vec(".{0,30}", 0..20)) {
            let packed = pack(&items);
            proptest::prop_assert_eq!(unpack(&packed).unwrap(), items);
        }
    }

    #[test]
    fn packing_survives_any_text() {
        let items = ["", "a:b", "12:x", "line\nbreak\ttab", "é✓", "9999999999"];
        let packed = pack(&items);
        assert_eq!(unpack(&packed).unwrap(), items);
        for bad in ["5:abc", "x:abc", "3abc", "1:é", "99999999999:a"] {
            assert!(unpack(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn done_records_round_trip() {
        for d in [
            Done::Move { seq: 17 },
            Done::Ended,
            Done::Offered,
            Done::Clock,
        ] {
            assert_eq!(Done::decode(&d.encode()), Ok(d));
            let r = Remembered {
                done: d,
                fingerprint: "0123456789abcdef".into(),
            };
            assert_eq!(Remembered::decode(&r.encode()), Ok(r));
        }
        assert!(Done::decode("Mx").is_err());
        assert!(Remembered::decode("3:M1x").is_err());
        // Entries stored before fingerprints were kept.
        assert_eq!(
            Remembered::decode("M5"),
            Ok(Remembered {
                done: Done::Move { seq: 5 },
                fingerprint: String::new()
            })
        );
        let r = RequestId::seat(BoardId::B, Color::Black, "r:1", RequestKind::Move, &["e4"]);
        assert_eq!((r.scope.as_str(), r.field.as_str()), ("B/b", "B/b/r:1"));
        assert_eq!(r.fingerprint.len(), 16);
        assert_eq!(
            RequestId::platform("p", RequestKind::AddTime, &[]).field,
            "platform/p"
        );
    }

    #[test]
    fn fingerprints_tell_requests_apart() {
        let seat =
            |kind, content: &[&str]| RequestId::seat(BoardId::A, Color::White, "x", kind, content);
        let mv = seat(RequestKind::Move, &["e4", "0", "en"]);
        assert_eq!(mv, seat(RequestKind::Move, &["e4", "0", "en"]));
        let others = [
            seat(RequestKind::Move, &["e2e4", "0", "en"]),
            seat(RequestKind::Move, &["e4", "2", "en"]),
            seat(RequestKind::Move, &["e4", "0", "it"]),
            seat(RequestKind::Resign, &[]),
            seat(RequestKind::OfferDraw, &[]),
            seat(RequestKind::ClaimDraw, &["threefold-repetition"]),
            // Packed content: no two different field lists hash alike.
            seat(RequestKind::Move, &["e40", "", "en"]),
        ];
        for other in &others {
            assert_ne!(other.fingerprint, mv.fingerprint, "{other:?}");
        }
        let applied = Remembered {
            done: Done::Move { seq: 3 },
            fingerprint: mv.fingerprint.clone(),
        };
        assert!(applied.is_same_request(&mv));
        assert!(others.iter().all(|o| !applied.is_same_request(o)));
        // Without a fingerprint, only the kind can be compared.
        let legacy = Remembered {
            done: Done::Ended,
            fingerprint: String::new(),
        };
        assert!(legacy.is_same_request(&seat(RequestKind::Resign, &[])));
        assert!(!legacy.is_same_request(&mv));
    }

    #[test]
    fn window_fields_are_told_from_requests() {
        for f in ["A/w#", "A/w#63", "B/b#0", "platform#", "platform#12"] {
            assert!(is_window_field(f), "{f}");
        }
        for f in ["A/w/#", "A/w/r#1", "B/b/x", "platform/#", "platform/p#1"] {
            assert!(!is_window_field(f), "{f}");
        }
    }

    #[test]
    fn events_round_trip() {
        let events = [
            StoredEvent::Move {
                board: BoardId::B,
                ply: 7,
                side: Color::Black,
                uci: "N@f3".into(),
                san: "N@f3+".into(),
                position: "r1bqk/8 w - - 0 1".into(),
            },
            StoredEvent::Reserve {
                board: BoardId::A,
                side: Color::White,
                pieces: "QNP".into(),
            },
            StoredEvent::DrawOffer(Color::White),
            StoredEvent::DrawDeclined(Color::Black),
            StoredEvent::End(MatchOutcome {
                score: Score::from_white_quarters(3).unwrap(),
                board: None,
                reason: EndReason::Stalemate,
            }),
            StoredEvent::End(MatchOutcome {
                score: Score::WHITE_WINS,
                board: Some(BoardId::B),
                reason: EndReason::Checkmate,
            }),
        ];
        for e in events {
            assert_eq!(StoredEvent::decode(&e.encode()).unwrap(), e);
        }
        assert!(StoredEvent::decode("1:Z").is_err());
        assert!(StoredEvent::decode("garbage").is_err());
    }

    fn sample(variant: Variant) -> Record {
        let bughouse = variant == Variant::Bughouse;
        let control = TimeControl::parse("3+2").unwrap();
        let board = |p: &str| BoardRecord {
            position: p.into(),
            ply: 3,
            reserves: if bughouse {
                ["QP".into(), "n".into()]
            } else {
                Default::default()
            },
            history: if bughouse { vec![] } else { vec![1, u64::MAX] },
            last: Some(LastMove {
                ply: 3,
                side: Color::White,
                text: "e4\u{1}odd".into(),
                uci: "e2e4".into(),
                san: "e4".into(),
                at: 1_700_000_000_456,
            }),
            clock: Some({
                let mut c = Clock::new(control.clone());
                if bughouse {
                    c.start(Color::White, 1_000).unwrap();
                    c.press(Color::White, 2_500, 30).unwrap();
                    c.pause(3_000).unwrap();
                } else {
                    c.start_after_first_moves(Color::White, 1_000, 30_000)
                        .unwrap();
                    c.press(Color::White, 2_000, 0).unwrap();
                }
                c
            }),
        };
        Record {
            id: "m1".into(),
            nonce: "00ff".into(),
            spec: "abc".into(),
            request_key: "0123".into(),
            variant,
            rules: RuleOptions(vec![("stalemate".into(), "loses".into())]),
            players: if bughouse {
                vec!["a".into(), "b\nc".into(), "d".into(), "e".into()]
            } else {
                vec!["ann".into(), "bob:1".into()]
            },
            time_control: "3+2".into(),
            control: Some(control.clone()),
            start: "start".into(),
            boards: if bughouse {
                vec![board("8/8 w - - 0 1"), board("8/8 b - - 0 1")]
            } else {
                vec![board("8/8 b - - 0 1")]
            },
            outcome: Some(MatchOutcome {
                score: Score::DRAW,
                board: None,
                reason: EndReason::Agreement,
            }),
            ended_at: Some(1_700_000_000_123),
            draw_offers: [true, false],
            takebacks: !bughouse,
            takeback: (!bughouse).then_some((Color::Black, 0)),
            last_seq: 12,
        }
    }

    #[test]
    fn an_outcome_stored_before_end_instants_were_kept_still_reads() {
        let mut r = sample(Variant::Chess);
        r.ended_at = None;
        let fields = r.to_fields();
        let outcome = &fields.iter().find(|(f, _)| f == "outcome").unwrap().1;
        assert_eq!(unpack(outcome).unwrap().len(), 3);
        assert_eq!(Record::from_pairs("m1", fields, 12).unwrap(), r);
        // An end event never carries an instant.
        let mut event = StoredEvent::End(r.outcome.unwrap()).encode();
        event.push_str(&pack(&["5"]));
        assert!(StoredEvent::decode(&event).is_err());
    }

    #[test]
    fn a_last_move_stored_before_its_time_was_kept_still_reads() {
        let last = LastMove {
            ply: 3,
            side: Color::Black,
            text: "Nf6".into(),
            uci: "g8f6".into(),
            san: "Nf6".into(),
            at: 1_700_000_000_000,
        };
        assert_eq!(LastMove::decode(&last.encode()), Ok(last.clone()));
        // The Redis move script appends the time to the form without it.
        let mut stored = last.encode_sent();
        assert_eq!(LastMove::decode(&stored).map(|l| l.at), Ok(0));
        pack_into(&mut stored, &["1700000000000"]);
        assert_eq!(LastMove::decode(&stored), Ok(last));
        pack_into(&mut stored, &["x"]);
        assert!(LastMove::decode(&stored).is_err());
    }

    #[test]
    fn records_round_trip_through_fields() {
        for v in [Variant::Chess, Variant::Byzantine, Variant::Bughouse] {
            let r = sample(v);
            let fields = r.to_fields();
            assert_eq!(Record::from_pairs("m1", fields, 12).unwrap(), r);
        }
    }

    #[test]
    fn changeable_fields_replace_a_record_s_state() {
        for v in [Variant::Chess, Variant::Bughouse] {
            let r = sample(v);
            let fields: std::collections::HashMap<String, String> =
                r.to_fields().into_iter().collect();
            let values = MUTABLE_FIELDS
                .iter()
                .map(|f| fields.get(*f).cloned())
                .collect();
            let mut base = r.clone();
            base.boards.clear();
            base.outcome = None;
            assert_eq!(base.with_mutable(values, 12).unwrap(), r);
            assert!(base.with_mutable(vec![None], 12).is_err());
        }
    }

    #[test]
    fn a_damaged_record_is_corrupt_not_a_panic() {
        let r = sample(Variant::Bughouse);
        let fields = r.to_fields();
        for skip in 0..fields.len() {
            let list: Vec<String> = fields
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != skip)
                .flat_map(|(_, (k, v))| [k.clone(), v.clone()])
                .collect();
            // Dropping an optional field (a draw offer, a last move) still reads; a required
            // one is reported.
            let read = Record::from_list("m1", list, 0);
            let optional =
                ["draw:w", "last:A", "last:B", "dl:A", "dl:B"].contains(&fields[skip].0.as_str());
            assert_eq!(read.is_ok(), optional, "without {}", fields[skip].0);
        }
        let list: Vec<String> = fields
            .iter()
            .flat_map(|(k, v)| {
                [
                    k.clone(),
                    if k == "ply:A" { "-1".into() } else { v.clone() },
                ]
            })
            .collect();
        assert!(Record::from_list("m1", list, 0).is_err());
        assert!(Record::from_list("m1", vec!["odd".into()], 0).is_err());
    }
}
