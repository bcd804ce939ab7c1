//! Cadence table tests: off, per_n_trades, daily, across day boundaries.

use crate::common;

use chrono::{DateTime, Utc};
use common::{at, closed_at};
use reflection::{
    Due, LastNote, NotDue, RETRY_BACKOFF_MINUTES, ReflectionError, ReflectionWindow, reflection_due,
};
use skill_schema::{ReflectionCadence, SkillMemoryConfig};
use types::{TradeRecord, TradeStatus};

fn memory(cadence: ReflectionCadence, n: u32, hour: u8) -> SkillMemoryConfig {
    let mut m = SkillMemoryConfig::default();
    m.reflection.cadence = cadence;
    m.reflection.every_n_trades = n;
    m.reflection.hour = hour;
    m
}

fn note(generated_at: DateTime<Utc>) -> LastNote {
    LastNote {
        generated_at,
        window_end: generated_at,
        closed_trades_total: None,
    }
}

/// `k` trades closing one minute apart from day 4 01:00.
fn trades(k: u32) -> Vec<TradeRecord> {
    (0..k)
        .map(|i| closed_at(u128::from(i) + 1, at(4, 1, i)))
        .collect()
}

fn due(
    m: &SkillMemoryConfig,
    t: &[TradeRecord],
    last: Option<&LastNote>,
    now: DateTime<Utc>,
) -> Due {
    reflection_due(m, t, last, None, now).expect("a valid config")
}

#[test]
fn off_is_never_due() {
    let m = memory(ReflectionCadence::Off, 5, 0);
    assert_eq!(
        due(&m, &trades(50), None, at(5, 0, 0)),
        Due::No(NotDue::Off)
    );
}

#[test]
fn memory_disabled_is_never_due() {
    let mut m = memory(ReflectionCadence::PerNTrades, 5, 0);
    m.enabled = false;
    assert_eq!(
        due(&m, &trades(50), None, at(5, 0, 0)),
        Due::No(NotDue::MemoryDisabled)
    );
}

#[test]
fn per_n_trades_table() {
    let m = memory(ReflectionCadence::PerNTrades, 5, 0);
    let now = at(4, 12, 0);
    // (closed trades since the start, expected)
    let table: [(u32, Due); 3] = [
        (4, Due::No(NotDue::TooFewTrades { have: 4, need: 5 })),
        (
            5,
            Due::Yes(ReflectionWindow {
                start: at(4, 0, 30), // earliest entry: 01:00 − 30m hold
                end: now,
                trades: 5,
            }),
        ),
        (
            7,
            Due::Yes(ReflectionWindow {
                start: at(4, 0, 30),
                end: now,
                trades: 7,
            }),
        ),
    ];
    for (k, expected) in table {
        assert_eq!(due(&m, &trades(k), None, now), expected, "{k} trades");
    }
}

#[test]
fn per_n_counts_only_trades_after_the_last_note() {
    let m = memory(ReflectionCadence::PerNTrades, 5, 0);
    // 7 trades closed 01:00..01:06; the last note covered up to 01:02 → 4 new (01:03..01:06).
    let last = note(at(4, 1, 2));
    assert_eq!(
        due(&m, &trades(7), Some(&last), at(4, 12, 0)),
        Due::No(NotDue::TooFewTrades { have: 4, need: 5 })
    );
}

#[test]
fn per_n_reached_mid_tick_gives_one_reflection_over_all_trades() {
    let m = memory(ReflectionCadence::PerNTrades, 5, 0);
    // 4 trades closed before; at the 02:00 tick three more close at once (one tick, one check).
    let mut ledger = trades(4);
    for n in 10..13 {
        ledger.push(closed_at(n, at(4, 2, 0)));
    }
    let tick = at(4, 2, 0);
    let d = due(&m, &ledger, None, tick);
    assert_eq!(
        d,
        Due::Yes(ReflectionWindow {
            start: at(4, 0, 30),
            end: tick,
            trades: 7
        })
    );
    // After that one note (window_end = the tick), the count restarts at zero.
    let last = note(tick);
    assert_eq!(
        due(&m, &ledger, Some(&last), at(4, 3, 0)),
        Due::No(NotDue::TooFewTrades { have: 0, need: 5 })
    );
}

