//! The faults of the day, each while games and the job are in flight: a worker killed, a rolling
//! upgrade of the match service, Redis restarted, the backend network cut from a replica, a
//! replica killed before a flag falls.

use super::*;

/// Step 3a: A worker is killed while it analyses a game of the job.
pub(super) async fn kill_worker(d: &Day<'_>, job_id: &str) -> Result<(), String> {
    let (ctx, topology, began) = (Arc::clone(&d.ctx), d.topology, d.began);
    let wait = Instant::now();
    loop {
        let s = job_status(&ctx, job_id).await?;
        if s.state == an::JobState::Running as i32 && s.positions_done > 0 {
            if s.games_done >= s.games {
                return fail("the job finished before a worker could be killed: raise --job-nodes");
            }
            break;
        }
        if wait.elapsed() > Duration::from_secs(60) {
            return fail(format!("the job did not start within 60 s: {s:?}"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    blocking(topology, |t| t.kill("worker-1")).await?;
    let s = job_status(&ctx, job_id).await?;
    say(
        began,
        &format!(
            "fault: worker-1 killed mid-job ({}/{} games, {}/{} positions done)",
            s.games_done, s.games, s.positions_done, s.positions
        ),
    );
    Ok(())
}

/// Step 3b: Rolling upgrade: each matches replica in turn gets SIGTERM and starts again.
pub(super) async fn rolling_upgrade(d: &Day<'_>, hosted: &[Arc<Hosted>]) -> Result<(), String> {
    let (topology, began) = (d.topology, d.began);
    for replica in ["matches-1", "matches-2"] {
        let before = total_moves(hosted);
        let t = Instant::now();
        blocking(topology, move |t| t.stop(replica)).await?;
        let stopped = t.elapsed();
        blocking(topology, move |t| t.start(replica)).await?;
        blocking(topology, move |t| {
            t.wait_healthy(&[replica], Duration::from_secs(60))
        })
        .await?;
        let after = total_moves(hosted);
        say(
            began,
            &format!(
                "fault: rolling upgrade of {replica}: stopped by SIGTERM in {:.1} s, healthy again \
                 after {:.1} s; {} moves meanwhile",
                stopped.as_secs_f64(),
                t.elapsed().as_secs_f64(),
                after - before
            ),
        );
    }
    Ok(())
}

/// Step 3c: Redis restarts: calls meanwhile answer UNAVAILABLE; nothing applied is lost.
pub(super) async fn restart_redis(
    d: &Day<'_>,
    hosted: &[Arc<Hosted>],
    job_id: &str,
) -> Result<(), String> {
    let (ctx, topology, began) = (Arc::clone(&d.ctx), d.topology, d.began);
    in_flight(d, job_id, "the Redis restart").await?;
    let before = plies(&ctx, hosted).await?;
    let bug = hosted
        .iter()
        .find(|m| m.role == Role::Bughouse)
        .cloned()
        .ok_or("no bughouse match")?;
    blocking(topology, |t| t.stop("redis")).await?;
    say(began, "fault: redis stopped");
    let mut seen = Vec::new();
    let probe_deadline = Instant::now() + Duration::from_secs(20);
    for (name, kind) in [("GetMatch", 0), ("GetRatings", 1), ("GetJob", 2)] {
        loop {
            let r = match kind {
                0 => ctx
                    .matches()
                    .get_match(pb::GetMatchRequest {
                        match_id: bug.id.clone(),
                    })
                    .await
                    .map(drop),
                1 => ctx
                    .matchmaking()
                    .get_ratings(keyed(
                        mm::GetRatingsRequest {
                            player_id: "e2e-probe".to_owned(),
                        },
                        &ctx.platform_key,
                    ))
                    .await
                    .map(drop),
                _ => ctx
                    .analysis()
                    .get_job(ctx.analysis_request(an::GetJobRequest {
                        job_id: job_id.to_owned(),
                    }))
                    .await
                    .map(drop),
            };
            match r {
                Err(s) if s.code() == Code::Unavailable => {
                    seen.push(name);
                    break;
                }
                other if Instant::now() >= probe_deadline => {
                    return fail(format!(
                        "{name} while Redis is down answered {:?}, not UNAVAILABLE",
                        other.map_err(|s| status_text(name, &s))
                    ));
                }
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }
    say(
        began,
        &format!(
            "while Redis is down: {} answer UNAVAILABLE",
            seen.join(", ")
        ),
    );
    blocking(topology, |t| t.start("redis")).await?;
    // Every container but the killed worker.
    blocking(topology, |t| {
        let services = t.services()?;
        let up: Vec<&str> = services
            .iter()
            .map(String::as_str)
            .filter(|s| *s != "worker-1")
            .collect();
        t.wait_healthy(&up, Duration::from_secs(60))
    })
    .await?;
    let after = plies(&ctx, hosted).await?;
    for (m, (b, a)) in hosted.iter().zip(before.iter().zip(&after)) {
        if b.iter().zip(a).any(|(b, a)| a < b) {
            return fail(format!(
                "match {}: plies {b:?} before the Redis restart, {a:?} after",
                m.id
            ));
        }
    }
    let pieces = bughouse_pieces(&ctx.get_match(&bug.id).await?);
    if pieces != (32, 32) {
        return fail(format!(
            "bughouse pieces after the Redis restart: {pieces:?}, not (32, 32)"
        ));
    }
    say(
        began,
        "redis restarted: every service healthy again by itself, no ply lost, 32+32 bughouse pieces",
    );
    Ok(())
}

/// Step 3d: The backend network is cut from matches-1 for a few seconds.
pub(super) async fn cut_network(
    d: &Day<'_>,
    hosted: &[Arc<Hosted>],
    job_id: &str,
    flag: &Hosted,
) -> Result<(), String> {
    let (ctx, topology, began) = (Arc::clone(&d.ctx), d.topology, d.began);
    const MATCHES: &str = "arbiter.matches.v1.MatchService";
    in_flight(d, job_id, "the network cut").await?;
    let before = total_moves(hosted);
    blocking(topology, |t| t.disconnect("matches-1", "backend")).await?;
    let down = await_health(
        "matches-1",
        MATCHES,
        ServingStatus::NotServing,
        Duration::from_secs(15),
    )
    .await?;
    say(
        began,
        &format!(
            "fault: matches-1 cut off the backend network: NOT_SERVING after {:.1} s",
            down.as_secs_f64()
        ),
    );
    // The proxy's checks (every second, two failures) take it out of rotation: from then
    // on every call through the proxy reaches matches-2.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let mut c = ctx.matches();
    for _ in 0..20 {
        c.get_match(pb::GetMatchRequest {
            match_id: flag.id.clone(),
        })
        .await
        .map_err(|s| status_text("GetMatch through the proxy during the cut", &s))?;
    }
    let during = total_moves(hosted) - before;
    blocking(topology, |t| t.connect("matches-1", "backend")).await?;
    let up = await_health(
        "matches-1",
        MATCHES,
        ServingStatus::Serving,
        Duration::from_secs(15),
    )
    .await?;
    blocking(topology, |t| {
        t.wait_healthy(&["matches-1"], Duration::from_secs(30))
    })
    .await?;
    say(
        began,
        &format!(
            "matches-1 reconnected: SERVING after {:.1} s; 20 unretried calls through the \
                 proxy answered during the cut, {during} moves went on",
            up.as_secs_f64()
        ),
    );
    Ok(())
}

/// Step 3e: A matches replica is killed; the flag game's flag falls while it is down. Returns the
/// summary's line.
pub(super) async fn kill_before_flag(
    d: &Day<'_>,
    hosted: &[Arc<Hosted>],
    job_id: &str,
    flag: &Hosted,
    flag_deadline: u64,
) -> Result<String, String> {
    let (ctx, topology, began) = (Arc::clone(&d.ctx), d.topology, d.began);
    let kill_at = flag_deadline.saturating_sub(8_000);
    let now = now_ms();
    if now + 1_000 > flag_deadline {
        return fail("the flag fell before the replica could be killed: a longer time control");
    }
    if kill_at > now {
        tokio::time::sleep(Duration::from_millis(kill_at - now)).await;
    }
    let before = total_moves(hosted);
    let job = job_status(&ctx, job_id).await?;
    blocking(topology, |t| t.kill("matches-1")).await?;
    say(
        began,
        &format!(
            "fault: matches-1 killed (job: {}/{} positions done)",
            job.positions_done, job.positions
        ),
    );
    let state = loop {
        let s = ctx.get_match(&flag.id).await?;
        if s.outcome.is_some() {
            break s;
        }
        if now_ms() > flag_deadline + 20_000 {
            return fail(format!("no flag 20 s after the deadline: {s:?}"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    if blocking(topology, |t| t.running("matches-1")).await? {
        return fail("matches-1 was running again before the flag: the check proves nothing");
    }
    let outcome = state.outcome.clone().unwrap_or_default();
    let o = outcome.outcome.unwrap_or_default();
    if o.reason != common::EndReason::Timeout as i32
        || o.score.as_ref().map(|s| s.text.as_str()) != Some("0-1")
    {
        return fail(format!("the flag game ended otherwise: {o:?}"));
    }
    if state.ended_at_ms < flag_deadline {
        return fail(format!(
            "flag recorded at {} before the deadline {flag_deadline}",
            state.ended_at_ms
        ));
    }
    let during = total_moves(hosted) - before;
    if during == 0 {
        return fail("no move went through while matches-1 was down");
    }
    say(
        began,
        &format!(
            "flag game flagged by matches-2, {} ms after the deadline; {during} moves went on",
            state.ended_at_ms - flag_deadline
        ),
    );
    let line = format!(
        "flag detected {} ms after the deadline, with a replica killed",
        state.ended_at_ms - flag_deadline
    );
    blocking(topology, |t| t.start("matches-1")).await?;
    blocking(topology, |t| {
        t.wait_healthy(&["matches-1"], Duration::from_secs(60))
    })
    .await?;
    say(began, "matches-1 started again and healthy");
    Ok(line)
}
