//! ExportMatch: a match as PGN (BPGN for bughouse), with the clocks after each move as
//! `[%clk]` comments and the result and termination tags.
//!
//! The text is built from the stored events up to the record's latest event (events are only
//! appended, so record and events agree): each move event carries its SAN, and the clock
//! snapshot the store appends after a timed move gives the mover's remaining time.

use super::Matches;
use crate::error::MatchError;
use crate::record::{Record, StoredEvent};
use crate::store::MatchStore;
use arbiter_core::bughouse::{BoardId, BpgnGame, BpgnMove};
use arbiter_core::pgn::{PgnGame, PgnNode};
use arbiter_core::{AnyPosition, Color, EndReason, Position, Variant};

/// Events read per store call while exporting.
const PAGE: usize = 10_000;

/// A match as a game text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exported {
    /// PGN, or BPGN for a bughouse match.
    pub text: String,
    /// Whether `text` is BPGN.
    pub bughouse: bool,
    /// The latest event the text covers.
    pub last_seq: u64,
}

/// One move as the export needs it.
struct ExportMove {
    board: BoardId,
    side: Color,
    san: String,
    /// The mover's remaining time after the move (ms), when the match has clocks.
    clock_ms: Option<u64>,
}

/// `[%clk H:MM:SS]`, with tenths when the time is not a whole second.
fn clk(ms: u64) -> String {
    let tenths = ms / 100;
    let (h, m, s, t) = (
        tenths / 36_000,
        tenths / 600 % 60,
        tenths / 10 % 60,
        tenths % 10,
    );
    if t == 0 {
        format!("[%clk {h}:{m:02}:{s:02}]")
    } else {
        format!("[%clk {h}:{m:02}:{s:02}.{t}]")
    }
}

/// The PGN `Termination` tag: `unterminated` while the game goes on.
fn termination(record: &Record) -> &'static str {
    match record.outcome.map(|o| o.reason) {
        None => "unterminated",
        Some(EndReason::Timeout | EndReason::TimeoutVsInsufficientMaterial) => "time forfeit",
        Some(EndReason::Aborted) => "abandoned",
        Some(_) => "normal",
    }
}

/// The result marker: `*` while the game goes on and for an aborted game (no result).
fn result(record: &Record) -> String {
    match record.outcome {
        Some(o) if o.reason != EndReason::Aborted => o.score.to_string(),
        _ => "*".to_owned(),
    }
}

/// `YYYY.MM.DD` of a Unix time in ms (UTC).
fn pgn_date(ms: u64) -> String {
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = (ms / 86_400_000) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}.{month:02}.{day:02}")
}

/// The tags every export has, whatever the format.
fn common_tags(record: &Record, first_time: Option<u64>) -> Vec<(String, String)> {
    let mut tags = vec![
        ("Event".to_owned(), "Arbiter match".to_owned()),
        ("Site".to_owned(), format!("arbiter:match/{}", record.id)),
    ];
    if let Some(t) = first_time {
        tags.push(("Date".to_owned(), pgn_date(t)));
    }
    if let Some(control) = &record.control {
        tags.push(("TimeControl".to_owned(), control.to_pgn()));
    } else {
        tags.push(("TimeControl".to_owned(), "-".to_owned()));
    }
    tags.push(("Termination".to_owned(), termination(record).to_owned()));
    if let Some(o) = record.outcome {
        tags.push(("EndReason".to_owned(), o.reason.name().to_owned()));
    }
    if !record.rules.0.is_empty() {
        let rules: Vec<String> = record
            .rules
            .0
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        tags.push(("Rules".to_owned(), rules.join(" ")));
    }
    tags
}

