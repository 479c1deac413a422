//! Reading what the previous version stored in Redis: work items as prost-encoded
//! `arbiter.analysis.v1.GameMoves` and results as prost-encoded `GameResult`. During a rolling
//! upgrade, workers and replicas of this version still meet them (items queued, results kept,
//! by older processes); nothing writes them any more (`batch::record` is the encoding
//! written, and reads these through here). Outside the gRPC conversions (`crate::convert`), the
//! only place where batch values meet protobuf; it goes when no value of the previous version
//! can remain (after a job's retention).

use crate::batch::types::{GameResult, ListedGame, MoveText, PlyResult, Verdict};
use arbiter_engine::score::Reported;
use arbiter_proto::analysis::v1 as pb;

/// A work item the previous version wrote: a prost-encoded `GameMoves`, as the game it lists
/// (unchecked; `batch::record` replays it).
///
/// # Errors
/// Bytes that are not a `GameMoves`, in words.
pub fn decode_item(item: &[u8]) -> Result<ListedGame, String> {
    let g: pb::GameMoves =
        prost::Message::decode(item).map_err(|e| format!("cannot decode the item: {e}"))?;
    Ok(crate::convert::listed_game(&g))
}

fn score(s: Option<pb::EngineScore>) -> Option<Reported> {
    match s?.value? {
        pb::engine_score::Value::Cp(n) => Some(Reported::Cp(n)),
        pb::engine_score::Value::Mate(n) => Some(Reported::Mate(n)),
    }
}

fn move_text(m: arbiter_proto::common::v1::Move) -> MoveText {
    MoveText {
        uci: m.uci,
        san: m.san,
    }
}

