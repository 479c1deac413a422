//! Pools, places, found matches and ratings in Redis, shared by every replica. Each operation
//! is one Lua script at Redis's `TIME`, so replicas share one clock and every step is atomic.
//!
//! Keys (`P` a pool's name, which holds no braces):
//! - `mm:pools`: the set of pools with players or pairings;
//! - `mm:q:{P}:e` (entry records by player), `:l` (lease ends), `:j` (join times, for
//!   positions), `:w` (missed waves), `:m` (the wave lock's end and fencing number, the mean
//!   wait), `:k` (pairings being made);
//! - `mm:who`: each player's state (`w` P session: waiting; `m` P: being matched);
//! - `mm:found:<player>`: match found messages by match id (kept a day at most);
//! - `mm:h`: histories; `mm:r:<player>`: rating records by `variant:speed`;
//! - `mm:follow` (matches followed for their outcome, by lease end) and `mm:follow:d`;
//!   `mm:rated:<match>`: a match whose ratings were applied (kept 30 days).
//!
//! Every replica hears [`EVENTS`]: `p<player>` (news for a player) and `w<pool>` (a wave ran).

use super::{Applied, Found, Joined, Place, PoolStore, RatingWrite, Standing, StoreError};
use crate::pool::{Entry, Follow, History, Making, Pairing, Waiting};
use arbiter_redis_conn::script::BASICS;
use arbiter_redis_conn::{RedisConfig, connect_in_background, wait_connected};
use redis::Script;
use redis::aio::ConnectionManager;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Where news for players and pools is announced.
pub const EVENTS: &str = "mm:events";
/// How long an unacknowledged match found is kept.
const FOUND_TTL_MS: u64 = 86_400_000;
/// How long a rated match id is remembered.
const RATED_TTL_MS: u64 = 30 * 86_400_000;

/// The `PRELUDE` script (`lua/prelude.lua`; its header lists its keys and arguments).
const PRELUDE: &str = include_str!("lua/prelude.lua");

/// The `JOIN` script (`lua/join.lua`; its header lists its keys and arguments).
const JOIN: &str = include_str!("lua/join.lua");

/// The `PLACE` script (`lua/place.lua`; its header lists its keys and arguments).
const PLACE: &str = include_str!("lua/place.lua");

/// The `LEAVE` script (`lua/leave.lua`; its header lists its keys and arguments).
const LEAVE: &str = include_str!("lua/leave.lua");

/// The `LOCK` script (`lua/lock.lua`; its header lists its keys and arguments).
const LOCK: &str = include_str!("lua/lock.lua");

/// The `UNLOCK` script (`lua/unlock.lua`; its header lists its keys and arguments).
const UNLOCK: &str = include_str!("lua/unlock.lua");

/// The `WAITING` script (`lua/waiting.lua`; its header lists its keys and arguments).
const WAITING: &str = include_str!("lua/waiting.lua");

/// The `COMMIT` script (`lua/commit.lua`; its header lists its keys and arguments).
const COMMIT: &str = include_str!("lua/commit.lua");

/// The `MATCHED` script (`lua/matched.lua`; its header lists its keys and arguments).
const MATCHED: &str = include_str!("lua/matched.lua");

/// The `UNMAKE` script (`lua/unmake.lua`; its header lists its keys and arguments).
const UNMAKE: &str = include_str!("lua/unmake.lua");

/// The `CLAIM_FOLLOWS` script (`lua/claim-follows.lua`; its header lists its keys and arguments).
const CLAIM_FOLLOWS: &str = include_str!("lua/claim-follows.lua");

/// The `RENEW_FOLLOWS` script (`lua/renew-follows.lua`; its header lists its keys and arguments).
const RENEW_FOLLOWS: &str = include_str!("lua/renew-follows.lua");

/// The `APPLY` script (`lua/apply.lua`; its header lists its keys and arguments).
const APPLY: &str = include_str!("lua/apply.lua");

struct Scripts {
    join: Script,
    place: Script,
    leave: Script,
    lock: Script,
    unlock: Script,
    waiting: Script,
    commit: Script,
    matched: Script,
    unmake: Script,
    claim_follows: Script,
    renew_follows: Script,
    apply: Script,
}

fn script(body: &str) -> Script {
    Script::new(&format!("{BASICS}{PRELUDE}{body}"))
}

fn unavailable(e: redis::RedisError) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(what.to_owned())
}

