//! Who may call what: the method → scope table of every service, and the one check of every
//! call against it ([`AccessPolicy`], which [`crate::Host`] puts in front of every service).
//!
//! A call is one of:
//!
//! - **public**: health, reflection (turned off by `--no-reflection`), clock `Sync`;
//! - **seated**: the moves, resignations, draw calls and chat of a match's seats, which carry
//!   their seat token in `authorization` (the match service checks it);
//! - **spectating**: reading and watching a match: public, unless `--private-matches` makes
//!   them need the `matches:read` scope;
//! - **scoped**: every other method needs an API key (`x-api-key`) that grants its [`Scope`].
//!
//! With keys configured (a keys file, or the platform token, which becomes one key), a scoped
//! call without a key is `UNAUTHENTICATED`, with a key that lacks the scope
//! `PERMISSION_DENIED`, and over the key's rate limit `RESOURCE_EXHAUSTED` with a retry delay.
//! The accepted call carries its [`Client`] in its extensions (job ownership, queues, quotas).
//!
//! Without any key (**development mode**), the platform's scopes ([`Scope::platform`]) are
//! accepted from loopback clients only and the others from anyone, as before keys existed.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Duration;

use arc_swap::ArcSwap;
use tonic::codegen::http;

use crate::error::ApiError;
use crate::keys::{KeyEntry, KeySet};

/// The metadata entry that carries an API key.
pub const API_KEY_HEADER: &str = "x-api-key";

/// A permission an API key may grant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Every method of the rules service.
    Rules,
    /// Creating matches (which hands out seat tokens).
    MatchesCreate,
    /// Reading and watching matches when they are private (`--private-matches`).
    MatchesRead,
    /// Arbiter's calls on a match: pausing and resuming clocks, adding time.
    MatchesAdmin,
    /// Creating and running standalone clocks.
    ClockWrite,
    /// Reading and watching standalone clocks.
    ClockRead,
    /// Joining and leaving queues, acknowledging pairings.
    MatchmakingQueue,
    /// Reading ratings and their history.
    MatchmakingRatings,
    /// Matchmaking's administrative calls: importing ratings.
    MatchmakingAdmin,
    /// Live analysis: `Analyze`, `BestMove`.
    AnalysisLive,
    /// Batch analysis jobs: submitting, reading, watching, cancelling one's own.
    AnalysisBatch,
    /// Remote analysis workers: taking games of batch jobs (`AcquireWork`) and submitting
    /// their evaluations (`SubmitWork`).
    AnalysisWorker,
}

impl Scope {
    /// Every scope.
    pub const ALL: [Scope; 12] = [
        Scope::Rules,
        Scope::MatchesCreate,
        Scope::MatchesRead,
        Scope::MatchesAdmin,
        Scope::ClockWrite,
        Scope::ClockRead,
        Scope::MatchmakingQueue,
        Scope::MatchmakingRatings,
        Scope::MatchmakingAdmin,
        Scope::AnalysisLive,
        Scope::AnalysisBatch,
        Scope::AnalysisWorker,
    ];

    /// The scope's name in the keys file.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Rules => "rules",
            Scope::MatchesCreate => "matches:create",
            Scope::MatchesRead => "matches:read",
            Scope::MatchesAdmin => "matches:admin",
            Scope::ClockWrite => "clock:write",
            Scope::ClockRead => "clock:read",
            Scope::MatchmakingQueue => "matchmaking:queue",
            Scope::MatchmakingRatings => "matchmaking:ratings",
            Scope::MatchmakingAdmin => "matchmaking:admin",
            Scope::AnalysisLive => "analysis:live",
            Scope::AnalysisBatch => "analysis:batch",
            Scope::AnalysisWorker => "analysis:worker",
        }
    }

    /// The scope named `name`.
    pub fn parse(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The names of every scope.
    pub fn names() -> Vec<&'static str> {
        Scope::ALL.iter().map(|s| s.name()).collect()
    }

    /// Whether the scope's calls are the platform's (development mode takes them from loopback
    /// clients only): creating and steering matches and clocks, matchmaking, and remote analysis
    /// workers (whose results are recorded as the jobs' own).
    pub fn platform(self) -> bool {
        !matches!(
            self,
            Scope::Rules
                | Scope::MatchesRead
                | Scope::ClockRead
                | Scope::AnalysisLive
                | Scope::AnalysisBatch
        )
    }
}

