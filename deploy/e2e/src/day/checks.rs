//! The end of the day: the planned endings played, then what every match, rating and the job
//! must show.

use super::*;

/// Step 4: The endings: the held mates are played, one game resigned, one drawn; every watcher
/// follows its match to the end.
pub(super) async fn endings(
    d: &Day<'_>,
    hosted: &[Arc<Hosted>],
    finish_tx: &watch::Sender<bool>,
    drivers: Drivers,
    watchers: Watchers,
) -> Result<Vec<Watched>, String> {
    let (ctx, began) = (Arc::clone(&d.ctx), d.began);
    say(began, "finish: mates, a resignation, a draw by agreement");
    finish_tx.send_replace(true);
    for d in drivers {
        tokio::time::timeout(Duration::from_secs(60), d)
            .await
            .map_err(|_| "a player did not finish within 60 s".to_owned())?
            .map_err(|e| e.to_string())??;
    }
    for m in hosted {
        // The resigning side, or both sides of the draw (an offer each: the second accepts).
        let first = |s: &pb::MatchState, none| s.boards.first().map_or(none, |b| b.side_to_move);
        let (sides, resign) = match m.role {
            Role::Resign => (vec![first(&ctx.get_match(&m.id).await?, 0)], true),
            Role::Draw => {
                let side = first(&ctx.get_match(&m.id).await?, 1);
                (vec![side, 3 - side], false)
            }
            _ => continue,
        };
        let what = if resign { "Resign" } else { "OfferDraw" };
        for side in sides {
            let token = m.token(1, side as u32)?.to_owned();
            let c = ctx.matches();
            ctx.retries
                .call(|| {
                    let (mut c, id, token) = (c.clone(), m.id.clone(), token.clone());
                    async move {
                        if resign {
                            let request = pb::ResignRequest {
                                match_id: id,
                                side,
                                request_id: "resign".to_owned(),
                                ..Default::default()
                            };
                            c.resign(bearer(request, &token)).await.map(drop)
                        } else {
                            let request = pb::OfferDrawRequest {
                                match_id: id,
                                side,
                                request_id: format!("draw-{side}"),
                                ..Default::default()
                            };
                            c.offer_draw(bearer(request, &token)).await.map(drop)
                        }
                    }
                })
                .await
                .map_err(|s| status_text(what, &s))?;
        }
    }
    let mut watched = Vec::new();
    for w in watchers {
        watched.push(
            tokio::time::timeout(Duration::from_secs(60), w)
                .await
                .map_err(|_| "a watcher saw no end within 60 s".to_owned())?
                .map_err(|e| e.to_string())??,
        );
    }
    say(began, "every match over; every watcher saw its end");

    Ok(watched)
}

