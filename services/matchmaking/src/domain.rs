//! Matchmaking itself: joining and holding a place, the waves, creating matches, and rating
//! them once they end. gRPC-free but for the `MatchFound` message it stores for each player.

use crate::backend::{BackendError, MatchBackend, MatchEnd, NewMatch};
use crate::config::Tuning;
use crate::pool::{Entry, Follow, History, Making, Pairing, Pool, Waiting};
use crate::ratings::{self, Record, System};
use crate::store::{Applied, Found, Joined, Place, PoolStore, RatingWrite, Standing, StoreError};
use arbiter_core::Color;
use arbiter_core::pairing::teams::team_wave;
use arbiter_core::pairing::wave::{PlayerId, RatingRange, WaitingPlayer, WaveOptions, pair_wave};
use arbiter_core::rating::glicko2;
use arbiter_kit::ApiError;
use arbiter_kit::convert::variant_to_proto;
use arbiter_kit::retry::RetryPolicy;
use arbiter_proto::matchmaking::v1 as pb;
use futures_util::StreamExt;
use prost::Message;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, mpsc, watch};

/// The error domain of matchmaking's FAILED_PRECONDITION reasons.
pub const DOMAIN: &str = "arbiter.matchmaking.v1";

/// The pauses between a wave's attempts at creating one match (up to 200 ms, 400 ms, 800 ms, …
/// at random; the gRPC backend has already retried, within each attempt, the failures that pass
/// in a moment).
const CREATE_PAUSES: RetryPolicy = RetryPolicy {
    base: Duration::from_millis(200),
    cap: Duration::from_secs(5),
    max_attempts: u32::MAX,
    deadline: None,
};

/// The pauses of a follower between failures (up to 0.5 s, 1 s, … 30 s at random): when a
/// match service replica goes away, the many followers it served come back spread out.
const FOLLOW_PAUSES: RetryPolicy = RetryPolicy {
    base: Duration::from_millis(500),
    cap: Duration::from_secs(30),
    max_attempts: u32::MAX,
    deadline: None,
};

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        match e {
            StoreError::Unavailable(m) => ApiError::Unavailable(m),
            StoreError::Corrupt(m) => ApiError::DataLoss(m),
        }
    }
}

/// A validated join.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinSpec {
    /// The player.
    pub player: String,
    /// The pool.
    pub pool: Pool,
    /// Wanted opponent ratings.
    pub range: Option<RatingRange>,
    /// Blocked players.
    pub blocked: Vec<String>,
    /// Bughouse partner.
    pub partner: Option<String>,
}

/// What a join gave the player.
#[derive(Clone, Debug, PartialEq)]
pub enum Ticket {
    /// A place in `pool`, held by `session`.
    Waiting {
        /// The player.
        player: String,
        /// The pool's name.
        pool: String,
        /// The place's session.
        session: u64,
        /// The rating the player is paired by.
        rating: i32,
    },
    /// The player has matches found to acknowledge first.
    Found(Vec<pb::MatchFound>),
}

/// A join stream of this process: its pool, its session, and what wakes it.
type Stream = (String, u64, Arc<Notify>);

/// The join streams of this process by player, woken when their player has news or their pool
/// ran a wave.
#[derive(Debug, Default)]
struct Hub {
    streams: Mutex<HashMap<String, Stream>>,
}

impl Hub {
    fn register(&self, player: &str, pool: &str, session: u64) -> Arc<Notify> {
        let notify = Arc::new(Notify::new());
        self.lock().insert(
            player.to_owned(),
            (pool.to_owned(), session, Arc::clone(&notify)),
        );
        notify
    }

    fn unregister(&self, player: &str, session: u64) {
        let mut streams = self.lock();
        if streams.get(player).is_some_and(|(_, s, _)| *s == session) {
            streams.remove(player);
        }
    }

    fn wake(&self, player: &str) {
        if let Some((_, _, n)) = self.lock().get(player) {
            n.notify_one();
        }
    }