/// What a method needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Nothing.
    Public,
    /// A seat token, which the service checks.
    Seated,
    /// Nothing, unless matches are private: then [`Scope::MatchesRead`].
    Spectating,
    /// An API key with this scope.
    Scoped(Scope),
}

/// Every method of every Arbiter service and what it needs (health and reflection, public, are
/// matched by prefix in [`rule`]). `docs/security.md` prints this table; a test checks it covers
/// every method of the protocol.
pub const METHODS: &[(&str, Rule)] = {
    use Rule::{Public, Scoped, Seated, Spectating};
    use Scope::*;
    &[
        ("/arbiter.rules.v1.RulesService/ValidateMove", Scoped(Rules)),
        (
            "/arbiter.rules.v1.RulesService/ValidateMoveStream",
            Scoped(Rules),
        ),
        (
            "/arbiter.rules.v1.RulesService/ListLegalMoves",
            Scoped(Rules),
        ),
        ("/arbiter.rules.v1.RulesService/ApplyMoves", Scoped(Rules)),
        (
            "/arbiter.rules.v1.RulesService/GetGameStatus",
            Scoped(Rules),
        ),
        ("/arbiter.rules.v1.RulesService/ConvertMove", Scoped(Rules)),
        ("/arbiter.rules.v1.RulesService/ImportPgn", Scoped(Rules)),
        ("/arbiter.rules.v1.RulesService/ExportPgn", Scoped(Rules)),
        ("/arbiter.rules.v1.RulesService/Perft", Scoped(Rules)),
        ("/arbiter.rules.v1.RulesService/ReadPosition", Scoped(Rules)),
        ("/arbiter.rules.v1.RulesService/RenderBoard", Scoped(Rules)),
        ("/arbiter.rules.v1.RulesService/Ping", Scoped(Rules)),
        ("/arbiter.rules.v1.RulesService/PingStream", Scoped(Rules)),
        (
            "/arbiter.matches.v1.MatchService/CreateMatch",
            Scoped(MatchesCreate),
        ),
        ("/arbiter.matches.v1.MatchService/GetMatch", Spectating),
        ("/arbiter.matches.v1.MatchService/WatchMatch", Spectating),
        ("/arbiter.matches.v1.MatchService/ExportMatch", Spectating),
        (
            "/arbiter.matches.v1.MatchService/WatchSpectatorChat",
            Spectating,
        ),
        ("/arbiter.matches.v1.MatchService/PostChat", Seated),
        ("/arbiter.matches.v1.MatchService/WatchChat", Seated),
        ("/arbiter.matches.v1.MatchService/MakeMove", Seated),
        ("/arbiter.matches.v1.MatchService/Resign", Seated),
        ("/arbiter.matches.v1.MatchService/OfferDraw", Seated),
        ("/arbiter.matches.v1.MatchService/DeclineDraw", Seated),
        ("/arbiter.matches.v1.MatchService/AbortMatch", Seated),
        ("/arbiter.matches.v1.MatchService/ProposeTakeback", Seated),
        ("/arbiter.matches.v1.MatchService/AnswerTakeback", Seated),
        ("/arbiter.matches.v1.MatchService/ClaimDraw", Seated),
        (
            "/arbiter.matches.v1.MatchService/PauseClocks",
            Scoped(MatchesAdmin),
        ),
        (
            "/arbiter.matches.v1.MatchService/ResumeClocks",
            Scoped(MatchesAdmin),
        ),
        (
            "/arbiter.matches.v1.MatchService/AddTime",
            Scoped(MatchesAdmin),
        ),
        (
            "/arbiter.matches.v1.MatchService/PostSpectatorChat",
            Scoped(MatchesAdmin),
        ),
        (
            "/arbiter.matches.v1.MatchService/ListMatches",
            Scoped(MatchesRead),
        ),
        (
            "/arbiter.matches.v1.MatchService/DeleteChatMessage",
            Scoped(MatchesAdmin),
        ),
        ("/arbiter.clock.v1.ClockService/Sync", Public),
        (
            "/arbiter.clock.v1.ClockService/CreateClock",
            Scoped(ClockWrite),
        ),
        ("/arbiter.clock.v1.ClockService/GetClock", Scoped(ClockRead)),
        ("/arbiter.clock.v1.ClockService/Press", Scoped(ClockWrite)),
        (
            "/arbiter.clock.v1.ClockService/PauseClock",
            Scoped(ClockWrite),
        ),
        (
            "/arbiter.clock.v1.ClockService/ResumeClock",
            Scoped(ClockWrite),
        ),
        ("/arbiter.clock.v1.ClockService/AddTime", Scoped(ClockWrite)),
        (
            "/arbiter.clock.v1.ClockService/StopClock",
            Scoped(ClockWrite),
        ),
        (
            "/arbiter.clock.v1.ClockService/WatchClock",
            Scoped(ClockRead),
        ),
        (
            "/arbiter.matchmaking.v1.MatchmakingService/Join",
            Scoped(MatchmakingQueue),
        ),
        (
            "/arbiter.matchmaking.v1.MatchmakingService/Leave",
            Scoped(MatchmakingQueue),
        ),
        (
            "/arbiter.matchmaking.v1.MatchmakingService/Acknowledge",
            Scoped(MatchmakingQueue),
        ),
        (
            "/arbiter.matchmaking.v1.MatchmakingService/GetRatings",
            Scoped(MatchmakingRatings),
        ),
        (
            "/arbiter.matchmaking.v1.MatchmakingService/CreateChallenge",
            Scoped(MatchmakingQueue),
        ),
        (
            "/arbiter.matchmaking.v1.MatchmakingService/AcceptChallenge",
            Scoped(MatchmakingQueue),
        ),
        (
            "/arbiter.matchmaking.v1.MatchmakingService/DeclineChallenge",
            Scoped(MatchmakingQueue),
        ),
        (
            "/arbiter.matchmaking.v1.MatchmakingService/CancelChallenge",
            Scoped(MatchmakingQueue),
        ),
        (
            "/arbiter.matchmaking.v1.MatchmakingService/GetChallenge",
            Scoped(MatchmakingQueue),
        ),
        (
            "/arbiter.matchmaking.v1.MatchmakingService/WatchChallenges",
            Scoped(MatchmakingQueue),
        ),
        (
            "/arbiter.matchmaking.v1.MatchmakingService/CreateSeek",
            Scoped(MatchmakingQueue),
        ),
        (
            "/arbiter.matchmaking.v1.MatchmakingService/ListSeeks",
            Scoped(MatchmakingQueue),
        ),
        (
            "/arbiter.matchmaking.v1.MatchmakingService/AcceptSeek",
            Scoped(MatchmakingQueue),
        ),
        (
            "/arbiter.matchmaking.v1.MatchmakingService/CancelSeek",
            Scoped(MatchmakingQueue),
        ),
        (
            "/arbiter.matchmaking.v1.MatchmakingService/ImportRatings",
            Scoped(MatchmakingAdmin),
        ),
        (
            "/arbiter.matchmaking.v1.MatchmakingService/GetRatingHistory",
            Scoped(MatchmakingRatings),
        ),
        (
            "/arbiter.analysis.v1.AnalysisService/Analyze",
            Scoped(AnalysisLive),
        ),
        (
            "/arbiter.analysis.v1.AnalysisService/BestMove",
            Scoped(AnalysisLive),
        ),
        (
            "/arbiter.analysis.v1.AnalysisService/SubmitJob",
            Scoped(AnalysisBatch),
        ),
        (
            "/arbiter.analysis.v1.AnalysisService/GetJob",
            Scoped(AnalysisBatch),
        ),
        (
            "/arbiter.analysis.v1.AnalysisService/WatchJob",
            Scoped(AnalysisBatch),
        ),
        (
            "/arbiter.analysis.v1.AnalysisService/GetJobResults",
            Scoped(AnalysisBatch),
        ),
        (
            "/arbiter.analysis.v1.AnalysisService/CancelJob",
            Scoped(AnalysisBatch),
        ),
        (
            "/arbiter.analysis.v1.AnalysisService/ListEngines",
            Scoped(AnalysisLive),
        ),
        (
            "/arbiter.analysis.v1.AnalysisService/AcquireWork",
            Scoped(AnalysisWorker),
        ),
        (
            "/arbiter.analysis.v1.AnalysisService/SubmitWork",
            Scoped(AnalysisWorker),
        ),
    ]
};

