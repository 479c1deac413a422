//! The transposition table: buckets of [`BUCKET`] entries, one 64-byte cache line each where
//! the move type allows (16-byte entries for chess moves), sized in MiB and indexed by the
//! Zobrist hash. A probe reads one bucket; a store replaces the entry of the same position, else
//! an empty one, else the one worth least: the shallowest, each search of age counting as
//! eight plies less.
//!
//! An entry keeps 32 bits of the key (the bucket's index comes from the other, high, bits), so
//! two positions share an entry's key about once in 2³² probes of a full bucket's worth; the
//! search therefore never plays a stored move without checking it is legal.

/// Entries per bucket.
pub const BUCKET: usize = 4;

/// How many plies of depth one search of age costs an entry when a victim is chosen.
const AGE_WEIGHT: i32 = 8;

/// How a stored score bounds the true one.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Bound {
    /// The score is exact.
    Exact,
    /// The true score is at least this (a beta cutoff).
    Lower,
    /// The true score is at most this (no move raised alpha).
    Upper,
}

/// One stored search result, as the table keeps it (scores fit in 16 bits:
/// [`INFINITE`](crate::score::INFINITE) is 32,000).
#[derive(Copy, Clone, Debug)]
struct Slot<M> {
    /// The low 32 bits of the key.
    check: u32,
    mv: Option<M>,
    score: i16,
    eval: i16,
    depth: i16,
    bound: Bound,
    generation: u8,
}

/// One stored search result, as a probe returns it.
#[derive(Copy, Clone, Debug)]
pub struct Entry<M> {
    /// The best (or refuting) move found: a move of this position or, after a rare key
    /// collision, of another one (check it is legal before playing it).
    pub mv: Option<M>,
    /// The score, mate scores relative to this node.
    pub score: i32,
    /// The static evaluation (or 0 when in check).
    pub eval: i32,
    /// The depth searched.
    pub depth: i16,
    /// How `score` bounds the true score.
    pub bound: Bound,
}

/// One bucket: a cache line (for moves of up to four bytes).
#[derive(Copy, Clone, Debug)]
#[repr(align(64))]
struct Bucket<M>([Option<Slot<M>>; BUCKET]);

/// A transposition table for moves of type `M`.
#[derive(Debug)]
pub struct Table<M> {
    buckets: Vec<Bucket<M>>,
    generation: u8,
    /// The buckets filled since the last clear, while they are few (at most a quarter of the
    /// table; `None` past that): a short search (a review at depth 1) clears only what it
    /// touched instead of the whole table.
    filled: Option<Vec<u32>>,
}

/// The part of the key an entry keeps.
fn check_of(key: u64) -> u32 {
    key as u32
}

/// `v` saturated to 16 bits.
fn narrow(v: i32) -> i16 {
    v.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16
}

