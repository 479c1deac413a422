//! The matchmaking service's integration tests, in one test binary (one release build of the
//! service's generic code instead of five): challenges and seeks (`offers`), rating import and
//! history (`ratings`), the client of the match service across replicas that come and go
//! (`reconnect`), found matches stored by earlier versions (`stored_found`), and waves against
//! both stores (`waves`).

mod offers;
mod ratings;
mod reconnect;
mod stored_found;
mod waves;

/// The error details of a status (`google.rpc.Status` and the details the services send), read
/// with prost.
mod details {
    use prost::Message;
    use tonic::Status;

    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct RpcStatus {
        #[prost(int32, tag = "1")]
        pub(crate) code: i32,
        #[prost(string, tag = "2")]
        pub(crate) message: String,
        #[prost(message, repeated, tag = "3")]
        pub(crate) details: Vec<Any>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct Any {
        #[prost(string, tag = "1")]
        pub(crate) type_url: String,
        #[prost(bytes = "vec", tag = "2")]
        pub(crate) value: Vec<u8>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct ErrorInfo {
        #[prost(string, tag = "1")]
        pub(crate) reason: String,
        #[prost(string, tag = "2")]
        pub(crate) domain: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct FieldViolation {
        #[prost(string, tag = "1")]
        pub(crate) field: String,
        #[prost(string, tag = "2")]
        pub(crate) description: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub(crate) struct BadRequest {
        #[prost(message, repeated, tag = "1")]
        pub(crate) field_violations: Vec<FieldViolation>,
    }

    /// The encoded detail of a status whose type name ends with `type_name`, if it has one.
    pub(crate) fn detail(s: &Status, type_name: &str) -> Option<Vec<u8>> {
        let status = RpcStatus::decode(s.details()).ok()?;
        status
            .details
            .into_iter()
            .find(|a| a.type_url.ends_with(type_name))
            .map(|a| a.value)
    }
}

use arbiter_matchmaking::backend::MatchBackend;
use arbiter_matchmaking::{MatchmakingConfig, Tuning};
use arbiter_redis_conn::RedisConfig;
use arbiter_testkit::grpc::TestServer;
use std::time::Duration;

/// The matchmaking service on a port of its own, with `backend` as its match service, no waves
/// unless a test runs one (the interval is an hour), health checked every 500 ms; with
/// `redis`, once it serves (Redis reached: a health call failing meanwhile, on a machine busy
/// starting containers, is asked again).
async fn serve<B: MatchBackend + 'static>(
    redis: Option<RedisConfig>,
    tuning: Tuning,
    backend: B,
) -> TestServer<arbiter_kit::ServeError> {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};
    let on_redis = redis.is_some();
    let config = MatchmakingConfig {
        redis,
        tuning: Tuning {
            wave_interval_ms: 3_600_000,
            ..tuning
        },
        health_interval: Duration::from_millis(500),
    };
    let server = TestServer::start(move |listener, shutdown| {
        arbiter_matchmaking::serve(
            listener,
            arbiter_kit::ServeConfig::default(),
            config,
            arbiter_kit::access::AccessPolicy::development(),
            backend,
            shutdown,
        )
    })
    .await;
    if on_redis {
        let mut health = HealthClient::new(server.channel());
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let status = health
                    .check(HealthCheckRequest {
                        service: arbiter_matchmaking::SERVICE_NAME.to_owned(),
                    })
                    .await
                    .map(|r| r.into_inner().status);
                if matches!(status, Ok(s) if s == ServingStatus::Serving as i32) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await
        .expect("matchmaking serves once Redis is reached");
    }
    server
}
