//! Pools, places, found matches and ratings in Redis, shared by every replica. Each operation
//! is one Lua script at Redis's `TIME`, so replicas share one clock and every step is atomic.
//!
//! Keys (`P` a pool's name, which holds no braces):
//! - `mm:pools`: the set of pools with players or pairings;
//! - `mm:q:{P}:e` (entry records by player), `:l` (lease ends), `:j` (join times, for
//!   positions), `:w` (missed waves), `:m` (the wave lock's end and fencing number, the mean
//!   wait), `:k` (pairings being made);
//! - `mm:who`: each player's state (`w` P session: waiting; `m` P: being matched);
//! - `mm:found:<player>`: found matches by match id, in their stored form
//!   ([`crate::found`]; kept a day at most);
//! - `mm:h`: histories; `mm:r:<player>`: rating records by `variant:speed`;
//! - `mm:rh:<variant:speed>:<player>`: a player's rating history in one variant and speed (a
//!   list, oldest first, of sequence number and change, the latest N kept);
//!   `mm:imp:<request id>`: an import's fingerprint and outcomes (kept a day);
//! - `mm:follow` (matches followed for their outcome, by lease end) and `mm:follow:d`;
//!   `mm:rated:<match>`: a match whose ratings were applied (kept 30 days).
//!
//! - challenges and seeks: `mm:of:<id>`, `mm:ofq:…`, `mm:ofo:…`, `mm:ofi:<player>`,
//!   `mm:ofr:<player>`, `mm:ofn:<kind>:<owner>`, `mm:seeks`, `mm:seeks:<variant>`, `mm:ofa`
//!   (accepts under way by last heartbeat) (`lua/offers.lua` describes them); an accept under
//!   way marks its players in `mm:who` (`o` offer id, deadline: held while the offer is
//!   accepting, whatever the deadline).
//!
//! Every replica hears [`EVENTS`]: `p<player>` (news for a player) and `w<pool>` (a wave ran).
//!
//! On a Redis Cluster every key above starts with `mm:{mm}:` instead of `mm:` (`mm:{mm}:who`,
//! `mm:{mm}:q:{P}:e`): the first hash tag, `{mm}`, puts the whole store in one slot, since its
//! scripts change several pools' and players' keys at once (a player's place in `who` with the
//! pool's entries, both players of a pairing, an offer with both players' states). The store
//! then lives on one primary of the cluster (see docs/operations.md for what that means).

use super::{
    Applied, Found, IMPORT_MEMORY_MS, ImportWrite, Imported, Joined, OFFER_MEMORY_MS, OfferStore,
    Place, PoolStore, RECENT_CHALLENGES, RatingWrite, Standing, StoreError,
};
use crate::found::{pack, unpack};
use crate::offer::{
    Accepting, Created, DeclineReason, Ended, NewOffer, Offer, OfferKind, OfferLimits, OfferState,
    Terms,
};
use crate::pool::{Entry, Follow, History, Making, Pairing, Waiting};
use arbiter_redis_conn::Connection;
use arbiter_redis_conn::script::{Args, BASICS, Constant, Schema, constants};
use arbiter_redis_conn::{RedisConfig, connect_in_background, wait_connected};
use redis::Script;
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
/// The arguments of [`JOIN`], by name.
static JOIN_ARGS: Schema = Schema::new(&[
    ("pool", 1),
    ("player", 1),
    ("session", 1),
    ("record", 1),
    ("lease_ms", 1),
    ("max_waiting", 1),
    ("max_pools", 1),
]);

/// The `PLACE` script (`lua/place.lua`; its header lists its keys and arguments).
const PLACE: &str = include_str!("lua/place.lua");
/// The arguments of [`PLACE`], by name.
static PLACE_ARGS: Schema =
    Schema::new(&[("pool", 1), ("player", 1), ("session", 1), ("lease_ms", 1)]);

/// The `LEAVE` script (`lua/leave.lua`; its header lists its keys and arguments).
const LEAVE: &str = include_str!("lua/leave.lua");
/// The arguments of [`LEAVE`], by name.
static LEAVE_ARGS: Schema = Schema::new(&[("player", 1), ("session", 1)]);

/// The `LOCK` script (`lua/lock.lua`; its header lists its keys and arguments).
const LOCK: &str = include_str!("lua/lock.lua");
/// The arguments of [`LOCK`], by name.
static LOCK_ARGS: Schema = Schema::new(&[("pool", 1), ("lease_ms", 1)]);

