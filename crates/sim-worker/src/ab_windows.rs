//! `sim-worker ab --windows N`: A and B walk forward over the same bars, window by window, and
//! the difference B − A of each metric gets a bootstrap confidence interval over the windows —
//! the evidence ADR-0017 asks for before calling a variant better.
//!
//! The ticks from the first to the last are split into `N` consecutive windows of equal time
//! span (on the bar grid). Each window is its own backtest of A and of B, from a fresh account
//! of the same equity, with the bars before the window as lookback, so the windows are
//! independent samples of the same strategy on different market stretches. Per window and
//! metric, `d = B − A` (a metric missing on either side — a Sharpe without trades — leaves the
//! window out of that metric). Net PnL is reported as the sum over the windows (what the whole
//! stretch made), Sharpe, max drawdown and win rate as the mean per window; the interval is
//! the percentile bootstrap of that statistic ([`crate::bootstrap`]).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::{DateTime, Duration, Utc};
use rust_decimal::Decimal;
use types::{Interval, text};

use crate::Failure;
use crate::bootstrap::{self, Interval as Ci};
use crate::run_cmd::{RunArgs, run_with_summary};

/// What `ab --windows` runs.
pub(crate) struct Plan {
    pub windows: u32,
    pub concurrency: u32,
    pub resamples: u32,
    pub seed: u64,
    pub first_tick: DateTime<Utc>,
    pub last_tick: DateTime<Utc>,
    pub interval: Interval,
    pub initial_equity: Decimal,
}

/// Confidence of every interval, in percent.
const CONFIDENCE_PCT: u32 = 95;

/// How a compared value prints: money, a percentage, or a ratio with two decimals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    /// [`text::money`].
    Dollars,
    /// [`text::pct`].
    Percent,
    /// Two decimals ([`text::grouped_fixed`]), e.g. a Sharpe ratio.
    Ratio,
}

impl Unit {
    /// `d` in this unit's text style.
    pub(crate) fn show(self, d: Decimal) -> String {
        match self {
            Unit::Dollars => text::money(d),
            Unit::Percent => text::pct(d),
            Unit::Ratio => text::grouped_fixed(d, 2),
        }
    }
}

/// A compared metric: label (its key in ab.json), name in the sentence, JSON pointer into
/// summary.json, statistic over the windows, whether lower is better, and its unit.
struct Metric {
    label: &'static str,
    name: &'static str,
    pointer: &'static str,
    sum: bool,
    lower_is_better: bool,
    unit: Unit,
}

const METRICS: [Metric; 4] = [
    Metric {
        label: "net PnL",
        name: "net PnL",
        pointer: NET_PNL,
        sum: true,
        lower_is_better: false,
        unit: Unit::Dollars,
    },
    Metric {
        label: "Sharpe",
        name: "Sharpe",
        pointer: "/sharpe",
        sum: false,
        lower_is_better: false,
        unit: Unit::Ratio,
    },
    Metric {
        label: "max drawdown %",
        name: "max drawdown",
        pointer: "/max_drawdown_pct",
        sum: false,
        lower_is_better: true,
        unit: Unit::Percent,
    },
    Metric {
        label: "win rate %",
        name: "win rate",
        pointer: "/win_rate_pct",
        sum: false,
        lower_is_better: false,
        unit: Unit::Percent,
    },
];

/// A window's net PnL: its equity at the end less the initial — realized PnL net of every fee
/// plus the unrealized PnL of what is still open, marked at the last close (summary.json's
/// `total_return_usd`). Realized PnL alone would count an open position's entry fee and not its
/// gain or loss.
const NET_PNL: &str = "/total_return_usd";

/// The window boundaries: `(from, to)` tick times, inclusive, on the bar grid of `first`.
pub(crate) fn windows(
    first: DateTime<Utc>,
    last: DateTime<Utc>,
    interval: Interval,
    n: u32,
) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
    let step = interval.minutes();
    let bars = (last - first).num_minutes() / step + 1;
    let n = i64::from(n).min(bars).max(1);
    let start = |i: i64| first + Duration::minutes(bars * i / n * step);
    (0..n)
        .map(|i| {
            let to = if i + 1 == n {
                last
            } else {
                start(i + 1) - Duration::minutes(step)
            };
            (start(i), to)
        })
        .collect()
}

