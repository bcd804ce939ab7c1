//! The market conditions at decision time (`market_snapshots`), computed from the bars the tick
//! already has.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;
use serde::{Deserialize, Serialize};
use types::{Bar, Interval, RegimeTag, classify_regime};
use uuid::Uuid;

use crate::indicators;

/// RSI period on every timeframe.
pub const RSI_PERIOD: usize = 14;
/// ADX period (trend strength).
pub const ADX_PERIOD: usize = 14;
/// MACD fast, slow and signal periods.
pub const MACD_PERIODS: (usize, usize, usize) = (12, 26, 9);
/// Bars in one volatility reading (the standard deviation of this many log returns).
pub const VOLATILITY_WINDOW: usize = 20;
/// Volatility readings the percentile ranks the latest among (the stated lookback).
pub const VOLATILITY_LOOKBACK: usize = 100;
/// Bars the volume ratio averages over (the bars before the latest).
pub const VOLUME_PERIOD: usize = 20;
/// Aligned returns the correlation to the reference symbol is computed over.
pub const CORRELATION_WINDOW: usize = 50;
/// Bars of each timeframe an RSI is computed over (its smoothing warms up over them).
pub const RSI_BARS: usize = 100;
/// The reference symbol when the skill names none.
pub const DEFAULT_REFERENCE_SYMBOL: &str = "BTC";
/// The most base-interval bars [`bars_needed`] asks for.
pub const MAX_BARS: usize = 10_000;

/// The MACD state (see [`indicators::macd_state`] for the rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MacdState {
    /// MACD above its signal line and above zero.
    Bullish,
    /// MACD below its signal line and below zero.
    Bearish,
    /// The two readings disagree.
    Neutral,
}

impl MacdState {
    /// The stored spelling: `bullish`, `bearish`, `neutral`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            MacdState::Bullish => "bullish",
            MacdState::Bearish => "bearish",
            MacdState::Neutral => "neutral",
        }
    }

    /// Parses the stored spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [MacdState::Bullish, MacdState::Bearish, MacdState::Neutral]
            .into_iter()
            .find(|m| m.as_str() == s)
    }
}

/// The indicators of one symbol at one time. `None` where the bars do not allow a value (too
/// few bars, a timeframe below the bars' interval, no reference bars).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Indicators {
    /// RSI(14) of 15-minute bars.
    pub rsi_15m: Option<f64>,
    /// RSI(14) of 1-hour bars.
    pub rsi_1h: Option<f64>,
    /// RSI(14) of 4-hour bars.
    pub rsi_4h: Option<f64>,
    /// MACD(12, 26, 9) state of the base bars.
    pub macd_signal: Option<MacdState>,
    /// 0–100: where the latest 20-bar volatility ranks among the last 100.
    pub volatility_percentile: Option<f64>,
    /// The latest bar's volume over the mean of the 20 before it.
    pub volume_ratio: Option<f64>,
    /// ADX(14) of the base bars.
    pub trend_strength: Option<f64>,
    /// Correlation of the last 50 log returns to the reference symbol's (same bar times).
    pub btc_correlation: Option<f64>,
    /// The existing regime tag of the base bars ([`types::classify_regime`]).
    pub market_condition: RegimeTag,
}

/// One `market_snapshots` row: the indicators of a symbol at a tick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MarketSnapshot {
    /// [`market_snapshot_id`] of the decision snapshot and the symbol.
    pub id: Uuid,
    /// The deployment that ticked.
    pub deployment_id: Uuid,
    /// The tick's decision snapshot (the firehose row).
    pub decision_snapshot_id: Uuid,
    /// The tick's time: every bar used closed at or before it.
    pub tick_at: DateTime<Utc>,
    /// The symbol described.
    pub symbol: String,
    /// The symbol [`Indicators::btc_correlation`] is measured against.
    pub reference_symbol: String,
    /// The values.
    #[serde(flatten)]
    pub indicators: Indicators,
}

