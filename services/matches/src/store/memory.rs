//! Matches in this process's memory (the embedded default of `arbiter serve`, and unit tests):
//! the semantics of the Redis store, each method one step under a mutex, with the same expiry
//! rules. Matches are lost when the process stops.

use super::{
    CHAT_BURST, CHAT_WINDOW_MS, ChangeResult, ChatPost, ChatResult, ClockCommit, CreateResult,
    DeclineCommit, EndCommit, HistoryUpdate, IndexPlace, MAX_CHAT_ENTRIES, MAX_CHAT_PER_SEAT,
    MAX_PLAYER_MATCHES, MatchStore, MoveCommit, MoveResult, OfferCommit, Retention, StoreError,
    TakebackAction, TakebackCommit, Timing,
};
use crate::record::{
    ChatEntry, ChatMessage, Done, LastMove, REQUEST_WINDOW, Record, Remembered, RequestId,
    StoredEvent, encode_clock, pack_into,
};
use arbiter_clocked::{Deadlines, MemoryDeadlines};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use arbiter_kit::process_now;

/// Whether a deadline of `record` has passed at `now` (then no change but ending it on time
/// applies).
fn late(record: &Record, now: u64) -> bool {
    record.deadline().is_some_and(|d| d <= now)
}

/// Stops every running clock of `record` at `now` (the match ended another way).
fn stop_clocks(record: &mut Record, now: u64) {
    for b in &mut record.boards {
        if let Some(c) = &mut b.clock {
            let _ = c.stop(now);
        }
    }
}

#[derive(Debug)]
struct Stored {
    record: Arc<Record>,
    events: Vec<String>,
    /// Requests applied under an id.
    done: Requests,
    expires: Instant,
    /// The chat entries, as the Redis store keeps them.
    chat: Vec<String>,
    /// Per scope: its chat messages so far and the times of its latest [`CHAT_BURST`].
    chat_scopes: HashMap<String, (u64, VecDeque<u64>)>,
    /// Chat request ids (field → message number, fingerprint).
    chat_requests: HashMap<String, (u64, String)>,
    /// When it was created (Unix ms, this process's clock).
    created: u64,
}

/// The message stored as line `id` of `chat`.
fn chat_message(chat: &[String], id: u64) -> Result<Option<ChatMessage>, StoreError> {
    let Some(line) = usize::try_from(id)
        .ok()
        .and_then(|i| i.checked_sub(1))
        .and_then(|i| chat.get(i))
    else {
        return Ok(None);
    };
    match ChatEntry::decode(id, line)? {
        ChatEntry::Message(m) => Ok(Some(m)),
        ChatEntry::Deleted { .. } => Ok(None),
    }
}

/// The requests a match remembers: the latest [`REQUEST_WINDOW`] of each scope.
#[derive(Debug, Default)]
struct Requests {
    /// `done` field → what the request did.
    by_field: HashMap<String, Remembered>,
    /// Per scope, its remembered fields, oldest first.
    order: HashMap<String, VecDeque<String>>,
}

impl Requests {
    fn get(&self, r: Option<&RequestId>) -> Option<&Remembered> {
        self.by_field.get(&r?.field)
    }

    /// Remembers that `r` did `done`, forgetting its scope's oldest beyond the window.
    fn remember(&mut self, r: &RequestId, done: Done) {
        self.by_field.insert(
            r.field.clone(),
            Remembered {
                done,
                fingerprint: r.fingerprint.clone(),
            },
        );
        let order = self.order.entry(r.scope.clone()).or_default();
        order.push_back(r.field.clone());
        while order.len() > REQUEST_WINDOW {
            if let Some(oldest) = order.pop_front() {
                self.by_field.remove(&oldest);
            }
        }
    }
}

#[derive(Debug)]
struct Matches {
    by_id: HashMap<String, Stored>,
    last_sweep: Instant,
}

impl Matches {
    /// The live match `id`: an expired one is dropped on access. Every other expired match is
    /// dropped by a sweep at most once a second, so a request never pays for a full scan more
    /// often than that.
    fn live(&mut self, id: &str, now: Instant) -> Option<&mut Stored> {
        if now.duration_since(self.last_sweep) >= Duration::from_secs(1) {
            self.by_id.retain(|_, m| m.expires > now);
            self.last_sweep = now;
        }
        if self.by_id.get(id).is_some_and(|m| m.expires <= now) {
            self.by_id.remove(id);
        }
        self.by_id.get_mut(id)
    }
}

