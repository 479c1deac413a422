//! One pairing wave of a bughouse pool: forming teams of two, and matching teams into
//! four-player matches.
//!
//! Players join a bughouse pool alone or as a partnered pair (two players who joined together
//! and always play together). Every wave runs in two steps, both with the one-on-one wave
//! machinery of [`pair_wave`] (same costs, same max cost, same exclusions, same exact
//! matching; see the [`wave`](super::wave) module):
//!
//! 1. **Partnerships.** The lone players are paired among themselves: a partnership is a
//!    [`pair_wave`] pair, so partners have similar ratings, and two players are never made
//!    partners when either blocks the other, or when either was the other's last opponent
//!    (the wave's rule, kept as it is so that both steps share one notion of exclusion). The
//!    colours that wave gives its pairs mean nothing here and are dropped. Partnered pairs
//!    take no part in this step: they are never split, whatever a split would save.
//! 2. **Matches.** Every team (a partnership formed in step 1, or a partnered pair) becomes
//!    one entry of a second [`pair_wave`], under a synthetic id (its index in the wave's list
//!    of teams), which the outcome maps back to the team:
//!    - rating: the mean of the partners' ratings ([`team_rating`]; a half rounds up);
//!    - missed waves: those of the longer-waiting partner;
//!    - rating range: the intersection of the partners' ranges when both have one (none when
//!      the two ranges do not overlap: the partners' wishes contradict each other, and a range
//!      is only a preference), else the one range present, else none;
//!    - exclusions: a team excludes another when any member of one blocks any member of the
//!      other, or any member's last opponent is a member of the other. These are found through
//!      a map from member ids to teams, in time linear in the members' block lists, never by
//!      comparing every two teams.
//!
//!    So the matches are those of the best wave over the teams: as many matches as possible,
//!    then the lowest total cost of the team-against-team pairs.
//!
//! Each step is exact on its own, not the two together: step 1 does not foresee which teams
//! step 2 can match (forming pairs first, then matching pairs, is the method chosen). Both
//! waves use the same [`WaveOptions`].
//!
//! A partnership formed in step 1 whose team finds no opponent in step 2 dissolves: both
//! partners are returned as lone players and meet the pool afresh in the next wave. A
//! partnered pair without an opponent is returned as a pair. A lone player left without a
//! partner is returned alone. Everyone returned misses this wave (the caller increments their
//! `missed_waves`).
//!
//! # Seats
//!
//! Team 1 plays White on board A and Black on board B, team 2 Black on A and White on B (see
//! [`Seat::team`]). Each team's stronger member (the higher rating; on equal ratings, the lower
//! id) sits on board A, so the teams' stronger members face each other there and the weaker
//! ones on board B. What is left to decide is which team is team 1, that is which
//! partner of each team plays White. Of the two arrangements the match takes the one that
//! better balances the four players' colour histories:
//!
//! 1. the lower sum, over the four players, of `|colour balance after this game|` (a game with
//!    White adds 1 to the balance, one with Black takes 1 away);
//! 2. then fewer players getting the same colour as in their last game;
//! 3. then a hash of the wave's seed and the four ids (no random number generator: the same
//!    wave always seats its players the same way).
//!
//! # Determinism and cost
//!
//! The outcome depends only on the sets of lone players and of pairs and on the options, not on
//! their order in the slices nor on the order of the two players of a pair. Matches come in
//! the second wave's order (by their lower-rated team), waiting lone players by rating then id,
//! waiting pairs by team rating. Apart from the two waves (see [`pair_wave`]'s costs), the work
//! is O(n log n) in the number of players plus the length of their block lists.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::error::Error;
use std::fmt;

use crate::bughouse::{BoardId, Seat, Team};
use crate::pairing::wave::{
    PlayerId, RatingRange, WaitingPlayer, WaveError, WaveOptions, pair_wave,
};
use crate::types::Color;

/// The outcome of a bughouse wave.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TeamWave {
    /// The four-player matches, by their lower-rated team (on equal ratings, the team holding
    /// the lower id first).
    pub matches: Vec<TeamMatch>,
    /// The lone players left waiting, by rating then id: those who found no partner, and the
    /// partners of formed teams that found no opponent.
    pub waiting_alone: Vec<PlayerId>,
    /// The partnered pairs left waiting, still together, stronger member first, by team
    /// rating (on equal ratings, the pair holding the lower id first).
    pub waiting_partners: Vec<[PlayerId; 2]>,
}

/// A four-player match: two teams and their seats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TeamMatch {
    /// Team 1: White on board A, Black on board B.
    pub team1: MatchTeam,
    /// Team 2: Black on board A, White on board B.
    pub team2: MatchTeam,
    /// Who sits where.
    pub seats: Seating,
    /// The cost of the two teams' pair in the second wave ([`pair_cost`] of the teams'
    /// entries); lower is better, may be negative.
    ///
    /// [`pair_cost`]: super::wave::pair_cost
    pub cost: i64,
}

