//! A player's rating in one variant and speed (Glicko-2 and FIDE Elo kept side by side), its
//! stored record, and the rating of a finished match.
//!
//! Every rated match updates both systems; a pool pairs by the one the server configures for it.
//! Glicko-2 is updated once per match, as a rating period of one game ending when the match
//! ended (continuous rating periods: the deviation first widens for the time since the player's
//! last game). Bughouse rates each partner against the opposing team as one player (the mean of
//! their ratings, the root mean square of their deviations), with the team's match score; Elo
//! does the same with the opponents' mean Elo.

use arbiter_core::rating::{elo, glicko2};

/// A new player's Elo rating.
pub const DEFAULT_ELO: u16 = 1500;

/// Which rating a pool pairs by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum System {
    /// Glicko-2 (the default).
    #[default]
    Glicko2,
    /// FIDE Elo.
    Elo,
}

/// A player's ratings in one variant and speed category.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Record {
    /// Glicko-2.
    pub glicko: glicko2::Rating,
    /// FIDE Elo (its `games` count every rated game of the variant and speed).
    pub elo: elo::Player,
}

impl Record {
    /// A newcomer's record.
    pub fn new(settings: &glicko2::Settings) -> Record {
        Record {
            glicko: settings.new_rating(),
            elo: elo::Player {
                rating: DEFAULT_ELO,
                games: 0,
                reached_2400: false,
                under_18: false,
            },
        }
    }

    /// The stored text: `rating,deviation,volatility,updated_at,elo,games,reached_2400`, the
    /// floating-point numbers in Rust's shortest round-trip form.
    pub fn encode(&self) -> String {
        format!(
            "{},{},{},{},{},{},{}",
            self.glicko.rating,
            self.glicko.deviation,
            self.glicko.volatility,
            self.glicko
                .updated_at
                .map_or(String::new(), |t| t.to_string()),
            self.elo.rating,
            self.elo.games,
            u8::from(self.elo.reached_2400)
        )
    }

    /// Reads a record written by [`Record::encode`]; `None` when it is corrupt.
    pub fn decode(text: &str) -> Option<Record> {
        let f: Vec<&str> = text.split(',').collect();
        let [r, rd, vol, at, e, games, reached] = f[..] else {
            return None;
        };
        let finite = |s: &str| s.parse::<f64>().ok().filter(|x| x.is_finite());
        Some(Record {
            glicko: glicko2::Rating {
                rating: finite(r)?,
                deviation: finite(rd)?.max(f64::MIN_POSITIVE),
                volatility: finite(vol)?.max(f64::MIN_POSITIVE),
                updated_at: if at.is_empty() {
                    None
                } else {
                    Some(at.parse().ok()?)
                },
            },
            elo: elo::Player {
                rating: e.parse().ok()?,
                games: games.parse().ok()?,
                reached_2400: reached == "1",
                under_18: false,
            },
        })
    }

    /// The rating this record pairs by under `system`, rounded.
    pub fn pairing_rating(&self, system: System) -> i32 {
        match system {
            System::Glicko2 => self.glicko.rating.round().clamp(-1e6, 1e6) as i32,
            System::Elo => i32::from(self.elo.rating),
        }
    }
}

/// Why a match could not be rated.
#[derive(Clone, Debug, PartialEq)]
pub enum RateError {
    /// The number of players does not fit the match (2, or 4 in bughouse).
    Players(usize),
    /// A score outside 0..=4 quarters.
    Score(u32),
    /// Glicko-2 refused its input.
    Glicko(glicko2::Error),
    /// Elo refused its input.
    Elo(elo::Error),
}