/// Matches in memory (see the module documentation).
#[derive(Debug)]
pub struct MemoryStore {
    matches: Mutex<Matches>,
    retention: Retention,
    max_matches: usize,
    deadlines: MemoryDeadlines,
}

impl MemoryStore {
    /// An empty store holding at most `max_matches` (live ones expire only when idle for the
    /// TTL; finished ones after the grace period).
    pub fn new(retention: Retention, max_matches: usize) -> MemoryStore {
        MemoryStore {
            matches: Mutex::new(Matches {
                by_id: HashMap::new(),
                last_sweep: Instant::now(),
            }),
            retention,
            max_matches,
            deadlines: MemoryDeadlines::new(),
        }
    }

    /// Runs `f` on the live match `id`, if any.
    fn with<T>(&self, id: &str, f: impl FnOnce(&mut Stored, Retention) -> T) -> Option<T> {
        let mut all = self.matches.lock().expect("not poisoned");
        let retention = self.retention;
        all.live(id, Instant::now()).map(|m| f(m, retention))
    }

    /// Runs a change on match `id`, then files its deadline in the index.
    fn change<T>(&self, id: &str, f: impl FnOnce(&mut Stored, Retention) -> T) -> Option<T> {
        let mut all = self.matches.lock().expect("not poisoned");
        let retention = self.retention;
        let out = all.live(id, Instant::now()).map(|m| f(m, retention))?;
        let deadline = all.by_id.get(id).and_then(|m| m.record.deadline());
        self.deadlines.file(id, deadline);
        Some(out)
    }
}

/// A change's answer before its own guards: its request id remembered (answered from it), or
/// the match over; `None` when it may go on.
fn settled(m: &Stored, request: Option<&RequestId>) -> Option<ChangeResult> {
    let current = &m.record;
    if let Some(done) = m.done.get(request) {
        return Some(ChangeResult::Done(done.clone(), Arc::clone(current)));
    }
    current
        .outcome
        .is_some()
        .then(|| ChangeResult::Over(Arc::clone(current)))
}

/// Ends `m` with `outcome`: the field, the event, the grace period.
fn end(
    m: &mut Stored,
    record: &mut Record,
    outcome: arbiter_core::bughouse::MatchOutcome,
    r: Retention,
) {
    record.outcome = Some(outcome);
    record.ended_at = Some(process_now());
    m.events.push(StoredEvent::End(outcome).encode());
    m.expires = Instant::now() + r.grace;
}

