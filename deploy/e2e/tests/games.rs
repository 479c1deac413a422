//! The day's game plans, checked against the rules in `arbiter-core` without a server: the
//! scripted game is legal and mates in chess and on a bughouse board, random quiet moves never
//! end a game by themselves, and the piece count sees a lost or duplicated piece.

use arbiter_core::{AnyPosition, Position, Variant};
use arbiter_e2e::games::{OPERA, Rng, piece_count, play_uci, quiet_move};

fn play_all(variant: Variant, moves: &[&str]) -> AnyPosition {
    let mut p = AnyPosition::start(variant).expect("start");
    for (i, mv) in moves.iter().enumerate() {
        assert!(p.terminal().is_none(), "{variant:?}: over before ply {i}");
        p = play_uci(&p, mv).unwrap_or_else(|e| panic!("{variant:?}: {e}"));
    }
    p
}

#[test]
fn the_opera_game_is_legal_and_ends_in_mate() {
    for variant in [Variant::Chess, Variant::Bughouse] {
        let end = play_all(variant, &OPERA);
        assert!(end.is_check(), "{variant:?}");
        assert!(
            end.legal_moves().is_empty(),
            "{variant:?}: Black has a move"
        );
        let before = play_all(variant, &OPERA[..32]);
        assert!(
            before.terminal().is_none(),
            "{variant:?}: over before the mate"
        );
    }
}

#[test]
fn quiet_moves_never_give_check_and_play_on() {
    for seed in 0..20 {
        let mut rng = Rng::new(seed);
        let mut p = AnyPosition::start(Variant::Chess).expect("start");
        for ply in 0..120 {
            if p.terminal().is_some() {
                // A random game may end by the rules (stalemate, bare kings): never by mate.
                assert!(!p.is_check(), "seed {seed}: mated at ply {ply}");
                break;
            }
            let mv = quiet_move(&p, &mut rng).expect("a legal move");
            let next = play_uci(&p, &mv).expect("legal");
            let quiet_exists = p.legal_moves().iter().any(|&m| !p.gives_check(m));
            assert!(
                !quiet_exists || !next.is_check(),
                "seed {seed}: {mv} checks"
            );
            p = next;
        }
    }
}

#[test]
fn the_same_seed_plays_the_same_game() {
    let game = |seed| {
        let mut rng = Rng::new(seed);
        let mut p = AnyPosition::start(Variant::Chess).expect("start");
        let mut moves = Vec::new();
        for _ in 0..40 {
            let mv = quiet_move(&p, &mut rng).expect("move");
            p = play_uci(&p, &mv).expect("legal");
            moves.push(mv);
        }
        moves
    };
    assert_eq!(game(5), game(5));
    assert_ne!(game(5), game(6));
}

#[test]
fn the_piece_count_reads_boards_and_reserves() {
    let start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1";
    assert_eq!(piece_count(start, "", ""), (16, 16));
    // White took Black's d-pawn here: the pawn is now in a black reserve (on the other board
    // in bughouse), and counted there; without it a piece would be missing.
    let taken = "rnbqkbnr/ppp1pppp/8/3P4/8/8/PPP1PPPP/RNBQKBNR[] b KQkq - 0 2";
    assert_eq!(piece_count(taken, "", "p"), (16, 16));
    assert_eq!(piece_count(taken, "", ""), (16, 15));
    // A promoted piece (marked `~`) counts once; reserves count by their own colour only.
    let promoted = "rnbqkQ~r/ppppp1pp/8/8/8/8/PPPPP1PP/RNBQKBNR[Pp] b KQkq - 0 9";
    assert_eq!(piece_count(promoted, "P", "pn"), (17, 15));
}
