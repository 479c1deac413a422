use super::*;
use crate::types::Color::{Black, White};
use proptest::prelude::*;

fn tc(text: &str) -> TimeControl {
    TimeControl::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn running(text: &str) -> Clock {
    let mut c = Clock::new(tc(text));
    c.start(White, 0).unwrap();
    c
}

/// lichess `ClockTest`: white answers at once; black waits `lag` and reports it. Returns black's
/// remaining time in centiseconds.
fn lichess_steps(control: &str, lags_cs: &[u64]) -> u64 {
    let mut c = running(control);
    let mut now = 0;
    for &lag in lags_cs {
        c.press(White, now, 0).unwrap();
        now += lag * 10;
        c.press(Black, now, lag * 10).unwrap();
    }
    c.side(Black).remaining_ms / 10
}

#[test]
fn lichess_vectors() {
    assert_eq!(lichess_steps("1+0", &[0, 300]), 5856);
    assert_eq!(lichess_steps("1+0", &[0, 0, 0, 0, 700]), 5573);
    assert_eq!(
        lichess_steps("10+0", &[0, 0, 0, 0, 0, 500, 500, 500]),
        59_400
    );
    // A stall of 6,190 cs on 60+0 flags even with the grace (quota 117 cs); 6,100 does not.
    let mut c = running("1+0");
    assert_eq!(c.deadline().unwrap().at, 61_170);
    assert!(c.clone().press(White, 61_000, 0).is_ok());
    assert!(matches!(
        c.clone().press(White, 61_900, 0),
        Err(ClockError::OutOfTime(_))
    ));
    let d = c.expire(61_900).unwrap();
    assert_eq!((d.color, d.at, d.no_show), (White, 61_170, false));
    assert_eq!(
        c.phase(),
        Phase::Flagged {
            color: White,
            at: 61_170
        }
    );
}

#[test]
fn quota_gain_follows_lichess() {
    assert_eq!(tc("1+0").quota_gain_ms(), 390);
    assert_eq!(tc("3+0").quota_gain_ms(), 870);
    assert_eq!(tc("5+0").quota_gain_ms(), 1000);
    assert_eq!(tc("90/40+30, 30+30").quota_gain_ms(), 1000);
    let c = Clock::new(tc("1+0"));
    assert_eq!(c.side(White).quota_ms, 1170);
}

#[test]
fn compensation_is_capped_by_the_quota_and_refills() {
    let mut c = running("1+0");
    // Reported lag larger than the quota: only the quota is granted.
    let p = c.press(White, 5_000, 4_000).unwrap();
    assert_eq!((p.compensated_ms, p.charged_ms), (1_170, 3_830));
    assert_eq!(c.side(White).quota_ms, 390);
    c.press(Black, 6_000, 0).unwrap();
    let p = c.press(White, 7_000, 0).unwrap();
    assert_eq!(p.charged_ms, 1_000);
    assert_eq!(c.side(White).quota_ms, 780);
}

#[test]
fn fischer_increment_after_each_move_in_time() {
    let mut c = running("3+2");
    let p = c.press(White, 10_000, 0).unwrap();
    assert_eq!((p.charged_ms, p.bonus_ms), (10_000, 2_000));
    assert_eq!(c.side(White).remaining_ms, 172_000);
    assert_eq!(
        c.phase(),
        Phase::Running {
            turn: Black,
            since: 10_000
        }
    );
}

#[test]
fn bronstein_gives_back_the_time_used_up_to_the_delay() {
    let mut c = running("5b3");
    assert_eq!(c.control().stages()[0].bonus, Bonus::Bronstein(3_000));
    // The deadline is not extended by a Bronstein delay.
    assert_eq!(c.deadline().unwrap().at, 300_000 + 2_000);
    c.press(White, 2_000, 0).unwrap();
    assert_eq!(c.side(White).remaining_ms, 300_000);
    c.press(Black, 2_000, 0).unwrap();
    let p = c.press(White, 7_000, 0).unwrap();
    assert_eq!((p.charged_ms, p.bonus_ms), (5_000, 3_000));
    assert_eq!(c.side(White).remaining_ms, 298_000);
}

#[test]
fn simple_delay_waits_before_counting_and_extends_the_deadline() {
    let mut c = running("G/5;d3");
    assert_eq!(c.control().stages()[0].bonus, Bonus::Delay(3_000));
    assert_eq!(c.deadline().unwrap().at, 300_000 + 3_000 + 2_000);
    assert_eq!(c.snapshot(2_000).remaining_ms[0], 300_000);
    assert_eq!(c.snapshot(4_000).remaining_ms[0], 299_000);
    let p = c.press(White, 2_000, 0).unwrap();
    assert_eq!((p.charged_ms, p.bonus_ms), (0, 0));
    c.press(Black, 3_000, 0).unwrap();
    let p = c.press(White, 8_000, 0).unwrap();
    assert_eq!(p.charged_ms, 2_000);
    assert_eq!(c.side(White).remaining_ms, 298_000);
}

#[test]
fn stages_add_their_time_when_the_move_count_is_reached() {
    let mut c = Clock::new(TimeControl::from_pgn("2/60+1:30+1").unwrap());
    c.start(White, 0).unwrap();
    let mut now = 0;
    for ply in 0..4 {
        now += 1_000;
        let color = if ply % 2 == 0 { White } else { Black };
        let p = c.press(color, now, 0).unwrap();
        assert_eq!(p.stage_ms, if ply >= 2 { 30_000 } else { 0 });
    }
    // Each side: 60 s − 2 × 1 s + 2 × 1 s increment + 30 s of the second stage.
    assert_eq!(c.side(White).remaining_ms, 90_000);
    assert_eq!((c.side(White).stage, c.side(White).stage_moves), (1, 0));
    // The last stage has no move count: nothing more is ever added.
    for ply in 0..10 {
        now += 1_000;
        let color = if ply % 2 == 0 { White } else { Black };
        assert_eq!(c.press(color, now, 0).unwrap().stage_ms, 0);
    }
}

#[test]
fn a_last_stage_with_a_move_count_repeats() {
    let mut c = Clock::new(TimeControl::from_pgn("2/60").unwrap());
    c.start(White, 0).unwrap();
    let mut added = Vec::new();
    for ply in 0..8u64 {
        let color = if ply % 2 == 0 { White } else { Black };
        added.push(c.press(color, ply * 100 + 100, 0).unwrap().stage_ms);
    }
    assert_eq!(added, [0, 0, 60_000, 60_000, 0, 0, 60_000, 60_000]);
}

#[test]
fn grace_admits_a_move_and_takes_the_overrun_from_the_quota() {
    let mut c = running("1+0");
    let p = c.press(White, 60_500, 0).unwrap();
    assert_eq!((p.charged_ms, p.compensated_ms), (60_000, 500));
    assert_eq!(c.side(White).remaining_ms, 0);
    assert_eq!(c.side(White).quota_ms, 1_170 + 390 - 500);
}

#[test]
fn grace_is_capped_at_two_seconds() {
    let mut c = running("10+0");
    for ply in 0..10u64 {
        let color = if ply % 2 == 0 { White } else { Black };
        c.press(color, ply, 0).unwrap();
    }
    assert_eq!(c.side(White).quota_ms, 7_000);
    let since = 9;
    let remaining = c.side(White).remaining_ms;
    assert_eq!(c.deadline().unwrap().at, since + remaining + 2_000);
}

#[test]
fn a_press_racing_its_deadline_in_both_orders() {
    // The press first, one millisecond before the deadline: accepted, and the flag cannot fall.
    let mut c = running("1+0");
    let d = c.deadline().unwrap().at;
    c.press(White, d - 1, 0).unwrap();
    assert!(matches!(c.expire(d), Err(ClockError::NotDue(Some(next))) if next.color == Black));
    // The flag first, at the deadline: the late press is refused and changes nothing more.
    let mut c = running("1+0");
    let before = c.clone();
    assert!(matches!(c.press(White, d, 0), Err(ClockError::OutOfTime(x)) if x.at == d));
    assert_eq!(c, before);
    c.expire(d).unwrap();
    assert_eq!(c.press(White, d, 0), Err(ClockError::Over));
    assert_eq!(c.expire(d + 5), Err(ClockError::Over));
}

#[test]
fn lag_changes_the_charge_never_the_deadline() {
    let c = running("1+0");
    let d = c.deadline().unwrap().at;
    for lag in [0, 500, 5_000, u64::MAX] {
        let plan = c.plan_press(White, lag).unwrap();
        assert_eq!(plan.deadline(), d);
        assert!(plan.apply(d).is_none());
        assert!(plan.apply(d - 1).is_some());
    }
}

#[test]
fn first_moves_are_untimed_and_a_no_show_is_reported() {
    let mut c = Clock::new(tc("3+2"));
    c.start_after_first_moves(White, 1_000, 30_000).unwrap();
    assert_eq!(
        c.deadline(),
        Some(Deadline {
            at: 31_000,
            color: White,
            no_show: true
        })
    );
    let p = c.press(White, 20_000, 0).unwrap();
    assert!(p.untimed);
    assert_eq!(c.side(White).remaining_ms, 180_000);
    assert_eq!(c.deadline().unwrap().at, 50_000);
    c.press(Black, 45_000, 0).unwrap();
    assert_eq!(c.side(Black).remaining_ms, 180_000);
    assert_eq!(
        c.phase(),
        Phase::Running {
            turn: White,
            since: 45_000
        }
    );
    // A no-show: black never answers.
    let mut c = Clock::new(tc("3+2"));
    c.start_after_first_moves(White, 0, 30_000).unwrap();
    c.press(White, 1_000, 0).unwrap();
    assert!(matches!(c.expire(30_999), Err(ClockError::NotDue(_))));
    let d = c.expire(31_000).unwrap();
    assert!(d.no_show && d.color == Black);
    assert_eq!(
        c.phase(),
        Phase::NoShow {
            color: Black,
            at: 31_000
        }
    );
}

#[test]
fn pause_keeps_the_turn_time_and_resume_continues_it() {
    let mut c = running("1+0");
    c.pause(10_000).unwrap();
    assert_eq!(c.deadline(), None);
    assert_eq!(c.press(White, 20_000, 0), Err(ClockError::Paused));
    assert_eq!(c.pause(20_000), Err(ClockError::Paused));
    c.resume(500_000).unwrap();
    assert_eq!(c.deadline().unwrap().at, 490_000 + 61_170);
    assert_eq!(c.snapshot(500_000).remaining_ms[0], 50_000);
    assert_eq!(c.resume(500_001), Err(ClockError::NotPaused));
}

#[test]
fn add_time_moves_the_deadline_and_is_refused_when_over() {
    let mut c = running("1+0");
    c.add_time(White, 15_000, 1_000).unwrap();
    assert_eq!(c.deadline().unwrap().at, 76_170);
    // Past the maximum: refused, nothing added (never capped).
    let black = c.side(Black).remaining_ms;
    assert_eq!(
        c.add_time(Black, u64::MAX, 1_000),
        Err(ClockError::TooMuchTime {
            remaining_ms: black
        })
    );
    assert_eq!(
        c.add_time(Black, MAX_REMAINING_MS - black + 1, 1_000),
        Err(ClockError::TooMuchTime {
            remaining_ms: black
        })
    );
    assert_eq!(c.side(Black).remaining_ms, black);
    // Up to the maximum exactly: added.
    c.add_time(Black, MAX_REMAINING_MS - black, 1_000).unwrap();
    assert_eq!(c.side(Black).remaining_ms, MAX_REMAINING_MS);
    assert!(matches!(
        c.add_time(White, 1, 76_170),
        Err(ClockError::OutOfTime(_))
    ));
    c.stop(2_000).unwrap();
    assert_eq!(c.add_time(White, 1, 2_000), Err(ClockError::Over));
}

#[test]
fn stop_charges_the_running_turn() {
    let mut c = running("1+0");
    c.stop(12_000).unwrap();
    assert_eq!(c.side(White).remaining_ms, 48_000);
    assert_eq!(c.phase(), Phase::Stopped { at: 12_000 });
    assert_eq!(c.deadline(), None);
    assert_eq!(c.stop(13_000), Err(ClockError::Over));
}

#[test]
fn out_of_turn_and_unstarted_presses_are_refused() {
    let mut c = Clock::new(tc("3+2"));
    assert_eq!(c.press(White, 0, 0), Err(ClockError::NotStarted));
    c.start(White, 0).unwrap();
    assert_eq!(c.start(White, 0), Err(ClockError::AlreadyStarted));
    assert_eq!(c.press(Black, 1, 0), Err(ClockError::NotYourTurn));
}

#[test]
fn human_notations() {
    let cases: &[(&str, &str, &str)] = &[
        ("3+2", "3+2", "180+2"),
        ("5|3", "5+3", "300+3"),
        ("15 + 10", "15+10", "900+10"),
        ("0.5+0", "0.5+0", "30+0"),
        ("15s+0", "0.25+0", "15+0"),
        ("10s+1", "10s+1", "10+1"),
        ("1h+30", "60+30", "3600+30"),
        ("90/40+30, 30+30", "90/40+30, 30+30", "40/5400+30:1800+30"),
        (
            "90/40+30; SD/30+30",
            "90/40+30, 30+30",
            "40/5400+30:1800+30",
        ),
        ("5d3", "5d3", "300d3"),
        ("G/5;d3", "5d3", "300d3"),
        ("G/5 d3", "5d3", "300d3"),
        ("5+d3", "5d3", "300d3"),
        ("5b3", "5b3", "300b3"),
        ("90/40, SD/30; d5", "90/40d5, 30d5", "40/5400d5:1800d5"),
        ("0+1", "0+1", "0+1"),
        ("2+0.5", "2+0.5", "120+0.5"),
    ];
    for &(input, human, pgn) in cases {
        let t = TimeControl::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(
            (t.to_string().as_str(), t.to_pgn().as_str()),
            (human, pgn),
            "{input}"
        );
        assert_eq!(TimeControl::parse(human).unwrap(), t, "{human}");
        assert_eq!(TimeControl::from_pgn(pgn).unwrap(), t, "{pgn}");
    }
}

#[test]
fn the_fide_form_is_minutes_per_moves() {
    let t = tc("90/40+30, 30+30");
    assert_eq!(
        t.stages(),
        &[
            Stage {
                moves: Some(40),
                time_ms: 5_400_000,
                bonus: Bonus::Increment(30_000)
            },
            Stage {
                moves: None,
                time_ms: 1_800_000,
                bonus: Bonus::Increment(30_000)
            },
        ]
    );
}

#[test]
fn malformed_time_controls_get_precise_errors() {
    let err = |s: &str| TimeControl::parse(s).unwrap_err();
    assert_eq!(err("").kind, ErrorKind::Empty);
    assert_eq!(err("   ").kind, ErrorKind::Empty);
    assert_eq!(err(&"1".repeat(300)).kind, ErrorKind::TooLong);
    assert_eq!(err("0+0").kind, ErrorKind::NoTime);
    let e = err("3+x");
    assert_eq!(
        (e.offset, &e.kind),
        (
            2,
            &ErrorKind::Unexpected {
                found: Some('x'),
                expected: "seconds of increment or delay"
            }
        )
    );
    assert_eq!(err("3+2 junk").offset, 4);
    assert_eq!(
        err("3+2\n").kind,
        ErrorKind::Unexpected {
            found: Some('\n'),
            expected: "',' between stages, or the end"
        }
    );
    assert_eq!(
        err("3+2,").kind,
        ErrorKind::Unexpected {
            found: None,
            expected: "another stage after the separator"
        }
    );
    assert_eq!(err("90/0").kind, ErrorKind::BadMoveCount);
    assert_eq!(err("90/1001").kind, ErrorKind::BadMoveCount);
    assert_eq!(err("3+2, 1+0").kind, ErrorKind::UnreachableStage);
    assert_eq!(err("0.00001+0").kind, ErrorKind::TooPrecise);
    assert_eq!(err("1+0.0001").kind, ErrorKind::TooPrecise);
    assert_eq!(err("99999999999999999999+0").kind, ErrorKind::StageTooLong);
    assert_eq!(err("14401+0").kind, ErrorKind::StageTooLong);
    assert_eq!(err("3+3601").kind, ErrorKind::BonusTooLarge);
    assert_eq!(err("3+2, d5").kind, ErrorKind::UnusedDelay);
    assert_eq!(
        err(&"1/1+0, ".repeat(9)[..62]).kind,
        ErrorKind::TooManyStages
    );
    assert_eq!(
        err("1.+0").kind,
        ErrorKind::Unexpected {
            found: Some('+'),
            expected: "a digit after '.'"
        }
    );
    assert_eq!(err("40/5400:1800").kind, ErrorKind::BadMoveCount);
    assert!(TimeControl::from_pgn("3+2, 1").is_err());
    assert!(TimeControl::from_pgn("?").is_err());
    assert!(
        err("3+2x").to_string().contains("byte 3"),
        "{}",
        err("3+2x")
    );
}

#[test]
fn speed_categories_follow_the_estimate_with_no_gaps() {
    let cases = [
        ("0.25+0", Speed::Bullet),
        ("1+0", Speed::Bullet),
        ("2+1", Speed::Bullet),
        ("2.999+0", Speed::Bullet),
        ("3+0", Speed::Blitz),
        ("5+3", Speed::Blitz),
        ("9.999+0", Speed::Blitz),
        ("10+0", Speed::Rapid),
        ("2+12", Speed::Rapid),
        ("15+10", Speed::Rapid),
        ("59.999+0", Speed::Rapid),
        ("60+0", Speed::Classical),
        ("90/40+30, 30+30", Speed::Classical),
        ("5d3", Speed::Blitz),
    ];
    for (text, speed) in cases {
        assert_eq!(tc(text).speed(), speed, "{text}");
    }
    assert_eq!("Blitz".parse::<Speed>().unwrap(), Speed::Blitz);
    assert!("hyper".parse::<Speed>().is_err());
}

#[test]
fn parts_round_trip_and_inconsistent_parts_are_refused() {
    let mut c = running("1+0");
    c.press(White, 1_000, 0).unwrap();
    let back = Clock::from_parts(c.control().clone(), *c.sides(), c.phase()).unwrap();
    assert_eq!(back, c);
    let mut bad = *c.sides();
    bad[0].stage = 3;
    assert!(Clock::from_parts(c.control().clone(), bad, c.phase()).is_none());
}

fn arb_bonus() -> impl Strategy<Value = Bonus> {
    prop_oneof![
        (0u64..=MAX_BONUS_MS).prop_map(Bonus::Increment),
        (0u64..=MAX_BONUS_MS).prop_map(Bonus::Bronstein),
        (0u64..=MAX_BONUS_MS).prop_map(Bonus::Delay),
    ]
}

fn arb_control() -> impl Strategy<Value = TimeControl> {
    proptest::collection::vec(
        (
            1u32..=MAX_STAGE_MOVES,
            0u64..=MAX_STAGE_TIME_MS,
            arb_bonus(),
        ),
        1..=MAX_STAGES,
    )
    .prop_flat_map(|stages| {
        let n = stages.len();
        (Just(stages), any::<bool>(), 1u64..=MAX_STAGE_TIME_MS).prop_map(
            move |(stages, repeat, first)| {
                let v = stages
                    .iter()
                    .enumerate()
                    .map(|(i, &(m, t, b))| Stage {
                        moves: if i + 1 < n || repeat { Some(m) } else { None },
                        time_ms: if i == 0 { first } else { t },
                        bonus: b,
                    })
                    .collect();
                TimeControl::new(v).unwrap()
            },
        )
    })
}

proptest! {
    #[test]
    fn both_notations_round_trip(t in arb_control()) {
        prop_assert_eq!(TimeControl::parse(&t.to_string()), Ok(t.clone()));
        prop_assert_eq!(TimeControl::from_pgn(&t.to_pgn()), Ok(t.clone()));
    }

    #[test]
    fn parsers_never_panic(s in "[0-9+|/.:,;dbDBGSgs hm]{0,40}") {
        let _ = TimeControl::parse(&s);
        let _ = TimeControl::from_pgn(&s);
    }

    /// Random play on a random control: the press is in time exactly before the deadline, the
    /// quota stays within [0, cap], and a refused press changes nothing.
    #[test]
    fn in_time_iff_before_the_deadline(
        t in arb_control(),
        steps in proptest::collection::vec((0u64..120_000, 0u64..3_000), 1..40),
    ) {
        let mut c = Clock::new(t.clone());
        c.start(White, 0).unwrap();
        let mut now = 0u64;
        for (wait, lag) in steps {
            let Phase::Running { turn, .. } = c.phase() else { break };
            let deadline = c.deadline().unwrap().at;
            now += wait;
            let before = c.clone();
            match c.press(turn, now, lag) {
                Ok(p) => {
                    prop_assert!(now < deadline);
                    prop_assert!(p.compensated_ms <= before.side(turn).quota_ms);
                    prop_assert!(c.side(turn).quota_ms <= 7 * t.quota_gain_ms());
                }
                Err(ClockError::OutOfTime(d)) => {
                    prop_assert!(now >= deadline);
                    prop_assert_eq!(d.at, deadline);
                    prop_assert_eq!(&c, &before);
                    prop_assert!(c.expire(now).is_ok());
                }
                Err(e) => prop_assert!(false, "{e}"),
            }
        }
    }
}

#[test]
fn correspondence_gives_the_whole_allowance_for_every_move() {
    const DAY: u64 = 86_400_000;
    let three = tc("3 days");
    assert_eq!(three, TimeControl::correspondence(3).unwrap());
    assert_eq!(three.days_per_move(), Some(3));
    assert_eq!(three.to_string(), "3 days");
    assert_eq!(tc(" 1 DAY ").to_string(), "1 day");
    assert_eq!(
        tc(&three.to_string()),
        three,
        "the canonical form reads back"
    );
    assert_eq!(three.speed(), Speed::Correspondence);
    assert_eq!(three.to_pgn(), "1/259200");
    assert_eq!(three.longest_turn_ms(), 3 * DAY);
    // The range, and the old notations untouched: `5d3` is still minutes with a delay.
    for bad in ["0 days", "15 days", "99999999999 days"] {
        assert_eq!(
            TimeControl::parse(bad).unwrap_err().kind,
            ErrorKind::BadDays,
            "{bad}"
        );
    }
    assert_eq!(tc("14 days").days_per_move(), Some(14));
    assert_eq!(tc("5d3").days_per_move(), None);
    assert_eq!(tc("5d3").speed(), Speed::Blitz);
    assert!(TimeControl::parse("3 dayz").is_err());
    assert!(TimeControl::parse("days").is_err());
    // Time saved does not carry over, time used is given back: every turn starts at 3 days.
    let mut c = Clock::new(three);
    c.start(White, 0).unwrap();
    c.press(White, 5 * 60_000, 0).unwrap();
    assert_eq!(c.side(White).remaining_ms, 3 * DAY);
    let late = 5 * 60_000 + 2 * DAY + 23 * 3_600_000;
    c.press(Black, late, 0).unwrap();
    assert_eq!(c.side(Black).remaining_ms, 3 * DAY);
    // A turn that takes longer than the allowance flags.
    let d = c.deadline().unwrap();
    assert_eq!((d.color, d.at), (White, late + c.limit_ms(White)));
    assert!(c.limit_ms(White) >= 3 * DAY && c.limit_ms(White) <= 3 * DAY + MAX_GRACE_MS);
}

#[test]
fn a_takeback_charges_the_running_turn_and_hands_the_turn_back() {
    let mut c = Clock::new(tc("5+0"));
    c.start_after_first_moves(White, 0, 30_000).unwrap();
    c.press(White, 1_000, 0).unwrap();
    c.press(Black, 2_000, 0).unwrap();
    c.press(White, 12_000, 0).unwrap(); // White used 10 s.
    assert_eq!(c.side(White).remaining_ms, 290_000);
    // Black thinks 4 s, then White's last move is taken back: Black is charged, White moves.
    c.take_back(&[White], White, 2, Some(30_000), 16_000)
        .unwrap();
    assert_eq!(c.side(Black).remaining_ms, 296_000);
    assert_eq!(c.side(White).moves, 1);
    assert_eq!(
        c.phase(),
        Phase::Running {
            turn: White,
            since: 16_000
        }
    );
    // Back to before both first moves: untimed again, within the window.
    c.take_back(&[Black, White], White, 0, Some(30_000), 17_000)
        .unwrap();
    assert!(matches!(
        c.phase(),
        Phase::Opening {
            turn: White,
            since: 17_000,
            other_moved: false,
            ..
        }
    ));
    assert_eq!((c.side(White).moves, c.side(Black).moves), (0, 0));
    // Refused once the running side's flag has fallen, and when paused.
    let mut c = running("1+0");
    let e = c
        .take_back(&[Black], Black, 3, None, 60_000 + MAX_GRACE_MS)
        .unwrap_err();
    assert!(matches!(e, ClockError::OutOfTime(_)), "{e:?}");
    let mut c = running("1+0");
    c.pause(1_000).unwrap();
    assert_eq!(
        c.take_back(&[Black], Black, 3, None, 2_000),
        Err(ClockError::Paused)
    );
}
