//! The waves: a pool's waiting players paired under a fenced lock, their matches created through the backend, the players told.

use super::*;

/// The pauses between a wave's attempts at creating one match (100–200 ms, 200–400 ms, … up to
/// 2.5–5 s, at random; the gRPC backend has already retried, within each attempt, the failures
/// that pass in a moment).
const CREATE_PAUSES: RetryPolicy = RetryPolicy {
    base: Duration::from_millis(100),
    cap: Duration::from_millis(2_500),
    max_attempts: u32::MAX,
    deadline: None,
};

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

/// The id of a pairing (and its `CreateMatch` request id): the pool's hash, the wave's fencing
/// number and random nonce, the pairing's index. The id is stored with the pairing, so a retry
/// of the same pairing (by any replica) uses the same id; the nonce keeps ids apart when a
/// store's fencing numbers start again (a store lost, or an idle pool's lock forgotten).
pub fn pairing_id(pool: &str, fence: u64, nonce: u64, index: usize) -> String {
    let hash = Sha256::digest(pool.as_bytes());
    let hex = arbiter_kit::hex(&hash[..8]);
    format!("mm-{hex}-{fence}-{nonce:016x}-{index}")
}

/// The seats of a pairing's players, in seat order.
fn seats_of(pool: &Pool, members: &[Waiting]) -> Vec<FoundSeat> {
    const SEATS: [(u32, u32); 4] = [(1, 1), (1, 2), (2, 1), (2, 2)];
    members
        .iter()
        .zip(SEATS)
        .map(|(w, (board, side))| FoundSeat {
            player: w.entry.player.clone(),
            board: if pool.is_bughouse() { board } else { 1 },
            side,
            rating: w.entry.rating,
        })
        .collect()
}

/// Each player's match found for a created match, its seats in seat order (the players'
/// order in the creation).
pub(super) fn found_of(pool: &Pool, created: &CreatedMatch, seats: &[FoundSeat]) -> Vec<Found> {
    let pool_name = pool.name();
    seats
        .iter()
        .zip(&created.tokens)
        .map(|(seat, token)| Found {
            player: seat.player.clone(),
            match_id: created.match_id.clone(),
            found: MatchFound {
                pool: pool_name.clone(),
                match_id: created.match_id.clone(),
                seat: seat.clone(),
                token: token.clone(),
                seats: seats.to_vec(),
                variant: pool.variant,
                time_control: pool.control.to_string(),
                rated: pool.rated,
            },
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

impl<S: PoolStore, B: MatchBackend> Matchmaker<S, B> {
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
            // Players waiting in the pools whose waves this replica ran, by variant: summed
            // over replicas, every pool's count (each pool's wave runs on one replica a round).
            let mut waiting = [0usize; arbiter_core::Variant::ALL.len()];
            for pool in pools {
                match self.wave(&pool).await {
                    Ok(report) => {
                        if let Some(p) = Pool::from_name(&pool) {
                            waiting[p.variant.index()] += report.waiting;
                        }
                        if report.ran && (report.created > 0 || report.failed > 0) {
                            tracing::info!(%pool, ?report, "wave");
                        }
                    }
                    Err(e) => tracing::warn!(%pool, error = %e, "wave failed"),
                }
            }
            for (variant, n) in arbiter_core::Variant::ALL.iter().zip(waiting) {
                #[allow(clippy::cast_precision_loss)]
                metrics::gauge!("arbiter_matchmaking_players_waiting", "variant" => variant.name())
                    .set(n as f64);
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
        use tracing::Instrument;
        let span = tracing::info_span!(
            "matchmaking wave",
            otel.name = "matchmaking.wave",
            pool = pool_name
        );
        self.traced_wave(pool_name).instrument(span).await
    }

    async fn traced_wave(&self, pool_name: &str) -> Result<WaveReport, StoreError> {
        let Some(pool) = Pool::from_name(pool_name) else {
            return Err(StoreError::Corrupt(format!("bad pool name {pool_name:?}")));
        };
        let variant = pool.variant.name();
        let began = std::time::Instant::now();
        let result = match self.store.lock(pool_name, self.tuning.wave_lock_ms).await {
            Ok(Some(fence)) => {
                let result = self.locked_wave(&pool, pool_name, fence).await;
                let _ = self.store.unlock(pool_name, fence).await;
                result
            }
            Ok(None) => Ok(WaveReport::default()),
            Err(e) => Err(e),
        };
        let outcome = match &result {
            Ok(report) if report.ran => "ran",
            Ok(_) => "skipped",
            Err(_) => "failed",
        };
        metrics::counter!("arbiter_matchmaking_waves_total", "variant" => variant, "outcome" => outcome)
            .increment(1);
        if outcome != "skipped" {
            metrics::histogram!("arbiter_matchmaking_wave_duration_seconds", "variant" => variant)
                .record(began.elapsed().as_secs_f64());
        }
        if let Ok(report) = &result {
            let created = report.created + report.recovered;
            metrics::counter!("arbiter_matchmaking_matches_created_total", "variant" => variant)
                .increment(created as u64);
            metrics::counter!("arbiter_matchmaking_pairings_failed_total", "variant" => variant)
                .increment(report.failed as u64);
        }
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
        let variant = pool.variant.name();
        let waited = metrics::histogram!("arbiter_matchmaking_wait_seconds", "variant" => variant);
        let mut paired = 0;
        for m in committed.iter().flat_map(|m| &m.members) {
            paired += 1;
            #[allow(clippy::cast_precision_loss)]
            waited.record(since.saturating_sub(m.joined_at) as f64 / 1000.0);
        }
        metrics::counter!("arbiter_matchmaking_players_paired_total", "variant" => variant)
            .increment(paired);
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
            rules: Vec::new(),
        };
        let created = self.create_match(&request).await;
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
        let found = found_of(pool, &created, &seats);
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
            self.tell_matched(&players).await?;
        }
        Ok(Finished::Created)
    }

    /// Creates a match through the backend (idempotent by the request id), retrying a failure
    /// that may pass up to the tuning's `create_retries` times: the one way matchmaking creates
    /// matches, for pool pairings and accepted challenges and seeks alike.
    pub(super) async fn create_match(
        &self,
        request: &NewMatch,
    ) -> Result<CreatedMatch, BackendError> {
        let mut pauses = Backoff::new(CREATE_PAUSES);
        loop {
            match self.backend.create(request).await {
                Ok(c) => return Ok(c),
                Err(e) if e.retryable && pauses.retries() < self.tuning.create_retries => {
                    pauses.wait().await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// A recorded match's players are told (their streams here and on every replica), and the
    /// followers look for the new match at once.
    pub(super) async fn tell_matched(&self, players: &[String]) -> Result<(), StoreError> {
        self.follow_now.notify_one();
        for p in players {
            self.wake_player(p);
        }
        self.store.announce(players, None).await
    }
}
