//! A store's deadline index and time base, kept in this process ([`MemoryDeadlines`]) or in
//! Redis ([`RedisDeadlines`]), and read through one handle ([`Deadlines`]) by the flag worker
//! and the services' domains.
//!
//! The index files each running game (a match, a clock) at its earliest deadline. A store files
//! a game in the same step as the change that moved its deadline (in process, under the store's
//! own lock; in Redis, inside the change's script through the Lua of [`crate::lua`]); what is
//! here reads the index, claims what is due, and files a game again when a claim found it not
//! due.

use crate::index::{Claimed, DeadlineIndex};
use crate::lua;
use arbiter_core::clock::MAX_REMAINING_MS;
use arbiter_kit::process_now;
use arbiter_redis_conn::script::{BASICS, redis_now};
use arbiter_redis_conn::slots::SlotGroups;
use arbiter_redis_conn::{Connection, Subscriber};
use redis::Script;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::Notify;

/// The index or the store's time cannot be reached; nothing was changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable(pub String);

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unavailable {}

fn unavailable(e: redis::RedisError) -> Unavailable {
    Unavailable(e.to_string())
}

/// A deadline index in this process, with this process's clock as the time base.
#[derive(Debug, Default)]
pub struct MemoryDeadlines {
    index: Mutex<DeadlineIndex>,
    changed: Arc<Notify>,
}

impl MemoryDeadlines {
    /// An empty index.
    pub fn new() -> MemoryDeadlines {
        MemoryDeadlines::default()
    }

    /// Files game `id` at `deadline` (`None`: out of the index), waking the flag worker when it
    /// is a new earliest deadline. A store calls it in the same step as the change that moved
    /// the deadline (under its own lock: the index's lock is always taken second).
    pub fn file(&self, id: &str, deadline: Option<u64>) {
        if self.index.lock().expect("not poisoned").set(id, deadline) {
            self.changed.notify_one();
        }
    }

    /// How many games are filed.
    pub fn len(&self) -> usize {
        self.index.lock().expect("not poisoned").len()
    }

    /// Whether no game is filed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where a Redis deadline index lives.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RedisNames {
    /// The sorted set of running games by earliest deadline (Unix ms).
    pub index: &'static str,
    /// The channel on which a new earliest deadline is announced, by any replica.
    pub channel: &'static str,
}

impl RedisNames {
    /// The Lua a store's scripts start with: the definitions the clock helpers need
    /// ([`lua::header`]; `grouped` for a store laid out by slot groups), [`BASICS`] and
    /// [`lua::CLOCKS`]. A script body follows.
    pub fn prelude(self, grouped: bool) -> String {
        format!(
            "{}{BASICS}{}",
            lua::header(self.index, self.channel, MAX_REMAINING_MS, grouped),
            lua::CLOCKS
        )
    }

    /// The scripts of the index itself ([`lua::CLAIM`], [`lua::REINDEX`]), for a connection to
    /// load ahead of use.
    pub fn scripts(self, grouped: bool) -> [Script; 2] {
        let prelude = self.prelude(grouped);
        [
            Script::new(&format!("{prelude}{}", lua::CLAIM)),
            Script::new(&format!("{prelude}{}", lua::REINDEX)),
        ]
    }
}

/// A deadline index in Redis (a sorted set), with Redis `TIME` as the time base: shared by every
/// replica of a service. On a store laid out by slot groups (a cluster), one sorted set per group
/// (`<index>:{<group tag>}`, in the slot of the group's games), read together.
pub struct RedisDeadlines {
    conn: Arc<OnceLock<Connection>>,
    names: RedisNames,
    /// The index keys: one, or one per slot group.
    keys: Vec<String>,
    groups: Option<Arc<SlotGroups>>,
    claim: Script,
    reindex: Script,
    changed: Arc<Notify>,
    /// Each key's earliest deadline at the last [`Deadlines::next`], and when it was read, so
    /// that a claim right after asks only the keys that may hold something due.
    heads: Mutex<(Vec<Head>, Option<HeadsRead>)>,
}

/// When the heads were read: this process's instant, and the store's time then (Unix ms).
#[derive(Clone, Copy, Debug)]
struct HeadsRead {
    at: std::time::Instant,
    store_now: u64,
}

/// How long the heads a read found may steer a claim: the flag worker claims within
/// [`crate::MAX_FLAG_SLEEP`] of its read (a new earlier deadline wakes it to read again).
const HEADS_FRESH: std::time::Duration = std::time::Duration::from_secs(2);

