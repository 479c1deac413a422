//! Time controls: stages, increments and delays, their two notations, and the speed category.

use std::fmt;
use std::str::FromStr;

/// At most this many stages in one time control.
pub const MAX_STAGES: usize = 8;
/// The longest time one stage may grant: 10 days.
pub const MAX_STAGE_TIME_MS: u64 = 10 * 24 * 3_600_000;
/// The largest increment or delay: one hour.
pub const MAX_BONUS_MS: u64 = 3_600_000;
/// The largest move count of a stage.
pub const MAX_STAGE_MOVES: u32 = 1_000;
/// The longest time-control text the parsers read.
pub const MAX_TEXT_BYTES: usize = 256;
/// The most days a correspondence control grants per move.
pub const MAX_CORRESPONDENCE_DAYS: u32 = 14;
/// One day in milliseconds.
const DAY_MS: u64 = 86_400_000;

/// What a stage gives a player per move, besides its base time.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Bonus {
    /// Fischer increment: this many milliseconds are added after every move made in time
    /// (`Increment(0)` is sudden death).
    Increment(u64),
    /// Bronstein delay: after the move, the time it used is given back, up to this many ms.
    Bronstein(u64),
    /// Simple (US) delay: the clock waits this many ms before it starts counting down.
    Delay(u64),
}

impl Bonus {
    /// The bonus in milliseconds, whatever its kind.
    pub const fn ms(self) -> u64 {
        match self {
            Bonus::Increment(ms) | Bonus::Bronstein(ms) | Bonus::Delay(ms) => ms,
        }
    }

    /// The simple delay that extends every turn of this stage (0 for the other kinds).
    pub const fn simple_delay_ms(self) -> u64 {
        match self {
            Bonus::Delay(ms) => ms,
            _ => 0,
        }
    }
}

/// One period of a time control.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Stage {
    /// Moves to make in this stage; `None` for the rest of the game (only the last stage).
    /// When the last stage has a move count, it repeats.
    pub moves: Option<u32>,
    /// Time granted when the stage begins, in milliseconds.
    pub time_ms: u64,
    /// Increment or delay per move made in this stage.
    pub bonus: Bonus,
}

/// A whole time control: one or more [`Stage`]s. Every constructor checks the limits, so a
/// `TimeControl` is always playable.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TimeControl {
    stages: Vec<Stage>,
}

/// The speed category of a time control, from its estimated game duration (base + 40 × bonus).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Speed {
    /// Under 3 minutes.
    Bullet,
    /// From 3 up to 10 minutes.
    Blitz,
    /// From 10 up to 60 minutes.
    Rapid,
    /// 60 minutes and more.
    Classical,
    /// Days per move ([`TimeControl::correspondence`]).
    Correspondence,
}

impl Speed {
    /// Every category, fastest first.
    pub const ALL: [Speed; 5] = [
        Speed::Bullet,
        Speed::Blitz,
        Speed::Rapid,
        Speed::Classical,
        Speed::Correspondence,
    ];

    /// The category of an estimated duration in milliseconds (never correspondence, which is a
    /// kind of control, not a duration).
    pub const fn from_estimate_ms(ms: u64) -> Speed {
        if ms < 180_000 {
            Speed::Bullet
        } else if ms < 600_000 {
            Speed::Blitz
        } else if ms < 3_600_000 {
            Speed::Rapid
        } else {
            Speed::Classical
        }
    }

    /// `bullet`, `blitz`, `rapid` or `classical`.
    pub const fn name(self) -> &'static str {
        match self {
            Speed::Bullet => "bullet",
            Speed::Blitz => "blitz",
            Speed::Rapid => "rapid",
            Speed::Classical => "classical",
            Speed::Correspondence => "correspondence",
        }
    }
}

impl fmt::Display for Speed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Speed {
    type Err = TimeControlError;

    fn from_str(s: &str) -> Result<Speed, TimeControlError> {
        Speed::ALL
            .into_iter()
            .find(|sp| sp.name().eq_ignore_ascii_case(s))
            .ok_or(TimeControlError::at(0, ErrorKind::UnknownSpeed))
    }
}

/// Why a time control cannot be read or built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeControlError {
    /// Byte offset in the text where the problem was found (0 when it concerns the whole).
    pub offset: usize,
    /// What is wrong.
    pub kind: ErrorKind,
}