    fn wake_pool(&self, pool: &str) {
        for (p, _, n) in self.lock().values() {
            if p == pool {
                n.notify_one();
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Stream>> {
        self.streams
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// How finishing a pairing ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Finished {
    /// The match exists and its players were told (by this replica or another).
    Created,
    /// The match could not be created: the players went back into the pool.
    Failed,
    /// Not created yet, for a reason that may pass: left for a later wave.
    Pending,
}

/// What a wave did (for logs and tests).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaveReport {
    /// Players who were waiting.
    pub waiting: usize,
    /// Matches created.
    pub created: usize,
    /// Pairings whose creation failed (their players went back into the pool).
    pub failed: usize,
    /// Pairings whose creation failed for a reason that may pass: a later wave retries them.
    pub pending: usize,
    /// Pairings of earlier waves whose matches were created now.
    pub recovered: usize,
    /// False when another replica held the pool's lock, or lost it before committing.
    pub ran: bool,
}

/// Matchmaking over a store `S`, creating matches through `B`.
pub struct Matchmaker<S, B> {
    store: S,
    backend: B,
    tuning: Tuning,
    hub: Hub,
    trigger: Notify,
    follow_now: Notify,
    following: Mutex<HashSet<String>>,
}

impl WaveReport {
    /// Counts a finished pairing, from an earlier wave when `recovered`.
    fn count(&mut self, finished: Finished, recovered: bool) {
        match finished {
            Finished::Created if recovered => self.recovered += 1,
            Finished::Created => self.created += 1,
            Finished::Failed => self.failed += 1,
            Finished::Pending => self.pending += 1,
        }
    }
}

impl<S, B> std::fmt::Debug for Matchmaker<S, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Matchmaker")
            .field("tuning", &self.tuning)
            .finish_non_exhaustive()
    }
}

fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // An OS without randomness cannot run a server; fall back to the clock rather than panic.
    if getrandom::fill(&mut b).is_err() {
        return std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
    }
    u64::from_le_bytes(b)
}

/// The id of a pairing (and its `CreateMatch` request id): the pool's hash, the wave's fencing
/// number and random nonce, the pairing's index. The id is stored with the pairing, so a retry
/// of the same pairing (by any replica) uses the same id; the nonce keeps ids apart when a
/// store's fencing numbers start again (a store lost, or an idle pool's lock forgotten).
pub fn pairing_id(pool: &str, fence: u64, nonce: u64, index: usize) -> String {
    let hash = Sha256::digest(pool.as_bytes());
    let hex = arbiter_kit::hex(&hash[..8]);
    format!("mm-{hex}-{fence}-{nonce:016x}-{index}")
}

impl<S: PoolStore, B: MatchBackend> Matchmaker<S, B> {
    /// Matchmaking on `store`, creating matches through `backend`.
    pub fn new(store: S, backend: B, tuning: Tuning) -> Matchmaker<S, B> {
        Matchmaker {
            store,
            backend,
            tuning,
            hub: Hub::default(),
            trigger: Notify::new(),
            follow_now: Notify::new(),
            following: Mutex::new(HashSet::new()),
        }
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The tuning.
    pub fn tuning(&self) -> &Tuning {
        &self.tuning
    }

    /// Checks the store.
    pub async fn probe(&self) -> Result<(), StoreError> {
        self.store.probe().await
    }

    /// Wakes this process's join stream of `player` (news from another replica).
    pub fn wake_player(&self, player: &str) {
        self.hub.wake(player);
    }

    /// Wakes this process's join streams in `pool` (it ran a wave).
    pub fn wake_pool(&self, pool: &str) {
        self.hub.wake_pool(pool);
    }

    /// The rating system `pool` pairs by.
    pub fn system(&self, pool: &Pool) -> System {
        if self
            .tuning
            .elo_pools
            .iter()
            .any(|(v, c)| *v == pool.variant && *c == pool.control)
        {
            System::Elo
        } else {
            System::Glicko2
        }
    }

    async fn record(&self, player: &str, key: &str) -> Result<(Option<String>, Record), ApiError> {
        let raw = self
            .store
            .ratings(player)
            .await?
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v);
        let record = match &raw {
            None => Record::new(&self.tuning.glicko),
            Some(text) => Record::decode(text).ok_or_else(|| {
                ApiError::DataLoss(format!("rating {key} of player {player:?} is corrupt"))
            })?,
        };
        Ok((raw, record))
    }

