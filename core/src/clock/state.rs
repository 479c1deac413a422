//! The clock of one board: a pure state machine over injected millisecond timestamps.

use super::control::{Bonus, TimeControl};
use crate::types::Color;
use std::fmt;

/// The grace never exceeds this, whatever the unused quota: 2 s (`docs/clocks.md`).
pub const MAX_GRACE_MS: u64 = 2_000;
/// Remaining time never exceeds this (adding time saturates here): 100 days.
pub const MAX_REMAINING_MS: u64 = 100 * 86_400_000;

/// One side's clock.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Side {
    /// Time left at the start of this side's current (or next) turn, in ms.
    pub remaining_ms: u64,
    /// Unused lag-compensation quota, in ms.
    pub quota_ms: u64,
    /// Moves this side has made (timed or not).
    pub moves: u32,
    /// The stage this side plays in (index into the control's stages).
    pub stage: u8,
    /// Moves this side has made in its current stage.
    pub stage_moves: u32,
}

/// Where the clock is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Created, not started.
    Idle,
    /// Waiting for each side's first move, which is not timed (lichess's start). `turn` must move
    /// before `since + window_ms`, or the game is aborted (a no-show).
    Opening {
        /// Whose first move is awaited.
        turn: Color,
        /// When the wait began.
        since: u64,
        /// How long a side may take for its first move.
        window_ms: u64,
        /// Whether the other side has already made its first move.
        other_moved: bool,
    },
    /// `turn`'s clock runs since `since`.
    Running {
        /// Whose clock runs.
        turn: Color,
        /// When the turn began (or the time it would have begun, after a pause).
        since: u64,
    },
    /// Paused during `turn`'s turn after `elapsed_ms` of it (in the opening if `opening`).
    Paused {
        /// Whose turn was paused.
        turn: Color,
        /// Time of the turn used before the pause.
        elapsed_ms: u64,
        /// The opening window, if the pause interrupted the opening.
        opening: Option<(u64, bool)>,
    },
    /// `color`'s time ran out at `at`.
    Flagged {
        /// Who flagged.
        color: Color,
        /// The deadline that passed.
        at: u64,
    },
    /// `color` never made a first move: the game is aborted.
    NoShow {
        /// Who did not show.
        color: Color,
        /// The deadline that passed.
        at: u64,
    },
    /// Stopped (the game ended another way) at `at`.
    Stopped {
        /// When.
        at: u64,
    },
}

/// A deadline: when the side to move flags, or is a no-show.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Deadline {
    /// The instant (same time base as the clock's timestamps).
    pub at: u64,
    /// The side that must move before it.
    pub color: Color,
    /// `true` for the first-move deadline (abort), `false` for a flag.
    pub no_show: bool,
}

/// What a clock operation refused. Nothing changes when one is returned.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ClockError {
    /// The clock was never started.
    NotStarted,
    /// The clock is already running (or over).
    AlreadyStarted,
    /// The clock is paused.
    Paused,
    /// The clock is not paused.
    NotPaused,
    /// The clock has stopped, flagged or ended on a no-show.
    Over,
    /// It is the other side's turn.
    NotYourTurn,
    /// The press came at or after the deadline: the mover has flagged (or did not show).
    /// Call [`Clock::expire`] to record it.
    OutOfTime(Deadline),
    /// [`Clock::expire`] was called before the deadline.
    NotDue(Option<Deadline>),
    /// [`Clock::add_time`] would leave the side with more than [`MAX_REMAINING_MS`]: time is
    /// never capped silently.
    TooMuchTime {
        /// What the side has now, in ms.
        remaining_ms: u64,
    },
}

