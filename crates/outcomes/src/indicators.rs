//! The indicator formulas, over plain `f64` series (indicators are statistics, not money).
//!
//! Every series function returns one value per input point, `None` where the indicator is not
//! defined yet (its warm-up) or not defined at all (a division by zero). Smoothing is the
//! exponentially weighted mean seeded with the first observation (`pandas`'
//! `ewm(adjust=False)`, as the Python `ta` library computes RSI and MACD): Wilder's smoothing is
//! `alpha = 1 / n`, an `n`-span EMA `alpha = 2 / (n + 1)`. The reference values in
//! `tests/fixtures/indicators_reference.csv` were generated with `pandas` and `ta` by
//! `tests/fixtures/gen_reference.py`.

/// The exponentially weighted mean of `values` with smoothing factor `alpha`, seeded with the
/// first value (`y₀ = x₀`, `yᵢ = (1 − α)·yᵢ₋₁ + α·xᵢ`); `None` for the first `min_periods − 1`
/// points.
#[must_use]
pub fn ewm(values: &[f64], alpha: f64, min_periods: usize) -> Vec<Option<f64>> {
    let mut mean = Ewm::new(alpha, min_periods);
    values.iter().map(|x| mean.push(*x)).collect()
}

/// [`ewm`] one point at a time: the same arithmetic, so the same values bit for bit. A caller
/// that needs only the latest value (a decision's snapshot) keeps no series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ewm {
    alpha: f64,
    min_periods: usize,
    seen: usize,
    y: Option<f64>,
}

impl Ewm {
    /// The mean of no points yet, smoothing factor `alpha`, defined from point `min_periods`.
    #[must_use]
    pub const fn new(alpha: f64, min_periods: usize) -> Self {
        Self {
            alpha,
            min_periods,
            seen: 0,
            y: None,
        }
    }

    /// Takes the next point: the mean with it, `None` during the warm-up.
    pub fn push(&mut self, x: f64) -> Option<f64> {
        let next = match self.y {
            None => x,
            Some(prev) => (1.0 - self.alpha).mul_add(prev, self.alpha * x),
        };
        self.y = Some(next);
        self.seen += 1;
        (self.seen >= self.min_periods.max(1)).then_some(next)
    }
}

/// Relative strength index over `period`: `100 − 100 / (1 + avg gain / avg loss)`, the averages
/// Wilder's smoothing of the changes' gains and losses. As the Python `ta` library's
/// `RSIIndicator` (the reference), the first bar counts as a change of 0 (seeding both averages
/// at 0), so the RSI is defined from point `period − 1` of `closes`; 100 when there was no
/// loss, `None` when there was neither gain nor loss.
#[must_use]
pub fn rsi(closes: &[f64], period: usize) -> Vec<Option<f64>> {
    let mut rsi = Rsi::new(period);
    closes.iter().map(|c| rsi.push(*c)).collect()
}

/// [`rsi`] one close at a time (the same values).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rsi {
    period: usize,
    prev: Option<f64>,
    up: Ewm,
    down: Ewm,
}

impl Rsi {
    /// The RSI over `period` before any close (`period` 0: never defined).
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn new(period: usize) -> Self {
        let alpha = 1.0 / period as f64;
        Self {
            period,
            prev: None,
            up: Ewm::new(alpha, period),
            down: Ewm::new(alpha, period),
        }
    }

    /// Takes the next close: the RSI at it.
    pub fn push(&mut self, close: f64) -> Option<f64> {
        if self.period == 0 {
            return None;
        }
        let change = self.prev.map_or(0.0, |prev| close - prev);
        self.prev = Some(close);
        let up = self.up.push(change.max(0.0));
        let down = self.down.push((-change).max(0.0));
        match (up, down) {
            (Some(u), Some(d)) if d > 0.0 => Some(100.0 - 100.0 / (1.0 + u / d)),
            (Some(u), Some(_)) if u > 0.0 => Some(100.0),
            _ => None,
        }
    }
}

