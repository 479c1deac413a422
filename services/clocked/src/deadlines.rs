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
use arbiter_redis_conn::Connection;
use arbiter_redis_conn::script::{BASICS, redis_now};
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
    /// ([`lua::header`]), [`BASICS`] and [`lua::CLOCKS`]. A script body follows.
    pub fn prelude(self) -> String {
        format!(
            "{}{BASICS}{}",
            lua::header(self.index, self.channel, MAX_REMAINING_MS),
            lua::CLOCKS
        )
    }

    /// The scripts of the index itself ([`lua::CLAIM`], [`lua::REINDEX`]), for a connection to
    /// load ahead of use.
    pub fn scripts(self) -> [Script; 2] {
        let prelude = self.prelude();
        [
            Script::new(&format!("{prelude}{}", lua::CLAIM)),
            Script::new(&format!("{prelude}{}", lua::REINDEX)),
        ]
    }
}

/// A deadline index in Redis (a sorted set), with Redis `TIME` as the time base: shared by every
/// replica of a service.
pub struct RedisDeadlines {
    conn: Arc<OnceLock<Connection>>,
    names: RedisNames,
    claim: Script,
    reindex: Script,
    changed: Arc<Notify>,
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
    /// first connects; calls fail with [`Unavailable`] until then).
    pub fn new(conn: Arc<OnceLock<Connection>>, names: RedisNames) -> RedisDeadlines {
        let [claim, reindex] = names.scripts();
        RedisDeadlines {
            conn,
            names,
            claim,
            reindex,
            changed: Arc::new(Notify::new()),
        }
    }

    /// Where the index lives.
    pub fn names(&self) -> RedisNames {
        self.names
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
        client: redis::Client,
        shutdown: tokio::sync::watch::Receiver<bool>,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        crate::listen_for_deadlines(
            client,
            self.names.channel,
            Arc::clone(&self.changed),
            shutdown,
        )
    }

    async fn claim(&self, ahead: u64, lease: u64, max: usize) -> Result<Claimed, Unavailable> {
        let reply: Vec<String> = self
            .claim
            .key(self.names.index)
            .arg(lease)
            .arg(max)
            .arg(ahead)
            .invoke_async(&mut self.conn()?)
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
                let ((secs, micros), first): ((u64, u64), Vec<(String, f64)>) = redis::pipe()
                    .cmd("TIME")
                    .zrange_withscores(r.names.index, 0, 0)
                    .query_async(&mut r.conn()?)
                    .await
                    .map_err(unavailable)?;
                // Scores are whole milliseconds, exact in a double.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let next = first.first().map(|(_, at)| *at as u64);
                Ok((next, secs * 1000 + micros / 1000))
            }
        }
    }

    /// Games filed in the index: those with a running clock (and, briefly, some just over).
    pub async fn filed(self) -> Result<usize, Unavailable> {
        match self {
            Deadlines::Memory(m) => Ok(m.len()),
            Deadlines::Redis(r) => redis::cmd("ZCARD")
                .arg(r.names.index)
                .query_async(&mut r.conn()?)
                .await
                .map_err(unavailable),
        }
    }

    /// Claims up to `max` games due by the store's now + `ahead` ms, for `lease` ms past their
    /// deadlines (see [`DeadlineIndex::claim`]): another replica takes a game over if this one
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
                    .key(r.names.index)
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