fn value(summary: &serde_json::Value, pointer: &str) -> Option<Decimal> {
    match summary.pointer(pointer)? {
        serde_json::Value::String(s) => s.parse().ok(),
        serde_json::Value::Number(n) => n.to_string().parse().ok(),
        _ => None,
    }
}

/// "B's net PnL is higher by $X (95% CI [$a, $b]); the interval includes 0: no evidence of a
/// difference".
pub(crate) fn sentence(name: &str, unit: Unit, lower_is_better: bool, ci: &Ci) -> String {
    let direction = match ci.estimate.cmp(&Decimal::ZERO) {
        std::cmp::Ordering::Greater => "higher",
        std::cmp::Ordering::Less => "lower",
        std::cmp::Ordering::Equal => "the same",
    };
    let size = if ci.estimate.is_zero() {
        String::new()
    } else {
        format!(" by {}", unit.show(ci.estimate.abs()))
    };
    let verdict = if ci.includes_zero() {
        "the interval includes 0: no evidence of a difference".to_owned()
    } else {
        let better = (ci.estimate > Decimal::ZERO) != lower_is_better;
        format!(
            "the interval excludes 0: evidence that B's is {direction} ({} for B)",
            if better { "better" } else { "worse" }
        )
    };
    format!(
        "B's {name} is {direction}{size} ({CONFIDENCE_PCT}% CI [{}, {}]); {verdict}",
        unit.show(ci.low),
        unit.show(ci.high)
    )
}

/// What one run returns: its printed text and summary.json.
type RunResult = Result<(String, serde_json::Value), Failure>;

/// A variant's realized equity: (time, equity) steps.
type Curve = Vec<(DateTime<Utc>, Decimal)>;

/// One window's two runs.
struct WindowResult {
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    a: serde_json::Value,
    b: serde_json::Value,
}

