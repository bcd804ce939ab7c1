use std::fmt;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Interval;

/// One OHLCV bar. `time` is the bar's **open** time; the bar is closed (and may be shown to the
/// agent) from `time + interval` on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Bar {
    /// Open time of the bar (UTC).
    pub time: DateTime<Utc>,
    /// First traded price of the bar.
    pub open: Decimal,
    /// Highest price of the bar.
    pub high: Decimal,
    /// Lowest price of the bar.
    pub low: Decimal,
    /// Last traded price of the bar.
    pub close: Decimal,
    /// Traded volume in base units, as the source reports it.
    pub volume: Decimal,
}

impl Bar {
    /// The instant the bar closes.
    #[must_use]
    pub fn close_time(&self, interval: Interval) -> DateTime<Utc> {
        self.time + interval.duration()
    }
}

/// A coarse description of what the market has been doing, shown next to each symbol's bars and
/// stored on every trade (`entry_regime_tag`) so lessons can be grouped by it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RegimeTag {
    /// Prices have been moving up steadily.
    TrendingUp,
    /// Prices have been moving down steadily.
    TrendingDown,
    /// Prices have been moving sideways within a band.
    Ranging,
    /// Large bar ranges without a clear direction.
    Volatile,
    /// Fewer bars than [`REGIME_MIN_BARS`](classify_regime) were available.
    Unknown,
}

impl RegimeTag {
    /// The snake_case spelling used in prompts and storage.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            RegimeTag::TrendingUp => "trending_up",
            RegimeTag::TrendingDown => "trending_down",
            RegimeTag::Ranging => "ranging",
            RegimeTag::Volatile => "volatile",
            RegimeTag::Unknown => "unknown",
        }
    }

    /// Parses the snake_case spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [
            RegimeTag::TrendingUp,
            RegimeTag::TrendingDown,
            RegimeTag::Ranging,
            RegimeTag::Volatile,
            RegimeTag::Unknown,
        ]
        .into_iter()
        .find(|r| r.as_str() == s)
    }
}

impl fmt::Display for RegimeTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

const REGIME_WINDOW: usize = 20;
const REGIME_MIN_BARS: usize = 10;
const RECENT: usize = 5;

/// Classifies the last 20 bars (at least 10 are needed, else [`RegimeTag::Unknown`]).
///
/// Deterministic decimal arithmetic, no floats:
/// - efficiency ratio `ER = |close_last − close_first| / Σ|close_i − close_(i−1)|`;
///   `ER ≥ 0.3` is a trend, up or down by the sign of the net move;
/// - otherwise, when the mean high−low range of the last 5 bars is at least 1.5× the mean range
///   of the window, the market is `volatile`;
/// - otherwise it is `ranging`.
#[must_use]
pub fn classify_regime(bars: &[Bar]) -> RegimeTag {
    classify(bars).unwrap_or(RegimeTag::Unknown)
}

/// [`classify_regime`] with checked arithmetic: `None` when prices so large that the sums
/// overflow (absurd input is `Unknown`, never a panic).
fn classify(bars: &[Bar]) -> Option<RegimeTag> {
    if bars.len() < REGIME_MIN_BARS {
        return Some(RegimeTag::Unknown);
    }
    let window = &bars[bars.len().saturating_sub(REGIME_WINDOW)..];
    let first = window.first()?.close;
    let last = window.last()?.close;
    let net = last.checked_sub(first)?;
    let mut path = Decimal::ZERO;
    for w in window.windows(2) {
        path = path.checked_add(w[1].close.checked_sub(w[0].close)?.abs())?;
    }
    if !path.is_zero() && net.abs().checked_div(path)? >= Decimal::new(3, 1) {
        return Some(if net.is_sign_positive() {
            RegimeTag::TrendingUp
        } else {
            RegimeTag::TrendingDown
        });
    }
    let mean_range = |bs: &[Bar]| -> Option<Decimal> {
        let mut sum = Decimal::ZERO;
        for b in bs {
            sum = sum.checked_add(b.high.checked_sub(b.low)?)?;
        }
        sum.checked_div(Decimal::from(bs.len()))
    };
    let all = mean_range(window)?;
    let recent = mean_range(&window[window.len() - RECENT..])?;
    let threshold = all.checked_mul(Decimal::new(15, 1))?;
    Some(if !all.is_zero() && recent >= threshold {
        RegimeTag::Volatile
    } else {
        RegimeTag::Ranging
    })
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use rust_decimal_macros::dec;

    use super::*;

    fn bar(i: i64, close: Decimal, range: Decimal) -> Bar {
        Bar {
            time: Utc.timestamp_opt(i * 3600, 0).unwrap(),
            open: close,
            high: close + range,
            low: close - range,
            close,
            volume: dec!(1),
        }
    }

    /// Prices near `Decimal::MAX` overflow the path and range sums: the answer is `Unknown`,
    /// not a panic.
    #[test]
    fn absurd_prices_are_unknown_not_a_panic() {
        let huge = Decimal::MAX / dec!(2);
        let bars: Vec<Bar> = (0..20)
            .map(|i| {
                let close = if i % 2 == 0 { huge } else { -huge };
                Bar {
                    time: Utc.timestamp_opt(i * 3600, 0).unwrap(),
                    open: close,
                    high: huge,
                    low: -huge,
                    close,
                    volume: dec!(1),
                }
            })
            .collect();
        assert_eq!(classify_regime(&bars), RegimeTag::Unknown);
    }

    #[test]
    fn too_few_bars_is_unknown() {
        let bars: Vec<_> = (0..9).map(|i| bar(i, dec!(100), dec!(1))).collect();
        assert_eq!(classify_regime(&bars), RegimeTag::Unknown);
    }

    #[test]
    fn steady_climb_is_trending_up_and_fall_is_down() {
        let up: Vec<_> = (0..20)
            .map(|i| bar(i, Decimal::from(100 + i), dec!(1)))
            .collect();
        assert_eq!(classify_regime(&up), RegimeTag::TrendingUp);
        let down: Vec<_> = (0..20)
            .map(|i| bar(i, Decimal::from(100 - i), dec!(1)))
            .collect();
        assert_eq!(classify_regime(&down), RegimeTag::TrendingDown);
    }

    #[test]
    fn zigzag_is_ranging_unless_ranges_blow_out() {
        // closes 100,101,100,101,... : net move 1 over a path of 19 → ER ≈ 0.05.
        let calm: Vec<_> = (0..20)
            .map(|i| bar(i, Decimal::from(100 + i % 2), dec!(1)))
            .collect();
        assert_eq!(classify_regime(&calm), RegimeTag::Ranging);
        // Same closes, but the last 5 bars have a range of 4 instead of 1: mean window range
        // (15·2 + 5·8)/20 = 3.5, recent 8 ≥ 1.5 × 3.5 = 5.25 → volatile.
        let wild: Vec<_> = (0..20)
            .map(|i| {
                bar(
                    i,
                    Decimal::from(100 + i % 2),
                    if i >= 15 { dec!(4) } else { dec!(1) },
                )
            })
            .collect();
        assert_eq!(classify_regime(&wild), RegimeTag::Volatile);
    }
}