/// Reads the length-prefixed list the scripts' `pack` writes.
fn unpack(s: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let (len, tail) = rest.split_once(':')?;
        let len: usize = len.parse().ok()?;
        out.push(tail.get(..len)?.to_owned());
        rest = tail.get(len..)?;
    }
    Some(out)
}

/// A Redis score (a time in ms) as an integer.
fn score(text: &str) -> Option<u64> {
    let x: f64 = text.parse().ok()?;
    (x.is_finite() && x >= 0.0).then_some(x as u64)
}

fn waiting_of(
    player: &str,
    joined: &str,
    record: &str,
    missed: &str,
    lease: &str,
) -> Result<Waiting, StoreError> {
    Ok(Waiting {
        lease_until: score(lease).ok_or_else(|| corrupt("lease"))?,
        entry: Entry::decode(player, record)
            .ok_or_else(|| corrupt(&format!("place of player {player:?}")))?,
        joined_at: score(joined).ok_or_else(|| corrupt("join time"))?,
        missed: missed.parse().map_err(|_| corrupt("missed waves"))?,
    })
}

/// Matchmaking state in Redis (clones share the connection).
#[derive(Clone)]
pub struct RedisStore {
    conn: Arc<OnceLock<ConnectionManager>>,
    scripts: Arc<Scripts>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore").finish_non_exhaustive()
    }
}

impl RedisStore {
    /// A store that connects in the background (calls fail with `Unavailable` until it has).
    /// Needs a Tokio runtime.
    ///
    /// # Errors
    /// A bad Redis URL.
    pub fn open(config: &RedisConfig) -> Result<RedisStore, StoreError> {
        let client = config.client().map_err(StoreError::Unavailable)?;
        let all = [
            JOIN,
            PLACE,
            LEAVE,
            LOCK,
            UNLOCK,
            WAITING,
            COMMIT,
            MATCHED,
            UNMAKE,
            CLAIM_FOLLOWS,
            RENEW_FOLLOWS,
            APPLY,
        ];
        Ok(RedisStore {
            conn: connect_in_background(
                client,
                "matchmaking store",
                all.into_iter().map(script).collect(),
            ),
            scripts: Arc::new(Scripts {
                join: script(JOIN),
                place: script(PLACE),
                leave: script(LEAVE),
                lock: script(LOCK),
                unlock: script(UNLOCK),
                waiting: script(WAITING),
                commit: script(COMMIT),
                matched: script(MATCHED),
                unmake: script(UNMAKE),
                claim_follows: script(CLAIM_FOLLOWS),
                renew_follows: script(RENEW_FOLLOWS),
                apply: script(APPLY),
            }),
        })
    }

    /// [`RedisStore::open`], waiting up to 10 s for the connection (tests and tools).
    ///
    /// # Errors
    /// A bad URL, or no connection within 10 s.
    pub async fn connect(url: &str) -> Result<RedisStore, StoreError> {
        let store = RedisStore::open(&RedisConfig {
            url: url.to_owned(),
            password: None,
        })?;
        if wait_connected(&store.conn, Duration::from_secs(10)).await {
            Ok(store)
        } else {
            Err(StoreError::Unavailable("cannot connect to Redis".into()))
        }
    }

    fn conn(&self) -> Result<ConnectionManager, StoreError> {
        self.conn
            .get()
            .cloned()
            .ok_or_else(|| StoreError::Unavailable("not connected to Redis yet".into()))
    }

    async fn run<T: redis::FromRedisValue>(
        &self,
        script: &Script,
        args: &[&str],
    ) -> Result<T, StoreError> {
        let mut conn = self.conn()?;
        let mut invocation = script.prepare_invoke();
        for a in args {
            invocation.arg(*a);
        }
        invocation
            .invoke_async(&mut conn)
            .await
            .map_err(unavailable)
    }

    async fn run_owned<T: redis::FromRedisValue>(
        &self,
        script: &Script,
        args: Vec<Vec<u8>>,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn()?;
        let mut invocation = script.prepare_invoke();
        for a in args {
            invocation.arg(a);
        }
        invocation
            .invoke_async(&mut conn)
            .await
            .map_err(unavailable)
    }
}

