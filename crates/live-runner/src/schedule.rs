//! Bar-close arithmetic: when a deployment ticks.
//!
//! A deployment ticks once per closed bar of its skill's interval, at the bar's close time.
//! Bars are aligned to the Unix epoch (Hyperliquid's candles are), weekly bars to Monday
//! 00:00 UTC.

use chrono::{DateTime, Duration, TimeZone, Utc};
use types::Interval;

/// Monday 1970-01-05 00:00 UTC, in seconds: the alignment of weekly bars.
const WEEK_ANCHOR_SECS: i64 = 4 * 86_400;

fn anchor_secs(interval: Interval) -> i64 {
    if interval == Interval::W1 {
        WEEK_ANCHOR_SECS
    } else {
        0
    }
}

/// The length of one bar.
#[must_use]
pub fn bar_length(interval: Interval) -> Duration {
    Duration::minutes(interval.minutes())
}

/// The latest bar close at or before `now` (the time of the tick that is due at `now`).
#[must_use]
pub fn last_close_at_or_before(now: DateTime<Utc>, interval: Interval) -> DateTime<Utc> {
    let len = interval.minutes().max(1) * 60;
    let anchor = anchor_secs(interval);
    let secs = now.timestamp() - anchor;
    let floored = secs.div_euclid(len) * len + anchor;
    Utc.timestamp_opt(floored, 0).single().unwrap_or(now)
}

/// The first bar close strictly after `now` (when a new deployment ticks first).
#[must_use]
pub fn next_close_after(now: DateTime<Utc>, interval: Interval) -> DateTime<Utc> {
    last_close_at_or_before(now, interval) + bar_length(interval)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s)
            .expect("time")
            .with_timezone(&Utc)
    }

    #[test]
    fn closes_align_to_the_interval() {
        let cases = [
            // (now, interval, last close <= now, next close > now)
            (
                "2026-11-22T17:59:59Z",
                Interval::H1,
                "2026-11-22T17:00:00Z",
                "2026-11-22T18:00:00Z",
            ),
            (
                "2026-11-22T18:00:00Z",
                Interval::H1,
                "2026-11-22T18:00:00Z",
                "2026-11-22T19:00:00Z",
            ),
            (
                "2026-11-22T18:14:00Z",
                Interval::M15,
                "2026-11-22T18:00:00Z",
                "2026-11-22T18:15:00Z",
            ),
            (
                "2026-11-22T18:14:00Z",
                Interval::M5,
                "2026-11-22T18:10:00Z",
                "2026-11-22T18:15:00Z",
            ),
            (
                "2026-11-22T03:59:00Z",
                Interval::H4,
                "2026-11-22T00:00:00Z",
                "2026-11-22T04:00:00Z",
            ),
            (
                "2026-11-22T23:00:00Z",
                Interval::D1,
                "2026-11-22T00:00:00Z",
                "2026-11-23T00:00:00Z",
            ),
            // 2026-11-22 is a Sunday: the week closed on Monday 2026-11-16, the next on the 23rd.
            (
                "2026-11-22T23:00:00Z",
                Interval::W1,
                "2026-11-16T00:00:00Z",
                "2026-11-23T00:00:00Z",
            ),
        ];
        for (now, interval, last, next) in cases {
            assert_eq!(
                last_close_at_or_before(t(now), interval),
                t(last),
                "{now} {interval:?}"
            );
            assert_eq!(
                next_close_after(t(now), interval),
                t(next),
                "{now} {interval:?}"
            );
        }
    }
}