/// MACD(`fast`, `slow`, `signal`): the MACD line (EMA `fast` − EMA `slow` of the closes,
/// defined from point `slow − 1`) and its signal line (EMA `signal` of the MACD line, seeded
/// with its first defined value, defined `signal − 1` points later).
#[must_use]
pub fn macd(
    closes: &[f64],
    fast: usize,
    slow: usize,
    signal: usize,
) -> (Vec<Option<f64>>, Vec<Option<f64>>) {
    let mut macd = Macd::new(fast, slow, signal);
    closes.iter().map(|c| macd.push(*c)).unzip()
}

/// [`macd`] one close at a time (the same values).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Macd {
    fast: Ewm,
    slow: Ewm,
    signal: Ewm,
}

impl Macd {
    /// MACD(`fast`, `slow`, `signal`) before any close.
    #[must_use]
    pub fn new(fast: usize, slow: usize, signal: usize) -> Self {
        #[allow(clippy::cast_precision_loss)]
        let span = |n: usize| Ewm::new(2.0 / (n as f64 + 1.0), n);
        Self {
            fast: span(fast),
            slow: span(slow),
            signal: span(signal),
        }
    }

    /// Takes the next close: the MACD line and the signal line at it. The line, once defined,
    /// stays defined (both averages are), so the signal averages an unbroken run of it.
    pub fn push(&mut self, close: f64) -> (Option<f64>, Option<f64>) {
        let (fast, slow) = (self.fast.push(close), self.slow.push(close));
        let line = fast.zip(slow).map(|(f, s)| f - s);
        (line, line.and_then(|l| self.signal.push(l)))
    }
}

/// The MACD state at one point (this crate's rule): **bullish** when the MACD line is above
/// its signal line and above zero, **bearish** when it is below both, **neutral** otherwise
/// (the two readings disagree) — `None` before both lines are defined.
#[must_use]
pub fn macd_state(line: Option<f64>, signal: Option<f64>) -> Option<crate::MacdState> {
    let (m, s) = (line?, signal?);
    Some(if m > s && m > 0.0 {
        crate::MacdState::Bullish
    } else if m < s && m < 0.0 {
        crate::MacdState::Bearish
    } else {
        crate::MacdState::Neutral
    })
}

/// Average directional index over `period` (Wilder): true range, +DM and −DM from each bar and
/// the one before, each smoothed with `alpha = 1 / period` (seeded with its first value,
/// defined from its `period`-th), `+DI = 100·sm(+DM)/sm(TR)`, `−DI` likewise,
/// `DX = 100·|+DI − −DI| / (+DI + −DI)` (0 when both are 0), ADX = the same smoothing of DX,
/// defined from its `period`-th value: point `2·period − 1` of the bars.
#[must_use]
pub fn adx(high: &[f64], low: &[f64], close: &[f64], period: usize) -> Vec<Option<f64>> {
    let mut adx = Adx::new(period);
    high.iter()
        .zip(low)
        .zip(close)
        .map(|((h, l), c)| adx.push(*h, *l, *c))
        .collect()
}

/// [`adx`] one bar at a time (the same values).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Adx {
    period: usize,
    prev: Option<(f64, f64, f64)>,
    atr: Ewm,
    plus: Ewm,
    minus: Ewm,
    adx: Ewm,
    dx: DxRun,
}

/// Where the DX series is: ADX smooths its first unbroken run of defined values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DxRun {
    Before,
    In,
    /// A gap after the start (a flat stretch: no range at all) ended the series.
    Ended,
}

impl Adx {
    /// The ADX over `period` before any bar (`period` 0: never defined).
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn new(period: usize) -> Self {
        let wilder = Ewm::new(1.0 / period as f64, period);
        Self {
            period,
            prev: None,
            atr: wilder,
            plus: wilder,
            minus: wilder,
            adx: wilder,
            dx: DxRun::Before,
        }
    }

