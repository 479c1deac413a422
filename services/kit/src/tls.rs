//! TLS and mutual TLS, for every server and for the services' own gRPC clients, on rustls with
//! the **ring** crypto provider (the one tonic's `tls-ring` feature uses; no aws-lc).
//!
//! # Servers
//!
//! A server's identity is three PEM files ([`ServerTlsFiles`]): its certificate chain, its
//! private key and, for mutual TLS, the CA that client certificates must chain to (without it, no
//! client certificate is asked for). [`ServerTls::load`] reads them into a
//! [`rustls::ServerConfig`] offering ALPN `h2`; a bad file is an error at start.
//!
//! tonic's own `ServerTlsConfig` cannot change its certificate while serving, so a server takes
//! its connections from a [`TlsIncoming`] instead: it accepts TCP connections (TCP_NODELAY),
//! runs each TLS handshake in its own task under a timeout ([`HANDSHAKE_TIMEOUT`]), so that a
//! slow or broken client never holds up the others, and yields only completed
//! [`tokio_rustls::server::TlsStream`]s. tonic's `Connected` implementation for those keeps
//! `Request::remote_addr()` and `Request::peer_certs()` working in handlers.
//!
//! The same task re-reads the three files every reload interval, comparing their **contents**
//! (Kubernetes replaces a mounted secret by swapping a symlink, which a modification time does
//! not show): when any changed, the configuration is rebuilt and swapped in for new connections,
//! and `info` is logged; open connections keep their session and their streams. A new file that
//! cannot be used (unreadable, not PEM, a key that does not match the certificate) is logged at
//! `error` once per change and the previous configuration stays in use. Failed handshakes are
//! logged at `debug` (`RUST_LOG=arbiter_kit::tls=debug`), with the peer's address only.
//!
//! # Clients
//!
//! [`ClientTls`] (the CA that the server's certificate must chain to, and optionally a client
//! certificate and key for mutual TLS) becomes a [`tonic::transport::ClientTlsConfig`];
//! [`ClientTlsArgs`] are the matching flags, for a binary to flatten. A CA file is required: the
//! images carry no system trust store, and services trust the platform's own CA only.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use arc_swap::ArcSwap;
use rustls::RootCertStore;
use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;

/// How long a client may take to complete its TLS handshake before its connection is closed.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// TLS handshakes in progress at once; past this, accepting waits for one to finish.
const MAX_PENDING_HANDSHAKES: usize = 1024;

/// The ring crypto provider, built once and shared by every configuration made here.
fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    Arc::clone(PROVIDER.get_or_init(|| Arc::new(rustls::crypto::ring::default_provider())))
}

/// Installs ring as the process's default rustls crypto provider, so that any library building
/// a rustls configuration without naming a provider (tonic's client, the Redis client) uses the
/// same one. Idempotent: a provider already installed (by an earlier call or by another library)
/// is left in place. `main` calls it first.
pub fn install_crypto_provider() {
    if CryptoProvider::get_default().is_none() {
        // Losing a race with another installer is fine: a provider is installed either way.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// A TLS file or configuration that cannot be used; the message names the flag, the file and
/// what is wrong with it (never any key material). Its `Debug` form is the message too, since
/// `main` returning an error prints that.
#[derive(Clone, PartialEq, Eq)]
pub struct TlsError {
    message: String,
}

impl TlsError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> TlsError {
        TlsError {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TlsError {}

/// The files a server's TLS identity is read from (and re-read from, while it serves).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerTlsFiles {
    /// The server's certificate chain, PEM, leaf first (`--tls-cert-file`).
    pub cert_file: PathBuf,
    /// The server certificate's private key, PEM: PKCS#8, PKCS#1 or SEC1 (`--tls-key-file`).
    pub key_file: PathBuf,
    /// For mutual TLS: the CA certificates (PEM) that every client's certificate must chain to
    /// (`--tls-client-ca-file`). Without it, clients are not asked for a certificate.
    pub client_ca_file: Option<PathBuf>,
}

impl ServerTlsFiles {
    /// Plain TLS with this certificate chain and key.
    pub fn new(cert_file: impl Into<PathBuf>, key_file: impl Into<PathBuf>) -> ServerTlsFiles {
        ServerTlsFiles {
            cert_file: cert_file.into(),
            key_file: key_file.into(),
            client_ca_file: None,
        }
    }

    /// Mutual TLS: clients must present a certificate chaining to the CA in `client_ca_file`.
    pub fn with_client_ca(mut self, client_ca_file: impl Into<PathBuf>) -> ServerTlsFiles {
        self.client_ca_file = Some(client_ca_file.into());
        self
    }

    /// The files as read now: the contents, or why one cannot be read.
    fn read(&self) -> Contents {
        Contents {
            cert: read_file(&self.cert_file),
            key: read_file(&self.key_file),
            client_ca: self.client_ca_file.as_deref().map(read_file),
        }
    }
}

/// A file's bytes, or the reason it cannot be read.
type FileRead = Result<Vec<u8>, String>;

fn read_file(path: &Path) -> FileRead {
    std::fs::read(path).map_err(|e| e.to_string())
}

/// The contents of a server's TLS files at one moment: what a reload compares.
#[derive(Clone, PartialEq, Eq)]
struct Contents {
    cert: FileRead,
    key: FileRead,
    client_ca: Option<FileRead>,
}

/// The bytes of a file read for `what` (a flag and its meaning), or a precise error.
fn contents<'a>(read: &'a FileRead, what: &str, path: &Path) -> Result<&'a [u8], TlsError> {
    read.as_deref().map_err(|e| {
        TlsError::new(format!(
            "{what} {}: cannot read the file: {e}",
            path.display()
        ))
    })
}

/// Every certificate in a PEM text, in order: at least one, each a `CERTIFICATE` block.
fn parse_certs(
    pem: &[u8],
    what: &str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            TlsError::new(format!(
                "{what} {}: not a valid PEM certificate file: {e}",
                path.display()
            ))
        })?;
    if certs.is_empty() {
        return Err(TlsError::new(format!(
            "{what} {}: no PEM certificate in the file (expected a \"-----BEGIN CERTIFICATE-----\" block)",
            path.display()
        )));
    }
    Ok(certs)
}

