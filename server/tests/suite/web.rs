//! Browsers on the whole server: gRPC-web calls over HTTP/1.1 on the gRPC port (unary and
//! server-streaming, refusals included), the static files of `--web-root` beside them, and the
//! CORS answers of `--web-allow-origin`.

use arbiter_kit::access::AccessPolicy;
use arbiter_kit::keys::KeySet;
use arbiter_proto::common::v1 as common;
use arbiter_proto::matches::v1 as pb;
use arbiter_proto::rules::v1 as rules;
use arbiter_server::{ServerConfig, serve};
use bytes::{Buf, Bytes};
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, StatusCode};
use prost::Message;
use std::net::SocketAddr;
use std::path::PathBuf;

/// A server on a free loopback port; dropping the sender stops it.
async fn start(config: ServerConfig) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    tokio::spawn(serve(listener, config, async {
        let _ = stopped.await;
    }));
    (addr, stop)
}

/// A folder with a page and a script in it.
fn site() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "arbiter-web-{}-{}",
        std::process::id(),
        arbiter_kit::process_now()
    ));
    std::fs::create_dir_all(dir.join("js")).unwrap();
    std::fs::write(
        dir.join("index.html"),
        "<!doctype html><title>Arbiter</title>",
    )
    .unwrap();
    std::fs::write(dir.join("js/app.js"), "export const ok = true;\n").unwrap();
    dir
}

