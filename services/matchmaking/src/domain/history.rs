//! Ratings beyond pools: importing a platform's existing ratings (ImportRatings) and reading a
//! player's rating history (GetRatingHistory). A rated match's change is recorded by the same
//! store step that writes its ratings (`follow`), an import's by the step that writes it.

use super::*;
use crate::pool::rating_key;
use crate::ratings::{Change, ChangeKind};
use crate::store::{ImportWrite, Imported};
use arbiter_core::Variant;
use arbiter_core::clock::Speed;
use arbiter_core::rating::elo;

/// The most entries of one ImportRatings call.
pub const MAX_IMPORT_ENTRIES: usize = 1_000;

/// An imported Glicko-2 rating (checked by the caller: rating 100–4000, deviation in (0, 350],
/// volatility in (0, 1)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GlickoImport {
    /// The rating.
    pub rating: f64,
    /// The deviation.
    pub deviation: f64,
    /// The volatility.
    pub volatility: f64,
}

/// An imported FIDE Elo rating (checked by the caller: rating 100–4000).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EloImport {
    /// The rating.
    pub rating: u16,
    /// Rated games played so far (they decide K with the rating).
    pub games: u32,
    /// Whether the player has ever been rated 2400 or more.
    pub reached_2400: bool,
}

/// One player's rating in one variant and speed to import: Glicko-2, Elo or both.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportEntry {
    /// The player.
    pub player: String,
    /// The variant.
    pub variant: Variant,
    /// The speed category.
    pub speed: Speed,
    /// The Glicko-2 rating, if imported.
    pub glicko: Option<GlickoImport>,
    /// The Elo rating, if imported.
    pub elo: Option<EloImport>,
}

/// What an import did with one entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportOutcome {
    /// The player had no rating in the variant and speed: they have the entry's now.
    Imported,
    /// The player had one and the import does not overwrite: nothing changed.
    SkippedExisting,
    /// The player had one and the import overwrites: the entry's systems replaced it.
    Overwritten,
}

impl ImportOutcome {
    fn letter(self) -> char {
        match self {
            ImportOutcome::Imported => 'i',
            ImportOutcome::SkippedExisting => 's',
            ImportOutcome::Overwritten => 'o',
        }
    }

    fn from_letter(c: char) -> Option<ImportOutcome> {
        match c {
            'i' => Some(ImportOutcome::Imported),
            's' => Some(ImportOutcome::SkippedExisting),
            'o' => Some(ImportOutcome::Overwritten),
            _ => None,
        }
    }
}

/// The answer of an import.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportReport {
    /// One outcome per entry, in the request's order.
    pub outcomes: Vec<ImportOutcome>,
    /// True when this answers a retry (the first call's outcomes; nothing changed now).
    pub replayed: bool,
}

/// One change of a player's rating, as GetRatingHistory answers it.
#[derive(Clone, Debug, PartialEq)]
pub struct RatingChange {
    /// Its sequence number in the player's history of the variant and speed (the page token).
    pub seq: u64,
    /// The change as recorded.
    pub change: Change,
    /// The record before (a newcomer's defaults when the player had none: `change.before` is
    /// `None`).
    pub before: Record,
}

/// A page of a rating history, newest first.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryPage {
    /// The changes.
    pub changes: Vec<RatingChange>,
    /// The sequence number to read on from (the last change's), when there are older ones.
    pub next: Option<u64>,
}

