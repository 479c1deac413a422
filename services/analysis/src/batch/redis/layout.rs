//! Where the queue's keys live: on one Redis, every key under `an:` (one slot group); on a Redis
//! Cluster, spread over [`CLUSTER_GROUPS`] slot groups, each with its own work stream,
//! dead-letter stream, lease index and refusals, and a job (all its keys, its request key and
//! its games' entries) in one group, so that every script touches one slot. The caps on jobs
//! and positions, which count every group's jobs, are a ledger of their own on a cluster.

use arbiter_redis_conn::slots::SlotGroups;

/// The slot groups of the queue on a cluster. Part of the stored data's layout: every replica
/// and worker must use the same count for as long as the data lives.
pub const CLUSTER_GROUPS: u16 = 32;

/// The prefix of the ledger's keys on a cluster (see `lua/reserve.lua`).
const LEDGER: &str = "an:{an}:";

/// The queue's key layout (see the module documentation).
#[derive(Clone, Debug)]
pub struct Layout {
    groups: Option<SlotGroups>,
    /// Each group's key prefix: `an:`, or `an:{<tag>}:`.
    prefixes: Vec<String>,
    /// Each group's [`Layout::script_keys`], made once (every script call names them).
    script_keys: Vec<[String; 2]>,
}

impl Layout {
    /// One Redis: one group, prefix `an:` (the names the queue has always used).
    pub fn single() -> Layout {
        Layout::with(None, vec!["an:".to_owned()])
    }

    /// A cluster: [`CLUSTER_GROUPS`] groups, prefix `an:{<tag>}:`.
    pub fn cluster() -> Layout {
        let groups = SlotGroups::new("a", CLUSTER_GROUPS);
        let prefixes = groups.tags().map(|t| format!("an:{{{t}}}:")).collect();
        Layout::with(Some(groups), prefixes)
    }

    fn with(groups: Option<SlotGroups>, prefixes: Vec<String>) -> Layout {
        let script_keys = prefixes
            .iter()
            .map(|q| [format!("{q}work"), format!("{q}absent")])
            .collect();
        Layout {
            groups,
            prefixes,
            script_keys,
        }
    }

    /// The layout for a store on a cluster or not.
    pub fn for_cluster(cluster: bool) -> Layout {
        if cluster {
            Layout::cluster()
        } else {
            Layout::single()
        }
    }

    /// Whether the keys are spread over a cluster's slot groups (and the caps kept in a ledger).
    pub fn is_cluster(&self) -> bool {
        self.groups.is_some()
    }

    /// How many groups there are.
    pub fn count(&self) -> usize {
        self.prefixes.len()
    }

    /// Group `g`'s key prefix.
    pub fn prefix(&self, g: usize) -> &str {
        &self.prefixes[g]
    }

    /// The group of a job id, lease id or request key.
    pub fn group_of(&self, id: &str) -> usize {
        self.groups.as_ref().map_or(0, |s| s.group_of(id))
    }

    /// The key prefix of the group of `id`.
    pub fn prefix_of(&self, id: &str) -> &str {
        self.prefix(self.group_of(id))
    }

    /// Group `g`'s work stream.
    pub fn work(&self, g: usize) -> String {
        format!("{}work", self.prefix(g))
    }

    /// Group `g`'s dead-letter stream.
    pub fn dead(&self, g: usize) -> String {
        format!("{}dead", self.prefix(g))
    }

    /// The keys every script of group `g` declares (see `lua/prelude.lua`): the work stream,
    /// and a key that never exists.
    pub fn script_keys(&self, g: usize) -> &[String] {
        &self.script_keys[g]
    }

    /// The ledger's keys (a cluster only; see `lua/reserve.lua`): jobs by expiry, positions
    /// held by job.
    pub fn ledger_keys() -> [String; 2] {
        [format!("{LEDGER}jobs"), format!("{LEDGER}held")]
    }

    /// An id drawn by `draw` whose group is `g` (about `count` draws; the draws are random, so
    /// the 10,000 allowed never run out in practice).
    pub fn draw_in<E>(
        &self,
        g: usize,
        mut draw: impl FnMut() -> Result<String, E>,
        exhausted: impl FnOnce() -> E,
    ) -> Result<String, E> {
        for _ in 0..10_000 {
            let id = draw()?;
            if self.group_of(&id) == g {
                return Ok(id);
            }
        }
        Err(exhausted())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbiter_redis_conn::slots::slot;

    #[test]
    fn one_redis_keeps_the_names_the_queue_always_had() {
        let l = Layout::single();
        assert_eq!((l.count(), l.is_cluster()), (1, false));
        assert_eq!(l.work(0), "an:work");
        assert_eq!(l.dead(0), "an:dead");
        assert_eq!(l.prefix_of("job-0123"), "an:");
    }

    #[test]
    fn a_cluster_group_keeps_its_keys_in_one_slot_and_ids_find_their_group() {
        let l = Layout::cluster();
        assert_eq!(l.count(), usize::from(CLUSTER_GROUPS));
        let mut slots: Vec<u16> = (0..l.count())
            .map(|g| {
                let [work, absent] = l.script_keys(g) else {
                    panic!("two script keys")
                };
                let s = slot(work.as_bytes());
                assert_eq!(slot(absent.as_bytes()), s);
                assert_eq!(slot(l.dead(g).as_bytes()), s);
                assert_eq!(slot(format!("{}j:job-1:r", l.prefix(g)).as_bytes()), s);
                s
            })
            .collect();
        slots.dedup();
        assert_eq!(slots.len(), l.count(), "one slot per group");
        // The tags docs/operations.md lists.
        let tags: Vec<&str> = l.groups.as_ref().unwrap().tags().collect();
        assert_eq!(
            tags.join(" "),
            "a0-73 a1-41 a2-170 a3-32 a4-60 a5-52 a6-13 a7-21 a8-43 a9-2 a10-10 a11-22 a12-12 \
             a13-20 a14-121 a15-31 a16-153 a17-30 a18-22 a19-10 a20-131 a21-30 a22-71 a23-43 \
             a24-10 a25-22 a26-63 a27-51 a28-2 a29-150 a30-52 a31-60"
        );
        let [jobs, held] = Layout::ledger_keys();
        assert_eq!(slot(jobs.as_bytes()), slot(held.as_bytes()));
        // Drawn ids land in the group asked for.
        let mut n = 0u64;
        for g in [0, 7, 31] {
            let id = l
                .draw_in(
                    g,
                    || {
                        n += 1;
                        Ok::<_, ()>(format!("job-{n:032x}"))
                    },
                    || (),
                )
                .unwrap();
            assert_eq!(l.group_of(&id), g);
            assert_eq!(l.prefix_of(&id), l.prefix(g));
        }
    }
}
