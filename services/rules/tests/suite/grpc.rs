//! The rules service over real gRPC: a server on 127.0.0.1:0 per test, the generated client,
//! every RPC, every error path, health, reflection, limits and graceful shutdown.

use crate::support;

use arbiter_kit::ServeConfig;
use arbiter_proto::common::v1::{self as common, Variant};
use arbiter_proto::rules::v1 as rules;
use arbiter_rules::Limits;
use std::time::Duration;
use support::{Server, chess, start_with};
use tonic::{Code, Status};
use tonic_types::StatusExt;

async fn start() -> Server {
    start_with(
        ServeConfig {
            max_message_bytes: 64 * 1024,
            ..ServeConfig::default()
        },
        Limits {
            max_moves: 64,
            max_pgn_bytes: 4096,
            max_perft_nodes: 1_000_000,
            ..Limits::default()
        },
    )
    .await
}

const START: &str = "";

/// The status must carry `code` and a BadRequest violation on `field`.
fn assert_field_error(status: Status, code: Code, field: &str) {
    assert_eq!(status.code(), code, "{status:?}");
    let details = status.get_error_details();
    let bad = details
        .bad_request()
        .unwrap_or_else(|| panic!("no BadRequest in {status:?}"));
    assert_eq!(bad.field_violations[0].field, field, "{status:?}");
    assert!(status.message().starts_with(field), "{}", status.message());
}

fn validate(pos: Option<common::Position>, mv: &str) -> rules::ValidateMoveRequest {
    rules::ValidateMoveRequest {
        position: pos,
        r#move: mv.to_owned(),
        ..Default::default()
    }
}