    /// Joins a pool: a place (hold it with [`Matchmaker::hold`]) or the matches found the
    /// player must acknowledge first.
    ///
    /// # Errors
    /// `MATCHING` while the player's match is being created; `RESOURCE_EXHAUSTED` when the pool
    /// is full; `UNAVAILABLE` without the store.
    pub async fn join(&self, spec: JoinSpec) -> Result<Ticket, ApiError> {
        let pool_name = spec.pool.name();
        let (_, record) = self.record(&spec.player, &spec.pool.rating_key()).await?;
        let rating = record.pairing_rating(self.system(&spec.pool));
        let history = self.store.history(&spec.player).await?;
        let entry = Entry {
            player: spec.player.clone(),
            session: random_u64(),
            rating,
            range: spec.range,
            blocked: spec.blocked,
            partner: spec.partner,
            history,
        };
        match self
            .store
            .join(
                &pool_name,
                &entry,
                self.tuning.lease_ms,
                (self.tuning.max_waiting, self.tuning.max_pools),
            )
            .await?
        {
            Joined::Waiting { waiting } => {
                if waiting >= self.tuning.wave_at {
                    self.trigger.notify_one();
                }
                Ok(Ticket::Waiting {
                    player: spec.player,
                    pool: pool_name,
                    session: entry.session,
                    rating,
                })
            }
            Joined::Found => Ok(Ticket::Found(self.found(&spec.player).await?)),
            Joined::Matching => Err(ApiError::precondition(
                DOMAIN,
                "MATCHING",
                format!(
                    "a match is being created for player {:?}: join again in a moment",
                    spec.player
                ),
            )),
            Joined::TooManyPools => Err(ApiError::exhausted(
                "",
                format!(
                    "the server holds its maximum of {} pools with players",
                    self.tuning.max_pools
                ),
            )),
            Joined::Full => Err(ApiError::exhausted(
                "",
                format!(
                    "pool {pool_name} holds its maximum of {} waiting players",
                    self.tuning.max_waiting
                ),
            )),
        }
    }

    async fn found(&self, player: &str) -> Result<Vec<pb::MatchFound>, ApiError> {
        self.store
            .found(player)
            .await?
            .into_iter()
            .map(|f| {
                pb::MatchFound::decode(f.message.as_slice()).map_err(|e| {
                    ApiError::DataLoss(format!("stored match found {} is corrupt: {e}", f.match_id))
                })
            })
            .collect()
    }

    /// Holds a place until the player is matched (sends their `MatchFound`), leaves, is taken
    /// over by a newer join, or the client goes away (which leaves the pool). Status updates go
    /// to `tx` when the player's standing changes; a client too slow to read them misses some
    /// (only the latest standing matters).
    pub async fn hold(
        &self,
        ticket: Ticket,
        tx: mpsc::Sender<Result<pb::JoinResponse, tonic::Status>>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let (player, pool, session, rating) = match ticket {
            Ticket::Found(found) => {
                deliver(&tx, found, &mut shutdown).await;
                return;
            }
            Ticket::Waiting {
                player,
                pool,
                session,
                rating,
            } => (player, pool, session, rating),
        };
        let notify = self.hub.register(&player, &pool, session);
        let renew = Duration::from_millis((self.tuning.lease_ms / 3).max(1));
        let mut last: Option<Standing> = None;
        loop {
            let place = self
                .store
                .place(&pool, &player, session, self.tuning.lease_ms)
                .await;
            match place {
                Ok(Place::Waiting(standing)) if last != Some(standing) => {
                    last = Some(standing);
                    let event = pb::JoinResponse {
                        event: Some(pb::join_response::Event::Status(pb::QueueStatus {
                            pool: pool.clone(),
                            position: standing.position,
                            waiting: standing.waiting,
                            waves_missed: standing.missed,
                            estimated_wait_ms: standing.mean_wait_ms,
                            rating,
                        })),
                    };
                    if let Err(mpsc::error::TrySendError::Closed(_)) = tx.try_send(Ok(event)) {
                        self.left(&player, session).await;
                        break;
                    }
                }
                Ok(Place::Waiting(_) | Place::Matching) => {}
                Ok(Place::Gone) => {
                    match self.found(&player).await {
                        Ok(found) if !found.is_empty() => {
                            deliver(&tx, found, &mut shutdown).await;
                        }
                        Ok(_) => {
                            let _ = tx.try_send(Err(tonic::Status::aborted(
                                "the place was given up: the player left, or joined again \
                                 elsewhere",
                            )));
                        }
                        Err(e) => {
                            let _ = tx.try_send(Err(e.into()));
                        }
                    }
                    break;
                }
                Err(e) => {
                    tracing::warn!(error = %e, %player, "renewing a place failed; retrying");
                }
            }
            tokio::select! {
                () = tx.closed() => {
                    // The client went away: a disconnect leaves the pool.
                    self.left(&player, session).await;
                    break;
                }
                () = notify.notified() => {}
                () = tokio::time::sleep(renew) => {}
                _ = shutdown.changed() => {
                    // The server stops: the place stays until its lease runs out, so that
                    // the player can reconnect to another replica without losing it.
                    let _ = tx.try_send(Err(tonic::Status::unavailable("the server is shutting down")));
                    break;
                }
            }
        }
        self.hub.unregister(&player, session);
    }

    /// A stream closed: its place is given up (retried a few times: a place left behind would
    /// only lapse with its lease, but could be paired meanwhile).
    async fn left(&self, player: &str, session: u64) {
        for attempt in 0..3u32 {
            match self.store.leave(player, Some(session)).await {
                Ok(_) => return,
                Err(e) => {
                    tracing::warn!(error = %e, %player, "giving up a closed stream's place failed");
                    tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
                }
            }
        }
    }