/// The id of the market snapshot of `symbol` at the tick whose decision snapshot is
/// `decision_snapshot_id`: UUID v5, so a replayed tick writes the same id.
#[must_use]
pub fn market_snapshot_id(decision_snapshot_id: Uuid, symbol: &str) -> Uuid {
    let mut name = b"market_snapshot:".to_vec();
    name.extend_from_slice(symbol.as_bytes());
    Uuid::new_v5(&decision_snapshot_id, &name)
}

/// How many bars of `interval` (ending at the tick) the indicators need: enough for
/// [`RSI_BARS`] bars of every RSI timeframe at or above `interval`, the volatility percentile
/// and the correlation; at most [`MAX_BARS`].
#[must_use]
pub fn bars_needed(interval: Interval) -> usize {
    let base = interval.minutes().max(1);
    let rsi = [Interval::M15, Interval::H1, Interval::H4]
        .into_iter()
        .filter(|tf| tf.minutes() >= base && tf.minutes() % base == 0)
        .map(|tf| usize::try_from(tf.minutes() / base).unwrap_or(1) * (RSI_BARS + 1))
        .max()
        .unwrap_or(0);
    let own = (VOLATILITY_WINDOW + VOLATILITY_LOOKBACK + 1)
        .max(CORRELATION_WINDOW + 1)
        .max(2 * ADX_PERIOD + 1)
        .max(MACD_PERIODS.1 + MACD_PERIODS.2);
    rsi.max(own).min(MAX_BARS)
}

/// The indicators at `now` from `bars` (the symbol's bars of `interval`, oldest first) and
/// `reference` (the reference symbol's bars of the same interval, `None` when absent). Bars
/// that close after `now` are ignored, so nothing after the tick time is used. Higher
/// timeframes are resampled from `bars` (only buckets that closed by `now`); a timeframe below
/// `interval`, or one `interval` does not divide, has no RSI.
#[must_use]
pub fn compute_indicators(
    bars: &[Bar],
    interval: Interval,
    now: DateTime<Utc>,
    reference: Option<&[Bar]>,
) -> Indicators {
    indicators_at(bars, interval, now, reference, None)
}

/// [`compute_indicators`] with the market condition the caller already classified (a tick
/// tags each symbol's regime once, over the window its prompt shows, and records that tag):
/// `classify_regime` is not run again.
#[must_use]
pub fn compute_indicators_with_regime(
    bars: &[Bar],
    interval: Interval,
    now: DateTime<Utc>,
    reference: Option<&[Bar]>,
    market_condition: RegimeTag,
) -> Indicators {
    indicators_at(bars, interval, now, reference, Some(market_condition))
}

