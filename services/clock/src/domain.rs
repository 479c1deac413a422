//! The clock service's operations, independent of gRPC: create, read, press, pause, resume, add
//! time, stop, end on time, events. Each is judged by the core's clock on a snapshot and
//! committed by the store in one guarded step at the store's own time.

use crate::error::{CLOCK_OVER, CLOCK_PAUSED, ClocksError, NOT_PAUSED, NOT_YOUR_TURN, STALE_PLY};
use crate::record::{Board, ClockEvent, ClockRecord, Flag};
use crate::store::{ClockStore, Created, Outcome, PressCommit, Request, SetCommit};
use crate::watchers::Watchers;
use arbiter_core::Color;
use arbiter_core::clock::{Clock, ClockError, TimeControl};
use std::sync::Arc;

/// Longest clock id, in bytes.
pub const MAX_ID_BYTES: usize = 64;
/// Longest request id, in bytes.
pub const MAX_REQUEST_ID_BYTES: usize = 128;
/// Presses one board may take; further presses are `RESOURCE_EXHAUSTED` (as many as the match
/// service's plies per board).
pub const MAX_PRESSES: u32 = 12_000;
/// Events one clock may hold; further pauses, resumes and time added are `RESOURCE_EXHAUSTED`.
pub const MAX_EVENTS: u64 = 100_000;
/// Most time one `AddTime` gives, in ms (a day).
pub const MAX_ADD_MS: u64 = 86_400_000;
/// How often a change is judged again on fresh data.
const ATTEMPTS: usize = 4;

/// The result of a request: the clock, and whether the request repeated one applied before.
#[derive(Clone, Debug)]
pub struct Answer {
    /// The clock as it stands.
    pub record: Arc<ClockRecord>,
    /// True for a retried creation, press or platform action: nothing changed.
    pub duplicate: bool,
}

fn precondition(reason: &'static str, what: impl Into<String>) -> ClocksError {
    ClocksError::precondition(reason, what)
}

fn refusal(e: ClockError) -> ClocksError {
    match e {
        ClockError::NotYourTurn => precondition(NOT_YOUR_TURN, "the other side's clock runs"),
        ClockError::Paused => precondition(CLOCK_PAUSED, "the clock is paused"),
        ClockError::NotPaused => precondition(NOT_PAUSED, "the clock is not paused"),
        // AddTime beyond the most a side may hold: the request's `ms` is at fault.
        e @ ClockError::TooMuchTime { .. } => ClocksError::invalid("ms", e.to_string()),
        other => precondition(CLOCK_OVER, other.to_string()),
    }
}

/// Checks a clock id: 1 to 64 bytes of letters, digits, `-`, `_`, `.`, `:`.
pub fn check_id(id: &str) -> Result<(), ClocksError> {
    if id.is_empty() || id.len() > MAX_ID_BYTES {
        return Err(ClocksError::invalid(
            "clock_id",
            format!("1 to {MAX_ID_BYTES} bytes"),
        ));
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
    {
        return Err(ClocksError::invalid(
            "clock_id",
            "letters, digits, '-', '_', '.', ':' only",
        ));
    }
    Ok(())
}

/// Checks a request id (empty: none): printable ASCII, at most 128 bytes. `request` is the
/// call and its arguments, canonical, which the id is remembered with.
fn request(id: &str, request: impl FnOnce() -> String) -> Result<Option<Request>, ClocksError> {
    if id.is_empty() {
        return Ok(None);
    }
    if id.len() > MAX_REQUEST_ID_BYTES || !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ClocksError::invalid(
            "request_id",
            format!("printable ASCII without spaces, at most {MAX_REQUEST_ID_BYTES} bytes"),
        ));
    }
    Ok(Some(Request {
        id: id.to_owned(),
        request: request(),
    }))
}

/// The clock service over a store.
#[derive(Debug)]
pub struct Clocks<S> {
    store: S,
    watchers: Arc<Watchers>,
}

