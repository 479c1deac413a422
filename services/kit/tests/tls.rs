//! TLS and mutual TLS through `Host::serve`: certificates made with rcgen in a temporary
//! directory, servers on 127.0.0.1 port 0. Timeouts here only bound a hang; nothing asserts
//! how long anything takes.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use arbiter_kit::tls::{ClientTls, ServerTlsFiles};
use arbiter_kit::{Host, ServeArgs, ServeConfig, ServeError};
use clap::Parser;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tonic::codegen::http;
use tonic::server::NamedService;
use tonic::transport::{Channel, Endpoint};
use tonic_health::ServingStatus;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus as Status;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::server::HealthReporter;

/// The bound on anything that could hang.
const BOUND: Duration = Duration::from_secs(10);

async fn bounded<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: no outcome within {BOUND:?}"))
}

/// A certificate authority of its own, writing its PEM files into `dir`.
struct Ca {
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
    dir: PathBuf,
    name: String,
}

impl Ca {
    fn new(dir: &Path, name: &str) -> Ca {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, format!("{name} CA"));
        let issuer =
            rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap())
                .unwrap();
        let ca = Ca {
            issuer,
            dir: dir.to_owned(),
            name: name.to_owned(),
        };
        std::fs::write(ca.ca_file(), ca.issuer.pem()).unwrap();
        ca
    }

    fn ca_file(&self) -> PathBuf {
        self.dir.join(format!("{}-ca.pem", self.name))
    }

    /// A certificate for `names` (IP addresses or DNS names) and its key, as PEM text.
    fn issue(&self, names: &[&str]) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let cert = rcgen::CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &self.issuer)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    }

    /// A certificate and key for `names`, written as `<file>-cert.pem` and `<file>-key.pem`.
    fn write(&self, names: &[&str], file: &str) -> (PathBuf, PathBuf) {
        let (cert, key) = self.issue(names);
        let cert_file = self.dir.join(format!("{file}-cert.pem"));
        let key_file = self.dir.join(format!("{file}-key.pem"));
        std::fs::write(&cert_file, cert).unwrap();
        std::fs::write(&key_file, key).unwrap();
        (cert_file, key_file)
    }

    /// The server's files: a certificate for 127.0.0.1 (and localhost).
    fn server(&self) -> ServerTlsFiles {
        let (cert, key) = self.write(
            &["127.0.0.1", "localhost"],
            &format!("{}-server", self.name),
        );
        ServerTlsFiles::new(cert, key)
    }

    /// A client certificate and key.
    fn client(&self) -> (PathBuf, PathBuf) {
        self.write(&["client.test"], &format!("{}-client", self.name))
    }
}

/// A service that answers every call with the connection information its handler sees, as a
/// status message: `remote=<addr> certs=<n>` (`FAILED_PRECONDITION`, so that no message codec
/// is needed).
#[derive(Clone, Debug)]
struct Peek;

impl NamedService for Peek {
    const NAME: &'static str = "arbiter.test.v1.Peek";
}

impl tower::Service<http::Request<tonic::body::Body>> for Peek {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Self::Response, Infallible>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Infallible>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        let req = tonic::Request::from_http(req);
        let remote = req
            .remote_addr()
            .map_or("none".to_owned(), |a| a.to_string());
        let certs = req.peer_certs().map_or(0, |c| c.len());
        std::future::ready(Ok(tonic::Status::failed_precondition(format!(
            "remote={remote} certs={certs}"
        ))
        .into_http()))
    }
}

/// A server running through `Host::serve`.
struct Server {
    addr: SocketAddr,
    health_addr: Option<SocketAddr>,
    health: HealthReporter,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: JoinHandle<Result<(), ServeError>>,
}

