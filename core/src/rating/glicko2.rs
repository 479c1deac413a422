//! Glicko-2 ratings with continuous rating periods.
//!
//! # The model
//!
//! A player's strength is a belief with three numbers: a **rating** (points), its **deviation** RD
//! (points, one standard deviation of the belief) and a **volatility** σ (how far the player's true
//! strength is expected to drift in one rating period, on the Glicko-2 scale, where one unit is
//! [`Settings::scale`] = 173.7178 points). [`update`] follows the steps of Glickman's "Example of
//! the Glicko-2 system": the period's games give an estimated improvement Δ and its variance v,
//! the new volatility is the root of the paper's function f found by the Illinois method (step 5),
//! then the deviation is widened by the new volatility and narrowed by the games' information,
//! and the rating moves by the new variance times the surprise of the results.
//!
//! # Continuous rating periods
//!
//! The paper batches everyone's games into fixed periods. Here, as on lichess, each call to
//! [`update`] is one rating period holding the games passed to it, and the idle time before it
//! is accounted for by widening the deviation first: with t = elapsed ms /
//! [`Settings::rating_period_ms`] (fractional), φ becomes √(φ² + t·σ²). This widening composes
//! (t₁ then t₂ gives the same as t₁ + t₂), so [`current`] (the rating as of now, for display and
//! pairing) may be stored without distorting later updates; [`update`] with no games does
//! exactly that, which is the paper's rule for a period without games. Opponents are taken as of
//! the game too: [`Game::against`] widens their deviation to `now`.
//!
//! The default period is lichess's (0.21436 periods a day, one per ≈ 4.665 days), so that a
//! deviation widens at the pace lichess players are used to.
//!
//! # Bounds
//!
//! A deviation never exceeds [`Settings::max_deviation`], whether widened by idleness or by the
//! volatility step. After games it is also floored at [`Settings::min_deviation`] (as lichess
//! does), so that a very active player's rating keeps responding to results.
//!
//! # Bughouse teams
//!
//! No platform publishes a rule for rating a two-player team, so this module uses the simplest
//! one consistent with Glicko-2: a team's rating is the mean of the partners' ratings
//! ([`team_rating`]). Each partner is rated individually, from their own rating, deviation and
//! volatility, as if they had played one game against a single opponent whose rating is the
//! opposing team's mean rating and whose deviation is the root mean square of the opposing
//! partners' deviations (each widened to the game's time), with the match score
//! ([`Game::against_team`], [`update_bughouse`]). Both partners thus receive the same score; the
//! partner's own rating does not affect the update.
//!
//! # Numerical safety
//!
//! Every input is checked ([`Error`] names the bad field) and nothing panics. The Illinois
//! iteration is bounded (100 steps; the paper's tolerance is reached in far fewer), and its
//! bracket is searched by doubling k, which finds the paper's k = 1 whenever τ ≤ 2 and ends for
//! any τ. Results that would leave the range of `f64` (only possible with absurd inputs, such as
//! rating gaps of tens of thousands of points) are reported as [`Error::Overflow`], never
//! returned.

use std::f64::consts::{PI, SQRT_2};
use std::fmt;

/// Milliseconds in a day.
const MS_PER_DAY: f64 = 86_400_000.0;

/// Upper bound on the Illinois iterations of the volatility step.
const MAX_ITERATIONS: u32 = 100;