/// The kinds of [`TimeControlError`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The text is empty.
    Empty,
    /// The text is longer than [`MAX_TEXT_BYTES`].
    TooLong,
    /// An unexpected character; `expected` says what could stand there.
    Unexpected {
        /// The character found (`None` at the end of the text).
        found: Option<char>,
        /// What the parser expected.
        expected: &'static str,
    },
    /// A number with more decimals than whole milliseconds allow.
    TooPrecise,
    /// A stage grants more than [`MAX_STAGE_TIME_MS`].
    StageTooLong,
    /// An increment or delay above [`MAX_BONUS_MS`].
    BonusTooLarge,
    /// A move count of 0 or above [`MAX_STAGE_MOVES`].
    BadMoveCount,
    /// More than [`MAX_STAGES`] stages.
    TooManyStages,
    /// A stage other than the last has no move count, so the stages after it are unreachable.
    UnreachableStage,
    /// The first stage grants no time at all (`0+0`).
    NoTime,
    /// A delay given for all stages, but every stage already has its own bonus.
    UnusedDelay,
    /// Not a speed category name.
    UnknownSpeed,
    /// A correspondence control of 0 days or more than [`MAX_CORRESPONDENCE_DAYS`].
    BadDays,
}

impl TimeControlError {
    const fn at(offset: usize, kind: ErrorKind) -> TimeControlError {
        TimeControlError { offset, kind }
    }
}

impl fmt::Display for TimeControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Empty => f.write_str("empty time control"),
            ErrorKind::TooLong => write!(f, "time control longer than {MAX_TEXT_BYTES} bytes"),
            ErrorKind::Unexpected { found, expected } => {
                match found {
                    Some(c) => write!(f, "unexpected {c:?} at byte {}", self.offset)?,
                    None => write!(f, "unexpected end at byte {}", self.offset)?,
                }
                write!(f, ": expected {expected}")
            }
            ErrorKind::TooPrecise => write!(
                f,
                "number at byte {} is finer than a millisecond (at most 3 decimals)",
                self.offset
            ),
            ErrorKind::StageTooLong => write!(
                f,
                "stage at byte {} grants more than {} days",
                self.offset,
                MAX_STAGE_TIME_MS / 86_400_000
            ),
            ErrorKind::BonusTooLarge => write!(
                f,
                "increment or delay at byte {} exceeds {} seconds",
                self.offset,
                MAX_BONUS_MS / 1000
            ),
            ErrorKind::BadMoveCount => write!(
                f,
                "move count at byte {} must be 1 to {MAX_STAGE_MOVES}",
                self.offset
            ),
            ErrorKind::TooManyStages => write!(f, "more than {MAX_STAGES} stages"),
            ErrorKind::UnreachableStage => write!(
                f,
                "stage before byte {} has no move count, so later stages are never reached",
                self.offset
            ),
            ErrorKind::NoTime => f.write_str("the first stage grants no time (0+0)"),
            ErrorKind::UnusedDelay => write!(
                f,
                "delay at byte {} applies to no stage: every stage has its own bonus",
                self.offset
            ),
            ErrorKind::UnknownSpeed => f.write_str(
                "unknown speed category (bullet, blitz, rapid, classical, correspondence)",
            ),
            ErrorKind::BadDays => write!(
                f,
                "a correspondence control grants 1 to {MAX_CORRESPONDENCE_DAYS} days per move"
            ),
        }
    }
}

impl std::error::Error for TimeControlError {}

impl TimeControl {
    /// A single sudden-death stage with a Fischer increment: `base_ms + increment_ms`.
    pub fn fischer(base_ms: u64, increment_ms: u64) -> Result<TimeControl, TimeControlError> {
        TimeControl::new(vec![Stage {
            moves: None,
            time_ms: base_ms,
            bonus: Bonus::Increment(increment_ms),
        }])
    }

    /// A time control from its stages, checked against the limits.
    pub fn new(stages: Vec<Stage>) -> Result<TimeControl, TimeControlError> {
        if stages.is_empty() {
            return Err(TimeControlError::at(0, ErrorKind::Empty));
        }
        if stages.len() > MAX_STAGES {
            return Err(TimeControlError::at(0, ErrorKind::TooManyStages));
        }
        for (i, s) in stages.iter().enumerate() {
            if s.time_ms > MAX_STAGE_TIME_MS {
                return Err(TimeControlError::at(0, ErrorKind::StageTooLong));
            }
            if s.bonus.ms() > MAX_BONUS_MS {
                return Err(TimeControlError::at(0, ErrorKind::BonusTooLarge));
            }
            match s.moves {
                Some(m) if m == 0 || m > MAX_STAGE_MOVES => {
                    return Err(TimeControlError::at(0, ErrorKind::BadMoveCount));
                }
                None if i + 1 < stages.len() => {
                    return Err(TimeControlError::at(0, ErrorKind::UnreachableStage));
                }
                _ => {}
            }
        }
        if stages[0].time_ms == 0 && stages[0].bonus.ms() == 0 {
            return Err(TimeControlError::at(0, ErrorKind::NoTime));
        }
        Ok(TimeControl { stages })
    }

