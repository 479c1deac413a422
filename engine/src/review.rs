//! Game review as lichess computes it: winning chances from an evaluation, the classification
//! of a move by the winning chances it gives away (inaccuracy, mistake, blunder), the accuracy
//! of a move, and a player's accuracy over a game.
//!
//! Everything is from white's point of view on the way in (engine scores of the positions,
//! white-relative) and from the mover's point of view on the way out. Mate scores count as the
//! cap, ±1000 centipawns: lichess turns a mate into at least ±1100 and then caps at ±1000, so the
//! result is the same. (Lichess also has separate remarks for a mate found or missed; those are
//! not reproduced here: a lost mate shows as the drop in winning chances it causes.)
//!
//! The formulas, with `cp` capped to ±1000:
//! - winning chances `2 / (1 + exp(−0.00368208 · cp)) − 1`, from −1 to 1;
//! - win percentage `50 + 50 · winning chances`;
//! - a move is an inaccuracy, a mistake or a blunder when the mover's winning chances drop by at
//!   least 0.1, 0.2 or 0.3 ([`judge`]);
//! - move accuracy `103.1668 · exp(−0.04354 · (win% before − win% after)) − 3.1669 + 1`,
//!   between 0 and 100, and 100 when the win percentage did not drop ([`move_accuracy`]);
//! - game accuracy: the mean of a volatility-weighted mean and the harmonic mean of the
//!   player's move accuracies ([`game_accuracy`]).
//!
//! Not for bughouse: a single board's evaluation ignores the partner's game.

use crate::analyze::{Analysis, AnalysisSettings, Engines, analyze};
use crate::score::{MATE, MATE_BOUND, Reported, outcome_score, win_chance};
use crate::time::TimeSource;
use crate::tt::Bound;
use arbiter_core::{AnyMove, AnyPosition, Color, Position};
use std::sync::atomic::AtomicBool;

/// The evaluation lichess assumes for the standard starting position (centipawns, white),
/// the "before" of the first move when the game starts there.
pub const INITIAL_CP: i32 = 15;

/// The largest evaluation that counts, in centipawns either way; mates count as this.
pub const CP_CAP: i32 = 1000;

/// Drops in winning chances (on the −1 to 1 scale) from which a move is an inaccuracy, a
/// mistake or a blunder.
pub const THRESHOLDS: [(f64, Judgement); 3] = [
    (0.3, Judgement::Blunder),
    (0.2, Judgement::Mistake),
    (0.1, Judgement::Inaccuracy),
];

/// How bad a move was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Judgement {
    /// Winning chances down by 0.1 or more.
    Inaccuracy,
    /// Down by 0.2 or more.
    Mistake,
    /// Down by 0.3 or more.
    Blunder,
}

impl Judgement {
    /// The PGN numeric annotation glyph: `$6` (?!), `$2` (?) or `$4` (??).
    pub fn nag(self) -> u8 {
        match self {
            Judgement::Inaccuracy => 6,
            Judgement::Mistake => 2,
            Judgement::Blunder => 4,
        }
    }

    /// 0, 1, 2 for an inaccuracy, a mistake, a blunder: an index for counting them.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Judgement::Inaccuracy => "inaccuracy",
            Judgement::Mistake => "mistake",
            Judgement::Blunder => "blunder",
        }
    }
}

/// The engine score (see [`crate::score`]) of a reported one: centipawns as they are, a mate
/// in `n` as the score of a mate `2n − 1` plies away, mated in `n` as `2n` plies away (so
/// `Reported::of` gives the report back).
pub fn score_of(r: Reported) -> i32 {
    match r {
        Reported::Cp(cp) => cp,
        Reported::Mate(n) if n > 0 => MATE - (2 * n - 1),
        Reported::Mate(n) => -(MATE - 2 * n.abs()),
    }
}

/// A score reported from `turn`'s side as PGN's `[%eval …]` writes it: pawns from white's side
/// with two decimals, or `#N` (white mates in N) / `#-N` (black does).
pub fn pgn_eval(score: Reported, turn: Color) -> String {
    let sign = if turn == Color::White { 1 } else { -1 };
    match score {
        Reported::Cp(cp) => format!("{:.2}", f64::from(sign * cp) / 100.0),
        Reported::Mate(n) => format!("#{}", sign * n),
    }
}

