//! The numbers of a walk-forward comparison (`ab --windows`, `arena`): the metrics read from
//! each run's summary, each row's estimate with its bootstrap interval over the windows, the
//! paired difference against the reference row with its interval and the probability of
//! beating it, and the market regime of a window.
//!
//! Every statistic is over windows, with the repeated runs of a window nested inside it
//! ([`crate::bootstrap`]): a window's value is the mean over its runs; additive metrics (net
//! return, trades, cost, tokens) are summed over the windows — what the whole stretch made,
//! cost or traded — and the others (Sharpe, max drawdown, win rate) are the mean per window. A
//! metric a run does not have (a Sharpe without variation, a win rate without a closed trade)
//! leaves the run out, and a window without any such run leaves the window out of that metric;
//! a difference uses the windows where both rows have it.

use rust_decimal::Decimal;
use serde::Serialize;
use types::{Bar, RegimeTag, classify_regime, text};

use crate::bootstrap::{self, Cluster, Interval as Ci};

/// Confidence of every interval, in percent.
pub(crate) const CONFIDENCE_PCT: u32 = 95;

/// How a compared value prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    /// [`text::money`].
    Dollars,
    /// [`text::pct`].
    Percent,
    /// Two decimals ([`text::grouped_fixed`]), e.g. a Sharpe ratio.
    Ratio,
    /// A model cost ([`text::cost`]).
    Cost,
    /// A count, to one decimal where repeats average it ([`text::num`]).
    Count,
}

impl Unit {
    /// `d` in this unit's text style.
    pub(crate) fn show(self, d: Decimal) -> String {
        match self {
            Unit::Dollars => text::money(d),
            Unit::Percent => text::pct(d),
            Unit::Ratio => text::grouped_fixed(d, 2),
            Unit::Cost => text::cost(d),
            Unit::Count => text::num(d.round_dp(1)),
        }
    }
}

/// Which way a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Better {
    Higher,
    Lower,
    /// Neither (a trade count): no probability of beating.
    Neither,
}

/// A compared metric.
pub(crate) struct Metric {
    /// Its key in arena.json.
    pub key: &'static str,
    /// Its name in text.
    pub name: &'static str,
    /// Summed over the windows (else the mean per window).
    pub sum: bool,
    pub better: Better,
    pub unit: Unit,
    /// Its value in a run's summary.json.
    pub read: fn(&serde_json::Value) -> Option<Decimal>,
}

impl Metric {
    /// The statistic over the windows, in words.
    pub(crate) fn statistic(&self) -> &'static str {
        if self.sum {
            "sum over windows"
        } else {
            "mean per window"
        }
    }
}

/// A summary's decimal at `pointer` (a string or a number).
pub(crate) fn decimal_at(summary: &serde_json::Value, pointer: &str) -> Option<Decimal> {
    match summary.pointer(pointer)? {
        serde_json::Value::String(s) => s.parse().ok(),
        serde_json::Value::Number(n) => n.to_string().parse().ok(),
        _ => None,
    }
}

/// Every token the run's model calls and reflections used: in, out, cache read and write.
fn tokens(summary: &serde_json::Value) -> Option<Decimal> {
    ["input", "output", "cache_read", "cache_write"]
        .iter()
        .map(|k| decimal_at(summary, &format!("/tokens/{k}")))
        .sum()
}

/// The metrics, in the order they are shown. Net return is the equity at a window's end less
/// the initial: realized PnL net of every fee plus the unrealized PnL of what is still open,
/// marked at the last close (summary.json's `total_return_usd`).
pub(crate) const METRICS: [Metric; 7] = [
    Metric {
        key: "net_return_usd",
        name: "net return",
        sum: true,
        better: Better::Higher,
        unit: Unit::Dollars,
        read: |s| decimal_at(s, "/total_return_usd"),
    },
    Metric {
        key: "sharpe",
        name: "Sharpe",
        sum: false,
        better: Better::Higher,
        unit: Unit::Ratio,
        read: |s| decimal_at(s, "/sharpe"),
    },
    Metric {
        key: "max_drawdown_pct",
        name: "max drawdown",
        sum: false,
        better: Better::Lower,
        unit: Unit::Percent,
        read: |s| decimal_at(s, "/max_drawdown_pct"),
    },
    Metric {
        key: "win_rate_pct",
        name: "win rate",
        sum: false,
        better: Better::Higher,
        unit: Unit::Percent,
        read: |s| decimal_at(s, "/win_rate_pct"),
    },
    Metric {
        key: "trades",
        name: "trades",
        sum: true,
        better: Better::Neither,
        unit: Unit::Count,
        read: |s| decimal_at(s, "/trades"),
    },
    Metric {
        key: "cost_usd",
        name: "cost",
        sum: true,
        better: Better::Lower,
        unit: Unit::Cost,
        read: |s| decimal_at(s, "/cost_usd"),
    },
    Metric {
        key: "tokens",
        name: "tokens",
        sum: true,
        better: Better::Lower,
        unit: Unit::Count,
        read: tokens,
    },
];