    /// The stages, first to last.
    pub fn stages(&self) -> &[Stage] {
        &self.stages
    }

    /// The time each clock starts with (the first stage's time).
    pub fn initial_ms(&self) -> u64 {
        self.stages[0].time_ms
    }

    /// The estimated duration of one side's game: first stage time + 40 × its bonus (lichess's
    /// estimate, with delays counted like increments).
    pub fn estimate_ms(&self) -> u64 {
        self.stages[0].time_ms + 40 * self.stages[0].bonus.ms()
    }

    /// The speed category (bullet, blitz, rapid, classical, correspondence).
    pub fn speed(&self) -> Speed {
        if self.days_per_move().is_some() {
            return Speed::Correspondence;
        }
        Speed::from_estimate_ms(self.estimate_ms())
    }

    /// Correspondence: `days` (1 to [`MAX_CORRESPONDENCE_DAYS`]) for every move, the clock set
    /// back to the whole allowance after each move (time saved does not carry over). Written
    /// `3 days` (`1 day`), so it cannot be mistaken for the minutes-and-delay form `5d3`.
    ///
    /// The clock plays it as one stage of `days` with a Bronstein delay of `days`: a move gives
    /// back all the time it used, which sets the clock to the allowance again.
    pub fn correspondence(days: u32) -> Result<TimeControl, TimeControlError> {
        if !(1..=MAX_CORRESPONDENCE_DAYS).contains(&days) {
            return Err(TimeControlError::at(0, ErrorKind::BadDays));
        }
        let ms = u64::from(days) * DAY_MS;
        Ok(TimeControl {
            stages: vec![Stage {
                moves: None,
                time_ms: ms,
                bonus: Bonus::Bronstein(ms),
            }],
        })
    }

    /// The days per move of a correspondence control, `None` for every other control.
    pub fn days_per_move(&self) -> Option<u32> {
        match self.stages.as_slice() {
            [
                Stage {
                    moves: None,
                    time_ms,
                    bonus: Bonus::Bronstein(b),
                },
            ] if time_ms == b && time_ms.is_multiple_of(DAY_MS) && *b > MAX_BONUS_MS => {
                u32::try_from(time_ms / DAY_MS).ok()
            }
            _ => None,
        }
    }

    /// The longest a player may take for one move under this control, in ms (for keeping a
    /// match while it waits): a whole correspondence allowance, else the most time any stage
    /// grants (plus its delay).
    pub fn longest_turn_ms(&self) -> u64 {
        self.stages
            .iter()
            .map(|s| s.time_ms + s.bonus.simple_delay_ms())
            .max()
            .unwrap_or(0)
    }

    /// The lag-compensation quota gained per move, in ms (lichess: `min(100, est·2/5 + 15)`
    /// centiseconds, the estimate in whole seconds).
    pub fn quota_gain_ms(&self) -> u64 {
        let est_s = self.estimate_ms() / 1000;
        (est_s * 2 / 5 + 15).min(100) * 10
    }

    /// Reads the usual human notations; see the module documentation of [`crate::clock`].
    /// Correspondence is `N days` (or `1 day`): N days per move.
    pub fn parse(text: &str) -> Result<TimeControl, TimeControlError> {
        if let Some(days) = correspondence_days(text) {
            return TimeControl::correspondence(days?);
        }
        Parser::new(text, false)?.control()
    }

    /// Reads a PGN `TimeControl` tag value: stages `moves/seconds[+inc]` or `seconds[+inc]`
    /// separated by `:` (with Arbiter's `d`/`b` extension for simple and Bronstein delays).
    pub fn from_pgn(text: &str) -> Result<TimeControl, TimeControlError> {
        Parser::new(text, true)?.control()
    }

