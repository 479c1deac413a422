//! Credentials in metadata.
//!
//! - **Bearer tokens** (seat tokens) travel in the `authorization` metadata entry as
//!   `Bearer <token>` ([`bearer`]); services compare them in constant time and never log them.
//! - **The platform token** ([`PlatformArgs`]): a shared secret given by flag or file, which
//!   becomes one API key (client `platform`, every scope) of [`crate::access`], and which
//!   matchmaking presents to the match service when it has no key of its own.

use crate::error::ApiError;
use tonic::metadata::MetadataMap;

/// The bearer token of a call: `Ok(None)` without an `authorization` entry,
/// `UNAUTHENTICATED` when the entry is not `Bearer <token>`.
pub fn bearer(metadata: &MetadataMap) -> Result<Option<&str>, ApiError> {
    let Some(value) = metadata.get("authorization") else {
        return Ok(None);
    };
    let malformed =
        || ApiError::Unauthenticated("the authorization entry must be 'Bearer <token>'".into());
    let text = value.to_str().map_err(|_| malformed())?;
    let (scheme, token) = text.split_once(' ').ok_or_else(malformed)?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(malformed());
    }
    Ok(Some(token))
}

/// The shortest platform token accepted, in bytes.
pub const MIN_TOKEN_BYTES: usize = 16;

/// Flags (with environment fallbacks) for the platform credential, shared by every binary
/// whose services have platform calls (see [`crate::access::AccessArgs`]).
#[derive(clap::Args, Clone, Default)]
pub struct PlatformArgs {
    /// A file holding the platform token: presented in x-api-key, it is the key of client
    /// "platform" with every scope (a keys-file entry is the better way: docs/security.md).
    #[arg(long, env = "ARBITER_PLATFORM_TOKEN_FILE")]
    pub platform_token_file: Option<std::path::PathBuf>,
    /// The platform token itself (prefer the environment or the file: a flag shows in process
    /// listings).
    #[arg(long, env = "ARBITER_PLATFORM_TOKEN", hide_env_values = true)]
    pub platform_token: Option<String>,
}

impl std::fmt::Debug for PlatformArgs {
    /// Never shows the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlatformArgs")
            .field("platform_token_file", &self.platform_token_file)
            .field(
                "platform_token",
                &self.platform_token.as_ref().map(|_| "***"),
            )
            .finish()
    }
}

impl PlatformArgs {
    /// The token itself, trimmed (from the file when one is named), for a service that makes
    /// platform calls on another (matchmaking creating matches). Call it from `main`.
    pub fn token(&self) -> Result<Option<String>, String> {
        Ok(match (&self.platform_token_file, &self.platform_token) {
            (Some(path), _) => Some(
                std::fs::read_to_string(path)
                    .map_err(|e| format!("--platform-token-file {}: {e}", path.display()))?
                    .trim()
                    .to_owned(),
            ),
            (None, Some(token)) => Some(token.trim().to_owned()),
            (None, None) => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens() {
        let mut m = MetadataMap::new();
        assert_eq!(bearer(&m).unwrap(), None);
        m.insert("authorization", "Bearer abc".parse().unwrap());
        assert_eq!(bearer(&m).unwrap(), Some("abc"));
        m.insert("authorization", "bearer   abc ".parse().unwrap());
        assert_eq!(bearer(&m).unwrap(), Some("abc"));
        for bad in ["Basic abc", "Bearer", "Bearer  ", "abc"] {
            m.insert("authorization", bad.parse().unwrap());
            assert!(
                matches!(bearer(&m), Err(ApiError::Unauthenticated(_))),
                "{bad}"
            );
        }
    }
}