/// The `UNLOCK` script (`lua/unlock.lua`; its header lists its keys and arguments).
const UNLOCK: &str = include_str!("lua/unlock.lua");
/// The arguments of [`UNLOCK`], by name.
static UNLOCK_ARGS: Schema = Schema::new(&[("pool", 1), ("fence", 1)]);

/// The `WAITING` script (`lua/waiting.lua`; its header lists its keys and arguments).
const WAITING: &str = include_str!("lua/waiting.lua");
/// The arguments of [`WAITING`], by name.
static WAITING_ARGS: Schema = Schema::new(&[("pool", 1)]);

/// The `COMMIT` script (`lua/commit.lua`; its header lists its keys and arguments).
const COMMIT: &str = include_str!("lua/commit.lua");
/// The arguments of [`COMMIT`], by name. The pairings are one packed argument, not a list at the
/// end: a wave may pair more players than Lua's `unpack` takes (about 8,000 values).
static COMMIT_ARGS: Schema =
    Schema::new(&[("pool", 1), ("fence", 1), ("pairings", 1), ("unpaired", 1)]);

/// The `MATCHED` script (`lua/matched.lua`; its header lists its keys and arguments).
const MATCHED: &str = include_str!("lua/matched.lua");
/// The arguments of [`MATCHED`], by name.
static MATCHED_ARGS: Schema = Schema::new(&[
    ("pool", 1),
    ("pairing", 1),
    ("match_id", 1),
    ("follow", 1),
    ("found_ttl", 1),
    ("found", 1),
    ("histories", 1),
]);

/// The `UNMAKE` script (`lua/unmake.lua`; its header lists its keys and arguments).
const UNMAKE: &str = include_str!("lua/unmake.lua");
/// The arguments of [`UNMAKE`], by name.
static UNMAKE_ARGS: Schema = Schema::new(&[("pool", 1), ("pairing", 1)]);

/// The `CLAIM_FOLLOWS` script (`lua/claim-follows.lua`; its header lists its keys and arguments).
const CLAIM_FOLLOWS: &str = include_str!("lua/claim-follows.lua");
/// The arguments of [`CLAIM_FOLLOWS`], by name.
static CLAIM_FOLLOWS_ARGS: Schema = Schema::new(&[("lease_ms", 1), ("max", 1)]);

/// The `RENEW_FOLLOWS` script (`lua/renew-follows.lua`; its header lists its keys and arguments).
const RENEW_FOLLOWS: &str = include_str!("lua/renew-follows.lua");
/// The arguments of [`RENEW_FOLLOWS`], by name.
static RENEW_FOLLOWS_ARGS: Schema = Schema::with_rest(&[("lease_ms", 1)], "match_ids");

/// The `APPLY` script (`lua/apply.lua`; its header lists its keys and arguments).
const APPLY: &str = include_str!("lua/apply.lua");
/// The arguments of [`APPLY`], by name.
static APPLY_ARGS: Schema =
    Schema::with_rest(&[("match_id", 1), ("ttl", 1), ("limit", 1)], "writes");

/// The `IMPORT` script (`lua/import.lua`; its header lists its keys and arguments).
const IMPORT: &str = include_str!("lua/import.lua");
/// The arguments of [`IMPORT`], by name.
static IMPORT_ARGS: Schema = Schema::with_rest(
    &[
        ("request", 1),
        ("fingerprint", 1),
        ("outcomes", 1),
        ("ttl", 1),
        ("limit", 1),
    ],
    "writes",
);

/// The helpers of the offer scripts (`lua/offers.lua`).
const OFFERS: &str = include_str!("lua/offers.lua");

/// The `OFFER_CREATE` script (`lua/offer-create.lua`; its header lists its arguments).
const OFFER_CREATE: &str = include_str!("lua/offer-create.lua");
/// The arguments of [`OFFER_CREATE`], by name.
static OFFER_CREATE_ARGS: Schema = Schema::new(&[
    ("kind", 1),
    ("id", 1),
    ("owner", 1),
    ("target", 1),
    ("variant", 1),
    ("terms", 1),
    ("rating", 1),
    ("request", 1),
    ("fingerprint", 1),
    ("lifetime", 1),
    ("memory", 1),
    ("max_owner", 1),
    ("max_target", 1),
    ("max_total", 1),
    ("recent", 1),
    ("max_created", 1),
    ("window", 1),
]);

