//! A gRPC server under test: started on `127.0.0.1:0` with the library's own `serve` function,
//! reached through a connected [`Channel`], and stopped through its shutdown future, so a test
//! sees the same start and graceful stop as the binaries.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::transport::Channel;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

/// The shutdown future handed to a server under test: it completes when the test calls
/// [`TestServer::stop`] (or drops the server).
#[derive(Debug)]
pub struct Shutdown(oneshot::Receiver<()>);

impl Future for Shutdown {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx).map(|_| ())
    }
}

/// A server running in the test's runtime, and a channel connected to it.
#[derive(Debug)]
pub struct TestServer<E> {
    channel: Channel,
    stop: Option<oneshot::Sender<()>>,
    handle: Option<JoinHandle<Result<(), E>>>,
}

impl<E: std::fmt::Debug + Send + 'static> TestServer<E> {
    /// Binds `127.0.0.1:0`, spawns `serve(listener, shutdown)` and connects to it.
    pub async fn start<F, Fut>(serve: F) -> Self
    where
        F: FnOnce(TcpListener, Shutdown) -> Fut,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let (stop, stopped) = oneshot::channel();
        let handle = tokio::spawn(serve(listener, Shutdown(stopped)));
        let channel = Channel::from_shared(format!("http://{addr}"))
            .expect("endpoint")
            .connect()
            .await
            .expect("connect to the server under test");
        TestServer {
            channel,
            stop: Some(stop),
            handle: Some(handle),
        }
    }

    /// A channel to the server (cheap to clone; every client made from it shares the
    /// connection).
    pub fn channel(&self) -> Channel {
        self.channel.clone()
    }

    /// The standard health service's status for `service` ("" for the whole server):
    /// `ServiceUnknown` while the server has not registered it yet (`NOT_FOUND`, which a server
    /// still starting its services answers).
    pub async fn health(&self, service: &str) -> ServingStatus {
        let checked = HealthClient::new(self.channel())
            .check(HealthCheckRequest {
                service: service.to_owned(),
            })
            .await;
        let status = match checked {
            Ok(r) => r.into_inner().status,
            Err(e) if e.code() == tonic::Code::NotFound => return ServingStatus::ServiceUnknown,
            Err(e) => panic!("health check: {e:?}"),
        };
        ServingStatus::try_from(status).expect("a known serving status")
    }

    /// Waits up to 10 s for `service`'s health to become `status`, and panics if it does not.
    pub async fn health_becomes(&self, service: &str, status: ServingStatus) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.health(service).await != status {
            assert!(
                Instant::now() < deadline,
                "{service}: health never became {status:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Triggers the graceful shutdown and waits for `serve` to return, which must be `Ok`.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let handle = self.handle.take().expect("a running server");
        handle
            .await
            .expect("the server task")
            .expect("serve returns Ok after a graceful shutdown");
    }
}
