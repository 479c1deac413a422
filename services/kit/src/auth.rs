//! Credentials every service checks the same way.
//!
//! - **Bearer tokens** travel in the `authorization` metadata entry as `Bearer <token>`
//!   ([`bearer`]); they are compared in constant time and never logged.
//! - **The platform credential** ([`PlatformAuth`]): calls that only the platform's backend may
//!   make (creating a match, which hands out the seat tokens) need the platform's bearer token.
//!   Without a configured token, such calls are accepted from loopback clients only (the
//!   embedded default, a sidecar), and the server says so when it starts.

use crate::error::ApiError;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tonic::Request;
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

/// Who may make the platform's calls.
#[derive(Clone)]
pub struct PlatformAuth {
    /// SHA-256 of the platform token; `None`: loopback clients only.
    token: Option<[u8; 32]>,
}

impl std::fmt::Debug for PlatformAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.describe())
    }
}

/// The shortest platform token accepted, in bytes.
pub const MIN_TOKEN_BYTES: usize = 16;

impl PlatformAuth {
    /// Platform calls carry `token` as their bearer token.
    pub fn with_token(token: &str) -> Result<PlatformAuth, String> {
        let token = token.trim();
        if token.len() < MIN_TOKEN_BYTES || token.chars().any(char::is_whitespace) {
            return Err(format!(
                "the platform token must be at least {MIN_TOKEN_BYTES} bytes without spaces"
            ));
        }
        Ok(PlatformAuth {
            token: Some(Sha256::digest(token.as_bytes()).into()),
        })
    }

    /// No token configured: platform calls are accepted from loopback clients only.
    pub fn loopback_only() -> PlatformAuth {
        PlatformAuth { token: None }
    }

    /// What the server accepts, for its start-up log (never the token).
    pub fn describe(&self) -> &'static str {
        match self.token {
            Some(_) => "platform calls need the platform bearer token",
            None => {
                "no platform token configured: platform calls (creating matches) are accepted \
                 from loopback clients only"
            }
        }
    }

    /// Warns, once at start, when this server takes platform calls from loopback clients only
    /// but listens beyond loopback: behind a local proxy or sidecar every client looks like
    /// loopback, so such a deployment needs a platform token.
    pub fn warn_if_exposed(&self, listen: std::net::SocketAddr) {
        if self.token.is_none() && !listen.ip().to_canonical().is_loopback() {
            tracing::warn!(
                %listen,
                "no platform token: platform calls are taken from loopback clients only, and \
                 behind a local proxy or sidecar every client is on loopback; configure \
                 --platform-token-file for any deployment beyond one machine"
            );
        }
    }

    /// Checks that `request` is the platform's: `UNAUTHENTICATED` without a token (or, with no
    /// token configured, `PERMISSION_DENIED` from a client that is not on loopback),
    /// `PERMISSION_DENIED` with a wrong one.
    pub fn check<T>(&self, request: &Request<T>) -> Result<(), ApiError> {
        match &self.token {
            Some(expected) => match bearer(request.metadata())? {
                None => Err(ApiError::Unauthenticated(
                    "this call needs the platform's bearer token".into(),
                )),
                Some(token) => {
                    let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
                    if bool::from(presented.ct_eq(expected)) {
                        Ok(())
                    } else {
                        Err(ApiError::PermissionDenied(
                            "the bearer token is not the platform's".into(),
                        ))
                    }
                }
            },
            None => {
                let loopback = request
                    .remote_addr()
                    .is_some_and(|a| a.ip().to_canonical().is_loopback());
                if loopback {
                    Ok(())
                } else {
                    Err(ApiError::PermissionDenied(
                        "platform calls are accepted from loopback clients only: this server has \
                         no platform token configured"
                            .into(),
                    ))
                }
            }
        }
    }
}

/// Flags (with environment fallbacks) for the platform credential, shared by every binary
/// whose services have platform calls; `main` turns them into a [`PlatformAuth`].
#[derive(clap::Args, Clone, Default)]
pub struct PlatformArgs {
    /// A file holding the platform's bearer token (for creating matches). Without it (or
    /// ARBITER_PLATFORM_TOKEN) only loopback clients may make platform calls.
    #[arg(long, env = "ARBITER_PLATFORM_TOKEN_FILE")]
    pub platform_token_file: Option<std::path::PathBuf>,
    /// The platform's bearer token itself (prefer the environment or the file: a flag shows in
    /// process listings).
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

    /// Reads the token (from the file when one is named). Call it from `main`.
    pub fn load(&self) -> Result<PlatformAuth, String> {
        match self.token()? {
            Some(t) => PlatformAuth::with_token(&t),
            None => Ok(PlatformAuth::loopback_only()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;
    use tonic::transport::server::TcpConnectInfo;

    fn request(token: Option<&str>, peer: &str) -> Request<()> {
        let mut r = Request::new(());
        if let Some(t) = token {
            r.metadata_mut().insert("authorization", t.parse().unwrap());
        }
        r.extensions_mut().insert(TcpConnectInfo {
            local_addr: None,
            remote_addr: Some(peer.parse::<SocketAddr>().unwrap()),
        });
        r
    }

    #[test]
    fn platform_token() {
        let auth = PlatformAuth::with_token("s3cret-platform-token").unwrap();
        let ok = request(Some("Bearer s3cret-platform-token"), "10.0.0.1:5000");
        assert!(auth.check(&ok).is_ok());
        let wrong = request(Some("Bearer not-the-platform-token"), "127.0.0.1:5000");
        assert!(matches!(
            auth.check(&wrong),
            Err(ApiError::PermissionDenied(_))
        ));
        let none = request(None, "127.0.0.1:5000");
        assert!(matches!(
            auth.check(&none),
            Err(ApiError::Unauthenticated(_))
        ));
        let malformed = request(Some("Basic abc"), "127.0.0.1:5000");
        assert!(matches!(
            auth.check(&malformed),
            Err(ApiError::Unauthenticated(_))
        ));
        assert!(PlatformAuth::with_token("short").is_err());
    }

    #[test]
    fn loopback_only_without_a_token() {
        let auth = PlatformAuth::loopback_only();
        assert!(auth.check(&request(None, "127.0.0.1:5000")).is_ok());
        assert!(auth.check(&request(None, "[::1]:5000")).is_ok());
        assert!(
            auth.check(&request(None, "[::ffff:127.0.0.1]:5000"))
                .is_ok()
        );
        assert!(matches!(
            auth.check(&request(None, "192.168.1.2:5000")),
            Err(ApiError::PermissionDenied(_))
        ));
        assert!(auth.check(&Request::new(())).is_err(), "unknown peer");
    }
}
