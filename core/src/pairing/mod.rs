//! Pairing: exact minimum-cost matching of a pool's waiting players, wave by wave, and the
//! forming of bughouse teams.

pub mod matching;
pub mod teams;
pub mod wave;
