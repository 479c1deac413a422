//! A binary probing its own health: `arbiter-<service> health-check` asks the standard gRPC
//! health service at the process's configured address whether it is `SERVING`, and exits 0 only
//! then. Container images carry no probe program (no `grpc_health_probe`, no shell), so a
//! Docker `HEALTHCHECK` or a Kubernetes `exec` probe runs the service's own binary with the
//! same environment as the service itself, and so the same address.
//!
//! Under TLS the probe needs the CA that the server's certificate chains to (`--tls-ca-file`,
//! `ARBITER_TLS_CA_FILE`), and the server's certificate must name the address probed (an IP
//! SAN for `127.0.0.1`) or `--tls-server-name` must give a name it carries. Under mutual TLS
//! the way is the server's plaintext health-only listener (`--health-listen`,
//! `ARBITER_HEALTH_LISTEN`): with that variable in the environment, the probe asks there.
//! (A client certificate, `--tls-client-cert-file` and `--tls-client-key-file`, works too.)

use crate::tls::{ClientTls, ClientTlsArgs};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// The subcommand every server binary offers beside serving.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum ProbeCommand {
    /// Ask the server at this process's listen address (`--listen`, `ARBITER_LISTEN`; an
    /// unspecified address such as 0.0.0.0 is asked on loopback), or at its plaintext
    /// health-only address (`--health-listen`, `ARBITER_HEALTH_LISTEN`) when there is one,
    /// whether it is SERVING: exit 0 if so, 1 if not or if it does not answer in time. For
    /// container health checks. A TLS server is asked over TLS with --tls-ca-file.
    HealthCheck(HealthCheckArgs),
}

/// Options of `health-check`.
#[derive(clap::Args, Debug, Clone)]
pub struct HealthCheckArgs {
    /// The health service name to ask about ("" is the whole process).
    #[arg(long, default_value = "")]
    pub service: String,
    /// How long to wait for the answer, connection included, in milliseconds.
    #[arg(long, default_value_t = 2_000)]
    pub timeout_ms: u64,
    /// Ask the server's plaintext health-only listener at this address instead (the server's
    /// own --health-listen: the way under mutual TLS).
    #[arg(long, env = "ARBITER_HEALTH_LISTEN")]
    pub health_listen: Option<SocketAddr>,
    /// TLS to the server's listen address (ignored with --health-listen).
    #[command(flatten)]
    pub tls: ClientTlsArgs,
}

impl ProbeCommand {
    /// Runs the probe against `listen` (the address the service binds), prints the outcome on
    /// stderr and gives the process's exit code.
    pub async fn run(&self, listen: SocketAddr) -> ExitCode {
        let ProbeCommand::HealthCheck(args) = self;
        let timeout = Duration::from_millis(args.timeout_ms.max(1));
        let outcome = match (args.health_listen, args.tls.client_tls()) {
            (Some(health), _) => check(health, &args.service, timeout).await,
            (None, Ok(tls)) => check_with(listen, &args.service, timeout, tls.as_ref()).await,
            (None, Err(e)) => Err(e.to_string()),
        };
        match outcome {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("health-check: {e}");
                ExitCode::FAILURE
            }
        }
    }
}

/// The address a client on this host uses to reach a server bound to `listen`: loopback for
/// an unspecified address (`0.0.0.0`, `[::]`), `listen` itself otherwise.
pub fn local_address(listen: SocketAddr) -> SocketAddr {
    match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), listen.port())
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), listen.port())
        }
        _ => listen,
    }
}

/// Asks the health service at `listen` (see [`local_address`]) about `service`, within
/// `timeout`: `Ok` only for `SERVING`.
///
/// # Errors
/// No connection, no answer in time, an error status, or any status but `SERVING`: the
/// message says which.
pub async fn check(listen: SocketAddr, service: &str, timeout: Duration) -> Result<(), String> {
    check_with(listen, service, timeout, None).await
}

/// [`check`], over TLS when `tls` is given.
///
/// # Errors
/// As [`check`]; also TLS files that cannot be used, and a failed handshake (which, under
/// mutual TLS, may show as the connection failing).
pub async fn check_with(
    listen: SocketAddr,
    service: &str,
    timeout: Duration,
    tls: Option<&ClientTls>,
) -> Result<(), String> {
    let addr = local_address(listen);
    let ask = async {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let mut endpoint = tonic::transport::Endpoint::from_shared(format!("{scheme}://{addr}"))
            .map_err(|e| format!("address {addr}: {e}"))?
            .connect_timeout(timeout);
        if let Some(tls) = tls {
            let config = tls.config().map_err(|e| e.to_string())?;
            endpoint = endpoint
                .tls_config(config)
                .map_err(|e| format!("{addr}: TLS: {e}"))?;
        }
        let channel = endpoint
            .connect()
            .await
            .map_err(|e| format!("{addr}: cannot connect: {}", with_sources(&e)))?;
        let reply = HealthClient::new(channel)
            .check(HealthCheckRequest {
                service: service.to_owned(),
            })
            .await
            .map_err(|s| format!("{addr}: {:?}: {}", s.code(), s.message()))?;
        let status = reply.into_inner().status();
        if status == ServingStatus::Serving {
            Ok(())
        } else {
            Err(format!("{addr}: {}", status.as_str_name()))
        }
    };
    tokio::time::timeout(timeout, ask)
        .await
        .map_err(|_| format!("{addr}: no answer within {} ms", timeout.as_millis()))?
}

/// An error and its sources, `: `-separated (tonic's transport error alone says only
/// "transport error").
fn with_sources(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Host, ServeConfig};

    #[test]
    fn unspecified_addresses_are_asked_on_loopback() {
        let a: SocketAddr = "0.0.0.0:50051".parse().unwrap();
        assert_eq!(local_address(a), "127.0.0.1:50051".parse().unwrap());
        let a: SocketAddr = "[::]:7".parse().unwrap();
        assert_eq!(local_address(a), "[::1]:7".parse().unwrap());
        let a: SocketAddr = "10.1.2.3:9".parse().unwrap();
        assert_eq!(local_address(a), a);
    }

    #[tokio::test]
    async fn serving_then_not_serving_then_gone() {
        let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let listen: SocketAddr = format!("0.0.0.0:{port}").parse().unwrap();
        let host = Host::new(ServeConfig::default());
        let health = host.health();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(host.serve(listener, async {
            let _ = stopped.await;
        }));
        let t = Duration::from_secs(5);
        // The whole process serves as soon as it listens.
        let mut ok = check(listen, "", t).await;
        for _ in 0..50 {
            if ok.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            ok = check(listen, "", t).await;
        }
        assert_eq!(ok, Ok(()));
        // A service that reports NOT_SERVING fails its probe, naming the status.
        health
            .set_service_status(
                "arbiter.test.v1.Thing",
                tonic_health::ServingStatus::NotServing,
            )
            .await;
        let e = check(listen, "arbiter.test.v1.Thing", t).await.unwrap_err();
        assert!(e.contains("NOT_SERVING"), "{e}");
        // An unknown service is an error status.
        let e = check(listen, "no.such.Service", t).await.unwrap_err();
        assert!(e.contains("NotFound"), "{e}");
        stop.send(()).unwrap();
        server.await.unwrap().unwrap();
        // Nothing listening: refused.
        let e = check(listen, "", t).await.unwrap_err();
        assert!(e.contains("cannot connect"), "{e}");
    }
}
