//! Compiles `arbiter/**/*.proto` with protox (pure Rust, no system `protoc`) and generates
//! messages, clients and servers with tonic-prost-build. The encoded file descriptor set is
//! written next to the generated code and embedded for gRPC server reflection.

use prost::Message;
use std::path::PathBuf;

const PROTOS: [&str; 6] = [
    "arbiter/common/v1/common.proto",
    "arbiter/rules/v1/rules.proto",
    "arbiter/matches/v1/matches.proto",
    "arbiter/clock/v1/clock.proto",
    "arbiter/matchmaking/v1/matchmaking.proto",
    "arbiter/analysis/v1/analysis.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for p in PROTOS {
        println!("cargo:rerun-if-changed={p}");
    }
    let fds = protox::compile(PROTOS, ["."])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("arbiter_descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(fds)?;
    Ok(())
}