    /// Leaves the pool. False when the player was not waiting.
    ///
    /// # Errors
    /// `UNAVAILABLE` without the store.
    pub async fn leave(&self, player: &str) -> Result<bool, ApiError> {
        let left = self.store.leave(player, None).await?;
        if left {
            // The stream, on whichever replica, ends now rather than at its next renewal.
            self.hub.wake(player);
            self.store.announce(&[player.to_owned()], None).await?;
        }
        Ok(left)
    }

    /// Acknowledges a match found.
    ///
    /// # Errors
    /// `UNAVAILABLE` without the store.
    pub async fn acknowledge(&self, player: &str, match_id: &str) -> Result<bool, ApiError> {
        Ok(self.store.acknowledge(player, match_id).await?)
    }

    /// A player's ratings, Glicko-2 deviations widened to now.
    ///
    /// # Errors
    /// `UNAVAILABLE` without the store, `DATA_LOSS` for a corrupt record.
    pub async fn ratings(&self, player: &str) -> Result<Vec<pb::Rating>, ApiError> {
        let now = self.store.now().await?;
        let mut out = Vec::new();
        for (key, raw) in self.store.ratings(player).await? {
            let (Some((variant, speed)), Some(record)) =
                (key.split_once(':'), Record::decode(&raw))
            else {
                return Err(ApiError::DataLoss(format!(
                    "rating {key} of player {player:?} is corrupt"
                )));
            };
            let Ok(variant) = variant.parse::<arbiter_core::Variant>() else {
                return Err(ApiError::DataLoss(format!("rating key {key} is corrupt")));
            };
            let current = glicko2::current(&self.tuning.glicko, &record.glicko, now)
                .map_err(|e| ApiError::DataLoss(format!("rating {key}: {e}")))?;
            out.push(pb::Rating {
                variant: variant_to_proto(variant),
                speed: speed.to_owned(),
                glicko_rating: current.rating,
                glicko_deviation: current.deviation,
                glicko_volatility: current.volatility,
                elo: u32::from(record.elo.rating),
                games: record.elo.games,
            });
        }
        Ok(out)
    }

