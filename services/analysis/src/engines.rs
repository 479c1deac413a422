//! Which engine searches: Arbiter's built-in engine, or one of the external UCI engines the
//! operator configured (`--engine NAME=PATH[,KEY=VALUE…]`, run as pools of processes by
//! `arbiter_uci_client`).
//!
//! - [`EngineRegistry`]: the engines of this process, which serves each variant by default
//!   (`--default-engine VARIANT=NAME`), and the check of an engine a request names;
//! - [`Evaluator`]: one game's evaluations on one engine, for batch jobs and remote workers:
//!   the built-in engine's tables kept per thread, or one external process held for the game.
//!
//! The built-in engine is named [`BUILTIN`] and plays every variant; Glinski and Byzantine chess
//! have no other engine.

use crate::error::AnalysisError;
use arbiter_core::{AnyMove, AnyPosition, Variant};
use arbiter_engine::TimeSource;
use arbiter_engine::analyze::{Analysis, AnalysisSettings, Engines, Progress};
use arbiter_engine::review::{PositionEval, evaluate_position_with};
use arbiter_uci_client::{EnginePool, EngineSpec, Search, Session};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The name requests give the built-in engine.
pub const BUILTIN: &str = "arbiter";

/// The built-in engine's own name and version, as results report it.
pub fn builtin_id() -> String {
    format!("Arbiter {}", env!("CARGO_PKG_VERSION"))
}

/// What the operator configured: the external engines and the default engine of each variant.
#[derive(Clone, Debug, Default)]
pub struct EnginesConfig {
    /// The external engines, in the order of their flags.
    pub engines: Vec<EngineSpec>,
    /// Which engine (by name) serves a variant when a request names none; a variant not listed
    /// goes to the built-in engine.
    pub defaults: Vec<(Variant, String)>,
}

/// One engine as ListEngines describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineDescription {
    /// The name requests use.
    pub name: String,
    /// The engine's own name and version.
    pub id: String,
    /// The variants it plays.
    pub variants: Vec<Variant>,
    /// The variants it serves by default.
    pub default_for: Vec<Variant>,
}

/// The engines of this process. Cheap to share (`Arc`); external processes stop when the last
/// reference goes, or at [`EngineRegistry::shut_down`].
#[derive(Default)]
pub struct EngineRegistry {
    external: Vec<EnginePool>,
    defaults: BTreeMap<Variant, usize>,
    /// Each external engine's restarts as last reported (see [`EngineRegistry::report_metrics`]).
    reported: Vec<AtomicU64>,
}

impl std::fmt::Debug for EngineRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineRegistry")
            .field(
                "external",
                &self
                    .external
                    .iter()
                    .map(EnginePool::name)
                    .collect::<Vec<_>>(),
            )
            .field("defaults", &self.defaults)
            .finish()
    }
}

/// An engine a request was resolved to.
#[derive(Clone, Debug)]
pub enum EngineChoice {
    /// The built-in engine.
    Builtin,
    /// An external engine's pool.
    External(EnginePool),
}

impl EngineChoice {
    /// The name requests use for it.
    pub fn name(&self) -> &str {
        match self {
            EngineChoice::Builtin => BUILTIN,
            EngineChoice::External(pool) => pool.name(),
        }
    }

    /// Its own name and version.
    pub fn id(&self) -> String {
        match self {
            EngineChoice::Builtin => builtin_id(),
            EngineChoice::External(pool) => pool.id().to_owned(),
        }
    }
}

impl EngineRegistry {
    /// The built-in engine alone.
    pub fn builtin() -> Arc<EngineRegistry> {
        Arc::new(EngineRegistry::default())
    }

