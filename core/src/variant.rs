//! The games Arbiter knows, by stable name.

use std::fmt;
use std::str::FromStr;

/// A game Arbiter implements. The names returned by [`Variant::name`] are stable: they appear in
/// the CLI (`--variant`), in the gRPC API and in stored data, and never change meaning.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Variant {
    /// Standard chess under the FIDE Laws (`chess`).
    Chess,
    /// Crazyhouse: captured pieces go to the capturer's reserve (`crazyhouse`).
    Crazyhouse,
    /// One board of a bughouse match: captures feed the partner (`bughouse`).
    Bughouse,
    /// Glinski's hexagonal chess on 91 cells (`glinski`).
    Glinski,
    /// Byzantine (circular) chess on a 4×16 ring board (`byzantine`).
    Byzantine,
    /// Byzantine chess with citadels (`byzantine-citadel`).
    ByzantineCitadel,
    /// Chess960 (Fischer random chess): standard chess from one of 960 start positions, with
    /// castling generalised (`chess960`).
    Chess960,
}

impl Variant {
    /// Every variant, in a fixed order.
    pub const ALL: [Variant; 7] = [
        Variant::Chess,
        Variant::Crazyhouse,
        Variant::Bughouse,
        Variant::Glinski,
        Variant::Byzantine,
        Variant::ByzantineCitadel,
        Variant::Chess960,
    ];

    /// This variant's place in [`Variant::ALL`] (for tables indexed by variant).
    pub const fn index(self) -> usize {
        match self {
            Variant::Chess => 0,
            Variant::Crazyhouse => 1,
            Variant::Bughouse => 2,
            Variant::Glinski => 3,
            Variant::Byzantine => 4,
            Variant::ByzantineCitadel => 5,
            Variant::Chess960 => 6,
        }
    }

    /// The stable machine name (`chess`, `crazyhouse`, `bughouse`, `glinski`, `byzantine`,
    /// `byzantine-citadel`, `chess960`).
    pub const fn name(self) -> &'static str {
        match self {
            Variant::Chess => "chess",
            Variant::Crazyhouse => "crazyhouse",
            Variant::Bughouse => "bughouse",
            Variant::Glinski => "glinski",
            Variant::Byzantine => "byzantine",
            Variant::ByzantineCitadel => "byzantine-citadel",
            Variant::Chess960 => "chess960",
        }
    }

    /// The value written in a PGN `[Variant]` tag. Standard chess games carry no such tag.
    pub const fn pgn_name(self) -> &'static str {
        match self {
            Variant::Chess => "Standard",
            Variant::Crazyhouse => "Crazyhouse",
            Variant::Bughouse => "Bughouse",
            Variant::Glinski => "Glinski",
            Variant::Byzantine => "Byzantine",
            Variant::ByzantineCitadel => "Byzantine Citadel",
            Variant::Chess960 => "Chess960",
        }
    }

    /// Reads a PGN `[Variant]` tag value, accepting the spellings found in the wild
    /// (case-insensitive; spaces, dashes and underscores ignored).
    pub fn from_pgn_name(tag: &str) -> Option<Variant> {
        let key: String = tag
            .chars()
            .filter(|c| !matches!(c, ' ' | '-' | '_'))
            .flat_map(char::to_lowercase)
            .collect();
        Some(match key.as_str() {
            "" | "standard" | "chess" | "normal" | "fromposition" => Variant::Chess,
            "crazyhouse" | "zh" => Variant::Crazyhouse,
            "bughouse" | "bug" => Variant::Bughouse,
            "glinski" | "hexagonal" | "glinskihexagonal" => Variant::Glinski,
            "byzantine" | "circular" | "byzantinechess" => Variant::Byzantine,
            "byzantinecitadel" | "citadel" => Variant::ByzantineCitadel,
            "chess960" | "960" | "fischerandom" | "fischerrandom" | "frc" => Variant::Chess960,
            _ => return None,
        })
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The text named no variant Arbiter knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownVariant(pub String);

impl fmt::Display for UnknownVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown variant '{}' (expected one of: ", self.0)?;
        for (i, v) in Variant::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(v.name())?;
        }
        f.write_str(")")
    }
}

impl std::error::Error for UnknownVariant {}

impl FromStr for Variant {
    type Err = UnknownVariant;

    /// Parses a stable name exactly (`chess`, `byzantine-citadel`, …).
    fn from_str(s: &str) -> Result<Variant, UnknownVariant> {
        Variant::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| UnknownVariant(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_are_places_in_all() {
        for (i, v) in Variant::ALL.into_iter().enumerate() {
            assert_eq!(v.index(), i, "{v}");
        }
    }

    #[test]
    fn names_round_trip() {
        for v in Variant::ALL {
            assert_eq!(v.name().parse::<Variant>(), Ok(v));
            assert_eq!(Variant::from_pgn_name(v.pgn_name()), Some(v));
        }
        assert!("Chess".parse::<Variant>().is_err());
        assert_eq!(
            Variant::from_pgn_name("From Position"),
            Some(Variant::Chess)
        );
        assert_eq!(
            Variant::from_pgn_name("Fischerandom"),
            Some(Variant::Chess960)
        );
        assert_eq!(Variant::from_pgn_name("chess 961"), None);
    }
}
