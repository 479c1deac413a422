//! Byzantine position strings and moves: never panics; an accepted position round-trips and
//! every move it lists parses back to itself.
#![no_main]
use arbiter_core::byzantine::{ByzantineRules, ByzantineVariant};
use arbiter_core::{Byzantine, Locale, Notation, Position};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let citadel = if flags & 1 != 0 {
        ByzantineVariant::Citadel
    } else {
        ByzantineVariant::Plain
    };
    let rules = ByzantineRules {
        facing_pawns: flags & 2 == 0,
        ..ByzantineRules::default()
    };
    // The text is either a position string, or "position string|move".
    let (position, mv) = text.split_once('|').unwrap_or((text, ""));
    let start = Byzantine::start(citadel, rules);
    let _ = start.parse_move(mv, Notation::Uci, Locale::English);
    if let Ok(pos) = Byzantine::from_text(position, citadel, rules) {
        let written = pos.to_text();
        assert_eq!(
            Byzantine::from_text(&written, citadel, rules),
            Ok(pos),
            "{written}"
        );
        let _ = pos.terminal();
        for m in pos.legal_moves() {
            let uci = pos.move_to_uci(m);
            assert_eq!(pos.parse_move(&uci, Notation::Uci, Locale::English), Ok(m));
        }
        let _ = pos.parse_move(mv, Notation::Uci, Locale::English);
    }
});
