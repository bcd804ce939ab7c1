//! When a reflection is due: a pure decision over the config, the ledger, the last note and `now`.

use chrono::{DateTime, Duration, NaiveTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use skill_schema::{ReflectionCadence, SkillMemoryConfig};
use types::{TradeRecord, TradeStatus};

use crate::ReflectionError;

/// What the cadence needs to know about the deployment's latest note (flagged or not: a flagged
/// note still consumed its window; a failed run wrote no note and consumed nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastNote {
    /// When the note was generated (the tick time of its run).
    pub generated_at: DateTime<Utc>,
    /// The note covered trades closed at or before this instant.
    pub window_end: DateTime<Utc>,
    /// How many closed trades the deployment's ledger held when the note was generated, if the
    /// caller stored it. Used as a second count next to the exit times, so a row that arrives late
    /// with an exit time inside an older window still counts towards `everyNTrades`.
    pub closed_trades_total: Option<u32>,
}

/// The trades a due reflection covers: closed after `start` (exclusive) and at or before `end`
/// (inclusive). For a deployment's first note `start` is the earliest entry of those trades.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReflectionWindow {
    /// Exclusive start (UTC): the last note's `window_end`, or the earliest entry for a first
    /// note.
    pub start: DateTime<Utc>,
    /// Inclusive end (UTC): the tick time of the decision.
    pub end: DateTime<Utc>,
    /// Closed trades in the window at decision time.
    pub trades: u32,
}

/// Why no reflection runs now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NotDue {
    /// `cadence: off`.
    Off,
    /// `context.memory.enabled: false`: no memory, no lessons.
    MemoryDisabled,
    /// `per_n_trades`: fewer than N trades closed since the last note.
    TooFewTrades {
        /// Trades closed since the last note.
        have: u32,
        /// `everyNTrades`.
        need: u32,
    },
    /// `daily`: the slot of the current UTC day is not reached yet and no earlier slot is owed.
    BeforeHour {
        /// The next daily slot (UTC) at which a reflection becomes due.
        next_slot: DateTime<Utc>,
    },
    /// `daily`: a note was already generated at or after the latest slot.
    AlreadyRan {
        /// The next daily slot (UTC) at which a reflection becomes due.
        next_slot: DateTime<Utc>,
    },
    /// `daily`: the slot is owed but no trade closed since the last note — nothing to learn from.
    NoNewTrades,
    /// A reflection was due but the last attempt failed (provider down, empty reply) less than
    /// [`RETRY_BACKOFF_MINUTES`] ago: try again at `retry_at`, not on every tick.
    Backoff {
        /// The earliest time (UTC) to try again.
        retry_at: DateTime<Utc>,
    },
}

/// How long after a failed reflection the cadence waits before trying again.
pub const RETRY_BACKOFF_MINUTES: i64 = 30;

/// The cadence's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "due", rename_all = "snake_case")]
pub enum Due {
    /// Run a reflection over this window now.
    Yes(ReflectionWindow),
    /// No reflection now, and why.
    No(NotDue),
}

impl Due {
    /// Whether a reflection should run now.
    #[must_use]
    pub const fn is_due(&self) -> bool {
        matches!(self, Due::Yes(_))
    }
}

/// Exit time of a row that counts as closed at `now` (closed, with an exit at or before `now`).
fn closed_exit(row: &TradeRecord, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    match (row.status, row.exit_tick_at) {
        (TradeStatus::Closed, Some(t)) if t <= now => Some(t),
        _ => None,
    }
}

/// The closed trades a reflection at `now` covers, point in time: status closed, exit at or
/// before `now` and (when there is a last note) after its `window_end`. Sorted by exit time, then
/// symbol, then id, so the job's input order never depends on the store's.
#[must_use]
pub fn window_trades<'a>(
    trades: &'a [TradeRecord],
    last: Option<&LastNote>,
    now: DateTime<Utc>,
) -> Vec<&'a TradeRecord> {
    let mut rows: Vec<&TradeRecord> = trades
        .iter()
        .filter(|r| closed_exit(r, now).is_some_and(|t| last.is_none_or(|l| t > l.window_end)))
        .collect();
    rows.sort_by(|a, b| {
        a.exit_tick_at
            .cmp(&b.exit_tick_at)
            .then_with(|| a.symbol.cmp(&b.symbol))
            .then_with(|| a.id.cmp(&b.id))
    });
    rows
}

