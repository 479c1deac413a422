//! Limits of a search and time management: how long to think on a game clock, read through an
//! injected time source so that tests can drive time.

use crate::score::is_mate;
use arbiter_core::Color;
use std::time::Instant;

/// A monotonic time source in milliseconds. The engine reads it every
/// [`CHECK_EVERY`](crate::search::CHECK_EVERY) nodes and between iterations.
pub trait TimeSource: Send + Sync {
    /// Milliseconds since some fixed instant.
    fn now_ms(&self) -> u64;
}

/// The process's monotonic clock.
#[derive(Debug, Clone, Copy)]
pub struct SystemTime {
    origin: Instant,
}

impl SystemTime {
    /// A clock counting from now.
    pub fn new() -> SystemTime {
        SystemTime {
            origin: Instant::now(),
        }
    }
}

impl Default for SystemTime {
    fn default() -> Self {
        SystemTime::new()
    }
}

impl TimeSource for SystemTime {
    fn now_ms(&self) -> u64 {
        self.origin.elapsed().as_millis() as u64
    }
}

/// The players' clocks, as UCI's `go wtime btime winc binc movestogo` gives them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GameClock {
    /// Time left, white then black, in ms.
    pub time_ms: [u64; 2],
    /// Increment per move, white then black, in ms.
    pub increment_ms: [u64; 2],
    /// Moves until the next time control, if the control has stages.
    pub moves_to_go: Option<u32>,
}

/// When a search stops. Every limit given applies (the first reached ends the search); with
/// none, it runs until stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// The deepest iteration.
    pub depth: Option<u32>,
    /// The most nodes (checked at every node: the count is exact).
    pub nodes: Option<u64>,
    /// Thinking time in ms.
    pub movetime_ms: Option<u64>,
    /// A game clock to manage.
    pub clock: Option<GameClock>,
    /// Search until stopped, whatever else is set (UCI `go infinite`, and pondering).
    pub infinite: bool,
}

impl Limits {
    /// A depth limit.
    pub fn depth(depth: u32) -> Limits {
        Limits {
            depth: Some(depth),
            ..Limits::default()
        }
    }

    /// A node limit.
    pub fn nodes(nodes: u64) -> Limits {
        Limits {
            nodes: Some(nodes),
            ..Limits::default()
        }
    }

    /// A thinking time.
    pub fn movetime(ms: u64) -> Limits {
        Limits {
            movetime_ms: Some(ms),
            ..Limits::default()
        }
    }
}

/// The time a search may use, from its start: it starts no new iteration after `soft_ms` and
/// stops wherever it is at `hard_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// No new iteration after this (on a game clock, after the [`soft_share`] of it).
    pub soft_ms: u64,
    /// Stop at once after this.
    pub hard_ms: u64,
}

/// The time budget of a search for `side` under `limits`, keeping `overhead_ms` per move for
/// communication; `None` when time does not limit it.
///
/// On a clock: the share of the remaining time is a 1/`movestogo` (or 1/25 when no stage ends)
/// plus three quarters of the increment; the hard limit is five times that, but never more
/// than a third of what is left. Both keep the overhead back.
pub fn budget(limits: &Limits, side: Color, overhead_ms: u64) -> Option<Budget> {
    if limits.infinite {
        return None;
    }
    let from_clock = limits.clock.map(|c| {
        let i = side.index();
        let left = c.time_ms[i].saturating_sub(overhead_ms);
        let inc = c.increment_ms[i];
        let moves = u64::from(c.moves_to_go.unwrap_or(25).clamp(1, 50));
        let share = (left / moves).saturating_add(inc / 4 * 3);
        let cap = if moves == 1 { left / 10 * 9 } else { left / 3 };
        let soft = share.min(cap).max(1);
        Budget {
            soft_ms: soft,
            hard_ms: soft.saturating_mul(5).min(cap).max(soft),
        }
    });
    let fixed = limits.movetime_ms.map(|t| {
        let t = t.saturating_sub(overhead_ms).max(1);
        Budget {
            soft_ms: t,
            hard_ms: t,
        }
    });
    match (from_clock, fixed) {
        (Some(a), Some(b)) => Some(Budget {
            soft_ms: a.soft_ms.min(b.soft_ms),
            hard_ms: a.hard_ms.min(b.hard_ms),
        }),
        (a, b) => a.or(b),
    }
}

/// The share of its soft budget after which a search on a game clock starts no new iteration,
/// from how settled the last iterations left the position: the best move has stayed the same
/// for `stable` iterations in a row, its subtree took `best_nodes` (0 to 1) of the last
/// iteration's root nodes (`None` while iterations are too shallow for that to mean much), and
/// the best score fell by `drop` centipawns since the iteration before (a rise counts as none).
///
/// A settled search (the same move for several iterations, most of the nodes spent proving it)
/// stops at under half the soft budget; a new best move, a contested root or a falling score
/// thinks up to the whole of it. The hard limit still ends an iteration under way.
pub fn soft_share(stable: u32, best_nodes: Option<f64>, drop: i32) -> f64 {
    // Each factor is 1 for an "average" iteration; their product scales the neutral share.
    const NEUTRAL: f64 = 0.7;
    const STABILITY: [f64; 6] = [1.4, 1.15, 1.0, 0.9, 0.85, 0.8];
    let stability = STABILITY[(stable as usize).min(STABILITY.len() - 1)];
    let nodes = best_nodes
        .filter(|f| f.is_finite())
        .map_or(1.0, |f| (1.55 - f.clamp(0.0, 1.0)) * 1.2);
    let falling = 1.0 + f64::from(drop.clamp(0, 100)) / 200.0;
    (NEUTRAL * stability * nodes * falling).clamp(0.2, 1.0)
}

