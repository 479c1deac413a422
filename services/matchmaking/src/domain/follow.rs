//! Following created matches to their end, and rating them exactly once.

use super::*;

/// The pauses of a follower between failures (0.25–0.5 s, 0.5–1 s, … up to 15–30 s, at
/// random): when a match service replica goes away, the many followers it served come back
/// spread out.
const FOLLOW_PAUSES: RetryPolicy = RetryPolicy {
    base: Duration::from_millis(250),
    cap: Duration::from_secs(15),
    max_attempts: u32::MAX,
    deadline: None,
};

impl<S: PoolStore, B: MatchBackend> Matchmaker<S, B> {
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

    pub(super) async fn follow(&self, f: &Follow) {
        let mut pauses = Backoff::new(FOLLOW_PAUSES);
        loop {
            match self.backend.wait_end(&f.match_id).await {
                Ok(end) => loop {
                    match self.settle(f, end).await {
                        Ok(_) => return,
                        Err(MatchmakingError::Corrupt(e)) => {
                            // Unreadable records or a bad pool name do not heal: set the match
                            // aside rather than retry it forever.
                            tracing::error!(match_id = %f.match_id, error = %e, "a finished match cannot be rated; it is no longer followed");
                            let _ = self
                                .store
                                .apply_ratings(&f.match_id, &[], self.tuning.rating_history)
                                .await;
                            return;
                        }
                        Err(e) => {
                            tracing::warn!(match_id = %f.match_id, error = %e, "rating a match failed; retrying");
                            pauses.wait().await;
                        }
                    }
                },
                Err(e) if e.retryable => {
                    tracing::debug!(match_id = %f.match_id, error = %e, "following a match; retrying");
                    pauses.wait().await;
                }
                Err(e) => {
                    tracing::warn!(match_id = %f.match_id, error = %e, "a followed match is gone; it will not be rated");
                    let _ = self
                        .store
                        .apply_ratings(&f.match_id, &[], self.tuning.rating_history)
                        .await;
                    return;
                }
            }
        }
    }

    /// Rates a finished match (once per match id) and stops following it.
    ///
    /// # Errors
    /// A store failure, or ratings that keep changing under the update.
    pub async fn settle(&self, f: &Follow, end: MatchEnd) -> Result<Applied, MatchmakingError> {
        let pool = Pool::from_name(&f.pool).ok_or_else(|| {
            MatchmakingError::Corrupt(format!("followed match {}: bad pool", f.match_id))
        })?;
        let (white_quarters, at_ms) = match end {
            MatchEnd::Scored {
                white_quarters,
                at_ms,
            } if pool.rated => (white_quarters, at_ms),
            _ => {
                return Ok(self
                    .store
                    .apply_ratings(&f.match_id, &[], self.tuning.rating_history)
                    .await?);
            }
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
                .map_err(|e| {
                    MatchmakingError::Corrupt(format!("rating match {}: {e}", f.match_id))
                })?;
            let opponents = ratings::opponents_of(&f.players);
            let scores = ratings::seat_quarters(f.players.len(), white_quarters);
            let writes: Vec<RatingWrite> = f
                .players
                .iter()
                .zip(old)
                .zip(records.iter().zip(after))
                .zip(opponents.into_iter().zip(scores))
                .map(
                    |(((player, old), (before, new)), (opponents, score_quarters))| RatingWrite {
                        player: player.clone(),
                        key: key.clone(),
                        change: ratings::Change {
                            kind: ratings::ChangeKind::Match,
                            at_ms,
                            match_id: f.match_id.clone(),
                            opponents,
                            score_quarters,
                            glicko: true,
                            elo: true,
                            before: old.is_some().then_some(*before),
                            after: new,
                        }
                        .encode(),
                        old,
                        new: new.encode(),
                    },
                )
                .collect();
            match self
                .store
                .apply_ratings(&f.match_id, &writes, self.tuning.rating_history)
                .await?
            {
                Applied::Conflict => continue,
                Applied::Done => {
                    metrics::counter!("arbiter_ratings_updated_total", "variant" => pool.variant.name())
                        .increment(writes.len() as u64);
                    return Ok(Applied::Done);
                }
                done => return Ok(done),
            }
        }
        Err(MatchmakingError::Unavailable(format!(
            "ratings of match {} kept changing during the update",
            f.match_id
        )))
    }
}
