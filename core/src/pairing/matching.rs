//! Exact maximum-weight matching on a general (not necessarily bipartite) sparse graph.
//!
//! [`max_weight_matching`] returns a matching whose total weight is the largest possible. It is
//! the total weight that is maximised, not the number of matched vertices: a caller that wants
//! the most pairs first (as a pool wave does) adds a large enough constant to every weight.
//!
//! # Algorithm
//!
//! Edmonds' blossom algorithm in its primal-dual form (as surveyed by Galil, *Efficient
//! algorithms for finding maximum matching in graphs*, 1986). Every vertex `v` has a dual `u_v`
//! and every blossom (an odd set of vertices shrunk into one node) a dual `z_B`; the duals stay
//! feasible (`u_a + u_b + Σ z_B ≥ w_ab` over the blossoms holding both ends of each edge,
//! everything non-negative), matched edges and the edges inside blossoms stay *tight* (equality),
//! and the matching only ever grows along tight edges. The search keeps an alternating forest
//! rooted at every unmatched vertex, with *outer* (S) and *inner* (T) nodes. Raising the duals
//! of inner nodes and lowering those of outer nodes by one common amount `δ` makes new edges
//! tight, which lets a tree grow, closes an odd cycle into a new blossom, joins two trees (an
//! augmenting path: the matching grows by one edge) or brings an inner blossom's dual to zero
//! (the blossom is expanded). The search ends when the duals of the unmatched vertices reach
//! zero: the matching and the duals then satisfy complementary slackness, which proves the
//! matching optimal.
//!
//! What differs from the textbook O(n³) formulation, for large sparse graphs:
//!
//! - **Lazy duals.** All trees move with one clock `D` (the sum of the `δ`s so far). A vertex
//!   stores its dual relative to the clock according to its label (outer: `u + D`, inner:
//!   `u − D`, free: `u`), so a dual adjustment costs nothing; only a change of label rewrites
//!   the stored values of the vertices concerned.
//! - **One event queue.** Each event (an edge between an outer and a free node becoming tight,
//!   an edge between two outer nodes becoming tight, an inner blossom's dual reaching zero)
//!   has a fixed clock time; they sit in one binary heap, earliest first, and on equal times
//!   augmentations first (see `Class`). Entries are never removed: an entry is checked against
//!   the current state when it comes out and dropped if it no longer describes an event.
//! - **Few entries.** Rather than one entry per edge, each vertex is *covered* by one entry no
//!   later than its earliest event: a free vertex by its earliest edge to an outer node, an
//!   outer vertex by its earliest edge to the outer nodes labelled before it. When a covering
//!   entry comes out, used or stale, its vertex scans its edges again (the lazy form of the
//!   textbook "best edge" bookkeeping). This keeps the heap near `n` entries instead of `m`.
//! - **The forest survives augmentations.** An augmentation dissolves only the two trees it
//!   joins (their nodes become free, their blossoms stay); every other tree keeps growing. In
//!   the first steps, when every vertex is a one-vertex tree, this is exactly the greedy
//!   matching by decreasing weight, but it stays exact.
//! - **No recursion.** Blossoms can nest as deep as the graph is long: walking a blossom's
//!   vertices and augmenting through nested blossoms use explicit stacks.
//!
//! The graph is kept as adjacency arrays (CSR); memory is O(n + m) and nothing is allocated per
//! event once the scratch buffers have grown. The worst case is that of Galil, Micali and
//! Gabow's O(n·m·log n) (a vertex may change label O(n) times, each change costs its degree
//! plus a heap operation). On the graphs of a pool wave (about 16 edges per vertex) the work
//! is far from that: each vertex is scanned about ten times in all, and a 10,000-vertex wave
//! graph solves in about 50 ms.
//!
//! # Integers only
//!
//! Weights are doubled internally so that the usual halves stay integers: vertex duals start at
//! the largest weight (half of the largest doubled weight), and the edge between two outer
//! nodes always has an even slack. No floating point is used. Weights are limited to
//! [`MAX_WEIGHT`] so that no intermediate value can overflow an `i64`.
//!
//! # Input
//!
//! Edges are `(a, b, weight)` with `a, b < n`. Edges of weight `≤ 0` can never improve a
//! matching and are dropped, as are self-loops (a vertex cannot be matched to itself); of
//! duplicate edges between the same two vertices the heaviest is kept. An endpoint out of range,
//! a weight above [`MAX_WEIGHT`], or a graph larger than [`MAX_VERTICES`] or [`MAX_EDGES`] is an
//! error. The result is deterministic: the same input always gives the same matching, even when
//! several matchings have the optimal weight.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::error::Error;
use std::fmt;

/// The most vertices a graph may have (2³⁰): node numbers, blossoms included, fit in 31 bits.
pub const MAX_VERTICES: usize = 1 << 30;

/// The most distinct edges of positive weight a graph may have (2³⁰ − 1), once self-loops and
/// duplicates are dropped: both directions of every edge are numbered in 31 bits.
pub const MAX_EDGES: usize = (1 << 30) - 1;

/// The largest accepted edge weight (2⁵⁹). Every dual value stays within a small multiple of
/// the largest weight, so this bound keeps all the arithmetic inside an `i64`.
pub const MAX_WEIGHT: i64 = 1 << 59;

/// Why [`max_weight_matching`] rejected its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchingError {
    /// `n` is above [`MAX_VERTICES`].
    TooManyVertices {
        /// The number of vertices asked for.
        n: usize,
    },
    /// An edge names a vertex that is not below `n`.
    EndpointOutOfRange {
        /// The edge's index in the input slice.
        edge: usize,
        /// The offending endpoint.
        endpoint: u32,
        /// The number of vertices.
        n: usize,
    },
    /// An edge is heavier than [`MAX_WEIGHT`].
    WeightTooLarge {
        /// The edge's index in the input slice.
        edge: usize,
        /// Its weight.
        weight: i64,
    },
    /// More than [`MAX_EDGES`] distinct edges of positive weight.
    TooManyEdges {
        /// The number of distinct edges of positive weight.
        count: usize,
    },
}

impl fmt::Display for MatchingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MatchingError::TooManyVertices { n } => {
                write!(f, "n = {n} vertices is above the limit of {MAX_VERTICES}")
            }
            MatchingError::EndpointOutOfRange { edge, endpoint, n } => write!(
                f,
                "edge {edge}: endpoint {endpoint} is not a vertex (n = {n})"
            ),
            MatchingError::WeightTooLarge { edge, weight } => write!(
                f,
                "edge {edge}: weight {weight} is above the limit of {MAX_WEIGHT}"
            ),
            MatchingError::TooManyEdges { count } => write!(
                f,
                "{count} distinct edges of positive weight is above the limit of {MAX_EDGES}"
            ),
        }
    }
}

impl Error for MatchingError {}

