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
    classify_exact(window).or_else(|| classify_decimal(window))
}

/// The classification of `window` (at least [`REGIME_MIN_BARS`] bars) in `Decimal`.
fn classify_decimal(window: &[Bar]) -> Option<RegimeTag> {
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

/// Prices below 2⁵⁷ at the window's largest scale: every sum of at most 20 differences stays
/// below 2⁶³, and products of those sums with small constants fit `i128`.
const EXACT_LIMIT: i64 = 1 << 57;

/// `d`'s mantissa at `scale`, below [`EXACT_LIMIT`].
fn at_scale(d: Decimal, scale: u32) -> Option<i64> {
    crate::mantissa_at(d, scale, EXACT_LIMIT)
}

/// [`classify`]'s answer for a full window whose prices fit [`EXACT_LIMIT`] at a scale of at
/// most 20, decided in integers without a division: the same answer, since
/// - the `Decimal` sums are exact (each addition of prices is exact at the larger scale while
///   the sums stay far inside 96 bits), so the integer sums at the largest scale are their
///   values;
/// - `|net| / path ≥ 0.3` is `10·|net| ≥ 3·path`: a quotient below 0.3 is below it by at least
///   `1 / (10·path)` (> 10⁻²⁰ here), which rounding to `Decimal`'s 28 places cannot cross, and
///   one at or above it cannot round below it;
/// - with 20 bars, `S / 20`, `S₅ / 5` and `× 1.5` are exact decimals at two or three places more
///   than the prices' (at most 23 here), so `S₅/5 ≥ 1.5 · S/20` is `8·S₅ ≥ 3·S` exactly.
///
/// `None` for anything else (fewer bars, other prices): [`classify_decimal`] decides.
fn classify_exact(window: &[Bar]) -> Option<RegimeTag> {
    if window.len() != REGIME_WINDOW {
        return None;
    }
    let scale = window.iter().map(|b| b.close.scale()).max()?;
    if scale > 20 {
        return None;
    }
    let mut prev = at_scale(window.first()?.close, scale)?;
    let first = prev;
    let mut path: i64 = 0;
    for b in &window[1..] {
        let close = at_scale(b.close, scale)?;
        path += (close - prev).abs();
        prev = close;
    }
    let net = prev - first;
    if path != 0 && 10 * i128::from(net.abs()) >= 3 * i128::from(path) {
        return Some(if net > 0 {
            RegimeTag::TrendingUp
        } else {
            RegimeTag::TrendingDown
        });
    }
    let scale = window
        .iter()
        .map(|b| b.high.scale().max(b.low.scale()))
        .max()?;
    if scale > 20 {
        return None;
    }
    let (mut all, mut recent) = (0_i64, 0_i64);
    for (i, b) in window.iter().enumerate() {
        let range = at_scale(b.high, scale)? - at_scale(b.low, scale)?;
        all += range;
        if i >= REGIME_WINDOW - RECENT {
            recent += range;
        }
    }
    Some(
        if all != 0 && 8 * i128::from(recent) >= 3 * i128::from(all) {
            RegimeTag::Volatile
        } else {
            RegimeTag::Ranging
        },
    )
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use proptest::prelude::*;
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

    /// [`classify`] in `Decimal` only: what it computed before the integer path.
    fn reference(bars: &[Bar]) -> Option<RegimeTag> {
        if bars.len() < REGIME_MIN_BARS {
            return Some(RegimeTag::Unknown);
        }
        classify_decimal(&bars[bars.len().saturating_sub(REGIME_WINDOW)..])
    }

    /// The two borders the integer path decides without dividing, met exactly: a net move of
    /// exactly 0.3 of the path (a trend), and a recent mean range of exactly 1.5 times the
    /// window's (volatile); one step inside each border is not.
    #[test]
    fn the_borders_are_decided_as_in_decimal() {
        // 1.00000, then 1.00013, then 1.00006 eighteen times: net 6, path 13 + 7 = 20 (in
        // units of 0.00001), exactly 0.3.
        let closes = |second: Decimal| -> Vec<Bar> {
            (0..20)
                .map(|i| {
                    let c = match i {
                        0 => dec!(1.00000),
                        1 => second,
                        _ => dec!(1.00006),
                    };
                    bar(i, c, dec!(0.00001))
                })
                .collect()
        };
        // At 1.00014: net 6, path 22, 0.27…; the equal ranges are not volatile.
        for (second, tag) in [
            (dec!(1.00013), RegimeTag::TrendingUp),
            (dec!(1.00014), RegimeTag::Ranging),
        ] {
            let bars = closes(second);
            assert!(classify_exact(&bars).is_some());
            assert_eq!(classify(&bars), Some(tag));
            assert_eq!(reference(&bars), Some(tag));
        }
        // Flat closes; ranges 1 on 15 bars and r on the last 5: 8·5r ≥ 3·(15 + 5r) ⇔ r ≥ 1.8
        // (the Decimal path: mean 24/20 = 1.2, recent 9/5 = 1.8 = 1.5 × 1.2).
        for (r, tag) in [
            (dec!(1.8), RegimeTag::Volatile),
            (dec!(1.7), RegimeTag::Ranging),
        ] {
            let bars: Vec<Bar> = (0..20)
                .map(|i| bar(i, dec!(100), if i >= 15 { r } else { dec!(1) } / dec!(2)))
                .collect();
            assert!(classify_exact(&bars).is_some());
            assert_eq!(classify(&bars), Some(tag));
            assert_eq!(reference(&bars), Some(tag));
        }
    }

    /// Any price: another scale, a huge mantissa or a negative value (the `Decimal` path).
    fn odd_price() -> impl Strategy<Value = Decimal> {
        prop_oneof![
            (any::<i64>(), 0u32..10).prop_map(|(m, s)| Decimal::new(m, s)),
            (any::<u128>(), 0u32..29).prop_filter_map("fits", |(m, s)| {
                Decimal::try_from_i128_with_scale((m >> 32) as i128, s).ok()
            }),
        ]
    }

    /// Bars of one scale (a currency pair's five decimals: the integer path): closes that walk
    /// with a drift (trends) and ranges that may blow out at the end (volatile); sometimes one
    /// odd price among them.
    fn bars() -> impl Strategy<Value = Vec<Bar>> {
        (
            proptest::collection::vec((-40i64..60, 0i64..300), 0..30),
            -20i64..20,
            any::<bool>(),
            proptest::option::weighted(0.2, (0usize..30, odd_price())),
        )
            .prop_map(|(steps, drift, blow_out, odd)| {
                let mut close = 150_000_i64;
                let n = steps.len();
                let mut bars: Vec<Bar> = steps
                    .iter()
                    .enumerate()
                    .map(|(i, &(step, range))| {
                        // Whole steps of 10 on half the bars: prices with trailing zeros.
                        close += if step % 2 == 0 {
                            (step + drift) * 10
                        } else {
                            step + drift
                        };
                        let range = if blow_out && i + 5 >= n {
                            range * 4
                        } else {
                            range
                        };
                        // Trailing zeros dropped on some prices, as a CSV writes them.
                        let price = |m: i64| {
                            let d = Decimal::new(m, 5);
                            if (m + i as i64) % 3 == 0 {
                                d.normalize()
                            } else {
                                d
                            }
                        };
                        let c = price(close);
                        Bar {
                            time: Utc.timestamp_opt(i as i64 * 3600, 0).unwrap(),
                            open: c,
                            high: price(close + range),
                            low: price(close - range / 2),
                            close: c,
                            volume: Decimal::ONE,
                        }
                    })
                    .collect();
                if let Some((at, price)) = odd
                    && let Some(b) = bars.get_mut(at)
                {
                    b.close = price;
                }
                bars
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        #[test]
        fn integer_sums_classify_as_decimal_sums(bars in bars()) {
            prop_assert_eq!(classify(&bars), reference(&bars));
        }
    }
}