fn apply_move(m: &mut Stored, c: &MoveCommit, r: Retention) -> MoveResult {
    let current = Arc::clone(&m.record);
    if let Some(done) = m.done.get(c.request.as_ref()) {
        return MoveResult::Done(done.clone(), current);
    }
    if current.outcome.is_some() {
        return MoveResult::Over(current);
    }
    let i = c.board.index();
    if current.nonce != c.nonce
        || current
            .boards
            .get(i)
            .is_none_or(|b| b.ply != c.expected_ply)
    {
        return MoveResult::Stale(current);
    }
    let now = process_now();
    if late(&current, now) {
        return MoveResult::Late(current);
    }
    let press = match (&c.clock, &current.boards[i].clock) {
        (Some(press), Some(clock)) => {
            if encode_clock(clock) != press.expected {
                return MoveResult::Stale(current);
            }
            match press.plan.apply(now) {
                Some(result) => Some((press, result)),
                None => return MoveResult::Late(current),
            }
        }
        (None, None) => None,
        _ => return MoveResult::Stale(current),
    };
    let mut record = (*current).clone();
    let mut reserve_events = Vec::new();
    if let Some(take) = c.take {
        let reserve = &mut record.boards[take.board.index()].reserves[take.side.index()];
        match reserve.find(take.letter()) {
            Some(at) => {
                reserve.remove(at);
            }
            None => return MoveResult::Stale(current),
        }
        reserve_events.push(StoredEvent::Reserve {
            board: take.board,
            side: take.side,
            pieces: reserve.clone(),
        });
    }
    if let Some(give) = c.give {
        let reserve = &mut record.boards[give.board.index()].reserves[give.side.index()];
        insert_in_order(reserve, give.letter());
        reserve_events.push(StoredEvent::Reserve {
            board: give.board,
            side: give.side,
            pieces: reserve.clone(),
        });
    }
    let board = &mut record.boards[i];
    board.position = c.position.clone();
    board.ply += 1;
    board.last = Some(LastMove {
        at: now,
        ..c.last.clone()
    });
    match c.history {
        Some(HistoryUpdate::Append(k)) => board.history.push(k),
        Some(HistoryUpdate::Reset(k)) => board.history = vec![k],
        None => {}
    }
    let clock_event = press.and_then(|(press, result)| {
        let clock = board.clock.as_mut()?;
        clock.commit(press.mover, &press.plan, &result, now);
        if c.end.is_some() {
            let _ = clock.stop(now);
        }
        Some(StoredEvent::clock(c.board, clock, now))
    });
    if c.end.is_some() {
        stop_clocks(&mut record, now);
    }
    // Moving declines the other side's offer.
    let declined = std::mem::take(&mut record.draw_offers[(!c.side).index()]);
    let mut move_event = c.move_event.clone();
    let bughouse = record.is_bughouse();
    pack_into(&mut move_event, &[record.boards[i].full_position(bughouse)]);
    m.events.push(move_event);
    if let Some(r) = &c.request {
        let seq = m.events.len() as u64;
        m.done.remember(r, Done::Move { seq });
    }
    m.events
        .extend(reserve_events.iter().map(StoredEvent::encode));
    if declined {
        m.events.push(StoredEvent::DrawDeclined(!c.side).encode());
    }
    if let Some(e) = clock_event {
        m.events.push(e.encode());
    }
    if let Some(o) = c.end {
        end(m, &mut record, o, r);
    } else {
        m.expires = Instant::now() + r.live_ttl(&record);
    }
    record.last_seq = m.events.len() as u64;
    m.record = Arc::new(record);
    MoveResult::Applied(Arc::clone(&m.record))
}

/// Adds a FEN letter to a reserve kept in `QRBNP` order.
pub(crate) fn insert_in_order(reserve: &mut String, letter: char) {
    const ORDER: &str = "QRBNPqrbnp";
    let rank = |c: char| ORDER.find(c).unwrap_or(ORDER.len());
    let at = reserve
        .char_indices()
        .find(|&(_, c)| rank(c) > rank(letter))
        .map_or(reserve.len(), |(i, _)| i);
    reserve.insert(at, letter);
}

impl MatchStore for MemoryStore {
    async fn create(&self, record: &Record) -> Result<CreateResult, StoreError> {
        let mut all = self.matches.lock().expect("not poisoned");
        let now = Instant::now();
        if let Some(m) = all.live(&record.id, now) {
            return Ok(CreateResult::Exists(Arc::clone(&m.record)));
        }
        if all.by_id.len() >= self.max_matches {
            // Make room from expired matches only, never from a live one.
            all.by_id.retain(|_, m| m.expires > now);
            all.last_sweep = now;
            if all.by_id.len() >= self.max_matches {
                return Ok(CreateResult::Full(self.max_matches));
            }
        }
        let stored = Arc::new(record.clone());
        self.deadlines.file(&record.id, record.deadline());
        all.by_id.insert(
            record.id.clone(),
            Stored {
                record: Arc::clone(&stored),
                events: Vec::new(),
                done: Requests::default(),
                expires: now + self.retention.live_ttl(record),
                chat: Vec::new(),
                chat_scopes: HashMap::new(),
                chat_requests: HashMap::new(),
                created: process_now(),
            },
        );
        Ok(CreateResult::Created(stored))
    }

    async fn load(&self, id: &str) -> Result<Option<Arc<Record>>, StoreError> {
        Ok(self.with(id, |m, _| Arc::clone(&m.record)))
    }

    async fn snapshot(&self, id: &str) -> Result<Option<(Arc<Record>, bool)>, StoreError> {
        Ok(self.with(id, |m, _| (Arc::clone(&m.record), true)))
    }

