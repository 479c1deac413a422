//! Helpers shared by the gRPC test files: the rules server under test on port 0 and a client on
//! its connection.
#![allow(dead_code)] // each test file uses its own share of these

use arbiter_kit::{ServeConfig, ServeError};
use arbiter_proto::common::v1::{self as common, Variant};
use arbiter_proto::rules::v1::rules_service_client::RulesServiceClient;
use arbiter_rules::{Limits, serve};
use arbiter_testkit::grpc::TestServer;
use tonic::transport::Channel;

/// The server under test and a rules client on its connection.
pub struct Server {
    pub client: RulesServiceClient<Channel>,
    pub server: TestServer<ServeError>,
}

/// Starts the rules service with these serving settings and limits.
pub async fn start_with(config: ServeConfig, limits: Limits) -> Server {
    let server = TestServer::start(|listener, shutdown| {
        serve(
            listener,
            config,
            limits,
            arbiter_kit::access::AccessPolicy::development(),
            shutdown,
        )
    })
    .await;
    Server {
        client: RulesServiceClient::new(server.channel()),
        server,
    }
}

impl Server {
    /// Shuts the server down gracefully; it must stop cleanly.
    pub async fn stop(self) {
        self.server.stop().await;
    }
}

/// A standard chess position ("" for the start).
pub fn chess(text: &str) -> Option<common::Position> {
    Some(common::Position {
        variant: Variant::Chess as i32,
        text: text.to_owned(),
        ..Default::default()
    })
}