/// The `OFFER_ACCEPT` script (`lua/offer-accept.lua`; its header lists its arguments).
const OFFER_ACCEPT: &str = include_str!("lua/offer-accept.lua");
/// The arguments of [`OFFER_ACCEPT`], by name.
static OFFER_ACCEPT_ARGS: Schema = Schema::new(&[
    ("id", 1),
    ("acceptor", 1),
    ("request", 1),
    ("stale", 1),
    ("memory", 1),
]);

/// The `OFFER_FINISH` script (`lua/offer-finish.lua`; its header lists its arguments).
const OFFER_FINISH: &str = include_str!("lua/offer-finish.lua");
/// The arguments of [`OFFER_FINISH`], by name.
static OFFER_FINISH_ARGS: Schema = Schema::new(&[
    ("id", 1),
    ("request", 1),
    ("match_id", 1),
    ("follow", 1),
    ("found_ttl", 1),
    ("found", 1),
    ("memory", 1),
]);

/// The `OFFER_RELEASE` script (`lua/offer-release.lua`; its header lists its arguments).
const OFFER_RELEASE: &str = include_str!("lua/offer-release.lua");
/// The arguments of [`OFFER_RELEASE`], by name.
static OFFER_RELEASE_ARGS: Schema = Schema::new(&[("id", 1), ("request", 1), ("memory", 1)]);

/// The `OFFER_END` script (`lua/offer-end.lua`; its header lists its arguments).
const OFFER_END: &str = include_str!("lua/offer-end.lua");
/// The arguments of [`OFFER_END`], by name.
static OFFER_END_ARGS: Schema = Schema::new(&[
    ("id", 1),
    ("player", 1),
    ("by", 1),
    ("state", 1),
    ("reason", 1),
    ("memory", 1),
]);

struct Scripts {
    offer_create: Script,
    offer_accept: Script,
    offer_finish: Script,
    offer_release: Script,
    offer_end: Script,
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
    import: Script,
}

/// The prefix of every key of the store on one Redis.
const PREFIX: &str = "mm:";
/// The prefix of every key of the store on a Redis Cluster: the hash tag `{mm}` puts every key
/// in one slot, as scripts that touch several pools' and players' keys at once need.
const CLUSTER_PREFIX: &str = "mm:{mm}:";

/// A script of this store: the key prefix (`MM`), the shared basics, this store's prelude, the
/// Lua that names the arguments of `schema`, and `body`.
fn script(prefix: &str, schema: &Schema, body: &str) -> Script {
    let defs = constants(&[("MM", Constant::Text(prefix))]);
    Script::new(&format!(
        "{defs}{BASICS}{PRELUDE}{}{body}",
        schema.prologue()
    ))
}

/// An offer script: the prefix, the basics, the prelude, the offer helpers, the argument names,
/// `body`.
fn offer_script(prefix: &str, schema: &Schema, body: &str) -> Script {
    let defs = constants(&[("MM", Constant::Text(prefix))]);
    Script::new(&format!(
        "{defs}{BASICS}{PRELUDE}{OFFERS}{}{body}",
        schema.prologue()
    ))
}

