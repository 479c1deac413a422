//! Positions and moves in the engine's dialect.
//!
//! - Standard chess: `position startpos` or `position fen FEN`, moves in coordinate notation
//!   (castling as the king's move, `e1g1`); the core writes the same.
//! - Chess960 (engines with `UCI_Chess960`): the core's FEN (X-FEN or Shredder-FEN, both read
//!   by Stockfish) and castling as the king taking its rook, as the core writes it for Chess960.
//! - Crazyhouse and a bughouse board (engines whose `UCI_Variant` lists them, as
//!   Fairy-Stockfish's does): the FEN with the holdings in brackets after the board
//!   (`...R1K1[Qnp] w ...`) and `~` after promoted pieces, which is the core's crazyhouse FEN;
//!   drops as `N@f3` with an upper-case piece letter for either side (Fairy-Stockfish ignores
//!   `n@f3`). A bughouse board (`AnyPosition::Crazyhouse` whose rules are
//!   [`HouseRules::Bughouse`](arbiter_core::crazyhouse::HouseRules)) is played as
//!   Fairy-Stockfish's `bughouse` (captures leave the board, as on the core's bughouse board),
//!   or as `crazyhouse` when the engine lists no `bughouse`.
//!
//! Moves coming back are read with the position's own UCI parser (which takes both castling
//! forms and either case of drop letter), so only legal moves pass, and are written again in
//! the core's coordinate notation.

use arbiter_core::{AnyMove, AnyPosition, Locale, Notation, Position, Variant};

/// Whether an engine other than Arbiter's may play `variant` at all (Glinski's and the
/// Byzantine boards are Arbiter's own).
pub(crate) fn may_be_external(variant: Variant) -> bool {
    matches!(
        variant,
        Variant::Chess | Variant::Chess960 | Variant::Crazyhouse | Variant::Bughouse
    )
}

/// What an engine declared that decides which variants it plays and how.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Dialect {
    /// The values of its `UCI_Variant` combo (empty without one).
    pub uci_variants: Vec<String>,
    /// Whether it has `UCI_Chess960`.
    pub chess960: bool,
}

impl Dialect {
    /// The variants it can play, in [`Variant::ALL`]'s order.
    pub(crate) fn variants(&self) -> Vec<Variant> {
        Variant::ALL
            .into_iter()
            .filter(|&v| self.plays(v))
            .collect()
    }

    fn lists(&self, name: &str) -> bool {
        self.uci_variants.iter().any(|v| v == name)
    }

    fn plays(&self, variant: Variant) -> bool {
        match variant {
            Variant::Chess => true,
            Variant::Chess960 => self.chess960,
            Variant::Crazyhouse | Variant::Bughouse => self.lists("crazyhouse"),
            _ => false,
        }
    }

    /// The `UCI_Variant` value for `variant`, when the engine has the option.
    pub(crate) fn uci_variant(&self, variant: Variant) -> Option<&'static str> {
        if self.uci_variants.is_empty() {
            return None;
        }
        Some(match variant {
            Variant::Bughouse if self.lists("bughouse") => "bughouse",
            Variant::Crazyhouse | Variant::Bughouse => "crazyhouse",
            _ => "chess",
        })
    }
}

/// The standard start position's FEN.
const START_FEN: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

/// The `position` command for `start` followed by `moves` (which the caller checked are legal).
pub(crate) fn position_command(start: &AnyPosition, moves: &[AnyMove]) -> String {
    let fen = start.to_text();
    let mut cmd = if start.variant() == Variant::Chess && fen == START_FEN {
        "position startpos".to_owned()
    } else {
        format!("position fen {fen}")
    };
    if !moves.is_empty() {
        cmd.push_str(" moves");
        let mut pos = start.clone();
        for &m in moves {
            cmd.push(' ');
            cmd.push_str(&move_to_engine(&pos, m));
            pos.play_unchecked(m);
        }
    }
    cmd
}

/// A move of `pos` as the engine reads it.
pub(crate) fn move_to_engine(pos: &AnyPosition, m: AnyMove) -> String {
    // The core writes drops with an upper-case letter and castling in the form that fits the
    // position's variant: the engines' own forms.
    pos.move_to_uci(m)
}

/// An engine's move text read in `pos`: the legal move and its text in the core's notation.
pub(crate) fn move_from_engine(pos: &AnyPosition, text: &str) -> Result<(AnyMove, String), String> {
    if text.is_empty() || text.len() > 8 || !text.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!("'{}' is not a move", text.escape_debug()));
    }
    let m = pos
        .parse_move(text, Notation::Uci, Locale::English)
        .map_err(|e| format!("'{text}': {e}"))?;
    if !pos.is_legal(m) {
        return Err(format!("'{text}' is not legal"));
    }
    Ok((m, pos.move_to_uci(m)))
}

