//! FEN parser: never panics; every accepted FEN round-trips and its moves can be played, read as
//! standard chess, as Chess960 (X-FEN and Shredder-FEN), and leniently (the lenient result is
//! itself a position strict reading accepts).
#![no_main]
use arbiter_core::chess::Setup;
use arbiter_core::{Chess, Position};
use libfuzzer_sys::fuzz_target;

fn check(pos: Chess) {
    let chess960 = pos.is_chess960();
    for fen in [pos.to_fen(), pos.to_shredder_fen()] {
        let again = Chess::from_fen_as(&fen, chess960).expect("written FEN parses");
        assert_eq!(again, pos, "{fen}");
        assert_eq!(again.zobrist(), pos.zobrist());
    }
    for m in pos.legal_moves() {
        let mut next = pos;
        next.play_unchecked(m);
        assert_eq!(next.zobrist(), next.compute_hash());
        assert_eq!(pos.gives_check(m), next.is_check());
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for chess960 in [false, true] {
        if let Ok(pos) = Chess::from_fen_as(text, chess960) {
            check(pos);
        }
        if let Ok(setup) = text.parse::<Setup>()
            && let Ok((pos, corrections)) = Chess::from_setup_lenient(setup, chess960)
        {
            let strict = Chess::from_fen_as(&pos.to_fen(), chess960).expect("lenient is valid");
            assert_eq!(strict, pos);
            if corrections.is_empty() {
                assert_eq!(Chess::from_fen_as(text, chess960).ok(), Some(pos));
            }
            check(pos);
        }
    }
});
