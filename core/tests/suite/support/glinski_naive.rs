//! A deliberately simple Glinski move generator written from the rules alone (`docs/rules.md`),
//! to check the fast one against. It shares no code with `arbiter-core`: a map from axial
//! coordinates to pieces, the rules spelled out as they are worded, legality by playing each
//! move on a copy and scanning every enemy piece for an attack on the king.
//!
//! Independent definitions on purpose: the knight's targets are "the cells at distance 3 not on
//! an orthogonal line" (equivalent to two orthogonal steps and one turned by 60°), and promotion
//! happens where a pawn's next forward cell does not exist (the rules list those cells). Used by
//! `core/tests/suite/glinski_independent.rs` and `cli/tests/cli.rs` (included by path, so neither test
//! crate depends on the other).
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

/// Axial coordinates (q, r).
pub type Coord = (i32, i32);

const FILES: &[u8] = b"abcdefghikl";
const ORTHOGONAL: [Coord; 6] = [(0, 1), (0, -1), (1, 0), (-1, 0), (1, -1), (-1, 1)];
const DIAGONAL: [Coord; 6] = [(1, 1), (-1, -1), (2, -1), (-2, 1), (1, -2), (-1, 2)];
const WHITE_START: [&str; 9] = ["b1", "c2", "d3", "e4", "f5", "g4", "h3", "i2", "k1"];
const BLACK_START: [&str; 9] = ["b7", "c7", "d7", "e7", "f7", "g7", "h7", "i7", "k7"];

pub fn exists((q, r): Coord) -> bool {
    q.abs() <= 5 && r.abs() <= 5 && (q + r).abs() <= 5
}

fn add(a: Coord, b: Coord) -> Coord {
    (a.0 + b.0, a.1 + b.1)
}

pub fn name((q, r): Coord) -> String {
    format!("{}{}", FILES[(q + 5) as usize] as char, r + 6 + q.min(0))
}

pub fn parse_name(s: &str) -> Coord {
    let q = FILES.iter().position(|&f| f == s.as_bytes()[0]).unwrap() as i32 - 5;
    let rank: i32 = s[1..].parse().unwrap();
    let c = (q, rank - 6 - q.min(0));
    assert!(exists(c), "{s}");
    c
}

/// Every cell, in no particular order.
pub fn all_cells() -> Vec<Coord> {
    let mut v = Vec::new();
    for q in -5..=5 {
        for r in -5..=5 {
            if exists((q, r)) {
                v.push((q, r));
            }
        }
    }
    v
}

/// A piece: (white, lower-case role letter).
pub type NPiece = (bool, char);

#[derive(Clone, Debug)]
pub struct Naive {
    pub board: BTreeMap<Coord, NPiece>,
    pub white_to_move: bool,
    pub ep: Option<Coord>,
}

fn forward(white: bool) -> Coord {
    if white { (0, 1) } else { (0, -1) }
}

fn captures(white: bool) -> [Coord; 2] {
    if white {
        [(-1, 1), (1, 0)]
    } else {
        [(1, -1), (-1, 0)]
    }
}

impl Naive {
    /// Reads the position string (all five fields required here).
    pub fn from_text(text: &str) -> Naive {
        let fields: Vec<&str> = text.split(' ').collect();
        let mut board = BTreeMap::new();
        for (i, rank_text) in fields[0].split('/').enumerate() {
            let rank = 11 - i as i32;
            // The rank's cells from file a toward l.
            let cells: Vec<Coord> = (0..11)
                .map(|f| {
                    let q = f - 5;
                    (q, rank - 6 - q.min(0))
                })
                .filter(|&c| exists(c))
                .collect();
            let mut k = 0;
            let mut digits = String::new();
            for ch in rank_text.chars().chain(std::iter::once('/')) {
                if ch.is_ascii_digit() {
                    digits.push(ch);
                    continue;
                }
                if !digits.is_empty() {
                    k += digits.parse::<usize>().unwrap();
                    digits.clear();
                }
                if ch != '/' {
                    board.insert(cells[k], (ch.is_ascii_uppercase(), ch.to_ascii_lowercase()));
                    k += 1;
                }
            }
            assert_eq!(k, cells.len(), "rank {rank} of {text}");
        }
        Naive {
            board,
            white_to_move: fields[1] == "w",
            ep: (fields[2] != "-").then(|| parse_name(fields[2])),
        }
    }

