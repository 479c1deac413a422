//! Step 5: what the topology's Prometheus saw of the day: the moves played, the flag caused,
//! the job run and a few live searches, and every metric that a dashboard or an alert names in
//! a live scrape.

use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Prometheus's published address (`ARBITER_PROMETHEUS_PORT` of the compose file).
const PROMETHEUS: &str = "127.0.0.1:50190";

/// `GET path` on Prometheus's HTTP API: the JSON body.
async fn get(path: &str) -> Result<serde_json::Value, String> {
    let mut stream = tokio::net::TcpStream::connect(PROMETHEUS)
        .await
        .map_err(|e| format!("Prometheus at {PROMETHEUS}: {e}"))?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {PROMETHEUS}\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .await
        .map_err(|e| e.to_string())?;
    let answer = String::from_utf8_lossy(&answer);
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("Prometheus answered no HTTP: {answer}"))?;
    if !head.starts_with("HTTP/1.1 200") {
        return fail(format!("Prometheus {path}: {head}"));
    }
    // Prometheus answers small bodies whole, large ones chunked: undo the chunking.
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)?
    } else {
        body.to_owned()
    };
    serde_json::from_str(&body).map_err(|e| format!("Prometheus {path}: {e}: {body}"))
}

/// The body of a chunked HTTP/1.1 answer.
fn dechunk(mut rest: &str) -> Result<String, String> {
    let mut out = String::new();
    loop {
        let (size, after) = rest
            .split_once("\r\n")
            .ok_or("a chunked body without a size line")?;
        let size = usize::from_str_radix(size.trim(), 16).map_err(|e| e.to_string())?;
        if size == 0 {
            return Ok(out);
        }
        out.push_str(after.get(..size).ok_or("a chunk shorter than its size")?);
        rest = after.get(size + 2..).unwrap_or("");
    }
}

/// `text` percent-encoded for a URL's query.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The value of an instant query whose answer is one number (0 when it has no series).
async fn number(query: &str) -> Result<f64, String> {
    let v = get(&format!("/api/v1/query?query={}", encode(query))).await?;
    let result = &v["data"]["result"];
    match result.as_array().map(Vec::as_slice) {
        Some([]) => Ok(0.0),
        Some([one]) => one["value"][1]
            .as_str()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("{query}: {one}")),
        _ => fail(format!("{query}: not one number: {v}")),
    }
}

/// Asks `query` until its value is at least `min` (Prometheus scrapes every 5 s): the value.
async fn at_least(query: &str, min: f64) -> Result<f64, String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let n = number(query).await?;
        if n >= min {
            return Ok(n);
        }
        if Instant::now() >= deadline {
            return fail(format!(
                "Prometheus: {query} is {n}, expected at least {min}"
            ));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The metric names that the dashboards and alerts of `deploy/observability/` use.
fn names_used(root: &std::path::Path) -> Result<std::collections::BTreeSet<String>, String> {
    let dir = root.join("deploy/observability");
    let mut files = vec![dir.join("alerts.yml")];
    let dashboards = std::fs::read_dir(dir.join("dashboards")).map_err(|e| e.to_string())?;
    for entry in dashboards {
        files.push(entry.map_err(|e| e.to_string())?.path());
    }
    let mut names = std::collections::BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|e| format!("{file:?}: {e}"))?;
        let mut rest = text.as_str();
        while let Some(at) = rest.find("arbiter_") {
            let name: String = rest[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            rest = &rest[at + name.len()..];
            names.insert(name);
        }
    }
    Ok(names)
}

pub(super) async fn check_metrics(d: &Day<'_>, hosted: &[Arc<Hosted>]) -> Result<String, String> {
    say(
        d.began,
        "Prometheus: the day's moves, flag, job and live searches; the dashboards' metrics",
    );
    // A few live searches through the proxy (to both analysis replicas, as it balances), so
    // that the live-analysis series exist too.
    for _ in 0..4 {
        let c = d.ctx.analysis();
        let request = an::BestMoveRequest {
            position: Some(common::Position {
                variant: common::Variant::Chess as i32,
                ..common::Position::default()
            }),
            limits: Some(an::SearchLimits {
                depth: 6,
                ..an::SearchLimits::default()
            }),
            ..an::BestMoveRequest::default()
        };
        d.ctx
            .retries
            .call(|| {
                let mut c = c.clone();
                let r = d.ctx.analysis_request(request.clone());
                async move { c.best_move(r).await }
            })
            .await
            .map_err(|s| status_text("BestMove", &s))?;
    }
    // Counters restart with a replica (the day restarts several): the largest value each
    // series reached over the day, summed, is a lower bound of what happened.
    let over_day = |metric: &str| format!("sum(max_over_time({metric}[1h]))");
    // What the day did, and the least Prometheus must have seen of each.
    let expected: [(&str, f64); 10] = [
        ("arbiter_match_moves_applied_total", 1.0),
        ("arbiter_match_moves_applied_total{variant=\"chess\"}", 1.0),
        (
            "arbiter_match_moves_applied_total{variant=\"bughouse\"}",
            1.0,
        ),
        ("arbiter_flag_delay_seconds_count{game=\"match\"}", 1.0),
        ("arbiter_matches_ended_total{reason=\"timeout\"}", 1.0),
        ("arbiter_analysis_jobs_total{state=\"submitted\"}", 1.0),
        ("arbiter_analysis_games_total{outcome=\"analysed\"}", 1.0),
        ("arbiter_redis_round_trips_total{kind=\"script\"}", 1.0),
        ("arbiter_analysis_searches_total{kind=\"live\"}", 4.0),
        ("arbiter_analysis_queue_wait_seconds_count", 4.0),
    ];
    let mut seen = [0.0; 10];
    for (value, (metric, min)) in seen.iter_mut().zip(expected) {
        *value = at_least(&over_day(metric), min).await?;
    }
    let [moves, _, _, flags, _, jobs, games, _, searches, _] = seen;
    // Every Arbiter target is up.
    let down = number("count(up{job=~\"arbiter-.*\"} == 0)").await?;
    if down > 0.0 {
        return fail(format!("Prometheus: {down} Arbiter targets down"));
    }

    // Every metric a dashboard or an alert names exists in what Prometheus scraped.
    let scraped = get("/api/v1/label/__name__/values").await?;
    let scraped: std::collections::BTreeSet<&str> = scraped["data"]
        .as_array()
        .ok_or("Prometheus: no metric names")?
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    let used = names_used(&d.cfg.root)?;
    let missing: Vec<&String> = used
        .iter()
        .filter(|n| !scraped.contains(n.as_str()))
        .collect();
    if !missing.is_empty() {
        return fail(format!(
            "metrics named in deploy/observability/ but never scraped: {missing:?}"
        ));
    }
    Ok(format!(
        "Prometheus saw at least {moves} of {} moves, {flags} flag(s), {jobs} job(s), {games} \
         games analysed, {searches} live searches; the {} metrics of the dashboards and alerts \
         all scraped",
        total_moves(hosted),
        used.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_bodies_and_queries_are_read() {
        assert_eq!(
            dechunk("4\r\nabcd\r\n2\r\nef\r\n0\r\n\r\n").unwrap(),
            "abcdef"
        );
        assert!(dechunk("zz\r\n").is_err());
        assert_eq!(encode("sum(a{b=\"c\"})"), "sum%28a%7Bb%3D%22c%22%7D%29");
    }
}
