//! One pairing wave of a pool of players waiting for a one-on-one game (chess and the other
//! two-player variants).
//!
//! A pool collects waiting players and, every few seconds, runs a *wave*: it pairs as many of
//! them as it can, as well as it can, and the rest wait for the next wave. The model follows
//! lichess's pool pairing (`MatchMaking.scala`); the matching itself is exact.
//!
//! # The cost of a pair
//!
//! Lower is better. For players `a` and `b`:
//!
//! ```text
//! cost = |rating(a) − rating(b)| − min(bonus(a), bonus(b)) − range bonus
//! bonus(p) = min(12 × missed waves of p, 460)         (WAITING_BONUS_PER_WAVE, MAX_WAITING_BONUS)
//! range bonus = 200 when both players have a rating range and each one's rating
//!               lies in the other's range, else 0     (RANGE_BONUS)
//! ```
//!
//! So the longer two players have both waited, the wider the gap they accept; a rating range
//! is a preference that makes a pair cheaper, never a filter (a recorded decision: a player
//! whose range nobody fits still gets a game).
//!
//! A pair is *allowed* when its cost is at most [`max_cost`] of the lower of the two ratings
//! (130 below 1000, 100 below 1500, rating / 15 from 1500 up) and neither player excludes the
//! other: two players are never paired when either one blocks the other, or when either one's
//! last opponent was the other (no immediate rematch through the pool).
//!
//! # The objective
//!
//! A wave first pairs as many players as possible, then, among those pairings, minimises the
//! total cost. This is "minimise Σ cost + P × unpaired players" with a penalty `P` large enough
//! that one more pair always wins. `P` cannot be a fixed number such as 1,000: pairing two more
//! players may have to break a long chain of very good pairs (cost down to −660 each) and
//! rebuild it with poorer ones (cost up to the max cost each), and the longer the chain, the
//! more the total cost rises, so for any fixed `P` a long enough chain makes leaving two
//! players unpaired cheaper (the tests hold such a case for `P = 1,000`). The wave therefore
//! gives each allowed pair the weight `B − cost` in a maximum-weight matching, with
//! `B = c_max + (⌊n/2⌋ − 1)·(c_max − c_min) + 1` over the costs `c` of the candidate pairs:
//! then a matching with more pairs always weighs more (it gains at least `B − c_max` per extra
//! pair and loses at most `⌊n/2⌋ − 1` times the spread of the costs), and among matchings
//! of one size the weight orders them by total cost. [`WaveScore`] compares outcomes the same
//! way: fewer unpaired players first, then lower total cost.
//!
//! # The candidate graph
//!
//! Considering every allowed pair would make the graph quadratic. Each player instead looks
//! outward from its place in the rating order, nearest rating first (on equal distance the
//! lower-rated side first), skipping excluded and disallowed players, and keeps its
//! [`WaveOptions::candidates`] nearest allowed partners ([`DEFAULT_CANDIDATES`] = 16). It stops
//! looking on a side once the rating gap alone is beyond any cost that player could be allowed:
//! its max cost plus its own waiting bonus plus, if it has a range, the range bonus (upward the
//! max cost is that of its own rating; downward the lower rating decides, and below 1000 allows
//! 130). Each player also always keeps the next player in rating order when that pair is
//! allowed: then every pair the greedy baseline could choose is a candidate, so a wave never
//! does worse than greedy, and a crowd of equal ratings (whose members fill their lists with
//! one another) cannot cut the rating order into islands. The graph is the union of these edge
//! sets, at most `(candidates + 1) × n` edges. On small pools (at most `candidates + 1`
//! players) nothing is cut and the result is the exact optimum over all allowed pairs; on large
//! pools the nearest candidates hold the good pairs. The matching itself is
//! [`max_weight_matching`](super::matching::max_weight_matching), exact.
//!
//! # Colours
//!
//! In each pair White goes to the player with the lower colour balance (whites − blacks over
//! recent games); on a tie, to the one whose last game was with Black, and failing that to one
//! with no last colour rather than one who last played White; on a further tie a hash of the
//! wave's seed and the two ids decides (no random number generator: the same wave always gives
//! the same colours).
//!
//! # Determinism and cost
//!
//! The outcome depends only on the set of players and the options, not on the order of the
//! slice: players are sorted by (rating, id) first. Pairs come in that order (by their
//! lower-rated player), and so do the unpaired players, who miss this wave (the caller
//! increments their `missed_waves`). Building the graph costs O(n log n + n·k) for `k`
//! candidates, plus the disallowed players each search skips inside its limit (few, unless a
//! player with a large bonus sits in a crowd it may not meet); each exclusion check is a
//! binary search. The matching is close to O(m log m) on these graphs.
//!
//! [`greedy_pairs`] is the simple baseline the performance notes compare against.

use std::collections::HashMap;
use std::error::Error;
use std::fmt;

use crate::pairing::matching::{self, MatchingError};
use crate::types::Color;