    async fn commit_move(&self, id: &str, c: &MoveCommit) -> Result<MoveResult, StoreError> {
        Ok(self
            .change(id, |m, r| apply_move(m, c, r))
            .unwrap_or(MoveResult::Missing))
    }

    async fn commit_end(&self, id: &str, c: &EndCommit) -> Result<ChangeResult, StoreError> {
        Ok(self
            .change(id, |m, r| {
                if let Some(answer) = settled(m, c.request.as_ref()) {
                    return answer;
                }
                let current = Arc::clone(&m.record);
                let now = process_now();
                if late(&current, now) {
                    return ChangeResult::Late(current);
                }
                let guard_fails = c
                    .guard
                    .iter()
                    .any(|&(b, ply)| current.boards.get(b.index()).is_none_or(|x| x.ply != ply));
                if current.nonce != c.nonce || guard_fails {
                    return ChangeResult::Stale(current);
                }
                let mut record = (*current).clone();
                stop_clocks(&mut record, now);
                end(m, &mut record, c.outcome, r);
                if let Some(r) = &c.request {
                    m.done.remember(r, Done::Ended);
                }
                record.last_seq = m.events.len() as u64;
                m.record = Arc::new(record);
                ChangeResult::Applied(Arc::clone(&m.record))
            })
            .unwrap_or(ChangeResult::Missing))
    }

    async fn commit_offer(&self, id: &str, c: &OfferCommit) -> Result<ChangeResult, StoreError> {
        Ok(self
            .change(id, |m, r| {
                if let Some(answer) = settled(m, c.request.as_ref()) {
                    return answer;
                }
                let current = Arc::clone(&m.record);
                if current.nonce != c.nonce {
                    return ChangeResult::Stale(current);
                }
                let now = process_now();
                if late(&current, now) {
                    return ChangeResult::Late(current);
                }
                if current.draw_offers[c.side.index()] {
                    // Already offered: nothing new, and nothing to remember.
                    return ChangeResult::Applied(current);
                }
                if let Some(r) = &c.request {
                    m.done.remember(r, Done::Offered);
                }
                let mut record = (*current).clone();
                record.draw_offers[c.side.index()] = true;
                m.events.push(StoredEvent::DrawOffer(c.side).encode());
                if record.draw_offers[(!c.side).index()] {
                    stop_clocks(&mut record, now);
                    end(m, &mut record, c.agreed, r);
                } else {
                    m.expires = Instant::now() + r.live_ttl(&record);
                }
                record.last_seq = m.events.len() as u64;
                m.record = Arc::new(record);
                ChangeResult::Applied(Arc::clone(&m.record))
            })
            .unwrap_or(ChangeResult::Missing))
    }

    async fn commit_decline(
        &self,
        id: &str,
        c: &DeclineCommit,
    ) -> Result<ChangeResult, StoreError> {
        Ok(self
            .change(id, |m, r| {
                if let Some(answer) = settled(m, c.request.as_ref()) {
                    return answer;
                }
                let current = Arc::clone(&m.record);
                if current.nonce != c.nonce || !current.draw_offers[c.offerer.index()] {
                    return ChangeResult::Stale(current);
                }
                if late(&current, process_now()) {
                    return ChangeResult::Late(current);
                }
                if let Some(r) = &c.request {
                    m.done.remember(r, Done::Declined);
                }
                let mut record = (*current).clone();
                record.draw_offers[c.offerer.index()] = false;
                m.events.push(StoredEvent::DrawDeclined(c.offerer).encode());
                m.expires = Instant::now() + r.live_ttl(&record);
                record.last_seq = m.events.len() as u64;
                m.record = Arc::new(record);
                ChangeResult::Applied(Arc::clone(&m.record))
            })
            .unwrap_or(ChangeResult::Missing))
    }