/// Follows [`EVENTS`] until `shutdown`, handing each to `on_event`; resubscribes after a lost
/// connection (streams renew on their own timer meanwhile, so nothing is lost, only later).
pub async fn listen<F>(
    client: redis::Client,
    on_event: F,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) where
    F: Fn(Event) + Send + 'static,
{
    use tokio_stream::StreamExt;
    let mut delay = Duration::from_millis(100);
    loop {
        let subscribed = async {
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(EVENTS).await?;
            Ok::<_, redis::RedisError>(pubsub)
        };
        let pubsub = tokio::select! {
            r = subscribed => r,
            _ = shutdown.wait_for(|d| *d) => return,
        };
        match pubsub {
            Ok(mut pubsub) => {
                delay = Duration::from_millis(100);
                let mut messages = pubsub.on_message();
                loop {
                    tokio::select! {
                        m = messages.next() => match m {
                            Some(m) => {
                                if let Ok(text) = m.get_payload::<String>() {
                                    if let Some(p) = text.strip_prefix('p') {
                                        on_event(Event::Player(p.to_owned()));
                                    } else if let Some(p) = text.strip_prefix('w') {
                                        on_event(Event::Pool(p.to_owned()));
                                    }
                                }
                            }
                            None => {
                                tracing::warn!("lost the matchmaking event subscription; reconnecting");
                                break;
                            }
                        },
                        _ = shutdown.wait_for(|d| *d) => return,
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot subscribe to matchmaking events yet; retrying");
            }
        }
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            _ = shutdown.wait_for(|d| *d) => return,
        }
        delay = (delay * 2).min(Duration::from_secs(5));
    }
}

/// An announcement heard on [`EVENTS`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A player has news.
    Player(String),
    /// A pool ran a wave.
    Pool(String),
}

impl PoolStore for RedisStore {
    async fn now(&self) -> Result<u64, StoreError> {
        let mut conn = self.conn()?;
        let (s, us): (u64, u64) = redis::cmd("TIME")
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        Ok(s * 1000 + us / 1000)
    }

    async fn join(
        &self,
        pool: &str,
        entry: &Entry,
        lease_ms: u64,
        (max_waiting, max_pools): (usize, usize),
    ) -> Result<Joined, StoreError> {
        let (session, record) = (entry.session.to_string(), entry.encode());
        let (lease, max) = (lease_ms.to_string(), max_waiting.to_string());
        let pools = max_pools.to_string();
        let r: Vec<redis::Value> = self
            .run(
                &self.scripts.join,
                &[pool, &entry.player, &session, &record, &lease, &max, &pools],
            )
            .await?;
        let status: String = r
            .first()
            .and_then(|v| redis::from_redis_value(v).ok())
            .unwrap_or_default();
        Ok(match status.as_str() {
            "found" => Joined::Found,
            "matching" => Joined::Matching,
            "full" => Joined::Full,
            "pools" => Joined::TooManyPools,
            "waiting" => Joined::Waiting {
                waiting: r
                    .get(1)
                    .and_then(|v| redis::from_redis_value(v).ok())
                    .unwrap_or(1),
            },
            other => return Err(corrupt(&format!("join answered {other:?}"))),
        })
    }

    async fn place(
        &self,
        pool: &str,
        player: &str,
        session: u64,
        lease_ms: u64,
    ) -> Result<Place, StoreError> {
        let (session, lease) = (session.to_string(), lease_ms.to_string());
        let r: Vec<String> = self
            .run(&self.scripts.place, &[pool, player, &session, &lease])
            .await?;
        Ok(match r.first().map(String::as_str) {
            Some("waiting") if r.len() == 5 => {
                let n = |i: usize| r[i].parse::<u64>().map_err(|_| corrupt("standing"));
                let small = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
                Place::Waiting(Standing {
                    position: small(n(1)?),
                    waiting: small(n(2)?),
                    missed: small(n(3)?),
                    mean_wait_ms: score(&r[4]).unwrap_or(0),
                })
            }
            Some("matching") => Place::Matching,
            _ => Place::Gone,
        })
    }

    async fn leave(&self, player: &str, session: Option<u64>) -> Result<bool, StoreError> {
        let session = session.map_or(String::new(), |s| s.to_string());
        let left: i64 = self.run(&self.scripts.leave, &[player, &session]).await?;
        Ok(left == 1)
    }

    async fn pools(&self) -> Result<Vec<String>, StoreError> {
        let mut conn = self.conn()?;
        let mut pools: Vec<String> = redis::cmd("SMEMBERS")
            .arg("mm:pools")
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        pools.sort_unstable();
        Ok(pools)
    }