/// Parameters of the rating system. [`Settings::default`] gives Glickman's values (τ = 0.5, a new
/// player at 1500 ± 350 with σ = 0.06) with lichess's deviation floor and period length.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// Rating of a new player, in points (default 1500). Any finite value.
    pub default_rating: f64,
    /// Deviation of a new player, in points (default 350; lichess uses 500, with a matching
    /// `max_deviation`). Must lie within `min_deviation..=max_deviation`.
    pub default_deviation: f64,
    /// Volatility σ of a new player, on the Glicko-2 scale (default 0.06).
    pub default_volatility: f64,
    /// τ, which constrains how fast the volatility changes (default 0.5; lichess uses 0.75;
    /// Glickman suggests 0.3 to 1.2).
    pub tau: f64,
    /// Points per Glicko-2 unit (default 173.7178, that is 400 / ln 10).
    pub scale: f64,
    /// Tolerance ε of the volatility iteration, on the Glicko-2 log-variance scale (default 1e-6).
    pub convergence: f64,
    /// Floor of the deviation after games, in points (default 45, as lichess).
    pub min_deviation: f64,
    /// Ceiling of the deviation, in points: it never grows above it (default 350).
    pub max_deviation: f64,
    /// Length of one rating period, in milliseconds, for widening deviations with idle time
    /// (default: lichess's 0.21436 periods a day, ≈ 403 060 272 ms ≈ 4.665 days).
    pub rating_period_ms: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            default_rating: 1500.0,
            default_deviation: 350.0,
            default_volatility: 0.06,
            tau: 0.5,
            scale: 173.7178,
            convergence: 1e-6,
            min_deviation: 45.0,
            max_deviation: 350.0,
            rating_period_ms: MS_PER_DAY / 0.21436,
        }
    }
}

impl Settings {
    /// Checks that every field is finite, that all but `default_rating` are positive, and that
    /// `min_deviation <= default_deviation <= max_deviation`.
    ///
    /// # Errors
    /// [`Error::Setting`] naming the first bad field.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |field, value| Err(Error::Setting { field, value });
        if !self.default_rating.is_finite() {
            return bad("default_rating", self.default_rating);
        }
        for (field, value) in [
            ("default_deviation", self.default_deviation),
            ("default_volatility", self.default_volatility),
            ("tau", self.tau),
            ("scale", self.scale),
            ("convergence", self.convergence),
            ("min_deviation", self.min_deviation),
            ("max_deviation", self.max_deviation),
            ("rating_period_ms", self.rating_period_ms),
        ] {
            if !is_positive(value) {
                return bad(field, value);
            }
        }
        if self.min_deviation > self.max_deviation {
            return bad("min_deviation", self.min_deviation);
        }
        if !(self.min_deviation..=self.max_deviation).contains(&self.default_deviation) {
            return bad("default_deviation", self.default_deviation);
        }
        Ok(())
    }

    /// The rating of a new player: the defaults, never updated.
    #[must_use]
    pub fn new_rating(&self) -> Rating {
        Rating {
            rating: self.default_rating,
            deviation: self.default_deviation,
            volatility: self.default_volatility,
            updated_at: None,
        }
    }
}

/// A player's Glicko-2 rating, as of its last update.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rating {
    /// Rating, in points. Must be finite.
    pub rating: f64,
    /// Rating deviation RD, in points. Must be finite and positive.
    pub deviation: f64,
    /// Volatility σ, on the Glicko-2 scale. Must be finite and positive.
    pub volatility: f64,
    /// When the deviation was last brought up to date, in Unix milliseconds; `None` for a player
    /// never rated, whose deviation does not widen until their first update.
    pub updated_at: Option<u64>,
}

impl Rating {
    fn validate(&self) -> Result<(), Error> {
        let bad = |field, value| Err(Error::Rating { field, value });
        if !self.rating.is_finite() {
            return bad("rating", self.rating);
        }
        if !is_positive(self.deviation) {
            return bad("deviation", self.deviation);
        }
        if !is_positive(self.volatility) {
            return bad("volatility", self.volatility);
        }
        Ok(())
    }

    /// The deviation widened for the periods elapsed until `now_ms`, capped at the maximum.
    fn widened_deviation(&self, settings: &Settings, now_ms: u64) -> f64 {
        let elapsed_ms = self.updated_at.map_or(0, |at| now_ms.saturating_sub(at));
        if elapsed_ms == 0 {
            return self.deviation.min(settings.max_deviation);
        }
        let periods = elapsed_ms as f64 / settings.rating_period_ms;
        let drift = self.volatility * settings.scale;
        (self.deviation.powi(2) + periods * drift.powi(2))
            .sqrt()
            .min(settings.max_deviation)
    }