impl fmt::Display for ClockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClockError::NotStarted => f.write_str("the clock has not started"),
            ClockError::AlreadyStarted => f.write_str("the clock has already started"),
            ClockError::Paused => f.write_str("the clock is paused"),
            ClockError::NotPaused => f.write_str("the clock is not paused"),
            ClockError::Over => f.write_str("the clock has stopped"),
            ClockError::NotYourTurn => f.write_str("it is the other side's turn on this clock"),
            ClockError::OutOfTime(d) if d.no_show => {
                write!(f, "{} did not make a first move in time", d.color)
            }
            ClockError::OutOfTime(d) => write!(f, "{}'s time ran out", d.color),
            ClockError::NotDue(_) => f.write_str("no deadline has passed"),
            ClockError::TooMuchTime { remaining_ms } => write!(
                f,
                "a side holds at most {MAX_REMAINING_MS} ms (100 days); it has {remaining_ms}, so \
                 at most {} more can be added",
                MAX_REMAINING_MS.saturating_sub(*remaining_ms)
            ),
        }
    }
}

impl std::error::Error for ClockError {}

/// What a press did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Pressed {
    /// Time of the turn, as measured by the clock.
    pub elapsed_ms: u64,
    /// Lag compensation granted (from the quota, including any grace used).
    pub compensated_ms: u64,
    /// Time taken off the clock.
    pub charged_ms: u64,
    /// Increment or Bronstein credit added.
    pub bonus_ms: u64,
    /// A new stage's time added by this move.
    pub stage_ms: u64,
    /// Whether this press was one of the untimed first moves.
    pub untimed: bool,
}

/// The time-independent part of a press, computed from the state and the reported lag. Applying
/// it at an instant ([`PressPlan::apply`]) is all a store needs to do atomically with its own
/// clock (the Redis store runs exactly this arithmetic in its move script).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct PressPlan {
    /// Start of the mover's turn.
    pub since: u64,
    /// The press is refused at or after `since + limit_ms`.
    pub limit_ms: u64,
    /// Whether the press is timed (not an opening move).
    pub timed: bool,
    /// Mover's remaining time at turn start.
    pub remaining_ms: u64,
    /// Mover's quota before the move.
    pub quota_ms: u64,
    /// Compensation granted for the reported lag: min(lag, quota).
    pub comp_ms: u64,
    /// Simple delay of the mover's stage (0 if none).
    pub delay_ms: u64,
    /// Quota gained per move.
    pub gain_ms: u64,
    /// Quota cap.
    pub cap_ms: u64,
    /// Fischer increment of the mover's stage (0 if none).
    pub increment_ms: u64,
    /// Bronstein delay of the mover's stage (0 if none).
    pub bronstein_ms: u64,
    /// Time of the next stage, when this move completes the mover's stage.
    pub stage_ms: u64,
    /// The opponent's next deadline is this long after the press.
    pub next_limit_ms: u64,
}

/// The result of [`PressPlan::apply`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct PressResult {
    /// Mover's remaining time after the move (bonuses included).
    pub remaining_ms: u64,
    /// Mover's quota after the move.
    pub quota_ms: u64,
    /// Time taken off.
    pub charged_ms: u64,
    /// Compensation granted (including grace used).
    pub compensated_ms: u64,
    /// Increment or Bronstein credit.
    pub bonus_ms: u64,
    /// The opponent's deadline.
    pub next_deadline: u64,
}

impl PressPlan {
    /// The deadline this press must beat.
    pub fn deadline(&self) -> u64 {
        self.since.saturating_add(self.limit_ms)
    }

    /// Applies the plan at `now`: `None` if `now` is at or after the deadline.
    pub fn apply(&self, now: u64) -> Option<PressResult> {
        if now >= self.deadline() {
            return None;
        }
        let elapsed = now.saturating_sub(self.since);
        if !self.timed {
            return Some(PressResult {
                remaining_ms: self.remaining_ms.saturating_add(self.stage_ms),
                quota_ms: self.quota_ms,
                charged_ms: 0,
                compensated_ms: 0,
                bonus_ms: 0,
                next_deadline: now.saturating_add(self.next_limit_ms),
            });
        }
        let mut comp = self.comp_ms;
        let mut charged = elapsed.saturating_sub(comp).saturating_sub(self.delay_ms);
        if charged > self.remaining_ms {
            // In time thanks to the grace: the overrun comes out of the quota.
            comp += charged - self.remaining_ms;
            charged = self.remaining_ms;
        }
        let bonus = self.increment_ms + charged.min(self.bronstein_ms);
        let quota = (self.quota_ms + self.gain_ms)
            .saturating_sub(comp)
            .min(self.cap_ms);
        Some(PressResult {
            remaining_ms: (self.remaining_ms - charged + bonus + self.stage_ms)
                .min(MAX_REMAINING_MS),
            quota_ms: quota,
            charged_ms: charged,
            compensated_ms: comp,
            bonus_ms: bonus,
            next_deadline: now.saturating_add(self.next_limit_ms),
        })
    }
}