/// The metric with `key`.
pub(crate) fn metric(key: &str) -> &'static Metric {
    METRICS.iter().find(|m| m.key == key).unwrap_or(&METRICS[0])
}

/// How the intervals are drawn.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resampling {
    pub resamples: u32,
    pub seed: u64,
}

/// A row's runs: per window, the summary.json of each of its repeated runs.
pub(crate) type RowRuns = [Vec<serde_json::Value>];

/// A statistic over the windows: the estimate, and with two windows or more its interval and
/// (for a difference) the probability that the row beats the reference.
#[derive(Debug, Clone)]
pub(crate) struct Compared {
    /// Windows that count.
    pub windows: usize,
    pub estimate: Decimal,
    /// With at least two windows.
    pub interval: Option<Ci>,
    /// For a difference with an interval, of a metric with a better side: the share of the
    /// resamples on the row's better side of 0 (ties count half).
    pub p_better: Option<Decimal>,
}

/// One window's values of `metric` over its runs (those that have it).
fn values(runs: &[serde_json::Value], metric: &Metric) -> Vec<Decimal> {
    runs.iter().filter_map(|s| (metric.read)(s)).collect()
}

fn compare(
    clusters: &[Cluster<'_>],
    metric: &Metric,
    how: Resampling,
    paired: bool,
) -> Option<Compared> {
    let n = clusters.len();
    let scale = if metric.sum {
        Decimal::from(n as u64)
    } else {
        Decimal::ONE
    };
    if n < 2 {
        // One window: nothing to resample.
        return Some(Compared {
            windows: n,
            estimate: bootstrap::nested_estimate(clusters, scale)?,
            interval: None,
            p_better: None,
        });
    }
    let nested =
        bootstrap::nested_interval(clusters, scale, how.resamples, how.seed, CONFIDENCE_PCT)?;
    let p_better = match metric.better {
        _ if !paired => None,
        Better::Higher => Some(nested.share(true)),
        Better::Lower => Some(nested.share(false)),
        Better::Neither => None,
    };
    Some(Compared {
        windows: n,
        estimate: nested.interval.estimate,
        interval: Some(nested.interval),
        p_better,
    })
}

/// `row`'s statistic of `metric` over the windows in `only` (all when `None`).
pub(crate) fn estimate(
    row: &RowRuns,
    metric: &Metric,
    how: Resampling,
    only: Option<&[usize]>,
) -> Option<Compared> {
    let per_window: Vec<Vec<Decimal>> = picked(row.len(), only)
        .map(|w| values(&row[w], metric))
        .collect();
    let clusters: Vec<Cluster<'_>> = per_window
        .iter()
        .filter(|v| !v.is_empty())
        .map(|v| Cluster {
            values: v,
            minus: &[],
        })
        .collect();
    compare(&clusters, metric, how, false)
}

/// `row` − `reference` of `metric`, paired by window, over the windows in `only` (all when
/// `None`) where both have it.
pub(crate) fn versus(
    row: &RowRuns,
    reference: &RowRuns,
    metric: &Metric,
    how: Resampling,
    only: Option<&[usize]>,
) -> Option<Compared> {
    let per_window: Vec<(Vec<Decimal>, Vec<Decimal>)> = picked(row.len(), only)
        .map(|w| {
            (
                values(&row[w], metric),
                reference
                    .get(w)
                    .map_or_else(Vec::new, |r| values(r, metric)),
            )
        })
        .collect();
    let clusters: Vec<Cluster<'_>> = per_window
        .iter()
        .filter(|(a, r)| !a.is_empty() && !r.is_empty())
        .map(|(a, r)| Cluster {
            values: a,
            minus: r,
        })
        .collect();
    compare(&clusters, metric, how, true)
}

fn picked(windows: usize, only: Option<&[usize]>) -> Box<dyn Iterator<Item = usize> + '_> {
    match only {
        Some(only) => Box::new(only.iter().copied().filter(move |&w| w < windows)),
        None => Box::new(0..windows),
    }
}

