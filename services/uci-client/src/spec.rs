//! The engine spec: the text `NAME=PATH[,KEY=VALUE]...` that configures an external engine
//! (`arbiter analyze --engine`, and the analysis service's configuration).
//!
//! - `NAME`: 1 to 32 characters of `a-z`, `0-9`, `_` and `-`, not `arbiter` (the built-in
//!   engine's name).
//! - `PATH`: the engine's executable (everything up to the first comma; it cannot hold one).
//! - Known keys: `processes` (1 to 64, default 1), `threads` (UCI `Threads`, 1 to 1024,
//!   default 1), `hash` (UCI `Hash` in MiB, 1 to 1048576, default 16), `timeout` (seconds of
//!   silence after which a searching process is deemed hung, 1 to 3600, default 30),
//!   `variants` (`+`-separated Arbiter variant names the engine should serve; default: all
//!   it can play).
//! - Any other key is a UCI option set verbatim when the process starts: `Skill Level=5` sends
//!   `setoption name Skill Level value 5`. Options the pool sets itself (`Threads`, `Hash`,
//!   `MultiPV`, `UCI_Variant`, `UCI_Chess960`) cannot be given this way.
//!
//! Keys and values are trimmed; control characters, empty parts, duplicate keys (UCI option
//! names compare without case) and bad numbers are refused with a message naming the key.

use arbiter_core::Variant;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// The name reserved for Arbiter's built-in engine.
pub const RESERVED_NAME: &str = "arbiter";

/// The UCI options the pool sets itself, which a spec cannot set verbatim.
const MANAGED_OPTIONS: [&str; 5] = ["Threads", "Hash", "MultiPV", "UCI_Variant", "UCI_Chess960"];

/// A parsed engine spec (see the [module documentation](self) for the syntax).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineSpec {
    /// The configured name (`stockfish`), which errors and metrics use.
    pub name: String,
    /// The executable.
    pub path: PathBuf,
    /// The most processes the pool runs (1 to 64).
    pub processes: usize,
    /// UCI `Threads` of each process.
    pub threads: u32,
    /// UCI `Hash` of each process, MiB; `None` when the spec left it out (the pool then uses
    /// [`EngineSpec::DEFAULT_HASH_MIB`]; a caller with its own default may fill it in).
    pub hash_mib: Option<u32>,
    /// Silence after which a searching process is deemed hung.
    pub timeout: Duration,
    /// The variants the engine should serve; `None` for all it can play.
    pub variants: Option<Vec<Variant>>,
    /// Other UCI options, `(name, value)`, in the spec's order.
    pub options: Vec<(String, String)>,
}

impl EngineSpec {
    /// The default UCI `Hash`, MiB.
    pub const DEFAULT_HASH_MIB: u32 = 16;
    /// The default silence timeout, seconds.
    pub const DEFAULT_TIMEOUT_S: u64 = 30;

    /// A spec with every default for the engine `name` at `path` (not checked).
    pub fn new(name: impl Into<String>, path: impl Into<PathBuf>) -> EngineSpec {
        EngineSpec {
            name: name.into(),
            path: path.into(),
            processes: 1,
            threads: 1,
            hash_mib: None,
            timeout: Duration::from_secs(EngineSpec::DEFAULT_TIMEOUT_S),
            variants: None,
            options: Vec::new(),
        }
    }

    /// The UCI `Hash` the pool sets, MiB.
    pub fn hash(&self) -> u32 {
        self.hash_mib.unwrap_or(EngineSpec::DEFAULT_HASH_MIB)
    }

