//! Glinski position strings and moves (coordinate and record forms, both locales): never
//! panics; an accepted position round-trips, and every legal move reads back from both of its
//! spellings.
#![no_main]
use arbiter_core::glinski::Glinski;
use arbiter_core::{Locale, Notation, Position};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let locale = if flags & 1 == 0 {
        Locale::English
    } else {
        Locale::Italian
    };
    let notation = [Notation::Auto, Notation::Uci, Notation::San][usize::from(flags >> 1) % 3];
    // The text is either a position string, or "position string|move".
    let (position, mv) = text.split_once('|').unwrap_or((text, ""));
    let _ = Glinski::new().parse_move(mv, notation, locale);
    if let Ok(pos) = Glinski::from_text(position) {
        let written = pos.to_text();
        assert_eq!(Glinski::from_text(&written), Ok(pos), "{written}");
        let _ = pos.terminal();
        let _ = pos.repetition_key();
        for m in pos.legal_moves() {
            let uci = pos.move_to_uci(m);
            assert_eq!(pos.parse_move(&uci, Notation::Uci, locale), Ok(m));
            let record = pos.move_to_san(m, locale);
            assert_eq!(
                pos.parse_move(&record, Notation::San, locale),
                Ok(m),
                "{record}"
            );
        }
        let _ = pos.parse_move(mv, notation, locale);
    }
});
