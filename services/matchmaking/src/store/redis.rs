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
use arbiter_redis_conn::{RedisConfig, connect_in_background, wait_connected};
use arbiter_timekeeping::lua;
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

/// Follows `arbiter_timekeeping::lua::BASICS` (`pack`, `unpk`, `fmt`, `tnow`).
const PRELUDE: &str = r"
local F = '\31'
local function pk(P, s) return 'mm:q:{' .. P .. '}:' .. s end
local function split(s, sep)
  local t, i = {}, 1
  while true do
    local j = string.find(s, sep, i, true)
    if not j then t[#t + 1] = string.sub(s, i) return t end
    t[#t + 1] = string.sub(s, i, j - 1)
    i = j + 1
  end
end
local function drop(P, player)
  redis.call('HDEL', pk(P, 'e'), player)
  redis.call('ZREM', pk(P, 'l'), player)
  redis.call('ZREM', pk(P, 'j'), player)
  redis.call('HDEL', pk(P, 'w'), player)
end
";

/// ARGV: pool, player, session, entry record, lease ms, max waiting, max pools. The limits are
/// checked first: a refused join changes nothing.
const JOIN: &str = r"
local P, player = ARGV[1], ARGV[2]
if redis.call('HLEN', 'mm:found:' .. player) > 0 then return {'found'} end
local now = tnow()
local joined, missed = now, '0'
local who = redis.call('HGET', 'mm:who', player)
local old = nil
if who then
  local w = split(who, F)
  if w[1] == 'm' then return {'matching'} end
  old = w[2]
end
if old ~= P then
  if redis.call('HLEN', pk(P, 'e')) >= tonumber(ARGV[6]) then return {'full'} end
  if redis.call('SISMEMBER', 'mm:pools', P) == 0 and redis.call('SCARD', 'mm:pools') >= tonumber(ARGV[7]) then
    return {'pools'}
  end
end
if old then
  if old == P then
    joined = tonumber(redis.call('ZSCORE', pk(P, 'j'), player) or now)
    missed = redis.call('HGET', pk(P, 'w'), player) or '0'
  end
  drop(old, player)
end
redis.call('HSET', pk(P, 'e'), player, ARGV[4])
redis.call('ZADD', pk(P, 'l'), fmt(now + tonumber(ARGV[5])), player)
redis.call('ZADD', pk(P, 'j'), fmt(joined), player)
redis.call('HSET', pk(P, 'w'), player, missed)
redis.call('HSET', 'mm:who', player, 'w' .. F .. P .. F .. ARGV[3])
redis.call('SADD', 'mm:pools', P)
return {'waiting', redis.call('HLEN', pk(P, 'e'))}
";

/// ARGV: pool, player, session, lease ms.
const PLACE: &str = r"
local P, player = ARGV[1], ARGV[2]
local who = redis.call('HGET', 'mm:who', player)
if not who then return {'gone'} end
local w = split(who, F)
if w[2] ~= P then return {'gone'} end
if w[1] == 'm' then return {'matching'} end
if w[3] ~= ARGV[3] then return {'gone'} end
local rank = redis.call('ZRANK', pk(P, 'j'), player)
if not rank then return {'gone'} end
redis.call('ZADD', pk(P, 'l'), 'XX', fmt(tnow() + tonumber(ARGV[4])), player)
return {'waiting', rank + 1, redis.call('ZCARD', pk(P, 'j')),
  tonumber(redis.call('HGET', pk(P, 'w'), player) or '0'),
  redis.call('HGET', pk(P, 'm'), 'mean') or '0'}
";

/// ARGV: player, session (empty: any). A player being matched is marked gone instead: they are
/// not put back into the pool if the match cannot be created.
const LEAVE: &str = r"
local who = redis.call('HGET', 'mm:who', ARGV[1])
if not who then return 0 end
local w = split(who, F)
if w[1] == 'm' then
  redis.call('HSET', 'mm:who', ARGV[1], 'm' .. F .. w[2] .. F .. 'gone')
  return 0
end
if ARGV[2] ~= '' and w[3] ~= ARGV[2] then return 0 end
drop(w[2], ARGV[1])
redis.call('HDEL', 'mm:who', ARGV[1])
return 1
";

/// ARGV: pool, lease ms. The new fencing number, or nil while the lock is held. The pool's lock
/// hash lives a day after its last wave (pairing ids carry a random part, so a fencing number
/// that starts again is harmless).
const LOCK: &str = r"
local M = pk(ARGV[1], 'm')
local now = tnow()
if tonumber(redis.call('HGET', M, 'until') or '0') > now then return false end
local fence = redis.call('HINCRBY', M, 'fence', 1)
redis.call('HSET', M, 'until', fmt(now + tonumber(ARGV[2])))
redis.call('PEXPIRE', M, 86400000)
return fence
";

/// ARGV: pool, fence.
const UNLOCK: &str = r"
local M = pk(ARGV[1], 'm')
if redis.call('HGET', M, 'fence') == ARGV[2] then redis.call('HSET', M, 'until', '0') end
return 1
";

/// ARGV: pool. Drops expired places; returns player, joined, record, missed, lease end for each
/// place.
const WAITING: &str = r"
local P = ARGV[1]
local now = tnow()
for _, player in ipairs(redis.call('ZRANGEBYSCORE', pk(P, 'l'), '-inf', fmt(now))) do
  drop(P, player)
  local who = redis.call('HGET', 'mm:who', player)
  if who then
    local w = split(who, F)
    if w[1] == 'w' and w[2] == P then redis.call('HDEL', 'mm:who', player) end
  end
end
if redis.call('HLEN', pk(P, 'e')) == 0 and redis.call('HLEN', pk(P, 'k')) == 0 then
  redis.call('SREM', 'mm:pools', P)
end
local out = {}
local js = redis.call('ZRANGE', pk(P, 'j'), 0, -1, 'WITHSCORES')
for i = 1, #js, 2 do
  local rec = redis.call('HGET', pk(P, 'e'), js[i])
  if rec then
    out[#out + 1] = js[i]
    out[#out + 1] = js[i + 1]
    out[#out + 1] = rec
    out[#out + 1] = redis.call('HGET', pk(P, 'w'), js[i]) or '0'
    out[#out + 1] = redis.call('ZSCORE', pk(P, 'l'), js[i]) or '0'
  end
end
return out
";

/// ARGV: pool, fence, n, then per pairing: id, member count, members; then the unpaired.
const COMMIT: &str = r"
local P = ARGV[1]
local M = pk(P, 'm')
local now = tnow()
if redis.call('HGET', M, 'fence') ~= ARGV[2] or tonumber(redis.call('HGET', M, 'until') or '0') <= now then
  return false
end
local done, at = {}, 4
for i = 1, tonumber(ARGV[3]) do
  local id, c = ARGV[at], tonumber(ARGV[at + 1])
  local ok = redis.call('HEXISTS', pk(P, 'k'), id) == 0
  for m = 1, c do
    if ok and redis.call('HEXISTS', pk(P, 'e'), ARGV[at + 1 + m]) == 0 then ok = false end
  end
  if ok then
    local rec = {fmt(now)}
    for m = 1, c do
      local player = ARGV[at + 1 + m]
      rec[#rec + 1] = player
      rec[#rec + 1] = redis.call('HGET', pk(P, 'e'), player)
      rec[#rec + 1] = redis.call('ZSCORE', pk(P, 'j'), player)
      rec[#rec + 1] = redis.call('HGET', pk(P, 'w'), player) or '0'
      rec[#rec + 1] = redis.call('ZSCORE', pk(P, 'l'), player) or '0'
      drop(P, player)
      redis.call('HSET', 'mm:who', player, 'm' .. F .. P)
    end
    redis.call('HSET', pk(P, 'k'), id, pack(rec))
    done[i] = 1
  else
    done[i] = 0
  end
  at = at + 2 + c
end
for j = at, #ARGV do
  if redis.call('HEXISTS', pk(P, 'e'), ARGV[j]) == 1 then redis.call('HINCRBY', pk(P, 'w'), ARGV[j], 1) end
end
return done
";

/// ARGV: pool, pairing, match id, follow record, found TTL, found count, then per found:
/// player, match id, message; then per history: player, record. The match is filed to be
/// followed at once (its lease already run out: any replica's follower claims it).
const MATCHED: &str = r"
local P = ARGV[1]
local rec = redis.call('HGET', pk(P, 'k'), ARGV[2])
if not rec then return 0 end
redis.call('HDEL', pk(P, 'k'), ARGV[2])
local now = tnow()
local r = unpk(rec)
local M = pk(P, 'm')
local mean = tonumber(redis.call('HGET', M, 'mean') or '0')
for i = 2, #r, 5 do
  local wait = math.max(0, now - tonumber(r[i + 2]))
  if mean == 0 then mean = wait else mean = mean - math.floor(mean / 8) + math.floor(wait / 8) end
  local who = redis.call('HGET', 'mm:who', r[i])
  if who == 'm' .. F .. P or who == 'm' .. F .. P .. F .. 'gone' then redis.call('HDEL', 'mm:who', r[i]) end
end
redis.call('HSET', M, 'mean', fmt(mean))
local at = 7
for i = 1, tonumber(ARGV[6]) do
  redis.call('HSET', 'mm:found:' .. ARGV[at], ARGV[at + 1], ARGV[at + 2])
  redis.call('PEXPIRE', 'mm:found:' .. ARGV[at], ARGV[5])
  at = at + 3
end
while at < #ARGV do
  redis.call('HSET', 'mm:h', ARGV[at], ARGV[at + 1])
  at = at + 2
end
redis.call('ZADD', 'mm:follow', fmt(now), ARGV[3])
redis.call('HSET', 'mm:follow:d', ARGV[3], ARGV[4])
return 1
";

/// ARGV: pool, pairing. Players still being matched go back with their places and leases;
/// those whose stream closed meanwhile are let go.
const UNMAKE: &str = r"
local P = ARGV[1]
local rec = redis.call('HGET', pk(P, 'k'), ARGV[2])
if not rec then return 0 end
redis.call('HDEL', pk(P, 'k'), ARGV[2])
local r = unpk(rec)
for i = 2, #r, 5 do
  local player = r[i]
  local who = redis.call('HGET', 'mm:who', player)
  if who == 'm' .. F .. P then
    redis.call('HSET', pk(P, 'e'), player, r[i + 1])
    redis.call('ZADD', pk(P, 'l'), r[i + 4], player)
    redis.call('ZADD', pk(P, 'j'), r[i + 2], player)
    redis.call('HSET', pk(P, 'w'), player, r[i + 3])
    redis.call('HSET', 'mm:who', player, 'w' .. F .. P .. F .. split(r[i + 1], F)[1])
  elseif who == 'm' .. F .. P .. F .. 'gone' then
    redis.call('HDEL', 'mm:who', player)
  end
end
redis.call('SADD', 'mm:pools', P)
return 1
";

/// ARGV: lease ms, max. Returns match id, record for each claimed match.
const CLAIM_FOLLOWS: &str = r"
local now = tnow()
local out = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', 'mm:follow', '-inf', fmt(now), 'LIMIT', 0, tonumber(ARGV[2]))) do
  redis.call('ZADD', 'mm:follow', fmt(now + tonumber(ARGV[1])), id)
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGET', 'mm:follow:d', id) or ''
end
return out
";

/// ARGV: lease ms, match ids.
const RENEW_FOLLOWS: &str = r"
local deadline = fmt(tnow() + tonumber(ARGV[1]))
for i = 2, #ARGV do redis.call('ZADD', 'mm:follow', 'XX', deadline, ARGV[i]) end
return 1
";

/// ARGV: match id, TTL ms, then per write: player, key, old (empty: none), new.
const APPLY: &str = r"
local function unfollow()
  redis.call('ZREM', 'mm:follow', ARGV[1])
  redis.call('HDEL', 'mm:follow:d', ARGV[1])
end
if redis.call('EXISTS', 'mm:rated:' .. ARGV[1]) == 1 then unfollow() return 'already' end
for i = 3, #ARGV, 4 do
  local cur = redis.call('HGET', 'mm:r:' .. ARGV[i], ARGV[i + 1]) or ''
  if cur ~= ARGV[i + 2] then return 'conflict' end
end
for i = 3, #ARGV, 4 do redis.call('HSET', 'mm:r:' .. ARGV[i], ARGV[i + 1], ARGV[i + 3]) end
redis.call('SET', 'mm:rated:' .. ARGV[1], '1', 'PX', ARGV[2])
unfollow()
return 'done'
";

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
    Script::new(&format!("{}{PRELUDE}{body}", lua::BASICS))
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