/// Runs the plan; returns what `ab` prints and writes OUT/ab.json and OUT/ab.html.
pub(crate) fn run(plan: &Plan, a: &RunArgs, b: &RunArgs, out: &Path) -> Result<String, Failure> {
    let spans = windows(plan.first_tick, plan.last_tick, plan.interval, plan.windows);
    let name = |i: usize| format!("w{:02}", i + 1);
    let job = |j: usize| {
        let (i, base) = (j / 2, if j.is_multiple_of(2) { a } else { b });
        let (from, to) = spans[i];
        RunArgs {
            from: Some(from),
            to: Some(to),
            out: base.out.join(name(i)),
            // Windows run side by side would all pin to the same two CPUs.
            pin_threads: base.pin_threads && plan.concurrency == 1,
            ..base.clone()
        }
    };
    let jobs = spans.len() * 2;
    let results: Vec<Mutex<Option<RunResult>>> = (0..jobs).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..plan
            .concurrency
            .min(u32::try_from(jobs).unwrap_or(u32::MAX))
        {
            s.spawn(|| {
                loop {
                    let j = next.fetch_add(1, Ordering::Relaxed);
                    if j >= jobs {
                        break;
                    }
                    let r = run_with_summary(job(j));
                    if let Ok(mut slot) = results[j].lock() {
                        *slot = Some(r);
                    }
                }
            });
        }
    });
    let mut summaries = Vec::with_capacity(jobs);
    for (j, slot) in results.into_iter().enumerate() {
        let r = slot
            .into_inner()
            .ok()
            .flatten()
            .unwrap_or_else(|| Err(Failure::bad_input("error: a window's run did not finish")));
        let (_, summary) = r.map_err(|mut e| {
            let (i, variant) = (j / 2, if j.is_multiple_of(2) { "A" } else { "B" });
            e.message = format!("window {} ({variant}): {}", i + 1, e.message);
            e
        })?;
        summaries.push(summary);
    }
    let mut it = summaries.into_iter();
    let results: Vec<WindowResult> = spans
        .iter()
        .map(|&(from, to)| WindowResult {
            from,
            to,
            a: it.next().unwrap_or_default(),
            b: it.next().unwrap_or_default(),
        })
        .collect();

    let mut text = String::new();
    let _ = writeln!(
        text,
        "{} walk-forward windows from {} to {}, each a fresh account of {} for A and for B \
         on the same bars",
        results.len(),
        plan.first_tick,
        plan.last_tick,
        text::money(plan.initial_equity)
    );
    let _ = writeln!(
        text,
        "{:<6} {:<17} {:<17} {:>12} {:>12} {:>12}",
        "window", "from", "to", "A net", "B net", "B − A"
    );
    for (i, w) in results.iter().enumerate() {
        let (na, nb) = (value(&w.a, NET_PNL), value(&w.b, NET_PNL));
        let cell = |d: Option<Decimal>| d.map_or_else(|| "n/a".to_owned(), text::money);
        let _ = writeln!(
            text,
            "{:<6} {:<17} {:<17} {:>12} {:>12} {:>12}",
            name(i),
            w.from.format("%Y-%m-%d %H:%M"),
            w.to.format("%Y-%m-%d %H:%M"),
            cell(na),
            cell(nb),
            cell(na.zip(nb).map(|(a, b)| b - a))
        );
    }
    let _ = writeln!(
        text,
        "B − A ({CONFIDENCE_PCT}% percentile bootstrap over the windows, {} resamples, seed {}; \
         net PnL — equity at a window's end less the initial, open positions marked at the last \
         close — summed over the windows, the others the mean per window):",
        plan.resamples, plan.seed
    );
    let mut intervals = serde_json::Map::new();
    for m in &METRICS {
        let diffs: Vec<Decimal> = results
            .iter()
            .filter_map(|w| Some(value(&w.b, m.pointer)? - value(&w.a, m.pointer)?))
            .collect();
        let scale = if m.sum {
            Decimal::from(diffs.len() as u64)
        } else {
            Decimal::ONE
        };
        match bootstrap::mean_interval(&diffs, scale, plan.resamples, plan.seed, CONFIDENCE_PCT) {
            Some(ci) if diffs.len() >= 2 => {
                let line = sentence(m.name, m.unit, m.lower_is_better, &ci);
                let _ = writeln!(text, "- {line} [{} windows]", diffs.len());
                intervals.insert(
                    m.label.to_owned(),
                    serde_json::json!({
                        "statistic": if m.sum { "sum over windows" } else { "mean per window" },
                        "windows": diffs.len(),
                        "b_minus_a": ci.estimate.round_dp(4).to_string(),
                        "low": ci.low.round_dp(4).to_string(),
                        "high": ci.high.round_dp(4).to_string(),
                        "includes_zero": ci.includes_zero(),
                        "sentence": line,
                    }),
                );
            }
            _ => {
                let _ = writeln!(
                    text,
                    "- {}: fewer than 2 windows where both have it; no interval",
                    m.label
                );
            }
        }
    }
    let json = serde_json::json!({
        "confidence_pct": CONFIDENCE_PCT,
        "resamples": plan.resamples,
        "seed": plan.seed,
        "windows": results.iter().map(|w| serde_json::json!({
            "from": w.from, "to": w.to, "a": w.a, "b": w.b,
        })).collect::<Vec<_>>(),
        "intervals": intervals,
    });
    let write = |file: &str, body: &[u8]| {
        let path = out.join(file);
        std::fs::write(&path, body)
            .map_err(|e| Failure::bad_input(format!("error: {}: {e}", path.display())))
            .map(|()| path)
    };
    let mut body = serde_json::to_string_pretty(&json)
        .map_err(|e| Failure::bad_input(format!("error: serializing ab.json: {e}")))?;
    body.push('\n');
    let json_path = write("ab.json", body.as_bytes())?;
    let curves = [
        (
            "A",
            equity_curve(&a.out, &spans, plan.initial_equity, &name),
        ),
        (
            "B",
            equity_curve(&b.out, &spans, plan.initial_equity, &name),
        ),
    ];
    let html = html(&text, plan, &spans, &curves);
    let html_path = write("ab.html", html.as_bytes())?;
    let _ = write!(
        text,
        "ab: {}\nreport: {}\n",
        json_path.display(),
        html_path.display()
    );
    Ok(text)
}

