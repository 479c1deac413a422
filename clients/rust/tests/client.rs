//! The client against an in-process server (`arbiter_server::serve` on port 0): a played game,
//! request-id retries, watch resumption (live, and over a source that breaks), API keys, the
//! pool and batch-job flows, RenderBoard, and INVALID_ARGUMENT with its field.

use arbiter_client::proto::analysis::v1::JobState;
use arbiter_client::proto::common::v1::{Position, Variant};
use arbiter_client::proto::matches::v1::{
    MakeMoveRequest, Side, WatchMatchResponse, watch_match_response::Event,
};
use arbiter_client::proto::matchmaking::v1::JoinRequest;
use arbiter_client::{
    Client, ClientConfig, EventStream, RetryPolicy, WatchSource, outcome_text, watch_events,
};
use arbiter_kit::access::AccessPolicy;
use arbiter_kit::keys::{KeySet, new_key};
use arbiter_server::{ServerConfig, serve};
use futures_util::StreamExt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use tonic::{Code, Status};

/// A server on a free local port, stopped when dropped.
struct Server {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn start(config: ServerConfig) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        serve(listener, config, async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    Server {
        addr,
        stop: Some(stop),
    }
}

async fn client_for(addr: SocketAddr) -> Client {
    Client::connect(ClientConfig::new(addr.to_string()))
        .await
        .unwrap()
}

fn chess() -> Position {
    Position {
        variant: Variant::Chess as i32,
        ..Position::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_is_played_and_watched_live_through_a_match() {
    let server = start(ServerConfig::default()).await;
    let client = client_for(server.addr).await;
    let game = client.create_chess_match("alice", "bob").await.unwrap();
    assert!(game.token(Side::White).is_some() && game.token(Side::Black).is_some());
    let watcher = tokio::spawn(game.watch().collect::<Vec<_>>());
    for (side, mv) in [
        (Side::White, "f2f3"),
        (Side::Black, "e7e5"),
        (Side::White, "g2g4"),
        (Side::Black, "Qh4#"),
    ] {
        let played = game.play(side, mv).await.unwrap();
        assert!(!played.duplicate);
    }
    let state = game.state().await.unwrap();
    let outcome = state.outcome.expect("over");
    assert_eq!(outcome_text(&outcome), "0-1 checkmate");
    let events = tokio::time::timeout(Duration::from_secs(10), watcher)
        .await
        .expect("the watch ends after the end event")
        .unwrap();
    let events: Vec<WatchMatchResponse> = events.into_iter().map(Result::unwrap).collect();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let moves: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.event {
            Some(Event::Move(m)) => m.r#move.as_ref().map(|m| m.uci.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(moves, ["f2f3", "e7e5", "g2g4", "d8h4"]);
    assert!(matches!(events.last().unwrap().event, Some(Event::End(_))));
    let pgn = game.export().await.unwrap().pgn;
    assert!(pgn.contains("Qh4#"), "{pgn}");
    // A finished match refuses moves: FAILED_PRECONDITION with its reason, never retried.
    let refused = game.play(Side::White, "e2e4").await.unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_id_is_applied_once_and_its_repeat_is_a_duplicate() {
    let server = start(ServerConfig::default()).await;
    let client = client_for(server.addr).await;
    let game = client.create_chess_match("w", "b").await.unwrap();
    let request = MakeMoveRequest {
        board: 1,
        side: Side::White as i32,
        r#move: "e2e4".into(),
        expected_ply: 0,
        request_id: "move-1".into(),
        ..MakeMoveRequest::default()
    };
    let first = game.make_move(request.clone()).await.unwrap();
    assert!(!first.duplicate);
    // The same request again (what a retry after a lost answer sends): answered as applied.
    let again = game.make_move(request).await.unwrap();
    assert!(again.duplicate);
    assert_eq!(again.state.unwrap().boards[0].ply, 1, "applied once");
    // Each new call gets a fresh id: a stale ply is refused, not taken for a retry.
    let stale = game
        .make_move(MakeMoveRequest {
            board: 1,
            side: Side::White as i32,
            r#move: "d2d4".into(),
            expected_ply: 0,
            ..MakeMoveRequest::default()
        })
        .await
        .unwrap_err();
    assert_eq!(stale.reason().as_deref(), Some("STALE_PLY"), "{stale}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_is_retried_with_the_same_request_id() {
    let server = start(ServerConfig::default()).await;
    let proxy = arbiter_testkit::Proxy::start(server.addr).await;
    let client = Client::connect(ClientConfig::new(proxy.addr.to_string()).retry_policy(
        RetryPolicy {
            attempt_timeout: Duration::from_secs(3),
            ..RetryPolicy::default()
        },
    ))
    .await
    .unwrap();
    let game = client.create_chess_match("w", "b").await.unwrap();
    game.state().await.unwrap();
    // The answer of the move is lost with its connection; the client tries again with the
    // same request id, and the server answers the move it applied.
    proxy.drop_next_reply();
    let played = game.play(Side::White, "e2e4").await.unwrap();
    let state = game.state().await.unwrap();
    assert_eq!(state.boards[0].ply, 1, "applied exactly once");
    assert!(
        played.duplicate,
        "the second attempt repeated the first one's request id"
    );
    assert_eq!(played.r#move.unwrap().ply, 1);
}

/// What one opening of a scripted source answers: a refusal, or the items of its stream.
type Opening = Result<Vec<Result<WatchMatchResponse, Status>>, Status>;

/// A source of events that breaks as scripted: each opening answers the next script entry.
#[derive(Clone)]
struct Scripted {
    opens: Arc<Mutex<Vec<u64>>>,
    scripts: Arc<Mutex<Vec<Opening>>>,
}

fn event(seq: u64, end: bool) -> WatchMatchResponse {
    WatchMatchResponse {
        seq,
        event: Some(if end {
            Event::End(Default::default())
        } else {
            Event::DrawOffer(Side::White as i32)
        }),
    }
}

impl WatchSource for Scripted {
    fn open(
        &self,
        _match_id: &str,
        after_seq: u64,
    ) -> Pin<Box<dyn Future<Output = Result<EventStream, Status>> + Send + '_>> {
        self.opens.lock().unwrap().push(after_seq);
        let next = self.scripts.lock().unwrap().remove(0);
        Box::pin(async move {
            let items = next?;
            Ok(Box::pin(futures_util::stream::iter(items)) as EventStream)
        })
    }
}

fn fast() -> RetryPolicy {
    RetryPolicy {
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
        ..RetryPolicy::default()
    }
}

#[tokio::test]
async fn a_broken_watch_resumes_after_the_last_seq_and_never_repeats_one() {
    let source = Scripted {
        opens: Arc::default(),
        scripts: Arc::new(Mutex::new(vec![
            // Two events, then the connection breaks.
            Ok(vec![
                Ok(event(1, false)),
                Ok(event(2, false)),
                Err(Status::unavailable("reset")),
            ]),
            // Reopening fails once.
            Err(Status::unavailable("still down")),
            // A stream that repeats an event, then ends without the end event.
            Ok(vec![Ok(event(2, false)), Ok(event(3, false))]),
            // The rest, with the end; the event after it is never read.
            Ok(vec![
                Ok(event(3, false)),
                Ok(event(4, true)),
                Ok(event(5, false)),
            ]),
        ])),
    };
    let events: Vec<u64> = watch_events(source.clone(), "m", fast())
        .map(|e| e.unwrap().seq)
        .collect()
        .await;
    assert_eq!(events, [1, 2, 3, 4]);
    assert_eq!(*source.opens.lock().unwrap(), [0, 2, 2, 3]);
}

#[tokio::test]
async fn a_refused_watch_ends_with_its_error_and_a_dead_one_gives_up() {
    let refused = Scripted {
        opens: Arc::default(),
        scripts: Arc::new(Mutex::new(vec![Err(Status::not_found("no match"))])),
    };
    let items: Vec<_> = watch_events(refused.clone(), "m", fast()).collect().await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].as_ref().unwrap_err().code(), Code::NotFound);
    assert_eq!(refused.opens.lock().unwrap().len(), 1);

    let dead = Scripted {
        opens: Arc::default(),
        scripts: Arc::new(Mutex::new(
            (0..10).map(|_| Err(Status::unavailable("down"))).collect(),
        )),
    };
    let items: Vec<_> = watch_events(dead.clone(), "m", fast()).collect().await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].as_ref().unwrap_err().code(), Code::Unavailable);
    assert_eq!(dead.opens.lock().unwrap().len(), 6, "the policy's attempts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_key_is_sent_on_every_call() {
    let made = new_key("client-test", &["rules".into()], None, None).unwrap();
    let keys = KeySet::parse(&made.entry, None).unwrap();
    let server = start(ServerConfig {
        access: AccessPolicy::with_keys(keys),
        ..ServerConfig::default()
    })
    .await;
    let without = client_for(server.addr).await;
    let e = without.legal_moves(chess()).await.unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated, "{e}");

    let with = Client::connect(ClientConfig::new(server.addr.to_string()).api_key(&made.key))
        .await
        .unwrap();
    assert_eq!(with.legal_moves(chess()).await.unwrap().moves.len(), 20);

    // From a key file: its first line, trailing whitespace trimmed.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("key");
    std::fs::write(&file, format!("{}  \nignored\n", made.key)).unwrap();
    let from_file = Client::connect(
        ClientConfig::new(format!("http://{}", server.addr))
            .api_key_file(&file)
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(
        from_file.legal_moves(chess()).await.unwrap().moves.len(),
        20
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_players_join_a_pool_and_are_paired() {
    let server = start(ServerConfig::default()).await;
    let client = client_for(server.addr).await;
    let join = |player: &str| {
        let client = client.clone();
        let request = JoinRequest {
            player_id: player.into(),
            variant: Variant::Chess as i32,
            time_control: "5+0".into(),
            rated: false,
            ..JoinRequest::default()
        };
        tokio::spawn(async move { client.join_pool(request, |_| {}).await })
    };
    let (a, b) = (join("ann"), join("ben"));
    let (a, b) = tokio::time::timeout(Duration::from_secs(30), async {
        (a.await.unwrap().unwrap(), b.await.unwrap().unwrap())
    })
    .await
    .expect("a pairing within 30 s");
    assert_eq!(a.0.match_id, b.0.match_id);
    assert_ne!(a.0.token, b.0.token);
    // The white player's handle holds its seat token: it plays.
    let (white, _) = if a.0.seat.as_ref().unwrap().side == 1 {
        (a, b)
    } else {
        (b, a)
    };
    let played = white.1.play(Side::White, "e2e4").await.unwrap();
    assert_eq!(played.r#move.unwrap().ply, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_job_is_followed_to_its_results() {
    let server = start(ServerConfig::default()).await;
    let client =
        Client::connect(ClientConfig::new(server.addr.to_string()).client_id("batch-test"))
            .await
            .unwrap();
    let pgn = "[Event \"t\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 *\n\n\
               [Event \"u\"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n";
    let mut progress = Vec::new();
    let done = client
        .analyze_pgn_batch(pgn, 2, "", |s| progress.push(s.positions_done))
        .await
        .unwrap();
    assert_eq!(done.status.state, JobState::Done as i32);
    assert!(!progress.is_empty());
    assert!(progress.windows(2).all(|w| w[0] <= w[1]), "{progress:?}");
    assert_eq!(done.games.len(), 2);
    assert_eq!(done.games[0].plies.len(), 6);
    assert_eq!(done.games[1].plies.len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn render_board_draws_a_variant() {
    let server = start(ServerConfig::default()).await;
    let client = client_for(server.addr).await;
    let svg = client.render_position(Variant::Glinski, "").await.unwrap();
    assert!(svg.contains("<svg"), "{svg:.200}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_argument_names_its_field_and_is_not_retried() {
    let server = start(ServerConfig::default()).await;
    let client = client_for(server.addr).await;
    let game = client.create_chess_match("w", "b").await.unwrap();
    let started = std::time::Instant::now();
    let e = game.play(Side::White, "e2e5").await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    assert_eq!(e.field().as_deref(), Some("move"), "{e}");
    assert!(e.to_string().contains("field move"), "{e}");
    let e = client
        .legal_moves(Position {
            variant: Variant::Chess as i32,
            text: "not a fen".into(),
            rules: Vec::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    assert_eq!(e.field().as_deref(), Some("position.text"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(2), "no backoff");
    // A seat without a token is refused before any call.
    let spectator = Client::connect(ClientConfig::new(server.addr.to_string()))
        .await
        .unwrap()
        .open_match(game.id());
    assert!(matches!(
        spectator.play(Side::White, "e2e4").await,
        Err(arbiter_client::Error::NoToken { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_match_is_watched_from_its_start_to_its_end() {
    let server = start(ServerConfig::default()).await;
    let client = client_for(server.addr).await;
    let game = client.create_chess_match("w", "b").await.unwrap();
    for (side, mv) in [
        (Side::White, "f3"),
        (Side::Black, "e5"),
        (Side::White, "g4"),
        (Side::Black, "Qh4#"),
    ] {
        game.play(side, mv).await.unwrap();
    }
    let other = client_for(server.addr).await.open_match(game.id());
    let events: Vec<WatchMatchResponse> =
        tokio::time::timeout(Duration::from_secs(10), other.watch().collect::<Vec<_>>())
            .await
            .expect("the watch of a finished match ends")
            .into_iter()
            .map(Result::unwrap)
            .collect();
    assert!(matches!(events.last().unwrap().event, Some(Event::End(_))));
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e.event, Some(Event::Move(_))))
            .count(),
        4
    );
}

/// A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate, written
/// to `dir`: (ca, server cert, server key, client cert, client key).
fn pki(dir: &std::path::Path) -> [std::path::PathBuf; 5] {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let issuer =
        rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap()).unwrap();
    let issue = |names: Vec<String>| {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let (server_cert, server_key) = issue(vec!["127.0.0.1".into(), "localhost".into()]);
    let (client_cert, client_key) = issue(vec!["arbiter-client-test".into()]);
    let files = [
        ("ca.pem", issuer.pem()),
        ("server.pem", server_cert),
        ("server-key.pem", server_key),
        ("client.pem", client_cert),
        ("client-key.pem", client_key),
    ];
    files.map(|(name, text)| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_with_a_ca_file_a_client_certificate_and_a_server_name() {
    arbiter_kit::tls::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let [ca, cert, key, client_cert, client_key] = pki(dir.path());
    let mut config = ServerConfig::default();
    config.serve.tls_cert_file = Some(cert);
    config.serve.tls_key_file = Some(key);
    config.serve.tls_client_ca_file = Some(ca.clone());
    config.self_tls =
        Some(arbiter_kit::tls::ClientTls::new(&ca).with_identity(&client_cert, &client_key));
    let server = start(config).await;
    let port = server.addr.port();
    let secure = Client::connect(
        ClientConfig::new(format!("127.0.0.1:{port}"))
            .tls_ca_file(&ca)
            .tls_client_identity(&client_cert, &client_key)
            .tls_server_name("localhost"),
    )
    .await
    .unwrap();
    assert_eq!(secure.legal_moves(chess()).await.unwrap().moves.len(), 20);
    // Without a client certificate the handshake fails: no call is made.
    let quick = RetryPolicy {
        max_attempts: 1,
        ..RetryPolicy::default()
    };
    let anonymous = Client::connect(
        ClientConfig::new(format!("https://127.0.0.1:{port}"))
            .tls_ca_file(&ca)
            .retry_policy(quick.clone()),
    )
    .await
    .unwrap();
    assert!(anonymous.legal_moves(chess()).await.is_err());
    // Plaintext to a TLS port fails too.
    let plain = Client::connect(ClientConfig::new(server.addr.to_string()).retry_policy(quick))
        .await
        .unwrap();
    assert!(plain.legal_moves(chess()).await.is_err());
    // A client certificate without TLS is a configuration error.
    let e = Client::connect(
        ClientConfig::new(server.addr.to_string()).tls_client_identity(&client_cert, &client_key),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, arbiter_client::Error::Config(_)), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn takebacks_and_chat_carry_the_seat_token() {
    use arbiter_client::proto::matches::v1::CreateMatchRequest;
    let server = start(ServerConfig::default()).await;
    let client = client_for(server.addr).await;
    let game = client
        .create_match(CreateMatchRequest {
            variant: Variant::Chess as i32,
            players: vec!["w".into(), "b".into()],
            takebacks: true,
            ..CreateMatchRequest::default()
        })
        .await
        .unwrap();
    game.play(Side::White, "e4").await.unwrap();
    game.propose_takeback(Side::White).await.unwrap();
    let r = game.answer_takeback(Side::Black, true).await.unwrap();
    assert_eq!(r.state.unwrap().boards[0].ply, 0);
    let posted = game.post_chat(Side::Black, "good luck").await.unwrap();
    assert_eq!(posted.message.unwrap().text, "good luck");
    let mut chat = game.watch_chat(Side::White, 0).unwrap();
    let entry = tokio::time::timeout(Duration::from_secs(10), chat.next())
        .await
        .expect("the chat's first entry")
        .unwrap()
        .unwrap();
    assert_eq!(entry.id, 1);
    // Another client attached with the white token plays white, nothing else.
    let token = game.token(Side::White).unwrap();
    let other = client_for(server.addr)
        .await
        .attach(game.id(), Side::White, &token);
    other.play(Side::White, "d4").await.unwrap();
    let wrong = client_for(server.addr)
        .await
        .attach(game.id(), Side::Black, &token);
    let e = wrong.play(Side::Black, "d5").await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_seated_call_goes_for_its_seat_and_keeps_the_state() {
    use arbiter_client::proto::common::v1::DrawClaim;
    let server = start(ServerConfig::default()).await;
    let client = client_for(server.addr).await;
    let game = client.create_chess_match("w", "b").await.unwrap();
    let offered = game.offer_draw(Side::White).await.unwrap();
    assert!(!offered.duplicate);
    assert_eq!(offered.state.unwrap().draw_offers, [Side::White as i32]);
    game.decline_draw(Side::Black).await.unwrap();
    assert!(game.last_state().unwrap().draw_offers.is_empty());
    // The claim goes as given: not claimable at the start.
    let e = game
        .claim_draw(Side::White, DrawClaim::ThreefoldRepetition)
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{e}");
    let aborted = game.abort(Side::Black).await.unwrap();
    let outcome = aborted.state.unwrap().outcome.unwrap();
    assert_eq!(outcome_text(&outcome), "aborted");

    let game = client.create_chess_match("w", "b").await.unwrap();
    game.play(Side::White, "e4").await.unwrap();
    game.resign(Side::Black).await.unwrap();
    let remembered = game.last_state().unwrap().outcome.unwrap();
    assert_eq!(outcome_text(&remembered), "1-0 resignation");
}

#[tokio::test]
async fn a_bad_seat_token_is_refused_before_any_call_and_credentials_stay_hidden() {
    // Nothing listens there: the refusal comes before any connection.
    let client = Client::connect(ClientConfig::new("127.0.0.1:1").api_key("arb_secret_key"))
        .await
        .unwrap();
    assert!(!format!("{client:?}").contains("arb_secret_key"));
    let game = client.attach("m1", Side::White, "bad\ntoken");
    let e = game.resign(Side::White).await.unwrap_err();
    assert!(matches!(e, arbiter_client::Error::Config(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        "configuration: the seat token of A/white in match m1 is not printable ASCII"
    );
    let e = game.watch_chat(Side::White, 0).err().unwrap();
    assert!(matches!(e, arbiter_client::Error::Config(_)), "{e:?}");
    let e = game.offer_draw(Side::Black).await.unwrap_err();
    assert_eq!(e.to_string(), "no seat token for A/black of match m1");
}

#[tokio::test]
async fn a_watch_that_keeps_breaking_gives_up_with_the_last_error() {
    let source = Scripted {
        opens: Arc::default(),
        scripts: Arc::new(Mutex::new(
            (1..=10)
                .map(|n| {
                    Ok(vec![
                        Ok(event(1, false)),
                        Err(Status::unavailable(format!("reset {n}"))),
                    ])
                })
                .collect(),
        )),
    };
    let items: Vec<_> = watch_events(source.clone(), "m", fast()).collect().await;
    // Event 1 once; then five breaks in a row without a new event (the first one counted
    // after event 1): the sixth break's error ends the stream.
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(items[0].as_ref().unwrap().seq, 1);
    let e = items[1].as_ref().unwrap_err();
    assert_eq!(e.code(), Code::Unavailable);
    assert_eq!(e.status().unwrap().message(), "reset 6");
    assert_eq!(*source.opens.lock().unwrap(), [0, 1, 1, 1, 1, 1]);
}