/// Reads offer `id` from its hash's fields and values.
fn offer_of(id: &str, fields: &[String]) -> Result<Offer, StoreError> {
    let map: std::collections::HashMap<&str, &str> = fields
        .chunks_exact(2)
        .map(|c| (c[0].as_str(), c[1].as_str()))
        .collect();
    let bad = || corrupt(&format!("offer {id:?}"));
    let get = |f: &str| map.get(f).copied().ok_or_else(bad);
    let opt = |f: &str| {
        map.get(f)
            .copied()
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let kind = match get("k")? {
        "ch" => OfferKind::Challenge,
        "sk" => OfferKind::Seek,
        _ => return Err(bad()),
    };
    let time = |f: &str| get(f).and_then(|v| score(v).ok_or_else(bad));
    Ok(Offer {
        kind,
        // The hash names its own id (an existing offer answered for a new creation's id).
        id: map.get("i").copied().unwrap_or(id).to_owned(),
        owner: get("o")?.to_owned(),
        target: opt("t"),
        terms: Terms::decode(get("r")?).ok_or_else(bad)?,
        rating: get("g")?.parse().map_err(|_| bad())?,
        state: OfferState::from_name(get("s")?).ok_or_else(bad)?,
        reason: opt("d")
            .and_then(|d| d.parse().ok())
            .and_then(DeclineReason::from_code),
        acceptor: opt("a"),
        accept_request: opt("q"),
        match_id: opt("m"),
        found: match opt("f") {
            Some(f) => Some(crate::found::MatchFound::decode(f.as_bytes()).map_err(|_| bad())?),
            None => None,
        },
        created_at: time("c")?,
        expires_at: time("x")?,
        updated_at: time("u")?,
    })
}

/// A script's answer: its status, and the offer that follows it (if any).
fn status_and_offer(id: &str, r: &[String]) -> Result<(String, Option<Offer>), StoreError> {
    let (status, fields) = r
        .split_first()
        .ok_or_else(|| corrupt("an offer script answered nothing"))?;
    let offer = if fields.is_empty() {
        None
    } else {
        Some(offer_of(id, fields)?)
    };
    Ok((status.clone(), offer))
}

fn unavailable(e: redis::RedisError) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(what.to_owned())
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
    conn: Arc<OnceLock<Connection>>,
    scripts: Arc<Scripts>,
    /// [`PREFIX`], or [`CLUSTER_PREFIX`] on a cluster.
    prefix: &'static str,
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
        let prefix = if client.is_cluster() {
            CLUSTER_PREFIX
        } else {
            PREFIX
        };
        let offer_script = |schema, body| offer_script(prefix, schema, body);
        let script = |schema, body| script(prefix, schema, body);
        let scripts = Scripts {
            offer_create: offer_script(&OFFER_CREATE_ARGS, OFFER_CREATE),
            offer_accept: offer_script(&OFFER_ACCEPT_ARGS, OFFER_ACCEPT),
            offer_finish: offer_script(&OFFER_FINISH_ARGS, OFFER_FINISH),
            offer_release: offer_script(&OFFER_RELEASE_ARGS, OFFER_RELEASE),
            offer_end: offer_script(&OFFER_END_ARGS, OFFER_END),
            join: script(&JOIN_ARGS, JOIN),
            place: script(&PLACE_ARGS, PLACE),
            leave: script(&LEAVE_ARGS, LEAVE),
            lock: script(&LOCK_ARGS, LOCK),
            unlock: script(&UNLOCK_ARGS, UNLOCK),
            waiting: script(&WAITING_ARGS, WAITING),
            commit: script(&COMMIT_ARGS, COMMIT),
            matched: script(&MATCHED_ARGS, MATCHED),
            unmake: script(&UNMAKE_ARGS, UNMAKE),
            claim_follows: script(&CLAIM_FOLLOWS_ARGS, CLAIM_FOLLOWS),
            renew_follows: script(&RENEW_FOLLOWS_ARGS, RENEW_FOLLOWS),
            apply: script(&APPLY_ARGS, APPLY),
            import: script(&IMPORT_ARGS, IMPORT),
        };
        let all = vec![
            scripts.join.clone(),
            scripts.place.clone(),
            scripts.leave.clone(),
            scripts.lock.clone(),
            scripts.unlock.clone(),
            scripts.waiting.clone(),
            scripts.commit.clone(),
            scripts.matched.clone(),
            scripts.unmake.clone(),
            scripts.claim_follows.clone(),
            scripts.renew_follows.clone(),
            scripts.apply.clone(),
            scripts.import.clone(),
            scripts.offer_create.clone(),
            scripts.offer_accept.clone(),
            scripts.offer_finish.clone(),
            scripts.offer_release.clone(),
            scripts.offer_end.clone(),
        ];
        Ok(RedisStore {
            conn: connect_in_background(client, "matchmaking store", all),
            scripts: Arc::new(scripts),
            prefix,
        })
    }

    /// [`RedisStore::open`], waiting up to 10 s for the connection (tests and tools): `redis` is
    /// a URL or a whole [`RedisConfig`].
    ///
    /// # Errors
    /// A bad URL, or no connection within 10 s.
    pub async fn connect(redis: impl Into<RedisConfig>) -> Result<RedisStore, StoreError> {
        let store = RedisStore::open(&redis.into())?;
        if wait_connected(&store.conn, Duration::from_secs(10)).await {
            Ok(store)
        } else {
            Err(StoreError::Unavailable("cannot connect to Redis".into()))
        }
    }

    /// The store's key `name` (`mm:<name>`; on a cluster `mm:{mm}:<name>`).
    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    fn conn(&self) -> Result<Connection, StoreError> {
        self.conn
            .get()
            .cloned()
            .ok_or_else(|| StoreError::Unavailable("not connected to Redis yet".into()))
    }

    /// Runs `script` with `args` (laid out by its schema).
    async fn run<T: redis::FromRedisValue>(
        &self,
        script: &Script,
        args: Args,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn()?;
        // The scripts name their keys from their arguments; these two keys (never written)
        // route each to the store's slot on a cluster. Two, and never there: while the slot
        // migrates, Redis answers TRYAGAIN (which the client retries) instead of running a
        // script on half-moved keys.
        let mut invocation = script.key(self.key("route"));
        invocation.key(self.key("route:2"));
        for a in args.slots().map_err(StoreError::Corrupt)? {
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
    subscriber: arbiter_redis_conn::Subscriber,
    on_event: F,
    shutdown: tokio::sync::watch::Receiver<bool>,
) where
    F: Fn(Event) + Send + 'static,
{
    let on_message = |heard: arbiter_redis_conn::Heard| {
        let arbiter_redis_conn::Heard::Message { payload, .. } = heard else {
            return;
        };
        let Ok(text) = std::str::from_utf8(&payload) else {
            return;
        };
        if let Some(p) = text.strip_prefix('p') {
            on_event(Event::Player(p.to_owned()));
        } else if let Some(p) = text.strip_prefix('w') {
            on_event(Event::Pool(p.to_owned()));
        }
    };
    subscriber
        .follow(EVENTS, "matchmaking events", on_message, shutdown)
        .await;
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
        let mut args = JOIN_ARGS.args();
        args.set("pool", pool)
            .set("player", &entry.player)
            .set("session", entry.session)
            .set("record", entry.encode())
            .set("lease_ms", lease_ms)
            .set("max_waiting", max_waiting)
            .set("max_pools", max_pools);
        let r: Vec<redis::Value> = self.run(&self.scripts.join, args).await?;
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
        let mut args = PLACE_ARGS.args();
        args.set("pool", pool)
            .set("player", player)
            .set("session", session)
            .set("lease_ms", lease_ms);
        let r: Vec<String> = self.run(&self.scripts.place, args).await?;
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
        let mut args = LEAVE_ARGS.args();
        args.set("player", player)
            .set("session", session.map_or(String::new(), |s| s.to_string()));
        let left: i64 = self.run(&self.scripts.leave, args).await?;
        Ok(left == 1)
    }

    async fn pools(&self) -> Result<Vec<String>, StoreError> {
        let mut conn = self.conn()?;
        let mut pools: Vec<String> = redis::cmd("SMEMBERS")
            .arg(self.key("pools"))
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        pools.sort_unstable();
        Ok(pools)
    }

    async fn lock(&self, pool: &str, lease_ms: u64) -> Result<Option<u64>, StoreError> {
        let mut args = LOCK_ARGS.args();
        args.set("pool", pool).set("lease_ms", lease_ms);
        self.run(&self.scripts.lock, args).await
    }

    async fn unlock(&self, pool: &str, fence: u64) -> Result<(), StoreError> {
        let mut args = UNLOCK_ARGS.args();
        args.set("pool", pool).set("fence", fence);
        let _: i64 = self.run(&self.scripts.unlock, args).await?;
        Ok(())
    }

    async fn waiting(&self, pool: &str) -> Result<Vec<Waiting>, StoreError> {
        let mut args = WAITING_ARGS.args();
        args.set("pool", pool);
        let r: Vec<String> = self.run(&self.scripts.waiting, args).await?;
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
        let packed: Vec<String> = pairings
            .iter()
            .map(|p| {
                let mut items = vec![p.id.as_str()];
                items.extend(p.members.iter().map(String::as_str));
                pack(&items)
            })
            .collect();
        let mut args = COMMIT_ARGS.args();
        args.set("pool", pool)
            .set("fence", fence)
            .set("pairings", pack(&packed))
            .set("unpaired", pack(unpaired));
        let done: Option<Vec<i64>> = self.run(&self.scripts.commit, args).await?;
        Ok(done.map(|d| d.into_iter().map(|x| x == 1).collect()))
    }

    async fn making(&self, pool: &str) -> Result<Vec<Making>, StoreError> {
        let mut conn = self.conn()?;
        let all: Vec<(String, String)> = redis::cmd("HGETALL")
            .arg(self.key(&format!("q:{{{pool}}}:k")))
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
        let found: Vec<String> = found
            .iter()
            .flat_map(|f| [f.player.clone(), f.match_id.clone(), f.found.encode()])
            .collect();
        let histories: Vec<String> = histories
            .iter()
            .flat_map(|(player, h)| [player.clone(), h.encode()])
            .collect();
        let mut args = MATCHED_ARGS.args();
        args.set("pool", pool)
            .set("pairing", pairing)
            .set("match_id", &follow.match_id)
            .set("follow", follow.encode())
            .set("found_ttl", FOUND_TTL_MS)
            .set("found", pack(&found))
            .set("histories", pack(&histories));
        let fresh: i64 = self.run(&self.scripts.matched, args).await?;
        Ok(fresh == 1)
    }

    async fn unmake(&self, pool: &str, pairing: &str) -> Result<bool, StoreError> {
        let mut args = UNMAKE_ARGS.args();
        args.set("pool", pool).set("pairing", pairing);
        let r: i64 = self.run(&self.scripts.unmake, args).await?;
        Ok(r == 1)
    }

    async fn found(&self, player: &str) -> Result<Vec<Found>, StoreError> {
        let mut conn = self.conn()?;
        let all: Vec<(String, Vec<u8>)> = redis::cmd("HGETALL")
            .arg(self.key(&format!("found:{player}")))
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        all.into_iter()
            .map(|(match_id, stored)| {
                let found = crate::legacy::read_stored(&stored).map_err(|e| {
                    StoreError::Corrupt(format!("stored match found {match_id} is corrupt: {e}"))
                })?;
                Ok(Found {
                    player: player.to_owned(),
                    match_id,
                    found,
                })
            })
            .collect()
    }

    async fn acknowledge(&self, player: &str, match_id: &str) -> Result<bool, StoreError> {
        let mut conn = self.conn()?;
        let n: i64 = redis::cmd("HDEL")
            .arg(self.key(&format!("found:{player}")))
            .arg(match_id)
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        Ok(n == 1)
    }

    async fn history(&self, player: &str) -> Result<History, StoreError> {
        let mut conn = self.conn()?;
        let h: Option<String> = redis::cmd("HGET")
            .arg(self.key("h"))
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
            .arg(self.key(&format!("r:{player}")))
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        all.sort_unstable();
        Ok(all)
    }

    async fn claim_follows(&self, lease_ms: u64, max: usize) -> Result<Vec<Follow>, StoreError> {
        let mut args = CLAIM_FOLLOWS_ARGS.args();
        args.set("lease_ms", lease_ms).set("max", max);
        let r: Vec<String> = self.run(&self.scripts.claim_follows, args).await?;
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
                        .arg(self.key("follow"))
                        .arg(&c[0])
                        .ignore()
                        .cmd("HDEL")
                        .arg(self.key("follow:d"))
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
            let mut args = RENEW_FOLLOWS_ARGS.args();
            args.set("lease_ms", lease_ms).rest(chunk);
            let _: i64 = self.run(&self.scripts.renew_follows, args).await?;
        }
        Ok(())
    }

    async fn apply_ratings(
        &self,
        match_id: &str,
        writes: &[RatingWrite],
        history_limit: usize,
    ) -> Result<Applied, StoreError> {
        let mut args = APPLY_ARGS.args();
        args.set("match_id", match_id)
            .set("ttl", RATED_TTL_MS)
            .set("limit", history_limit.max(1))
            .rest(writes.iter().map(|w| {
                pack(&[
                    w.player.as_str(),
                    &w.key,
                    w.old.as_deref().unwrap_or(""),
                    &w.new,
                    &w.change,
                ])
            }));
        let r: String = self.run(&self.scripts.apply, args).await?;
        match r.as_str() {
            "done" => Ok(Applied::Done),
            "already" => Ok(Applied::Already),
            "conflict" => Ok(Applied::Conflict),
            other => Err(corrupt(&format!("apply answered {other:?}"))),
        }
    }

    async fn import_ratings(
        &self,
        request: &str,
        fingerprint: &str,
        outcomes: &str,
        writes: &[ImportWrite],
        history_limit: usize,
    ) -> Result<Imported, StoreError> {
        let mut args = IMPORT_ARGS.args();
        args.set("request", request)
            .set("fingerprint", fingerprint)
            .set("outcomes", outcomes)
            .set("ttl", IMPORT_MEMORY_MS)
            .set("limit", history_limit.max(1))
            .rest(writes.iter().map(|w| {
                let (new, change) = w
                    .new
                    .as_ref()
                    .map_or(("", ""), |(n, c)| (n.as_str(), c.as_str()));
                pack(&[
                    w.player.as_str(),
                    &w.key,
                    w.old.as_deref().unwrap_or(""),
                    new,
                    change,
                ])
            }));
        let r: Vec<String> = self.run(&self.scripts.import, args).await?;
        match r.as_slice() {
            [done] if done == "done" => Ok(Imported::Done),
            [conflict] if conflict == "conflict" => Ok(Imported::Conflict),
            [replayed, fingerprint, outcomes] if replayed == "replayed" => Ok(Imported::Replayed {
                fingerprint: fingerprint.clone(),
                outcomes: outcomes.clone(),
            }),
            other => Err(corrupt(&format!("import answered {other:?}"))),
        }
    }

    async fn rating_history(
        &self,
        player: &str,
        key: &str,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        let mut conn = self.conn()?;
        let items: Vec<String> = redis::cmd("LRANGE")
            .arg(self.key(&format!("rh:{key}:{player}")))
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        items
            .iter()
            .map(|item| match unpack(item).as_deref() {
                Some([seq, change]) => seq
                    .parse()
                    .ok()
                    .map(|seq| (seq, change.clone()))
                    .ok_or_else(|| corrupt(&format!("rating history of player {player:?}"))),
                _ => Err(corrupt(&format!("rating history of player {player:?}"))),
            })
            .collect()
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

impl RedisStore {
    /// The offers `ids` (those still remembered), read in one round trip.
    async fn offers(&self, ids: &[String]) -> Result<Vec<Offer>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.conn()?;
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.cmd("HGETALL").arg(self.key(&format!("of:{id}")));
        }
        let all: Vec<Vec<String>> = pipe.query_async(&mut conn).await.map_err(unavailable)?;
        ids.iter()
            .zip(all)
            .filter(|(_, fields)| !fields.is_empty())
            .map(|(id, fields)| offer_of(id, &fields))
            .collect()
    }
}

