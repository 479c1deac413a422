//! Challenges and seeks: creating, accepting (the match created, recorded and rated as a pool
//! pairing's: `Matchmaker::create_match`, `found_of` in the wave module, the store's follow
//! records), declining, cancelling, the lobby, and the challenge watch streams.

use super::wave::found_of;
use super::*;
use crate::error::{
    CHALLENGE_EXPIRED, CHALLENGE_NOT_PENDING, MATCH_REFUSED, NOT_CHALLENGED, NOT_CHALLENGER,
    NOT_SEEKER, OWN_SEEK, PLAYER_BUSY, RATING_OUT_OF_RANGE, SEEK_EXPIRED, SEEK_NOT_OPEN,
    SEEK_TAKEN,
};
use crate::offer::{
    Accepting, Created, DeclineReason, Ended, NewOffer, Offer, OfferKind, OfferLimits, OfferState,
    Terms,
};
use crate::store::OFFER_MEMORY_MS;

/// A validated creation of a challenge or a seek.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OfferSpec {
    /// Challenge or seek.
    pub kind: OfferKind,
    /// The challenger or seeker.
    pub owner: String,
    /// Challenges: the challenged player (never the owner).
    pub target: Option<String>,
    /// The game.
    pub terms: Terms,
    /// The creation's request id (scoped to the owner).
    pub request_id: String,
}

/// A page of the lobby.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeekPage {
    /// Open seeks, soonest to expire first.
    pub seeks: Vec<Offer>,
    /// Where the next page begins (the last seek's expiry and id); `None` on the last page.
    pub next: Option<(u64, String)>,
}

/// A change of a challenge, as a watch stream tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChallengeEvent {
    /// What happened: [`OfferState::Open`] for a challenge made (or pending when the stream
    /// opened), else the state it reached (never [`OfferState::Accepting`]).
    pub kind: OfferState,
    /// The challenge as it now stands.
    pub challenge: Offer,
    /// Accepted: the watching player's match found, unless acknowledged already.
    pub found: Option<MatchFound>,
}

/// The sending half of a challenge watch stream.
pub type WatchSender = mpsc::Sender<Result<ChallengeEvent, MatchmakingError>>;

/// A challenge watch stream's place among this replica's open ones
/// ([`Matchmaker::open_watch`]), given up when [`Matchmaker::watch_challenges`] ends.
#[derive(Debug)]
pub struct WatchTicket {
    player: String,
    notify: Arc<Notify>,
}

/// A watch stream reads its challenges again at least this often without news (an
/// announcement from another replica may be lost while Redis reconnects).
const WATCH_POLL: Duration = Duration::from_secs(5);

/// The offer with its state at `now` (an open offer past its expiry reads as expired).
fn settled(mut o: Offer, now: u64) -> Offer {
    o.state = o.state_at(now);
    o
}

fn noun(kind: OfferKind) -> &'static str {
    match kind {
        OfferKind::Challenge => "challenge",
        OfferKind::Seek => "seek",
    }
}

fn not_found(kind: OfferKind, id: &str) -> MatchmakingError {
    MatchmakingError::NotFound(format!("no {} {id:?}", noun(kind)))
}

/// Why an offer that is not open cannot be accepted or ended.
fn not_open(o: &Offer) -> MatchmakingError {
    let what = format!("{} {:?} is {}", noun(o.kind), o.id, o.state.name());
    let reason = match (o.kind, o.state) {
        (OfferKind::Challenge, OfferState::Expired) => CHALLENGE_EXPIRED,
        (OfferKind::Challenge, _) => CHALLENGE_NOT_PENDING,
        (OfferKind::Seek, OfferState::Expired) => SEEK_EXPIRED,
        (OfferKind::Seek, OfferState::Accepting | OfferState::Accepted) => SEEK_TAKEN,
        (OfferKind::Seek, _) => SEEK_NOT_OPEN,
    };
    MatchmakingError::precondition(reason, what)
}

impl<S: PoolStore, B: MatchBackend> Matchmaker<S, B> {
    fn limits(&self, kind: OfferKind) -> OfferLimits {
        match kind {
            OfferKind::Challenge => OfferLimits {
                per_owner: self.tuning.max_challenges_out,
                per_target: self.tuning.max_challenges_in,
                total: usize::MAX,
                created: self.tuning.max_offers_per_hour,
                window_ms: OFFER_MEMORY_MS,
            },
            OfferKind::Seek => OfferLimits {
                per_owner: self.tuning.max_seeks_per_player,
                per_target: usize::MAX,
                total: self.tuning.max_seeks,
                created: self.tuning.max_offers_per_hour,
                window_ms: OFFER_MEMORY_MS,
            },
        }
    }