/// A snapshot for display: remaining times as of an instant.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// Remaining time of white and black at the instant (the running side's time counted down,
    /// simple delay honoured).
    pub remaining_ms: [u64; 2],
    /// Whose clock runs, if one does.
    pub running: Option<Color>,
    /// The instant of the snapshot.
    pub at: u64,
}

/// The clock of one board: two [`Side`]s, a [`TimeControl`] and a [`Phase`].
///
/// Time is injected: every operation takes `now` in milliseconds on any monotonic time base
/// (the match service uses Unix milliseconds from one authority). Lag compensation is lichess's
/// quota model; one rule decides both "in time" and "flagged": a press at `now` is in time if and
/// only if `now < deadline`, where the deadline is turn start + remaining (+ simple delay) +
/// grace, the grace being `min(quota, 2 s)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clock {
    control: TimeControl,
    sides: [Side; 2],
    phase: Phase,
}

impl Clock {
    /// A clock for `control`, not started; both sides get the first stage's time and a quota
    /// of three times the gain.
    pub fn new(control: TimeControl) -> Clock {
        let side = Side {
            remaining_ms: control.initial_ms(),
            quota_ms: 3 * control.quota_gain_ms(),
            moves: 0,
            stage: 0,
            stage_moves: 0,
        };
        Clock {
            control,
            sides: [side; 2],
            phase: Phase::Idle,
        }
    }

    /// A clock rebuilt from stored parts; `None` if they are inconsistent with `control`.
    pub fn from_parts(control: TimeControl, sides: [Side; 2], phase: Phase) -> Option<Clock> {
        let stages = control.stages().len();
        for s in &sides {
            let stage = *control.stages().get(usize::from(s.stage))?;
            if usize::from(s.stage) >= stages
                || s.remaining_ms > MAX_REMAINING_MS
                || s.quota_ms > 7 * control.quota_gain_ms()
                || stage.moves.is_some_and(|m| s.stage_moves >= m)
            {
                return None;
            }
        }
        Some(Clock {
            control,
            sides,
            phase,
        })
    }

    /// The time control.
    pub fn control(&self) -> &TimeControl {
        &self.control
    }

    /// One side's clock.
    pub fn side(&self, color: Color) -> &Side {
        &self.sides[color.index()]
    }

    /// Both sides, white first.
    pub fn sides(&self) -> &[Side; 2] {
        &self.sides
    }

    /// The phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Whether the clock has ended (flag, no-show or stop).
    pub fn is_over(&self) -> bool {
        matches!(
            self.phase,
            Phase::Flagged { .. } | Phase::NoShow { .. } | Phase::Stopped { .. }
        )
    }

    fn gain(&self) -> u64 {
        self.control.quota_gain_ms()
    }

    fn bonus(&self, color: Color) -> Bonus {
        let s = self.side(color);
        self.control.stages()[usize::from(s.stage)].bonus
    }

    /// How long after its turn starts `color` flags: remaining + simple delay + grace.
    pub fn limit_ms(&self, color: Color) -> u64 {
        let s = self.side(color);
        s.remaining_ms + self.bonus(color).simple_delay_ms() + s.quota_ms.min(MAX_GRACE_MS)
    }

