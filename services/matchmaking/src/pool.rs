//! Pools and what the store keeps about waiting players, with the text records they are stored
//! as (fields separated by U+001F, list items by U+001E: player ids never hold control
//! characters, so neither can appear inside a field).

use arbiter_core::Color;
use arbiter_core::Variant;
use arbiter_core::clock::TimeControl;
use arbiter_core::pairing::wave::RatingRange;

/// The separator of a record's fields (U+001F), also in the Redis store's marks and states.
pub(crate) const FIELD: char = '\u{1f}';
const ITEM: char = '\u{1e}';

/// A pool: one variant, one time control, rated or casual.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pool {
    /// The game.
    pub variant: Variant,
    /// The time control.
    pub control: TimeControl,
    /// Whether ratings change after its matches.
    pub rated: bool,
}

impl Pool {
    /// The pool's name: `variant/time control/rated` (or `/casual`), with the time control in
    /// its canonical human form (`chess/3+2/rated`).
    pub fn name(&self) -> String {
        format!(
            "{}/{}/{}",
            self.variant.name(),
            self.control,
            if self.rated { "rated" } else { "casual" }
        )
    }

    /// Reads a pool name written by [`Pool::name`].
    pub fn from_name(name: &str) -> Option<Pool> {
        let (variant, rest) = name.split_once('/')?;
        let (control, rated) = rest.rsplit_once('/')?;
        Some(Pool {
            variant: variant.parse().ok()?,
            control: TimeControl::parse(control).ok()?,
            rated: match rated {
                "rated" => true,
                "casual" => false,
                _ => return None,
            },
        })
    }

    /// Whether the pool's matches are bughouse matches (four players).
    pub fn is_bughouse(&self) -> bool {
        self.variant == Variant::Bughouse
    }

    /// The rating key of this pool's variant and speed (`chess:blitz`).
    pub fn rating_key(&self) -> String {
        rating_key(self.variant, self.control.speed())
    }
}

/// The key of a player's rating in one variant and speed category (`chess:blitz`).
pub fn rating_key(variant: Variant, speed: arbiter_core::clock::Speed) -> String {
    format!("{}:{}", variant.name(), speed.name())
}

/// A player's recent games, for colour balance and for not pairing the same two again at once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    /// The last opponent (in bughouse: the opponent on the player's board).
    pub last_opponent: Option<String>,
    /// The colour of the last game.
    pub last_color: Option<Color>,
    /// Games with White minus games with Black, kept within ±8.
    pub color_balance: i32,
}

impl History {
    /// The stored record.
    pub fn encode(&self) -> String {
        format!(
            "{}{FIELD}{}{FIELD}{}",
            self.last_opponent.as_deref().unwrap_or(""),
            color_text(self.last_color),
            self.color_balance
        )
    }

    /// Reads a record written by [`History::encode`]; `None` when it is corrupt.
    pub fn decode(text: &str) -> Option<History> {
        let f: Vec<&str> = text.split(FIELD).collect();
        let [opponent, color, balance] = f[..] else {
            return None;
        };
        Some(History {
            last_opponent: (!opponent.is_empty()).then(|| opponent.to_owned()),
            last_color: color_from(color)?,
            color_balance: balance.parse().ok()?,
        })
    }

    /// The history after a game with `color` against `opponent`.
    pub fn after(&self, opponent: &str, color: Color) -> History {
        let step = if color == Color::White { 1 } else { -1 };
        History {
            last_opponent: Some(opponent.to_owned()),
            last_color: Some(color),
            color_balance: (self.color_balance + step).clamp(-8, 8),
        }
    }
}

fn color_text(c: Option<Color>) -> &'static str {
    match c {
        None => "",
        Some(Color::White) => "w",
        Some(Color::Black) => "b",
    }
}

fn color_from(text: &str) -> Option<Option<Color>> {
    match text {
        "" => Some(None),
        "w" => Some(Some(Color::White)),
        "b" => Some(Some(Color::Black)),
        _ => None,
    }
}

/// A player's place in a pool, as joined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The player.
    pub player: String,
    /// The join stream holding the place (a random number): a newer join of the same player
    /// takes the place over, and only the holder's disconnect removes it.
    pub session: u64,
    /// The rating the player is paired by (rounded).
    pub rating: i32,
    /// Wanted opponent ratings.
    pub range: Option<RatingRange>,
    /// Players never to be paired with.
    pub blocked: Vec<String>,
    /// Bughouse: the wanted partner.
    pub partner: Option<String>,
    /// Recent games.
    pub history: History,
}

impl Entry {
    /// The stored record (everything but the player id, which is the record's key).
    pub fn encode(&self) -> String {
        let range = self
            .range
            .map_or(String::new(), |r| format!("{}{ITEM}{}", r.min, r.max));
        let blocked = self.blocked.join(&ITEM.to_string());
        format!(
            "{}{FIELD}{}{FIELD}{range}{FIELD}{blocked}{FIELD}{}{FIELD}{}",
            self.session,
            self.rating,
            self.partner.as_deref().unwrap_or(""),
            self.history.encode()
        )
    }