    /// `player`'s current rating in `pool`'s variant and speed, by the system the pool pairs by.
    async fn rating_in(&self, player: &str, pool: &Pool) -> Result<i32, MatchmakingError> {
        let (_, record) = self.record(player, &pool.rating_key()).await?;
        Ok(record.pairing_rating(self.system(pool)))
    }

    /// Tells the offer's players' watch streams (here and on every replica) that it changed.
    async fn offer_news(&self, o: &Offer) -> Result<(), MatchmakingError> {
        let mut players = vec![o.owner.clone()];
        players.extend(o.target.iter().cloned());
        players.extend(o.acceptor.iter().cloned());
        players.sort_unstable();
        players.dedup();
        for p in &players {
            self.wake_player(p);
        }
        Ok(self.store.announce(&players, None).await?)
    }

    /// Makes a challenge or opens a seek (idempotent by the owner's request id).
    ///
    /// # Errors
    /// `ALREADY_EXISTS` for a request id used with other terms; `RESOURCE_EXHAUSTED` past a
    /// bound (the field named: the owner's, `challenged_id`, or none for the lobby);
    /// `UNAVAILABLE` without the store.
    pub async fn create_offer(&self, spec: OfferSpec) -> Result<Offer, MatchmakingError> {
        let pool = spec.terms.pool();
        let rating = self.rating_in(&spec.owner, &pool).await?;
        let (lifetime_ms, owner_field) = match spec.kind {
            OfferKind::Challenge => (self.tuning.challenge_lifetime_ms, "challenger_id"),
            OfferKind::Seek => (self.tuning.seek_lifetime_ms, "player_id"),
        };
        let new = NewOffer {
            kind: spec.kind,
            id: format!(
                "{}-{:016x}{:016x}",
                spec.kind.tag(),
                random_u64(),
                random_u64()
            ),
            owner: spec.owner,
            target: spec.target,
            terms: spec.terms,
            rating,
            request_id: spec.request_id,
            lifetime_ms,
        };
        let limits = self.limits(spec.kind);
        let what = noun(spec.kind);
        match self.store.create_offer(&new, limits).await? {
            Created::New(o) => {
                self.offer_news(&o).await?;
                Ok(o)
            }
            Created::Existing(o) => Ok(settled(o, self.store.now().await?)),
            Created::Conflict => Err(MatchmakingError::AlreadyExists(format!(
                "request_id {:?} of player {:?} made another {what}",
                new.request_id, new.owner
            ))),
            Created::OwnerFull => Err(MatchmakingError::exhausted(
                owner_field,
                format!(
                    "player {:?} has {} open {what}s, the most allowed",
                    new.owner, limits.per_owner
                ),
            )),
            Created::OwnerRate => Err(MatchmakingError::exhausted(
                owner_field,
                format!(
                    "player {:?} created {} {what}s this hour, the most allowed",
                    new.owner, limits.created
                ),
            )),
            Created::TargetFull => Err(MatchmakingError::exhausted(
                "challenged_id",
                format!(
                    "player {:?} has {} pending challenges, the most allowed",
                    new.target.unwrap_or_default(),
                    limits.per_target
                ),
            )),
            Created::LobbyFull => Err(MatchmakingError::exhausted(
                "",
                format!("the lobby holds its maximum of {} seeks", limits.total),
            )),
        }
    }

    /// The challenge or seek `id`, its state as of now.
    ///
    /// # Errors
    /// `NOT_FOUND` (also for an offer of the other kind); `UNAVAILABLE` without the store.
    pub async fn offer(&self, kind: OfferKind, id: &str) -> Result<Offer, MatchmakingError> {
        let now = self.store.now().await?;
        self.store
            .offer(id)
            .await?
            .filter(|o| o.kind == kind)
            .map(|o| settled(o, now))
            .ok_or_else(|| not_found(kind, id))
    }