impl OfferStore for RedisStore {
    async fn create_offer(
        &self,
        offer: &NewOffer,
        limits: OfferLimits,
    ) -> Result<Created, StoreError> {
        let mut args = OFFER_CREATE_ARGS.args();
        args.set("kind", offer.kind.tag())
            .set("id", &offer.id)
            .set("owner", &offer.owner)
            .set("target", offer.target.as_deref().unwrap_or(""))
            .set("variant", offer.terms.variant.name())
            .set("terms", offer.terms.encode())
            .set("rating", offer.rating)
            .set("request", &offer.request_id)
            .set("fingerprint", offer.fingerprint())
            .set("lifetime", offer.lifetime_ms)
            .set("memory", OFFER_MEMORY_MS)
            .set("max_owner", limits.per_owner)
            .set("max_target", limits.per_target)
            .set("max_total", limits.total)
            .set("recent", RECENT_CHALLENGES)
            .set("max_created", limits.created)
            .set("window", limits.window_ms.max(1));
        let r: Vec<String> = self.run(&self.scripts.offer_create, args).await?;
        let (status, filed) = status_and_offer(&offer.id, &r)?;
        let filed = || filed.ok_or_else(|| corrupt("create answered no offer"));
        Ok(match status.as_str() {
            "new" => Created::New(filed()?),
            "existing" => Created::Existing(filed()?),
            "conflict" => Created::Conflict,
            "owner" => Created::OwnerFull,
            "created" => Created::OwnerRate,
            "target" => Created::TargetFull,
            "lobby" => Created::LobbyFull,
            other => return Err(corrupt(&format!("create answered {other:?}"))),
        })
    }