/// The one private key in a PEM text (PKCS#8, PKCS#1 or SEC1).
fn parse_key(pem: &[u8], what: &str, path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_slice(pem).map_err(|e| {
        let why = match e {
            rustls::pki_types::pem::Error::NoItemsFound => {
                "no PEM private key in the file (expected a \"-----BEGIN PRIVATE KEY-----\", \
                 \"RSA PRIVATE KEY\" or \"EC PRIVATE KEY\" block)"
                    .to_owned()
            }
            other => format!("not a valid PEM private key file: {other}"),
        };
        TlsError::new(format!("{what} {}: {why}", path.display()))
    })
}

/// A root store holding every certificate of a PEM CA file.
fn parse_roots(pem: &[u8], what: &str, path: &Path) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in parse_certs(pem, what, path)? {
        roots.add(cert).map_err(|e| {
            TlsError::new(format!(
                "{what} {}: not a usable CA certificate: {e}",
                path.display()
            ))
        })?;
    }
    Ok(roots)
}

const CERT: &str = "TLS certificate chain (--tls-cert-file)";
const KEY: &str = "TLS private key (--tls-key-file)";
const CLIENT_CA: &str = "TLS client CA (--tls-client-ca-file)";

/// The server configuration these file contents make.
fn server_config(files: &ServerTlsFiles, read: &Contents) -> Result<ServerConfig, TlsError> {
    let chain = parse_certs(
        contents(&read.cert, CERT, &files.cert_file)?,
        CERT,
        &files.cert_file,
    )?;
    let key = parse_key(
        contents(&read.key, KEY, &files.key_file)?,
        KEY,
        &files.key_file,
    )?;
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::new(format!("TLS: the ring provider cannot be used: {e}")))?;
    let builder = match (&files.client_ca_file, &read.client_ca) {
        (Some(path), Some(ca)) => {
            let roots = parse_roots(contents(ca, CLIENT_CA, path)?, CLIENT_CA, path)?;
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .map_err(|e| TlsError::new(format!("{CLIENT_CA} {}: {e}", path.display())))?;
            builder.with_client_cert_verifier(verifier)
        }
        _ => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(chain, key).map_err(|e| {
        TlsError::new(format!(
            "{CERT} {} with {KEY} {}: {e}",
            files.cert_file.display(),
            files.key_file.display()
        ))
    })?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(config)
}

/// A server's TLS configuration that follows its files: cheap to clone (the clones share the
/// current configuration), read by every new connection, replaced by [`ServerTls::reload`].
#[derive(Clone)]
pub struct ServerTls {
    inner: Arc<Inner>,
}