/// An engine score (see [`crate::score`]) as the centipawns that count: mates as ±[`CP_CAP`],
/// everything capped to ±[`CP_CAP`].
pub fn capped_cp(score: i32) -> i32 {
    if score >= MATE_BOUND {
        CP_CAP
    } else if score <= -MATE_BOUND {
        -CP_CAP
    } else {
        score.clamp(-CP_CAP, CP_CAP)
    }
}

/// Winning chances, −1 to 1, of the side whose engine score is `score`.
pub fn winning_chances(score: i32) -> f64 {
    2.0 * win_chance(capped_cp(score)) - 1.0
}

/// Win percentage, 0 to 100, of the side whose engine score is `score`.
pub fn win_percent(score: i32) -> f64 {
    50.0 + 50.0 * winning_chances(score)
}

/// The judgement of a move by `mover`, from the white-relative scores of the positions before
/// and after it; `None` for a move that gives away less than 0.1.
pub fn judge(before: i32, after: i32, mover: Color) -> Option<Judgement> {
    let drop = match mover {
        Color::White => winning_chances(before) - winning_chances(after),
        Color::Black => winning_chances(after) - winning_chances(before),
    };
    THRESHOLDS
        .iter()
        .find(|(threshold, _)| drop >= *threshold)
        .map(|&(_, j)| j)
}

/// The accuracy, 0 to 100, of a move that took the mover's win percentage from `before` to
/// `after` (both from the mover's point of view).
pub fn move_accuracy(before: f64, after: f64) -> f64 {
    if after >= before {
        return 100.0;
    }
    let raw = 103.166_810_071_164_9 * (-0.043_544_153_867_539_51 * (before - after)).exp()
        - 3.166_924_740_191_411;
    // Lichess's "uncertainty bonus" for imperfect analysis.
    (raw + 1.0).clamp(0.0, 100.0)
}

/// Each player's accuracy over a game (`None` for a player who made no move).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GameAccuracy {
    /// White's accuracy, 0 to 100.
    pub white: Option<f64>,
    /// Black's accuracy, 0 to 100.
    pub black: Option<f64>,
}

/// The population standard deviation.
fn std_dev(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    (xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n).sqrt()
}

/// Each player's accuracy over a game, as lichess computes it.
///
/// `start` is the white-relative score of the position before the first move ([`INITIAL_CP`]
/// for the standard start, as lichess uses), `after` the white-relative score after each ply,
/// in order, and `first` the side that made the first move.
///
/// Each move's accuracy is weighted by the volatility around it: the standard deviation of the
/// win percentages in a window of `plies / 10` positions (at least 2, at most 8), clamped to
/// 0.5–12, the first windows repeating the game's first positions. A player's accuracy is the
/// mean of the weighted mean of their moves' accuracies and the harmonic mean of them (each at
/// least 1 there), so that a few blunders weigh more than in a plain average.
pub fn game_accuracy(first: Color, start: i32, after: &[i32]) -> GameAccuracy {
    let wins: Vec<f64> = std::iter::once(start)
        .chain(after.iter().copied())
        .map(win_percent)
        .collect();
    let size = (after.len() / 10).clamp(2, 8);
    // The first windows repeat the opening positions so that every move has one; a game shorter
    // than a window has a single window of all of it.
    let first_window = &wins[..size.min(wins.len())];
    let mut windows: Vec<&[f64]> = vec![first_window; size.min(wins.len()).saturating_sub(2)];
    if wins.len() >= size {
        windows.extend(wins.windows(size));
    } else {
        windows.push(&wins);
    }
    let mut moves: [Vec<(f64, f64)>; 2] = [Vec::new(), Vec::new()];
    for (i, (pair, window)) in wins.windows(2).zip(windows).enumerate() {
        let mover = if i % 2 == 0 { first } else { !first };
        let (prev, next) = (pair[0], pair[1]);
        let accuracy = match mover {
            Color::White => move_accuracy(prev, next),
            Color::Black => move_accuracy(100.0 - prev, 100.0 - next),
        };
        let weight = std_dev(window).clamp(0.5, 12.0);
        moves[usize::from(mover == Color::Black)].push((accuracy, weight));
    }
    let of = |xs: &[(f64, f64)]| -> Option<f64> {
        if xs.is_empty() {
            return None;
        }
        let total: f64 = xs.iter().map(|&(_, w)| w).sum();
        let weighted = xs.iter().map(|&(a, w)| a * w).sum::<f64>() / total;
        let harmonic = xs.len() as f64 / xs.iter().map(|&(a, _)| 1.0 / a.max(1.0)).sum::<f64>();
        Some((weighted + harmonic) / 2.0)
    };
    GameAccuracy {
        white: of(&moves[0]),
        black: of(&moves[1]),
    }
}