    async fn offer(&self, id: &str) -> Result<Option<Offer>, StoreError> {
        Ok(self.offers(&[id.to_owned()]).await?.pop())
    }

    async fn begin_accept(
        &self,
        id: &str,
        acceptor: &str,
        request: &str,
        stale_ms: u64,
    ) -> Result<Accepting, StoreError> {
        let mut args = OFFER_ACCEPT_ARGS.args();
        args.set("id", id)
            .set("acceptor", acceptor)
            .set("request", request)
            .set("stale", stale_ms)
            .set("memory", OFFER_MEMORY_MS);
        let r: Vec<String> = self.run(&self.scripts.offer_accept, args).await?;
        if let [status, player] = r.as_slice()
            && status == "busy"
        {
            return Ok(Accepting::Busy(player.clone()));
        }
        let (status, offer) = status_and_offer(id, &r)?;
        let offer = || offer.ok_or_else(|| corrupt("accept answered no offer"));
        Ok(match status.as_str() {
            "started" => Accepting::Started(offer()?),
            "again" => Accepting::Again(offer()?),
            "resumed" => Accepting::Resumed(offer()?),
            "notopen" => Accepting::NotOpen(offer()?),
            "missing" => Accepting::Missing,
            other => return Err(corrupt(&format!("accept answered {other:?}"))),
        })
    }