/// A maximum-weight matching of the graph on vertices `0..n` with the given weighted edges.
///
/// Returns the mates: `mates[v] == Some(u)` when `v` is matched to `u` (and then
/// `mates[u] == Some(v)`), `None` when `v` is left unmatched. No other matching has a larger
/// total weight. See the [module documentation](self) for how the input is cleaned (weights
/// `≤ 0`, self-loops, duplicates) and for the algorithm.
///
/// # Errors
///
/// [`MatchingError`] when `n` is above [`MAX_VERTICES`], an endpoint is `≥ n`, a weight is above
/// [`MAX_WEIGHT`], or more than [`MAX_EDGES`] distinct edges remain.
pub fn max_weight_matching(
    n: usize,
    edges: &[(u32, u32, i64)],
) -> Result<Vec<Option<u32>>, MatchingError> {
    let graph = Graph::new(n, edges)?;
    if graph.top_weight == 0 {
        return Ok(vec![None; n]);
    }
    let mut solver = Solver::new(&graph);
    solver.run();
    Ok(solver.mates())
}

/// "No vertex / no node".
const NONE: u32 = u32::MAX;

/// The graph as adjacency arrays: the neighbours of `v` are `to[start[v]..start[v + 1]]`.
struct Graph {
    n: usize,
    start: Vec<usize>,
    to: Vec<u32>,
    /// Doubled weights, parallel to `to`.
    weight: Vec<i64>,
    /// The largest (undoubled) weight, 0 when there is no edge.
    top_weight: i64,
}

impl Graph {
    fn new(n: usize, edges: &[(u32, u32, i64)]) -> Result<Graph, MatchingError> {
        if n > MAX_VERTICES {
            return Err(MatchingError::TooManyVertices { n });
        }
        let useful = |&(a, b, weight): &(u32, u32, i64)| a != b && weight > 0;
        // Validate and count both directions of every useful edge.
        let mut offsets = vec![0usize; n + 1];
        for (edge, &(a, b, weight)) in edges.iter().enumerate() {
            for endpoint in [a, b] {
                if endpoint as usize >= n {
                    return Err(MatchingError::EndpointOutOfRange { edge, endpoint, n });
                }
            }
            if weight > MAX_WEIGHT {
                return Err(MatchingError::WeightTooLarge { edge, weight });
            }
            if useful(&(a, b, weight)) {
                offsets[a as usize + 1] += 1;
                offsets[b as usize + 1] += 1;
            }
        }
        for v in 0..n {
            offsets[v + 1] += offsets[v];
        }
        let mut adjacency = vec![(0u32, 0i64); offsets[n]];
        let mut fill = offsets.clone();
        for &(a, b, w) in edges.iter().filter(|e| useful(e)) {
            for (from, other) in [(a, b), (b, a)] {
                adjacency[fill[from as usize]] = (other, w);
                fill[from as usize] += 1;
            }
        }
        // Each vertex's list by neighbour, heaviest first, keeping the first of each neighbour
        // (compacted in place).
        let mut start = Vec::with_capacity(n + 1);
        start.push(0);
        let mut kept = 0;
        for v in 0..n {
            let list = offsets[v]..offsets[v + 1];
            adjacency[list.clone()].sort_unstable_by_key(|&(x, w)| (x, Reverse(w)));
            let mut last = NONE;
            for i in list {
                let (x, w) = adjacency[i];
                if x != last {
                    adjacency[kept] = (x, 2 * w);
                    kept += 1;
                    last = x;
                }
            }
            start.push(kept);
        }
        if kept / 2 > MAX_EDGES {
            return Err(MatchingError::TooManyEdges { count: kept / 2 });
        }
        adjacency.truncate(kept);
        Ok(Graph {
            n,
            start,
            to: adjacency.iter().map(|&(x, _)| x).collect(),
            weight: adjacency.iter().map(|&(_, w)| w).collect(),
            top_weight: adjacency.iter().map(|&(_, w)| w / 2).max().unwrap_or(0),
        })
    }

    fn positions(&self, v: u32) -> std::ops::Range<usize> {
        self.start[v as usize]..self.start[v as usize + 1]
    }
}

/// The label of a top-level node (a vertex or a blossom not inside another blossom).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Label {
    /// In no tree: matched, duals frozen.
    Free,
    /// S: a root or the mate of an inner node; its vertices' duals go down with the clock.
    Outer,
    /// T: reached from an outer node by a tight edge; its vertices' duals go up with the clock.
    Inner,
}

impl Label {
    /// A vertex's dual from its stored value at clock `clock`.
    fn vertex_dual(self, stored: i64, clock: i64) -> i64 {
        match self {
            Label::Free => stored,
            Label::Outer => stored - clock,
            Label::Inner => stored + clock,
        }
    }

    /// The stored value of a vertex dual `dual` at clock `clock`.
    fn vertex_stored(self, dual: i64, clock: i64) -> i64 {
        match self {
            Label::Free => dual,
            Label::Outer => dual + clock,
            Label::Inner => dual - clock,
        }
    }

    /// A top-level blossom's dual from its stored value (it moves twice as fast).
    fn blossom_dual(self, stored: i64, clock: i64) -> i64 {
        match self {
            Label::Free => stored,
            Label::Outer => stored + 2 * clock,
            Label::Inner => stored - 2 * clock,
        }
    }

    /// The stored value of a top-level blossom's dual.
    fn blossom_stored(self, dual: i64, clock: i64) -> i64 {
        match self {
            Label::Free => dual,
            Label::Outer => dual - 2 * clock,
            Label::Inner => dual + 2 * clock,
        }
    }
}

/// Bits of a heap payload holding a node, and (below them) an adjacency position.
const FIELD_BITS: u32 = 31;
const FIELD_MASK: u64 = (1 << FIELD_BITS) - 1;
/// The position field of a blossom event.
const NO_POSITION: u32 = FIELD_MASK as u32;

/// What an event is expected to be when it is queued; among events due at the same clock time
/// the heap takes them in this order. Augmenting first makes the opening steps exactly the
/// greedy matching and keeps trees from regrowing over the nodes an augmentation just freed
/// before the other augmentations due at that time are done (on equal weights this is the
/// difference between O(n log n) and O(n²) steps). The dispatch never trusts the class: it
/// looks at the current labels.
#[derive(Clone, Copy)]
enum Class {
    Augment = 0,
    Blossom = 1,
    Grow = 2,
    Expand = 3,
}

/// What a tight edge does.
#[derive(Clone, Copy)]
enum Tight {
    /// From an outer vertex to a free one: the tree grows.
    Grow { outer: u32, free: u32 },
    /// Between two outer nodes: a blossom (same tree) or an augmenting path.
    Outer,
}

/// A heap entry's payload: `class | node | position`, where `position` is an index into the
/// adjacency arrays (the edge from `node` to `to[position]`), or [`NO_POSITION`] for a blossom
/// event. Ordering entries by payload after key applies the [`Class`] order.
fn payload(class: Class, node: u32, position: u32) -> u64 {
    ((class as u64) << (2 * FIELD_BITS)) | (u64::from(node) << FIELD_BITS) | u64::from(position)
}

/// Counts of the main steps, for tests that check which cases a graph exercises.
#[cfg(test)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Stats {
    augmentations: usize,
    blossoms: usize,
    expansions: usize,
}