    /// Runs waves until `shutdown`: every pool every interval (with jitter), or at once when a
    /// join fills a pool to the trigger size.
    pub async fn run_waves(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        loop {
            let jitter = if self.tuning.wave_jitter_ms == 0 {
                0
            } else {
                random_u64() % (self.tuning.wave_jitter_ms + 1)
            };
            let pause = Duration::from_millis(self.tuning.wave_interval_ms + jitter);
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = self.trigger.notified() => {}
                _ = shutdown.changed() => return,
            }
            if *shutdown.borrow() {
                return;
            }
            let pools = match self.store.pools().await {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!(error = %e, "listing pools failed");
                    continue;
                }
            };
            for pool in pools {
                match self.wave(&pool).await {
                    Ok(report) if report.ran && (report.created > 0 || report.failed > 0) => {
                        tracing::info!(%pool, ?report, "wave");
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(%pool, error = %e, "wave failed"),
                }
            }
        }
    }

    /// Runs one wave of `pool` if this replica gets its lock: finishes pairings left by
    /// earlier waves, pairs the waiting players, commits, creates the matches and notifies
    /// the players.
    ///
    /// # Errors
    /// A store failure; the lock then runs out and another wave resumes.
    pub async fn wave(&self, pool_name: &str) -> Result<WaveReport, StoreError> {
        let Some(pool) = Pool::from_name(pool_name) else {
            return Err(StoreError::Corrupt(format!("bad pool name {pool_name:?}")));
        };
        let Some(fence) = self.store.lock(pool_name, self.tuning.wave_lock_ms).await? else {
            return Ok(WaveReport::default());
        };
        let result = self.locked_wave(&pool, pool_name, fence).await;
        let _ = self.store.unlock(pool_name, fence).await;
        result
    }

    async fn locked_wave(
        &self,
        pool: &Pool,
        pool_name: &str,
        fence: u64,
    ) -> Result<WaveReport, StoreError> {
        let mut report = WaveReport {
            ran: true,
            ..WaveReport::default()
        };
        let now = self.store.now().await?;
        let leftovers: Vec<Making> = self
            .store
            .making(pool_name)
            .await?
            .into_iter()
            .filter(|m| now.saturating_sub(m.since) >= self.tuning.recover_after_ms)
            .collect();
        for m in leftovers {
            report.count(self.finish(pool, pool_name, &m).await?, true);
        }
        let waiting = self.store.waiting(pool_name).await?;
        report.waiting = waiting.len();
        let candidates = self.tuning.candidates;
        let bughouse = pool.is_bughouse();
        let plan = tokio::task::spawn_blocking(move || plan(&waiting, bughouse, candidates, fence))
            .await
            .map_err(|e| StoreError::Corrupt(format!("wave computation failed: {e}")))?;
        let nonce = random_u64();
        let pairings: Vec<Pairing> = plan
            .pairings
            .iter()
            .enumerate()
            .map(|(i, members)| Pairing {
                id: pairing_id(pool_name, fence, nonce, i),
                members: members.iter().map(|w| w.entry.player.clone()).collect(),
            })
            .collect();
        let Some(done) = self
            .store
            .commit(pool_name, fence, &pairings, &plan.unpaired)
            .await?
        else {
            report.ran = false;
            return Ok(report);
        };
        let since = self.store.now().await?;
        let committed: Vec<Making> = pairings
            .iter()
            .zip(plan.pairings)
            .zip(done)
            .filter(|(_, ok)| *ok)
            .map(|((p, members), _)| Making {
                id: p.id.clone(),
                members,
                since,
            })
            .collect();
        let results: Vec<Result<Finished, StoreError>> = futures_util::stream::iter(committed)
            .map(|m| async move { self.finish(pool, pool_name, &m).await })
            .buffer_unordered(self.tuning.create_concurrency.max(1))
            .collect()
            .await;
        for r in results {
            report.count(r?, false);
        }
        self.hub.wake_pool(pool_name);
        self.store.announce(&[], Some(pool_name)).await?;
        Ok(report)
    }

    /// Creates the match of a committed pairing and notifies its players, or puts them back
    /// into the pool when it cannot be created.
    async fn finish(
        &self,
        pool: &Pool,
        pool_name: &str,
        m: &Making,
    ) -> Result<Finished, StoreError> {
        let players: Vec<String> = m.members.iter().map(|w| w.entry.player.clone()).collect();
        let request = NewMatch {
            request_id: m.id.clone(),
            variant: pool.variant,
            time_control: pool.control.to_string(),
            players: players.clone(),
        };
        let mut attempt = 0u32;
        let created = loop {
            match self.backend.create(&request).await {
                Ok(c) => break Ok(c),
                Err(e) if e.retryable && attempt < self.tuning.create_retries => {
                    tokio::time::sleep(CREATE_PAUSES.delay(attempt)).await;
                    attempt += 1;
                }
                Err(e) => break Err(e),
            }
        };
        let created = match created {
            Ok(c) => c,
            Err(BackendError { retryable, message }) => {
                // A failure that may pass (the match service unreachable, a timeout after which
                // the match may exist) keeps the pairing for a later wave, which asks again with
                // the same request id; only a refusal, or one that lasts, gives the players back.
                let age = self.store.now().await?.saturating_sub(m.since);
                if retryable && age < self.tuning.give_up_after_ms {
                    tracing::warn!(pairing = %m.id, error = %message, "creating a match failed; a later wave retries");
                    return Ok(Finished::Pending);
                }
                tracing::warn!(pairing = %m.id, error = %message, "creating a match failed; the players go back into the pool");
                self.store.unmake(pool_name, &m.id).await?;
                self.hub.wake_pool(pool_name);
                return Ok(Finished::Failed);
            }
        };
        let seats = seats_of(pool, &m.members);
        let found: Vec<Found> = players
            .iter()
            .zip(&created.tokens)
            .zip(&seats)
            .map(|((player, token), seat)| Found {
                player: player.clone(),
                match_id: created.match_id.clone(),
                message: pb::MatchFound {
                    pool: pool_name.to_owned(),
                    match_id: created.match_id.clone(),
                    seat: Some(seat.clone()),
                    token: token.clone(),
                    seats: seats.clone(),
                    variant: variant_to_proto(pool.variant),
                    time_control: pool.control.to_string(),
                    rated: pool.rated,
                }
                .encode_to_vec(),
            })
            .collect();
        let histories = histories_of(&m.members);
        let follow = Follow {
            match_id: created.match_id.clone(),
            pool: pool_name.to_owned(),
            players: players.clone(),
        };
        let fresh = self
            .store
            .matched(pool_name, &m.id, &found, &histories, &follow)
            .await?;
        if fresh {
            self.follow_now.notify_one();
            for p in &players {
                self.hub.wake(p);
            }
            self.store.announce(&players, None).await?;
        }
        Ok(Finished::Created)
    }

    /// Follows the outcomes of created matches until `shutdown`: this replica's own, and any
    /// whose follower's lease ran out (a replica that died).
    pub async fn run_follows(self: Arc<Self>, shutdown: watch::Receiver<bool>) {
        let scan = Duration::from_millis((self.tuning.follow_lease_ms / 3).max(1));
        let mut shutdown_wait = shutdown.clone();
        loop {
            let ids: Vec<String> = self.following_lock().iter().cloned().collect();
            if let Err(e) = self
                .store
                .renew_follows(&ids, self.tuning.follow_lease_ms)
                .await
            {
                tracing::warn!(error = %e, "renewing followed matches failed");
            }
            match self
                .store
                .claim_follows(self.tuning.follow_lease_ms, 256)
                .await
            {
                Ok(claimed) => {
                    for f in claimed {
                        self.spawn_follow(f, shutdown.clone());
                    }
                }
                Err(e) => tracing::warn!(error = %e, "claiming followed matches failed"),
            }
            tokio::select! {
                () = tokio::time::sleep(scan) => {}
                () = self.follow_now.notified() => {}
                _ = shutdown_wait.changed() => return,
            }
        }
    }

    fn following_lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.following
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn spawn_follow(self: &Arc<Self>, f: Follow, mut shutdown: watch::Receiver<bool>) {
        if !self.following_lock().insert(f.match_id.clone()) {
            return;
        }
        let me = Arc::clone(self);
        tokio::spawn(async move {
            let id = f.match_id.clone();
            tokio::select! {
                () = me.follow(&f) => {}
                _ = shutdown.changed() => {}
            }
            me.following_lock().remove(&id);
        });
    }

    async fn follow(&self, f: &Follow) {
        let mut failures = 0u32;
        let pause = |failures: &mut u32| {
            let delay = FOLLOW_PAUSES.delay(*failures);
            *failures = failures.saturating_add(1);
            tokio::time::sleep(delay)
        };
        loop {
            match self.backend.wait_end(&f.match_id).await {
                Ok(end) => loop {
                    match self.settle(f, end).await {
                        Ok(_) => return,
                        Err(ApiError::DataLoss(e)) => {
                            // Unreadable records or a bad pool name do not heal: set the match
                            // aside rather than retry it forever.
                            tracing::error!(match_id = %f.match_id, error = %e, "a finished match cannot be rated; it is no longer followed");
                            let _ = self.store.apply_ratings(&f.match_id, &[]).await;
                            return;
                        }
                        Err(e) => {
                            tracing::warn!(match_id = %f.match_id, error = %e, "rating a match failed; retrying");
                            pause(&mut failures).await;
                        }
                    }
                },
                Err(e) if e.retryable => {
                    tracing::debug!(match_id = %f.match_id, error = %e, "following a match; retrying");
                    pause(&mut failures).await;
                }
                Err(e) => {
                    tracing::warn!(match_id = %f.match_id, error = %e, "a followed match is gone; it will not be rated");
                    let _ = self.store.apply_ratings(&f.match_id, &[]).await;
                    return;
                }
            }
        }
    }

    /// Rates a finished match (once per match id) and stops following it.
    ///
    /// # Errors
    /// A store failure, or ratings that keep changing under the update.
    pub async fn settle(&self, f: &Follow, end: MatchEnd) -> Result<Applied, ApiError> {
        let pool = Pool::from_name(&f.pool).ok_or_else(|| {
            ApiError::DataLoss(format!("followed match {}: bad pool", f.match_id))
        })?;
        let (white_quarters, at_ms) = match end {
            MatchEnd::Scored {
                white_quarters,
                at_ms,
            } if pool.rated => (white_quarters, at_ms),
            _ => return Ok(self.store.apply_ratings(&f.match_id, &[]).await?),
        };
        let at_ms = if at_ms == 0 {
            self.store.now().await?
        } else {
            at_ms
        };
        let key = pool.rating_key();
        for _ in 0..8 {
            let mut old = Vec::with_capacity(f.players.len());
            let mut records = Vec::with_capacity(f.players.len());
            for p in &f.players {
                let (raw, record) = self.record(p, &key).await?;
                old.push(raw);
                records.push(record);
            }
            let after = ratings::rate(&self.tuning.glicko, &records, white_quarters, at_ms)
                .map_err(|e| ApiError::DataLoss(format!("rating match {}: {e}", f.match_id)))?;
            let writes: Vec<RatingWrite> = f
                .players
                .iter()
                .zip(old)
                .zip(after)
                .map(|((player, old), new)| RatingWrite {
                    player: player.clone(),
                    key: key.clone(),
                    old,
                    new: new.encode(),
                })
                .collect();
            match self.store.apply_ratings(&f.match_id, &writes).await? {
                Applied::Conflict => continue,
                done => return Ok(done),
            }
        }
        Err(ApiError::Unavailable(format!(
            "ratings of match {} kept changing during the update",
            f.match_id
        )))
    }
}