/// A decimal of arena.json: rounded to 6 decimals (a model's cost is mostly fractions of a
/// cent), trailing zeros dropped.
pub(crate) fn json_decimal(d: Decimal) -> String {
    d.round_dp(6).normalize().to_string()
}

/// A statistic in arena.json.
#[derive(Debug, Serialize)]
pub(crate) struct StatJson {
    /// Windows that count.
    pub windows: usize,
    /// The row's statistic, or the difference row − reference.
    pub estimate: String,
    /// The interval's ends; `null` with fewer than two windows.
    pub low: Option<String>,
    pub high: Option<String>,
    /// For a difference: the share of bootstrap resamples in which the row is better than the
    /// reference (ties count half); `null` for a metric without a better side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_better: Option<String>,
}

impl From<&Compared> for StatJson {
    fn from(c: &Compared) -> Self {
        Self {
            windows: c.windows,
            estimate: json_decimal(c.estimate),
            low: c.interval.as_ref().map(|i| json_decimal(i.low)),
            high: c.interval.as_ref().map(|i| json_decimal(i.high)),
            p_better: c.p_better.map(json_decimal),
        }
    }
}

/// One metric of a row: its statistic, and its difference from the reference (none for the
/// reference itself).
#[derive(Debug, Clone, Default)]
pub(crate) struct Cell {
    pub value: Option<Compared>,
    pub vs: Option<Compared>,
}

/// Every metric of `row` ([`METRICS`]' order) over the windows in `only` (all when `None`),
/// and its difference from `reference` when given.
pub(crate) fn cells(
    row: &RowRuns,
    reference: Option<&RowRuns>,
    how: Resampling,
    only: Option<&[usize]>,
) -> Vec<Cell> {
    METRICS
        .iter()
        .map(|m| Cell {
            value: estimate(row, m, how, only),
            vs: reference.and_then(|r| versus(row, r, m, how, only)),
        })
        .collect()
}

/// One metric of a row in arena.json.
#[derive(Debug, Serialize)]
pub(crate) struct MetricJson {
    /// `sum over windows` or `mean per window`.
    pub statistic: &'static str,
    /// The row's own statistic; `null` when no window has the metric.
    pub value: Option<StatJson>,
    /// The difference from the reference; `null` for the reference itself, or when no window
    /// has the metric on both sides.
    pub vs_reference: Option<StatJson>,
}

/// [`cells`] as arena.json writes them, by metric key.
pub(crate) fn cells_json(cells: &[Cell]) -> serde_json::Map<String, serde_json::Value> {
    METRICS
        .iter()
        .zip(cells)
        .map(|(m, c)| {
            let json = MetricJson {
                statistic: m.statistic(),
                value: c.value.as_ref().map(StatJson::from),
                vs_reference: c.vs.as_ref().map(StatJson::from),
            };
            (
                m.key.to_owned(),
                serde_json::to_value(json).unwrap_or_default(),
            )
        })
        .collect()
}

/// The mean of `metric` over a window's runs (those that have it).
pub(crate) fn window_mean(runs: &[serde_json::Value], metric: &Metric) -> Option<Decimal> {
    let v = values(runs, metric);
    (!v.is_empty()).then(|| v.iter().sum::<Decimal>() / Decimal::from(v.len() as u64))
}

/// Bars the regime of a stretch is judged on: [`classify_regime`] reads the last 20 bars it
/// is given, so a longer stretch is first grouped into 20 consecutive bars of (nearly) equal
/// length — open of the first, highest high, lowest low, close of the last — and the whole
/// window is judged, not its last 20 bars.
const REGIME_BARS: usize = 20;