    /// Accepts a challenge (its challenged player) or a seek (any eligible player but the
    /// seeker) under the accept's `request` id: its match is created once (the pool path's
    /// `Matchmaker::create_match`, with a request id derived from the offer and the accept),
    /// both players' matches found are recorded and the match is followed and rated as a
    /// pairing's; both players leave any pool they wait in (their join streams hand the match
    /// found out). A retry of the same accept answers the same match.
    ///
    /// # Errors
    /// `NOT_FOUND`; `FAILED_PRECONDITION` (`NOT_CHALLENGED`, `OWN_SEEK`, `RATING_OUT_OF_RANGE`,
    /// `CHALLENGE_NOT_PENDING` (also while another accept is under way),
    /// `CHALLENGE_EXPIRED`, `SEEK_TAKEN`, `SEEK_NOT_OPEN`, `SEEK_EXPIRED`, `PLAYER_BUSY`: either
    /// player holds an unacknowledged match found or is being matched, `MATCH_REFUSED`: the
    /// offer is then open again); `UNAVAILABLE` (the store, or the match service: the accept
    /// then stays under way, the offer taken, and a retry of the same accept finishes it).
    ///
    /// The accept's first step takes both players out of their pools and marks them being
    /// matched (see [`crate::offer`]); a retry of an accept already recorded answers the
    /// recorded match found without asking the match service again. An accept that finds
    /// another accept under way without a heartbeat for the stale time
    /// ([`crate::config::Tuning::accept_stale_ms`]) finishes that accept for its own acceptor
    /// (same match request id) and answers `SEEK_TAKEN` / `CHALLENGE_NOT_PENDING` (or
    /// `UNAVAILABLE` when that accept cannot be finished now, or was refused and the offer is
    /// open again).
    pub async fn accept_offer(
        &self,
        kind: OfferKind,
        id: &str,
        acceptor: &str,
        request: &str,
    ) -> Result<(Offer, MatchFound), MatchmakingError> {
        let offer = self.offer(kind, id).await?;
        let pool = offer.terms.pool();
        match kind {
            OfferKind::Challenge => {
                if offer.target.as_deref() != Some(acceptor) {
                    return Err(MatchmakingError::precondition(
                        NOT_CHALLENGED,
                        format!("player {acceptor:?} is not the one challenged by {id:?}"),
                    ));
                }
            }
            OfferKind::Seek => {
                if offer.owner == acceptor {
                    return Err(MatchmakingError::precondition(
                        OWN_SEEK,
                        format!("player {acceptor:?} made seek {id:?}"),
                    ));
                }
                if offer.terms.rated
                    && let Some(range) = offer.terms.range
                {
                    let rating = self.rating_in(acceptor, &pool).await?;
                    if rating < range.min || rating > range.max {
                        return Err(MatchmakingError::precondition(
                            RATING_OUT_OF_RANGE,
                            format!(
                                "rating {rating} lies outside seek {id:?}'s range {}–{}",
                                range.min, range.max
                            ),
                        ));
                    }
                }
            }
        }
        let stale_ms = self.tuning.accept_stale_ms;
        let offer = match self
            .store
            .begin_accept(id, acceptor, request, stale_ms)
            .await?
        {
            Accepting::Again(o)
                if o.state == OfferState::Accepted
                    && let Some(found) = o.found.clone() =>
            {
                // Recorded before: answer what was recorded, without a new CreateMatch.
                return Ok((o, found));
            }
            Accepting::Started(o) | Accepting::Again(o) => o,
            Accepting::Resumed(o) => {
                // A stale accept of another acceptor (or another request): it is finished for
                // its own acceptor, never replaced; this caller is told the offer is taken.
                tracing::info!(offer = %id, acceptor = ?o.acceptor, "resuming a stale accept");
                let after = match self.complete_accept(&o).await {
                    Ok((after, _)) => after,
                    Err(MatchmakingError::Unavailable(e)) => {
                        return Err(MatchmakingError::Unavailable(format!(
                            "an earlier accept of {} {id:?} is being finished: {e}",
                            noun(kind)
                        )));
                    }
                    Err(MatchmakingError::Precondition { .. }) => {
                        // Refused by the match service: the offer is open again.
                        return Err(MatchmakingError::Unavailable(format!(
                            "an earlier accept of {} {id:?} failed; it is open again",
                            noun(kind)
                        )));
                    }
                    Err(e) => return Err(e),
                };
                return Err(not_open(&settled(after, self.store.now().await?)));
            }
            Accepting::NotOpen(o) => {
                return Err(not_open(&settled(o, self.store.now().await?)));
            }
            Accepting::Busy(player) => {
                return Err(MatchmakingError::precondition(
                    PLAYER_BUSY,
                    format!(
                        "player {player:?} has a match found not yet acknowledged, or a match \
                         being created"
                    ),
                ));
            }
            Accepting::Missing => return Err(not_found(kind, id)),
        };
        let (after, mine) = self.complete_accept(&offer).await?;
        let is_mine = after.state == OfferState::Accepted
            && after.acceptor.as_deref() == Some(acceptor)
            && after.accept_request.as_deref() == Some(request);
        match mine {
            Some(found) if is_mine => Ok((after, found)),
            _ => Err(not_open(&settled(after, self.store.now().await?))),
        }
    }