/// Checks on every match: the outcome its plan gave it, the moves the players saw applied
/// equal to the watcher's and the stored game's, no event missed or repeated.
pub(super) async fn check_matches(
    d: &Day<'_>,
    hosted: &[Arc<Hosted>],
    watched: &[Watched],
) -> Result<String, String> {
    let (ctx, began) = (Arc::clone(&d.ctx), d.began);
    let mut reconnects = 0;
    for (m, w) in hosted.iter().zip(watched) {
        reconnects += w.reconnects;
        let state = ctx.get_match(&m.id).await?;
        let outcome = state.outcome.clone().unwrap_or_default();
        let o = outcome.outcome.clone().unwrap_or_default();
        let score = o.score.as_ref().map_or("", |s| s.text.as_str());
        let want = match m.role {
            Role::Flag => (common::EndReason::Timeout, "0-1"),
            Role::Resign => (common::EndReason::Resignation, ""),
            Role::Draw => (common::EndReason::Agreement, "1/2-1/2"),
            Role::Mate | Role::Bughouse => (common::EndReason::Checkmate, "1-0"),
        };
        if o.reason != want.0 as i32 || (!want.1.is_empty() && score != want.1) {
            return fail(format!(
                "match {} ({:?}) ended {o:?}, not {:?} {}",
                m.id, m.role, want.0, want.1
            ));
        }
        if !w.gaps.is_empty() {
            return fail(format!(
                "match {}: watch sequence broken: {:?}",
                m.id, w.gaps
            ));
        }
        if w.events.last().map(|e| e.seq) != Some(state.last_seq) {
            return fail(format!(
                "match {}: the watcher's last event is not the match's last_seq {}",
                m.id, state.last_seq
            ));
        }
        for (bi, board) in state.boards.iter().enumerate() {
            let ledger = m.ledgers[bi].lock().map_err(|e| e.to_string())?.clone();
            let streamed: Vec<(u32, String)> = w
                .events
                .iter()
                .filter_map(|e| match &e.event {
                    Some(pb::watch_match_response::Event::Move(p))
                        if p.board.max(1) as usize == bi + 1 =>
                    {
                        Some((p.ply, p.r#move.clone().map(|m| m.uci).unwrap_or_default()))
                    }
                    _ => None,
                })
                .collect();
            let expected: Vec<(u32, String)> = ledger
                .iter()
                .enumerate()
                .map(|(i, u)| (i as u32 + 1, u.clone()))
                .collect();
            if streamed != expected || board.ply as usize != ledger.len() {
                return fail(format!(
                    "match {} board {}: players saw {} moves, the watcher {}, the board has {} \
                     plies (players {expected:?}, watcher {streamed:?})",
                    m.id,
                    bi + 1,
                    ledger.len(),
                    streamed.len(),
                    board.ply
                ));
            }
        }
        if m.role == Role::Bughouse {
            let pieces = bughouse_pieces(&state);
            if pieces != (32, 32) {
                return fail(format!("bughouse pieces at the end: {pieces:?}"));
            }
        }
    }
    let moves = total_moves(hosted);
    say(
        began,
        &format!(
            "every move seen once by its players, its watcher and the stored game ({moves} \
             moves, {reconnects} watch streams resumed with after_seq)"
        ),
    );
    if reconnects == 0 {
        return fail("no watcher had to resume: the rolling upgrade did not reach the watchers");
    }
    let line = format!("{moves} moves in 5 matches, {reconnects} watch resumptions");

    Ok(line)
}

/// Step 5: Ratings: once per finished match, the right way.
pub(super) async fn check_ratings(
    d: &Day<'_>,
    hosted: &[Arc<Hosted>],
    players: &Players,
) -> Result<(), String> {
    let (ctx, began) = (Arc::clone(&d.ctx), d.began);
    let ratings_of = |player: String| {
        let ctx = Arc::clone(&ctx);
        async move {
            let c = ctx.matchmaking();
            ctx.retries
                .call(|| {
                    let mut c = c.clone();
                    let r = keyed(
                        mm::GetRatingsRequest {
                            player_id: player.clone(),
                        },
                        &ctx.platform_key,
                    );
                    async move { c.get_ratings(r).await }
                })
                .await
                .map(|r| r.into_inner().ratings)
                .map_err(|s| status_text("GetRatings", &s))
        }
    };
    let wait = Instant::now();
    loop {
        let mut pending = 0;
        for p in players.keys() {
            if ratings_of(p.clone()).await?.is_empty() {
                pending += 1;
            }
        }
        if pending == 0 {
            break;
        }
        if wait.elapsed() > Duration::from_secs(60) {
            return fail(format!(
                "{pending} players still unrated 60 s after the matches"
            ));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // Long enough for a second application to show (matchmaking follows matches by streams
    // that broke and resumed through the faults).
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut rating = BTreeMap::new();
    for (p, (variant, m, board, side)) in players {
        let r = ratings_of(p.clone()).await?;
        let want_variant = match variant {
            Variant::Bughouse => common::Variant::Bughouse,
            _ => common::Variant::Chess,
        } as i32;
        if r.len() != 1 || r[0].variant != want_variant || r[0].games != 1 {
            return fail(format!(
                "{p} ({:?}): ratings {r:?}, not one rated game of its variant",
                m.role
            ));
        }
        rating.insert(
            p.clone(),
            (r[0].glicko_rating, Arc::clone(m), *board, *side),
        );
    }
    for m in hosted {
        let state = ctx.get_match(&m.id).await?;
        let score = state
            .outcome
            .and_then(|o| o.outcome)
            .and_then(|o| o.score)
            .unwrap_or_default();
        // Team 1 (or White) scored white_quarters of 4.
        for (p, (r, pm, board, side)) in &rating {
            if pm.id != m.id {
                continue;
            }
            let team1 = (*board == 1) == (*side == 1);
            let points = if team1 {
                score.white_quarters
            } else {
                score.black_quarters
            };
            let ok = match points {
                4 => *r > 1500.0,
                0 => *r < 1500.0,
                _ => (*r - 1500.0).abs() < 1.0,
            };
            if !ok {
                return fail(format!(
                    "{p} scored {points}/4 in {} and is rated {r:.1}",
                    m.id
                ));
            }
        }
    }
    say(
        began,
        "ratings: each of the 12 players has exactly one rated game, moved the right way",
    );

    Ok(())
}

/// Step 6: The job completes on the surviving worker, each game once; the killed worker comes back.
pub(super) async fn check_job(
    d: &Day<'_>,
    job_id: &str,
    moves_in_job: &[usize],
) -> Result<String, String> {
    let (cfg, ctx, topology, began) = (d.cfg, Arc::clone(&d.ctx), d.topology, d.began);
    let status = {
        let wait = Instant::now();
        loop {
            let s = job_status(&ctx, job_id).await?;
            if s.state == an::JobState::Done as i32 {
                break s;
            }
            if wait.elapsed() > Duration::from_secs(240) {
                return fail(format!("the job did not complete: {s:?}"));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    };
    if status.games_done != status.games || status.positions_done != status.positions {
        return fail(format!("the job's counts are off: {status:?}"));
    }
    let mut results = Vec::new();
    while results.len() < cfg.job_games {
        let c = ctx.analysis();
        let page = ctx
            .retries
            .call(|| {
                let mut c = c.clone();
                let r = ctx.analysis_request(an::GetJobResultsRequest {
                    job_id: job_id.to_owned(),
                    offset: results.len() as u32,
                    limit: 0,
                });
                async move { c.get_job_results(r).await }
            })
            .await
            .map_err(|s| status_text("GetJobResults", &s))?
            .into_inner();
        if page.games.is_empty() {
            break;
        }
        results.extend(page.games);
    }
    let indices: BTreeSet<u32> = results.iter().map(|g| g.index).collect();
    if results.len() != cfg.job_games || indices.len() != cfg.job_games {
        return fail(format!(
            "{} results for {} games ({} distinct)",
            results.len(),
            cfg.job_games,
            indices.len()
        ));
    }
    for g in &results {
        let want = moves_in_job[g.index as usize];
        if !g.error.is_empty() || g.plies.len() != want {
            return fail(format!(
                "job game {}: {} plies for {want} moves, error {:?}",
                g.index,
                g.plies.len(),
                g.error
            ));
        }
    }
    blocking(topology, |t| t.start("worker-1")).await?;
    blocking(topology, |t| t.wait_all_healthy(Duration::from_secs(60))).await?;
    say(
        began,
        &format!(
            "batch job done: {} games, {} positions, each game's result once; worker-1 back",
            status.games, status.positions
        ),
    );
    let line = format!(
        "batch job of {} games completed with a worker killed",
        status.games
    );
    Ok(line)
}

/// Step 0, keys: every service behind the proxy checks API keys. A platform call without a key
/// is `UNAUTHENTICATED`; matchmaking's own key (matches:create, matches:read) is refused by the
/// analysis and matchmaking services (`PERMISSION_DENIED`); the platform's key is accepted.
pub(super) async fn check_keys(d: &Day<'_>) -> Result<String, String> {
    use arbiter_proto::rules::v1 as rules;
    use arbiter_proto::rules::v1::rules_service_client::RulesServiceClient;
    let ctx = &d.ctx;
    say(
        d.began,
        "API keys: refused without a key or scope, accepted with the platform's",
    );
    let matchmaking_key =
        std::fs::read_to_string(d.cfg.root.join("deploy/secrets/matchmaking-key"))
            .map_err(|e| format!("deploy/secrets/matchmaking-key: {e}"))?
            .trim()
            .to_owned();
    let mut rules_client = RulesServiceClient::new(ctx.proxy.clone());
    let ping = || rules::PingRequest::default();
    let expect = |what: &str, r: Result<(), Status>, want: Option<Code>| match (r, want) {
        (Ok(()), None) => Ok(()),
        (Err(s), Some(code)) if s.code() == code => Ok(()),
        (r, want) => fail(format!("{what}: {r:?}, expected {want:?}")),
    };
    // Every container is healthy by now: each refusal is the access layer's, not a fault's.
    let r = rules_client.ping(ping()).await.map(drop);
    expect("Ping without a key", r, Some(Code::Unauthenticated))?;
    let r = rules_client
        .ping(keyed(ping(), &matchmaking_key))
        .await
        .map(drop);
    expect(
        "Ping with matchmaking's key",
        r,
        Some(Code::PermissionDenied),
    )?;
    let r = ctx
        .analysis()
        .get_job(keyed(
            an::GetJobRequest {
                job_id: "job-0".into(),
            },
            &matchmaking_key,
        ))
        .await
        .map(drop);
    expect(
        "GetJob with matchmaking's key",
        r,
        Some(Code::PermissionDenied),
    )?;
    let r = rules_client
        .ping(keyed(ping(), &ctx.platform_key))
        .await
        .map(drop);
    expect("Ping with the platform's key", r, None)?;
    Ok("API keys checked on the rules and analysis services".to_owned())
}