/// How many nearest allowed partners each player brings into the candidate graph by default.
pub const DEFAULT_CANDIDATES: usize = 16;

/// The waiting bonus earned per missed wave.
pub const WAITING_BONUS_PER_WAVE: i64 = 12;

/// The largest waiting bonus (reached after 39 missed waves).
pub const MAX_WAITING_BONUS: i64 = 460;

/// The bonus of a pair whose players each fit the other's rating range.
pub const RANGE_BONUS: i64 = 200;

/// A player's identity in the pool. The caller maps its own ids (user names, connection ids)
/// to these numbers; they must be unique within a wave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PlayerId(pub u64);

impl fmt::Display for PlayerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The ratings a player would like to meet, both ends included.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RatingRange {
    /// The lowest wanted rating.
    pub min: i32,
    /// The highest wanted rating.
    pub max: i32,
}

impl RatingRange {
    /// Whether `rating` lies in the range.
    pub const fn contains(self, rating: i32) -> bool {
        self.min <= rating && rating <= self.max
    }
}

/// A player waiting in the pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitingPlayer {
    /// Unique within the wave.
    pub id: PlayerId,
    /// The current rating, rounded.
    pub rating: i32,
    /// The wanted opponents' ratings, if the player chose a range (a preference, not a filter).
    pub range: Option<RatingRange>,
    /// How many waves the player has waited through without a game.
    pub missed_waves: u32,
    /// Games with White minus games with Black over the player's recent games.
    pub color_balance: i32,
    /// The colour of the player's last game, if any.
    pub last_color: Option<Color>,
    /// The player's last opponent: the two are not paired again straight away.
    pub last_opponent: Option<PlayerId>,
    /// Players this one blocks: they are never paired together (whoever blocks whom). Ids
    /// that are not in the pool are ignored.
    pub blocked: Vec<PlayerId>,
}

impl WaitingPlayer {
    /// A player with no range, no missed wave, no colour history and no exclusion.
    pub fn new(id: PlayerId, rating: i32) -> WaitingPlayer {
        WaitingPlayer {
            id,
            rating,
            range: None,
            missed_waves: 0,
            color_balance: 0,
            last_color: None,
            last_opponent: None,
            blocked: Vec::new(),
        }
    }
}

/// Settings of a wave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaveOptions {
    /// How many nearest allowed partners each player brings into the candidate graph (at
    /// least 1).
    pub candidates: usize,
    /// Decides the colours of pairs that nothing else separates.
    pub seed: u64,
}

impl Default for WaveOptions {
    /// [`DEFAULT_CANDIDATES`] and seed 0.
    fn default() -> WaveOptions {
        WaveOptions {
            candidates: DEFAULT_CANDIDATES,
            seed: 0,
        }
    }
}

/// A pairing: who plays White, who plays Black, and the pair's cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair {
    /// The player with White.
    pub white: PlayerId,
    /// The player with Black.
    pub black: PlayerId,
    /// The pair's cost ([`pair_cost`]); lower is better, may be negative.
    pub cost: i64,
}

/// The outcome of a wave.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Wave {
    /// The pairs, by their lower-rated player (rating, then id).
    pub pairs: Vec<Pair>,
    /// The players left waiting, by rating then id: they miss this wave.
    pub unpaired: Vec<PlayerId>,
}

impl Wave {
    /// How good the outcome is, comparable with other outcomes for the same pool.
    pub fn score(&self) -> WaveScore {
        WaveScore {
            unpaired: self.unpaired.len(),
            total_cost: self.pairs.iter().map(|p| p.cost).sum(),
        }
    }
}

/// The quality of a wave's outcome, lower is better: fewer unpaired players first, then the
/// lower total cost (the derived order compares the fields in that order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct WaveScore {
    /// Players left waiting.
    pub unpaired: usize,
    /// The sum of the pairs' costs.
    pub total_cost: i64,
}

/// Why a wave could not be run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaveError {
    /// Two players share an id.
    DuplicateId {
        /// The repeated id.
        id: PlayerId,
    },
    /// A player's range has `min` above `max`.
    InvalidRange {
        /// The player.
        id: PlayerId,
        /// The range.
        range: RatingRange,
    },
    /// [`WaveOptions::candidates`] is 0.
    NoCandidates,
    /// The matcher refused the pool's graph: the pool has more than
    /// [`matching::MAX_VERTICES`] players.
    Matching(MatchingError),
}

impl fmt::Display for WaveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            WaveError::DuplicateId { id } => write!(f, "player {id}: id used twice"),
            WaveError::InvalidRange { id, range } => write!(
                f,
                "player {id}: range min {} is above range max {}",
                range.min, range.max
            ),
            WaveError::NoCandidates => write!(f, "candidates must be at least 1"),
            WaveError::Matching(e) => write!(f, "the matcher rejected the pool's graph: {e}"),
        }
    }
}

impl Error for WaveError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            WaveError::Matching(e) => Some(e),
            _ => None,
        }
    }
}