/// How settled a search on a game clock is, followed over its finished iterations: how many
/// in a row kept the same best move, and the last best move and score. Each finished iteration
/// reports to [`Settling::share`], which gives the [`soft_share`] to stop at.
#[derive(Debug, Clone, Copy)]
pub struct Settling<M> {
    stable: u32,
    last: Option<(M, i32)>,
}

impl<M> Default for Settling<M> {
    fn default() -> Self {
        Settling {
            stable: 0,
            last: None,
        }
    }
}

impl<M: Copy + PartialEq> Settling<M> {
    /// Records a finished iteration (its best move, the move's score, and the share of the
    /// root's nodes spent under it, `None` while that means little) and returns the share of
    /// the soft budget after which no new iteration starts. A mate score on either side of the
    /// comparison counts as no fall: mate distances are not centipawns.
    pub fn share(&mut self, best: M, score: i32, best_nodes: Option<f64>) -> f64 {
        let (moved, drop) = match self.last {
            Some((mv, last)) if !is_mate(last) && !is_mate(score) => {
                (mv != best, last.saturating_sub(score))
            }
            Some((mv, _)) => (mv != best, 0),
            None => (true, 0),
        };
        self.stable = if moved {
            0
        } else {
            self.stable.saturating_add(1)
        };
        self.last = Some((best, score));
        soft_share(self.stable, best_nodes, drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_budgets_stay_within_the_time_left() {
        let clock = GameClock {
            time_ms: [60_000, 1_000],
            increment_ms: [1_000, 0],
            moves_to_go: None,
        };
        let l = Limits {
            clock: Some(clock),
            ..Limits::default()
        };
        let w = budget(&l, Color::White, 50).unwrap();
        assert_eq!(w.soft_ms, (60_000 - 50) / 25 + 750);
        assert!(w.hard_ms <= (60_000 - 50) / 3 && w.hard_ms >= w.soft_ms);
        let b = budget(&l, Color::Black, 50).unwrap();
        assert!(b.hard_ms <= 950 / 3);
        // Nearly flagged: still a millisecond, never an underflow.
        let l = Limits {
            clock: Some(GameClock {
                time_ms: [10, 10],
                ..clock
            }),
            ..Limits::default()
        };
        assert_eq!(budget(&l, Color::White, 50).unwrap().soft_ms, 1);
        // Absurd clocks do not overflow.
        let huge = Limits {
            clock: Some(GameClock {
                time_ms: [u64::MAX, u64::MAX],
                increment_ms: [u64::MAX, u64::MAX],
                moves_to_go: Some(1),
            }),
            ..Limits::default()
        };
        let b = budget(&huge, Color::White, 0).unwrap();
        assert!(b.hard_ms >= b.soft_ms && b.soft_ms > 0);
    }

    #[test]
    fn settled_searches_stop_sooner_than_contested_ones() {
        let settled = soft_share(6, Some(0.95), 0);
        assert!(settled < 0.5, "{settled}");
        // Each sign of doubt adds time, up to the whole soft budget.
        assert!(soft_share(0, Some(0.95), 0) > settled);
        assert!(soft_share(6, Some(0.3), 0) > settled);
        assert!(soft_share(6, Some(0.95), 60) > settled);
        assert!(soft_share(6, Some(0.95), -60) == settled);
        assert_eq!(soft_share(0, Some(0.0), 500), 1.0);
        // Monotone in each argument, and within bounds for any input.
        for stable in 0..10 {
            assert!(soft_share(stable + 1, None, 0) <= soft_share(stable, None, 0));
        }
        for f in [-1.0, 0.0, 0.5, 1.0, 7.0, f64::NAN] {
            for drop in [i32::MIN, -1, 0, 40, i32::MAX] {
                let s = soft_share(u32::MAX, Some(f), drop);
                assert!((0.2..=1.0).contains(&s), "{f} {drop}: {s}");
            }
        }
    }

    #[test]
    fn settling_follows_the_best_move_and_its_score_across_iterations() {
        let mut s = Settling::<u8>::default();
        // The first iteration has no history: a new best move.
        assert_eq!(s.share(1, 30, None), soft_share(0, None, 0));
        assert_eq!(s.share(1, 35, None), soft_share(1, None, 0));
        assert_eq!(s.share(1, 20, Some(0.9)), soft_share(2, Some(0.9), 15));
        // Another best move starts the count again.
        assert_eq!(s.share(2, 20, Some(0.9)), soft_share(0, Some(0.9), 0));
        for stable in 1..=8 {
            assert_eq!(s.share(2, 20, Some(0.9)), soft_share(stable, Some(0.9), 0));
        }
        // Into or out of a mate score is no centipawn fall.
        let mate = crate::score::MATE - 3;
        assert_eq!(s.share(2, -mate, None), soft_share(9, None, 0));
        assert_eq!(s.share(2, 0, None), soft_share(10, None, 0));
        assert_eq!(s.share(2, mate, None), soft_share(11, None, 0));
    }

    #[test]
    fn movetime_and_infinite() {
        assert_eq!(
            budget(&Limits::movetime(1000), Color::White, 30),
            Some(Budget {
                soft_ms: 970,
                hard_ms: 970
            })
        );
        let l = Limits {
            infinite: true,
            ..Limits::movetime(5)
        };
        assert_eq!(budget(&l, Color::White, 0), None);
        assert_eq!(budget(&Limits::depth(3), Color::White, 0), None);
        let last = Limits {
            clock: Some(GameClock {
                time_ms: [10_000, 10_000],
                increment_ms: [0, 0],
                moves_to_go: Some(1),
            }),
            ..Limits::default()
        };
        assert!(budget(&last, Color::White, 0).unwrap().hard_ms <= 9_000);
    }
}