/// A result the previous version wrote: a prost-encoded `GameResult`.
///
/// # Errors
/// Bytes that are not one, in words.
pub fn decode_result(stored: &[u8]) -> Result<GameResult, String> {
    let r: pb::GameResult = prost::Message::decode(stored).map_err(|e| e.to_string())?;
    let plies = r
        .plies
        .into_iter()
        .map(|p| PlyResult {
            verdict: match pb::Judgement::try_from(p.judgement) {
                Ok(pb::Judgement::Good) => Verdict::Good,
                Ok(pb::Judgement::Inaccuracy) => Verdict::Inaccuracy,
                Ok(pb::Judgement::Mistake) => Verdict::Mistake,
                Ok(pb::Judgement::Blunder) => Verdict::Blunder,
                Ok(pb::Judgement::Unspecified) | Err(_) => Verdict::Unjudged,
            },
            played: p.r#move.map(move_text).unwrap_or_default(),
            eval_after: score(p.eval_after),
            better: p.better.map(move_text),
            board: p.board,
        })
        .collect();
    Ok(GameResult {
        index: r.index,
        start_eval: score(r.start_eval),
        plies,
        white_accuracy: r.white_accuracy,
        black_accuracy: r.black_accuracy,
        white_counts: [r.white_inaccuracies, r.white_mistakes, r.white_blunders],
        black_counts: [r.black_inaccuracies, r.black_mistakes, r.black_blunders],
        error: r.error,
        engine: r.engine,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{Game, record};
    use arbiter_core::bughouse::Match;
    use arbiter_core::{AnyPosition, Position, Variant};
    use arbiter_kit::convert::variant_to_proto;
    use arbiter_proto::common::v1 as common;

    /// What the previous version queued: a prost-encoded `GameMoves`.
    fn old_item(variant: Variant, text: &str, moves: &[&str]) -> Vec<u8> {
        prost::Message::encode_to_vec(&pb::GameMoves {
            start: Some(common::Position {
                variant: variant_to_proto(variant),
                text: text.into(),
                rules: vec![],
            }),
            moves: moves.iter().map(|m| (*m).to_owned()).collect(),
            notation: common::MoveNotation::Uci as i32,
        })
    }

    #[test]
    fn items_of_the_previous_version_are_read() {
        let start = AnyPosition::start(Variant::Chess).unwrap();
        let item = old_item(Variant::Chess, &start.to_text(), &["e2e4", "e7e5", "g1f3"]);
        let Ok(Game::Line(g)) = record::decode_item(&item) else {
            panic!("an old line item reads");
        };
        assert_eq!(g.start, start);
        assert_eq!(g.moves.len(), 3);
        // Read back, it is written in the new encoding, to the same game.
        let new = Game::Line(g.clone()).to_item();
        assert!(new.starts_with(record::ITEM_TAG));
        let Ok(Game::Line(again)) = record::decode_item(new.as_bytes()) else {
            panic!("the new item reads");
        };
        assert_eq!((again.start, again.moves), (g.start, g.moves));

        let bfen = Match::new().to_bfen();
        let item = old_item(Variant::Bughouse, &bfen, &["Ae2e4", "ad7d5", "Bd2d4"]);
        let Ok(Game::Bughouse(b)) = record::decode_item(&item) else {
            panic!("an old bughouse item reads");
        };
        assert_eq!(b.moves.len(), 3);
        let bad = |moves: &[&str]| {
            record::decode_item(&old_item(Variant::Bughouse, &bfen, moves)).unwrap_err()
        };
        assert!(bad(&["Xe2e4"]).contains("no seat letter"));
        assert!(bad(&["ae7e5"]).contains("e7e5"), "black cannot move first");
        assert!(bad(&[""]).contains("no seat letter"));
        assert!(
            record::decode_item(&old_item(Variant::Bughouse, "not a bfen", &[]))
                .unwrap_err()
                .contains("item.start")
        );
        assert!(
            record::decode_item(b"\xff\xffnot a game")
                .unwrap_err()
                .contains("cannot decode")
        );
    }

    #[test]
    fn results_of_the_previous_version_are_read() {
        let mv = |uci: &str, san: &str| common::Move {
            uci: uci.into(),
            san: san.into(),
        };
        let old = pb::GameResult {
            index: 3,
            start_eval: Some(pb::EngineScore {
                value: Some(pb::engine_score::Value::Cp(20)),
            }),
            plies: vec![
                pb::PlyResult {
                    r#move: Some(mv("e2e4", "e4")),
                    eval_after: Some(pb::EngineScore {
                        value: Some(pb::engine_score::Value::Mate(-2)),
                    }),
                    judgement: pb::Judgement::Mistake as i32,
                    better: Some(mv("d2d4", "d4")),
                    board: String::new(),
                },
                pb::PlyResult {
                    r#move: Some(mv("e7e5", "e5")),
                    eval_after: None,
                    judgement: pb::Judgement::Unspecified as i32,
                    better: None,
                    board: "A".into(),
                },
            ],
            white_accuracy: Some(81.25),
            black_accuracy: None,
            white_inaccuracies: 1,
            white_mistakes: 2,
            white_blunders: 3,
            black_inaccuracies: 4,
            black_mistakes: 5,
            black_blunders: 6,
            error: String::new(),
            engine: String::new(),
        };
        let read = record::decode_result(&prost::Message::encode_to_vec(&old)).unwrap();
        assert_eq!(read.index, 3);
        assert_eq!(read.start_eval, Some(Reported::Cp(20)));
        assert_eq!(read.plies[0].verdict, Verdict::Mistake);
        assert_eq!(read.plies[0].eval_after, Some(Reported::Mate(-2)));
        assert_eq!(read.plies[0].better.as_ref().unwrap().san, "d4");
        assert_eq!(read.plies[1].verdict, Verdict::Unjudged);
        assert_eq!(read.plies[1].board, "A");
        assert_eq!(
            (read.white_counts, read.black_counts),
            ([1, 2, 3], [4, 5, 6])
        );
        // The client sees exactly what the previous version stored.
        assert_eq!(pb::GameResult::from(read.clone()), old);
        // And the new encoding keeps it whole.
        let again = record::decode_result(record::encode_result(&read).as_bytes()).unwrap();
        assert_eq!(again, read);
        assert!(record::decode_result(b"\xff\xff").is_err());
    }
}