    /// Starts the clock now with `turn` to move, timed from the first move (bughouse, and
    /// standalone clocks).
    pub fn start(&mut self, turn: Color, now: u64) -> Result<(), ClockError> {
        if self.phase != Phase::Idle {
            return Err(ClockError::AlreadyStarted);
        }
        self.phase = Phase::Running { turn, since: now };
        Ok(())
    }

    /// Starts the clock the lichess way: each side's first move is untimed but must come within
    /// `window_ms`; the clock runs once both have moved.
    pub fn start_after_first_moves(
        &mut self,
        turn: Color,
        now: u64,
        window_ms: u64,
    ) -> Result<(), ClockError> {
        if self.phase != Phase::Idle {
            return Err(ClockError::AlreadyStarted);
        }
        self.phase = Phase::Opening {
            turn,
            since: now,
            window_ms,
            other_moved: false,
        };
        Ok(())
    }

    /// The next deadline: the side to move flags (or is a no-show) at it.
    pub fn deadline(&self) -> Option<Deadline> {
        match self.phase {
            Phase::Running { turn, since } => Some(Deadline {
                at: since.saturating_add(self.limit_ms(turn)),
                color: turn,
                no_show: false,
            }),
            Phase::Opening {
                turn,
                since,
                window_ms,
                ..
            } => Some(Deadline {
                at: since.saturating_add(window_ms),
                color: turn,
                no_show: true,
            }),
            _ => None,
        }
    }

    /// The plan of `color`'s press with `lag_ms` of reported lag, for [`PressPlan::apply`].
    pub fn plan_press(&self, color: Color, lag_ms: u64) -> Result<PressPlan, ClockError> {
        let (turn, since, timed, limit, next_limit) = match self.phase {
            Phase::Idle => return Err(ClockError::NotStarted),
            Phase::Paused { .. } => return Err(ClockError::Paused),
            Phase::Flagged { .. } | Phase::NoShow { .. } | Phase::Stopped { .. } => {
                return Err(ClockError::Over);
            }
            Phase::Running { turn, since } => (turn, since, true, self.limit_ms(turn), None),
            Phase::Opening {
                turn,
                since,
                window_ms,
                other_moved,
            } => (
                turn,
                since,
                false,
                window_ms,
                (!other_moved).then_some(window_ms),
            ),
        };
        if turn != color {
            return Err(ClockError::NotYourTurn);
        }
        let side = self.side(color);
        let bonus = self.bonus(color);
        let stage = self.control.stages()[usize::from(side.stage)];
        let completes = stage.moves.is_some_and(|m| side.stage_moves + 1 == m);
        let stage_ms = if completes {
            let next = (usize::from(side.stage) + 1).min(self.control.stages().len() - 1);
            self.control.stages()[next].time_ms
        } else {
            0
        };
        let gain = self.gain();
        Ok(PressPlan {
            since,
            limit_ms: limit,
            timed,
            remaining_ms: side.remaining_ms,
            quota_ms: side.quota_ms,
            comp_ms: if timed { lag_ms.min(side.quota_ms) } else { 0 },
            delay_ms: bonus.simple_delay_ms(),
            gain_ms: gain,
            cap_ms: 7 * gain,
            increment_ms: match bonus {
                Bonus::Increment(ms) => ms,
                _ => 0,
            },
            bronstein_ms: match bonus {
                Bonus::Bronstein(ms) => ms,
                _ => 0,
            },
            stage_ms,
            next_limit_ms: next_limit.unwrap_or_else(|| self.limit_ms(!color)),
        })
    }

    /// `color` presses the clock at `now` after a move, with `lag_ms` of lag reported by the
    /// client. Refused, changing nothing, out of turn or at/after the deadline.
    pub fn press(&mut self, color: Color, now: u64, lag_ms: u64) -> Result<Pressed, ClockError> {
        let plan = self.plan_press(color, lag_ms)?;
        let Some(result) = plan.apply(now) else {
            return Err(ClockError::OutOfTime(
                self.deadline().expect("a pressable clock has a deadline"),
            ));
        };
        Ok(self.commit(color, &plan, &result, now))
    }

