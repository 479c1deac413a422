//! The in-process job queue and result store of `arbiter serve` without Redis, with its worker
//! threads: jobs take turns game by game, results are kept for the job's retention, and each
//! job's status is published on a watch channel.

use super::{
    BatchConfig, Caller, GameResult, JobSpec, JobStatus, Submitted, analyse_game, new_job_id,
    page_size, status_of,
};
use crate::error::AnalysisError;
use arbiter_engine::TimeSource;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;
use tokio::sync::watch;

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
}

#[derive(Default)]
struct Store {
    jobs: HashMap<String, Job>,
    /// Job ids by their caller's request id (request ids are scoped to their caller).
    by_request: HashMap<(Caller, String), String>,
    /// Jobs with games not yet handed out, in serving order: a worker takes one game of the
    /// first and puts it back at the end, so jobs take turns game by game.
    ring: VecDeque<String>,
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
    /// Starts `config.workers` worker threads (at least one), searching with time read from
    /// `time`.
    pub fn start(config: BatchConfig, time: Arc<dyn TimeSource>) -> std::io::Result<Jobs> {
        let shared = Arc::new(Shared {
            store: Mutex::new(Store::default()),
            ready: Condvar::new(),
            config,
            time,
        });
        for i in 0..shared.config.workers.max(1) {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name(format!("analysis-batch-{i}"))
                .spawn(move || work(&shared))?;
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
                if let Some(id) = s.ring.pop_front() {
                    let Some(job) = s.jobs.get_mut(&id) else {
                        continue;
                    };
                    if job.cancelled.load(Ordering::Relaxed) || job.next_game >= job.results.len() {
                        continue;
                    }
                    let index = job.next_game;
                    job.next_game += 1;
                    job.running += 1;
                    let status = job.snapshot(&id);
                    job.status.send_replace(status);
                    let taken = (
                        id.clone(),
                        index,
                        Arc::clone(&job.spec),
                        Arc::clone(&job.cancelled),
                        Arc::clone(&job.positions_done),
                    );
                    if job.next_game < job.results.len() {
                        s.ring.push_back(id);
                    }
                    break taken;
                }
                s = shared.ready.wait(s).unwrap_or_else(|e| e.into_inner());
            }
        };
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            analyse_game(
                index,
                &spec.games[index],
                &spec,
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
                job.results[index] = Some(r);
                job.games_done += 1;
            }
            job.expires = Instant::now() + ttl;
            let status = job.snapshot(&id);
            job.status.send_replace(status);
        }
    }
}
