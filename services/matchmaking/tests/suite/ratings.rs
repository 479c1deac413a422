//! Rating import and rating history through real gRPC, in process and on Redis (as the
//! matchmaking ACL user): imported ratings are what GetRatings shows; a retried import changes
//! nothing twice; the overwrite policy; bad entries and a batch over the bound are refused with
//! the field named; rated matches are in the history once each, newest first, with their
//! before and after ratings, a page at a time; the history keeps the latest N changes.

use crate::details::{BadRequest, detail};
use arbiter_matchmaking::Tuning;
use arbiter_matchmaking::backend::{BackendError, CreatedMatch, MatchBackend, MatchEnd, NewMatch};
use arbiter_proto::common::v1 as common;
use arbiter_proto::matchmaking::v1 as pb;
use arbiter_proto::matchmaking::v1::matchmaking_service_client::MatchmakingServiceClient;
use arbiter_redis_conn::RedisConfig;
use arbiter_testkit::grpc::TestServer;
use prost::Message;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tonic::transport::Channel;
use tonic::{Code, Status};

/// A match service that creates each request id's match once (`match-<n>`, in order) and ends
/// each with a White win at a time that grows with `n`.
#[derive(Clone, Default)]
struct FakeMatches {
    created: Arc<Mutex<HashMap<String, CreatedMatch>>>,
}

impl MatchBackend for FakeMatches {
    async fn create(&self, m: &NewMatch) -> Result<CreatedMatch, BackendError> {
        let mut created = self.created.lock().unwrap();
        let n = created.len();
        Ok(created
            .entry(m.request_id.clone())
            .or_insert_with(|| CreatedMatch {
                match_id: format!("match-{n}"),
                tokens: m.players.iter().map(|p| format!("token-{n}-{p}")).collect(),
            })
            .clone())
    }

    async fn wait_end(&self, match_id: &str) -> Result<MatchEnd, BackendError> {
        let n: u64 = match_id
            .strip_prefix("match-")
            .and_then(|n| n.parse().ok())
            .expect("a match of this service");
        Ok(MatchEnd::Scored {
            white_quarters: 4,
            at_ms: 1_700_000_000_000 + n * 60_000,
        })
    }
}

type Client = MatchmakingServiceClient<Channel>;

async fn start(
    redis: Option<RedisConfig>,
    tuning: Tuning,
) -> (TestServer<arbiter_kit::ServeError>, Client) {
    let server = crate::serve(redis, tuning, FakeMatches::default()).await;
    let client = MatchmakingServiceClient::new(server.channel());
    (server, client)
}

/// A real Redis (its matchmaking ACL user), or none: in process.
async fn store(on_redis: bool) -> (Option<arbiter_testkit::Redis>, Option<RedisConfig>) {
    if on_redis {
        let redis = arbiter_testkit::redis().await;
        let config = redis.secure("arbiter-matchmaking");
        (Some(redis), Some(config))
    } else {
        (None, None)
    }
}

/// The code and the field an `INVALID_ARGUMENT` names.
fn bad_field<T: std::fmt::Debug>(r: Result<T, Status>) -> (Code, String) {
    let s = r.expect_err("a refusal");
    let field = detail(&s, "google.rpc.BadRequest")
        .and_then(|v| BadRequest::decode(v.as_slice()).ok())
        .and_then(|b| b.field_violations.first().map(|f| f.field.clone()))
        .unwrap_or_default();
    (s.code(), field)
}

fn glicko(rating: f64, deviation: f64, volatility: f64) -> Option<pb::GlickoRatingImport> {
    Some(pb::GlickoRatingImport {
        rating,
        deviation,
        volatility,
    })
}

fn elo(rating: u32, games: u32) -> Option<pb::EloRatingImport> {
    Some(pb::EloRatingImport {
        rating,
        games,
        reached_2400: false,
    })
}

fn entry(player: &str, speed: &str) -> pb::RatingImportEntry {
    pb::RatingImportEntry {
        player_id: player.into(),
        variant: common::Variant::Chess as i32,
        speed: speed.into(),
        glicko: glicko(1800.0, 120.0, 0.07),
        elo: elo(1900, 50),
    }
}

fn import(request: &str, entries: Vec<pb::RatingImportEntry>) -> pb::ImportRatingsRequest {
    pb::ImportRatingsRequest {
        request_id: request.into(),
        entries,
        overwrite: false,
    }
}

async fn ratings(c: &mut Client, player: &str) -> Vec<pb::Rating> {
    c.get_ratings(pb::GetRatingsRequest {
        player_id: player.into(),
    })
    .await
    .unwrap()
    .into_inner()
    .ratings
}