/// Sends `found` on a join stream, unless the client goes away or the server stops first.
async fn deliver(
    tx: &mpsc::Sender<Result<pb::JoinResponse, tonic::Status>>,
    found: Vec<pb::MatchFound>,
    shutdown: &mut watch::Receiver<bool>,
) {
    for f in found {
        let event = pb::JoinResponse {
            event: Some(pb::join_response::Event::MatchFound(f)),
        };
        tokio::select! {
            r = tx.send(Ok(event)) => if r.is_err() { return },
            _ = shutdown.changed() => return,
        }
    }
}

/// The seats of a pairing's players, in seat order.
fn seats_of(pool: &Pool, members: &[Waiting]) -> Vec<pb::FoundSeat> {
    const SEATS: [(u32, u32); 4] = [(1, 1), (1, 2), (2, 1), (2, 2)];
    members
        .iter()
        .zip(SEATS)
        .map(|(w, (board, side))| pb::FoundSeat {
            player_id: w.entry.player.clone(),
            board: if pool.is_bughouse() { board } else { 1 },
            side,
            rating: w.entry.rating,
        })
        .collect()
}

/// Each player's history after the pairing: their board's opponent and their colour.
fn histories_of(members: &[Waiting]) -> Vec<(String, History)> {
    members
        .iter()
        .enumerate()
        .map(|(i, w)| {
            // Seats come in board pairs: 0-1 on A, 2-3 on B.
            let opponent = &members[i ^ 1].entry.player;
            let color = if i % 2 == 0 {
                Color::White
            } else {
                Color::Black
            };
            (
                w.entry.player.clone(),
                w.entry.history.after(opponent, color),
            )
        })
        .collect()
}

