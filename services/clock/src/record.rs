//! A standalone clock as stored: its boards (the core's [`Clock`] with its press count), the
//! flag once one fell, and its events; how each is written in a Redis hash and decoded.
//!
//! ## Keys and fields
//! A clock lives in `clock:{<id>}:state` (a hash) and `clock:{<id>}:events` (a list):
//!
//! | field | holds |
//! |---|---|
//! | `v` | schema version ([`SCHEMA`]) |
//! | `tc` | the time control, canonical human form |
//! | `spec` | the creation (time control, boards, first side), to recognise a retried creation |
//! | `n` | boards (1 or 2) |
//! | `ck:A` `ck:A:w` `ck:A:b` (and `B`) | a board's clock: phase and each side, packed as in the match service |
//! | `dl:A` `dl:B` | the board's next deadline (Unix ms) or empty |
//! | `pr:A` `pr:B` | presses so far on the board |
//! | `lp:A` `lp:B` | the side of the board's latest press (`w`, `b`, or empty) |
//! | `over` | `1` once flagged or stopped |
//! | `flag` | packed `board, side, at` once a flag fell |
//! | `rqn` | platform actions applied with a request id so far (absent: none) |
//! | `rq:<id>` | packed `n, request`: the `n`-th action applied with a request id, and the request it was (see [`Requests`]) |
//! | `rs:<n>` | the request id of the `n`-th such action (to forget the oldest) |
//!
//! Only the latest [`REMEMBERED_REQUESTS`] request ids are kept: when the `n`-th is written,
//! the `(n − REMEMBERED_REQUESTS)`-th one's `rq:` and `rs:` fields are deleted in the same step.
//! A clock written before request contents were kept holds `rq:<id>` = `1` (content unknown;
//! see [`Requests::get`]).
//!
//! Running clocks are in the sorted set `arbiter:clocks:deadlines` by earliest deadline.
//!
//! ## Events
//! Packed lines: `C, board, white ms, black ms, running (w/b/-), Unix ms` (a snapshot),
//! `F, board, side, Unix ms` (the flag), `S` (stopped).

use arbiter_core::Color;
use arbiter_core::clock::{Clock, TimeControl};
/// The schema version.
pub const SCHEMA: &str = "1";

/// Request ids remembered per clock: those of the latest this many platform actions applied
/// with one. A retry within that many later actions on the clock answers `duplicate: true`;
/// an older id is forgotten (its retry would apply again).
pub const REMEMBERED_REQUESTS: u64 = 256;

pub use arbiter_clocked::fields::{
    Corrupt, board_letter, encode_clock, encode_deadline, pack, side_letter, unpack,
};
use arbiter_clocked::fields::{corrupt, decode_clock, num, parse_board, parse_side};

/// One board of a standalone clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Board {
    /// The core clock.
    pub clock: Clock,
    /// Presses so far.
    pub ply: u32,
    /// The side of the latest press.
    pub last: Option<Color>,
}

/// A flag that fell.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Flag {
    /// The board (0 or 1).
    pub board: usize,
    /// Who flagged.
    pub side: Color,
    /// The deadline that passed (Unix ms).
    pub at: u64,
}

impl Flag {
    /// The stored form.
    pub fn encode(&self) -> String {
        pack(&[
            board_letter(self.board),
            side_letter(self.side),
            &self.at.to_string(),
        ])
    }

    fn decode(text: &str) -> Result<Flag, Corrupt> {
        match unpack(text)?.as_slice() {
            [board, side, at] => Ok(Flag {
                board: parse_board(board)?,
                side: parse_side(side)?,
                at: num(at, "flag time")?,
            }),
            _ => Err(corrupt("bad flag")),
        }
    }
}

/// The request ids a clock remembers: the latest [`REMEMBERED_REQUESTS`] platform actions
/// applied with one, each with the request it was (a canonical text of the call and its
/// arguments), so that a retry is recognised and another request under a used id refused.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Requests {
    /// Actions applied with a request id so far (the number of the latest).
    pub count: u64,
    /// Request id → (its number, the request; `None` when stored without it).
    pub by_id: std::collections::BTreeMap<String, (u64, Option<String>)>,
}

impl Requests {
    /// What was remembered under `id`: `Some(Some(request))`, `Some(None)` for an id stored
    /// without its request (written before contents were kept), `None` if not remembered.
    pub fn get(&self, id: &str) -> Option<Option<&str>> {
        self.by_id.get(id).map(|(_, r)| r.as_deref())
    }

    /// Remembers `id` for `request` as the next action, forgetting the one that falls out of
    /// the window.
    pub fn remember(&mut self, id: &str, request: &str) {
        self.count += 1;
        self.by_id
            .insert(id.to_owned(), (self.count, Some(request.to_owned())));
        let oldest = self.count.saturating_sub(REMEMBERED_REQUESTS);
        self.by_id.retain(|_, (n, _)| *n == 0 || *n > oldest);
    }