/// The search state. Nodes `0..n` are vertices, `n..n + n/2` blossom slots (a blossom has at
/// least three children, so at most `(n − 1)/2` exist at once).
struct Solver<'g> {
    g: &'g Graph,
    n: u32,
    /// Per vertex: its mate or `NONE`.
    mate: Vec<u32>,
    /// Per vertex: the top-level node holding it.
    top: Vec<u32>,
    /// Per node: the blossom directly holding it, `NONE` at top level.
    parent: Vec<u32>,
    /// Per top-level node.
    label: Vec<Label>,
    /// Per labelled top-level node: the tree edge `[x, y]` that labelled it, `x` in its tree
    /// parent and `y` inside it (`[NONE, NONE]` for a root). For an outer node it is the matched
    /// edge to its inner parent's base.
    label_edge: Vec<[u32; 2]>,
    /// Per labelled top-level node: its tree, named by the root vertex.
    tree: Vec<u32>,
    /// Per node: the base vertex (a vertex is its own base).
    base: Vec<u32>,
    /// Per node: the stored dual (see [`Label`]); nested blossoms store their plain dual.
    dual: Vec<i64>,
    /// Per blossom slot: the children in cycle order, the base's child first.
    children: Vec<Vec<u32>>,
    /// Per blossom slot: `cycle[i] = [x, y]` joins `children[i]` (holding `x`) to
    /// `children[i + 1]` (holding `y`), cyclically. The edges at odd `i` are matched.
    cycle: Vec<Vec<[u32; 2]>>,
    unused_blossoms: Vec<u32>,
    /// Per root vertex: the top-level nodes labelled in its tree (possibly stale entries).
    members: Vec<Vec<u32>>,
    spare_lists: Vec<Vec<u32>>,
    heap: BinaryHeap<Reverse<(i64, u64)>>,
    /// Per vertex: the entry that covers its edges (see [`Solver::scan_outer`]); the key is
    /// `i64::MAX` when there is none.
    best: Vec<(i64, u64)>,
    /// The clock `D`: the sum of the dual adjustments so far.
    clock: i64,
    /// The clock value at which the unmatched vertices' duals reach zero.
    end: i64,
    /// Per node: a stamp for the common-ancestor search.
    seen: Vec<u32>,
    stamp: u32,
    // Scratch buffers.
    leaves: Vec<u32>,
    walk: Vec<u32>,
    chain: Vec<u32>,
    tasks: Vec<(u32, u32)>,
    path_a: Vec<u32>,
    path_b: Vec<u32>,
    scan_outer_list: Vec<u32>,
    scan_free_list: Vec<u32>,
    #[cfg(test)]
    stats: Stats,
}

