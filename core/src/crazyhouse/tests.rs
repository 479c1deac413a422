use super::*;
use crate::position::perft;

fn zh(fen: &str) -> Crazyhouse {
    Crazyhouse::from_fen(fen, HouseRules::Crazyhouse).unwrap_or_else(|e| panic!("{fen}: {e}"))
}

fn bug(fen: &str) -> Crazyhouse {
    Crazyhouse::from_fen(fen, HouseRules::Bughouse).unwrap_or_else(|e| panic!("{fen}: {e}"))
}

fn play(pos: &Crazyhouse, moves: &[&str]) -> Crazyhouse {
    let mut p = *pos;
    for m in moves {
        let mv = p
            .parse_move(m, Notation::Auto, Locale::English)
            .unwrap_or_else(|e| panic!("{m}: {e}"));
        p.play_unchecked(mv);
        assert_eq!(p.zobrist(), p.compute_hash(), "after {m}");
    }
    p
}

#[test]
fn fen_with_reserves_and_promoted_pieces_round_trips() {
    for fen in [
        "rnbqkb1r/pppppppp/5n2/8/4P3/8/PPPP1PPP/RNBQKBNR[Pp] w KQkq - 1 2",
        "4k3/1Q~6/8/8/4b3/8/Kpp5/8[] b - - 0 1",
        "2k5/8/8/8/8/8/8/4K3[QRBNPqrbnp] w - - 0 1",
    ] {
        assert_eq!(zh(fen).to_fen(), fen);
    }
    // The ninth-rank form and a missing reserve are read too.
    assert_eq!(
        zh("4k3/1Q~6/8/8/4b3/8/Kpp5/8/ b - - 0 1").to_fen(),
        "4k3/1Q~6/8/8/4b3/8/Kpp5/8[] b - - 0 1"
    );
    assert_eq!(
        Crazyhouse::new(HouseRules::Crazyhouse).to_fen(),
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1"
    );
    // More than 16 pieces a side is fine in bughouse.
    bug("rnbqkbnr/pppppppp/8/8/8/2NNN3/PPPPPPPP/RNBQKBNR[] w KQkq - 0 1");
    for (fen, field) in [
        ("8/8/8/8/8/8/8/4K2k[X] w - - 0 1", "reserve"),
        ("8/8/8/8/8/8/8/4K2k[K] w - - 0 1", "reserve"),
        ("8/8/8/8/8/8/8/4K2k[P w - - 0 1", "reserve"),
        ("k7/8/8/8/8/8/P~7/4K3[] w - - 0 1", "placement"),
        ("k7/8/8/8/8/8/8/4K3[PPPPPPPPPPPPPPPPP] w - - 0 1", "reserve"),
        ("k7/8/8/8/8/8/8/4K3[] x - - 0 1", "turn"),
    ] {
        let err = Crazyhouse::from_fen(fen, HouseRules::Crazyhouse).expect_err(fen);
        assert_eq!(err.field(), field, "{fen}: {err}");
    }
}

#[test]
fn drops_and_their_errors() {
    let pos = zh("4k3/8/8/8/8/8/8/4K3[Np] w - - 0 1");
    // A knight anywhere empty: 64 - 2 kings.
    let drops = pos.legal_moves().iter().filter(|m| m.is_drop()).count();
    assert_eq!(drops, 62);
    let m = pos
        .parse_move("N@f3", Notation::Auto, Locale::English)
        .unwrap();
    assert_eq!(pos.move_to_uci(m), "N@f3");
    assert_eq!(pos.move_to_san(m, Locale::English), "N@f3");
    assert_eq!(pos.move_to_san(m, Locale::Italian), "C@f3");
    // UCI drops are English whatever the locale (found by the crazyhouse fuzz target: `R@e2`
    // in Italian SAN is a king).
    let rook = zh("4k3/8/8/8/8/8/8/4K3[R] w - - 0 1");
    let r = rook
        .parse_move("R@e2", Notation::Uci, Locale::Italian)
        .unwrap();
    assert_eq!(rook.move_to_uci(r), "R@e2");
    assert_eq!(rook.move_to_san(r, Locale::Italian), "T@e2+");
    assert_eq!(
        rook.parse_move("T@e2", Notation::San, Locale::Italian),
        Ok(r)
    );
    assert_eq!(
        rook.parse_move("R@e2", Notation::Auto, Locale::Italian),
        Ok(r)
    );
    assert!(
        rook.parse_move("R@e2", Notation::San, Locale::Italian)
            .is_err()
    );
    let after = play(&pos, &["N@f3"]);
    assert_eq!(after.reserves().count(Color::White, Role::Knight), 0);
    assert_eq!(after.to_fen(), "4k3/8/8/8/8/5N2/8/4K3[p] b - - 1 1");
    let illegal =
        |pos: &Crazyhouse, t: &str| match pos.parse_move(t, Notation::Auto, Locale::English) {
            Err(MoveError::Illegal { reason, .. }) => reason,
            other => panic!("{t}: {other:?}"),
        };
    assert_eq!(
        illegal(&pos, "B@f3"),
        IllegalReason::NotInReserve { piece: 'B' }
    );
    assert_eq!(illegal(&pos, "N@e1"), IllegalReason::Blocked);
    assert!(matches!(
        pos.parse_move("N@z9", Notation::Auto, Locale::English),
        Err(MoveError::Syntax { .. })
    ));
    // Black: no pawn on the 1st or 8th rank; `@e4` is a pawn drop.
    let black = play(&pos, &["N@f3"]);
    assert_eq!(illegal(&black, "P@a1"), IllegalReason::CannotReach);
    assert_eq!(illegal(&black, "@h8"), IllegalReason::CannotReach);
    play(&black, &["@e4"]);
}

