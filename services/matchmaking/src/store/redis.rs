//! Pools, places, found matches and ratings in Redis, shared by every replica. Each step is a
//! Lua script at Redis's `TIME` (so replicas share one clock), touching the keys of one slot:
//! either one pool's, or the players' (everything else). An operation that concerns both runs
//! one script in each, in an order that the players' slot decides (below).
//!
//! Keys (`P` a pool's name, which holds no braces):
//! - a pool's, in its own slot on a cluster (the tag `{P}`): `mm:q:{P}:e` (entry records by
//!   player, each starting with its join session), `:l` (lease ends), `:j` (join times, for
//!   positions), `:w` (missed waves), `:m` (the wave lock's end and fencing number, the mean
//!   wait), `:k` (pairings being made, with their players' places), `:km` (player to the
//!   pairing being made for them);
//! - `mm:pools`: the set of pools with players or pairings;
//! - `mm:who`: each player's state (`w` P session: waiting; `m` P pairing, `gone` after it when
//!   they left meanwhile: being matched; `o`: an offer's accept, below);
//!   `mm:made:<pairing>`: a pairing whose match was recorded (its match id; kept a day);
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
//! On a Redis Cluster every key but the pools' starts with `mm:{mm}:` instead of `mm:`
//! (`mm:{mm}:who`): the hash tag `{mm}` keeps the players' side in one slot, since one step
//! there changes several players at once (both players of a pairing or an offer, a rated
//! result). The pools' keys are the same as on one Redis, each pool in its own slot.
//!
//! **The two sides.** `mm:who` decides; a pool's places follow it, one step behind:
//! - a join marks the player waiting in the new pool (JOIN), adds the place (JOIN_POOL; a full
//!   pool: UNJOIN gives the old state back), then drops the old place (DROP); a leave and an
//!   offer's accept change the state first, then DROP the place;
//! - a wave commits its pairings in the pool (COMMIT: the places move into `:k`), then CLAIMs
//!   them: a pairing stands only where each player's state still names that place (pool and
//!   session), and its players are then marked by it, all in one script. A place whose player
//!   moved on (a ghost: a step of a join, leave or accept not yet done in the pool, or never
//!   done because its replica stopped) makes its pairing void: the others go back into the
//!   pool (UNMAKE_POOL), no match is made. A pairing committed by a wave that stopped before
//!   its claim is claimed by the next wave (`making`);
//! - a made match is recorded on the players' side first (MATCHED: `mm:made:<pairing>`, the
//!   found matches, the marks cleared), then in the pool (MATCHED_POOL); a failed one is undone
//!   there first (UNMAKE: the marks back to waiting), then in the pool (UNMAKE_POOL). Either
//!   order leaves a pairing the next wave's claim finishes the right way (`made`) or makes
//!   again;
//! - a mark whose pairing its pool no longer holds (lost with a primary's last writes in a
//!   failover, or left by an older layout) is forgotten by the player's next join (UNSTICK).
//!
//! A pool emptied by a wave leaves `mm:pools` (then the pool is looked at again, and listed
//! again if a place arrived meanwhile); a join whose place is the pool's first lists it again
//! after its pool step, and every join lists its pool in its first step. A replica that stops
//! between taking a pool off the list and looking again can leave a pool with players (those
//! who joined in that moment) unlisted until the pool's next join.

use super::{
    Applied, Found, IMPORT_MEMORY_MS, ImportWrite, Imported, Joined, OFFER_MEMORY_MS, OfferStore,
    Place, PoolStore, RECENT_CHALLENGES, RatingWrite, Standing, StoreError,
};
use crate::found::{pack, unpack};
use crate::offer::{
    Accepting, Created, DeclineReason, Ended, NewOffer, Offer, OfferKind, OfferLimits, OfferState,
    Terms,
};
use crate::pool::{Entry, FIELD, Follow, History, Making, Pairing, Waiting};
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
static JOIN_ARGS: Schema =
    Schema::new(&[("pool", 1), ("player", 1), ("session", 1), ("max_pools", 1)]);

/// The `UNSTICK` script (`lua/unstick.lua`; its header lists its keys and arguments).
const UNSTICK: &str = include_str!("lua/unstick.lua");
/// The arguments of [`UNSTICK`], by name.
static UNSTICK_ARGS: Schema = Schema::new(&[("player", 1), ("mark", 1), ("pairing", 1)]);

/// The `JOIN_POOL` script (`lua/join-pool.lua`; its header lists its keys and arguments).
const JOIN_POOL: &str = include_str!("lua/join-pool.lua");
/// The arguments of [`JOIN_POOL`], by name.
static JOIN_POOL_ARGS: Schema = Schema::new(&[
    ("pool", 1),
    ("player", 1),
    ("record", 1),
    ("lease_ms", 1),
    ("max_waiting", 1),
]);

/// The `UNJOIN` script (`lua/unjoin.lua`; its header lists its keys and arguments).
const UNJOIN: &str = include_str!("lua/unjoin.lua");
/// The arguments of [`UNJOIN`], by name.
static UNJOIN_ARGS: Schema = Schema::new(&[("player", 1), ("now", 1)]);

/// The `DROP` script (`lua/drop.lua`; its header lists its keys and arguments).
const DROP: &str = include_str!("lua/drop.lua");
/// The arguments of [`DROP`], by name.
static DROP_ARGS: Schema = Schema::new(&[("pool", 1), ("places", 1)]);

/// The `LIVE` script (`lua/live.lua`; its header lists its keys and arguments).
const LIVE: &str = include_str!("lua/live.lua");
/// The arguments of [`LIVE`], by name.
static LIVE_ARGS: Schema = Schema::new(&[("pool", 1), ("places", 1)]);

/// The `PLACE` script (`lua/place.lua`; its header lists its keys and arguments).
const PLACE: &str = include_str!("lua/place.lua");
/// The arguments of [`PLACE`], by name.
static PLACE_ARGS: Schema =
    Schema::new(&[("pool", 1), ("player", 1), ("session", 1), ("lease_ms", 1)]);