/// The services every process offers whatever it hosts, open to all.
const PUBLIC_SERVICES: &[&str] = &[
    "/grpc.health.v1.Health/",
    "/grpc.reflection.v1.ServerReflection/",
    "/grpc.reflection.v1alpha.ServerReflection/",
];

/// The table's own copy of a method path (`/package.Service/Method`), or `None` for a method
/// not in [`METHODS`].
pub fn method(path: &str) -> Option<&'static str> {
    METHODS.iter().find(|(p, _)| *p == path).map(|(p, _)| *p)
}

/// What the method at `path` needs; `None` for a path no Arbiter service serves (the router
/// answers `UNIMPLEMENTED`).
pub fn rule(path: &str) -> Option<Rule> {
    if PUBLIC_SERVICES.iter().any(|p| path.starts_with(p)) {
        return Some(Rule::Public);
    }
    METHODS.iter().find(|(p, _)| *p == path).map(|(_, r)| *r)
}

/// The client an accepted call comes from, as its API key names it: in the request's
/// extensions ([`Client::of`]) for calls that presented a key.
#[derive(Clone, Debug)]
pub struct Client {
    key: Arc<KeyEntry>,
}

impl Client {
    /// The client of `request`, when it presented a valid key.
    pub fn of<T>(request: &tonic::Request<T>) -> Option<&Client> {
        request.extensions().get::<Client>()
    }