/// Asserts that `now` holds the ratings `then` did (deviations widen with time: within 0.1).
fn assert_unchanged(now: &[pb::Rating], then: &[pb::Rating]) {
    assert_eq!(now.len(), then.len(), "{now:?} vs {then:?}");
    for (a, b) in now.iter().zip(then) {
        let widened = pb::Rating {
            glicko_deviation: b.glicko_deviation,
            ..a.clone()
        };
        assert_eq!(&widened, b);
        assert!((a.glicko_deviation - b.glicko_deviation).abs() < 0.1);
    }
}

fn rating<'a>(all: &'a [pb::Rating], speed: &str) -> &'a pb::Rating {
    all.iter()
        .find(|r| r.speed == speed && r.variant == common::Variant::Chess as i32)
        .unwrap_or_else(|| panic!("a chess {speed} rating in {all:?}"))
}

fn history_request(
    player: &str,
    speed: &str,
    size: u32,
    token: &str,
) -> pb::GetRatingHistoryRequest {
    pb::GetRatingHistoryRequest {
        player_id: player.into(),
        variant: common::Variant::Chess as i32,
        speed: speed.into(),
        system: pb::RatingSystem::Unspecified as i32,
        page_size: size,
        page_token: token.into(),
    }
}

async fn history(c: &mut Client, r: pb::GetRatingHistoryRequest) -> pb::GetRatingHistoryResponse {
    c.get_rating_history(r).await.unwrap().into_inner()
}

/// Every change of `player`'s chess `speed` history, newest first, read `size` at a time.
async fn whole_history(
    c: &mut Client,
    player: &str,
    speed: &str,
    size: u32,
) -> Vec<pb::RatingChange> {
    let mut out = Vec::new();
    let mut token = String::new();
    loop {
        let page = history(c, history_request(player, speed, size, &token)).await;
        assert!(page.changes.len() <= size as usize);
        out.extend(page.changes);
        if page.next_page_token.is_empty() {
            return out;
        }
        token = page.next_page_token;
    }
}

fn outcomes(r: &pb::ImportRatingsResponse) -> Vec<pb::ImportOutcome> {
    r.outcomes
        .iter()
        .map(|&o| pb::ImportOutcome::try_from(o).unwrap())
        .collect()
}

