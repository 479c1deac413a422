//! The whole server as `arbiter serve` runs it: every service on one port, health for each,
//! reflection listing them all, both services answering, and the configuration rules that the
//! shared flags enforce.

use arbiter_proto::common::v1 as common;
use arbiter_proto::matches::v1::{self as pb, match_service_client::MatchServiceClient};
use arbiter_proto::rules::v1::{self as rules, rules_service_client::RulesServiceClient};
use arbiter_server::{SERVICE_NAMES, ServerArgs, ServerConfig, serve};
use arbiter_testkit::grpc::TestServer;
use clap::Parser;
use tonic_health::pb::health_check_response::ServingStatus;

#[tokio::test]
async fn every_service_on_one_port() {
    let server =
        TestServer::start(|listener, shutdown| serve(listener, ServerConfig::default(), shutdown))
            .await;
    let channel = server.channel();

    for service in [
        "",
        "arbiter.rules.v1.RulesService",
        "arbiter.matches.v1.MatchService",
        "arbiter.clock.v1.ClockService",
        "arbiter.matchmaking.v1.MatchmakingService",
        "arbiter.analysis.v1.AnalysisService",
    ] {
        assert_eq!(
            server.health(service).await,
            ServingStatus::Serving,
            "{service}"
        );
    }

    use tonic_reflection::pb::v1::{
        ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
        server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
    };
    let mut reflection = ServerReflectionClient::new(channel.clone());
    let req = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut stream = reflection
        .server_reflection_info(tokio_stream::iter(vec![req]))
        .await
        .unwrap()
        .into_inner();
    let resp = stream.message().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = resp.message_response else {
        panic!("{resp:?}")
    };
    let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    for expected in SERVICE_NAMES {
        assert!(names.iter().any(|n| n == expected), "{expected}: {names:?}");
    }

    // Both services answer on the same port.
    let r = RulesServiceClient::new(channel.clone())
        .validate_move(rules::ValidateMoveRequest {
            position: Some(common::Position {
                variant: common::Variant::Glinski as i32,
                ..Default::default()
            }),
            r#move: "f5f6".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(matches!(
        r.result,
        Some(rules::validate_move_response::Result::Legal(_))
    ));
    let created = MatchServiceClient::new(channel.clone())
        .create_match(pb::CreateMatchRequest {
            variant: common::Variant::Byzantine as i32,
            players: vec!["ann".into(), "bob".into()],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(created.seats.len(), 2);

    server.stop().await;
}

#[derive(Parser, Debug)]
struct Cli {
    #[command(flatten)]
    server: ServerArgs,
}

#[test]
fn redis_needs_a_shared_seat_key() {
    let cli = Cli::try_parse_from(["arbiter", "--redis-url", "redis://127.0.0.1:1"]).unwrap();
    let e = cli.server.load().unwrap_err();
    assert!(e.contains("seat key"), "{e}");
    let cli = Cli::try_parse_from([
        "arbiter",
        "--redis-url",
        "redis://127.0.0.1:1",
        "--seat-key",
        "short",
    ])
    .unwrap();
    assert!(cli.server.load().unwrap_err().contains("at least 32 bytes"));
    let cli = Cli::try_parse_from([
        "arbiter",
        "--redis-url",
        "redis://127.0.0.1:1",
        "--seat-key",
        "a-seat-key-of-at-least-thirty-two-bytes",
        "--platform-token",
        "tiny",
    ])
    .unwrap();
    assert!(cli.server.load().unwrap_err().contains("platform token"));
    let cli = Cli::try_parse_from(["arbiter"]).unwrap();
    let config = cli.server.load().unwrap();
    assert_eq!(config.matches.store, arbiter_server::StoreConfig::Memory);
}

/// The Redis ACL user and TLS flags reach every service's store through the match service's
/// configuration, and TLS files with a plaintext URL are refused at load, not ignored.
#[test]
fn redis_tls_flags_are_checked_and_shared() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, "not a certificate").unwrap();
    let args = |url: &str| {
        let mut v = vec![
            "arbiter".to_owned(),
            "--redis-url".into(),
            url.into(),
            "--seat-key".into(),
            "a-seat-key-of-at-least-thirty-two-bytes".into(),
            "--redis-user".into(),
            "arbiter".into(),
        ];
        v.extend(["--redis-ca-file".into(), ca.display().to_string()]);
        Cli::try_parse_from(v).unwrap()
    };
    let e = args("redis://127.0.0.1:1").server.load().unwrap_err();
    assert!(e.contains("rediss://"), "{e}");
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    std::fs::write(&ca, params.self_signed(&key).unwrap().pem()).unwrap();
    let config = args("rediss://127.0.0.1:1").server.load().unwrap();
    let arbiter_server::StoreConfig::Redis(redis) = &config.matches.store else {
        panic!("not in Redis: {:?}", config.matches.store);
    };
    assert_eq!(redis.user.as_deref(), Some("arbiter"));
    assert!(redis.tls.ca_pem.is_some());
    assert_eq!(config.clock.redis.as_ref(), Some(redis));
    assert_eq!(config.analysis.redis.as_ref(), Some(redis));
}