struct Inner {
    files: ServerTlsFiles,
    current: ArcSwap<ServerConfig>,
    /// The contents last looked at, good or bad: a reload acts only when they change, so that a
    /// bad file is reported once, not at every poll.
    seen: Mutex<Contents>,
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTls")
            .field("files", &self.inner.files)
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// Reads the files and builds the configuration.
    ///
    /// # Errors
    /// A file that cannot be read, holds no PEM certificate or key, or a key that does not
    /// match the certificate: the message names the flag and the file.
    pub fn load(files: ServerTlsFiles) -> Result<ServerTls, TlsError> {
        let read = files.read();
        let config = server_config(&files, &read)?;
        Ok(ServerTls {
            inner: Arc::new(Inner {
                files,
                current: ArcSwap::from_pointee(config),
                seen: Mutex::new(read),
            }),
        })
    }

    /// The files this configuration is read from.
    pub fn files(&self) -> &ServerTlsFiles {
        &self.inner.files
    }

    /// Whether clients must present a certificate (mutual TLS).
    pub fn is_mutual(&self) -> bool {
        self.inner.files.client_ca_file.is_some()
    }

    /// The configuration new connections get now.
    pub fn current(&self) -> Arc<ServerConfig> {
        self.inner.current.load_full()
    }

    /// Re-reads the files; if their contents changed since last looked at, builds the new
    /// configuration and swaps it in for new connections. `Ok(true)`: swapped; `Ok(false)`:
    /// nothing changed.
    ///
    /// # Errors
    /// The files changed but cannot be used (see [`ServerTls::load`]); the previous
    /// configuration stays in use, and the same contents are not reported again.
    pub fn reload(&self) -> Result<bool, TlsError> {
        let read = self.inner.files.read();
        {
            let mut seen = self
                .inner
                .seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if *seen == read {
                return Ok(false);
            }
            seen.clone_from(&read);
        }
        let config = server_config(&self.inner.files, &read)?;
        self.inner.current.store(Arc::new(config));
        Ok(true)
    }

    /// [`ServerTls::reload`], logged: `info` when a new configuration is in use, `error` when
    /// the new files cannot be used.
    pub fn reload_and_log(&self) {
        match self.reload() {
            Ok(false) => {}
            Ok(true) => tracing::info!(
                cert = %self.inner.files.cert_file.display(),
                "TLS files changed: new connections use the new certificate"
            ),
            Err(e) => tracing::error!(
                error = %e,
                "TLS files changed but cannot be used: still serving the previous certificate"
            ),
        }
    }

    /// Serves TLS on `listener`: the connections, once their handshake completes, for tonic's
    /// `serve_with_incoming*`. The files are re-read every `reload_interval` while the stream
    /// lives.
    pub fn incoming(&self, listener: TcpListener, reload_interval: Duration) -> TlsIncoming {
        let (tx, rx) = mpsc::channel(64);
        let task = tokio::spawn(accept_loop(
            listener,
            self.clone(),
            reload_interval.max(Duration::from_millis(10)),
            tx,
        ));
        TlsIncoming {
            connections: ReceiverStream::new(rx),
            task,
        }
    }
}

/// The TLS connections of a listener, handshakes completed (see [`ServerTls::incoming`]).
/// Dropping it stops accepting (and reloading) and closes the listener.
pub struct TlsIncoming {
    connections: ReceiverStream<Result<TlsStream<TcpStream>, io::Error>>,
    task: JoinHandle<()>,
}

impl fmt::Debug for TlsIncoming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsIncoming").finish_non_exhaustive()
    }
}

impl Stream for TlsIncoming {
    type Item = Result<TlsStream<TcpStream>, io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.connections).poll_next(cx)
    }
}