#[test]
fn per_n_ignores_open_rows_and_future_exits() {
    let m = memory(ReflectionCadence::PerNTrades, 5, 0);
    let mut ledger = trades(4);
    let mut open = closed_at(20, at(4, 1, 30));
    open.status = TradeStatus::Open;
    ledger.push(open);
    ledger.push(closed_at(21, at(4, 13, 0))); // closes after `now`: not visible yet
    assert_eq!(
        due(&m, &ledger, None, at(4, 12, 0)),
        Due::No(NotDue::TooFewTrades { have: 4, need: 5 })
    );
}

#[test]
fn per_n_counts_late_rows_through_the_ledger_total() {
    let m = memory(ReflectionCadence::PerNTrades, 5, 0);
    // The note saw 2 trades in total. Since then: 1 trade that arrived late with an exit time
    // inside the old window, and 4 with exits after it → ledger total 7, 7 − 2 = 5 ≥ 5.
    let mut ledger = vec![closed_at(1, at(4, 1, 0)), closed_at(2, at(4, 1, 1))];
    ledger.push(closed_at(3, at(4, 1, 30))); // late row, exit ≤ window_end
    for n in 4..8 {
        ledger.push(closed_at(n, at(4, 3, u32::try_from(n).expect("small"))));
    }
    let last = LastNote {
        generated_at: at(4, 2, 0),
        window_end: at(4, 2, 0),
        closed_trades_total: Some(2),
    };
    assert_eq!(
        due(&m, &ledger, Some(&last), at(4, 4, 0)),
        Due::Yes(ReflectionWindow {
            start: at(4, 2, 0),
            end: at(4, 4, 0),
            trades: 4, // the window itself holds the 4 trades closed after window_end
        })
    );
}

#[test]
fn daily_before_at_and_after_the_hour() {
    let m = memory(ReflectionCadence::Daily, 10, 21);
    let last = note(at(3, 21, 0)); // yesterday's run
    let ledger = trades(3); // closed on day 4 around 01:00
    let next = at(4, 21, 0);
    // (now, expected)
    let table = [
        (
            at(4, 20, 59),
            Due::No(NotDue::AlreadyRan { next_slot: next }),
        ),
        (
            at(4, 21, 0),
            Due::Yes(ReflectionWindow {
                start: at(3, 21, 0),
                end: at(4, 21, 0),
                trades: 3,
            }),
        ),
        (
            at(4, 23, 30),
            Due::Yes(ReflectionWindow {
                start: at(3, 21, 0),
                end: at(4, 23, 30),
                trades: 3,
            }),
        ),
    ];
    for (now, expected) in table {
        assert_eq!(due(&m, &ledger, Some(&last), now), expected, "at {now}");
    }
}

#[test]
fn daily_already_ran_today() {
    let m = memory(ReflectionCadence::Daily, 10, 21);
    let mut ledger = trades(3);
    ledger.push(closed_at(9, at(4, 21, 30)));
    let last = note(at(4, 21, 5));
    assert_eq!(
        due(&m, &ledger, Some(&last), at(4, 23, 0)),
        Due::No(NotDue::AlreadyRan {
            next_slot: at(5, 21, 0)
        })
    );
}

#[test]
fn daily_across_a_day_boundary_at_hour_zero() {
    let m = memory(ReflectionCadence::Daily, 10, 0);
    let last = note(at(4, 0, 5)); // ran at the start of day 4
    let ledger = vec![closed_at(1, at(4, 10, 0))];
    // 23:59 on day 4: today's slot (00:00) already ran.
    assert_eq!(
        due(&m, &ledger, Some(&last), at(4, 23, 59)),
        Due::No(NotDue::AlreadyRan {
            next_slot: at(5, 0, 0)
        })
    );
    // 00:01 on day 5: a new day's slot.
    assert_eq!(
        due(&m, &ledger, Some(&last), at(5, 0, 1)),
        Due::Yes(ReflectionWindow {
            start: at(4, 0, 5),
            end: at(5, 0, 1),
            trades: 1
        })
    );
}