    /// Ids remembered.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether none is remembered.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}

/// A standalone clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClockRecord {
    /// The id.
    pub id: String,
    /// The creation, to recognise a retry.
    pub spec: String,
    /// The time control.
    pub control: TimeControl,
    /// One or two boards.
    pub boards: Vec<Board>,
    /// Flagged or stopped.
    pub over: bool,
    /// The flag, once one fell.
    pub flag: Option<Flag>,
    /// Request ids of the latest platform actions applied, with their requests.
    pub requests: Requests,
    /// The number of events.
    pub last_seq: u64,
}

impl ClockRecord {
    /// The earliest deadline of its running boards.
    pub fn deadline(&self) -> Option<u64> {
        self.boards
            .iter()
            .filter_map(|b| b.clock.deadline())
            .map(|d| d.at)
            .min()
    }

    /// The fields, for creation.
    pub fn to_fields(&self) -> Vec<(String, String)> {
        let mut f = vec![
            ("v".to_owned(), SCHEMA.to_owned()),
            ("tc".to_owned(), self.control.to_string()),
            ("spec".to_owned(), self.spec.clone()),
            ("n".to_owned(), self.boards.len().to_string()),
            (
                "over".to_owned(),
                if self.over { "1" } else { "0" }.to_owned(),
            ),
        ];
        if let Some(flag) = &self.flag {
            f.push(("flag".to_owned(), flag.encode()));
        }
        if self.requests.count > 0 {
            f.push(("rqn".to_owned(), self.requests.count.to_string()));
        }
        for (id, (n, request)) in &self.requests.by_id {
            match request {
                Some(r) => {
                    f.push((format!("rq:{id}"), pack(&[n.to_string().as_str(), r])));
                    f.push((format!("rs:{n}"), id.clone()));
                }
                None => f.push((format!("rq:{id}"), "1".to_owned())),
            }
        }
        for (i, b) in self.boards.iter().enumerate() {
            let l = board_letter(i);
            let [phase, white, black] = encode_clock(&b.clock);
            f.push((format!("ck:{l}"), phase));
            f.push((format!("ck:{l}:w"), white));
            f.push((format!("ck:{l}:b"), black));
            f.push((format!("dl:{l}"), encode_deadline(&b.clock)));
            f.push((format!("pr:{l}"), b.ply.to_string()));
            f.push((format!("lp:{l}"), b.last.map_or("", side_letter).to_owned()));
        }
        f
    }

    /// Decodes a record from its `(field, value)` pairs.
    pub fn from_pairs(
        id: &str,
        pairs: impl IntoIterator<Item = (String, String)>,
        last_seq: u64,
    ) -> Result<ClockRecord, Corrupt> {
        let map: std::collections::HashMap<String, String> = pairs.into_iter().collect();
        let get = |k: &str| {
            map.get(k)
                .map(String::as_str)
                .ok_or_else(|| corrupt(format!("no field '{k}'")))
        };
        if get("v")? != SCHEMA {
            return Err(corrupt("unknown schema version"));
        }
        let control = TimeControl::parse(get("tc")?)
            .map_err(|e| corrupt(format!("bad time control: {e}")))?;
        let n: usize = num(get("n")?, "board count")?;
        if !(1..=2).contains(&n) {
            return Err(corrupt("bad board count"));
        }
        let mut boards = Vec::with_capacity(n);
        for i in 0..n {
            let l = board_letter(i);
            let clock = decode_clock(
                &control,
                [
                    get(&format!("ck:{l}"))?,
                    get(&format!("ck:{l}:w"))?,
                    get(&format!("ck:{l}:b"))?,
                ],
            )?;
            boards.push(Board {
                clock,
                ply: num(get(&format!("pr:{l}"))?, "press count")?,
                last: match get(&format!("lp:{l}"))? {
                    "" => None,
                    s => Some(parse_side(s)?),
                },
            });
        }
        Ok(ClockRecord {
            id: id.to_owned(),
            spec: get("spec")?.to_owned(),
            control,
            boards,
            over: get("over")? == "1",
            flag: map.get("flag").map(|f| Flag::decode(f)).transpose()?,
            requests: decode_requests(&map)?,
            last_seq,
        })
    }
}

fn decode_requests(map: &std::collections::HashMap<String, String>) -> Result<Requests, Corrupt> {
    let mut requests = Requests {
        count: map.get("rqn").map_or(Ok(0), |n| num(n, "request count"))?,
        by_id: Default::default(),
    };
    for (key, value) in map {
        let Some(id) = key.strip_prefix("rq:") else {
            continue;
        };
        let entry = if value == "1" {
            (0, None)
        } else {
            match unpack(value)?.as_slice() {
                [n, request] => (num(n, "request number")?, Some((*request).to_owned())),
                _ => return Err(corrupt("bad remembered request")),
            }
        };
        requests.by_id.insert(id.to_owned(), entry);
    }
    Ok(requests)
}

