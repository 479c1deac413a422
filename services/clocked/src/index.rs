//! Running games by their earliest deadline, in process: the index a memory store keeps, and
//! the shape of a claim from any index.

use std::collections::{BTreeSet, HashMap};

/// Running games by their earliest deadline (Unix ms), in process.
#[derive(Debug, Default)]
pub struct DeadlineIndex {
    by_time: BTreeSet<(u64, String)>,
    by_id: HashMap<String, u64>,
}

impl DeadlineIndex {
    /// Files `id` at `deadline` (`None`: out of the index); `true` when it is a new earliest
    /// deadline (the worker must be woken).
    pub fn set(&mut self, id: &str, deadline: Option<u64>) -> bool {
        if let Some(old) = self.by_id.remove(id) {
            self.by_time.remove(&(old, id.to_owned()));
        }
        let Some(at) = deadline else { return false };
        let earliest = self.by_time.first().is_none_or(|(first, _)| at < *first);
        self.by_time.insert((at, id.to_owned()));
        self.by_id.insert(id.to_owned(), at);
        earliest
    }

    /// The earliest deadline.
    pub fn first(&self) -> Option<u64> {
        self.by_time.first().map(|(at, _)| *at)
    }

    /// Claims up to `max` entries due by `now + ahead`, earliest first: each moves to its
    /// deadline (or `now`, if later) + `lease`.
    pub fn claim(&mut self, now: u64, ahead: u64, lease: u64, max: usize) -> Claimed {
        let horizon = now.saturating_add(ahead);
        let due: Vec<(String, u64)> = self
            .by_time
            .iter()
            .take_while(|(at, _)| *at <= horizon)
            .take(max)
            .map(|(at, id)| (id.clone(), *at))
            .collect();
        for (id, at) in &due {
            self.set(id, Some((*at).max(now).saturating_add(lease)));
        }
        Claimed { now, due }
    }

    /// How many games are filed.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether no game is filed.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}

/// Games claimed from a deadline index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claimed {
    /// The store's time at the claim (Unix ms).
    pub now: u64,
    /// The games claimed, each with the time it was filed at (Unix ms: its deadline, or the end
    /// of a lapsed claim's lease), earliest first.
    pub due: Vec<(String, u64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_orders_claims_and_announces_new_earliest_deadlines() {
        let mut ix = DeadlineIndex::default();
        assert!(ix.set("a", Some(100)));
        assert!(!ix.set("b", Some(200)));
        assert!(ix.set("c", Some(50)));
        assert_eq!(ix.first(), Some(50));
        assert!(!ix.set("c", None));
        assert_eq!((ix.first(), ix.len()), (Some(100), 2));
        let claimed = ix.claim(150, 0, 1_000, 10);
        assert_eq!(claimed.due, vec![("a".to_owned(), 100)]);
        assert_eq!(ix.first(), Some(200));
        assert!(ix.claim(150, 0, 1_000, 10).due.is_empty());
        // Claimed ahead: the lease counts from the deadline.
        assert_eq!(
            ix.claim(150, 60, 1_000, 10).due,
            vec![("b".to_owned(), 200)]
        );
        assert_eq!(ix.first(), Some(1_150));
        // A lapsed lease is taken over: its entry is due at the lease's end.
        assert_eq!(
            ix.claim(1_200, 0, 1_000, 1).due,
            vec![("a".to_owned(), 1_150)]
        );
        assert_eq!(ix.first(), Some(1_200));
    }
}