impl Server {
    async fn start(config: ServeConfig, health_port: bool) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut host = Host::new(config);
        host.add_service(Peek);
        let mut health_addr = None;
        if health_port {
            let health_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            health_addr = Some(health_listener.local_addr().unwrap());
            host = host.with_health_listener(health_listener);
        }
        let health = host.health();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(host.serve(listener, async {
            let _ = stopped.await;
        }));
        Server {
            addr,
            health_addr,
            health,
            stop: Some(stop),
            task,
        }
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        bounded("stopping", &mut self.task).await.unwrap().unwrap();
    }
}

fn tls_config(files: ServerTlsFiles) -> ServeConfig {
    ServeConfig {
        tls_cert_file: Some(files.cert_file),
        tls_key_file: Some(files.key_file),
        tls_client_ca_file: files.client_ca_file,
        tls_reload: Duration::from_millis(100),
        ..ServeConfig::default()
    }
}

/// A TLS channel to `addr` (connected at once): the error, with its sources, if none.
async fn connect(addr: SocketAddr, tls: &ClientTls) -> Result<Channel, String> {
    let endpoint = Endpoint::from_shared(format!("https://{addr}"))
        .unwrap()
        .connect_timeout(BOUND)
        .tls_config(tls.config().unwrap())
        .unwrap();
    bounded("connecting", endpoint.connect())
        .await
        .map_err(|e| with_sources(&e))
}