/// One HTTP/1.1 exchange on a fresh connection: the status, headers and whole body.
async fn http1(addr: SocketAddr, request: Request<Full<Bytes>>) -> (Response<()>, Bytes) {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    let response = sender.send_request(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    (Response::from_parts(parts, ()), body)
}

fn get(addr: SocketAddr, path: &str) -> Request<Full<Bytes>> {
    Request::get(format!("http://{addr}{path}"))
        .header("host", addr.to_string())
        .body(Full::default())
        .unwrap()
}

/// A gRPC-web (binary) call of `path` with `message`, and extra headers.
fn grpc_web(
    addr: SocketAddr,
    path: &str,
    message: &impl Message,
    headers: &[(&str, &str)],
) -> Request<Full<Bytes>> {
    let payload = message.encode_to_vec();
    let mut body = vec![0u8];
    body.extend_from_slice(&u32::try_from(payload.len()).unwrap().to_be_bytes());
    body.extend_from_slice(&payload);
    let mut request = Request::post(format!("http://{addr}{path}"))
        .header("host", addr.to_string())
        .header("content-type", "application/grpc-web+proto")
        .header("x-grpc-web", "1");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.body(Full::new(Bytes::from(body))).unwrap()
}

/// A gRPC-web answer's data messages and its status (from the trailer frame, or from the
/// headers of an answer without a body).
fn frames(response: &Response<()>, mut body: Bytes) -> (Vec<Bytes>, String) {
    let mut messages = Vec::new();
    let mut status = response
        .headers()
        .get("grpc-status")
        .map(|v| v.to_str().unwrap().to_owned());
    while body.has_remaining() {
        let flag = body.get_u8();
        let len = body.get_u32() as usize;
        let frame = body.split_to(len);
        if flag & 0x80 == 0 {
            messages.push(frame);
        } else {
            let text = String::from_utf8(frame.to_vec()).unwrap();
            for line in text.split("\r\n") {
                if let Some(code) = line.strip_prefix("grpc-status:") {
                    status = Some(code.trim().to_owned());
                }
            }
        }
    }
    (messages, status.expect("a grpc-status"))
}

#[tokio::test]
async fn grpc_web_and_static_files_share_the_grpc_port() {
    let root = site();
    let mut config = ServerConfig::default();
    config.serve.web_root = Some(root.clone());
    let (addr, _stop) = start(config).await;

    // The page and its script.
    let (response, body) = http1(addr, get(addr, "/")).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(body.starts_with(b"<!doctype html>"), "{body:?}");
    let (response, body) = http1(addr, get(addr, "/js/app.js")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let kind = response.headers()["content-type"].to_str().unwrap();
    assert!(kind.contains("javascript"), "{kind}");
    assert_eq!(&body[..], b"export const ok = true;\n");
    // Nothing outside the root, nothing that is not there.
    std::fs::write(root.parent().unwrap().join("secret.txt"), "no").ok();
    for path in ["/../secret.txt", "/%2e%2e/secret.txt", "/missing.html"] {
        let (response, _) = http1(addr, get(addr, path)).await;
        assert!(
            response.status().is_client_error(),
            "{path}: {}",
            response.status()
        );
    }

    // A unary call over gRPC-web: a Glinski board drawn after a move.
    let request = rules::RenderBoardRequest {
        position: Some(common::Position {
            variant: common::Variant::Glinski as i32,
            ..Default::default()
        }),
        moves: vec!["f5f6".into()],
        ..Default::default()
    };
    let path = "/arbiter.rules.v1.RulesService/RenderBoard";
    let (response, body) = http1(addr, grpc_web(addr, path, &request, &[])).await;
    assert_eq!(response.status(), StatusCode::OK);
    let kind = response.headers()["content-type"].to_str().unwrap();
    assert!(kind.starts_with("application/grpc-web"), "{kind}");
    let (messages, status) = frames(&response, body);
    assert_eq!(status, "0");
    let answer = rules::RenderBoardResponse::decode(messages[0].clone()).unwrap();
    assert!(answer.svg.starts_with("<svg"), "{}", &answer.svg[..40]);
    assert_eq!(answer.svg.matches(r#"class="last-move""#).count(), 2);

    // A refusal travels as a status, with the field named.
    let bad = rules::RenderBoardRequest {
        last_move: "e2e4".into(),
        ..request.clone()
    };
    let (response, body) = http1(addr, grpc_web(addr, path, &bad, &[])).await;
    let (messages, status) = frames(&response, body);
    assert!(messages.is_empty());
    assert_eq!(status, "3", "INVALID_ARGUMENT");

    // A server stream over gRPC-web: a match's events, from a chosen sequence number.
    let mut matches =
        pb::match_service_client::MatchServiceClient::connect(format!("http://{addr}"))
            .await
            .unwrap();
    let created = matches
        .create_match(pb::CreateMatchRequest {
            variant: common::Variant::Chess as i32,
            players: vec!["ann".into(), "bob".into()],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let id = created.state.as_ref().unwrap().match_id.clone();
    let seat = |side: pb::Side| {
        created
            .seats
            .iter()
            .find(|s| s.seat.as_ref().unwrap().side == side as i32)
            .unwrap()
            .token
            .clone()
    };
    for (ply, (side, mv)) in [
        (pb::Side::White, "f2f3"),
        (pb::Side::Black, "e7e5"),
        (pb::Side::White, "g2g4"),
        (pb::Side::Black, "d8h4"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = tonic::Request::new(pb::MakeMoveRequest {
            match_id: id.clone(),
            side: side as i32,
            r#move: mv.into(),
            expected_ply: u32::try_from(ply).unwrap(),
            ..Default::default()
        });
        r.metadata_mut().insert(
            "authorization",
            format!("Bearer {}", seat(side)).parse().unwrap(),
        );
        matches.make_move(r).await.unwrap();
    }
    let watch = pb::WatchMatchRequest {
        match_id: id.clone(),
        after_seq: 1,
    };
    let path = "/arbiter.matches.v1.MatchService/WatchMatch";
    let (response, body) = http1(addr, grpc_web(addr, path, &watch, &[])).await;
    let (messages, status) = frames(&response, body);
    assert_eq!(status, "0", "the stream ends with the match");
    let events: Vec<pb::WatchMatchResponse> = messages
        .into_iter()
        .map(|m| pb::WatchMatchResponse::decode(m).unwrap())
        .collect();
    assert!(events.iter().all(|e| e.seq > 1), "{events:?}");
    let moves: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.event {
            Some(pb::watch_match_response::Event::Move(m)) => {
                Some(m.r#move.as_ref().unwrap().uci.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(moves, ["e7e5", "g2g4", "d8h4"]);
    assert!(matches!(
        events.last().unwrap().event,
        Some(pb::watch_match_response::Event::End(_))
    ));

    // With files served, a gRPC call to a method no service has is still UNIMPLEMENTED.
    let (response, body) = http1(
        addr,
        grpc_web(addr, "/arbiter.nothing.v1.Nothing/Call", &watch, &[]),
    )
    .await;
    assert_eq!(frames(&response, body).1, "12");
}

#[tokio::test]
async fn grpc_web_calls_pass_the_same_checks_and_cors_answers_allowed_origins() {
    let token = "platform-token-for-the-web-test-0123456789";
    let mut config = ServerConfig {
        access: AccessPolicy::with_keys(KeySet::platform_token(token).unwrap()),
        matches_key: Some(token.into()),
        ..ServerConfig::default()
    };
    config.serve.web_allow_origins = vec!["https://play.example.com".into()];
    let (addr, _stop) = start(config).await;
    let request = rules::RenderBoardRequest {
        position: Some(common::Position {
            variant: common::Variant::Byzantine as i32,
            ..Default::default()
        }),
        ..Default::default()
    };
    let path = "/arbiter.rules.v1.RulesService/RenderBoard";

    let (response, body) = http1(addr, grpc_web(addr, path, &request, &[])).await;
    assert_eq!(
        frames(&response, body).1,
        "16",
        "UNAUTHENTICATED without a key"
    );
    let (response, body) = http1(
        addr,
        grpc_web(addr, path, &request, &[("x-api-key", token)]),
    )
    .await;
    let (messages, status) = frames(&response, body);
    assert_eq!(status, "0");
    let answer = rules::RenderBoardResponse::decode(messages[0].clone()).unwrap();
    assert!(answer.svg.contains("<svg"));

    // The preflight of an allowed origin is answered (no key needed); another origin gets no
    // permission.
    let preflight = |origin: &str| {
        Request::options(format!("http://{addr}{path}"))
            .header("host", addr.to_string())
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "content-type,x-grpc-web,x-api-key",
            )
            .body(Full::default())
            .unwrap()
    };
    let (response, _) = http1(addr, preflight("https://play.example.com")).await;
    assert!(response.status().is_success(), "{}", response.status());
    let h = response.headers();
    assert_eq!(h["access-control-allow-origin"], "https://play.example.com");
    let allowed = h["access-control-allow-headers"].to_str().unwrap();
    assert!(allowed.contains("x-api-key"), "{allowed}");
    let (response, _) = http1(addr, preflight("https://evil.example.com")).await;
    assert!(
        !response
            .headers()
            .contains_key("access-control-allow-origin")
    );
    // The call itself from that origin can read its status.
    let (response, _) = http1(
        addr,
        grpc_web(
            addr,
            path,
            &request,
            &[("x-api-key", token), ("origin", "https://play.example.com")],
        ),
    )
    .await;
    let exposed = response.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap();
    assert!(exposed.contains("grpc-status"), "{exposed}");
}