impl From<MatchingError> for WaveError {
    fn from(e: MatchingError) -> WaveError {
        WaveError::Matching(e)
    }
}

/// The waiting bonus of a player who missed `missed_waves` waves:
/// `min(12 × missed_waves, 460)`.
pub fn waiting_bonus(missed_waves: u32) -> i64 {
    (WAITING_BONUS_PER_WAVE * i64::from(missed_waves)).min(MAX_WAITING_BONUS)
}

/// The largest allowed cost of a pair whose lower rating is `lower_rating`: 130 below 1000,
/// 100 below 1500, `lower_rating / 15` (rounded down) from 1500 up.
pub fn max_cost(lower_rating: i32) -> i64 {
    match lower_rating {
        ..1000 => 130,
        1000..1500 => 100,
        _ => i64::from(lower_rating) / 15,
    }
}

/// [`RANGE_BONUS`] when both players have a range and each one's rating lies in the other's
/// range, else 0.
pub fn range_bonus(a: &WaitingPlayer, b: &WaitingPlayer) -> i64 {
    match (a.range, b.range) {
        (Some(ra), Some(rb)) if ra.contains(b.rating) && rb.contains(a.rating) => RANGE_BONUS,
        _ => 0,
    }
}

/// The cost of pairing `a` with `b` (lower is better): the rating gap minus the smaller of the
/// two waiting bonuses minus the range bonus. Exclusions and the max cost are not considered.
pub fn pair_cost(a: &WaitingPlayer, b: &WaitingPlayer) -> i64 {
    (i64::from(a.rating) - i64::from(b.rating)).abs()
        - waiting_bonus(a.missed_waves).min(waiting_bonus(b.missed_waves))
        - range_bonus(a, b)
}

/// Whether `a` and `b` must not be paired: one blocks the other, or one was the other's last
/// opponent.
pub fn excludes(a: &WaitingPlayer, b: &WaitingPlayer) -> bool {
    a.blocked.contains(&b.id)
        || b.blocked.contains(&a.id)
        || a.last_opponent == Some(b.id)
        || b.last_opponent == Some(a.id)
}

/// The cost of pairing `a` with `b` if the pair is allowed: not excluded, and the cost at most
/// [`max_cost`] of the lower rating.
pub fn allowed_cost(a: &WaitingPlayer, b: &WaitingPlayer) -> Option<i64> {
    if excludes(a, b) {
        return None;
    }
    within_max_cost(a, b)
}

/// The pair's cost if it is at most the max cost (exclusions aside).
fn within_max_cost(a: &WaitingPlayer, b: &WaitingPlayer) -> Option<i64> {
    let cost = pair_cost(a, b);
    (cost <= max_cost(a.rating.min(b.rating))).then_some(cost)
}

/// `(white, black)` for a pair of `a` and `b`: the lower colour balance gets White; then the
/// one whose last colour was Black, then one with no last colour over one whose last colour was
/// White; then a hash of `seed` and the two ids decides. The answer does not depend on the
/// order of the arguments.
pub fn assign_colors(a: &WaitingPlayer, b: &WaitingPlayer, seed: u64) -> (PlayerId, PlayerId) {
    // How much a player is owed White: lower first.
    let last = |p: &WaitingPlayer| match p.last_color {
        Some(Color::Black) => 0,
        None => 1,
        Some(Color::White) => 2,
    };
    let by_history = (a.color_balance, last(a)).cmp(&(b.color_balance, last(b)));
    let a_white = match by_history {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => {
            let (low, high) = if a.id <= b.id {
                (a.id, b.id)
            } else {
                (b.id, a.id)
            };
            let low_white = mix(seed ^ mix(low.0 ^ mix(high.0))) & 1 == 0;
            low_white == (a.id == low)
        }
    };
    if a_white { (a.id, b.id) } else { (b.id, a.id) }
}

/// SplitMix64's finaliser: a cheap, well-spread hash of a 64-bit value.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Runs one wave: the exact best pairing of `players` over the candidate graph (see the
/// [module documentation](self)).
///
/// # Errors
///
/// [`WaveError`] when two players share an id, a range has `min > max`, `candidates` is 0, or
/// the pool is larger than the matcher accepts.
pub fn pair_wave(players: &[WaitingPlayer], options: &WaveOptions) -> Result<Wave, WaveError> {
    if options.candidates == 0 {
        return Err(WaveError::NoCandidates);
    }
    let pool = Pool::new(players)?;
    let candidates = pool.candidate_pairs(options.candidates);
    let Some(c_max) = candidates.iter().map(|&(_, _, c)| c).max() else {
        return Ok(pool.wave(&[], options.seed));
    };
    let c_min = candidates.iter().map(|&(_, _, c)| c).min().unwrap_or(c_max);
    // B = c_max + (⌊n/2⌋ − 1)(c_max − c_min) + 1: at most ~2⁵⁷ for 2³⁰ players and i32
    // ratings, below the matcher's weight limit.
    let halves = (pool.len() / 2) as i64;
    let bonus = c_max
        .saturating_add((halves - 1).saturating_mul(c_max - c_min))
        .saturating_add(1);
    let edges: Vec<(u32, u32, i64)> = candidates
        .iter()
        .map(|&(a, b, cost)| (a, b, bonus - cost))
        .collect();
    let mates = matching::max_weight_matching(pool.len(), &edges)?;
    let pairs: Vec<(u32, u32)> = mates
        .iter()
        .enumerate()
        .filter_map(|(a, &m)| m.filter(|&b| a < b as usize).map(|b| (a as u32, b)))
        .collect();
    Ok(pool.wave(&pairs, options.seed))
}