    /// The PGN `TimeControl` tag value (`180+2`, `40/5400+30:1800+30`). Delays, which PGN does
    /// not define, are written `300d3` (simple) and `300b3` (Bronstein).
    ///
    /// A correspondence control is written as one move per allowance in seconds (`1/259200` for
    /// 3 days), as chess.com writes its daily games.
    pub fn to_pgn(&self) -> String {
        if let Some(days) = self.days_per_move() {
            return format!("1/{}", u64::from(days) * DAY_MS / 1000);
        }
        let mut out = String::new();
        for (i, s) in self.stages.iter().enumerate() {
            if i > 0 {
                out.push(':');
            }
            if let Some(m) = s.moves {
                out.push_str(&format!("{m}/"));
            }
            out.push_str(&seconds_text(s.time_ms));
            push_bonus(&mut out, s.bonus);
        }
        out
    }
}

/// `ms` in units of `unit` ms with up to 3 decimals, if that is exact.
fn ms_text(ms: u64, unit: u64) -> Option<String> {
    let whole = ms / unit;
    let frac = ms % unit;
    if frac == 0 {
        return Some(whole.to_string());
    }
    if !(frac * 1000).is_multiple_of(unit) {
        return None;
    }
    let mut digits = format!("{:03}", frac * 1000 / unit);
    while digits.ends_with('0') {
        digits.pop();
    }
    Some(format!("{whole}.{digits}"))
}

/// Seconds, exact (every millisecond count is a 3-decimal number of seconds).
fn seconds_text(ms: u64) -> String {
    ms_text(ms, 1000).unwrap_or_default()
}

fn push_bonus(out: &mut String, bonus: Bonus) {
    match bonus {
        Bonus::Increment(ms) => {
            out.push('+');
            out.push_str(&seconds_text(ms));
        }
        Bonus::Delay(ms) => {
            out.push('d');
            out.push_str(&seconds_text(ms));
        }
        Bonus::Bronstein(ms) => {
            out.push('b');
            out.push_str(&seconds_text(ms));
        }
    }
}

/// The human form: minutes, `+` seconds of increment, `dN`/`bN` delays, `minutes/moves` for a
/// stage with a move count, stages separated by `, `: `3+2`, `0.5+0`, `90/40+30, 30+30`, `5d3`.
/// The days of a correspondence text (`3 days`, `1 day`, any case, spaces around), if `text`
/// has that form: `Some(Err)` for a number of days out of range.
fn correspondence_days(text: &str) -> Option<Result<u32, TimeControlError>> {
    if text.len() > MAX_TEXT_BYTES {
        return None;
    }
    let t = text.trim().to_ascii_lowercase();
    let number = t
        .strip_suffix("days")
        .or_else(|| t.strip_suffix("day"))?
        .trim_end();
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let bad = TimeControlError::at(0, ErrorKind::BadDays);
    Some(
        number
            .parse::<u32>()
            .map_err(|_| bad.clone())
            .and_then(|d| {
                (1..=MAX_CORRESPONDENCE_DAYS)
                    .contains(&d)
                    .then_some(d)
                    .ok_or(bad)
            }),
    )
}

impl fmt::Display for TimeControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(days) = self.days_per_move() {
            return match days {
                1 => f.write_str("1 day"),
                n => write!(f, "{n} days"),
            };
        }
        let mut out = String::new();
        for (i, s) in self.stages.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            // Minutes in quarters (`0.25`, `1.5`, `3`), else seconds (`10s`, `3s`).
            if s.time_ms.is_multiple_of(15_000) {
                out.push_str(&ms_text(s.time_ms, 60_000).unwrap_or_default());
            } else {
                out.push_str(&seconds_text(s.time_ms));
                out.push('s');
            }
            if let Some(m) = s.moves {
                out.push_str(&format!("/{m}"));
            }
            push_bonus(&mut out, s.bonus);
        }
        f.write_str(&out)
    }
}

impl FromStr for TimeControl {
    type Err = TimeControlError;

    /// [`TimeControl::parse`].
    fn from_str(s: &str) -> Result<TimeControl, TimeControlError> {
        TimeControl::parse(s)
    }
}

/// A bonus as read, before a trailing "all stages" delay fills the stages that have none.
struct ParsedStage {
    stage: Stage,
    bonus_given: bool,
    offset: usize,
}

