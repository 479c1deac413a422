//! The pool: an engine's processes, the sessions that check them out, and the searches.
//!
//! The first process starts in [`EnginePool::start`], which learns from it the engine's
//! `id name`, its options and the variants it plays; further processes start on demand, up
//! to the spec's `processes`, and a caller beyond that waits for one to be returned (bounded
//! like the built-in engine's threads; the wait ends when the caller's stop flag is raised).
//!
//! A process that crashes (exits, closes its output, stops reading) or hangs (silent for the
//! spec's `timeout` during a search, or no `readyok` within it) is killed and reaped, a fresh
//! one is started ([`EnginePool::restarts`] counts these) and the search is tried once more on
//! it; a second failure is the search's error. A process that breaks the protocol (an illegal
//! best move, an over-long line) is replaced too, but the error is returned at once.

use crate::dialect::{self, Dialect};
use crate::error::UciError;
use crate::process::{Event, Process, Received};
use crate::protocol::{self, UciOption};
use crate::spec::EngineSpec;
use arbiter_core::{AnyMove, AnyPosition, Position, Variant};
use arbiter_engine::Limits;
use arbiter_engine::analyze::{Analysis, AnalysisLine, Progress};
use arbiter_engine::score::{Reported, outcome_score};
use arbiter_engine::tt::Bound;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How often a waiting or searching caller looks at its stop flag.
const POLL: Duration = Duration::from_millis(10);

/// One search: the position `start` after `moves`, under `limits`.
#[derive(Debug, Clone, Copy)]
pub struct Search<'a> {
    /// The position the game (or line) starts from.
    pub start: &'a AnyPosition,
    /// The moves played from `start` (all legal), sent along so that the engine sees the
    /// history for repetitions; the search is of the position after the last.
    pub moves: &'a [AnyMove],
    /// When to stop: depth → `go depth`, nodes → `go nodes`, movetime → `go movetime`, a clock
    /// → `go wtime … btime …`, combined when several are set; `infinite` (or no limit at all)
    /// → `go infinite`, which only the stop flag ends.
    pub limits: Limits,
    /// Lines to report (at least 1; at most what the engine's `MultiPV` allows).
    pub multipv: usize,
}

/// One engine process and the per-search options last set on it.
struct Slot {
    process: Process,
    /// The `UCI_Variant` set (`None`: the engine's default, not known).
    uci_variant: Option<&'static str>,
    chess960: bool,
    multipv: usize,
}

struct State {
    idle: Vec<Slot>,
    /// Processes started and not yet ended (idle or checked out).
    live: usize,
    shut: bool,
}

struct Shared {
    spec: EngineSpec,
    id: String,
    dialect: Dialect,
    variants: Vec<Variant>,
    multipv_max: usize,
    state: Mutex<State>,
    freed: Condvar,
    restarts: AtomicU64,
}

/// An external UCI engine run as a pool of long-lived processes (see the [module
/// documentation](self)). Cloning is cheap and shares the pool; the processes are killed when
/// the last clone (and session) is dropped, or at [`EnginePool::shut_down`].
#[derive(Clone)]
pub struct EnginePool {
    shared: Arc<Shared>,
}

impl fmt::Debug for EnginePool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnginePool")
            .field("name", &self.shared.spec.name)
            .field("id", &self.shared.id)
            .field("variants", &self.shared.variants)
            .finish_non_exhaustive()
    }
}

/// What the `uci` handshake told.
struct Handshake {
    id: Option<String>,
    options: Vec<UciOption>,
}