    async fn finish_accept(
        &self,
        id: &str,
        request: &str,
        found: &[Found],
        follow: &Follow,
    ) -> Result<Option<(Offer, bool)>, StoreError> {
        let found: Vec<String> = found
            .iter()
            .flat_map(|f| [f.player.clone(), f.match_id.clone(), f.found.encode()])
            .collect();
        let mut args = OFFER_FINISH_ARGS.args();
        args.set("id", id)
            .set("request", request)
            .set("match_id", &follow.match_id)
            .set("follow", follow.encode())
            .set("found_ttl", FOUND_TTL_MS)
            .set("found", pack(&found))
            .set("memory", OFFER_MEMORY_MS);
        let r: Vec<String> = self.run(&self.scripts.offer_finish, args).await?;
        let (status, offer) = status_and_offer(id, &r)?;
        Ok(match (status.as_str(), offer) {
            ("done", Some(o)) => Some((o, true)),
            ("other", Some(o)) => Some((o, false)),
            ("missing", _) => None,
            (other, _) => return Err(corrupt(&format!("finish answered {other:?}"))),
        })
    }

    async fn stale_accepts(&self, stale_ms: u64) -> Result<Vec<String>, StoreError> {
        let now = self.now().await?;
        let mut conn = self.conn()?;
        redis::cmd("ZRANGEBYSCORE")
            .arg(self.key("ofa"))
            .arg("-inf")
            .arg(now.saturating_sub(stale_ms))
            .query_async(&mut conn)
            .await
            .map_err(unavailable)
    }

