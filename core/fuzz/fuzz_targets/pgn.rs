//! PGN reader: never panics, whatever the nesting (read once with the default limits and once
//! with limits high enough for hostile depths, so the iterative paths get deep inputs); a game
//! that validates exports to text that reads and validates to the same moves and variations.
#![no_main]
use arbiter_core::Locale;
use arbiter_core::pgn::{PgnLimits, read_games, read_games_with};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = read_games(text);
    let deep = PgnLimits {
        max_depth: 1_000_000,
        max_variations: 1_000_000,
        ..PgnLimits::default()
    };
    let Ok(games) = read_games_with(text, &deep) else {
        return;
    };
    for mut game in games {
        if game.validate(Locale::English, Locale::English).is_ok() {
            let written = game.to_string();
            let mut again = read_games_with(&written, &deep).expect("exported PGN reads");
            assert_eq!(again.len(), 1, "{written}");
            again[0]
                .validate(Locale::English, Locale::English)
                .expect("exported PGN validates");
            assert_eq!(again[0].moves, game.moves, "{written}");
            assert_eq!(again[0].variations, game.variations, "{written}");
        }
    }
});