/// The market regime over `bars` (a window's bars of one symbol): [`classify_regime`] over
/// them, grouped into [`REGIME_BARS`] bars when there are more.
pub(crate) fn window_regime(bars: &[Bar]) -> RegimeTag {
    let n = bars.len();
    if n <= REGIME_BARS {
        return classify_regime(bars);
    }
    let grouped: Vec<Bar> = (0..REGIME_BARS)
        .map(|k| {
            let part = &bars[k * n / REGIME_BARS..(k + 1) * n / REGIME_BARS];
            let (first, last) = (&part[0], &part[part.len() - 1]);
            Bar {
                time: first.time,
                open: first.open,
                high: part.iter().map(|b| b.high).max().unwrap_or(first.high),
                low: part.iter().map(|b| b.low).min().unwrap_or(first.low),
                close: last.close,
                volume: part.iter().map(|b| b.volume).sum(),
            }
        })
        .collect();
    classify_regime(&grouped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone, Utc};
    use rust_decimal_macros::dec;
    use serde_json::json;

    const HOW: Resampling = Resampling {
        resamples: 2_000,
        seed: 5,
    };

    fn run(net: &str, sharpe: Option<f64>) -> serde_json::Value {
        json!({"total_return_usd": net, "sharpe": sharpe, "trades": 2,
               "tokens": {"input": 10, "output": 2, "cache_read": 0, "cache_write": 1}})
    }

    #[test]
    fn sums_and_means_over_windows_of_repeat_means() {
        let row = vec![
            vec![run("10", Some(1.0)), run("20", None)],
            vec![run("-6", Some(3.0))],
        ];
        let net = estimate(&row, metric("net_return_usd"), HOW, None).unwrap();
        // Window means 15 and −6, summed.
        assert_eq!((net.windows, net.estimate), (2, dec!(9)));
        let sharpe = estimate(&row, metric("sharpe"), HOW, None).unwrap();
        // The run without a Sharpe is left out: window means 1 and 3.
        assert_eq!(sharpe.estimate, dec!(2));
        assert_eq!(
            estimate(&row, metric("tokens"), HOW, None)
                .unwrap()
                .estimate,
            dec!(26)
        );
        // One window: an estimate without an interval.
        let one = estimate(&row, metric("net_return_usd"), HOW, Some(&[1])).unwrap();
        assert_eq!((one.estimate, one.interval), (dec!(-6), None));
    }

    #[test]
    fn a_difference_pairs_windows_and_says_how_often_the_row_is_better() {
        let a = vec![
            vec![run("10", None)],
            vec![run("12", None)],
            vec![run("9", None)],
        ];
        let r = vec![
            vec![run("1", None)],
            vec![run("2", None)],
            vec![run("3", None)],
        ];
        let d = versus(&a, &r, metric("net_return_usd"), HOW, None).unwrap();
        assert_eq!(d.estimate, dec!(25));
        // Every window is better: every resample is.
        assert_eq!(d.p_better, Some(Decimal::ONE));
        let dd = versus(&a, &r, metric("trades"), HOW, None).unwrap();
        assert_eq!((dd.estimate, dd.p_better), (Decimal::ZERO, None));
        assert!(versus(&a, &r, metric("sharpe"), HOW, None).is_none());
    }

    #[test]
    fn a_window_is_judged_whole() {
        let t0 = Utc.with_ymd_and_hms(2017, 4, 1, 0, 0, 0).unwrap();
        let bar = |i: i64, c: Decimal| Bar {
            time: t0 + Duration::hours(i),
            open: c,
            high: c + dec!(0.5),
            low: c - dec!(0.5),
            close: c,
            volume: Decimal::ONE,
        };
        // 60 bars climbing, then 20 falling a little: the window rose.
        let mut bars: Vec<Bar> = (0..60).map(|i| bar(i, Decimal::from(100 + i))).collect();
        bars.extend((0..20).map(|i| bar(60 + i, Decimal::from(159 - i / 4))));
        assert_eq!(classify_regime(&bars), RegimeTag::TrendingDown);
        assert_eq!(window_regime(&bars), RegimeTag::TrendingUp);
        assert_eq!(window_regime(&bars[..5]), RegimeTag::Unknown);
    }
}