struct Parser<'a> {
    text: &'a [u8],
    src: &'a str,
    pos: usize,
    pgn: bool,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str, pgn: bool) -> Result<Parser<'a>, TimeControlError> {
        if src.len() > MAX_TEXT_BYTES {
            return Err(TimeControlError::at(0, ErrorKind::TooLong));
        }
        let mut p = Parser {
            text: src.as_bytes(),
            src,
            pos: 0,
            pgn,
        };
        p.skip_spaces();
        if p.pos == p.text.len() {
            return Err(TimeControlError::at(0, ErrorKind::Empty));
        }
        Ok(p)
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn found(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn unexpected(&self, expected: &'static str) -> TimeControlError {
        TimeControlError::at(
            self.pos,
            ErrorKind::Unexpected {
                found: self.found(),
                expected,
            },
        )
    }

    fn skip_spaces(&mut self) {
        while self.peek() == Some(b' ') {
            self.pos += 1;
        }
    }

    fn eat_ci(&mut self, word: &str) -> bool {
        let end = self.pos + word.len();
        if end <= self.text.len() && self.text[self.pos..end].eq_ignore_ascii_case(word.as_bytes())
        {
            self.pos = end;
            true
        } else {
            false
        }
    }

    /// A decimal number scaled to `unit` ms; `Err` on a missing number or sub-ms precision.
    fn number(&mut self, unit: u64, what: &'static str) -> Result<u64, TimeControlError> {
        let start = self.pos;
        let mut whole: u64 = 0;
        let mut digits = 0;
        while let Some(c @ b'0'..=b'9') = self.peek() {
            // Saturate: anything this large fails the stage limits anyway.
            whole = whole.saturating_mul(10).saturating_add(u64::from(c - b'0'));
            self.pos += 1;
            digits += 1;
        }
        if digits == 0 {
            return Err(self.unexpected(what));
        }
        let mut ms = whole.saturating_mul(unit);
        if self.peek() == Some(b'.') {
            self.pos += 1;
            let mut frac_digits = 0u32;
            let mut frac: u64 = 0;
            while let Some(c @ b'0'..=b'9') = self.peek() {
                self.pos += 1;
                frac_digits += 1;
                if frac_digits > 9 {
                    return Err(TimeControlError::at(start, ErrorKind::TooPrecise));
                }
                frac = frac * 10 + u64::from(c - b'0');
            }
            if frac_digits == 0 {
                return Err(self.unexpected("a digit after '.'"));
            }
            let scale = 10u64.pow(frac_digits);
            if !(frac * unit).is_multiple_of(scale) {
                return Err(TimeControlError::at(start, ErrorKind::TooPrecise));
            }
            ms = ms.saturating_add(frac * unit / scale);
        }
        Ok(ms)
    }

    /// An optional unit suffix after a number read in `default` ms units; rescales `value`.
    fn unit(&mut self, value: u64, default: u64, at: usize) -> Result<u64, TimeControlError> {
        let unit = if self.eat_ci("min") || self.eat_ci("m") {
            60_000
        } else if self.eat_ci("s") {
            1000
        } else if self.eat_ci("h") {
            3_600_000
        } else {
            return Ok(value);
        };
        let rest = value % default * unit;
        if !rest.is_multiple_of(default) {
            return Err(TimeControlError::at(at, ErrorKind::TooPrecise));
        }
        Ok((value / default)
            .saturating_mul(unit)
            .saturating_add(rest / default))
    }

    fn bonus_value(&mut self) -> Result<u64, TimeControlError> {
        let at = self.pos;
        let ms = self.number(1000, "seconds of increment or delay")?;
        let ms = if self.pgn {
            ms
        } else {
            self.unit(ms, 1000, at)?
        };
        if ms > MAX_BONUS_MS {
            return Err(TimeControlError::at(at, ErrorKind::BonusTooLarge));
        }
        Ok(ms)
    }

    /// `d3`, `b3`, `+2`, `+d3`, `|2`: the bonus after a stage's time, if any.
    fn bonus(&mut self) -> Result<Option<Bonus>, TimeControlError> {
        let save = self.pos;
        self.skip_spaces();
        let plus = matches!(self.peek(), Some(b'+')) || (!self.pgn && self.peek() == Some(b'|'));
        if plus {
            self.pos += 1;
            self.skip_spaces();
        }
        let kind = match self.peek() {
            Some(b'd' | b'D') => {
                self.pos += 1;
                Some(true)
            }
            Some(b'b' | b'B') => {
                self.pos += 1;
                Some(false)
            }
            _ => None,
        };
        match (plus, kind) {
            (false, None) => {
                self.pos = save;
                Ok(None)
            }
            (true, None) => Ok(Some(Bonus::Increment(self.bonus_value()?))),
            (_, Some(simple)) => {
                let ms = self.bonus_value()?;
                Ok(Some(if simple {
                    Bonus::Delay(ms)
                } else {
                    Bonus::Bronstein(ms)
                }))
            }
        }
    }

    fn stage(&mut self) -> Result<ParsedStage, TimeControlError> {
        let offset = self.pos;
        let (moves, time_ms) = if self.pgn {
            let first = self.number(1000, "seconds or a move count")?;
            if self.peek() == Some(b'/') {
                self.pos += 1;
                let m = first / 1000;
                if first % 1000 != 0 || m == 0 || m > u64::from(MAX_STAGE_MOVES) {
                    return Err(TimeControlError::at(offset, ErrorKind::BadMoveCount));
                }
                let t = self.number(1000, "seconds after the move count")?;
                (Some(m as u32), t)
            } else {
                (None, first)
            }
        } else {
            let sudden = self.eat_ci("sd/") || self.eat_ci("g/");
            let t = self.number(60_000, "minutes")?;
            let t = self.unit(t, 60_000, offset)?;
            let mut moves = None;
            if !sudden && self.peek() == Some(b'/') {
                self.pos += 1;
                let at = self.pos;
                let m = self.number(1, "a move count after '/'")?;
                if m == 0 || m > u64::from(MAX_STAGE_MOVES) {
                    return Err(TimeControlError::at(at, ErrorKind::BadMoveCount));
                }
                moves = Some(m as u32);
            }
            (moves, t)
        };
        if time_ms > MAX_STAGE_TIME_MS {
            return Err(TimeControlError::at(offset, ErrorKind::StageTooLong));
        }
        let bonus = self.bonus()?;
        Ok(ParsedStage {
            stage: Stage {
                moves,
                time_ms,
                bonus: bonus.unwrap_or(Bonus::Increment(0)),
            },
            bonus_given: bonus.is_some(),
            offset,
        })
    }

    fn separator(&mut self) -> Result<bool, TimeControlError> {
        self.skip_spaces();
        match self.peek() {
            None => Ok(false),
            Some(b':') if self.pgn => {
                self.pos += 1;
                self.skip_spaces();
                Ok(true)
            }
            Some(b',' | b';') if !self.pgn => {
                self.pos += 1;
                self.skip_spaces();
                Ok(true)
            }
            _ if self.pgn => Err(self.unexpected("':' between stages, or the end")),
            _ => Err(self.unexpected("',' between stages, or the end")),
        }
    }

    fn control(mut self) -> Result<TimeControl, TimeControlError> {
        let mut stages: Vec<ParsedStage> = Vec::new();
        let mut all_delay: Option<(Bonus, usize)> = None;
        loop {
            // A segment of only a delay (`G/90; d5`) applies to every stage without a bonus.
            if !self.pgn
                && !stages.is_empty()
                && matches!(self.peek(), Some(b'd' | b'D' | b'b' | b'B'))
            {
                let at = self.pos;
                let b = self.bonus()?.ok_or_else(|| self.unexpected("a delay"))?;
                all_delay = Some((b, at));
                self.skip_spaces();
                if self.peek().is_some() {
                    return Err(self.unexpected("the end after a delay for all stages"));
                }
                break;
            }
            if stages.len() == MAX_STAGES {
                return Err(TimeControlError::at(self.pos, ErrorKind::TooManyStages));
            }
            let s = self.stage()?;
            if let Some(prev) = stages.last()
                && prev.stage.moves.is_none()
            {
                return Err(TimeControlError::at(s.offset, ErrorKind::UnreachableStage));
            }
            stages.push(s);
            if !self.separator()? {
                break;
            }
            if self.peek().is_none() {
                return Err(self.unexpected("another stage after the separator"));
            }
        }
        if let Some((bonus, at)) = all_delay {
            let mut used = false;
            for s in stages.iter_mut().filter(|s| !s.bonus_given) {
                s.stage.bonus = bonus;
                used = true;
            }
            if !used {
                return Err(TimeControlError::at(at, ErrorKind::UnusedDelay));
            }
        }
        let first = &stages[0];
        if first.stage.time_ms == 0 && first.stage.bonus.ms() == 0 {
            return Err(TimeControlError::at(first.offset, ErrorKind::NoTime));
        }
        TimeControl::new(stages.into_iter().map(|s| s.stage).collect())
    }
}