    async fn commit_takeback(
        &self,
        id: &str,
        c: &TakebackCommit,
    ) -> Result<ChangeResult, StoreError> {
        Ok(self
            .change(id, |m, r| {
                if let Some(answer) = settled(m, c.request.as_ref()) {
                    return answer;
                }
                let current = Arc::clone(&m.record);
                if current.nonce != c.nonce
                    || current.boards[0].ply != c.ply
                    || current.takeback != c.expected
                {
                    return ChangeResult::Stale(current);
                }
                let now = process_now();
                if late(&current, now) {
                    return ChangeResult::Late(current);
                }
                let mut record = (*current).clone();
                let mut events = Vec::new();
                match &c.action {
                    TakebackAction::Propose(side) => {
                        record.takeback = Some((*side, c.ply));
                        events.push(StoredEvent::TakebackOffer(*side).encode());
                    }
                    TakebackAction::Decline => {
                        if let Some((side, _)) = record.takeback.take() {
                            events.push(StoredEvent::TakebackDeclined(side).encode());
                        }
                    }
                    TakebackAction::Accept(undo) => {
                        let board = &mut record.boards[0];
                        match (&undo.clock, &board.clock) {
                            (Some(change), Some(clock))
                                if encode_clock(clock) == change.expected =>
                            {
                                board.clock = Some(change.clock.clone());
                            }
                            (None, None) => {}
                            _ => return ChangeResult::Stale(current),
                        }
                        board.position = undo.position.clone();
                        board.ply = undo.ply;
                        board.last = undo.last.clone();
                        board.history = undo.history.clone();
                        record.takeback = None;
                        events.extend(undo.events.iter().cloned());
                    }
                }
                if let Some(r) = &c.request {
                    m.done.remember(r, Done::Takeback);
                }
                m.events.extend(events);
                m.expires = Instant::now() + r.live_ttl(&record);
                record.last_seq = m.events.len() as u64;
                m.record = Arc::new(record);
                ChangeResult::Applied(Arc::clone(&m.record))
            })
            .unwrap_or(ChangeResult::Missing))
    }

    async fn post_chat(&self, id: &str, p: &ChatPost) -> Result<ChatResult, StoreError> {
        self.with(id, |m, _| {
            if m.record.nonce != p.nonce {
                return Ok(ChatResult::Stale);
            }
            if let Some((field, fingerprint)) = &p.request
                && let Some((done, was)) = m.chat_requests.get(field)
            {
                if was != fingerprint {
                    return Ok(ChatResult::Reused);
                }
                return Ok(match chat_message(&m.chat, *done)? {
                    Some(msg) => ChatResult::Duplicate(msg),
                    None => ChatResult::NoMessage,
                });
            }
            if m.chat.len() as u64 >= MAX_CHAT_ENTRIES {
                return Ok(ChatResult::Full);
            }
            let now = process_now();
            if p.limited {
                let (count, times) = m.chat_scopes.entry(p.message.scope.clone()).or_default();
                if *count >= MAX_CHAT_PER_SEAT {
                    return Ok(ChatResult::ScopeFull);
                }
                if times.len() >= CHAT_BURST
                    && let Some(&oldest) = times.front()
                    && now < oldest + CHAT_WINDOW_MS
                {
                    return Ok(ChatResult::TooFast(oldest + CHAT_WINDOW_MS - now));
                }
                *count += 1;
                times.push_back(now);
                while times.len() > CHAT_BURST {
                    times.pop_front();
                }
            }
            let message = ChatMessage {
                id: m.chat.len() as u64 + 1,
                at: now,
                deleted: false,
                ..p.message.clone()
            };
            m.chat.push(ChatEntry::Message(message.clone()).encode());
            if let Some((field, fingerprint)) = &p.request {
                m.chat_requests
                    .insert(field.clone(), (message.id, fingerprint.clone()));
            }
            Ok(ChatResult::Done(message))
        })
        .unwrap_or(Ok(ChatResult::Missing))
    }

    async fn delete_chat(&self, id: &str, message: u64) -> Result<ChatResult, StoreError> {
        self.with(id, |m, _| {
            let Some(mut msg) = chat_message(&m.chat, message)? else {
                return Ok(ChatResult::NoMessage);
            };
            if !msg.deleted {
                msg.deleted = true;
                msg.text.clear();
                let at = usize::try_from(message - 1).unwrap_or(usize::MAX);
                m.chat[at] = ChatEntry::Message(msg.clone()).encode();
                m.chat.push(
                    ChatEntry::Deleted {
                        id: message,
                        channel: msg.channel,
                    }
                    .encode(),
                );
            }
            Ok(ChatResult::Done(msg))
        })
        .unwrap_or(Ok(ChatResult::Missing))
    }