    async fn lock(&self, pool: &str, lease_ms: u64) -> Result<Option<u64>, StoreError> {
        self.run(&self.scripts.lock, &[pool, &lease_ms.to_string()])
            .await
    }

    async fn unlock(&self, pool: &str, fence: u64) -> Result<(), StoreError> {
        let _: i64 = self
            .run(&self.scripts.unlock, &[pool, &fence.to_string()])
            .await?;
        Ok(())
    }

    async fn waiting(&self, pool: &str) -> Result<Vec<Waiting>, StoreError> {
        let r: Vec<String> = self.run(&self.scripts.waiting, &[pool]).await?;
        r.chunks_exact(5)
            .map(|c| waiting_of(&c[0], &c[1], &c[2], &c[3], &c[4]))
            .collect()
    }

    async fn commit(
        &self,
        pool: &str,
        fence: u64,
        pairings: &[Pairing],
        unpaired: &[String],
    ) -> Result<Option<Vec<bool>>, StoreError> {
        let mut args: Vec<Vec<u8>> = vec![
            pool.into(),
            fence.to_string().into(),
            pairings.len().to_string().into(),
        ];
        for p in pairings {
            args.push(p.id.clone().into());
            args.push(p.members.len().to_string().into());
            args.extend(p.members.iter().map(|m| m.clone().into_bytes()));
        }
        args.extend(unpaired.iter().map(|u| u.clone().into_bytes()));
        let done: Option<Vec<i64>> = self.run_owned(&self.scripts.commit, args).await?;
        Ok(done.map(|d| d.into_iter().map(|x| x == 1).collect()))
    }

    async fn making(&self, pool: &str) -> Result<Vec<Making>, StoreError> {
        let mut conn = self.conn()?;
        let all: Vec<(String, String)> = redis::cmd("HGETALL")
            .arg(format!("mm:q:{{{pool}}}:k"))
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        all.into_iter()
            .map(|(id, rec)| {
                let parts = unpack(&rec).ok_or_else(|| corrupt("pairing record"))?;
                let (since, members) = parts.split_first().ok_or_else(|| corrupt("pairing"))?;
                if members.len() % 5 != 0 {
                    return Err(corrupt("pairing members"));
                }
                Ok(Making {
                    id,
                    since: score(since).ok_or_else(|| corrupt("pairing time"))?,
                    members: members
                        .chunks_exact(5)
                        .map(|m| waiting_of(&m[0], &m[2], &m[1], &m[3], &m[4]))
                        .collect::<Result<_, _>>()?,
                })
            })
            .collect()
    }

    async fn matched(
        &self,
        pool: &str,
        pairing: &str,
        found: &[Found],
        histories: &[(String, History)],
        follow: &Follow,
    ) -> Result<bool, StoreError> {
        let mut args: Vec<Vec<u8>> = vec![
            pool.into(),
            pairing.into(),
            follow.match_id.clone().into(),
            follow.encode().into(),
            FOUND_TTL_MS.to_string().into(),
            found.len().to_string().into(),
        ];
        for f in found {
            args.push(f.player.clone().into());
            args.push(f.match_id.clone().into());
            args.push(f.message.clone());
        }
        for (player, h) in histories {
            args.push(player.clone().into());
            args.push(h.encode().into());
        }
        let fresh: i64 = self.run_owned(&self.scripts.matched, args).await?;
        Ok(fresh == 1)
    }

    async fn unmake(&self, pool: &str, pairing: &str) -> Result<bool, StoreError> {
        let r: i64 = self.run(&self.scripts.unmake, &[pool, pairing]).await?;
        Ok(r == 1)
    }

    async fn found(&self, player: &str) -> Result<Vec<Found>, StoreError> {
        let mut conn = self.conn()?;
        let all: Vec<(String, Vec<u8>)> = redis::cmd("HGETALL")
            .arg(format!("mm:found:{player}"))
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        Ok(all
            .into_iter()
            .map(|(match_id, message)| Found {
                player: player.to_owned(),
                match_id,
                message,
            })
            .collect())
    }

    async fn acknowledge(&self, player: &str, match_id: &str) -> Result<bool, StoreError> {
        let mut conn = self.conn()?;
        let n: i64 = redis::cmd("HDEL")
            .arg(format!("mm:found:{player}"))
            .arg(match_id)
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        Ok(n == 1)
    }