/// The PGN of a single-board game.
fn single_pgn(record: &Record, moves: Vec<ExportMove>, first_time: Option<u64>) -> String {
    let mut pgn = PgnGame {
        tags: common_tags(record, first_time),
        moves: moves
            .into_iter()
            .map(|m| PgnNode {
                san: m.san,
                comments: m.clock_ms.map(clk).into_iter().collect(),
                ..PgnNode::default()
            })
            .collect(),
        result: result(record),
        ..PgnGame::default()
    };
    let player = |i: usize| record.players.get(i).cloned().unwrap_or_default();
    pgn.set_tag("White", player(0));
    pgn.set_tag("Black", player(1));
    pgn.set_tag("Result", pgn.result.clone());
    if record.variant != Variant::Chess {
        pgn.set_tag("Variant", record.variant.pgn_name());
    }
    let standard = AnyPosition::start(record.variant).map(|p| p.to_text());
    if record.variant == Variant::Chess960 || standard.as_deref().ok() != Some(&*record.start) {
        pgn.set_tag("SetUp", "1");
        pgn.set_tag("FEN", record.start.clone());
    }
    pgn.to_string()
}

/// The BPGN of a bughouse match.
fn bughouse_bpgn(record: &Record, moves: Vec<ExportMove>, first_time: Option<u64>) -> String {
    let mut game = BpgnGame {
        tags: common_tags(record, first_time),
        moves: moves
            .into_iter()
            .map(|m| BpgnMove {
                board: m.board,
                color: m.side,
                san: m.san,
                clock: m.clock_ms.map(|ms| ms as f64 / 1000.0),
            })
            .collect(),
        result: Some(result(record)),
    };
    for (i, name) in ["WhiteA", "BlackA", "WhiteB", "BlackB"].iter().enumerate() {
        let player = record.players.get(i).cloned().unwrap_or_default();
        game.tags.push(((*name).to_owned(), player));
    }
    game.tags.push(("FEN".to_owned(), record.start.clone()));
    game.to_string()
}

impl<S: MatchStore> Matches<S> {
    /// The match as PGN (BPGN for bughouse), as it stands: a live match exports the moves so
    /// far with the result `*`.
    pub async fn export(&self, id: &str) -> Result<Exported, MatchError> {
        let record = self.get(id).await?;
        let mut moves: Vec<ExportMove> = Vec::new();
        // Per board, the index in `moves` of its latest move still waiting for its clock.
        let mut waiting: [Option<usize>; 2] = [None, None];
        let mut first_time = None;
        let mut after = 0;
        while after < record.last_seq {
            let max = usize::try_from(record.last_seq - after)
                .unwrap_or(usize::MAX)
                .min(PAGE);
            let page = self.events(id, after, max).await?;
            let Some(&(last, _)) = page.last() else {
                break;
            };
            after = last;
            for (_, event) in page {
                match event {
                    StoredEvent::Move {
                        board, side, san, ..
                    } => {
                        waiting[board.index()] = Some(moves.len());
                        moves.push(ExportMove {
                            board,
                            side,
                            san,
                            clock_ms: None,
                        });
                    }
                    StoredEvent::Takeback { board, ply, .. } => {
                        // The board went back to `ply`: its later moves are no longer the game.
                        let mut kept = 0;
                        moves.retain(|m| {
                            if m.board != board {
                                return true;
                            }
                            kept += 1;
                            kept <= ply
                        });
                        waiting[board.index()] = None;
                    }
                    StoredEvent::Clock {
                        board,
                        remaining_ms,
                        at,
                        ..
                    } => {
                        first_time.get_or_insert(at);
                        if let Some(i) = waiting[board.index()].take() {
                            let m = &mut moves[i];
                            m.clock_ms = Some(remaining_ms[m.side.index()]);
                        }
                    }
                    _ => {}
                }
            }
        }
        // Untimed games have no clock events: the earliest latest move, or the end, dates them.
        let first_time = first_time
            .or_else(|| {
                let times = record.boards.iter().filter_map(|b| b.last.as_ref());
                times.map(|l| l.at).filter(|&at| at > 0).min()
            })
            .or(record.ended_at);
        let bughouse = record.is_bughouse();
        let text = if bughouse {
            bughouse_bpgn(&record, moves, first_time)
        } else {
            single_pgn(&record, moves, first_time)
        };
        Ok(Exported {
            text,
            bughouse,
            last_seq: after.min(record.last_seq),
        })
    }
}