/// The longest legal prefix of `pv` from `pos`, in the core's notation.
pub(crate) fn pv_from_engine(pos: &AnyPosition, pv: &[String]) -> Vec<String> {
    let mut p = pos.clone();
    let mut out = Vec::with_capacity(pv.len());
    for text in pv {
        match move_from_engine(&p, text) {
            Ok((m, t)) => {
                out.push(t);
                p.play_unchecked(m);
            }
            Err(_) => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(variant: Variant, fen: Option<&str>) -> AnyPosition {
        AnyPosition::from_optional_text(variant, fen).expect("position")
    }

    fn line(p: &AnyPosition, moves: &[&str]) -> Vec<AnyMove> {
        let mut p = p.clone();
        moves
            .iter()
            .map(|t| {
                let m = p.parse_move(t, Notation::Uci, Locale::English).expect(t);
                p.play_unchecked(m);
                m
            })
            .collect()
    }

    #[test]
    fn which_variants_and_names() {
        let sf = Dialect {
            uci_variants: vec![],
            chess960: true,
        };
        assert_eq!(sf.variants(), [Variant::Chess, Variant::Chess960]);
        assert_eq!(sf.uci_variant(Variant::Chess), None);
        let fsf = Dialect {
            uci_variants: ["chess", "crazyhouse", "bughouse"]
                .map(String::from)
                .to_vec(),
            chess960: true,
        };
        assert_eq!(
            fsf.variants(),
            [
                Variant::Chess,
                Variant::Crazyhouse,
                Variant::Bughouse,
                Variant::Chess960
            ]
        );
        assert_eq!(fsf.uci_variant(Variant::Bughouse), Some("bughouse"));
        assert_eq!(fsf.uci_variant(Variant::Crazyhouse), Some("crazyhouse"));
        assert_eq!(fsf.uci_variant(Variant::Chess960), Some("chess"));
        let zh_only = Dialect {
            uci_variants: ["chess", "crazyhouse"].map(String::from).to_vec(),
            chess960: false,
        };
        assert_eq!(zh_only.uci_variant(Variant::Bughouse), Some("crazyhouse"));
        assert!(!may_be_external(Variant::Glinski));
        assert!(!may_be_external(Variant::ByzantineCitadel));
    }

    #[test]
    fn position_commands() {
        let start = pos(Variant::Chess, None);
        assert_eq!(position_command(&start, &[]), "position startpos");
        let ms = line(&start, &["e2e4", "e7e5", "g1f3"]);
        assert_eq!(
            position_command(&start, &ms),
            "position startpos moves e2e4 e7e5 g1f3"
        );
        let fen = "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1";
        let p = pos(Variant::Chess, Some(fen));
        let ms = line(&p, &["e1g1"]);
        assert_eq!(
            position_command(&p, &ms),
            format!("position fen {fen} moves e1g1")
        );

        let zh = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R[Pn] w KQkq - 2 3";
        let p = pos(Variant::Crazyhouse, Some(zh));
        let ms = line(&p, &["P@d5", "n@d4"]);
        assert_eq!(
            position_command(&p, &ms),
            format!("position fen {zh} moves P@d5 N@d4")
        );
        // Promoted pieces keep their mark.
        let promoted = "4k3/8/8/8/8/8/8/Q~3K3[] w - - 0 1";
        let p = pos(Variant::Crazyhouse, Some(promoted));
        assert_eq!(
            position_command(&p, &[]),
            format!("position fen {promoted}")
        );
    }

    #[test]
    fn moves_from_the_engine() {
        let start = pos(Variant::Chess, None);
        assert_eq!(move_from_engine(&start, "e2e4").unwrap().1, "e2e4");
        assert!(move_from_engine(&start, "e2e5").is_err());
        assert!(move_from_engine(&start, "").is_err());
        assert!(move_from_engine(&start, "(none)").is_err());
        assert!(move_from_engine(&start, "0000").is_err());
        assert!(move_from_engine(&start, "e2e4\u{7}").is_err());
        assert!(move_from_engine(&start, "Nf3").is_err(), "SAN is not UCI");
        let p = pos(Variant::Chess, Some("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1"));
        // Both castling forms read, written back as the core writes standard castling.
        assert_eq!(move_from_engine(&p, "e1g1").unwrap().1, "e1g1");
        assert_eq!(move_from_engine(&p, "e1h1").unwrap().1, "e1g1");
        let p = pos(Variant::Chess, Some("8/4P1k1/8/8/8/8/8/4K3 w - - 0 1"));
        assert_eq!(move_from_engine(&p, "e7e8q").unwrap().1, "e7e8q");
        assert!(move_from_engine(&p, "e7e8").is_err());

        let zh = pos(
            Variant::Crazyhouse,
            Some("6k1/5ppp/8/8/8/8/8/K7[Rn] w - - 0 1"),
        );
        assert_eq!(move_from_engine(&zh, "R@a8").unwrap().1, "R@a8");
        assert_eq!(move_from_engine(&zh, "r@a8").unwrap().1, "R@a8");
        assert!(
            move_from_engine(&zh, "N@a8").is_err(),
            "white holds no knight"
        );
        assert!(move_from_engine(&zh, "R@g8").is_err(), "occupied");
        assert_eq!(
            pv_from_engine(
                &zh,
                &["R@a8".into(), "N@f8".into(), "a8f8".into(), "Q@a1".into()]
            ),
            ["R@a8", "N@f8", "a8f8"]
        );
        assert!(pv_from_engine(&zh, &["garbage".into(), "R@a8".into()]).is_empty());
    }
}