    /// Finishes the accept under way of `offer` (as stored when it began, was retried or was
    /// resumed): creates its match with the accept's match request id (the match service
    /// answers the match it created before for the same id), records both players' matches
    /// found and files the match to be followed. Returns the offer as it then stands and the
    /// acceptor's match found when this accept's match is the offer's.
    ///
    /// A failure that may pass keeps the accept under way (the offer accepting, its players
    /// marked): a retry of the same accept, the next accept after the stale time or a
    /// replica's resumer finishes it with the same match request id. Only a refusal of the
    /// match service releases the offer (open again).
    async fn complete_accept(
        &self,
        offer: &Offer,
    ) -> Result<(Offer, Option<MatchFound>), MatchmakingError> {
        let id = offer.id.as_str();
        let kind = offer.kind;
        let (Some(acceptor), Some(request)) =
            (offer.acceptor.as_deref(), offer.accept_request.as_deref())
        else {
            return Err(MatchmakingError::Corrupt(format!(
                "{} {id:?} is accepting without an acceptor",
                noun(kind)
            )));
        };
        let pool = offer.terms.pool();
        let players = offer.seating(acceptor);
        let creation = NewMatch {
            request_id: offer.match_request_id(),
            variant: pool.variant,
            time_control: pool.control.to_string(),
            players: players.to_vec(),
            rules: offer.terms.rules.clone(),
        };
        let created = match self.create_match(&creation).await {
            Ok(c) => c,
            Err(e) if e.retryable => {
                // The match may exist: the accept stays under way, to be retried with the same
                // match request id (by its caller, the next accept once stale, or a resumer).
                tracing::warn!(offer = %id, error = %e.message, "creating an accepted offer's match failed; the accept stays under way");
                return Err(MatchmakingError::Unavailable(format!(
                    "the match service cannot create the match now (retry the same accept): {}",
                    e.message
                )));
            }
            Err(e) => {
                tracing::warn!(offer = %id, error = %e.message, "the match service refused an accepted offer's match; the offer is open again");
                if self.store.release_accept(id, request).await? {
                    self.offer_news(offer).await?;
                }
                return Err(MatchmakingError::precondition(
                    MATCH_REFUSED,
                    format!("the match service refused the match: {}", e.message),
                ));
            }
        };
        let mut seats = Vec::with_capacity(2);
        for (side, p) in (1u32..).zip(&players) {
            seats.push(FoundSeat {
                player: p.clone(),
                board: 1,
                side,
                rating: self.rating_in(p, &pool).await?,
            });
        }
        let found = found_of(&pool, &created, &seats);
        let follow = Follow {
            match_id: created.match_id.clone(),
            pool: pool.name(),
            players: players.to_vec(),
        };
        let Some((after, fresh)) = self
            .store
            .finish_accept(id, request, &found, &follow)
            .await?
        else {
            return Err(not_found(kind, id));
        };
        if fresh {
            // Both players left their pools in the accept's first step: their join streams
            // hand out this match found and end, as after a wave.
            metrics::counter!("arbiter_matchmaking_offers_accepted_total", "kind" => noun(kind))
                .increment(1);
            self.tell_matched(&players).await?;
        }
        if after.match_id.as_deref() != Some(created.match_id.as_str()) {
            return Ok((after, None));
        }
        let mine = found
            .into_iter()
            .find(|f| f.player == acceptor)
            .map(|f| f.found)
            .ok_or_else(|| {
                MatchmakingError::Corrupt(format!(
                    "match {} has no seat for the acceptor",
                    created.match_id
                ))
            })?;
        Ok((after, Some(mine)))
    }

