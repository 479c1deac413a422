//! API keys: what a key looks like, the keys file that lists them, and the check of a presented
//! key.
//!
//! A key is `arb_<id>_<secret>`: `id` is 12 lower-case hex digits, public (it names the key in
//! logs and in the keys file), `secret` is 32 random bytes in unpadded base64url. The keys file
//! holds the SHA-256 of the whole key, never the key: a leaked file gives no key away (the secret
//! has 256 bits, so a plain digest cannot be searched).
//!
//! The keys file is TOML, one `[[key]]` table per key:
//!
//! ```toml
//! [[key]]
//! id = "0f3a9c21b7d4"
//! client = "lobby"
//! sha256 = "…64 hex digits…"
//! scopes = ["rules", "analysis:live", "analysis:batch"]
//! engine_seconds_per_minute = 120            # live analysis quota (optional)
//! lift_work_refusal = "wr-1764892800000-3f9a0c1d2e4b5a69"   # remote workers (optional)
//! limits = [
//!   { method = "*", per_second = 50, burst = 100 },
//!   { method = "arbiter.rules.v1.RulesService/Perft", per_minute = 10 },
//! ]
//! ```
//!
//! Several keys may name the same client (a key being rotated and its successor): the client,
//! not the key, owns what is created with it. Every field is checked when the file is read, and
//! a file with any error is refused as a whole (at start: the process does not start; at a
//! reload: the keys in force stay).

use std::collections::{BTreeSet, HashMap};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, Quota, RateLimiter};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::access::{self, Scope};

/// What every key starts with.
pub const KEY_PREFIX: &str = "arb_";
/// Hex digits of a key's public id.
pub const ID_HEX_DIGITS: usize = 12;
/// Random bytes of a key's secret.
pub const SECRET_BYTES: usize = 32;
/// The largest keys file read, in bytes.
pub const MAX_FILE_BYTES: usize = 4 << 20;
/// The most keys one file may list.
pub const MAX_KEYS: usize = 10_000;
/// The longest client name, in bytes.
pub const MAX_CLIENT_BYTES: usize = 64;
/// The most rate limits one key may have.
pub const MAX_LIMITS: usize = 64;
/// The longest `lift_work_refusal`, in bytes.
pub const MAX_REFUSAL_ID_BYTES: usize = 64;

/// A rate limit of one method (or, with `method = "*"`, of each method on its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    /// Calls allowed per `period`.
    pub calls: NonZeroU32,
    /// The period.
    pub period: Duration,
    /// Calls that may come at once after a quiet spell (the bucket's size).
    pub burst: NonZeroU32,
}

impl Rate {
    fn quota(self) -> Quota {
        let per_call = self.period / self.calls.get();
        Quota::with_period(per_call.max(Duration::from_nanos(1)))
            .expect("a positive period")
            .allow_burst(self.burst)
    }
}

/// What the keys file says of a key's limits: compared at a reload, so that a key whose limits
/// did not change keeps its buckets (a reload does not refill them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct LimitSpec {
    each: Option<Rate>,
    methods: Vec<(&'static str, Rate)>,
}

/// A key's rate limiters.
struct Limiters {
    spec: LimitSpec,
    each: Option<DefaultKeyedRateLimiter<&'static str>>,
    methods: HashMap<&'static str, DefaultDirectRateLimiter>,
}

impl Limiters {
    fn new(spec: LimitSpec) -> Limiters {
        Limiters {
            each: spec.each.map(|r| RateLimiter::keyed(r.quota())),
            methods: spec
                .methods
                .iter()
                .map(|(m, r)| (*m, RateLimiter::direct(r.quota())))
                .collect(),
            spec,
        }
    }

    /// Takes one call of `method` (a path from the method table); `Err(wait)` when the key is
    /// over its limit, with how long until the call would be allowed.
    fn take(&self, method: &'static str) -> Result<(), Duration> {
        let clock = DefaultClock::default();
        let verdict = match self.methods.get(method) {
            Some(limiter) => limiter.check(),
            None => match &self.each {
                Some(limiter) => limiter.check_key(&method),
                None => return Ok(()),
            },
        };
        verdict.map_err(|not_until| not_until.wait_time_from(clock.now()))
    }
}

/// One key of the keys file.
pub struct KeyEntry {
    id: String,
    client: Arc<str>,
    digest: [u8; 32],
    scopes: BTreeSet<Scope>,
    engine_ms_per_minute: Option<u64>,
    lift_work_refusal: Option<Arc<str>>,
    limiters: Arc<Limiters>,
}

