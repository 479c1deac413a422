//! FIDE Elo ratings, after the FIDE Rating Regulations effective from 1 March 2024 (FIDE
//! Handbook, section 8: "The working of the FIDE rating system").
//!
//! # The model
//!
//! Ratings are whole points. For each game against a rated opponent, the rating difference D,
//! counted as 400 when it is larger (8.3.1), gives the higher-rated player's expected score PD
//! from FIDE's conversion table 8.1.2; the lower-rated player expects 1 − PD. A rating period's
//! change is K · Σ (score − PD), rounded to the nearest whole number with halves rounded away
//! from zero (8.3.4).
//!
//! FIDE's table is published in hundredths per range of D (it follows a normal distribution, not
//! the logistic curve, from which it departs by at most 0.015 up to D = 400). It is encoded as
//! is, and all arithmetic is done in integer hundredths: scores must be whole hundredths, so
//! K · Σ (score − PD) is an exact integer number of hundredths of a point and the rounding can
//! never be tipped by floating-point error. FIDE scores are 1, ½ and 0; other whole hundredths
//! (such as ¾–¼ results) are accepted as an extension.
//!
//! # Development coefficient K (8.3.3)
//!
//! - 40 for a player new to the list until they have completed 30 games, and for a junior (until
//!   the end of the year of their 18th birthday) whose rating is under 2300;
//! - 10 once the player's published rating has reached 2400, even if it drops below later;
//! - 20 otherwise (while the rating stays under 2400).
//!
//! If K times the number of games in the period exceeds 700, K becomes the largest whole number
//! with K · n ≤ 700.
//!
//! Not modelled: initial ratings of unrated players, games against unrated opponents, the rating
//! floor, and the publication of lists.

use std::fmt;

/// Rating differences above this many points count as this many (8.3.1).
pub const MAX_DIFFERENCE: u16 = 400;

/// The cap on K times the number of games of a rating period (8.3.3).
pub const MAX_K_TIMES_GAMES: u16 = 700;

/// Table 8.1.2: the smallest rating difference of each range, the range at index i giving the
/// higher-rated player an expected score of 0.50 + i/100 (from 0–3 → 0.50 to 392–400 → 0.92).
const RANGE_STARTS: [u16; 43] = [
    0, 4, 11, 18, 26, 33, 40, 47, 54, 62, 69, 77, 84, 92, 99, 107, 114, 122, 130, 138, 146, 154,
    163, 171, 180, 189, 198, 207, 216, 226, 236, 246, 257, 268, 279, 291, 303, 316, 329, 345, 358,
    375, 392,
];

/// The expected score of a player rated `rating` against one rated `opponent`, in hundredths
/// (8 to 92): PD of table 8.1.2 for the higher-rated player, 100 − PD for the lower.
#[must_use]
pub fn expected_hundredths(rating: u16, opponent: u16) -> u8 {
    let difference = rating.abs_diff(opponent).min(MAX_DIFFERENCE);
    // Each range after the first that starts at or below D adds one hundredth (at most 42).
    let steps: u8 = RANGE_STARTS[1..]
        .iter()
        .map(|&start| u8::from(start <= difference))
        .sum();
    if rating >= opponent {
        50 + steps
    } else {
        50 - steps
    }
}

/// A rated player's record, as far as K is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Player {
    /// Published rating, in points.
    pub rating: u16,
    /// Rated games completed before the rating period (a player is new until 30).
    pub games: u32,
    /// Whether the published rating has ever reached 2400 (a current rating of 2400 or more
    /// counts too).
    pub reached_2400: bool,
    /// Whether the player is a junior: FIDE's rule runs until the end of the year of their 18th
    /// birthday.
    pub under_18: bool,
}

impl Player {
    /// The development coefficient K for one game (40, 20 or 10; see the module docs), before
    /// the cap of [`MAX_K_TIMES_GAMES`].
    #[must_use]
    pub fn k_factor(&self) -> u8 {
        if self.games < 30 || (self.under_18 && self.rating < 2300) {
            40
        } else if self.reached_2400 || self.rating >= 2400 {
            10
        } else {
            20
        }
    }

    /// The record after a rating period of `games`: the rating moved by [`rating_change`] (kept
    /// within `0..=u16::MAX`), the games counted, and reaching 2400 remembered.
    ///
    /// # Errors
    /// [`Error::Score`] for an invalid score.
    pub fn after_period(&self, games: &[Game]) -> Result<Self, Error> {
        let change = rating_change(self, games)?;
        let moved = i32::from(self.rating) + change;
        let rating = u16::try_from(moved).unwrap_or(if moved < 0 { 0 } else { u16::MAX });
        let played = u32::try_from(games.len()).unwrap_or(u32::MAX);
        Ok(Self {
            rating,
            games: self.games.saturating_add(played),
            reached_2400: self.reached_2400 || rating >= 2400,
            under_18: self.under_18,
        })
    }
}