/// A game's main line laid out for its review: every position, their repetition keys (the
/// history of position `i` is `keys[..i]`, so the game is held once whatever its length), and
/// the moves played in coordinate notation (one fewer than the positions).
#[derive(Clone, Debug)]
pub struct GameLine {
    /// The positions, the start first and the final position last.
    pub positions: Vec<AnyPosition>,
    /// The repetition key of each position.
    pub keys: Vec<u64>,
    /// The moves played, in coordinate notation.
    pub played: Vec<String>,
}

impl GameLine {
    /// Plays `moves` (legal in turn) from `start`.
    pub fn replay(start: &AnyPosition, moves: &[AnyMove]) -> GameLine {
        let mut line = GameLine {
            positions: Vec::with_capacity(moves.len() + 1),
            keys: Vec::with_capacity(moves.len() + 1),
            played: Vec::with_capacity(moves.len()),
        };
        let mut pos = start.clone();
        for &m in moves {
            line.played.push(pos.move_to_uci(m));
            line.keys.push(pos.repetition_key());
            line.positions.push(pos.clone());
            pos.play_unchecked(m);
        }
        line.keys.push(pos.repetition_key());
        line.positions.push(pos);
        line
    }

    /// The repetition keys of the positions before position `i`: its search history.
    pub fn history(&self, i: usize) -> &[u64] {
        &self.keys[..i]
    }
}

/// One position of a game, evaluated for its review.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PositionEval {
    /// The engine score from white's side (see [`crate::score`]); a finished game scores its
    /// result.
    pub white: i32,
    /// The score as reported from the side to move, with its bound; `None` for a finished game
    /// (nothing was searched).
    pub reported: Option<(Reported, Bound)>,
    /// The side to move.
    pub turn: Color,
    /// The engine's move (coordinate notation); `None` for a finished game.
    pub best: Option<String>,
    /// Nodes the search visited (0 for a finished game).
    pub nodes: u64,
}

impl PositionEval {
    /// The `[%eval …]` text of this position (`None` for a finished game).
    pub fn pgn_eval(&self) -> Option<String> {
        self.reported.map(|(r, _)| pgn_eval(r, self.turn))
    }
}

/// Evaluates one position of a game for its review: a finished game by its result, otherwise
/// by a search with a fresh table under `settings` (so a node-limited review is reproducible).
/// `history` holds the repetition keys of the game's positions before it.
pub fn evaluate_position(
    pos: &AnyPosition,
    history: &[u64],
    settings: &AnalysisSettings,
    stop: &AtomicBool,
    time: &dyn TimeSource,
) -> PositionEval {
    position_eval(pos, |pos| {
        analyze(pos, history, settings, stop, time, &mut |_| {})
    })
}

/// [`evaluate_position`] on kept engines: the positions of one game, evaluated in order after
/// an [`Engines::clear`], search with what the earlier ones left in the table (faster, and as
/// reproducible: the result depends only on the game's positions before it), and no table is
/// allocated per position.
pub fn evaluate_position_with(
    engines: &mut Engines,
    pos: &AnyPosition,
    history: &[u64],
    settings: &AnalysisSettings,
    stop: &AtomicBool,
    time: &dyn TimeSource,
) -> PositionEval {
    position_eval(pos, |pos| {
        engines.analyze(pos, history, settings, stop, time, &mut |_| {})
    })
}

/// A finished game's result, or `search`'s evaluation.
fn position_eval(pos: &AnyPosition, search: impl FnOnce(&AnyPosition) -> Analysis) -> PositionEval {
    match PositionEval::ending(pos) {
        Some(ended) => ended,
        None => PositionEval::searched(pos, search(pos)),
    }
}