/// A wave's decisions: the pairings (players in seat order) and who stays unpaired.
#[derive(Debug, Default)]
pub struct Plan {
    /// Each pairing's players in seat order.
    pub pairings: Vec<Vec<Waiting>>,
    /// The players who wait on.
    pub unpaired: Vec<String>,
}

/// Pairs `waiting` (a bughouse pool into four-player matches): the core's exact minimum-cost
/// matching, with each player's exclusions mapped onto the wave's ids and `seed` deciding ties
/// of colour and seat.
pub fn plan(waiting: &[Waiting], bughouse: bool, candidates: usize, seed: u64) -> Plan {
    let index: HashMap<&str, usize> = waiting
        .iter()
        .enumerate()
        .map(|(i, w)| (w.entry.player.as_str(), i))
        .collect();
    let id = |name: &str| index.get(name).map(|&i| PlayerId(i as u64));
    let to_core = |i: usize, w: &Waiting| WaitingPlayer {
        id: PlayerId(i as u64),
        rating: w.entry.rating,
        range: w.entry.range.filter(|r| r.min <= r.max),
        missed_waves: w.missed,
        color_balance: w.entry.history.color_balance,
        last_color: w.entry.history.last_color,
        last_opponent: w.entry.history.last_opponent.as_deref().and_then(id),
        blocked: w.entry.blocked.iter().filter_map(|b| id(b)).collect(),
    };
    let options = WaveOptions { candidates, seed };
    let pick = |p: PlayerId| waiting[p.0 as usize].clone();
    let mut plan = Plan::default();
    let mut paired = vec![false; waiting.len()];
    if bughouse {
        let mut lone = Vec::new();
        let mut partnered = Vec::new();
        let mut seen = vec![false; waiting.len()];
        for (i, w) in waiting.iter().enumerate() {
            if seen[i] {
                continue;
            }
            match w.entry.partner.as_deref() {
                None => lone.push(to_core(i, w)),
                Some(p) => {
                    // A partnership once both have joined naming each other; else this
                    // player waits for the partner.
                    if let Some(&j) = index.get(p)
                        && j != i
                        && waiting[j].entry.partner.as_deref() == Some(w.entry.player.as_str())
                    {
                        seen[j] = true;
                        partnered.push([to_core(i, w), to_core(j, &waiting[j])]);
                    }
                }
            }
            seen[i] = true;
        }
        match team_wave(&lone, &partnered, &options) {
            Ok(wave) => {
                for m in wave.matches {
                    let s = m.seats;
                    for p in [s.a_white, s.a_black, s.b_white, s.b_black] {
                        paired[p.0 as usize] = true;
                    }
                    plan.pairings.push(
                        [s.a_white, s.a_black, s.b_white, s.b_black]
                            .into_iter()
                            .map(pick)
                            .collect(),
                    );
                }
            }
            Err(e) => tracing::error!(error = %e, "a bughouse wave could not run"),
        }
    } else {
        let players: Vec<WaitingPlayer> = waiting
            .iter()
            .enumerate()
            .map(|(i, w)| to_core(i, w))
            .collect();
        match pair_wave(&players, &options) {
            Ok(wave) => {
                for p in wave.pairs {
                    paired[p.white.0 as usize] = true;
                    paired[p.black.0 as usize] = true;
                    plan.pairings.push(vec![pick(p.white), pick(p.black)]);
                }
            }
            Err(e) => tracing::error!(error = %e, "a wave could not run"),
        }
    }
    plan.unpaired = waiting
        .iter()
        .zip(paired)
        .filter(|(_, p)| !p)
        .map(|(w, _)| w.entry.player.clone())
        .collect();
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::CreatedMatch;
    use crate::store::memory::MemoryStore;
    use arbiter_core::Variant;
    use arbiter_core::clock::TimeControl;

    struct NoMatches;

    impl MatchBackend for NoMatches {
        async fn create(&self, _: &NewMatch) -> Result<CreatedMatch, BackendError> {
            Err(BackendError {
                retryable: false,
                message: "none".into(),
            })
        }

        async fn wait_end(&self, _: &str) -> Result<MatchEnd, BackendError> {
            std::future::pending().await
        }
    }

    /// A match service whose matches are all over, won by White.
    struct AllOver;

    impl MatchBackend for AllOver {
        async fn create(&self, _: &NewMatch) -> Result<CreatedMatch, BackendError> {
            Err(BackendError {
                retryable: false,
                message: "none".into(),
            })
        }

        async fn wait_end(&self, _: &str) -> Result<MatchEnd, BackendError> {
            Ok(MatchEnd::Scored {
                white_quarters: 4,
                at_ms: 1,
            })
        }
    }

    #[tokio::test]
    async fn a_match_that_cannot_be_rated_is_set_aside_not_retried_forever() {
        let mm = Matchmaker::new(MemoryStore::new(), AllOver, Tuning::default());
        let pool = Pool {
            variant: Variant::Chess,
            control: TimeControl::parse("3+2").unwrap(),
            rated: true,
        };
        let corrupt = RatingWrite {
            player: "w".into(),
            key: pool.rating_key(),
            old: None,
            new: "not a rating".into(),
        };
        assert_eq!(
            mm.store().apply_ratings("seed", &[corrupt]).await.unwrap(),
            Applied::Done
        );
        let f = Follow {
            match_id: "m1".into(),
            pool: pool.name(),
            players: vec!["w".into(), "b".into()],
        };
        assert!(matches!(
            mm.settle(
                &f,
                MatchEnd::Scored {
                    white_quarters: 4,
                    at_ms: 1
                }
            )
            .await,
            Err(ApiError::DataLoss(_))
        ));
        tokio::time::timeout(Duration::from_secs(5), mm.follow(&f))
            .await
            .expect("the follower gives up on a corrupt record");
        assert_eq!(
            mm.store().apply_ratings("m1", &[]).await.unwrap(),
            Applied::Already
        );
        assert!(mm.ratings("b").await.unwrap().is_empty());
    }

    #[test]
    fn pools_listed_for_elo_pair_by_elo() {
        let tc = TimeControl::parse("90/40+30, 30+30").unwrap();
        let mm = Matchmaker::new(
            MemoryStore::new(),
            NoMatches,
            Tuning {
                elo_pools: vec![(Variant::Chess, tc.clone())],
                ..Tuning::default()
            },
        );
        let pool = |variant, control: &TimeControl, rated| Pool {
            variant,
            control: control.clone(),
            rated,
        };
        assert_eq!(mm.system(&pool(Variant::Chess, &tc, true)), System::Elo);
        assert_eq!(mm.system(&pool(Variant::Chess, &tc, false)), System::Elo);
        assert_eq!(
            mm.system(&pool(Variant::Glinski, &tc, true)),
            System::Glicko2
        );
        let blitz = TimeControl::parse("3+2").unwrap();
        assert_eq!(
            mm.system(&pool(Variant::Chess, &blitz, true)),
            System::Glicko2
        );
    }

    #[test]
    fn pairing_ids_are_stable_per_pairing_and_apart_per_wave() {
        let a = pairing_id("chess/3+2/rated", 7, 1, 0);
        assert_eq!(a, pairing_id("chess/3+2/rated", 7, 1, 0));
        assert_ne!(a, pairing_id("chess/3+2/rated", 7, 2, 0));
        assert_ne!(a, pairing_id("chess/3+2/casual", 7, 1, 0));
        assert!(a.len() <= 128 && a.bytes().all(|b| b.is_ascii_graphic()));
    }
}