    /// The timestamp after an update at `now_ms` (never moving backwards).
    fn stamp(&self, now_ms: u64) -> u64 {
        self.updated_at.map_or(now_ms, |at| at.max(now_ms))
    }
}

/// One game of a rating period, from the rated player's side.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Game {
    /// The opponent's rating, in points. Must be finite.
    pub opponent_rating: f64,
    /// The opponent's deviation at the time of the game, in points. Must be finite and positive.
    pub opponent_deviation: f64,
    /// The rated player's score, in `[0, 1]`: 1 a win, 0.5 a draw, 0 a loss; fractional results
    /// such as 0.75 are allowed.
    pub score: f64,
}

impl Game {
    /// A game against `opponent`, whose deviation is widened to `now_ms` (see [`current`]).
    /// The score is checked by [`update`].
    ///
    /// # Errors
    /// [`Error::Setting`] or [`Error::Rating`] (the opponent's) for invalid input.
    pub fn against(
        settings: &Settings,
        opponent: &Rating,
        score: f64,
        now_ms: u64,
    ) -> Result<Self, Error> {
        let opponent = current(settings, opponent, now_ms)?;
        Ok(Self {
            opponent_rating: opponent.rating,
            opponent_deviation: opponent.deviation,
            score,
        })
    }

    /// A bughouse match against the team `opponents`, seen as one opponent: their mean rating,
    /// and the root mean square of their deviations widened to `now_ms` (see the module docs).
    /// `score` is the rated team's match score. The score is checked by [`update`].
    ///
    /// # Errors
    /// [`Error::Setting`] or [`Error::Rating`] (an opponent's) for invalid input.
    pub fn against_team(
        settings: &Settings,
        opponents: [&Rating; 2],
        score: f64,
        now_ms: u64,
    ) -> Result<Self, Error> {
        let first = current(settings, opponents[0], now_ms)?;
        let second = current(settings, opponents[1], now_ms)?;
        Ok(Self {
            opponent_rating: team_rating([&first, &second]),
            opponent_deviation: first.deviation.hypot(second.deviation) / SQRT_2,
            score,
        })
    }

    fn validate(&self, index: usize) -> Result<(), Error> {
        let bad = |field, value| {
            Err(Error::Game {
                index,
                field,
                value,
            })
        };
        if !self.opponent_rating.is_finite() {
            return bad("opponent_rating", self.opponent_rating);
        }
        if !is_positive(self.opponent_deviation) {
            return bad("opponent_deviation", self.opponent_deviation);
        }
        if !(0.0..=1.0).contains(&self.score) {
            return bad("score", self.score);
        }
        Ok(())
    }
}

/// Invalid input to the Glicko-2 functions, naming the bad field.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Error {
    /// A [`Settings`] field is not finite, not positive (all but `default_rating`), or breaks
    /// `min_deviation <= default_deviation <= max_deviation`.
    Setting {
        /// The field's name.
        field: &'static str,
        /// Its value.
        value: f64,
    },
    /// A [`Rating`] field is not finite, or its deviation or volatility is not positive.
    Rating {
        /// The field's name.
        field: &'static str,
        /// Its value.
        value: f64,
    },
    /// A [`Game`] field is invalid: the score NaN or outside `[0, 1]`, the opponent's rating not
    /// finite, or the opponent's deviation not finite and positive.
    Game {
        /// The game's index in the slice given.
        index: usize,
        /// The field's name.
        field: &'static str,
        /// Its value.
        value: f64,
    },
    /// The result would leave the range of `f64`: only with absurd inputs, such as rating gaps
    /// of tens of thousands of points.
    Overflow,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Setting { field, value } => write!(
                f,
                "invalid Glicko-2 setting {field} = {value}: settings must be finite, positive \
                 (but for default_rating) and have min_deviation <= default_deviation <= \
                 max_deviation"
            ),
            Self::Rating { field, value } => write!(
                f,
                "invalid rating field {field} = {value}: the rating must be finite, the \
                 deviation and volatility finite and positive"
            ),
            Self::Game {
                index,
                field,
                value,
            } => write!(
                f,
                "invalid game {index}: {field} = {value} (scores lie in [0, 1], opponent ratings \
                 are finite, opponent deviations finite and positive)"
            ),
            Self::Overflow => f.write_str("the Glicko-2 update overflowed (absurd inputs)"),
        }
    }
}