impl<'g> Solver<'g> {
    fn new(g: &'g Graph) -> Solver<'g> {
        let n = g.n;
        let nodes = n + n / 2;
        let start_dual = g.top_weight;
        let mut label = vec![Label::Free; nodes];
        label[..n].fill(Label::Outer);
        let mut dual = vec![0i64; nodes];
        dual[..n].fill(start_dual);
        let mut base = vec![NONE; nodes];
        let mut tree = vec![NONE; nodes];
        for v in 0..n as u32 {
            base[v as usize] = v;
            tree[v as usize] = v;
        }
        // Every vertex starts as a one-vertex tree: each edge is between two outer vertices and
        // becomes tight when the clock reaches (2·start − 2w)/2. Each vertex covers its edges to
        // higher-numbered vertices with one entry, its earliest.
        let mut best = vec![(i64::MAX, 0); n];
        let mut entries = Vec::with_capacity(n);
        for v in 0..n as u32 {
            let earliest = g
                .positions(v)
                .filter(|&p| g.to[p] > v)
                .map(|p| {
                    (
                        start_dual - g.weight[p] / 2,
                        payload(Class::Augment, v, p as u32),
                    )
                })
                .min();
            if let Some(entry) = earliest {
                best[v as usize] = entry;
                entries.push(Reverse(entry));
            }
        }
        Solver {
            g,
            n: n as u32,
            mate: vec![NONE; n],
            top: (0..n as u32).collect(),
            parent: vec![NONE; nodes],
            label,
            label_edge: vec![[NONE, NONE]; nodes],
            tree,
            base,
            dual,
            children: vec![Vec::new(); n / 2],
            cycle: vec![Vec::new(); n / 2],
            unused_blossoms: (n as u32..nodes as u32).rev().collect(),
            members: vec![Vec::new(); n],
            spare_lists: Vec::new(),
            heap: BinaryHeap::from(entries),
            best,
            clock: 0,
            end: start_dual,
            seen: vec![0; nodes],
            stamp: 0,
            leaves: Vec::new(),
            walk: Vec::new(),
            chain: Vec::new(),
            tasks: Vec::new(),
            path_a: Vec::new(),
            path_b: Vec::new(),
            scan_outer_list: Vec::new(),
            scan_free_list: Vec::new(),
            #[cfg(test)]
            stats: Stats::default(),
        }
    }

    fn mates(&self) -> Vec<Option<u32>> {
        self.mate
            .iter()
            .map(|&m| (m != NONE).then_some(m))
            .collect()
    }

    /// The main loop: take events in clock order until the unmatched vertices' duals reach
    /// zero (or nothing is left to happen).
    fn run(&mut self) {
        while let Some(Reverse((key, entry))) = self.heap.pop() {
            if key >= self.end {
                break;
            }
            let node = ((entry >> FIELD_BITS) & FIELD_MASK) as u32;
            let position = (entry & FIELD_MASK) as u32;
            if position == NO_POSITION {
                if self.inner_blossom_event(node) == Some(key) {
                    self.clock = key;
                    self.expand(node);
                }
                continue;
            }
            let other = self.g.to[position as usize];
            if let Some((due, tight)) = self.edge_event(node, position as usize)
                && due == key
            {
                self.clock = key;
                match tight {
                    Tight::Grow { outer, free } => self.grow(outer, free),
                    Tight::Outer if self.same_tree(node, other) => self.make_blossom(node, other),
                    Tight::Outer => self.augment(node, other),
                }
            }
            // Whether the entry was used or stale, an end it covered needs a new cover.
            self.rescan_if_covering(node, (key, entry));
            self.rescan_if_covering(other, (key, entry));
        }
        self.clock = self.end;
    }

    /// The event the edge at adjacency `position` (from `v`) stands for now, and its clock
    /// time: a tree growing over it, or two outer nodes meeting.
    fn edge_event(&self, v: u32, position: usize) -> Option<(i64, Tight)> {
        let x = self.g.to[position];
        let (tv, tx) = (self.top[v as usize] as usize, self.top[x as usize] as usize);
        if tv == tx {
            return None;
        }
        let slack_at_zero = self.dual[v as usize] + self.dual[x as usize] - self.g.weight[position];
        match (self.label[tv], self.label[tx]) {
            (Label::Outer, Label::Outer) => {
                debug_assert!(slack_at_zero % 2 == 0, "odd slack between outer nodes");
                Some((slack_at_zero / 2, Tight::Outer))
            }
            (Label::Outer, Label::Free) => Some((slack_at_zero, Tight::Grow { outer: v, free: x })),
            (Label::Free, Label::Outer) => Some((slack_at_zero, Tight::Grow { outer: x, free: v })),
            _ => None,
        }
    }

    fn same_tree(&self, a: u32, b: u32) -> bool {
        self.tree[self.top[a as usize] as usize] == self.tree[self.top[b as usize] as usize]
    }

    /// If `entry` (just used up or found stale) was `v`'s covering entry, scans `v` again so
    /// that its edges are covered.
    fn rescan_if_covering(&mut self, v: u32, entry: (i64, u64)) {
        if self.best[v as usize] == entry {
            match self.label[self.top[v as usize] as usize] {
                Label::Outer => self.scan_outer(v),
                Label::Free => self.scan_free(v),
                Label::Inner => {}
            }
        }
    }

    /// The clock time at which inner blossom `b`'s dual reaches zero, if `b` is one.
    fn inner_blossom_event(&self, b: u32) -> Option<i64> {
        let i = b as usize;
        (b >= self.n
            && i < self.parent.len()
            && self.parent[i] == NONE
            && self.label[i] == Label::Inner)
            .then(|| self.dual[i] / 2)
    }

    fn push_blossom_event(&mut self, b: u32) {
        if let Some(key) = self.inner_blossom_event(b) {
            self.heap
                .push(Reverse((key, payload(Class::Expand, b, NO_POSITION))));
        }
    }

    /// Outer vertex `v` was just labelled (or its covering entry went): queue its edges.
    ///
    /// Entries are kept few. A free vertex `x` is covered by one entry, `best[x]`, never later
    /// than its earliest edge event: an outer vertex's scan pushes an edge to `x` only when it
    /// comes before `best[x]`. An outer vertex covers the edges to
    /// the outer nodes that were labelled before it (those labelled later cover the edge
    /// themselves) with one entry, its earliest, again recorded in `best`. Keys of edges between
    /// outer nodes never change, and a free vertex's edge keys only fall when a neighbour
    /// becomes outer, so a covering entry is early enough until it comes out of the heap; then,
    /// whether it was used or found stale, its vertex scans again.
    fn scan_outer(&mut self, v: u32) {
        let tv = self.top[v as usize] as usize;
        let dv = self.dual[v as usize];
        let mut own = (i64::MAX, 0);
        for p in self.g.positions(v) {
            let x = self.g.to[p] as usize;
            let tx = self.top[x] as usize;
            if tx == tv {
                continue;
            }
            let slack_at_zero = dv + self.dual[x] - self.g.weight[p];
            match self.label[tx] {
                Label::Outer => {
                    let class = if self.tree[tx] == self.tree[tv] {
                        Class::Blossom
                    } else {
                        Class::Augment
                    };
                    own = own.min((slack_at_zero / 2, payload(class, v, p as u32)));
                }
                Label::Free => {
                    let entry = (slack_at_zero, payload(Class::Grow, v, p as u32));
                    if entry < self.best[x] {
                        self.best[x] = entry;
                        self.heap.push(Reverse(entry));
                    }
                }
                _ => {}
            }
        }
        self.cover(v, own);
    }

    /// Vertex `v` just became free (or its covering entry went): one entry for its earliest
    /// edge to an outer node.
    fn scan_free(&mut self, v: u32) {
        let dv = self.dual[v as usize];
        let mut own = (i64::MAX, 0);
        for p in self.g.positions(v) {
            let x = self.g.to[p] as usize;
            if self.label[self.top[x] as usize] == Label::Outer {
                let key = dv + self.dual[x] - self.g.weight[p];
                own = own.min((key, payload(Class::Grow, v, p as u32)));
            }
        }
        self.cover(v, own);
    }

    /// Makes `entry` (if any) `v`'s covering entry.
    fn cover(&mut self, v: u32, entry: (i64, u64)) {
        debug_assert!(entry.0 >= self.clock, "an event in the past");
        self.best[v as usize] = entry;
        if entry.0 < i64::MAX {
            self.heap.push(Reverse(entry));
        }
    }

    /// Appends the vertices inside node `b` to `leaves`.
    fn collect_leaves(&mut self, b: u32) {
        if b < self.n {
            self.leaves.push(b);
            return;
        }
        self.walk.clear();
        self.walk.push(b);
        while let Some(x) = self.walk.pop() {
            if x < self.n {
                self.leaves.push(x);
            } else {
                self.walk
                    .extend_from_slice(&self.children[(x - self.n) as usize]);
            }
        }
    }

    /// Gives top-level node `b` a new label, rewriting the stored duals of `b` and of its
    /// vertices; leaves those vertices in `leaves`.
    fn relabel(&mut self, b: u32, new: Label) {
        let old = self.label[b as usize];
        let clock = self.clock;
        self.leaves.clear();
        self.collect_leaves(b);
        for &v in &self.leaves {
            let stored = &mut self.dual[v as usize];
            *stored = new.vertex_stored(old.vertex_dual(*stored, clock), clock);
        }
        if b >= self.n {
            let stored = &mut self.dual[b as usize];
            *stored = new.blossom_stored(old.blossom_dual(*stored, clock), clock);
        }
        self.label[b as usize] = new;
    }

    fn push_member(&mut self, root: u32, node: u32) {
        let list = &mut self.members[root as usize];
        if list.capacity() == 0
            && let Some(spare) = self.spare_lists.pop()
        {
            *list = spare;
        }
        list.push(node);
    }

    /// Tight edge from outer vertex `s` to free vertex `f`: `f`'s node becomes inner and its
    /// mate's node outer, in `s`'s tree.
    fn grow(&mut self, s: u32, f: u32) {
        let root = self.tree[self.top[s as usize] as usize];
        let tf = self.top[f as usize];
        self.label_edge[tf as usize] = [s, f];
        self.tree[tf as usize] = root;
        self.relabel(tf, Label::Inner);
        self.push_member(root, tf);
        self.push_blossom_event(tf);
        let bf = self.base[tf as usize];
        let m = self.mate[bf as usize];
        debug_assert!(m != NONE, "a free node is matched");
        if m == NONE {
            return;
        }
        let tm = self.top[m as usize];
        self.label_edge[tm as usize] = [bf, m];
        self.tree[tm as usize] = root;
        self.relabel(tm, Label::Outer);
        self.push_member(root, tm);
        for i in 0..self.leaves.len() {
            let v = self.leaves[i];
            self.scan_outer(v);
        }
    }

    /// Outer tree node `x` goes one outer node up its tree, pushing the two nodes it passes
    /// (itself included) onto `path`; `NONE` past the root.
    fn step_up(&self, x: u32, path: &mut Vec<u32>) -> u32 {
        path.push(x);
        let t = self.label_edge[x as usize][0];
        if t == NONE {
            return NONE;
        }
        let inner = self.top[t as usize];
        path.push(inner);
        self.top[self.label_edge[inner as usize][0] as usize]
    }

    /// The nearest common outer ancestor of outer vertices `a` and `b` (same tree), leaving in
    /// `path_a` and `path_b` the nodes from each up to it (excluded). Both sides climb in turn,
    /// so the cost is proportional to the paths found.
    fn common_ancestor(&mut self, a: u32, b: u32) -> Option<u32> {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.seen.fill(0);
            self.stamp = 1;
        }
        let mut path_a = std::mem::take(&mut self.path_a);
        let mut path_b = std::mem::take(&mut self.path_b);
        path_a.clear();
        path_b.clear();
        let (mut x, mut y) = (self.top[a as usize], self.top[b as usize]);
        let found = loop {
            if x == NONE && y == NONE {
                break None;
            }
            if x != NONE {
                if self.seen[x as usize] == self.stamp {
                    let cut = path_b.iter().position(|&c| c == x).unwrap_or(path_b.len());
                    path_b.truncate(cut);
                    break Some(x);
                }
                self.seen[x as usize] = self.stamp;
                x = self.step_up(x, &mut path_a);
            }
            if y != NONE {
                if self.seen[y as usize] == self.stamp {
                    let cut = path_a.iter().position(|&c| c == y).unwrap_or(path_a.len());
                    path_a.truncate(cut);
                    break Some(y);
                }
                self.seen[y as usize] = self.stamp;
                y = self.step_up(y, &mut path_b);
            }
        };
        self.path_a = path_a;
        self.path_b = path_b;
        found
    }

