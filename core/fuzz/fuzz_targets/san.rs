//! SAN parser: never panics; an accepted move written back in strict SAN parses to itself.
#![no_main]
use arbiter_core::chess::san::{parse_san, write_san};
use arbiter_core::{Chess, Locale};
use libfuzzer_sys::fuzz_target;

const POSITIONS: [&str; 4] = [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
    "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2",
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let pos = Chess::from_fen(POSITIONS[usize::from(selector) % POSITIONS.len()]).unwrap();
    let locale = if selector & 0x80 != 0 {
        Locale::Italian
    } else {
        Locale::English
    };
    if let Ok(m) = parse_san(&pos, text, locale) {
        let strict = write_san(&pos, m, locale, true);
        assert_eq!(parse_san(&pos, &strict, locale), Ok(m), "{strict}");
    }
});
