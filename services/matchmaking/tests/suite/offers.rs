//! Challenges and seeks through real gRPC, in process and on Redis: an accepted challenge gives
//! both players the same match and their own seat tokens (one match, however often the accept is
//! retried); declines, cancels and expiry; two players accepting one seek at once (exactly one
//! match); idempotent creations; a challenge spammer held at the bound while everyone else goes
//! on; field checks; a rated challenge rated once from its match's outcome; an accept as a
//! committed pairing (out of the pool, busy players refused, one match per player at a time,
//! a retry answered from the store); creations bounded per hour; watch streams bounded; an
//! offer's Redis expiry never shortened.

use crate::details::{BadRequest, ErrorInfo, detail};
use arbiter_matchmaking::Tuning;
use arbiter_matchmaking::backend::{BackendError, CreatedMatch, MatchBackend, MatchEnd, NewMatch};
use arbiter_proto::common::v1 as common;
use arbiter_proto::matchmaking::v1 as pb;
use arbiter_proto::matchmaking::v1::matchmaking_service_client::MatchmakingServiceClient;
use arbiter_redis_conn::RedisConfig;
use arbiter_testkit::grpc::TestServer;
use prost::Message;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_stream::StreamExt;
use tonic::transport::Channel;
use tonic::{Code, Status};

/// A match service that creates each request id's match once (a repeat answers the same match,
/// as the real one does), records every creation asked, can refuse, be slow, and ends every
/// match it is asked about with a White win.
#[derive(Clone, Default)]
struct FakeMatches {
    created: Arc<Mutex<HashMap<String, (NewMatch, CreatedMatch)>>>,
    asked: Arc<Mutex<Vec<NewMatch>>>,
    refuse: Arc<AtomicBool>,
    slow_ms: u64,
    /// Matches end (White wins) when asked; otherwise they never end.
    end: bool,
    /// When set, each creation waits for a permit of it (after being recorded as asked).
    gate: Option<Arc<tokio::sync::Semaphore>>,
    /// This many creations' answers are lost: the match is created, then UNAVAILABLE answered.
    lose: Arc<AtomicUsize>,
}

impl FakeMatches {
    fn matches(&self) -> Vec<(NewMatch, CreatedMatch)> {
        self.created.lock().unwrap().values().cloned().collect()
    }

    fn asked(&self) -> usize {
        self.asked.lock().unwrap().len()
    }

    /// The distinct request ids of the creations asked.
    fn asked_ids(&self) -> HashSet<String> {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .map(|m| m.request_id.clone())
            .collect()
    }
}

impl MatchBackend for FakeMatches {
    async fn create(&self, m: &NewMatch) -> Result<CreatedMatch, BackendError> {
        self.asked.lock().unwrap().push(m.clone());
        if let Some(gate) = &self.gate {
            let _permit = gate.acquire().await.unwrap();
        }
        if self.slow_ms > 0 {
            tokio::time::sleep(Duration::from_millis(self.slow_ms)).await;
        }
        if self.refuse.load(Ordering::SeqCst) {
            return Err(BackendError {
                retryable: false,
                message: "refused".into(),
            });
        }
        let mut created = self.created.lock().unwrap();
        let n = created.len();
        let (first, c) = created.entry(m.request_id.clone()).or_insert_with(|| {
            let id = format!("match-{n}");
            let tokens = m
                .players
                .iter()
                .map(|p| format!("token-{id}-{p}"))
                .collect();
            (
                m.clone(),
                CreatedMatch {
                    match_id: id,
                    tokens,
                },
            )
        });
        assert_eq!(
            first, m,
            "a request id is reused with the same content only"
        );
        let c = c.clone();
        drop(created);
        if self
            .lose
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Err(BackendError {
                retryable: true,
                message: "the answer was lost".into(),
            });
        }
        Ok(c)
    }

    async fn wait_end(&self, _: &str) -> Result<MatchEnd, BackendError> {
        if self.end {
            return Ok(MatchEnd::Scored {
                white_quarters: 4,
                at_ms: 1_700_000_000_000,
            });
        }
        std::future::pending().await
    }
}

type Client = MatchmakingServiceClient<Channel>;

struct Setup {
    server: TestServer<arbiter_kit::ServeError>,
    client: Client,
    backend: FakeMatches,
}

async fn start(redis: Option<RedisConfig>, tuning: Tuning, backend: FakeMatches) -> Setup {
    let server = crate::serve(redis, tuning, backend.clone()).await;
    let client = MatchmakingServiceClient::new(server.channel());
    Setup {
        server,
        client,
        backend,
    }
}

/// Where a test keeps matchmaking's state: in process, on one Redis, or on a Redis Cluster.
#[derive(Clone, Copy)]
enum Backing {
    Memory,
    Redis,
    Cluster,
}

impl From<bool> for Backing {
    fn from(on_redis: bool) -> Backing {
        if on_redis {
            Backing::Redis
        } else {
            Backing::Memory
        }
    }
}

/// What keeps a test's Redis running until the test ends.
#[allow(dead_code)]
enum Held {
    Redis(Box<arbiter_testkit::Redis>),
    Cluster(arbiter_testkit::cluster::RedisCluster),
}

/// A real Redis or cluster (as the matchmaking ACL user), or none: in process.
async fn store(backing: impl Into<Backing>) -> (Option<Held>, Option<RedisConfig>) {
    match backing.into() {
        Backing::Memory => (None, None),
        Backing::Redis => {
            let redis = arbiter_testkit::redis().await;
            let config = redis.secure("arbiter-matchmaking");
            (Some(Held::Redis(Box::new(redis))), Some(config))
        }
        Backing::Cluster => {
            let cluster =
                tokio::task::spawn_blocking(arbiter_testkit::cluster::RedisCluster::start)
                    .await
                    .unwrap();
            let config = RedisConfig::plain(&cluster.url_as("arbiter-matchmaking"));
            (Some(Held::Cluster(cluster)), Some(config))
        }
    }
}

/// The code and `ErrorInfo` reason of a refusal.
fn refusal<T: std::fmt::Debug>(r: Result<T, Status>) -> (Code, String) {
    let s = r.expect_err("a refusal");
    let reason = detail(&s, "google.rpc.ErrorInfo")
        .and_then(|v| ErrorInfo::decode(v.as_slice()).ok())
        .map(|i| {
            assert_eq!(i.domain, "arbiter.matchmaking.v1");
            i.reason
        })
        .unwrap_or_default();
    (s.code(), reason)
}

/// The field an `INVALID_ARGUMENT` (or a bound's `RESOURCE_EXHAUSTED`) names.
fn bad_field<T: std::fmt::Debug>(r: Result<T, Status>) -> (Code, String) {
    let s = r.expect_err("a refusal");
    let field = detail(&s, "google.rpc.BadRequest")
        .and_then(|v| BadRequest::decode(v.as_slice()).ok())
        .and_then(|b| b.field_violations.first().map(|f| f.field.clone()))
        .unwrap_or_else(|| {
            // A bound names its field at the head of the message.
            s.message()
                .split_once(':')
                .map(|(f, _)| f.to_owned())
                .unwrap_or_default()
        });
    (s.code(), field)
}

fn challenge(request: &str, from: &str, to: &str) -> pb::CreateChallengeRequest {
    pb::CreateChallengeRequest {
        request_id: request.into(),
        challenger_id: from.into(),
        challenged_id: to.into(),
        variant: common::Variant::Chess as i32,
        rules: Vec::new(),
        time_control: "3|2".into(),
        rated: false,
        color: pb::ColorChoice::White as i32,
    }
}