    /// Tight edge between outer vertices `a` and `b` of the same tree: the cycle through their
    /// common ancestor becomes a new outer blossom.
    fn make_blossom(&mut self, a: u32, b: u32) {
        let Some(lca) = self.common_ancestor(a, b) else {
            return;
        };
        let Some(id) = self.unused_blossoms.pop() else {
            return;
        };
        #[cfg(test)]
        {
            self.stats.blossoms += 1;
        }
        let slot = (id - self.n) as usize;
        let mut kids = std::mem::take(&mut self.children[slot]);
        let mut edges = std::mem::take(&mut self.cycle[slot]);
        kids.clear();
        edges.clear();
        // lca, down a's side to a, across (a, b), up b's side back to lca.
        kids.push(lca);
        for &c in self.path_a.iter().rev() {
            edges.push(self.label_edge[c as usize]);
            kids.push(c);
        }
        edges.push([a, b]);
        for &c in &self.path_b {
            kids.push(c);
            let [x, y] = self.label_edge[c as usize];
            edges.push([y, x]);
        }
        let clock = self.clock;
        let root = self.tree[lca as usize];
        let i = id as usize;
        self.parent[i] = NONE;
        self.base[i] = self.base[lca as usize];
        self.label_edge[i] = self.label_edge[lca as usize];
        self.tree[i] = root;
        self.label[i] = Label::Outer;
        self.dual[i] = Label::Outer.blossom_stored(0, clock);
        self.scan_outer_list.clear();
        for &c in &kids {
            let was = self.label[c as usize];
            self.parent[c as usize] = id;
            if c >= self.n {
                let stored = &mut self.dual[c as usize];
                *stored = was.blossom_dual(*stored, clock);
            }
            self.leaves.clear();
            self.collect_leaves(c);
            for &v in &self.leaves {
                self.top[v as usize] = id;
                if was == Label::Inner {
                    let stored = &mut self.dual[v as usize];
                    *stored =
                        Label::Outer.vertex_stored(Label::Inner.vertex_dual(*stored, clock), clock);
                }
            }
            if was == Label::Inner {
                self.scan_outer_list.extend_from_slice(&self.leaves);
            }
        }
        self.children[slot] = kids;
        self.cycle[slot] = edges;
        self.push_member(root, id);
        for k in 0..self.scan_outer_list.len() {
            let v = self.scan_outer_list[k];
            self.scan_outer(v);
        }
    }

    /// Tight edge between outer vertices `a` and `b` of different trees: augment along the
    /// path root–a–b–root, then dissolve both trees.
    fn augment(&mut self, a: u32, b: u32) {
        #[cfg(test)]
        {
            self.stats.augmentations += 1;
        }
        let roots = [
            self.tree[self.top[a as usize] as usize],
            self.tree[self.top[b as usize] as usize],
        ];
        self.mate[a as usize] = b;
        self.mate[b as usize] = a;
        self.augment_to_root(a);
        self.augment_to_root(b);
        self.dissolve(roots);
    }

    /// Flips the tree path from outer vertex `v` (whose new mate is already set) to its root.
    fn augment_to_root(&mut self, mut v: u32) {
        loop {
            let outer = self.top[v as usize];
            self.rebase(outer, v);
            let t = self.label_edge[outer as usize][0];
            if t == NONE {
                return;
            }
            let inner = self.top[t as usize];
            let [x, y] = self.label_edge[inner as usize];
            self.rebase(inner, y);
            self.mate[x as usize] = y;
            self.mate[y as usize] = x;
            v = x;
        }
    }

    /// Makes vertex `v` the base of node `b`, re-matching inside `b` (and inside its nested
    /// blossoms) so that every other vertex of `b` stays matched within `b`. `v`'s own mate is
    /// the caller's business.
    fn rebase(&mut self, b: u32, v: u32) {
        self.tasks.clear();
        self.tasks.push((b, v));
        while let Some((b, v)) = self.tasks.pop() {
            // The chain of nodes from v up to the child of b holding it.
            self.chain.clear();
            let mut c = v;
            while c != b && c != NONE {
                self.chain.push(c);
                c = self.parent[c as usize];
            }
            if c == NONE {
                continue;
            }
            let mut outer = b;
            while let Some(child) = self.chain.pop() {
                self.rebase_level(outer, child, v);
                outer = child;
            }
        }
    }

    /// One level of [`Solver::rebase`]: in blossom `b`, makes `child` (which holds `v`) the
    /// base child, flipping the matched edges on the even side of the cycle and queueing the
    /// children whose base changes.
    fn rebase_level(&mut self, b: u32, child: u32, v: u32) {
        let slot = (b - self.n) as usize;
        let kids = &mut self.children[slot];
        let edges = &mut self.cycle[slot];
        if let Some(i) = kids.iter().position(|&c| c == child)
            && i > 0
        {
            let k = kids.len();
            // The even-length way from child i round to child 0.
            let (from, to) = if i % 2 == 1 { (i + 1, k) } else { (0, i) };
            for j in (from..to).step_by(2) {
                let [x, y] = edges[j];
                self.mate[x as usize] = y;
                self.mate[y as usize] = x;
                self.tasks.push((kids[j], x));
                self.tasks.push((kids[(j + 1) % k], y));
            }
            kids.rotate_left(i);
            edges.rotate_left(i);
        }
        self.base[b as usize] = v;
    }

    /// After an augmentation: every node of the two trees becomes free (blossoms stay), and
    /// the edges from the remaining outer nodes to them are queued again.
    fn dissolve(&mut self, roots: [u32; 2]) {
        self.scan_free_list.clear();
        for root in roots {
            let mut list = std::mem::take(&mut self.members[root as usize]);
            let first = self.top[root as usize];
            self.free_if_in_tree(first, root);
            for &x in &list {
                self.free_if_in_tree(x, root);
            }
            if list.capacity() > 0 {
                list.clear();
                self.spare_lists.push(list);
            }
        }
        for k in 0..self.scan_free_list.len() {
            let v = self.scan_free_list[k];
            self.scan_free(v);
        }
    }

