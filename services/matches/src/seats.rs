//! Seat credentials: one secret token per seat of a match, derived, never stored.
//!
//! A token is the HMAC-SHA256, under the server's [`SeatKey`], of the match id, the match's
//! nonce (random bits drawn when the match is created) and the seat, in URL-safe base64. So a
//! retried `CreateMatch` answers with the same tokens, every replica sharing the key recognises
//! them, no token sits in the store, and a match created again under an old id (after the first
//! expired) gets new tokens. A presented token is checked by recomputing the HMAC and comparing
//! in constant time.
//!
//! The same key derives the match id of a creation that names only its request id, so a retry
//! finds the same match and nobody without the key can predict ids.

use arbiter_core::bughouse::Seat;
use arbiter_kit::hex;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The fewest key bytes accepted.
pub const MIN_KEY_BYTES: usize = 32;

/// The server's secret for seat tokens and derived match ids.
#[derive(Clone)]
pub struct SeatKey(Vec<u8>);

impl std::fmt::Debug for SeatKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SeatKey(..)")
    }
}

/// `n` random bytes from the operating system.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    getrandom::fill(&mut b).expect("the operating system's random source works");
    b
}

/// 128 random bits in hex: a match's nonce, or an id nobody chose.
pub fn random_hex() -> String {
    hex(&random_bytes::<16>())
}

fn seat_code(seat: Seat) -> &'static str {
    use arbiter_core::Color;
    use arbiter_core::bughouse::BoardId;
    match (seat.board, seat.color) {
        (BoardId::A, Color::White) => "A/w",
        (BoardId::A, Color::Black) => "A/b",
        (BoardId::B, Color::White) => "B/w",
        (BoardId::B, Color::Black) => "B/b",
    }
}

impl SeatKey {
    /// A fresh random key (the embedded default: tokens then live as long as the process, like
    /// its in-process matches).
    pub fn generate() -> SeatKey {
        SeatKey(random_bytes::<32>().to_vec())
    }

    /// A key from secret material (a file's bytes, an environment value), at least
    /// [`MIN_KEY_BYTES`] long once trimmed.
    pub fn from_material(material: &[u8]) -> Result<SeatKey, String> {
        let trimmed = material.trim_ascii();
        if trimmed.len() < MIN_KEY_BYTES {
            return Err(format!(
                "the seat key must be at least {MIN_KEY_BYTES} bytes (found {})",
                trimmed.len()
            ));
        }
        Ok(SeatKey(trimmed.to_vec()))
    }

    fn mac(&self, parts: &[&str]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC takes keys of any length");
        for p in parts {
            // Length-prefixed, so no two different part lists feed the same bytes.
            mac.update(&(p.len() as u64).to_be_bytes());
            mac.update(p.as_bytes());
        }
        mac
    }

    /// The token of `seat` in match `id` with `nonce`.
    pub fn token(&self, id: &str, nonce: &str, seat: Seat) -> String {
        let mac = self.mac(&["arbiter.seat.v1", id, nonce, seat_code(seat)]);
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    }

    /// Whether `presented` is the token of `seat` in match `id` with `nonce` (constant time).
    pub fn verify(&self, id: &str, nonce: &str, seat: Seat, presented: &str) -> bool {
        let Ok(bytes) = URL_SAFE_NO_PAD.decode(presented.trim_end_matches('=')) else {
            return false;
        };
        self.mac(&["arbiter.seat.v1", id, nonce, seat_code(seat)])
            .verify_slice(&bytes)
            .is_ok()
    }

    /// What a match keeps of the request id that created it (a keyed hash, so the stored value
    /// does not tell the id): a retry must present the same id to be given the seat tokens.
    pub fn request_key(&self, request_id: &str) -> String {
        let mac = self.mac(&["arbiter.request-id.v1", request_id]);
        hex(&mac.finalize().into_bytes()[..16])
    }

    /// The match id of a creation known only by its `request_id`: `m` and 128 bits in hex.
    pub fn derive_id(&self, request_id: &str) -> String {
        let mac = self.mac(&["arbiter.match-id.v1", request_id]);
        format!("m{}", hex(&mac.finalize().into_bytes()[..16]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbiter_core::bughouse::Seat;

    #[test]
    fn tokens_are_bound_to_match_nonce_seat_and_key() {
        let key = SeatKey::from_material(&[7u8; 32]).unwrap();
        let [wa, ba, wb, bb] = Seat::ALL;
        let t = key.token("m1", "n1", wa);
        assert_eq!(t.len(), 43);
        assert_eq!(t, key.token("m1", "n1", wa), "derived, so stable");
        assert!(key.verify("m1", "n1", wa, &t));
        for seat in [ba, wb, bb] {
            assert!(!key.verify("m1", "n1", seat, &t), "{seat:?}");
        }
        assert!(!key.verify("m2", "n1", wa, &t));
        assert!(!key.verify("m1", "n2", wa, &t));
        let other = SeatKey::from_material(&[8u8; 32]).unwrap();
        assert!(!other.verify("m1", "n1", wa, &t));
        assert!(!key.verify("m1", "n1", wa, "not base64 !"));
        assert!(!key.verify("m1", "n1", wa, ""));
    }

    #[test]
    fn derived_ids_are_stable_and_distinct() {
        let key = SeatKey::generate();
        let a = key.derive_id("req-1");
        assert_eq!(a, key.derive_id("req-1"));
        assert_ne!(a, key.derive_id("req-2"));
        assert_eq!(a.len(), 33);
        assert!(SeatKey::from_material(b"short").is_err());
        assert_ne!(random_hex(), random_hex());
    }
}
