//! The dashboard's charts: an equity curve and its drawdown from the running peak, as inline
//! SVG (no script, no external file), drawn from points the page computed. The axis labels are
//! the exact decimals in `types::text`'s styles; nothing but numbers and those labels reaches
//! the SVG, and the labels are escaped all the same.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;
use types::text;

const W: f64 = 900.0;
const H_EQ: f64 = 220.0;
const H_DD: f64 = 110.0;
const PAD_L: f64 = 84.0;
const PAD_R: f64 = 12.0;
const PAD_T: f64 = 10.0;
const PAD_B: f64 = 22.0;

/// One point of an equity curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EquityPoint {
    pub(crate) at: DateTime<Utc>,
    pub(crate) equity: Decimal,
}

/// The deepest drawdown of `points` from their running peak, in percent (≤ 0).
pub(crate) fn max_drawdown_pct(points: &[EquityPoint]) -> Decimal {
    let mut peak = Decimal::MIN;
    let mut deepest = Decimal::ZERO;
    for p in points {
        peak = peak.max(p.equity);
        if peak > Decimal::ZERO {
            deepest = deepest.min((p.equity - peak) * Decimal::ONE_HUNDRED / peak);
        }
    }
    deepest
}

fn f(d: Decimal) -> f64 {
    d.to_f64().unwrap_or(0.0)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn minute(t: DateTime<Utc>) -> String {
    super::view::when(Some(t))
}

/// The equity curve over time and the drawdown below it, or a sentence when there are fewer
/// than two points.
pub(crate) fn equity_and_drawdown(points: &[EquityPoint]) -> String {
    let n = points.len();
    if n < 2 {
        return "<p class=\"muted\" id=\"no-chart\">Too few points for a chart yet.</p>".to_owned();
    }
    let (t0, t1) = (points[0].at, points[n - 1].at);
    #[allow(clippy::cast_precision_loss)]
    let span = ((t1 - t0).num_seconds().max(1)) as f64;
    #[allow(clippy::cast_precision_loss)]
    let x = |t: DateTime<Utc>| PAD_L + (W - PAD_L - PAD_R) * ((t - t0).num_seconds() as f64) / span;
    let (lo, hi) = points
        .iter()
        .fold((points[0].equity, points[0].equity), |(a, b), p| {
            (a.min(p.equity), b.max(p.equity))
        });
    let (lo, hi) = if lo == hi {
        (lo - Decimal::ONE, hi + Decimal::ONE)
    } else {
        (lo, hi)
    };
    let (lo_f, hi_f) = (f(lo), f(hi));
    let y_eq = |v: Decimal| PAD_T + (H_EQ - PAD_T - PAD_B) * (hi_f - f(v)) / (hi_f - lo_f);
    let mut peak = Decimal::MIN;
    let dd: Vec<Decimal> = points
        .iter()
        .map(|p| {
            peak = peak.max(p.equity);
            if peak > Decimal::ZERO {
                (p.equity - peak) * Decimal::ONE_HUNDRED / peak
            } else {
                Decimal::ZERO
            }
        })
        .collect();
    let dd_min = max_drawdown_pct(points).min(Decimal::new(-1, 2));
    let y_dd = |v: Decimal| PAD_T + (H_DD - PAD_T - PAD_B) * (f(v) / f(dd_min));

    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"equity-chart\" width=\"{W}\" \
         height=\"{H_EQ}\" viewBox=\"0 0 {W} {H_EQ}\" role=\"img\" aria-label=\"equity curve\">"
    );
    for k in 0..=4u8 {
        let v = lo + (hi - lo) * Decimal::from(k) / Decimal::from(4);
        let yy = y_eq(v);
        let _ = write!(
            svg,
            "<line x1=\"{PAD_L}\" x2=\"{:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#eef\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"#667\">{}</text>",
            W - PAD_R,
            PAD_L - 4.0,
            yy + 3.0,
            esc(&text::money(v))
        );
    }
    let mut line = String::new();
    for p in points {
        let _ = write!(line, "{:.1},{:.1} ", x(p.at), y_eq(p.equity));
    }
    let _ = write!(
        svg,
        "<polyline fill=\"none\" stroke=\"#2456c9\" stroke-width=\"1.5\" points=\"{}\"/>",
        line.trim_end()
    );
    for p in points {
        let _ = write!(
            svg,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.2\" fill=\"#2456c9\"><title>{} UTC · {}</title></circle>",
            x(p.at),
            y_eq(p.equity),
            esc(&minute(p.at)),
            esc(&text::money(p.equity))
        );
    }
    let _ = write!(
        svg,
        "<text x=\"{PAD_L}\" y=\"{:.1}\" font-size=\"10\" fill=\"#667\">{}</text>\
         <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"#667\">{}</text></svg>",
        H_EQ - 6.0,
        esc(&minute(t0)),
        W - PAD_R,
        H_EQ - 6.0,
        esc(&minute(t1))
    );
    let mut area = String::new();
    for (p, d) in points.iter().zip(&dd) {
        let _ = write!(area, "{:.1},{:.1} ", x(p.at), y_dd(*d));
    }
    let _ = write!(
        svg,
        "<p class=\"muted\">Drawdown from the running peak</p>\
         <svg xmlns=\"http://www.w3.org/2000/svg\" id=\"drawdown-chart\" width=\"{W}\" \
         height=\"{H_DD}\" viewBox=\"0 0 {W} {H_DD}\" role=\"img\" aria-label=\"drawdown\">\
         <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"#667\">0%</text>\
         <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"#667\">{}</text>\
         <polygon fill=\"#f3c5c0\" stroke=\"#b3261e\" stroke-width=\"0.8\" \
         points=\"{:.1},{PAD_T} {}{:.1},{PAD_T}\"/></svg>",
        PAD_L - 4.0,
        PAD_T + 3.0,
        PAD_L - 4.0,
        y_dd(dd_min) + 3.0,
        esc(&text::pct(dd_min)),
        x(t0),
        area,
        x(t1)
    );
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(minutes: i64, equity: i64) -> EquityPoint {
        EquityPoint {
            at: DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::minutes(minutes),
            equity: Decimal::from(equity),
        }
    }

    #[test]
    fn drawdown_is_from_the_running_peak() {
        let pts = [p(0, 100), p(1, 120), p(2, 90), p(3, 130)];
        assert_eq!(max_drawdown_pct(&pts), Decimal::from(-25));
        assert_eq!(max_drawdown_pct(&pts[..2]), Decimal::ZERO);
    }

    #[test]
    fn the_chart_has_both_curves_and_every_point() {
        let svg = equity_and_drawdown(&[p(0, 10_000), p(60, 9_000), p(120, 10_500)]);
        assert!(svg.contains("id=\"equity-chart\""), "{svg}");
        assert!(svg.contains("id=\"drawdown-chart\""), "{svg}");
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(
            svg.contains("-10"),
            "the deepest drawdown is labelled: {svg}"
        );
        assert!(!svg.contains("NaN"));
        assert!(equity_and_drawdown(&[p(0, 1)]).contains("Too few points"));
    }
}
