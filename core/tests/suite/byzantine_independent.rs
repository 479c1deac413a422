//! Byzantine and Byzantine Citadel legal moves against an independent, deliberately naive
//! generator written from the rules alone, as `docs/rules.md` states them (a mailbox of rings
//! and cell numbers; attacks found by generating every enemy move), on thousands of random
//! positions of both variants and both settings of each rule option.

use arbiter_core::byzantine::{ByzantineRules, ByzantineVariant, StalemateRule};
use arbiter_core::{AnyPosition, Byzantine, Locale, Notation, Position, RuleOptions, Variant};
use std::collections::BTreeSet;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Pc {
    white: bool,
    kind: char, // K F R E N P
    up: bool,
}

#[derive(Clone)]
struct Naive {
    cells: [[Option<Pc>; 16]; 4],
    citadel: [Option<Pc>; 4],
    white_to_move: bool,
    citadel_variant: bool,
    facing: bool,
}

fn parse(text: &str, citadel_variant: bool, facing: bool) -> Naive {
    let mut fields = text.split(' ');
    let placement = fields.next().unwrap();
    let mut b = Naive {
        cells: [[None; 16]; 4],
        citadel: [None; 4],
        white_to_move: fields.next().unwrap() == "w",
        citadel_variant,
        facing,
    };
    for (ring, field) in placement.split('/').enumerate() {
        let chars: Vec<char> = field.chars().collect();
        let (mut i, mut n) = (0, 0);
        while i < chars.len() {
            if chars[i].is_ascii_digit() {
                let mut num = 0;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    num = num * 10 + chars[i].to_digit(10).unwrap() as usize;
                    i += 1;
                }
                n += num;
                continue;
            }
            let c = chars[i];
            let mut pc = Pc {
                white: c.is_ascii_uppercase(),
                kind: c.to_ascii_uppercase(),
                up: false,
            };
            i += 1;
            if pc.kind == 'P' {
                pc.up = chars[i] == '+';
                i += 1;
            }
            if ring < 4 {
                b.cells[ring][n] = Some(pc);
            } else {
                b.citadel[n] = Some(pc);
            }
            n += 1;
        }
    }
    b
}

type Sq = (usize, usize); // ring, number 0..16; ring 4 = citadel

fn name(s: Sq) -> String {
    format!("{}{}", (b'a' + s.0 as u8) as char, s.1 + 1)
}

impl Naive {
    fn at(&self, r: i32, n: i32) -> Option<(Sq, Option<Pc>)> {
        if !(0..4).contains(&r) {
            return None;
        }
        let n = n.rem_euclid(16) as usize;
        Some(((r as usize, n), self.cells[r as usize][n]))
    }

    /// Destinations of the piece on `s` (no king-safety check); `captures_only` for attacks.
    fn targets(&self, s: Sq, captures_only: bool) -> BTreeSet<Sq> {
        let pc = self.cells[s.0][s.1].unwrap();
        let (r, n) = (s.0 as i32, s.1 as i32);
        let mut out = BTreeSet::new();
        let leap = |out: &mut BTreeSet<Sq>, deltas: &[(i32, i32)]| {
            for &(dr, dn) in deltas {
                if let Some((sq, occ)) = self.at(r + dr, n + dn)
                    && occ.is_none_or(|o| o.white != pc.white)
                {
                    out.insert(sq);
                }
            }
        };
        match pc.kind {
            'K' => leap(
                &mut out,
                &[
                    (1, 0),
                    (-1, 0),
                    (0, 1),
                    (0, -1),
                    (1, 1),
                    (1, -1),
                    (-1, 1),
                    (-1, -1),
                ],
            ),
            'F' => leap(&mut out, &[(1, 1), (1, -1), (-1, 1), (-1, -1)]),
            'E' => leap(&mut out, &[(2, 2), (2, -2), (-2, 2), (-2, -2)]),
            'N' => leap(
                &mut out,
                &[
                    (1, 2),
                    (1, -2),
                    (-1, 2),
                    (-1, -2),
                    (2, 1),
                    (2, -1),
                    (-2, 1),
                    (-2, -1),
                ],
            ),
            'R' => {
                for (dr, dn) in [(0, 1), (0, -1), (1, 0), (-1, 0)] {
                    let mut k = 1;
                    while let Some((sq, occ)) = self.at(r + k * dr, n + k * dn) {
                        if sq == s || k > 16 {
                            break;
                        }
                        match occ {
                            None => {
                                out.insert(sq);
                            }
                            Some(o) => {
                                if o.white != pc.white {
                                    out.insert(sq);
                                }
                                break;
                            }
                        }
                        k += 1;
                    }
                }
            }
            _ => {
                let d = if pc.up { 1 } else { -1 };
                for dr in [1, -1] {
                    if let Some((sq, Some(o))) = self.at(r + dr, n + d)
                        && o.white != pc.white
                    {
                        out.insert(sq);
                    }
                }
                if !captures_only && let Some((sq, None)) = self.at(r, n + d) {
                    out.insert(sq);
                }
            }
        }
        out
    }

    fn king(&self, white: bool) -> Option<Sq> {
        (0..4)
            .flat_map(|r| (0..16).map(move |n| (r, n)))
            .find(|&(r, n)| {
                self.cells[r][n]
                    == Some(Pc {
                        white,
                        kind: 'K',
                        up: false,
                    })
            })
    }