    /// The client's name (the keys file's `client`): who owns what the call creates.
    pub fn name(&self) -> &str {
        self.key.client()
    }

    /// The public id of the key the call presented.
    pub fn key_id(&self) -> &str {
        self.key.id()
    }

    /// The client's live-analysis engine time per minute, in ms (`None`: no quota).
    pub fn engine_ms_per_minute(&self) -> Option<u64> {
        self.key.engine_ms_per_minute()
    }

    /// The work refusal the operator lifted for this key (its `lift_work_refusal` in the keys
    /// file): a remote worker's key refused for work with this refusal id may work again.
    pub fn lift_work_refusal(&self) -> Option<&str> {
        self.key.lift_work_refusal()
    }
}

/// Where keys come from and how the live set is kept.
struct Keys {
    live: ArcSwap<KeySet>,
    file: Option<KeysFile>,
    /// Keys this process made for its own calls ([`AccessPolicy::internal_key`]), kept across
    /// reloads.
    internal: std::sync::Mutex<Vec<Arc<KeyEntry>>>,
}

struct KeysFile {
    path: PathBuf,
    platform_token: Option<String>,
    /// The file's bytes when last read (a reload happens only when they change).
    last: std::sync::Mutex<Vec<u8>>,
}

/// Who may call what in one process (see the module documentation). Cheap to clone.
#[derive(Clone)]
pub struct AccessPolicy {
    keys: Option<Arc<Keys>>,
    private_matches: bool,
}

impl std::fmt::Debug for AccessPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Default for AccessPolicy {
    fn default() -> AccessPolicy {
        AccessPolicy::development()
    }
}

impl AccessPolicy {
    /// No keys: development mode (platform scopes from loopback only, the rest open).
    pub fn development() -> AccessPolicy {
        AccessPolicy {
            keys: None,
            private_matches: false,
        }
    }

    /// A fixed set of keys (the platform token alone, or tests).
    pub fn with_keys(keys: KeySet) -> AccessPolicy {
        AccessPolicy {
            keys: Some(Arc::new(Keys {
                live: ArcSwap::from_pointee(keys),
                file: None,
                internal: std::sync::Mutex::default(),
            })),
            private_matches: false,
        }
    }