impl std::fmt::Display for RateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RateError::Players(n) => write!(f, "a rated match has 2 or 4 players, not {n}"),
            RateError::Score(q) => write!(f, "score of {q} quarters is out of range"),
            RateError::Glicko(e) => write!(f, "{e}"),
            RateError::Elo(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RateError {}

/// The records of a finished match's players after it: `before` in seat order ([white, black],
/// or [white A, black A, white B, black B] with team 1 = white A + black B), the score of White
/// (team 1) in quarter points, the match's end at `now_ms`.
///
/// # Errors
/// [`RateError`] for a wrong number of players or a score out of range, or when a stored rating
/// is unusable.
pub fn rate(
    settings: &glicko2::Settings,
    before: &[Record],
    white_quarters: u32,
    now_ms: u64,
) -> Result<Vec<Record>, RateError> {
    if white_quarters > 4 {
        return Err(RateError::Score(white_quarters));
    }
    let white = f64::from(white_quarters) / 4.0;
    let black = 1.0 - white;
    match before {
        [w, b] => Ok(vec![
            rate_one(settings, w, &[b], white, now_ms)?,
            rate_one(settings, b, &[w], black, now_ms)?,
        ]),
        [aw, ab, bw, bb] => {
            // Team 1: white A and black B; team 2: black A and white B.
            Ok(vec![
                rate_one(settings, aw, &[ab, bw], white, now_ms)?,
                rate_one(settings, ab, &[aw, bb], black, now_ms)?,
                rate_one(settings, bw, &[aw, bb], black, now_ms)?,
                rate_one(settings, bb, &[ab, bw], white, now_ms)?,
            ])
        }
        other => Err(RateError::Players(other.len())),
    }
}

fn rate_one(
    settings: &glicko2::Settings,
    player: &Record,
    opponents: &[&Record],
    score: f64,
    now_ms: u64,
) -> Result<Record, RateError> {
    let game = match opponents {
        [one] => glicko2::Game::against(settings, &one.glicko, score, now_ms),
        [a, b] => glicko2::Game::against_team(settings, [&a.glicko, &b.glicko], score, now_ms),
        _ => unreachable!("one opponent or a team of two"),
    }
    .map_err(RateError::Glicko)?;
    let glicko =
        glicko2::update(settings, &player.glicko, &[game], now_ms).map_err(RateError::Glicko)?;
    let opponent_elo = opponents
        .iter()
        .map(|o| u32::from(o.elo.rating))
        .sum::<u32>()
        .div_ceil(opponents.len() as u32);
    let elo = player
        .elo
        .after_period(&[elo::Game {
            opponent: u16::try_from(opponent_elo).unwrap_or(u16::MAX),
            score,
        }])
        .map_err(RateError::Elo)?;
    Ok(Record { glicko, elo })
}

/// What changed a rating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// A rated match ended.
    Match,
    /// An import (ImportRatings).
    Import,
}

/// One change of a player's rating in one variant and speed, as the rating history keeps it:
/// the records before (`None`: the player had none) and after, and which systems changed.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// What changed it.
    pub kind: ChangeKind,
    /// When: the match's end, or the import's time (Unix ms).
    pub at_ms: u64,
    /// The match (empty for an import).
    pub match_id: String,
    /// The opponents (none for an import).
    pub opponents: Vec<String>,
    /// The player's score in quarter points (0 for an import).
    pub score_quarters: u32,
    /// Whether Glicko-2 changed.
    pub glicko: bool,
    /// Whether Elo changed.
    pub elo: bool,
    /// The record before.
    pub before: Option<Record>,
    /// The record after.
    pub after: Record,
}

impl Change {
    /// The stored text: a packed list of kind (`m` or `i`), time, match id, the opponents (a
    /// packed list), score, systems (`g`, `e` or `ge`), the record before (empty: none) and
    /// after ([`Record::encode`]).
    pub fn encode(&self) -> String {
        let opponents = crate::found::pack(&self.opponents);
        let systems = match (self.glicko, self.elo) {
            (true, true) => "ge",
            (true, false) => "g",
            (false, true) => "e",
            (false, false) => "",
        };
        crate::found::pack(&[
            match self.kind {
                ChangeKind::Match => "m".to_owned(),
                ChangeKind::Import => "i".to_owned(),
            },
            self.at_ms.to_string(),
            self.match_id.clone(),
            opponents,
            self.score_quarters.to_string(),
            systems.to_owned(),
            self.before.map_or(String::new(), |r| r.encode()),
            self.after.encode(),
        ])
    }

    /// Reads a change written by [`Change::encode`]; `None` when it is corrupt.
    pub fn decode(text: &str) -> Option<Change> {
        let items = crate::found::unpack(text)?;
        let [kind, at, match_id, opponents, score, systems, before, after] = &items[..] else {
            return None;
        };
        Some(Change {
            kind: match kind.as_str() {
                "m" => ChangeKind::Match,
                "i" => ChangeKind::Import,
                _ => return None,
            },
            at_ms: at.parse().ok()?,
            match_id: match_id.clone(),
            opponents: crate::found::unpack(opponents)?,
            score_quarters: score.parse().ok()?,
            glicko: systems.contains('g'),
            elo: systems.contains('e'),
            before: if before.is_empty() {
                None
            } else {
                Some(Record::decode(before)?)
            },
            after: Record::decode(after)?,
        })
    }
}

