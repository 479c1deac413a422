//! Matchmaking's client of the match service (`GrpcMatches`, the one `arbiter serve` and the
//! `arbiter-matchmaking` binary use) over real connections to a match service whose replicas
//! come and go: a creation made while the service is not listening yet succeeds once it is; a
//! creation whose answer is lost when its replica dies is retried with the same request id and
//! gets the same match (one match created); a watch stream that breaks — ended by a replica
//! shutting down, or its connection cut — is opened again from the last event seen.
//!
//! The match service here is a small in-test implementation of `arbiter.matches.v1` that keeps
//! what the real one promises for these calls (a creation deduplicated by request id, events
//! numbered from 1, `after_seq`), and counts what it is asked; services never depend on one
//! another's crates.

use arbiter_core::Variant;
use arbiter_core::clock::TimeControl;
use arbiter_matchmaking::Tuning;
use arbiter_matchmaking::backend::{GrpcMatches, MatchBackend, MatchEnd, NewMatch};
use arbiter_matchmaking::domain::{JoinSpec, Matchmaker, Ticket};
use arbiter_matchmaking::pool::Pool;
use arbiter_matchmaking::store::PoolStore;
use arbiter_matchmaking::store::memory::MemoryStore;
use arbiter_proto::common::v1 as common;
use arbiter_proto::matches::v1 as pb;
use arbiter_proto::matches::v1::match_service_server::{MatchService, MatchServiceServer};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

/// A match the fake service holds.
#[derive(Default)]
struct Hosted {
    /// The creation (compared with a retry's).
    creation: pb::CreateMatchRequest,
    /// Its events, seq 1, 2, … in order.
    events: Vec<pb::WatchMatchResponse>,
    /// Once over: when.
    ended_at_ms: u64,
}

#[derive(Default)]
struct State {
    /// Matches by id.
    matches: HashMap<String, Hosted>,
    /// `CreateMatch` calls that reached the service.
    create_calls: usize,
    /// The `after_seq` of every `WatchMatch`, in order.
    watches: Vec<u64>,
}

/// The match service as far as matchmaking uses it.
#[derive(Clone, Default)]
struct FakeMatches {
    state: Arc<Mutex<State>>,
    /// Bumped on every change: watch streams and the test wait on it.
    changed: Arc<tokio::sync::watch::Sender<u64>>,
    /// The next creation is applied, and its answer never sent (its replica dies first).
    lose_next_answer: Arc<AtomicBool>,
    /// A watch stream ends with `UNAVAILABLE` (a replica shutting down) right after sending
    /// the event with this seq.
    end_streams_after: Arc<Mutex<Option<u64>>>,
}

fn match_id_of(request_id: &str) -> String {
    format!("m-{request_id}")
}

impl FakeMatches {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    fn bump(&self) {
        self.changed.send_modify(|v| *v += 1);
    }

    /// Waits until `cond` holds of the state.
    async fn until(&self, cond: impl Fn(&State) -> bool) {
        let mut changed = self.changed.subscribe();
        tokio::time::timeout(Duration::from_secs(20), async {
            while !cond(&self.state()) {
                changed.changed().await.unwrap();
            }
        })
        .await
        .expect("the awaited state came");
    }

    /// Adds an event to `id`; an outcome ends the match.
    fn push(&self, id: &str, event: pb::watch_match_response::Event) {
        {
            let mut state = self.state();
            let m = state.matches.get_mut(id).unwrap();
            if matches!(event, pb::watch_match_response::Event::End(_)) {
                m.ended_at_ms = 1_700_000_000_000;
            }
            let seq = m.events.len() as u64 + 1;
            m.events.push(pb::WatchMatchResponse {
                seq,
                event: Some(event),
            });
        }
        self.bump();
    }

    /// A running match `id` with `moves` events so far.
    fn host(&self, id: &str, moves: usize) {
        self.state()
            .matches
            .insert(id.to_owned(), Hosted::default());
        for _ in 0..moves {
            self.push(id, a_move());
        }
    }

    fn state_of(&self, id: &str) -> Option<pb::MatchState> {
        let state = self.state();
        let m = state.matches.get(id)?;
        let outcome = m.events.iter().find_map(|e| match &e.event {
            Some(pb::watch_match_response::Event::End(o)) => Some(o.clone()),
            _ => None,
        });
        Some(pb::MatchState {
            match_id: id.to_owned(),
            variant: m.creation.variant,
            time_control: m.creation.time_control.clone(),
            last_seq: m.events.len() as u64,
            outcome,
            ended_at_ms: m.ended_at_ms,
            ..Default::default()
        })
    }
}