/// One rated game, from the player's side.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Game {
    /// The opponent's published rating, in points.
    pub opponent: u16,
    /// The player's score: a whole number of hundredths in `[0, 1]` (1, 0.5, 0, or e.g. 0.75).
    pub score: f64,
}

/// Invalid input to the FIDE rating functions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Error {
    /// A game's `score` is NaN, outside `[0, 1]`, or not a whole number of hundredths.
    Score {
        /// The game's index in the slice given.
        game: usize,
        /// The score.
        value: f64,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Score { game, value } => write!(
                f,
                "invalid score {value} in game {game}: scores are whole hundredths in [0, 1]"
            ),
        }
    }
}

impl std::error::Error for Error {}

/// The rating change of `player` over a rating period of `games` (one game or more), in whole
/// points: K · Σ (score − expected), with K capped so that K · n ≤ 700, rounded to the nearest
/// whole number, halves away from zero. No games: no change.
///
/// # Errors
/// [`Error::Score`] for the first invalid score.
pub fn rating_change(player: &Player, games: &[Game]) -> Result<i32, Error> {
    let count = i32::try_from(games.len()).unwrap_or(i32::MAX).max(1);
    let k = i32::from(player.k_factor()).min(i32::from(MAX_K_TIMES_GAMES) / count);
    // In hundredths of a point: |total| ≤ 100 · K · n ≤ 70 000.
    let mut total = 0i32;
    for (index, game) in games.iter().enumerate() {
        let score = hundredths(game.score).ok_or(Error::Score {
            game: index,
            value: game.score,
        })?;
        let expected = expected_hundredths(player.rating, game.opponent);
        total += k * (score - i32::from(expected));
    }
    Ok(total.signum() * ((total.abs() + 50) / 100))
}

