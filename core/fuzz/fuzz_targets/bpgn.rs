//! BPGN: never panics; a game that validates writes out as strict BPGN that reads back,
//! validates to the same moves, and writes out identically (clocks are normalised to two
//! decimals, so the first write is the fixed point).
#![no_main]
use arbiter_core::Locale;
use arbiter_core::bughouse::read_bpgn;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(games) = read_bpgn(text) else {
        return;
    };
    for mut game in games {
        if game.validate(Locale::English).is_err() {
            continue;
        }
        let written = game.to_string();
        let mut again = read_bpgn(&written)
            .unwrap_or_else(|e| panic!("{e}\n{written}"))
            .remove(0);
        again
            .validate(Locale::English)
            .unwrap_or_else(|e| panic!("{e}\n{written}"));
        let sans = |g: &arbiter_core::bughouse::BpgnGame| {
            g.moves.iter().map(|m| m.san.clone()).collect::<Vec<_>>()
        };
        assert_eq!(sans(&again), sans(&game), "{written}");
        assert_eq!(again.to_string(), written);
    }
});