/// An event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClockEvent {
    /// A board's clocks at an instant.
    Snapshot {
        /// The board (0 or 1).
        board: usize,
        /// White's and Black's remaining ms at `at`.
        remaining_ms: [u64; 2],
        /// Whose clock runs from `at`.
        running: Option<Color>,
        /// Unix ms.
        at: u64,
    },
    /// A flag fell.
    Flag(Flag),
    /// The clock was stopped.
    Stopped,
}

impl ClockEvent {
    /// The snapshot of board `board`'s clock at `now`.
    pub fn snapshot(board: usize, clock: &Clock, now: u64) -> ClockEvent {
        let s = clock.snapshot(now);
        ClockEvent::Snapshot {
            board,
            remaining_ms: s.remaining_ms,
            running: s.running,
            at: now,
        }
    }

    /// The stored line.
    pub fn encode(&self) -> String {
        match self {
            ClockEvent::Snapshot {
                board,
                remaining_ms,
                running,
                at,
            } => pack(&[
                "C",
                board_letter(*board),
                &remaining_ms[0].to_string(),
                &remaining_ms[1].to_string(),
                running.map_or("-", side_letter),
                &at.to_string(),
            ]),
            ClockEvent::Flag(f) => {
                let mut out = pack(&["F"]);
                out.push_str(&f.encode());
                out
            }
            ClockEvent::Stopped => pack(&["S"]),
        }
    }

    /// Reads a stored line.
    pub fn decode(line: &str) -> Result<ClockEvent, Corrupt> {
        Ok(match unpack(line)?.as_slice() {
            ["C", board, white, black, running, at] => ClockEvent::Snapshot {
                board: parse_board(board)?,
                remaining_ms: [num(white, "clock")?, num(black, "clock")?],
                running: match *running {
                    "-" => None,
                    r => Some(parse_side(r)?),
                },
                at: num(at, "clock time")?,
            },
            ["F", board, side, at] => ClockEvent::Flag(Flag {
                board: parse_board(board)?,
                side: parse_side(side)?,
                at: num(at, "flag time")?,
            }),
            ["S"] => ClockEvent::Stopped,
            _ => return Err(corrupt("unknown event")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_and_events_round_trip() {
        let control = TimeControl::parse("3+2").unwrap();
        let mut clock = Clock::new(control.clone());
        clock.start(Color::White, 1_000).unwrap();
        clock.press(Color::White, 2_000, 50).unwrap();
        let mut r = ClockRecord {
            id: "c1".into(),
            spec: "x".into(),
            control,
            boards: vec![
                Board {
                    clock: clock.clone(),
                    ply: 1,
                    last: Some(Color::White),
                },
                Board {
                    clock,
                    ply: 0,
                    last: None,
                },
            ],
            over: true,
            flag: Some(Flag {
                board: 1,
                side: Color::Black,
                at: 99,
            }),
            requests: Requests::default(),
            last_seq: 4,
        };
        r.requests.remember("p1", "pause");
        r.requests.remember("p2", &pack(&["add", "A", "w", "1000"]));
        r.requests.by_id.insert("old".into(), (0, None));
        assert_eq!(ClockRecord::from_pairs("c1", r.to_fields(), 4).unwrap(), r);
        for e in [
            ClockEvent::Snapshot {
                board: 1,
                remaining_ms: [5, 6],
                running: Some(Color::Black),
                at: 7,
            },
            ClockEvent::Flag(Flag {
                board: 0,
                side: Color::White,
                at: 8,
            }),
            ClockEvent::Stopped,
        ] {
            assert_eq!(ClockEvent::decode(&e.encode()).unwrap(), e);
        }
        assert!(ClockEvent::decode("1:Z").is_err());
        let mut fields = r.to_fields();
        fields.retain(|(k, _)| k != "ck:B");
        assert!(ClockRecord::from_pairs("c1", fields, 4).is_err());
    }

    #[test]
    fn the_request_window_keeps_the_latest_ids() {
        let mut q = Requests::default();
        q.by_id.insert("legacy".into(), (0, None));
        for i in 0..1_000 {
            q.remember(&format!("r{i}"), "pause");
        }
        assert_eq!(q.count, 1_000);
        // The window, and the id stored without its request (never evicted: not numbered).
        assert_eq!(q.len() as u64, REMEMBERED_REQUESTS + 1);
        assert_eq!(q.get("r999"), Some(Some("pause")));
        assert_eq!(
            q.get(&format!("r{}", 1_000 - REMEMBERED_REQUESTS)),
            Some(Some("pause"))
        );
        assert_eq!(q.get(&format!("r{}", 999 - REMEMBERED_REQUESTS)), None);
        assert_eq!(q.get("legacy"), Some(None));
    }
}
