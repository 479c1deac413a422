//! A found match as matchmaking keeps it for a player until they acknowledge it
//! ([`MatchFound`]), and the form it is stored in.
//!
//! # Stored form
//!
//! Version 1 (written by this version, in both stores' terms: Redis `mm:found:<player>` values):
//! the tag `v1|`, then the packed list (each item its byte length, `:`, and its bytes, as the
//! store's Lua `pack` writes) of: pool, match id, token, variant (its stable name, `chess`),
//! time control, rated (`1` or `0`), this player's seat, then every seat in the match's order,
//! each seat as four items: player, board, side, rating.
//!
//! Rolling upgrades: versions before 1 stored the `arbiter.matchmaking.v1.MatchFound` message
//! prost-encoded, kept a day at most. A value that does not begin with `v` is read that way
//! ([`crate::legacy::read_stored`], which the store reads through): no protobuf message begins with `v` (0x76 would be
//! field 14 of wire type 6, which does not exist). A value tagged with another version (a newer
//! replica's) is refused as corrupt rather than misread.

use arbiter_core::Variant;

/// The version tag the stored form begins with.
pub const STORED_TAG: &str = "v1|";

/// One seat of a found match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundSeat {
    /// The player.
    pub player: String,
    /// The board: 1 for A, 2 for B.
    pub board: u32,
    /// The colour: 1 White, 2 Black.
    pub side: u32,
    /// The rating the player was paired by.
    pub rating: i32,
}

/// What a player is told when a wave found them a match (kept until acknowledged).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchFound {
    /// The pool's name.
    pub pool: String,
    /// The match on the match service.
    pub match_id: String,
    /// This player's seat.
    pub seat: FoundSeat,
    /// This player's seat token (the bearer token of their calls on the match).
    pub token: String,
    /// Every seat of the match, this player's included, in the match's order.
    pub seats: Vec<FoundSeat>,
    /// The match's variant.
    pub variant: Variant,
    /// The time control, as the match service was given it.
    pub time_control: String,
    /// Whether the match is rated.
    pub rated: bool,
}

pub(crate) use arbiter_redis_conn::packed::pack;

/// Reads a packed list ([`pack`], or a script's `pack`), its items owned.
pub(crate) fn unpack(s: &str) -> Option<Vec<String>> {
    let items = arbiter_redis_conn::packed::unpack(s).ok()?;
    Some(items.into_iter().map(str::to_owned).collect())
}

fn seat_items(seat: &FoundSeat) -> [String; 4] {
    [
        seat.player.clone(),
        seat.board.to_string(),
        seat.side.to_string(),
        seat.rating.to_string(),
    ]
}

fn seat_of(items: &[String]) -> Result<FoundSeat, String> {
    let [player, board, side, rating] = items else {
        return Err("a seat is not four items".into());
    };
    let number = |what: &str, text: &str| {
        text.parse::<u32>()
            .map_err(|_| format!("bad seat {what} {text:?}"))
    };
    Ok(FoundSeat {
        player: player.clone(),
        board: number("board", board)?,
        side: number("side", side)?,
        rating: rating
            .parse()
            .map_err(|_| format!("bad seat rating {rating:?}"))?,
    })
}

impl MatchFound {
    /// The stored form (version 1; see the module documentation).
    pub fn encode(&self) -> String {
        let mut items = vec![
            self.pool.clone(),
            self.match_id.clone(),
            self.token.clone(),
            self.variant.name().to_owned(),
            self.time_control.clone(),
            if self.rated { "1" } else { "0" }.to_owned(),
        ];
        items.extend(seat_items(&self.seat));
        for seat in &self.seats {
            items.extend(seat_items(seat));
        }
        format!("{STORED_TAG}{}", pack(&items))
    }

    /// Reads the stored form, version 1 (see the module's documentation; values of earlier
    /// releases are read by [`crate::legacy::read_stored`]).
    ///
    /// # Errors
    /// What is wrong with a value that is not version 1.
    pub fn decode(stored: &[u8]) -> Result<MatchFound, String> {
        let Some(packed) = stored.strip_prefix(STORED_TAG.as_bytes()) else {
            let tag: String = String::from_utf8_lossy(stored).chars().take(8).collect();
            return Err(format!("unknown stored version (begins {tag:?})"));
        };
        let text = std::str::from_utf8(packed).map_err(|_| "not UTF-8".to_owned())?;
        let items = unpack(text).ok_or("not a packed list")?;
        if items.len() < 10 || (items.len() - 10) % 4 != 0 {
            return Err(format!("{} items", items.len()));
        }
        let variant = items[3].parse::<Variant>().map_err(|e| e.to_string())?;
        let rated = match items[5].as_str() {
            "1" => true,
            "0" => false,
            other => return Err(format!("bad rated flag {other:?}")),
        };
        Ok(MatchFound {
            pool: items[0].clone(),
            match_id: items[1].clone(),
            token: items[2].clone(),
            variant,
            time_control: items[4].clone(),
            rated,
            seat: seat_of(&items[6..10])?,
            seats: items[10..]
                .chunks_exact(4)
                .map(seat_of)
                .collect::<Result<_, _>>()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> MatchFound {
        let seat = |player: &str, side, rating| FoundSeat {
            player: player.into(),
            board: 1,
            side,
            rating,
        };
        MatchFound {
            pool: "chess/3+2/rated".into(),
            match_id: "m-1".into(),
            seat: seat("bob", 2, -5),
            token: "tok:en|with:separators".into(),
            seats: vec![seat("ann", 1, 1500), seat("bob", 2, -5)],
            variant: Variant::Chess,
            time_control: "3+2".into(),
            rated: true,
        }
    }

    #[test]
    fn found_matches_round_trip_in_version_1() {
        let f = sample();
        let stored = f.encode();
        assert!(stored.starts_with("v1|"), "{stored}");
        assert_eq!(MatchFound::decode(stored.as_bytes()), Ok(f));
        let casual = MatchFound {
            rated: false,
            variant: Variant::ByzantineCitadel,
            seats: Vec::new(),
            token: String::new(),
            ..sample()
        };
        assert_eq!(MatchFound::decode(casual.encode().as_bytes()), Ok(casual));
    }

    #[test]
    fn bad_values_are_refused() {
        let good = ["p", "m", "t", "chess", "3+2", "1", "bob", "1", "2", "1500"];
        let with = |i: usize, v: &str| {
            let mut items = good.map(str::to_owned).to_vec();
            items[i] = v.to_owned();
            format!("{STORED_TAG}{}", pack(&items))
        };
        assert!(MatchFound::decode(with(0, "p").as_bytes()).is_ok());
        let mut bad = vec![
            "v2|1:x".to_owned(),
            "v1|".to_owned(),
            "v1|3:ab".to_owned(),
            format!("{STORED_TAG}{}", pack(&good[..9])),
            format!("{STORED_TAG}{}{}", pack(&good), pack(&["x"])),
        ];
        bad.extend([
            with(3, "nope"),
            with(5, "yes"),
            with(7, "A"),
            with(8, "-1"),
            with(9, "high"),
        ]);
        for b in bad {
            assert!(MatchFound::decode(b.as_bytes()).is_err(), "{b}");
        }
    }

    #[test]
    fn packed_lists_read_back() {
        let items = ["abc", "", "x:", "é"];
        assert_eq!(unpack(&pack(&items)).unwrap(), items);
        assert_eq!(unpack("5:ab"), None);
        assert_eq!(unpack("x:ab"), None);
    }
}
