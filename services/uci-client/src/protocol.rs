//! Reading the engine's lines: `id name`, `option`, `info`, `bestmove`. Pure functions over
//! text, tolerant of what they do not know (unknown tokens are skipped, unparsable numbers
//! read as absent).

use arbiter_engine::Bound;
use arbiter_engine::score::Reported;

/// A score as the engine wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Score {
    pub value: Reported,
    pub bound: Bound,
}

/// The fields of an `info` line (moves still in the engine's dialect).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Info {
    pub depth: Option<u32>,
    pub seldepth: Option<u32>,
    pub multipv: Option<usize>,
    pub score: Option<Score>,
    pub nodes: Option<u64>,
    pub nps: Option<u64>,
    pub hashfull: Option<u32>,
    pub time_ms: Option<u64>,
    pub pv: Vec<String>,
}

/// Keys of an `info` line and how many value tokens each takes (`score` and `pv` are read
/// apart; `string` takes the rest of the line).
const INFO_KEYS: [(&str, usize); 12] = [
    ("depth", 1),
    ("seldepth", 1),
    ("multipv", 1),
    ("nodes", 1),
    ("nps", 1),
    ("hashfull", 1),
    ("time", 1),
    ("tbhits", 1),
    ("sbhits", 1),
    ("cpuload", 1),
    ("currmove", 1),
    ("currmovenumber", 1),
];

/// The fields of an `info` line; `None` if it is not one.
pub(crate) fn parse_info(line: &str) -> Option<Info> {
    let mut t = line.split_ascii_whitespace().peekable();
    if t.next() != Some("info") {
        return None;
    }
    let mut info = Info::default();
    while let Some(key) = t.next() {
        match key {
            "string" => break,
            "score" => {
                let kind = t.next();
                let n = t.next().and_then(|v| v.parse::<i64>().ok());
                let value = match (kind, n) {
                    (Some("cp"), Some(n)) => {
                        Some(Reported::Cp(n.clamp(-1_000_000, 1_000_000) as i32))
                    }
                    (Some("mate"), Some(n)) => {
                        Some(Reported::Mate(n.clamp(-10_000, 10_000) as i32))
                    }
                    _ => None,
                };
                let mut bound = Bound::Exact;
                match t.peek() {
                    Some(&"lowerbound") => {
                        bound = Bound::Lower;
                        t.next();
                    }
                    Some(&"upperbound") => {
                        bound = Bound::Upper;
                        t.next();
                    }
                    _ => {}
                }
                info.score = value.map(|value| Score { value, bound });
            }
            "wdl" => {
                t.next();
                t.next();
                t.next();
            }
            "pv" => {
                // The pv runs to the end of the line, or to the next key (engines put it last,
                // but nothing requires it).
                while let Some(m) = t.peek() {
                    if is_info_key(m) {
                        break;
                    }
                    info.pv.push((*m).to_owned());
                    t.next();
                }
            }
            "refutation" | "currline" => {
                while t.peek().is_some_and(|m| !is_info_key(m)) {
                    t.next();
                }
            }
            _ => {
                let Some(&(_, _)) = INFO_KEYS.iter().find(|(k, _)| *k == key) else {
                    // Unknown: skip the token alone.
                    continue;
                };
                let value = t.next();
                let n = value.and_then(|v| v.parse::<u64>().ok());
                match key {
                    "depth" => info.depth = n.and_then(|n| u32::try_from(n).ok()),
                    "seldepth" => info.seldepth = n.and_then(|n| u32::try_from(n).ok()),
                    "multipv" => info.multipv = n.and_then(|n| usize::try_from(n).ok()),
                    "nodes" => info.nodes = n,
                    "nps" => info.nps = n,
                    "hashfull" => info.hashfull = n.and_then(|n| u32::try_from(n).ok()),
                    "time" => info.time_ms = n,
                    _ => {}
                }
            }
        }
    }
    Some(info)
}

fn is_info_key(token: &str) -> bool {
    matches!(
        token,
        "string" | "score" | "wdl" | "pv" | "refutation" | "currline"
    ) || INFO_KEYS.iter().any(|(k, _)| *k == token)
}

/// `bestmove X [ponder Y]`: `Some((X, Y))`, or `None` if the line is not one. `X` is empty
/// when the line has no move.
pub(crate) fn parse_bestmove(line: &str) -> Option<(String, Option<String>)> {
    let mut t = line.split_ascii_whitespace();
    if t.next() != Some("bestmove") {
        return None;
    }
    let best = t.next().unwrap_or_default().to_owned();
    let ponder = match (t.next(), t.next()) {
        (Some("ponder"), Some(p)) => Some(p.to_owned()),
        _ => None,
    };
    Some((best, ponder))
}

/// An option the engine declared in its `uci` answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UciOption {
    pub name: String,
    pub kind: String,
    /// A spin's maximum.
    pub max: Option<i64>,
    /// A combo's values.
    pub vars: Vec<String>,
}

