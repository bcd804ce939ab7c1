use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Duration, TimeZone, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A bar interval. Skills tick on `5m` at the fastest (the floor); `1w` exists only as a higher
/// timeframe above daily bars.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub enum Interval {
    /// `5m`: 5 minutes (the fastest a skill may tick).
    #[serde(rename = "5m")]
    M5,
    /// `15m`: 15 minutes.
    #[serde(rename = "15m")]
    M15,
    /// `1h`: 1 hour.
    #[serde(rename = "1h")]
    H1,
    /// `4h`: 4 hours.
    #[serde(rename = "4h")]
    H4,
    /// `1d`: 1 day (UTC midnight to midnight).
    #[serde(rename = "1d")]
    D1,
    /// `1w`: 1 week (a higher timeframe only).
    #[serde(rename = "1w")]
    W1,
}

/// The text was not one of `5m`, `15m`, `1h`, `4h`, `1d`, `1w`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown interval {0:?}: expected one of 5m, 15m, 1h, 4h, 1d, 1w")]
pub struct ParseIntervalError(pub String);

impl Interval {
    /// Every interval, fastest first: the ladder higher timeframes are derived from.
    pub const ALL: [Interval; 6] = [
        Interval::M5,
        Interval::M15,
        Interval::H1,
        Interval::H4,
        Interval::D1,
        Interval::W1,
    ];

    /// The wire spelling (`"5m"`, `"1h"`, ...).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Interval::M5 => "5m",
            Interval::M15 => "15m",
            Interval::H1 => "1h",
            Interval::H4 => "4h",
            Interval::D1 => "1d",
            Interval::W1 => "1w",
        }
    }

    /// Length of one bar in minutes.
    #[must_use]
    pub const fn minutes(self) -> i64 {
        match self {
            Interval::M5 => 5,
            Interval::M15 => 15,
            Interval::H1 => 60,
            Interval::H4 => 240,
            Interval::D1 => 1_440,
            Interval::W1 => 10_080,
        }
    }

    /// Length of one bar.
    #[must_use]
    pub fn duration(self) -> Duration {
        Duration::minutes(self.minutes())
    }

    /// The next rungs of the ~4x ladder above `self` (`5m → 15m, 1h`; `1h → 4h, 1d`; `1d → 1w`),
    /// at most `count` of them.
    #[must_use]
    pub fn ladder_above(self, count: usize) -> Vec<Interval> {
        Self::ALL
            .iter()
            .copied()
            .filter(|i| *i > self)
            .take(count)
            .collect()
    }

    /// The open time of the bar of this interval that contains `t`. Bars are aligned to the Unix
    /// epoch (weeks to Monday 00:00 UTC, as exchanges do).
    #[must_use]
    pub fn bucket_start(self, t: DateTime<Utc>) -> DateTime<Utc> {
        Utc.timestamp_opt(self.bucket_start_secs(t.timestamp()), 0)
            .single()
            .expect("a bucket start lies within chrono's range whenever its input does")
    }

    /// [`bucket_start`](Self::bucket_start) in Unix seconds: the open time, in seconds, of the
    /// bar of this interval that contains the second `secs`.
    #[must_use]
    pub const fn bucket_start_secs(self, secs: i64) -> i64 {
        // 1970-01-01 was a Thursday; weekly buckets start on Monday, 4 days later.
        let offset = if matches!(self, Interval::W1) {
            4 * 1_440 * 60
        } else {
            0
        };
        let len = self.minutes() * 60;
        (secs - offset).div_euclid(len) * len + offset
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Interval {
    type Err = ParseIntervalError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .copied()
            .find(|i| i.as_str() == s)
            .ok_or_else(|| ParseIntervalError(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladder_is_about_four_x() {
        assert_eq!(
            Interval::M5.ladder_above(2),
            vec![Interval::M15, Interval::H1]
        );
        assert_eq!(
            Interval::H1.ladder_above(2),
            vec![Interval::H4, Interval::D1]
        );
        assert_eq!(Interval::D1.ladder_above(2), vec![Interval::W1]);
    }

    #[test]
    fn parses_and_prints() {
        for i in Interval::ALL {
            assert_eq!(i.as_str().parse::<Interval>(), Ok(i));
        }
        assert!("1m".parse::<Interval>().is_err());
    }

    #[test]
    fn buckets() {
        let t = Utc.with_ymd_and_hms(2024, 5, 8, 13, 47, 12).unwrap(); // a Wednesday
        assert_eq!(
            Interval::H4.bucket_start(t),
            Utc.with_ymd_and_hms(2024, 5, 8, 12, 0, 0).unwrap()
        );
        assert_eq!(
            Interval::W1.bucket_start(t),
            Utc.with_ymd_and_hms(2024, 5, 6, 0, 0, 0).unwrap()
        );
        assert_eq!(
            Interval::M15.bucket_start(t),
            Utc.with_ymd_and_hms(2024, 5, 8, 13, 45, 0).unwrap()
        );
    }
}