impl std::fmt::Debug for KeyEntry {
    /// The id, client and scopes: never the digest.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyEntry")
            .field("id", &self.id)
            .field("client", &self.client)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl KeyEntry {
    /// The key's public id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The client the key belongs to.
    pub fn client(&self) -> &Arc<str> {
        &self.client
    }

    /// Whether the key grants `scope`.
    pub fn allows(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }

    /// The client's live-analysis engine time per minute, in ms (`None`: no quota).
    pub fn engine_ms_per_minute(&self) -> Option<u64> {
        self.engine_ms_per_minute
    }

    /// The work refusal the operator lifted for this key (`lift_work_refusal`): the analysis
    /// service lets a remote worker refused under this id work again.
    pub fn lift_work_refusal(&self) -> Option<&str> {
        self.lift_work_refusal.as_deref()
    }

    /// Takes one call of `method` from the key's rate limits: `Err(wait)` over the limit.
    pub fn take(&self, method: &'static str) -> Result<(), Duration> {
        self.limiters.take(method)
    }
}

/// Why a presented key is refused (every case is `UNAUTHENTICATED`; the message never quotes
/// the key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyRefused {
    /// Not of the form `arb_<id>_<secret>`.
    Malformed,
    /// Well-formed, but no key of the file matches (unknown, revoked, or a wrong secret).
    Unknown,
}

impl std::fmt::Display for KeyRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KeyRefused::Malformed => "the x-api-key entry is not an Arbiter API key",
            KeyRefused::Unknown => "the API key is not valid (unknown, revoked or mistyped)",
        })
    }
}

/// The keys of one version of the keys file.
#[derive(Default)]
pub struct KeySet {
    by_id: HashMap<String, Arc<KeyEntry>>,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KeySet({} keys)", self.by_id.len())
    }
}

/// SHA-256 of a whole key.
fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// The public id of a well-formed key.
fn id_of(key: &str) -> Option<&str> {
    let rest = key.strip_prefix(KEY_PREFIX)?;
    let (id, secret) = rest.split_once('_')?;
    let id_ok = id.len() == ID_HEX_DIGITS
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let secret_ok = !secret.is_empty()
        && secret.len() <= 128
        && secret
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    (id_ok && secret_ok).then_some(id)
}

impl KeySet {
    /// The number of keys.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The entry of `presented`, compared in constant time (the id only picks the entry; the
    /// digest of the whole key decides).
    ///
    /// # Errors
    /// [`KeyRefused`].
    pub fn find(&self, presented: &str) -> Result<&Arc<KeyEntry>, KeyRefused> {
        let Some(id) = id_of(presented) else {
            // Not of the key form: the platform token, if one is configured.
            return match self.by_id.get(PLATFORM_TOKEN_ID) {
                None => Err(KeyRefused::Malformed),
                Some(entry) => {
                    if bool::from(digest(presented.trim()).ct_eq(&entry.digest)) {
                        Ok(entry)
                    } else {
                        Err(KeyRefused::Unknown)
                    }
                }
            };
        };
        let entry = self.by_id.get(id).ok_or(KeyRefused::Unknown)?;
        if bool::from(digest(presented).ct_eq(&entry.digest)) {
            Ok(entry)
        } else {
            Err(KeyRefused::Unknown)
        }
    }

    /// A set of one key: the platform token given on its own (`--platform-token-file`), which
    /// becomes the key of client `platform` with every scope and no limits (see
    /// [`KeySet::with_platform_token`]).
    ///
    /// # Errors
    /// A token shorter than [`crate::auth::MIN_TOKEN_BYTES`] or with whitespace.
    pub fn platform_token(token: &str) -> Result<KeySet, String> {
        KeySet::default().with_platform_token(token)
    }

    /// A copy of `set` (its entries shared, rate limiters included).
    pub(crate) fn clone_of(set: &KeySet) -> KeySet {
        KeySet {
            by_id: set.by_id.clone(),
        }
    }

    /// This set with `extra` added (keys of this process: see `internal_key`).
    pub(crate) fn with_entries(mut self, extra: &[Arc<KeyEntry>]) -> KeySet {
        for entry in extra {
            self.by_id.insert(entry.id.clone(), Arc::clone(entry));
        }
        self
    }