impl TeamMatch {
    /// Team 1 or team 2.
    pub const fn team(&self, team: Team) -> &MatchTeam {
        match team {
            Team::One => &self.team1,
            Team::Two => &self.team2,
        }
    }
}

/// One side of a match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatchTeam {
    /// The partners, the stronger first (the one on board A).
    pub members: [PlayerId; 2],
    /// The team's rating: [`team_rating`] of the partners' ratings.
    pub rating: i32,
    /// Whether the partners joined together (`false`: the wave made them partners).
    pub premade: bool,
}

/// The players of a match by seat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seating {
    /// White on board A (team 1's stronger member).
    pub a_white: PlayerId,
    /// Black on board A (team 2's stronger member).
    pub a_black: PlayerId,
    /// White on board B (team 2's weaker member).
    pub b_white: PlayerId,
    /// Black on board B (team 1's weaker member).
    pub b_black: PlayerId,
}

impl Seating {
    /// The player in `seat`.
    pub const fn player(&self, seat: Seat) -> PlayerId {
        match (seat.board, seat.color) {
            (BoardId::A, Color::White) => self.a_white,
            (BoardId::A, Color::Black) => self.a_black,
            (BoardId::B, Color::White) => self.b_white,
            (BoardId::B, Color::Black) => self.b_black,
        }
    }

    /// The seat of `id`, if it plays in this match.
    pub fn seat_of(&self, id: PlayerId) -> Option<Seat> {
        Seat::ALL.into_iter().find(|&seat| self.player(seat) == id)
    }
}

/// Why a bughouse wave could not be run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TeamError {
    /// A partnered pair names the same player twice.
    SelfPartner {
        /// The player.
        id: PlayerId,
    },
    /// An id is used by two lone players, or by players of two partnered pairs.
    DuplicateId {
        /// The repeated id.
        id: PlayerId,
    },
    /// A player is both alone and in a partnered pair.
    AloneAndPartnered {
        /// The player.
        id: PlayerId,
    },
    /// A player's range has `min` above `max`.
    InvalidRange {
        /// The player.
        id: PlayerId,
        /// The range.
        range: RatingRange,
    },
    /// One of the two waves failed: [`WaveOptions::candidates`] is 0, or the pool is larger
    /// than the matcher accepts.
    Wave(WaveError),
}

impl fmt::Display for TeamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TeamError::SelfPartner { id } => write!(f, "player {id} is partnered with itself"),
            TeamError::DuplicateId { id } => write!(f, "player {id}: id used twice"),
            TeamError::AloneAndPartnered { id } => {
                write!(f, "player {id} is both alone and in a partnered pair")
            }
            TeamError::InvalidRange { id, range } => write!(
                f,
                "player {id}: range min {} is above range max {}",
                range.min, range.max
            ),
            TeamError::Wave(e) => write!(f, "wave failed: {e}"),
        }
    }
}

impl Error for TeamError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            TeamError::Wave(e) => Some(e),
            _ => None,
        }
    }
}

impl From<WaveError> for TeamError {
    fn from(e: WaveError) -> TeamError {
        TeamError::Wave(e)
    }
}

/// A team's rating: the mean of the partners' ratings, a half rounded up (1500 and 1501 give
/// 1501; −3 and 0 give −1).
pub fn team_rating(a: i32, b: i32) -> i32 {
    // The mean lies between `a` and `b`, so the cast back to i32 is lossless.
    (i64::from(a) + i64::from(b) + 1).div_euclid(2) as i32
}

/// Runs one bughouse wave: partnerships among the `lone` players, then matches between all the
/// teams, the `partnered` pairs included (see the [module documentation](self)). `options`
/// serve both waves; the seed also decides seats that nothing else separates.
///
/// # Errors
///
/// [`TeamError`] when a pair names one player twice, an id is used twice (or by a lone player
/// and a pair), a range has `min > max`, `candidates` is 0, or the pool is larger than the
/// matcher accepts.
pub fn team_wave(
    lone: &[WaitingPlayer],
    partnered: &[[WaitingPlayer; 2]],
    options: &WaveOptions,
) -> Result<TeamWave, TeamError> {
    let players = index_players(lone, partnered)?;
    // `pair_wave` only ever returns ids it was given: the lookups below always succeed.
    let find = |id: &PlayerId| players.get(id).map(|&(p, _)| p);

    let partnerships = pair_wave(lone, options)?;
    let mut teams: Vec<Partnership> = partnered
        .iter()
        .map(|[a, b]| Partnership::new(a, b, true))
        .chain(partnerships.pairs.iter().filter_map(|pair| {
            Some(Partnership::new(
                find(&pair.white)?,
                find(&pair.black)?,
                false,
            ))
        }))
        .collect();
    // A canonical order (ids are unique), so that synthetic ids do not depend on input order.
    teams.sort_unstable_by_key(|team| team.strong.id.min(team.weak.id));

    let team_of: HashMap<PlayerId, usize> = teams
        .iter()
        .enumerate()
        .flat_map(|(i, team)| team.members().map(|p| (p.id, i)))
        .collect();
    let entries: Vec<WaitingPlayer> = teams
        .iter()
        .enumerate()
        .map(|(i, team)| team.entry(i, &team_of))
        .collect();
    let games = pair_wave(&entries, options)?;
    let team_at = |id: &PlayerId| usize::try_from(id.0).ok().and_then(|i| teams.get(i));

    let matches = games
        .pairs
        .iter()
        .filter_map(|pair| {
            Some(seat(
                team_at(&pair.white)?,
                team_at(&pair.black)?,
                pair.cost,
                options.seed,
            ))
        })
        .collect();
    let mut waiting_alone: Vec<&WaitingPlayer> =
        partnerships.unpaired.iter().filter_map(find).collect();
    let mut waiting_partners = Vec::new();
    for team in games.unpaired.iter().filter_map(team_at) {
        if team.premade {
            waiting_partners.push([team.strong.id, team.weak.id]);
        } else {
            waiting_alone.extend(team.members());
        }
    }
    waiting_alone.sort_unstable_by_key(|p| (p.rating, p.id));
    Ok(TeamWave {
        matches,
        waiting_alone: waiting_alone.into_iter().map(|p| p.id).collect(),
        waiting_partners,
    })
}

