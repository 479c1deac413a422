//! Clocks in this process (the embedded default): each change one step under a mutex, with the
//! Redis store's semantics. Clocks are lost when the process stops.

use super::{ClockStore, Created, Outcome, PressCommit, SetCommit, StoreError};
use crate::record::{ClockEvent, ClockRecord, encode_clock};
use arbiter_clocked::{Deadlines, MemoryDeadlines};
use arbiter_kit::process_now;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug)]
struct Entry {
    record: Arc<ClockRecord>,
    events: Vec<String>,
    expires: u64,
}

#[derive(Debug, Default)]
struct Inner {
    by_id: HashMap<String, Entry>,
}

/// Clocks in memory.
#[derive(Debug)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    ttl: Duration,
    max_clocks: usize,
    deadlines: MemoryDeadlines,
}

impl MemoryStore {
    /// An empty store of at most `max_clocks`, each kept `ttl` after its last change.
    pub fn new(ttl: Duration, max_clocks: usize) -> MemoryStore {
        MemoryStore {
            inner: Mutex::new(Inner::default()),
            ttl,
            max_clocks,
            deadlines: MemoryDeadlines::new(),
        }
    }

    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX)
    }

    /// Runs a change on the live clock `id`, then files its deadline.
    fn change(&self, id: &str, f: impl FnOnce(&mut Entry, u64) -> Outcome) -> Outcome {
        let mut inner = self.inner.lock().expect("not poisoned");
        let now = process_now();
        if inner.by_id.get(id).is_some_and(|e| e.expires <= now) {
            inner.by_id.remove(id);
            self.deadlines.file(id, None);
        }
        let Some(entry) = inner.by_id.get_mut(id) else {
            return Outcome::Missing;
        };
        let out = f(entry, now);
        if matches!(out, Outcome::Applied(_)) {
            entry.expires = now.saturating_add(self.ttl_ms());
        }
        let deadline = entry.record.deadline();
        self.deadlines.file(id, deadline);
        out
    }
}

fn late(r: &ClockRecord, now: u64) -> bool {
    r.deadline().is_some_and(|d| d <= now)
}

impl ClockStore for MemoryStore {
    async fn create(&self, record: &ClockRecord) -> Result<Created, StoreError> {
        let mut inner = self.inner.lock().expect("not poisoned");
        let now = process_now();
        if let Some(e) = inner.by_id.get(&record.id).filter(|e| e.expires > now) {
            return Ok(Created::Exists(Arc::clone(&e.record)));
        }
        if inner.by_id.len() >= self.max_clocks {
            inner.by_id.retain(|_, e| e.expires > now);
            if inner.by_id.len() >= self.max_clocks {
                return Ok(Created::Full(self.max_clocks));
            }
        }
        let stored = Arc::new(record.clone());
        self.deadlines.file(&record.id, record.deadline());
        inner.by_id.insert(
            record.id.clone(),
            Entry {
                record: Arc::clone(&stored),
                events: Vec::new(),
                expires: now.saturating_add(self.ttl_ms()),
            },
        );
        Ok(Created::New(stored))
    }

    async fn load(&self, id: &str) -> Result<Option<Arc<ClockRecord>>, StoreError> {
        let inner = self.inner.lock().expect("not poisoned");
        let now = process_now();
        Ok(inner
            .by_id
            .get(id)
            .filter(|e| e.expires > now)
            .map(|e| Arc::clone(&e.record)))
    }

    async fn press(&self, id: &str, c: &PressCommit) -> Result<Outcome, StoreError> {
        Ok(self.change(id, |e, now| {
            let current = Arc::clone(&e.record);
            if current.over {
                return Outcome::Over(current);
            }
            let board = &current.boards[c.board];
            if board.ply != c.ply {
                if c.ply.checked_add(1) == Some(board.ply) && board.last == Some(c.mover) {
                    return Outcome::Duplicate(current);
                }
                return Outcome::Stale(current);
            }
            if late(&current, now) {
                return Outcome::Late(current);
            }
            if encode_clock(&board.clock) != c.expected {
                return Outcome::Stale(current);
            }
            let Some(result) = c.plan.apply(now) else {
                return Outcome::Late(current);
            };
            let mut record = (*current).clone();
            let b = &mut record.boards[c.board];
            b.clock.commit(c.mover, &c.plan, &result, now);
            b.ply += 1;
            b.last = Some(c.mover);
            e.events
                .push(ClockEvent::snapshot(c.board, &b.clock, now).encode());
            record.last_seq = e.events.len() as u64;
            e.record = Arc::new(record);
            Outcome::Applied(Arc::clone(&e.record))
        }))
    }

    async fn set(&self, id: &str, c: &SetCommit) -> Result<Outcome, StoreError> {
        Ok(self.change(id, |e, now| {
            let current = Arc::clone(&e.record);
            if let Some(r) = &c.request {
                match current.requests.get(&r.id) {
                    Some(Some(seen)) if seen == r.request => return Outcome::Duplicate(current),
                    Some(_) => return Outcome::Reused(current),
                    None => {}
                }
            }
            if current.over {
                return Outcome::Over(current);
            }
            let unchanged = c
                .clocks
                .iter()
                .all(|(i, expected, _)| encode_clock(&current.boards[*i].clock) == *expected);
            if !unchanged {
                return Outcome::Stale(current);
            }
            match c.due {
                None if late(&current, now) => return Outcome::Late(current),
                Some(at) if now < at => return Outcome::Stale(current),
                _ => {}
            }
            let mut record = (*current).clone();
            for (i, _, clock) in &c.clocks {
                record.boards[*i].clock = clock.clone();
            }
            record.flag = c.flag.or(record.flag);
            record.over |= c.over;
            if let Some(r) = &c.request {
                record.requests.remember(&r.id, &r.request);
            }
            e.events.extend(c.events.iter().cloned());
            record.last_seq = e.events.len() as u64;
            e.record = Arc::new(record);
            Outcome::Applied(Arc::clone(&e.record))
        }))
    }

    async fn events(
        &self,
        id: &str,
        after: u64,
        max: usize,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        let inner = self.inner.lock().expect("not poisoned");
        Ok(inner.by_id.get(id).map_or_else(Vec::new, |e| {
            e.events
                .iter()
                .enumerate()
                .skip(usize::try_from(after).unwrap_or(usize::MAX))
                .take(max)
                .map(|(i, l)| (i as u64 + 1, l.clone()))
                .collect()
        }))
    }

    async fn probe(&self) -> Result<(), String> {
        Ok(())
    }

    fn deadlines(&self) -> Deadlines<'_> {
        Deadlines::Memory(&self.deadlines)
    }
}