    /// Cells the piece on `from` attacks (for pawns: its two capture cells).
    fn attacks(&self, from: Coord, (white, role): NPiece) -> Vec<Coord> {
        let mut out = Vec::new();
        let slide = |dirs: &[Coord], out: &mut Vec<Coord>| {
            for &d in dirs {
                let mut c = add(from, d);
                while exists(c) {
                    out.push(c);
                    if self.board.contains_key(&c) {
                        break;
                    }
                    c = add(c, d);
                }
            }
        };
        match role {
            'r' => slide(&ORTHOGONAL, &mut out),
            'b' => slide(&DIAGONAL, &mut out),
            'q' => {
                slide(&ORTHOGONAL, &mut out);
                slide(&DIAGONAL, &mut out);
            }
            'k' => {
                for d in ORTHOGONAL.iter().chain(DIAGONAL.iter()) {
                    out.push(add(from, *d));
                }
            }
            'n' => {
                for dq in -3i32..=3 {
                    for dr in -3i32..=3 {
                        let dist = dq.abs().max(dr.abs()).max((dq + dr).abs());
                        let orthogonal_line = dq == 0 || dr == 0 || dq + dr == 0;
                        if dist == 3 && !orthogonal_line {
                            out.push(add(from, (dq, dr)));
                        }
                    }
                }
            }
            'p' => {
                for d in captures(white) {
                    out.push(add(from, d));
                }
            }
            _ => unreachable!(),
        }
        out.retain(|&c| exists(c));
        out
    }

    fn king_attacked(&self, white: bool) -> bool {
        let king = self
            .board
            .iter()
            .find(|(_, p)| **p == (white, 'k'))
            .map(|(c, _)| *c)
            .expect("a king");
        self.board
            .iter()
            .filter(|(_, p)| p.0 != white)
            .any(|(&c, &p)| self.attacks(c, p).contains(&king))
    }

    /// Moves that obey piece movement, as coordinate strings.
    fn pseudo_moves(&self) -> Vec<String> {
        let us = self.white_to_move;
        let mut out = Vec::new();
        for (&from, &(white, role)) in &self.board {
            if white != us {
                continue;
            }
            let mut push = |to: Coord| {
                let promotes = role == 'p' && !exists(add(to, forward(us)));
                if promotes {
                    for p in ['q', 'r', 'b', 'n'] {
                        out.push(format!("{}{}{p}", name(from), name(to)));
                    }
                } else {
                    out.push(format!("{}{}", name(from), name(to)));
                }
            };
            if role == 'p' {
                let one = add(from, forward(us));
                if exists(one) && !self.board.contains_key(&one) {
                    push(one);
                    let starts = if us { WHITE_START } else { BLACK_START };
                    let two = add(one, forward(us));
                    if starts.contains(&name(from).as_str())
                        && exists(two)
                        && !self.board.contains_key(&two)
                    {
                        push(two);
                    }
                }
                for to in self.attacks(from, (white, role)) {
                    let enemy = self.board.get(&to).is_some_and(|p| p.0 != us);
                    if enemy || self.ep == Some(to) {
                        push(to);
                    }
                }
            } else {
                for to in self.attacks(from, (white, role)) {
                    if self.board.get(&to).is_none_or(|p| p.0 != us) {
                        push(to);
                    }
                }
            }
        }
        out
    }

    /// Plays a coordinate move (assumed pseudo-legal).
    pub fn play(&mut self, m: &str) {
        let (from, to, promo) = split(m);
        let piece = self.board.remove(&from).expect("a piece to move");
        let us = self.white_to_move;
        if piece.1 == 'p' && Some(to) == self.ep && !self.board.contains_key(&to) {
            // The pawn that double-stepped past `to` stands one step beyond it.
            self.board.remove(&add(to, forward(!us)));
        }
        self.ep = None;
        if piece.1 == 'p' && (to.1 - from.1).abs() == 2 && to.0 == from.0 {
            self.ep = Some(add(from, forward(us)));
        }
        self.board.insert(to, promo.map_or(piece, |p| (us, p)));
        self.white_to_move = !us;
    }