    fn attacked(&self, s: Sq, by_white: bool) -> bool {
        (0..4)
            .flat_map(|r| (0..16).map(move |n| (r, n)))
            .any(|from| {
                self.cells[from.0][from.1].is_some_and(|p| p.white == by_white)
                    && self.targets(from, true).contains(&s)
            })
    }

    fn bare(&self, white: bool) -> bool {
        self.cells
            .iter()
            .flatten()
            .flatten()
            .all(|p| p.white != white || p.kind == 'K')
    }

    fn apply(&self, from: Sq, to: Sq) -> Naive {
        let mut b = self.clone();
        let pc = b.cells[from.0][from.1].take().unwrap();
        if to.0 == 4 {
            b.citadel[to.1] = Some(pc);
        } else {
            b.cells[to.0][to.1] = Some(pc);
        }
        if b.facing {
            let mut remove = Vec::new();
            for r in 0..4 {
                for n in 0..16 {
                    if let Some(p) = b.cells[r][n] {
                        let next = if p.up { (n + 1) % 16 } else { (n + 15) % 16 };
                        if let Some(q) = b.cells[r][next] {
                            let q_next = if q.up {
                                (next + 1) % 16
                            } else {
                                (next + 15) % 16
                            };
                            if p.kind == 'P' && q.kind == 'P' && p.white && !q.white && q_next == n
                            {
                                remove.push((r, n));
                                remove.push((r, next));
                            }
                        }
                    }
                }
            }
            for (r, n) in remove {
                b.cells[r][n] = None;
            }
        }
        b.white_to_move = !b.white_to_move;
        b
    }

    fn legal(&self) -> BTreeSet<String> {
        let us = self.white_to_move;
        let mut out = BTreeSet::new();
        if self.citadel.iter().any(Option::is_some) || self.bare(!us) {
            return out;
        }
        for r in 0..4 {
            for n in 0..16 {
                let Some(p) = self.cells[r][n] else { continue };
                if p.white != us {
                    continue;
                }
                for to in self.targets((r, n), false) {
                    let after = self.apply((r, n), to);
                    let safe = after.king(us).is_none_or(|k| !after.attacked(k, !us));
                    if safe {
                        out.insert(format!("{}{}", name((r, n)), name(to)));
                    }
                }
                let far = if us { 2 } else { 0 };
                if self.citadel_variant && p.kind == 'K' && r == 3 && n / 4 == far {
                    out.insert(format!("{}e{}", name((r, n)), far + 1));
                }
            }
        }
        out
    }
}

#[test]
fn legal_moves_agree_with_a_naive_generator() {
    let mut rng = 0xDEAD_BEEF_CAFE_F00Du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut checked = 0;
    for game in 0..48 {
        let citadel = game % 2 == 1;
        let rules = ByzantineRules {
            stalemate: if game % 4 < 2 {
                StalemateRule::StalematedWins
            } else {
                StalemateRule::StalematedLoses
            },
            facing_pawns: game % 8 < 4,
        };
        let board = if citadel {
            ByzantineVariant::Citadel
        } else {
            ByzantineVariant::Plain
        };
        let mut pos = Byzantine::start(board, rules);
        for _ in 0..120 {
            let text = pos.to_text();
            let naive = parse(&text, citadel, rules.facing_pawns);
            let ours: BTreeSet<String> = pos
                .legal_moves()
                .iter()
                .map(|&m| pos.move_to_uci(m))
                .collect();
            // The dynamic path `arbiter moves` takes lists the same moves.
            let variant = if citadel {
                Variant::ByzantineCitadel
            } else {
                Variant::Byzantine
            };
            let mut options = Vec::new();
            if !rules.facing_pawns {
                options.push(("facing_pawns".to_owned(), "off".to_owned()));
            }
            let any = AnyPosition::with_rules(variant, Some(&text), &RuleOptions(options)).unwrap();
            let listed: BTreeSet<String> = any
                .legal_moves()
                .iter()
                .map(|&m| any.move_to_uci(m))
                .collect();
            assert_eq!(listed, ours, "{text}");
            assert_eq!(ours, naive.legal(), "{text}");
            for mv in &ours {
                assert!(pos.parse_move(mv, Notation::Uci, Locale::English).is_ok());
            }
            checked += 1;
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            pos.play_unchecked(moves[(next() % moves.len() as u64) as usize]);
            assert_eq!(
                Byzantine::from_text(&pos.to_text(), board, rules).unwrap(),
                pos
            );
        }
    }
    assert!(checked >= 2000, "{checked}");
}

fn naive_perft(b: &Naive, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let mut total = 0;
    for mv in b.legal() {
        // Moves are "<from><to>"; split before the second ring letter.
        let split = mv[1..].find(|c: char| c.is_ascii_lowercase()).unwrap() + 1;
        let cell = |s: &str| -> Sq {
            let ring = (s.as_bytes()[0] - b'a') as usize;
            (ring, s[1..].parse::<usize>().unwrap() - 1)
        };
        total += naive_perft(&b.apply(cell(&mv[..split]), cell(&mv[split..])), depth - 1);
    }
    total
}

/// The naive generator reproduces the reference perft counts and the deeper regression counts.
#[test]
fn naive_generator_perft() {
    let start = "RP+4p-rrp+4P-R/NP+4p-nnp+4P-N/EP+4p-eep+4P-E/KP+4p-fkp+4P-F w 0 1";
    let b = parse(start, false, true);
    for (depth, nodes) in [(1, 14), (2, 196), (3, 2912), (4, 43267)] {
        assert_eq!(naive_perft(&b, depth), nodes, "depth {depth}");
    }
}
