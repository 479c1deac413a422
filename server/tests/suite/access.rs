//! API keys on the whole server: every scoped method of every service, called with no key, with
//! a key that lacks its scope and with one that grants it; public, seated and spectating calls;
//! a key revoked by a reload of the keys file; per-client rate limits.
//!
//! Methods are called generically (one empty message on the method's path, read until the first
//! answer), so that the table in `arbiter_kit::access` is checked as the server applies it,
//! whatever each request needs: a call that gets past the keys is answered by its service (often
//! `INVALID_ARGUMENT` for an empty request) or stays open (a watch), never `UNAUTHENTICATED` or
//! `PERMISSION_DENIED` from the access layer.

use std::path::PathBuf;
use std::time::Duration;

use arbiter_kit::access::{AccessPolicy, METHODS, Rule, Scope};
use arbiter_kit::keys::{KeySet, new_key};
use arbiter_proto::rules::v1::{self as rules, rules_service_client::RulesServiceClient};
use arbiter_server::{ServerConfig, serve};
use arbiter_testkit::grpc::TestServer;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use tonic_types::StatusExt;

/// Calls `path` with one empty message and `key`: the first answer's status, or `Ok` when the
/// call is still open after a moment (a stream that got past the keys and waits).
async fn call(channel: &Channel, path: &'static str, key: Option<&str>) -> Result<(), Status> {
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready()
        .await
        .map_err(|e| Status::unknown(e.to_string()))?;
    let mut request = Request::new(tokio_stream::iter(vec![()]));
    if let Some(key) = key {
        request
            .metadata_mut()
            .insert("x-api-key", key.parse().unwrap());
    }
    let codec = tonic_prost::ProstCodec::<(), ()>::default();
    let answer = async {
        let mut stream = grpc
            .streaming(request, PathAndQuery::from_static(path), codec)
            .await?
            .into_inner();
        stream.message().await.map(drop)
    };
    tokio::time::timeout(Duration::from_millis(1500), answer)
        .await
        .unwrap_or(Ok(()))
}

/// Whether the access layer let the call through (whatever its service then answered).
fn passed(r: &Result<(), Status>) -> bool {
    match r {
        Ok(()) => true,
        Err(s) => !matches!(s.code(), Code::Unauthenticated | Code::PermissionDenied),
    }
}

fn code(r: &Result<(), Status>) -> Option<Code> {
    r.as_ref().err().map(Status::code)
}