    /// Every legal move as a coordinate string.
    pub fn legal_moves(&self) -> BTreeSet<String> {
        self.pseudo_moves()
            .into_iter()
            .filter(|m| {
                let mut after = self.clone();
                after.play(m);
                !after.king_attacked(self.white_to_move)
            })
            .collect()
    }

    /// Whether the coordinate move `m` is a pawn's two-cell advance.
    pub fn is_double_step(&self, m: &str) -> bool {
        let (from, to, _) = split(m);
        self.board.get(&from).is_some_and(|p| p.1 == 'p')
            && from.0 == to.0
            && (to.1 - from.1).abs() == 2
    }

    pub fn perft(&self, depth: u32) -> u64 {
        if depth == 0 {
            return 1;
        }
        let moves = self.legal_moves();
        if depth == 1 {
            return moves.len() as u64;
        }
        moves
            .iter()
            .map(|m| {
                let mut next = self.clone();
                next.play(m);
                next.perft(depth - 1)
            })
            .sum()
    }
}

/// Splits `f10f11q` into cells and promotion letter.
fn split(m: &str) -> (Coord, Coord, Option<char>) {
    let b = m.as_bytes();
    let mut i = 1;
    while b[i].is_ascii_digit() {
        i += 1;
    }
    let mut j = i + 1;
    while j < b.len() && b[j].is_ascii_digit() {
        j += 1;
    }
    (
        parse_name(&m[..i]),
        parse_name(&m[i..j]),
        m[j..].chars().next(),
    )
}

/// A small deterministic random generator (xorshift64*), so failures reproduce.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Writes a naive position as the position string (halfmove 0, fullmove 1).
pub fn to_text(n: &Naive) -> String {
    let mut ranks = Vec::new();
    for rank in (1..=11).rev() {
        let mut s = String::new();
        let mut empty = 0;
        for f in 0..11 {
            let q = f - 5;
            let c = (q, rank - 6 - q.min(0));
            if !exists(c) {
                continue;
            }
            match n.board.get(&c) {
                None => empty += 1,
                Some(&(white, role)) => {
                    if empty > 0 {
                        s.push_str(&empty.to_string());
                        empty = 0;
                    }
                    s.push(if white {
                        role.to_ascii_uppercase()
                    } else {
                        role
                    });
                }
            }
        }
        if empty > 0 {
            s.push_str(&empty.to_string());
        }
        ranks.push(s);
    }
    format!(
        "{} {} {} 0 1",
        ranks.join("/"),
        if n.white_to_move { "w" } else { "b" },
        n.ep.map_or("-".to_owned(), name)
    )
}

/// A random position that can occur by the placement rules: both kings, up to 8 more
/// pieces a side, no pawn on its last cell, the side not to move not in check.
pub fn random_position(rng: &mut Rng) -> Naive {
    let cells = all_cells();
    loop {
        let mut n = Naive {
            board: BTreeMap::new(),
            white_to_move: rng.below(2) == 0,
            ep: None,
        };
        for white in [true, false] {
            let extra = rng.below(9);
            let mut placed = vec!['k'];
            for _ in 0..extra {
                // Pawns are the most common piece, as in real games.
                placed.push(['p', 'p', 'p', 'n', 'b', 'r', 'q'][rng.below(7)]);
            }
            for role in placed {
                let c = cells[rng.below(cells.len())];
                let last = !exists(add(c, forward(white)));
                if n.board.contains_key(&c) || (role == 'p' && last) {
                    continue;
                }
                n.board.insert(c, (white, role));
            }
        }
        let kings = n.board.values().filter(|p| p.1 == 'k').count();
        if kings == 2 && !n.king_attacked(!n.white_to_move) {
            return n;
        }
    }
}
