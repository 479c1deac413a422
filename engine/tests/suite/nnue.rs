//! The network evaluation on real chess games: the accumulator brought from any earlier position
//! equals the one computed from scratch, the evaluation is the same from either colour's side,
//! and the search with a network plays legal, reproducible moves and still finds mates.

use crate::{Rng, search_with};
use arbiter_core::{Chess, Position};
use arbiter_engine::nnue::{Accumulator, Evaluation, INPUTS, Network, Pieces};
use arbiter_engine::{Engine, EnginePosition, Limits};
use std::sync::Arc;

fn network(hidden: usize, seed: u64) -> Network {
    let mut rng = Rng(seed | 1);
    Network::from_parts(
        "chess",
        hidden,
        (0..INPUTS * hidden).map(|_| rng.signed(500)).collect(),
        (0..hidden).map(|_| rng.signed(200)).collect(),
        (0..2 * hidden).map(|_| rng.signed(64)).collect(),
        -777,
    )
    .unwrap()
}

/// The positions of seeded random games, each game to its end or 200 plies.
fn games(seed: u64, count: usize) -> Vec<Vec<Chess>> {
    let mut rng = Rng(seed | 1);
    (0..count)
        .map(|_| {
            let mut pos = Chess::default();
            let mut line = vec![pos];
            for _ in 0..200 {
                let moves = pos.legal_moves();
                if moves.is_empty() {
                    break;
                }
                pos.play_unchecked(moves[rng.below(moves.len())]);
                line.push(pos);
            }
            line
        })
        .collect()
}

/// The same position with the colours exchanged and the board turned over.
fn mirrored(p: &Pieces) -> Pieces {
    let mut out = [[0; 6]; 2];
    for c in 0..2 {
        for r in 0..6 {
            out[1 - c][r] = p[c][r].swap_bytes();
        }
    }
    out
}

#[test]
fn updated_accumulators_equal_fresh_ones_and_colours_are_symmetric() {
    let net = network(32, 9);
    let mut checked = 0;
    for line in games(4, 12) {
        // One accumulator follows the game move by move (and a fresh one is brought from it to
        // each next position), one jumps two plies at a time, one is brought from the start
        // position each time (many pieces differ: it refreshes).
        let mut step = Accumulator::new(&net);
        let mut jump = Accumulator::new(&net);
        let mut from_start = Accumulator::new(&net);
        for (i, pos) in line.iter().enumerate() {
            let pieces = pos.nnue_pieces().unwrap();
            let turn = pos.turn().index();
            let mut fresh = Accumulator::new(&net);
            fresh.refresh(&net, &pieces);
            let want = net.evaluate(&fresh, turn);
            // From the previous position's accumulator into another one, as the search does.
            let mut child = Accumulator::new(&net);
            child.copy_from(&step);
            child.update(&net, &pieces);
            assert_eq!(net.evaluate(&child, turn), want, "ply {i}");
            assert_eq!(child.distance(&pieces), 0);
            step.update(&net, &pieces);
            assert_eq!(
                net.evaluate(&step, turn),
                want,
                "ply {i}: {}",
                pos.to_text()
            );
            if i % 2 == 0 {
                jump.update(&net, &pieces);
                assert_eq!(net.evaluate(&jump, turn), want);
            }
            from_start.refresh(&net, &Chess::default().nnue_pieces().unwrap());
            from_start.update(&net, &pieces);
            assert_eq!(net.evaluate(&from_start, turn), want);
            assert_eq!(step.distance(&pieces), 0);
            assert_eq!(
                net.evaluate_pieces(&mirrored(&pieces), 1 - turn),
                want,
                "mirror of {}",
                pos.to_text()
            );
            checked += 1;
        }
    }
    assert!(checked > 1000, "{checked}");
}