/// What the last read of an index key's head found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Head {
    /// Not read, or the read failed: the key may hold anything.
    Unknown,
    /// The key was empty.
    Empty,
    /// The key's earliest deadline (Unix ms).
    At(u64),
}

impl std::fmt::Debug for RedisDeadlines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisDeadlines")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

impl RedisDeadlines {
    /// The index at `names`, reached through the store's connection `conn` (set once the store
    /// first connects; calls fail with [`Unavailable`] until then); one per group of `groups`
    /// for a store laid out by slot groups.
    pub fn new(
        conn: Arc<OnceLock<Connection>>,
        names: RedisNames,
        groups: Option<Arc<SlotGroups>>,
    ) -> RedisDeadlines {
        let [claim, reindex] = names.scripts(groups.is_some());
        let keys = match &groups {
            None => vec![names.index.to_owned()],
            Some(g) => g
                .tags()
                .map(|t| format!("{}:{{{t}}}", names.index))
                .collect(),
        };
        let heads = Mutex::new((vec![Head::Unknown; keys.len()], None));
        RedisDeadlines {
            conn,
            names,
            keys,
            groups,
            heads,
            claim,
            reindex,
            changed: Arc::new(Notify::new()),
        }
    }

    /// Where the index lives.
    pub fn names(&self) -> RedisNames {
        self.names
    }

    /// The index keys: one, or one per slot group.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// The index key game `id` is filed under.
    pub fn key_of(&self, id: &str) -> &str {
        match &self.groups {
            None => &self.keys[0],
            Some(g) => &self.keys[g.group_of(id)],
        }
    }

    fn conn(&self) -> Result<Connection, Unavailable> {
        self.conn
            .get()
            .cloned()
            .ok_or_else(|| Unavailable("not connected to Redis yet".into()))
    }

    /// Listens for the new earliest deadlines any replica announces and wakes this process's
    /// flag worker, until `shutdown` (see [`crate::listen_for_deadlines`]).
    pub fn listen(
        &self,
        subscriber: Subscriber,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        crate::listen_for_deadlines(
            subscriber,
            self.names.channel,
            Arc::clone(&self.changed),
            shutdown,
        )
    }

    /// Claims from the index keys at once (up to `max` from each): of several keys, those whose
    /// head at the [`Deadlines::next`] just before is due now (by the store's time then plus
    /// what has passed since; the flag worker reads the heads before each claim, and a new
    /// earlier deadline anywhere wakes it to read them again), or every key when no read came
    /// since the last claim. On several keys (several nodes, maybe) the earliest of their times is the
    /// claim's `now`, so that no deadline is mapped early onto the caller's clock. A key that
    /// cannot be reached (its node failing over) does not hold back what the others gave, which
    /// is claimed already; only when none answers is the claim an error.
    async fn claim(&self, ahead: u64, lease: u64, max: usize) -> Result<Claimed, Unavailable> {
        let conn = self.conn()?;
        let wanted: Vec<&String> = {
            // The heads serve one claim only, soon after their read: otherwise every key is
            // asked.
            let (heads, read) = std::mem::replace(
                &mut *self.heads.lock().expect("not poisoned"),
                (vec![Head::Unknown; self.keys.len()], None),
            );
            let (heads, read) = match read {
                Some(r) if r.at.elapsed() <= HEADS_FRESH => (heads, Some(r)),
                _ => (vec![Head::Unknown; self.keys.len()], None),
            };
            let earliest = heads
                .iter()
                .filter_map(|h| match h {
                    Head::At(at) => Some(*at),
                    _ => None,
                })
                .min();
            // Due now, as far as the read can tell: the store's time then plus what has passed
            // since (or the earliest head, when the worker woke for it a little early), and
            // `ahead` of that, as the claim script counts.
            let cutoff = earliest.zip(read).map(|(first, r)| {
                let since = u64::try_from(r.at.elapsed().as_millis()).unwrap_or(u64::MAX);
                first
                    .max(r.store_now.saturating_add(since))
                    .saturating_add(ahead)
            });
            self.keys
                .iter()
                .zip(heads.iter())
                .filter(|(_, h)| {
                    self.keys.len() == 1
                        || match (h, cutoff) {
                            (Head::Unknown, _) | (Head::At(_), None) => true,
                            (Head::Empty, _) => false,
                            (Head::At(at), Some(c)) => *at <= c,
                        }
                })
                .map(|(k, _)| k)
                .collect()
        };
        // Every key empty at the read: ask them all (new games may have come since).
        let wanted = if wanted.is_empty() {
            self.keys.iter().collect()
        } else {
            wanted
        };
        let claims = wanted.into_iter().map(|key| {
            let mut conn = conn.clone();
            async move { self.claim_one(&mut conn, key, ahead, lease, max).await }
        });
        let mut all: Option<Claimed> = None;
        let mut failed = None;
        for claimed in futures_util::future::join_all(claims).await {
            match claimed {
                Ok(c) => {
                    let all = all.get_or_insert(Claimed {
                        now: c.now,
                        due: Vec::new(),
                    });
                    all.now = all.now.min(c.now);
                    all.due.extend(c.due);
                }
                Err(e) => failed = Some(e),
            }
        }
        match (all, failed) {
            (Some(mut all), failed) => {
                if let Some(e) = failed {
                    tracing::debug!(error = %e, "a deadline index could not be claimed from");
                }
                all.due.sort_by_key(|(_, at)| *at);
                Ok(all)
            }
            (None, Some(e)) => Err(e),
            (None, None) => Err(Unavailable("no deadline index".into())),
        }
    }