#[tokio::test]
async fn validate_move_legal_and_illegal() {
    let mut s = start().await;
    let r = s
        .client
        .validate_move(validate(chess(START), "e2e4"))
        .await
        .unwrap()
        .into_inner();
    let Some(rules::validate_move_response::Result::Legal(legal)) = r.result else {
        panic!("{r:?}")
    };
    assert_eq!(legal.r#move.as_ref().unwrap().san, "e4");
    assert_eq!(
        legal.position_after.unwrap().text,
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    );
    assert!(!legal.check);

    // Scholar's mate, in SAN.
    let pos = chess("r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4");
    let r = s
        .client
        .validate_move(validate(pos, "Qxf7"))
        .await
        .unwrap()
        .into_inner();
    let Some(rules::validate_move_response::Result::Legal(legal)) = r.result else {
        panic!("{r:?}")
    };
    assert!(legal.check && legal.checkmate);
    assert_eq!(legal.r#move.unwrap().san, "Qxf7#");
    assert_eq!(legal.outcome.unwrap().score.unwrap().text, "1-0");

    for (fen, mv, reason) in [
        (START, "e7e5", rules::IllegalReason::WrongSide),
        (START, "e3e4", rules::IllegalReason::NoPiece),
        (START, "a1a3", rules::IllegalReason::Blocked),
        (START, "Nf9", rules::IllegalReason::Unparseable),
        (START, "O-O", rules::IllegalReason::CastlingNotAllowed),
        (
            "4k3/8/8/8/8/4r3/8/4K3 w - - 0 1",
            "Ke2",
            rules::IllegalReason::LeavesKingInCheck,
        ),
        (
            "4k3/P7/8/8/8/8/8/4K3 w - - 0 1",
            "a7a8",
            rules::IllegalReason::PromotionRequired,
        ),
        (
            "4k3/8/8/8/8/8/8/2N1K1N1 w - - 0 1",
            "Ne2",
            rules::IllegalReason::Ambiguous,
        ),
        (
            "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",
            "Kh7",
            rules::IllegalReason::GameOver,
        ),
    ] {
        let r = s
            .client
            .validate_move(validate(chess(fen), mv))
            .await
            .unwrap()
            .into_inner();
        let Some(rules::validate_move_response::Result::Illegal(illegal)) = r.result else {
            panic!("{mv}: {r:?}")
        };
        assert_eq!(illegal.reason, reason as i32, "{mv}: {}", illegal.message);
        assert!(illegal.message.contains(mv), "{}", illegal.message);
    }
    s.stop().await;
}

#[tokio::test]
async fn malformed_requests_are_invalid_argument_naming_the_field() {
    let mut s = start().await;
    let bad = |variant: Variant, text: &str| {
        validate(
            Some(common::Position {
                variant: variant as i32,
                text: text.to_owned(),
                ..Default::default()
            }),
            "e2e4",
        )
    };
    let cases = [
        (bad(Variant::Chess, "8/8/8 w - - 0 1"), "position.text"),
        (
            bad(Variant::Chess, "4k3/8/8/8/8/8/8/4K3 w KQ - 0 1"),
            "position.text",
        ),
        (bad(Variant::Unspecified, ""), "position.variant"),
        (bad(Variant::Glinski, "k/3/5 w - 0 1"), "position.text"),
        (
            bad(Variant::Crazyhouse, "4k3/8/8/8/8/8/8/4K3[K] w - - 0 1"),
            "position.text",
        ),
        (validate(None, "e2e4"), "position"),
    ];
    for (req, field) in cases {
        let status = s.client.validate_move(req).await.unwrap_err();
        assert_field_error(status, Code::InvalidArgument, field);
    }
    let mut unknown = bad(Variant::Chess, "");
    unknown.position.as_mut().unwrap().variant = 99;
    assert_field_error(
        s.client.validate_move(unknown).await.unwrap_err(),
        Code::InvalidArgument,
        "position.variant",
    );
    s.stop().await;
}

#[tokio::test]
async fn streaming_validation_answers_in_order_and_survives_bad_requests() {
    let mut s = start().await;
    let mut reqs = Vec::new();
    for i in 0..100 {
        let (pos, mv) = match i % 4 {
            0 => (chess(START), "e4"),
            1 => (chess(START), "e5"),
            2 => (chess("not a fen"), "e4"),
            _ => (chess("4k3/8/8/8/8/8/8/4K2R w K - 0 1"), "O-O"),
        };
        let mut r = validate(pos, mv);
        r.request_id = format!("r{i}");
        reqs.push(rules::ValidateMoveStreamRequest { request: Some(r) });
    }
    let mut stream = s
        .client
        .validate_move_stream(tokio_stream::iter(reqs))
        .await
        .unwrap()
        .into_inner();
    let mut i = 0;
    while let Some(resp) = stream.message().await.unwrap() {
        let resp = resp.response.unwrap();
        assert_eq!(resp.request_id, format!("r{i}"));
        use rules::validate_move_response::Result as R;
        match (i % 4, resp.result.unwrap()) {
            (0 | 3, R::Legal(_)) => {}
            (1, R::Illegal(_)) => {}
            (2, R::Error(e)) => assert_eq!(e.field, "position.text"),
            (k, other) => panic!("request {i} (kind {k}): {other:?}"),
        }
        i += 1;
    }
    assert_eq!(i, 100);
    s.stop().await;
}

#[tokio::test]
async fn list_apply_status_convert() {
    let mut s = start().await;
    let r = s
        .client
        .list_legal_moves(rules::ListLegalMovesRequest {
            position: chess(START),
            locale: common::Locale::Italian as i32,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.moves.len(), 20);
    assert!(r.moves.iter().any(|m| m.uci == "g1f3" && m.san == "Cf3"));

    let moves: Vec<String> = ["e4", "e5", "Nf3", "Nc6"].map(String::from).into();
    let r = s
        .client
        .apply_moves(rules::ApplyMovesRequest {
            start: chess(START),
            moves: moves.clone(),
            include_intermediate: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.moves.len(), 4);
    assert_eq!(r.moves[2].r#move.as_ref().unwrap().uci, "g1f3");
    assert!(r.moves[0].position_after.contains(" b KQkq "));
    assert_eq!(r.status.unwrap().summary, "ongoing");

    let mut bad = moves.clone();
    bad.insert(2, "Ke3".into());
    let status = s
        .client
        .apply_moves(rules::ApplyMovesRequest {
            start: chess(START),
            moves: bad,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_field_error(status, Code::InvalidArgument, "moves[2]");
    let status = s
        .client
        .apply_moves(rules::ApplyMovesRequest {
            start: chess(START),
            moves: vec!["e4".into(); 65],
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_field_error(status, Code::ResourceExhausted, "moves");

    let cycle: Vec<String> = "Nf3 Nf6 Ng1 Ng8 Nf3 Nf6 Ng1 Ng8"
        .split(' ')
        .map(String::from)
        .collect();
    let r = s
        .client
        .get_game_status(rules::GetGameStatusRequest {
            start: chess(START),
            moves: cycle,
            notation: common::MoveNotation::San as i32,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let status = r.status.unwrap();
    assert_eq!(
        status.claimable_draws,
        vec![common::DrawClaim::ThreefoldRepetition as i32]
    );
    assert_eq!(status.repetition_count, 3);
    assert!(status.outcome.is_none());

    let r = s
        .client
        .get_game_status(rules::GetGameStatusRequest {
            start: chess(START),
            moves: "f3 e5 g4 Qh4".split(' ').map(String::from).collect(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let outcome = r.status.unwrap().outcome.unwrap();
    assert_eq!(outcome.reason, common::EndReason::Checkmate as i32);
    assert_eq!(outcome.score.unwrap().black_quarters, 4);
    assert!(outcome.automatic);

    let r = s
        .client
        .convert_move(rules::ConvertMoveRequest {
            position: chess(START),
            r#move: "Cf3".into(),
            notation: common::MoveNotation::San as i32,
            input_locale: common::Locale::Italian as i32,
            output_locale: common::Locale::English as i32,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        r.r#move.unwrap(),
        common::Move {
            uci: "g1f3".into(),
            san: "Nf3".into()
        }
    );
    let status = s
        .client
        .convert_move(rules::ConvertMoveRequest {
            position: chess(START),
            r#move: "e2e5".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_field_error(status, Code::InvalidArgument, "move");
    s.stop().await;
}

#[tokio::test]
async fn pgn_import_and_export() {
    let mut s = start().await;
    let pgn = "[White \"a\"]\n\n1. e4 e5 2. Nf3 (2. f4) Nc6 1-0\n\n[FEN \"4k3/8/8/8/8/8/8/R3K3 w - - 0 1\"]\n\n1. Ra8+ Kd7 *\n";
    let r = s
        .client
        .import_pgn(rules::ImportPgnRequest {
            pgn: pgn.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.games.len(), 2);
    assert_eq!(r.games[0].moves.len(), 4);
    assert_eq!(r.games[0].result, "1-0");
    assert!(
        r.games[0]
            .normalized_pgn
            .contains("2. Nf3 (2. f4) 2... Nc6 1-0")
    );
    assert_eq!(
        r.games[1].start.as_ref().unwrap().text,
        "4k3/8/8/8/8/8/8/R3K3 w - - 0 1"
    );
    assert_eq!(r.games[1].moves[0].san, "Ra8+");

    for (pgn, code) in [
        ("1. e4 e5 2. Ke3 *", Code::InvalidArgument),
        ("1. e4 {", Code::InvalidArgument),
        (&*"1. e4 ".repeat(1000), Code::ResourceExhausted),
    ] {
        let status = s
            .client
            .import_pgn(rules::ImportPgnRequest {
                pgn: pgn.into(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_field_error(status, code, "pgn");
    }

    let r = s
        .client
        .export_pgn(rules::ExportPgnRequest {
            start: chess(START),
            moves: "f3 e5 g4 Qh4".split(' ').map(String::from).collect(),
            tags: vec![rules::Tag {
                name: "White".into(),
                value: "Fool".into(),
            }],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(r.pgn.contains("[White \"Fool\"]"));
    assert!(r.pgn.contains("[Result \"0-1\"]"));
    assert!(r.pgn.contains("1. f3 e5 2. g4 Qh4# 0-1"));
    let status = s
        .client
        .export_pgn(rules::ExportPgnRequest {
            start: chess(START),
            tags: vec![rules::Tag {
                name: "Bad Name".into(),
                value: String::new(),
            }],
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_field_error(status, Code::InvalidArgument, "tags[0].name");
    s.stop().await;
}

#[tokio::test]
async fn perft_with_budget() {
    let mut s = start().await;
    let perft = |depth, node_budget, divide| rules::PerftRequest {
        position: chess(START),
        depth,
        node_budget,
        divide,
    };
    let r = s
        .client
        .perft(perft(3, 0, false))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.nodes, 8902);
    let r = s
        .client
        .perft(perft(2, 400, true))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.nodes, 400);
    assert_eq!(r.divide.len(), 20);
    assert_eq!(r.divide[0].uci, "a2a3");
    // Over the request's budget, and over the server's cap (1M) even with a larger budget.
    assert_field_error(
        s.client.perft(perft(3, 8901, false)).await.unwrap_err(),
        Code::ResourceExhausted,
        "node_budget",
    );
    assert_field_error(
        s.client.perft(perft(5, u64::MAX, false)).await.unwrap_err(),
        Code::ResourceExhausted,
        "node_budget",
    );
    assert_field_error(
        s.client.perft(perft(13, 0, false)).await.unwrap_err(),
        Code::InvalidArgument,
        "depth",
    );
    s.client.ping(rules::PingRequest {}).await.unwrap();
    s.stop().await;
}

#[tokio::test]
async fn oversize_message_is_refused() {
    let mut s = start().await;
    let mut req = validate(chess(START), "e4");
    req.request_id = "x".repeat(100 * 1024);
    let status = s.client.validate_move(req).await.unwrap_err();
    assert!(status.code() == Code::ResourceExhausted, "{status:?}");
    s.stop().await;
}

#[tokio::test]
async fn health_and_reflection() {
    let s = start().await;
    let mut health = tonic_health::pb::health_client::HealthClient::new(s.server.channel());
    for service in ["", "arbiter.rules.v1.RulesService"] {
        let r = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            r.status,
            tonic_health::pb::health_check_response::ServingStatus::Serving as i32,
            "{service}"
        );
    }

    use tonic_reflection::pb::v1::{
        ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
        server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
    };
    let mut reflection = ServerReflectionClient::new(s.server.channel());
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
    for expected in ["arbiter.rules.v1.RulesService", "grpc.health.v1.Health"] {
        assert!(names.iter().any(|n| n == expected), "{names:?}");
    }
    s.stop().await;
}

#[tokio::test]
async fn shutdown_completes_in_flight_requests() {
    let s = start_with(ServeConfig::default(), Limits::default()).await;
    let mut client = s.client.clone();
    // Long enough (about a second in either build) to still be running at shutdown.
    let (depth, nodes) = if cfg!(debug_assertions) {
        (5, 4_865_609)
    } else {
        (6, 119_060_324)
    };
    let in_flight = tokio::spawn(async move {
        client
            .perft(rules::PerftRequest {
                position: chess(START),
                depth,
                ..Default::default()
            })
            .await
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    s.stop().await;
    let r = in_flight.await.unwrap().unwrap().into_inner();
    assert_eq!(r.nodes, nodes);
}

/// A position of any variant, with rule options.
fn position_of(variant: Variant, text: &str, rules: &[(&str, &str)]) -> Option<common::Position> {
    Some(common::Position {
        variant: variant as i32,
        text: text.to_owned(),
        rules: rules
            .iter()
            .map(|(n, v)| common::RuleOption {
                name: (*n).into(),
                value: (*v).into(),
            })
            .collect(),
    })
}

/// Every Byzantine ending, reached by a move through the service, with its reason and score.
#[tokio::test]
async fn byzantine_endings_through_the_service() {
    use common::EndReason as R;
    let mut s = start().await;
    /// Variant, start position, rule options, moves, expected reason and score.
    type Case<'a> = (
        Variant,
        &'a str,
        &'a [(&'a str, &'a str)],
        &'a [&'a str],
        R,
        &'a str,
    );
    let cases: [Case; 8] = [
        // Checkmate: the rook swings to a8, attacking a1 both ways round ring a.
        (
            Variant::Byzantine,
            "k15/4R6n4/7R8/8K7 w 0 1",
            &[],
            &["c8a8"],
            R::Checkmate,
            "1-0",
        ),
        // Checkmate judged before the bare-king rule.
        (
            Variant::Byzantine,
            "k6R8/4R11/16/8K7 b 0 1",
            &[],
            &[],
            R::Checkmate,
            "1-0",
        ),
        // Stalemate: black (to move) wins by default, loses under the option.
        (
            Variant::Byzantine,
            "k15/4R11/2R1p+E9R/8K7 w 0 1",
            &[],
            &["c3c2"],
            R::Stalemate,
            "0-1",
        ),
        (
            Variant::Byzantine,
            "k15/4R11/2R1p+E9R/8K7 w 0 1",
            &[("stalemate", "loses")],
            &["c3c2"],
            R::Stalemate,
            "1-0",
        ),
        // Bare king lost: the last black piece is taken and black's reprieve move takes nothing.
        (
            Variant::Byzantine,
            "k8n6/4R11/16/8K7 w 0 1",
            &[],
            &["b5b10", "a1a2", "b10a10", "a2b2"],
            R::BareKing,
            "1-0",
        ),
        // Bare king reprieved: black takes white's last piece at once: both kings bare.
        (
            Variant::Byzantine,
            "kR14/16/16/8K7 b 0 1",
            &[],
            &["a1a2"],
            R::BareKing,
            "1/2-1/2",
        ),
        (
            Variant::Byzantine,
            "k15/16/16/8K7 w 0 1",
            &[],
            &[],
            R::BareKing,
            "1/2-1/2",
        ),
        // Citadel entry: a draw.
        (
            Variant::ByzantineCitadel,
            "k15/4R6r4/16/9K6/4 w 0 1",
            &[],
            &["d10e3"],
            R::CitadelEntry,
            "1/2-1/2",
        ),
    ];
    for (variant, text, rules, moves, reason, score) in cases {
        let r = s
            .client
            .get_game_status(rules::GetGameStatusRequest {
                start: position_of(variant, text, rules),
                moves: moves.iter().map(|m| (*m).to_owned()).collect(),
                ..Default::default()
            })
            .await
            .unwrap_or_else(|e| panic!("{text} {moves:?}: {e:?}"))
            .into_inner();
        let outcome = r
            .status
            .unwrap()
            .outcome
            .unwrap_or_else(|| panic!("{text} {moves:?}: no outcome"));
        assert_eq!(
            outcome.reason, reason as i32,
            "{text} {moves:?}: {}",
            outcome.reason_name
        );
        assert_eq!(outcome.score.unwrap().text, score, "{text} {moves:?}");
        assert!(outcome.automatic);
    }

    // Facing pawns: removed by the move, and the option keeps them.
    let validate_pawn = |rules: &[(&str, &str)]| rules::ValidateMoveRequest {
        position: position_of(Variant::Byzantine, "2P+1p-11/16/k15/8K7 w 0 1", rules),
        r#move: "a3a4".into(),
        ..Default::default()
    };
    let after = |r: rules::ValidateMoveResponse| match r.result {
        Some(rules::validate_move_response::Result::Legal(l)) => l.position_after.unwrap(),
        other => panic!("{other:?}"),
    };
    let removed = after(
        s.client
            .validate_move(validate_pawn(&[]))
            .await
            .unwrap()
            .into_inner(),
    );
    assert_eq!(removed.text, "16/16/k15/8K7 b 0 1");
    let kept = after(
        s.client
            .validate_move(validate_pawn(&[("facing_pawns", "off")]))
            .await
            .unwrap()
            .into_inner(),
    );
    assert_eq!(kept.text, "3P+p-11/16/k15/8K7 b 0 1");
    assert_eq!(
        kept.rules.len(),
        1,
        "the position after carries the game's options"
    );

    // A non-king may not enter a citadel; options a variant lacks are refused.
    let r = s
        .client
        .validate_move(rules::ValidateMoveRequest {
            position: position_of(Variant::ByzantineCitadel, "k15/4R6r4/16/9KR5/4 w 0 1", &[]),
            r#move: "d11e3".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(matches!(
        r.result,
        Some(rules::validate_move_response::Result::Illegal(_))
    ));
    let status = s
        .client
        .validate_move(rules::ValidateMoveRequest {
            position: position_of(Variant::Chess, "", &[("stalemate", "loses")]),
            r#move: "e4".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_field_error(status, Code::InvalidArgument, "position.rules");
    let r = s
        .client
        .perft(rules::PerftRequest {
            position: position_of(Variant::Byzantine, "", &[]),
            depth: 3,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.nodes, 2912);
    s.stop().await;
}

const GLINSKI_START: &str =
    "b/qbk/n1b1n/r5r/ppppppppp/11/5P5/4P1P4/3P1B1P3/2P2B2P2/1PRNQBKNRP1 w - 0 1";

fn glinski(text: &str) -> Option<common::Position> {
    position_of(Variant::Glinski, text, &[])
}

/// Every RPC on Glinski positions: validation (both notations, every illegal reason the
/// variant has, in-band stream errors), listing, applying, status with the ¾–¼ stalemate,
/// conversion, PGN import/export, perft, and precise errors for bad position strings.
#[tokio::test]
async fn glinski_through_every_rpc() {
    use rules::validate_move_response::Result as V;
    let mut s = start().await;

    // ValidateMove: record notation in, coordinate and record notation out.
    let r = s
        .client
        .validate_move(rules::ValidateMoveRequest {
            position: glinski(""),
            r#move: "Qe1-c3".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let Some(V::Legal(legal)) = r.result else {
        panic!("{r:?}")
    };
    let m = legal.r#move.unwrap();
    assert_eq!((m.uci.as_str(), m.san.as_str()), ("e1c3", "Qe1-c3"));
    assert_eq!(
        legal.position_after.unwrap().text,
        "b/qbk/n1b1n/r5r/ppppppppp/11/5P5/4P1P4/2QP1B1P3/2P2B2P2/1PRN1BKNRP1 b - 1 1"
    );
    for (mv, reason) in [
        ("f5f8", rules::IllegalReason::CannotReach),
        ("e1e5", rules::IllegalReason::Blocked),
        ("f6f7", rules::IllegalReason::NoPiece),
        ("f7f6", rules::IllegalReason::WrongSide),
        ("j4j5", rules::IllegalReason::Unparseable),
    ] {
        let r = s
            .client
            .validate_move(rules::ValidateMoveRequest {
                position: glinski(""),
                r#move: mv.into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let Some(V::Illegal(illegal)) = r.result else {
            panic!("{mv}: {r:?}")
        };
        assert_eq!(illegal.reason, reason as i32, "{mv}: {}", illegal.message);
    }

    // The stream: good, illegal and malformed requests, answered in order.
    let reqs = [
        rules::ValidateMoveRequest {
            position: glinski(""),
            r#move: "f5-f6".into(),
            ..Default::default()
        },
        rules::ValidateMoveRequest {
            position: glinski("k/3/5 w - 0 1"),
            r#move: "f5-f6".into(),
            ..Default::default()
        },
    ]
    .map(|r| rules::ValidateMoveStreamRequest { request: Some(r) });
    let mut stream = s
        .client
        .validate_move_stream(tokio_stream::iter(reqs))
        .await
        .unwrap()
        .into_inner();
    let mut next = async || stream.message().await.unwrap().unwrap().response.unwrap();
    assert!(matches!(next().await.result, Some(V::Legal(_))));
    match next().await.result {
        Some(V::Error(e)) => assert_eq!(e.field, "position.text"),
        other => panic!("{other:?}"),
    }

    // ListLegalMoves and Perft.
    let r = s
        .client
        .list_legal_moves(rules::ListLegalMovesRequest {
            position: glinski(GLINSKI_START),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.moves.len(), 51);
    let r = s
        .client
        .perft(rules::PerftRequest {
            position: glinski(""),
            depth: 3,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.nodes, 137_858);

    // ApplyMoves and GetGameStatus: the stalemating side scores 3/4.
    let r = s
        .client
        .apply_moves(rules::ApplyMovesRequest {
            start: glinski("k/3/5/2K4/9/11/11/11/11/11/10N w - 0 1"),
            moves: vec!["Ke8-f9".into()],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let outcome = r.status.unwrap().outcome.unwrap();
    assert_eq!(outcome.reason, common::EndReason::Stalemate as i32);
    let score = outcome.score.unwrap();
    assert_eq!(
        (
            score.white_quarters,
            score.black_quarters,
            score.text.as_str()
        ),
        (3, 1, "3/4-1/4")
    );
    let r = s
        .client
        .get_game_status(rules::GetGameStatusRequest {
            start: glinski("k/3/2K2/7/9/11/11/11/11/11/3R7 w - 0 1"),
            moves: vec!["d1d9".into()],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let outcome = r.status.unwrap().outcome.unwrap();
    assert_eq!(outcome.reason, common::EndReason::Checkmate as i32);
    assert_eq!(outcome.score.unwrap().text, "1-0");

    // ConvertMove: coordinate to record form, Italian letters.
    let r = s
        .client
        .convert_move(rules::ConvertMoveRequest {
            position: glinski(""),
            r#move: "e1c3".into(),
            output_locale: common::Locale::Italian as i32,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.r#move.unwrap().san, "De1-c3");

    // ExportPgn then ImportPgn.
    let r = s
        .client
        .export_pgn(rules::ExportPgnRequest {
            start: glinski(""),
            moves: vec!["f5f6".into(), "e7e6".into()],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(r.pgn.contains("[Variant \"Glinski\"]"), "{}", r.pgn);
    assert!(r.pgn.contains("1. f5-f6 e7-e6"), "{}", r.pgn);
    let r = s
        .client
        .import_pgn(rules::ImportPgnRequest {
            pgn: r.pgn,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.games[0].moves.len(), 2);
    assert_eq!(
        r.games[0].start.as_ref().unwrap().variant,
        Variant::Glinski as i32
    );

    // Bad position strings are INVALID_ARGUMENT naming the field.
    for text in [
        "k/3/5 w - 0 1",
        "b/qbk/n1b1n/r5r/ppppppppp/11/5P5/4P1P4/3P1B1P3/2P2B2P2/1PRNQBKNRP1 w f6 0 1",
    ] {
        let status = s
            .client
            .list_legal_moves(rules::ListLegalMovesRequest {
                position: glinski(text),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_field_error(status, Code::InvalidArgument, "position.text");
    }
    s.stop().await;
}

/// Crazyhouse and bughouse boards through the service: drops in both notations, a drop of a
/// piece not held, and the bughouse mate rule (a blockable check is not mate).
#[tokio::test]
async fn crazyhouse_and_bughouse_boards() {
    use rules::validate_move_response::Result as V;
    let mut s = start().await;
    let zh = |text: &str| position_of(Variant::Crazyhouse, text, &[]);
    let r = s
        .client
        .validate_move(rules::ValidateMoveRequest {
            position: zh("4k3/8/8/8/8/8/8/4K3[Np] w - - 0 1"),
            r#move: "N@f3".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let Some(V::Legal(legal)) = r.result else {
        panic!("{r:?}")
    };
    assert_eq!(legal.r#move.unwrap().uci, "N@f3");
    assert_eq!(
        legal.position_after.unwrap().text,
        "4k3/8/8/8/8/5N2/8/4K3[p] b - - 1 1"
    );
    let r = s
        .client
        .validate_move(rules::ValidateMoveRequest {
            position: zh("4k3/8/8/8/8/8/8/4K3[Np] w - - 0 1"),
            r#move: "Q@f3".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let Some(V::Illegal(illegal)) = r.result else {
        panic!("{r:?}")
    };
    assert_eq!(illegal.reason, rules::IllegalReason::NotInReserve as i32);
    for (variant, outcome) in [(Variant::Crazyhouse, true), (Variant::Bughouse, false)] {
        let r = s
            .client
            .get_game_status(rules::GetGameStatusRequest {
                start: position_of(variant, "6k1/8/8/8/8/8/5PPP/r5K1 w - - 0 1", &[]),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.status.unwrap().outcome.is_some(), outcome, "{variant:?}");
    }
    let status = s
        .client
        .list_legal_moves(rules::ListLegalMovesRequest {
            position: zh("4k3/8/8/8/8/8/8/4K3[Np w - - 0 1"),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_field_error(status, Code::InvalidArgument, "position.text");
    s.stop().await;
}

/// Chess960 through the service: a start position by number, castling in both UCI forms and in
/// SAN, PGN with its variant and start, perft, and ReadPosition (Shredder-FEN, the start's
/// number, lenient reading with its corrections).
#[tokio::test]
async fn chess960_and_position_import() {
    let mut s = start().await;
    let c960 = |text: &str| position_of(Variant::Chess960, text, &[]);
    // King g1 with rooks a1 and h1: castling short leaves the king where it is; UCI writes it
    // as the king taking its rook, SAN as O-O, and the standard form g1g1 cannot name it.
    let fen = "1r4k1/8/8/8/8/8/8/R5KR w HA - 0 1";
    let r = s
        .client
        .validate_move(validate(c960(fen), "g1h1"))
        .await
        .unwrap()
        .into_inner();
    let Some(rules::validate_move_response::Result::Legal(legal)) = r.result else {
        panic!("{r:?}")
    };
    let m = legal.r#move.unwrap();
    assert_eq!((m.uci.as_str(), m.san.as_str()), ("g1h1", "O-O"));
    let after = legal.position_after.unwrap();
    assert_eq!(after.variant, Variant::Chess960 as i32);
    assert_eq!(after.text, "1r4k1/8/8/8/8/8/8/R4RK1 b - - 1 1");
    // Castling long: the king goes to c1, the rook to d1; both forms are read.
    for text in ["g1a1", "g1c1", "O-O-O"] {
        let r = s
            .client
            .convert_move(rules::ConvertMoveRequest {
                position: c960(fen),
                r#move: text.into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let m = r.r#move.unwrap();
        assert_eq!(
            (m.uci.as_str(), m.san.as_str()),
            ("g1a1", "O-O-O"),
            "{text}"
        );
    }
    // Standard chess refuses the Chess960 rights, naming the field and the variant to use.
    let err = s
        .client
        .list_legal_moves(rules::ListLegalMovesRequest {
            position: chess(fen),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(err.message().contains("chess960"), "{err:?}");
    assert_field_error(err, Code::InvalidArgument, "position.text");

    // A start position by its number; ReadPosition names it and writes Shredder-FEN.
    let r = s
        .client
        .read_position(rules::ReadPositionRequest {
            position: c960("518"),
            lenient: false,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        r.position.unwrap().text,
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
    );
    assert_eq!(
        r.shredder_fen,
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAha - 0 1"
    );
    assert_eq!(r.chess960_start, Some(518));
    for bad in ["960", "99999999999999999999"] {
        let err = s
            .client
            .read_position(rules::ReadPositionRequest {
                position: c960(bad),
                lenient: true,
            })
            .await
            .unwrap_err();
        assert_field_error(err, Code::InvalidArgument, "position.text");
    }

    // Perft of start position 0 (python-chess: 20, 400, 9006).
    let r = s
        .client
        .perft(rules::PerftRequest {
            position: c960("0"),
            depth: 3,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.nodes, 9006);

    // Lenient import: strict refuses, lenient drops and says what it dropped.
    let pasted = "4k3/8/8/8/8/8/8/1R2K3 w KQ e6 0 1";
    let err = s
        .client
        .read_position(rules::ReadPositionRequest {
            position: chess(pasted),
            lenient: false,
        })
        .await
        .unwrap_err();
    assert_field_error(err, Code::InvalidArgument, "position.text");
    let r = s
        .client
        .read_position(rules::ReadPositionRequest {
            position: chess(pasted),
            lenient: true,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.position.unwrap().text, "4k3/8/8/8/8/8/8/1R2K3 w - - 0 1");
    let fields: Vec<&str> = r.corrections.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(fields, ["castling", "castling", "en_passant"]);
    assert!(
        r.corrections[2].message.contains("e6"),
        "{:?}",
        r.corrections
    );
    // The same text as Chess960 keeps the b1 rook's right.
    let r = s
        .client
        .read_position(rules::ReadPositionRequest {
            position: c960(pasted),
            lenient: true,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.position.unwrap().text, "4k3/8/8/8/8/8/8/1R2K3 w Q - 0 1");
    assert_eq!(r.shredder_fen, "4k3/8/8/8/8/8/8/1R2K3 w B - 0 1");
    assert_eq!(r.chess960_start, None);

    // PGN export of a Chess960 game names the variant and its start; import reads it back.
    let pgn = s
        .client
        .export_pgn(rules::ExportPgnRequest {
            start: c960("0"),
            moves: vec!["g2g3".into(), "g7g6".into()],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .pgn;
    assert!(pgn.contains("[Variant \"Chess960\"]"), "{pgn}");
    assert!(pgn.contains("[SetUp \"1\"]"), "{pgn}");
    assert!(
        pgn.contains("[FEN \"bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w KQkq - 0 1\"]"),
        "{pgn}"
    );
    let games = s
        .client
        .import_pgn(rules::ImportPgnRequest {
            pgn,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .games;
    assert_eq!(games.len(), 1, "{games:?}");
}

fn render(variant: Variant, text: &str) -> rules::RenderBoardRequest {
    rules::RenderBoardRequest {
        position: Some(common::Position {
            variant: variant as i32,
            text: text.to_owned(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[tokio::test]
async fn render_board_draws_every_variant_with_its_marks() {
    let mut s = start().await;
    let marks = |svg: &str| svg.matches(r#"class="last-move""#).count();
    // Every variant's start, drawn plain.
    for variant in [
        Variant::Chess,
        Variant::Crazyhouse,
        Variant::Bughouse,
        Variant::Glinski,
        Variant::Byzantine,
        Variant::ByzantineCitadel,
        Variant::Chess960,
    ] {
        let r = s
            .client
            .render_board(render(variant, START))
            .await
            .unwrap_or_else(|e| panic!("{variant:?}: {e}"))
            .into_inner();
        assert!(r.svg.starts_with("<svg"), "{variant:?}");
        assert!(r.svg.trim_end().ends_with("</svg>"), "{variant:?}");
        assert!(r.svg.contains(r#"class="piece""#), "{variant:?}");
        assert_eq!(marks(&r.svg), 0, "{variant:?}");
        assert!(!r.check);
        assert_eq!(r.position.unwrap().variant, variant as i32);
    }

    // After moves: the last one tinted, the mated king marked.
    let mut req = render(Variant::Chess, START);
    req.moves = ["f3", "e5", "g4", "Qh4#"].map(String::from).to_vec();
    req.notation = common::MoveNotation::San as i32;
    let r = s.client.render_board(req).await.unwrap().into_inner();
    assert!(r.check);
    assert_eq!(marks(&r.svg), 2);
    assert_eq!(r.svg.matches(r#"class="check""#).count(), 1);
    assert_eq!(
        r.position.unwrap().text,
        "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3"
    );

    // A bughouse board with its reserves, its last move named by its form alone.
    let mut req = render(
        Variant::Bughouse,
        "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R[Pp] b KQkq - 2 3",
    );
    req.last_move = "g1f3".into();
    let r = s.client.render_board(req).await.unwrap().into_inner();
    assert_eq!(marks(&r.svg), 2);
    assert!(r.svg.contains("reserve-panel"));
    let mut req = render(Variant::Bughouse, START);
    req.last_move = "N@f3".into();
    let r = s.client.render_board(req).await.unwrap().into_inner();
    assert_eq!(marks(&r.svg), 1);

    // Refusals name their field.
    let mut req = render(Variant::Glinski, START);
    req.last_move = "e2e4x".into();
    let e = s.client.render_board(req).await.unwrap_err();
    assert_field_error(e, Code::InvalidArgument, "last_move");
    let mut req = render(Variant::Chess, START);
    req.moves = vec!["e2e4".into()];
    req.last_move = "e2e4".into();
    let e = s.client.render_board(req).await.unwrap_err();
    assert_field_error(e, Code::InvalidArgument, "last_move");
    let mut req = render(Variant::Chess, START);
    req.moves = vec!["e2e4".into(), "e2e4".into()];
    let e = s.client.render_board(req).await.unwrap_err();
    assert_field_error(e, Code::InvalidArgument, "moves[1]");
    let e = s
        .client
        .render_board(render(Variant::Chess, "8/8/8 w - - 0 1"))
        .await
        .unwrap_err();
    assert_field_error(e, Code::InvalidArgument, "position.text");
    let mut req = render(Variant::Chess, START);
    req.moves = vec!["e2e4".into(); 65];
    let e = s.client.render_board(req).await.unwrap_err();
    assert_field_error(e, Code::ResourceExhausted, "moves");
    s.stop().await;
}