    /// Reads a keys file's text. `previous` (the set in force, at a reload) lends its rate
    /// limiters to the keys whose limits did not change.
    ///
    /// # Errors
    /// The first problem, naming the key (`key[3]`, by position, and its id when known) and the
    /// field.
    pub fn parse(text: &str, previous: Option<&KeySet>) -> Result<KeySet, String> {
        if text.len() > MAX_FILE_BYTES {
            return Err(format!(
                "the keys file has {} bytes: at most {MAX_FILE_BYTES}",
                text.len()
            ));
        }
        let doc: FileDoc = toml::from_str(text).map_err(|e| e.to_string())?;
        if doc.key.len() > MAX_KEYS {
            return Err(format!(
                "the keys file lists {} keys: at most {MAX_KEYS}",
                doc.key.len()
            ));
        }
        let mut set = KeySet::default();
        for (i, key) in doc.key.into_iter().enumerate() {
            let at = |field: &str, problem: String| format!("key[{i}].{field}: {problem}");
            let id_ok = key.id.len() == ID_HEX_DIGITS
                && key
                    .id
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            if !id_ok {
                return Err(at(
                    "id",
                    format!("must be {ID_HEX_DIGITS} lower-case hex digits"),
                ));
            }
            let at = |field: &str, problem: String| {
                format!("key[{i}] (id {}).{field}: {problem}", key.id)
            };
            if set.by_id.contains_key(&key.id) {
                return Err(at("id", "is listed twice".into()));
            }
            let client_ok = !key.client.is_empty()
                && key.client.len() <= MAX_CLIENT_BYTES
                && key
                    .client
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.:@".contains(&b));
            if !client_ok {
                return Err(at(
                    "client",
                    format!(
                        "must be 1 to {MAX_CLIENT_BYTES} letters, digits or - _ . : @ (it is \
                         logged and names what the client owns)"
                    ),
                ));
            }
            let digest = parse_digest(&key.sha256).ok_or_else(|| {
                at(
                    "sha256",
                    "must be 64 hex digits (the SHA-256 of the key)".into(),
                )
            })?;
            let mut scopes = BTreeSet::new();
            for (j, name) in key.scopes.iter().enumerate() {
                let scope = Scope::parse(name).ok_or_else(|| {
                    at(
                        &format!("scopes[{j}]"),
                        format!(
                            "unknown scope {}; the scopes are {}",
                            crate::error::quote(name),
                            Scope::names().join(", ")
                        ),
                    )
                })?;
                scopes.insert(scope);
            }
            if key.limits.len() > MAX_LIMITS {
                return Err(at("limits", format!("at most {MAX_LIMITS} limits")));
            }
            let mut spec = LimitSpec::default();
            for (j, limit) in key.limits.iter().enumerate() {
                let field = format!("limits[{j}]");
                let rate = limit.rate().map_err(|e| at(&field, e))?;
                if limit.method == "*" {
                    if spec.each.replace(rate).is_some() {
                        return Err(at(&field, "a second limit for \"*\"".into()));
                    }
                } else {
                    let path = format!("/{}", limit.method.trim_start_matches('/'));
                    let Some(method) = access::method(&path) else {
                        return Err(at(
                            &format!("{field}.method"),
                            format!(
                                "unknown method {} (write package.Service/Method, or \"*\")",
                                crate::error::quote(&limit.method)
                            ),
                        ));
                    };
                    if spec.methods.iter().any(|(m, _)| *m == method) {
                        return Err(at(&field, "a second limit for this method".into()));
                    }
                    spec.methods.push((method, rate));
                }
            }
            let engine_ms_per_minute = match key.engine_seconds_per_minute {
                Some(0) => {
                    return Err(at(
                        "engine_seconds_per_minute",
                        "must be positive (leave it out for no quota)".into(),
                    ));
                }
                s => s.map(|s| u64::from(s) * 1000),
            };
            let lift_work_refusal = match key.lift_work_refusal.as_deref() {
                None => None,
                Some(r)
                    if !r.is_empty()
                        && r.len() <= MAX_REFUSAL_ID_BYTES
                        && r.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
                {
                    Some(Arc::from(r))
                }
                Some(_) => {
                    return Err(at(
                        "lift_work_refusal",
                        format!(
                            "must be a refusal id (1 to {MAX_REFUSAL_ID_BYTES} letters, digits, \
                             - or _, as the refusal's message gives it: wr-…)"
                        ),
                    ));
                }
            };
            let limiters = previous
                .and_then(|p| p.by_id.get(&key.id))
                .filter(|old| old.limiters.spec == spec && old.digest == digest)
                .map_or_else(
                    || Arc::new(Limiters::new(spec)),
                    |old| Arc::clone(&old.limiters),
                );
            let entry = KeyEntry {
                id: key.id.clone(),
                client: Arc::from(key.client.as_str()),
                digest,
                scopes,
                engine_ms_per_minute,
                lift_work_refusal,
                limiters,
            };
            set.by_id.insert(key.id, Arc::new(entry));
        }
        Ok(set)
    }