impl EnginePool {
    /// Starts the engine's first process (blocking): the `uci` handshake, the spec's options,
    /// `isready`. Fails with [`UciError::Spawn`] when the process cannot be started or does not
    /// answer as an engine, or lacks an option the spec sets, and with
    /// [`UciError::Unsupported`] when the spec's `variants` names one the engine cannot play.
    /// A spec built by hand rather than parsed is held to the parser's ranges (at least one
    /// process, at most 64; a timeout of at least a second).
    pub fn start(mut spec: EngineSpec) -> Result<EnginePool, UciError> {
        spec.processes = spec.processes.clamp(1, 64);
        spec.timeout = spec.timeout.max(Duration::from_secs(1));
        let name = spec.name.clone();
        let spawn_error = |e: UciError| match e {
            UciError::Spawn { .. } | UciError::Unsupported { .. } => e,
            other => UciError::Spawn {
                engine: name.clone(),
                message: other.to_string(),
            },
        };
        let (process, hs) = spawn_and_handshake(&spec).map_err(spawn_error)?;
        let find = |n: &str| hs.options.iter().find(|o| o.name.eq_ignore_ascii_case(n));
        let dialect = Dialect {
            uci_variants: find("UCI_Variant")
                .filter(|o| o.kind == "combo")
                .map(|o| o.vars.clone())
                .unwrap_or_default(),
            chess960: find("UCI_Chess960").is_some_and(|o| o.kind == "check"),
        };
        let playable = dialect.variants();
        let variants = match &spec.variants {
            None => playable,
            Some(wanted) => {
                if let Some(&v) = wanted.iter().find(|v| !playable.contains(v)) {
                    return Err(UciError::Unsupported {
                        engine: spec.name.clone(),
                        variant: v,
                    });
                }
                Variant::ALL
                    .into_iter()
                    .filter(|v| wanted.contains(v))
                    .collect()
            }
        };
        let multipv_max = find("MultiPV")
            .and_then(|o| o.max)
            .map_or(1, |m| m.clamp(1, 500) as usize);
        let id = hs.id.clone().unwrap_or_else(|| {
            spec.path
                .file_name()
                .map_or_else(|| spec.name.clone(), |n| n.to_string_lossy().into_owned())
        });
        let slot = configure(&spec, process, &hs.options).map_err(spawn_error)?;
        Ok(EnginePool {
            shared: Arc::new(Shared {
                spec,
                id,
                dialect,
                variants,
                multipv_max,
                state: Mutex::new(State {
                    idle: vec![slot],
                    live: 1,
                    shut: false,
                }),
                freed: Condvar::new(),
                restarts: AtomicU64::new(0),
            }),
        })
    }

    /// The configured name (the spec's `NAME`).
    pub fn name(&self) -> &str {
        &self.shared.spec.name
    }

    /// The engine's own name and version, from its `id name` (e.g. `Stockfish 15.1`; the
    /// executable's file name if it sent none).
    pub fn id(&self) -> &str {
        &self.shared.id
    }

    /// The spec the pool runs.
    pub fn spec(&self) -> &EngineSpec {
        &self.shared.spec
    }

    /// The variants this pool serves, in [`Variant::ALL`]'s order: standard chess always;
    /// Chess960 with `UCI_Chess960`; crazyhouse and bughouse boards when the engine's
    /// `UCI_Variant` lists `crazyhouse`; narrowed by the spec's `variants`.
    pub fn variants(&self) -> &[Variant] {
        &self.shared.variants
    }

    /// Whether this pool serves `variant`.
    pub fn supports(&self, variant: Variant) -> bool {
        self.shared.variants.contains(&variant)
    }

    /// Processes restarted so far (after a crash, a hang or a protocol error).
    pub fn restarts(&self) -> u64 {
        self.shared.restarts.load(Ordering::Relaxed)
    }

    /// Processes running now (idle or checked out).
    pub fn processes(&self) -> usize {
        self.shared.lock().live
    }