fn seek(request: &str, player: &str) -> pb::CreateSeekRequest {
    pb::CreateSeekRequest {
        request_id: request.into(),
        player_id: player.into(),
        variant: common::Variant::Chess as i32,
        rules: Vec::new(),
        time_control: "5+0".into(),
        rated: true,
        color: pb::ColorChoice::Unspecified as i32,
        range: None,
    }
}

async fn create(c: &mut Client, r: pb::CreateChallengeRequest) -> pb::Challenge {
    c.create_challenge(r)
        .await
        .unwrap()
        .into_inner()
        .challenge
        .unwrap()
}

async fn accept(
    c: &mut Client,
    id: &str,
    player: &str,
    request: &str,
) -> Result<pb::AcceptChallengeResponse, Status> {
    c.accept_challenge(pb::AcceptChallengeRequest {
        challenge_id: id.into(),
        player_id: player.into(),
        request_id: request.into(),
    })
    .await
    .map(tonic::Response::into_inner)
}

async fn get(c: &mut Client, id: &str) -> pb::Challenge {
    c.get_challenge(pb::GetChallengeRequest {
        challenge_id: id.into(),
    })
    .await
    .unwrap()
    .into_inner()
    .challenge
    .unwrap()
}

type Watch = tonic::Streaming<pb::WatchChallengesResponse>;

async fn watch(c: &mut Client, player: &str) -> Watch {
    c.watch_challenges(pb::WatchChallengesRequest {
        player_id: player.into(),
    })
    .await
    .unwrap()
    .into_inner()
}

/// The next event of a watch stream (within 20 s).
async fn next(w: &mut Watch) -> pb::WatchChallengesResponse {
    tokio::time::timeout(Duration::from_secs(20), w.next())
        .await
        .expect("an event within 20 s")
        .expect("the stream goes on")
        .expect("an event")
}

fn kind(e: &pb::WatchChallengesResponse) -> pb::ChallengeEventKind {
    pb::ChallengeEventKind::try_from(e.kind).unwrap()
}