    async fn release_accept(&self, id: &str, request: &str) -> Result<bool, StoreError> {
        let mut args = OFFER_RELEASE_ARGS.args();
        args.set("id", id)
            .set("request", request)
            .set("memory", OFFER_MEMORY_MS);
        let r: i64 = self.run(&self.scripts.offer_release, args).await?;
        Ok(r == 1)
    }

    async fn end_offer(
        &self,
        id: &str,
        player: &str,
        by_owner: bool,
        state: OfferState,
        reason: u8,
    ) -> Result<Ended, StoreError> {
        let mut args = OFFER_END_ARGS.args();
        args.set("id", id)
            .set("player", player)
            .set("by", if by_owner { "o" } else { "t" })
            .set("state", state.name())
            .set("reason", reason)
            .set("memory", OFFER_MEMORY_MS);
        let r: Vec<String> = self.run(&self.scripts.offer_end, args).await?;
        let (status, offer) = status_and_offer(id, &r)?;
        let offer = || offer.ok_or_else(|| corrupt("end answered no offer"));
        Ok(match status.as_str() {
            "done" => Ended::Done(offer()?),
            "notyours" => Ended::NotYours(offer()?),
            "notopen" => Ended::NotOpen(offer()?),
            "missing" => Ended::Missing,
            other => return Err(corrupt(&format!("end answered {other:?}"))),
        })
    }

    async fn challenges_of(&self, player: &str) -> Result<Vec<Offer>, StoreError> {
        let mut conn = self.conn()?;
        let ids: Vec<String> = redis::cmd("ZRANGE")
            .arg(self.key(&format!("ofr:{player}")))
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        self.offers(&ids).await
    }

    async fn seeks(
        &self,
        variant: Option<arbiter_core::Variant>,
    ) -> Result<Vec<Offer>, StoreError> {
        let now = self.now().await?;
        let key = match variant {
            Some(v) => self.key(&format!("seeks:{}", v.name())),
            None => self.key("seeks"),
        };
        let mut conn = self.conn()?;
        let ids: Vec<String> = redis::cmd("ZRANGEBYSCORE")
            .arg(&key)
            .arg(format!("({now}"))
            .arg("+inf")
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        let mut seeks: Vec<Offer> = self
            .offers(&ids)
            .await?
            .into_iter()
            .filter(|o| o.state == OfferState::Open && o.expires_at > now)
            .collect();
        seeks.sort_by(|a, b| (a.expires_at, &a.id).cmp(&(b.expires_at, &b.id)));
        Ok(seeks)
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
        assert_eq!(pack(&["abc", "", "x:"]), "3:abc0:2:x:");
        assert_eq!(score("1700000000123"), Some(1_700_000_000_123));
        assert_eq!(score("-1"), None);
    }
}