/// The `PLACE_WHO` script (`lua/place-who.lua`; its header lists its keys and arguments).
const PLACE_WHO: &str = include_str!("lua/place-who.lua");
/// The arguments of [`PLACE_WHO`], by name.
static PLACE_WHO_ARGS: Schema = Schema::new(&[("player", 1)]);

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

/// The `UNWHO` script (`lua/unwho.lua`; its header lists its keys and arguments).
const UNWHO: &str = include_str!("lua/unwho.lua");
/// The arguments of [`UNWHO`], by name.
static UNWHO_ARGS: Schema = Schema::new(&[("pool", 1), ("places", 1)]);

/// The `COMMIT` script (`lua/commit.lua`; its header lists its keys and arguments).
const COMMIT: &str = include_str!("lua/commit.lua");
/// The arguments of [`COMMIT`], by name. The pairings are one packed argument, not a list at the
/// end: a wave may pair more players than Lua's `unpack` takes (about 8,000 values).
static COMMIT_ARGS: Schema =
    Schema::new(&[("pool", 1), ("fence", 1), ("pairings", 1), ("unpaired", 1)]);

/// The `CLAIM` script (`lua/claim.lua`; its header lists its keys and arguments).
const CLAIM: &str = include_str!("lua/claim.lua");
/// The arguments of [`CLAIM`], by name.
static CLAIM_ARGS: Schema = Schema::new(&[("pool", 1), ("pairings", 1)]);

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

/// The `MATCHED_POOL` script (`lua/matched-pool.lua`; its header lists its keys and arguments).
const MATCHED_POOL: &str = include_str!("lua/matched-pool.lua");
/// The arguments of [`MATCHED_POOL`], by name.
static MATCHED_POOL_ARGS: Schema = Schema::new(&[("pool", 1), ("pairing", 1)]);

/// The `UNMAKE` script (`lua/unmake.lua`; its header lists its keys and arguments).
const UNMAKE: &str = include_str!("lua/unmake.lua");
/// The arguments of [`UNMAKE`], by name.
static UNMAKE_ARGS: Schema =
    Schema::new(&[("pool", 1), ("pairing", 1), ("members", 1), ("ttl", 1)]);

/// The `UNMAKE_POOL` script (`lua/unmake-pool.lua`; its header lists its keys and arguments).
const UNMAKE_POOL: &str = include_str!("lua/unmake-pool.lua");
/// The arguments of [`UNMAKE_POOL`], by name.
static UNMAKE_POOL_ARGS: Schema = Schema::new(&[("pool", 1), ("pairing", 1), ("back", 1)]);

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
    join_pool: Script,
    unjoin: Script,
    unstick: Script,
    drop: Script,
    live: Script,
    place: Script,
    place_who: Script,
    leave: Script,
    lock: Script,
    unlock: Script,
    waiting: Script,
    unwho: Script,
    commit: Script,
    claim: Script,
    matched: Script,
    matched_pool: Script,
    unmake: Script,
    unmake_pool: Script,
    claim_follows: Script,
    renew_follows: Script,
    apply: Script,
    import: Script,
}

/// The prefix of every key of the store but the pools' on one Redis.
const PREFIX: &str = "mm:";
/// The prefix of every key of the store but the pools' on a Redis Cluster: the hash tag `{mm}`
/// puts them in one slot, as scripts that touch several players' keys at once need.
const CLUSTER_PREFIX: &str = "mm:{mm}:";
/// The prefix of a pool's keys, on one Redis and on a cluster alike: `mm:q:{<pool>}:…`, the
/// pool's name its hash tag.
const POOL_PREFIX: &str = "mm:q:";

/// A script of this store: the key prefix (`MM`), the shared basics, this store's prelude, the
/// Lua that names the arguments of `schema`, and `body`.
fn script(prefix: &str, schema: &Schema, body: &str) -> Script {
    let defs = constants(&[
        ("MM", Constant::Text(prefix)),
        ("MQ", Constant::Text(POOL_PREFIX)),
    ]);
    Script::new(&format!(
        "{defs}{BASICS}{PRELUDE}{}{body}",
        schema.prologue()
    ))
}