/// Checks the wave's entries and maps every player's id to the player and whether it is in a
/// partnered pair.
fn index_players<'p>(
    lone: &'p [WaitingPlayer],
    partnered: &'p [[WaitingPlayer; 2]],
) -> Result<HashMap<PlayerId, (&'p WaitingPlayer, bool)>, TeamError> {
    if let Some([a, _]) = partnered.iter().find(|[a, b]| a.id == b.id) {
        return Err(TeamError::SelfPartner { id: a.id });
    }
    let everyone = lone
        .iter()
        .map(|p| (p, false))
        .chain(partnered.iter().flatten().map(|p| (p, true)));
    let mut players = HashMap::with_capacity(lone.len() + 2 * partnered.len());
    for (p, paired) in everyone {
        if let Some(range) = p.range
            && range.min > range.max
        {
            return Err(TeamError::InvalidRange { id: p.id, range });
        }
        if let Some((_, before)) = players.insert(p.id, (p, paired)) {
            return Err(if before == paired {
                TeamError::DuplicateId { id: p.id }
            } else {
                TeamError::AloneAndPartnered { id: p.id }
            });
        }
    }
    Ok(players)
}

/// Two partners, formed in this wave or partnered in advance.
#[derive(Debug)]
struct Partnership<'p> {
    /// The stronger partner: the higher rating, on equal ratings the lower id.
    strong: &'p WaitingPlayer,
    /// The other partner.
    weak: &'p WaitingPlayer,
    /// [`team_rating`] of the two.
    rating: i32,
    /// Whether the two joined together.
    premade: bool,
}

impl<'p> Partnership<'p> {
    fn new(a: &'p WaitingPlayer, b: &'p WaitingPlayer, premade: bool) -> Partnership<'p> {
        let a_first = (a.rating, std::cmp::Reverse(a.id)) >= (b.rating, std::cmp::Reverse(b.id));
        let (strong, weak) = if a_first { (a, b) } else { (b, a) };
        Partnership {
            strong,
            weak,
            rating: team_rating(a.rating, b.rating),
            premade,
        }
    }

    fn members(&self) -> [&'p WaitingPlayer; 2] {
        [self.strong, self.weak]
    }

    /// The team as an entry of the second wave, with id `index`; `team_of` maps every team
    /// member's id to the index of its team.
    fn entry(&self, index: usize, team_of: &HashMap<PlayerId, usize>) -> WaitingPlayer {
        let mut blocked: Vec<PlayerId> = self
            .members()
            .into_iter()
            .flat_map(|p| p.blocked.iter().chain(&p.last_opponent))
            .filter_map(|id| team_of.get(id).copied())
            .filter(|&other| other != index)
            .map(|other| PlayerId(other as u64))
            .collect();
        blocked.sort_unstable();
        blocked.dedup();
        WaitingPlayer {
            id: PlayerId(index as u64),
            rating: self.rating,
            range: team_range(self.strong.range, self.weak.range),
            missed_waves: self.strong.missed_waves.max(self.weak.missed_waves),
            color_balance: 0,
            last_color: None,
            last_opponent: None,
            blocked,
        }
    }

    fn to_match_team(&self) -> MatchTeam {
        MatchTeam {
            members: [self.strong.id, self.weak.id],
            rating: self.rating,
            premade: self.premade,
        }
    }
}

/// A team's range: the intersection of both partners' ranges (none if they do not overlap),
/// else the one range present, else none.
fn team_range(a: Option<RatingRange>, b: Option<RatingRange>) -> Option<RatingRange> {
    match (a, b) {
        (Some(a), Some(b)) => {
            let both = RatingRange {
                min: a.min.max(b.min),
                max: a.max.min(b.max),
            };
            (both.min <= both.max).then_some(both)
        }
        (a, b) => a.or(b),
    }
}