impl std::error::Error for Error {}

/// `player` as of `now_ms` (Unix ms): its deviation widened for the rating periods elapsed since
/// its last update (capped at the maximum), the rating and volatility unchanged, the timestamp
/// moved to `now_ms`. For display and pairing; storing it is harmless, as the widening composes.
/// A clock earlier than the last update counts as no time elapsed.
///
/// # Errors
/// [`Error::Setting`] or [`Error::Rating`] for invalid input.
pub fn current(settings: &Settings, player: &Rating, now_ms: u64) -> Result<Rating, Error> {
    settings.validate()?;
    player.validate()?;
    Ok(Rating {
        deviation: player.widened_deviation(settings, now_ms),
        updated_at: Some(player.stamp(now_ms)),
        ..*player
    })
}

/// Rates `player` for one rating period ending at `now_ms` (Unix ms) holding `games`: the
/// deviation is first widened for the time since the last update, then the paper's steps run.
/// With no games this is [`current`]; after games the deviation lies within the settings' bounds.
///
/// # Errors
/// [`Error::Setting`], [`Error::Rating`] or [`Error::Game`] for invalid input;
/// [`Error::Overflow`] if the result would not be finite.
pub fn update(
    settings: &Settings,
    player: &Rating,
    games: &[Game],
    now_ms: u64,
) -> Result<Rating, Error> {
    let widened = current(settings, player, now_ms)?;
    for (index, game) in games.iter().enumerate() {
        game.validate(index)?;
    }
    if games.is_empty() {
        return Ok(widened);
    }
    let scale = settings.scale;
    let phi = widened.deviation / scale;
    // Steps 3 and 4: the games' information 1/v and the score surprise Σ g(φⱼ)(s − E).
    let (mut information, mut surprise) = (0.0, 0.0);
    for game in games {
        let g = g(game.opponent_deviation / scale);
        let e = expected(g, (game.opponent_rating - player.rating) / scale);
        information += g * g * e * (1.0 - e);
        surprise += g * (game.score - e);
    }
    let v = information.recip();
    let delta = v * surprise;
    if !(v.is_finite() && (delta * delta).is_finite()) {
        return Err(Error::Overflow);
    }
    // Steps 5 to 8.
    let volatility = new_volatility(settings, phi, player.volatility, v, delta);
    let phi_star = phi.hypot(volatility).min(settings.max_deviation / scale);
    let new_phi = (phi_star.powi(-2) + information).sqrt().recip();
    let rating = player.rating + scale * new_phi.powi(2) * surprise;
    let deviation = (scale * new_phi)
        .max(settings.min_deviation)
        .min(settings.max_deviation);
    if !(rating.is_finite() && is_positive(volatility)) {
        return Err(Error::Overflow);
    }
    Ok(Rating {
        rating,
        deviation,
        volatility,
        updated_at: widened.updated_at,
    })
}

/// Rates both partners of a bughouse team after a match at `now_ms` against the team
/// `opponents`, with the team's match score in `[0, 1]` (see the module docs for the rule).
///
/// # Errors
/// As [`update`] and [`Game::against_team`].
pub fn update_bughouse(
    settings: &Settings,
    team: [&Rating; 2],
    opponents: [&Rating; 2],
    score: f64,
    now_ms: u64,
) -> Result<[Rating; 2], Error> {
    let game = Game::against_team(settings, opponents, score, now_ms)?;
    Ok([
        update(settings, team[0], &[game], now_ms)?,
        update(settings, team[1], &[game], now_ms)?,
    ])
}

