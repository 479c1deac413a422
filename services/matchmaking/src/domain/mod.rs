//! Matchmaking itself: joining and holding a place, the waves, creating matches, and rating
//! them once they end. gRPC-free: it speaks its own types ([`MatchFound`], [`JoinEvent`],
//! [`Rating`]) and errors ([`MatchmakingError`]), which the gRPC module converts.
//!
//! One module per part of the work, each an `impl` block of [`Matchmaker`]: `players` (Join,
//! Leave, AcknowledgeMatch, GetRatings), `wave` (the waves: pairing, creating matches, telling
//! the players), `follow` (following matches to their end and rating them once), `offers`
//! (challenges and seeks, whose accepted matches are created, recorded and rated as a pairing's).

use crate::backend::{BackendError, CreatedMatch, MatchBackend, MatchEnd, NewMatch};
use crate::config::Tuning;
pub use crate::error::DOMAIN;
use crate::error::MatchmakingError;
pub use crate::found::{FoundSeat, MatchFound};
use crate::pool::{Entry, Follow, History, Making, Pairing, Pool, Waiting};
use crate::ratings::{self, Record, System};
use crate::store::{Applied, Found, Joined, Place, PoolStore, RatingWrite, Standing, StoreError};
use arbiter_core::Color;
use arbiter_core::pairing::teams::team_wave;
use arbiter_core::pairing::wave::{PlayerId, RatingRange, WaitingPlayer, WaveOptions, pair_wave};
use arbiter_core::rating::glicko2;
use arbiter_kit::retry::{Backoff, RetryPolicy};
use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, mpsc, watch};

mod follow;
mod history;
mod offers;
mod players;
mod wave;

pub use history::{
    EloImport, GlickoImport, HistoryPage, ImportEntry, ImportOutcome, ImportReport,
    MAX_IMPORT_ENTRIES, RatingChange,
};
pub use offers::{ChallengeEvent, OfferSpec, SeekPage, WatchSender, WatchTicket};

use players::Hub;
pub use players::{JoinEvent, JoinSender, JoinSpec, QueueStatus, Rating, Ticket};
pub use wave::{Plan, WaveReport, pairing_id, plan};

/// Matchmaking over a store `S`, creating matches through `B`.
pub struct Matchmaker<S, B> {
    store: S,
    backend: B,
    tuning: Tuning,
    hub: Hub,
    trigger: Notify,
    follow_now: Notify,
    following: Mutex<HashSet<String>>,
    /// This process's challenge watch streams, by player.
    watchers: Mutex<HashMap<String, Vec<Arc<Notify>>>>,
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
            watchers: Mutex::new(HashMap::new()),
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

    /// Wakes this process's join stream and challenge watch streams of `player` (news from
    /// this or another replica).
    pub fn wake_player(&self, player: &str) {
        self.hub.wake(player);
        if let Some(list) = self
            .watchers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(player)
        {
            for n in list {
                n.notify_one();
            }
        }
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

    async fn record(
        &self,
        player: &str,
        key: &str,
    ) -> Result<(Option<String>, Record), MatchmakingError> {
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
                MatchmakingError::Corrupt(format!("rating {key} of player {player:?} is corrupt"))
            })?,
        };
        Ok((raw, record))
    }
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
            change: String::new(),
        };
        assert_eq!(
            mm.store()
                .apply_ratings("seed", &[corrupt], 1)
                .await
                .unwrap(),
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
            Err(MatchmakingError::Corrupt(_))
        ));
        tokio::time::timeout(Duration::from_secs(5), mm.follow(&f))
            .await
            .expect("the follower gives up on a corrupt record");
        assert_eq!(
            mm.store().apply_ratings("m1", &[], 1).await.unwrap(),
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