/// The match of teams `x` and `y` (in either order), seated as the module documentation
/// describes.
fn seat(x: &Partnership<'_>, y: &Partnership<'_>, cost: i64, seed: u64) -> TeamMatch {
    let x_first = match colour_strain(x, y).cmp(&colour_strain(y, x)) {
        Ordering::Less => true,
        Ordering::Greater => false,
        Ordering::Equal => {
            let mut ids = [x.strong.id, x.weak.id, y.strong.id, y.weak.id].map(|id| id.0);
            ids.sort_unstable();
            let hash = ids.iter().fold(mix(seed), |h, &id| mix(h ^ id));
            let lowest_first = hash & 1 == 0;
            lowest_first == (x.strong.id.0.min(x.weak.id.0) == ids[0])
        }
    };
    let (one, two) = if x_first { (x, y) } else { (y, x) };
    TeamMatch {
        team1: one.to_match_team(),
        team2: two.to_match_team(),
        seats: Seating {
            a_white: one.strong.id,
            a_black: two.strong.id,
            b_white: two.weak.id,
            b_black: one.weak.id,
        },
        cost,
    }
}

/// How far the seating with `one` as team 1 leaves the four players from colour balance,
/// lower is better: the sum of `|balance after the game|`, then the number of players getting
/// their last game's colour again.
fn colour_strain(one: &Partnership<'_>, two: &Partnership<'_>) -> (i64, u32) {
    [
        (one.strong, Color::White),
        (two.strong, Color::Black),
        (two.weak, Color::White),
        (one.weak, Color::Black),
    ]
    .into_iter()
    .fold((0, 0), |(imbalance, repeats), (p, color)| {
        let step = match color {
            Color::White => 1,
            Color::Black => -1,
        };
        (
            imbalance + (i64::from(p.color_balance) + step).abs(),
            repeats + u32::from(p.last_color == Some(color)),
        )
    })
}

