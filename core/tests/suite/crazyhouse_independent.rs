//! Crazyhouse against an independent implementation (shakmaty's `variant::Crazyhouse`, a
//! dev-dependency): legal move sets, and which moves give check, on thousands of positions from
//! random games, and the FEN of every position read back into the same position (reserves and
//! promoted pieces included).

use arbiter_core::crazyhouse::HouseRules;
use arbiter_core::{Crazyhouse, Position};
use shakmaty::fen::Fen;
use shakmaty::variant::Crazyhouse as Theirs;
use shakmaty::{CastlingMode, EnPassantMode, Position as _};

const STARTS: [&str; 5] = [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1",
    "2k5/8/8/8/8/8/8/4K3[QRBNPqrbnp] w - - 0 1",
    "r1bqk2r/pppp1ppp/2n1p3/4P3/1b1Pn3/2NB1N2/PPP2PPP/R1BQK2R[] b KQkq - 0 1",
    "4k3/1Q~6/8/8/4b3/8/Kpp5/8[] b - - 0 1",
    "2rn1b1r/1pp2n1p/B1PBk1pP/5p1P/P5p1/2P2RP1/RP1QNP2/1NBK4[QPp] w - - 0 1",
];

fn theirs(fen: &str) -> Theirs {
    fen.parse::<Fen>()
        .unwrap()
        .into_position(CastlingMode::Standard)
        .unwrap_or_else(|e| panic!("{fen}: {e}"))
}

#[test]
fn agrees_with_shakmaty_on_random_crazyhouse_games() {
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut positions = 0;
    let mut with_drops = 0;
    let mut checking_drops = 0;
    for game in 0..60 {
        let mut pos =
            Crazyhouse::from_fen(STARTS[game % STARTS.len()], HouseRules::Crazyhouse).unwrap();
        for _ in 0..80 {
            let fen = pos.to_fen();
            let reference = theirs(&fen);
            let mut ours: Vec<(String, bool)> = pos
                .legal_moves()
                .iter()
                .map(|&m| (pos.move_to_uci(m), pos.gives_check(m)))
                .collect();
            ours.sort();
            let mut expected: Vec<(String, bool)> = reference
                .legal_moves()
                .iter()
                .map(|m| {
                    let mut after = reference.clone();
                    after.play_unchecked(*m);
                    (
                        m.to_uci(CastlingMode::Standard).to_string(),
                        after.is_check(),
                    )
                })
                .collect();
            expected.sort();
            assert_eq!(ours, expected, "{fen}");
            let their_fen = Fen::from_position(&reference, EnPassantMode::PseudoLegal).to_string();
            assert_eq!(
                Crazyhouse::from_fen(&their_fen, HouseRules::Crazyhouse).unwrap(),
                pos,
                "{fen} vs {their_fen}"
            );
            positions += 1;
            with_drops += usize::from(ours.iter().any(|(m, _)| m.contains('@')));
            checking_drops += ours
                .iter()
                .filter(|(m, check)| *check && m.contains('@'))
                .count();
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            pos.play_unchecked(moves[(rng % moves.len() as u64) as usize]);
        }
    }
    assert!(positions >= 3000, "{positions}");
    assert!(with_drops >= 1000, "{with_drops}");
    assert!(checking_drops >= 1000, "{checking_drops}");
}