/// The greedy baseline: players sorted by (rating, id), each still unpaired player is paired
/// with the next one when that pair is allowed, else it waits. Same costs, exclusions and
/// colours as [`pair_wave`]; `seed` decides the colours as in [`WaveOptions::seed`].
///
/// # Errors
///
/// [`WaveError`] when two players share an id, a range has `min > max`, or the pool is larger
/// than [`matching::MAX_VERTICES`].
pub fn greedy_pairs(players: &[WaitingPlayer], seed: u64) -> Result<Wave, WaveError> {
    let pool = Pool::new(players)?;
    let mut pairs = Vec::new();
    let mut at = 0;
    while at + 1 < pool.len() {
        if pool.allowed_cost(at, at + 1).is_some() {
            pairs.push((at as u32, at as u32 + 1));
            at += 2;
        } else {
            at += 1;
        }
    }
    Ok(pool.wave(&pairs, seed))
}

/// The players of a wave in (rating, id) order, with their exclusions.
struct Pool<'p> {
    /// Players by rank: `sorted[i]` is the i-th lowest (rating, id).
    sorted: Vec<&'p WaitingPlayer>,
    /// Excluded pairs of ranks, `(low << 32) | high`, sorted.
    excluded: Vec<u64>,
}

impl<'p> Pool<'p> {
    fn new(players: &'p [WaitingPlayer]) -> Result<Pool<'p>, WaveError> {
        if players.len() > matching::MAX_VERTICES {
            return Err(MatchingError::TooManyVertices { n: players.len() }.into());
        }
        let mut sorted: Vec<&WaitingPlayer> = players.iter().collect();
        sorted.sort_unstable_by_key(|p| (p.rating, p.id));
        let mut rank = HashMap::with_capacity(players.len());
        for (i, p) in sorted.iter().enumerate() {
            if rank.insert(p.id, i as u32).is_some() {
                return Err(WaveError::DuplicateId { id: p.id });
            }
            if let Some(range) = p.range
                && range.min > range.max
            {
                return Err(WaveError::InvalidRange { id: p.id, range });
            }
        }
        let mut excluded = Vec::new();
        for (i, p) in sorted.iter().enumerate() {
            let i = i as u32;
            for other in p.blocked.iter().chain(&p.last_opponent) {
                if let Some(&j) = rank.get(other)
                    && j != i
                {
                    excluded.push((u64::from(i.min(j)) << 32) | u64::from(i.max(j)));
                }
            }
        }
        excluded.sort_unstable();
        excluded.dedup();
        Ok(Pool { sorted, excluded })
    }

    fn len(&self) -> usize {
        self.sorted.len()
    }

    /// The cost of the pair of ranks `i` and `j` if it is allowed.
    fn allowed_cost(&self, i: usize, j: usize) -> Option<i64> {
        let key = ((i.min(j) as u64) << 32) | i.max(j) as u64;
        if self.excluded.binary_search(&key).is_ok() {
            return None;
        }
        within_max_cost(self.sorted[i], self.sorted[j])
    }

    /// Each player's `k` nearest-rated allowed partners, as `(rank, rank, cost)` with the
    /// lower rank first (a pair chosen from both sides appears twice; the matcher keeps one).
    fn candidate_pairs(&self, k: usize) -> Vec<(u32, u32, i64)> {
        let n = self.len();
        // A hint only: a huge `k` must not reserve memory it may never use.
        let mut pairs = Vec::with_capacity(n.saturating_mul(k.min(n).min(64) + 1));
        for i in 0..n {
            let p = self.sorted[i];
            let rating = i64::from(p.rating);
            let reach =
                waiting_bonus(p.missed_waves) + if p.range.is_some() { RANGE_BONUS } else { 0 };
            // Upward the lower rating is p's; downward it is the partner's, whose max cost is
            // at most the larger of p's and the 130 allowed below 1000.
            let up_limit = max_cost(p.rating) + reach;
            let down_limit = max_cost(p.rating).max(max_cost(i32::MIN)) + reach;
            // The next player in rating order, always: every pair greedy could choose is a
            // candidate, and equal-rating crowds cannot cut the order into islands.
            if i + 1 < n
                && let Some(cost) = self.allowed_cost(i, i + 1)
            {
                pairs.push((i as u32, i as u32 + 1, cost));
            }
            let (mut up, mut down) = (i + 1, i);
            let mut found = 0;
            while found < k {
                let up_gap = (up < n)
                    .then(|| i64::from(self.sorted[up].rating) - rating)
                    .filter(|&gap| gap <= up_limit);
                let down_gap = (down > 0)
                    .then(|| rating - i64::from(self.sorted[down - 1].rating))
                    .filter(|&gap| gap <= down_limit);
                let take_up = match (down_gap, up_gap) {
                    (None, None) => break,
                    (Some(d), Some(u)) => d > u,
                    (None, Some(_)) => true,
                    (Some(_), None) => false,
                };
                let j = if take_up {
                    up += 1;
                    up - 1
                } else {
                    down -= 1;
                    down
                };
                if let Some(cost) = self.allowed_cost(i, j) {
                    pairs.push((i.min(j) as u32, i.max(j) as u32, cost));
                    found += 1;
                }
            }
        }
        pairs
    }

    /// The outcome for pairs of ranks `(low, high)` sorted by `low`; everyone else waits.
    fn wave(&self, pairs: &[(u32, u32)], seed: u64) -> Wave {
        let mut paired = vec![false; self.len()];
        let pairs = pairs
            .iter()
            .map(|&(i, j)| {
                paired[i as usize] = true;
                paired[j as usize] = true;
                let (a, b) = (self.sorted[i as usize], self.sorted[j as usize]);
                let (white, black) = assign_colors(a, b, seed);
                Pair {
                    white,
                    black,
                    cost: pair_cost(a, b),
                }
            })
            .collect();
        let unpaired = self
            .sorted
            .iter()
            .zip(&paired)
            .filter(|&(_, &done)| !done)
            .map(|(p, _)| p.id)
            .collect();
        Wave { pairs, unpaired }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small seeded generator (SplitMix64 over a counter).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(1);
            mix(self.0)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        fn range(&mut self, lo: i32, hi: i32) -> i32 {
            lo + self.below((hi - lo + 1) as u64) as i32
        }
    }

    fn player(id: u64, rating: i32) -> WaitingPlayer {
        WaitingPlayer::new(PlayerId(id), rating)
    }

    /// A random pool: ratings around `centre ± spread`, random waits, ranges, colour
    /// histories, blocks and last opponents.
    fn random_pool(rng: &mut Rng, n: usize, centre: i32, spread: i32) -> Vec<WaitingPlayer> {
        let mut pool: Vec<WaitingPlayer> = (0..n as u64)
            .map(|i| {
                let rating = rng.range(centre - spread, centre + spread);
                let mut p = player(1000 + 7 * i, rating);
                p.missed_waves = [0, 0, 1, 3, 10, 45][rng.below(6) as usize];
                if rng.below(3) == 0 {
                    let width = rng.range(50, 500);
                    let shift = rng.range(-100, 100);
                    p.range = Some(RatingRange {
                        min: rating + shift - width,
                        max: rating + shift + width,
                    });
                }
                p.color_balance = rng.range(-2, 2);
                p.last_color =
                    [None, Some(Color::White), Some(Color::Black)][rng.below(3) as usize];
                p
            })
            .collect();
        for i in 0..n {
            if rng.below(4) == 0 {
                let other = pool[rng.below(n as u64) as usize].id;
                pool[i].blocked.push(other);
            }
            if rng.below(3) == 0 {
                pool[i].last_opponent = Some(pool[rng.below(n as u64) as usize].id);
            }
            // An id that is not in the pool is ignored.
            if rng.below(10) == 0 {
                pool[i].blocked.push(PlayerId(3));
            }
        }
        pool
    }

    /// Checks that the outcome is a valid wave of `players`: everyone exactly once, every pair
    /// allowed with its true cost.
    fn check_valid(players: &[WaitingPlayer], wave: &Wave) {
        let by_id: HashMap<PlayerId, &WaitingPlayer> = players.iter().map(|p| (p.id, p)).collect();
        let mut seen = Vec::new();
        for pair in &wave.pairs {
            let (a, b) = (by_id[&pair.white], by_id[&pair.black]);
            assert_eq!(allowed_cost(a, b), Some(pair.cost), "{pair:?} not allowed");
            assert_eq!(
                assign_colors(a, b, 0).0 == a.id,
                assign_colors(b, a, 0).0 == a.id
            );
            seen.extend([pair.white, pair.black]);
        }
        seen.extend(&wave.unpaired);
        seen.sort_unstable();
        let mut all: Vec<PlayerId> = players.iter().map(|p| p.id).collect();
        all.sort_unstable();
        assert_eq!(seen, all, "every player exactly once");
    }

    /// The best score over all allowed pairs, by dynamic programming over subsets.
    fn brute_force(players: &[WaitingPlayer]) -> WaveScore {
        let n = players.len();
        let mut best = vec![
            WaveScore {
                unpaired: 0,
                total_cost: 0
            };
            1 << n
        ];
        for mask in 1usize..1 << n {
            let v = mask.trailing_zeros() as usize;
            let rest = mask & !(1 << v);
            let skip = best[rest];
            let mut value = WaveScore {
                unpaired: skip.unpaired + 1,
                ..skip
            };
            for u in 0..n {
                if rest & (1 << u) != 0
                    && let Some(cost) = allowed_cost(&players[v], &players[u])
                {
                    let other = best[rest & !(1 << u)];
                    let with = WaveScore {
                        total_cost: other.total_cost + cost,
                        ..other
                    };
                    value = value.min(with);
                }
            }
            best[mask] = value;
        }
        best[(1 << n) - 1]
    }

    #[test]
    fn max_cost_boundaries() {
        assert_eq!(max_cost(i32::MIN), 130);
        assert_eq!(max_cost(999), 130);
        assert_eq!(max_cost(1000), 100);
        assert_eq!(max_cost(1499), 100);
        assert_eq!(max_cost(1500), 100);
        assert_eq!(max_cost(1514), 100);
        assert_eq!(max_cost(1515), 101);
        assert_eq!(max_cost(3000), 200);
        assert_eq!(max_cost(i32::MAX), i64::from(i32::MAX) / 15);
    }

    #[test]
    fn waiting_bonus_grows_then_caps() {
        assert_eq!(waiting_bonus(0), 0);
        assert_eq!(waiting_bonus(1), 12);
        assert_eq!(waiting_bonus(38), 456);
        assert_eq!(waiting_bonus(39), 460);
        assert_eq!(waiting_bonus(u32::MAX), 460);
    }

    #[test]
    fn cost_and_range_bonus() {
        let mut a = player(1, 1500);
        let mut b = player(2, 1620);
        assert_eq!(pair_cost(&a, &b), 120);
        // The smaller waiting bonus counts.
        a.missed_waves = 5;
        b.missed_waves = 2;
        assert_eq!(pair_cost(&a, &b), 120 - 24);
        assert_eq!(pair_cost(&b, &a), 120 - 24);
        // Range bonus: both ranges, each rating in the other's.
        let wide = Some(RatingRange {
            min: 1400,
            max: 1700,
        });
        a.range = wide;
        assert_eq!(range_bonus(&a, &b), 0, "only one player has a range");
        b.range = wide;
        assert_eq!(range_bonus(&a, &b), RANGE_BONUS);
        assert_eq!(pair_cost(&a, &b), 120 - 24 - 200);
        // b's range does not hold a's rating: no bonus, whatever a's range says.
        b.range = Some(RatingRange {
            min: 1550,
            max: 1700,
        });
        assert_eq!(range_bonus(&a, &b), 0);
        assert_eq!(range_bonus(&b, &a), 0);
        // Both ends of a range are in it.
        b.range = Some(RatingRange {
            min: 1500,
            max: 1500,
        });
        assert_eq!(range_bonus(&a, &b), RANGE_BONUS);
        // A range is a preference: a pair outside it is still allowed when close enough.
        let c = player(3, 1500);
        let mut d = player(4, 1550);
        d.range = Some(RatingRange {
            min: 1900,
            max: 2000,
        });
        assert_eq!(allowed_cost(&c, &d), Some(50));
    }

    #[test]
    fn allowed_at_the_max_cost_boundaries() {
        let allowed = |r1, r2| allowed_cost(&player(1, r1), &player(2, r2));
        // Below 1000: 130.
        assert_eq!(allowed(999, 1129), Some(130));
        assert_eq!(allowed(999, 1130), None);
        // From 1000: 100, decided by the lower rating.
        assert_eq!(allowed(1000, 1100), Some(100));
        assert_eq!(allowed(1000, 1101), None);
        assert_eq!(allowed(1499, 1599), Some(100));
        assert_eq!(allowed(1499, 1600), None);
        // From 1500: rating / 15.
        assert_eq!(allowed(1500, 1600), Some(100));
        assert_eq!(allowed(1500, 1601), None);
        assert_eq!(allowed(2400, 2560), Some(160));
        assert_eq!(allowed(2400, 2561), None);
        // Bonuses widen the allowed gap: 100 + 460 + 200 at most.
        let mut a = player(1, 1200);
        let mut b = player(2, 1960);
        a.missed_waves = 40;
        b.missed_waves = 40;
        a.range = Some(RatingRange {
            min: 1000,
            max: 2000,
        });
        b.range = Some(RatingRange {
            min: 1000,
            max: 2000,
        });
        assert_eq!(allowed_cost(&a, &b), Some(100));
        b.rating = 1961;
        assert_eq!(allowed_cost(&a, &b), None);
    }

    #[test]
    fn the_wave_finds_far_partners_that_bonuses_allow() {
        // Two players 760 apart, both with full bonuses and matching ranges, and between them
        // players who may pair with neither: the candidate search must look that far.
        let range = Some(RatingRange {
            min: 1000,
            max: 2000,
        });
        let mut a = player(1, 1200);
        let mut b = player(2, 1960);
        for p in [&mut a, &mut b] {
            p.missed_waves = 40;
            p.range = range;
        }
        let mut players = vec![a, b];
        players.extend((0..30).map(|i| player(100 + i, 1400 + 10 * i as i32)));
        let wave = pair_wave(&players, &WaveOptions::default()).unwrap();
        check_valid(&players, &wave);
        assert!(
            wave.pairs
                .iter()
                .any(|p| p.cost == 100 && p.white.0 < 3 && p.black.0 < 3)
        );
    }

    #[test]
    fn exclusions_are_never_paired() {
        let wave_of =
            |players: &[WaitingPlayer]| pair_wave(players, &WaveOptions::default()).unwrap();
        // Blocked, either way round: the only possible pair is refused.
        for blocker in [0, 1] {
            let mut players = vec![player(1, 1500), player(2, 1500)];
            let other = players[1 - blocker].id;
            players[blocker].blocked.push(other);
            let wave = wave_of(&players);
            assert!(wave.pairs.is_empty());
            assert_eq!(wave.unpaired, vec![PlayerId(1), PlayerId(2)]);
            assert!(greedy_pairs(&players, 0).unwrap().pairs.is_empty());
        }
        // The last opponent, either way round.
        for who in [0, 1] {
            let mut players = vec![player(1, 1500), player(2, 1500)];
            players[who].last_opponent = Some(players[1 - who].id);
            assert!(wave_of(&players).pairs.is_empty());
            assert!(greedy_pairs(&players, 0).unwrap().pairs.is_empty());
        }
        // With a third player the excluded pair goes elsewhere.
        let mut players = vec![player(1, 1500), player(2, 1500), player(3, 1520)];
        players[0].last_opponent = Some(PlayerId(2));
        let wave = wave_of(&players);
        assert_eq!(wave.pairs.len(), 1);
        assert!(!(wave.pairs[0].white.0 <= 2 && wave.pairs[0].black.0 <= 2));
    }

    #[test]
    fn matches_brute_force_on_small_pools() {
        let mut rng = Rng(5);
        for round in 0..3000 {
            let n = rng.below(11) as usize;
            let spread = [60, 150, 400, 900][round % 4];
            let centre = rng.range(700, 2300);
            let players = random_pool(&mut rng, n, centre, spread);
            let best = brute_force(&players);
            for candidates in [DEFAULT_CANDIDATES, 1000] {
                let options = WaveOptions {
                    candidates,
                    seed: round as u64,
                };
                let wave = pair_wave(&players, &options).unwrap();
                check_valid(&players, &wave);
                assert_eq!(wave.score(), best, "{players:?}");
            }
            // Fewer candidates: still a valid wave.
            let wave = pair_wave(
                &players,
                &WaveOptions {
                    candidates: 1,
                    seed: 0,
                },
            )
            .unwrap();
            check_valid(&players, &wave);
            check_valid(&players, &greedy_pairs(&players, 0).unwrap());
        }
    }

    #[test]
    fn beats_greedy_on_larger_pools() {
        let mut rng = Rng(9);
        let mut better = 0;
        for round in 0..40 {
            let n = 100 + rng.below(300) as usize;
            let spread = [200, 500, 1000][round % 3];
            let players = random_pool(&mut rng, n, 1500, spread);
            let wave = pair_wave(&players, &WaveOptions::default()).unwrap();
            let greedy = greedy_pairs(&players, 0).unwrap();
            check_valid(&players, &wave);
            check_valid(&players, &greedy);
            assert!(wave.pairs.len() >= greedy.pairs.len());
            assert!(wave.score() <= greedy.score());
            better += usize::from(wave.score() < greedy.score());
        }
        assert!(
            better > 30,
            "the wave should usually do strictly better ({better}/40)"
        );
    }

    #[test]
    fn more_pairs_beat_a_chain_of_good_pairs() {
        // Eight players in a chain where only neighbours may meet (everyone else is blocked).
        // The inner pairs 1–2, 3–4, 5–6 cost −660 each; the outer ones 0–1, 2–3, 4–5, 6–7
        // cost 100 each. Three good pairs with two players waiting total −1980 + 2P, four
        // ordinary pairs 400: a fixed penalty P = 1,000 would leave two players waiting; the
        // wave pairs everyone.
        let ratings = [440, 1200, 1200, 1960, 1960, 2720, 2720, 3480];
        let mut players: Vec<WaitingPlayer> = ratings
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                let mut p = player(i as u64, r);
                p.missed_waves = 40;
                p.range = Some(RatingRange { min: 0, max: 4000 });
                p
            })
            .collect();
        for (i, p) in players.iter_mut().enumerate() {
            p.blocked = (0..8usize)
                .filter(|j| i.abs_diff(*j) > 1)
                .map(|j| PlayerId(j as u64))
                .collect();
        }
        assert_eq!(allowed_cost(&players[1], &players[2]), Some(-660));
        assert_eq!(allowed_cost(&players[2], &players[3]), Some(100));
        let wave = pair_wave(&players, &WaveOptions::default()).unwrap();
        assert_eq!(
            wave.score(),
            WaveScore {
                unpaired: 0,
                total_cost: 400
            }
        );
        assert_eq!(brute_force(&players), wave.score());
    }

    #[test]
    fn colors() {
        let white_of = |a: &WaitingPlayer, b: &WaitingPlayer, seed| assign_colors(a, b, seed).0;
        let mut a = player(1, 1500);
        let mut b = player(2, 1500);
        // Lower colour balance first, whatever the last colours.
        a.color_balance = 1;
        b.color_balance = -1;
        a.last_color = Some(Color::Black);
        b.last_color = Some(Color::White);
        assert_eq!(white_of(&a, &b, 0), b.id);
        assert_eq!(white_of(&b, &a, 0), b.id);
        // Equal balance: the one who last had Black.
        a.color_balance = 0;
        b.color_balance = 0;
        assert_eq!(white_of(&a, &b, 0), a.id);
        assert_eq!(white_of(&b, &a, 0), a.id);
        // No last colour beats a last White.
        a.last_color = None;
        assert_eq!(white_of(&a, &b, 0), a.id);
        // Full tie: decided by the seed and ids, the same both ways round, not always the same.
        b.last_color = None;
        let mut whites = [0, 0];
        for seed in 0..64 {
            let white = white_of(&a, &b, seed);
            assert_eq!(white, white_of(&b, &a, seed));
            assert_eq!(white, white_of(&a, &b, seed), "deterministic");
            whites[usize::from(white == b.id)] += 1;
        }
        assert!(whites[0] > 10 && whites[1] > 10, "{whites:?}");
        // The wave applies the rule.
        b.color_balance = -2;
        let wave = pair_wave(&[a.clone(), b.clone()], &WaveOptions::default()).unwrap();
        assert_eq!(
            wave.pairs,
            vec![Pair {
                white: b.id,
                black: a.id,
                cost: 0
            }]
        );
    }

    #[test]
    fn independent_of_input_order() {
        let mut rng = Rng(21);
        let players = random_pool(&mut rng, 300, 1600, 500);
        let options = WaveOptions {
            candidates: 8,
            seed: 77,
        };
        let wave = pair_wave(&players, &options).unwrap();
        let mut shuffled = players.clone();
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, rng.below(i as u64 + 1) as usize);
        }
        assert_eq!(pair_wave(&shuffled, &options).unwrap(), wave);
        assert_eq!(
            greedy_pairs(&shuffled, 77).unwrap(),
            greedy_pairs(&players, 77).unwrap()
        );
    }

    #[test]
    fn small_and_empty_pools() {
        let options = WaveOptions::default();
        assert_eq!(pair_wave(&[], &options).unwrap(), Wave::default());
        let one = [player(1, 1500)];
        assert_eq!(
            pair_wave(&one, &options).unwrap().unpaired,
            vec![PlayerId(1)]
        );
        // Too far apart: nobody is paired.
        let far = [player(1, 1500), player(2, 1700)];
        assert_eq!(pair_wave(&far, &options).unwrap().pairs, vec![]);
    }

    #[test]
    fn errors() {
        let options = WaveOptions::default();
        let twice = [player(1, 1500), player(1, 1600)];
        assert_eq!(
            pair_wave(&twice, &options),
            Err(WaveError::DuplicateId { id: PlayerId(1) })
        );
        assert_eq!(
            greedy_pairs(&twice, 0),
            Err(WaveError::DuplicateId { id: PlayerId(1) })
        );
        let mut bad = player(4, 1500);
        bad.range = Some(RatingRange {
            min: 1600,
            max: 1500,
        });
        let err = pair_wave(&[bad], &options).unwrap_err();
        assert_eq!(
            err.to_string(),
            "player 4: range min 1600 is above range max 1500"
        );
        let none = WaveOptions {
            candidates: 0,
            seed: 0,
        };
        assert_eq!(pair_wave(&[], &none), Err(WaveError::NoCandidates));
        let matcher = WaveError::from(MatchingError::TooManyVertices { n: 1 << 31 });
        assert!(matcher.source().is_some());
    }

    #[test]
    fn crowds_of_equal_ratings_are_linked() {
        // Five crowds of 17 equal ratings, one point apart: each player's 16 nearest are its own
        // crowd, so without the next-in-order candidate every crowd would strand a player.
        let players: Vec<WaitingPlayer> = (0..85u64)
            .map(|i| player(i, 1500 + (i / 17) as i32))
            .collect();
        let wave = pair_wave(&players, &WaveOptions::default()).unwrap();
        check_valid(&players, &wave);
        assert_eq!(wave.unpaired.len(), 1);
        assert_eq!(greedy_pairs(&players, 0).unwrap().unpaired.len(), 1);
    }
}
