//! Crazyhouse and bughouse FEN (with reserves and `~`) and moves, drops included: never panics;
//! an accepted position round-trips, and every legal move reads back from UCI and SAN.
#![no_main]
use arbiter_core::crazyhouse::HouseRules;
use arbiter_core::{Crazyhouse, Locale, Notation, Position};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let bughouse = if flags & 1 != 0 {
        HouseRules::Bughouse
    } else {
        HouseRules::Crazyhouse
    };
    let locale = if flags & 2 == 0 {
        Locale::English
    } else {
        Locale::Italian
    };
    // The text is either a FEN, or "FEN|move".
    let (fen, mv) = text.split_once('|').unwrap_or((text, ""));
    let _ = Crazyhouse::new(bughouse).parse_move(mv, Notation::Auto, locale);
    if let Ok(pos) = Crazyhouse::from_fen(fen, bughouse) {
        let written = pos.to_fen();
        assert_eq!(
            Crazyhouse::from_fen(&written, bughouse),
            Ok(pos),
            "{written}"
        );
        assert_eq!(pos.zobrist(), pos.compute_hash());
        let _ = pos.terminal();
        for m in pos.legal_moves() {
            let uci = pos.move_to_uci(m);
            assert_eq!(pos.parse_move(&uci, Notation::Uci, locale), Ok(m), "{uci}");
            let san = pos.move_to_san(m, locale);
            assert_eq!(pos.parse_move(&san, Notation::San, locale), Ok(m), "{san}");
        }
        let _ = pos.parse_move(mv, Notation::Auto, locale);
    }
});
