//! Rust types, clients and servers generated from Arbiter's `.proto` files (in this crate's
//! folder, `arbiter/<area>/v1/*.proto`), and the encoded file descriptor set for reflection.
//!
//! The `.proto` files are the API reference: every message and field is documented there.
#![allow(missing_docs, clippy::all, clippy::pedantic)]

/// The encoded `FileDescriptorSet` of every Arbiter proto, for gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/arbiter_descriptor.bin"));

/// `arbiter.common.v1`: variants, positions, moves, outcomes.
pub mod common {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("arbiter.common.v1");
    }
}

/// `arbiter.rules.v1`: the rules service.
pub mod rules {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("arbiter.rules.v1");
    }
}

/// `arbiter.matches.v1`: hosted games of every variant and bughouse matches.
pub mod matches {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("arbiter.matches.v1");
    }
}

/// `arbiter.clock.v1`: time sync and standalone clocks.
pub mod clock {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("arbiter.clock.v1");
    }
}

/// `arbiter.matchmaking.v1`: pools, pairing waves and ratings.
pub mod matchmaking {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("arbiter.matchmaking.v1");
    }
}

/// `arbiter.analysis.v1`: live engine analysis.
pub mod analysis {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("arbiter.analysis.v1");
    }
}
