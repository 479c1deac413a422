//! The in-process job queue and result store of `arbiter serve` without Redis, with its worker
//! threads: jobs take turns game by game, results are kept for the job's retention, and each
//! job's status is published on a watch channel.
//!
//! Remote workers (`AcquireWork`) take games from the same turns as the worker threads, each
//! under a lease (a map by lease id). A lease past its time is found expired when work is taken
//! or submitted, and by a thread of its own every [`LEASE_SWEEP`] at most: its game goes back
//! to its job (`redo`, handed out before the games not yet started) and the job back to the
//! turns. Refusals of remote workers are a map by worker, forgotten at a restart.

use super::remote::{self, Leased, WorkItem, WorkerId};
use super::{
    BatchConfig, Caller, GameResult, JobSpec, JobStatus, Submitted, analyse_game, new_job_id,
    page_size, status_of,
};
use crate::engines::EngineRegistry;
use crate::error::AnalysisError;
use arbiter_engine::TimeSource;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How often expired leases are looked for, at most.
pub const LEASE_SWEEP: Duration = Duration::from_millis(250);

/// One job held in process.
struct Job {
    /// Who submitted it: the only caller it answers to.
    owner: Caller,
    request_id: String,
    fingerprint: u64,
    spec: Arc<JobSpec>,
    results: Vec<Option<GameResult>>,
    games_done: usize,
    positions: u64,
    positions_done: Arc<AtomicU64>,
    cancelled: Arc<AtomicBool>,
    /// Games taken by a worker and not finished.
    running: usize,
    /// The next game to hand out (games are taken in order).
    next_game: usize,
    /// Games handed out whose leases ended without a result: handed out again first.
    redo: VecDeque<usize>,
    expires: Instant,
    status: watch::Sender<JobStatus>,
}

impl Job {
    fn snapshot(&self, id: &str) -> JobStatus {
        let left = self.expires.saturating_duration_since(Instant::now());
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        status_of(
            id,
            self.results.len() as u64,
            self.games_done as u64,
            self.positions,
            self.positions_done.load(Ordering::Relaxed),
            self.cancelled.load(Ordering::Relaxed),
            self.next_game > 0,
            now_ms + left.as_millis() as i64,
        )
    }

    fn ended(&self) -> bool {
        self.games_done == self.results.len() || self.cancelled.load(Ordering::Relaxed)
    }

    /// Whether a game is left to hand out.
    fn has_game(&self) -> bool {
        !self.cancelled.load(Ordering::Relaxed)
            && (!self.redo.is_empty() || self.next_game < self.results.len())
    }

    /// The next game to hand out: one returned first, else the next not started.
    fn next(&mut self) -> Option<usize> {
        while let Some(i) = self.redo.pop_front() {
            if self.results[i].is_none() {
                return Some(i);
            }
        }
        (self.next_game < self.results.len()).then(|| {
            self.next_game += 1;
            self.next_game - 1
        })
    }

    /// Records game `index`'s result unless it has one: whether it was new.
    fn record(&mut self, index: usize, result: GameResult) -> bool {
        if self.results[index].is_some() {
            return false;
        }
        self.results[index] = Some(result);
        self.games_done += 1;
        true
    }
}

/// Where a remote worker's lease stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LeaseState {
    /// Held.
    Active,
    /// Past its time: its game went back to the queue.
    Expired,
    /// Its result was recorded (kept to answer a retry).
    Accepted,
}

/// A game leased to a remote worker.
struct Lease {
    job: String,
    index: usize,
    worker: WorkerId,
    expires: Instant,
    state: LeaseState,
}

#[derive(Default)]
struct Store {
    jobs: HashMap<String, Job>,
    /// Job ids by their caller's request id (request ids are scoped to their caller).
    by_request: HashMap<(Caller, String), String>,
    /// Jobs with games not yet handed out, in serving order: a worker takes one game of the
    /// first and puts it back at the end, so jobs take turns game by game.
    ring: VecDeque<String>,
    /// Remote workers' leases by id.
    leases: HashMap<String, Lease>,
    /// Remote workers refused for work, with their refusal ids.
    refusals: HashMap<WorkerId, String>,
    closed: bool,
}