    /// The keys of the file at `path` (plus the platform token, when given), read now and again
    /// whenever its contents change, checked every `reload_every` by a task that ends with the
    /// policy. Must be called within a Tokio runtime.
    ///
    /// # Errors
    /// The file cannot be read, or is not a valid keys file (the message names the key and
    /// the field).
    pub fn from_file(
        path: PathBuf,
        platform_token: Option<String>,
        reload_every: Duration,
    ) -> Result<AccessPolicy, String> {
        let bytes = read_keys_file(&path)?;
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| format!("{}: not UTF-8 text", path.display()))?;
        let mut set = KeySet::parse(text, None).map_err(|e| format!("{}: {e}", path.display()))?;
        if let Some(token) = &platform_token {
            set = set.with_platform_token(token)?;
        }
        let keys = Arc::new(Keys {
            live: ArcSwap::from_pointee(set),
            file: Some(KeysFile {
                path,
                platform_token,
                last: std::sync::Mutex::new(bytes),
            }),
            internal: std::sync::Mutex::default(),
        });
        let weak = Arc::downgrade(&keys);
        tokio::spawn(watch_keys(
            weak,
            reload_every.max(Duration::from_millis(10)),
        ));
        Ok(AccessPolicy {
            keys: Some(keys),
            private_matches: false,
        })
    }

    /// Makes reading and watching matches need [`Scope::MatchesRead`] (public otherwise).
    #[must_use]
    pub fn private_matches(mut self, private: bool) -> AccessPolicy {
        self.private_matches = private;
        self
    }

    /// With keys on, makes a key for this process's own calls to itself (`arbiter serve`'s
    /// matchmaking creating matches on its match service) granting `scopes` to `client`: it
    /// lives in memory only and stays across reloads. `None` in development mode, where such
    /// calls come from loopback.
    ///
    /// # Errors
    /// No random source.
    pub fn internal_key(&self, client: &str, scopes: &[Scope]) -> Result<Option<String>, String> {
        let Some(keys) = &self.keys else {
            return Ok(None);
        };
        let (key, entry) = crate::keys::internal_key(client, scopes)?;
        let mut internal = keys
            .internal
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        internal.push(entry);
        let set = keys.live.load();
        let rebuilt = KeySet::clone_of(&set).with_entries(&internal);
        keys.live.store(Arc::new(rebuilt));
        Ok(Some(key))
    }

    /// Reads the keys file again if its contents changed: `Ok(true)` when new keys are in
    /// force. The watcher calls this; so can a test.
    ///
    /// # Errors
    /// The new file is unreadable or invalid: the keys in force stay.
    pub fn reload(&self) -> Result<bool, String> {
        let Some(keys) = &self.keys else {
            return Ok(false);
        };
        keys.reload()
    }

    /// What the process accepts, for its start-up log (never a key).
    pub fn describe(&self) -> String {
        let spectators = if self.private_matches {
            "matches are private (reading and watching need matches:read)"
        } else {
            "matches are public to spectators"
        };
        match &self.keys {
            None => format!(
                "development mode (no API keys): platform calls are accepted from loopback \
                 clients only, every other call from anyone; {spectators}"
            ),
            Some(keys) => {
                let n = keys.live.load().len();
                match &keys.file {
                    Some(f) => format!(
                        "API keys from {} ({n} keys, reloaded on change); {spectators}",
                        f.path.display()
                    ),
                    None => format!("API keys: {n} configured; {spectators}"),
                }
            }
        }
    }

    /// Warns, once at start, when a development-mode process listens beyond loopback: behind a
    /// local proxy or sidecar every client looks like loopback.
    pub fn warn_if_exposed(&self, listen: SocketAddr) {
        if self.keys.is_none() && !listen.ip().to_canonical().is_loopback() {
            tracing::warn!(
                %listen,
                "no API keys: platform calls are taken from loopback clients only, and behind \
                 a local proxy or sidecar every client is on loopback; configure \
                 --api-keys-file for any deployment beyond one machine"
            );
        }
    }

    /// Decides the call to `path` with `headers` from `remote`: `Ok(Some(client))` for a
    /// call accepted on a key, `Ok(None)` for one that needs none.
    ///
    /// # Errors
    /// `UNAUTHENTICATED`, `PERMISSION_DENIED`, or a rate limit's `RESOURCE_EXHAUSTED`.
    pub fn check(
        &self,
        path: &str,
        headers: &http::HeaderMap,
        remote: Option<SocketAddr>,
    ) -> Result<Option<Client>, ApiError> {
        let Some(rule) = rule(path) else {
            return Ok(None);
        };
        let scope = match rule {
            Rule::Public | Rule::Seated => return Ok(None),
            Rule::Spectating if !self.private_matches => return Ok(None),
            Rule::Spectating => Scope::MatchesRead,
            Rule::Scoped(scope) => scope,
        };
        let Some(keys) = &self.keys else {
            // Private matches without keys: only loopback clients spectate.
            let guarded = scope.platform() || rule == Rule::Spectating;
            let loopback = remote.is_some_and(|a| a.ip().to_canonical().is_loopback());
            return if !guarded || loopback {
                Ok(None)
            } else {
                Err(ApiError::PermissionDenied(format!(
                    "{} calls are accepted from loopback clients only: this server has no API \
                     keys configured",
                    scope.name()
                )))
            };
        };
        let Some(value) = headers.get(API_KEY_HEADER) else {
            return Err(ApiError::Unauthenticated(format!(
                "this call needs an API key with scope {} in {API_KEY_HEADER}",
                scope.name()
            )));
        };
        let presented = value.to_str().map_err(|_| {
            ApiError::Unauthenticated(crate::keys::KeyRefused::Malformed.to_string())
        })?;
        let set = keys.live.load();
        let entry = set.find(presented).map_err(|refused| {
            tracing::debug!(%refused, "API key refused");
            ApiError::Unauthenticated(refused.to_string())
        })?;
        if !entry.allows(scope) {
            tracing::debug!(key = entry.id(), client = %entry.client(), scope = scope.name(), "scope missing");
            return Err(ApiError::PermissionDenied(format!(
                "the API key of client {} does not grant scope {}",
                entry.client(),
                scope.name()
            )));
        }
        let method = method(path).expect("a scoped method is in the table");
        if let Err(wait) = entry.take(method) {
            tracing::debug!(key = entry.id(), client = %entry.client(), method, "rate limited");
            return Err(ApiError::RateLimited {
                description: format!(
                    "client {} is over its rate limit for {}; retry in {} ms",
                    entry.client(),
                    method.trim_start_matches('/'),
                    wait.as_millis().max(1)
                ),
                retry_after: wait,
            });
        }
        Ok(Some(Client {
            key: Arc::clone(entry),
        }))
    }
}