async fn accepted_challenge_gives_both_players_one_match(backing: impl Into<Backing>) {
    let (_redis, config) = store(backing).await;
    let mut s = start(config, Tuning::default(), FakeMatches::default()).await;
    let c = &mut s.client;
    let mut ann_watch = watch(c, "ann").await;
    let made = create(c, challenge("r1", "ann", "bob")).await;
    assert_eq!(made.state, pb::ChallengeState::Pending as i32);
    assert_eq!(made.time_control, "3+2");
    assert!(made.expires_at_ms > made.created_at_ms);
    let e = next(&mut ann_watch).await;
    assert_eq!(kind(&e), pb::ChallengeEventKind::Created);
    assert_eq!(e.challenge.unwrap().challenge_id, made.challenge_id);
    // Bob's stream, opened now, begins with the pending challenge.
    let mut bob_watch = watch(c, "bob").await;
    let e = next(&mut bob_watch).await;
    assert_eq!(kind(&e), pb::ChallengeEventKind::Created);
    // A retried creation is the same challenge; other content under its request id is not.
    let again = create(c, challenge("r1", "ann", "bob")).await;
    assert_eq!(again.challenge_id, made.challenge_id);
    let mut other = challenge("r1", "ann", "bob");
    other.rated = true;
    assert_eq!(
        c.create_challenge(other).await.unwrap_err().code(),
        Code::AlreadyExists
    );
    // Ann waits in a pool meanwhile.
    let mut ann_join = c
        .join(pb::JoinRequest {
            player_id: "ann".into(),
            variant: common::Variant::Chess as i32,
            time_control: "1+0".into(),
            ..pb::JoinRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    let status = ann_join.next().await.unwrap().unwrap();
    assert!(matches!(
        status.event,
        Some(pb::join_response::Event::Status(_))
    ));
    // Only the challenged player accepts.
    assert_eq!(
        refusal(accept(c, &made.challenge_id, "carol", "a1").await),
        (Code::FailedPrecondition, "NOT_CHALLENGED".into())
    );
    let bob = accept(c, &made.challenge_id, "bob", "a1").await.unwrap();
    let bob_found = bob.match_found.unwrap();
    let challenge_now = bob.challenge.unwrap();
    assert_eq!(challenge_now.state, pb::ChallengeState::Accepted as i32);
    assert_eq!(challenge_now.match_id, bob_found.match_id);
    let bob_seat = bob_found.seat.clone().unwrap();
    assert_eq!((bob_seat.player_id.as_str(), bob_seat.side), ("bob", 2));
    assert_eq!(bob_found.pool, "chess/3+2/casual");
    // Ann hears of it with her own seat and token, in the same match.
    let e = next(&mut ann_watch).await;
    assert_eq!(kind(&e), pb::ChallengeEventKind::Accepted);
    let ann_found = e.match_found.unwrap();
    assert_eq!(ann_found.match_id, bob_found.match_id);
    assert_eq!(ann_found.seat.unwrap().side, 1);
    assert_ne!(ann_found.token, bob_found.token);
    assert_eq!(ann_found.token, format!("token-{}-ann", ann_found.match_id));
    assert_eq!(
        kind(&next(&mut bob_watch).await),
        pb::ChallengeEventKind::Accepted
    );
    // Accepting took Ann out of her pool: her join stream hands out the challenge's match.
    let event = tokio::time::timeout(Duration::from_secs(20), ann_join.next())
        .await
        .expect("the join stream hears of the match")
        .unwrap()
        .unwrap();
    match event.event {
        Some(pb::join_response::Event::MatchFound(f)) => {
            assert_eq!(f.match_id, bob_found.match_id);
        }
        other => panic!("{other:?}"),
    }
    // A retried accept answers the same match; another accept is refused; one match in all.
    let retry = accept(c, &made.challenge_id, "bob", "a1").await.unwrap();
    assert_eq!(retry.match_found.unwrap(), bob_found);
    assert_eq!(
        refusal(accept(c, &made.challenge_id, "bob", "a2").await),
        (Code::FailedPrecondition, "CHALLENGE_NOT_PENDING".into())
    );
    let matches = s.backend.matches();
    assert_eq!(matches.len(), 1);
    assert_eq!(matches[0].0.players, ["ann", "bob"]);
    // The match found is kept until acknowledged, as a pool's: a join hands it out.
    let mut join = c
        .join(pb::JoinRequest {
            player_id: "ann".into(),
            variant: common::Variant::Chess as i32,
            time_control: "1+0".into(),
            ..pb::JoinRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    let first = join.next().await.unwrap().unwrap();
    match first.event {
        Some(pb::join_response::Event::MatchFound(f)) => assert_eq!(f.match_id, bob_found.match_id),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        get(c, &made.challenge_id).await.match_id,
        bob_found.match_id
    );
    s.server.stop().await;
}

#[tokio::test]
async fn accepted_challenge_gives_both_players_one_match_in_process() {
    accepted_challenge_gives_both_players_one_match(false).await;
}

#[tokio::test]
async fn accepted_challenge_gives_both_players_one_match_on_redis() {
    accepted_challenge_gives_both_players_one_match(true).await;
}

/// On a Redis Cluster, where the players' side of the store is one slot (`mm:{mm}:…`) and each
/// pool another.
#[tokio::test]
async fn accepted_challenge_gives_both_players_one_match_on_a_cluster() {
    accepted_challenge_gives_both_players_one_match(Backing::Cluster).await;
}

async fn declines_cancels_and_refused_matches(on_redis: bool) {
    let (_redis, config) = store(on_redis).await;
    let mut s = start(config, Tuning::default(), FakeMatches::default()).await;
    let c = &mut s.client;
    let mut bob_watch = watch(c, "bob").await;
    let one = create(c, challenge("d1", "ann", "bob")).await;
    assert_eq!(
        kind(&next(&mut bob_watch).await),
        pb::ChallengeEventKind::Created
    );
    let decline = |player: &str, reason: pb::DeclineReason| pb::DeclineChallengeRequest {
        challenge_id: one.challenge_id.clone(),
        player_id: player.into(),
        reason: reason as i32,
    };
    assert_eq!(
        refusal(
            c.decline_challenge(decline("ann", pb::DeclineReason::Later))
                .await
        ),
        (Code::FailedPrecondition, "NOT_CHALLENGED".into())
    );
    let declined = c
        .decline_challenge(decline("bob", pb::DeclineReason::TooFast))
        .await
        .unwrap()
        .into_inner()
        .challenge
        .unwrap();
    assert_eq!(declined.state, pb::ChallengeState::Declined as i32);
    assert_eq!(declined.decline_reason, pb::DeclineReason::TooFast as i32);
    let e = next(&mut bob_watch).await;
    assert_eq!(kind(&e), pb::ChallengeEventKind::Declined);
    // Declining again answers the same; accepting or cancelling it now is refused.
    let twice = c
        .decline_challenge(decline("bob", pb::DeclineReason::TooFast))
        .await
        .unwrap()
        .into_inner()
        .challenge
        .unwrap();
    assert_eq!(twice.state, pb::ChallengeState::Declined as i32);
    assert_eq!(
        refusal(accept(c, &one.challenge_id, "bob", "x").await),
        (Code::FailedPrecondition, "CHALLENGE_NOT_PENDING".into())
    );
    let cancel = |id: &str, player: &str| pb::CancelChallengeRequest {
        challenge_id: id.into(),
        player_id: player.into(),
    };
    assert_eq!(
        refusal(c.cancel_challenge(cancel(&one.challenge_id, "ann")).await),
        (Code::FailedPrecondition, "CHALLENGE_NOT_PENDING".into())
    );
    // A second challenge: only its challenger cancels it.
    let two = create(c, challenge("d2", "ann", "bob")).await;
    assert_eq!(
        kind(&next(&mut bob_watch).await),
        pb::ChallengeEventKind::Created
    );
    assert_eq!(
        refusal(c.cancel_challenge(cancel(&two.challenge_id, "bob")).await),
        (Code::FailedPrecondition, "NOT_CHALLENGER".into())
    );
    let cancelled = c
        .cancel_challenge(cancel(&two.challenge_id, "ann"))
        .await
        .unwrap()
        .into_inner()
        .challenge
        .unwrap();
    assert_eq!(cancelled.state, pb::ChallengeState::Cancelled as i32);
    assert_eq!(
        kind(&next(&mut bob_watch).await),
        pb::ChallengeEventKind::Cancelled
    );
    // A third: the match service refuses its match; the challenge is pending again.
    let three = create(c, challenge("d3", "ann", "bob")).await;
    assert_eq!(
        kind(&next(&mut bob_watch).await),
        pb::ChallengeEventKind::Created
    );
    s.backend.refuse.store(true, Ordering::SeqCst);
    assert_eq!(
        refusal(accept(c, &three.challenge_id, "bob", "a").await),
        (Code::FailedPrecondition, "MATCH_REFUSED".into())
    );
    assert_eq!(
        get(c, &three.challenge_id).await.state,
        pb::ChallengeState::Pending as i32
    );
    s.backend.refuse.store(false, Ordering::SeqCst);
    let ok = accept(c, &three.challenge_id, "bob", "b").await.unwrap();
    assert!(!ok.match_found.unwrap().match_id.is_empty());
    assert_eq!(
        kind(&next(&mut bob_watch).await),
        pb::ChallengeEventKind::Accepted
    );
    // Unknown challenges.
    assert_eq!(
        c.get_challenge(pb::GetChallengeRequest {
            challenge_id: "ch-nope".into()
        })
        .await
        .unwrap_err()
        .code(),
        Code::NotFound
    );
    s.server.stop().await;
}

#[tokio::test]
async fn declines_cancels_and_refused_matches_in_process() {
    declines_cancels_and_refused_matches(false).await;
}

#[tokio::test]
async fn declines_cancels_and_refused_matches_on_redis() {
    declines_cancels_and_refused_matches(true).await;
}

async fn challenges_expire(on_redis: bool) {
    let (_redis, config) = store(on_redis).await;
    let tuning = Tuning {
        challenge_lifetime_ms: 300,
        ..Tuning::default()
    };
    let mut s = start(config, tuning, FakeMatches::default()).await;
    let c = &mut s.client;
    let mut bob_watch = watch(c, "bob").await;
    let made = create(c, challenge("e1", "ann", "bob")).await;
    assert_eq!(made.expires_at_ms - made.created_at_ms, 300);
    assert_eq!(
        kind(&next(&mut bob_watch).await),
        pb::ChallengeEventKind::Created
    );
    // The stream tells of the expiry by itself (nothing else happens).
    let e = next(&mut bob_watch).await;
    assert_eq!(kind(&e), pb::ChallengeEventKind::Expired);
    assert_eq!(
        e.challenge.unwrap().state,
        pb::ChallengeState::Expired as i32
    );
    assert_eq!(
        refusal(accept(c, &made.challenge_id, "bob", "late").await),
        (Code::FailedPrecondition, "CHALLENGE_EXPIRED".into())
    );
    assert_eq!(
        get(c, &made.challenge_id).await.state,
        pb::ChallengeState::Expired as i32
    );
    assert!(s.backend.matches().is_empty());
    // An expired challenge no longer counts against the bounds.
    let again = create(c, challenge("e2", "ann", "bob")).await;
    assert_eq!(again.state, pb::ChallengeState::Pending as i32);
    s.server.stop().await;
}

#[tokio::test]
async fn challenges_expire_in_process() {
    challenges_expire(false).await;
}

#[tokio::test]
async fn challenges_expire_on_redis() {
    challenges_expire(true).await;
}

async fn a_challenge_spammer_hits_the_bound_and_nothing_else_breaks(on_redis: bool) {
    let (_redis, config) = store(on_redis).await;
    let tuning = Tuning {
        max_challenges_out: 5,
        max_challenges_in: 3,
        ..Tuning::default()
    };
    let mut s = start(config, tuning, FakeMatches::default()).await;
    let c = &mut s.client;
    let mut made = Vec::new();
    let mut refused = 0;
    for i in 0..40 {
        match c
            .create_challenge(challenge(&format!("spam{i}"), "spammer", &format!("p{i}")))
            .await
        {
            Ok(r) => made.push(r.into_inner().challenge.unwrap()),
            Err(e) => {
                assert_eq!(
                    bad_field::<()>(Err(e)),
                    (Code::ResourceExhausted, "challenger_id".into())
                );
                refused += 1;
            }
        }
    }
    assert_eq!((made.len(), refused), (5, 35));
    // Other players challenge as before; one challenged player's inbox has its own bound.
    for from in ["x1", "x2", "x3"] {
        create(c, challenge(from, from, "dora")).await;
    }
    assert_eq!(
        bad_field(c.create_challenge(challenge("x4", "x4", "dora")).await),
        (Code::ResourceExhausted, "challenged_id".into())
    );
    // The spammer's challenges still work, and a cancelled one frees a place.
    let first = &made[0];
    let ok = accept(c, &first.challenge_id, "p0", "a").await.unwrap();
    assert!(ok.match_found.is_some());
    create(c, challenge("after", "spammer", "p99")).await;
    assert_eq!(
        bad_field(
            c.create_challenge(challenge("after2", "spammer", "p98"))
                .await
        ),
        (Code::ResourceExhausted, "challenger_id".into())
    );
    // A player cannot challenge themselves.
    assert_eq!(
        bad_field(c.create_challenge(challenge("self", "ann", "ann")).await),
        (Code::InvalidArgument, "challenged_id".into())
    );
    s.server.stop().await;
}

#[tokio::test]
async fn a_challenge_spammer_hits_the_bound_and_nothing_else_breaks_in_process() {
    a_challenge_spammer_hits_the_bound_and_nothing_else_breaks(false).await;
}

#[tokio::test]
async fn a_challenge_spammer_hits_the_bound_and_nothing_else_breaks_on_redis() {
    a_challenge_spammer_hits_the_bound_and_nothing_else_breaks(true).await;
}

async fn two_accepts_of_one_seek_make_one_match(backing: impl Into<Backing>) {
    let (_redis, config) = store(backing).await;
    let backend = FakeMatches {
        slow_ms: 100,
        ..FakeMatches::default()
    };
    let mut s = start(config, Tuning::default(), backend).await;
    let c = &mut s.client;
    for round in 0..3 {
        let made = c
            .create_seek(seek(&format!("s{round}"), "ann"))
            .await
            .unwrap()
            .into_inner()
            .seek
            .unwrap();
        assert_eq!(made.state, pb::SeekState::Open as i32);
        assert_eq!(made.rating, 1500);
        let accept = |player: &'static str| {
            let mut c = c.clone();
            let id = made.seek_id.clone();
            tokio::spawn(async move {
                c.accept_seek(pb::AcceptSeekRequest {
                    seek_id: id,
                    player_id: player.into(),
                    request_id: format!("{player}-accept"),
                })
                .await
                .map(tonic::Response::into_inner)
            })
        };
        let (bob, carol) = (accept("bob"), accept("carol"));
        let results = [bob.await.unwrap(), carol.await.unwrap()];
        let winners: Vec<&pb::AcceptSeekResponse> =
            results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(winners.len(), 1, "{results:?}");
        let loser = results.iter().find(|r| r.is_err()).unwrap().clone();
        assert_eq!(
            refusal(loser),
            (Code::FailedPrecondition, "SEEK_TAKEN".into())
        );
        let found = winners[0].match_found.clone().unwrap();
        assert_eq!(
            winners[0].seek.clone().unwrap().state,
            pb::SeekState::Accepted as i32
        );
        assert_eq!(found.seats.len(), 2);
        // The winner's retry is the same match.
        let winner = found.seat.clone().unwrap().player_id;
        let retry = c
            .accept_seek(pb::AcceptSeekRequest {
                seek_id: made.seek_id.clone(),
                player_id: winner.clone(),
                request_id: format!("{winner}-accept"),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(retry.match_found.unwrap().match_id, found.match_id);
        // Acknowledged, so that the next round's match found is the only one.
        for p in ["ann", winner.as_str()] {
            c.acknowledge(pb::AcknowledgeRequest {
                player_id: p.into(),
                match_id: found.match_id.clone(),
            })
            .await
            .unwrap();
        }
    }
    let matches = s.backend.matches();
    assert_eq!(matches.len(), 3);
    let ids: HashSet<String> = matches.iter().map(|(_, m)| m.match_id.clone()).collect();
    assert_eq!(ids.len(), 3);
    let lobby = c
        .list_seeks(pb::ListSeeksRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(lobby.seeks.is_empty(), "{lobby:?}");
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_accepts_of_one_seek_make_one_match_in_process() {
    two_accepts_of_one_seek_make_one_match(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_accepts_of_one_seek_make_one_match_on_redis() {
    two_accepts_of_one_seek_make_one_match(true).await;
}

#[tokio::test]
async fn two_accepts_of_one_seek_make_one_match_on_a_cluster() {
    two_accepts_of_one_seek_make_one_match(Backing::Cluster).await;
}

async fn the_lobby_its_bounds_pages_and_eligibility(on_redis: bool) {
    let (_redis, config) = store(on_redis).await;
    let tuning = Tuning {
        max_seeks_per_player: 2,
        max_seeks: 6,
        ..Tuning::default()
    };
    let mut s = start(config, tuning, FakeMatches::default()).await;
    let c = &mut s.client;
    let mut ids = Vec::new();
    for (i, (player, variant)) in [
        ("a", common::Variant::Chess),
        ("a", common::Variant::Glinski),
        ("b", common::Variant::Chess),
        ("c", common::Variant::Chess),
        ("d", common::Variant::Glinski),
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = seek(&format!("l{i}"), player);
        r.variant = variant as i32;
        ids.push(
            c.create_seek(r)
                .await
                .unwrap()
                .into_inner()
                .seek
                .unwrap()
                .seek_id,
        );
    }
    // The seeker's bound, then the lobby's.
    assert_eq!(
        bad_field(c.create_seek(seek("l9", "a")).await),
        (Code::ResourceExhausted, "player_id".into())
    );
    c.create_seek(seek("l5", "e")).await.unwrap();
    assert_eq!(
        c.create_seek(seek("l6", "f")).await.unwrap_err().code(),
        Code::ResourceExhausted
    );
    // Pages of two, oldest first, then the last page.
    let mut seen = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let page = c
            .list_seeks(pb::ListSeeksRequest {
                variant: 0,
                page_size: 2,
                page_token: token.clone(),
            })
            .await
            .unwrap()
            .into_inner();
        pages += 1;
        assert!(page.seeks.len() <= 2);
        seen.extend(page.seeks.into_iter().map(|s| s.seek_id));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    assert_eq!(pages, 3);
    // Every seek once (seeks made in the same millisecond are ordered by id).
    let distinct: HashSet<&String> = seen.iter().collect();
    assert_eq!((seen.len(), distinct.len()), (6, 6));
    assert!(ids.iter().all(|id| distinct.contains(id)));
    let glinski = c
        .list_seeks(pb::ListSeeksRequest {
            variant: common::Variant::Glinski as i32,
            ..pb::ListSeeksRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    let glinski: HashSet<&String> = glinski.seeks.iter().map(|s| &s.seek_id).collect();
    assert_eq!(glinski, HashSet::from([&ids[1], &ids[4]]));
    // Eligibility: not one's own seek; a rated seek's range.
    let accept = |id: &str, player: &str| pb::AcceptSeekRequest {
        seek_id: id.into(),
        player_id: player.into(),
        request_id: format!("{player}-{id}"),
    };
    assert_eq!(
        refusal(c.accept_seek(accept(&ids[0], "a")).await),
        (Code::FailedPrecondition, "OWN_SEEK".into())
    );
    c.cancel_seek(pb::CancelSeekRequest {
        seek_id: ids[2].clone(),
        player_id: "b".into(),
    })
    .await
    .unwrap();
    let mut high = seek("h", "b");
    high.range = Some(pb::RatingRange {
        min: 1600,
        max: 1800,
    });
    let high = c
        .create_seek(high)
        .await
        .unwrap()
        .into_inner()
        .seek
        .unwrap();
    assert_eq!(
        refusal(c.accept_seek(accept(&high.seek_id, "z")).await),
        (Code::FailedPrecondition, "RATING_OUT_OF_RANGE".into())
    );
    assert_eq!(
        refusal(
            c.cancel_seek(pb::CancelSeekRequest {
                seek_id: high.seek_id.clone(),
                player_id: "z".into(),
            })
            .await
        ),
        (Code::FailedPrecondition, "NOT_SEEKER".into())
    );
    // A cancelled seek cannot be accepted.
    assert_eq!(
        refusal(c.accept_seek(accept(&ids[2], "z")).await),
        (Code::FailedPrecondition, "SEEK_NOT_OPEN".into())
    );
    // The new player's 1500 lies in 1400–1600.
    let mut mid = seek("m", "c");
    mid.range = Some(pb::RatingRange {
        min: 1400,
        max: 1600,
    });
    c.cancel_seek(pb::CancelSeekRequest {
        seek_id: ids[3].clone(),
        player_id: "c".into(),
    })
    .await
    .unwrap();
    let mid = c.create_seek(mid).await.unwrap().into_inner().seek.unwrap();
    let ok = c
        .accept_seek(accept(&mid.seek_id, "z"))
        .await
        .unwrap()
        .into_inner();
    let found = ok.match_found.unwrap();
    assert!(found.rated);
    assert_eq!(found.time_control, "5+0");
    s.server.stop().await;
}

#[tokio::test]
async fn the_lobby_its_bounds_pages_and_eligibility_in_process() {
    the_lobby_its_bounds_pages_and_eligibility(false).await;
}

#[tokio::test]
async fn the_lobby_its_bounds_pages_and_eligibility_on_redis() {
    the_lobby_its_bounds_pages_and_eligibility(true).await;
}

#[tokio::test]
async fn bad_fields_are_named() {
    let mut s = start(None, Tuning::default(), FakeMatches::default()).await;
    let c = &mut s.client;
    let cases: Vec<(pb::CreateChallengeRequest, &str)> = vec![
        (challenge("", "ann", "bob"), "request_id"),
        (challenge(&"r".repeat(129), "ann", "bob"), "request_id"),
        (challenge("r", "", "bob"), "challenger_id"),
        (challenge("r", "a\u{1}", "bob"), "challenger_id"),
        (challenge("r", "ann", &"b".repeat(129)), "challenged_id"),
        (challenge("r", "ann", "ann"), "challenged_id"),
        (
            pb::CreateChallengeRequest {
                variant: common::Variant::Bughouse as i32,
                ..challenge("r", "ann", "bob")
            },
            "variant",
        ),
        (
            pb::CreateChallengeRequest {
                variant: 99,
                ..challenge("r", "ann", "bob")
            },
            "variant",
        ),
        (
            pb::CreateChallengeRequest {
                time_control: "3+x".into(),
                ..challenge("r", "ann", "bob")
            },
            "time_control",
        ),
        (
            pb::CreateChallengeRequest {
                color: 9,
                ..challenge("r", "ann", "bob")
            },
            "color",
        ),
        (
            pb::CreateChallengeRequest {
                rules: vec![
                    common::RuleOption {
                        name: "x".into(),
                        value: "y".into(),
                    };
                    9
                ],
                ..challenge("r", "ann", "bob")
            },
            "rules",
        ),
        (
            pb::CreateChallengeRequest {
                rules: vec![common::RuleOption {
                    name: "no such rule".into(),
                    value: "y".into(),
                }],
                ..challenge("r", "ann", "bob")
            },
            "rules",
        ),
    ];
    for (request, field) in cases {
        assert_eq!(
            bad_field(c.create_challenge(request.clone()).await),
            (Code::InvalidArgument, field.to_owned()),
            "{request:?}"
        );
    }
    // Byzantine's own rule options are taken.
    let byzantine = create(
        c,
        pb::CreateChallengeRequest {
            variant: common::Variant::Byzantine as i32,
            rules: vec![common::RuleOption {
                name: "stalemate".into(),
                value: "loses".into(),
            }],
            ..challenge("byz", "ann", "bob")
        },
    )
    .await;
    assert_eq!(byzantine.rules.len(), 1);
    let mut casual_range = seek("r", "ann");
    casual_range.rated = false;
    casual_range.range = Some(pb::RatingRange { min: 1, max: 2 });
    assert_eq!(
        bad_field(c.create_seek(casual_range).await),
        (Code::InvalidArgument, "range".into())
    );
    let mut bad_range = seek("r", "ann");
    bad_range.range = Some(pb::RatingRange { min: 3, max: 2 });
    assert_eq!(
        bad_field(c.create_seek(bad_range).await),
        (Code::InvalidArgument, "range".into())
    );
    assert_eq!(
        bad_field(
            c.list_seeks(pb::ListSeeksRequest {
                page_token: "nonsense".into(),
                ..pb::ListSeeksRequest::default()
            })
            .await
        ),
        (Code::InvalidArgument, "page_token".into())
    );
    assert_eq!(
        bad_field(
            c.decline_challenge(pb::DeclineChallengeRequest {
                challenge_id: "ch-1".into(),
                player_id: "bob".into(),
                reason: 99,
            })
            .await
        ),
        (Code::InvalidArgument, "reason".into())
    );
    assert_eq!(
        bad_field(accept(c, "ch-1", "bob", "").await),
        (Code::InvalidArgument, "request_id".into())
    );
    assert_eq!(
        bad_field(accept(c, "", "bob", "r").await),
        (Code::InvalidArgument, "challenge_id".into())
    );
    assert_eq!(
        bad_field(
            c.watch_challenges(pb::WatchChallengesRequest {
                player_id: "\n".into()
            })
            .await
        ),
        (Code::InvalidArgument, "player_id".into())
    );
    s.server.stop().await;
}

async fn a_rated_challenge_is_rated_once(on_redis: bool) {
    let (_redis, config) = store(on_redis).await;
    let backend = FakeMatches {
        end: true,
        ..FakeMatches::default()
    };
    let mut s = start(config, Tuning::default(), backend).await;
    let c = &mut s.client;
    let made = create(
        c,
        pb::CreateChallengeRequest {
            rated: true,
            ..challenge("rated", "ann", "bob")
        },
    )
    .await;
    accept(c, &made.challenge_id, "bob", "a").await.unwrap();
    // Ann is White and wins: both players get one rated game, once.
    let games = |r: &pb::GetRatingsResponse| r.ratings.iter().map(|r| r.games).sum::<u32>();
    let reader = c.clone();
    let ratings = |player: &'static str| {
        let mut c = reader.clone();
        async move {
            c.get_ratings(pb::GetRatingsRequest {
                player_id: player.into(),
            })
            .await
            .unwrap()
            .into_inner()
        }
    };
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if games(&ratings("ann").await) == 1 && games(&ratings("bob").await) == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the match is rated");
    let ann = ratings("ann").await;
    let bob = ratings("bob").await;
    assert!(ann.ratings[0].glicko_rating > bob.ratings[0].glicko_rating);
    assert_eq!(ann.ratings[0].speed, "blitz");
    // A retried accept changes nothing.
    accept(c, &made.challenge_id, "bob", "a").await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(games(&ratings("ann").await), 1);
    s.server.stop().await;
}

#[tokio::test]
async fn a_rated_challenge_is_rated_once_in_process() {
    a_rated_challenge_is_rated_once(false).await;
}

#[tokio::test]
async fn a_rated_challenge_is_rated_once_on_redis() {
    a_rated_challenge_is_rated_once(true).await;
}

async fn join_pool(c: &mut Client, player: &str) -> tonic::Streaming<pb::JoinResponse> {
    c.join(join_request(player)).await.unwrap().into_inner()
}

fn join_request(player: &str) -> pb::JoinRequest {
    pb::JoinRequest {
        player_id: player.into(),
        variant: common::Variant::Chess as i32,
        time_control: "1+0".into(),
        ..pb::JoinRequest::default()
    }
}

/// The players (sorted) of every match the match service created.
fn match_players(b: &FakeMatches) -> Vec<Vec<String>> {
    let mut all: Vec<Vec<String>> = b
        .matches()
        .into_iter()
        .map(|(m, _)| {
            let mut p = m.players.clone();
            p.sort();
            p
        })
        .collect();
    all.sort();
    all
}

/// Accepting is a committed pairing: it takes the acceptor out of their pool in the same step
/// (no wave can pair them meanwhile), and while either player is being matched or holds an
/// unacknowledged match found no other accept involves them (two of one challenger's
/// challenges accepted at once give one match). A retried accept answers the recorded match
/// without asking the match service again.
async fn an_accept_is_a_committed_pairing(on_redis: bool) {
    let (_redis, config) = store(on_redis).await;
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let backend = FakeMatches {
        gate: Some(Arc::clone(&gate)),
        ..FakeMatches::default()
    };
    let tuning = Tuning {
        wave_at: 2,
        ..Tuning::default()
    };
    let mut s = start(config, tuning, backend).await;
    let mut c2 = s.client.clone();
    let c = &mut s.client;
    // Bob waits in a pool; Ann challenges Bob and Dave.
    let mut bob_join = join_pool(c, "bob").await;
    assert!(matches!(
        bob_join.next().await.unwrap().unwrap().event,
        Some(pb::join_response::Event::Status(_))
    ));
    let to_bob = create(c, challenge("r1", "ann", "bob")).await;
    let to_dave = create(c, challenge("r2", "ann", "dave")).await;
    // Bob accepts; the match service holds the creation back.
    let id = to_bob.challenge_id.clone();
    let bob_accept = tokio::spawn(async move { accept(&mut c2, &id, "bob", "a1").await });
    tokio::time::timeout(Duration::from_secs(20), async {
        while s.backend.asked() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the accept asks for its match");
    // Meanwhile both are being matched: Bob's Join answers MATCHING; Ann's other challenge
    // cannot be accepted; the pool no longer holds Bob (Carol waits alone).
    assert_eq!(
        refusal(c.join(join_request("bob")).await.map(|_| ())),
        (Code::FailedPrecondition, "MATCHING".into())
    );
    assert_eq!(
        refusal(accept(c, &to_dave.challenge_id, "dave", "d1").await),
        (Code::FailedPrecondition, "PLAYER_BUSY".into())
    );
    let mut carol_join = join_pool(c, "carol").await;
    match carol_join.next().await.unwrap().unwrap().event {
        Some(pb::join_response::Event::Status(st)) => assert_eq!(st.waiting, 1),
        other => panic!("{other:?}"),
    }
    gate.add_permits(1_000);
    let bob_found = bob_accept.await.unwrap().unwrap().match_found.unwrap();
    // Bob's join stream hands out the challenge's match.
    let event = tokio::time::timeout(Duration::from_secs(20), bob_join.next())
        .await
        .expect("the join stream hears of the match")
        .unwrap()
        .unwrap();
    match event.event {
        Some(pb::join_response::Event::MatchFound(f)) => {
            assert_eq!(f.match_id, bob_found.match_id);
        }
        other => panic!("{other:?}"),
    }
    // A retried accept answers the recorded match, even once acknowledged, without asking
    // the match service again.
    let asked = s.backend.asked();
    c.acknowledge(pb::AcknowledgeRequest {
        player_id: "bob".into(),
        match_id: bob_found.match_id.clone(),
    })
    .await
    .unwrap();
    let retry = accept(c, &to_bob.challenge_id, "bob", "a1").await.unwrap();
    assert_eq!(retry.match_found.unwrap(), bob_found);
    assert_eq!(s.backend.asked(), asked);
    // Ann holds an unacknowledged match found: Dave cannot accept her challenge, nor can she
    // accept Erin's, until she acknowledges it.
    assert_eq!(
        refusal(accept(c, &to_dave.challenge_id, "dave", "d1").await),
        (Code::FailedPrecondition, "PLAYER_BUSY".into())
    );
    let to_ann = create(c, challenge("e1", "erin", "ann")).await;
    assert_eq!(
        refusal(accept(c, &to_ann.challenge_id, "ann", "x1").await),
        (Code::FailedPrecondition, "PLAYER_BUSY".into())
    );
    c.acknowledge(pb::AcknowledgeRequest {
        player_id: "ann".into(),
        match_id: bob_found.match_id.clone(),
    })
    .await
    .unwrap();
    let dave = accept(c, &to_dave.challenge_id, "dave", "d1")
        .await
        .unwrap();
    assert_ne!(dave.match_found.unwrap().match_id, bob_found.match_id);
    assert_eq!(
        match_players(&s.backend),
        [
            vec!["ann".to_owned(), "bob".to_owned()],
            vec!["ann".to_owned(), "dave".to_owned()]
        ]
    );
    // Carol still waits, alone.
    drop(carol_join);
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accept_is_a_committed_pairing_in_process() {
    an_accept_is_a_committed_pairing(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accept_is_a_committed_pairing_on_redis() {
    an_accept_is_a_committed_pairing(true).await;
}

/// Two accepts at once of two seeks of one seeker: one match, the other accept refused.
async fn two_seeks_of_one_seeker_accepted_at_once_make_one_match(on_redis: bool) {
    let (_redis, config) = store(on_redis).await;
    let backend = FakeMatches {
        slow_ms: 50,
        ..FakeMatches::default()
    };
    let mut s = start(config, Tuning::default(), backend).await;
    let c = &mut s.client;
    let mut ids = Vec::new();
    for r in ["s1", "s2"] {
        let made = c.create_seek(seek(r, "ann")).await.unwrap().into_inner();
        ids.push(made.seek.unwrap().seek_id);
    }
    let mut tasks = Vec::new();
    for (id, p) in ids.iter().zip(["bob", "carol"]) {
        let mut c = s.client.clone();
        let id = id.clone();
        tasks.push(tokio::spawn(async move {
            c.accept_seek(pb::AcceptSeekRequest {
                seek_id: id,
                player_id: p.into(),
                request_id: "a".into(),
            })
            .await
        }));
    }
    let mut ok = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => ok += 1,
            Err(e) => assert_eq!(
                refusal::<()>(Err(e)),
                (Code::FailedPrecondition, "PLAYER_BUSY".into())
            ),
        }
    }
    assert_eq!(ok, 1);
    assert_eq!(s.backend.matches().len(), 1);
    s.server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_seeks_of_one_seeker_accepted_at_once_make_one_match_in_process() {
    two_seeks_of_one_seeker_accepted_at_once_make_one_match(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_seeks_of_one_seeker_accepted_at_once_make_one_match_on_redis() {
    two_seeks_of_one_seeker_accepted_at_once_make_one_match(true).await;
}

/// Creations are counted per owner and hour, ended offers included (create-and-cancel loops
/// hit the bound); a flood of ended challenges never pushes a pending one out of its player's
/// watch stream.
async fn create_cancel_spam_hits_the_hourly_bound(on_redis: bool) {
    let (_redis, config) = store(on_redis).await;
    let tuning = Tuning {
        max_offers_per_hour: 5,
        ..Tuning::default()
    };
    let mut s = start(config, tuning, FakeMatches::default()).await;
    let c = &mut s.client;
    let genuine = create(c, challenge("g", "friend", "vic")).await;
    // 41 spammers × 5 challenges, each cancelled at once: more than the 200 kept per player.
    for a in 0..41 {
        let from = format!("spam{a}");
        for i in 0..5 {
            let made = create(c, challenge(&format!("r{i}"), &from, "vic")).await;
            c.cancel_challenge(pb::CancelChallengeRequest {
                challenge_id: made.challenge_id,
                player_id: from.clone(),
            })
            .await
            .unwrap();
        }
    }
    assert_eq!(
        bad_field(c.create_challenge(challenge("r5", "spam0", "vic")).await),
        (Code::ResourceExhausted, "challenger_id".into())
    );
    // Seeks are counted the same way.
    for i in 0..5 {
        let made = c
            .create_seek(seek(&format!("k{i}"), "seeker"))
            .await
            .unwrap()
            .into_inner()
            .seek
            .unwrap();
        c.cancel_seek(pb::CancelSeekRequest {
            seek_id: made.seek_id,
            player_id: "seeker".into(),
        })
        .await
        .unwrap();
    }
    assert_eq!(
        bad_field(c.create_seek(seek("k5", "seeker")).await),
        (Code::ResourceExhausted, "player_id".into())
    );
    // The victim's watch still begins with the genuine pending challenge.
    let mut w = watch(c, "vic").await;
    let e = next(&mut w).await;
    assert_eq!(kind(&e), pb::ChallengeEventKind::Created);
    assert_eq!(e.challenge.unwrap().challenge_id, genuine.challenge_id);
    s.server.stop().await;
}

#[tokio::test]
async fn create_cancel_spam_hits_the_hourly_bound_in_process() {
    create_cancel_spam_hits_the_hourly_bound(false).await;
}

#[tokio::test]
async fn create_cancel_spam_hits_the_hourly_bound_on_redis() {
    create_cancel_spam_hits_the_hourly_bound(true).await;
}

/// Watch streams are bounded per player and per replica; a closed stream frees its place.
#[tokio::test]
async fn watch_streams_are_bounded() {
    let tuning = Tuning {
        max_watches_per_player: 2,
        max_watches: 3,
        ..Tuning::default()
    };
    let mut s = start(None, tuning, FakeMatches::default()).await;
    let c = &mut s.client;
    let first = watch(c, "ann").await;
    let _second = watch(c, "ann").await;
    let request = |p: &str| pb::WatchChallengesRequest {
        player_id: p.into(),
    };
    assert_eq!(
        bad_field(c.watch_challenges(request("ann")).await.map(|_| ())),
        (Code::ResourceExhausted, "player_id".into())
    );
    let _bob = watch(c, "bob").await;
    assert_eq!(
        c.watch_challenges(request("carol"))
            .await
            .unwrap_err()
            .code(),
        Code::ResourceExhausted
    );
    drop(first);
    tokio::time::timeout(Duration::from_secs(20), async {
        while c.watch_challenges(request("ann")).await.is_err() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("a closed stream frees its place");
    s.server.stop().await;
}

/// ListSeeks refuses a page size past the most (0 is the default).
#[tokio::test]
async fn an_absurd_page_size_is_refused() {
    let mut s = start(None, Tuning::default(), FakeMatches::default()).await;
    let c = &mut s.client;
    for size in [201, u32::MAX] {
        assert_eq!(
            bad_field(
                c.list_seeks(pb::ListSeeksRequest {
                    page_size: size,
                    ..pb::ListSeeksRequest::default()
                })
                .await
            ),
            (Code::InvalidArgument, "page_size".into())
        );
    }
    for size in [0, 200] {
        c.list_seeks(pb::ListSeeksRequest {
            page_size: size,
            ..pb::ListSeeksRequest::default()
        })
        .await
        .unwrap();
    }
    s.server.stop().await;
}

/// On Redis an offer is kept at least an hour past its expiry through every step, a failed
/// accept included (an offer living longer than an hour stays while open).
#[tokio::test]
async fn a_long_lived_offer_outlives_a_failed_accept_on_redis() {
    let (held, config) = store(true).await;
    let Some(Held::Redis(redis)) = held else {
        unreachable!("store(true) is one Redis")
    };
    let tuning = Tuning {
        challenge_lifetime_ms: 3 * 3_600_000,
        ..Tuning::default()
    };
    let backend = FakeMatches::default();
    backend.refuse.store(true, Ordering::SeqCst);
    let mut s = start(config, tuning, backend).await;
    let c = &mut s.client;
    let made = create(c, challenge("r", "ann", "bob")).await;
    assert_eq!(
        refusal(accept(c, &made.challenge_id, "bob", "a").await),
        (Code::FailedPrecondition, "MATCH_REFUSED".into())
    );
    assert_eq!(
        get(c, &made.challenge_id).await.state,
        pb::ChallengeState::Pending as i32
    );
    let client = redis::Client::open(redis.url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let pttl: i64 = redis::cmd("PTTL")
        .arg(format!("mm:of:{}", made.challenge_id))
        .query_async(&mut conn)
        .await
        .unwrap();
    // Its expiry (about 3 h away) plus an hour; at least more than the 3 h.
    assert!(pttl > 3 * 3_600_000, "{pttl}");
    // The accept's marks are gone: both players may join a pool.
    c.join(join_request("bob")).await.unwrap();
    s.server.stop().await;
}

async fn accept_seek(
    c: &mut Client,
    id: &str,
    player: &str,
    request: &str,
) -> Result<pb::AcceptSeekResponse, Status> {
    c.accept_seek(pb::AcceptSeekRequest {
        seek_id: id.into(),
        player_id: player.into(),
        request_id: request.into(),
    })
    .await
    .map(tonic::Response::into_inner)
}

async fn lobby(c: &mut Client) -> Vec<pb::Seek> {
    c.list_seeks(pb::ListSeeksRequest::default())
        .await
        .unwrap()
        .into_inner()
        .seeks
}

/// An accept whose `CreateMatch` created the match but lost its answer stays under way: the
/// acceptor is told UNAVAILABLE, the seek (and a challenge) stays taken (another player's accept
/// and the owner's cancel are refused), and the acceptor's retry finishes it with the same match
/// request id: one match.
async fn a_lost_create_answer_is_retried_into_one_match(on_redis: bool) {
    let (_redis, config) = store(on_redis).await;
    let backend = FakeMatches::default();
    let tuning = Tuning {
        create_retries: 0,
        accept_stale_ms: 3_600_000,
        accept_resume_interval_ms: 0,
        ..Tuning::default()
    };
    let mut s = start(config, tuning, backend).await;
    let c = &mut s.client;
    let made = c
        .create_seek(seek("s1", "ann"))
        .await
        .unwrap()
        .into_inner()
        .seek
        .unwrap();
    s.backend.lose.store(1, Ordering::SeqCst);
    let first = accept_seek(c, &made.seek_id, "bob", "bob-1").await;
    assert_eq!(refusal(first).0, Code::Unavailable);
    assert_eq!(s.backend.matches().len(), 1, "the match was created");
    assert!(lobby(c).await.is_empty(), "the seek is not open again");
    // Nobody else takes the seek meanwhile, and its owner cannot cancel it.
    let other = accept_seek(c, &made.seek_id, "carol", "carol-1").await;
    assert_eq!(
        refusal(other),
        (Code::FailedPrecondition, "SEEK_TAKEN".into())
    );
    let cancel = c
        .cancel_seek(pb::CancelSeekRequest {
            seek_id: made.seek_id.clone(),
            player_id: "ann".into(),
        })
        .await;
    assert_eq!(
        refusal(cancel),
        (Code::FailedPrecondition, "SEEK_TAKEN".into())
    );
    // The acceptor's retry finishes it: the same match.
    let retry = accept_seek(c, &made.seek_id, "bob", "bob-1").await.unwrap();
    let found = retry.match_found.unwrap();
    assert_eq!(retry.seek.unwrap().state, pb::SeekState::Accepted as i32);
    let matches = s.backend.matches();
    assert_eq!(matches.len(), 1);
    assert_eq!(found.match_id, matches[0].1.match_id);
    assert_eq!(s.backend.asked_ids().len(), 1, "one match request id");
    // The same for a challenge: the challenged player's retry finishes it.
    let ch = create(c, challenge("c1", "dan", "eve")).await;
    s.backend.lose.store(1, Ordering::SeqCst);
    let first = accept(c, &ch.challenge_id, "eve", "eve-1").await;
    assert_eq!(refusal(first).0, Code::Unavailable);
    let cancel = c
        .cancel_challenge(pb::CancelChallengeRequest {
            challenge_id: ch.challenge_id.clone(),
            player_id: "dan".into(),
        })
        .await;
    assert_eq!(
        refusal(cancel),
        (Code::FailedPrecondition, "CHALLENGE_NOT_PENDING".into())
    );
    let retry = accept(c, &ch.challenge_id, "eve", "eve-1").await.unwrap();
    assert_eq!(
        retry.challenge.unwrap().state,
        pb::ChallengeState::Accepted as i32
    );
    assert_eq!(s.backend.matches().len(), 2);
    assert_eq!(s.backend.asked_ids().len(), 2);
    s.server.stop().await;
}

#[tokio::test]
async fn a_lost_create_answer_is_retried_into_one_match_in_process() {
    a_lost_create_answer_is_retried_into_one_match(false).await;
}

#[tokio::test]
async fn a_lost_create_answer_is_retried_into_one_match_on_redis() {
    a_lost_create_answer_is_retried_into_one_match(true).await;
}

/// A stale accept (stale time 0: every accept under way is stale to another accept) is resumed
/// by the next accept, never replaced: one match, for the original acceptor, whose match found
/// is recorded; the new caller is told the seek is taken.
async fn a_stale_accept_is_resumed_by_the_next_accept(on_redis: bool) {
    let (_redis, config) = store(on_redis).await;
    let backend = FakeMatches::default();
    let tuning = Tuning {
        create_retries: 0,
        accept_stale_ms: 0,
        accept_resume_interval_ms: 0,
        ..Tuning::default()
    };
    let mut s = start(config, tuning, backend).await;
    let c = &mut s.client;
    let made = c
        .create_seek(seek("s1", "ann"))
        .await
        .unwrap()
        .into_inner()
        .seek
        .unwrap();
    s.backend.lose.store(1, Ordering::SeqCst);
    let first = accept_seek(c, &made.seek_id, "bob", "bob-1").await;
    assert_eq!(refusal(first).0, Code::Unavailable);
    let other = accept_seek(c, &made.seek_id, "carol", "carol-1").await;
    assert_eq!(
        refusal(other),
        (Code::FailedPrecondition, "SEEK_TAKEN".into())
    );
    let matches = s.backend.matches();
    assert_eq!(matches.len(), 1);
    assert_eq!(s.backend.asked_ids().len(), 1, "one match request id");
    let mut players = matches[0].0.players.clone();
    players.sort();
    assert_eq!(players, ["ann", "bob"]);
    // The original acceptor's match found was recorded: their retry answers it.
    let retry = accept_seek(c, &made.seek_id, "bob", "bob-1").await.unwrap();
    assert_eq!(retry.seek.unwrap().state, pb::SeekState::Accepted as i32);
    assert_eq!(retry.match_found.unwrap().match_id, matches[0].1.match_id);
    assert_eq!(s.backend.asked_ids().len(), 1);
    assert!(lobby(c).await.is_empty());
    s.server.stop().await;
}

#[tokio::test]
async fn a_stale_accept_is_resumed_by_the_next_accept_in_process() {
    a_stale_accept_is_resumed_by_the_next_accept(false).await;
}

#[tokio::test]
async fn a_stale_accept_is_resumed_by_the_next_accept_on_redis() {
    a_stale_accept_is_resumed_by_the_next_accept(true).await;
}

/// A stale accept nobody retries is finished by a replica's resumer: the seek turns accepted
/// with one match, for the original acceptor.
async fn the_resumer_finishes_a_stale_accept(on_redis: bool) {
    let (_redis, config) = store(on_redis).await;
    let backend = FakeMatches::default();
    let tuning = Tuning {
        create_retries: 0,
        accept_stale_ms: 0,
        accept_resume_interval_ms: 20,
        ..Tuning::default()
    };
    let mut s = start(config, tuning, backend).await;
    let c = &mut s.client;
    let made = c
        .create_seek(seek("s1", "ann"))
        .await
        .unwrap()
        .into_inner()
        .seek
        .unwrap();
    s.backend.lose.store(1, Ordering::SeqCst);
    // The resumer may finish it before the answer (then the acceptor sees it accepted).
    if let Err(e) = accept_seek(c, &made.seek_id, "bob", "bob-1").await {
        assert_eq!(e.code(), Code::Unavailable, "{e:?}");
    }
    // Bob's join is refused (MATCHING) while he is being matched; once the resumer finished
    // the accept, it hands out the match found.
    let found = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match c.join(join_request("bob")).await {
                Ok(r) => {
                    let mut join = r.into_inner();
                    match join.next().await.unwrap().unwrap().event {
                        Some(pb::join_response::Event::MatchFound(f)) => break f,
                        other => panic!("{other:?}"),
                    }
                }
                Err(e) => {
                    assert_eq!(
                        refusal::<()>(Err(e)),
                        (Code::FailedPrecondition, "MATCHING".into())
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    })
    .await
    .expect("the resumer finishes the accept");
    let matches = s.backend.matches();
    assert_eq!(found.match_id, matches[0].1.match_id);
    assert_eq!(matches.len(), 1);
    assert_eq!(s.backend.asked_ids().len(), 1, "one match request id");
    let retry = accept_seek(c, &made.seek_id, "bob", "bob-1").await.unwrap();
    assert_eq!(retry.match_found.unwrap().match_id, matches[0].1.match_id);
    s.server.stop().await;
}

#[tokio::test]
async fn the_resumer_finishes_a_stale_accept_in_process() {
    the_resumer_finishes_a_stale_accept(false).await;
}

#[tokio::test]
async fn the_resumer_finishes_a_stale_accept_on_redis() {
    the_resumer_finishes_a_stale_accept(true).await;
}