/// A score in whole hundredths, if it is one within `[0, 1]` (none for NaN).
fn hundredths(score: f64) -> Option<i32> {
    (0..=100).find(|&whole| (score * 100.0 - f64::from(whole)).abs() < 1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Table 8.1.2 as FIDE prints it: (lowest D, highest D, PD in hundredths).
    const TABLE: [(u16, u16, u8); 43] = [
        (0, 3, 50),
        (4, 10, 51),
        (11, 17, 52),
        (18, 25, 53),
        (26, 32, 54),
        (33, 39, 55),
        (40, 46, 56),
        (47, 53, 57),
        (54, 61, 58),
        (62, 68, 59),
        (69, 76, 60),
        (77, 83, 61),
        (84, 91, 62),
        (92, 98, 63),
        (99, 106, 64),
        (107, 113, 65),
        (114, 121, 66),
        (122, 129, 67),
        (130, 137, 68),
        (138, 145, 69),
        (146, 153, 70),
        (154, 162, 71),
        (163, 170, 72),
        (171, 179, 73),
        (180, 188, 74),
        (189, 197, 75),
        (198, 206, 76),
        (207, 215, 77),
        (216, 225, 78),
        (226, 235, 79),
        (236, 245, 80),
        (246, 256, 81),
        (257, 267, 82),
        (268, 278, 83),
        (279, 290, 84),
        (291, 302, 85),
        (303, 315, 86),
        (316, 328, 87),
        (329, 344, 88),
        (345, 357, 89),
        (358, 374, 90),
        (375, 391, 91),
        (392, 400, 92),
    ];

    fn player(rating: u16, games: u32) -> Player {
        Player {
            rating,
            games,
            reached_2400: false,
            under_18: false,
        }
    }

    fn game(opponent: u16, score: f64) -> Game {
        Game { opponent, score }
    }

    #[test]
    fn conversion_table_endpoints() {
        for (low, high, pd) in TABLE {
            for d in [low, high] {
                assert_eq!(expected_hundredths(2000 + d, 2000), pd, "D = {d}");
                assert_eq!(expected_hundredths(2000, 2000 + d), 100 - pd, "D = -{d}");
            }
        }
    }

    #[test]
    fn differences_above_400_count_as_400() {
        assert_eq!(expected_hundredths(2401, 2000), 92);
        assert_eq!(expected_hundredths(2800, 1000), 92);
        assert_eq!(expected_hundredths(0, u16::MAX), 8);
    }

    #[test]
    fn table_stays_close_to_the_logistic_curve() {
        for d in 0..=MAX_DIFFERENCE {
            let logistic = 1.0 / (1.0 + 10f64.powf(-f64::from(d) / 400.0));
            let table = f64::from(expected_hundredths(1000 + d, 1000)) / 100.0;
            assert!(
                (table - logistic).abs() < 0.015,
                "D = {d}: {table} vs {logistic}"
            );
        }
    }

    #[test]
    fn k_factor_boundaries() {
        assert_eq!(player(2000, 29).k_factor(), 40);
        assert_eq!(player(2000, 30).k_factor(), 20);
        assert_eq!(player(2399, 100).k_factor(), 20);
        assert_eq!(player(2400, 100).k_factor(), 10);
        let dropped = Player {
            reached_2400: true,
            ..player(2350, 100)
        };
        assert_eq!(dropped.k_factor(), 10);
        let junior = Player {
            under_18: true,
            ..player(2299, 100)
        };
        assert_eq!(junior.k_factor(), 40);
        assert_eq!(
            Player {
                rating: 2300,
                ..junior
            }
            .k_factor(),
            20
        );
    }

    #[test]
    fn worked_example() {
        // 2000 beats 1800: D = 200, PD = 0.76, 20 · 0.24 = 4.8 → +5; the loser: −4.8 → −5.
        assert_eq!(expected_hundredths(2000, 1800), 76);
        assert_eq!(rating_change(&player(2000, 50), &[game(1800, 1.0)]), Ok(5));
        assert_eq!(rating_change(&player(1800, 50), &[game(2000, 0.0)]), Ok(-5));
    }

    #[test]
    fn a_period_sums_before_rounding() {
        // 20 · ((1 − .50) + (0.5 − .64) + (0 − .36)) = 20 · 0 = 0.
        let games = [game(1900, 1.0), game(1800, 0.5), game(2000, 0.0)];
        assert_eq!(rating_change(&player(1900, 50), &games), Ok(0));
        // 10 · (0.5 − .55) = −0.5 → −1 (away from zero); 10 · (0.5 − .45) = +0.5 → +1.
        let master = player(2435, 100);
        assert_eq!(rating_change(&master, &[game(2400, 0.5)]), Ok(-1));
        assert_eq!(rating_change(&player(2400, 100), &[game(2435, 0.5)]), Ok(1));
        assert_eq!(rating_change(&master, &[]), Ok(0));
    }

    #[test]
    fn k_is_capped_at_700_over_the_games() {
        // K = 40 over 18 games would be 720 > 700: K = 38. Eighteen wins at D = 0: 38 · 9 = 342.
        let games = [game(1500, 1.0); 18];
        assert_eq!(rating_change(&player(1500, 0), &games), Ok(342));
    }

    #[test]
    fn fractional_scores() {
        let equal = player(2000, 50);
        assert_eq!(rating_change(&equal, &[game(2000, 0.75)]), Ok(5));
        assert_eq!(rating_change(&equal, &[game(2000, 0.25)]), Ok(-5));
    }

    #[test]
    fn after_period_updates_the_record() {
        let before = player(2395, 40);
        let after = before.after_period(&[game(2395, 1.0)]).unwrap();
        assert_eq!(after.rating, 2405);
        assert_eq!(after.games, 41);
        assert!(after.reached_2400);
        let later = after.after_period(&[game(2405, 0.0)]).unwrap();
        assert_eq!((later.rating, later.reached_2400), (2400, true));
        assert_eq!(
            player(3, 50).after_period(&[game(3, 0.0)]).unwrap().rating,
            0
        );
    }

    #[test]
    fn bad_scores_are_errors() {
        let p = player(2000, 50);
        for value in [f64::NAN, 1.5, -0.1, 1.0 / 3.0, f64::INFINITY] {
            let games = [game(2000, 1.0), game(2000, value)];
            let error = rating_change(&p, &games).unwrap_err();
            assert!(matches!(error, Error::Score { game: 1, .. }), "{value}");
            assert!(error.to_string().contains("game 1"));
            assert!(p.after_period(&games).is_err());
        }
    }

    proptest! {
        #[test]
        fn expectations_are_symmetric(a in any::<u16>(), b in any::<u16>()) {
            prop_assert_eq!(expected_hundredths(a, b) + expected_hundredths(b, a), 100);
            prop_assert!((8..=92).contains(&expected_hundredths(a, b)));
        }

        #[test]
        fn equal_k_makes_a_game_zero_sum(
            a in 1400u16..2300,
            b in 1400u16..2300,
            score in 0u8..=100,
        ) {
            let score = f64::from(score) / 100.0;
            let gain = rating_change(&player(a, 50), &[game(b, score)]).unwrap();
            let loss = rating_change(&player(b, 50), &[game(a, 1.0 - score)]).unwrap();
            prop_assert_eq!(gain + loss, 0);
        }
    }
}
