//! The in-process store of the embedded default: the same rules as Redis, under one mutex,
//! timed by this process's clock.

use super::{
    Applied, Found, IMPORT_MEMORY_MS, ImportWrite, Imported, Joined, OFFER_MEMORY_MS, OfferStore,
    Place, PoolStore, RECENT_CHALLENGES, RatingWrite, Standing, StoreError, mean_wait,
};
use crate::offer::{
    Accepting, Created, DeclineReason, Ended, NewOffer, Offer, OfferKind, OfferLimits, OfferState,
};
use crate::pool::{Entry, Follow, History, Making, Pairing, Waiting};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
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
    /// An offer's accept under way (out of every pool): while the offer is accepting (an
    /// accept is finished, resumed or released, never lapses), else until `until`.
    Offer {
        id: String,
        until: u64,
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
    /// Rating histories by (player, key): (sequence number, change), oldest first.
    rating_log: HashMap<(String, String), VecDeque<(u64, String)>>,
    /// Imports by request id: when they may be forgotten, fingerprint, outcomes; and the ids in
    /// the order they expire.
    imports: HashMap<String, (u64, String, String)>,
    import_order: VecDeque<(u64, String)>,
    follows: HashMap<String, (u64, Follow)>,
    /// The last fencing number handed out, over every pool (so that a pool dropped when empty
    /// and opened again never reuses one).
    fences: u64,
    /// Challenges and seeks by id.
    offers: HashMap<String, Offer>,
    /// Creations by (owner, kind, request id): the fingerprint and the offer's id.
    offer_requests: HashMap<(String, OfferKind, String), (String, String)>,
    /// Open offers by kind and owner; pending challenges by challenged player (may hold
    /// offers no longer open: pruned when counted).
    open_out: HashMap<(OfferKind, String), BTreeSet<String>>,
    open_in: HashMap<String, BTreeSet<String>>,
    /// The lobby: open seeks by expiry.
    lobby: BTreeSet<(u64, String)>,
    /// Each player's recent challenges, oldest first.
    recent: HashMap<String, VecDeque<String>>,
    /// When each offer (and its creation's request id) may be forgotten, in order of filing.
    forget: VecDeque<(u64, String, (String, OfferKind, String))>,
    /// Offers created by kind and owner in the current window: when it ends, how many.
    created: HashMap<(OfferKind, String), (u64, usize)>,
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

impl State {
    /// Forgets offers whose time has come (an offer still open or accepting is kept on).
    fn forget_offers(&mut self, now: u64) {
        while let Some((at, _, _)) = self.forget.front() {
            if *at > now {
                break;
            }
            let Some((_, id, request)) = self.forget.pop_front() else {
                break;
            };
            let keep = self.offers.get(&id).and_then(|o| {
                let until = match o.state_at(now) {
                    OfferState::Open => o.expires_at,
                    _ => o.updated_at.max(o.expires_at),
                }
                .saturating_add(OFFER_MEMORY_MS);
                (until > now).then_some(until)
            });
            match keep {
                Some(until) => self.forget.push_back((until, id, request)),
                None => {
                    if let Some(o) = self.offers.remove(&id) {
                        self.unlist(&o);
                        for p in std::iter::once(&o.owner).chain(o.target.as_ref()) {
                            if let Some(r) = self.recent.get_mut(p) {
                                r.retain(|x| *x != id);
                                if r.is_empty() {
                                    self.recent.remove(p);
                                }
                            }
                        }
                    }
                    self.offer_requests.remove(&request);
                }
            }
        }
    }

    /// Takes an offer out of the open sets and the lobby.
    fn unlist(&mut self, o: &Offer) {
        let key = (o.kind, o.owner.clone());
        if let Some(set) = self.open_out.get_mut(&key) {
            set.remove(&o.id);
            if set.is_empty() {
                self.open_out.remove(&key);
            }
        }
        if let Some(t) = &o.target
            && let Some(set) = self.open_in.get_mut(t)
        {
            set.remove(&o.id);
            if set.is_empty() {
                self.open_in.remove(t);
            }
        }
        self.lobby.remove(&(o.expires_at, o.id.clone()));
    }

    /// Puts an open offer into the open sets (and a seek into the lobby).
    fn list(&mut self, o: &Offer) {
        self.open_out
            .entry((o.kind, o.owner.clone()))
            .or_default()
            .insert(o.id.clone());
        if let Some(t) = &o.target {
            self.open_in
                .entry(t.clone())
                .or_default()
                .insert(o.id.clone());
        }
        if o.kind == OfferKind::Seek {
            self.lobby.insert((o.expires_at, o.id.clone()));
        }
    }

    /// The open offers among `ids`, expired ones dropped from every set.
    fn count_open(&mut self, ids: Option<&BTreeSet<String>>, now: u64) -> usize {
        let ids: Vec<String> = ids.map(|s| s.iter().cloned().collect()).unwrap_or_default();
        let mut open = 0;
        for id in ids {
            match self.offers.get(&id).cloned() {
                Some(o) if o.state_at(now) == OfferState::Open => open += 1,
                Some(o) => self.unlist(&o),
                None => {}
            }
        }
        open
    }

    fn prune_lobby(&mut self, now: u64) {
        while let Some((x, id)) = self.lobby.first().cloned() {
            if x > now {
                break;
            }
            match self.offers.get(&id).cloned() {
                Some(o) => self.unlist(&o),
                None => {
                    self.lobby.remove(&(x, id));
                }
            }
        }
    }

    /// Records `change` in `player`'s history for `key`, keeping the latest `limit`.
    fn record_change(&mut self, player: &str, key: &str, change: &str, limit: usize) {
        let log = self
            .rating_log
            .entry((player.to_owned(), key.to_owned()))
            .or_default();
        let seq = log.back().map_or(1, |(seq, _)| seq.saturating_add(1));
        log.push_back((seq, change.to_owned()));
        while log.len() > limit.max(1) {
            log.pop_front();
        }
    }

    /// Adds challenge `id` to `player`'s recent ones; past [`RECENT_CHALLENGES`], ended ones
    /// go first (oldest first), so that ended ones never push a pending one out, then the
    /// oldest.
    fn remember(&mut self, player: &str, id: &str, now: u64) {
        let offers = &self.offers;
        let r = self.recent.entry(player.to_owned()).or_default();
        r.push_back(id.to_owned());
        while r.len() > RECENT_CHALLENGES {
            let ended = r.iter().position(|x| {
                offers.get(x).is_none_or(|o| {
                    !matches!(o.state_at(now), OfferState::Open | OfferState::Accepting)
                })
            });
            match ended {
                Some(i) => {
                    r.remove(i);
                }
                None => {
                    r.pop_front();
                }
            }
        }
    }

    /// Whether `player` may not take part in an accept of offer `id`: an unacknowledged match
    /// found, a pool pairing being made, or another offer's accept under way.
    fn busy(&mut self, player: &str, id: &str, now: u64) -> bool {
        if !self.found_now(player, now).is_empty() {
            return true;
        }
        match self.who.get(player) {
            Some(Who::Making { .. }) => true,
            Some(Who::Offer { id: other, until }) => other != id && self.held(other, *until, now),
            Some(Who::Waiting { .. }) | None => false,
        }
    }

    /// Whether a mark of offer `id` set until `until` still holds at `now`: the offer is
    /// accepting, or `until` is ahead.
    fn held(&self, id: &str, until: u64, now: u64) -> bool {
        until > now
            || self
                .offers
                .get(id)
                .is_some_and(|o| o.state == OfferState::Accepting)
    }

    /// A heartbeat of offer `o`'s accept under way at `now` (its last change, the stale
    /// time's start): its players' marks (those still its own) are renewed until `until`.
    fn beat(&mut self, o: &mut Offer, now: u64, until: u64) {
        o.updated_at = now;
        for p in [Some(&o.owner), o.acceptor.as_ref()].into_iter().flatten() {
            if let Some(Who::Offer { id, until: held }) = self.who.get_mut(p)
                && *id == o.id
            {
                *held = until;
            }
        }
    }

    /// Takes `player` out of any pool and marks them matched by offer `id` until `until`.
    fn claim(&mut self, player: &str, id: &str, until: u64) {
        if let Some(Who::Waiting { pool, .. }) = self.who.get(player) {
            let pool = pool.clone();
            self.remove(&pool, player);
        }
        self.who.insert(
            player.to_owned(),
            Who::Offer {
                id: id.to_owned(),
                until,
            },
        );
    }

    /// Clears `player`'s mark if offer `id`'s accept set it.
    fn unclaim(&mut self, player: Option<&String>, id: &str) {
        if let Some(p) = player
            && matches!(self.who.get(p), Some(Who::Offer { id: other, .. }) if other == id)
        {
            self.who.remove(p);
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
            Some(Who::Offer { id, until }) if s.held(id, *until, now) => {
                return Ok(Joined::Matching);
            }
            Some(Who::Waiting { pool: old, .. }) => Some(old.clone()),
            Some(Who::Offer { .. }) | None => None,
        };
        // The limits first: too many pools changes nothing; a full pool costs the player their
        // place in another pool (as in Redis, where the join gives it up before it meets the
        // full pool).
        if old.as_deref() != Some(pool) {
            let open = |p: &PoolState| !p.entries.is_empty() || !p.making.is_empty();
            let current = s.pools.get(pool);
            let full = current.is_some_and(|p| p.entries.len() >= max_waiting);
            if !full
                && !current.is_some_and(open)
                && s.pools.values().filter(|p| open(p)).count() >= max_pools
            {
                return Ok(Joined::TooManyPools);
            }
            if full {
                if let Some(old) = old {
                    s.remove(&old, &entry.player);
                    s.who.remove(&entry.player);
                }
                return Ok(Joined::Full);
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
            // An offer's accept took the player out of the pool: the stream waits for it.
            Some(Who::Offer { id, until }) if s.held(id, *until, now) => {
                return Ok(Place::Matching);
            }
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
        history_limit: usize,
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
            s.record_change(&w.player, &w.key, &w.change, history_limit);
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

    async fn import_ratings(
        &self,
        request: &str,
        fingerprint: &str,
        outcomes: &str,
        writes: &[ImportWrite],
        history_limit: usize,
    ) -> Result<Imported, StoreError> {
        let now = now_ms();
        let mut s = self.lock();
        while s
            .import_order
            .front()
            .is_some_and(|(until, _)| *until <= now)
        {
            if let Some((_, id)) = s.import_order.pop_front() {
                s.imports.remove(&id);
            }
        }
        if let Some((_, fingerprint, outcomes)) = s.imports.get(request) {
            return Ok(Imported::Replayed {
                fingerprint: fingerprint.clone(),
                outcomes: outcomes.clone(),
            });
        }
        for w in writes {
            let current = s.ratings.get(&w.player).and_then(|r| r.get(&w.key));
            if current != w.old.as_ref() {
                return Ok(Imported::Conflict);
            }
        }
        for w in writes {
            if let Some((record, change)) = &w.new {
                s.ratings
                    .entry(w.player.clone())
                    .or_default()
                    .insert(w.key.clone(), record.clone());
                s.record_change(&w.player, &w.key, change, history_limit);
            }
        }
        let until = now.saturating_add(IMPORT_MEMORY_MS);
        s.imports.insert(
            request.to_owned(),
            (until, fingerprint.to_owned(), outcomes.to_owned()),
        );
        s.import_order.push_back((until, request.to_owned()));
        Ok(Imported::Done)
    }

    async fn rating_history(
        &self,
        player: &str,
        key: &str,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        Ok(self
            .lock()
            .rating_log
            .get(&(player.to_owned(), key.to_owned()))
            .map(|log| log.iter().cloned().collect())
            .unwrap_or_default())
    }

    async fn announce(&self, _players: &[String], _pool: Option<&str>) -> Result<(), StoreError> {
        // One process: the domain wakes its own streams.
        Ok(())
    }

    async fn probe(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

impl OfferStore for MemoryStore {
    async fn create_offer(
        &self,
        offer: &NewOffer,
        limits: OfferLimits,
    ) -> Result<Created, StoreError> {
        let now = now_ms();
        let mut s = self.lock();
        s.forget_offers(now);
        let request = (offer.owner.clone(), offer.kind, offer.request_id.clone());
        if let Some((fingerprint, id)) = s.offer_requests.get(&request) {
            if *fingerprint != offer.fingerprint() {
                return Ok(Created::Conflict);
            }
            return Ok(match s.offers.get(id) {
                Some(o) => Created::Existing(o.clone()),
                None => Created::Conflict,
            });
        }
        let window = (offer.kind, offer.owner.clone());
        if s.created.len() > 10_000 {
            s.created.retain(|_, (until, _)| *until > now);
        }
        let made = match s.created.get(&window) {
            Some((until, n)) if *until > now => *n,
            _ => 0,
        };
        if made >= limits.created {
            return Ok(Created::OwnerRate);
        }
        let out = s.open_out.get(&(offer.kind, offer.owner.clone())).cloned();
        if s.count_open(out.as_ref(), now) >= limits.per_owner {
            return Ok(Created::OwnerFull);
        }
        match (&offer.target, offer.kind) {
            (Some(t), OfferKind::Challenge) => {
                let incoming = s.open_in.get(t).cloned();
                if s.count_open(incoming.as_ref(), now) >= limits.per_target {
                    return Ok(Created::TargetFull);
                }
            }
            _ => {
                s.prune_lobby(now);
                if s.lobby.len() >= limits.total {
                    return Ok(Created::LobbyFull);
                }
            }
        }
        let until = match s.created.get(&window) {
            Some((until, _)) if *until > now => *until,
            _ => now.saturating_add(limits.window_ms),
        };
        s.created.insert(window, (until, made.saturating_add(1)));
        let filed = offer.filed(now);
        s.list(&filed);
        s.offers.insert(filed.id.clone(), filed.clone());
        if filed.kind == OfferKind::Challenge {
            s.remember(&filed.owner, &filed.id, now);
            if let Some(t) = &filed.target {
                s.remember(t, &filed.id, now);
            }
        }
        s.offer_requests
            .insert(request.clone(), (offer.fingerprint(), filed.id.clone()));
        s.forget.push_back((
            filed.expires_at.saturating_add(OFFER_MEMORY_MS),
            filed.id.clone(),
            request,
        ));
        Ok(Created::New(filed))
    }

    async fn offer(&self, id: &str) -> Result<Option<Offer>, StoreError> {
        Ok(self.lock().offers.get(id).cloned())
    }

    async fn begin_accept(
        &self,
        id: &str,
        acceptor: &str,
        request: &str,
        stale_ms: u64,
    ) -> Result<Accepting, StoreError> {
        let now = now_ms();
        let mut s = self.lock();
        let Some(o) = s.offers.get(id).cloned() else {
            return Ok(Accepting::Missing);
        };
        let mine =
            o.acceptor.as_deref() == Some(acceptor) && o.accept_request.as_deref() == Some(request);
        let until = now.saturating_add(stale_ms);
        let mut o = o;
        if o.state == OfferState::Accepting
            && (mine || now.saturating_sub(o.updated_at) >= stale_ms)
        {
            // A heartbeat of the accept under way; a stale one is resumed, never replaced.
            s.beat(&mut o, now, until);
            s.offers.insert(id.to_owned(), o.clone());
            return Ok(if mine {
                Accepting::Again(o)
            } else {
                Accepting::Resumed(o)
            });
        }
        if o.state == OfferState::Accepted && mine {
            return Ok(Accepting::Again(o));
        }
        if acceptor.is_empty() || o.state_at(now) != OfferState::Open {
            return Ok(Accepting::NotOpen(o));
        }
        for p in [o.owner.as_str(), acceptor] {
            if s.busy(p, id, now) {
                return Ok(Accepting::Busy(p.to_owned()));
            }
        }
        // Committed as a pool pairing is: both players leave their pools and are marked
        // matched.
        s.unlist(&o);
        s.claim(&o.owner, id, until);
        s.claim(acceptor, id, until);
        o.state = OfferState::Accepting;
        o.acceptor = Some(acceptor.to_owned());
        o.accept_request = Some(request.to_owned());
        o.updated_at = now;
        s.offers.insert(id.to_owned(), o.clone());
        Ok(Accepting::Started(o))
    }

    async fn finish_accept(
        &self,
        id: &str,
        request: &str,
        found: &[Found],
        follow: &Follow,
    ) -> Result<Option<(Offer, bool)>, StoreError> {
        let now = now_ms();
        let mut s = self.lock();
        let Some(o) = s.offers.get(id).cloned() else {
            return Ok(None);
        };
        if o.state != OfferState::Accepting || o.accept_request.as_deref() != Some(request) {
            return Ok(Some((o, false)));
        }
        let mut o = o;
        o.state = OfferState::Accepted;
        o.match_id = Some(follow.match_id.clone());
        o.found = found
            .iter()
            .find(|f| o.acceptor.as_ref() == Some(&f.player))
            .map(|f| f.found.clone());
        o.updated_at = now;
        s.unclaim(Some(&o.owner), id);
        s.unclaim(o.acceptor.as_ref(), id);
        s.offers.insert(id.to_owned(), o.clone());
        for f in found {
            s.found
                .entry(f.player.clone())
                .or_default()
                .push((now.saturating_add(FOUND_MEMORY_MS), f.clone()));
        }
        s.follows
            .insert(follow.match_id.clone(), (now, follow.clone()));
        Ok(Some((o, true)))
    }

    async fn stale_accepts(&self, stale_ms: u64) -> Result<Vec<String>, StoreError> {
        let now = now_ms();
        let s = self.lock();
        let mut stale: Vec<(u64, String)> = s
            .offers
            .values()
            .filter(|o| {
                o.state == OfferState::Accepting && now.saturating_sub(o.updated_at) >= stale_ms
            })
            .map(|o| (o.updated_at, o.id.clone()))
            .collect();
        stale.sort_unstable();
        Ok(stale.into_iter().map(|(_, id)| id).collect())
    }

    async fn release_accept(&self, id: &str, request: &str) -> Result<bool, StoreError> {
        let now = now_ms();
        let mut s = self.lock();
        let Some(o) = s.offers.get(id).cloned() else {
            return Ok(false);
        };
        if o.state != OfferState::Accepting || o.accept_request.as_deref() != Some(request) {
            return Ok(false);
        }
        s.unclaim(Some(&o.owner), id);
        s.unclaim(o.acceptor.as_ref(), id);
        let mut o = o;
        o.state = OfferState::Open;
        o.acceptor = None;
        o.accept_request = None;
        o.updated_at = now;
        if now < o.expires_at {
            s.list(&o);
        }
        s.offers.insert(id.to_owned(), o);
        Ok(true)
    }

    async fn end_offer(
        &self,
        id: &str,
        player: &str,
        by_owner: bool,
        state: OfferState,
        reason: u8,
    ) -> Result<Ended, StoreError> {
        let now = now_ms();
        let mut s = self.lock();
        let Some(o) = s.offers.get(id).cloned() else {
            return Ok(Ended::Missing);
        };
        let who = if by_owner {
            Some(&o.owner)
        } else {
            o.target.as_ref()
        };
        if who.map(String::as_str) != Some(player) {
            return Ok(Ended::NotYours(o));
        }
        if o.state == state {
            return Ok(Ended::Done(o));
        }
        if o.state_at(now) != OfferState::Open {
            return Ok(Ended::NotOpen(o));
        }
        s.unlist(&o);
        let mut o = o;
        o.state = state;
        o.reason = DeclineReason::from_code(reason);
        o.updated_at = now;
        s.offers.insert(id.to_owned(), o.clone());
        Ok(Ended::Done(o))
    }

    async fn challenges_of(&self, player: &str) -> Result<Vec<Offer>, StoreError> {
        let s = self.lock();
        Ok(s.recent
            .get(player)
            .map(|r| {
                r.iter()
                    .filter_map(|id| s.offers.get(id).cloned())
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn seeks(
        &self,
        variant: Option<arbiter_core::Variant>,
    ) -> Result<Vec<Offer>, StoreError> {
        let now = now_ms();
        let s = self.lock();
        Ok(s.lobby
            .iter()
            .filter(|(x, _)| *x > now)
            .filter_map(|(_, id)| s.offers.get(id))
            .filter(|o| variant.is_none_or(|v| o.terms.variant == v))
            .cloned()
            .collect())
    }
}
