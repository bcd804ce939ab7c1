//! The run's files: `trades.csv` (the ledger) and `report.html` — one self-contained page
//! (inline CSS and SVG, no scripts, no external assets): the summary, the equity curve with trade
//! markers, the drawdown, the trade table, the lessons history and the exact system prompt and
//! user message of one tick.
//!
//! Chart coordinates are `f64` (pixels); every number shown as text is the exact decimal.

use std::fmt::Write as _;

use anyhow::Context;
use backtest::{BacktestResult, Summary};
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use rust_decimal::prelude::{FromPrimitive, ToPrimitive};
use skill_schema::Skill;
use types::text::{self, money, pct, price};
use types::{Side, TradeRecord, TradeStatus, Uuid};

use crate::Failure;

/// The ledger as CSV, one row per round trip in the order first written.
pub(crate) fn trades_csv(trades: &[TradeRecord]) -> Result<Vec<u8>, Failure> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "id",
        "symbol",
        "side",
        "status",
        "entry_time",
        "entry_price",
        "entry_size_usd",
        "opened_qty",
        "open_qty",
        "entry_leverage",
        "entry_regime",
        "exit_time",
        "exit_price",
        "exit_size_usd",
        "close_kind",
        "holding_minutes",
        "realized_pnl_usd",
        "fees_usd",
        "net_pnl_usd",
        "mfe_usd",
        "mae_usd",
        "broker_reconciled",
        "entry_reason",
        "exit_reason",
    ])
    .context("writing trades.csv")?;
    let opt = |d: Option<Decimal>| d.map(|d| d.to_string()).unwrap_or_default();
    for t in trades {
        w.write_record([
            t.id.to_string(),
            t.symbol.clone(),
            t.side.to_string(),
            status(t).to_owned(),
            time(t.entry_tick_at),
            t.entry_price.to_string(),
            t.entry_size_usd.to_string(),
            t.opened_qty.to_string(),
            t.open_qty.to_string(),
            opt(t.entry_leverage),
            t.entry_regime_tag
                .map(|r| r.to_string())
                .unwrap_or_default(),
            t.exit_tick_at.map(time).unwrap_or_default(),
            opt(t.exit_price),
            t.exit_size_usd.to_string(),
            t.close_kind.map(|k| k.to_string()).unwrap_or_default(),
            opt(t.holding_minutes),
            t.realized_pnl_usd.to_string(),
            t.fees_usd.to_string(),
            (t.realized_pnl_usd - t.fees_usd).to_string(),
            t.mfe_usd.to_string(),
            t.mae_usd.to_string(),
            t.broker_reconciled.to_string(),
            t.entry_reason.clone().unwrap_or_default(),
            t.exit_reason.clone().unwrap_or_default(),
        ])
        .context("writing trades.csv")?;
    }
    Ok(w.into_inner().context("writing trades.csv")?)
}

fn status(t: &TradeRecord) -> &'static str {
    match t.status {
        TradeStatus::Open => "open",
        TradeStatus::Closed => "closed",
    }
}

fn time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// What the page shows.
pub(crate) struct ReportInput<'a> {
    pub skill: &'a Skill,
    pub model: &'a str,
    pub summary: &'a Summary,
    pub result: &'a BacktestResult,
    pub db_url: &'a str,
    pub deployment_id: Uuid,
    /// The equity and drawdown charts ([`charts`] of `result`, rendered beside the summary).
    pub charts: &'a str,
}

pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A Sharpe ratio as text: two decimals (`-5.26`), `n/a` without one.
pub(crate) fn sharpe(v: Option<f64>) -> String {
    v.and_then(Decimal::from_f64)
        .map_or_else(|| "n/a".to_owned(), |d| text::grouped_fixed(d, 2))
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1200px;\
color:#1d2430;padding:0 16px}h1{font-size:22px}h2{font-size:17px;margin-top:32px;border-bottom:\
1px solid #dde;padding-bottom:4px}table{border-collapse:collapse;font-size:12.5px}td,th{padding:\
3px 8px;border-bottom:1px solid #eef;text-align:right;white-space:nowrap}th{background:#f4f6fa}\
td.l,th.l{text-align:left;white-space:normal}.kv td{text-align:left}.pos{color:#0a7a3d}.neg{color:\
#b3261e}pre{background:#f6f8fa;border:1px solid #e1e4e8;padding:12px;overflow:auto;font-size:12px;\
white-space:pre-wrap}.muted{color:#667}svg{background:#fff;border:1px solid #e4e7ee}\
.scroll{max-height:520px;overflow:auto}td.reason{min-width:360px;font-size:11.5px}";

/// The whole page.
/// The page up to the tick it shows ([`push_snapshot`] ends it): written from the run's
/// result while its last batch is still being stored and the tick read back.
pub(crate) fn render_head(r: &ReportInput<'_>) -> String {
    let s = r.summary;
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Backtest · {}</title>\
         <style>{STYLE}</style></head><body>",
        esc(&r.skill.name)
    );
    let _ = write!(
        h,
        "<h1>Backtest · {}</h1><p class=\"muted\">Model <b>{}</b> · {} ticks of {} from {} to {} · \
         deployment {} in <code>{}</code></p>",
        esc(&r.skill.name),
        esc(r.model),
        s.ticks,
        esc(&s.interval),
        s.first_tick.map(time).unwrap_or_default(),
        s.last_tick.map(time).unwrap_or_default(),
        r.deployment_id,
        esc(r.db_url)
    );

    // summary
    h.push_str("<h2>Summary</h2><table class=\"kv\">");
    let rows: Vec<(&str, String)> = vec![
        ("Starting equity", money(s.initial_equity_usd)),
        ("Final equity", money(s.final_equity_usd)),
        (
            "Total return",
            format!(
                "{} ({})",
                money(s.total_return_usd),
                pct(s.total_return_pct)
            ),
        ),
        (
            "Closed trades",
            format!(
                "{} ({} wins, {} losses; {} open)",
                s.trades, s.wins, s.losses, s.open_trades
            ),
        ),
        (
            "Win rate",
            s.win_rate_pct.map_or_else(|| "n/a".to_owned(), pct),
        ),
        (
            "Realized PnL",
            format!(
                "{} net = {} gross − {} fees",
                money(s.pnl.net_usd),
                money(s.pnl.gross_usd),
                money(s.pnl.fees_usd)
            ),
        ),
        ("Unrealized PnL at the end", money(s.unrealized_pnl_usd)),
        (
            "Max drawdown",
            format!(
                "{} ({})",
                money(s.max_drawdown_usd),
                pct(s.max_drawdown_pct)
            ),
        ),
        ("Sharpe (annualised per-tick returns)", sharpe(s.sharpe)),
        (
            "Time in market / average exposure",
            format!("{} / {}", pct(s.exposure_time_pct), pct(s.avg_exposure_pct)),
        ),
        (
            "Verdicts",
            s.verdicts
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "Tokens (in / out / cache read / cache write)",
            format!(
                "{} / {} / {} / {}",
                s.tokens.input, s.tokens.output, s.tokens.cache_read, s.tokens.cache_write
            ),
        ),
        ("Model cost", text::cost(s.cost_usd)),
        (
            "Reflection notes",
            format!("{} ({} failed runs)", s.notes, s.reflection_failures),
        ),
    ];
    for (k, v) in rows {
        let _ = write!(
            h,
            "<tr><th class=\"l\">{}</th><td>{}</td></tr>",
            esc(k),
            esc(&v)
        );
    }
    h.push_str("</table>");
    if !s.pnl_by_symbol.is_empty() {
        h.push_str(
            "<h3>By symbol</h3><table><tr><th class=\"l\">symbol</th><th>trades</th>\
             <th>wins</th><th>gross</th><th>fees</th><th>net</th></tr>",
        );
        for (sym, p) in &s.pnl_by_symbol {
            let _ = write!(
                h,
                "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(sym),
                p.trades,
                p.wins,
                money(p.gross_usd),
                money(p.fees_usd),
                money(p.net_usd)
            );
        }
        h.push_str("</table>");
    }

    h.push_str("<h2>Equity</h2>");
    h.push_str(r.charts);

    // trades
    let _ = write!(
        h,
        "<h2>Trades ({})</h2><div class=\"scroll\"><table>",
        r.result.trades.len()
    );
    h.push_str(
        "<tr><th>#</th><th class=\"l\">symbol</th><th class=\"l\">side</th><th class=\"l\">entry</th>\
         <th>entry price</th><th>size</th><th class=\"l\">exit</th><th>exit price</th>\
         <th class=\"l\">close</th><th>gross</th><th>fees</th><th>net</th><th>MFE</th><th>MAE</th>\
         <th class=\"l\">regime</th><th class=\"l\">entry reason</th></tr>",
    );
    for (i, t) in r.result.trades.iter().enumerate() {
        let net = t.realized_pnl_usd - t.fees_usd;
        let class = if net > Decimal::ZERO { "pos" } else { "neg" };
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>\
             <td>{}</td><td>{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td>\
             <td>{}</td><td>{}</td><td class=\"{class}\">{}</td><td>{}</td><td>{}</td>\
             <td class=\"l\">{}</td><td class=\"l reason\">{}</td></tr>",
            i + 1,
            esc(&t.symbol),
            t.side,
            time(t.entry_tick_at),
            price(t.entry_price),
            money(t.entry_size_usd),
            t.exit_tick_at.map_or_else(|| "open".to_owned(), time),
            t.exit_price.map(price).unwrap_or_default(),
            t.close_kind.map(|k| k.to_string()).unwrap_or_default(),
            money(t.realized_pnl_usd),
            money(t.fees_usd),
            money(net),
            money(t.mfe_usd),
            money(t.mae_usd),
            t.entry_regime_tag
                .map(|r| r.to_string())
                .unwrap_or_default(),
            esc(t.entry_reason.as_deref().unwrap_or("")),
        );
    }
    h.push_str("</table></div>");

    // lessons
    let _ = write!(h, "<h2>Lessons history ({})</h2>", r.result.notes.len());
    if r.result.notes.is_empty() {
        h.push_str("<p class=\"muted\">No reflection note was written in this run.</p>");
    }
    for (i, n) in r.result.notes.iter().enumerate().rev() {
        let state = if n.lint.flagged {
            format!("flagged, never injected: {}", n.lint.reasons.join("; "))
        } else if i + 1 == r.result.notes.len() {
            "active".to_owned()
        } else {
            "superseded".to_owned()
        };
        let _ = write!(
            h,
            "<h3>{} · {} trades ({} .. {}) · {} · {}</h3><pre>{}</pre>",
            time(n.generated_at),
            n.content.trades_considered,
            time(n.content.window_start),
            time(n.content.window_end),
            esc(&n.content.model_used),
            esc(&state),
            esc(&n.content.lessons_text)
        );
    }

    h
}

/// Ends a page [`render_head`] began with the exact system prompt and user message of `snap`,
/// the tick it shows (read back from the store).
pub(crate) fn push_snapshot(h: &mut String, snap: &db::DecisionSnapshot) {
    let _ = write!(
        h,
        "<h2>What the agent saw at {}</h2><p class=\"muted\">Verdict: {} · proposal: {} · \
         model {} ({} in / {} out tokens)</p><h3>System prompt</h3><pre>{}</pre>\
         <h3>User message</h3><pre>{}</pre>",
        time(snap.tick_at),
        esc(&snapshot_outcome(snap)),
        esc(&snap
            .proposal
            .as_ref()
            .map_or_else(|| "none".to_owned(), tools::summarize_proposal)),
        esc(&snap.model),
        snap.usage.input,
        snap.usage.output,
        esc(&snap.system_prompt),
        esc(&snap.context)
    );
    h.push_str("</body></html>\n");
}

/// The snapshot's outcome: the model's error when the tick failed on the model, else the
/// engine's verdict.
fn snapshot_outcome(snap: &db::DecisionSnapshot) -> String {
    match (&snap.error, snap.model_error) {
        (Some(error), true) => format!("model error — {error}"),
        _ => verdict_text(&snap.verdict),
    }
}

fn verdict_text(v: &types::Verdict) -> String {
    match v {
        types::Verdict::Executed { detail } => format!("executed — {detail}"),
        types::Verdict::Rejected { rule, detail } => format!("rejected {rule} — {detail}"),
        types::Verdict::NoOp { detail } => format!("no-op — {detail}"),
    }
}

const W: f64 = 1100.0;
const H_EQ: f64 = 300.0;
const H_DD: f64 = 140.0;
const PAD_L: f64 = 70.0;
const PAD_R: f64 = 10.0;
const PAD_T: f64 = 10.0;
const PAD_B: f64 = 22.0;

fn f(d: Decimal) -> f64 {
    d.to_f64().unwrap_or(0.0)
}

/// The deepest fall of the per-tick equity from its running peak (the initial equity counts),
/// in percent of that peak: zero or negative.
fn deepest_drawdown_pct(r: &BacktestResult) -> Decimal {
    let mut peak = r.initial_equity_usd;
    let mut deepest = Decimal::ZERO;
    for p in &r.points {
        peak = peak.max(p.equity_usd);
        if peak > Decimal::ZERO {
            deepest = deepest.min((p.equity_usd - peak) * Decimal::ONE_HUNDRED / peak);
        }
    }
    deepest
}

/// The equity curve with entry (▲ long / ▼ short) and exit (●) markers, and the drawdown below.
pub(crate) fn charts(r: &BacktestResult) -> String {
    let pts = &r.points;
    if pts.len() < 2 {
        return "<p class=\"muted\">Too few ticks for a chart.</p>".to_owned();
    }
    let n = pts.len();
    let eq: Vec<f64> = pts.iter().map(|p| f(p.equity_usd)).collect();
    let mut peak = f(r.initial_equity_usd);
    let dd: Vec<f64> = eq
        .iter()
        .map(|e| {
            peak = peak.max(*e);
            if peak > 0.0 {
                (e - peak) / peak * 100.0
            } else {
                0.0
            }
        })
        .collect();
    let (lo, hi) = eq
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
    let (lo, hi) = if (hi - lo).abs() < 1e-9 {
        (lo - 1.0, hi + 1.0)
    } else {
        (lo, hi)
    };
    let dd_min = dd.iter().copied().fold(0.0_f64, f64::min).min(-0.01);
    // The axis labels are the exact decimals, in the text styles: the lowest and highest
    // equity, and the deepest drawdown (at least 0.01 %, the chart's floor).
    let (lo_usd, hi_usd) = pts
        .iter()
        .fold((pts[0].equity_usd, pts[0].equity_usd), |(a, b), p| {
            (a.min(p.equity_usd), b.max(p.equity_usd))
        });
    let (lo_usd, hi_usd) = if lo_usd == hi_usd {
        (lo_usd - Decimal::ONE, hi_usd + Decimal::ONE)
    } else {
        (lo_usd, hi_usd)
    };
    let dd_label = deepest_drawdown_pct(r).min(Decimal::new(-1, 2));
    #[allow(clippy::cast_precision_loss)]
    let x = |i: usize| PAD_L + (W - PAD_L - PAD_R) * i as f64 / (n - 1) as f64;
    let y_eq = |v: f64| PAD_T + (H_EQ - PAD_T - PAD_B) * (hi - v) / (hi - lo);
    let y_dd = |v: f64| PAD_T + (H_DD - PAD_T - PAD_B) * (v / dd_min);
    // At most ~2 points per pixel column.
    let stride = (n / 2200).max(1);
    let line = |ys: &dyn Fn(usize) -> f64| {
        let mut s = String::new();
        for i in (0..n).step_by(stride).chain(std::iter::once(n - 1)) {
            let _ = write!(s, "{:.1},{:.1} ", x(i), ys(i));
        }
        s
    };
    let index_of = |t: DateTime<Utc>| pts.partition_point(|p| p.tick_at < t).min(n - 1);

    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H_EQ}\" \
         viewBox=\"0 0 {W} {H_EQ}\" role=\"img\" aria-label=\"equity curve\">"
    );
    for k in 0..=4u8 {
        let v = lo + (hi - lo) * f64::from(k) / 4.0;
        let yy = y_eq(v);
        let label = lo_usd + (hi_usd - lo_usd) * Decimal::from(k) / Decimal::from(4);
        let _ = write!(
            svg,
            "<line x1=\"{PAD_L}\" x2=\"{:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#eef\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"#667\">{}</text>",
            W - PAD_R,
            PAD_L - 4.0,
            yy + 3.0,
            money(label)
        );
    }
    let _ = write!(
        svg,
        "<polyline fill=\"none\" stroke=\"#2456c9\" stroke-width=\"1.3\" points=\"{}\"/>",
        line(&|i| y_eq(eq[i]))
    );
    for t in &r.trades {
        let i = index_of(t.entry_tick_at);
        let (cx, cy) = (x(i), y_eq(eq[i]));
        let (path, color) = match t.side {
            Side::Long => (format!("M{:.1},{:.1}l4,7h-8z", cx, cy - 3.0), "#0a7a3d"),
            Side::Short => (format!("M{:.1},{:.1}l4,-7h-8z", cx, cy + 3.0), "#b3261e"),
        };
        let _ = write!(
            svg,
            "<path d=\"{path}\" fill=\"{color}\"><title>{} {} at {} @ {}</title></path>",
            esc(&t.symbol),
            t.side,
            time(t.entry_tick_at),
            price(t.entry_price)
        );
        if let Some(exit) = t.exit_tick_at {
            let j = index_of(exit);
            let _ = write!(
                svg,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.6\" fill=\"none\" stroke=\"#333\">\
                 <title>exit {} at {} · net {}</title></circle>",
                x(j),
                y_eq(eq[j]),
                esc(&t.symbol),
                time(exit),
                money(t.realized_pnl_usd - t.fees_usd)
            );
        }
    }
    let _ = write!(
        svg,
        "<text x=\"{PAD_L}\" y=\"{:.1}\" font-size=\"10\" fill=\"#667\">{}</text>\
         <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"#667\">{}</text></svg>",
        H_EQ - 6.0,
        time(pts[0].tick_at),
        W - PAD_R,
        H_EQ - 6.0,
        time(pts[n - 1].tick_at)
    );

    let _ = write!(
        svg,
        "<p class=\"muted\">Drawdown from the running peak, %</p>\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H_DD}\" \
         viewBox=\"0 0 {W} {H_DD}\" role=\"img\" aria-label=\"drawdown\">\
         <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"#667\">0%</text>\
         <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"#667\">{}</text>\
         <polygon fill=\"#f3c5c0\" stroke=\"#b3261e\" stroke-width=\"0.8\" points=\"{PAD_L},{PAD_T} {}{:.1},{PAD_T}\"/></svg>",
        PAD_L - 4.0,
        PAD_T + 3.0,
        PAD_L - 4.0,
        y_dd(dd_min) + 3.0,
        pct(dd_label),
        line(&|i| y_dd(dd[i])),
        W - PAD_R
    );
    svg
}
