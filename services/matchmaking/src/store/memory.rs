//! The in-process store of the embedded default: the same rules as Redis, under one mutex,
//! timed by this process's clock.

use super::{
    Applied, Found, Joined, Place, PoolStore, RatingWrite, Standing, StoreError, mean_wait,
};
use crate::pool::{Entry, Follow, History, Making, Pairing, Waiting};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

/// How long a rated match id is remembered (against applying its ratings twice).
const RATED_MEMORY_MS: u64 = 30 * 86_400_000;
/// How long an unacknowledged match found is kept.
const FOUND_MEMORY_MS: u64 = 86_400_000;

#[derive(Debug)]
enum Who {
    Waiting {
        pool: String,
        session: u64,
    },
    /// Being matched; `gone` once the player's stream closed meanwhile (they are not put back
    /// into the pool if the match cannot be created).
    Making {
        pool: String,
        gone: bool,
    },
}

#[derive(Debug, Default)]
struct PoolState {
    /// The places, each with its lease (`Waiting::lease_until`).
    entries: HashMap<String, Waiting>,
    /// Positions as of the last wave (players who joined since count after them).
    positions: HashMap<String, u32>,
    lock_until: u64,
    fence: u64,
    making: BTreeMap<String, Making>,
    mean_wait: u64,
}

#[derive(Debug, Default)]
struct State {
    pools: HashMap<String, PoolState>,
    who: HashMap<String, Who>,
    /// Matches found, with when they expire.
    found: HashMap<String, Vec<(u64, Found)>>,
    history: HashMap<String, History>,
    ratings: HashMap<String, BTreeMap<String, String>>,
    /// Rated match ids, and the same ids in the order they expire.
    rated: HashMap<String, u64>,
    rated_order: std::collections::VecDeque<(u64, String)>,
    follows: HashMap<String, (u64, Follow)>,
    /// The last fencing number handed out, over every pool (so that a pool dropped when empty
    /// and opened again never reuses one).
    fences: u64,
}

impl State {
    /// `player`'s matches found that have not expired (dropping the others).
    fn found_now(&mut self, player: &str, now: u64) -> Vec<Found> {
        let Some(list) = self.found.get_mut(player) else {
            return Vec::new();
        };
        list.retain(|(until, _)| *until > now);
        let out = list.iter().map(|(_, f)| f.clone()).collect::<Vec<_>>();
        if out.is_empty() {
            self.found.remove(player);
        }
        out
    }

    /// Takes `player` out of `pool` (their place only; `who` is the caller's).
    fn remove(&mut self, pool: &str, player: &str) {
        if let Some(p) = self.pools.get_mut(pool) {
            p.entries.remove(player);
            p.positions.remove(player);
        }
    }
}

