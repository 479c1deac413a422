//! `--log-format json`: `arbiter serve` writes one JSON object per line, and a line logged while
//! a call is handled carries that call's method, `x-request-id` and trace id.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The server process, killed when dropped.
struct Serve(std::process::Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn json_lines_carry_the_calls_method_and_request_id() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("api-keys.toml");
    // A keys file with one key: any other key is refused (and that refusal logged at debug).
    let made = Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args(["keys", "new", "--client", "someone", "--scope", "rules"])
        .output()
        .unwrap();
    assert!(made.status.success());
    let text = String::from_utf8(made.stdout).unwrap();
    let entry = &text[text.find("[[key]]").expect("a keys-file entry")..];
    std::fs::write(&keys, entry).unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_arbiter"))
        .args(["serve", "--listen", "127.0.0.1:0", "--log-format", "json"])
        .arg("--api-keys-file")
        .arg(&keys)
        .env("RUST_LOG", "info,arbiter_kit=debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let serve = Serve(child);
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    let next = |lines: &mut Vec<serde_json::Value>| {
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("a log line in time");
        let value: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
        lines.push(value.clone());
        value
    };
    // The address it listens on, from its own "listening" line.
    let addr = loop {
        let v = next(&mut lines);
        if v["message"] == "listening" {
            break v["addr"].as_str().expect("the address field").to_owned();
        }
    };
    assert!(
        lines
            .iter()
            .all(|l| l["level"].is_string() && l["timestamp"].is_string())
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let status = runtime.block_on(async {
        let mut client =
            arbiter_proto::rules::v1::rules_service_client::RulesServiceClient::connect(format!(
                "http://{addr}"
            ))
            .await
            .unwrap();
        let mut req = tonic::Request::new(arbiter_proto::rules::v1::ValidateMoveRequest::default());
        let md = req.metadata_mut();
        md.insert(
            "x-api-key",
            "arb_000000000000_not-a-real-key".parse().unwrap(),
        );
        md.insert("x-request-id", "req-42".parse().unwrap());
        // A caller's W3C trace context: its trace id is on the call's lines.
        md.insert(
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
                .parse()
                .unwrap(),
        );
        client.validate_move(req).await.unwrap_err()
    });
    assert_eq!(status.code(), tonic::Code::Unauthenticated);
    let refused = loop {
        let v = next(&mut lines);
        if v["message"] == "API key refused" {
            break v;
        }
    };
    assert_eq!(
        refused["span"]["method"], "/arbiter.rules.v1.RulesService/ValidateMove",
        "{refused}"
    );
    assert_eq!(refused["span"]["request_id"], "req-42", "{refused}");
    assert_eq!(
        refused["span"]["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736",
        "{refused}"
    );
    // The key itself is never logged.
    assert!(!refused.to_string().contains("not-a-real-key"), "{refused}");
    drop(serve);
}
