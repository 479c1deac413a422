//! Batch jobs: whole games analysed position by position at a fixed per-ply limit, each move
//! classified and each player's accuracy computed (`arbiter_engine::review`).
//!
//! - [`decode_job`]: a `SubmitJobRequest` checked into a [`JobSpec`] (PGN or move lists, the
//!   per-ply limit, the caps), with a fingerprint of its content for idempotence;
//! - [`analyse_game`]: one work item, a game, analysed on the calling thread into its
//!   `GameResult`;
//! - [`Jobs`]: the in-process queue and result store of `arbiter serve`, with its worker
//!   threads (jobs take turns, one game each), retention and status watchers.

use crate::config::{Caps, MAX_DEPTH};
use crate::live::{score_to_proto, within};
use arbiter_core::pgn::{PgnLimits, read_games_with};
use arbiter_core::{AnyMove, AnyPosition, GameState, Locale, Position, Variant};
use arbiter_engine::analyze::AnalysisSettings;
use arbiter_engine::review::{GameLine, Judgement, PositionEval, evaluate_position, review_game};
use arbiter_engine::score::Reported;
use arbiter_engine::{Limits, SearchOptions, TimeSource};
use arbiter_kit::ApiError;
use arbiter_kit::convert::{move_to_proto, notation, position};
use arbiter_proto::analysis::v1 as pb;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Bounds and settings of batch jobs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchConfig {
    /// Worker threads analysing games (one game each at a time).
    pub workers: usize,
    /// The most games in one job.
    pub max_games: usize,
    /// The most moves in one game.
    pub max_plies: usize,
    /// Jobs held at once (running or kept for their results); more are refused.
    pub max_jobs: usize,
    /// Positions held at once, all jobs together (each costs its result's memory, about a
    /// hundred bytes); a job that would pass it is refused.
    pub max_positions: u64,
    /// How long a job and its results are kept after it ends (or after submission while it
    /// runs, renewed as it progresses).
    pub ttl: Duration,
    /// The most games one GetJobResults answers.
    pub page: usize,
}

impl Default for BatchConfig {
    fn default() -> BatchConfig {
        BatchConfig {
            workers: 1,
            max_games: 1000,
            max_plies: 1024,
            max_jobs: 1000,
            max_positions: 2_000_000,
            ttl: Duration::from_secs(24 * 3600),
            page: 50,
        }
    }
}

/// The longest `request_id`.
pub const MAX_REQUEST_ID_BYTES: usize = 128;

/// One game of a job.
#[derive(Clone, Debug)]
pub struct GameSpec {
    /// Its start.
    pub start: AnyPosition,
    /// Its moves, legal in turn.
    pub moves: Vec<AnyMove>,
}

/// A checked job.
#[derive(Clone, Debug)]
pub struct JobSpec {
    /// The games.
    pub games: Vec<GameSpec>,
    /// Each position's search limit (a depth or a node count).
    pub limits: Limits,
    /// The transposition table of each search, MiB.
    pub hash_mib: usize,
}

impl JobSpec {
    /// Positions to analyse: one more than the moves, per game.
    pub fn positions(&self) -> u64 {
        self.games.iter().map(|g| g.moves.len() as u64 + 1).sum()
    }
}

fn bughouse(field: String) -> ApiError {
    ApiError::invalid(
        field,
        "bughouse games are not analysed: a board's evaluation ignores the partner's game",
    )
}