    /// Finishes every accept under way that went without a heartbeat for the stale time
    /// ([`crate::config::Tuning::accept_stale_ms`]): its replica died, or its caller gave up
    /// after a failure that may pass. Each is resumed (its acceptor, its match request id), never
    /// replaced; one that fails again for a reason that may pass stays under way for a later
    /// round. Returns how many were finished (recorded or released).
    ///
    /// # Errors
    /// A store failure.
    pub async fn resume_stale_accepts(&self) -> Result<usize, MatchmakingError> {
        let stale_ms = self.tuning.accept_stale_ms;
        let mut done = 0;
        for id in self.store.stale_accepts(stale_ms).await? {
            let Accepting::Resumed(o) = self.store.begin_accept(&id, "", "", stale_ms).await?
            else {
                // Finished, or resumed by another replica, meanwhile.
                continue;
            };
            match self.complete_accept(&o).await {
                Ok(_) | Err(MatchmakingError::Precondition { .. }) => done += 1,
                Err(MatchmakingError::Unavailable(e)) => {
                    tracing::warn!(offer = %id, error = %e, "a stale accept cannot be finished yet");
                }
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }

    /// Resumes stale accepts ([`Matchmaker::resume_stale_accepts`]) every
    /// [`crate::config::Tuning::accept_resume_interval_ms`] (never when 0) until `shutdown`.
    pub async fn run_accept_resumer(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        let every = self.tuning.accept_resume_interval_ms;
        if every == 0 {
            return;
        }
        loop {
            let jitter = random_u64() % (every / 4 + 1);
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(every + jitter)) => {}
                _ = shutdown.changed() => return,
            }
            if *shutdown.borrow() {
                return;
            }
            match self.resume_stale_accepts().await {
                Ok(0) => {}
                Ok(n) => tracing::info!(finished = n, "stale accepts resumed"),
                Err(e) => tracing::warn!(error = %e, "resuming stale accepts failed"),
            }
        }
    }

    /// Declines a challenge (its challenged player, with `reason`) or cancels a challenge or a
    /// seek (its owner). Ending it the same way again answers it again.
    ///
    /// # Errors
    /// `NOT_FOUND`; `FAILED_PRECONDITION` (`NOT_CHALLENGED`, `NOT_CHALLENGER`, `NOT_SEEKER`, or
    /// not open: `CHALLENGE_NOT_PENDING`, `CHALLENGE_EXPIRED`, `SEEK_TAKEN`, …);
    /// `UNAVAILABLE` without the store.
    pub async fn end_offer(
        &self,
        kind: OfferKind,
        id: &str,
        player: &str,
        decline: Option<DeclineReason>,
    ) -> Result<Offer, MatchmakingError> {
        self.offer(kind, id).await?;
        let (by_owner, state) = match decline {
            None => (true, OfferState::Cancelled),
            Some(_) => (false, OfferState::Declined),
        };
        let reason = decline.map_or(0, DeclineReason::code);
        match self
            .store
            .end_offer(id, player, by_owner, state, reason)
            .await?
        {
            Ended::Done(o) => {
                self.offer_news(&o).await?;
                Ok(settled(o, self.store.now().await?))
            }
            Ended::NotYours(_) => {
                let reason = match (kind, by_owner) {
                    (OfferKind::Seek, _) => NOT_SEEKER,
                    (OfferKind::Challenge, true) => NOT_CHALLENGER,
                    (OfferKind::Challenge, false) => NOT_CHALLENGED,
                };
                Err(MatchmakingError::precondition(
                    reason,
                    format!("player {player:?} may not end {} {id:?} so", noun(kind)),
                ))
            }
            Ended::NotOpen(o) => Err(not_open(&settled(o, self.store.now().await?))),
            Ended::Missing => Err(not_found(kind, id)),
        }
    }

    /// A page of at most `size` open seeks (of `variant` only, when given), beginning after
    /// `after` (a previous page's [`SeekPage::next`]).
    ///
    /// # Errors
    /// `UNAVAILABLE` without the store.
    pub async fn list_seeks(
        &self,
        variant: Option<arbiter_core::Variant>,
        after: Option<(u64, String)>,
        size: usize,
    ) -> Result<SeekPage, MatchmakingError> {
        let all = self.store.seeks(variant).await?;
        let start = after.map_or(0, |(x, id)| {
            all.partition_point(|o| (o.expires_at, o.id.as_str()) <= (x, id.as_str()))
        });
        let seeks: Vec<Offer> = all[start..].iter().take(size.max(1)).cloned().collect();
        let next = if start + seeks.len() < all.len() {
            seeks.last().map(|o| (o.expires_at, o.id.clone()))
        } else {
            None
        };
        Ok(SeekPage { seeks, next })
    }