/// A bughouse team's rating: the mean of the partners' ratings, in points.
#[must_use]
pub fn team_rating(partners: [&Rating; 2]) -> f64 {
    partners[0].rating / 2.0 + partners[1].rating / 2.0
}

/// The paper's expected score E of `player` against `opponent`, in `[0, 1]`: it discounts the
/// rating gap by g of the opponent's deviation, taken as given (call [`current`] first to count
/// idle time). NaN fields give NaN.
#[must_use]
pub fn expected_score(settings: &Settings, player: &Rating, opponent: &Rating) -> f64 {
    let g = g(opponent.deviation / settings.scale);
    expected(g, (opponent.rating - player.rating) / settings.scale)
}

/// The paper's g(φ): how much a deviation φ (Glicko-2 scale) discounts a rating gap.
fn g(phi: f64) -> f64 {
    (1.0 + 3.0 * phi * phi / (PI * PI)).sqrt().recip()
}

/// The paper's E, from g(φⱼ) and the gap μⱼ − μ (Glicko-2 scale).
fn expected(g: f64, gap: f64) -> f64 {
    (1.0 + (g * gap).exp()).recip()
}

/// Step 5: the new volatility σ′, root of f by the Illinois method.
fn new_volatility(settings: &Settings, phi: f64, sigma: f64, v: f64, delta: f64) -> f64 {
    let tau = settings.tau;
    let (phi2, delta2) = (phi * phi, delta * delta);
    let a = 2.0 * sigma.ln();
    // f(x) = eˣ(Δ² − φ² − v − eˣ) / (2(φ² + v + eˣ)²) − (x − a)/τ², written so that no
    // intermediate overflows: share = eˣ / (φ² + v + eˣ).
    let f = |x: f64| {
        let share = (1.0 + (phi2 + v) * (-x).exp()).recip();
        share * (delta2 / (phi2 + v + x.exp()) - 1.0) / 2.0 - (x - a) / (tau * tau)
    };
    let mut xa = a;
    let mut xb = if delta2 > phi2 + v {
        (delta2 - phi2 - v).ln()
    } else {
        let mut k = 1.0;
        while f(a - k * tau) < 0.0 {
            k *= 2.0;
        }
        a - k * tau
    };
    let (mut fa, mut fb) = (f(xa), f(xb));
    for _ in 0..MAX_ITERATIONS {
        if (xb - xa).abs() <= settings.convergence {
            break;
        }
        let xc = xa + (xa - xb) * fa / (fb - fa);
        let fc = f(xc);
        if fc * fb <= 0.0 {
            (xa, fa) = (xb, fb);
        } else {
            fa /= 2.0;
        }
        (xb, fb) = (xc, fc);
    }
    (xa / 2.0).exp()
}