/// Checks a submission: the request id, the games, the per-ply limit. Returns the request id,
/// the job, and a fingerprint of the request's content (the same content gives the same
/// fingerprint), to tell a retry from another request under the same id.
pub fn decode_job(
    req: &pb::SubmitJobRequest,
    caps: &Caps,
    config: &BatchConfig,
) -> Result<(String, JobSpec, u64), ApiError> {
    let id = req.request_id.as_str();
    if id.is_empty() || id.len() > MAX_REQUEST_ID_BYTES || !id.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(ApiError::invalid(
            "request_id",
            format!("1 to {MAX_REQUEST_ID_BYTES} printable ASCII characters are required"),
        ));
    }
    let ply = req.per_ply.unwrap_or_default();
    let limits = match (ply.depth, ply.nodes) {
        (0, 0) | (1.., 1..) => {
            return Err(ApiError::invalid(
                "per_ply",
                "set exactly one of depth and nodes",
            ));
        }
        (d, 0) if d > MAX_DEPTH => {
            return Err(ApiError::invalid(
                "per_ply.depth",
                format!("{d} is out of range (1 to {MAX_DEPTH})"),
            ));
        }
        (d, 0) => Limits::depth(d),
        (_, n) => {
            within("per_ply.nodes", n, caps.max_nodes, "nodes")?;
            Limits::nodes(n)
        }
    };
    let games = match &req.games {
        None => return Err(ApiError::invalid("games", "pgn or move_lists is required")),
        Some(pb::submit_job_request::Games::Pgn(text)) => pgn_games(text, config)?,
        Some(pb::submit_job_request::Games::MoveLists(list)) => listed_games(list, config)?,
    };
    if games.is_empty() {
        return Err(ApiError::invalid("games", "the job has no game"));
    }
    // SHA-256 of the request's encoding without its id: a specified hash, so processes of
    // different builds sharing jobs agree on it.
    let mut content = req.clone();
    content.request_id.clear();
    let digest = Sha256::digest(prost::Message::encode_to_vec(&content));
    let fingerprint = u64::from_be_bytes(digest[..8].try_into().expect("8 bytes"));
    Ok((
        id.to_owned(),
        JobSpec {
            games,
            limits,
            hash_mib: caps.hash_mib,
        },
        fingerprint,
    ))
}

fn pgn_games(text: &str, config: &BatchConfig) -> Result<Vec<GameSpec>, ApiError> {
    let limits = PgnLimits {
        max_games: config.max_games,
        max_plies_per_game: config.max_plies,
        ..PgnLimits::default()
    };
    let mut games =
        read_games_with(text, &limits).map_err(|e| ApiError::invalid("pgn", e.to_string()))?;
    games
        .iter_mut()
        .enumerate()
        .map(|(i, g)| {
            let fail = |e: &dyn std::fmt::Display| {
                ApiError::invalid("pgn", format!("game {}: {e}", i + 1))
            };
            if g.variant().map_err(|e| fail(&e))? == Variant::Bughouse {
                return Err(bughouse("pgn".into()));
            }
            let game = g
                .validate(Locale::English, Locale::English)
                .map_err(|e| fail(&e))?;
            Ok(GameSpec {
                start: game.start().clone(),
                moves: game.moves().to_vec(),
            })
        })
        .collect()
}