impl<S: ClockStore> Clocks<S> {
    /// Clocks in `store`, their watchers bounded by `watchers`.
    pub fn new(store: S, watchers: arbiter_clocked::watchers::WatchLimits) -> Clocks<S> {
        Clocks {
            store,
            watchers: Arc::new(Watchers::new(watchers, "clock")),
        }
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The watchers of this process.
    pub fn watchers(&self) -> &Arc<Watchers> {
        &self.watchers
    }

    /// The store's time (Unix ms): the time authority.
    pub async fn now(&self) -> Result<u64, ClocksError> {
        Ok(self.store.deadlines().now().await?)
    }

    /// Whether the store works (for health).
    pub async fn probe(&self) -> Result<(), String> {
        self.store.probe().await
    }

    /// Creates a clock of `boards` boards for `time_control`, started now with `first` to
    /// move; the same creation again under the same id answers with the existing clock.
    pub async fn create(
        &self,
        id: &str,
        time_control: &str,
        boards: u32,
        first: Color,
    ) -> Result<Answer, ClocksError> {
        let control = TimeControl::parse(time_control.trim())
            .map_err(|e| ClocksError::invalid("time_control", e.to_string()))?;
        if control.days_per_move().is_some() {
            // A standalone clock lives --clock-ttl-secs after its last change: days per move
            // would outlast it. Hosted matches keep correspondence games as long as they need.
            return Err(ClocksError::invalid(
                "time_control",
                "correspondence (days per move) is played by hosted matches, not standalone clocks",
            ));
        }
        if !(1..=2).contains(&boards) {
            return Err(ClocksError::invalid("boards", "1 or 2"));
        }
        let id = if id.is_empty() {
            let mut bytes = [0u8; 12];
            getrandom::fill(&mut bytes).map_err(|e| ClocksError::Unavailable(e.to_string()))?;
            format!("c{}", arbiter_kit::hex(&bytes))
        } else {
            check_id(id)?;
            id.to_owned()
        };
        let spec = crate::record::pack(&[
            control.to_string(),
            boards.to_string(),
            crate::record::side_letter(first).to_owned(),
        ]);
        let now = self.store.deadlines().now().await?;
        let mut list = Vec::new();
        for _ in 0..boards {
            let mut clock = Clock::new(control.clone());
            clock.start(first, now).map_err(refusal)?;
            list.push(Board {
                clock,
                ply: 0,
                last: None,
            });
        }
        let record = ClockRecord {
            id: id.clone(),
            spec: spec.clone(),
            control,
            boards: list,
            over: false,
            flag: None,
            requests: Default::default(),
            last_seq: 0,
        };
        match self.store.create(&record).await? {
            Created::New(r) => Ok(Answer {
                record: r,
                duplicate: false,
            }),
            Created::Exists(r) if r.spec == spec => Ok(Answer {
                record: r,
                duplicate: true,
            }),
            Created::Exists(_) => Err(ClocksError::AlreadyExists(format!(
                "clock '{id}' exists with another creation"
            ))),
            Created::Full(max) => Err(ClocksError::exhausted(
                "",
                format!("this server holds its maximum of {max} clocks; retry later"),
            )),
        }
    }

    /// The clock as stored.
    pub async fn get(&self, id: &str) -> Result<Arc<ClockRecord>, ClocksError> {
        check_id(id)?;
        self.store
            .load(id)
            .await?
            .ok_or_else(|| ClocksError::NotFound(format!("no clock '{id}'")))
    }

    fn board(record: &ClockRecord, board: Option<usize>) -> Result<usize, ClocksError> {
        let b = board.unwrap_or(0);
        if b >= record.boards.len() {
            return Err(ClocksError::invalid("board", "this clock has only board A"));
        }
        Ok(b)
    }

    /// `side` presses board `board`'s clock, which had `ply` presses, with `lag_ms` of
    /// reported lag.
    pub async fn press(
        &self,
        id: &str,
        board: Option<usize>,
        side: Color,
        ply: u32,
        lag_ms: u64,
    ) -> Result<Answer, ClocksError> {
        let mut record = self.get(id).await?;
        for _ in 0..ATTEMPTS {
            let b = Self::board(&record, board)?;
            if record.over {
                return Err(ClocksError::over());
            }
            let current = &record.boards[b];
            if current.ply != ply {
                if ply.checked_add(1) == Some(current.ply) && current.last == Some(side) {
                    return Ok(Answer {
                        record,
                        duplicate: true,
                    });
                }
                return Err(precondition(
                    STALE_PLY,
                    format!("board has had {} presses, not {ply}", current.ply),
                ));
            }
            if current.ply >= MAX_PRESSES {
                return Err(ClocksError::exhausted(
                    "ply",
                    format!("a board takes at most {MAX_PRESSES} presses"),
                ));
            }
            let plan = current.clock.plan_press(side, lag_ms).map_err(refusal)?;
            let commit = PressCommit {
                board: b,
                ply,
                mover: side,
                expected: crate::record::encode_clock(&current.clock),
                plan,
                after: current.clock.advanced(side),
            };
            match self.store.press(id, &commit).await? {
                Outcome::Applied(r) => {
                    self.watchers.wake(id);
                    return Ok(Answer {
                        record: r,
                        duplicate: false,
                    });
                }
                Outcome::Duplicate(r) => {
                    return Ok(Answer {
                        record: r,
                        duplicate: true,
                    });
                }
                Outcome::Late(_) => {
                    self.end_on_time(id).await?;
                    return Err(ClocksError::over());
                }
                Outcome::Over(_) => return Err(ClocksError::over()),
                // A press carries no request id: never `Reused`.
                Outcome::Stale(r) | Outcome::Reused(r) => record = r,
                Outcome::Missing => return Err(ClocksError::NotFound(format!("no clock '{id}'"))),
            }
        }
        Err(precondition(
            STALE_PLY,
            "the clock kept changing; read it and retry",
        ))
    }

    /// Pauses the running boards. A `request_id` (optional, as for every platform action) makes
    /// a retry of the same call a duplicate, and its reuse for another call or other content
    /// `ALREADY_EXISTS`; a clock remembers the ids of its latest
    /// [`REMEMBERED_REQUESTS`](crate::record::REMEMBERED_REQUESTS) applied actions.
    pub async fn pause(&self, id: &str, request_id: &str) -> Result<Answer, ClocksError> {
        let rq = request(request_id, || "pause".to_owned())?;
        self.change(id, None, |c, now| c.pause(now), false, rq)
            .await
    }

    /// Resumes the paused boards (see [`Clocks::pause`] for `request_id`).
    pub async fn resume(&self, id: &str, request_id: &str) -> Result<Answer, ClocksError> {
        let rq = request(request_id, || "resume".to_owned())?;
        self.change(id, None, |c, now| c.resume(now), false, rq)
            .await
    }

    /// Gives `side` on `board` (A when `None`) `ms` more (1 to [`MAX_ADD_MS`]), once per
    /// `request_id` (see [`Clocks::pause`]). Refused with `INVALID_ARGUMENT` on `ms`, changing
    /// nothing, when the side would hold more than
    /// [`MAX_REMAINING_MS`](arbiter_core::clock::MAX_REMAINING_MS) (100 days): time is never
    /// silently capped (the core's clock refuses it).
    pub async fn add_time(
        &self,
        id: &str,
        board: Option<usize>,
        side: Color,
        ms: u64,
        request_id: &str,
    ) -> Result<Answer, ClocksError> {
        if ms == 0 || ms > MAX_ADD_MS {
            return Err(ClocksError::invalid("ms", "1 to 86,400,000 (a day)"));
        }
        let record = self.get(id).await?;
        let b = Self::board(&record, board)?;
        let rq = request(request_id, || {
            crate::record::pack(&[
                "add",
                crate::record::board_letter(b),
                crate::record::side_letter(side),
                &ms.to_string(),
            ])
        })?;
        self.change(id, Some(b), |c, now| c.add_time(side, ms, now), false, rq)
            .await
    }

    /// Stops the clock for good (see [`Clocks::pause`] for `request_id`).
    pub async fn stop(&self, id: &str, request_id: &str) -> Result<Answer, ClocksError> {
        let rq = request(request_id, || "stop".to_owned())?;
        self.change(id, None, |c, now| c.stop(now), true, rq).await
    }

    /// Applies `f` at the store's time to board `only` (every board if `None`) as one step.
    async fn change(
        &self,
        id: &str,
        only: Option<usize>,
        f: impl Fn(&mut Clock, u64) -> Result<(), ClockError>,
        ends: bool,
        request: Option<Request>,
    ) -> Result<Answer, ClocksError> {
        for _ in 0..ATTEMPTS {
            let record = self.get(id).await?;
            if let Some(r) = &request {
                match record.requests.get(&r.id) {
                    Some(Some(seen)) if seen == r.request => {
                        return Ok(Answer {
                            record,
                            duplicate: true,
                        });
                    }
                    Some(_) => return Err(ClocksError::RequestIdReused(r.id.clone())),
                    None => {}
                }
            }
            if record.over {
                return Err(ClocksError::over());
            }
            if record.last_seq >= MAX_EVENTS {
                return Err(ClocksError::exhausted(
                    "",
                    format!("this clock holds its maximum of {MAX_EVENTS} events"),
                ));
            }
            let now = self.store.deadlines().now().await?;
            let mut clocks = Vec::new();
            let mut events = Vec::new();
            for (i, b) in record.boards.iter().enumerate() {
                if only.is_some_and(|o| o != i) {
                    continue;
                }
                let mut after = b.clock.clone();
                match f(&mut after, now) {
                    Ok(()) => {}
                    Err(ClockError::OutOfTime(_)) => {
                        self.end_on_time(id).await?;
                        return Err(ClocksError::over());
                    }
                    Err(e) => return Err(refusal(e)),
                }
                events.push(ClockEvent::snapshot(i, &after, now).encode());
                clocks.push((i, crate::record::encode_clock(&b.clock), after));
            }
            if ends {
                events.push(ClockEvent::Stopped.encode());
            }
            let commit = SetCommit {
                clocks,
                due: None,
                events,
                flag: None,
                over: ends,
                request: request.clone(),
            };
            match self.store.set(id, &commit).await? {
                Outcome::Applied(r) => {
                    self.watchers.wake(id);
                    return Ok(Answer {
                        record: r,
                        duplicate: false,
                    });
                }
                Outcome::Late(_) => {
                    self.end_on_time(id).await?;
                    return Err(ClocksError::over());
                }
                Outcome::Duplicate(r) => {
                    return Ok(Answer {
                        record: r,
                        duplicate: true,
                    });
                }
                Outcome::Reused(_) => {
                    return Err(ClocksError::RequestIdReused(
                        request.as_ref().map_or(String::new(), |r| r.id.clone()),
                    ));
                }
                Outcome::Over(_) => return Err(ClocksError::over()),
                Outcome::Stale(_) => {}
                Outcome::Missing => return Err(ClocksError::NotFound(format!("no clock '{id}'"))),
            }
        }
        Err(precondition(STALE_PLY, "the clock kept changing; retry"))
    }

    /// Records the flag of clock `id` if a deadline has passed (the other board stops at that
    /// instant); idempotent. Returns whether this call recorded it.
    pub async fn end_on_time(&self, id: &str) -> Result<bool, ClocksError> {
        self.end_on_time_at(id, tokio::time::Instant::now()).await
    }

    /// [`Self::end_on_time`], judged at once but committed not before `not_before` (the flag
    /// worker claims games ahead of their deadlines; see `arbiter_clocked::end_on_time`).
    pub async fn end_on_time_at(
        &self,
        id: &str,
        not_before: tokio::time::Instant,
    ) -> Result<bool, ClocksError> {
        arbiter_clocked::end_on_time(self, id, not_before).await
    }

    /// At most `max` events after `after`.
    pub async fn events(
        &self,
        id: &str,
        after: u64,
        max: usize,
    ) -> Result<Vec<(u64, ClockEvent)>, ClocksError> {
        check_id(id)?;
        self.store
            .events(id, after, max)
            .await?
            .into_iter()
            .map(|(seq, line)| {
                ClockEvent::decode(&line)
                    .map(|e| (seq, e))
                    .map_err(ClocksError::from)
            })
            .collect()
    }

    /// Runs the shared flag worker over this service's store until `shutdown`.
    pub async fn run_flag_worker(&self, shutdown: tokio::sync::watch::Receiver<bool>) {
        arbiter_clocked::run_flag_worker(self, shutdown).await;
    }
}

/// A clock's flag: its earliest deadline passed (the other board stops at that instant).
impl<S: ClockStore> arbiter_clocked::Timed for Clocks<S> {
    const GAME: &'static str = "clock";
    type Record = Arc<ClockRecord>;
    type Ending = SetCommit;
    type Error = ClocksError;