impl PositionEval {
    /// The evaluation of `pos` when it ends the game (scored by its result, nothing searched);
    /// `None` when it does not.
    pub fn ending(pos: &AnyPosition) -> Option<PositionEval> {
        let outcome = pos.terminal()?;
        Some(PositionEval {
            white: outcome_score(&outcome, Color::White, 0),
            reported: None,
            turn: pos.turn(),
            best: None,
            nodes: 0,
        })
    }

    /// The evaluation of `pos` by a search's result `a` (from whichever engine: its score is
    /// from the side to move, its move in coordinate notation).
    pub fn searched(pos: &AnyPosition, a: Analysis) -> PositionEval {
        let turn = pos.turn();
        let score = score_of(a.score);
        PositionEval {
            white: if turn == Color::White { score } else { -score },
            reported: Some((a.score, a.bound)),
            turn,
            best: a.best,
            nodes: a.nodes,
        }
    }
}

/// What the review says of one move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MoveReview {
    /// Its classification, if it gave away winning chances (never for the engine's own move).
    pub judgement: Option<Judgement>,
    /// The engine's move in the position before it, when the move is classified.
    pub better: Option<String>,
}

/// A game's review: each move's verdict, each player's accuracy, and how many inaccuracies,
/// mistakes and blunders each made (`counts[side][judgement.index()]`, white first).
#[derive(Clone, Debug, PartialEq)]
pub struct GameReview {
    /// One per move, in order.
    pub moves: Vec<MoveReview>,
    /// Each player's accuracy.
    pub accuracy: GameAccuracy,
    /// Inaccuracies, mistakes and blunders of white, then of black.
    pub counts: [[usize; 3]; 2],
}