/// Pools and ratings in this process.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    state: Arc<Mutex<State>>,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent data (every step completes before
        // it writes), so a poisoned lock is still usable.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl PoolStore for MemoryStore {
    async fn now(&self) -> Result<u64, StoreError> {
        Ok(now_ms())
    }

    async fn join(
        &self,
        pool: &str,
        entry: &Entry,
        lease_ms: u64,
        (max_waiting, max_pools): (usize, usize),
    ) -> Result<Joined, StoreError> {
        let now = now_ms();
        let mut s = self.lock();
        if !s.found_now(&entry.player, now).is_empty() {
            return Ok(Joined::Found);
        }
        let old = match s.who.get(&entry.player) {
            Some(Who::Making { .. }) => return Ok(Joined::Matching),
            Some(Who::Waiting { pool: old, .. }) => Some(old.clone()),
            None => None,
        };
        // The limits first: a refused join changes nothing.
        if old.as_deref() != Some(pool) {
            let open = |p: &PoolState| !p.entries.is_empty() || !p.making.is_empty();
            let current = s.pools.get(pool);
            if current.is_some_and(|p| p.entries.len() >= max_waiting) {
                return Ok(Joined::Full);
            }
            if !current.is_some_and(open)
                && s.pools.values().filter(|p| open(p)).count() >= max_pools
            {
                return Ok(Joined::TooManyPools);
            }
        }
        let (mut joined_at, mut missed) = (now, 0);
        if let Some(old) = old {
            if old == pool
                && let Some(w) = s.pools.get(pool).and_then(|p| p.entries.get(&entry.player))
            {
                (joined_at, missed) = (w.joined_at, w.missed);
            }
            s.remove(&old, &entry.player);
        }
        let p = s.pools.entry(pool.to_owned()).or_default();
        let lease_until = now.saturating_add(lease_ms);
        let waiting = Waiting {
            entry: entry.clone(),
            joined_at,
            missed,
            lease_until,
        };
        p.entries.insert(entry.player.clone(), waiting);
        let count = p.entries.len();
        s.who.insert(
            entry.player.clone(),
            Who::Waiting {
                pool: pool.to_owned(),
                session: entry.session,
            },
        );
        Ok(Joined::Waiting { waiting: count })
    }

    async fn place(
        &self,
        pool: &str,
        player: &str,
        session: u64,
        lease_ms: u64,
    ) -> Result<Place, StoreError> {
        let now = now_ms();
        let mut s = self.lock();
        match s.who.get(player) {
            Some(Who::Waiting {
                pool: p,
                session: held,
            }) if p == pool && *held == session => {}
            Some(Who::Making { pool: p, .. }) if p == pool => return Ok(Place::Matching),
            _ => return Ok(Place::Gone),
        }
        let Some(p) = s.pools.get_mut(pool) else {
            return Ok(Place::Gone);
        };
        let waiting = p.entries.len();
        let position = p.positions.get(player).copied();
        let mean_wait_ms = p.mean_wait;
        let Some(w) = p.entries.get_mut(player) else {
            return Ok(Place::Gone);
        };
        w.lease_until = now.saturating_add(lease_ms);
        let count = u32::try_from(waiting).unwrap_or(u32::MAX);
        Ok(Place::Waiting(Standing {
            position: position.unwrap_or(count).min(count),
            waiting: count,
            missed: w.missed,
            mean_wait_ms,
        }))
    }

    async fn leave(&self, player: &str, session: Option<u64>) -> Result<bool, StoreError> {
        let mut s = self.lock();
        let pool = match s.who.get_mut(player) {
            Some(Who::Waiting {
                pool,
                session: held,
            }) if session.is_none_or(|wanted| wanted == *held) => pool.clone(),
            Some(Who::Making { gone, .. }) => {
                // Being matched: not put back into the pool if the match fails.
                *gone = true;
                return Ok(false);
            }
            _ => return Ok(false),
        };
        s.who.remove(player);
        s.remove(&pool, player);
        Ok(true)
    }

    async fn pools(&self) -> Result<Vec<String>, StoreError> {
        let mut s = self.lock();
        let now = now_ms();
        s.pools
            .retain(|_, p| !p.entries.is_empty() || !p.making.is_empty() || p.lock_until > now);
        let mut names: Vec<String> = s
            .pools
            .iter()
            .filter(|(_, p)| !p.entries.is_empty() || !p.making.is_empty())
            .map(|(n, _)| n.clone())
            .collect();
        names.sort_unstable();
        Ok(names)
    }

    async fn lock(&self, pool: &str, lease_ms: u64) -> Result<Option<u64>, StoreError> {
        let now = now_ms();
        let mut s = self.lock();
        s.fences += 1;
        let fence = s.fences;
        let p = s.pools.entry(pool.to_owned()).or_default();
        if p.lock_until > now {
            return Ok(None);
        }
        p.fence = fence;
        p.lock_until = now.saturating_add(lease_ms);
        Ok(Some(p.fence))
    }

    async fn unlock(&self, pool: &str, fence: u64) -> Result<(), StoreError> {
        let mut s = self.lock();
        if let Some(p) = s.pools.get_mut(pool)
            && p.fence == fence
        {
            p.lock_until = 0;
        }
        Ok(())
    }

    async fn waiting(&self, pool: &str) -> Result<Vec<Waiting>, StoreError> {
        let now = now_ms();
        let mut s = self.lock();
        let Some(p) = s.pools.get_mut(pool) else {
            return Ok(Vec::new());
        };
        let expired: Vec<String> = p
            .entries
            .iter()
            .filter(|(_, w)| w.lease_until <= now)
            .map(|(k, _)| k.clone())
            .collect();
        let mut live: Vec<Waiting> = p
            .entries
            .values()
            .filter(|w| w.lease_until > now)
            .cloned()
            .collect();
        live.sort_unstable_by(|a, b| {
            (a.joined_at, &a.entry.player).cmp(&(b.joined_at, &b.entry.player))
        });
        for player in expired {
            s.remove(pool, &player);
            if matches!(s.who.get(&player), Some(Who::Waiting { pool: p, .. }) if p == pool) {
                s.who.remove(&player);
            }
        }
        Ok(live)
    }

    async fn commit(
        &self,
        pool: &str,
        fence: u64,
        pairings: &[Pairing],
        unpaired: &[String],
    ) -> Result<Option<Vec<bool>>, StoreError> {
        let now = now_ms();
        let mut s = self.lock();
        let Some(p) = s.pools.get_mut(pool) else {
            return Ok(None);
        };
        if p.fence != fence || p.lock_until <= now {
            return Ok(None);
        }
        let mut done = Vec::with_capacity(pairings.len());
        let mut moved = Vec::new();
        for pairing in pairings {
            let all_there = pairing.members.iter().all(|m| p.entries.contains_key(m));
            if all_there && !p.making.contains_key(&pairing.id) {
                let members = pairing
                    .members
                    .iter()
                    .filter_map(|m| p.entries.remove(m))
                    .collect();
                p.making.insert(
                    pairing.id.clone(),
                    Making {
                        id: pairing.id.clone(),
                        members,
                        since: now,
                    },
                );
                moved.extend(pairing.members.iter().cloned());
                done.push(true);
            } else {
                done.push(false);
            }
        }
        for player in unpaired {
            if let Some(w) = p.entries.get_mut(player) {
                w.missed = w.missed.saturating_add(1);
            }
        }
        let mut order: Vec<(u64, String)> = p
            .entries
            .values()
            .map(|w| (w.joined_at, w.entry.player.clone()))
            .collect();
        order.sort_unstable();
        p.positions = order
            .into_iter()
            .enumerate()
            .map(|(i, (_, player))| (player, u32::try_from(i + 1).unwrap_or(u32::MAX)))
            .collect();
        for player in moved {
            s.who.insert(
                player,
                Who::Making {
                    pool: pool.to_owned(),
                    gone: false,
                },
            );
        }
        Ok(Some(done))
    }

    async fn making(&self, pool: &str) -> Result<Vec<Making>, StoreError> {
        let s = self.lock();
        Ok(s.pools
            .get(pool)
            .map(|p| p.making.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn matched(
        &self,
        pool: &str,
        pairing: &str,
        found: &[Found],
        histories: &[(String, History)],
        follow: &Follow,
    ) -> Result<bool, StoreError> {
        let now = now_ms();
        let mut s = self.lock();
        let Some(p) = s.pools.get_mut(pool) else {
            return Ok(false);
        };
        let Some(making) = p.making.remove(pairing) else {
            return Ok(false);
        };
        for m in &making.members {
            p.mean_wait = mean_wait(p.mean_wait, now.saturating_sub(m.joined_at));
        }
        for m in &making.members {
            if matches!(s.who.get(&m.entry.player), Some(Who::Making { pool: p, .. }) if p == pool)
            {
                s.who.remove(&m.entry.player);
            }
        }
        for f in found {
            s.found
                .entry(f.player.clone())
                .or_default()
                .push((now.saturating_add(FOUND_MEMORY_MS), f.clone()));
        }
        for (player, h) in histories {
            s.history.insert(player.clone(), h.clone());
        }
        s.follows
            .insert(follow.match_id.clone(), (now, follow.clone()));
        Ok(true)
    }

    async fn unmake(&self, pool: &str, pairing: &str) -> Result<bool, StoreError> {
        let mut s = self.lock();
        let Some(making) = s.pools.get_mut(pool).and_then(|p| p.making.remove(pairing)) else {
            return Ok(false);
        };
        for w in making.members {
            let player = w.entry.player.clone();
            match s.who.get(&player) {
                Some(Who::Making { pool: p, gone }) if p == pool => {
                    if *gone {
                        s.who.remove(&player);
                        continue;
                    }
                }
                _ => continue,
            }
            s.who.insert(
                player.clone(),
                Who::Waiting {
                    pool: pool.to_owned(),
                    session: w.entry.session,
                },
            );
            if let Some(p) = s.pools.get_mut(pool) {
                p.entries.insert(player, w);
            }
        }
        Ok(true)
    }

    async fn found(&self, player: &str) -> Result<Vec<Found>, StoreError> {
        Ok(self.lock().found_now(player, now_ms()))
    }

    async fn acknowledge(&self, player: &str, match_id: &str) -> Result<bool, StoreError> {
        let mut s = self.lock();
        let Some(list) = s.found.get_mut(player) else {
            return Ok(false);
        };
        let before = list.len();
        list.retain(|(_, f)| f.match_id != match_id);
        let removed = list.len() < before;
        if list.is_empty() {
            s.found.remove(player);
        }
        Ok(removed)
    }

    async fn history(&self, player: &str) -> Result<History, StoreError> {
        Ok(self.lock().history.get(player).cloned().unwrap_or_default())
    }

    async fn ratings(&self, player: &str) -> Result<Vec<(String, String)>, StoreError> {
        Ok(self
            .lock()
            .ratings
            .get(player)
            .map(|r| r.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default())
    }

    async fn claim_follows(&self, lease_ms: u64, max: usize) -> Result<Vec<Follow>, StoreError> {
        let now = now_ms();
        let mut s = self.lock();
        let mut out = Vec::new();
        for (until, follow) in s.follows.values_mut() {
            if out.len() >= max {
                break;
            }
            if *until <= now {
                *until = now.saturating_add(lease_ms);
                out.push(follow.clone());
            }
        }
        Ok(out)
    }

    async fn renew_follows(&self, match_ids: &[String], lease_ms: u64) -> Result<(), StoreError> {
        let now = now_ms();
        let mut s = self.lock();
        for id in match_ids {
            if let Some((until, _)) = s.follows.get_mut(id) {
                *until = now.saturating_add(lease_ms);
            }
        }
        Ok(())
    }

    async fn apply_ratings(
        &self,
        match_id: &str,
        writes: &[RatingWrite],
    ) -> Result<Applied, StoreError> {
        let now = now_ms();
        let mut s = self.lock();
        if s.rated.get(match_id).is_some_and(|&until| until > now) {
            s.follows.remove(match_id);
            return Ok(Applied::Already);
        }
        for w in writes {
            let current = s.ratings.get(&w.player).and_then(|r| r.get(&w.key));
            if current != w.old.as_ref() {
                return Ok(Applied::Conflict);
            }
        }
        for w in writes {
            s.ratings
                .entry(w.player.clone())
                .or_default()
                .insert(w.key.clone(), w.new.clone());
        }
        while s
            .rated_order
            .front()
            .is_some_and(|(until, _)| *until <= now)
        {
            if let Some((_, id)) = s.rated_order.pop_front() {
                s.rated.remove(&id);
            }
        }
        let until = now.saturating_add(RATED_MEMORY_MS);
        s.rated.insert(match_id.to_owned(), until);
        s.rated_order.push_back((until, match_id.to_owned()));
        s.follows.remove(match_id);
        Ok(Applied::Done)
    }

    async fn announce(&self, _players: &[String], _pool: Option<&str>) -> Result<(), StoreError> {
        // One process: the domain wakes its own streams.
        Ok(())
    }

    async fn probe(&self) -> Result<(), StoreError> {
        Ok(())
    }
}
