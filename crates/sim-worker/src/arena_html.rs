//! The pages of a walk-forward comparison, `ab.html` and `arena.html`: self-contained (inline
//! CSS and SVG, no script, no external asset), with every row's equity over time — dates on
//! the axis, each window's start marked, money labelled in dollars.
//!
//! Chart coordinates are `f64` (pixels); every number shown as text is the exact decimal in a
//! `types::text` style.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;
use types::text;

use crate::arena_runs::{Curve, Span, window_name};
use crate::report::esc;

/// How a row's line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stroke {
    /// A solid line in the `i`th colour of the palette.
    Solid(usize),
    /// A baseline: grey-brown, dashed with pattern `i`.
    Dashed(usize),
}

const PALETTE: [&str; 8] = [
    "#2456c9", "#d9730d", "#0a7a3d", "#b3261e", "#7b3fb3", "#0f8a8a", "#c2185b", "#5d6b00",
];
const DASHES: [(&str, &str); 4] = [
    ("#444", "7 4"),
    ("#999", "2 3"),
    ("#8a6d0f", "9 3 2 3"),
    ("#6b4e9b", "4 4"),
];

impl Stroke {
    fn attributes(self) -> String {
        match self {
            Stroke::Solid(i) => format!("stroke=\"{}\" stroke-width=\"1.6\"", PALETTE[i % 8]),
            Stroke::Dashed(i) => {
                let (colour, dash) = DASHES[i % 4];
                format!("stroke=\"{colour}\" stroke-width=\"1.4\" stroke-dasharray=\"{dash}\"")
            }
        }
    }

    /// A short sample of the line, for a legend.
    pub(crate) fn swatch(self) -> String {
        format!(
            "<svg class=\"swatch\" width=\"28\" height=\"10\" aria-hidden=\"true\">\
             <line x1=\"0\" x2=\"28\" y1=\"5\" y2=\"5\" {}/></svg>",
            self.attributes()
        )
    }
}

/// One line of the equity chart.
pub(crate) struct Line<'a> {
    pub name: &'a str,
    pub curve: &'a Curve,
    pub stroke: Stroke,
}

const W: f64 = 1100.0;
const H: f64 = 360.0;
const PAD_L: f64 = 84.0;
const PAD_R: f64 = 16.0;
const PAD_T: f64 = 12.0;
const PAD_B: f64 = 46.0;