#[test]
fn daily_runs_at_the_first_tick_after_a_missed_hour() {
    let m = memory(ReflectionCadence::Daily, 10, 21);
    let last = note(at(3, 21, 0));
    let ledger = vec![closed_at(1, at(4, 10, 0))];
    // The runner was down from 20:00 on day 4 to 02:00 on day 5: day 4's slot is owed.
    assert!(due(&m, &ledger, Some(&last), at(5, 2, 0)).is_due());
    // ... and once it ran at 02:00, day 5's own slot is at 21:00.
    let ran = note(at(5, 2, 0));
    let mut later = ledger.clone();
    later.push(closed_at(2, at(5, 15, 0)));
    assert_eq!(
        due(&m, &later, Some(&ran), at(5, 20, 0)),
        Due::No(NotDue::AlreadyRan {
            next_slot: at(5, 21, 0)
        })
    );
    assert!(due(&m, &later, Some(&ran), at(5, 21, 0)).is_due());
}

#[test]
fn daily_without_new_trades_is_not_due() {
    let m = memory(ReflectionCadence::Daily, 10, 21);
    let last = note(at(4, 21, 0));
    let ledger = trades(3); // all closed before the last note
    assert_eq!(
        due(&m, &ledger, Some(&last), at(5, 21, 0)),
        Due::No(NotDue::NoNewTrades)
    );
}

#[test]
fn daily_first_note_waits_for_the_hour_after_the_first_trade() {
    let m = memory(ReflectionCadence::Daily, 10, 21);
    let ledger = vec![closed_at(1, at(4, 10, 30))];
    assert_eq!(
        due(&m, &ledger, None, at(4, 10, 30)),
        Due::No(NotDue::BeforeHour {
            next_slot: at(4, 21, 0)
        })
    );
    assert!(due(&m, &ledger, None, at(4, 21, 0)).is_due());
    // No trade at all: nothing to learn from.
    assert_eq!(
        due(&m, &[], None, at(4, 21, 0)),
        Due::No(NotDue::NoNewTrades)
    );
}

#[test]
fn out_of_range_settings_are_errors_not_panics() {
    let m = memory(ReflectionCadence::Daily, 10, 24);
    assert_eq!(
        reflection_due(&m, &[], None, None, at(4, 0, 0)),
        Err(ReflectionError::InvalidConfig {
            field: "context.memory.reflection.hour",
            message: "must be between 0 and 23 (got 24)".to_owned(),
        })
    );
    let m = memory(ReflectionCadence::PerNTrades, 0, 0);
    assert!(reflection_due(&m, &[], None, None, at(4, 0, 0)).is_err());
}

#[test]
fn a_failed_run_is_retried_after_the_backoff_not_every_tick() {
    let m = memory(ReflectionCadence::PerNTrades, 5, 0);
    let ledger = trades(5);
    let failed_at = at(4, 2, 0);
    let retry_at = failed_at + chrono::Duration::minutes(RETRY_BACKOFF_MINUTES);
    // 02:15: the run at 02:00 failed → wait until 02:30.
    assert_eq!(
        reflection_due(&m, &ledger, None, Some(failed_at), at(4, 2, 15)).expect("valid"),
        Due::No(NotDue::Backoff { retry_at })
    );
    // 02:30: due again, over the same window.
    assert!(
        reflection_due(&m, &ledger, None, Some(failed_at), retry_at)
            .expect("valid")
            .is_due()
    );
    // A failure older than the last note does not hold anything back.
    let mut more = trades(5);
    for n in 10..15 {
        more.push(closed_at(n, at(4, 5, u32::try_from(n).expect("small"))));
    }
    let last = note(at(4, 3, 0));
    assert!(
        reflection_due(&m, &more, Some(&last), Some(failed_at), at(4, 6, 0))
            .expect("valid")
            .is_due()
    );
}
