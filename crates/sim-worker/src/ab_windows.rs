//! `sim-worker ab --windows N`: A and B walk forward over the same bars, window by window, and
//! the difference B − A of each metric gets a bootstrap confidence interval over the windows —
//! the evidence ADR-0017 asks for before calling a variant better.
//!
//! A two-entrant arena without baselines, A the reference: the windows, the runs and the
//! intervals are the arena's ([`crate::arena_runs`], [`crate::arena_stats`]); per window and
//! metric, `d = B − A` (a metric missing on either side — a Sharpe without trades — leaves the
//! window out of that metric). Net PnL is reported as the sum over the windows (what the whole
//! stretch made), Sharpe, max drawdown and win rate as the mean per window; the interval is
//! the percentile bootstrap of that statistic ([`crate::bootstrap`]).

use std::fmt::Write as _;
use std::path::Path;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use types::{Interval, text};

use crate::Failure;
use crate::arena_html::{Line, Stroke};
use crate::arena_runs::{Span, Walk, chained, run_all, window_name, windows, write_out};
use crate::arena_stats::{CONFIDENCE_PCT, Resampling, Unit, decimal_at, versus};
use crate::bootstrap::Interval as Ci;
use crate::run_cmd::RunArgs;

/// What `ab --windows` runs.
pub(crate) struct Plan {
    pub windows: u32,
    pub walk: Walk,
    pub first_tick: DateTime<Utc>,
    pub last_tick: DateTime<Utc>,
    pub interval: Interval,
    pub initial_equity: Decimal,
}

/// A compared metric: label (its key in ab.json), name in the sentence, and its key among the
/// arena's metrics ([`crate::arena_stats::METRICS`]: how it is read, summed or averaged, which
/// way is better, its unit).
struct Metric {
    label: &'static str,
    name: &'static str,
    key: &'static str,
}

const METRICS: [Metric; 4] = [
    Metric {
        label: "net PnL",
        name: "net PnL",
        key: "net_return_usd",
    },
    Metric {
        label: "Sharpe",
        name: "Sharpe",
        key: "sharpe",
    },
    Metric {
        label: "max drawdown %",
        name: "max drawdown",
        key: "max_drawdown_pct",
    },
    Metric {
        label: "win rate %",
        name: "win rate",
        key: "win_rate_pct",
    },
];

/// A window's net PnL: its equity at the end less the initial — realized PnL net of every fee
/// plus the unrealized PnL of what is still open, marked at the last close (summary.json's
/// `total_return_usd`). Realized PnL alone would count an open position's entry fee and not its
/// gain or loss.
const NET_PNL: &str = "/total_return_usd";

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
    // A and B of window 1, then of window 2, …
    let jobs: Vec<RunArgs> = spans
        .iter()
        .enumerate()
        .flat_map(|(i, &(from, to))| {
            [a, b].map(|base| RunArgs {
                from: Some(from),
                to: Some(to),
                out: base.out.join(window_name(i)),
                // Windows run side by side would all pin to the same two CPUs.
                pin_threads: base.pin_threads && plan.walk.concurrency == 1,
                ..base.clone()
            })
        })
        .collect();
    let slots = run_all(jobs, plan.walk.concurrency, None, &|_, _| {});
    let mut outputs = Vec::with_capacity(slots.len());
    for (j, slot) in slots.into_iter().enumerate() {
        let r =
            slot.unwrap_or_else(|| Err(Failure::bad_input("error: a window's run did not finish")));
        outputs.push(r.map_err(|mut e| {
            let (i, variant) = (j / 2, if j.is_multiple_of(2) { "A" } else { "B" });
            e.message = format!("window {} ({variant}): {}", i + 1, e.message);
            e
        })?);
    }
    // Per variant, per window, its one run.
    let runs = |side: usize| -> Vec<Vec<serde_json::Value>> {
        outputs
            .iter()
            .skip(side)
            .step_by(2)
            .map(|o| vec![o.summary.clone()])
            .collect()
    };
    let (runs_a, runs_b) = (runs(0), runs(1));
    let results: Vec<WindowResult> = spans
        .iter()
        .zip(runs_a.iter().zip(&runs_b))
        .map(|(&(from, to), (a, b))| WindowResult {
            from,
            to,
            a: a[0].clone(),
            b: b[0].clone(),
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
        let (na, nb) = (decimal_at(&w.a, NET_PNL), decimal_at(&w.b, NET_PNL));
        let cell = |d: Option<Decimal>| d.map_or_else(|| "n/a".to_owned(), text::money);
        let _ = writeln!(
            text,
            "{:<6} {:<17} {:<17} {:>12} {:>12} {:>12}",
            window_name(i),
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
        plan.walk.resamples, plan.walk.seed
    );
    let how = Resampling {
        resamples: plan.walk.resamples,
        seed: plan.walk.seed,
    };
    let mut intervals = serde_json::Map::new();
    for m in &METRICS {
        let metric = crate::arena_stats::metric(m.key);
        let lower_is_better = metric.better == crate::arena_stats::Better::Lower;
        match versus(&runs_b, &runs_a, metric, how, None)
            .and_then(|d| Some((d.windows, d.interval?)))
        {
            Some((windows, ci)) => {
                let line = sentence(m.name, metric.unit, lower_is_better, &ci);
                let _ = writeln!(text, "- {line} [{windows} windows]");
                intervals.insert(
                    m.label.to_owned(),
                    serde_json::json!({
                        "statistic": metric.statistic(),
                        "windows": windows,
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
        "resamples": plan.walk.resamples,
        "seed": plan.walk.seed,
        "windows": results.iter().map(|w| serde_json::json!({
            "from": w.from, "to": w.to, "a": w.a, "b": w.b,
        })).collect::<Vec<_>>(),
        "intervals": intervals,
    });
    let mut body = serde_json::to_string_pretty(&json)
        .map_err(|e| Failure::bad_input(format!("error: serializing ab.json: {e}")))?;
    body.push('\n');
    let json_path = write_out(out, "ab.json", body.as_bytes())?;
    let html = html(&text, plan, &spans, &outputs);
    let html_path = write_out(out, "ab.html", html.as_bytes())?;
    let _ = write!(
        text,
        "ab: {}\nreport: {}\n",
        json_path.display(),
        html_path.display()
    );
    Ok(text)
}

/// OUT/ab.html: both variants' equity over time, window after window, and the report text.
fn html(text: &str, plan: &Plan, spans: &[Span], outputs: &[crate::run_cmd::RunOutput]) -> String {
    let curve = |side: usize| {
        let per_window: Vec<Vec<&crate::arena_runs::Curve>> = outputs
            .iter()
            .skip(side)
            .step_by(2)
            .map(|o| vec![&o.equity])
            .collect();
        chained(&per_window, plan.initial_equity)
    };
    let (a, b) = (curve(0), curve(1));
    let lines = [
        Line {
            name: "A",
            curve: &a,
            stroke: Stroke::Solid(0),
        },
        Line {
            name: "B",
            curve: &b,
            stroke: Stroke::Solid(1),
        },
    ];
    let body = format!(
        "<p>Equity after every tick (the mark-to-market value of the account: cash plus the \
         unrealized PnL of open positions), window after window: each window starts a fresh \
         account of {}, chained here to what the earlier windows made.</p>{}{}",
        text::money(plan.initial_equity),
        crate::arena_html::legend(&lines),
        crate::arena_html::equity_chart(spans, &lines, plan.initial_equity)
    );
    crate::arena_html::page("A/B walk-forward", &body, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

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