    /// Starts every configured engine (one process each, to learn its name, version and
    /// variants; more start as searches need them) and checks the defaults.
    ///
    /// # Errors
    /// An engine that cannot be started or does not speak UCI, two engines of one name, a
    /// default naming an unknown engine or one that cannot play the variant (in words, naming
    /// the flag).
    pub fn start(config: &EnginesConfig) -> Result<Arc<EngineRegistry>, String> {
        let mut external: Vec<EnginePool> = Vec::with_capacity(config.engines.len());
        for spec in &config.engines {
            if external.iter().any(|p| p.name() == spec.name) {
                return Err(format!("--engine: two engines are named {:?}", spec.name));
            }
            let pool = EnginePool::start(spec.clone()).map_err(|e| format!("--engine: {e}"))?;
            tracing::info!(
                engine = pool.name(),
                id = pool.id(),
                variants = ?pool.variants(),
                "external engine started"
            );
            external.push(pool);
        }
        let mut defaults = BTreeMap::new();
        for (variant, name) in &config.defaults {
            if name == BUILTIN {
                defaults.remove(variant);
                continue;
            }
            let i = external
                .iter()
                .position(|p| p.name() == name)
                .ok_or_else(|| {
                    format!("--default-engine {variant}={name}: no engine of that name (--engine)")
                })?;
            if !external[i].supports(*variant) {
                return Err(format!(
                    "--default-engine {variant}={name}: {} cannot play {variant}",
                    external[i].id()
                ));
            }
            defaults.insert(*variant, i);
        }
        let reported = external.iter().map(|_| AtomicU64::new(0)).collect();
        Ok(Arc::new(EngineRegistry {
            external,
            defaults,
            reported,
        }))
    }

    /// The engine a request named (`requested`, empty for the default) for `variant`; `field`
    /// names the request's field in errors.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming `field`: an engine this server does not run, or one that cannot
    /// play the variant.
    pub fn resolve(
        &self,
        requested: &str,
        variant: Variant,
        field: &str,
    ) -> Result<EngineChoice, AnalysisError> {
        if requested.is_empty() {
            return Ok(match self.defaults.get(&variant) {
                Some(&i) => EngineChoice::External(self.external[i].clone()),
                None => EngineChoice::Builtin,
            });
        }
        if requested == BUILTIN {
            return Ok(EngineChoice::Builtin);
        }
        let pool = self
            .external
            .iter()
            .find(|p| p.name() == requested)
            .ok_or_else(|| {
                AnalysisError::invalid(
                    field,
                    format!(
                        "no engine named {:?} here (ListEngines: {})",
                        requested.chars().take(40).collect::<String>(),
                        self.names().join(", ")
                    ),
                )
            })?;
        if !pool.supports(variant) {
            return Err(AnalysisError::invalid(
                field,
                format!("{} ({}) cannot play {variant}", pool.name(), pool.id()),
            ));
        }
        Ok(EngineChoice::External(pool.clone()))
    }