/// The opponents of each seat of a rated match (seats as [`rate`] orders them): one in a
/// one-board match, the opposing team in bughouse.
pub fn opponents_of(players: &[String]) -> Vec<Vec<String>> {
    match players {
        [w, b] => vec![vec![b.clone()], vec![w.clone()]],
        [aw, ab, bw, bb] => vec![
            vec![ab.clone(), bw.clone()],
            vec![aw.clone(), bb.clone()],
            vec![aw.clone(), bb.clone()],
            vec![ab.clone(), bw.clone()],
        ],
        _ => vec![Vec::new(); players.len()],
    }
}

/// Each seat's score in quarter points, from White's (team 1's) `white_quarters`.
pub fn seat_quarters(seats: usize, white_quarters: u32) -> Vec<u32> {
    let black = 4u32.saturating_sub(white_quarters);
    match seats {
        4 => vec![white_quarters, black, black, white_quarters],
        n => (0..n)
            .map(|i| if i % 2 == 0 { white_quarters } else { black })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_exactly() {
        let s = glicko2::Settings::default();
        let mut r = Record::new(&s);
        assert_eq!(Record::decode(&r.encode()), Some(r));
        r.glicko.rating = 1_464.050_670_3;
        r.glicko.updated_at = Some(1_700_000_000_123);
        r.elo.reached_2400 = true;
        assert_eq!(Record::decode(&r.encode()), Some(r));
        assert_eq!(Record::decode("1,2,3"), None);
        assert_eq!(Record::decode("NaN,1,1,,1500,0,0"), None);
    }

    #[test]
    fn a_win_moves_both_systems_and_is_symmetric() {
        let s = glicko2::Settings::default();
        let new = Record::new(&s);
        let after = rate(&s, &[new, new], 4, 1_000).unwrap();
        assert!(after[0].glicko.rating > 1500.0 && after[1].glicko.rating < 1500.0);
        assert!((after[0].glicko.rating - 1500.0 + after[1].glicko.rating - 1500.0).abs() < 1e-9);
        assert_eq!(after[0].elo.rating, 1520);
        assert_eq!(after[1].elo.rating, 1480);
        assert_eq!(after[0].elo.games, 1);
        // A Glinski stalemate's ¾ is a quarter of a win's change at equal ratings.
        let three_quarters = rate(&s, &[new, new], 3, 1_000).unwrap();
        assert_eq!(three_quarters[0].elo.rating, 1510);
        assert!(rate(&s, &[new, new], 5, 1_000).is_err());
        assert_eq!(rate(&s, &[new], 4, 1_000), Err(RateError::Players(1)));
    }

    #[test]
    fn bughouse_rates_the_winning_team_up() {
        let s = glicko2::Settings::default();
        let new = Record::new(&s);
        let after = rate(&s, &[new; 4], 0, 1_000).unwrap();
        // Team 2 (black A, white B) won.
        assert!(after[1].glicko.rating > 1500.0 && after[2].glicko.rating > 1500.0);
        assert!(after[0].glicko.rating < 1500.0 && after[3].glicko.rating < 1500.0);
        assert_eq!(after[1].elo.rating, 1520);
    }
    #[test]
    fn changes_round_trip_and_name_each_seat_s_opponents() {
        let s = glicko2::Settings::default();
        let before = Record::new(&s);
        let after = rate(&s, &[before, before], 4, 1_000).unwrap()[0];
        let c = Change {
            kind: ChangeKind::Match,
            at_ms: 1_000,
            match_id: "m:1,2".into(),
            opponents: vec!["b,c".into(), "x".into()],
            score_quarters: 4,
            glicko: true,
            elo: true,
            before: Some(before),
            after,
        };
        assert_eq!(Change::decode(&c.encode()), Some(c.clone()));
        let import = Change {
            kind: ChangeKind::Import,
            elo: false,
            before: None,
            opponents: Vec::new(),
            ..c
        };
        assert_eq!(Change::decode(&import.encode()), Some(import));
        assert_eq!(Change::decode("1:m"), None);
        let four: Vec<String> = ["aw", "ab", "bw", "bb"].map(String::from).to_vec();
        assert_eq!(opponents_of(&four)[0], ["ab", "bw"]);
        assert_eq!(opponents_of(&four)[3], ["ab", "bw"]);
        assert_eq!(opponents_of(&four[..2])[1], ["aw"]);
        assert_eq!(seat_quarters(4, 3), [3, 1, 1, 3]);
        assert_eq!(seat_quarters(2, 0), [0, 4]);
    }
}