    /// Takes a place for a challenge watch stream of `player` (given up when
    /// [`Matchmaker::watch_challenges`] ends).
    ///
    /// # Errors
    /// `RESOURCE_EXHAUSTED` when `player` holds their maximum of watch streams
    /// (`player_id`) or this replica holds its maximum.
    pub fn open_watch(&self, player: &str) -> Result<WatchTicket, MatchmakingError> {
        let mut watchers = self.watchers_lock();
        let mine = watchers.get(player).map_or(0, Vec::len);
        if mine >= self.tuning.max_watches_per_player {
            return Err(MatchmakingError::exhausted(
                "player_id",
                format!("player {player:?} holds {mine} challenge watch streams, the most allowed"),
            ));
        }
        let total: usize = watchers.values().map(Vec::len).sum();
        if total >= self.tuning.max_watches {
            return Err(MatchmakingError::exhausted(
                "",
                format!(
                    "the server holds its maximum of {} challenge watch streams",
                    self.tuning.max_watches
                ),
            ));
        }
        let notify = Arc::new(Notify::new());
        watchers
            .entry(player.to_owned())
            .or_default()
            .push(Arc::clone(&notify));
        Ok(WatchTicket {
            player: player.to_owned(),
            notify,
        })
    }

    /// Streams the ticket's player's challenges to `tx` until the client goes away or the
    /// server shuts down: first every pending one, then each change. Gives the ticket's place
    /// up when it ends.
    pub async fn watch_challenges(
        &self,
        ticket: WatchTicket,
        tx: WatchSender,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let WatchTicket { player, notify } = ticket;
        let mut seen: HashMap<String, OfferState> = HashMap::new();
        let mut first = true;
        loop {
            let wait = match self.watch_step(&player, &mut seen, first, &tx).await {
                Ok(Some(wait)) => {
                    first = false;
                    wait
                }
                Ok(None) => break,
                Err(MatchmakingError::Unavailable(e)) => {
                    tracing::debug!(%player, error = %e, "a challenge watch cannot read the store; retrying");
                    Duration::from_secs(1)
                }
                Err(e) => {
                    let _ = tx.send(Err(e)).await;
                    break;
                }
            };
            tokio::select! {
                () = notify.notified() => {}
                () = tokio::time::sleep(wait) => {}
                () = tx.closed() => break,
                _ = shutdown.changed() => {
                    let _ = tx
                        .send(Err(MatchmakingError::Unavailable("the server is shutting down".into())))
                        .await;
                    break;
                }
            }
        }
        let mut watchers = self.watchers_lock();
        if let Some(list) = watchers.get_mut(&player) {
            list.retain(|n| !Arc::ptr_eq(n, &notify));
            if list.is_empty() {
                watchers.remove(&player);
            }
        }
    }

    fn watchers_lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Arc<Notify>>>> {
        self.watchers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sends what changed since `seen` (everything pending, the first time); the time until the
    /// next look (the soonest expiry, at most [`WATCH_POLL`]), or `None` when the client went
    /// away.
    async fn watch_step(
        &self,
        player: &str,
        seen: &mut HashMap<String, OfferState>,
        first: bool,
        tx: &WatchSender,
    ) -> Result<Option<Duration>, MatchmakingError> {
        let now = self.store.now().await?;
        let list = self.store.challenges_of(player).await?;
        let mut next = WATCH_POLL;
        let mut found: Option<Vec<Found>> = None;
        seen.retain(|id, _| list.iter().any(|o| o.id == *id));
        for o in list {
            let state = o.state_at(now);
            if state == OfferState::Open {
                next = next.min(Duration::from_millis(
                    o.expires_at.saturating_sub(now).max(1),
                ));
            }
            let shown = match state {
                OfferState::Accepting => OfferState::Open,
                s => s,
            };
            if seen.get(&o.id) == Some(&shown) {
                continue;
            }
            seen.insert(o.id.clone(), shown);
            if first && shown != OfferState::Open {
                continue;
            }
            let mut mine = None;
            if shown == OfferState::Accepted {
                if found.is_none() {
                    found = Some(self.store.found(player).await?);
                }
                mine = found
                    .iter()
                    .flatten()
                    .find(|f| Some(&f.match_id) == o.match_id.as_ref())
                    .map(|f| f.found.clone());
            }
            let event = ChallengeEvent {
                kind: shown,
                challenge: settled(o, now),
                found: mine,
            };
            if tx.send(Ok(event)).await.is_err() {
                return Ok(None);
            }
        }
        Ok(Some(next))
    }
}
