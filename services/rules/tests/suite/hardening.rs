//! Hostile input against the rules service over gRPC: each attack gets a clean status, and the
//! server answers normally afterwards.

use crate::support;

use arbiter_kit::ServeConfig;
use arbiter_proto::common::v1::{self as common, Variant};
use arbiter_proto::rules::v1 as rules;
use arbiter_rules::Limits;
use std::time::{Duration, Instant};
use support::{Server, chess, start_with};
use tonic::{Code, Request};
use tonic_types::StatusExt;

async fn start(config: ServeConfig) -> Server {
    start_with(config, Limits::default()).await
}

/// The server still answers.
trait Alive {
    async fn alive(&mut self);
}

impl Alive for Server {
    /// The server still answers.
    async fn alive(&mut self) {
        let r = self
            .client
            .list_legal_moves(rules::ListLegalMovesRequest {
                position: chess(""),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.moves.len(), 20);
    }
}

/// 20,000 nested variations in 160 KB (far under the size limit) once overflowed a worker's
/// stack and aborted the process; now the reader refuses the depth with a clean status.
#[tokio::test]
async fn deeply_nested_pgn_is_refused_cleanly() {
    let mut s = start(ServeConfig::default()).await;
    let mut pgn = String::from("1. e4 ");
    for _ in 0..20_000 {
        pgn.push_str("( e4 ");
    }
    for _ in 0..20_000 {
        pgn.push_str(") ");
    }
    pgn.push('*');
    assert!(pgn.len() < 1 << 20);
    let status = s
        .client
        .import_pgn(rules::ImportPgnRequest {
            pgn,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(status.message().contains("depth"), "{}", status.message());
    s.alive().await;
    // Long games are cut while reading too.
    let mut long = String::new();
    for i in 1..=3000 {
        long.push_str(&format!("{i}. Nf3 Nf6 {}. Ng1 Ng8 ", i));
    }
    let status = s
        .client
        .import_pgn(rules::ImportPgnRequest {
            pgn: long,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    s.alive().await;
    s.stop().await;
}

/// Whatever the client sends, a status stays small enough for every gRPC client's metadata
/// limit, and quotes the input only in part.
#[tokio::test]
async fn error_messages_stay_small() {
    let mut s = start(ServeConfig::default()).await;
    let huge = "Q".repeat(500_000);
    let status = s
        .client
        .convert_move(rules::ConvertMoveRequest {
            position: chess(""),
            r#move: huge.clone(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(status.message().len() <= 1100, "{}", status.message().len());
    let status = s
        .client
        .validate_move(rules::ValidateMoveRequest {
            position: chess(&huge),
            r#move: "e4".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(status.message().len() <= 1100);
    assert!(status.get_details_bad_request().is_some());
    s.alive().await;
    s.stop().await;
}

/// Counters have bounds: a move number past a million is refused, and play saturates at it.
#[tokio::test]
async fn counters_cannot_overflow() {
    let mut s = start(ServeConfig::default()).await;
    for fen in [
        "4k3/8/8/8/8/8/8/4K2R b - - 0 4294967295",
        "4k3/8/8/8/8/8/8/4K2R b - - 4294967295 1",
        "4k3/8/8/8/8/8/8/4K2R b - - 0 1000001",
    ] {
        let status = s
            .client
            .validate_move(rules::ValidateMoveRequest {
                position: chess(fen),
                r#move: "Kd7".into(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{fen}");
        let field = status.get_details_bad_request().unwrap().field_violations[0]
            .field
            .clone();
        assert_eq!(field, "position.text");
    }
    // Byzantine has no move-count rule: both counters run into their bound and stay there.
    let r = s
        .client
        .apply_moves(rules::ApplyMovesRequest {
            start: Some(common::Position {
                variant: Variant::Byzantine as i32,
                text: "k14n/4R11/16/8K7 w 999999 1000000".into(),
                ..Default::default()
            }),
            moves: vec!["b5b6".into(), "a16b14".into(), "b6b7".into()],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        r.final_position.unwrap().text,
        "k15/6R6n2/16/8K7 b 1000000 1000000"
    );
    for (variant, text) in [
        (
            Variant::Glinski,
            "k/3/5/7/9/11/11/11/11/11/2K4R3 w - 0 4294967295",
        ),
        (Variant::Byzantine, "k15/4R11/16/8K7 w 4294967296 1"),
    ] {
        let status = s
            .client
            .list_legal_moves(rules::ListLegalMovesRequest {
                position: Some(common::Position {
                    variant: variant as i32,
                    text: text.into(),
                    ..Default::default()
                }),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{text}");
    }
    s.alive().await;
    s.stop().await;
}

/// A perft whose deadline passes stops computing at once: with one CPU turn and no queue, the
/// next perft gets the turn right away instead of being refused.
#[tokio::test]
async fn a_perft_past_its_deadline_stops_computing() {
    let mut s = start(ServeConfig {
        max_cpu_jobs: 1,
        max_cpu_queue: 0,
        ..ServeConfig::default()
    })
    .await;
    let deep = || rules::PerftRequest {
        position: chess(""),
        depth: 8,
        node_budget: u64::MAX,
        ..Default::default()
    };
    let mut request = Request::new(deep());
    request.set_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let status = s.client.perft(request).await.unwrap_err();
    assert!(
        matches!(status.code(), Code::DeadlineExceeded | Code::Cancelled),
        "{status:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // The turn frees itself within moments: the computation saw its stop flag.
    let mut answered = None;
    for _ in 0..50 {
        match s
            .client
            .perft(rules::PerftRequest {
                position: chess(""),
                depth: 3,
                ..Default::default()
            })
            .await
        {
            Ok(r) => {
                answered = Some(r.into_inner().nodes);
                break;
            }
            Err(e) if e.code() == Code::ResourceExhausted => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(
        answered,
        Some(8902),
        "the stopped perft never released its turn"
    );
    // While a long perft holds the only turn, another is refused at once (no queue).
    let mut holder = s.client.clone();
    let long = tokio::spawn(async move {
        let mut r = Request::new(deep());
        r.set_timeout(Duration::from_millis(800));
        holder.perft(r).await
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let status = s.client.perft(deep()).await.unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(long.await.unwrap().is_err());
    s.alive().await;
    s.stop().await;
}

/// Past the limit of requests in flight, a request is refused at once with RESOURCE_EXHAUSTED.
#[tokio::test]
async fn requests_in_flight_are_bounded() {
    let mut s = start(ServeConfig {
        max_concurrent_requests: 1,
        ..ServeConfig::default()
    })
    .await;
    let mut holder = s.client.clone();
    let long = tokio::spawn(async move {
        let mut r = Request::new(rules::PerftRequest {
            position: chess(""),
            depth: 8,
            node_budget: u64::MAX,
            ..Default::default()
        });
        r.set_timeout(Duration::from_millis(600));
        holder.perft(r).await
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let status = s.client.ping(rules::PingRequest {}).await.unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(long.await.unwrap().is_err());
    s.alive().await;
    s.stop().await;
}
