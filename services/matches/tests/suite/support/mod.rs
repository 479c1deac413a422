//! Helpers shared by the gRPC test files: the server under test, a client on it, seat
//! credentials, and creating matches and making moves as a platform and its players would.
#![allow(dead_code)] // each test file uses its own share of these

use arbiter_kit::ServeError;
use arbiter_proto::matches::v1::{self as pb, match_service_client::MatchServiceClient};
pub use arbiter_testkit::grpc::TestServer;
use std::collections::HashMap;
use tonic::transport::Channel;
use tonic::{Request, Status};

pub type Server = TestServer<ServeError>;

/// A match-service client on the server's connection.
pub trait Client {
    fn client(&self) -> MatchServiceClient<Channel>;
}

impl Client for Server {
    fn client(&self) -> MatchServiceClient<Channel> {
        MatchServiceClient::new(self.channel())
    }
}

pub fn bearer<T>(message: T, token: &str) -> Request<T> {
    let mut r = Request::new(message);
    r.metadata_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    r
}

/// `message` with the API key `key` (`x-api-key`).
pub fn keyed<T>(message: T, key: &str) -> Request<T> {
    let mut r = Request::new(message);
    r.metadata_mut().insert("x-api-key", key.parse().unwrap());
    r
}

pub const A: i32 = pb::Board::A as i32;
pub const B: i32 = pb::Board::B as i32;
pub const WHITE: i32 = pb::Side::White as i32;
pub const BLACK: i32 = pb::Side::Black as i32;

/// A created match and its seat tokens by (board, side).
#[derive(Clone, Debug)]
pub struct Table {
    pub id: String,
    pub tokens: HashMap<(i32, i32), String>,
    pub created: pb::CreateMatchResponse,
}

impl Table {
    pub fn token(&self, board: i32, side: i32) -> &str {
        &self.tokens[&(board, side)]
    }
}

pub async fn create_from(
    c: &mut MatchServiceClient<Channel>,
    req: pb::CreateMatchRequest,
) -> Table {
    let r = c.create_match(req).await.unwrap().into_inner();
    let tokens = r
        .seats
        .iter()
        .map(|s| {
            let seat = s.seat.clone().unwrap();
            ((seat.board, seat.side), s.token.clone())
        })
        .collect();
    Table {
        id: r.state.as_ref().unwrap().match_id.clone(),
        tokens,
        created: r,
    }
}

pub async fn make_move(
    c: &mut MatchServiceClient<Channel>,
    t: &Table,
    board: i32,
    side: i32,
    mv: &str,
    ply: u32,
) -> Result<pb::MakeMoveResponse, Status> {
    c.make_move(bearer(
        pb::MakeMoveRequest {
            match_id: t.id.clone(),
            board,
            side,
            r#move: mv.into(),
            expected_ply: ply,
            ..Default::default()
        },
        t.token(board, side),
    ))
    .await
    .map(tonic::Response::into_inner)
}