#[test]
fn the_search_with_a_network_is_legal_reproducible_and_finds_mates() {
    let net = Arc::new(network(32, 21));
    let positions: Vec<Chess> = games(8, 6)
        .into_iter()
        .flat_map(|g| g.into_iter().step_by(23))
        .filter(|p| !p.legal_moves().is_empty())
        .collect();
    let mut hce = Engine::<Chess>::new(4);
    hce.set_network(None);
    // An engine reused across positions: its accumulators are left from the searches before,
    // which must not change a result.
    let mut reused = Engine::<Chess>::new(4);
    reused.set_network(Some(net.clone()));
    let mut differs = 0;
    for pos in &positions {
        let mut a = Engine::<Chess>::new(4);
        a.set_network(Some(net.clone()));
        let ra = search_with(&mut a, pos, Limits::nodes(3000), 1);
        reused.clear();
        let rb = search_with(&mut reused, pos, Limits::nodes(3000), 1);
        assert_eq!(ra, rb, "{}", pos.to_text());
        assert!(pos.legal_moves().contains(&ra.best.unwrap()));
        hce.clear();
        let rh = search_with(&mut hce, pos, Limits::nodes(3000), 1);
        differs += usize::from(rh.score != ra.score);
    }
    assert!(differs * 2 > positions.len(), "the network was not used");
    // Back-rank mate in one, whatever the evaluation.
    let pos = Chess::from_fen("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1").unwrap();
    let mut e = Engine::<Chess>::new(4);
    e.set_network(Some(net));
    let r = search_with(&mut e, &pos, Limits::depth(3), 1);
    assert_eq!(pos.move_to_uci(r.best.unwrap()), "a1a8");
}

/// The network the project keeps (`engine/nets/chess.nnue`, trained by the commands in
/// docs/engine.md): it is the one built in, a new chess engine evaluates with it (the other
/// variants with their own evaluations), and it has learnt what every chess evaluation must know.
#[test]
fn the_kept_network_is_built_in_and_knows_material() {
    let net = arbiter_engine::nnue::chess();
    let file = Network::from_bytes(include_bytes!("../../nets/chess.nnue")).unwrap();
    assert_eq!(*net, file);
    assert_eq!((net.variant(), net.hidden()), ("chess", 128));
    let used = |e: Option<&Arc<Network>>| e.map(|n| n.checksum());
    assert_eq!(
        used(Engine::<Chess>::new(1).network()),
        Some(net.checksum())
    );
    assert_eq!(
        used(Engine::<arbiter_core::Crazyhouse>::new(1).network()),
        None
    );
    assert_eq!(
        used(Engine::<arbiter_core::Glinski>::new(1).network()),
        None
    );
    assert_eq!(
        used(Engine::<arbiter_core::Byzantine>::new(1).network()),
        None
    );
    // The choices engines are made with: the built-in network, none, or a given one for its
    // variant only.
    let given = Arc::new(network(8, 3));
    let choose = |e: Evaluation| {
        (
            used(e.network_for::<Chess>("chess").as_ref()),
            used(
                e.network_for::<arbiter_core::Crazyhouse>("crazyhouse")
                    .as_ref(),
            ),
        )
    };
    assert_eq!(choose(Evaluation::BuiltIn), (Some(net.checksum()), None));
    assert_eq!(choose(Evaluation::HandWritten), (None, None));
    assert_eq!(
        choose(Evaluation::Network(given.clone())),
        (Some(given.checksum()), None)
    );
    // A chess network evaluates Chess960 too, and no other variant.
    let chess960 = Evaluation::Network(given.clone()).network_for::<Chess>("chess960");
    assert_eq!(used(chess960.as_ref()), Some(given.checksum()));
    assert!(!given.evaluates("crazyhouse") && !given.evaluates("glinski"));
    let eval = |fen: &str| {
        let pos = Chess::from_fen(fen).unwrap();
        net.evaluate_pieces(&pos.nnue_pieces().unwrap(), pos.turn().index())
    };
    let start = eval("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
    assert!(start.abs() < 100, "start position {start}");
    // Black without its queen: far better for white, whoever is to move.
    let white = eval("rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
    let black = eval("rnb1kbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR b KQkq - 0 1");
    assert!(white > 500 && black < -500, "{white} {black}");
    // And a rook more is worth more than a pawn more.
    let rook = eval("4k3/pppppppp/8/8/8/8/PPPPPPPP/4K2R w - - 0 1");
    let pawn = eval("4k3/ppppppp1/8/8/8/8/PPPPPPPP/4K3 w - - 0 1");
    assert!(rook > pawn && pawn > 0, "{rook} {pawn}");
}