fn indicators_at(
    bars: &[Bar],
    interval: Interval,
    now: DateTime<Utc>,
    reference: Option<&[Bar]>,
    market_condition: Option<RegimeTag>,
) -> Indicators {
    let closed = closed_by(bars, interval, now);
    // One pass over the bars: each price converted once, every series kept as its latest value
    // (the volatility percentile needs the closes themselves).
    let (fast, slow, signal) = MACD_PERIODS;
    let mut rsi = indicators::Rsi::new(RSI_PERIOD);
    let mut macd = indicators::Macd::new(fast, slow, signal);
    let mut adx = indicators::Adx::new(ADX_PERIOD);
    let (mut rsi_own, mut macd_now, mut adx_now) = (None, (None, None), None);
    let mut closes = Vec::with_capacity(closed.len());
    for b in closed {
        let close = decimal_to_f64(b.close);
        closes.push(close);
        rsi_own = rsi.push(close);
        macd_now = macd.push(close);
        adx_now = adx.push(decimal_to_f64(b.high), decimal_to_f64(b.low), close);
    }
    let rsi_tf = |tf: Interval| -> Option<f64> {
        if tf == interval {
            return finite(rsi_own);
        }
        if tf.minutes() < interval.minutes() || tf.minutes() % interval.minutes() != 0 {
            return None;
        }
        let mut rsi = indicators::Rsi::new(RSI_PERIOD);
        finite(resample_closes(closed, tf, now).fold(None, |_, c| rsi.push(c)))
    };
    // The volume ratio reads the latest bar and the `VOLUME_PERIOD` before it.
    let recent = &closed[closed.len().saturating_sub(VOLUME_PERIOD + 1)..];
    let volumes = to_f64(recent.iter().map(|b| b.volume));
    let btc_correlation = reference.and_then(|r| {
        let r = closed_by(r, interval, now);
        let (a, b) = aligned_log_returns(closed, r);
        indicators::correlation(&a, &b, CORRELATION_WINDOW)
    });
    Indicators {
        rsi_15m: rsi_tf(Interval::M15),
        rsi_1h: rsi_tf(Interval::H1),
        rsi_4h: rsi_tf(Interval::H4),
        macd_signal: indicators::macd_state(macd_now.0, macd_now.1),
        volatility_percentile: indicators::volatility_percentile(
            &closes,
            VOLATILITY_WINDOW,
            VOLATILITY_LOOKBACK,
        ),
        volume_ratio: indicators::volume_ratio(&volumes, VOLUME_PERIOD),
        trend_strength: finite(adx_now),
        btc_correlation,
        market_condition: market_condition.unwrap_or_else(|| classify_regime(closed)),
    }
}

/// The leading run of `bars` that closed at or before `now`.
fn closed_by(bars: &[Bar], interval: Interval, now: DateTime<Utc>) -> &[Bar] {
    let end = bars.partition_point(|b| b.close_time(interval) <= now);
    &bars[..end]
}

fn finite(value: Option<f64>) -> Option<f64> {
    value.filter(|v| v.is_finite())
}

fn to_f64(values: impl Iterator<Item = Decimal>) -> Vec<f64> {
    values.map(decimal_to_f64).collect()
}

/// `d.to_f64()` bit for bit, without its 128-bit division for a price that fits 64 bits:
/// `rust_decimal` splits the mantissa by `10^scale` in `u128` (a library call, most of the cost
/// of the indicators); below 2⁶⁴ the same split in `u64` gives the same integers, and the same
/// `f64` arithmetic on them the same value.
const POW10_U64: [u64; 20] = {
    let mut t = [1_u64; 20];
    let mut i = 1;
    while i < 20 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

#[allow(clippy::cast_precision_loss)]
const POW10_F64: [f64; 20] = {
    let mut t = [1.0_f64; 20];
    let mut i = 1;
    while i < 20 {
        t[i] = POW10_U64[i] as f64;
        i += 1;
    }
    t
};

pub(crate) fn decimal_to_f64(d: Decimal) -> f64 {
    let scale = d.scale();
    let mantissa = d.mantissa().unsigned_abs();
    let (Ok(mantissa), 1..=19) = (u64::try_from(mantissa), scale) else {
        return d.to_f64().unwrap_or(f64::NAN);
    };
    // 10^scale from tables: every power up to 10^19 is exact in both types, so the values are
    // those `10_u64.pow` and `10f64.powi` compute, without their loops.
    //
    // Below 2⁵⁰ the split further down rounds back to the mantissa exactly (its float errors
    // stay under a quarter), so the value is the mantissa over 10^scale, both exact in `f64`:
    // one correctly rounded division, the same bits without the 64-bit division and `round`.
    if mantissa < 1 << 50 {
        #[allow(clippy::cast_precision_loss)]
        let value = mantissa as f64 / POW10_F64[scale as usize];
        return if d.is_sign_negative() { -value } else { value };
    }
    let precision = POW10_U64[scale as usize];
    let round_to = POW10_F64[scale as usize];
    #[allow(clippy::cast_precision_loss)]
    let (integral, frac) = (
        (mantissa / precision) as f64,
        (mantissa % precision) as f64 / precision as f64,
    );
    let value = if frac == 0.0 {
        integral
    } else {
        ((integral + frac) * round_to).round() / round_to
    };
    if d.is_sign_negative() { -value } else { value }
}

/// The closes of `bars` resampled to `tf`: the last close of each `tf` bucket that closed by
/// `now`, oldest first. Buckets are compared in seconds ([`Interval::bucket_start_secs`]):
/// a date per bar was most of the cost.
fn resample_closes(
    bars: &[Bar],
    tf: Interval,
    now: DateTime<Utc>,
) -> impl Iterator<Item = f64> + '_ {
    let (len, now) = (tf.minutes() * 60, now.timestamp());
    let mut bars = bars
        .iter()
        .map(move |b| (tf.bucket_start_secs(b.time.timestamp()), b.close))
        .take_while(move |(bucket, _)| bucket + len <= now)
        .peekable();
    // The last close of each run of one bucket.
    std::iter::from_fn(move || {
        let (bucket, mut close) = bars.next()?;
        while let Some((_, c)) = bars.next_if(|(b, _)| *b == bucket) {
            close = c;
        }
        Some(decimal_to_f64(close))
    })
}