async fn imports_retries_and_overwrites(on_redis: bool) {
    let (_redis, config) = store(on_redis).await;
    let (server, mut client) = start(config, Tuning::default()).await;
    let c = &mut client;

    let first = import(
        "import-1",
        vec![
            entry("ann", "blitz"),
            pb::RatingImportEntry {
                glicko: None,
                elo: elo(2450, 10),
                ..entry("bob", "rapid")
            },
        ],
    );
    let r = c.import_ratings(first.clone()).await.unwrap().into_inner();
    assert_eq!(
        outcomes(&r),
        [pb::ImportOutcome::Imported, pb::ImportOutcome::Imported]
    );
    assert!(!r.replayed);
    let ann = ratings(c, "ann").await;
    let blitz = rating(&ann, "blitz");
    assert!((blitz.glicko_rating - 1800.0).abs() < 1e-9);
    // The deviation widens from the import on: a hair above 120 right after it.
    assert!(
        (120.0..121.0).contains(&blitz.glicko_deviation),
        "{blitz:?}"
    );
    assert!((blitz.glicko_volatility - 0.07).abs() < 1e-12);
    assert_eq!((blitz.elo, blitz.games), (1900, 50));
    let bob = ratings(c, "bob").await;
    let rapid = rating(&bob, "rapid");
    assert_eq!((rapid.elo, rapid.games), (2450, 10));
    // Elo only: Glicko-2 is a newcomer's.
    assert!((rapid.glicko_rating - 1500.0).abs() < 1e-9);

    // A retry answers the first call's outcomes and changes nothing.
    let again = c.import_ratings(first.clone()).await.unwrap().into_inner();
    assert!(again.replayed);
    assert_eq!(again.outcomes, r.outcomes);
    assert_unchanged(&ratings(c, "ann").await, &ann);
    assert_eq!(whole_history(c, "ann", "blitz", 10).await.len(), 1);
    // The same request id with other content is refused.
    let mut other = first.clone();
    other.overwrite = true;
    assert_eq!(
        c.import_ratings(other).await.unwrap_err().code(),
        Code::AlreadyExists
    );

    // A player with a rating keeps it unless the import overwrites.
    let newer = |request: &str, overwrite| pb::ImportRatingsRequest {
        request_id: request.into(),
        entries: vec![
            pb::RatingImportEntry {
                glicko: glicko(2100.0, 80.0, 0.05),
                elo: None,
                ..entry("ann", "blitz")
            },
            entry("cat", "blitz"),
        ],
        overwrite,
    };
    let skipped = c
        .import_ratings(newer("import-2", false))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        outcomes(&skipped),
        [
            pb::ImportOutcome::SkippedExisting,
            pb::ImportOutcome::Imported
        ]
    );
    assert_unchanged(&ratings(c, "ann").await, &ann);
    assert_eq!(rating(&ratings(c, "cat").await, "blitz").elo, 1900);
    let overwritten = c
        .import_ratings(newer("import-3", true))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        outcomes(&overwritten),
        [
            pb::ImportOutcome::Overwritten,
            pb::ImportOutcome::Overwritten
        ]
    );
    let ann2 = ratings(c, "ann").await;
    let blitz2 = rating(&ann2, "blitz");
    assert!((blitz2.glicko_rating - 2100.0).abs() < 1e-9);
    assert!((80.0..81.0).contains(&blitz2.glicko_deviation));
    // Elo was not given: it stays as imported first.
    assert_eq!((blitz2.elo, blitz2.games), (1900, 50));

    // The history: both imports of Ann's, newest first; the overwrite changed Glicko-2 only.
    let h = whole_history(c, "ann", "blitz", 1).await;
    assert_eq!(h.len(), 2, "{h:?}");
    assert!(
        h.iter()
            .all(|x| x.kind == pb::RatingChangeKind::Import as i32)
    );
    let (newest, oldest) = (&h[0], &h[1]);
    assert!(oldest.first && !newest.first);
    let g = newest.glicko.as_ref().expect("a Glicko-2 change");
    assert!((g.rating_before - 1800.0).abs() < 1e-9 && (g.rating_after - 2100.0).abs() < 1e-9);
    assert!(newest.elo.is_none());
    let e = oldest.elo.as_ref().expect("an Elo change");
    assert_eq!(
        (
            e.rating_before,
            e.rating_after,
            e.games_before,
            e.games_after
        ),
        (1500, 1900, 0, 50)
    );
    assert!(newest.at_ms >= oldest.at_ms && oldest.at_ms > 1_700_000_000_000);
    // Only Elo: the first import only.
    let elo_only = history(
        c,
        pb::GetRatingHistoryRequest {
            system: pb::RatingSystem::Elo as i32,
            ..history_request("ann", "blitz", 10, "")
        },
    )
    .await;
    assert_eq!(elo_only.changes.len(), 1);
    assert!(elo_only.changes[0].glicko.is_none() && elo_only.changes[0].first);
    server.stop().await;
}

#[tokio::test]
async fn imports_retries_and_overwrites_in_process() {
    imports_retries_and_overwrites(false).await;
}

#[tokio::test]
async fn imports_retries_and_overwrites_on_redis() {
    imports_retries_and_overwrites(true).await;
}

