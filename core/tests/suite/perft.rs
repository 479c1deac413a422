//! Data-driven perft: every position and depth of `tests/data/*.perft` (each file's header says
//! where its counts come from). Counts up to 10 million nodes run in every build;
//! deeper ones run only in optimised builds (CI runs the suite with `--release`).

use arbiter_core::{AnyPosition, RuleOptions, Variant};

struct Case {
    id: String,
    variant: Option<Variant>,
    rules: Vec<String>,
    epd: String,
    depth: u32,
    nodes: u64,
}

fn load(file: &str) -> Vec<Case> {
    let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut cases = Vec::new();
    let (mut id, mut epd) = (String::new(), String::new());
    let (mut variant, mut rules) = (None, Vec::new());
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("id ") {
            id = rest.to_owned();
            variant = None;
            rules.clear();
        } else if let Some(rest) = line.strip_prefix("variant ") {
            variant = Some(rest.parse().expect("variant name"));
        } else if let Some(rest) = line.strip_prefix("rule ") {
            rules.push(rest.to_owned());
        } else if let Some(rest) = line.strip_prefix("epd ") {
            epd = rest.to_owned();
        } else if let Some(rest) = line.strip_prefix("perft ") {
            let (d, n) = rest.split_once(' ').expect("perft DEPTH NODES");
            cases.push(Case {
                id: id.clone(),
                variant,
                rules: rules.clone(),
                epd: epd.clone(),
                depth: d.parse().expect("depth"),
                nodes: n.parse().expect("nodes"),
            });
        }
    }
    assert!(!cases.is_empty(), "{path} has no perft lines");
    cases
}

const SHALLOW_LIMIT: u64 = 10_000_000;

fn run(variant: Variant, file: &str, deep: bool) {
    let mut ran = 0;
    for case in load(file) {
        if (case.nodes > SHALLOW_LIMIT) != deep {
            continue;
        }
        let options = RuleOptions::parse(case.rules.iter().map(String::as_str)).unwrap();
        let pos =
            AnyPosition::with_rules(case.variant.unwrap_or(variant), Some(&case.epd), &options)
                .unwrap_or_else(|e| panic!("{}: {e}", case.id));
        assert_eq!(
            pos.perft(case.depth),
            case.nodes,
            "{} depth {}",
            case.id,
            case.depth
        );
        ran += 1;
    }
    assert!(ran > 0);
}

#[test]
fn chess_perft_shallow() {
    run(Variant::Chess, "chess.perft", false);
}

#[test]
#[cfg_attr(debug_assertions, ignore = "deep perft runs in release builds")]
fn chess_perft_deep() {
    run(Variant::Chess, "chess.perft", true);
}

#[test]
fn byzantine_perft() {
    run(Variant::Byzantine, "byzantine.perft", false);
}

#[test]
fn glinski_perft() {
    run(Variant::Glinski, "glinski.perft", false);
}

#[test]
fn crazyhouse_perft_shallow() {
    run(Variant::Crazyhouse, "crazyhouse.perft", false);
}

#[test]
#[cfg_attr(debug_assertions, ignore = "deep perft runs in release builds")]
fn crazyhouse_perft_deep() {
    run(Variant::Crazyhouse, "crazyhouse.perft", true);
}
