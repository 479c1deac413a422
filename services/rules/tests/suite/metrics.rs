//! Metrics: a server with `--metrics-listen` is scraped before and after known calls, and the
//! per-call counters and histograms moved by exactly those calls. (The recorder is the
//! process's; only this test's server measures calls, so nothing else moves these series.)

use crate::support::{Server, chess};
use arbiter_kit::ServeConfig;
use arbiter_proto::rules::v1 as rules;
use arbiter_rules::Limits;
use arbiter_testkit::metrics::{scrape, value};
use std::net::SocketAddr;
use tonic::Code;

const SERVICE: &str = "arbiter.rules.v1.RulesService";

/// One HTTP/1.1 request to the metrics listener: (status line, body).
async fn http_get(addr: SocketAddr, method: &str, path: &str) -> (String, String) {
    let (status, _, body) = arbiter_testkit::metrics::http_get(addr, method, path).await;
    (status, body)
}

#[tokio::test]
async fn calls_move_exactly_their_series() {
    let port = arbiter_testkit::free_port();
    let metrics: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let config = ServeConfig {
        metrics_listen: Some(metrics),
        ..ServeConfig::default()
    };
    let mut s: Server = crate::support::start_with(config, Limits::default()).await;
    let before = scrape(metrics).await;
    assert_eq!(
        value(
            &before,
            "arbiter_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        1.0
    );
    assert!(value(&before, "arbiter_process_resident_memory_bytes", &[]) > 0.0);
    // The health service's statuses, the server's as a whole ("") and the service's, followed
    // from the health service's own watch streams (so a moment after the start).
    let mut serving = before.clone();
    for _ in 0..250 {
        if value(&serving, "arbiter_serving", &[("service", SERVICE)]) == 1.0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        serving = scrape(metrics).await;
    }
    assert_eq!(value(&serving, "arbiter_serving", &[("service", "")]), 1.0);
    assert_eq!(
        value(&serving, "arbiter_serving", &[("service", SERVICE)]),
        1.0
    );
    let before = scrape(metrics).await;

    // 3 answered calls (two legal moves, one illegal: all OK), 2 refused (INVALID_ARGUMENT).
    for mv in ["e4", "Nf3", "e5"] {
        let req = rules::ValidateMoveRequest {
            position: chess(""),
            r#move: mv.into(),
            ..Default::default()
        };
        s.client.validate_move(req).await.unwrap();
    }
    for _ in 0..2 {
        let req = rules::ValidateMoveRequest {
            position: None,
            r#move: "e4".into(),
            ..Default::default()
        };
        assert_eq!(
            s.client.validate_move(req).await.unwrap_err().code(),
            Code::InvalidArgument
        );
    }
    // One stream of 5 requests and its 5 answers.
    let reqs: Vec<_> = ["e4", "d4", "c4", "Nf3", "g3"]
        .into_iter()
        .map(|mv| rules::ValidateMoveStreamRequest {
            request: Some(rules::ValidateMoveRequest {
                position: chess(""),
                r#move: mv.into(),
                ..Default::default()
            }),
        })
        .collect();
    let mut stream = s
        .client
        .validate_move_stream(tokio_stream::iter(reqs))
        .await
        .unwrap()
        .into_inner();
    let mut answers = 0;
    while stream.message().await.unwrap().is_some() {
        answers += 1;
    }
    assert_eq!(answers, 5);

    // A call is recorded when its answer has gone out; give the stream's end a moment.
    let mut after = scrape(metrics).await;
    for _ in 0..100 {
        let stream_done = value(
            &after,
            "arbiter_grpc_requests_total",
            &[("method", "ValidateMoveStream"), ("code", "OK")],
        );
        if stream_done >= 1.0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        after = scrape(metrics).await;
    }
    let delta = |name: &str, labels: &[(&str, &str)]| {
        value(&after, name, labels) - value(&before, name, labels)
    };
    let vm = [("service", SERVICE), ("method", "ValidateMove")];
    let vms = [("service", SERVICE), ("method", "ValidateMoveStream")];
    let with = |base: &[(&'static str, &'static str)], extra: (&'static str, &'static str)| {
        let mut v = base.to_vec();
        v.push(extra);
        v
    };
    assert_eq!(
        delta("arbiter_grpc_requests_total", &with(&vm, ("code", "OK"))),
        3.0
    );
    assert_eq!(
        delta(
            "arbiter_grpc_requests_total",
            &with(&vm, ("code", "INVALID_ARGUMENT"))
        ),
        2.0
    );
    assert_eq!(delta("arbiter_grpc_requests_total", &vm), 5.0);
    assert_eq!(
        delta("arbiter_grpc_request_duration_seconds_count", &vm),
        5.0
    );
    assert!(delta("arbiter_grpc_request_duration_seconds_sum", &vm) > 0.0);
    // Explicit buckets, not a summary: the 30 s bucket holds all five.
    assert!(after.contains("# TYPE arbiter_grpc_request_duration_seconds histogram"));
    assert_eq!(
        delta(
            "arbiter_grpc_request_duration_seconds_bucket",
            &with(&vm, ("le", "30"))
        ),
        5.0
    );
    assert_eq!(delta("arbiter_grpc_messages_received_total", &vm), 5.0);
    // Refused calls answer with a status alone, no message.
    assert_eq!(delta("arbiter_grpc_messages_sent_total", &vm), 3.0);
    assert_eq!(
        delta("arbiter_grpc_requests_total", &with(&vms, ("code", "OK"))),
        1.0
    );
    assert_eq!(delta("arbiter_grpc_messages_received_total", &vms), 5.0);
    assert_eq!(delta("arbiter_grpc_messages_sent_total", &vms), 5.0);
    assert_eq!(value(&after, "arbiter_grpc_requests_in_flight", &vm), 0.0);
    assert_eq!(value(&after, "arbiter_grpc_requests_in_flight", &vms), 0.0);
    // Nothing else was called.
    let total = |scrape: &str| value(scrape, "arbiter_grpc_requests_total", &[]);
    assert_eq!(total(&after) - total(&before), 6.0);

    // A path no API has is counted under `unknown`, never under its own name.
    let mut raw = tonic::client::Grpc::new(s.server.channel());
    raw.ready().await.unwrap();
    let path = "/arbiter.rules.v1.RulesService/NoSuchMethod-x"
        .parse()
        .unwrap();
    let codec =
        tonic_prost::ProstCodec::<rules::ValidateMoveRequest, rules::ValidateMoveResponse>::default(
        );
    let err = raw
        .unary(
            tonic::Request::new(rules::ValidateMoveRequest::default()),
            path,
            codec,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unimplemented);
    let last = scrape(metrics).await;
    assert!(
        !last.contains("NoSuchMethod"),
        "a client-chosen label value"
    );
    assert_eq!(
        value(
            &last,
            "arbiter_grpc_requests_total",
            &[("method", "unknown"), ("code", "UNIMPLEMENTED")]
        ),
        1.0
    );

    // Only GET /metrics.
    assert!(http_get(metrics, "GET", "/other").await.0.contains("404"));
    assert!(
        http_get(metrics, "POST", "/metrics")
            .await
            .0
            .contains("405")
    );
    s.stop().await;
}