impl Keys {
    fn reload(&self) -> Result<bool, String> {
        let Some(file) = &self.file else {
            return Ok(false);
        };
        let bytes = read_keys_file(&file.path)?;
        let mut last = file
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *last == bytes {
            return Ok(false);
        }
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| format!("{}: not UTF-8 text", file.path.display()))?;
        let previous = self.live.load();
        let mut set = KeySet::parse(text, Some(&previous))
            .map_err(|e| format!("{}: {e}", file.path.display()))?;
        if let Some(token) = &file.platform_token {
            set = set.with_platform_token(token)?;
        }
        // Held until the new set is in force, so that a key made meanwhile is not lost.
        let internal = self
            .internal
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let set = set.with_entries(&internal);
        let n = set.len();
        self.live.store(Arc::new(set));
        drop(internal);
        *last = bytes;
        tracing::info!(path = %file.path.display(), keys = n, "API keys reloaded");
        Ok(true)
    }
}

/// The keys file's bytes, refusing one past [`crate::keys::MAX_FILE_BYTES`] without reading
/// it all.
fn read_keys_file(path: &std::path::Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    let limit = crate::keys::MAX_FILE_BYTES as u64 + 1;
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() > crate::keys::MAX_FILE_BYTES {
        return Err(format!(
            "{}: larger than {} bytes",
            path.display(),
            crate::keys::MAX_FILE_BYTES
        ));
    }
    Ok(bytes)
}