    /// Parses `NAME=PATH[,KEY=VALUE]...`.
    pub fn parse(text: &str) -> Result<EngineSpec, SpecError> {
        if let Some(c) = text.chars().find(|c| c.is_control()) {
            return Err(SpecError::new(format!(
                "control character {:?} in the engine spec",
                c
            )));
        }
        let mut parts = text.split(',');
        let head = parts.next().unwrap_or_default();
        let (name, path) = head
            .split_once('=')
            .ok_or_else(|| SpecError::new("the engine spec starts with NAME=PATH"))?;
        let name = name.trim();
        check_name(name)?;
        let path = path.trim();
        if path.is_empty() {
            return Err(SpecError::new(format!(
                "engine '{name}': the path is empty"
            )));
        }
        let mut spec = EngineSpec::new(name, path);
        let mut seen: Vec<String> = Vec::new();
        for part in parts {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| SpecError::new(format!("'{}' is not KEY=VALUE", part.trim())))?;
            let (key, value) = (key.trim(), value.trim());
            if key.is_empty() {
                return Err(SpecError::new(format!("an empty key (before '={value}')")));
            }
            if value.is_empty() {
                return Err(SpecError::new(format!("key '{key}': the value is empty")));
            }
            let folded = key.to_ascii_lowercase();
            if seen.contains(&folded) {
                return Err(SpecError::new(format!("key '{key}' is given twice")));
            }
            seen.push(folded);
            match key {
                "processes" => spec.processes = number(key, value, 1, 64)? as usize,
                "threads" => spec.threads = number(key, value, 1, 1024)? as u32,
                "hash" => spec.hash_mib = Some(number(key, value, 1, 1 << 20)? as u32),
                "timeout" => spec.timeout = Duration::from_secs(number(key, value, 1, 3600)?),
                "variants" => spec.variants = Some(variants(value)?),
                _ => {
                    if let Some(managed) =
                        MANAGED_OPTIONS.iter().find(|m| m.eq_ignore_ascii_case(key))
                    {
                        return Err(SpecError::new(format!(
                            "key '{key}': the UCI option {managed} is set by the pool{}",
                            match *managed {
                                "Threads" => " (use threads=N)",
                                "Hash" => " (use hash=MIB)",
                                _ => " for each search",
                            }
                        )));
                    }
                    // `setoption name K value V` is read by words: a key holding the word
                    // `name` or `value` would be misread.
                    if key.split_whitespace().any(|w| w == "name" || w == "value") {
                        return Err(SpecError::new(format!(
                            "key '{key}': a UCI option name cannot hold the word 'name' or 'value'"
                        )));
                    }
                    spec.options.push((key.to_owned(), value.to_owned()));
                }
            }
        }
        Ok(spec)
    }
}

impl fmt::Display for EngineSpec {
    /// The spec's text (every known key written out).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={},processes={},threads={},hash={},timeout={}",
            self.name,
            self.path.display(),
            self.processes,
            self.threads,
            self.hash(),
            self.timeout.as_secs()
        )?;
        if let Some(vs) = &self.variants {
            let names: Vec<&str> = vs.iter().map(|v| v.name()).collect();
            write!(f, ",variants={}", names.join("+"))?;
        }
        for (k, v) in &self.options {
            write!(f, ",{k}={v}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for EngineSpec {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<EngineSpec, SpecError> {
        EngineSpec::parse(s)
    }
}

fn check_name(name: &str) -> Result<(), SpecError> {
    if name.is_empty() || name.len() > 32 {
        return Err(SpecError::new(format!(
            "engine name '{name}' must have 1 to 32 characters"
        )));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_' || *c == '-'))
    {
        return Err(SpecError::new(format!(
            "engine name '{name}': '{c}' is not one of a-z, 0-9, '_', '-'"
        )));
    }
    if name == RESERVED_NAME {
        return Err(SpecError::new(format!(
            "engine name '{RESERVED_NAME}' is reserved for the built-in engine"
        )));
    }
    Ok(())
}

fn number(key: &str, value: &str, min: u64, max: u64) -> Result<u64, SpecError> {
    match value.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        Ok(n) => Err(SpecError::new(format!(
            "key '{key}': {n} is out of range ({min} to {max})"
        ))),
        Err(_) => Err(SpecError::new(format!(
            "key '{key}': '{value}' is not a whole number"
        ))),
    }
}

fn variants(value: &str) -> Result<Vec<Variant>, SpecError> {
    let mut out = Vec::new();
    for name in value.split('+') {
        let name = name.trim();
        let v: Variant = name
            .parse()
            .map_err(|e| SpecError::new(format!("key 'variants': {e}")))?;
        if !crate::dialect::may_be_external(v) {
            return Err(SpecError::new(format!(
                "key 'variants': {v} is played only by the built-in engine"
            )));
        }
        if out.contains(&v) {
            return Err(SpecError::new(format!(
                "key 'variants': {v} is listed twice"
            )));
        }
        out.push(v);
    }
    Ok(out)
}

