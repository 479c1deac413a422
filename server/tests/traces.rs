//! Traces across services, as `arbiter serve --otlp-endpoint` exports them to an OTLP receiver
//! running in this test: one matchmaking wave is one trace that goes into the match service's
//! `CreateMatch` (through the `traceparent` of the gRPC call) and its Redis scripts, and one
//! batch job's trace goes from `SubmitJob` to the worker's analysis of its game (through the
//! job stored in Redis).
//!
//! A test binary of its own: the exporter and the `tracing` subscriber are the process's.

mod shared;
use shared::matched;

use arbiter_kit::{LogArgs, LogFormat};
use arbiter_proto::analysis::v1::{
    self as analysis, analysis_service_client::AnalysisServiceClient,
};
use arbiter_server::{ServerConfig, StoreConfig, serve};
use arbiter_testkit::grpc::TestServer;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::trace::v1::Span;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tonic_health::pb::health_check_response::ServingStatus;

/// An OTLP trace receiver that keeps every span it is sent.
#[derive(Clone, Default)]
struct Receiver {
    spans: Arc<Mutex<Vec<Span>>>,
}

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut spans = self.spans.lock().unwrap();
        for resource in request.into_inner().resource_spans {
            for scope in resource.scope_spans {
                spans.extend(scope.spans);
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wave_and_a_batch_job_are_each_one_trace_across_services() {
    let receiver = Receiver::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let collector = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(receiver.clone()))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    let traces = arbiter_kit::init_tracing(
        &LogArgs {
            log_format: LogFormat::Text,
            otlp_endpoint: Some(format!("http://{collector}")),
        },
        "arbiter",
    )
    .unwrap();

    let redis = arbiter_testkit::redis().await;
    let mut config = ServerConfig::default();
    config.matches.store = StoreConfig::Redis(redis.secure("arbiter"));
    config.matchmaking.redis = Some(redis.secure("arbiter"));
    config.matchmaking.tuning.wave_interval_ms = 100;
    config.matchmaking.tuning.wave_jitter_ms = 0;
    config.analysis.redis = Some(redis.secure("arbiter"));
    let server = TestServer::start(|listener, shutdown| serve(listener, config, shutdown)).await;
    for service in [
        "arbiter.matches.v1.MatchService",
        "arbiter.matchmaking.v1.MatchmakingService",
        "arbiter.analysis.v1.AnalysisService",
    ] {
        server.health_becomes(service, ServingStatus::Serving).await;
    }
    let ch = server.channel();

    let (a, b) = tokio::join!(
        matched(ch.clone(), "p-one", "5+0"),
        matched(ch.clone(), "p-two", "5+0")
    );
    assert_eq!(a.match_id, b.match_id);

    // A job of one short game, analysed by the in-process worker on Redis Streams.
    let mut jobs = AnalysisServiceClient::new(ch.clone());
    let status = jobs
        .submit_job(analysis::SubmitJobRequest {
            request_id: "traced".into(),
            games: Some(analysis::submit_job_request::Games::Pgn(
                "1. e4 e5 2. Nf3 *\n".into(),
            )),
            per_ply: Some(analysis::PlyLimit {
                depth: 0,
                nodes: 500,
            }),
            engine: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    let mut done = false;
    for _ in 0..400 {
        let now = jobs
            .get_job(analysis::GetJobRequest {
                job_id: status.job_id.clone(),
            })
            .await
            .unwrap()
            .into_inner()
            .status
            .unwrap();
        if now.state == analysis::JobState::Done as i32 {
            done = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(done, "the job finished");
    server.stop().await;
    // Sends what is buffered.
    traces.shutdown().await;

    let spans = receiver.spans.lock().unwrap().clone();
    // The wave that paired the two players, and the CreateMatch it called: one trace, the
    // call's server span a child of the wave's.
    let create = named(&spans, "/arbiter.matches.v1.MatchService/CreateMatch");
    assert_eq!(create.len(), 1, "one CreateMatch call: {:?}", names(&spans));
    let create = create[0];
    let wave = spans
        .iter()
        .find(|s| s.name == "matchmaking.wave" && s.span_id == create.parent_span_id)
        .unwrap_or_else(|| panic!("CreateMatch's parent is a wave: {:?}", names(&spans)));
    assert_eq!(wave.trace_id, create.trace_id);
    assert_eq!(wave.trace_id.len(), 16);
    // The match store's script under CreateMatch, in the same trace.
    assert!(
        spans.iter().any(|s| s.name == "redis.script"
            && s.trace_id == create.trace_id
            && s.parent_span_id == create.span_id),
        "{:?}",
        names(&spans)
    );

    // The job: SubmitJob's span, and the worker's game under it.
    let submit = named(&spans, "/arbiter.analysis.v1.AnalysisService/SubmitJob");
    assert_eq!(submit.len(), 1);
    let submit = submit[0];
    let games: Vec<&Span> = named(&spans, "analysis.game")
        .into_iter()
        .filter(|g| g.trace_id == submit.trace_id)
        .collect();
    assert_eq!(games.len(), 1, "{:?}", names(&spans));
    assert_eq!(games[0].parent_span_id, submit.span_id);
    // Its positions' searches are spans under the game's.
    assert!(
        spans
            .iter()
            .filter(|s| s.name == "analysis.search" && s.parent_span_id == games[0].span_id)
            .count()
            >= 3,
        "{:?}",
        names(&spans)
    );
    // Its result was recorded by a script within the game's span.
    assert!(spans.iter().any(|s| s.name == "redis.script"
        && s.trace_id == submit.trace_id
        && s.parent_span_id == games[0].span_id));
    // Traces of different roots are different traces.
    assert_ne!(submit.trace_id, create.trace_id);
}

fn names(spans: &[Span]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}