fn a_move() -> pb::watch_match_response::Event {
    pb::watch_match_response::Event::Move(pb::PlayedMove::default())
}

/// White won.
fn white_wins() -> pb::watch_match_response::Event {
    pb::watch_match_response::Event::End(pb::MatchOutcome {
        outcome: Some(common::Outcome {
            score: Some(common::Score {
                white_quarters: 4,
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    })
}

type Reply<T> = Result<Response<T>, Status>;

fn unused<T>() -> Reply<T> {
    Err(Status::unimplemented("not used by matchmaking"))
}

#[tonic::async_trait]
impl MatchService for FakeMatches {
    async fn create_match(
        &self,
        request: Request<pb::CreateMatchRequest>,
    ) -> Reply<pb::CreateMatchResponse> {
        let r = request.into_inner();
        let id = match_id_of(&r.request_id);
        let created = {
            let mut state = self.state();
            state.create_calls += 1;
            match state.matches.get(&id) {
                Some(m) if m.creation != r => {
                    return Err(Status::already_exists("another creation"));
                }
                Some(_) => false,
                None => {
                    state.matches.insert(
                        id.clone(),
                        Hosted {
                            creation: r.clone(),
                            ..Default::default()
                        },
                    );
                    true
                }
            }
        };
        self.bump();
        if self.lose_next_answer.swap(false, Ordering::SeqCst) {
            // Applied; the replica dies before it answers.
            std::future::pending::<()>().await;
        }
        Ok(Response::new(pb::CreateMatchResponse {
            state: self.state_of(&id),
            seats: r
                .players
                .iter()
                .map(|p| pb::SeatCredential {
                    seat: Some(pb::Seat {
                        player_id: p.clone(),
                        ..Default::default()
                    }),
                    token: format!("token-{p}"),
                })
                .collect(),
            created,
        }))
    }

    async fn get_match(
        &self,
        request: Request<pb::GetMatchRequest>,
    ) -> Reply<pb::GetMatchResponse> {
        let state = self
            .state_of(&request.into_inner().match_id)
            .ok_or_else(|| Status::not_found("no such match"))?;
        Ok(Response::new(pb::GetMatchResponse { state: Some(state) }))
    }

    type WatchMatchStream =
        Pin<Box<dyn Stream<Item = Result<pb::WatchMatchResponse, Status>> + Send>>;

    async fn watch_match(
        &self,
        request: Request<pb::WatchMatchRequest>,
    ) -> Reply<Self::WatchMatchStream> {
        let r = request.into_inner();
        if self.state_of(&r.match_id).is_none() {
            return Err(Status::not_found("no such match"));
        }
        self.state().watches.push(r.after_seq);
        self.bump();
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        let me = self.clone();
        tokio::spawn(async move {
            let mut changed = me.changed.subscribe();
            let mut sent = r.after_seq;
            loop {
                let new: Vec<pb::WatchMatchResponse> = me.state().matches[&r.match_id]
                    .events
                    .iter()
                    .filter(|e| e.seq > sent)
                    .cloned()
                    .collect();
                for e in new {
                    sent = e.seq;
                    let end = matches!(e.event, Some(pb::watch_match_response::Event::End(_)));
                    if tx.send(Ok(e)).await.is_err() || end {
                        return;
                    }
                    if *me.end_streams_after.lock().unwrap() == Some(sent) {
                        let _ = tx.send(Err(Status::unavailable("shutting down"))).await;
                        return;
                    }
                }
                if changed.changed().await.is_err() {
                    return;
                }
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }

    async fn make_move(&self, _: Request<pb::MakeMoveRequest>) -> Reply<pb::MakeMoveResponse> {
        unused()
    }
    async fn resign(&self, _: Request<pb::ResignRequest>) -> Reply<pb::ResignResponse> {
        unused()
    }
    async fn offer_draw(&self, _: Request<pb::OfferDrawRequest>) -> Reply<pb::OfferDrawResponse> {
        unused()
    }
    async fn claim_draw(&self, _: Request<pb::ClaimDrawRequest>) -> Reply<pb::ClaimDrawResponse> {
        unused()
    }
    async fn pause_clocks(
        &self,
        _: Request<pb::PauseClocksRequest>,
    ) -> Reply<pb::PauseClocksResponse> {
        unused()
    }
    async fn resume_clocks(
        &self,
        _: Request<pb::ResumeClocksRequest>,
    ) -> Reply<pb::ResumeClocksResponse> {
        unused()
    }
    async fn add_time(&self, _: Request<pb::AddTimeRequest>) -> Reply<pb::AddTimeResponse> {
        unused()
    }
    async fn decline_draw(
        &self,
        _: Request<pb::DeclineDrawRequest>,
    ) -> Reply<pb::DeclineDrawResponse> {
        unused()
    }
    async fn abort_match(
        &self,
        _: Request<pb::AbortMatchRequest>,
    ) -> Reply<pb::AbortMatchResponse> {
        unused()
    }
    async fn export_match(
        &self,
        _: Request<pb::ExportMatchRequest>,
    ) -> Reply<pb::ExportMatchResponse> {
        unused()
    }
    async fn propose_takeback(
        &self,
        _: Request<pb::ProposeTakebackRequest>,
    ) -> Reply<pb::ProposeTakebackResponse> {
        unused()
    }
    async fn answer_takeback(
        &self,
        _: Request<pb::AnswerTakebackRequest>,
    ) -> Reply<pb::AnswerTakebackResponse> {
        unused()
    }
    async fn list_matches(
        &self,
        _: Request<pb::ListMatchesRequest>,
    ) -> Reply<pb::ListMatchesResponse> {
        unused()
    }
    async fn post_chat(&self, _: Request<pb::PostChatRequest>) -> Reply<pb::PostChatResponse> {
        unused()
    }
    async fn post_spectator_chat(
        &self,
        _: Request<pb::PostSpectatorChatRequest>,
    ) -> Reply<pb::PostSpectatorChatResponse> {
        unused()
    }
    async fn delete_chat_message(
        &self,
        _: Request<pb::DeleteChatMessageRequest>,
    ) -> Reply<pb::DeleteChatMessageResponse> {
        unused()
    }
    type WatchChatStream =
        Pin<Box<dyn Stream<Item = Result<pb::WatchChatResponse, Status>> + Send>>;
    async fn watch_chat(&self, _: Request<pb::WatchChatRequest>) -> Reply<Self::WatchChatStream> {
        unused()
    }
    type WatchSpectatorChatStream =
        Pin<Box<dyn Stream<Item = Result<pb::WatchSpectatorChatResponse, Status>> + Send>>;
    async fn watch_spectator_chat(
        &self,
        _: Request<pb::WatchSpectatorChatRequest>,
    ) -> Reply<Self::WatchSpectatorChatStream> {
        unused()
    }
}

/// Serves `service` on `listener` (until the test ends).
fn serve(service: FakeMatches, listener: TcpListener) {
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(MatchServiceServer::new(service))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
}

async fn serve_anywhere(service: FakeMatches) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    serve(service, listener);
    addr
}

/// A TCP relay in front of one replica, standing for the proxy (haproxy, a Kubernetes
/// service) in front of the match service. Down, it accepts connections and closes them at
/// once (no replica behind it); up, it relays them. [`Relay::cut`] drops every relayed
/// connection (the replica died).
struct Relay {
    url: String,
    down: Arc<AtomicBool>,
    held: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Relay {
    async fn start(target: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let down = Arc::new(AtomicBool::new(false));
        let held: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let (d, h) = (Arc::clone(&down), Arc::clone(&held));
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                if d.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                h.lock().unwrap().push(tokio::spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                }));
            }
        });
        Relay { url, down, held }
    }

    fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    fn cut(&self) {
        for h in self.held.lock().unwrap().drain(..) {
            h.abort();
        }
    }
}

fn client(url: &str) -> GrpcMatches {
    arbiter_matchmaking::connect(url, None, None, Duration::from_secs(5)).unwrap()
}

fn new_match(request_id: &str) -> NewMatch {
    NewMatch {
        request_id: request_id.to_owned(),
        variant: Variant::Chess,
        time_control: "3+2".into(),
        players: vec!["ann".into(), "bob".into()],
        rules: Vec::new(),
    }
}

fn spec(player: &str) -> JoinSpec {
    JoinSpec {
        player: player.to_owned(),
        pool: Pool {
            variant: Variant::Chess,
            control: TimeControl::parse("3+2").unwrap(),
            rated: true,
        },
        range: None,
        blocked: Vec::new(),
        partner: None,
    }
}

/// A wave runs while the match service is not listening yet (its port refuses connections):
/// the creation is retried until the service listens, and one match is created, which both
/// players are handed.
#[tokio::test]
async fn a_wave_creates_its_match_once_the_match_service_listens() {
    // A free port, released: nothing listens there until the service starts.
    let addr = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let service = FakeMatches::default();
    let mm = Arc::new(Matchmaker::new(
        MemoryStore::new(),
        client(&format!("http://{addr}")),
        Tuning {
            wave_interval_ms: 3_600_000,
            // No retry at the wave's level: the client alone rides over the outage.
            create_retries: 0,
            ..Tuning::default()
        },
    ));
    for p in ["ann", "bob"] {
        assert!(matches!(
            mm.join(spec(p)).await.unwrap(),
            Ticket::Waiting { .. }
        ));
    }
    let pool = spec("ann").pool.name();
    let wave = tokio::spawn({
        let (mm, pool) = (Arc::clone(&mm), pool.clone());
        async move { mm.wave(&pool).await }
    });
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(service.state().create_calls, 0);
    let listener = TcpListener::bind(addr)
        .await
        .expect("the released port is free again");
    serve(service.clone(), listener);
    let report = wave.await.unwrap().unwrap();
    assert_eq!((report.created, report.pending, report.failed), (1, 0, 0));
    let id = {
        let state = service.state();
        assert_eq!(state.matches.len(), 1, "one match created");
        assert_eq!(
            state.create_calls, 1,
            "refused connections never reached it"
        );
        state.matches.keys().next().unwrap().clone()
    };
    for p in ["ann", "bob"] {
        let found = mm.store().found(p).await.unwrap();
        assert_eq!(found.len(), 1, "{p}");
        assert_eq!(found[0].match_id, id);
    }
}

/// The replica applies the creation and dies before answering; the proxy has no replica for
/// a moment, then another one (sharing the store) answers. The retry carries the same request
/// id and gets the match the first attempt created: one match, created once.
#[tokio::test]
async fn a_creation_whose_answer_is_lost_gets_the_same_match_on_retry() {
    let service = FakeMatches::default();
    let relay = Relay::start(serve_anywhere(service.clone()).await).await;
    let backend = client(&relay.url);
    service.lose_next_answer.store(true, Ordering::SeqCst);
    let create = tokio::spawn({
        let backend = backend.clone();
        async move { backend.create(&new_match("pairing-1")).await }
    });
    service.until(|s| s.create_calls == 1).await;
    relay.set_down(true);
    relay.cut();
    tokio::time::sleep(Duration::from_millis(300)).await;
    relay.set_down(false);
    let created = create.await.unwrap().expect("the retry succeeds");
    assert_eq!(created.match_id, match_id_of("pairing-1"));
    assert_eq!(created.tokens, ["token-ann", "token-bob"]);
    let state = service.state();
    assert_eq!(state.matches.len(), 1, "one match created");
    assert!(state.create_calls >= 2, "the lost answer was asked again");
}

/// A replica shutting down ends its watch streams with `UNAVAILABLE` after the last event it
/// sent: the follower opens the watch again after that event, and sees the end there.
#[tokio::test]
async fn a_watch_ended_by_a_replica_shutting_down_resumes_after_the_last_event() {
    let service = FakeMatches::default();
    let backend = client(&format!("http://{}", serve_anywhere(service.clone()).await));
    service.host("m-1", 2);
    *service.end_streams_after.lock().unwrap() = Some(3);
    let end = tokio::spawn({
        let backend = backend.clone();
        async move { backend.wait_end("m-1").await }
    });
    service.until(|s| s.watches.len() == 1).await;
    service.push("m-1", a_move());
    service.until(|s| s.watches.len() == 2).await;
    service.push("m-1", white_wins());
    let end = end.await.unwrap().unwrap();
    assert_eq!(
        end,
        MatchEnd::Scored {
            white_quarters: 4,
            at_ms: 1_700_000_000_000
        }
    );
    // From the state read (2 events), then from the event the broken stream delivered last.
    assert_eq!(service.state().watches, [2, 3]);
}

/// The connection under a watch stream is cut (the replica died, the proxy routes to
/// another): the follower connects again and watches on from where it was.
#[tokio::test]
async fn a_watch_whose_connection_is_cut_reconnects_and_resumes() {
    let service = FakeMatches::default();
    let relay = Relay::start(serve_anywhere(service.clone()).await).await;
    let backend = client(&relay.url);
    service.host("m-2", 5);
    let end = tokio::spawn({
        let backend = backend.clone();
        async move { backend.wait_end("m-2").await }
    });
    service.until(|s| s.watches.len() == 1).await;
    relay.set_down(true);
    relay.cut();
    tokio::time::sleep(Duration::from_millis(300)).await;
    relay.set_down(false);
    service.until(|s| s.watches.len() == 2).await;
    service.push("m-2", white_wins());
    let end = tokio::time::timeout(Duration::from_secs(20), end)
        .await
        .expect("the follower sees the end")
        .unwrap()
        .unwrap();
    assert!(matches!(
        end,
        MatchEnd::Scored {
            white_quarters: 4,
            ..
        }
    ));
    assert_eq!(service.state().watches, [5, 5]);
}