impl Drop for TlsIncoming {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Accepts connections and hands each to its own handshake task; reloads the files between.
async fn accept_loop(
    listener: TcpListener,
    tls: ServerTls,
    reload_interval: Duration,
    tx: mpsc::Sender<Result<TlsStream<TcpStream>, io::Error>>,
) {
    let handshakes = Arc::new(Semaphore::new(MAX_PENDING_HANDSHAKES));
    let mut reload = tokio::time::interval_at(
        tokio::time::Instant::now() + reload_interval,
        reload_interval,
    );
    reload.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = tx.closed() => return,
            _ = reload.tick() => {
                // File reads on the blocking pool: a slow volume never holds an async worker.
                let tls = tls.clone();
                let _ = tokio::task::spawn_blocking(move || tls.reload_and_log()).await;
            }
            accepted = listener.accept() => {
                let (tcp, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of descriptors and the like: do not spin.
                        tracing::warn!(error = %e, "cannot accept a connection");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let Ok(permit) = Arc::clone(&handshakes).acquire_owned().await else {
                    return;
                };
                // No Nagle: small unary replies must not wait for the peer's delayed ACK.
                let _ = tcp.set_nodelay(true);
                let acceptor = TlsAcceptor::from(tls.current());
                let tx = tx.clone();
                tokio::spawn(async move {
                    let shake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await;
                    drop(permit);
                    match shake {
                        Ok(Ok(stream)) => {
                            let _ = tx.send(Ok(stream)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(
                            %peer,
                            "TLS handshake not completed within {} s: closed",
                            HANDSHAKE_TIMEOUT.as_secs()
                        ),
                    }
                });
            }
        }
    }
}

/// How a gRPC client connects over TLS: the CA the server's certificate must chain to, and for
/// mutual TLS the client's own certificate and key. Use an `https://` address with the
/// [`tonic::transport::ClientTlsConfig`] it makes ([`ClientTls::config`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientTls {
    /// The CA certificates (PEM) that the server's certificate must chain to.
    pub ca_file: PathBuf,
    /// The client's certificate chain (PEM), for mutual TLS; with `key_file`.
    pub cert_file: Option<PathBuf>,
    /// The client certificate's private key (PEM), for mutual TLS; with `cert_file`.
    pub key_file: Option<PathBuf>,
    /// The name the server's certificate must carry (default: the host of the address
    /// connected to, a DNS name or an IP address).
    pub server_name: Option<String>,
}

const CLIENT_CERT: &str = "TLS client certificate (--tls-client-cert-file)";
const CLIENT_KEY: &str = "TLS client key (--tls-client-key-file)";
const CA: &str = "TLS CA (--tls-ca-file)";

impl ClientTls {
    /// TLS trusting the CA in `ca_file`, without a client certificate.
    pub fn new(ca_file: impl Into<PathBuf>) -> ClientTls {
        ClientTls {
            ca_file: ca_file.into(),
            cert_file: None,
            key_file: None,
            server_name: None,
        }
    }

    /// Mutual TLS: presents this certificate chain, with its key.
    pub fn with_identity(
        mut self,
        cert_file: impl Into<PathBuf>,
        key_file: impl Into<PathBuf>,
    ) -> ClientTls {
        self.cert_file = Some(cert_file.into());
        self.key_file = Some(key_file.into());
        self
    }

    /// Checks the server's certificate against `name` rather than the address's host.
    pub fn with_server_name(mut self, name: impl Into<String>) -> ClientTls {
        self.server_name = Some(name.into());
        self
    }