    /// `color`'s side after one more move: move counts and stage advanced (the next stage's
    /// time is the plan's `stage_ms`); remaining time and quota unchanged.
    pub fn advanced(&self, color: Color) -> Side {
        let stages = self.control.stages();
        let mut side = *self.side(color);
        side.moves = side.moves.saturating_add(1);
        side.stage_moves += 1;
        if stages[usize::from(side.stage)].moves == Some(side.stage_moves) {
            side.stage = (usize::from(side.stage) + 1).min(stages.len() - 1) as u8;
            side.stage_moves = 0;
        }
        side
    }

    /// Records a press whose plan was applied elsewhere (by a store's script) with `result`.
    pub fn commit(
        &mut self,
        color: Color,
        plan: &PressPlan,
        result: &PressResult,
        now: u64,
    ) -> Pressed {
        let mut side = self.advanced(color);
        side.remaining_ms = result.remaining_ms;
        side.quota_ms = result.quota_ms;
        self.sides[color.index()] = side;
        self.phase = match self.phase {
            Phase::Opening {
                window_ms,
                other_moved: false,
                ..
            } => Phase::Opening {
                turn: !color,
                since: now,
                window_ms,
                other_moved: true,
            },
            _ => Phase::Running {
                turn: !color,
                since: now,
            },
        };
        Pressed {
            elapsed_ms: now.saturating_sub(plan.since),
            compensated_ms: result.compensated_ms,
            charged_ms: result.charged_ms,
            bonus_ms: result.bonus_ms,
            stage_ms: plan.stage_ms,
            untimed: !plan.timed,
        }
    }

    /// Records that the deadline passed: `color` flagged (or did not show). Refused before the
    /// deadline; idempotent callers check [`Clock::is_over`] first.
    pub fn expire(&mut self, now: u64) -> Result<Deadline, ClockError> {
        let deadline = self.deadline();
        match deadline {
            Some(d) if now >= d.at => {
                if d.no_show {
                    self.phase = Phase::NoShow {
                        color: d.color,
                        at: d.at,
                    };
                } else {
                    self.sides[d.color.index()].remaining_ms = 0;
                    self.phase = Phase::Flagged {
                        color: d.color,
                        at: d.at,
                    };
                }
                Ok(d)
            }
            _ if self.is_over() => Err(ClockError::Over),
            _ => Err(ClockError::NotDue(deadline)),
        }
    }

    /// Pauses the clock at `now` (a platform action: adjudication, a disconnect policy).
    pub fn pause(&mut self, now: u64) -> Result<(), ClockError> {
        if let Some(d) = self.deadline()
            && now >= d.at
        {
            return Err(ClockError::OutOfTime(d));
        }
        self.phase = match self.phase {
            Phase::Running { turn, since } => Phase::Paused {
                turn,
                elapsed_ms: now.saturating_sub(since),
                opening: None,
            },
            Phase::Opening {
                turn,
                since,
                window_ms,
                other_moved,
            } => Phase::Paused {
                turn,
                elapsed_ms: now.saturating_sub(since),
                opening: Some((window_ms, other_moved)),
            },
            Phase::Idle => return Err(ClockError::NotStarted),
            Phase::Paused { .. } => return Err(ClockError::Paused),
            _ => return Err(ClockError::Over),
        };
        Ok(())
    }

    /// Resumes a paused clock at `now`: the turn continues with the time it had left.
    pub fn resume(&mut self, now: u64) -> Result<(), ClockError> {
        let Phase::Paused {
            turn,
            elapsed_ms,
            opening,
        } = self.phase
        else {
            return Err(if self.is_over() {
                ClockError::Over
            } else {
                ClockError::NotPaused
            });
        };
        let since = now.saturating_sub(elapsed_ms);
        self.phase = match opening {
            Some((window_ms, other_moved)) => Phase::Opening {
                turn,
                since,
                window_ms,
                other_moved,
            },
            None => Phase::Running { turn, since },
        };
        Ok(())
    }

