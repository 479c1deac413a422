//! A player's side: Join (the ticket, the held place and its stream), Leave, AcknowledgeMatch and GetRatings.

use super::*;

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
    Found(Vec<MatchFound>),
}

/// Where a waiting player stands, as their join stream tells them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueStatus {
    /// The pool's name.
    pub pool: String,
    /// 1 for the player waiting longest.
    pub position: u32,
    /// Players waiting in the pool.
    pub waiting: u32,
    /// Waves the player has waited through without a game.
    pub waves_missed: u32,
    /// The pool's recent mean wait before a match, in ms (0 before any).
    pub estimated_wait_ms: u64,
    /// The rating the player is paired by in this pool.
    pub rating: i32,
}

/// What a join stream sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JoinEvent {
    /// The player's standing changed.
    Status(QueueStatus),
    /// A match was found (sent until acknowledged).
    Found(MatchFound),
}

/// One of a player's ratings (a variant and speed they have played), Glicko-2 deviation
/// widened to now.
#[derive(Clone, Debug, PartialEq)]
pub struct Rating {
    /// The variant.
    pub variant: arbiter_core::Variant,
    /// `bullet`, `blitz`, `rapid` or `classical`.
    pub speed: String,
    /// The Glicko-2 rating.
    pub glicko_rating: f64,
    /// Its deviation, widened to now.
    pub glicko_deviation: f64,
    /// Its volatility.
    pub glicko_volatility: f64,
    /// The FIDE-style Elo rating.
    pub elo: u32,
    /// Rated games played.
    pub games: u32,
}

/// The sending half of a join stream: events, or the error that ends it.
pub type JoinSender = mpsc::Sender<Result<JoinEvent, MatchmakingError>>;

/// A join stream of this process: its pool, its session, and what wakes it.
type Stream = (String, u64, Arc<Notify>);

/// The join streams of this process by player, woken when their player has news or their pool
/// ran a wave.
#[derive(Debug, Default)]
pub(super) struct Hub {
    streams: Mutex<HashMap<String, Stream>>,
}

impl Hub {
    pub(super) fn register(&self, player: &str, pool: &str, session: u64) -> Arc<Notify> {
        let notify = Arc::new(Notify::new());
        self.lock().insert(
            player.to_owned(),
            (pool.to_owned(), session, Arc::clone(&notify)),
        );
        notify
    }

    pub(super) fn unregister(&self, player: &str, session: u64) {
        let mut streams = self.lock();
        if streams.get(player).is_some_and(|(_, s, _)| *s == session) {
            streams.remove(player);
        }
    }

    pub(super) fn wake(&self, player: &str) {
        if let Some((_, _, n)) = self.lock().get(player) {
            n.notify_one();
        }
    }

    pub(super) fn wake_pool(&self, pool: &str) {
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

impl<S: PoolStore, B: MatchBackend> Matchmaker<S, B> {
    /// Joins a pool: a place (hold it with [`Matchmaker::hold`]) or the matches found the
    /// player must acknowledge first.
    ///
    /// # Errors
    /// `MATCHING` while the player's match is being created; `RESOURCE_EXHAUSTED` when the pool
    /// is full; `UNAVAILABLE` without the store.
    pub async fn join(&self, spec: JoinSpec) -> Result<Ticket, MatchmakingError> {
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
            Joined::Matching => Err(MatchmakingError::precondition(
                crate::error::MATCHING,
                format!(
                    "a match is being created for player {:?}: join again in a moment",
                    spec.player
                ),
            )),
            Joined::TooManyPools => Err(MatchmakingError::exhausted(
                "",
                format!(
                    "the server holds its maximum of {} pools with players",
                    self.tuning.max_pools
                ),
            )),
            Joined::Full => Err(MatchmakingError::exhausted(
                "",
                format!(
                    "pool {pool_name} holds its maximum of {} waiting players",
                    self.tuning.max_waiting
                ),
            )),
        }
    }

    async fn found(&self, player: &str) -> Result<Vec<MatchFound>, MatchmakingError> {
        Ok(self
            .store
            .found(player)
            .await?
            .into_iter()
            .map(|f| f.found)
            .collect())
    }

    /// Holds a place until the player is matched (sends their `MatchFound`), leaves, is taken
    /// over by a newer join, or the client goes away (which leaves the pool). Status updates go
    /// to `tx` when the player's standing changes; a client too slow to read them misses some
    /// (only the latest standing matters).
    pub async fn hold(&self, ticket: Ticket, tx: JoinSender, mut shutdown: watch::Receiver<bool>) {
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
                    let event = JoinEvent::Status(QueueStatus {
                        pool: pool.clone(),
                        position: standing.position,
                        waiting: standing.waiting,
                        waves_missed: standing.missed,
                        estimated_wait_ms: standing.mean_wait_ms,
                        rating,
                    });
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
                            let _ = tx.try_send(Err(MatchmakingError::Aborted(
                                "the place was given up: the player left, or joined again \
                                 elsewhere"
                                    .to_owned(),
                            )));
                        }
                        Err(e) => {
                            let _ = tx.try_send(Err(e));
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
                    let _ = tx.try_send(Err(MatchmakingError::Unavailable(
                        "the server is shutting down".to_owned(),
                    )));
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
    pub async fn leave(&self, player: &str) -> Result<bool, MatchmakingError> {
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
    pub async fn acknowledge(
        &self,
        player: &str,
        match_id: &str,
    ) -> Result<bool, MatchmakingError> {
        Ok(self.store.acknowledge(player, match_id).await?)
    }

    /// A player's ratings, Glicko-2 deviations widened to now.
    ///
    /// # Errors
    /// `UNAVAILABLE` without the store, `DATA_LOSS` for a corrupt record.
    pub async fn ratings(&self, player: &str) -> Result<Vec<Rating>, MatchmakingError> {
        let now = self.store.now().await?;
        let mut out = Vec::new();
        for (key, raw) in self.store.ratings(player).await? {
            let (Some((variant, speed)), Some(record)) =
                (key.split_once(':'), Record::decode(&raw))
            else {
                return Err(MatchmakingError::Corrupt(format!(
                    "rating {key} of player {player:?} is corrupt"
                )));
            };
            let Ok(variant) = variant.parse::<arbiter_core::Variant>() else {
                return Err(MatchmakingError::Corrupt(format!(
                    "rating key {key} is corrupt"
                )));
            };
            let current = glicko2::current(&self.tuning.glicko, &record.glicko, now)
                .map_err(|e| MatchmakingError::Corrupt(format!("rating {key}: {e}")))?;
            out.push(Rating {
                variant,
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
}

/// Sends `found` on a join stream, unless the client goes away or the server stops first.
async fn deliver(tx: &JoinSender, found: Vec<MatchFound>, shutdown: &mut watch::Receiver<bool>) {
    for f in found {
        let event = JoinEvent::Found(f);
        tokio::select! {
            r = tx.send(Ok(event)) => if r.is_err() { return },
            _ = shutdown.changed() => return,
        }
    }
}