/// SplitMix64's finaliser: a cheap, well-spread hash of a 64-bit value.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pairing::wave::{allowed_cost, excludes, pair_cost};
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;
    use std::collections::HashSet;

    fn player(id: u64, rating: i32) -> WaitingPlayer {
        WaitingPlayer::new(PlayerId(id), rating)
    }

    fn ids(list: &[u64]) -> Vec<PlayerId> {
        list.iter().map(|&id| PlayerId(id)).collect()
    }

    fn run(lone: &[WaitingPlayer], partnered: &[[WaitingPlayer; 2]]) -> TeamWave {
        let wave = team_wave(lone, partnered, &WaveOptions::default()).unwrap();
        check_valid(lone, partnered, &wave);
        wave
    }

    /// The set of a team's or pair's two ids.
    fn set_of(members: [PlayerId; 2]) -> [PlayerId; 2] {
        let [a, b] = members;
        [a.min(b), a.max(b)]
    }

    /// Checks everything a wave promises: everyone exactly once, pairs never split nor
    /// returned as lone players, partners and opponents never excluded, ratings, costs and
    /// seats consistent.
    fn check_valid(lone: &[WaitingPlayer], partnered: &[[WaitingPlayer; 2]], wave: &TeamWave) {
        let by_id: HashMap<PlayerId, &WaitingPlayer> = lone
            .iter()
            .chain(partnered.iter().flatten())
            .map(|p| (p.id, p))
            .collect();
        let pairs: HashSet<[PlayerId; 2]> = partnered
            .iter()
            .map(|[a, b]| set_of([a.id, b.id]))
            .collect();
        let lone_ids: HashSet<PlayerId> = lone.iter().map(|p| p.id).collect();
        let mut seen = Vec::new();
        for game in &wave.matches {
            let teams = [game.team1, game.team2];
            for (team, side) in teams.iter().zip([Team::One, Team::Two]) {
                let [strong, weak] = team.members.map(|id| by_id[&id]);
                assert_eq!(team.rating, team_rating(strong.rating, weak.rating));
                assert!(
                    strong.rating >= weak.rating,
                    "{game:?}: stronger member first"
                );
                assert_eq!(
                    team.premade,
                    pairs.contains(&set_of(team.members)),
                    "{game:?}"
                );
                if !team.premade {
                    assert!(allowed_cost(strong, weak).is_some(), "{game:?}: partners");
                }
                assert_eq!(
                    game.seats.seat_of(strong.id).map(|s| (s.board, s.team())),
                    Some((BoardId::A, side))
                );
                assert_eq!(
                    game.seats.seat_of(weak.id).map(|s| (s.board, s.team())),
                    Some((BoardId::B, side))
                );
                assert_eq!(game.team(side), team);
            }
            for p in game.team1.members {
                for q in game.team2.members {
                    assert!(
                        !excludes(by_id[&p], by_id[&q]),
                        "{game:?}: opponents {p} and {q}"
                    );
                }
            }
            let entry = |team: &MatchTeam| {
                let [a, b] = team.members.map(|id| by_id[&id]);
                let mut e = WaitingPlayer::new(PlayerId(0), team.rating);
                e.missed_waves = a.missed_waves.max(b.missed_waves);
                e.range = team_range(a.range, b.range);
                e
            };
            assert_eq!(
                game.cost,
                pair_cost(&entry(&game.team1), &entry(&game.team2))
            );
            seen.extend(Seat::ALL.map(|s| game.seats.player(s)));
        }
        for id in &wave.waiting_alone {
            assert!(
                lone_ids.contains(id),
                "{id} waits alone but joined with a partner"
            );
        }
        for &pair in &wave.waiting_partners {
            assert!(
                pairs.contains(&set_of(pair)),
                "{pair:?} is not a partnered pair"
            );
            assert!(by_id[&pair[0]].rating >= by_id[&pair[1]].rating);
        }
        seen.extend(&wave.waiting_alone);
        seen.extend(wave.waiting_partners.iter().flatten());
        seen.sort_unstable();
        let mut all: Vec<PlayerId> = by_id.keys().copied().collect();
        all.sort_unstable();
        assert_eq!(seen, all, "every player exactly once");
        let order: Vec<(i32, PlayerId)> = wave
            .waiting_alone
            .iter()
            .map(|id| (by_id[id].rating, *id))
            .collect();
        assert!(order.is_sorted(), "waiting players by rating then id");
    }

    #[test]
    fn four_lone_players_form_one_match() {
        let lone = [
            player(1, 1500),
            player(2, 1520),
            player(3, 1540),
            player(4, 1560),
        ];
        let wave = run(&lone, &[]);
        assert!(wave.waiting_alone.is_empty() && wave.waiting_partners.is_empty());
        let [game] = wave.matches[..] else {
            panic!("{wave:?}")
        };
        // The cheapest partnerships: 1–2 and 3–4, 20 each.
        let mut teams = [game.team1, game.team2].map(|t| (t.rating, set_of(t.members), t.premade));
        teams.sort_unstable();
        assert_eq!(
            teams,
            [
                (1510, [PlayerId(1), PlayerId(2)], false),
                (1550, [PlayerId(3), PlayerId(4)], false)
            ]
        );
        assert_eq!(game.cost, 40);
    }

    #[test]
    fn partnered_pairs_stay_together() {
        // Splitting the pair would give two perfect partnerships (1–3 and 2–4, cost 0); the
        // pair stays, and the lone players partner each other.
        let pair = [player(1, 1500), player(2, 1580)];
        let lone = [player(3, 1500), player(4, 1580)];
        let wave = run(&lone, &[pair]);
        let [game] = wave.matches[..] else {
            panic!("{wave:?}")
        };
        let teams = [game.team1, game.team2];
        let premade = teams.iter().find(|t| t.premade).unwrap();
        assert_eq!(premade.members, [PlayerId(2), PlayerId(1)]);
        assert_eq!(teams.map(|t| t.rating), [1540, 1540]);
        assert_eq!(game.cost, 0);

        // Partners far apart are a team all the same, rated by their mean.
        let far = [player(1, 1000), player(2, 2000)];
        let lone = [player(3, 1490), player(4, 1510)];
        let wave = run(&lone, std::slice::from_ref(&far));
        assert_eq!(wave.matches.len(), 1);
        assert_eq!(wave.matches[0].team1.rating, 1500);
        assert_eq!(wave.matches[0].team2.rating, 1500);

        // No opponent: the pair waits together, even though splitting it would give two
        // partnerships (1–3 and 2–4) and a match.
        let lone = [player(3, 1000), player(4, 2000)];
        let wave = run(&lone, &[far]);
        assert!(wave.matches.is_empty());
        assert_eq!(wave.waiting_partners, vec![[PlayerId(2), PlayerId(1)]]);
        assert_eq!(wave.waiting_alone, ids(&[3, 4]));
    }

    #[test]
    fn a_pair_alone_waits_and_two_pairs_meet() {
        let pair = |a, b| [player(a, 1500), player(b, 1500)];
        let wave = run(&[player(9, 1500)], &[pair(1, 2)]);
        assert!(wave.matches.is_empty());
        assert_eq!(wave.waiting_partners, vec![[PlayerId(1), PlayerId(2)]]);
        assert_eq!(wave.waiting_alone, ids(&[9]));
        let wave = run(&[], &[pair(1, 2), pair(3, 4)]);
        assert_eq!(wave.matches.len(), 1);
        assert!(wave.matches[0].team1.premade && wave.matches[0].team2.premade);
    }

    /// The two ways of excluding: `a` blocks `b`, or `a`'s last opponent was `b`.
    fn exclude(kind: usize, a: &mut WaitingPlayer, b: PlayerId) {
        match kind {
            0 => a.blocked.push(b),
            _ => a.last_opponent = Some(b),
        }
    }

    #[test]
    fn excluded_players_are_never_partners() {
        for (kind, who) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
            // 1 and 2 may not be partners (whoever excludes whom); with 3 and 4 the wave
            // forms two partnerships (1 with 3 or 4, 2 with the other), whose teams may not
            // meet either (1 would face 2): the pair 5–6 takes one of them and the other
            // dissolves.
            let mut lone = vec![
                player(1, 1500),
                player(2, 1500),
                player(3, 1600),
                player(4, 1600),
            ];
            let other = lone[1 - who].id;
            exclude(kind, &mut lone[who], other);
            let pair = [player(5, 1550), player(6, 1550)];
            let wave = run(&lone, &[pair]);
            let [game] = wave.matches[..] else {
                panic!("{wave:?}")
            };
            let formed = if game.team1.premade {
                game.team2
            } else {
                game.team1
            };
            assert_eq!(formed.rating, 1550);
            assert_eq!(wave.waiting_alone.len(), 2);
            // Of 1 and 2, one plays and the other waits.
            let playing: Vec<PlayerId> = Seat::ALL.map(|s| game.seats.player(s)).into();
            assert!(playing.contains(&PlayerId(1)) != playing.contains(&PlayerId(2)));
        }
    }

    #[test]
    fn excluded_players_are_never_opponents() {
        for kind in [0, 1] {
            // Four lone players, one excluding another: whatever the partnerships, the two
            // would face each other, so nobody plays.
            let mut lone = vec![
                player(1, 1500),
                player(2, 1500),
                player(3, 1500),
                player(4, 1500),
            ];
            exclude(kind, &mut lone[2], PlayerId(1));
            let wave = run(&lone, &[]);
            assert!(wave.matches.is_empty());
            assert_eq!(wave.waiting_alone, ids(&[1, 2, 3, 4]));

            // A pair member excluding a lone player. The partnerships are 3–5 (1500) and 4–6
            // (1600); the pair (1520) would rather meet 3–5 (cost 20), but meets 4–6 (cost
            // 80) instead, and 3 and 5 wait.
            let pair = || [player(1, 1520), player(2, 1520)];
            let lone = [
                player(3, 1500),
                player(5, 1500),
                player(4, 1600),
                player(6, 1600),
            ];
            let without = run(&lone, &[pair()]);
            assert_eq!(without.matches[0].cost, 20);
            let mut excluding = pair();
            exclude(kind, &mut excluding[1], PlayerId(5));
            let wave = run(&lone, &[excluding]);
            let [game] = wave.matches[..] else {
                panic!("{wave:?}")
            };
            let mut ratings = [game.team1.rating, game.team2.rating];
            ratings.sort_unstable();
            assert_eq!((ratings, game.cost), ([1520, 1600], 80));
            assert_eq!(wave.waiting_alone, ids(&[3, 5]));
        }
    }

    #[test]
    fn odd_counts() {
        let lone: Vec<WaitingPlayer> = (1..=5).map(|i| player(i, 1490 + 10 * i as i32)).collect();
        let wave = run(&lone, &[]);
        assert_eq!(wave.matches.len(), 1);
        assert_eq!(wave.waiting_alone.len(), 1);

        let lone = [player(1, 1500), player(2, 1510), player(3, 1700)];
        let pair = [player(4, 1480), player(5, 1520)];
        let wave = run(&lone, &[pair]);
        assert_eq!(wave.matches.len(), 1);
        assert_eq!(wave.waiting_alone, ids(&[3]));
        assert!(wave.waiting_partners.is_empty());
    }

    #[test]
    fn team_ratings_are_means() {
        assert_eq!(team_rating(1500, 1600), 1550);
        assert_eq!(team_rating(1600, 1500), 1550);
        assert_eq!(team_rating(1500, 1501), 1501);
        assert_eq!(team_rating(-3, 0), -1);
        assert_eq!(team_rating(i32::MAX, i32::MAX), i32::MAX);
        assert_eq!(team_rating(i32::MIN, i32::MIN), i32::MIN);
        assert_eq!(team_rating(i32::MIN, i32::MAX), 0);
        let wave = run(
            &[player(3, 1451), player(4, 1550)],
            &[[player(1, 1500), player(2, 1503)]],
        );
        let game = wave.matches[0];
        let mut ratings = [game.team1.rating, game.team2.rating];
        ratings.sort_unstable();
        assert_eq!(ratings, [1501, 1502]);
        assert_eq!(game.cost, 1);
    }

    #[test]
    fn team_ranges_and_waiting() {
        let r = |min, max| Some(RatingRange { min, max });
        assert_eq!(team_range(r(1400, 1700), r(1500, 1900)), r(1500, 1700));
        assert_eq!(team_range(r(1400, 1500), r(1500, 1900)), r(1500, 1500));
        assert_eq!(
            team_range(r(1400, 1450), r(1500, 1900)),
            None,
            "disjoint ranges"
        );
        assert_eq!(team_range(None, r(1500, 1900)), r(1500, 1900));
        assert_eq!(team_range(r(1400, 1450), None), r(1400, 1450));
        assert_eq!(team_range(None, None), None);

        // Disjoint ranges in a pair are no error; matching ranges and the longer wait of each
        // team make the match cheaper.
        let mut pair = [player(1, 1500), player(2, 1600)];
        pair[0].range = r(1000, 1200);
        pair[1].range = r(1800, 2000);
        let lone = [player(3, 1500), player(4, 1600)];
        let game = run(&lone, &[pair.clone()]).matches[0];
        assert_eq!(game.cost, 0);
        pair[0].range = r(1400, 1700);
        pair[1].range = r(1500, 2000);
        pair[1].missed_waves = 3;
        let mut lone = lone;
        lone[0].range = r(1500, 1600);
        lone[1].missed_waves = 5;
        let game = run(&lone, &[pair]).matches[0];
        assert_eq!(game.cost, -36 - 200);
    }

    #[test]
    fn stronger_members_share_board_a() {
        let pairs = [
            [player(1, 1400), player(2, 1700)],
            [player(3, 1650), player(4, 1450)],
        ];
        let game = run(&[], &pairs).matches[0];
        let mut board_a = [game.seats.a_white, game.seats.a_black];
        board_a.sort_unstable();
        assert_eq!(board_a, [PlayerId(2), PlayerId(3)]);
        // Equal ratings: the lower id sits on board A.
        let pairs = [
            [player(6, 1500), player(5, 1500)],
            [player(8, 1500), player(7, 1500)],
        ];
        let game = run(&[], &pairs).matches[0];
        let mut board_a = [game.seats.a_white, game.seats.a_black];
        board_a.sort_unstable();
        assert_eq!(board_a, [PlayerId(5), PlayerId(7)]);
    }

    #[test]
    fn colours_are_balanced() {
        // Teams x = {1, 2} and y = {3, 4}; 1 and 3 are the stronger members (board A).
        let teams = || {
            [
                [player(1, 1600), player(2, 1500)],
                [player(3, 1600), player(4, 1500)],
            ]
        };
        let a_white = |pairs: &[[WaitingPlayer; 2]], seed| {
            let options = WaveOptions {
                seed,
                ..WaveOptions::default()
            };
            let wave = team_wave(&[], pairs, &options).unwrap();
            check_valid(&[], pairs, &wave);
            wave.matches[0].seats.a_white
        };
        // 1 has had White twice more than Black: x as team 1 leaves balances 3, −1, −1, 1
        // (sum 6), y as team 1 leaves 1, 1, 1, −1 (sum 4): 1 gets Black, so 3 White on A.
        let mut pairs = teams();
        pairs[0][0].color_balance = 2;
        assert_eq!(a_white(&pairs, 0), PlayerId(3));
        // The other way round.
        pairs[0][0].color_balance = -2;
        assert_eq!(a_white(&pairs, 0), PlayerId(1));
        // A weaker member's history counts as much: 4 is owed Black, so y is team 1.
        let mut pairs = teams();
        pairs[1][1].color_balance = 1;
        assert_eq!(a_white(&pairs, 0), PlayerId(3));
        // Equal balances: the last colours decide (2 last had Black, and would get it again
        // with x as team 1).
        let mut pairs = teams();
        pairs[0][1].last_color = Some(Color::Black);
        for seed in 0..8 {
            assert_eq!(a_white(&pairs, seed), PlayerId(3));
        }
        // The balance comes before the last colours.
        pairs[0][0].color_balance = -1;
        assert_eq!(a_white(&pairs, 0), PlayerId(1));
        // A full tie: the seed decides, deterministically, and both ways occur.
        let pairs = teams();
        let mut counts = [0, 0];
        for seed in 0..64 {
            let white = a_white(&pairs, seed);
            assert_eq!(white, a_white(&pairs, seed));
            let swapped = [pairs[1].clone(), pairs[0].clone()];
            assert_eq!(white, a_white(&swapped, seed), "independent of order");
            counts[usize::from(white == PlayerId(3))] += 1;
        }
        assert!(counts[0] > 10 && counts[1] > 10, "{counts:?}");
    }

    /// A pool from the property test's parameters: players 1, 4, 7, …; the first
    /// `2 × pairs` of them form partnered pairs, two by two, the others wait alone.
    fn build_pool(specs: &[Spec], pairs: usize) -> (Vec<WaitingPlayer>, Vec<[WaitingPlayer; 2]>) {
        let id = |i: usize| PlayerId(3 * i as u64 + 1);
        let n = specs.len();
        let mut players: Vec<WaitingPlayer> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut p = WaitingPlayer::new(id(i), s.rating);
                p.missed_waves = s.missed_waves;
                p.range = s.range.map(|(low, high)| RatingRange {
                    min: s.rating - low,
                    max: s.rating + high,
                });
                p.color_balance = s.color_balance;
                p.last_color = s.last_color;
                p.last_opponent = s.last_opponent.map(|j| id(j % n));
                p.blocked = s.blocked.iter().map(|&j| id(j % n)).collect();
                p
            })
            .collect();
        let lone = players.split_off((2 * pairs).min(n));
        let mut partnered = Vec::new();
        let mut members = players.into_iter();
        while let (Some(a), Some(b)) = (members.next(), members.next()) {
            partnered.push([a, b]);
        }
        (lone, partnered)
    }

    /// One player of a random pool.
    #[derive(Clone, Debug)]
    struct Spec {
        rating: i32,
        missed_waves: u32,
        range: Option<(i32, i32)>,
        color_balance: i32,
        last_color: Option<Color>,
        last_opponent: Option<usize>,
        blocked: Vec<usize>,
    }

    fn spec() -> impl Strategy<Value = Spec> {
        (
            1200..1800i32,
            prop::sample::select(vec![0u32, 0, 1, 3, 10, 45]),
            prop::option::weighted(0.3, (0..300i32, 0..300i32)),
            -3..=3i32,
            prop::sample::select(vec![None, Some(Color::White), Some(Color::Black)]),
            prop::option::weighted(0.3, 0..64usize),
            prop::collection::vec(0..64usize, 0..3),
        )
            .prop_map(
                |(
                    rating,
                    missed_waves,
                    range,
                    color_balance,
                    last_color,
                    last_opponent,
                    blocked,
                )| Spec {
                    rating,
                    missed_waves,
                    range,
                    color_balance,
                    last_color,
                    last_opponent,
                    blocked,
                },
            )
    }

    proptest! {
        #[test]
        fn every_player_exactly_once_and_never_excluded(
            specs in prop::collection::vec(spec(), 0..48),
            pairs in 0..12usize,
            candidates in 1..20usize,
            seed in any::<u64>(),
        ) {
            let (lone, partnered) = build_pool(&specs, pairs);
            let options = WaveOptions { candidates, seed };
            let wave = team_wave(&lone, &partnered, &options).unwrap();
            check_valid(&lone, &partnered, &wave);
        }
    }

    #[test]
    fn deterministic_and_independent_of_order() {
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let specs = prop::collection::vec(spec(), 120)
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let (lone, partnered) = build_pool(&specs, 20);
        let options = WaveOptions {
            candidates: 6,
            seed: 99,
        };
        let wave = team_wave(&lone, &partnered, &options).unwrap();
        check_valid(&lone, &partnered, &wave);
        assert!(wave.matches.len() >= 10, "{wave:?}");
        assert_eq!(team_wave(&lone, &partnered, &options).unwrap(), wave);
        let mut lone = lone;
        lone.reverse();
        let mut partnered: Vec<[WaitingPlayer; 2]> =
            partnered.into_iter().rev().map(|[a, b]| [b, a]).collect();
        partnered.rotate_left(3);
        assert_eq!(team_wave(&lone, &partnered, &options).unwrap(), wave);
    }

    #[test]
    fn errors() {
        let options = WaveOptions::default();
        let wave = |lone: &[WaitingPlayer], partnered: &[[WaitingPlayer; 2]]| {
            team_wave(lone, partnered, &options).unwrap_err()
        };
        let err = wave(&[], &[[player(1, 1500), player(1, 1500)]]);
        assert_eq!(err, TeamError::SelfPartner { id: PlayerId(1) });
        assert_eq!(err.to_string(), "player 1 is partnered with itself");
        let err = wave(&[player(2, 1500)], &[[player(1, 1500), player(2, 1500)]]);
        assert_eq!(err, TeamError::AloneAndPartnered { id: PlayerId(2) });
        assert_eq!(
            err.to_string(),
            "player 2 is both alone and in a partnered pair"
        );
        let err = wave(&[player(3, 1500), player(3, 1600)], &[]);
        assert_eq!(err, TeamError::DuplicateId { id: PlayerId(3) });
        assert_eq!(err.to_string(), "player 3: id used twice");
        let pairs = [
            [player(1, 1500), player(2, 1500)],
            [player(3, 1500), player(2, 1500)],
        ];
        assert_eq!(
            wave(&[], &pairs),
            TeamError::DuplicateId { id: PlayerId(2) }
        );
        let mut bad = player(4, 1500);
        bad.range = Some(RatingRange {
            min: 1600,
            max: 1500,
        });
        let err = wave(&[], &[[player(5, 1500), bad]]);
        assert_eq!(
            err,
            TeamError::InvalidRange {
                id: PlayerId(4),
                range: RatingRange {
                    min: 1600,
                    max: 1500
                }
            }
        );
        assert_eq!(
            err.to_string(),
            "player 4: range min 1600 is above range max 1500"
        );
        let none = WaveOptions {
            candidates: 0,
            seed: 0,
        };
        let err = team_wave(&[], &[], &none).unwrap_err();
        assert_eq!(err, TeamError::Wave(WaveError::NoCandidates));
        assert!(err.source().is_some());
        assert_eq!(
            err.to_string(),
            "wave failed: candidates must be at least 1"
        );
        assert_eq!(team_wave(&[], &[], &options), Ok(TeamWave::default()));
    }
}