impl Store {
    /// Forgets the jobs past their retention.
    fn expire(&mut self) {
        let now = Instant::now();
        let gone: Vec<String> = self
            .jobs
            .iter()
            .filter(|(_, j)| j.expires <= now && j.running == 0)
            .map(|(id, _)| id.clone())
            .collect();
        if gone.is_empty() {
            return;
        }
        for id in gone {
            if let Some(j) = self.jobs.remove(&id) {
                j.cancelled.store(true, Ordering::Relaxed);
                self.by_request.remove(&(j.owner, j.request_id));
            }
        }
        let jobs = &self.jobs;
        self.ring.retain(|id| jobs.contains_key(id));
        self.leases.retain(|_, l| jobs.contains_key(&l.job));
    }

    /// A game of the first job in turn that `wanted` accepts: (job, index). The job goes to the
    /// back of the turns if it has more.
    fn take(&mut self, wanted: &dyn Fn(&Job) -> bool) -> Option<(String, usize)> {
        let mut i = 0;
        while i < self.ring.len() {
            let id = &self.ring[i];
            let Some(job) = self.jobs.get_mut(id).filter(|j| j.has_game()) else {
                self.ring.remove(i);
                continue;
            };
            if !wanted(job) {
                i += 1;
                continue;
            }
            let Some(index) = job.next() else {
                self.ring.remove(i);
                continue;
            };
            let more = job.has_game();
            let status = job.snapshot(id);
            job.status.send_replace(status);
            let id = self.ring.remove(i).unwrap_or_default();
            if more {
                self.ring.push_back(id.clone());
            }
            return Some((id, index));
        }
        None
    }

    /// Puts game `index` of job `id` back in the queue (a lease ended without a result).
    fn give_back(&mut self, id: &str, index: usize) {
        let Some(job) = self.jobs.get_mut(id) else {
            return;
        };
        if job.results[index].is_some() || job.cancelled.load(Ordering::Relaxed) {
            return;
        }
        if !job.redo.contains(&index) {
            job.redo.push_back(index);
        }
        if !self.ring.iter().any(|j| j == id) {
            self.ring.push_back(id.to_owned());
        }
    }

    /// Ends the leases past their time, their games back in the queue: how many.
    fn expire_leases(&mut self) -> u64 {
        let now = Instant::now();
        let ended: Vec<(String, usize)> = self
            .leases
            .values_mut()
            .filter(|l| l.state == LeaseState::Active && l.expires <= now)
            .map(|l| {
                l.state = LeaseState::Expired;
                (l.job.clone(), l.index)
            })
            .collect();
        for (job, index) in &ended {
            self.give_back(job, *index);
        }
        ended.len() as u64
    }

    /// `caller`'s job `id`. Another caller's job is `NOT_FOUND`, exactly as an unknown one.
    fn job(&mut self, caller: &Caller, id: &str) -> Result<&mut Job, AnalysisError> {
        self.expire();
        self.jobs
            .get_mut(id)
            .filter(|j| j.owner == *caller)
            .ok_or_else(|| super::not_found(id))
    }
}