fn listed_games(list: &pb::GameList, config: &BatchConfig) -> Result<Vec<GameSpec>, ApiError> {
    within(
        "move_lists.games",
        list.games.len() as u64,
        config.max_games as u64,
        "games",
    )?;
    list.games
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let field = format!("move_lists.games[{i}]");
            let start = position(g.start.as_ref(), &format!("{field}.start"))?;
            if start.variant() == Variant::Bughouse {
                return Err(bughouse(format!("{field}.start.variant")));
            }
            within(
                &format!("{field}.moves"),
                g.moves.len() as u64,
                config.max_plies as u64,
                "moves",
            )?;
            let mut state = GameState::new(start.clone());
            let moves = g
                .moves
                .iter()
                .enumerate()
                .map(|(j, text)| {
                    state
                        .play_text(text, notation(g.notation), Locale::English)
                        .map_err(|e| {
                            ApiError::invalid(format!("{field}.moves[{j}]"), e.to_string())
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(GameSpec { start, moves })
        })
        .collect()
}

fn white_score(e: &PositionEval) -> Option<pb::EngineScore> {
    e.reported.map(|(r, _)| {
        let flip = |n: i32| {
            if e.turn == arbiter_core::Color::White {
                n
            } else {
                -n
            }
        };
        score_to_proto(match r {
            Reported::Cp(cp) => Reported::Cp(flip(cp)),
            Reported::Mate(n) => Reported::Mate(flip(n)),
        })
    })
}

fn judgement_to_proto(j: Option<Judgement>) -> pb::Judgement {
    match j {
        None => pb::Judgement::None,
        Some(Judgement::Inaccuracy) => pb::Judgement::Inaccuracy,
        Some(Judgement::Mistake) => pb::Judgement::Mistake,
        Some(Judgement::Blunder) => pb::Judgement::Blunder,
    }
}

/// Analyses game `index` of a job on this thread: every position (`on_position` is called
/// after each), then the review. `None` when `stop` was raised before the end.
pub fn analyse_game(
    index: usize,
    game: &GameSpec,
    spec: &JobSpec,
    stop: &AtomicBool,
    time: &dyn TimeSource,
    on_position: &mut dyn FnMut(),
) -> Option<pb::GameResult> {
    let settings = AnalysisSettings {
        limits: spec.limits,
        options: SearchOptions {
            multipv: 1,
            move_overhead_ms: 0,
        },
        hash_mib: spec.hash_mib,
    };
    let line = GameLine::replay(&game.start, &game.moves);
    let positions = &line.positions;
    let mut evals = Vec::with_capacity(positions.len());
    for (i, p) in positions.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        evals.push(evaluate_position(p, line.history(i), &settings, stop, time));
        on_position();
    }
    if stop.load(Ordering::Relaxed) {
        return None;
    }
    let review = review_game(&evals, &line.played);
    let plies = review
        .moves
        .iter()
        .enumerate()
        .map(|(i, verdict)| {
            let before = &positions[i];
            pb::PlyResult {
                r#move: Some(move_to_proto(before, game.moves[i], Locale::English)),
                eval_after: white_score(&evals[i + 1]),
                judgement: judgement_to_proto(verdict.judgement) as i32,
                better: verdict.better.as_deref().and_then(|uci| {
                    let m = before
                        .parse_move(uci, arbiter_core::Notation::Uci, Locale::English)
                        .ok()?;
                    Some(move_to_proto(before, m, Locale::English))
                }),
            }
        })
        .collect();
    let [w, b] = review.counts.map(|c| c.map(|n| n as u32));
    Some(pb::GameResult {
        index: index as u32,
        start_eval: white_score(&evals[0]),
        plies,
        white_accuracy: review.accuracy.white,
        black_accuracy: review.accuracy.black,
        white_inaccuracies: w[0],
        white_mistakes: w[1],
        white_blunders: w[2],
        black_inaccuracies: b[0],
        black_mistakes: b[1],
        black_blunders: b[2],
        error: String::new(),
    })
}

/// One job held in process.
struct Job {
    request_id: String,
    fingerprint: u64,
    spec: Arc<JobSpec>,
    results: Vec<Option<pb::GameResult>>,
    games_done: usize,
    positions: u64,
    positions_done: Arc<AtomicU64>,
    cancelled: Arc<AtomicBool>,
    /// Games taken by a worker and not finished.
    running: usize,
    /// The next game to hand out (games are taken in order).
    next_game: usize,
    expires: Instant,
    status: watch::Sender<pb::JobStatus>,
}

impl Job {
    fn state(&self) -> pb::JobState {
        if self.games_done == self.results.len() {
            pb::JobState::Done
        } else if self.cancelled.load(Ordering::Relaxed) {
            pb::JobState::Cancelled
        } else if self.next_game > 0 {
            pb::JobState::Running
        } else {
            pb::JobState::Queued
        }
    }

    fn snapshot(&self, id: &str) -> pb::JobStatus {
        let left = self.expires.saturating_duration_since(Instant::now());
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        pb::JobStatus {
            job_id: id.to_owned(),
            state: self.state() as i32,
            games: self.results.len() as u32,
            games_done: self.games_done as u32,
            positions: self.positions,
            positions_done: self.positions_done.load(Ordering::Relaxed),
            duplicate: false,
            expires_at_unix_ms: now_ms + left.as_millis() as i64,
        }
    }

    fn ended(&self) -> bool {
        matches!(self.state(), pb::JobState::Done | pb::JobState::Cancelled)
    }
}

#[derive(Default)]
struct Store {
    jobs: HashMap<String, Job>,
    by_request: HashMap<String, String>,
    /// Jobs with games not yet handed out, in serving order: a worker takes one game of the
    /// first and puts it back at the end, so jobs take turns game by game.
    ring: VecDeque<String>,
    next_id: u64,
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
                self.by_request.remove(&j.request_id);
            }
        }
        let jobs = &self.jobs;
        self.ring.retain(|id| jobs.contains_key(id));
    }

    fn job(&mut self, id: &str) -> Result<&mut Job, ApiError> {
        self.expire();
        self.jobs.get_mut(id).ok_or_else(|| {
            ApiError::NotFound(format!(
                "no job {} (unknown or expired)",
                arbiter_kit::error::quote(id)
            ))
        })
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

    /// Queues a checked job under `request_id`, or answers the job already queued under it
    /// (`duplicate` set) when its content is the same; `ALREADY_EXISTS` when it is not.
    pub fn submit(
        &self,
        request_id: String,
        spec: JobSpec,
        fingerprint: u64,
    ) -> Result<pb::JobStatus, ApiError> {
        let mut s = self.shared.lock();
        if s.closed {
            return Err(ApiError::Unavailable("the server is shutting down".into()));
        }
        s.expire();
        if let Some(id) = s.by_request.get(&request_id).cloned() {
            let job = &s.jobs[&id];
            if job.fingerprint != fingerprint {
                return Err(ApiError::AlreadyExists(format!(
                    "request_id {} was used for another job",
                    arbiter_kit::error::quote(&request_id)
                )));
            }
            let mut status = job.snapshot(&id);
            status.duplicate = true;
            return Ok(status);
        }
        if s.jobs.len() >= self.shared.config.max_jobs {
            return Err(ApiError::exhausted(
                "",
                "the server holds its maximum of jobs; retry later",
            ));
        }
        let held: u64 = s.jobs.values().map(|j| j.positions).sum();
        if held + spec.positions() > self.shared.config.max_positions {
            return Err(ApiError::exhausted(
                "",
                format!(
                    "the job's {} positions do not fit beside the {held} held (at most {}); \
                     retry later, or split the job",
                    spec.positions(),
                    self.shared.config.max_positions
                ),
            ));
        }
        s.next_id += 1;
        let id = format!("job-{:016x}-{}", fingerprint, s.next_id);
        let games = spec.games.len();
        let job = Job {
            request_id: request_id.clone(),
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
            status: watch::channel(pb::JobStatus::default()).0,
        };
        let status = job.snapshot(&id);
        job.status.send_replace(status.clone());
        s.jobs.insert(id.clone(), job);
        s.by_request.insert(request_id, id.clone());
        s.ring.push_back(id.clone());
        drop(s);
        self.shared.ready.notify_all();
        Ok(status)
    }

    /// The job's status.
    pub fn status(&self, id: &str) -> Result<pb::JobStatus, ApiError> {
        let mut s = self.shared.lock();
        Ok(s.job(id)?.snapshot(id))
    }

    /// A receiver of the job's status, updated after each game.
    pub fn watch(&self, id: &str) -> Result<watch::Receiver<pb::JobStatus>, ApiError> {
        let mut s = self.shared.lock();
        let job = s.job(id)?;
        let rx = job.status.subscribe();
        job.status.send_replace(job.snapshot(id));
        Ok(rx)
    }

    /// The finished games among `limit` (at most the page size) from `offset`.
    pub fn results(
        &self,
        id: &str,
        offset: usize,
        limit: usize,
    ) -> Result<(pb::JobStatus, Vec<pb::GameResult>), ApiError> {
        let page = self.shared.config.page;
        let limit = if limit == 0 { page } else { limit.min(page) };
        let mut s = self.shared.lock();
        let job = s.job(id)?;
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

    /// Cancels the job: games not started are dropped, running ones stop.
    pub fn cancel(&self, id: &str) -> Result<pb::JobStatus, ApiError> {
        let mut s = self.shared.lock();
        let job = s.job(id)?;
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
            Some(pb::GameResult {
                index: index as u32,
                error: "internal error while analysing this game".into(),
                ..pb::GameResult::default()
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