    /// Takes the next bar's high, low and close: the ADX at it.
    pub fn push(&mut self, high: f64, low: f64, close: f64) -> Option<f64> {
        let (prev_high, prev_low, prev_close) = self.prev.replace((high, low, close))?;
        if self.period == 0 {
            return None;
        }
        let tr = (high - low)
            .max((high - prev_close).abs())
            .max((low - prev_close).abs());
        let up = high - prev_high;
        let down = prev_low - low;
        let atr = self.atr.push(tr);
        let plus = self.plus.push(if up > down && up > 0.0 { up } else { 0.0 });
        let minus = self
            .minus
            .push(if down > up && down > 0.0 { down } else { 0.0 });
        // `!(a <= 0.0)`, not `a > 0.0`: a NaN range goes on into the arithmetic, as it always did.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        let dx = match (atr, plus, minus) {
            (Some(a), Some(p), Some(m)) if !(a <= 0.0) => {
                let (pdi, mdi) = (100.0 * p / a, 100.0 * m / a);
                let sum = pdi + mdi;
                Some(if sum > 0.0 {
                    100.0 * (pdi - mdi).abs() / sum
                } else {
                    0.0
                })
            }
            _ => None,
        };
        match (self.dx, dx) {
            (DxRun::Ended, _) | (DxRun::Before, None) => None,
            (DxRun::Before | DxRun::In, Some(dx)) => {
                self.dx = DxRun::In;
                self.adx.push(dx)
            }
            (DxRun::In, None) => {
                self.dx = DxRun::Ended;
                None
            }
        }
    }
}

/// Where the latest `window`-bar volatility ranks among the last `lookback` such values, 0–100.
///
/// Volatility at a point is the sample standard deviation (n − 1) of the last `window` log
/// returns of the closes; the percentile is the share of the last `lookback` volatilities
/// (the latest included) that are at or below the latest, × 100. `None` until `window +
/// lookback − 1` returns exist, or when a close is not positive.
#[must_use]
pub fn volatility_percentile(closes: &[f64], window: usize, lookback: usize) -> Option<f64> {
    if window < 2 || lookback == 0 || closes.iter().any(|c| *c <= 0.0) {
        return None;
    }
    // The returns the readings use: those of the last `window + lookback` closes.
    let need = window + lookback - 1;
    if closes.len().saturating_sub(1) < need {
        return None;
    }
    let returns: Vec<f64> = closes[closes.len() - (need + 1)..]
        .windows(2)
        .map(|w| (w[1] / w[0]).ln())
        .collect();
    let vols: Vec<f64> = returns.windows(window).map(sample_std).collect();
    let latest = *vols.last()?;
    let at_or_below = vols.iter().filter(|v| **v <= latest).count();
    Some(100.0 * at_or_below as f64 / vols.len() as f64)
}

fn sample_std(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    var.sqrt()
}

/// The latest volume over the mean volume of the `period` bars before it; `None` with fewer
/// than `period + 1` bars or a zero mean.
#[must_use]
pub fn volume_ratio(volumes: &[f64], period: usize) -> Option<f64> {
    let (last, before) = volumes.split_last()?;
    if period == 0 || before.len() < period {
        return None;
    }
    let mean = before[before.len() - period..].iter().sum::<f64>() / period as f64;
    (mean > 0.0).then(|| last / mean)
}

/// Pearson correlation of the last `window` pairs of `a` and `b` (already aligned returns);
/// `None` with fewer pairs or no variation in either.
#[must_use]
pub fn correlation(a: &[f64], b: &[f64], window: usize) -> Option<f64> {
    let n = a.len().min(b.len());
    if window < 2 || n < window {
        return None;
    }
    let (a, b) = (&a[a.len() - window..], &b[b.len() - window..]);
    let w = window as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / w, b.iter().sum::<f64>() / w);
    let mut cov = 0.0;
    let mut va = 0.0;
    let mut vb = 0.0;
    for (x, y) in a.iter().zip(b) {
        cov += (x - ma) * (y - mb);
        va += (x - ma).powi(2);
        vb += (y - mb).powi(2);
    }
    (va > 0.0 && vb > 0.0).then(|| cov / (va * vb).sqrt())
}