#[test]
fn a_pawn_dropped_on_its_second_rank_may_double_step_and_be_taken_en_passant() {
    let pos = zh("4k3/8/8/8/3p4/8/8/4K3[P] w - - 0 1");
    let p = play(&pos, &["P@e2", "Kd7", "e4"]);
    assert_eq!(
        p.chess().ep_square().map(|s| s.to_string()).as_deref(),
        Some("e3")
    );
    let p = play(&p, &["dxe3"]);
    // Crazyhouse: the captured pawn joins Black's reserve.
    assert_eq!(p.reserves().count(Color::Black, Role::Pawn), 1);
}

#[test]
fn captures_feed_the_reserve_and_promoted_pieces_revert_to_pawns() {
    // The promoted queen on b7 is taken: Black gets a pawn, not a queen.
    let taken = play(&zh("1r2k3/1Q~6/8/8/8/8/8/4K3[] b - - 0 1"), &["Rxb7"]);
    assert_eq!(taken.reserves().count(Color::Black, Role::Pawn), 1);
    assert_eq!(taken.reserves().count(Color::Black, Role::Queen), 0);
    assert!(taken.promoted().is_empty());
    // A promotion marks the new piece; moving it carries the mark.
    let p = play(
        &zh("4k3/P7/8/8/8/8/8/4K3[] w - - 0 1"),
        &["a8=Q+", "Kd7", "Qa4+"],
    );
    assert_eq!(p.to_fen(), "8/3k4/8/8/Q~7/8/8/4K3[] b - - 2 2");
    // Bughouse: the capture leaves the board; the match sends it to the partner.
    let b = bug("1r2k3/1Q~6/8/8/8/8/8/4K3[] b - - 0 1");
    let m = b
        .parse_move("Rxb7", Notation::Auto, Locale::English)
        .unwrap();
    assert_eq!(b.captured_unit(m), Some(Role::Pawn));
    let after = play(&b, &["Rxb7"]);
    assert!(after.reserves().is_empty_for(Color::Black));
}

#[test]
fn bughouse_mate_is_stricter_than_chess_mate() {
    // Back-rank "mate" by a distant rook: a drop on b1-f1 would block it.
    let back_rank = "6k1/8/8/8/8/8/5PPP/r5K1 w - - 0 1";
    assert_eq!(
        zh(back_rank).terminal().map(|o| o.reason),
        Some(EndReason::Checkmate)
    );
    assert_eq!(bug(back_rank).terminal(), None, "a bughouse player waits");
    assert!(!bug(back_rank).is_bughouse_mate());
    // Holding a piece, the block is a legal move.
    let holding = bug("6k1/8/8/8/8/8/5PPP/r5K1[N] w - - 0 1");
    assert_eq!(holding.legal_moves().len(), 5);
    // Real bughouse mates: contact, knight (smothered), double check.
    for fen in [
        "6k1/8/8/2b5/8/8/6PP/6qK w - - 0 1",
        "6k1/8/8/8/8/8/5nPP/6RK w - - 0 1",
        "6k1/8/8/8/8/8/5nPP/r6K w - - 0 1",
    ] {
        let outcome = bug(fen).terminal();
        assert_eq!(
            outcome.map(|o| o.reason),
            Some(EndReason::Checkmate),
            "{fen}"
        );
        assert_eq!(outcome.unwrap().score.to_string(), "0-1");
    }
    // The mating drop is marked '#', a blockable check only '+'.
    let mating = bug("6k1/8/8/2b5/8/8/6PP/7K[q] b - - 0 1");
    let m = mating
        .parse_move("Q@g1", Notation::Auto, Locale::English)
        .unwrap();
    assert_eq!(mating.move_to_san(m, Locale::English), "Q@g1#");
    let checking = bug("6k1/8/8/8/8/8/5PPP/6K1[r] b - - 0 1");
    let m = checking
        .parse_move("R@a1", Notation::Auto, Locale::English)
        .unwrap();
    assert_eq!(checking.move_to_san(m, Locale::English), "R@a1+");
    // No move and no check: stalemate in crazyhouse, waiting in bughouse.
    let stuck = "7k/5Q2/6K1/8/8/8/8/8[] b - - 0 1";
    assert_eq!(
        zh(stuck).terminal().map(|o| o.reason),
        Some(EndReason::Stalemate)
    );
    assert_eq!(bug(stuck).terminal(), None);
}

#[test]
fn perft_start_and_random_games_keep_the_hash_and_fen() {
    let start = Crazyhouse::new(HouseRules::Crazyhouse);
    assert_eq!(perft(&start, 3), 8902);
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    for game in 0..40 {
        let mut pos = Crazyhouse::new(if game % 2 == 1 {
            HouseRules::Bughouse
        } else {
            HouseRules::Crazyhouse
        });
        for _ in 0..120 {
            assert_eq!(pos.zobrist(), pos.compute_hash(), "{pos:?}");
            let fen = pos.to_fen();
            assert_eq!(
                Crazyhouse::from_fen(&fen, pos.rules()).unwrap(),
                pos,
                "{fen}"
            );
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let m = moves[(rng % moves.len() as u64) as usize];
            for locale in [Locale::English, Locale::Italian] {
                let san = pos.move_to_san(m, locale);
                assert_eq!(
                    pos.parse_move(&san, Notation::San, locale),
                    Ok(m),
                    "{san} in {fen}"
                );
            }
            assert_eq!(
                pos.parse_move(&pos.move_to_uci(m), Notation::Uci, Locale::English),
                Ok(m)
            );
            pos.play_unchecked(m);
        }
    }
}