    /// This set with the platform token added as one more key: client `platform`, every scope,
    /// no limits. It is presented in `x-api-key` as it is (it need not have the `arb_` form).
    ///
    /// # Errors
    /// A token shorter than [`crate::auth::MIN_TOKEN_BYTES`] or with whitespace.
    pub fn with_platform_token(mut self, token: &str) -> Result<KeySet, String> {
        let token = token.trim();
        if token.len() < crate::auth::MIN_TOKEN_BYTES || token.chars().any(char::is_whitespace) {
            return Err(format!(
                "the platform token must be at least {} bytes without spaces",
                crate::auth::MIN_TOKEN_BYTES
            ));
        }
        let entry = KeyEntry {
            id: PLATFORM_TOKEN_ID.to_owned(),
            client: Arc::from("platform"),
            digest: digest(token),
            scopes: Scope::ALL.iter().copied().collect(),
            engine_ms_per_minute: None,
            lift_work_refusal: None,
            limiters: Arc::new(Limiters::new(LimitSpec::default())),
        };
        self.by_id
            .insert(PLATFORM_TOKEN_ID.to_owned(), Arc::new(entry));
        Ok(self)
    }
}

/// A key made for this process alone (never written anywhere): how `arbiter serve`'s
/// matchmaking calls its own match service when keys are on. Returns the key and its entry.
pub(crate) fn internal_key(
    client: &str,
    scopes: &[Scope],
) -> Result<(String, Arc<KeyEntry>), String> {
    let made = new_key(client, &[], None, None)?;
    let entry = KeyEntry {
        id: made.id,
        client: Arc::from(client),
        digest: digest(&made.key),
        scopes: scopes.iter().copied().collect(),
        engine_ms_per_minute: None,
        lift_work_refusal: None,
        limiters: Arc::new(Limiters::new(LimitSpec::default())),
    };
    Ok((made.key, Arc::new(entry)))
}

/// The id under which the platform token is held (not a hex id, so it cannot clash with a
/// key of the file).
const PLATFORM_TOKEN_ID: &str = "platform-token";