fn with_sources(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Asks the whole process's health on a new TLS connection: `Ok(status)` or why not.
async fn check(addr: SocketAddr, tls: &ClientTls) -> Result<Status, String> {
    let channel = connect(addr, tls).await?;
    check_on(channel).await
}

async fn check_on(channel: Channel) -> Result<Status, String> {
    let reply = bounded(
        "health check",
        HealthClient::new(channel).check(HealthCheckRequest {
            service: String::new(),
        }),
    )
    .await
    .map_err(|s| format!("{:?}: {}", s.code(), s.message()))?;
    Ok(reply.into_inner().status())
}

/// Polls until the server answers (it serves from its first poll; this only avoids a race
/// with the spawned task's start).
async fn until_serving(addr: SocketAddr, tls: &ClientTls) {
    bounded("the server starting", async {
        loop {
            if check(addr, tls).await == Ok(Status::Serving) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn a_tls_server_answers_a_health_check_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "a");
    let server = Server::start(tls_config(ca.server()), false).await;
    let tls = ClientTls::new(ca.ca_file());
    until_serving(server.addr, &tls).await;
    assert_eq!(check(server.addr, &tls).await, Ok(Status::Serving));
    // By name too, and through the probe's own function.
    let by_name = ClientTls::new(ca.ca_file()).with_server_name("localhost");
    assert_eq!(check(server.addr, &by_name).await, Ok(Status::Serving));
    bounded(
        "probe",
        arbiter_kit::probe::check_with(server.addr, "", BOUND, Some(&tls)),
    )
    .await
    .unwrap();
    // A handler sees the client's address; no client certificate under plain TLS.
    let channel = connect(server.addr, &tls).await.unwrap();
    let peek = peek(channel).await;
    assert!(peek.starts_with("remote=127.0.0.1:"), "{peek}");
    assert!(peek.ends_with("certs=0"), "{peek}");
    server.stop().await;
}

#[tokio::test]
async fn plaintext_to_the_tls_port_fails() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "a");
    let server = Server::start(tls_config(ca.server()), false).await;
    until_serving(server.addr, &ClientTls::new(ca.ca_file())).await;
    let e = bounded(
        "plaintext probe",
        arbiter_kit::probe::check(server.addr, "", Duration::from_secs(5)),
    )
    .await
    .unwrap_err();
    assert!(!e.is_empty());
    // A client trusting another CA is refused too.
    let other = Ca::new(dir.path(), "other");
    let e = check(server.addr, &ClientTls::new(other.ca_file()))
        .await
        .unwrap_err();
    assert!(!e.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn mutual_tls_serves_only_clients_with_a_certificate_from_its_ca() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "a");
    let clients = Ca::new(dir.path(), "clients");
    let stranger = Ca::new(dir.path(), "stranger");
    let files = ca.server().with_client_ca(clients.ca_file());
    let server = Server::start(tls_config(files), false).await;
    let (cert, key) = clients.client();
    let good = ClientTls::new(ca.ca_file()).with_identity(&cert, &key);
    until_serving(server.addr, &good).await;

    // No client certificate: refused (at the handshake, or at the first call under TLS 1.3).
    let anonymous = ClientTls::new(ca.ca_file());
    assert!(check(server.addr, &anonymous).await.is_err());
    // A certificate from another CA: refused.
    let (cert_x, key_x) = stranger.client();
    let foreign = ClientTls::new(ca.ca_file()).with_identity(&cert_x, &key_x);
    assert!(check(server.addr, &foreign).await.is_err());
    // The right certificate: served, and the handler sees it.
    assert_eq!(check(server.addr, &good).await, Ok(Status::Serving));
    let peek = peek(connect(server.addr, &good).await.unwrap()).await;
    assert!(peek.starts_with("remote=127.0.0.1:"), "{peek}");
    assert!(peek.ends_with("certs=1"), "{peek}");
    server.stop().await;
}

#[tokio::test]
async fn a_new_certificate_is_used_for_new_connections_and_open_streams_stay() {
    let dir = tempfile::tempdir().unwrap();
    let old_ca = Ca::new(dir.path(), "old");
    let files = old_ca.server();
    let server = Server::start(tls_config(files.clone()), false).await;
    let old = ClientTls::new(old_ca.ca_file());
    until_serving(server.addr, &old).await;

    // A Watch stream on a first connection.
    let watched = "arbiter.test.v1.Watched";
    server
        .health
        .set_service_status(watched, ServingStatus::Serving)
        .await;
    let mut client = HealthClient::new(connect(server.addr, &old).await.unwrap());
    let mut stream = bounded(
        "watch",
        client.watch(HealthCheckRequest {
            service: watched.to_owned(),
        }),
    )
    .await
    .unwrap()
    .into_inner();
    let first = bounded("first status", stream.message())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.status(), Status::Serving);

    // A certificate from a new CA replaces the files (each written whole, then renamed in).
    let new_ca = Ca::new(dir.path(), "new");
    let (cert, key) = new_ca.issue(&["127.0.0.1"]);
    for (contents, path) in [(key, &files.key_file), (cert, &files.cert_file)] {
        let staged = path.with_extension("staged");
        std::fs::write(&staged, contents).unwrap();
        std::fs::rename(&staged, path).unwrap();
    }
    let new = ClientTls::new(new_ca.ca_file());
    bounded("the reload", async {
        loop {
            if check(server.addr, &new).await == Ok(Status::Serving) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    // A new connection trusting only the old CA fails now.
    assert!(check(server.addr, &old).await.is_err());

    // The old stream is still alive: it sees the next change.
    server
        .health
        .set_service_status(watched, ServingStatus::NotServing)
        .await;
    let next = bounded("update on the old stream", stream.message())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(next.status(), Status::NotServing);
    // A Watch stream never ends by itself: close it before the server drains.
    drop(stream);
    drop(client);
    server.stop().await;
}

#[tokio::test]
async fn the_health_listener_serves_health_alone_in_plaintext_beside_mutual_tls() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "a");
    let clients = Ca::new(dir.path(), "clients");
    let files = ca.server().with_client_ca(clients.ca_file());
    let server = Server::start(tls_config(files), true).await;
    let health_addr = server.health_addr.unwrap();
    let (cert, key) = clients.client();
    until_serving(
        server.addr,
        &ClientTls::new(ca.ca_file()).with_identity(&cert, &key),
    )
    .await;

    // The health port answers in plaintext, and follows the reporter.
    bounded(
        "health port",
        arbiter_kit::probe::check(health_addr, "", BOUND),
    )
    .await
    .unwrap();
    let service = "arbiter.test.v1.Thing";
    server
        .health
        .set_service_status(service, ServingStatus::NotServing)
        .await;
    let e = bounded(
        "health port",
        arbiter_kit::probe::check(health_addr, service, BOUND),
    )
    .await
    .unwrap_err();
    assert!(e.contains("NOT_SERVING"), "{e}");
    // The main port does not speak plaintext.
    assert!(
        bounded(
            "main port",
            arbiter_kit::probe::check(server.addr, "", Duration::from_secs(5))
        )
        .await
        .is_err()
    );

    // Nothing else is served there: no reflection, no other service.
    let channel = bounded(
        "plaintext connect",
        Endpoint::from_shared(format!("http://{health_addr}"))
            .unwrap()
            .connect(),
    )
    .await
    .unwrap();
    let mut reflection =
        tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient::new(
            channel.clone(),
        );
    let request = tonic_reflection::pb::v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(
            tonic_reflection::pb::v1::server_reflection_request::MessageRequest::ListServices(
                String::new(),
            ),
        ),
    };
    let refused = bounded(
        "reflection",
        reflection.server_reflection_info(tokio_stream::iter([request])),
    )
    .await;
    let code = match refused {
        Err(status) => status.code(),
        Ok(response) => bounded("reflection reply", response.into_inner().message())
            .await
            .map_or_else(|s| s.code(), |_| tonic::Code::Ok),
    };
    assert_eq!(code, tonic::Code::Unimplemented);
    let peek = peek(channel).await;
    assert!(peek.starts_with("Unimplemented"), "{peek}");
    server.stop().await;
    // It stopped with the server.
    assert!(
        bounded(
            "health port after stop",
            arbiter_kit::probe::check(health_addr, "", Duration::from_secs(5))
        )
        .await
        .is_err()
    );
}