    /// Reads the files into tonic's client configuration (ALPN `h2`; the ring provider, or the
    /// process default if one is installed).
    ///
    /// # Errors
    /// A file that cannot be read or holds no PEM certificate or key, a certificate without
    /// its key (or the reverse): the message names the flag and the file.
    pub fn config(&self) -> Result<tonic::transport::ClientTlsConfig, TlsError> {
        let ca = contents(&read_file(&self.ca_file), CA, &self.ca_file)?.to_vec();
        parse_roots(&ca, CA, &self.ca_file)?;
        let mut config = tonic::transport::ClientTlsConfig::new()
            .ca_certificate(tonic::transport::Certificate::from_pem(ca));
        match (&self.cert_file, &self.key_file) {
            (Some(cert_file), Some(key_file)) => {
                let cert = contents(&read_file(cert_file), CLIENT_CERT, cert_file)?.to_vec();
                parse_certs(&cert, CLIENT_CERT, cert_file)?;
                let key = contents(&read_file(key_file), CLIENT_KEY, key_file)?.to_vec();
                parse_key(&key, CLIENT_KEY, key_file)?;
                config = config.identity(tonic::transport::Identity::from_pem(cert, key));
            }
            (Some(_), None) => {
                return Err(TlsError::new(
                    "--tls-client-cert-file is given without --tls-client-key-file",
                ));
            }
            (None, Some(_)) => {
                return Err(TlsError::new(
                    "--tls-client-key-file is given without --tls-client-cert-file",
                ));
            }
            (None, None) => {}
        }
        if let Some(name) = &self.server_name {
            config = config.domain_name(name.clone());
        }
        Ok(config)
    }
}

/// Client TLS flags (each with an environment fallback), for a binary's gRPC clients and its
/// `health-check` probe to flatten. Without `--tls-ca-file` the client speaks plaintext.
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientTlsArgs {
    /// Connect with TLS, trusting the CA certificates (PEM) in this file.
    #[arg(long, env = "ARBITER_TLS_CA_FILE")]
    pub tls_ca_file: Option<PathBuf>,
    /// For mutual TLS: this client certificate chain (PEM); needs --tls-client-key-file.
    #[arg(long, env = "ARBITER_TLS_CLIENT_CERT_FILE")]
    pub tls_client_cert_file: Option<PathBuf>,
    /// For mutual TLS: the client certificate's private key (PEM).
    #[arg(long, env = "ARBITER_TLS_CLIENT_KEY_FILE")]
    pub tls_client_key_file: Option<PathBuf>,
    /// The name the server's certificate must carry (default: the host connected to).
    #[arg(long, env = "ARBITER_TLS_SERVER_NAME")]
    pub tls_server_name: Option<String>,
}

impl ClientTlsArgs {
    /// The client TLS these flags describe: `None` for plaintext (no CA file).
    ///
    /// # Errors
    /// A client certificate without its key (or the reverse), or either without a CA file.
    pub fn client_tls(&self) -> Result<Option<ClientTls>, TlsError> {
        let identity = match (&self.tls_client_cert_file, &self.tls_client_key_file) {
            (Some(cert), Some(key)) => Some((cert.clone(), key.clone())),
            (Some(_), None) => {
                return Err(TlsError::new(
                    "--tls-client-cert-file is given without --tls-client-key-file",
                ));
            }
            (None, Some(_)) => {
                return Err(TlsError::new(
                    "--tls-client-key-file is given without --tls-client-cert-file",
                ));
            }
            (None, None) => None,
        };
        let Some(ca) = &self.tls_ca_file else {
            if identity.is_some() {
                return Err(TlsError::new(
                    "--tls-client-cert-file needs --tls-ca-file (the CA the server's certificate \
                     must chain to)",
                ));
            }
            if self.tls_server_name.is_some() {
                return Err(TlsError::new("--tls-server-name needs --tls-ca-file"));
            }
            return Ok(None);
        };
        let mut tls = ClientTls::new(ca.clone());
        if let Some((cert, key)) = identity {
            tls = tls.with_identity(cert, key);
        }
        if let Some(name) = &self.tls_server_name {
            tls = tls.with_server_name(name.clone());
        }
        Ok(Some(tls))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Pki {
        dir: tempfile::TempDir,
    }

    impl Pki {
        fn new() -> Pki {
            Pki {
                dir: tempfile::tempdir().unwrap(),
            }
        }

        fn path(&self, name: &str) -> PathBuf {
            self.dir.path().join(name)
        }

        fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
            let path = self.path(name);
            std::fs::write(&path, contents).unwrap();
            path
        }

        /// A CA and a server certificate for 127.0.0.1 it signs: (cert, key) paths.
        fn server(&self, prefix: &str) -> ServerTlsFiles {
            let ca_key = rcgen::KeyPair::generate().unwrap();
            let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            let issuer = rcgen::CertifiedIssuer::self_signed(ca, ca_key).unwrap();
            let key = rcgen::KeyPair::generate().unwrap();
            let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])
                .unwrap()
                .signed_by(&key, &issuer)
                .unwrap();
            self.write(&format!("{prefix}-ca.pem"), issuer.pem());
            ServerTlsFiles::new(
                self.write(&format!("{prefix}-cert.pem"), cert.pem()),
                self.write(&format!("{prefix}-key.pem"), key.serialize_pem()),
            )
        }
    }

    #[test]
    fn loads_a_good_identity_with_h2() {
        let pki = Pki::new();
        let files = pki.server("a");
        let tls = ServerTls::load(files.clone()).unwrap();
        assert_eq!(tls.current().alpn_protocols, vec![b"h2".to_vec()]);
        assert!(!tls.is_mutual());
        let mutual = ServerTls::load(files.with_client_ca(pki.path("a-ca.pem"))).unwrap();
        assert!(mutual.is_mutual());
    }

    #[test]
    fn a_garbage_pem_is_a_precise_error() {
        let pki = Pki::new();
        let files = pki.server("a");
        let garbage = pki.write("garbage.pem", "this is not a certificate\n");
        let e = ServerTls::load(ServerTlsFiles::new(&garbage, &files.key_file)).unwrap_err();
        assert!(e.message().contains("--tls-cert-file"), "{e}");
        assert!(e.message().contains("garbage.pem"), "{e}");
        assert!(e.message().contains("no PEM certificate"), "{e}");
        let e = ServerTls::load(ServerTlsFiles::new(&files.cert_file, &garbage)).unwrap_err();
        assert!(e.message().contains("--tls-key-file"), "{e}");
        assert!(e.message().contains("no PEM private key"), "{e}");
        // A broken block inside the armour.
        let broken = pki.write(
            "broken.pem",
            "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
        );
        let e = ServerTls::load(ServerTlsFiles::new(&broken, &files.key_file)).unwrap_err();
        assert!(e.message().contains("--tls-cert-file"), "{e}");
        let missing = pki.path("missing.pem");
        let e = ServerTls::load(files.clone().with_client_ca(&missing)).unwrap_err();
        assert!(e.message().contains("--tls-client-ca-file"), "{e}");
        assert!(e.message().contains("cannot read"), "{e}");
        // A key that is not the certificate's.
        let other = pki.server("b");
        let e =
            ServerTls::load(ServerTlsFiles::new(&files.cert_file, &other.key_file)).unwrap_err();
        assert!(e.message().contains("--tls-key-file"), "{e}");
    }

    #[test]
    fn a_bad_file_at_reload_keeps_the_old_config() {
        let pki = Pki::new();
        let files = pki.server("a");
        let tls = ServerTls::load(files.clone()).unwrap();
        let before = tls.current();
        assert_eq!(tls.reload(), Ok(false));
        std::fs::write(&files.cert_file, "garbage").unwrap();
        let e = tls.reload().unwrap_err();
        assert!(e.message().contains("--tls-cert-file"), "{e}");
        assert!(Arc::ptr_eq(&before, &tls.current()));
        // The same bad contents are not reported again.
        assert_eq!(tls.reload(), Ok(false));
        assert!(Arc::ptr_eq(&before, &tls.current()));
        // Good files again: swapped.
        let b = pki.server("b");
        std::fs::copy(&b.cert_file, &files.cert_file).unwrap();
        std::fs::copy(&b.key_file, &files.key_file).unwrap();
        assert_eq!(tls.reload(), Ok(true));
        assert!(!Arc::ptr_eq(&before, &tls.current()));
    }

    #[test]
    fn client_flags_pair_up() {
        let none = ClientTlsArgs::default();
        assert_eq!(none.client_tls(), Ok(None));
        let cert_only = ClientTlsArgs {
            tls_ca_file: Some("ca.pem".into()),
            tls_client_cert_file: Some("c.pem".into()),
            ..ClientTlsArgs::default()
        };
        let e = cert_only.client_tls().unwrap_err();
        assert!(e.message().contains("--tls-client-key-file"), "{e}");
        let no_ca = ClientTlsArgs {
            tls_client_cert_file: Some("c.pem".into()),
            tls_client_key_file: Some("k.pem".into()),
            ..ClientTlsArgs::default()
        };
        let e = no_ca.client_tls().unwrap_err();
        assert!(e.message().contains("--tls-ca-file"), "{e}");
        let full = ClientTlsArgs {
            tls_ca_file: Some("ca.pem".into()),
            ..no_ca
        };
        assert_eq!(
            full.client_tls(),
            Ok(Some(
                ClientTls::new("ca.pem").with_identity("c.pem", "k.pem")
            ))
        );
    }

    #[test]
    fn client_config_reads_and_checks_its_files() {
        let pki = Pki::new();
        let files = pki.server("a");
        let ca = pki.path("a-ca.pem");
        assert!(ClientTls::new(&ca).config().is_ok());
        assert!(
            ClientTls::new(&ca)
                .with_identity(&files.cert_file, &files.key_file)
                .config()
                .is_ok()
        );
        let garbage = pki.write("garbage.pem", "nope");
        let e = ClientTls::new(&garbage).config().unwrap_err();
        assert!(e.message().contains("--tls-ca-file"), "{e}");
        let e = ClientTls::new(&ca)
            .with_identity(&files.cert_file, &garbage)
            .config()
            .unwrap_err();
        assert!(e.message().contains("--tls-client-key-file"), "{e}");
    }

    #[test]
    fn installing_the_provider_is_idempotent() {
        install_crypto_provider();
        install_crypto_provider();
        assert!(CryptoProvider::get_default().is_some());
    }
}