    fn free_if_in_tree(&mut self, x: u32, root: u32) {
        let i = x as usize;
        if self.parent[i] == NONE && self.label[i] != Label::Free && self.tree[i] == root {
            self.relabel(x, Label::Free);
            self.scan_free_list.extend_from_slice(&self.leaves);
        }
    }

    /// Inner blossom `b`'s dual reached zero: its children become top-level nodes. Those on
    /// the even path from the entry child to the base child keep the tree alternating (inner,
    /// outer, …, inner); the others become free.
    fn expand(&mut self, b: u32) {
        #[cfg(test)]
        {
            self.stats.expansions += 1;
        }
        let slot = (b - self.n) as usize;
        let root = self.tree[b as usize];
        let [s, v] = self.label_edge[b as usize];
        let clock = self.clock;
        let mut kids = std::mem::take(&mut self.children[slot]);
        let mut edges = std::mem::take(&mut self.cycle[slot]);
        for &c in &kids {
            let i = c as usize;
            self.parent[i] = NONE;
            if c >= self.n {
                self.dual[i] = Label::Inner.blossom_stored(self.dual[i], clock);
            }
            self.label[i] = Label::Inner;
            self.leaves.clear();
            self.collect_leaves(c);
            for &x in &self.leaves {
                self.top[x as usize] = c;
            }
        }
        let k = kids.len();
        let entry = self.top[v as usize];
        let j = kids.iter().position(|&c| c == entry).unwrap_or(0);
        self.label_edge[kids[j] as usize] = [s, v];
        if j % 2 == 0 {
            for p in (1..=j).rev() {
                let [x, y] = edges[p - 1];
                self.label_edge[kids[p - 1] as usize] = [y, x];
            }
        } else {
            for p in j..k {
                let [x, y] = edges[p];
                self.label_edge[kids[(p + 1) % k] as usize] = [x, y];
            }
        }
        self.scan_outer_list.clear();
        self.scan_free_list.clear();
        for (p, &c) in kids.iter().enumerate() {
            // Distance from the entry child along the even path, if c is on it.
            let distance = if j % 2 == 0 {
                (p <= j).then(|| j - p)
            } else if p >= j {
                Some(p - j)
            } else {
                (p == 0).then(|| k - j)
            };
            match distance {
                Some(d) => {
                    self.tree[c as usize] = root;
                    self.push_member(root, c);
                    if d % 2 == 0 {
                        self.push_blossom_event(c);
                    } else {
                        self.relabel(c, Label::Outer);
                        self.scan_outer_list.extend_from_slice(&self.leaves);
                    }
                }
                None => {
                    self.relabel(c, Label::Free);
                    self.scan_free_list.extend_from_slice(&self.leaves);
                }
            }
        }
        kids.clear();
        edges.clear();
        self.children[slot] = kids;
        self.cycle[slot] = edges;
        self.label[b as usize] = Label::Free;
        self.tree[b as usize] = NONE;
        self.base[b as usize] = NONE;
        self.unused_blossoms.push(b);
        for k in 0..self.scan_outer_list.len() {
            let x = self.scan_outer_list[k];
            self.scan_outer(x);
        }
        for k in 0..self.scan_free_list.len() {
            let x = self.scan_free_list[k];
            self.scan_free(x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A small seeded generator (SplitMix64), so that the tests need no RNG crate.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        fn range(&mut self, lo: i64, hi: i64) -> i64 {
            lo + self.below((hi - lo + 1) as u64) as i64
        }
    }

    /// What the certificate check saw.
    #[derive(Debug, Default)]
    struct Certified {
        stats: Stats,
        /// The deepest nesting of the blossoms left at the end (0: none).
        depth: usize,
    }

    impl Solver<'_> {
        /// Checks that the final matching and duals satisfy the optimality conditions of the
        /// matching LP with odd-set constraints: duals feasible and non-negative, matched edges
        /// tight, unmatched vertices at dual zero, blossoms with a positive dual full, and the
        /// primal weight equal to the dual objective.
        fn certificate(&self) -> Result<Certified, String> {
            let n = self.n as usize;
            let g = self.g;
            let clock = self.clock;
            let weight_of = |a: usize, b: u32| {
                g.positions(a as u32)
                    .find(|&p| g.to[p] == b)
                    .map(|p| g.weight[p])
            };
            for v in 0..n {
                let m = self.mate[v];
                if m != NONE {
                    if self.mate[m as usize] != v as u32 {
                        return Err(format!("mates of {v} and {m} disagree"));
                    }
                    if weight_of(v, m).is_none() {
                        return Err(format!("{v}–{m} matched but not an edge"));
                    }
                }
            }
            let u: Vec<i128> = (0..n)
                .map(|v| {
                    let label = self.label[self.top[v] as usize];
                    i128::from(label.vertex_dual(self.dual[v], clock))
                })
                .collect();
            let nodes = self.parent.len();
            let in_use = |b: usize| b >= n && !self.children[b - n].is_empty();
            let z = |b: usize| -> i128 {
                if self.parent[b] == NONE {
                    i128::from(self.label[b].blossom_dual(self.dual[b], clock))
                } else {
                    i128::from(self.dual[b])
                }
            };
            for (v, (&uv, &mate)) in u.iter().zip(&self.mate).enumerate() {
                if uv < 0 {
                    return Err(format!("vertex {v}: negative dual {uv}"));
                }
                if mate == NONE && uv != 0 {
                    return Err(format!("unmatched vertex {v} has dual {uv}"));
                }
            }
            // Depths and, per node, the sum of the duals of the blossoms holding it (itself
            // included), top-down from the top-level nodes.
            let mut depth = vec![0usize; nodes];
            let mut above = vec![0i128; nodes];
            let mut order: Vec<usize> = (0..nodes)
                .filter(|&b| (b < n || in_use(b)) && self.parent[b] == NONE)
                .collect();
            let mut next = 0;
            while next < order.len() {
                let b = order[next];
                next += 1;
                if b >= n {
                    if z(b) < 0 {
                        return Err(format!("blossom {b}: negative dual {}", z(b)));
                    }
                    let parent = self.parent[b];
                    above[b] = z(b)
                        + if parent == NONE {
                            0
                        } else {
                            above[parent as usize]
                        };
                    for &c in &self.children[b - n] {
                        depth[c as usize] = depth[b] + 1;
                        order.push(c as usize);
                    }
                }
            }
            // The deepest blossom holding both a and b, if any.
            let meet = |a: usize, b: usize| -> Option<usize> {
                let (mut x, mut y) = (self.parent[a], self.parent[b]);
                let level = |x: u32| if x == NONE { 0 } else { depth[x as usize] + 1 };
                while level(x) > level(y) {
                    x = self.parent[x as usize];
                }
                while level(y) > level(x) {
                    y = self.parent[y as usize];
                }
                while x != y {
                    x = self.parent[x as usize];
                    y = self.parent[y as usize];
                }
                (x != NONE).then_some(x as usize)
            };
            let mut leaves = vec![0i128; nodes];
            let mut matched_inside = vec![0i128; nodes];
            leaves[..n].fill(1);
            let mut primal = 0i128;
            for v in 0..n as u32 {
                for p in g.positions(v) {
                    let x = g.to[p];
                    if x < v {
                        continue;
                    }
                    let holding = meet(v as usize, x as usize);
                    let zsum = holding.map_or(0, |b| above[b]);
                    let slack = u[v as usize] + u[x as usize] + zsum - i128::from(g.weight[p]);
                    if slack < 0 {
                        return Err(format!("edge {v}–{x}: negative slack {slack}"));
                    }
                    if self.mate[v as usize] == x {
                        if slack != 0 {
                            return Err(format!("matched edge {v}–{x}: slack {slack}"));
                        }
                        primal += i128::from(g.weight[p]);
                        if let Some(b) = holding {
                            matched_inside[b] += 1;
                        }
                    }
                }
            }
            // Bottom-up: leaves and matched edges inside each blossom.
            for &b in order.iter().rev() {
                let parent = self.parent[b];
                if parent != NONE {
                    leaves[parent as usize] += leaves[b];
                    matched_inside[parent as usize] += matched_inside[b];
                }
            }
            let mut dual_objective: i128 = u.iter().sum();
            for b in (n..nodes).filter(|&b| in_use(b)) {
                let zb = z(b);
                if zb > 0 && matched_inside[b] != (leaves[b] - 1) / 2 {
                    return Err(format!("blossom {b} with dual {zb} is not full"));
                }
                dual_objective += zb * ((leaves[b] - 1) / 2);
            }
            if primal != dual_objective {
                return Err(format!("primal {primal} ≠ dual {dual_objective}"));
            }
            Ok(Certified {
                stats: self.stats,
                depth: depth[..n].iter().copied().max().unwrap_or(0),
            })
        }
    }

    /// Solves and checks the dual certificate; panics with the reason if it fails.
    fn solve_certified(n: usize, edges: &[(u32, u32, i64)]) -> (Vec<Option<u32>>, Certified) {
        let graph = Graph::new(n, edges).expect("valid graph");
        if graph.top_weight == 0 {
            return (vec![None; n], Certified::default());
        }
        let mut solver = Solver::new(&graph);
        solver.run();
        let certified = solver
            .certificate()
            .unwrap_or_else(|e| panic!("certificate failed: {e}"));
        let mates = solver.mates();
        assert_eq!(mates, max_weight_matching(n, edges).expect("valid graph"));
        (mates, certified)
    }

    /// The heaviest weight of each pair of distinct endpoints, positive weights only.
    fn best_weights(edges: &[(u32, u32, i64)]) -> HashMap<(u32, u32), i64> {
        let mut best = HashMap::new();
        for &(a, b, w) in edges {
            if a != b && w > 0 {
                let e = best.entry((a.min(b), a.max(b))).or_insert(w);
                *e = (*e).max(w);
            }
        }
        best
    }

    /// The weight of a matching, checking that it is one (symmetric, along edges).
    fn weight_of(n: usize, edges: &[(u32, u32, i64)], mates: &[Option<u32>]) -> i64 {
        assert_eq!(mates.len(), n);
        let best = best_weights(edges);
        let mut total = 0;
        for (v, &m) in mates.iter().enumerate() {
            if let Some(m) = m {
                assert_eq!(mates[m as usize], Some(v as u32), "asymmetric mates");
                if (v as u32) < m {
                    total += best.get(&(v as u32, m)).expect("matched along an edge");
                }
            }
        }
        total
    }

    /// The optimum by dynamic programming over vertex subsets (exhaustive over matchings).
    fn brute_force(n: usize, edges: &[(u32, u32, i64)]) -> i64 {
        let mut w = vec![vec![0i64; n]; n];
        for (&(a, b), &x) in &best_weights(edges) {
            w[a as usize][b as usize] = x;
            w[b as usize][a as usize] = x;
        }
        let mut best = vec![0i64; 1 << n];
        for mask in 1usize..1 << n {
            let v = mask.trailing_zeros() as usize;
            let rest = mask & !(1 << v);
            let mut value = best[rest];
            for u in 0..n {
                if rest & (1 << u) != 0 && w[v][u] > 0 {
                    value = value.max(w[v][u] + best[rest & !(1 << u)]);
                }
            }
            best[mask] = value;
        }
        best[(1 << n) - 1]
    }

    fn random_graph(
        rng: &mut Rng,
        n: usize,
        density: u64,
        lo: i64,
        hi: i64,
    ) -> Vec<(u32, u32, i64)> {
        let mut edges = Vec::new();
        for a in 0..n as u32 {
            for b in a + 1..n as u32 {
                if rng.below(100) < density {
                    edges.push((a, b, rng.range(lo, hi)));
                }
            }
        }
        // A few duplicates and self-loops.
        for _ in 0..rng.below(3) {
            if let Some(&(a, b, _)) = edges.get(rng.below(edges.len().max(1) as u64) as usize) {
                edges.push((b, a, rng.range(lo, hi)));
            }
            let v = rng.below(n as u64) as u32;
            edges.push((v, v, rng.range(lo, hi)));
        }
        edges
    }

    #[test]
    fn matches_brute_force_on_small_random_graphs() {
        let mut rng = Rng(7);
        let mut total = Stats::default();
        let mut deepest = 0;
        for round in 0..6000 {
            let n = 1 + rng.below(12) as usize;
            let density = [15, 30, 50, 80, 100][round % 5];
            let (lo, hi) = [(1, 4), (-3, 10), (1, 1000), (0, 2), (50, 60)][(round / 5) % 5];
            let edges = random_graph(&mut rng, n, density, lo, hi);
            let (mates, certified) = solve_certified(n, &edges);
            assert_eq!(
                weight_of(n, &edges, &mates),
                brute_force(n, &edges),
                "n = {n}, edges = {edges:?}"
            );
            total.augmentations += certified.stats.augmentations;
            total.blossoms += certified.stats.blossoms;
            total.expansions += certified.stats.expansions;
            deepest = deepest.max(certified.depth);
        }
        // The suite exercises every step of the algorithm, nested blossoms included.
        assert!(
            total.augmentations > 0 && total.blossoms > 0 && total.expansions > 0,
            "{total:?}"
        );
        assert!(deepest >= 2, "deepest nesting {deepest}");
    }

    #[test]
    fn empty_and_trivial_graphs() {
        assert_eq!(max_weight_matching(0, &[]), Ok(vec![]));
        assert_eq!(max_weight_matching(3, &[]), Ok(vec![None; 3]));
        assert_eq!(max_weight_matching(1, &[(0, 0, 5)]), Ok(vec![None]));
        assert_eq!(
            max_weight_matching(2, &[(0, 1, 0), (1, 0, -4)]),
            Ok(vec![None, None])
        );
        assert_eq!(
            max_weight_matching(2, &[(1, 0, 3)]),
            Ok(vec![Some(1), Some(0)])
        );
        // Duplicates: the heaviest counts.
        let edges = [(0, 1, 2), (1, 2, 3), (1, 0, 5)];
        assert_eq!(
            max_weight_matching(3, &edges),
            Ok(vec![Some(1), Some(0), None])
        );
    }

    #[test]
    fn weight_not_cardinality() {
        // Path 0–1–2–3: the middle edge outweighs both ends together.
        let edges = [(0, 1, 2), (1, 2, 5), (2, 3, 2)];
        let (mates, _) = solve_certified(4, &edges);
        assert_eq!(mates, vec![None, Some(2), Some(1), None]);
        // With lighter middle, both ends win.
        let edges = [(0, 1, 3), (1, 2, 5), (2, 3, 3)];
        let (mates, _) = solve_certified(4, &edges);
        assert_eq!(mates, vec![Some(1), Some(0), Some(3), Some(2)]);
    }

    #[test]
    fn path_is_matched_alternately() {
        let n = 1001;
        let edges: Vec<_> = (0..n as u32 - 1).map(|i| (i, i + 1, 10)).collect();
        let (mates, _) = solve_certified(n, &edges);
        assert_eq!(weight_of(n, &edges, &mates), 500 * 10);
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(
            max_weight_matching(3, &[(0, 1, 1), (2, 3, 1)]),
            Err(MatchingError::EndpointOutOfRange {
                edge: 1,
                endpoint: 3,
                n: 3
            })
        );
        assert_eq!(
            max_weight_matching(3, &[(0, 1, MAX_WEIGHT + 1)]),
            Err(MatchingError::WeightTooLarge {
                edge: 0,
                weight: MAX_WEIGHT + 1
            })
        );
        assert_eq!(
            max_weight_matching(MAX_VERTICES + 1, &[]),
            Err(MatchingError::TooManyVertices {
                n: MAX_VERTICES + 1
            })
        );
        // Even a self-loop or a useless edge must name real vertices.
        assert!(max_weight_matching(2, &[(5, 5, -1)]).is_err());
        let message = MatchingError::EndpointOutOfRange {
            edge: 1,
            endpoint: 3,
            n: 3,
        }
        .to_string();
        assert_eq!(message, "edge 1: endpoint 3 is not a vertex (n = 3)");
    }

    #[test]
    fn largest_weights_do_not_overflow() {
        let mut rng = Rng(11);
        for _ in 0..200 {
            let n = 2 + rng.below(9) as usize;
            let edges: Vec<_> = random_graph(&mut rng, n, 60, 1, 8)
                .into_iter()
                .map(|(a, b, w)| (a, b, MAX_WEIGHT - w))
                .collect();
            let (mates, _) = solve_certified(n, &edges);
            assert_eq!(weight_of(n, &edges, &mates), brute_force(n, &edges));
        }
    }

    #[test]
    fn triangle_blossom_used_for_augmentation() {
        // A triangle 0-1-2 with pendants 3 on 2 and 4 on 0: the triangle shrinks into a blossom,
        // and the augmentation that matches a pendant runs through it.
        let edges = [(0, 1, 8), (1, 2, 8), (0, 2, 8), (2, 3, 5), (0, 4, 5)];
        let (mates, certified) = solve_certified(5, &edges);
        assert_eq!(weight_of(5, &edges, &mates), brute_force(5, &edges));
        assert!(certified.stats.blossoms >= 1, "{:?}", certified.stats);
    }

    #[test]
    fn long_odd_cycle() {
        // One deep blossom of 10,001 vertices: nothing may recurse on it.
        let n = 10_001u32;
        let edges: Vec<_> = (0..n).map(|i| (i, (i + 1) % n, 7)).collect();
        let (mates, certified) = solve_certified(n as usize, &edges);
        assert_eq!(weight_of(n as usize, &edges, &mates), 5000 * 7);
        assert!(certified.stats.blossoms >= 1);
    }

    #[test]
    fn large_random_sparse_graph_is_optimal() {
        let mut rng = Rng(3);
        let n = 10_000u32;
        let mut edges = Vec::new();
        for a in 0..n {
            for _ in 0..8 {
                // Mostly near neighbours, as in a rating-sorted pool, some far.
                let b = if rng.below(4) == 0 {
                    rng.below(u64::from(n)) as u32
                } else {
                    (a + 1 + rng.below(40) as u32) % n
                };
                edges.push((a, b, rng.range(-50, 1000)));
            }
        }
        let (mates, certified) = solve_certified(n as usize, &edges);
        weight_of(n as usize, &edges, &mates);
        assert!(certified.stats.augmentations > 0);
    }

    #[test]
    fn blossom_expanded_in_a_later_stage() {
        // Triangle 1-2-4 with pendants 0 and 3 on 4: the triangle becomes a blossom, the first
        // augmentations go through it, and later it is reached as an inner blossom whose dual
        // falls to zero, so it is expanded.
        let edges = [(0, 4, 5), (1, 2, 6), (1, 4, 6), (2, 4, 6), (3, 4, 4)];
        let (mates, certified) = solve_certified(5, &edges);
        assert_eq!(weight_of(5, &edges, &mates), brute_force(5, &edges));
        assert_eq!(weight_of(5, &edges, &mates), 11);
        assert!(certified.stats.blossoms >= 1 && certified.stats.expansions >= 1);
    }

    /// A ladder: root 0 on the first rung, rungs `a_i–b_i` (heaviest), rails `a_i–a_{i+1}`
    /// and `b_i–b_{i+1}` one lighter. Each rung closes an odd cycle around the blossom of the
    /// rungs before it, so the blossoms nest as deep as the ladder is long. `tail` adds a free
    /// vertex hanging off the last rung, so that an augmentation crosses the whole nest.
    fn ladder(layers: u32, tail: bool) -> (usize, Vec<(u32, u32, i64)>) {
        let w = 1_000_000;
        let (a, b) = (|i: u32| 2 * i - 1, |i: u32| 2 * i);
        let mut edges = vec![(0, a(1), w - 1), (0, b(1), w - 1)];
        for i in 1..=layers {
            edges.push((a(i), b(i), w));
            if i > 1 {
                edges.push((a(i - 1), a(i), w - 1));
                edges.push((b(i - 1), b(i), w - 1));
            }
        }
        let mut n = 2 * layers as usize + 1;
        if tail {
            edges.push((n as u32, b(layers), w - 1));
            n += 1;
        }
        (n, edges)
    }

    #[test]
    fn nested_blossoms() {
        for layers in [1, 2, 3, 4] {
            for tail in [false, true] {
                let (n, edges) = ladder(layers, tail);
                let (mates, certified) = solve_certified(n, &edges);
                assert_eq!(weight_of(n, &edges, &mates), brute_force(n, &edges));
                if !tail {
                    assert_eq!(certified.depth, layers as usize);
                }
            }
        }
    }

    #[test]
    fn deeply_nested_blossoms_need_no_recursion() {
        // 5,000 nested blossoms, then an augmentation through all of them.
        let (n, edges) = ladder(5000, false);
        let (_, certified) = solve_certified(n, &edges);
        assert_eq!(certified.depth, 5000);
        let (n, edges) = ladder(5000, true);
        let (mates, certified) = solve_certified(n, &edges);
        assert!(
            mates.iter().all(Option::is_some),
            "the tail makes the matching perfect"
        );
        assert!(
            certified.stats.augmentations > 5000,
            "{:?}",
            certified.stats
        );
    }
}