impl<M: Copy> Table<M> {
    /// A table of about `mib` MiB (at least one bucket).
    pub fn new(mib: usize) -> Table<M> {
        let size = std::mem::size_of::<Bucket<M>>();
        let count = (mib.saturating_mul(1 << 20) / size).max(1);
        Table {
            buckets: vec![Bucket([None; BUCKET]); count],
            generation: 0,
            filled: Some(Vec::new()),
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.buckets.len() * BUCKET
    }

    /// Whether the table has no entries (never: it holds at least one bucket).
    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// Forgets everything: only the buckets filled since the last clear when they are few, the
    /// whole table otherwise.
    pub fn clear(&mut self) {
        let empty = Bucket([None; BUCKET]);
        match &mut self.filled {
            Some(filled) => {
                for &i in filled.iter() {
                    self.buckets[i as usize] = empty;
                }
                filled.clear();
            }
            None => {
                self.buckets.iter_mut().for_each(|b| *b = empty);
                self.filled = Some(Vec::new());
            }
        }
        self.generation = 0;
    }

    /// Starts a new search: entries of earlier searches become the first to be replaced.
    pub fn new_search(&mut self) {
        self.generation = self.generation.wrapping_add(1);
    }

    fn index(&self, key: u64) -> usize {
        ((u128::from(key) * self.buckets.len() as u128) >> 64) as usize
    }

    /// The entry stored for `key`, if any.
    pub fn probe(&self, key: u64) -> Option<Entry<M>> {
        let check = check_of(key);
        self.buckets[self.index(key)]
            .0
            .iter()
            .flatten()
            .find(|s| s.check == check)
            .map(|s| Entry {
                mv: s.mv,
                score: i32::from(s.score),
                eval: i32::from(s.eval),
                depth: s.depth,
                bound: s.bound,
            })
    }

    /// Stores a result. A result for a position already in the bucket replaces it, unless it
    /// is a shallower bound of this search, and keeps the stored move when it brings none;
    /// otherwise it takes an empty entry or the bucket's least valuable one.
    pub fn store(
        &mut self,
        key: u64,
        mv: Option<M>,
        score: i32,
        eval: i32,
        depth: i32,
        bound: Bound,
    ) {
        let i = self.index(key);
        let check = check_of(key);
        let generation = self.generation;
        let depth = depth.clamp(-1, i32::from(i16::MAX)) as i16;
        let slots = &mut self.buckets[i].0;
        let same = slots
            .iter()
            .position(|s| s.is_some_and(|s| s.check == check));
        let (at, mv) = match same {
            Some(at) => {
                let old = slots[at].expect("found above");
                if bound != Bound::Exact && old.generation == generation && old.depth > depth + 2 {
                    return;
                }
                (at, mv.or(old.mv))
            }
            None => {
                let worth = |s: &Option<Slot<M>>| match s {
                    None => i32::MIN,
                    Some(s) => {
                        let age = i32::from(generation.wrapping_sub(s.generation));
                        i32::from(s.depth) - AGE_WEIGHT * age
                    }
                };
                let at = (0..BUCKET)
                    .min_by_key(|&j| worth(&slots[j]))
                    .expect("a bucket has entries");
                if slots.iter().all(Option::is_none) {
                    let quarter = self.buckets.len() / 4;
                    if let Some(filled) = &mut self.filled {
                        if filled.len() < quarter {
                            // Below u32::MAX: a table of a quarter of that many buckets is
                            // 64 GiB.
                            filled.push(i as u32);
                        } else {
                            self.filled = None;
                        }
                    }
                }
                (at, mv)
            }
        };
        self.buckets[i].0[at] = Some(Slot {
            check,
            mv,
            score: narrow(score),
            eval: narrow(eval),
            depth,
            bound,
            generation,
        });
    }

    /// Per mille of the first thousand entries used by this search (UCI `hashfull`).
    pub fn hashfull(&self) -> u32 {
        let n = self.buckets.len().min(1000 / BUCKET);
        let used = self.buckets[..n]
            .iter()
            .flat_map(|b| b.0.iter())
            .filter(|s| s.is_some_and(|s| s.generation == self.generation))
            .count();
        (used * 1000 / (n * BUCKET).max(1)) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_and_finds() {
        let mut t: Table<u16> = Table::new(1);
        assert!(t.len() > 1000);
        t.new_search();
        t.store(42, Some(7), 10, 3, 5, Bound::Exact);
        let e = t.probe(42).unwrap();
        assert_eq!(
            (e.mv, e.score, e.depth, e.bound),
            (Some(7), 10, 5, Bound::Exact)
        );
        assert!(t.probe(43).is_none());
        // A shallower bound for the same position keeps the move when it brings none.
        t.store(42, None, 1, 3, 4, Bound::Exact);
        assert_eq!(t.probe(42).unwrap().mv, Some(7));
        assert!(t.hashfull() <= 1);
        t.clear();
        assert!(t.probe(42).is_none());
    }

    /// Whether every entry is empty.
    fn empty(t: &Table<u16>) -> bool {
        t.buckets.iter().all(|b| b.0.iter().all(Option::is_none))
    }

    #[test]
    fn a_bucket_of_entries_for_two_byte_moves_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Option<Slot<u16>>>(), 16);
        assert_eq!(std::mem::size_of::<Bucket<u16>>(), 64);
        let t: Table<u16> = Table::new(1);
        assert_eq!(t.len(), (1 << 20) / 64 * BUCKET);
    }

    #[test]
    fn a_clear_forgets_everything_whether_few_or_many_buckets_were_filled() {
        let mut t: Table<u16> = Table::new(1);
        let keys = |n: u64| (0..n).map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        for n in [10, t.len() as u64 / 16 + 100, t.len() as u64 * 2, 3] {
            t.new_search();
            for key in keys(n) {
                t.store(key, Some(1), 0, 0, 1, Bound::Exact);
            }
            assert!(!empty(&t));
            t.clear();
            assert!(empty(&t), "after {n} stores");
            assert!(keys(n).all(|k| t.probe(k).is_none()));
        }
    }

    #[test]
    fn a_full_bucket_gives_up_its_shallowest_entry_counting_age() {
        let mut t: Table<u16> = Table::new(0);
        assert_eq!(t.len(), BUCKET);
        t.new_search();
        for (key, depth) in [(1, 8), (2, 3), (3, 5), (4, 6)] {
            t.store(key, Some(key as u16), 0, 0, depth, Bound::Lower);
        }
        assert!((1..=4).all(|k| t.probe(k).is_some()), "four fit");
        t.store(5, Some(5), 0, 0, 2, Bound::Lower);
        assert!(t.probe(2).is_none(), "the shallowest gave way");
        assert_eq!(t.probe(5).unwrap().mv, Some(5));
        // A shallower bound of this search for a stored position does not replace it.
        t.store(1, Some(9), 0, 0, 4, Bound::Lower);
        assert_eq!(t.probe(1).unwrap().depth, 8);
        // One search later every entry is older by 8 plies of worth: depth 8 (now worth 0)
        // outlives depth 2 (worth -6), the first to go.
        t.new_search();
        t.store(6, Some(6), 0, 0, 1, Bound::Lower);
        assert!(t.probe(5).is_none());
        assert!(t.probe(1).is_some() && t.probe(6).is_some());
        // Two searches later a deep old entry gives way to a shallow new one.
        t.new_search();
        t.new_search();
        for key in 7..10 {
            t.store(key, Some(0), 0, 0, 1, Bound::Lower);
        }
        assert!(
            t.probe(1).is_none(),
            "depth 8 from three searches ago gave way"
        );
    }

    #[test]
    fn scores_beyond_sixteen_bits_saturate() {
        let mut t: Table<u16> = Table::new(0);
        t.store(1, None, 40_000, -40_000, 3, Bound::Exact);
        let e = t.probe(1).unwrap();
        assert_eq!((e.score, e.eval), (32_767, -32_768));
    }
}