    /// The engine of a batch job whose games are of `variants`, as the job stores it: empty for
    /// the built-in engine, else an external engine's name. `requested` empty asks for the
    /// variants' default, which must then be one engine for all of them.
    ///
    /// # Errors
    /// `INVALID_ARGUMENT` naming `engine`: an engine this server does not run, one that cannot
    /// play one of the games' variants, or no engine named for games whose variants have
    /// different defaults.
    pub fn resolve_job(
        &self,
        requested: &str,
        variants: impl IntoIterator<Item = Variant>,
    ) -> Result<String, AnalysisError> {
        let mut chosen: Option<(Variant, EngineChoice)> = None;
        for variant in variants {
            let engine = self.resolve(requested, variant, "engine")?;
            match &chosen {
                None => chosen = Some((variant, engine)),
                Some((first, c)) if c.name() != engine.name() => {
                    return Err(AnalysisError::invalid(
                        "engine",
                        format!(
                            "the games' variants have different default engines ({first}: {}, \
                             {variant}: {}): name one that plays them all",
                            c.name(),
                            engine.name()
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        Ok(match chosen {
            Some((_, EngineChoice::External(pool))) => pool.name().to_owned(),
            _ => String::new(),
        })
    }

    /// The engine named `name` (a name [`EngineRegistry::resolve`] gave), whatever the variant:
    /// for work read back from a queue. `None` when this process does not run it.
    pub fn by_name(&self, name: &str) -> Option<EngineChoice> {
        if name.is_empty() || name == BUILTIN {
            return Some(EngineChoice::Builtin);
        }
        self.external
            .iter()
            .find(|p| p.name() == name)
            .map(|p| EngineChoice::External(p.clone()))
    }

    /// The names of every engine, the built-in one first.
    pub fn names(&self) -> Vec<&str> {
        std::iter::once(BUILTIN)
            .chain(self.external.iter().map(EnginePool::name))
            .collect()
    }

    /// Every engine, as ListEngines answers.
    pub fn describe(&self) -> Vec<EngineDescription> {
        let mut out = vec![EngineDescription {
            name: BUILTIN.into(),
            id: builtin_id(),
            variants: Variant::ALL.to_vec(),
            default_for: Variant::ALL
                .into_iter()
                .filter(|v| !self.defaults.contains_key(v))
                .collect(),
        }];
        out.extend(self.external.iter().enumerate().map(|(i, p)| {
            EngineDescription {
                name: p.name().to_owned(),
                id: p.id().to_owned(),
                variants: p.variants().to_vec(),
                default_for: self
                    .defaults
                    .iter()
                    .filter(|&(_, &d)| d == i)
                    .map(|(v, _)| *v)
                    .collect(),
            }
        }));
        out
    }

    /// Stops every external engine's processes.
    pub fn shut_down(&self) {
        for pool in &self.external {
            pool.shut_down();
        }
    }

    /// Processes restarted after a crash or a hang, all external engines together.
    pub fn restarts(&self) -> u64 {
        self.external.iter().map(EnginePool::restarts).sum()
    }

    /// Copies each external engine's restart count into the metrics
    /// (`arbiter_analysis_engine_restarts_total{engine}`), with a warning in the log for the
    /// restarts since the last report.
    pub fn report_metrics(&self) {
        for (pool, reported) in self.external.iter().zip(&self.reported) {
            let total = pool.restarts();
            let before = reported.swap(total, Ordering::Relaxed);
            if total > before {
                tracing::warn!(
                    engine = pool.name(),
                    id = pool.id(),
                    restarts = total - before,
                    total,
                    "external engine processes restarted after a crash or a hang"
                );
            }
            crate::metrics::engine_restarts(pool.name(), total);
        }
    }
}

/// One search on `engine`: the position `start` after `moves` (whose positions, `history`
/// holds their repetition keys, are its history), with `progress` called as it deepens.
/// `settle` gives the built-in engine's final limits once its tables are allocated (see
/// `arbiter_engine::analyze::analyze_settled`); an external engine's limits are settled before
/// the search starts.
///
/// # Errors
/// An external engine that failed (crashed or stopped answering twice, or broke the protocol),
/// in words.
#[allow(clippy::too_many_arguments)]
pub fn search(
    engine: &EngineChoice,
    start: &AnyPosition,
    moves: &[AnyMove],
    pos: &AnyPosition,
    history: &[u64],
    settings: &AnalysisSettings,
    stop: &AtomicBool,
    time: &dyn TimeSource,
    progress: &mut dyn FnMut(&Progress),
    settle: &mut dyn FnMut(arbiter_engine::Limits) -> arbiter_engine::Limits,
) -> Result<Analysis, String> {
    match engine {
        EngineChoice::Builtin => Ok(arbiter_engine::analyze::analyze_settled(
            pos, history, settings, stop, time, progress, settle,
        )),
        EngineChoice::External(pool) => {
            let limits = settle(settings.limits);
            let search = Search {
                start,
                moves,
                limits,
                multipv: settings.options.multipv,
            };
            pool.analyze(&search, stop, progress)
                .map_err(|e| e.to_string())
        }
    }
}

/// Where one position of a game is: `pos` is `start` after `moves`; `history` holds the
/// repetition keys of the positions before it (the built-in engine's history; an external
/// engine gets `start` and `moves`).
#[derive(Clone, Copy, Debug)]
pub struct At<'a> {
    /// The position.
    pub pos: &'a AnyPosition,
    /// The repetition keys of the positions before it.
    pub history: &'a [u64],
    /// The game's start (or `pos` itself, without history).
    pub start: &'a AnyPosition,
    /// The moves from `start` to `pos`.
    pub moves: &'a [AnyMove],
}

impl<'a> At<'a> {
    /// A position without history.
    pub fn alone(pos: &'a AnyPosition) -> At<'a> {
        At {
            pos,
            history: &[],
            start: pos,
            moves: &[],
        }
    }
}

/// The evaluations of one game on one engine, in order: the built-in engine's tables of this
/// thread (kept from game to game, cleared for each), or one external process held for the game
/// (told `ucinewgame`). Either way a game's evaluations depend on the game alone.
pub struct Evaluator {
    kind: EvaluatorKind,
    id: String,
}

impl std::fmt::Debug for Evaluator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Evaluator")
            .field("engine", &self.id)
            .finish()
    }
}

enum EvaluatorKind {
    Builtin { hash_mib: usize },
    External(Session),
}

thread_local! {
    /// This thread's built-in engines, kept from game to game: no table is allocated and
    /// cleared for every position (which cost more than a shallow search itself), nor for
    /// every game.
    static ENGINES: std::cell::RefCell<Engines> = std::cell::RefCell::new(Engines::new(0));
}

impl Evaluator {
    /// An evaluator of one game on `engine` (the built-in engine's tables of `hash_mib`).
    /// Waits for one of an external engine's processes (until `stop` is raised).
    ///
    /// # Errors
    /// An external engine whose process cannot be had (stopped while waiting, or it cannot be
    /// started), in words.
    pub fn for_game(
        engine: &EngineChoice,
        hash_mib: usize,
        stop: &AtomicBool,
    ) -> Result<Evaluator, String> {
        let kind = match engine {
            EngineChoice::Builtin => {
                ENGINES.with(|engines| {
                    let mut engines = engines.borrow_mut();
                    if engines.hash_mib() != hash_mib {
                        *engines = Engines::new(hash_mib);
                    }
                    engines.clear();
                });
                EvaluatorKind::Builtin { hash_mib }
            }
            EngineChoice::External(pool) => {
                let mut session = pool.session(stop).map_err(|e| e.to_string())?;
                session.new_game().map_err(|e| e.to_string())?;
                EvaluatorKind::External(session)
            }
        };
        Ok(Evaluator {
            kind,
            id: engine.id(),
        })
    }

    /// The engine's own name and version, recorded with the game's result.
    pub fn engine_id(&self) -> &str {
        &self.id
    }

    /// Evaluates one position of the game (after the ones before it).
    ///
    /// # Errors
    /// An external engine that failed (in words).
    pub fn evaluate(
        &mut self,
        at: At<'_>,
        settings: &AnalysisSettings,
        stop: &AtomicBool,
        time: &dyn TimeSource,
    ) -> Result<PositionEval, String> {
        match &mut self.kind {
            EvaluatorKind::Builtin { hash_mib } => {
                let hash_mib = *hash_mib;
                Ok(ENGINES.with(|engines| {
                    let mut engines = engines.borrow_mut();
                    if engines.hash_mib() != hash_mib {
                        *engines = Engines::new(hash_mib);
                    }
                    evaluate_position_with(&mut engines, at.pos, at.history, settings, stop, time)
                }))
            }
            EvaluatorKind::External(session) => {
                if let Some(ended) = PositionEval::ending(at.pos) {
                    return Ok(ended);
                }
                let search = Search {
                    start: at.start,
                    moves: at.moves,
                    limits: settings.limits,
                    multipv: 1,
                };
                let a = session
                    .analyze(&search, stop, &mut |_| {})
                    .map_err(|e| e.to_string())?;
                Ok(PositionEval::searched(at.pos, a))
            }
        }
    }
}