    async fn claim_one(
        &self,
        conn: &mut Connection,
        key: &str,
        ahead: u64,
        lease: u64,
        max: usize,
    ) -> Result<Claimed, Unavailable> {
        let reply: Vec<String> = self
            .claim
            .key(key)
            .arg(lease)
            .arg(max)
            .arg(ahead)
            .invoke_async(conn)
            .await
            .map_err(unavailable)?;
        let malformed = || Unavailable("malformed claim reply".into());
        let mut items = reply.into_iter();
        let now = items
            .next()
            .and_then(|n| n.parse().ok())
            .ok_or_else(malformed)?;
        let mut due = Vec::new();
        while let Some(id) = items.next() {
            let at = items
                .next()
                .and_then(|a| a.parse().ok())
                .ok_or_else(malformed)?;
            due.push((id, at));
        }
        Ok(Claimed { now, due })
    }
}

/// A store's deadline index and time base, wherever the store keeps them: what the flag worker
/// runs on, and what a domain reads the store's time from.
#[derive(Copy, Clone, Debug)]
pub enum Deadlines<'a> {
    /// In this process.
    Memory(&'a MemoryDeadlines),
    /// In Redis.
    Redis(&'a RedisDeadlines),
}

impl Deadlines<'_> {
    /// The store's time in Unix ms: the time base of every clock (Redis `TIME`, or this
    /// process's clock).
    pub async fn now(self) -> Result<u64, Unavailable> {
        match self {
            Deadlines::Memory(_) => Ok(process_now()),
            Deadlines::Redis(r) => redis_now(&mut r.conn()?).await.map_err(unavailable),
        }
    }

    /// The earliest deadline filed, with the store's time now (read together).
    pub async fn next(self) -> Result<(Option<u64>, u64), Unavailable> {
        match self {
            Deadlines::Memory(m) => {
                let first = m.index.lock().expect("not poisoned").first();
                Ok((first, process_now()))
            }
            Deadlines::Redis(r) => {
                let conn = r.conn()?;
                // Each key's head with its node's time (one round trip per key, all at once);
                // the earliest time is the answer's, so the wait computed from it is never
                // short on any node.
                let heads = r.keys.iter().map(|key| {
                    let mut conn = conn.clone();
                    async move {
                        let ((secs, micros), first): ((u64, u64), Vec<(String, f64)>) =
                            redis::pipe()
                                .cmd("TIME")
                                .zrange_withscores(key, 0, 0)
                                .query_async(&mut conn)
                                .await?;
                        // Scores are whole milliseconds, exact in a double.
                        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                        let next = first.first().map(|(_, at)| *at as u64);
                        Ok::<_, redis::RedisError>((next, secs * 1000 + micros / 1000))
                    }
                });
                // A key that cannot be read (its node failing over) is left out: the worker
                // reads again within MAX_FLAG_SLEEP whatever it waits for.
                let mut answer: Option<(Option<u64>, u64)> = None;
                let mut failed = None;
                let read = futures_util::future::join_all(heads).await;
                let store_now = read
                    .iter()
                    .filter_map(|h| h.as_ref().ok().map(|(_, now)| *now))
                    .min();
                *r.heads.lock().expect("not poisoned") = (
                    read.iter()
                        .map(|head| match head {
                            Ok((Some(at), _)) => Head::At(*at),
                            Ok((None, _)) => Head::Empty,
                            Err(_) => Head::Unknown,
                        })
                        .collect(),
                    store_now.map(|store_now| HeadsRead {
                        at: std::time::Instant::now(),
                        store_now,
                    }),
                );
                for head in read {
                    match head {
                        Ok((next, now)) => {
                            let (first, at) = answer.get_or_insert((None, now));
                            *first = match (*first, next) {
                                (Some(a), Some(b)) => Some(std::cmp::min(a, b)),
                                (a, b) => a.or(b),
                            };
                            *at = (*at).min(now);
                        }
                        Err(e) => failed = Some(e),
                    }
                }
                match (answer, failed) {
                    (Some(answer), _) => Ok(answer),
                    (None, Some(e)) => Err(unavailable(e)),
                    (None, None) => Err(Unavailable("no deadline index".into())),
                }
            }
        }
    }

    /// Games filed in the index: those with a running clock (and, briefly, some just over).
    pub async fn filed(self) -> Result<usize, Unavailable> {
        match self {
            Deadlines::Memory(m) => Ok(m.len()),
            Deadlines::Redis(r) => {
                let conn = r.conn()?;
                let counts = r.keys.iter().map(|key| {
                    let mut conn = conn.clone();
                    async move {
                        redis::cmd("ZCARD")
                            .arg(key)
                            .query_async::<usize>(&mut conn)
                            .await
                    }
                });
                let mut total = 0;
                for n in futures_util::future::join_all(counts).await {
                    total += n.map_err(unavailable)?;
                }
                Ok(total)
            }
        }
    }

    /// Claims up to `max` games (from each index key: one on one Redis, one per slot group on
    /// a cluster, all read at once) due by the store's now + `ahead` ms, for `lease` ms past
    /// their deadlines (see [`DeadlineIndex::claim`]): another replica takes a game over if this one
    /// dies before ending it, and a change of the game replaces the entry with its real
    /// deadline.
    pub async fn claim(self, ahead: u64, lease: u64, max: usize) -> Result<Claimed, Unavailable> {
        match self {
            Deadlines::Memory(m) => {
                let mut index = m.index.lock().expect("not poisoned");
                Ok(index.claim(process_now(), ahead, lease, max))
            }
            Deadlines::Redis(r) => r.claim(ahead, lease, max).await,
        }
    }

    /// Files game `id` again at `deadline` (`None`: out of the index), when a claim found it
    /// not due, or over.
    pub async fn reindex(self, id: &str, deadline: Option<u64>) -> Result<(), Unavailable> {
        match self {
            Deadlines::Memory(m) => {
                m.file(id, deadline);
                Ok(())
            }
            Deadlines::Redis(r) => {
                let _: i64 = r
                    .reindex
                    .key(r.key_of(id))
                    .arg(deadline.map_or(String::new(), |d| d.to_string()))
                    .arg(id)
                    .invoke_async(&mut r.conn()?)
                    .await
                    .map_err(unavailable)?;
                Ok(())
            }
        }
    }

    /// Woken when the index may have a new earliest deadline (filed here or, in Redis,
    /// announced by any replica).
    pub fn changed(self) -> Arc<Notify> {
        match self {
            Deadlines::Memory(m) => Arc::clone(&m.changed),
            Deadlines::Redis(r) => Arc::clone(&r.changed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_memory_index_claims_files_again_and_wakes_the_worker() {
        let m = MemoryDeadlines::new();
        let d = Deadlines::Memory(&m);
        let changed = d.changed();
        let woken = changed.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        let now = d.now().await.unwrap();
        m.file("a", Some(now - 10));
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(100), woken)
                .await
                .is_ok(),
            "a new earliest deadline wakes the worker"
        );
        m.file("b", Some(now + 60_000));
        let (first, at) = d.next().await.unwrap();
        assert_eq!(first, Some(now - 10));
        assert!(at >= now);
        let claimed = d.claim(0, 5_000, 10).await.unwrap();
        assert_eq!(claimed.due, vec![("a".to_owned(), now - 10)]);
        // Leased: not due again until the lease ends.
        assert!(d.claim(0, 5_000, 10).await.unwrap().due.is_empty());
        d.reindex("a", None).await.unwrap();
        assert_eq!(m.len(), 1);
    }
}