/// The realized equity of a variant across the windows: the initial equity plus the net PnL of
/// every round trip closed so far, read from each window's trades.csv (a window's open
/// position at its end counts at its unrealized value in the window's summary, not here).
fn equity_curve(
    base: &Path,
    spans: &[(DateTime<Utc>, DateTime<Utc>)],
    initial: Decimal,
    name: &dyn Fn(usize) -> String,
) -> Curve {
    let mut points = vec![(spans[0].0, initial)];
    let mut equity = initial;
    for i in 0..spans.len() {
        let path: PathBuf = base.join(name(i)).join("trades.csv");
        let Ok(mut reader) = csv::Reader::from_path(&path) else {
            continue;
        };
        let headers = reader.headers().cloned().unwrap_or_default();
        let col = |n: &str| headers.iter().position(|h| h == n);
        let (Some(exit), Some(net)) = (col("exit_time"), col("net_pnl_usd")) else {
            continue;
        };
        let mut closed: Vec<(DateTime<Utc>, Decimal)> = reader
            .records()
            .filter_map(Result::ok)
            .filter_map(|r| {
                let t = DateTime::parse_from_rfc3339(r.get(exit)?).ok()?;
                Some((t.with_timezone(&Utc), r.get(net)?.parse().ok()?))
            })
            .collect();
        closed.sort_by_key(|(t, _)| *t);
        for (t, pnl) in closed {
            equity += pnl;
            points.push((t, equity));
        }
    }
    if let Some(&(_, last)) = spans.last() {
        points.push((last, equity));
    }
    points
}

