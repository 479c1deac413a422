//! Reading a `/metrics` listener in tests: one plain HTTP/1.1 GET, and a series' value.

use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One HTTP/1.1 request to a metrics listener: (status line, headers, body).
pub async fn http_get(addr: SocketAddr, method: &str, path: &str) -> (String, String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head.lines().next().unwrap_or("").to_owned();
    (status, head.to_owned(), body.to_owned())
}

/// `GET /metrics`, which must answer 200 in the Prometheus text format: the body.
pub async fn scrape(addr: SocketAddr) -> String {
    let (status, head, body) = http_get(addr, "GET", "/metrics").await;
    assert!(status.contains("200"), "{status}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain"),
        "{head}"
    );
    body
}

/// The sum of the series `name` whose labels include every one of `labels` (0 if none).
pub fn value(scrape: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    scrape
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .filter(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

/// How much the series moved from `before` to `after`.
pub fn delta(before: &str, after: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    value(after, name, labels) - value(before, name, labels)
}