/// A keys file in a fresh folder: one key per scope (its client named after the scope) and one
/// key with no scope; the keys by scope name (`""` for the scopeless one).
fn keys_file(name: &str) -> (PathBuf, Vec<(String, String, String)>) {
    let dir = std::env::temp_dir().join(format!(
        "arbiter-access-{name}-{}-{}",
        std::process::id(),
        arbiter_kit::process_now()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mut keys = Vec::new();
    for scope in Scope::ALL {
        let client = scope.name().replace(':', "-");
        let k = new_key(&client, &[scope.name().to_owned()], None, None).unwrap();
        keys.push((scope.name().to_owned(), k.key, k.entry));
    }
    let none = new_key("nobody", &[], None, None).unwrap();
    keys.push((String::new(), none.key, none.entry));
    let path = dir.join("keys.toml");
    write_keys(&path, &keys);
    (path, keys)
}

fn write_keys(path: &std::path::Path, keys: &[(String, String, String)]) {
    let text: String = keys
        .iter()
        .map(|(_, _, entry)| format!("{entry}\n"))
        .collect();
    // Written aside and renamed: a reload never reads half a file.
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn key_of<'a>(keys: &'a [(String, String, String)], scope: &str) -> &'a str {
    &keys.iter().find(|(s, _, _)| s == scope).unwrap().1
}

async fn start(access: AccessPolicy) -> TestServer<arbiter_kit::ServeError> {
    let config = ServerConfig {
        access,
        ..ServerConfig::default()
    };
    TestServer::start(|listener, shutdown| serve(listener, config, shutdown)).await
}

#[tokio::test]
async fn every_scope_of_every_service_needs_its_key() {
    let (path, keys) = keys_file("scopes");
    let policy = AccessPolicy::from_file(path.clone(), None, Duration::from_millis(50)).unwrap();
    let server = start(policy).await;
    let channel = server.channel();
    let nobody = key_of(&keys, "");

    let mut checked = 0;
    for (path, rule) in METHODS {
        match rule {
            Rule::Scoped(scope) => {
                let own = key_of(&keys, scope.name());
                let other = Scope::ALL.iter().find(|s| *s != scope).unwrap();
                let r = call(&channel, path, None).await;
                assert_eq!(
                    code(&r),
                    Some(Code::Unauthenticated),
                    "{path} without a key: {r:?}"
                );
                let r = call(&channel, path, Some("arb_0123456789ab_not-a-key")).await;
                assert_eq!(
                    code(&r),
                    Some(Code::Unauthenticated),
                    "{path}, unknown key: {r:?}"
                );
                for wrong in [nobody, key_of(&keys, other.name())] {
                    let r = call(&channel, path, Some(wrong)).await;
                    assert_eq!(
                        code(&r),
                        Some(Code::PermissionDenied),
                        "{path} with a key without {}: {r:?}",
                        scope.name()
                    );
                }
                let r = call(&channel, path, Some(own)).await;
                assert!(passed(&r), "{path} with its scope {}: {r:?}", scope.name());
                checked += 1;
            }
            Rule::Public | Rule::Seated | Rule::Spectating => {
                // No key needed: the service itself answers (a seated call without its seat
                // token is refused by the match service, not for want of an API key).
                let r = call(&channel, path, None).await;
                let by_keys = r.as_ref().is_err_and(|s| s.message().contains("API key"));
                assert!(!by_keys, "{path} asked for an API key: {r:?}");
            }
        }
    }
    assert!(checked >= 30, "{checked} scoped methods");
    for path in ["/grpc.health.v1.Health/Check"] {
        assert!(passed(&call(&channel, path, None).await));
    }

    // A key removed from the file stops working at the next reload; the others go on.
    let rules_key = key_of(&keys, "rules").to_owned();
    let ping = "/arbiter.rules.v1.RulesService/Ping";
    assert!(passed(&call(&channel, ping, Some(&rules_key)).await));
    let kept: Vec<_> = keys
        .iter()
        .filter(|(s, _, _)| s != "rules")
        .cloned()
        .collect();
    write_keys(&path, &kept);
    let revoked = async {
        loop {
            let r = call(&channel, ping, Some(&rules_key)).await;
            if code(&r) == Some(Code::Unauthenticated) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), revoked)
        .await
        .expect("the revoked key is refused after the reload");
    let status = "/arbiter.clock.v1.ClockService/GetClock";
    assert!(passed(
        &call(&channel, status, Some(key_of(&keys, "clock:read"))).await
    ));
    // A broken file at a reload changes nothing: the keys in force stay.
    std::fs::write(&path, "[[key]]\nid = 3\n").unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(passed(
        &call(&channel, status, Some(key_of(&keys, "clock:read"))).await
    ));
    assert_eq!(
        code(&call(&channel, ping, Some(&rules_key)).await),
        Some(Code::Unauthenticated)
    );
    server.stop().await;
}

#[tokio::test]
async fn private_matches_need_the_read_scope() {
    let (path, keys) = keys_file("private");
    let policy = AccessPolicy::from_file(path, None, Duration::from_secs(60))
        .unwrap()
        .private_matches(true);
    let server = start(policy).await;
    let channel = server.channel();
    for path in [
        "/arbiter.matches.v1.MatchService/GetMatch",
        "/arbiter.matches.v1.MatchService/WatchMatch",
    ] {
        let r = call(&channel, path, None).await;
        assert_eq!(code(&r), Some(Code::Unauthenticated), "{path}: {r:?}");
        let r = call(&channel, path, Some(key_of(&keys, "matches:create"))).await;
        assert_eq!(code(&r), Some(Code::PermissionDenied), "{path}: {r:?}");
        let r = call(&channel, path, Some(key_of(&keys, "matches:read"))).await;
        assert!(passed(&r), "{path}: {r:?}");
    }
    server.stop().await;
}

#[tokio::test]
async fn a_burst_past_a_clients_limit_is_refused_with_a_retry_delay() {
    let busy = new_key("busy", &["rules".into()], None, None).unwrap();
    let calm = new_key("calm", &["rules".into()], None, None).unwrap();
    let text = format!(
        "{}limits = [{{ method = \"*\", per_minute = 3 }}]\n{}",
        busy.entry, calm.entry
    );
    let policy = AccessPolicy::with_keys(KeySet::parse(&text, None).unwrap());
    let server = start(policy).await;
    let mut c = RulesServiceClient::new(server.channel());
    let ping = |key: &str| {
        let mut r = Request::new(rules::PingRequest::default());
        r.metadata_mut().insert("x-api-key", key.parse().unwrap());
        r
    };
    for _ in 0..3 {
        c.ping(ping(&busy.key)).await.unwrap();
    }
    let refused = c.ping(ping(&busy.key)).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    let delay = refused
        .get_error_details()
        .retry_info()
        .and_then(|r| r.retry_delay)
        .expect("a retry delay");
    assert!(delay > Duration::ZERO);
    assert!(!refused.message().contains(&busy.key));
    // Another client is not touched, nor is another method of the same client.
    for _ in 0..10 {
        c.ping(ping(&calm.key)).await.unwrap();
    }
    let mut status = Request::new(rules::GetGameStatusRequest::default());
    status
        .metadata_mut()
        .insert("x-api-key", busy.key.parse().unwrap());
    let r = c.get_game_status(status).await;
    assert!(
        r.as_ref()
            .map_or_else(|s| s.code() != Code::ResourceExhausted, |_| true),
        "{r:?}"
    );
    server.stop().await;
}