/// OUT/ab.html: the report text and both realized equity curves on one chart.
fn html(
    text: &str,
    plan: &Plan,
    plan_windows: &[(DateTime<Utc>, DateTime<Utc>)],
    curves: &[(&str, Curve); 2],
) -> String {
    use rust_decimal::prelude::ToPrimitive;
    const W: f64 = 1100.0;
    const H: f64 = 320.0;
    const PAD: f64 = 60.0;
    let t0 = plan.first_tick.timestamp() as f64;
    let t1 = (plan.last_tick.timestamp() as f64).max(t0 + 1.0);
    let all = curves
        .iter()
        .flat_map(|(_, c)| c.iter().map(|(_, e)| e.to_f64().unwrap_or(0.0)));
    let (lo, hi) = all.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    let (lo, hi) = if hi - lo < 1e-9 {
        (lo - 1.0, hi + 1.0)
    } else {
        (lo, hi)
    };
    // The axis labels: the exact decimals between the lowest and highest equity, as money.
    let equities = || curves.iter().flat_map(|(_, c)| c.iter().map(|&(_, e)| e));
    let lo_usd = equities().min().unwrap_or(plan.initial_equity);
    let hi_usd = equities().max().unwrap_or(plan.initial_equity);
    let (lo_usd, hi_usd) = if lo_usd == hi_usd {
        (lo_usd - Decimal::ONE, hi_usd + Decimal::ONE)
    } else {
        (lo_usd, hi_usd)
    };
    let x = |t: DateTime<Utc>| PAD + (W - 2.0 * PAD) * (t.timestamp() as f64 - t0) / (t1 - t0);
    let y = |e: f64| 10.0 + (H - 40.0) * (hi - e) / (hi - lo);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" \
         role=\"img\" aria-label=\"realized equity of A and B\">"
    );
    for k in 0..=4u8 {
        let v = lo + (hi - lo) * f64::from(k) / 4.0;
        let label = lo_usd + (hi_usd - lo_usd) * Decimal::from(k) / Decimal::from(4);
        let _ = write!(
            svg,
            "<line x1=\"{PAD}\" x2=\"{:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#eef\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"#667\">{}</text>",
            W - PAD,
            PAD - 4.0,
            y(v) + 3.0,
            text::money(label),
            yy = y(v)
        );
    }
    // The windows: a dashed line at each one's first tick, its name and first date below.
    for (i, (from, _)) in plan_windows.iter().enumerate() {
        let xx = x(*from);
        let _ = write!(
            svg,
            "<line x1=\"{xx:.1}\" x2=\"{xx:.1}\" y1=\"10\" y2=\"{:.1}\" stroke=\"#99a\" stroke-dasharray=\"3 3\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#667\">w{:02} {}</text>",
            H - 30.0,
            xx + 3.0,
            H - 18.0,
            i + 1,
            from.format("%Y-%m-%d"),
        );
    }
    for (label, colour) in [("A", "#2456c9"), ("B", "#d9730d")] {
        let Some((_, curve)) = curves.iter().find(|(l, _)| *l == label) else {
            continue;
        };
        let mut pts = String::new();
        let mut prev: Option<f64> = None;
        for (t, e) in curve {
            let e = e.to_f64().unwrap_or(0.0);
            // Steps: the equity holds until the next close.
            if let Some(p) = prev {
                let _ = write!(pts, "{:.1},{:.1} ", x(*t), y(p));
            }
            let _ = write!(pts, "{:.1},{:.1} ", x(*t), y(e));
            prev = Some(e);
        }
        let _ = write!(
            svg,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.4\" points=\"{pts}\"><title>{label}</title></polyline>"
        );
    }
    svg.push_str("</svg>");
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>A/B walk-forward</title>\
         <style>body{{font:14px system-ui,sans-serif;margin:24px;color:#223}}pre{{background:#f6f7fb;padding:12px;overflow:auto}}\
         .a{{color:#2456c9}}.b{{color:#d9730d}}</style></head><body>\
         <h1>A/B walk-forward</h1>\
         <p>Realized equity (initial equity plus the net PnL of the round trips closed so far, window after window): \
         <b class=\"a\">A</b> and <b class=\"b\">B</b>.</p>{svg}<pre>{}</pre></body></html>\n",
        crate::report::esc(text)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use rust_decimal_macros::dec;

    #[test]
    fn windows_tile_the_ticks_on_the_bar_grid() {
        let t = |d, h| Utc.with_ymd_and_hms(2017, 4, d, h, 0, 0).unwrap();
        // 10 hourly ticks 00:00 … 09:00 into 3 windows: bars 0–2, 3–5, 6–9.
        let w = windows(t(1, 0), t(1, 9), Interval::H1, 3);
        assert_eq!(
            w,
            vec![(t(1, 0), t(1, 2)), (t(1, 3), t(1, 5)), (t(1, 6), t(1, 9))]
        );
        // More windows than ticks: one a tick.
        assert_eq!(windows(t(1, 0), t(1, 1), Interval::H1, 8).len(), 2);
    }

    #[test]
    fn the_sentence_says_what_the_interval_says() {
        let ci = |e, l, h| Ci {
            estimate: e,
            low: l,
            high: h,
        };
        assert_eq!(
            sentence(
                "net PnL",
                Unit::Dollars,
                false,
                &ci(dec!(1234.5), dec!(-5.1), dec!(3000))
            ),
            "B's net PnL is higher by $1,234.50 (95% CI [-$5.10, $3,000.00]); the interval \
             includes 0: no evidence of a difference"
        );
        assert_eq!(
            sentence(
                "max drawdown",
                Unit::Percent,
                true,
                &ci(dec!(-2.5), dec!(-4), dec!(-1))
            ),
            "B's max drawdown is lower by 2.5% (95% CI [-4%, -1%]); the interval excludes 0: \
             evidence that B's is lower (better for B)"
        );
        assert_eq!(
            sentence(
                "Sharpe",
                Unit::Ratio,
                false,
                &ci(dec!(3.368), dec!(2.2), dec!(4.5))
            ),
            "B's Sharpe is higher by 3.37 (95% CI [2.20, 4.50]); the interval excludes 0: \
             evidence that B's is higher (better for B)"
        );
    }
}