/// Log returns of `a` and `b` over the bar times both have, consecutive in that common
/// sequence.
fn aligned_log_returns(a: &[Bar], b: &[Bar]) -> (Vec<f64>, Vec<f64>) {
    let mut pairs: Vec<(f64, f64)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].time.cmp(&b[j].time) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                let (x, y) = (
                    a[i].close.to_f64().unwrap_or(f64::NAN),
                    b[j].close.to_f64().unwrap_or(f64::NAN),
                );
                pairs.push((x, y));
                i += 1;
                j += 1;
            }
        }
    }
    let mut ra = Vec::with_capacity(pairs.len());
    let mut rb = Vec::with_capacity(pairs.len());
    for w in pairs.windows(2) {
        let (x, y) = ((w[1].0 / w[0].0).ln(), (w[1].1 / w[0].1).ln());
        if x.is_finite() && y.is_finite() {
            ra.push(x);
            rb.push(y);
        }
    }
    (ra, rb)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast conversion is `Decimal::to_f64` bit for bit: over every scale, mantissas of
    /// every width (below and above 2⁶⁴, where it hands over), both signs and prices as bars
    /// carry them.
    #[test]
    fn decimal_to_f64_is_to_f64_bit_for_bit() {
        let mut x: u128 = 0x9E37_79B9_7F4A_7C15;
        let mut checked = 0;
        for scale in 0..=28_u32 {
            for bits in [
                1_u32, 8, 17, 24, 33, 40, 49, 50, 51, 53, 54, 63, 64, 65, 80, 96,
            ] {
                for _ in 0..200 {
                    // xorshift over 128 bits, cut to `bits` (a Decimal's mantissa has 96).
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let m = x & ((1_u128 << bits) - 1);
                    let m = i128::try_from(m).unwrap_or(0);
                    for m in [m, -m] {
                        let Ok(d) = Decimal::try_from_i128_with_scale(m, scale) else {
                            continue;
                        };
                        let (fast, exact) = (decimal_to_f64(d), d.to_f64().unwrap_or(f64::NAN));
                        assert_eq!(fast.to_bits(), exact.to_bits(), "{d} (scale {scale})");
                        checked += 1;
                    }
                }
            }
        }
        for text in [
            "1.12274", "0.00001", "-0", "-0.000", "112274.5", "21697", "1e-28",
        ] {
            let d: Decimal = text
                .parse()
                .unwrap_or_else(|_| Decimal::from_scientific(text).expect("a decimal"));
            assert_eq!(
                decimal_to_f64(d).to_bits(),
                d.to_f64().unwrap_or(f64::NAN).to_bits(),
                "{text}"
            );
        }
        assert!(checked > 100_000, "{checked}");
    }
}