/// Finite and strictly positive (false for NaN).
fn is_positive(value: f64) -> bool {
    value.is_finite() && value > 0.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const DAY: u64 = 86_400_000;

    fn rating(rating: f64, deviation: f64) -> Rating {
        Rating {
            rating,
            deviation,
            volatility: 0.06,
            updated_at: None,
        }
    }

    fn game(opponent_rating: f64, opponent_deviation: f64, score: f64) -> Game {
        Game {
            opponent_rating,
            opponent_deviation,
            score,
        }
    }

    #[test]
    fn default_settings_are_valid() {
        let settings = Settings::default();
        assert_eq!(settings.validate(), Ok(()));
        let days = settings.rating_period_ms / MS_PER_DAY;
        assert!((days - 4.665).abs() < 1e-3, "{days}");
    }

    #[test]
    fn glickman_worked_example() {
        let settings = Settings::default();
        let games = [
            game(1400.0, 30.0, 1.0),
            game(1550.0, 100.0, 0.0),
            game(1700.0, 300.0, 0.0),
        ];
        let new = update(&settings, &rating(1500.0, 200.0), &games, 0).unwrap();
        assert!((new.rating - 1464.0507).abs() < 5e-5, "{}", new.rating);
        assert!((new.deviation - 151.5165).abs() < 5e-5, "{}", new.deviation);
        assert!(
            (new.volatility - 0.059_996).abs() < 5e-8,
            "{}",
            new.volatility
        );
        assert_eq!(new.updated_at, Some(0));
    }

    #[test]
    fn no_games_only_widens_the_deviation() {
        let settings = Settings::default();
        let player = Rating {
            updated_at: Some(1_000),
            ..rating(1700.0, 80.0)
        };
        let now = 1_000 + 30 * DAY;
        let new = update(&settings, &player, &[], now).unwrap();
        assert_eq!(new, current(&settings, &player, now).unwrap());
        assert_eq!((new.rating, new.volatility), (1700.0, 0.06));
        assert_eq!(new.updated_at, Some(now));
        let periods = (30 * DAY) as f64 / settings.rating_period_ms;
        let expected = (80.0f64.powi(2) + periods * (0.06 * settings.scale).powi(2)).sqrt();
        assert!((new.deviation - expected).abs() < 1e-9);
        assert!(new.deviation > 80.0);
    }

    #[test]
    fn deviation_is_capped_and_new_players_do_not_widen() {
        let settings = Settings::default();
        let idle = Rating {
            updated_at: Some(0),
            ..rating(1500.0, 300.0)
        };
        let years = current(&settings, &idle, 50 * 365 * DAY).unwrap();
        assert_eq!(years.deviation, settings.max_deviation);
        let never = current(&settings, &rating(1500.0, 200.0), 50 * 365 * DAY).unwrap();
        assert_eq!(never.deviation, 200.0);
    }

    #[test]
    fn a_clock_going_backwards_counts_as_no_time() {
        let settings = Settings::default();
        let player = Rating {
            updated_at: Some(10 * DAY),
            ..rating(1500.0, 100.0)
        };
        let new = current(&settings, &player, DAY).unwrap();
        assert_eq!((new.deviation, new.updated_at), (100.0, Some(10 * DAY)));
    }

    #[test]
    fn deviation_is_floored_after_games() {
        let settings = Settings::default();
        let busy = rating(1500.0, 45.0);
        let games = [game(1500.0, 45.0, 0.5); 50];
        let new = update(&settings, &busy, &games, 0).unwrap();
        assert_eq!(new.deviation, settings.min_deviation);
    }

    #[test]
    fn fractional_score_lies_between_draw_and_win() {
        let settings = Settings::default();
        let player = rating(1500.0, 150.0);
        let after = |score| {
            update(&settings, &player, &[game(1500.0, 150.0, score)], 0)
                .unwrap()
                .rating
        };
        let (draw, three_quarters, win) = (after(0.5), after(0.75), after(1.0));
        assert!((draw - 1500.0).abs() < 1e-9);
        assert!(draw < three_quarters && three_quarters < win);
        assert!(1500.0 - after(0.25) > 0.0);
    }

    #[test]
    fn expected_score_discounts_by_the_opponents_deviation() {
        let settings = Settings::default();
        let (strong, weak) = (rating(1700.0, 50.0), rating(1500.0, 50.0));
        assert!((expected_score(&settings, &weak, &weak) - 0.5).abs() < 1e-12);
        let e = expected_score(&settings, &strong, &weak);
        assert!((e + expected_score(&settings, &weak, &strong) - 1.0).abs() < 1e-12);
        let logistic = 1.0 / (1.0 + 10f64.powf(-200.0 / 400.0));
        assert!(e > 0.5 && e < logistic);
        let unsure = rating(1500.0, 350.0);
        assert!(expected_score(&settings, &strong, &unsure) < e);
    }

    #[test]
    fn bughouse_partners_play_the_opposing_teams_mean() {
        let settings = Settings::default();
        let (a, b) = (rating(1600.0, 60.0), rating(1400.0, 120.0));
        let (c, d) = (rating(1550.0, 80.0), rating(1650.0, 60.0));
        assert_eq!(team_rating([&a, &b]), 1500.0);
        let opponent = Game::against_team(&settings, [&c, &d], 1.0, 0).unwrap();
        assert_eq!(opponent.opponent_rating, 1600.0);
        assert!((opponent.opponent_deviation - 5000f64.sqrt()).abs() < 1e-9);
        let [new_a, new_b] = update_bughouse(&settings, [&a, &b], [&c, &d], 1.0, 0).unwrap();
        assert_eq!(new_a, update(&settings, &a, &[opponent], 0).unwrap());
        assert_eq!(new_b, update(&settings, &b, &[opponent], 0).unwrap());
        assert!(new_a.rating > 1600.0 && new_b.rating > 1400.0);
    }

    #[test]
    fn bad_input_is_an_error() {
        let settings = Settings::default();
        let player = rating(1500.0, 200.0);
        let with_score = |score| update(&settings, &player, &[game(1500.0, 100.0, score)], 0);
        assert!(matches!(
            with_score(f64::NAN),
            Err(Error::Game {
                index: 0,
                field: "score",
                ..
            })
        ));
        assert_eq!(
            with_score(1.5),
            Err(Error::Game {
                index: 0,
                field: "score",
                value: 1.5
            })
        );
        assert_eq!(
            update(&settings, &rating(1500.0, -1.0), &[], 0),
            Err(Error::Rating {
                field: "deviation",
                value: -1.0
            })
        );
        let opponent = rating(1500.0, f64::INFINITY);
        assert!(matches!(
            Game::against(&settings, &opponent, 1.0, 0),
            Err(Error::Rating {
                field: "deviation",
                ..
            })
        ));
        let games = [game(1500.0, 100.0, 1.0), game(f64::NAN, 100.0, 0.0)];
        assert!(matches!(
            update(&settings, &player, &games, 0),
            Err(Error::Game {
                index: 1,
                field: "opponent_rating",
                ..
            })
        ));
        let bad_tau = Settings {
            tau: f64::NAN,
            ..settings
        };
        assert!(matches!(
            update(&bad_tau, &player, &[], 0),
            Err(Error::Setting { field: "tau", .. })
        ));
        let crossed = Settings {
            min_deviation: 400.0,
            ..settings
        };
        assert!(matches!(
            crossed.validate(),
            Err(Error::Setting {
                field: "min_deviation",
                ..
            })
        ));
        let outside = Settings {
            default_deviation: 500.0,
            ..settings
        };
        assert!(matches!(
            outside.validate(),
            Err(Error::Setting {
                field: "default_deviation",
                ..
            })
        ));
        assert!(Error::Overflow.to_string().contains("overflow"));
    }

    #[test]
    fn absurd_rating_gaps_overflow_into_an_error() {
        let settings = Settings::default();
        let games = [game(0.0, 45.0, 0.0)];
        assert_eq!(
            update(&settings, &rating(1e300, 45.0), &games, 0),
            Err(Error::Overflow)
        );
    }

    fn valid_rating() -> impl Strategy<Value = Rating> {
        (
            0.0..=4000.0,
            45.0..=350.0,
            0.001..=0.5,
            prop::option::of(0..=DAY * 3650),
        )
            .prop_map(|(rating, deviation, volatility, updated_at)| Rating {
                rating,
                deviation,
                volatility,
                updated_at,
            })
    }

    fn valid_game() -> impl Strategy<Value = Game> {
        (0.0..=4000.0, 45.0..=350.0, 0.0..=1.0).prop_map(|(r, d, s)| game(r, d, s))
    }

    /// Ratings at the corners: 0 and 4000, deviations at both bounds.
    fn corner_rating() -> impl Strategy<Value = Rating> {
        (
            prop::sample::select(vec![0.0, 4000.0]),
            prop::sample::select(vec![45.0, 350.0]),
        )
            .prop_map(|(r, d)| rating(r, d))
    }

    proptest! {
        #[test]
        fn outputs_are_finite_and_bounded(
            player in prop_oneof![valid_rating(), corner_rating()],
            games in prop::collection::vec(
                prop_oneof![valid_game(), (corner_rating(), prop::sample::select(vec![0.0, 1.0]))
                    .prop_map(|(o, s)| game(o.rating, o.deviation, s))],
                0..8,
            ),
            now in 0..=DAY * 7300,
        ) {
            let settings = Settings::default();
            let new = update(&settings, &player, &games, now).unwrap();
            prop_assert!(new.rating.is_finite());
            prop_assert!(new.volatility.is_finite() && new.volatility > 0.0);
            let bounds = settings.min_deviation..=settings.max_deviation;
            prop_assert!(games.is_empty() || bounds.contains(&new.deviation));
            prop_assert!(new.deviation <= settings.max_deviation);
        }

        #[test]
        fn a_win_never_lowers_and_a_loss_never_raises(
            player in valid_rating(),
            opponent in valid_rating(),
            now in 0..=DAY * 7300,
        ) {
            let settings = Settings::default();
            let rated = |score| {
                let game = Game::against(&settings, &opponent, score, now).unwrap();
                update(&settings, &player, &[game], now).unwrap().rating
            };
            prop_assert!(rated(1.0) >= player.rating);
            prop_assert!(rated(0.0) <= player.rating);
        }

        #[test]
        fn a_higher_score_never_gives_a_lower_rating(
            player in valid_rating(),
            opponent in valid_game(),
            low in 0.0..=1.0f64,
            high in 0.0..=1.0f64,
        ) {
            let settings = Settings::default();
            let (low, high) = (low.min(high), low.max(high));
            let rated = |score| {
                update(&settings, &player, &[Game { score, ..opponent }], 0).unwrap().rating
            };
            prop_assert!(rated(low) <= rated(high) + 1e-9);
        }

        #[test]
        fn equal_uncertainty_makes_a_game_zero_sum(
            first in 0.0..=4000.0f64,
            second in 0.0..=4000.0f64,
            deviation in 45.0..=350.0f64,
            score in 0.0..=1.0f64,
        ) {
            let settings = Settings::default();
            let (a, b) = (rating(first, deviation), rating(second, deviation));
            let new_a = update(&settings, &a, &[game(second, deviation, score)], 0).unwrap();
            let new_b = update(&settings, &b, &[game(first, deviation, 1.0 - score)], 0).unwrap();
            let (gain, loss) = (new_a.rating - first, new_b.rating - second);
            prop_assert!((gain + loss).abs() <= 1e-9 * (1.0 + gain.abs()), "{gain} {loss}");
            prop_assert!((new_a.deviation - new_b.deviation).abs() < 1e-9);
        }

        #[test]
        fn idle_widening_is_monotone_capped_and_composes(
            player in valid_rating(),
            first in 0..=DAY * 3650,
            second in 0..=DAY * 3650,
        ) {
            let settings = Settings::default();
            let start = Rating { updated_at: Some(0), ..player };
            let once = current(&settings, &start, first).unwrap();
            let both = current(&settings, &once, first + second).unwrap();
            let direct = current(&settings, &start, first + second).unwrap();
            prop_assert!(once.deviation >= start.deviation.min(settings.max_deviation));
            prop_assert!(both.deviation >= once.deviation);
            prop_assert!(both.deviation <= settings.max_deviation);
            prop_assert!((both.deviation - direct.deviation).abs() < 1e-9);
            prop_assert_eq!((both.rating, both.volatility), (player.rating, player.volatility));
        }
    }
}