#[tokio::test]
async fn the_health_listen_flag_is_bound_at_start_and_a_busy_address_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "a");
    let busy = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = ServeConfig {
        health_listen: Some(busy.local_addr().unwrap()),
        ..tls_config(ca.server())
    };
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let e = bounded(
        "serve",
        Host::new(config).serve(listener, std::future::pending()),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("--health-listen"), "{e}");
}

#[tokio::test]
async fn an_unusable_tls_file_is_a_start_up_error() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "a");
    let files = ca.server();
    std::fs::write(&files.cert_file, "not a certificate").unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let e = bounded(
        "serve",
        Host::new(tls_config(files)).serve(listener, std::future::pending()),
    )
    .await
    .unwrap_err();
    let e = e.to_string();
    assert!(e.contains("--tls-cert-file"), "{e}");
    assert!(e.contains("no PEM certificate"), "{e}");
}

#[derive(Parser, Debug)]
struct Args {
    #[command(subcommand)]
    command: Option<arbiter_kit::probe::ProbeCommand>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[test]
fn the_flags_are_well_formed() {
    use clap::CommandFactory;
    Args::command().debug_assert();
}

/// `health-check` as a binary runs it, parsed from `argv`: whether it exits 0.
async fn health_check(argv: &[&str], listen: SocketAddr) -> bool {
    let args = Args::try_parse_from(argv).unwrap();
    let code = bounded("health-check", args.command.unwrap().run(listen)).await;
    format!("{code:?}") == format!("{:?}", std::process::ExitCode::SUCCESS)
}

#[tokio::test]
async fn health_check_probes_over_tls_or_on_the_health_port() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "a");
    let clients = Ca::new(dir.path(), "clients");
    let files = ca.server().with_client_ca(clients.ca_file());
    let server = Server::start(tls_config(files), true).await;
    let (cert, key) = clients.client();
    until_serving(
        server.addr,
        &ClientTls::new(ca.ca_file()).with_identity(&cert, &key),
    )
    .await;
    let ca_file = ca.ca_file();
    let ca_file = ca_file.to_str().unwrap();
    let health = server.health_addr.unwrap().to_string();
    // The health-only port, in plaintext.
    assert!(
        health_check(
            &["x", "health-check", "--health-listen", &health],
            server.addr
        )
        .await
    );
    // Mutual TLS with a client certificate.
    let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let mutual = [
        "x",
        "health-check",
        "--tls-ca-file",
        ca_file,
        "--tls-client-cert-file",
        cert,
        "--tls-client-key-file",
        key,
    ];
    assert!(health_check(&mutual, server.addr).await);
    // Without a client certificate, or in plaintext: refused.
    assert!(
        !health_check(
            &["x", "health-check", "--tls-ca-file", ca_file],
            server.addr
        )
        .await
    );
    assert!(!health_check(&["x", "health-check"], server.addr).await);
    server.stop().await;
}

