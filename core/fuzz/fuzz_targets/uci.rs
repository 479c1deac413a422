//! UCI parser: never panics; accepted text round-trips and legal moves convert back.
#![no_main]
use arbiter_core::Chess;
use arbiter_core::chess::uci::{Uci, parse_legal};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(uci) = text.parse::<Uci>() {
        assert_eq!(uci.to_string().parse::<Uci>(), Ok(uci));
    }
    for fen in [
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    ] {
        let pos = Chess::from_fen(fen).unwrap();
        if let Ok(m) = parse_legal(&pos, text) {
            assert!(pos.legal_moves().contains(&m));
        }
    }
});