    /// Scans the live matches (at most the store's maximum): no index to keep in step.
    async fn player_matches(
        &self,
        player: &str,
        before: Option<&IndexPlace>,
        max: usize,
    ) -> Result<Vec<IndexPlace>, StoreError> {
        let all = self.matches.lock().expect("not poisoned");
        let now = Instant::now();
        let mut places: Vec<IndexPlace> = all
            .by_id
            .iter()
            .filter(|(_, m)| m.expires > now && m.record.players.iter().any(|p| p == player))
            .map(|(id, m)| (m.created, id.clone()))
            .filter(|place| before.is_none_or(|b| place < b))
            .collect();
        places.sort_unstable_by(|a, b| b.cmp(a));
        places.truncate(max.min(MAX_PLAYER_MATCHES));
        Ok(places)
    }

    async fn chat(
        &self,
        id: &str,
        after: u64,
        max: usize,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        Ok(self
            .with(id, |m, _| {
                m.chat
                    .iter()
                    .enumerate()
                    .skip(usize::try_from(after).unwrap_or(usize::MAX))
                    .take(max)
                    .map(|(i, e)| (i as u64 + 1, e.clone()))
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn events(
        &self,
        id: &str,
        after: u64,
        max: usize,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        Ok(self
            .with(id, |m, _| {
                m.events
                    .iter()
                    .enumerate()
                    .skip(usize::try_from(after).unwrap_or(usize::MAX))
                    .take(max)
                    .map(|(i, e)| (i as u64 + 1, e.clone()))
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn probe(&self) -> Result<(), String> {
        Ok(())
    }

    async fn done(&self, id: &str, field: &str) -> Result<Option<Remembered>, StoreError> {
        Ok(self
            .with(id, |m, _| m.done.by_field.get(field).cloned())
            .flatten())
    }

    async fn remembered(&self, id: &str) -> Result<usize, StoreError> {
        Ok(self.with(id, |m, _| m.done.by_field.len()).unwrap_or(0))
    }

    async fn commit_clock(&self, id: &str, c: &ClockCommit) -> Result<ChangeResult, StoreError> {
        Ok(self
            .change(id, |m, r| {
                if let Some(answer) = settled(m, c.request.as_ref()) {
                    return answer;
                }
                let current = Arc::clone(&m.record);
                let now = process_now();
                let unchanged = c.clocks.iter().all(|ch| {
                    current
                        .boards
                        .get(ch.board.index())
                        .and_then(|b| b.clock.as_ref())
                        .is_some_and(|clock| encode_clock(clock) == ch.expected)
                });
                if current.nonce != c.nonce || !unchanged {
                    return ChangeResult::Stale(current);
                }
                match c.timing {
                    Timing::Live if late(&current, now) => return ChangeResult::Late(current),
                    Timing::Due(at) if now < at => return ChangeResult::Stale(current),
                    _ => {}
                }
                let mut record = (*current).clone();
                for ch in &c.clocks {
                    record.boards[ch.board.index()].clock = Some(ch.clock.clone());
                }
                m.events.extend(c.events.iter().cloned());
                if let Some(r) = &c.request {
                    m.done.remember(r, Done::Clock);
                }
                match c.end {
                    Some(o) => end(m, &mut record, o, r),
                    None => m.expires = Instant::now() + r.live_ttl(&record),
                }
                record.last_seq = m.events.len() as u64;
                m.record = Arc::new(record);
                ChangeResult::Applied(Arc::clone(&m.record))
            })
            .unwrap_or(ChangeResult::Missing))
    }

    fn deadlines(&self) -> Deadlines<'_> {
        Deadlines::Memory(&self.deadlines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserves_stay_in_fen_order() {
        let mut r = String::new();
        for l in ['P', 'N', 'Q', 'P', 'R', 'B'] {
            insert_in_order(&mut r, l);
        }
        assert_eq!(r, "QRBNPP");
        let mut b = "qp".to_owned();
        insert_in_order(&mut b, 'n');
        assert_eq!(b, "qnp");
    }
}