/// Reviews a game from the evaluations of its positions: `evals[i]` is the position before
/// move `i` (one more than `played`, the last being the final position), `played[i]` the move
/// made there in coordinate notation.
///
/// A move is classified by the drop in the mover's winning chances from the position before it
/// to the one after ([`judge`]), except when it is the engine's own choice: the next search
/// may think less of the position than this one did, but the engine cannot call its own move a
/// mistake.
///
/// # Panics
/// When `evals` is not one longer than `played`.
pub fn review_game(evals: &[PositionEval], played: &[String]) -> GameReview {
    assert_eq!(evals.len(), played.len() + 1, "one evaluation per position");
    let mut counts = [[0usize; 3]; 2];
    let moves = played
        .iter()
        .enumerate()
        .map(|(ply, mv)| {
            let before = &evals[ply];
            let engine_choice = before.best.as_ref() == Some(mv);
            let judgement =
                judge(before.white, evals[ply + 1].white, before.turn).filter(|_| !engine_choice);
            if let Some(j) = judgement {
                counts[usize::from(before.turn == Color::Black)][j.index()] += 1;
            }
            MoveReview {
                judgement,
                better: judgement.and(before.best.clone()),
            }
        })
        .collect();
    let scores: Vec<i32> = evals.iter().map(|e| e.white).collect();
    GameReview {
        moves,
        accuracy: game_accuracy(evals[0].turn, scores[0], &scores[1..]),
        counts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(white: i32, turn: Color, best: &str) -> PositionEval {
        PositionEval {
            white,
            reported: Some((Reported::Cp(white), Bound::Exact)),
            turn,
            best: Some(best.to_owned()),
            nodes: 0,
        }
    }

    /// Kept engines, cleared, answer as fresh ones; within a game they may differ from fresh
    /// searches only by what the earlier positions taught, and the same game gives the same
    /// evaluations however often it is reviewed, whatever came before.
    #[test]
    fn kept_engines_answer_like_fresh_ones_after_a_clear_and_repeat_a_game_exactly() {
        use crate::analyze::{AnalysisSettings, Engines};
        use crate::{Limits, SearchOptions, SystemTime};
        let settings = AnalysisSettings {
            limits: Limits {
                nodes: Some(3000),
                ..Limits::default()
            },
            options: SearchOptions {
                multipv: 1,
                move_overhead_ms: 0,
            },
            hash_mib: 1,
        };
        let (never, time) = (AtomicBool::new(false), SystemTime::new());
        let game = |variant, moves: &[&str]| {
            let start = AnyPosition::start(variant).unwrap();
            let mut pos = start.clone();
            let mut played = Vec::new();
            for m in moves {
                let m = pos
                    .parse_move(
                        m,
                        arbiter_core::Notation::Uci,
                        arbiter_core::Locale::English,
                    )
                    .unwrap();
                played.push(m);
                pos = pos.play(m).unwrap();
            }
            GameLine::replay(&start, &played)
        };
        let games = [
            game(
                arbiter_core::Variant::Chess,
                &["e2e4", "e7e5", "g1f3", "b8c6"],
            ),
            game(arbiter_core::Variant::Glinski, &["f5f6", "e7e6"]),
            game(arbiter_core::Variant::Crazyhouse, &["e2e4", "d7d5", "e4d5"]),
        ];
        let review = |engines: &mut Engines, line: &GameLine| -> Vec<PositionEval> {
            engines.clear();
            (0..line.positions.len())
                .map(|i| {
                    evaluate_position_with(
                        engines,
                        &line.positions[i],
                        line.history(i),
                        &settings,
                        &never,
                        &time,
                    )
                })
                .collect()
        };
        let mut engines = Engines::new(1);
        let first: Vec<_> = games.iter().map(|g| review(&mut engines, g)).collect();
        // Again, in another order, on engines that have seen the other games.
        for (i, g) in games.iter().enumerate().rev() {
            assert_eq!(review(&mut engines, g), first[i], "game {i}");
        }
        // The first position of each game: exactly what a fresh search says.
        for (i, g) in games.iter().enumerate() {
            let fresh = evaluate_position(&g.positions[0], &[], &settings, &never, &time);
            assert_eq!(first[i][0], fresh, "game {i}");
        }
    }

    #[test]
    fn a_game_review_classifies_counts_and_spares_the_engines_own_moves() {
        use Color::{Black, White};
        let evals = [
            eval(20, White, "e2e4"),
            eval(30, Black, "e7e5"),
            // White's second move throws away 700 cp: a blunder; black's first was the
            // engine's own choice, so its 10 cp "drop" is nothing anyway.
            eval(25, White, "g1f3"),
            eval(-700, Black, "d8h4"),
            eval(-690, White, "a2a3"),
        ];
        let played = ["e2e4", "e7e5", "g2g4", "d8h4"].map(String::from);
        let r = review_game(&evals, &played);
        assert_eq!(r.moves[0].judgement, None);
        assert_eq!(r.moves[1].better, None, "no verdict, no better move");
        assert_eq!(r.moves[2].judgement, Some(Judgement::Blunder));
        assert_eq!(r.moves[2].better.as_deref(), Some("g1f3"));
        assert_eq!(r.counts, [[0, 0, 1], [0, 0, 0]]);
        assert!(r.accuracy.white.unwrap() < r.accuracy.black.unwrap());
        // The engine's own move is never classified, even when the next search thinks it lost
        // a lot; another move losing as much is a blunder.
        let evals = [eval(0, White, "e2e4"), eval(-500, Black, "e7e5")];
        let own = review_game(&evals, &["e2e4".to_owned()]);
        assert_eq!(own.moves[0].judgement, None);
        assert_eq!(own.counts, [[0; 3]; 2]);
        let other = review_game(&evals, &["d2d4".to_owned()]);
        assert_eq!(other.moves[0].judgement, Some(Judgement::Blunder));
    }

    #[test]
    fn positions_are_evaluated_from_whites_side_and_finished_games_by_their_result() {
        use arbiter_core::Variant;
        let settings = AnalysisSettings {
            limits: crate::Limits::depth(2),
            options: crate::SearchOptions {
                multipv: 1,
                move_overhead_ms: 0,
            },
            hash_mib: 1,
        };
        let stop = AtomicBool::new(false);
        let time = crate::SystemTime::new();
        // Black to move and mate in one (fool's mate): good for black.
        let pos = AnyPosition::from_text(
            Variant::Chess,
            "rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2",
        )
        .unwrap();
        let e = evaluate_position(&pos, &[], &settings, &stop, &time);
        assert!(e.white <= -MATE_BOUND, "{}", e.white);
        assert_eq!(e.best.as_deref(), Some("d8h4"));
        assert_eq!(e.pgn_eval().as_deref(), Some("#-1"));
        let mated = pos
            .play(
                pos.parse_move("d8h4", arbiter_core::Notation::Uci, Default::default())
                    .unwrap(),
            )
            .unwrap();
        let e = evaluate_position(&mated, &[], &settings, &stop, &time);
        assert_eq!((e.white, e.pgn_eval(), e.best), (-MATE, None, None));
    }

    #[test]
    fn scores_round_trip_through_reports() {
        // The side to move mates on odd plies and is mated on even ones.
        for s in [
            0,
            35,
            -270,
            MATE - 1,
            MATE - 7,
            -(MATE - 2),
            -(MATE - 8),
            -MATE,
        ] {
            assert_eq!(score_of(Reported::of(s)), s, "{s}");
        }
        assert_eq!(pgn_eval(Reported::Cp(35), Color::White), "0.35");
        assert_eq!(pgn_eval(Reported::Cp(120), Color::Black), "-1.20");
        assert_eq!(pgn_eval(Reported::Mate(3), Color::White), "#3");
        assert_eq!(pgn_eval(Reported::Mate(1), Color::Black), "#-1");
        assert_eq!(pgn_eval(Reported::Mate(-2), Color::Black), "#2");
        for (i, (_, j)) in THRESHOLDS.iter().rev().enumerate() {
            assert_eq!(j.index(), i);
        }
    }

    /// The centipawns at which the winning chances are `wc` (the curve's inverse).
    fn cp_at(wc: f64) -> f64 {
        -(2.0 / (wc + 1.0) - 1.0).ln() / 0.003_682_08
    }

    #[test]
    fn winning_chances_follow_the_curve_and_the_cap() {
        assert_eq!(winning_chances(0), 0.0);
        assert_eq!(win_percent(0), 50.0);
        assert!((winning_chances(300) - (2.0 / (1.0 + (-1.104_624f64).exp()) - 1.0)).abs() < 1e-12);
        assert_eq!(winning_chances(5000), winning_chances(1000));
        assert_eq!(winning_chances(MATE - 3), winning_chances(1000));
        assert!((winning_chances(-(MATE - 8)) + winning_chances(1000)).abs() < 1e-12);
        assert!((winning_chances(-250) + winning_chances(250)).abs() < 1e-12);
        assert!(
            (win_percent(1000) - 97.5).abs() < 0.1,
            "{}",
            win_percent(1000)
        );
    }

    #[test]
    fn moves_are_judged_by_the_drop_at_the_thresholds() {
        // White at 0 plays into just past / just short of each threshold.
        for (threshold, judgement) in THRESHOLDS {
            let over = cp_at(-threshold - 1e-3).floor() as i32;
            let under = cp_at(-threshold + 1e-3).ceil() as i32;
            assert_eq!(judge(0, over, Color::White), Some(judgement), "{over}");
            assert_ne!(judge(0, under, Color::White), Some(judgement), "{under}");
            // The same for black, mirrored.
            assert_eq!(judge(0, -over, Color::Black), Some(judgement));
            assert_ne!(judge(0, -under, Color::Black), Some(judgement));
        }
        // Gaining is never a mistake; a small drop is nothing.
        assert_eq!(judge(-200, 300, Color::White), None);
        assert_eq!(judge(200, -300, Color::Black), None);
        assert_eq!(judge(50, 20, Color::White), None);
        // From a won position to a lost one: a blunder, mates included.
        assert_eq!(
            judge(MATE - 5, -(MATE - 4), Color::White),
            Some(Judgement::Blunder)
        );
        // Inside the cap nothing moves: 1500 to 1000 is no mistake.
        assert_eq!(judge(1500, 1000, Color::White), None);
        assert_eq!(Judgement::Blunder.nag(), 4);
    }

    #[test]
    fn move_accuracy_is_lichess_s_curve() {
        assert_eq!(move_accuracy(50.0, 50.0), 100.0);
        assert_eq!(move_accuracy(40.0, 60.0), 100.0);
        // No drop gives 103.1668 − 3.1669 + 1, capped to 100; a drop of 10 points:
        let ten =
            103.166_810_071_164_9 * (-0.435_441_538_675_395_1f64).exp() - 2.166_924_740_191_411;
        assert!((move_accuracy(60.0, 50.0) - ten).abs() < 1e-9);
        assert!((ten - 64.58).abs() < 0.01, "{ten}");
        assert_eq!(move_accuracy(100.0, 0.0), 0.0);
        let mut last = 100.0;
        for drop in 1..100 {
            let a = move_accuracy(100.0, 100.0 - f64::from(drop));
            assert!(a <= last && a >= 0.0);
            last = a;
        }
    }

    #[test]
    fn game_accuracy_by_player() {
        // Nobody loses anything: both 100.
        let close = |x: Option<f64>, y: f64| (x.unwrap() - y).abs() < 1e-9;
        let level = vec![INITIAL_CP; 40];
        let a = game_accuracy(Color::White, INITIAL_CP, &level);
        assert!(close(a.white, 100.0) && close(a.black, 100.0), "{a:?}");
        // White blunders once on ply 21 (0 → −300) and the game stays there: only white's
        // accuracy falls.
        let mut blunder = vec![0; 40];
        for s in &mut blunder[20..] {
            *s = -300;
        }
        let a = game_accuracy(Color::White, 0, &blunder);
        let (w, b) = (a.white.unwrap(), a.black.unwrap());
        assert!(w < 90.0 && close(a.black, 100.0), "{w} {b}");
        // The same game with colours swapped (black moved first, scores negated): the same
        // figures, swapped.
        let mirrored: Vec<i32> = blunder.iter().map(|s| -s).collect();
        let m = game_accuracy(Color::Black, 0, &mirrored);
        assert!(close(m.black, w) && close(m.white, b), "{m:?} {a:?}");
        // Two blunders are worse than one: the second on ply 31 (white's 16th move), −300 →
        // −900.
        let mut two = blunder.clone();
        for s in &mut two[30..] {
            *s = -900;
        }
        let t = game_accuracy(Color::White, 0, &two);
        assert!(t.white.unwrap() < w);
    }

    /// Figures from a separate, literal transcription of lichess's Scala (its list `sliding`,
    /// `fill` and `zip`) into Python, on two made-up games.
    #[test]
    fn game_accuracy_matches_a_transcription_of_lichess() {
        let scores: Vec<i32> = (0..57)
            .map(|i: i32| {
                if i % 5 != 0 {
                    (i * 7919) % 1300 - 650
                } else {
                    (i * 31) % 200
                }
            })
            .collect();
        let a = game_accuracy(Color::White, INITIAL_CP, &scores);
        assert!(
            (a.white.unwrap() - 42.981_942_588_682_99).abs() < 1e-9,
            "{a:?}"
        );
        assert!(
            (a.black.unwrap() - 48.079_629_394_896_685).abs() < 1e-9,
            "{a:?}"
        );
        let short = [20, 35, -10, 40, -150, -120, -400, -380, -390, -2000];
        let a = game_accuracy(Color::Black, 0, &short);
        assert!(
            (a.white.unwrap() - 74.364_664_488_813_84).abs() < 1e-9,
            "{a:?}"
        );
        assert!(
            (a.black.unwrap() - 99.121_449_470_234_27).abs() < 1e-9,
            "{a:?}"
        );
    }

    #[test]
    fn short_games_have_a_figure_for_each_player_who_moved() {
        assert_eq!(
            game_accuracy(Color::White, INITIAL_CP, &[]),
            GameAccuracy {
                white: None,
                black: None
            }
        );
        let one = game_accuracy(Color::White, INITIAL_CP, &[-400]);
        assert!(one.white.unwrap() < 100.0 && one.black.is_none());
        let two = game_accuracy(Color::Black, 0, &[0, 0]);
        assert!((two.white.unwrap() - 100.0).abs() < 1e-9);
        assert!((two.black.unwrap() - 100.0).abs() < 1e-9);
        // Every length up to three windows' worth gives a figure in range.
        for n in 1..90 {
            let scores: Vec<i32> = (0..n).map(|i| ((i * 37) % 400) - 200).collect();
            let a = game_accuracy(Color::White, 0, &scores);
            for v in [a.white, a.black].into_iter().flatten() {
                assert!((0.0..=100.0).contains(&v), "{n}: {v}");
            }
            assert_eq!(a.black.is_some(), n >= 2);
        }
    }
}