/// The fingerprint of an import's content (what a retry must repeat).
fn fingerprint(entries: &[ImportEntry], overwrite: bool) -> String {
    let mut h = Sha256::new();
    h.update([u8::from(overwrite)]);
    for e in entries {
        let glicko = e.glicko.map_or(String::new(), |g| {
            format!("{},{},{}", g.rating, g.deviation, g.volatility)
        });
        let elo = e.elo.map_or(String::new(), |x| {
            format!("{},{},{}", x.rating, x.games, u8::from(x.reached_2400))
        });
        let key = rating_key(e.variant, e.speed);
        h.update(crate::found::pack(&[e.player.as_str(), &key, &glicko, &elo]).as_bytes());
        h.update(b"\n");
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

impl<S: PoolStore, B: MatchBackend> Matchmaker<S, B> {
    /// Imports `entries` (checked by the caller: at most [`MAX_IMPORT_ENTRIES`], one per
    /// player, variant and speed) in one atomic step, once per `request` id: a player with a
    /// rating in the entry's variant and speed keeps it unless `overwrite`. An imported system
    /// replaces the stored one (a Glicko-2 rating as of now, its deviation widening from now);
    /// a system not given keeps the stored value (a newcomer's default). Each import is
    /// recorded in the rating history.
    ///
    /// # Errors
    /// `ALREADY_EXISTS` for a request id used with other content, `UNAVAILABLE` without the
    /// store, `DATA_LOSS` for a stored record that cannot be read.
    pub async fn import_ratings(
        &self,
        request: &str,
        entries: &[ImportEntry],
        overwrite: bool,
    ) -> Result<ImportReport, MatchmakingError> {
        let fingerprint = fingerprint(entries, overwrite);
        for _ in 0..8 {
            let now = self.store.now().await?;
            let mut stored: HashMap<&str, Vec<(String, String)>> = HashMap::new();
            let mut writes = Vec::with_capacity(entries.len());
            let mut outcomes = Vec::with_capacity(entries.len());
            for e in entries {
                if !stored.contains_key(e.player.as_str()) {
                    let records = self.store.ratings(&e.player).await?;
                    stored.insert(e.player.as_str(), records);
                }
                let key = rating_key(e.variant, e.speed);
                let old = stored
                    .get(e.player.as_str())
                    .and_then(|r| r.iter().find(|(k, _)| *k == key))
                    .map(|(_, v)| v.clone());
                let outcome = match (&old, overwrite) {
                    (None, _) => ImportOutcome::Imported,
                    (Some(_), false) => ImportOutcome::SkippedExisting,
                    (Some(_), true) => ImportOutcome::Overwritten,
                };
                outcomes.push(outcome);
                if outcome == ImportOutcome::SkippedExisting {
                    writes.push(ImportWrite {
                        player: e.player.clone(),
                        key,
                        old,
                        new: None,
                    });
                    continue;
                }
                let before = match &old {
                    None => None,
                    Some(text) => Some(Record::decode(text).ok_or_else(|| {
                        MatchmakingError::Corrupt(format!(
                            "rating {key} of player {:?} is corrupt",
                            e.player
                        ))
                    })?),
                };
                let mut after = before.unwrap_or_else(|| Record::new(&self.tuning.glicko));
                if let Some(g) = e.glicko {
                    after.glicko = glicko2::Rating {
                        rating: g.rating,
                        deviation: g.deviation,
                        volatility: g.volatility,
                        updated_at: Some(now),
                    };
                }
                if let Some(x) = e.elo {
                    after.elo = elo::Player {
                        rating: x.rating,
                        games: x.games,
                        reached_2400: x.reached_2400 || x.rating >= 2400,
                        under_18: false,
                    };
                }
                let change = Change {
                    kind: ChangeKind::Import,
                    at_ms: now,
                    match_id: String::new(),
                    opponents: Vec::new(),
                    score_quarters: 0,
                    glicko: e.glicko.is_some(),
                    elo: e.elo.is_some(),
                    before,
                    after,
                };
                writes.push(ImportWrite {
                    player: e.player.clone(),
                    key,
                    old,
                    new: Some((after.encode(), change.encode())),
                });
            }
            let letters: String = outcomes.iter().map(|o| o.letter()).collect();
            match self
                .store
                .import_ratings(
                    request,
                    &fingerprint,
                    &letters,
                    &writes,
                    self.tuning.rating_history,
                )
                .await?
            {
                Imported::Done => {
                    return Ok(ImportReport {
                        outcomes,
                        replayed: false,
                    });
                }
                Imported::Replayed {
                    fingerprint: first,
                    outcomes,
                } => {
                    if first != fingerprint {
                        return Err(MatchmakingError::AlreadyExists(format!(
                            "request_id {request:?} was used for another import"
                        )));
                    }
                    let outcomes = outcomes
                        .chars()
                        .map(ImportOutcome::from_letter)
                        .collect::<Option<Vec<_>>>()
                        .filter(|o| o.len() == entries.len())
                        .ok_or_else(|| {
                            MatchmakingError::Corrupt(format!(
                                "the outcomes of import {request:?} are corrupt"
                            ))
                        })?;
                    return Ok(ImportReport {
                        outcomes,
                        replayed: true,
                    });
                }
                Imported::Conflict => continue,
            }
        }
        Err(MatchmakingError::Unavailable(format!(
            "ratings kept changing during import {request:?}"
        )))
    }

    /// A page of `player`'s rating history in `variant` and `speed`, newest first: at most
    /// `size` changes (of `system` only, when given) older than the change numbered `before`
    /// (the newest, when `None`).
    ///
    /// # Errors
    /// `UNAVAILABLE` without the store, `DATA_LOSS` for a corrupt change.
    pub async fn rating_history(
        &self,
        player: &str,
        variant: Variant,
        speed: Speed,
        system: Option<System>,
        before: Option<u64>,
        size: usize,
    ) -> Result<HistoryPage, MatchmakingError> {
        let key = rating_key(variant, speed);
        let log = self.store.rating_history(player, &key).await?;
        let mut changes = Vec::new();
        let mut next = None;
        for (seq, text) in log.into_iter().rev() {
            if before.is_some_and(|b| seq >= b) {
                continue;
            }
            let change = Change::decode(&text).ok_or_else(|| {
                MatchmakingError::Corrupt(format!(
                    "rating history {key} of player {player:?} is corrupt"
                ))
            })?;
            let wanted = match system {
                None => true,
                Some(System::Glicko2) => change.glicko,
                Some(System::Elo) => change.elo,
            };
            if !wanted {
                continue;
            }
            if changes.len() == size {
                next = changes.last().map(|c: &RatingChange| c.seq);
                break;
            }
            let before = change
                .before
                .unwrap_or_else(|| Record::new(&self.tuning.glicko));
            changes.push(RatingChange {
                seq,
                change,
                before,
            });
        }
        Ok(HistoryPage { changes, next })
    }
}