    fn deadlines(&self) -> arbiter_clocked::Deadlines<'_> {
        self.store.deadlines()
    }

    async fn load(&self, id: &str) -> Result<Option<Arc<ClockRecord>>, ClocksError> {
        Ok(self.store.load(id).await?)
    }

    fn is_over(&self, record: &Arc<ClockRecord>) -> bool {
        record.over
    }

    fn judge(&self, record: &Arc<ClockRecord>) -> Result<Option<(u64, SetCommit)>, ClocksError> {
        // The earliest deadline; the store applies the flag only once it has passed.
        let due = record
            .boards
            .iter()
            .enumerate()
            .filter_map(|(i, b)| Some((i, b.clock.deadline()?)))
            .min_by_key(|(_, d)| d.at);
        let Some((board, deadline)) = due else {
            return Ok(None);
        };
        let flag = Flag {
            board,
            side: deadline.color,
            at: deadline.at,
        };
        let mut clocks = Vec::new();
        let mut events = Vec::new();
        for (i, b) in record.boards.iter().enumerate() {
            let mut after = b.clock.clone();
            let done = if i == board {
                after.expire(deadline.at).map(|_| ())
            } else {
                after.stop(deadline.at)
            };
            if done.is_err() {
                continue;
            }
            events.push(ClockEvent::snapshot(i, &after, deadline.at).encode());
            clocks.push((i, crate::record::encode_clock(&b.clock), after));
        }
        events.push(ClockEvent::Flag(flag).encode());
        let commit = SetCommit {
            clocks,
            due: Some(deadline.at),
            events,
            flag: Some(flag),
            over: true,
            request: None,
        };
        Ok(Some((deadline.at, commit)))
    }

    async fn commit(
        &self,
        id: &str,
        commit: &SetCommit,
    ) -> Result<arbiter_clocked::Committed<Arc<ClockRecord>>, ClocksError> {
        use arbiter_clocked::Committed;
        Ok(match self.store.set(id, commit).await? {
            Outcome::Applied(_) => Committed::Applied,
            Outcome::Over(_) | Outcome::Missing => Committed::Gone,
            Outcome::Stale(now) => Committed::Refused(now),
            _ => Committed::Retry,
        })
    }

    fn same_clocks(&self, judged: &Arc<ClockRecord>, now: &Arc<ClockRecord>) -> bool {
        now.boards == judged.boards
    }

    fn deadline(&self, record: &Arc<ClockRecord>) -> Option<u64> {
        record.deadline()
    }

    fn ended(&self, id: &str, _deadline: u64) {
        self.watchers.wake(id);
    }
}
