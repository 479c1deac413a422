//! Plays a whole chess game on an Arbiter server and prints its result as the last line.
//!
//! White is the analysis service's best move at depth 2; Black a seeded random legal move (from
//! the rules service's ListLegalMoves). The server ends the game (checkmate, stalemate, a dead
//! position, repetition, the 75-move rule); past 300 plies Black resigns, so it always ends.
//!
//! ```text
//! ARBITER_ADDR=127.0.0.1:50051 cargo run -p arbiter-client --example play -- [--api-key-file PATH] [--seed N]
//! ```
//! The address comes from `ARBITER_ADDR` (default `127.0.0.1:50051`); the API key from
//! `--api-key-file`, else `ARBITER_API_KEY` (none in development mode).

use arbiter_client::proto::analysis::v1::{BestMoveRequest, SearchLimits};
use arbiter_client::proto::common::v1::{Position, Variant};
use arbiter_client::proto::matches::v1::Side;
use arbiter_client::{Client, ClientConfig, Error, outcome_text, resolve_api_key};
use std::path::PathBuf;

const MAX_PLIES: u32 = 300;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut key_file: Option<PathBuf> = None;
    let mut seed: u64 = 1;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--api-key-file" => key_file = args.next().map(PathBuf::from),
            "--seed" => seed = args.next().and_then(|s| s.parse().ok()).unwrap_or(1),
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    let addr = std::env::var("ARBITER_ADDR").unwrap_or_else(|_| "127.0.0.1:50051".into());
    let mut config = ClientConfig::new(addr);
    if let Some(key) = resolve_api_key(None, key_file.as_deref())? {
        config = config.api_key(key);
    }
    let client = Client::connect(config).await?;
    let game = client.create_chess_match("engine", "random").await?;
    println!("match {}", game.id());
    let mut rng = seed.max(1);
    loop {
        let state = game.state().await?;
        if let Some(outcome) = &state.outcome {
            println!("{}", outcome_text(outcome));
            return Ok(());
        }
        let board = state.boards.first().ok_or("no board")?.clone();
        let position = Position {
            variant: Variant::Chess as i32,
            text: board.position.clone(),
            rules: Vec::new(),
        };
        let side = Side::try_from(board.side_to_move).unwrap_or(Side::White);
        if board.ply >= MAX_PLIES {
            game.resign(Side::Black).await?;
            continue;
        }
        let mv = if side == Side::White {
            let result = client
                .best_move(BestMoveRequest {
                    position: Some(position),
                    limits: Some(SearchLimits {
                        depth: 2,
                        ..SearchLimits::default()
                    }),
                    ..BestMoveRequest::default()
                })
                .await?;
            result.best_move.ok_or("no best move")?.uci
        } else {
            let moves = client.legal_moves(position).await?.moves;
            if moves.is_empty() {
                return Err(Error::Protocol("no legal move in a live game".into()).into());
            }
            // xorshift64: the same seed, the same game.
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            moves[(rng % moves.len() as u64) as usize].uci.clone()
        };
        let played = game.play(side, &mv).await?;
        let san = played
            .r#move
            .and_then(|m| m.r#move)
            .map(|m| m.san)
            .unwrap_or(mv);
        println!("{}. {san}", board.ply / 2 + 1);
    }
}
