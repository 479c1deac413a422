//! # arbiter-bench
//!
//! Load generators for Arbiter's services, driven by `arbiter bench`. They reach a server only
//! through the generated gRPC clients, like any other client, so they measure what a platform
//! would see; they know no service crate.
//!
//! - [`analysis`]: live analysis: the time to the first info, and the cancel latency;
//! - [`jobs`]: batch jobs' positions/s through the service against the engine alone;
//! - [`rules`]: unary and streaming validation next to the gRPC stack's no-op ceiling;
//! - [`matches`](mod@matches): many hosted matches of one variant played at once through `MakeMove`;
//! - [`clocks`]: an open-loop move rate on thousands of games with clocks, against the same load
//!   without clocks, and the delay of flags that fall with no move sent.
#![warn(missing_docs)]

pub mod analysis;
pub mod clocks;
pub mod jobs;
pub mod matches;
pub mod rules;

use std::time::{Duration, Instant};
use tonic::transport::Channel;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

/// Waits until the server's health service reports `service` as `SERVING` (a match service
/// whose Redis is still connecting is `NOT_SERVING`), so that a run measures a ready server.
/// Gives up after `timeout` with the last status seen.
pub async fn wait_until_serving(
    channel: Channel,
    service: &str,
    timeout: Duration,
) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    let mut health = HealthClient::new(channel);
    loop {
        let seen = match health
            .check(HealthCheckRequest {
                service: service.to_owned(),
            })
            .await
        {
            Ok(r) if r.get_ref().status == ServingStatus::Serving as i32 => return Ok(()),
            Ok(r) => format!("{:?}", r.get_ref().status()),
            Err(status) => format!("{}: {}", status.code(), status.message()),
        };
        if Instant::now() >= deadline {
            return Err(format!(
                "{service} was not serving after {timeout:?} (health: {seen})"
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
