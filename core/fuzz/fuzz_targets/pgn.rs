//! PGN reader: never panics; a game that validates exports to text that reads and validates
//! to the same moves.
#![no_main]
use arbiter_core::Locale;
use arbiter_core::pgn::read_games;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(games) = read_games(text) else { return };
    for mut game in games {
        if game.validate(Locale::English, Locale::English).is_ok() {
            let written = game.to_string();
            let mut again = read_games(&written).expect("exported PGN reads");
            assert_eq!(again.len(), 1, "{written}");
            again[0]
                .validate(Locale::English, Locale::English)
                .expect("exported PGN validates");
            assert_eq!(again[0].moves, game.moves, "{written}");
        }
    }
});