    /// Gives `color` `ms` more time (a platform action). Refused once the clock is over, for
    /// the side to move once its deadline has passed, and when the side would hold more than
    /// [`MAX_REMAINING_MS`] ([`ClockError::TooMuchTime`]; nothing is added).
    pub fn add_time(&mut self, color: Color, ms: u64, now: u64) -> Result<(), ClockError> {
        if self.is_over() {
            return Err(ClockError::Over);
        }
        if let Some(d) = self.deadline()
            && now >= d.at
        {
            return Err(ClockError::OutOfTime(d));
        }
        let side = &mut self.sides[color.index()];
        match side.remaining_ms.checked_add(ms) {
            Some(total) if total <= MAX_REMAINING_MS => {
                side.remaining_ms = total;
                Ok(())
            }
            _ => Err(ClockError::TooMuchTime {
                remaining_ms: side.remaining_ms,
            }),
        }
    }

    /// Stops the clock at `now` because the game ended another way; the running side is charged
    /// the time of its turn so far (without compensation).
    pub fn stop(&mut self, now: u64) -> Result<(), ClockError> {
        if self.is_over() {
            return Err(ClockError::Over);
        }
        if let Phase::Running { turn, since } = self.phase {
            let used = now
                .saturating_sub(since)
                .saturating_sub(self.bonus(turn).simple_delay_ms());
            let side = &mut self.sides[turn.index()];
            side.remaining_ms = side.remaining_ms.saturating_sub(used);
        }
        self.phase = Phase::Stopped { at: now };
        Ok(())
    }

    /// A takeback at `now`: the moves of `undone` (one or two, the latest first) are taken
    /// back, and `to_move`'s turn begins now. The running turn is charged its time so far (as
    /// [`Clock::stop`] would), times already used stay used, and the move counts go back. With
    /// `opening_window_ms` (a game whose first moves are untimed) and fewer than two plies left,
    /// the first moves are untimed again, each within the window. Refused paused, not started,
    /// over, or at or after the running side's deadline (the game is then lost on time).
    ///
    /// Meant for a single stage without a move count: a stage already completed is not given
    /// back.
    pub fn take_back(
        &mut self,
        undone: &[Color],
        to_move: Color,
        plies_after: u32,
        opening_window_ms: Option<u64>,
        now: u64,
    ) -> Result<(), ClockError> {
        match self.phase {
            Phase::Idle => return Err(ClockError::NotStarted),
            Phase::Paused { .. } => return Err(ClockError::Paused),
            _ if self.is_over() => return Err(ClockError::Over),
            _ => {}
        }
        if let Some(d) = self.deadline()
            && now >= d.at
        {
            return Err(ClockError::OutOfTime(d));
        }
        if let Phase::Running { turn, since } = self.phase {
            let used = now
                .saturating_sub(since)
                .saturating_sub(self.bonus(turn).simple_delay_ms());
            let side = &mut self.sides[turn.index()];
            side.remaining_ms = side.remaining_ms.saturating_sub(used);
        }
        for &c in undone {
            let side = &mut self.sides[c.index()];
            side.moves = side.moves.saturating_sub(1);
            side.stage_moves = side.stage_moves.saturating_sub(1);
        }
        self.phase = match opening_window_ms {
            Some(window_ms) if plies_after < 2 => Phase::Opening {
                turn: to_move,
                since: now,
                window_ms,
                other_moved: plies_after == 1,
            },
            _ => Phase::Running {
                turn: to_move,
                since: now,
            },
        };
        Ok(())
    }

    /// Remaining times as of `now`, for display.
    pub fn snapshot(&self, now: u64) -> Snapshot {
        let mut remaining = [self.sides[0].remaining_ms, self.sides[1].remaining_ms];
        let running = match self.phase {
            Phase::Running { turn, since } => {
                let used = now
                    .saturating_sub(since)
                    .saturating_sub(self.bonus(turn).simple_delay_ms());
                remaining[turn.index()] = remaining[turn.index()].saturating_sub(used);
                Some(turn)
            }
            _ => None,
        };
        Snapshot {
            remaining_ms: remaining,
            running,
            at: now,
        }
    }
}