/// `option name N type T [default D] [min A] [max B] [var V]...`; option names and values may
/// hold spaces (`Skill Level`), so each runs to the next keyword.
pub(crate) fn parse_option(line: &str) -> Option<UciOption> {
    let rest = line.strip_prefix("option ")?;
    let words: Vec<&str> = rest.split_ascii_whitespace().collect();
    let mut fields: Vec<(&str, String)> = Vec::new();
    for w in words {
        if matches!(w, "name" | "type" | "default" | "min" | "max" | "var") {
            fields.push((w, String::new()));
        } else if let Some((_, v)) = fields.last_mut() {
            if !v.is_empty() {
                v.push(' ');
            }
            v.push_str(w);
        }
    }
    let get = |k: &str| fields.iter().find(|(f, _)| *f == k).map(|(_, v)| v.clone());
    let name = get("name").filter(|n| !n.is_empty())?;
    Some(UciOption {
        name,
        kind: get("type").unwrap_or_default(),
        max: get("max").and_then(|v| v.parse().ok()),
        vars: fields
            .iter()
            .filter(|(f, _)| *f == "var")
            .map(|(_, v)| v.clone())
            .collect(),
    })
}

/// `id name X`: `Some(X)`.
pub(crate) fn parse_id_name(line: &str) -> Option<&str> {
    line.strip_prefix("id name ").map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_info_line() {
        let i = parse_info("info depth 12 seldepth 17 multipv 2 score cp -35 upperbound nodes 123456 nps 999 hashfull 12 tbhits 0 time 77 pv e2e4 e7e5 g1f3").unwrap();
        assert_eq!(i.depth, Some(12));
        assert_eq!(i.seldepth, Some(17));
        assert_eq!(i.multipv, Some(2));
        assert_eq!(
            i.score,
            Some(Score {
                value: Reported::Cp(-35),
                bound: Bound::Upper
            })
        );
        assert_eq!(
            (i.nodes, i.nps, i.hashfull, i.time_ms),
            (Some(123456), Some(999), Some(12), Some(77))
        );
        assert_eq!(i.pv, ["e2e4", "e7e5", "g1f3"]);
    }

    #[test]
    fn mate_wdl_and_lowerbound() {
        let i =
            parse_info("info depth 3 score mate -2 lowerbound wdl 0 0 1000 pv h7h8 P@g7").unwrap();
        assert_eq!(
            i.score,
            Some(Score {
                value: Reported::Mate(-2),
                bound: Bound::Lower
            })
        );
        assert_eq!(i.pv, ["h7h8", "P@g7"]);
    }

    #[test]
    fn missing_fields_garbage_and_huge_numbers() {
        let i = parse_info("info depth 5 currmove e2e4 currmovenumber 1").unwrap();
        assert_eq!(i.depth, Some(5));
        assert!(i.score.is_none() && i.pv.is_empty());
        let i = parse_info("info string NNUE evaluation using nn.nnue pv e2e4").unwrap();
        assert_eq!(i, Info::default());
        let i = parse_info(
            "info depth 99999999999999999999999 nodes 18446744073709551616 score cp 99999999999 pv",
        )
        .unwrap();
        assert_eq!(i.depth, None);
        assert_eq!(i.nodes, None);
        assert_eq!(i.score.map(|s| s.value), Some(Reported::Cp(1_000_000)));
        assert!(i.pv.is_empty());
        let i = parse_info("info score cp").unwrap();
        assert_eq!(i.score, None);
        let i = parse_info("info score banana 3 depth x frobnicate 7 pv a2a3").unwrap();
        assert_eq!(i.score, None);
        assert_eq!(i.depth, None);
        assert_eq!(i.pv, ["a2a3"]);
        assert_eq!(parse_info("infox depth 3"), None);
        assert_eq!(parse_info(""), None);
        assert_eq!(parse_info("bestmove e2e4"), None);
        let i = parse_info("info pv e2e4 e7e5 depth 4").unwrap();
        assert_eq!(i.pv, ["e2e4", "e7e5"]);
        assert_eq!(i.depth, Some(4));
    }

    #[test]
    fn bestmove_lines() {
        assert_eq!(
            parse_bestmove("bestmove e2e4 ponder e7e5"),
            Some(("e2e4".to_owned(), Some("e7e5".to_owned())))
        );
        assert_eq!(
            parse_bestmove("bestmove (none)"),
            Some(("(none)".to_owned(), None))
        );
        assert_eq!(parse_bestmove("bestmove"), Some((String::new(), None)));
        assert_eq!(
            parse_bestmove("bestmove e2e4 ponder"),
            Some(("e2e4".to_owned(), None))
        );
        assert_eq!(parse_bestmove("bestmovee2e4"), None);
        assert_eq!(parse_bestmove("info bestmove e2e4"), None);
    }

    #[test]
    fn options_and_ids() {
        let o =
            parse_option("option name Skill Level type spin default 20 min -20 max 20").unwrap();
        assert_eq!(o.name, "Skill Level");
        assert_eq!(o.kind, "spin");
        assert_eq!(o.max, Some(20));
        let o = parse_option("option name UCI_Variant type combo default chess var 3check var bughouse var crazyhouse").unwrap();
        assert_eq!(o.vars, ["3check", "bughouse", "crazyhouse"]);
        let o = parse_option("option name Debug Log File type string default ").unwrap();
        assert_eq!(o.name, "Debug Log File");
        assert_eq!(parse_option("option type spin"), None);
        assert_eq!(parse_option("options name x"), None);
        assert_eq!(
            parse_id_name("id name Stockfish 15.1"),
            Some("Stockfish 15.1")
        );
        assert_eq!(parse_id_name("id author x"), None);
    }
}