    /// Reads `player`'s record written by [`Entry::encode`]; `None` when it is corrupt.
    pub fn decode(player: &str, text: &str) -> Option<Entry> {
        let mut f = text.splitn(6, FIELD);
        let session = f.next()?.parse().ok()?;
        let rating = f.next()?.parse().ok()?;
        let range = match f.next()? {
            "" => None,
            r => {
                let (min, max) = r.split_once(ITEM)?;
                Some(RatingRange {
                    min: min.parse().ok()?,
                    max: max.parse().ok()?,
                })
            }
        };
        let blocked = match f.next()? {
            "" => Vec::new(),
            b => b.split(ITEM).map(str::to_owned).collect(),
        };
        let partner = Some(f.next()?).filter(|p| !p.is_empty()).map(str::to_owned);
        let history = History::decode(f.next()?)?;
        Some(Entry {
            player: player.to_owned(),
            session,
            rating,
            range,
            blocked,
            partner,
            history,
        })
    }
}

/// A waiting player as a wave sees them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiting {
    /// The place.
    pub entry: Entry,
    /// When the player joined the pool (Unix ms on the store's time base).
    pub joined_at: u64,
    /// Waves waited through without a game.
    pub missed: u32,
    /// When the place's lease runs out (Unix ms on the store's time base); a pairing whose
    /// match cannot be created gives its players back this lease, not a fresh one.
    pub lease_until: u64,
}

/// A pairing a wave committed: its players are out of the pool, their match is being created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Making {
    /// The pairing's id, which is also the `CreateMatch` request id (derived from the pool, the
    /// wave's fencing number and the pairing's index, so a retry finds the same match).
    pub id: String,
    /// The players in the match's seat order: [white, black], or [white A, black A, white B,
    /// black B] in bughouse.
    pub members: Vec<Waiting>,
    /// When the wave committed it (Unix ms on the store's time base).
    pub since: u64,
}

/// A pairing a wave wants to commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pairing {
    /// The pairing's id (see [`Making::id`]).
    pub id: String,
    /// The players in seat order.
    pub members: Vec<String>,
}

/// A created match whose outcome will rate its players (or, in a casual pool, only be noted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Follow {
    /// The match.
    pub match_id: String,
    /// The pool's name.
    pub pool: String,
    /// The players in seat order.
    pub players: Vec<String>,
}

impl Follow {
    /// The stored record (everything but the match id, the record's key).
    pub fn encode(&self) -> String {
        format!(
            "{}{FIELD}{}",
            self.pool,
            self.players.join(&ITEM.to_string())
        )
    }

    /// Reads `match_id`'s record written by [`Follow::encode`].
    pub fn decode(match_id: &str, text: &str) -> Option<Follow> {
        let (pool, players) = text.split_once(FIELD)?;
        Some(Follow {
            match_id: match_id.to_owned(),
            pool: pool.to_owned(),
            players: players.split(ITEM).map(str::to_owned).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_names_round_trip_in_canonical_form() {
        let pool = Pool {
            variant: Variant::Chess,
            control: TimeControl::parse("3|2").unwrap(),
            rated: true,
        };
        assert_eq!(pool.name(), "chess/3+2/rated");
        assert_eq!(Pool::from_name(&pool.name()), Some(pool.clone()));
        assert_eq!(pool.rating_key(), "chess:blitz");
        let multi = Pool {
            variant: Variant::Bughouse,
            control: TimeControl::parse("90/40+30, 30+30").unwrap(),
            rated: false,
        };
        assert_eq!(Pool::from_name(&multi.name()), Some(multi));
        assert_eq!(Pool::from_name("chess/3+2/maybe"), None);
        assert_eq!(Pool::from_name("nope/3+2/rated"), None);
    }

    #[test]
    fn records_round_trip() {
        let e = Entry {
            player: "alice".into(),
            session: u64::MAX,
            rating: -3,
            range: Some(RatingRange {
                min: 1200,
                max: 1800,
            }),
            blocked: vec!["bob".into(), "carol d".into()],
            partner: Some("dave".into()),
            history: History {
                last_opponent: Some("eve".into()),
                last_color: Some(Color::Black),
                color_balance: -2,
            },
        };
        assert_eq!(Entry::decode("alice", &e.encode()), Some(e.clone()));
        let bare = Entry {
            range: None,
            blocked: vec![],
            partner: None,
            history: History::default(),
            ..e
        };
        assert_eq!(Entry::decode("alice", &bare.encode()), Some(bare));
        assert_eq!(Entry::decode("x", "1\u{1f}2"), None);
        let f = Follow {
            match_id: "m".into(),
            pool: "chess/3+2/rated".into(),
            players: vec!["a".into(), "b".into()],
        };
        assert_eq!(Follow::decode("m", &f.encode()), Some(f));
    }

    #[test]
    fn history_balance_is_bounded() {
        let mut h = History::default();
        for _ in 0..20 {
            h = h.after("x", Color::White);
        }
        assert_eq!(h.color_balance, 8);
        assert_eq!(History::decode(&h.encode()), Some(h));
    }
}