/// The equity chart: one polyline per line, the windows' starts as dashed verticals named
/// `wNN YYYY-MM-DD` along the time axis (and the last tick's date at its end), five levels of
/// equity labelled in dollars.
pub(crate) fn equity_chart(spans: &[Span], lines: &[Line<'_>], initial: Decimal) -> String {
    let (Some(&(first, _)), Some(&(_, last))) = (spans.first(), spans.last()) else {
        return "<p class=\"muted\">No window to chart.</p>".to_owned();
    };
    let t0 = first.timestamp() as f64;
    let t1 = (last.timestamp() as f64).max(t0 + 1.0);
    let all = || lines.iter().flat_map(|l| l.curve.iter().map(|&(_, e)| e));
    let lo = all().min().unwrap_or(initial).min(initial);
    let hi = all().max().unwrap_or(initial).max(initial);
    let (lo, hi) = if lo == hi {
        (lo - Decimal::ONE, hi + Decimal::ONE)
    } else {
        (lo, hi)
    };
    let (lo_f, hi_f) = (lo.to_f64().unwrap_or(0.0), hi.to_f64().unwrap_or(1.0));
    let x =
        |t: DateTime<Utc>| PAD_L + (W - PAD_L - PAD_R) * (t.timestamp() as f64 - t0) / (t1 - t0);
    let y = |e: Decimal| {
        let e = e.to_f64().unwrap_or(0.0);
        PAD_T + (H - PAD_T - PAD_B) * (hi_f - e) / (hi_f - lo_f)
    };
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"{W}\" height=\"{H}\" \
         viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"equity over time\">"
    );
    for k in 0..=4u8 {
        let level = lo + (hi - lo) * Decimal::from(k) / Decimal::from(4);
        let yy = y(level);
        let _ = write!(
            svg,
            "<line x1=\"{PAD_L}\" x2=\"{:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#e6e9f2\"/>\
             <text class=\"y-label\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\" \
             fill=\"#556\">{}</text>",
            W - PAD_R,
            PAD_L - 6.0,
            yy + 4.0,
            text::money(level)
        );
    }
    let axis = H - PAD_B;
    let _ = write!(
        svg,
        "<line x1=\"{PAD_L}\" x2=\"{:.1}\" y1=\"{axis:.1}\" y2=\"{axis:.1}\" stroke=\"#99a\"/>",
        W - PAD_R
    );
    for (i, (from, _)) in spans.iter().enumerate() {
        let xx = x(*from);
        let _ = write!(
            svg,
            "<line class=\"window\" x1=\"{xx:.1}\" x2=\"{xx:.1}\" y1=\"{PAD_T}\" y2=\"{:.1}\" \
             stroke=\"#99a\" stroke-dasharray=\"3 3\"/>\
             <text class=\"x-label\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"#556\">{} {}</text>",
            axis + 6.0,
            xx + 3.0,
            axis + 18.0,
            window_name(i),
            from.format("%Y-%m-%d"),
        );
    }
    let _ = write!(
        svg,
        "<text class=\"x-label\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\" \
         fill=\"#556\">{}</text>",
        W - PAD_R,
        axis + 34.0,
        last.format("%Y-%m-%d %H:%M UTC")
    );
    for line in lines {
        let n = line.curve.len();
        // At most about two points per pixel column.
        let stride = (n / 2200).max(1);
        let mut pts = String::with_capacity(n / stride * 14);
        for (t, e) in line
            .curve
            .iter()
            .step_by(stride)
            .chain(line.curve.last().filter(|_| n > 1 && (n - 1) % stride != 0))
        {
            let _ = write!(pts, "{:.1},{:.1} ", x(*t), y(*e));
        }
        let _ = write!(
            svg,
            "<polyline fill=\"none\" {} points=\"{}\"><title>{}</title></polyline>",
            line.stroke.attributes(),
            pts.trim_end(),
            esc(line.name)
        );
    }
    svg.push_str("</svg>");
    svg
}

/// The legend of `lines`: each name after a sample of its line.
pub(crate) fn legend(lines: &[Line<'_>]) -> String {
    let mut h = String::from("<ul class=\"legend\">");
    for l in lines {
        let _ = write!(h, "<li>{} {}</li>", l.stroke.swatch(), esc(l.name));
    }
    h.push_str("</ul>");
    h
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1280px;\
color:#1d2430;padding:0 16px}h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:\
1px solid #dde;padding-bottom:4px}table{border-collapse:collapse;font-size:12.5px}td,th{padding:\
3px 8px;border-bottom:1px solid #eef;text-align:right;white-space:nowrap}th{background:#f4f6fa;white-space:normal;vertical-align:bottom}\
td.l,th.l{text-align:left}tr.reference td{background:#fff8e6}.muted{color:#667}.ci{color:#667;\
font-size:11.5px}pre{background:#f6f8fa;border:1px solid #e1e4e8;padding:12px;overflow:auto;\
font-size:12px}svg.chart{background:#fff;border:1px solid #e4e7ee}ul.legend{list-style:none;\
padding:0;display:flex;flex-wrap:wrap;gap:6px 18px}ul.legend li{white-space:nowrap}\
svg.swatch{vertical-align:middle}.runs a{margin-right:4px}";

/// A whole page: `title`, `body` (HTML), then `text` (the command's output) preformatted.
pub(crate) fn page(title: &str, body: &str, text: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\
         <style>{STYLE}</style></head><body><h1>{t}</h1>{body}<h2>Output</h2><pre>{}</pre>\
         </body></html>\n",
        esc(text),
        t = esc(title)
    )
}