    /// Checks out a process for a run of searches, waiting while all `processes` are busy
    /// (starting another while fewer run). [`UciError::Stopped`] if `stop` is raised while
    /// waiting; [`UciError::ShutDown`] after [`EnginePool::shut_down`].
    pub fn session(&self, stop: &AtomicBool) -> Result<Session, UciError> {
        let shared = &self.shared;
        let mut st = shared.lock();
        loop {
            if st.shut {
                return Err(UciError::ShutDown {
                    engine: shared.spec.name.clone(),
                });
            }
            if let Some(slot) = st.idle.pop() {
                return Ok(Session {
                    shared: Arc::clone(shared),
                    slot: Some(slot),
                });
            }
            if st.live < shared.spec.processes {
                st.live += 1;
                drop(st);
                return match shared.fresh_slot() {
                    Ok(slot) => Ok(Session {
                        shared: Arc::clone(shared),
                        slot: Some(slot),
                    }),
                    Err(e) => {
                        shared.lock().live -= 1;
                        shared.freed.notify_one();
                        Err(e)
                    }
                };
            }
            if stop.load(Ordering::Relaxed) {
                return Err(UciError::Stopped {
                    engine: shared.spec.name.clone(),
                });
            }
            st = shared
                .freed
                .wait_timeout(st, POLL)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// One search on a process of its own ([`EnginePool::session`] then
    /// [`Session::analyze`]).
    pub fn analyze(
        &self,
        search: &Search<'_>,
        stop: &AtomicBool,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<Analysis, UciError> {
        self.session(stop)?.analyze(search, stop, progress)
    }

    /// Kills the idle processes now, and each checked-out one when its session ends; later
    /// [`EnginePool::session`] calls fail with [`UciError::ShutDown`].
    pub fn shut_down(&self) {
        let idle = {
            let mut st = self.shared.lock();
            st.shut = true;
            let idle = std::mem::take(&mut st.idle);
            st.live -= idle.len();
            idle
        };
        drop(idle);
        self.shared.freed.notify_all();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn fresh_slot(&self) -> Result<Slot, UciError> {
        let (process, hs) = spawn_and_handshake(&self.spec)?;
        configure(&self.spec, process, &hs.options)
    }

    fn crashed(&self, process: &mut Process, what: &str) -> UciError {
        let status = process
            .exit_status()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        process.kill();
        UciError::Crashed {
            engine: self.spec.name.clone(),
            message: format!("{what}{status}"),
        }
    }

    fn hung(&self, process: &mut Process) -> UciError {
        process.kill();
        UciError::Hung {
            engine: self.spec.name.clone(),
            seconds: self.spec.timeout.as_secs(),
        }
    }

    fn protocol(&self, message: impl Into<String>) -> UciError {
        UciError::Protocol {
            engine: self.spec.name.clone(),
            message: message.into(),
        }
    }

    /// The position searched: `start` after `moves`, checked.
    fn reached(&self, search: &Search<'_>) -> Result<AnyPosition, UciError> {
        let variant = search.start.variant();
        if !self.variants.contains(&variant) {
            return Err(UciError::Unsupported {
                engine: self.spec.name.clone(),
                variant,
            });
        }
        let mut pos = search.start.clone();
        for (i, &m) in search.moves.iter().enumerate() {
            if !pos.is_legal(m) {
                return Err(UciError::InvalidSearch {
                    engine: self.spec.name.clone(),
                    message: format!("move {} ({m}) is not legal", i + 1),
                });
            }
            pos.play_unchecked(m);
        }
        Ok(pos)
    }
}

fn spawn_and_handshake(spec: &EngineSpec) -> Result<(Process, Handshake), UciError> {
    let engine = spec.name.clone();
    let mut process = Process::spawn(&spec.path).map_err(|e| UciError::Spawn {
        engine: engine.clone(),
        message: format!("{}: {e}", spec.path.display()),
    })?;
    let mut hs = Handshake {
        id: None,
        options: Vec::new(),
    };
    let crashed = |process: &mut Process, what: String| {
        process.kill();
        UciError::Crashed {
            engine: engine.clone(),
            message: what,
        }
    };
    if let Err(e) = process.send("uci") {
        return Err(crashed(&mut process, format!("writing 'uci' failed: {e}")));
    }
    let mut lines = 0usize;
    loop {
        match process.recv(Instant::now() + spec.timeout) {
            Received::Timeout => {
                process.kill();
                return Err(UciError::Hung {
                    engine,
                    seconds: spec.timeout.as_secs(),
                });
            }
            Received::Event(Event::Closed(why)) => {
                return Err(crashed(&mut process, format!("{why} before 'uciok'")));
            }
            Received::Event(Event::TooLong) => {
                process.kill();
                return Err(UciError::Protocol {
                    engine,
                    message: format!("a line longer than {} bytes", crate::MAX_LINE),
                });
            }
            Received::Event(Event::Line(line)) => {
                let line = line.trim();
                if line == "uciok" {
                    return Ok((process, hs));
                }
                lines += 1;
                if lines > 10_000 {
                    process.kill();
                    return Err(UciError::Protocol {
                        engine,
                        message: "no 'uciok' in 10000 lines".to_owned(),
                    });
                }
                if let Some(id) = protocol::parse_id_name(line) {
                    hs.id = Some(id.chars().take(256).collect());
                } else if let Some(o) = protocol::parse_option(line)
                    && hs.options.len() < 1000
                {
                    hs.options.push(o);
                }
            }
        }
    }
}

/// Sets the spec's options on a fresh process and waits for `readyok`.
fn configure(spec: &EngineSpec, process: Process, options: &[UciOption]) -> Result<Slot, UciError> {
    let find = |n: &str| options.iter().find(|o| o.name.eq_ignore_ascii_case(n));
    let mut commands = Vec::new();
    if let Some(o) = find("Threads") {
        commands.push(format!("setoption name {} value {}", o.name, spec.threads));
    }
    if let Some(o) = find("Hash") {
        commands.push(format!("setoption name {} value {}", o.name, spec.hash()));
    }
    for (name, value) in &spec.options {
        let Some(o) = find(name) else {
            return Err(UciError::Spawn {
                engine: spec.name.clone(),
                message: format!("it has no UCI option '{name}'"),
            });
        };
        commands.push(format!("setoption name {} value {value}", o.name));
    }
    let mut slot = Slot {
        process,
        uci_variant: None,
        chess960: false,
        multipv: 1,
    };
    for c in &commands {
        if let Err(e) = slot.process.send(c) {
            slot.process.kill();
            return Err(UciError::Crashed {
                engine: spec.name.clone(),
                message: format!("writing '{c}' failed: {e}"),
            });
        }
    }
    wait_ready(spec, &mut slot.process)?;
    Ok(slot)
}

/// `isready`, then the lines up to `readyok` (within the timeout of silence).
fn wait_ready(spec: &EngineSpec, process: &mut Process) -> Result<(), UciError> {
    let engine = || spec.name.clone();
    if let Err(e) = process.send("isready") {
        process.kill();
        return Err(UciError::Crashed {
            engine: engine(),
            message: format!("writing 'isready' failed: {e}"),
        });
    }
    loop {
        match process.recv(Instant::now() + spec.timeout) {
            Received::Timeout => {
                process.kill();
                return Err(UciError::Hung {
                    engine: engine(),
                    seconds: spec.timeout.as_secs(),
                });
            }
            Received::Event(Event::Closed(why)) => {
                process.kill();
                return Err(UciError::Crashed {
                    engine: engine(),
                    message: format!("{why} before 'readyok'"),
                });
            }
            Received::Event(Event::TooLong) => {
                process.kill();
                return Err(UciError::Protocol {
                    engine: engine(),
                    message: format!("a line longer than {} bytes", crate::MAX_LINE),
                });
            }
            Received::Event(Event::Line(line)) if line.trim() == "readyok" => return Ok(()),
            Received::Event(Event::Line(_)) => {}
        }
    }
}

/// The `go` command for `limits`.
pub(crate) fn go_command(limits: &Limits) -> String {
    let mut go = String::from("go");
    if limits.infinite {
        return "go infinite".to_owned();
    }
    if let Some(d) = limits.depth {
        go.push_str(&format!(" depth {}", d.max(1)));
    }
    if let Some(n) = limits.nodes {
        go.push_str(&format!(" nodes {}", n.max(1)));
    }
    if let Some(t) = limits.movetime_ms {
        go.push_str(&format!(" movetime {}", t.max(1)));
    }
    if let Some(c) = &limits.clock {
        go.push_str(&format!(
            " wtime {} btime {} winc {} binc {}",
            c.time_ms[0], c.time_ms[1], c.increment_ms[0], c.increment_ms[1]
        ));
        if let Some(m) = c.moves_to_go {
            go.push_str(&format!(" movestogo {m}"));
        }
    }
    if go == "go" {
        go.push_str(" infinite");
    }
    go
}

/// The result, without asking the engine, for a position that has ended or has no legal move
/// (a bughouse board whose player waits): no move, the ending's score as the built-in engine
/// reports it.
fn settled(pos: &AnyPosition) -> Option<Analysis> {
    let score = match pos.terminal() {
        Some(o) => Reported::of(outcome_score(&o, pos.turn(), 0)),
        None => {
            let mut moves = Vec::new();
            pos.legal_moves_into(&mut moves);
            if !moves.is_empty() {
                return None;
            }
            Reported::Cp(0)
        }
    };
    Some(Analysis {
        best: None,
        ponder: None,
        lines: Vec::new(),
        score,
        bound: Bound::Exact,
        depth: 0,
        nodes: 0,
        time_ms: 0,
    })
}

/// A process checked out of an [`EnginePool`] for a run of searches (the positions of one game,
/// say, which share the engine's table). Dropping it returns the process to the pool.
pub struct Session {
    shared: Arc<Shared>,
    /// `None` after a process failed twice (a fresh one starts at the next search).
    slot: Option<Slot>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("engine", &self.shared.spec.name)
            .field("pid", &self.pid())
            .finish()
    }
}

impl Session {
    /// The id of the process this session holds (`None` when it holds none: after a failure
    /// a fresh one starts with the next search).
    pub fn pid(&self) -> Option<u32> {
        self.slot.as_ref().map(|s| s.process.pid())
    }

    /// Tells the engine a new game starts (`ucinewgame`, then `isready`): what it learnt from
    /// the searches before is forgotten. A process that fails here is replaced (a fresh one is
    /// a new game too).
    pub fn new_game(&mut self) -> Result<(), UciError> {
        let shared = Arc::clone(&self.shared);
        let result = match self.ensure() {
            Ok(slot) => match slot.process.send("ucinewgame") {
                Ok(()) => wait_ready(&shared.spec, &mut slot.process),
                Err(e) => Err(shared.crashed(
                    &mut slot.process,
                    &format!("writing 'ucinewgame' failed: {e}"),
                )),
            },
            Err(e) => return Err(e),
        };
        match result {
            Err(e) if e.is_process_failure() || matches!(e, UciError::Protocol { .. }) => {
                self.restart()
            }
            other => other,
        }
    }

    /// Searches `search`'s position (see [`Search`]), calling `progress` for each `info` line
    /// with a score and a line, and returns the result in the built-in engine's terms, every
    /// move checked legal and in the core's coordinate notation. Raising `stop` sends `stop`
    /// and returns what the engine found so far. A position that has ended (or has no legal
    /// move) is answered without the engine: no move, the ending's score.
    pub fn analyze(
        &mut self,
        search: &Search<'_>,
        stop: &AtomicBool,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<Analysis, UciError> {
        let pos = self.shared.reached(search)?;
        if let Some(done) = settled(&pos) {
            return Ok(done);
        }
        match self.attempt(search, &pos, stop, progress) {
            Err(e) if e.is_process_failure() && !stop.load(Ordering::Relaxed) => {
                self.restart()?;
                let second = self.attempt(search, &pos, stop, progress);
                match &second {
                    Err(e) if e.is_process_failure() => self.slot = None,
                    Err(UciError::Protocol { .. }) => {
                        let _ = self.restart();
                    }
                    _ => {}
                }
                second
            }
            Err(e) if e.is_process_failure() => {
                self.slot = None;
                Err(e)
            }
            Err(e @ UciError::Protocol { .. }) => {
                // Out of sync: a fresh process for the next search.
                let _ = self.restart();
                Err(e)
            }
            other => other,
        }
    }

    /// The process, started afresh if the session lost its own.
    fn ensure(&mut self) -> Result<&mut Slot, UciError> {
        if self.slot.is_none() {
            self.shared.restarts.fetch_add(1, Ordering::Relaxed);
            self.slot = Some(self.shared.fresh_slot()?);
        }
        Ok(self.slot.as_mut().expect("a process"))
    }

    /// Kills the process (if any) and starts a fresh one.
    fn restart(&mut self) -> Result<(), UciError> {
        self.slot = None;
        self.ensure().map(|_| ())
    }

    fn attempt(
        &mut self,
        search: &Search<'_>,
        pos: &AnyPosition,
        stop: &AtomicBool,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<Analysis, UciError> {
        let shared = Arc::clone(&self.shared);
        let slot = self.ensure()?;
        slot.process.drain();
        let variant = search.start.variant();
        let multipv = search.multipv.clamp(1, shared.multipv_max);
        let mut commands = Vec::with_capacity(5);
        if let Some(name) = shared.dialect.uci_variant(variant)
            && slot.uci_variant != Some(name)
        {
            commands.push(format!("setoption name UCI_Variant value {name}"));
            slot.uci_variant = Some(name);
        }
        let chess960 = variant == Variant::Chess960;
        if shared.dialect.chess960 && slot.chess960 != chess960 {
            commands.push(format!("setoption name UCI_Chess960 value {chess960}"));
            slot.chess960 = chess960;
        }
        if slot.multipv != multipv {
            commands.push(format!("setoption name MultiPV value {multipv}"));
            slot.multipv = multipv;
        }
        commands.push(dialect::position_command(search.start, search.moves));
        commands.push(go_command(&search.limits));
        let started = Instant::now();
        for c in &commands {
            if let Err(e) = slot.process.send(c) {
                return Err(shared.crashed(&mut slot.process, &format!("writing failed: {e}")));
            }
        }

        let timeout = shared.spec.timeout;
        let mut last_line = Instant::now();
        // When `stop` was sent: the engine has `timeout` from then to answer with its move,
        // however much it prints meanwhile.
        let mut stop_sent: Option<Instant> = None;
        let mut lines: Vec<Option<AnalysisLine>> = vec![None; multipv];
        let mut depth = 0;
        let mut nodes = 0;
        let mut time_ms = None;
        loop {
            if stop_sent.is_none() && stop.load(Ordering::Relaxed) {
                if let Err(e) = slot.process.send("stop") {
                    return Err(
                        shared.crashed(&mut slot.process, &format!("writing 'stop' failed: {e}"))
                    );
                }
                stop_sent = Some(Instant::now());
            }
            let silent_until = match stop_sent {
                Some(at) => (last_line + timeout).min(at + timeout),
                None => last_line + timeout,
            };
            let deadline = if stop_sent.is_some() {
                silent_until
            } else {
                silent_until.min(Instant::now() + POLL)
            };
            let line = match slot.process.recv(deadline) {
                Received::Timeout if Instant::now() >= silent_until => {
                    return Err(shared.hung(&mut slot.process));
                }
                Received::Timeout => continue,
                Received::Event(Event::Closed(why)) => {
                    return Err(shared.crashed(&mut slot.process, &why));
                }
                Received::Event(Event::TooLong) => {
                    return Err(
                        shared.protocol(format!("a line longer than {} bytes", crate::MAX_LINE))
                    );
                }
                Received::Event(Event::Line(line)) => line,
            };
            last_line = Instant::now();
            if let Some(info) = protocol::parse_info(&line) {
                if let Some(n) = info.nodes {
                    nodes = n;
                }
                if info.time_ms.is_some() {
                    time_ms = info.time_ms;
                }
                let Some(score) = info.score else { continue };
                let pv = dialect::pv_from_engine(pos, &info.pv);
                let k = info.multipv.unwrap_or(1);
                if pv.is_empty() || k == 0 || k > multipv {
                    continue;
                }
                if k == 1 {
                    depth = info.depth.unwrap_or(depth);
                }
                lines[k - 1] = Some(AnalysisLine {
                    score: score.value,
                    bound: score.bound,
                    pv: pv.clone(),
                });
                progress(&Progress {
                    depth: info.depth.unwrap_or(0),
                    seldepth: info.seldepth.unwrap_or(0),
                    multipv: k,
                    score: score.value,
                    nodes: info.nodes.unwrap_or(0),
                    nps: info.nps.unwrap_or(0),
                    hashfull: info.hashfull.unwrap_or(0),
                    time_ms: info.time_ms.unwrap_or(0),
                    pv,
                });
            } else if let Some((best, ponder)) = protocol::parse_bestmove(&line) {
                let (best_move, best) = dialect::move_from_engine(pos, &best)
                    .map_err(|e| shared.protocol(format!("best move {e}")))?;
                let ponder = ponder.and_then(|p| {
                    let mut after = pos.clone();
                    after.play_unchecked(best_move);
                    dialect::move_from_engine(&after, &p).ok().map(|(_, t)| t)
                });
                let lines: Vec<AnalysisLine> = lines.into_iter().flatten().collect();
                let (score, bound) = lines
                    .first()
                    .map_or((Reported::Cp(0), Bound::Exact), |l| (l.score, l.bound));
                return Ok(Analysis {
                    best: Some(best),
                    ponder,
                    lines,
                    score,
                    bound,
                    depth,
                    nodes,
                    time_ms: time_ms
                        .unwrap_or_else(|| started.elapsed().as_millis().try_into().unwrap_or(0)),
                });
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let slot = self.slot.take();
        let mut st = self.shared.lock();
        match slot {
            Some(slot) if !st.shut => st.idle.push(slot),
            other => {
                st.live -= 1;
                drop(st);
                drop(other);
            }
        }
        self.shared.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbiter_engine::GameClock;

    #[test]
    fn go_commands() {
        assert_eq!(go_command(&Limits::depth(8)), "go depth 8");
        assert_eq!(go_command(&Limits::default()), "go infinite");
        let all = Limits {
            depth: Some(10),
            nodes: Some(5000),
            movetime_ms: Some(250),
            ..Limits::default()
        };
        assert_eq!(go_command(&all), "go depth 10 nodes 5000 movetime 250");
        let inf = Limits {
            infinite: true,
            ..all
        };
        assert_eq!(go_command(&inf), "go infinite");
        let clock = Limits {
            clock: Some(GameClock {
                time_ms: [60000, 50000],
                increment_ms: [1000, 0],
                moves_to_go: Some(20),
            }),
            ..Limits::default()
        };
        assert_eq!(
            go_command(&clock),
            "go wtime 60000 btime 50000 winc 1000 binc 0 movestogo 20"
        );
    }
}
