//! The store's own encoding of what it keeps in Redis: work items (a game to analyse) and
//! results (a game's [`GameResult`]). Versioned text, so that any worker or replica of any
//! later build reads what an earlier one wrote:
//!
//! - an item is `gm1:` then a packed list: the start's variant (its stable name: `chess`,
//!   `bughouse`, …), the start's text (a BFEN in bughouse), its rule options (a packed list of
//!   names and values), then each move in UCI (in bughouse prefixed by its seat's letter: `A`
//!   White on A, `a` Black on A, `B`, `b`);
//! - a result is `gr2:` then a packed list: the index, the start's evaluation, White's and
//!   Black's accuracy (empty when none), the six counts (White's inaccuracies, mistakes,
//!   blunders, then Black's, space-separated), the error, the engine's id (its name and
//!   version, empty when unknown), then one packed list per move: its UCI, its SAN, the
//!   evaluation after it, its verdict, the better move (empty, or a packed list of its UCI and
//!   SAN), its board. Results of version 1 (`gr1:`, written before the engine was recorded)
//!   are the same without the engine's id, and still read (their engine is empty).
//!
//! A packed list is each item as its length in bytes, `:`, and its bytes. An evaluation is
//! empty, `cp:<n>` or `mate:<n>`; a verdict empty (not judged), `good`, `inaccuracy`,
//! `mistake` or `blunder`.
//!
//! The tags start with `g`, a byte that no protobuf message starts with (its wire type would
//! be 7), so a value written by the previous version (a prost-encoded `GameMoves` or
//! `GameResult`) is never mistaken for one of these: such values are read by
//! [`crate::legacy`], during a rolling upgrade. Values are always written in this encoding.

use super::types::{GameResult, ListedGame, MoveText, PlyResult, VariantInput, Verdict};
use super::{Game, MAX_ITEM_PLIES, bughouse_line, listed_game, seat_letter, seated_moves};
use arbiter_core::bughouse::Match;
use arbiter_core::{AnyMove, AnyPosition, GameState, Locale, Notation, Position, RuleOptions};
use arbiter_engine::score::Reported;

/// The tag of an item in this encoding (version 1).
pub const ITEM_TAG: &str = "gm1:";
/// The tag of a result in this encoding (version 2: with the engine's id).
pub const RESULT_TAG: &str = "gr2:";
/// The tag of a result of version 1 (no engine's id), still read.
pub const RESULT_TAG_V1: &str = "gr1:";

pub use arbiter_redis_conn::packed::{pack, unpack};

/// A game as a work item (see the module's documentation).
pub fn encode_item(game: &Game) -> String {
    let mut fields: Vec<String> = Vec::new();
    match game {
        Game::Line(g) => {
            fields.push(g.start.variant().name().to_owned());
            fields.push(g.start.to_text());
            let rules: Vec<String> = g
                .start
                .rule_options()
                .0
                .into_iter()
                .flat_map(|(name, value)| [name, value])
                .collect();
            fields.push(pack(&rules));
            fields.extend(g.moves.iter().map(ToString::to_string));
        }
        Game::Bughouse(b) => {
            fields.push(arbiter_core::Variant::Bughouse.name().to_owned());
            fields.push(b.start.to_bfen());
            fields.push(String::new());
            let mut m = b.start.clone();
            for &(seat, mv) in &b.moves {
                let before = AnyPosition::Crazyhouse(*m.board(seat.board));
                let uci = before.move_to_uci(AnyMove::Chess(mv));
                m.play_checked(seat, mv, Locale::English);
                fields.push(format!("{}{uci}", seat_letter(seat)));
            }
        }
    }
    format!("{ITEM_TAG}{}", pack(&fields))
}

/// A work item of the previous version (see [`crate::legacy`]), replayed: a line, or a
/// bughouse match whose moves carry their seat letters.
fn old_item(g: &ListedGame) -> Result<Game, String> {
    let bughouse = g
        .start
        .as_ref()
        .is_some_and(|p| p.variant == VariantInput::Known(arbiter_core::Variant::Bughouse));
    if !bughouse {
        return listed_game(g, "item", MAX_ITEM_PLIES)
            .map(Game::Line)
            .map_err(|e| e.to_string());
    }
    if g.moves.len() > MAX_ITEM_PLIES {
        return Err(format!("{} moves; at most {MAX_ITEM_PLIES}", g.moves.len()));
    }
    let bfen = g.start.as_ref().map_or("", |p| p.text.as_str());
    let start = Match::from_bfen(bfen).map_err(|e| format!("item.start: {e}"))?;
    bughouse_line(start, seated_moves(&g.moves)?.into_iter())
}

