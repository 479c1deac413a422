//! The transposition table: a fixed array of entries sized in MiB, indexed by the Zobrist hash,
//! with depth-preferred replacement that ages out entries of earlier searches.

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

/// One stored search result.
#[derive(Copy, Clone, Debug)]
pub struct Entry<M> {
    key: u64,
    /// The best (or refuting) move found.
    pub mv: Option<M>,
    /// The score, mate scores relative to this node.
    pub score: i32,
    /// The static evaluation (or 0 when in check).
    pub eval: i32,
    /// The depth searched.
    pub depth: i16,
    /// How `score` bounds the true score.
    pub bound: Bound,
    generation: u8,
}

/// A transposition table for moves of type `M`.
#[derive(Debug)]
pub struct Table<M> {
    entries: Vec<Option<Entry<M>>>,
    generation: u8,
    /// The slots filled since the last clear, while they are few (at most a quarter of the
    /// table; `None` past that): a short search (a review at depth 1) clears only what it
    /// touched instead of the whole table.
    filled: Option<Vec<u32>>,
}

impl<M: Copy> Table<M> {
    /// A table of about `mib` MiB (at least one entry).
    pub fn new(mib: usize) -> Table<M> {
        let size = std::mem::size_of::<Option<Entry<M>>>().max(1);
        let count = (mib.saturating_mul(1 << 20) / size).max(1);
        Table {
            entries: vec![None; count],
            generation: 0,
            filled: Some(Vec::new()),
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table has no entries (never: it holds at least one).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forgets everything: only the slots filled since the last clear when they are few, the
    /// whole table otherwise.
    pub fn clear(&mut self) {
        match &mut self.filled {
            Some(filled) => {
                for &i in filled.iter() {
                    self.entries[i as usize] = None;
                }
                filled.clear();
            }
            None => {
                self.entries.iter_mut().for_each(|e| *e = None);
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
        ((u128::from(key) * self.entries.len() as u128) >> 64) as usize
    }

    /// The entry stored for `key`, if any.
    pub fn probe(&self, key: u64) -> Option<Entry<M>> {
        self.entries[self.index(key)].filter(|e| e.key == key)
    }

    /// Stores a result, unless the slot holds a deeper result of this search for another
    /// position. A result for the same position without a move keeps the stored move.
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
        let generation = self.generation;
        let depth = depth.clamp(-1, i16::MAX as i32) as i16;
        let mv = match self.entries[i] {
            Some(old) if old.key == key => {
                if bound != Bound::Exact && old.generation == generation && old.depth > depth + 2 {
                    return;
                }
                mv.or(old.mv)
            }
            Some(old) if old.generation == generation && old.depth > depth => return,
            Some(_) => mv,
            None => {
                let quarter = self.entries.len() / 4;
                if let Some(filled) = &mut self.filled {
                    if filled.len() < quarter {
                        // Below u32::MAX: a table of a quarter of that many slots is 24 GiB.
                        filled.push(i as u32);
                    } else {
                        self.filled = None;
                    }
                }
                mv
            }
        };
        self.entries[i] = Some(Entry {
            key,
            mv,
            score,
            eval,
            depth,
            bound,
            generation,
        });
    }

    /// Per mille of the first thousand slots used by this search (UCI `hashfull`).
    pub fn hashfull(&self) -> u32 {
        let n = self.entries.len().min(1000);
        let used = self.entries[..n]
            .iter()
            .filter(|e| e.is_some_and(|e| e.generation == self.generation))
            .count();
        (used * 1000 / n.max(1)) as u32
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

    /// Whether every slot is empty.
    fn empty(t: &Table<u16>) -> bool {
        t.entries.iter().all(Option::is_none)
    }

    #[test]
    fn a_clear_forgets_everything_whether_few_or_many_slots_were_filled() {
        let mut t: Table<u16> = Table::new(1);
        let keys = |n: u64| (0..n).map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        for n in [10, t.len() as u64 / 4 + 100, t.len() as u64 * 2, 3] {
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
    fn a_one_entry_table_replaces_by_depth_and_age() {
        let mut t: Table<u16> = Table::new(0);
        assert_eq!(t.len(), 1);
        t.new_search();
        t.store(1, Some(1), 0, 0, 8, Bound::Lower);
        t.store(2, Some(2), 0, 0, 3, Bound::Lower);
        assert!(
            t.probe(2).is_none(),
            "a shallower entry of this search does not evict"
        );
        t.new_search();
        t.store(2, Some(2), 0, 0, 3, Bound::Lower);
        assert_eq!(
            t.probe(2).unwrap().mv,
            Some(2),
            "an older search's entry gives way"
        );
    }
}
