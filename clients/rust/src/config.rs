//! [`ClientConfig`]: where the server is, the API key, TLS, deadlines and retries.

use crate::error::Error;
use crate::retry::RetryPolicy;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

/// The environment variable holding the API key itself (the contract's last resort).
pub const API_KEY_ENV: &str = "ARBITER_API_KEY";

/// How to reach a server. Built with [`ClientConfig::new`] and the builder methods; nothing is
/// read from the environment unless asked ([`ClientConfig::api_key_from_env`]).
#[derive(Clone)]
pub struct ClientConfig {
    address: String,
    /// The key given, or read from a key file.
    api_key: Option<String>,
    /// The key of `ARBITER_API_KEY`: used only when none is given and no key file is named,
    /// whichever order the builder methods come in.
    env_api_key: Option<String>,
    client_id: Option<String>,
    tls_ca_file: Option<PathBuf>,
    tls_client_cert_file: Option<PathBuf>,
    tls_client_key_file: Option<PathBuf>,
    tls_server_name: Option<String>,
    policy: RetryPolicy,
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("address", &self.address)
            .field("api_key", &self.api_key_value().map(|_| "<redacted>"))
            .field("client_id", &self.client_id)
            .field("tls_ca_file", &self.tls_ca_file)
            .field("tls_client_cert_file", &self.tls_client_cert_file)
            .field("tls_client_key_file", &self.tls_client_key_file)
            .field("tls_server_name", &self.tls_server_name)
            .field("policy", &self.policy)
            .finish()
    }
}

impl ClientConfig {
    /// A server at `address`: `host:port` (plaintext unless a CA file is given), `http://…`,
    /// or `https://…` (TLS, trusting the system roots unless a CA file is given).
    pub fn new(address: impl Into<String>) -> ClientConfig {
        ClientConfig {
            address: address.into(),
            api_key: None,
            env_api_key: None,
            client_id: None,
            tls_ca_file: None,
            tls_client_cert_file: None,
            tls_client_key_file: None,
            tls_server_name: None,
            policy: RetryPolicy::default(),
        }
    }

    /// Sends `key` as `x-api-key` on every call.
    pub fn api_key(mut self, key: impl Into<String>) -> ClientConfig {
        self.api_key = Some(key.into());
        self
    }

    /// Reads the API key from `path` (its first line, trailing whitespace trimmed), unless a
    /// key was given already.
    pub fn api_key_file(mut self, path: impl AsRef<Path>) -> Result<ClientConfig, Error> {
        if self.api_key.is_none() {
            self.api_key = Some(read_key_file(path.as_ref())?);
        }
        Ok(self)
    }

    /// Takes the API key from `ARBITER_API_KEY` (the key itself), unless a key was given
    /// already (the contract's order: parameter, file, environment).
    pub fn api_key_from_env(self) -> ClientConfig {
        self.env_api_key(std::env::var(API_KEY_ENV).ok())
    }

    /// The key of the environment, `value` (trimmed; empty is none): the last resort, behind a
    /// key given or read from a file before or after.
    fn env_api_key(mut self, value: Option<String>) -> ClientConfig {
        self.env_api_key = value.map(|k| k.trim().to_owned()).filter(|k| !k.is_empty());
        self
    }

    /// Sends `id` as `x-client-id` (the analysis service's owner of batch jobs and its
    /// round-robin name; not a credential).
    pub fn client_id(mut self, id: impl Into<String>) -> ClientConfig {
        self.client_id = Some(id.into());
        self
    }

    /// Speaks TLS, trusting the CA certificates (PEM) in `path`.
    pub fn tls_ca_file(mut self, path: impl Into<PathBuf>) -> ClientConfig {
        self.tls_ca_file = Some(path.into());
        self
    }

