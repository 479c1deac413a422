//! FEN parser: never panics; every accepted FEN round-trips and its moves can be played.
#![no_main]
use arbiter_core::{Chess, Position};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(pos) = Chess::from_fen(text) {
        let fen = pos.to_fen();
        let again = Chess::from_fen(&fen).expect("written FEN parses");
        assert_eq!(again.to_fen(), fen);
        assert_eq!(again.zobrist(), pos.zobrist());
        for m in pos.legal_moves() {
            let mut next = pos;
            next.play_unchecked(m);
            assert_eq!(next.zobrist(), next.compute_hash());
        }
    }
});
