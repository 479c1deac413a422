//! The CPU cost of one ValidateMove answer without the network: decode + rules + encode, next to
//! the core work alone (FEN parse, legal moves) measured in the same run.
//!
//! `cargo bench -p arbiter-rules --bench validate`

use arbiter_core::{AnyPosition, Chess, Locale, Notation, Position, Variant};
use arbiter_proto::common::v1 as common;
use arbiter_proto::rules::v1 as rules;
use prost::Message;
use std::hint::black_box;
use std::time::Instant;

use arbiter_bench::rules::WORK;

fn per_op(name: &str, iters: u32, mut f: impl FnMut(usize)) -> f64 {
    let start = Instant::now();
    for i in 0..iters as usize {
        f(i);
    }
    let ns = start.elapsed().as_nanos() as f64 / f64::from(iters);
    println!("{name:<44} {:>9.0} ns", ns);
    ns
}

fn main() {
    let iters = 200_000;
    let requests: Vec<Vec<u8>> = WORK
        .iter()
        .map(|(fen, mv)| {
            rules::ValidateMoveRequest {
                position: Some(common::Position {
                    variant: common::Variant::Chess as i32,
                    text: (*fen).to_owned(),
                    ..Default::default()
                }),
                r#move: (*mv).to_owned(),
                ..Default::default()
            }
            .encode_to_vec()
        })
        .collect();
    let total = per_op("decode + validate + encode (one request)", iters, |i| {
        let req = rules::ValidateMoveRequest::decode(&requests[i % 4][..]).unwrap();
        let resp = arbiter_rules::ops::validate_move(&req).unwrap();
        black_box(resp.encode_to_vec());
    });
    let fen = per_op("  FEN parse", iters, |i| {
        black_box(Chess::from_fen(WORK[i % 4].0).unwrap());
    });
    let positions: Vec<AnyPosition> = WORK
        .iter()
        .map(|(f, _)| AnyPosition::from_text(Variant::Chess, f).unwrap())
        .collect();
    let parse = per_op("  SAN parse (legal moves)", iters, |i| {
        black_box(
            positions[i % 4]
                .parse_move(WORK[i % 4].1, Notation::Auto, Locale::English)
                .ok(),
        );
    });
    let legal = per_op("  legal move generation", iters, |i| {
        black_box(positions[i % 4].legal_moves());
    });
    println!(
        "core share of one request: FEN {:.0}%, SAN parse {:.0}%, one movegen {:.0}%",
        100.0 * fen / total,
        100.0 * parse / total,
        100.0 * legal / total
    );
}
