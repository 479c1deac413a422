//! Rolling upgrades of the found matches kept in Redis: a value an earlier version stored
//! (the `MatchFound` message, prost-encoded) is still read and handed out, and what this
//! version writes is its own versioned form, read back whole.

use arbiter_core::Variant;
use arbiter_core::clock::TimeControl;
use arbiter_matchmaking::Tuning;
use arbiter_matchmaking::backend::{BackendError, CreatedMatch, MatchBackend, MatchEnd, NewMatch};
use arbiter_matchmaking::domain::{JoinSpec, Matchmaker, Ticket};
use arbiter_matchmaking::found::{FoundSeat, MatchFound};
use arbiter_matchmaking::pool::Pool;
use arbiter_matchmaking::store::PoolStore;
use arbiter_matchmaking::store::redis::RedisStore;
use arbiter_proto::matchmaking::v1 as pb;
use prost::Message;

/// A match service that creates every match at once.
struct Creates;

impl MatchBackend for Creates {
    async fn create(&self, m: &NewMatch) -> Result<CreatedMatch, BackendError> {
        Ok(CreatedMatch {
            match_id: format!("match-{}", m.request_id),
            tokens: m.players.iter().map(|p| format!("token:{p}|é")).collect(),
        })
    }

    async fn wait_end(&self, _: &str) -> Result<MatchEnd, BackendError> {
        std::future::pending().await
    }
}

fn pool() -> Pool {
    Pool {
        variant: Variant::Crazyhouse,
        control: TimeControl::parse("3+2").unwrap(),
        rated: true,
    }
}

fn spec(player: &str) -> JoinSpec {
    JoinSpec {
        player: player.to_owned(),
        pool: pool(),
        range: None,
        blocked: Vec::new(),
        partner: None,
    }
}

fn tuning() -> Tuning {
    Tuning {
        wave_interval_ms: 3_600_000,
        recover_after_ms: 0,
        ..Tuning::default()
    }
}

async fn raw(url: &str, key: &str) -> Vec<(String, Vec<u8>)> {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("HGETALL")
        .arg(key)
        .query_async(&mut conn)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_match_found_stored_by_an_earlier_version_is_still_read() {
    let redis = arbiter_testkit::redis().await;
    let store = RedisStore::connect(redis.secure("arbiter-matchmaking"))
        .await
        .unwrap();
    let seat = |player: &str, side| pb::FoundSeat {
        player_id: player.into(),
        board: 1,
        side,
        rating: 1500,
    };
    // Exactly what the earlier version wrote.
    let old = pb::MatchFound {
        pool: pool().name(),
        match_id: "m-old".into(),
        seat: Some(seat("old", 2)),
        token: "t-old".into(),
        seats: vec![seat("other", 1), seat("old", 2)],
        variant: 2,
        time_control: "3+2".into(),
        rated: true,
    };
    let client = redis::Client::open(redis.url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("HSET")
        .arg("mm:found:old")
        .arg("m-old")
        .arg(old.encode_to_vec())
        .query_async::<()>(&mut conn)
        .await
        .unwrap();

    let found = store.found("old").await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].match_id, "m-old");
    let new_seat = |player: &str, side| FoundSeat {
        player: player.into(),
        board: 1,
        side,
        rating: 1500,
    };
    assert_eq!(
        found[0].found,
        MatchFound {
            pool: pool().name(),
            match_id: "m-old".into(),
            seat: new_seat("old", 2),
            token: "t-old".into(),
            seats: vec![new_seat("other", 1), new_seat("old", 2)],
            variant: Variant::Crazyhouse,
            time_control: "3+2".into(),
            rated: true,
        }
    );
    // The player is handed it on joining, and it goes back on the wire as it was stored.
    let mm = Matchmaker::new(store, Creates, tuning());
    match mm.join(spec("old")).await.unwrap() {
        Ticket::Found(f) if f.len() == 1 => assert_eq!(pb::MatchFound::from(f[0].clone()), old),
        other => panic!("{other:?}"),
    }
    assert!(mm.acknowledge("old", "m-old").await.unwrap());

    // A value that is neither form is corrupt (DATA_LOSS), not misread.
    redis::cmd("HSET")
        .arg("mm:found:bad")
        .arg("m-bad")
        .arg(&b"v9|whatever"[..])
        .query_async::<()>(&mut conn)
        .await
        .unwrap();
    let e = mm.join(spec("bad")).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::DataLoss, "{e:?}");
    assert!(e.description().contains("m-bad"), "{e:?}");
}

#[tokio::test]
async fn this_version_writes_its_own_form_and_reads_it_back() {
    let redis = arbiter_testkit::redis().await;
    let store = RedisStore::connect(redis.secure("arbiter-matchmaking"))
        .await
        .unwrap();
    let mm = Matchmaker::new(store, Creates, tuning());
    for p in ["ann", "bob"] {
        assert!(matches!(
            mm.join(spec(p)).await.unwrap(),
            Ticket::Waiting { .. }
        ));
    }
    let report = mm.wave(&pool().name()).await.unwrap();
    assert_eq!(report.created, 1);
    for p in ["ann", "bob"] {
        let stored = raw(&redis.url, &format!("mm:found:{p}")).await;
        assert_eq!(stored.len(), 1, "{p}");
        assert!(stored[0].1.starts_with(b"v1|"), "{stored:?}");
        let found = mm.store().found(p).await.unwrap();
        let f = &found[0].found;
        assert_eq!(f.match_id, stored[0].0);
        assert_eq!(f.seat.player, p);
        assert_eq!(f.token, format!("token:{p}|é"));
        assert_eq!(f.variant, Variant::Crazyhouse);
        assert_eq!((f.time_control.as_str(), f.rated), ("3+2", true));
        assert_eq!(f.seats.len(), 2);
        assert!(f.seats.contains(&f.seat));
        assert_eq!(MatchFound::decode(&stored[0].1).as_ref(), Ok(f));
    }
}