#[tokio::test]
async fn bad_imports_are_refused_with_the_field_named() {
    let (server, mut client) = start(None, Tuning::default()).await;
    let c = &mut client;
    let five = || -> Vec<pb::RatingImportEntry> {
        (0..5).map(|i| entry(&format!("p{i}"), "blitz")).collect()
    };
    let with = |i: usize, f: &dyn Fn(&mut pb::RatingImportEntry)| {
        let mut entries = five();
        f(&mut entries[i]);
        import("bad", entries)
    };
    let cases: Vec<(pb::ImportRatingsRequest, &str)> = vec![
        (
            with(3, &|e| e.glicko = glicko(1800.0, 0.0, 0.06)),
            "entries[3].glicko.deviation",
        ),
        (
            with(3, &|e| e.glicko = glicko(1800.0, 350.5, 0.06)),
            "entries[3].glicko.deviation",
        ),
        (
            with(0, &|e| e.glicko = glicko(1800.0, 100.0, 1.0)),
            "entries[0].glicko.volatility",
        ),
        (
            with(2, &|e| e.glicko = glicko(f64::NAN, 100.0, 0.06)),
            "entries[2].glicko.rating",
        ),
        (with(1, &|e| e.elo = elo(4001, 3)), "entries[1].elo.rating"),
        (with(4, &|e| e.elo = elo(99, 3)), "entries[4].elo.rating"),
        (with(2, &|e| e.speed = "hyper".into()), "entries[2].speed"),
        (
            with(0, &|e| e.variant = common::Variant::Unspecified as i32),
            "entries[0].variant",
        ),
        (
            with(1, &|e| e.player_id = String::new()),
            "entries[1].player_id",
        ),
        (
            with(1, &|e| {
                e.glicko = None;
                e.elo = None;
            }),
            "entries[1].glicko",
        ),
        (
            with(4, &|e| e.player_id = "p2".into()),
            "entries[4].player_id",
        ),
        (import("", five()), "request_id"),
        (import("bad", Vec::new()), "entries"),
        (
            import(
                "bad",
                (0..1001)
                    .map(|i| entry(&format!("p{i}"), "blitz"))
                    .collect(),
            ),
            "entries",
        ),
    ];
    for (request, field) in cases {
        assert_eq!(
            bad_field(c.import_ratings(request).await),
            (Code::InvalidArgument, field.to_owned()),
        );
    }
    // Nothing of a refused import was written.
    assert!(ratings(c, "p0").await.is_empty());
    // At the bound exactly, the import goes through.
    let full = import(
        "full",
        (0..1000)
            .map(|i| entry(&format!("p{i}"), "blitz"))
            .collect(),
    );
    let r = c.import_ratings(full).await.unwrap().into_inner();
    assert_eq!(r.outcomes.len(), 1000);
    assert_eq!(rating(&ratings(c, "p999").await, "blitz").elo, 1900);

    for (request, field) in [
        (history_request("", "blitz", 0, ""), "player_id"),
        (history_request("ann", "fast", 0, ""), "speed"),
        (history_request("ann", "blitz", 0, "x"), "page_token"),
        (
            pb::GetRatingHistoryRequest {
                system: 9,
                ..history_request("ann", "blitz", 0, "")
            },
            "system",
        ),
    ] {
        assert_eq!(
            bad_field(c.get_rating_history(request).await),
            (Code::InvalidArgument, field.to_owned()),
        );
    }
    server.stop().await;
}

/// Ann (White) challenges Bob to a rated 3+2 game, Bob accepts, and Ann wins; waits until the
/// match is rated (Ann has `games` games).
async fn play_rated(c: &mut Client, n: usize, games: u32) -> String {
    let made = c
        .create_challenge(pb::CreateChallengeRequest {
            request_id: format!("challenge-{n}"),
            challenger_id: "ann".into(),
            challenged_id: "bob".into(),
            variant: common::Variant::Chess as i32,
            rules: Vec::new(),
            time_control: "3+2".into(),
            rated: true,
            color: pb::ColorChoice::White as i32,
        })
        .await
        .unwrap()
        .into_inner()
        .challenge
        .unwrap();
    let accepted = c
        .accept_challenge(pb::AcceptChallengeRequest {
            challenge_id: made.challenge_id.clone(),
            player_id: "bob".into(),
            request_id: format!("accept-{n}"),
        })
        .await
        .unwrap()
        .into_inner();
    let match_id = accepted.match_found.unwrap().match_id;
    let mut reader = c.clone();
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let all = ratings(&mut reader, "ann").await;
            if all.iter().any(|r| r.speed == "blitz" && r.games == games) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the match is rated");
    // A retried accept changes nothing.
    c.accept_challenge(pb::AcceptChallengeRequest {
        challenge_id: made.challenge_id,
        player_id: "bob".into(),
        request_id: format!("accept-{n}"),
    })
    .await
    .unwrap();
    // Both take the match found, as a client does: an unacknowledged one keeps a player busy.
    for p in ["ann", "bob"] {
        c.acknowledge(pb::AcknowledgeRequest {
            player_id: p.into(),
            match_id: match_id.clone(),
        })
        .await
        .unwrap();
    }
    match_id
}

