//! Redis Cluster's key slots, and the slot groups the stores lay their keys out by.
//!
//! A cluster splits keys into 16,384 slots by CRC-16 (XMODEM) of the key, or of the part between
//! the first `{` and the next `}` when that part is not empty (the hash tag). A script may touch
//! keys of one slot only, so every key a store's script touches carries the same hash tag.
//!
//! A store that needs one key to see many records (a deadline index of every running game, a
//! stream of every finished match) cannot keep that key in each record's slot. It keeps one such
//! key per **slot group** instead: the records are spread over [`SlotGroups::count`] groups by a
//! hash of their id ([`SlotGroups::group_of`]), each group's keys carry the group's tag
//! ([`SlotGroups::tag`]), and so a group's records and its index share a slot. Group `g`'s tag is
//! chosen to hash into the `g`-th of `count` equal ranges of slots, so a cluster whose primaries
//! own equal ranges (what `redis-cli --cluster create` makes) holds an equal share of the groups,
//! and a slot migration moves one group whole.

/// The number of slots of a Redis Cluster.
pub const SLOTS: u16 = 16_384;

/// CRC-16/XMODEM (polynomial 0x1021, initial value 0), the hash Redis Cluster uses.
pub fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The slot of `key` (as `CLUSTER KEYSLOT` answers): its hash tag's slot when it has one.
pub fn slot(key: &[u8]) -> u16 {
    let hashed = key
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            let close = rest.iter().position(|&b| b == b'}')?;
            (close > 0).then(|| &rest[..close])
        })
        .unwrap_or(key);
    crc16(hashed) % SLOTS
}

/// The most slot groups a layout may have.
pub const MAX_GROUPS: u16 = 1_024;

/// A store's records spread over a fixed number of slot groups (see the module documentation).
/// The count and the prefix are part of the data's layout: every replica must use the same ones
/// for as long as the data lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotGroups {
    tags: Vec<String>,
}

impl SlotGroups {
    /// `count` groups (1 to [`MAX_GROUPS`]) whose tags start with `prefix` (which holds no
    /// braces): group `g`'s tag is `<prefix><g>-<n>` with the least `n` that puts it in the
    /// `g`-th of `count` equal slot ranges.
    ///
    /// # Panics
    /// On a count out of range or a prefix with a brace: mistakes of the code, not input.
    pub fn new(prefix: &str, count: u16) -> SlotGroups {
        assert!((1..=MAX_GROUPS).contains(&count), "{count} slot groups");
        assert!(
            !prefix.contains(['{', '}']),
            "a slot group prefix with a brace"
        );
        let tags = (0..count)
            .map(|g| {
                let (low, high) = range(g, count);
                (0u32..)
                    .map(|n| format!("{prefix}{g}-{n}"))
                    .find(|tag| (low..high).contains(&u32::from(slot(tag.as_bytes()))))
                    .expect("every range of slots holds some tag")
            })
            .collect();
        SlotGroups { tags }
    }

    /// How many groups there are.
    pub fn count(&self) -> usize {
        self.tags.len()
    }

    /// The group of the record `id`: FNV-1a of the id, modulo the count.
    pub fn group_of(&self, id: &str) -> usize {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in id.as_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        // The count is at most MAX_GROUPS, so the remainder fits.
        #[allow(clippy::cast_possible_truncation)]
        let g = (h % self.tags.len() as u64) as usize;
        g
    }

    /// Group `g`'s hash tag, without braces.
    ///
    /// # Panics
    /// If `g` is not below [`SlotGroups::count`].
    pub fn tag(&self, g: usize) -> &str {
        &self.tags[g]
    }

    /// The tag of the group of record `id`.
    pub fn tag_of(&self, id: &str) -> &str {
        self.tag(self.group_of(id))
    }

    /// Every group's tag, group 0 first.
    pub fn tags(&self) -> impl ExactSizeIterator<Item = &str> {
        self.tags.iter().map(String::as_str)
    }
}

/// The slots `[low, high)` of the `g`-th of `count` equal ranges.
fn range(g: u16, count: u16) -> (u32, u32) {
    let per = |i: u32| i * u32::from(SLOTS) / u32::from(count);
    (per(u32::from(g)), per(u32::from(g) + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_and_slots_match_redis() {
        // The check value of CRC-16/XMODEM, and slots Redis's documentation gives.
        assert_eq!(crc16(b"123456789"), 0x31c3);
        assert_eq!(slot(b"123456789"), 12_739);
        assert_eq!(slot(b"foo"), 12_182);
        // A hash tag decides; an empty one does not.
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
        assert_eq!(slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") % SLOTS);
        assert_eq!(slot(b"foo{{bar}}zap"), slot(b"{bar"));
        assert_eq!(slot(b"foo{bar}{zap}"), slot(b"bar"));
        assert_eq!(slot(b"no close {brace"), crc16(b"no close {brace") % SLOTS);
    }

    #[test]
    fn each_group_has_a_tag_in_its_own_range_and_the_layout_is_fixed() {
        for count in [1, 2, 3, 32, 1_024] {
            let groups = SlotGroups::new("m", count);
            assert_eq!(groups.count(), usize::from(count));
            for (g, tag) in groups.tags().enumerate() {
                let (low, high) = range(u16::try_from(g).unwrap(), count);
                let s = u32::from(slot(tag.as_bytes()));
                assert!(
                    (low..high).contains(&s),
                    "{tag}: slot {s} not in {low}..{high}"
                );
            }
        }
        // These names are the stored layout (docs/operations.md lists them): changing them
        // orphans data.
        let groups = SlotGroups::new("m", 32);
        assert_eq!(
            [groups.tag(0), groups.tag(7), groups.tag(31)],
            ["m0-11", "m7-43", "m31-151"]
        );
        assert_eq!(SlotGroups::new("c", 32).tag(0), "c0-0");
        assert_eq!(
            groups.group_of("abc"),
            11,
            "FNV-1a of the id, modulo the count"
        );
    }

    #[test]
    fn ids_spread_over_the_groups() {
        let groups = SlotGroups::new("m", 32);
        let mut counts = [0u32; 32];
        for i in 0..32_000 {
            counts[groups.group_of(&format!("m{i:016x}"))] += 1;
        }
        // 1,000 expected each; a fair hash stays well within ±20 %.
        assert!(
            counts.iter().all(|&c| (800..1_200).contains(&c)),
            "{counts:?}"
        );
    }
}