/// An offer script: the prefix, the basics, the prelude, the offer helpers, the argument names,
/// `body`.
fn offer_script(prefix: &str, schema: &Schema, body: &str) -> Script {
    let defs = constants(&[
        ("MM", Constant::Text(prefix)),
        ("MQ", Constant::Text(POOL_PREFIX)),
    ]);
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
            join_pool: script(&JOIN_POOL_ARGS, JOIN_POOL),
            unjoin: script(&UNJOIN_ARGS, UNJOIN),
            unstick: script(&UNSTICK_ARGS, UNSTICK),
            drop: script(&DROP_ARGS, DROP),
            live: script(&LIVE_ARGS, LIVE),
            place: script(&PLACE_ARGS, PLACE),
            place_who: script(&PLACE_WHO_ARGS, PLACE_WHO),
            leave: script(&LEAVE_ARGS, LEAVE),
            lock: script(&LOCK_ARGS, LOCK),
            unlock: script(&UNLOCK_ARGS, UNLOCK),
            waiting: script(&WAITING_ARGS, WAITING),
            unwho: script(&UNWHO_ARGS, UNWHO),
            commit: script(&COMMIT_ARGS, COMMIT),
            claim: script(&CLAIM_ARGS, CLAIM),
            matched: script(&MATCHED_ARGS, MATCHED),
            matched_pool: script(&MATCHED_POOL_ARGS, MATCHED_POOL),
            unmake: script(&UNMAKE_ARGS, UNMAKE),
            unmake_pool: script(&UNMAKE_POOL_ARGS, UNMAKE_POOL),
            claim_follows: script(&CLAIM_FOLLOWS_ARGS, CLAIM_FOLLOWS),
            renew_follows: script(&RENEW_FOLLOWS_ARGS, RENEW_FOLLOWS),
            apply: script(&APPLY_ARGS, APPLY),
            import: script(&IMPORT_ARGS, IMPORT),
        };
        let all = vec![
            scripts.join.clone(),
            scripts.join_pool.clone(),
            scripts.unjoin.clone(),
            scripts.unstick.clone(),
            scripts.drop.clone(),
            scripts.live.clone(),
            scripts.place.clone(),
            scripts.place_who.clone(),
            scripts.leave.clone(),
            scripts.lock.clone(),
            scripts.unlock.clone(),
            scripts.waiting.clone(),
            scripts.unwho.clone(),
            scripts.commit.clone(),
            scripts.claim.clone(),
            scripts.matched.clone(),
            scripts.matched_pool.clone(),
            scripts.unmake.clone(),
            scripts.unmake_pool.clone(),
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

    /// A key of `pool`'s (`mm:q:{<pool>}:<name>`), in the pool's own slot.
    fn pool_key(pool: &str, name: &str) -> String {
        format!("{POOL_PREFIX}{{{pool}}}:{name}")
    }

    /// Runs `script` with `args` (laid out by its schema) in the store's slot.
    async fn run<T: redis::FromRedisValue>(
        &self,
        script: &Script,
        args: Args,
    ) -> Result<T, StoreError> {
        self.run_at(script, [self.key("route"), self.key("route:2")], args)
            .await
    }

    /// Runs `script` with `args` in `pool`'s slot.
    async fn run_in<T: redis::FromRedisValue>(
        &self,
        pool: &str,
        script: &Script,
        args: Args,
    ) -> Result<T, StoreError> {
        let route = [
            Self::pool_key(pool, "route"),
            Self::pool_key(pool, "route:2"),
        ];
        self.run_at(script, route, args).await
    }

    async fn run_at<T: redis::FromRedisValue>(
        &self,
        script: &Script,
        route: [String; 2],
        args: Args,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn()?;
        // The scripts name their keys from their arguments; these two keys (never written)
        // route each to its slot on a cluster. Two, and never there: while the slot migrates,
        // Redis answers TRYAGAIN (which the client retries) instead of running a script on
        // half-moved keys.
        let [first, second] = route;
        let mut invocation = script.key(first);
        invocation.key(second);
        for a in args.slots().map_err(StoreError::Corrupt)? {
            invocation.arg(a);
        }
        invocation
            .invoke_async(&mut conn)
            .await
            .map_err(unavailable)
    }

    /// Lists `pool` again (after a step in its slot found it empty before: a wave that saw it
    /// empty may have taken it off the list meanwhile).
    async fn list_pool(&self, pool: &str) -> Result<(), StoreError> {
        let mut conn = self.conn()?;
        let _: i64 = redis::cmd("SADD")
            .arg(self.key("pools"))
            .arg(pool)
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    /// Takes an empty `pool` off the list, and lists it again if a place or pairing arrived
    /// meanwhile (a join that arrives after this check lists it itself: [`JOIN_POOL`]'s
    /// answer).
    async fn unlist_pool(&self, pool: &str) -> Result<(), StoreError> {
        let mut conn = self.conn()?;
        let _: i64 = redis::cmd("SREM")
            .arg(self.key("pools"))
            .arg(pool)
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        let held: Result<i64, _> = redis::cmd("EXISTS")
            .arg(Self::pool_key(pool, "e"))
            .arg(Self::pool_key(pool, "k"))
            .query_async(&mut conn)
            .await;
        match held {
            Ok(0) => Ok(()),
            Ok(_) => self.list_pool(pool).await,
            Err(e) => {
                // Unknown: listed again, so that a pool with players is not left off the list
                // (an empty one leaves it at its next wave).
                let _ = self.list_pool(pool).await;
                Err(unavailable(e))
            }
        }
    }

    /// Takes `player`'s place held by `session` (any, when empty) out of `pool`.
    async fn drop_place(&self, pool: &str, player: &str, session: &str) -> Result<(), StoreError> {
        self.drop_places(pool, &pack(&[player, session])).await
    }

    /// Takes places out of `pool` (`places`: player and session, each, packed), each only when
    /// it is still that session's.
    async fn drop_places(&self, pool: &str, places: &str) -> Result<(), StoreError> {
        let mut args = DROP_ARGS.args();
        args.set("pool", pool).set("places", places);
        let _: i64 = self.run_in(pool, &self.scripts.drop, args).await?;
        Ok(())
    }

    /// Claims committed pairings for their players (each: its id, and its players and their
    /// sessions packed): per pairing, `true` when claimed; `false` when void (some player's
    /// state moved on: the pairing is unmade, the others back in the pool) or its match was
    /// recorded already (the pairing is finished).
    async fn claim(&self, pool: &str, pairings: &[(&str, &str)]) -> Result<Vec<bool>, StoreError> {
        if pairings.is_empty() {
            return Ok(Vec::new());
        }
        let packed: Vec<String> = pairings.iter().map(|(id, m)| pack(&[*id, *m])).collect();
        let mut args = CLAIM_ARGS.args();
        args.set("pool", pool).set("pairings", pack(&packed));
        let r: Vec<String> = self.run(&self.scripts.claim, args).await?;
        if r.len() != pairings.len() {
            return Err(corrupt("claim answered another number of pairings"));
        }
        let mut claimed = Vec::with_capacity(r.len());
        for ((pairing, members), answer) in pairings.iter().zip(r) {
            let answer = unpack(&answer).ok_or_else(|| corrupt("claim's answer"))?;
            match answer.split_first() {
                Some((s, _)) if s == "ok" => claimed.push(true),
                Some((s, _)) if s == "made" => {
                    self.matched_pool(pool, pairing).await?;
                    claimed.push(false);
                }
                Some((s, void)) if s == "void" || s == "undone" => {
                    let players = unpack(members).ok_or_else(|| corrupt("pairing members"))?;
                    let back: Vec<&str> = players
                        .chunks_exact(2)
                        .map(|m| m[0].as_str())
                        .filter(|p| !void.iter().any(|v| v == p))
                        .collect();
                    tracing::info!(%pool, %pairing, ?void, "a pairing was void: players had moved on");
                    self.unmake_pool(pool, pairing, &back).await?;
                    claimed.push(false);
                }
                _ => return Err(corrupt("claim answered nothing")),
            }
        }
        Ok(claimed)
    }

    /// Forgets `player`'s `mark` (being matched by a pool's pairing) when the pairing is no
    /// longer in its pool and no match was recorded for it ([`UNSTICK`]): true when it did.
    async fn unstick(&self, player: &str, mark: &str) -> Result<bool, StoreError> {
        let fields: Vec<&str> = mark.split(FIELD).collect();
        let (pool, pairing) = match fields.as_slice() {
            ["m", pool] | ["m", pool, "gone"] => (*pool, ""),
            ["m", pool, pairing] | ["m", pool, pairing, "gone"] => (*pool, *pairing),
            _ => return Ok(false),
        };
        let mut conn = self.conn()?;
        let present: bool = if pairing.is_empty() {
            // The older form names no pairing: any pairing of the pool may be its.
            redis::cmd("EXISTS")
                .arg(Self::pool_key(pool, "k"))
                .query_async(&mut conn)
                .await
                .map_err(unavailable)?
        } else {
            redis::cmd("HEXISTS")
                .arg(Self::pool_key(pool, "k"))
                .arg(pairing)
                .query_async(&mut conn)
                .await
                .map_err(unavailable)?
        };
        if present {
            return Ok(false);
        }
        let mut args = UNSTICK_ARGS.args();
        args.set("player", player)
            .set("mark", mark)
            .set("pairing", pairing);
        let done: i64 = self.run(&self.scripts.unstick, args).await?;
        if done == 1 {
            tracing::warn!(%player, %pool, %pairing, "a player's mark named a pairing its pool no longer holds: forgotten");
        }
        Ok(done == 1)
    }

    async fn matched_pool(&self, pool: &str, pairing: &str) -> Result<(), StoreError> {
        let mut args = MATCHED_POOL_ARGS.args();
        args.set("pool", pool).set("pairing", pairing);
        let _: i64 = self.run_in(pool, &self.scripts.matched_pool, args).await?;
        Ok(())
    }

    async fn unmake_pool(
        &self,
        pool: &str,
        pairing: &str,
        back: &[&str],
    ) -> Result<bool, StoreError> {
        let mut args = UNMAKE_POOL_ARGS.args();
        args.set("pool", pool)
            .set("pairing", pairing)
            .set("back", pack(back));
        let r: i64 = self.run_in(pool, &self.scripts.unmake_pool, args).await?;
        if r == 1 && !back.is_empty() {
            self.list_pool(pool).await?;
        }
        Ok(r == 1)
    }

    /// The pairings being made in `pool`, as stored.
    async fn pairings(&self, pool: &str) -> Result<Vec<(String, Making)>, StoreError> {
        let mut conn = self.conn()?;
        let all: Vec<(String, String)> = redis::cmd("HGETALL")
            .arg(Self::pool_key(pool, "k"))
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        all.into_iter()
            .map(|(id, rec)| Ok((id.clone(), making_of(id, &rec)?)))
            .collect()
    }

    /// The pairing `id` of `pool`, as stored (`None`: not being made).
    async fn pairing(&self, pool: &str, id: &str) -> Result<Option<Making>, StoreError> {
        let mut conn = self.conn()?;
        let rec: Option<String> = redis::cmd("HGET")
            .arg(Self::pool_key(pool, "k"))
            .arg(id)
            .query_async(&mut conn)
            .await
            .map_err(unavailable)?;
        rec.map(|rec| making_of(id.to_owned(), &rec)).transpose()
    }
}

/// A pairing being made, from its stored record (when, then each player's name, entry record,
/// join time, missed waves and lease end).
fn making_of(id: String, rec: &str) -> Result<Making, StoreError> {
    let parts = unpack(rec).ok_or_else(|| corrupt("pairing record"))?;
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
}

/// The places of `waiting` packed as the scripts read them (player, session, player, …): a
/// wave's waiting players for the ghost sweep ([`LIVE`]), a pairing's players as [`COMMIT`]
/// answers them.
fn places_of(waiting: &[Waiting]) -> String {
    let items: Vec<String> = waiting
        .iter()
        .flat_map(|w| [w.entry.player.clone(), w.entry.session.to_string()])
        .collect();
    pack(&items)
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
        // The player's state first (in the store's slot), then the place (in the pool's), then
        // the old place dropped (in its pool's). Between the steps a wave may read a place whose
        // player's state moved on: its ghost sweep (`waiting`) or its claim (`claim`) finds it.
        let mut unstuck = false;
        let (old_pool, old_session) = loop {
            let mut args = JOIN_ARGS.args();
            args.set("pool", pool)
                .set("player", &entry.player)
                .set("session", entry.session)
                .set("max_pools", max_pools);
            let r: Vec<String> = self.run(&self.scripts.join, args).await?;
            match r.as_slice() {
                [s] if s == "found" => return Ok(Joined::Found),
                [s] if s == "matching" => return Ok(Joined::Matching),
                [s, mark] if s == "matching" => {
                    // Once: a mark whose pairing is gone from its pool is forgotten.
                    if unstuck || !self.unstick(&entry.player, mark).await? {
                        return Ok(Joined::Matching);
                    }
                    unstuck = true;
                }
                [s] if s == "pools" => return Ok(Joined::TooManyPools),
                [s, _, old_pool, old_session] if s == "ok" => {
                    break (old_pool.clone(), old_session.clone());
                }
                other => return Err(corrupt(&format!("join answered {other:?}"))),
            }
        };
        let mut args = JOIN_POOL_ARGS.args();
        args.set("pool", pool)
            .set("player", &entry.player)
            .set("record", entry.encode())
            .set("lease_ms", lease_ms)
            .set("max_waiting", max_waiting);
        let r: Vec<redis::Value> = self.run_in(pool, &self.scripts.join_pool, args).await?;
        let item =
            |i: usize| -> Option<i64> { r.get(i).and_then(|v| redis::from_redis_value(v).ok()) };
        let status: String = r
            .first()
            .and_then(|v| redis::from_redis_value(v).ok())
            .unwrap_or_default();
        let joined = match status.as_str() {
            "full" => {
                // The place held elsewhere was given up with the player's state (JOIN replaced
                // it): the state is forgotten, and that place dropped below.
                let mut args = UNJOIN_ARGS.args();
                let now = format!("w{FIELD}{pool}{FIELD}{}", entry.session);
                args.set("player", &entry.player).set("now", now);
                let _: i64 = self.run(&self.scripts.unjoin, args).await?;
                Joined::Full
            }
            "waiting" => {
                if item(2) == Some(1) {
                    self.list_pool(pool).await?;
                }
                let waiting = item(1).and_then(|n| usize::try_from(n).ok()).unwrap_or(1);
                Joined::Waiting { waiting }
            }
            other => return Err(corrupt(&format!("join answered {other:?}"))),
        };
        if !old_pool.is_empty() {
            self.drop_place(&old_pool, &entry.player, &old_session)
                .await?;
        }
        Ok(joined)
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
        let r: Vec<String> = self.run_in(pool, &self.scripts.place, args).await?;
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
            _ => {
                // Not in the pool: an offer's accept may have taken the player (the one case
                // the player's state, in the store's slot, tells).
                let mut args = PLACE_WHO_ARGS.args();
                args.set("player", player);
                let who: String = self.run(&self.scripts.place_who, args).await?;
                if who == "matching" {
                    Place::Matching
                } else {
                    Place::Gone
                }
            }
        })
    }

    async fn leave(&self, player: &str, session: Option<u64>) -> Result<bool, StoreError> {
        let mut args = LEAVE_ARGS.args();
        args.set("player", player)
            .set("session", session.map_or(String::new(), |s| s.to_string()));
        let left: Vec<String> = self.run(&self.scripts.leave, args).await?;
        match left.as_slice() {
            [] => Ok(false),
            [pool, session] => {
                self.drop_place(pool, player, session).await?;
                Ok(true)
            }
            other => Err(corrupt(&format!("leave answered {other:?}"))),
        }
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
        self.run_in(pool, &self.scripts.lock, args).await
    }

    async fn unlock(&self, pool: &str, fence: u64) -> Result<(), StoreError> {
        let mut args = UNLOCK_ARGS.args();
        args.set("pool", pool).set("fence", fence);
        let _: i64 = self.run_in(pool, &self.scripts.unlock, args).await?;
        Ok(())
    }

    async fn waiting(&self, pool: &str) -> Result<Vec<Waiting>, StoreError> {
        let mut args = WAITING_ARGS.args();
        args.set("pool", pool);
        let r: Vec<String> = self.run_in(pool, &self.scripts.waiting, args).await?;
        let [empty, expired, places @ ..] = r.as_slice() else {
            return Err(corrupt("waiting answered nothing"));
        };
        if !expired.is_empty() && unpack(expired).is_some_and(|e| !e.is_empty()) {
            let mut args = UNWHO_ARGS.args();
            args.set("pool", pool).set("places", expired);
            let _: i64 = self.run(&self.scripts.unwho, args).await?;
        }
        if empty == "1" {
            self.unlist_pool(pool).await?;
        }
        let mut waiting: Vec<Waiting> = places
            .chunks_exact(5)
            .map(|c| waiting_of(&c[0], &c[1], &c[2], &c[3], &c[4]))
            .collect::<Result<_, _>>()?;
        if waiting.is_empty() {
            return Ok(waiting);
        }
        // Ghosts (places whose player's state moved on, their step in the pool not done) are
        // dropped before the pairing: each wave clears those a failure or a stopped replica
        // left, so that no stream shows such a place for long.
        let mut args = LIVE_ARGS.args();
        args.set("pool", pool).set("places", places_of(&waiting));
        let ghosts: String = self.run(&self.scripts.live, args).await?;
        let list = unpack(&ghosts).ok_or_else(|| corrupt("ghost places"))?;
        if !list.is_empty() {
            tracing::info!(%pool, ghosts = list.len() / 2, "places whose players moved on are dropped");
            self.drop_places(pool, &ghosts).await?;
            let gone: std::collections::HashSet<&str> =
                list.chunks_exact(2).map(|g| g[0].as_str()).collect();
            waiting.retain(|w| !gone.contains(w.entry.player.as_str()));
        }
        Ok(waiting)
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
        let Some(done): Option<Vec<String>> = self.run_in(pool, &self.scripts.commit, args).await?
        else {
            return Ok(None);
        };
        if done.len() != pairings.len() {
            return Err(corrupt("commit answered another number of pairings"));
        }
        // The committed pairings are then claimed for their players, in the store's slot.
        let committed: Vec<(&str, &str)> = pairings
            .iter()
            .zip(&done)
            .filter(|(_, members)| !members.is_empty())
            .map(|(p, members)| (p.id.as_str(), members.as_str()))
            .collect();
        let mut claimed = self.claim(pool, &committed).await?.into_iter();
        Ok(Some(
            done.iter()
                .map(|members| !members.is_empty() && claimed.next() == Some(true))
                .collect(),
        ))
    }

    async fn making(&self, pool: &str) -> Result<Vec<Making>, StoreError> {
        // A pairing is made only once claimed: one committed by a wave that stopped before its
        // claim is claimed here (or found void, or recorded already, and finished).
        let stored = self.pairings(pool).await?;
        let members: Vec<String> = stored.iter().map(|(_, m)| places_of(&m.members)).collect();
        let asked: Vec<(&str, &str)> = stored
            .iter()
            .zip(&members)
            .map(|((id, _), m)| (id.as_str(), m.as_str()))
            .collect();
        let claimed = self.claim(pool, &asked).await?;
        Ok(stored
            .into_iter()
            .zip(claimed)
            .filter(|(_, ok)| *ok)
            .map(|((_, m), _)| m)
            .collect())
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
        self.matched_pool(pool, pairing).await?;
        Ok(fresh == 1)
    }

    async fn unmake(&self, pool: &str, pairing: &str) -> Result<bool, StoreError> {
        let Some(m) = self.pairing(pool, pairing).await? else {
            return Ok(false);
        };
        let mut args = UNMAKE_ARGS.args();
        args.set("pool", pool)
            .set("pairing", pairing)
            .set("members", places_of(&m.members))
            .set("ttl", FOUND_TTL_MS);
        let back: Option<Vec<String>> = self.run(&self.scripts.unmake, args).await?;
        let Some(back) = back else {
            // Its match was recorded meanwhile (by another replica): finish that instead.
            self.matched_pool(pool, pairing).await?;
            return Ok(false);
        };
        let back: Vec<&str> = back.iter().map(String::as_str).collect();
        self.unmake_pool(pool, pairing, &back).await
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
        let mut r: Vec<String> = self.run(&self.scripts.offer_accept, args.clone()).await?;
        if let [status, player, mark] = r.as_slice()
            && status == "busy"
        {
            // Once: a mark whose pairing is gone from its pool is forgotten, and the accept
            // tried again.
            if !self.unstick(player, mark).await? {
                return Ok(Accepting::Busy(player.clone()));
            }
            r = self.run(&self.scripts.offer_accept, args).await?;
            if let [status, player, _] = r.as_slice()
                && status == "busy"
            {
                return Ok(Accepting::Busy(player.clone()));
            }
        }
        if r.first().is_some_and(|s| s == "started") && r.len() >= 2 {
            // The places the accept took from its players, dropped in their pools' slots.
            let drops = unpack(&r.remove(1)).ok_or_else(|| corrupt("accept's places"))?;
            for d in drops.chunks_exact(3) {
                self.drop_place(&d[0], &d[1], &d[2]).await?;
            }
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

    /// A store on a fresh Redis, and the Redis (held for the test's length).
    async fn store() -> (RedisStore, arbiter_testkit::Redis) {
        let redis = arbiter_testkit::redis().await;
        let store = RedisStore::connect(redis.secure("arbiter-matchmaking"))
            .await
            .unwrap();
        (store, redis)
    }

    fn entry(player: &str, session: u64) -> Entry {
        Entry {
            player: player.to_owned(),
            session,
            rating: 1500,
            range: None,
            blocked: Vec::new(),
            partner: None,
            history: History::default(),
        }
    }

    async fn join(store: &RedisStore, pool: &str, player: &str, session: u64) -> Joined {
        store
            .join(pool, &entry(player, session), 60_000, (10, 10))
            .await
            .unwrap()
    }

    /// `player`'s state in the store's slot, its fields apart.
    async fn who(store: &RedisStore, player: &str) -> Option<Vec<String>> {
        let mut conn = store.conn().unwrap();
        let who: Option<String> = redis::cmd("HGET")
            .arg(store.key("who"))
            .arg(player)
            .query_async(&mut conn)
            .await
            .unwrap();
        who.map(|w| w.split(FIELD).map(str::to_owned).collect())
    }

    async fn place(store: &RedisStore, pool: &str, player: &str, session: u64) -> Place {
        store.place(pool, player, session, 60_000).await.unwrap()
    }

    /// Runs only the first step of a wave's commit (COMMIT in the pool's slot), as a wave that
    /// stopped before its claim leaves it: the answer per pairing.
    async fn commit_only(
        store: &RedisStore,
        pool: &str,
        pairing: &str,
        players: &[&str],
    ) -> String {
        let fence = store.lock(pool, 60_000).await.unwrap().unwrap();
        let mut items = vec![pairing];
        items.extend(players);
        let mut args = COMMIT_ARGS.args();
        args.set("pool", pool)
            .set("fence", fence)
            .set("pairings", pack(&[pack(&items)]))
            .set("unpaired", pack::<&str>(&[]));
        let done: Vec<String> = store
            .run_in(pool, &store.scripts.commit, args)
            .await
            .unwrap();
        store.unlock(pool, fence).await.unwrap();
        done.into_iter().next().unwrap()
    }

    /// A wave's store steps for one pairing of `players` (lock, read, commit with its claim,
    /// unlock): whether it was committed.
    async fn wave_pairs(store: &RedisStore, pool: &str, pairing: &str, players: &[&str]) -> bool {
        let fence = store.lock(pool, 60_000).await.unwrap().unwrap();
        store.waiting(pool).await.unwrap();
        let pairing = Pairing {
            id: pairing.into(),
            members: players.iter().map(|p| (*p).to_owned()).collect(),
        };
        let done = store.commit(pool, fence, &[pairing], &[]).await.unwrap();
        store.unlock(pool, fence).await.unwrap();
        done == Some(vec![true])
    }

    #[tokio::test]
    async fn a_pairing_committed_by_a_wave_that_stopped_is_claimed_by_the_next() {
        let (store, _redis) = store().await;
        let pool = "chess:blitz:5+3";
        join(&store, pool, "ann", 1).await;
        join(&store, pool, "bob", 2).await;
        assert!(
            !commit_only(&store, pool, "p1", &["ann", "bob"])
                .await
                .is_empty()
        );
        // Committed in the pool, not yet claimed: the streams wait for the match.
        assert_eq!(place(&store, pool, "ann", 1).await, Place::Matching);
        assert_eq!(who(&store, "ann").await.unwrap()[0], "w");
        // A player who leaves now is not paired: the next wave's claim finds that.
        assert!(store.leave("bob", Some(2)).await.unwrap());
        assert!(store.making(pool).await.unwrap().is_empty());
        assert_eq!(
            place(&store, pool, "ann", 1).await,
            Place::Waiting(Standing {
                position: 1,
                waiting: 1,
                missed: 0,
                mean_wait_ms: 0,
            })
        );
        assert_eq!(place(&store, pool, "bob", 2).await, Place::Gone);
        // Without a leave, the next wave claims the pairing and makes it.
        join(&store, pool, "cid", 3).await;
        assert!(
            !commit_only(&store, pool, "p2", &["ann", "cid"])
                .await
                .is_empty()
        );
        let making = store.making(pool).await.unwrap();
        assert_eq!(making.len(), 1);
        assert_eq!(making[0].id, "p2");
        assert_eq!(who(&store, "ann").await.unwrap(), ["m", pool, "p2"]);
        assert_eq!(who(&store, "cid").await.unwrap(), ["m", pool, "p2"]);
        // Claimed again (a retry): the same.
        assert_eq!(store.making(pool).await.unwrap().len(), 1);
        let follow = Follow {
            match_id: "m2".into(),
            pool: pool.into(),
            players: vec!["ann".into(), "cid".into()],
        };
        assert!(store.matched(pool, "p2", &[], &[], &follow).await.unwrap());
        assert!(!store.matched(pool, "p2", &[], &[], &follow).await.unwrap());
        assert!(store.making(pool).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_place_left_behind_by_a_join_elsewhere_is_never_paired() {
        let (store, _redis) = store().await;
        let (chess, glinski) = ("chess:blitz:5+3", "glinski:blitz:5+3");
        join(&store, chess, "ann", 1).await;
        join(&store, chess, "bob", 2).await;
        let fence = store.lock(chess, 60_000).await.unwrap().unwrap();
        assert_eq!(store.waiting(chess).await.unwrap().len(), 2);
        // After the wave read the pool, Ann's join of another pool got as far as her state (its
        // first step), not further: her place in chess is a ghost.
        let mut args = JOIN_ARGS.args();
        args.set("pool", glinski)
            .set("player", "ann")
            .set("session", 7)
            .set("max_pools", 10);
        let r: Vec<String> = store.run(&store.scripts.join, args).await.unwrap();
        assert_eq!(
            r,
            [
                "ok",
                format!("w{FIELD}chess:blitz:5+3{FIELD}1").as_str(),
                chess,
                "1"
            ]
        );
        let pairing = Pairing {
            id: "p1".into(),
            members: vec!["ann".into(), "bob".into()],
        };
        let done = store.commit(chess, fence, &[pairing], &[]).await.unwrap();
        assert_eq!(done, Some(vec![false]));
        // Bob waits on, with his place; Ann's ghost is gone; her state still names glinski.
        let waiting = store.waiting(chess).await.unwrap();
        assert_eq!(waiting.len(), 1);
        assert_eq!(waiting[0].entry.player, "bob");
        assert!(matches!(
            place(&store, chess, "bob", 2).await,
            Place::Waiting(_)
        ));
        assert_eq!(place(&store, chess, "ann", 1).await, Place::Gone);
        assert!(store.making(chess).await.unwrap().is_empty());
        assert_eq!(who(&store, "ann").await.unwrap(), ["w", glinski, "7"]);
    }

    #[tokio::test]
    async fn a_match_recorded_before_its_pool_step_is_finished_not_unmade() {
        let (store, _redis) = store().await;
        let pool = "chess:blitz:5+3";
        join(&store, pool, "ann", 1).await;
        join(&store, pool, "bob", 2).await;
        assert!(wave_pairs(&store, pool, "p1", &["ann", "bob"]).await);
        // MATCHED in the store's slot, and then nothing (the replica stopped).
        let mut args = MATCHED_ARGS.args();
        args.set("pool", pool)
            .set("pairing", "p1")
            .set("match_id", "m1")
            .set("follow", "x")
            .set("found_ttl", FOUND_TTL_MS)
            .set("found", pack(&["ann", "m1", "f", "bob", "m1", "f"]))
            .set("histories", pack::<&str>(&[]));
        let fresh: i64 = store.run(&store.scripts.matched, args).await.unwrap();
        assert_eq!(fresh, 1);
        assert_eq!(who(&store, "ann").await, None);
        // A failure noticed late does not put them back; the next wave finishes the pairing.
        assert!(!store.unmake(pool, "p1").await.unwrap());
        assert!(store.making(pool).await.unwrap().is_empty());
        assert!(store.waiting(pool).await.unwrap().is_empty());
        assert_eq!(place(&store, pool, "ann", 1).await, Place::Gone);
    }

    #[tokio::test]
    async fn a_mark_whose_pairing_its_pool_lost_does_not_hold_the_player_forever() {
        let (store, _redis) = store().await;
        let (chess, glinski) = ("chess:blitz:5+3", "glinski:blitz:5+3");
        join(&store, chess, "ann", 1).await;
        join(&store, chess, "bob", 2).await;
        assert!(wave_pairs(&store, chess, "p1", &["ann", "bob"]).await);
        // While the pairing is being made, a join waits for it.
        assert_eq!(join(&store, glinski, "ann", 3).await, Joined::Matching);
        assert_eq!(who(&store, "ann").await.unwrap(), ["m", chess, "p1"]);
        // The pool's primary failed over and lost its last writes (here: the pairing).
        let mut conn = store.conn().unwrap();
        let _: i64 = redis::cmd("HDEL")
            .arg(RedisStore::pool_key(chess, "k"))
            .arg("p1")
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(
            join(&store, glinski, "ann", 3).await,
            Joined::Waiting { waiting: 1 }
        );
        assert_eq!(who(&store, "ann").await.unwrap(), ["w", glinski, "3"]);
        // A mark of the older form, without a pairing, in a pool with no pairing being made.
        let _: i64 = redis::cmd("HSET")
            .arg(store.key("who"))
            .arg("bob")
            .arg(format!("m{FIELD}{chess}"))
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(
            join(&store, glinski, "bob", 4).await,
            Joined::Waiting { waiting: 2 }
        );
        // A mark whose pairing has a recorded match is left alone.
        join(&store, chess, "cid", 5).await;
        join(&store, chess, "dan", 6).await;
        assert!(wave_pairs(&store, chess, "p2", &["cid", "dan"]).await);
        let mut args = UNSTICK_ARGS.args();
        args.set("player", "cid")
            .set("mark", format!("m{FIELD}{chess}{FIELD}p2"))
            .set("pairing", "p2");
        let _: String = redis::cmd("SET")
            .arg(store.key("made:p2"))
            .arg("m2")
            .query_async(&mut conn)
            .await
            .unwrap();
        let done: i64 = store.run(&store.scripts.unstick, args).await.unwrap();
        assert_eq!(done, 0);
    }

    #[tokio::test]
    async fn a_join_refused_by_a_full_pool_gives_up_the_place_held_elsewhere() {
        let (store, _redis) = store().await;
        let (chess, glinski) = ("chess:blitz:5+3", "glinski:blitz:5+3");
        join(&store, chess, "ann", 1).await;
        let bob = store
            .join(glinski, &entry("bob", 2), 60_000, (1, 10))
            .await
            .unwrap();
        assert_eq!(bob, Joined::Waiting { waiting: 1 });
        let ann = store
            .join(glinski, &entry("ann", 3), 60_000, (1, 10))
            .await
            .unwrap();
        assert_eq!(ann, Joined::Full);
        assert_eq!(place(&store, chess, "ann", 1).await, Place::Gone);
        assert_eq!(who(&store, "ann").await, None);
        assert!(store.waiting(chess).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_wave_drops_the_places_whose_players_moved_on() {
        let (store, _redis) = store().await;
        let (chess, glinski) = ("chess:blitz:5+3", "glinski:blitz:5+3");
        join(&store, chess, "ann", 1).await;
        join(&store, chess, "bob", 2).await;
        join(&store, chess, "cid", 3).await;
        // Ann's join elsewhere and Bob's leave did their first steps only.
        let mut args = JOIN_ARGS.args();
        args.set("pool", glinski)
            .set("player", "ann")
            .set("session", 7)
            .set("max_pools", 10);
        let _: Vec<String> = store.run(&store.scripts.join, args).await.unwrap();
        let mut args = LEAVE_ARGS.args();
        args.set("player", "bob").set("session", "2");
        let _: Vec<String> = store.run(&store.scripts.leave, args).await.unwrap();
        // Their streams still see places, until the next wave reads the pool.
        assert!(matches!(
            place(&store, chess, "bob", 2).await,
            Place::Waiting(_)
        ));
        let waiting = store.waiting(chess).await.unwrap();
        let names: Vec<&str> = waiting.iter().map(|w| w.entry.player.as_str()).collect();
        assert_eq!(names, ["cid"]);
        assert_eq!(place(&store, chess, "bob", 2).await, Place::Gone);
        assert_eq!(place(&store, chess, "ann", 1).await, Place::Gone);
        assert_eq!(who(&store, "ann").await.unwrap(), ["w", glinski, "7"]);
    }

    #[tokio::test]
    async fn a_pairing_given_up_is_neither_claimed_nor_recorded_again() {
        let (store, _redis) = store().await;
        let pool = "chess:blitz:5+3";
        join(&store, pool, "ann", 1).await;
        join(&store, pool, "bob", 2).await;
        let members = commit_only(&store, pool, "p1", &["ann", "bob"]).await;
        // Another replica took the pairing over (claimed it), failed to create its match and
        // gave it up: the players wait again.
        assert_eq!(store.making(pool).await.unwrap().len(), 1);
        assert!(store.unmake(pool, "p1").await.unwrap());
        assert_eq!(store.waiting(pool).await.unwrap().len(), 2);
        // The first wave, late, claims it and records its match: neither counts.
        assert_eq!(
            store.claim(pool, &[("p1", &members)]).await.unwrap(),
            [false]
        );
        assert_eq!(who(&store, "ann").await.unwrap(), ["w", pool, "1"]);
        let follow = Follow {
            match_id: "m1".into(),
            pool: pool.into(),
            players: vec!["ann".into(), "bob".into()],
        };
        assert!(!store.matched(pool, "p1", &[], &[], &follow).await.unwrap());
        assert_eq!(who(&store, "ann").await.unwrap(), ["w", pool, "1"]);
        assert_eq!(store.waiting(pool).await.unwrap().len(), 2);
    }

    #[tokio::test]
    async fn an_empty_pool_leaves_the_list_and_a_join_puts_it_back() {
        let (store, _redis) = store().await;
        let pool = "chess:blitz:5+3";
        join(&store, pool, "ann", 1).await;
        assert_eq!(store.pools().await.unwrap(), [pool]);
        assert!(store.leave("ann", None).await.unwrap());
        store.waiting(pool).await.unwrap();
        assert!(store.pools().await.unwrap().is_empty());
        // A join's first step after the list was read, its pool step after the pool emptied:
        // the pool step's answer lists it again.
        join(&store, pool, "bob", 2).await;
        assert_eq!(store.pools().await.unwrap(), [pool]);
        let mut conn = store.conn().unwrap();
        let _: i64 = redis::cmd("SREM")
            .arg(store.key("pools"))
            .arg(pool)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(store.pools().await.unwrap().is_empty());
        store.unlist_pool(pool).await.unwrap();
        assert_eq!(
            store.pools().await.unwrap(),
            [pool],
            "bob still waits there"
        );
    }

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