async fn rated_matches_are_in_the_history_once(on_redis: bool) {
    let (_redis, config) = store(on_redis).await;
    let (server, mut client) = start(config, Tuning::default()).await;
    let c = &mut client;
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(play_rated(c, n, n as u32 + 1).await);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Two pages of two and one, newest first, each match once.
    let first = history(c, history_request("ann", "blitz", 2, "")).await;
    assert_eq!(first.changes.len(), 2);
    assert!(!first.next_page_token.is_empty());
    let second = history(
        c,
        history_request("ann", "blitz", 2, &first.next_page_token),
    )
    .await;
    assert_eq!(second.changes.len(), 1);
    assert!(second.next_page_token.is_empty());
    let ann: Vec<_> = first.changes.into_iter().chain(second.changes).collect();
    let seen: Vec<&str> = ann.iter().map(|x| x.match_id.as_str()).collect();
    let newest_first: Vec<&str> = ids.iter().rev().map(String::as_str).collect();
    assert_eq!(seen, newest_first);
    for (i, x) in ann.iter().enumerate() {
        assert_eq!(x.kind, pb::RatingChangeKind::Match as i32);
        assert_eq!(x.opponent_ids, ["bob"]);
        assert_eq!(x.score_quarters, 4);
        let g = x.glicko.as_ref().expect("Glicko-2 changed");
        assert!(g.rating_after > g.rating_before, "{x:?}");
        let e = x.elo.as_ref().expect("Elo changed");
        assert!(e.rating_after > e.rating_before);
        assert_eq!(e.games_after, e.games_before + 1);
        assert_eq!(x.first, i == 2);
        // Each change starts where the one before it ended.
        if let Some(older) = ann.get(i + 1) {
            let og = older.glicko.as_ref().unwrap();
            assert!((g.rating_before - og.rating_after).abs() < 1e-9);
            assert_eq!(e.rating_before, older.elo.as_ref().unwrap().rating_after);
            assert!(x.at_ms > older.at_ms);
        }
    }
    // What GetRatings shows is the newest change's after.
    let now = ratings(c, "ann").await;
    let blitz = rating(&now, "blitz");
    assert!((blitz.glicko_rating - ann[0].glicko.as_ref().unwrap().rating_after).abs() < 1e-9);
    assert_eq!(blitz.elo, ann[0].elo.as_ref().unwrap().rating_after);
    // Bob lost each, against Ann.
    let bob = whole_history(c, "bob", "blitz", 200).await;
    assert_eq!(bob.len(), 3);
    assert!(
        bob.iter()
            .all(|x| x.score_quarters == 0 && x.opponent_ids == ["ann"])
    );
    assert!(bob.iter().all(|x| {
        let g = x.glicko.as_ref().unwrap();
        g.rating_after < g.rating_before
    }));
    // Only Glicko-2: the same changes, without their Elo part.
    let glicko_only = history(
        c,
        pb::GetRatingHistoryRequest {
            system: pb::RatingSystem::Glicko2 as i32,
            ..history_request("ann", "blitz", 0, "")
        },
    )
    .await;
    assert_eq!(glicko_only.changes.len(), 3);
    assert!(
        glicko_only
            .changes
            .iter()
            .all(|x| x.elo.is_none() && x.glicko.is_some())
    );
    // Another speed has no history.
    assert!(whole_history(c, "ann", "rapid", 10).await.is_empty());
    server.stop().await;
}

#[tokio::test]
async fn rated_matches_are_in_the_history_once_in_process() {
    rated_matches_are_in_the_history_once(false).await;
}

#[tokio::test]
async fn rated_matches_are_in_the_history_once_on_redis() {
    rated_matches_are_in_the_history_once(true).await;
}

async fn the_history_keeps_the_latest_changes(on_redis: bool) {
    let (_redis, config) = store(on_redis).await;
    let tuning = Tuning {
        rating_history: 3,
        ..Tuning::default()
    };
    let (server, mut client) = start(config, tuning).await;
    let c = &mut client;
    let r = c
        .import_ratings(import("seed", vec![entry("ann", "blitz")]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(outcomes(&r), [pb::ImportOutcome::Imported]);
    assert_eq!(whole_history(c, "ann", "blitz", 10).await.len(), 1);
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(play_rated(c, n, 51 + n as u32).await);
    }
    // Four changes, three kept: the import, the oldest, is gone.
    let h = whole_history(c, "ann", "blitz", 2).await;
    let seen: Vec<&str> = h.iter().map(|x| x.match_id.as_str()).collect();
    let newest_first: Vec<&str> = ids.iter().rev().map(String::as_str).collect();
    assert_eq!(seen, newest_first);
    assert!(
        h.iter()
            .all(|x| x.kind == pb::RatingChangeKind::Match as i32)
    );
    // The oldest kept match started from the imported rating.
    let oldest = h[2].elo.as_ref().unwrap();
    assert_eq!((oldest.rating_before, oldest.games_before), (1900, 50));
    assert!(!h[2].first);
    server.stop().await;
}

#[tokio::test]
async fn the_history_keeps_the_latest_changes_in_process() {
    the_history_keeps_the_latest_changes(false).await;
}

#[tokio::test]
async fn the_history_keeps_the_latest_changes_on_redis() {
    the_history_keeps_the_latest_changes(true).await;
}
