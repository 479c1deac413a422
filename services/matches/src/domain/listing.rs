//! ListMatches: a player's live and recently finished matches, newest first, a page at a time.
//!
//! Each creation files the match under each of its players (the Redis store keeps a sorted set
//! per player, the in-process store scans its matches). A page reads the player's places from
//! the newest, skips matches that have expired or do not pass the filters, and stops when the
//! page is full or after [`SCAN_BUDGET`] places; its token is the last place read, so the next
//! page goes on from there whatever the filters skipped.

use super::checks::MAX_PLAYER_BYTES;
use super::{Matches, check_match_id};
use crate::error::MatchError;
use crate::record::Record;
use crate::store::{IndexPlace, MAX_PLAYER_MATCHES, MatchStore};
use arbiter_core::Variant;
use std::sync::Arc;

/// The default number of matches on a page.
pub const DEFAULT_PAGE_SIZE: usize = 20;
/// The most matches on a page.
pub const MAX_PAGE_SIZE: usize = 100;
/// The most index places one page reads (filters may skip many).
const SCAN_BUDGET: usize = MAX_PLAYER_MATCHES;
/// Places read from the index per store call.
const CHUNK: usize = 100;

/// Which matches a listing wants.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// Only this variant.
    pub variant: Option<Variant>,
    /// Only live (`Some(false)`) or finished (`Some(true)`) matches.
    pub finished: Option<bool>,
}

impl ListFilter {
    fn keeps(&self, record: &Record) -> bool {
        self.variant.is_none_or(|v| v == record.variant)
            && self.finished.is_none_or(|f| f == record.outcome.is_some())
    }
}

/// One page of a listing.
#[derive(Clone, Debug)]
pub struct MatchPage {
    /// The matches with their creation times (Unix ms), newest first.
    pub matches: Vec<(u64, Arc<Record>)>,
    /// The token of the next page; empty when the player's index has no more.
    pub next_page_token: String,
}

fn bad_token() -> MatchError {
    MatchError::invalid("page_token", "not a token this server gave")
}

/// A page token: the place the next page starts after, `<created ms>.<match id>`.
fn encode_token(place: &IndexPlace) -> String {
    format!("{}.{}", place.0, place.1)
}

fn decode_token(token: &str) -> Result<Option<IndexPlace>, MatchError> {
    if token.is_empty() {
        return Ok(None);
    }
    let (at, id) = token.split_once('.').ok_or_else(bad_token)?;
    if at.is_empty() || at.len() > 20 || !at.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad_token());
    }
    check_match_id(id).map_err(|_| bad_token())?;
    Ok(Some((at.parse().map_err(|_| bad_token())?, id.to_owned())))
}

impl<S: MatchStore> Matches<S> {
    /// A page of `player`'s matches (newest first) that pass `filter`, after `page_token`, at
    /// most `page_size` (0: [`DEFAULT_PAGE_SIZE`]; at most [`MAX_PAGE_SIZE`]).
    pub async fn list(
        &self,
        player: &str,
        filter: ListFilter,
        page_size: u32,
        page_token: &str,
    ) -> Result<MatchPage, MatchError> {
        if player.is_empty()
            || player.len() > MAX_PLAYER_BYTES
            || player.chars().any(char::is_control)
        {
            return Err(MatchError::invalid(
                "player_id",
                format!("1 to {MAX_PLAYER_BYTES} bytes without control characters"),
            ));
        }
        let size = match usize::try_from(page_size).unwrap_or(usize::MAX) {
            0 => DEFAULT_PAGE_SIZE,
            n if n > MAX_PAGE_SIZE => {
                return Err(MatchError::invalid(
                    "page_size",
                    format!("at most {MAX_PAGE_SIZE}"),
                ));
            }
            n => n,
        };
        let mut after = decode_token(page_token)?;
        let mut matches = Vec::new();
        let mut scanned = 0;
        loop {
            let places = self
                .store
                .player_matches(player, after.as_ref(), CHUNK)
                .await?;
            let exhausted = places.len() < CHUNK;
            for place in places {
                scanned += 1;
                if let Some(record) = self.store.load(&place.1).await?
                    && record.players.iter().any(|p| p == player)
                    && filter.keeps(&record)
                {
                    matches.push((place.0, record));
                }
                let full = matches.len() == size || scanned == SCAN_BUDGET;
                after = Some(place);
                if full {
                    return Ok(MatchPage {
                        matches,
                        next_page_token: after.as_ref().map(encode_token).unwrap_or_default(),
                    });
                }
            }
            if exhausted {
                return Ok(MatchPage {
                    matches,
                    next_page_token: String::new(),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_hostile_ones_are_refused() {
        let place = (1_764_000_000_123, "m-1_x".to_owned());
        assert_eq!(decode_token(&encode_token(&place)).unwrap(), Some(place));
        assert_eq!(decode_token("").unwrap(), None);
        for bad in [
            ".",
            "12",
            "a.b",
            ".m1",
            "1.",
            "99999999999999999999999.m",
            "1.bad id",
            "1.m\n",
        ] {
            assert!(decode_token(bad).is_err(), "{bad:?}");
        }
        let long = format!("1.{}", "x".repeat(10_000));
        assert!(decode_token(&long).is_err());
    }
}