/// A work item read back: decoded and replayed, every move legal in turn. An item in another
/// encoding is read as the previous version wrote it ([`crate::legacy`]).
///
/// # Errors
/// What cannot be decoded or played, in words.
pub fn decode_item(item: &[u8]) -> Result<Game, String> {
    let Some(body) = item.strip_prefix(ITEM_TAG.as_bytes()) else {
        return old_item(&crate::legacy::decode_item(item)?);
    };
    let body = std::str::from_utf8(body).map_err(|e| format!("cannot decode the item: {e}"))?;
    let fields = unpack(body).map_err(|e| format!("cannot decode the item: {e}"))?;
    let [variant, text, rules, moves @ ..] = fields.as_slice() else {
        return Err("cannot decode the item: too few fields".into());
    };
    if moves.len() > MAX_ITEM_PLIES {
        return Err(format!("{} moves; at most {MAX_ITEM_PLIES}", moves.len()));
    }
    let variant: arbiter_core::Variant = variant
        .parse()
        .map_err(|_| format!("item.start.variant: unknown variant {variant}"))?;
    if variant == arbiter_core::Variant::Bughouse {
        let start = Match::from_bfen(text).map_err(|e| format!("item.start: {e}"))?;
        return bughouse_line(start, seated_moves(moves)?.into_iter());
    }
    let rules = unpack(rules).map_err(|e| format!("cannot decode the item's rules: {e}"))?;
    let options = RuleOptions(
        rules
            .chunks(2)
            .map(|p| (p[0].to_owned(), p.get(1).copied().unwrap_or("").to_owned()))
            .collect(),
    );
    let text = (!text.trim().is_empty()).then_some(*text);
    let start =
        AnyPosition::with_rules(variant, text, &options).map_err(|e| format!("item.start: {e}"))?;
    let mut state = GameState::new(start.clone());
    let moves = moves
        .iter()
        .enumerate()
        .map(|(j, text)| {
            state
                .play_text(text, Notation::Uci, Locale::English)
                .map_err(|e| format!("item.moves[{j}]: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Game::Line(super::GameSpec { start, moves }))
}

fn score_text(s: Option<Reported>) -> String {
    match s {
        None => String::new(),
        Some(Reported::Cp(n)) => format!("cp:{n}"),
        Some(Reported::Mate(n)) => format!("mate:{n}"),
    }
}

fn score_of(text: &str) -> Result<Option<Reported>, String> {
    if text.is_empty() {
        return Ok(None);
    }
    let bad = || format!("not an evaluation: {text}");
    let (kind, n) = text.split_once(':').ok_or_else(bad)?;
    let n: i32 = n.parse().map_err(|_| bad())?;
    match kind {
        "cp" => Ok(Some(Reported::Cp(n))),
        "mate" => Ok(Some(Reported::Mate(n))),
        _ => Err(bad()),
    }
}

fn verdict_text(v: Verdict) -> &'static str {
    match v {
        Verdict::Unjudged => "",
        Verdict::Good => "good",
        Verdict::Inaccuracy => "inaccuracy",
        Verdict::Mistake => "mistake",
        Verdict::Blunder => "blunder",
    }
}

fn verdict_of(text: &str) -> Result<Verdict, String> {
    Ok(match text {
        "" => Verdict::Unjudged,
        "good" => Verdict::Good,
        "inaccuracy" => Verdict::Inaccuracy,
        "mistake" => Verdict::Mistake,
        "blunder" => Verdict::Blunder,
        _ => return Err(format!("not a verdict: {text}")),
    })
}

fn accuracy_text(a: Option<f64>) -> String {
    a.map_or_else(String::new, |a| a.to_string())
}

fn accuracy_of(text: &str) -> Result<Option<f64>, String> {
    if text.is_empty() {
        return Ok(None);
    }
    text.parse()
        .map(Some)
        .map_err(|_| format!("not an accuracy: {text}"))
}

/// A result as stored (see the module's documentation).
pub fn encode_result(r: &GameResult) -> String {
    let counts: Vec<String> = r
        .white_counts
        .iter()
        .chain(&r.black_counts)
        .map(u32::to_string)
        .collect();
    let mut fields = vec![
        r.index.to_string(),
        score_text(r.start_eval),
        accuracy_text(r.white_accuracy),
        accuracy_text(r.black_accuracy),
        counts.join(" "),
        r.error.clone(),
        r.engine.clone(),
    ];
    fields.extend(r.plies.iter().map(|p| {
        pack(&[
            p.played.uci.as_str(),
            p.played.san.as_str(),
            &score_text(p.eval_after),
            verdict_text(p.verdict),
            &p.better
                .as_ref()
                .map_or_else(String::new, |b| pack(&[&b.uci, &b.san])),
            &p.board,
        ])
    }));
    format!("{RESULT_TAG}{}", pack(&fields))
}

/// A stored result read back. A result in another encoding is read as the previous version
/// wrote it ([`crate::legacy`]).
///
/// # Errors
/// A value that is not a result, in words.
pub fn decode_result(stored: &[u8]) -> Result<GameResult, String> {
    let (body, version) = if let Some(body) = stored.strip_prefix(RESULT_TAG.as_bytes()) {
        (body, 2)
    } else if let Some(body) = stored.strip_prefix(RESULT_TAG_V1.as_bytes()) {
        (body, 1)
    } else {
        return crate::legacy::decode_result(stored);
    };
    let body = std::str::from_utf8(body).map_err(|e| e.to_string())?;
    let fields = unpack(body)?;
    let fixed = if version == 2 { 7 } else { 6 };
    if fields.len() < fixed {
        return Err("too few fields".into());
    }
    let (head, plies) = fields.split_at(fixed);
    let [index, start_eval, white, black, counts, error] = head[..6] else {
        return Err("too few fields".into());
    };
    let engine = head.get(6).copied().unwrap_or("");
    let counts = counts
        .split(' ')
        .map(|n| n.parse::<u32>().map_err(|_| format!("not a count: {n}")))
        .collect::<Result<Vec<u32>, String>>()?;
    let [w0, w1, w2, b0, b1, b2] = counts[..] else {
        return Err(format!("{} counts, not 6", counts.len()));
    };
    let plies = plies
        .iter()
        .map(|p| {
            let f = unpack(p)?;
            let [uci, san, eval, verdict, better, board] = f[..] else {
                return Err(format!("a move has {} fields, not 6", f.len()));
            };
            let better = if better.is_empty() {
                None
            } else {
                let b = unpack(better)?;
                let [uci, san] = b[..] else {
                    return Err("a better move has not 2 fields".into());
                };
                Some(MoveText {
                    uci: uci.to_owned(),
                    san: san.to_owned(),
                })
            };
            Ok(PlyResult {
                played: MoveText {
                    uci: uci.to_owned(),
                    san: san.to_owned(),
                },
                eval_after: score_of(eval)?,
                verdict: verdict_of(verdict)?,
                better,
                board: board.to_owned(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(GameResult {
        index: index
            .parse()
            .map_err(|_| format!("not an index: {index}"))?,
        start_eval: score_of(start_eval)?,
        plies,
        white_accuracy: accuracy_of(white)?,
        black_accuracy: accuracy_of(black)?,
        white_counts: [w0, w1, w2],
        black_counts: [b0, b1, b2],
        error: error.to_owned(),
        engine: engine.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::GameSpec;
    use arbiter_core::Variant;

    fn line(variant: Variant, text: Option<&str>, moves: &[&str]) -> Game {
        let start = AnyPosition::with_rules(variant, text, &RuleOptions::default()).unwrap();
        let mut state = GameState::new(start.clone());
        let moves = moves
            .iter()
            .map(|m| state.play_text(m, Notation::Auto, Locale::English).unwrap())
            .collect();
        Game::Line(GameSpec { start, moves })
    }

    #[test]
    fn items_round_trip_in_every_variant() {
        let games = [
            line(
                Variant::Chess,
                None,
                &["e4", "e5", "Nf3", "Nc6", "Bb5", "a6"],
            ),
            line(
                Variant::Chess,
                Some("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1"),
                &["O-O", "O-O-O"],
            ),
            line(Variant::Crazyhouse, None, &["e4", "d5", "exd5", "Qxd5"]),
            // Chess960: castling stored king-takes-rook.
            line(Variant::Chess960, Some("959"), &["e4", "e5"]),
            line(
                Variant::Chess960,
                Some("rk4r1/pppppppp/8/8/8/8/PPPPPPPP/RK4R1 w KQkq - 0 1"),
                &["O-O", "O-O-O"],
            ),
            line(Variant::Glinski, None, &[]),
            line(Variant::Byzantine, None, &[]),
        ];
        for game in games {
            let item = encode_item(&game);
            assert!(item.starts_with(ITEM_TAG), "{item}");
            let (Game::Line(a), Ok(Game::Line(b))) = (&game, decode_item(item.as_bytes())) else {
                panic!("{item} reads back as a line");
            };
            assert_eq!(a.start, b.start, "{item}");
            assert_eq!(a.moves, b.moves, "{item}");
        }
    }

    #[test]
    fn bad_items_are_refused_in_words() {
        let item = |fields: &[&str]| format!("{ITEM_TAG}{}", pack(fields));
        let e = |text: &str| decode_item(text.as_bytes()).unwrap_err();
        assert!(e(&item(&["chess", ""])).contains("too few"));
        assert!(e(&item(&["nope", "", ""])).contains("unknown variant"));
        assert!(e(&item(&["chess", "8/8 w", ""])).contains("item.start"));
        assert!(e(&item(&["chess", "", "", "e2e5"])).contains("item.moves[0]"));
        assert!(e("gm1:5:chess").contains("cannot decode"));
        assert!(e("gm1:x").contains("cannot decode"));
    }

    #[test]
    fn results_round_trip() {
        let m = |uci: &str, san: &str| MoveText {
            uci: uci.into(),
            san: san.into(),
        };
        let results = [
            GameResult::default(),
            GameResult {
                index: 7,
                start_eval: Some(Reported::Cp(23)),
                plies: vec![
                    PlyResult {
                        played: m("e2e4", "e4"),
                        eval_after: Some(Reported::Cp(-15)),
                        verdict: Verdict::Good,
                        better: None,
                        board: String::new(),
                    },
                    PlyResult {
                        played: m("f7f6", "f6"),
                        eval_after: Some(Reported::Mate(-3)),
                        verdict: Verdict::Blunder,
                        better: Some(m("e7e5", "e5")),
                        board: String::new(),
                    },
                    PlyResult {
                        played: m("P@e4", "P@e4"),
                        eval_after: None,
                        verdict: Verdict::Unjudged,
                        better: Some(m("", "")),
                        board: "B".into(),
                    },
                ],
                white_accuracy: Some(93.456_789_012_345_6),
                black_accuracy: Some(0.1),
                white_counts: [1, 2, 3],
                black_counts: [4, 5, 6],
                error: String::new(),
                engine: "Stockfish 17".into(),
            },
            GameResult {
                index: 2,
                error: "analysis failed: 3:colons: and\nlines é".into(),
                ..GameResult::default()
            },
        ];
        for r in results {
            let stored = encode_result(&r);
            assert!(stored.starts_with(RESULT_TAG), "{stored}");
            assert_eq!(decode_result(stored.as_bytes()).unwrap(), r, "{stored}");
        }
        assert!(decode_result(b"gr1:1:0").is_err());
        assert!(decode_result(b"gr1:9:").is_err());
        assert!(decode_result(b"gr2:1:0").is_err());
        // Version 1 (no engine) still reads, with an empty engine.
        let v1 = format!(
            "{RESULT_TAG_V1}{}",
            pack(&["4", "cp:12", "", "", "0 0 0 0 0 1", ""])
        );
        let read = decode_result(v1.as_bytes()).unwrap();
        assert_eq!((read.index, read.engine.as_str()), (4, ""));
        assert_eq!(read.start_eval, Some(Reported::Cp(12)));
        assert_eq!(read.black_counts, [0, 0, 1]);
    }

    #[test]
    fn packed_lists_round_trip() {
        for items in [vec![], vec![""], vec!["a:b", "", "12:x", "é"]] {
            assert_eq!(unpack(&pack(&items)).unwrap(), items);
        }
        assert!(unpack("3:ab").is_err());
        assert!(unpack("x:ab").is_err());
        assert!(unpack("ab").is_err());
    }
}