/// Reloads the keys file while its policy lives. Reading runs on the blocking pool (a file on
/// a slow volume never holds an async worker).
async fn watch_keys(keys: Weak<Keys>, every: Duration) {
    let mut failing = false;
    loop {
        tokio::time::sleep(every).await;
        let Some(live) = keys.upgrade() else {
            return;
        };
        let outcome = tokio::task::spawn_blocking(move || live.reload()).await;
        match outcome {
            Ok(Ok(_)) => failing = false,
            Ok(Err(e)) => {
                // Logged once per failing spell, not every poll.
                if !failing {
                    tracing::error!(error = %e, "API keys not reloaded: the keys in force stay");
                }
                failing = true;
            }
            Err(e) => tracing::error!(error = %e, "API keys reload task failed"),
        }
    }
}

/// The remote address of a call, from the connection information the server put in its
/// extensions (plain TCP or TLS).
fn remote_of(extensions: &http::Extensions) -> Option<SocketAddr> {
    use tonic::transport::server::{TcpConnectInfo, TlsConnectInfo};
    extensions
        .get::<TcpConnectInfo>()
        .and_then(TcpConnectInfo::remote_addr)
        .or_else(|| {
            extensions
                .get::<TlsConnectInfo<TcpConnectInfo>>()
                .and_then(|tls| tls.get_ref().remote_addr())
        })
}

/// The access check as the server's gate: a refused call never reaches a service; an accepted
/// one carries its [`Client`] in its extensions, and its client's name in its log span.
impl crate::gate::Gate for AccessPolicy {
    type Pass = Option<Arc<str>>;

    fn admit<B>(&self, request: &mut http::Request<B>) -> Result<Self::Pass, tonic::Status> {
        let remote = remote_of(request.extensions());
        let client = self.check(request.uri().path(), request.headers(), remote)?;
        Ok(client.map(|client| {
            let name = Arc::clone(client.key.client());
            request.extensions_mut().insert(client);
            name
        }))
    }

    fn entered(name: &Self::Pass) {
        if let Some(name) = name {
            tracing::Span::current().record("client", &**name);
        }
    }
}

/// Flags (with environment fallbacks) for API keys, shared by every server binary; `main` turns
/// them into an [`AccessPolicy`].
#[derive(clap::Args, Clone, Debug, Default)]
pub struct AccessArgs {
    /// The API keys file (TOML; docs/security.md). Without it and without a platform token the
    /// server runs in development mode: platform calls from loopback only, the rest open.
    #[arg(long, env = "ARBITER_API_KEYS_FILE")]
    pub api_keys_file: Option<PathBuf>,
    /// Seconds between checks of the keys file for changes.
    #[arg(long, env = "ARBITER_API_KEYS_RELOAD_SECS", default_value_t = 2)]
    pub api_keys_reload_secs: u64,
    /// Reading and watching matches need an API key with scope matches:read (public
    /// otherwise).
    #[arg(long, env = "ARBITER_PRIVATE_MATCHES")]
    pub private_matches: bool,
    /// The platform token, which becomes the key of client "platform" with every scope.
    #[command(flatten)]
    pub platform: crate::auth::PlatformArgs,
}

impl AccessArgs {
    /// The policy these flags describe. Must be called within a Tokio runtime (a keys file is
    /// watched for changes).
    ///
    /// # Errors
    /// An unreadable or invalid keys file or platform token.
    pub fn load(&self) -> Result<AccessPolicy, String> {
        let token = self.platform.token()?;
        let policy = match (&self.api_keys_file, token) {
            (Some(path), token) => AccessPolicy::from_file(
                path.clone(),
                token,
                Duration::from_secs(self.api_keys_reload_secs.max(1)),
            )?,
            (None, Some(token)) => AccessPolicy::with_keys(KeySet::platform_token(&token)?),
            (None, None) => AccessPolicy::development(),
        };
        Ok(policy.private_matches(self.private_matches))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_of_the_protocol_has_a_rule() {
        use prost::Message;
        let set = prost_types::FileDescriptorSet::decode(arbiter_proto::FILE_DESCRIPTOR_SET)
            .expect("the protocol's descriptors");
        let mut seen = 0;
        for file in &set.file {
            for service in &file.service {
                for m in &service.method {
                    let path = format!("/{}.{}/{}", file.package(), service.name(), m.name());
                    assert!(rule(&path).is_some(), "{path} has no access rule");
                    seen += 1;
                }
            }
        }
        assert_eq!(
            seen,
            METHODS.len(),
            "the table names a method the protocol lacks"
        );
    }

    fn headers(key: Option<&str>) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        if let Some(k) = key {
            h.insert(API_KEY_HEADER, k.parse().unwrap());
        }
        h
    }