#[tokio::test]
async fn a_certificate_without_its_key_is_an_error_naming_the_flag() {
    let args = Args::try_parse_from(["x", "--tls-cert-file", "cert.pem"]).unwrap();
    let config = args.serve.config();
    let e = config.tls_files().unwrap_err();
    assert!(e.message().contains("--tls-key-file"), "{e}");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let e = bounded(
        "serve",
        Host::new(config).serve(listener, std::future::pending()),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("--tls-key-file"), "{e}");

    let args = Args::try_parse_from(["x", "--tls-key-file", "key.pem"]).unwrap();
    let e = args.serve.config().tls_files().unwrap_err();
    assert!(e.message().contains("--tls-cert-file"), "{e}");
    let args = Args::try_parse_from(["x", "--tls-client-ca-file", "ca.pem"]).unwrap();
    let e = args.serve.config().tls_files().unwrap_err();
    assert!(e.message().contains("--tls-client-ca-file"), "{e}");
    assert!(e.message().contains("--tls-cert-file"), "{e}");

    // Every flag lands in the configuration.
    let args = Args::try_parse_from([
        "x",
        "--tls-cert-file",
        "c.pem",
        "--tls-key-file",
        "k.pem",
        "--tls-client-ca-file",
        "ca.pem",
        "--tls-reload-secs",
        "7",
        "--health-listen",
        "0.0.0.0:8081",
    ])
    .unwrap();
    let config = args.serve.config();
    assert_eq!(
        config.tls_files().unwrap(),
        Some(ServerTlsFiles::new("c.pem", "k.pem").with_client_ca("ca.pem"))
    );
    assert_eq!(config.tls_reload, Duration::from_secs(7));
    assert_eq!(config.health_listen, Some("0.0.0.0:8081".parse().unwrap()));
    let plain = Args::try_parse_from(["x"]).unwrap().serve.config();
    assert_eq!(plain.tls_files().unwrap(), None);
    assert_eq!(plain.tls_reload, Duration::from_secs(2));
}

/// Calls [`Peek`] on `channel` (through the health client, its path rewritten): the status it
/// answers, as `remote=… certs=…`, or the code and message of any other status.
async fn peek(channel: Channel) -> String {
    let rewritten = tower::ServiceBuilder::new()
        .map_request(|mut req: http::Request<tonic::body::Body>| {
            let mut parts = req.uri().clone().into_parts();
            parts.path_and_query = Some(http::uri::PathAndQuery::from_static(
                "/arbiter.test.v1.Peek/Check",
            ));
            *req.uri_mut() = http::Uri::from_parts(parts).unwrap();
            req
        })
        .service(channel);
    let status = bounded(
        "peek",
        HealthClient::new(rewritten).check(HealthCheckRequest::default()),
    )
    .await
    .unwrap_err();
    if status.code() == tonic::Code::FailedPrecondition {
        status.message().to_owned()
    } else {
        format!("{:?}: {}", status.code(), status.message())
    }
}