    /// Presents this client certificate and key (PEM files) under mutual TLS.
    pub fn tls_client_identity(
        mut self,
        cert: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> ClientConfig {
        self.tls_client_cert_file = Some(cert.into());
        self.tls_client_key_file = Some(key.into());
        self
    }

    /// Checks the server's certificate against this name instead of the address's host.
    pub fn tls_server_name(mut self, name: impl Into<String>) -> ClientConfig {
        self.tls_server_name = Some(name.into());
        self
    }

    /// The deadline of each attempt of a unary call (default 10 s).
    pub fn attempt_timeout(mut self, timeout: Duration) -> ClientConfig {
        self.policy.attempt_timeout = timeout;
        self
    }

    /// The overall deadline of a call with its retries (default 30 s).
    pub fn retry_budget(mut self, budget: Duration) -> ClientConfig {
        self.policy.budget = budget;
        self
    }

    /// Replaces the whole retry policy.
    pub fn retry_policy(mut self, policy: RetryPolicy) -> ClientConfig {
        self.policy = policy;
        self
    }

    /// The address as given.
    pub fn address(&self) -> &str {
        &self.address
    }

    pub(crate) fn api_key_value(&self) -> Option<&str> {
        self.api_key.as_deref().or(self.env_api_key.as_deref())
    }

    pub(crate) fn client_id_value(&self) -> Option<&str> {
        self.client_id.as_deref()
    }

    pub(crate) fn retry_policy_value(&self) -> RetryPolicy {
        self.policy.clone()
    }

    /// The endpoint: the address as a URL, TLS when a CA file or `https://` asks for it.
    pub(crate) fn endpoint(&self) -> Result<Endpoint, Error> {
        let address = self.address.trim();
        let (scheme, rest) = if let Some(rest) = address.strip_prefix("https://") {
            ("https", rest)
        } else if let Some(rest) = address.strip_prefix("http://") {
            ("http", rest)
        } else {
            ("http", address)
        };
        if rest.is_empty() {
            return Err(Error::Config(format!("no host in the address {address:?}")));
        }
        let tls = scheme == "https" || self.tls_ca_file.is_some();
        if !tls
            && (self.tls_client_cert_file.is_some()
                || self.tls_client_key_file.is_some()
                || self.tls_server_name.is_some())
        {
            return Err(Error::Config(
                "a client certificate or server name needs TLS: give a CA file or an https:// address"
                    .into(),
            ));
        }
        let url = format!("{}://{rest}", if tls { "https" } else { "http" });
        let mut endpoint = Endpoint::from_shared(url)
            .map_err(|e| Error::Config(format!("bad address {address:?}: {e}")))?
            .connect_timeout(self.policy.attempt_timeout)
            .tcp_nodelay(true);
        if tls {
            let mut config = ClientTlsConfig::new();
            match &self.tls_ca_file {
                Some(ca) => {
                    config = config.ca_certificate(Certificate::from_pem(read(ca, "CA file")?));
                }
                None => config = config.with_native_roots(),
            }
            match (&self.tls_client_cert_file, &self.tls_client_key_file) {
                (Some(cert), Some(key)) => {
                    config = config.identity(Identity::from_pem(
                        read(cert, "client certificate")?,
                        read(key, "client key")?,
                    ));
                }
                (None, None) => {}
                _ => {
                    return Err(Error::Config(
                        "mutual TLS needs both the client certificate and its key".into(),
                    ));
                }
            }
            if let Some(name) = &self.tls_server_name {
                config = config.domain_name(name.clone());
            }
            endpoint = endpoint
                .tls_config(config)
                .map_err(|e| Error::Config(format!("TLS: {e}")))?;
        }
        Ok(endpoint)
    }
}

fn read(path: &Path, what: &str) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| Error::Config(format!("{what} {}: {e}", path.display())))
}

/// Reads an API key file: its first line, trailing whitespace trimmed.
pub fn read_key_file(path: &Path) -> Result<String, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Config(format!("API key file {}: {e}", path.display())))?;
    let key = text.lines().next().unwrap_or("").trim_end().to_owned();
    if key.is_empty() {
        return Err(Error::Config(format!(
            "API key file {} is empty",
            path.display()
        )));
    }
    Ok(key)
}

/// The API key by the contract's order: `key` when given, else the first line of `file`, else
/// `ARBITER_API_KEY`; `None` when none is set.
pub fn resolve_api_key(key: Option<&str>, file: Option<&Path>) -> Result<Option<String>, Error> {
    if let Some(k) = key {
        return Ok(Some(k.to_owned()));
    }
    if let Some(f) = file {
        return read_key_file(f).map(Some);
    }
    Ok(std::env::var(API_KEY_ENV)
        .ok()
        .map(|k| k.trim().to_owned())
        .filter(|k| !k.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn addresses_and_tls_settings_are_checked() {
        for good in [
            "127.0.0.1:50051",
            "http://localhost:1",
            "https://example.invalid",
        ] {
            assert!(ClientConfig::new(good).endpoint().is_ok(), "{good}");
        }
        assert!(ClientConfig::new("http://").endpoint().is_err());
        // A client certificate or server name without TLS is a mistake, not plaintext.
        let e = ClientConfig::new("127.0.0.1:1")
            .tls_server_name("x")
            .endpoint()
            .unwrap_err();
        assert!(e.to_string().contains("needs TLS"), "{e}");
        let e = ClientConfig::new("127.0.0.1:1")
            .tls_ca_file("/nonexistent/ca.pem")
            .endpoint()
            .unwrap_err();
        assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
    }

    #[test]
    fn a_key_file_gives_its_first_line_trimmed_and_a_given_key_wins() {
        let dir = std::env::temp_dir().join(format!("arbiter-client-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("key");
        std::fs::write(&file, "arb_0123_secret \t\nsecond line\n").unwrap();
        assert_eq!(read_key_file(&file).unwrap(), "arb_0123_secret");
        assert_eq!(
            resolve_api_key(None, Some(&file)).unwrap().as_deref(),
            Some("arb_0123_secret")
        );
        assert_eq!(
            resolve_api_key(Some("given"), Some(&file))
                .unwrap()
                .as_deref(),
            Some("given")
        );
        let config = ClientConfig::new("x:1")
            .api_key("given")
            .api_key_file(&file)
            .unwrap();
        assert_eq!(config.api_key_value(), Some("given"));
        // The environment is the last resort, whichever order the builder methods come in.
        let env_first = ClientConfig::new("x:1")
            .env_api_key(Some(" from-env \n".into()))
            .api_key_file(&file)
            .unwrap();
        assert_eq!(env_first.api_key_value(), Some("arb_0123_secret"));
        let env_first = ClientConfig::new("x:1")
            .env_api_key(Some("from-env".into()))
            .api_key("given");
        assert_eq!(env_first.api_key_value(), Some("given"));
        let env_only = ClientConfig::new("x:1").env_api_key(Some(" from-env \n".into()));
        assert_eq!(env_only.api_key_value(), Some("from-env"));
        assert!(!format!("{env_only:?}").contains("from-env"));
        let empty = ClientConfig::new("x:1").env_api_key(Some(" ".into()));
        assert_eq!(empty.api_key_value(), None);
        std::fs::write(&file, "\n").unwrap();
        assert!(read_key_file(&file).is_err());
        // The key never shows in Debug output.
        assert!(!format!("{config:?}").contains("given"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