    async fn history(&self, player: &str) -> Result<History, StoreError> {
        let mut conn = self.conn()?;
        let h: Option<String> = redis::cmd("HGET")
            .arg("mm:h")
            .arg(player)
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        match h {
            None => Ok(History::default()),
            Some(text) => History::decode(&text)
                .ok_or_else(|| corrupt(&format!("history of player {player:?}"))),
        }
    }

    async fn ratings(&self, player: &str) -> Result<Vec<(String, String)>, StoreError> {
        let mut conn = self.conn()?;
        let mut all: Vec<(String, String)> = redis::cmd("HGETALL")
            .arg(format!("mm:r:{player}"))
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        all.sort_unstable();
        Ok(all)
    }

    async fn claim_follows(&self, lease_ms: u64, max: usize) -> Result<Vec<Follow>, StoreError> {
        let r: Vec<String> = self
            .run(
                &self.scripts.claim_follows,
                &[&lease_ms.to_string(), &max.to_string()],
            )
            .await?;
        let mut out = Vec::new();
        for c in r.chunks_exact(2) {
            match Follow::decode(&c[0], &c[1]) {
                Some(f) => out.push(f),
                None => {
                    // Never claimable again: set aside, not retried forever.
                    tracing::error!(match_id = %c[0], "a followed match's record is corrupt; it will not be rated");
                    let mut conn = self.conn()?;
                    redis::pipe()
                        .cmd("ZREM")
                        .arg("mm:follow")
                        .arg(&c[0])
                        .ignore()
                        .cmd("HDEL")
                        .arg("mm:follow:d")
                        .arg(&c[0])
                        .ignore()
                        .query_async::<()>(&mut conn)
                        .await
                        .map_err(unavailable)?;
                }
            }
        }
        Ok(out)
    }

    async fn renew_follows(&self, match_ids: &[String], lease_ms: u64) -> Result<(), StoreError> {
        for chunk in match_ids.chunks(512) {
            let mut args: Vec<Vec<u8>> = vec![lease_ms.to_string().into()];
            args.extend(chunk.iter().map(|id| id.clone().into_bytes()));
            let _: i64 = self.run_owned(&self.scripts.renew_follows, args).await?;
        }
        Ok(())
    }

    async fn apply_ratings(
        &self,
        match_id: &str,
        writes: &[RatingWrite],
    ) -> Result<Applied, StoreError> {
        let mut args: Vec<Vec<u8>> = vec![match_id.into(), RATED_TTL_MS.to_string().into()];
        for w in writes {
            args.push(w.player.clone().into());
            args.push(w.key.clone().into());
            args.push(w.old.clone().unwrap_or_default().into());
            args.push(w.new.clone().into());
        }
        let r: String = self.run_owned(&self.scripts.apply, args).await?;
        match r.as_str() {
            "done" => Ok(Applied::Done),
            "already" => Ok(Applied::Already),
            "conflict" => Ok(Applied::Conflict),
            other => Err(corrupt(&format!("apply answered {other:?}"))),
        }
    }

    async fn announce(&self, players: &[String], pool: Option<&str>) -> Result<(), StoreError> {
        let mut conn = self.conn()?;
        let mut pipe = redis::pipe();
        for p in players {
            pipe.cmd("PUBLISH")
                .arg(EVENTS)
                .arg(format!("p{p}"))
                .ignore();
        }
        if let Some(pool) = pool {
            pipe.cmd("PUBLISH")
                .arg(EVENTS)
                .arg(format!("w{pool}"))
                .ignore();
        }
        pipe.query_async::<()>(&mut conn).await.map_err(unavailable)
    }

    async fn probe(&self) -> Result<(), StoreError> {
        let mut conn = self.conn()?;
        redis::cmd("PING")
            .query_async::<String>(&mut conn)
            .await
            .map(|_| ())
            .map_err(unavailable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_lists_read_back() {
        assert_eq!(
            unpack("3:abc0:2:x:").unwrap(),
            vec!["abc".to_owned(), String::new(), "x:".to_owned()]
        );
        assert_eq!(unpack("5:ab"), None);
        assert_eq!(unpack("x:ab"), None);
        assert_eq!(score("1700000000123"), Some(1_700_000_000_123));
        assert_eq!(score("-1"), None);
    }
}