struct Shared {
    store: Mutex<Store>,
    ready: Condvar,
    config: BatchConfig,
    time: Arc<dyn TimeSource>,
    engines: Arc<EngineRegistry>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The in-process job queue and result store, with its worker threads. Cloning shares it.
#[derive(Clone)]
pub struct Jobs {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jobs")
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl Jobs {
    /// Starts `config.workers` worker threads (none: only remote workers analyse), searching
    /// with time read from `time`, and the thread that ends expired leases.
    pub fn start(
        config: BatchConfig,
        time: Arc<dyn TimeSource>,
        engines: Arc<EngineRegistry>,
    ) -> std::io::Result<Jobs> {
        let shared = Arc::new(Shared {
            store: Mutex::new(Store::default()),
            ready: Condvar::new(),
            config,
            time,
            engines,
        });
        for i in 0..shared.config.workers {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name(format!("analysis-batch-{i}"))
                .spawn(move || work(&shared))?;
        }
        {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("analysis-leases".into())
                .spawn(move || {
                    loop {
                        std::thread::sleep(
                            LEASE_SWEEP
                                .min(shared.config.work_lease / 4)
                                .max(Duration::from_millis(10)),
                        );
                        let mut s = shared.lock();
                        if s.closed {
                            return;
                        }
                        let ended = s.expire_leases();
                        drop(s);
                        if ended > 0 {
                            crate::metrics::leases_ended("expired", ended);
                            shared.ready.notify_all();
                        }
                    }
                })?;
        }
        Ok(Jobs { shared })
    }

    /// Queues a checked job for `caller` under its `request_id`, or answers the job it already
    /// queued under it (`duplicate` set) when its content is the same; `ALREADY_EXISTS` when it
    /// is not. Another caller's request ids are not seen.
    pub fn submit(
        &self,
        caller: &Caller,
        request_id: String,
        spec: JobSpec,
        fingerprint: u64,
    ) -> Result<Submitted, AnalysisError> {
        let mut s = self.shared.lock();
        if s.closed {
            return Err(AnalysisError::Unavailable(
                "the server is shutting down".into(),
            ));
        }
        s.expire();
        let key = (*caller, request_id);
        if let Some(id) = s.by_request.get(&key).cloned() {
            let job = &s.jobs[&id];
            if job.fingerprint != fingerprint {
                return Err(AnalysisError::RequestIdReused(key.1));
            }
            return Ok(Submitted {
                status: job.snapshot(&id),
                duplicate: true,
            });
        }
        if s.jobs.len() >= self.shared.config.max_jobs {
            return Err(AnalysisError::exhausted(
                "",
                "the server holds its maximum of jobs; retry later",
            ));
        }
        let held: u64 = s.jobs.values().map(|j| j.positions).sum();
        if held + spec.positions() > self.shared.config.max_positions {
            return Err(AnalysisError::exhausted(
                "",
                format!(
                    "the job's {} positions do not fit beside the {held} held (at most {}); \
                     retry later, or split the job",
                    spec.positions(),
                    self.shared.config.max_positions
                ),
            ));
        }
        // Drawn only for a new job: a retry answered above keeps its first id.
        let mut id = new_job_id()?;
        while s.jobs.contains_key(&id) {
            // 128 random bits: never expected, but an id names one job.
            id = new_job_id()?;
        }
        let games = spec.games.len();
        let job = Job {
            owner: *caller,
            request_id: key.1.clone(),
            fingerprint,
            positions: spec.positions(),
            spec: Arc::new(spec),
            results: vec![None; games],
            games_done: 0,
            positions_done: Arc::new(AtomicU64::new(0)),
            cancelled: Arc::new(AtomicBool::new(false)),
            running: 0,
            next_game: 0,
            redo: VecDeque::new(),
            expires: Instant::now() + self.shared.config.ttl,
            status: watch::channel(JobStatus::default()).0,
        };
        let status = job.snapshot(&id);
        job.status.send_replace(status.clone());
        s.jobs.insert(id.clone(), job);
        s.by_request.insert(key, id.clone());
        s.ring.push_back(id.clone());
        drop(s);
        self.shared.ready.notify_all();
        Ok(Submitted {
            status,
            duplicate: false,
        })
    }

    /// The status of `caller`'s job.
    pub fn status(&self, caller: &Caller, id: &str) -> Result<JobStatus, AnalysisError> {
        let mut s = self.shared.lock();
        Ok(s.job(caller, id)?.snapshot(id))
    }

    /// A receiver of the status of `caller`'s job, updated after each game.
    pub fn watch(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<watch::Receiver<JobStatus>, AnalysisError> {
        let mut s = self.shared.lock();
        let job = s.job(caller, id)?;
        let rx = job.status.subscribe();
        job.status.send_replace(job.snapshot(id));
        Ok(rx)
    }

    /// The finished games of `caller`'s job among `limit` (at most the page size) from
    /// `offset`.
    pub fn results(
        &self,
        caller: &Caller,
        id: &str,
        offset: usize,
        limit: usize,
    ) -> Result<(JobStatus, Vec<GameResult>), AnalysisError> {
        let limit = page_size(limit, self.shared.config.page);
        let mut s = self.shared.lock();
        let job = s.job(caller, id)?;
        let games = job
            .results
            .iter()
            .skip(offset)
            .take(limit)
            .flatten()
            .cloned()
            .collect();
        Ok((job.snapshot(id), games))
    }

    /// Cancels `caller`'s job: games not started are dropped, running ones stop.
    pub fn cancel(&self, caller: &Caller, id: &str) -> Result<JobStatus, AnalysisError> {
        let mut s = self.shared.lock();
        let job = s.job(caller, id)?;
        if !job.ended() {
            job.cancelled.store(true, Ordering::Relaxed);
            job.expires = Instant::now() + self.shared.config.ttl;
        }
        let status = job.snapshot(id);
        job.status.send_replace(status.clone());
        s.ring.retain(|j| j != id);
        Ok(status)
    }

    /// A game for remote worker `worker`, of a job whose engine is among `engines` (empty:
    /// the built-in engine alone), under a lease of the configured length; `None` when none is
    /// queued now.
    ///
    /// # Errors
    /// `UNAVAILABLE` when shutting down or without a random source.
    pub fn acquire(
        &self,
        worker: &WorkerId,
        engines: &[String],
    ) -> Result<Option<WorkItem>, AnalysisError> {
        let lease_id = remote::new_lease_id()?;
        let length = self.shared.config.lease_length();
        let mut s = self.shared.lock();
        if s.closed {
            return Err(AnalysisError::Unavailable(
                "the server is shutting down".into(),
            ));
        }
        s.expire();
        let ended = s.expire_leases();
        if ended > 0 {
            crate::metrics::leases_ended("expired", ended);
            // Their games are queued again: idle batch threads may take them.
            self.shared.ready.notify_all();
        }
        let Some((id, index)) = s.take(&|job| super::engine_wanted(&job.spec.engine, engines))
        else {
            return Ok(None);
        };
        let expires = Instant::now() + length;
        let job = s.jobs.get_mut(&id).expect("the job taken from");
        // The job outlives the lease, so that the worker's result finds it.
        job.expires = job.expires.max(expires);
        let job = &s.jobs[&id];
        let spec = JobSpec {
            games: vec![job.spec.games[index].clone()],
            limits: job.spec.limits,
            hash_mib: job.spec.hash_mib,
            engine: job.spec.engine.clone(),
        };
        let expires_at_unix_ms = super::unix_ms() + length.as_millis() as i64;
        s.leases.insert(
            lease_id.clone(),
            Lease {
                job: id,
                index,
                worker: worker.clone(),
                expires,
                state: LeaseState::Active,
            },
        );
        Ok(Some(WorkItem {
            lease_id,
            expires_at_unix_ms,
            game: spec.games[0].clone(),
            spec,
        }))
    }

    /// What lease `lease_id` of `worker` holds (see [`Leased`]).
    ///
    /// # Errors
    /// `FAILED_PRECONDITION` for a lease unknown, another worker's, or expired with its game
    /// taken by another worker (or its job cancelled or forgotten).
    pub fn leased(&self, worker: &WorkerId, lease_id: &str) -> Result<Leased, AnalysisError> {
        let mut s = self.shared.lock();
        s.expire();
        let lease = s
            .leases
            .get(lease_id)
            .filter(|l| l.worker == *worker)
            .ok_or_else(|| remote::not_held(lease_id))?;
        if lease.state == LeaseState::Accepted {
            return Ok(Leased::Accepted);
        }
        let job = s
            .jobs
            .get(&lease.job)
            .filter(|j| !j.cancelled.load(Ordering::Relaxed))
            .ok_or_else(|| remote::not_held(lease_id))?;
        let index = lease.index;
        if lease.state == LeaseState::Expired
            && (job.results[index].is_some() || !job.redo.contains(&index))
        {
            return Err(remote::not_held(lease_id));
        }
        Ok(Leased::Open {
            index,
            spec: JobSpec {
                games: vec![job.spec.games[index].clone()],
                limits: job.spec.limits,
                hash_mib: job.spec.hash_mib,
                engine: job.spec.engine.clone(),
            },
        })
    }

    /// Records the result of lease `lease_id` of `worker` (its `positions`), once: `true`
    /// when nothing changed (a retry, or the game recorded already from another lease).
    ///
    /// # Errors
    /// As [`Jobs::leased`].
    pub fn record_work(
        &self,
        worker: &WorkerId,
        lease_id: &str,
        result: GameResult,
        positions: u64,
    ) -> Result<bool, AnalysisError> {
        let ttl = self.shared.config.ttl;
        let mut s = self.shared.lock();
        s.expire();
        let lease = s
            .leases
            .get(lease_id)
            .filter(|l| l.worker == *worker)
            .ok_or_else(|| remote::not_held(lease_id))?;
        if lease.state == LeaseState::Accepted {
            return Ok(true);
        }
        // Checked under the lock that records: a result racing its worker's refusal (another
        // of its submissions failing the check meanwhile) is not written.
        if let Some(refusal) = s.refusals.get(worker) {
            return Err(remote::refusal_message(worker, refusal));
        }
        let (id, index, state) = (lease.job.clone(), lease.index, lease.state);
        let job = s
            .jobs
            .get_mut(&id)
            .filter(|j| !j.cancelled.load(Ordering::Relaxed))
            .ok_or_else(|| remote::not_held(lease_id))?;
        if state == LeaseState::Expired {
            // Back in the queue: taken by nobody yet, else by another worker (whose result
            // may be recorded already).
            let at = job
                .redo
                .iter()
                .position(|i| *i == index)
                .ok_or_else(|| remote::not_held(lease_id))?;
            job.redo.remove(at);
        }
        let fresh = job.record(index, result);
        if fresh {
            job.positions_done.fetch_add(positions, Ordering::Relaxed);
        }
        job.expires = Instant::now() + ttl;
        let status = job.snapshot(&id);
        job.status.send_replace(status);
        if let Some(l) = s.leases.get_mut(lease_id) {
            l.state = LeaseState::Accepted;
        }
        Ok(!fresh)
    }

    /// Refuses `worker` for work under a fresh refusal id, its live leases back in the
    /// queue: the id and how many leases were returned.
    ///
    /// # Errors
    /// `UNAVAILABLE` without a random source.
    pub fn refuse(&self, worker: &WorkerId) -> Result<(String, u64), AnalysisError> {
        let id = remote::new_refusal_id()?;
        let mut s = self.shared.lock();
        s.refusals.insert(worker.clone(), id.clone());
        let returned: Vec<(String, usize)> = s
            .leases
            .values_mut()
            .filter(|l| l.worker == *worker && l.state == LeaseState::Active)
            .map(|l| {
                l.state = LeaseState::Expired;
                (l.job.clone(), l.index)
            })
            .collect();
        for (job, index) in &returned {
            s.give_back(job, *index);
        }
        drop(s);
        self.shared.ready.notify_all();
        Ok((id, returned.len() as u64))
    }

    /// The refusal id of `worker`, when it is refused for work.
    pub fn refusal(&self, worker: &WorkerId) -> Option<String> {
        self.shared.lock().refusals.get(worker).cloned()
    }

    /// Lifts the refusal `id` of `worker` (nothing when it is refused under another id).
    pub fn lift(&self, worker: &WorkerId, id: &str) {
        let mut s = self.shared.lock();
        if s.refusals.get(worker).is_some_and(|r| r == id) {
            s.refusals.remove(worker);
        }
    }

    /// Stops the workers: running games stop at once, nothing more starts.
    pub fn shut_down(&self) {
        let mut s = self.shared.lock();
        s.closed = true;
        for job in s.jobs.values() {
            job.cancelled.store(true, Ordering::Relaxed);
        }
        drop(s);
        self.shared.ready.notify_all();
    }
}

/// A worker thread: takes a game of each job in turn until the store closes.
fn work(shared: &Shared) {
    loop {
        let (id, index, spec, stop, done) = {
            let mut s = shared.lock();
            loop {
                if s.closed {
                    return;
                }
                if let Some((id, index)) = s.take(&|_| true) {
                    let job = s.jobs.get_mut(&id).expect("a job taken from is held");
                    job.running += 1;
                    break (
                        id,
                        index,
                        Arc::clone(&job.spec),
                        Arc::clone(&job.cancelled),
                        Arc::clone(&job.positions_done),
                    );
                }
                s = shared.ready.wait(s).unwrap_or_else(|e| e.into_inner());
            }
        };
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            analyse_game(
                index,
                &spec.games[index],
                &spec,
                &shared.engines,
                &stop,
                &*shared.time,
                &mut || {
                    done.fetch_add(1, Ordering::Relaxed);
                },
            )
        }))
        .unwrap_or_else(|_| {
            // A bug, not the input's fault (the game was checked): the game is recorded as
            // failed so that the job still ends.
            tracing::error!(job = %id, game = index, "a game's analysis panicked");
            Some(GameResult {
                index: index as u32,
                error: "internal error while analysing this game".into(),
                ..GameResult::default()
            })
        });
        let mut s = shared.lock();
        let ttl = shared.config.ttl;
        if let Some(job) = s.jobs.get_mut(&id) {
            job.running -= 1;
            if let Some(r) = result {
                // A remote worker may have recorded it first (its lease expired and then its
                // result came): once per game.
                job.record(index, r);
            }
            job.expires = Instant::now() + ttl;
            let status = job.snapshot(&id);
            job.status.send_replace(status);
        }
    }
}