/// Why an engine spec was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    message: String,
}

impl SpecError {
    fn new(message: impl Into<String>) -> SpecError {
        SpecError {
            message: message.into(),
        }
    }

    /// The message (also what `Display` writes).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SpecError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        EngineSpec::parse(text).expect_err(text).to_string()
    }

    #[test]
    fn defaults_and_every_key() {
        let s = EngineSpec::parse("sf=/usr/games/stockfish").unwrap();
        assert_eq!(s.name, "sf");
        assert_eq!(s.path, PathBuf::from("/usr/games/stockfish"));
        assert_eq!((s.processes, s.threads, s.hash()), (1, 1, 16));
        assert_eq!(s.hash_mib, None);
        assert_eq!(s.timeout, Duration::from_secs(30));
        assert_eq!(s.variants, None);
        assert!(s.options.is_empty());

        let s = EngineSpec::parse(
            "fsf_2-x=/opt/fsf=1,processes=4,threads=2,hash=128,timeout=5,variants=crazyhouse+chess,Skill Level=20, UCI_Elo = 2000",
        )
        .unwrap();
        assert_eq!(s.path, PathBuf::from("/opt/fsf=1"));
        assert_eq!((s.processes, s.threads, s.hash_mib), (4, 2, Some(128)));
        assert_eq!(s.timeout, Duration::from_secs(5));
        assert_eq!(s.variants, Some(vec![Variant::Crazyhouse, Variant::Chess]));
        assert_eq!(
            s.options,
            vec![
                ("Skill Level".to_owned(), "20".to_owned()),
                ("UCI_Elo".to_owned(), "2000".to_owned())
            ]
        );
        // The written form reads back the same.
        assert_eq!(EngineSpec::parse(&s.to_string()).unwrap(), s);
    }

    #[test]
    fn bad_names_and_paths() {
        assert!(err("").contains("NAME=PATH"));
        assert!(err("stockfish").contains("NAME=PATH"));
        assert!(err("=/bin/x").contains("1 to 32"));
        assert!(err(&format!("{}=/bin/x", "a".repeat(33))).contains("1 to 32"));
        assert!(err("Stockfish=/bin/x").contains("'S'"));
        assert!(err("s f=/bin/x").contains("' '"));
        assert!(err("arbiter=/bin/x").contains("reserved"));
        assert!(err("sf=").contains("path is empty"));
        assert!(err("sf= ,threads=1").contains("path is empty"));
        assert!(err("sf=/bin/x\n").contains("control character"));
        assert!(err("sf=/bin/\u{0}x").contains("control character"));
    }

    #[test]
    fn bad_keys_and_values() {
        assert!(err("sf=/x,processes=0").contains("'processes': 0 is out of range (1 to 64)"));
        assert!(err("sf=/x,processes=65").contains("'processes'"));
        assert!(err("sf=/x,threads=two").contains("'threads': 'two' is not a whole number"));
        assert!(err("sf=/x,hash=-1").contains("'hash'"));
        assert!(err("sf=/x,timeout=0").contains("'timeout'"));
        assert!(err("sf=/x,timeout=99999999999999999999999").contains("'timeout'"));
        assert!(err("sf=/x,threads=1,threads=2").contains("'threads' is given twice"));
        assert!(err("sf=/x,Skill Level=1,skill level=2").contains("given twice"));
        assert!(err("sf=/x,threads").contains("not KEY=VALUE"));
        assert!(err("sf=/x,=3").contains("empty key"));
        assert!(err("sf=/x,threads=").contains("'threads': the value is empty"));
        assert!(err("sf=/x,").contains("not KEY=VALUE"));
        assert!(err("sf=/x,variants=glinski").contains("built-in engine"));
        assert!(err("sf=/x,variants=byzantine").contains("built-in engine"));
        assert!(err("sf=/x,variants=shogi").contains("unknown variant 'shogi'"));
        assert!(err("sf=/x,variants=chess+chess").contains("twice"));
        assert!(err("sf=/x,Threads=4").contains("threads=N"));
        assert!(err("sf=/x,MultiPV=4").contains("for each search"));
        assert!(err("sf=/x,uci_variant=crazyhouse").contains("UCI_Variant"));
        assert!(err("sf=/x,Foo value=1").contains("'value'"));
    }
}