fn parse_digest(text: &str) -> Option<[u8; 32]> {
    let text = text.trim();
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in text.as_bytes().chunks(2).enumerate() {
        let pair = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(out)
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    #[serde(default)]
    key: Vec<KeyDoc>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyDoc {
    id: String,
    client: String,
    sha256: String,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    limits: Vec<LimitDoc>,
    engine_seconds_per_minute: Option<u32>,
    /// The id of a work refusal of this key that the operator lifts (remote analysis workers).
    #[serde(default)]
    lift_work_refusal: Option<String>,
    /// Free text for people (when and why the key was issued); not used.
    #[serde(default)]
    #[allow(dead_code)]
    note: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitDoc {
    method: String,
    per_second: Option<u32>,
    per_minute: Option<u32>,
    burst: Option<u32>,
}

impl LimitDoc {
    fn rate(&self) -> Result<Rate, String> {
        let (calls, period) = match (self.per_second, self.per_minute) {
            (Some(n), None) => (n, Duration::from_secs(1)),
            (None, Some(n)) => (n, Duration::from_secs(60)),
            _ => return Err("give exactly one of per_second and per_minute".into()),
        };
        let calls = NonZeroU32::new(calls).ok_or("the rate must be positive")?;
        let burst = match self.burst {
            None => calls,
            Some(b) => NonZeroU32::new(b).ok_or("burst must be positive")?,
        };
        Ok(Rate {
            calls,
            period,
            burst,
        })
    }
}

/// A key just made by [`new_key`]: the key itself (shown once, to be handed to the client) and
/// its entry for the keys file.
#[derive(Clone)]
pub struct NewKey {
    /// The key (`arb_<id>_<secret>`).
    pub key: String,
    /// Its public id.
    pub id: String,
    /// Its `[[key]]` table for the keys file (the digest, not the key).
    pub entry: String,
}

impl std::fmt::Debug for NewKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// Makes a new key for `client` with `scopes` (names, as in the keys file) and optional
/// limits, from the operating system's random source.
///
/// # Errors
/// A client name or scope the keys file would refuse; no random source.
pub fn new_key(
    client: &str,
    scopes: &[String],
    each_per_second: Option<u32>,
    engine_seconds_per_minute: Option<u32>,
) -> Result<NewKey, String> {
    let mut raw = [0u8; 6 + SECRET_BYTES];
    getrandom::fill(&mut raw).map_err(|e| format!("no random source: {e}"))?;
    let id = crate::hex(&raw[..6]);
    let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&raw[6..]);
    let key = format!("{KEY_PREFIX}{id}_{secret}");
    let quoted: Vec<String> = scopes.iter().map(|s| format!("{s:?}")).collect();
    let mut entry = format!(
        "[[key]]\nid = \"{id}\"\nclient = {client:?}\nsha256 = \"{}\"\nscopes = [{}]\n",
        crate::hex(&digest(&key)),
        quoted.join(", ")
    );
    if let Some(n) = engine_seconds_per_minute {
        entry.push_str(&format!("engine_seconds_per_minute = {n}\n"));
    }
    if let Some(n) = each_per_second {
        entry.push_str(&format!(
            "limits = [{{ method = \"*\", per_second = {n}, burst = {} }}]\n",
            n.saturating_mul(2)
        ));
    }
    // The entry must read back as the key it describes.
    let set = KeySet::parse(&entry, None)?;
    debug_assert!(set.find(&key).is_ok());
    Ok(NewKey { key, id, entry })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(key: &NewKey, extra: &str) -> String {
        format!("{}{extra}", key.entry)
    }

    #[test]
    fn a_new_key_reads_back_and_only_it_matches() {
        let k = new_key(
            "lobby",
            &["rules".into(), "analysis:live".into()],
            None,
            None,
        )
        .unwrap();
        assert!(k.key.starts_with("arb_"));
        assert!(
            !k.entry.contains(&k.key),
            "the entry holds the digest, not the key"
        );
        let set = KeySet::parse(&k.entry, None).unwrap();
        let entry = set.find(&k.key).unwrap();
        assert_eq!(&**entry.client(), "lobby");
        assert!(entry.allows(Scope::Rules) && entry.allows(Scope::AnalysisLive));
        assert!(!entry.allows(Scope::AnalysisBatch));
        // One character of the secret changed: same id, wrong digest.
        let mut wrong = k.key.clone();
        let last = wrong.pop().unwrap();
        wrong.push(if last == 'A' { 'B' } else { 'A' });
        assert_eq!(set.find(&wrong).unwrap_err(), KeyRefused::Unknown);
        assert_eq!(set.find("Bearer x").unwrap_err(), KeyRefused::Malformed);
        assert_eq!(set.find("arb_0123_x").unwrap_err(), KeyRefused::Malformed);
        let other = new_key("lobby", &["rules".into()], None, None).unwrap();
        assert_eq!(set.find(&other.key).unwrap_err(), KeyRefused::Unknown);
    }

    #[test]
    fn every_field_is_checked_and_named() {
        let k = new_key("lobby", &["rules".into()], None, None).unwrap();
        let err = |text: &str| KeySet::parse(text, None).unwrap_err();
        assert!(err("[[key]]\nid = \"xyz\"\nclient=\"a\"\nsha256=\"\"\n").contains("key[0].id"));
        let bad_scope = k.entry.replace("\"rules\"", "\"rulez\"");
        assert!(err(&bad_scope).contains("scopes[0]"), "{}", err(&bad_scope));
        let bad_client = k.entry.replace("\"lobby\"", "\"lob by\"");
        assert!(err(&bad_client).contains(".client"));
        let bad_digest = k.entry.replace("sha256 = \"", "sha256 = \"zz");
        assert!(err(&bad_digest).contains(".sha256"));
        let twice = format!("{}{}", k.entry, k.entry);
        assert!(err(&twice).contains("listed twice"));
        let unknown_field = file_with(&k, "colour = \"red\"\n");
        assert!(
            err(&unknown_field).contains("colour"),
            "{}",
            err(&unknown_field)
        );
        let bad_method = file_with(&k, "limits = [{ method = \"Foo/Bar\", per_second = 1 }]\n");
        assert!(err(&bad_method).contains("limits[0].method"));
        let two_rates = file_with(
            &k,
            "limits = [{ method = \"*\", per_second = 1, per_minute = 3 }]\n",
        );
        assert!(err(&two_rates).contains("exactly one"));
        let zero = file_with(&k, "limits = [{ method = \"*\", per_second = 0 }]\n");
        assert!(err(&zero).contains("positive"));
        assert!(
            err("key = 3").contains("invalid type"),
            "{}",
            err("key = 3")
        );
        assert!(KeySet::parse("", None).unwrap().is_empty());
    }

    #[test]
    fn limits_refuse_past_the_burst_per_method_and_tell_the_wait() {
        let k = new_key("lobby", &["rules".into()], None, None).unwrap();
        let text = file_with(
            &k,
            "limits = [{ method = \"*\", per_minute = 2 }, \
             { method = \"arbiter.rules.v1.RulesService/Perft\", per_minute = 1 }]\n",
        );
        let set = KeySet::parse(&text, None).unwrap();
        let entry = set.find(&k.key).unwrap();
        let validate = access::method("/arbiter.rules.v1.RulesService/ValidateMove").unwrap();
        let ping = access::method("/arbiter.rules.v1.RulesService/Ping").unwrap();
        let perft = access::method("/arbiter.rules.v1.RulesService/Perft").unwrap();
        assert!(entry.take(validate).is_ok() && entry.take(validate).is_ok());
        let wait = entry.take(validate).unwrap_err();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        // "*" is per method: another method has its own bucket.
        assert!(entry.take(ping).is_ok());
        assert!(entry.take(perft).is_ok());
        assert!(entry.take(perft).is_err());

        // A reload with the same limits keeps the buckets; changed limits start afresh.
        let again = KeySet::parse(&text, Some(&set)).unwrap();
        assert!(again.find(&k.key).unwrap().take(validate).is_err());
        let changed = text.replace("per_minute = 2", "per_minute = 3");
        let fresh = KeySet::parse(&changed, Some(&set)).unwrap();
        assert!(fresh.find(&k.key).unwrap().take(validate).is_ok());
    }

    #[test]
    fn a_lifted_work_refusal_is_read_and_checked() {
        let k = new_key("worker-1", &["analysis:worker".into()], None, None).unwrap();
        let set = KeySet::parse(&k.entry, None).unwrap();
        let entry = set.find(&k.key).unwrap();
        assert!(entry.allows(Scope::AnalysisWorker));
        assert_eq!(entry.lift_work_refusal(), None);
        let text = file_with(&k, "lift_work_refusal = \"wr-1764892800000-3f9a0c1d\"\n");
        let set = KeySet::parse(&text, None).unwrap();
        assert_eq!(
            set.find(&k.key).unwrap().lift_work_refusal(),
            Some("wr-1764892800000-3f9a0c1d")
        );
        let err = |extra: &str| KeySet::parse(&file_with(&k, extra), None).unwrap_err();
        for bad in [
            "lift_work_refusal = \"\"\n",
            "lift_work_refusal = \"wr 1\"\n",
            &format!("lift_work_refusal = \"{}\"\n", "w".repeat(65)),
        ] {
            assert!(err(bad).contains(".lift_work_refusal"), "{}", err(bad));
        }
        assert!(err("lift_work_refusal = 3\n").contains("lift_work_refusal"));
    }

    #[test]
    fn the_platform_token_is_a_key_with_every_scope() {
        assert!(KeySet::platform_token("short").is_err());
        let set = KeySet::platform_token("s3cret-platform-token").unwrap();
        let entry = set.find("s3cret-platform-token").unwrap();
        assert!(Scope::ALL.iter().all(|s| entry.allows(*s)));
        assert_eq!(
            set.find("s3cret-platform-tokem").unwrap_err(),
            KeyRefused::Unknown
        );
        // Beside a keys file, both work.
        let k = new_key("lobby", &["rules".into()], None, None).unwrap();
        let both = KeySet::parse(&k.entry, None)
            .unwrap()
            .with_platform_token("s3cret-platform-token")
            .unwrap();
        assert!(both.find(&k.key).is_ok() && both.find("s3cret-platform-token").is_ok());
        assert_eq!(&**entry.client(), "platform");
    }
}
