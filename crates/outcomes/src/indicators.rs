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
    let mut out = Vec::with_capacity(values.len());
    let mut y = None::<f64>;
    for (i, x) in values.iter().enumerate() {
        let next = match y {
            None => *x,
            Some(prev) => (1.0 - alpha).mul_add(prev, alpha * x),
        };
        y = Some(next);
        out.push((i + 1 >= min_periods.max(1)).then_some(next));
    }
    out
}

/// Relative strength index over `period`: `100 − 100 / (1 + avg gain / avg loss)`, the averages
/// Wilder's smoothing of the changes' gains and losses. As the Python `ta` library's
/// `RSIIndicator` (the reference), the first bar counts as a change of 0 (seeding both averages
/// at 0), so the RSI is defined from point `period − 1` of `closes`; 100 when there was no
/// loss, `None` when there was neither gain nor loss.
#[must_use]
pub fn rsi(closes: &[f64], period: usize) -> Vec<Option<f64>> {
    let mut out = vec![None; closes.len()];
    if closes.is_empty() || period == 0 {
        return out;
    }
    let changes: Vec<f64> = std::iter::once(0.0)
        .chain(closes.windows(2).map(|w| w[1] - w[0]))
        .collect();
    let gains: Vec<f64> = changes.iter().map(|d| d.max(0.0)).collect();
    let losses: Vec<f64> = changes.iter().map(|d| (-d).max(0.0)).collect();
    let alpha = 1.0 / period as f64;
    let up = ewm(&gains, alpha, period);
    let down = ewm(&losses, alpha, period);
    for (i, (u, d)) in up.into_iter().zip(down).enumerate() {
        out[i] = match (u, d) {
            (Some(u), Some(d)) if d > 0.0 => Some(100.0 - 100.0 / (1.0 + u / d)),
            (Some(u), Some(_)) if u > 0.0 => Some(100.0),
            _ => None,
        };
    }
    out
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
    let span = |n: usize| 2.0 / (n as f64 + 1.0);
    let f = ewm(closes, span(fast), fast);
    let s = ewm(closes, span(slow), slow);
    let line: Vec<Option<f64>> = f.iter().zip(&s).map(|(f, s)| Some((*f)? - (*s)?)).collect();
    let mut sig = vec![None; closes.len()];
    if let Some(start) = line.iter().position(Option::is_some) {
        let defined: Vec<f64> = line[start..].iter().map(|v| v.unwrap_or(0.0)).collect();
        for (i, v) in ewm(&defined, span(signal), signal).into_iter().enumerate() {
            sig[start + i] = v;
        }
    }
    (line, sig)
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
    let n = high.len().min(low.len()).min(close.len());
    let mut out = vec![None; n];
    if n < 2 || period == 0 {
        return out;
    }
    let mut tr = Vec::with_capacity(n - 1);
    let mut plus = Vec::with_capacity(n - 1);
    let mut minus = Vec::with_capacity(n - 1);
    for i in 1..n {
        let prev_close = close[i - 1];
        tr.push(
            (high[i] - low[i])
                .max((high[i] - prev_close).abs())
                .max((low[i] - prev_close).abs()),
        );
        let up = high[i] - high[i - 1];
        let down = low[i - 1] - low[i];
        plus.push(if up > down && up > 0.0 { up } else { 0.0 });
        minus.push(if down > up && down > 0.0 { down } else { 0.0 });
    }
    let alpha = 1.0 / period as f64;
    let atr = ewm(&tr, alpha, period);
    let pdm = ewm(&plus, alpha, period);
    let mdm = ewm(&minus, alpha, period);
    let dx: Vec<Option<f64>> = atr
        .iter()
        .zip(pdm.iter().zip(&mdm))
        .map(|(a, (p, m))| {
            let (a, p, m) = ((*a)?, (*p)?, (*m)?);
            if a <= 0.0 {
                return None;
            }
            let (pdi, mdi) = (100.0 * p / a, 100.0 * m / a);
            let sum = pdi + mdi;
            Some(if sum > 0.0 {
                100.0 * (pdi - mdi).abs() / sum
            } else {
                0.0
            })
        })
        .collect();
    if let Some(start) = dx.iter().position(Option::is_some) {
        // A gap after the start (a flat stretch: no range at all) ends the series there.
        let defined: Vec<f64> = dx[start..].iter().map_while(|v| *v).collect();
        for (i, v) in ewm(&defined, alpha, period).into_iter().enumerate() {
            out[start + i + 1] = v;
        }
    }
    out
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
    let returns: Vec<f64> = closes.windows(2).map(|w| (w[1] / w[0]).ln()).collect();
    if returns.len() < window + lookback - 1 {
        return None;
    }
    let vols: Vec<f64> = returns[returns.len() - (window + lookback - 1)..]
        .windows(window)
        .map(sample_std)
        .collect();
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