    const LOOPBACK: Option<SocketAddr> = Some(SocketAddr::new(
        std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        4000,
    ));
    const FAR: Option<SocketAddr> = Some(SocketAddr::new(
        std::net::IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 7)),
        4000,
    ));

    #[test]
    fn development_mode_keeps_platform_calls_on_loopback() {
        let p = AccessPolicy::development();
        let create = "/arbiter.matches.v1.MatchService/CreateMatch";
        let rules = "/arbiter.rules.v1.RulesService/ValidateMove";
        assert!(p.check(create, &headers(None), LOOPBACK).unwrap().is_none());
        let e = p.check(create, &headers(None), FAR).unwrap_err();
        assert_eq!(e.code(), tonic::Code::PermissionDenied);
        assert!(p.check(rules, &headers(None), FAR).is_ok());
        // Private matches without keys: spectators on loopback only.
        let watch = "/arbiter.matches.v1.MatchService/WatchMatch";
        assert!(p.check(watch, &headers(None), FAR).is_ok());
        let private = p.private_matches(true);
        assert!(private.check(watch, &headers(None), LOOPBACK).is_ok());
        let e = private.check(watch, &headers(None), FAR).unwrap_err();
        assert_eq!(e.code(), tonic::Code::PermissionDenied);
    }

    #[test]
    fn keys_decide_every_scoped_call() {
        let k = crate::keys::new_key("lobby", &["rules".into()], None, None).unwrap();
        let set = KeySet::parse(&k.entry, None).unwrap();
        let p = AccessPolicy::with_keys(set);
        let rules = "/arbiter.rules.v1.RulesService/ValidateMove";
        let batch = "/arbiter.analysis.v1.AnalysisService/SubmitJob";
        let client = p
            .check(rules, &headers(Some(&k.key)), FAR)
            .unwrap()
            .unwrap();
        assert_eq!(client.name(), "lobby");
        assert_eq!(client.key_id(), k.id);
        let code = |path, key| p.check(path, &headers(key), LOOPBACK).unwrap_err().code();
        assert_eq!(code(rules, None), tonic::Code::Unauthenticated);
        assert_eq!(code(rules, Some("arb_nope")), tonic::Code::Unauthenticated);
        assert_eq!(code(batch, Some(&k.key)), tonic::Code::PermissionDenied);
        // Public, seated and (public) spectating calls need nothing, even with keys on.
        for path in [
            "/grpc.health.v1.Health/Check",
            "/arbiter.clock.v1.ClockService/Sync",
            "/arbiter.matches.v1.MatchService/MakeMove",
            "/arbiter.matches.v1.MatchService/WatchMatch",
        ] {
            assert!(
                p.check(path, &headers(None), FAR).unwrap().is_none(),
                "{path}"
            );
        }
        let private = p.clone().private_matches(true);
        let watch = "/arbiter.matches.v1.MatchService/WatchMatch";
        let e = private
            .check(watch, &headers(Some(&k.key)), FAR)
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::PermissionDenied);
    }

    #[test]
    fn a_key_never_appears_in_a_refusal() {
        let k = crate::keys::new_key("lobby", &["rules".into()], None, None).unwrap();
        let p = AccessPolicy::with_keys(KeySet::parse(&k.entry, None).unwrap());
        let batch = "/arbiter.analysis.v1.AnalysisService/SubmitJob";
        let mut wrong = k.key.clone();
        wrong.push('x');
        for key in [&k.key, &wrong] {
            let e = p.check(batch, &headers(Some(key)), FAR).unwrap_err();
            assert!(!e.to_string().contains(key.as_str()), "{e}");
        }
    }
}
