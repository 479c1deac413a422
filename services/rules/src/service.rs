//! The tonic handlers: each decodes nothing itself, calls one function of [`crate::ops`], and
//! turns a refusal into a `Status` through `arbiter-kit`'s one map.

use crate::config::Limits;
use crate::ops;
use arbiter_proto::rules::v1 as rules;
use arbiter_proto::rules::v1::rules_service_server::{RulesService, RulesServiceServer};
use std::pin::Pin;
use std::sync::Arc;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status, Streaming};

type Reply<T> = Result<Response<T>, Status>;
type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// The rules service.
#[derive(Debug, Clone)]
pub struct Rules {
    limits: Arc<Limits>,
    cpu: CpuPool,
}

impl Rules {
    /// A service enforcing `limits`, running its CPU-heavy requests (PGN import, perft) in
    /// `cpu`.
    pub fn new(limits: Limits, cpu: CpuPool) -> Rules {
        Rules {
            limits: Arc::new(limits),
            cpu,
        }
    }

    /// The tonic server for this service, with the message size limit `max` (bytes) applied.
    pub fn into_server(self, max: usize) -> RulesServiceServer<Rules> {
        RulesServiceServer::new(self)
            .max_decoding_message_size(max)
            .max_encoding_message_size(max)
    }
}

use arbiter_kit::cpu::CpuPool;
use arbiter_kit::reply;

#[tonic::async_trait]
impl RulesService for Rules {
    async fn validate_move(
        &self,
        req: Request<rules::ValidateMoveRequest>,
    ) -> Reply<rules::ValidateMoveResponse> {
        reply(ops::validate_move(req.get_ref()))
    }

    type ValidateMoveStreamStream = BoxStream<rules::ValidateMoveStreamResponse>;

    async fn validate_move_stream(
        &self,
        req: Request<Streaming<rules::ValidateMoveStreamRequest>>,
    ) -> Reply<Self::ValidateMoveStreamStream> {
        let out = req
            .into_inner()
            .map(|item| item.map(|r| ops::validate_move_in_stream(&r)));
        Ok(Response::new(Box::pin(out)))
    }

    async fn list_legal_moves(
        &self,
        req: Request<rules::ListLegalMovesRequest>,
    ) -> Reply<rules::ListLegalMovesResponse> {
        reply(ops::list_legal_moves(req.get_ref()))
    }

    async fn apply_moves(
        &self,
        req: Request<rules::ApplyMovesRequest>,
    ) -> Reply<rules::ApplyMovesResponse> {
        reply(ops::apply_moves(req.get_ref(), &self.limits))
    }

    async fn get_game_status(
        &self,
        req: Request<rules::GetGameStatusRequest>,
    ) -> Reply<rules::GetGameStatusResponse> {
        reply(ops::game_status(req.get_ref(), &self.limits))
    }

    async fn convert_move(
        &self,
        req: Request<rules::ConvertMoveRequest>,
    ) -> Reply<rules::ConvertMoveResponse> {
        reply(ops::convert_move(req.get_ref()))
    }

    async fn import_pgn(
        &self,
        req: Request<rules::ImportPgnRequest>,
    ) -> Reply<rules::ImportPgnResponse> {
        let limits = Arc::clone(&self.limits);
        let req = req.into_inner();
        let result = self
            .cpu
            .run(move |stop| ops::import_pgn(&req, &limits, stop))
            .await?;
        reply(result)
    }

    async fn export_pgn(
        &self,
        req: Request<rules::ExportPgnRequest>,
    ) -> Reply<rules::ExportPgnResponse> {
        reply(ops::export_pgn(req.get_ref(), &self.limits))
    }

    async fn perft(&self, req: Request<rules::PerftRequest>) -> Reply<rules::PerftResponse> {
        let limits = Arc::clone(&self.limits);
        let req = req.into_inner();
        let result = self
            .cpu
            .run(move |stop| ops::perft(&req, &limits, stop))
            .await?;
        reply(result)
    }

    async fn read_position(
        &self,
        req: Request<rules::ReadPositionRequest>,
    ) -> Reply<rules::ReadPositionResponse> {
        reply(ops::read_position(req.get_ref()))
    }

    async fn render_board(
        &self,
        req: Request<rules::RenderBoardRequest>,
    ) -> Reply<rules::RenderBoardResponse> {
        reply(ops::render_board(req.get_ref(), &self.limits))
    }

    async fn ping(&self, _req: Request<rules::PingRequest>) -> Reply<rules::PingResponse> {
        Ok(Response::new(rules::PingResponse {}))
    }

    type PingStreamStream = BoxStream<rules::PingStreamResponse>;

    async fn ping_stream(
        &self,
        req: Request<Streaming<rules::PingStreamRequest>>,
    ) -> Reply<Self::PingStreamStream> {
        let out = req
            .into_inner()
            .map(|item| item.map(|_| rules::PingStreamResponse {}));
        Ok(Response::new(Box::pin(out)))
    }
}