/// Whether a reflection is due at `now` for a deployment whose ledger is `trades` (any order; open
/// rows and rows closed after `now` are ignored) and whose latest note is `last`.
///
/// - memory disabled or `cadence: off` → never.
/// - `per_n_trades` → due when at least `everyNTrades` trades closed since the last note (exit
///   after its `window_end`, or since the start without a note). The check runs once per tick,
///   after the ledger step, so when several trades close in one tick and N is crossed mid-tick
///   the answer is ONE reflection covering all of them (e.g. N=5, 4 closed, 3 close at once → one
///   reflection over 7 trades; the count restarts from that note). When
///   [`LastNote::closed_trades_total`] is known, the count is the larger of "exits after
///   `window_end`" and "ledger total now − total then".
/// - `daily` → the slot of a UTC day is `hour:00` that day. The latest slot at `now` is today's
///   when `now` is at or after it, else yesterday's. Due when that slot is later than the last
///   note's `generated_at` (so at most once per day, and a runner that was down during the hour
///   runs it at its first tick after) AND at least one trade closed since the last note. Without
///   a note, the slot must be later than the first closed trade's exit: a deployment whose first
///   trade closed at 10:30 with `hour: 21` reflects at 21:00, not at 10:30.
///
/// A failed run writes no note, so the reflection stays due; `last_failure` (the `attempted_at`
/// of the latest failed run, if any) holds the next try back for [`RETRY_BACKOFF_MINUTES`] so a
/// provider outage costs one call per half hour, not one per tick. A failure older than the
/// last note is ignored.
///
/// # Errors
/// [`ReflectionError::InvalidConfig`] when `hour` is above 23 or `everyNTrades` is 0.
pub fn reflection_due(
    memory: &SkillMemoryConfig,
    trades: &[TradeRecord],
    last: Option<&LastNote>,
    last_failure: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<Due, ReflectionError> {
    let due = decide(memory, trades, last, now)?;
    if let (Due::Yes(_), Some(failed_at)) = (&due, last_failure)
        && last.is_none_or(|l| failed_at >= l.generated_at)
    {
        let retry_at = failed_at + Duration::minutes(RETRY_BACKOFF_MINUTES);
        if now < retry_at {
            return Ok(Due::No(NotDue::Backoff { retry_at }));
        }
    }
    Ok(due)
}

fn decide(
    memory: &SkillMemoryConfig,
    trades: &[TradeRecord],
    last: Option<&LastNote>,
    now: DateTime<Utc>,
) -> Result<Due, ReflectionError> {
    let config = &memory.reflection;
    if config.hour > 23 {
        return Err(ReflectionError::InvalidConfig {
            field: "context.memory.reflection.hour",
            message: format!("must be between 0 and 23 (got {})", config.hour),
        });
    }
    if config.every_n_trades == 0 {
        return Err(ReflectionError::InvalidConfig {
            field: "context.memory.reflection.everyNTrades",
            message: "must be at least 1 (got 0)".to_owned(),
        });
    }
    if !memory.enabled {
        return Ok(Due::No(NotDue::MemoryDisabled));
    }
    if config.cadence == ReflectionCadence::Off {
        return Ok(Due::No(NotDue::Off));
    }

    let window = window_trades(trades, last, now);
    let by_time = u32::try_from(window.len()).unwrap_or(u32::MAX);
    let start = match last {
        Some(l) => l.window_end,
        None => window.iter().map(|r| r.entry_tick_at).min().unwrap_or(now),
    };

    match config.cadence {
        ReflectionCadence::Off => Ok(Due::No(NotDue::Off)),
        ReflectionCadence::PerNTrades => {
            let by_count = last.and_then(|l| l.closed_trades_total).map_or(0, |then| {
                let total = trades
                    .iter()
                    .filter(|r| closed_exit(r, now).is_some())
                    .count();
                u32::try_from(total)
                    .unwrap_or(u32::MAX)
                    .saturating_sub(then)
            });
            let have = by_time.max(by_count);
            let need = config.every_n_trades;
            if have >= need && by_time > 0 {
                Ok(Due::Yes(ReflectionWindow {
                    start,
                    end: now,
                    trades: by_time,
                }))
            } else {
                Ok(Due::No(NotDue::TooFewTrades { have, need }))
            }
        }
        ReflectionCadence::Daily => {
            let today = slot_on(now, config.hour);
            let (latest, next) = if now >= today {
                (today, today + Duration::days(1))
            } else {
                (today - Duration::days(1), today)
            };
            let reference = match last {
                Some(l) => Some(l.generated_at),
                None => trades.iter().filter_map(|r| closed_exit(r, now)).min(),
            };
            if let Some(reference) = reference
                && reference >= latest
            {
                return Ok(Due::No(if last.is_some() {
                    NotDue::AlreadyRan { next_slot: next }
                } else {
                    NotDue::BeforeHour { next_slot: next }
                }));
            }
            if by_time == 0 {
                return Ok(Due::No(NotDue::NoNewTrades));
            }
            Ok(Due::Yes(ReflectionWindow {
                start,
                end: now,
                trades: by_time,
            }))
        }
    }
}

/// `hour:00` UTC on `at`'s day.
fn slot_on(at: DateTime<Utc>, hour: u8) -> DateTime<Utc> {
    let time = NaiveTime::from_hms_opt(u32::from(hour), 0, 0).unwrap_or(NaiveTime::MIN);
    Utc.from_utc_datetime(&at.date_naive().and_time(time))
}
