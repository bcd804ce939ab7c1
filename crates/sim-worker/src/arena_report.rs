//! What an arena writes: its statistics computed once ([`Table`]), then `arena.json` (the
//! schema below), the text `arena` prints and `arena.html`.
//!
//! # arena.json (`format`: `sim-worker-arena/1`)
//! Decimals are strings rounded to 6 decimals, trailing zeros dropped; times RFC 3339 UTC;
//! paths relative to OUT.
//! - `from`, `to`, `interval`, `initial_equity_usd`, `fee_bps`, `slippage_bps`, `blind`,
//!   `repeats`, `confidence_pct`, `resamples`, `seed`, `reference` (a row's name);
//! - `windows[]`: `name` (`w01`…), `from`, `to` (its first and last tick), `regime` (of the
//!   first symbol of `--bars`) and `regimes` (per symbol): `trending_up`, `trending_down`,
//!   `ranging`, `volatile` or `unknown`;
//! - `entrants[]`, one per row, entrants first then baselines: `name`; `kind` (`entrant`,
//!   `rule_baseline`, `buy_and_hold`, `flat_cash`); `baseline`; `reference`; `rank` (1 = the
//!   highest net return); `skill`, `model`, `set` (an entrant's or rule baseline's); `symbols`
//!   (a buy-and-hold's); `deterministic`, `repeats`; `metrics` and `by_regime.REGIME.metrics`,
//!   each keyed by metric (`net_return_usd`, `sharpe`, `max_drawdown_pct`, `win_rate_pct`,
//!   `trades`, `cost_usd`, `tokens`) to `{statistic, value, vs_reference}` where `value` and
//!   `vs_reference` are `{windows, estimate, low, high}` (`low`/`high` null below two windows;
//!   `vs_reference` also has `p_better`, and is null for the reference itself);
//!   `by_regime.REGIME.windows`; `runs[]`: `window`, `repeat`, `dir` and `report` (null for a
//!   baseline computed from the bars) and `values` (each metric of the run, null where it has
//!   none).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::Serialize;
use serde_json::Value;
use types::{Interval, RegimeTag, text};

use crate::Failure;
use crate::arena_cmd::{FORMAT, Kind, Results, Row};
use crate::arena_html::{Line, Stroke};
use crate::arena_runs::{Curve, Span, chained, parallel, window_name};
use crate::arena_stats::{
    CONFIDENCE_PCT, Cell, Compared, METRICS, Resampling, Unit, cells, cells_json, json_decimal,
    window_mean,
};
use crate::report::esc;

/// The arena's settings, for arena.json and the pages.
pub(crate) struct Settings<'a> {
    /// Windows left out for holding no bar close.
    pub empty_windows: usize,
    pub spans: &'a [Span],
    pub interval: Interval,
    pub initial: Decimal,
    pub fee_bps: Decimal,
    pub slippage_bps: Decimal,
    pub blind: bool,
    pub repeats: u32,
    pub how: Resampling,
    /// Per window, each symbol's regime; the first symbol's is the window's.
    pub regimes: &'a [BTreeMap<String, RegimeTag>],
    pub first_symbol: &'a str,
}

/// What an arena compared.
pub(crate) struct Arena<'a> {
    pub rows: &'a [Row],
    pub results: &'a [Results],
    pub reference: usize,
    pub settings: Settings<'a>,
}

/// Every statistic of an arena, computed once.
struct Table {
    /// Per row, its cells over every window.
    overall: Vec<Vec<Cell>>,
    /// Per regime, in name order.
    by_regime: Vec<RegimePart>,
    /// Row indices by net return, highest first (rows without one last, in table order).
    ranking: Vec<usize>,
}

/// The windows of one market regime and, per row, its cells over them.
struct RegimePart {
    regime: &'static str,
    windows: Vec<usize>,
    cells: Vec<Vec<Cell>>,
}

/// The net return's position in [`METRICS`].
const NET: usize = 0;

impl Arena<'_> {
    fn runs(&self, r: usize) -> &[Vec<Value>] {
        &self.results[r].summaries
    }

    fn regime(&self, w: usize) -> RegimeTag {
        self.settings.regimes[w]
            .get(self.settings.first_symbol)
            .copied()
            .unwrap_or(RegimeTag::Unknown)
    }

    /// The statistics, rows and regimes spread over the CPUs.
    fn table(&self) -> Table {
        let mut regimes: BTreeMap<&'static str, Vec<usize>> = BTreeMap::new();
        for w in 0..self.settings.spans.len() {
            regimes.entry(self.regime(w).as_str()).or_default().push(w);
        }
        let regimes: Vec<(&'static str, Vec<usize>)> = regimes.into_iter().collect();
        let n = self.rows.len();
        // Task t: row t % n, over every window (t < n) or regime t / n − 1's.
        let tasks = n * (1 + regimes.len());
        let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let mut done = parallel(tasks, threads, |t| {
            let (r, part) = (t % n, t / n);
            let only = part.checked_sub(1).map(|i| regimes[i].1.as_slice());
            let reference = (r != self.reference).then(|| self.runs(self.reference));
            cells(self.runs(r), reference, self.settings.how, only)
        })
        .into_iter();
        let overall: Vec<Vec<Cell>> = done.by_ref().take(n).collect();
        let by_regime = regimes
            .into_iter()
            .map(|(regime, windows)| RegimePart {
                regime,
                windows,
                cells: done.by_ref().take(n).collect(),
            })
            .collect();
        let mut ranking: Vec<usize> = (0..n).collect();
        let net = |r: &usize| overall[*r][NET].value.as_ref().map(|c| c.estimate);
        ranking.sort_by_key(|r| std::cmp::Reverse(net(r)));
        Table {
            overall,
            by_regime,
            ranking,
        }
    }
}

/// arena.json, the printed text (with `tail` at its end) and arena.html.
pub(crate) fn render(arena: &Arena<'_>, tail: &str) -> Result<(String, String, String), Failure> {
    let table = arena.table();
    let json = json(arena, &table)?;
    let mut text = text(arena, &table);
    text.push_str(tail);
    let html = html(arena, &table, &text);
    Ok((json, text, html))
}

/// A run in arena.json.
#[derive(Serialize)]
struct RunJson {
    window: String,
    repeat: usize,
    dir: Option<String>,
    report: Option<String>,
    values: BTreeMap<&'static str, Option<String>>,
}

/// A row in arena.json.
#[derive(Serialize)]
struct RowJson<'a> {
    name: &'a str,
    kind: Kind,
    baseline: bool,
    reference: bool,
    rank: usize,
    skill: Option<&'a str>,
    model: Option<&'a str>,
    set: &'a BTreeMap<String, Value>,
    symbols: &'a [String],
    deterministic: bool,
    repeats: usize,
    metrics: serde_json::Map<String, Value>,
    by_regime: BTreeMap<&'static str, RegimeJson>,
    runs: Vec<RunJson>,
}

#[derive(Serialize)]
struct RegimeJson {
    windows: Vec<String>,
    metrics: serde_json::Map<String, Value>,
}

#[derive(Serialize)]
struct WindowJson {
    name: String,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    regime: &'static str,
    regimes: BTreeMap<String, &'static str>,
}

#[derive(Serialize)]
struct ArenaJson<'a> {
    format: &'static str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    interval: String,
    initial_equity_usd: String,
    fee_bps: String,
    slippage_bps: String,
    blind: bool,
    repeats: u32,
    confidence_pct: u32,
    resamples: u32,
    seed: u64,
    reference: &'a str,
    windows: Vec<WindowJson>,
    entrants: Vec<RowJson<'a>>,
}

/// A run's folder under OUT.
fn run_dir(row: &Row, w: usize, k: usize) -> Option<String> {
    row.dir
        .as_ref()
        .map(|d| format!("{d}/{}/r{}", window_name(w), k + 1))
}

fn json(a: &Arena<'_>, t: &Table) -> Result<String, Failure> {
    let s = &a.settings;
    let windows = s
        .spans
        .iter()
        .enumerate()
        .map(|(w, &(from, to))| WindowJson {
            name: window_name(w),
            from,
            to,
            regime: a.regime(w).as_str(),
            regimes: s.regimes[w]
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str()))
                .collect(),
        })
        .collect();
    let entrants = a
        .rows
        .iter()
        .enumerate()
        .map(|(r, row)| {
            let runs = a
                .runs(r)
                .iter()
                .enumerate()
                .flat_map(|(w, repeats)| {
                    repeats.iter().enumerate().map(move |(k, summary)| {
                        let dir = run_dir(row, w, k);
                        RunJson {
                            window: window_name(w),
                            repeat: k + 1,
                            report: dir.as_ref().map(|d| format!("{d}/report.html")),
                            dir,
                            values: METRICS
                                .iter()
                                .map(|m| (m.key, (m.read)(summary).map(json_decimal)))
                                .collect(),
                        }
                    })
                })
                .collect();
            RowJson {
                name: &row.name,
                kind: row.kind,
                baseline: row.kind != Kind::Entrant,
                reference: r == a.reference,
                rank: t.ranking.iter().position(|&x| x == r).unwrap_or(0) + 1,
                skill: row.skill.as_deref(),
                model: row.model.as_deref(),
                set: &row.set,
                symbols: &row.symbols,
                deterministic: row.deterministic,
                repeats: row.repeats,
                metrics: cells_json(&t.overall[r]),
                by_regime: t
                    .by_regime
                    .iter()
                    .map(|part| {
                        (
                            part.regime,
                            RegimeJson {
                                windows: part.windows.iter().map(|&w| window_name(w)).collect(),
                                metrics: cells_json(&part.cells[r]),
                            },
                        )
                    })
                    .collect(),
                runs,
            }
        })
        .collect();
    let doc = ArenaJson {
        format: FORMAT,
        from: s.spans.first().map(|w| w.0).unwrap_or_default(),
        to: s.spans.last().map(|w| w.1).unwrap_or_default(),
        interval: s.interval.to_string(),
        initial_equity_usd: s.initial.to_string(),
        fee_bps: s.fee_bps.to_string(),
        slippage_bps: s.slippage_bps.to_string(),
        blind: s.blind,
        repeats: s.repeats,
        confidence_pct: CONFIDENCE_PCT,
        resamples: s.how.resamples,
        seed: s.how.seed,
        reference: &a.rows[a.reference].name,
        windows,
        entrants,
    };
    let mut body = serde_json::to_string_pretty(&doc)
        .map_err(|e| Failure::bad_input(format!("error: serializing arena.json: {e}")))?;
    body.push('\n');
    Ok(body)
}

/// A statistic's estimate and interval in `unit`, a gain with its `+` when `signed`.
fn shown(c: &Compared, unit: Unit, signed: bool) -> (String, Option<(String, String)>) {
    let show = |d: Decimal| {
        let s = unit.show(d);
        if signed && d > Decimal::ZERO {
            format!("+{s}")
        } else {
            s
        }
    };
    (
        show(c.estimate),
        c.interval.as_ref().map(|i| (show(i.low), show(i.high))),
    )
}

/// `estimate [low, high]`, `n/a` without a statistic.
fn text_cell(c: Option<&Compared>, unit: Unit, signed: bool) -> String {
    match c.map(|c| shown(c, unit, signed)) {
        None => "n/a".to_owned(),
        Some((estimate, None)) => estimate,
        Some((estimate, Some((low, high)))) => format!("{estimate} [{low}, {high}]"),
    }
}

/// The estimate, and its interval below it.
fn html_cell(c: Option<&Compared>, unit: Unit, signed: bool) -> String {
    match c.map(|c| shown(c, unit, signed)) {
        None => "n/a".to_owned(),
        Some((estimate, None)) => esc(&estimate),
        Some((estimate, Some((low, high)))) => format!(
            "{}<br><span class=\"ci\">[{}, {}]</span>",
            esc(&estimate),
            esc(&low),
            esc(&high)
        ),
    }
}

/// The probability of beating the reference, as a percentage; `—` without one.
fn p_cell(c: Option<&Compared>) -> String {
    c.and_then(|c| c.p_better).map_or_else(
        || "—".to_owned(),
        |p| text::pct((p * Decimal::ONE_HUNDRED).round_dp(1)),
    )
}

fn text(a: &Arena<'_>, t: &Table) -> String {
    let s = &a.settings;
    let reference = &a.rows[a.reference].name;
    let entrants = a.rows.iter().filter(|r| r.kind == Kind::Entrant).count();
    let net = &METRICS[NET];
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} rows ({entrants} entrant{}, {} baseline{}) × {} walk-forward windows from {} to \
         {}, each a fresh account of {}{}",
        a.rows.len(),
        if entrants == 1 { "" } else { "s" },
        a.rows.len() - entrants,
        if a.rows.len() - entrants == 1 {
            ""
        } else {
            "s"
        },
        s.spans.len(),
        s.spans.first().map(|w| w.0).unwrap_or_default(),
        s.spans.last().map(|w| w.1).unwrap_or_default(),
        text::money(s.initial),
        repeats_note(a).map_or_else(String::new, |n| format!("; {n}")),
    );
    if s.empty_windows > 0 {
        let _ = writeln!(
            out,
            "{} of the windows asked for held no bar close and {} left out",
            s.empty_windows,
            if s.empty_windows == 1 { "is" } else { "are" }
        );
    }
    let _ = writeln!(
        out,
        "net return: equity at each window's end less the initial (open positions marked at the \
         last close), summed over the windows; [{CONFIDENCE_PCT}% interval: bootstrap over \
         windows, repeats nested, {} resamples, seed {}]; vs {reference}: the paired difference; \
         P: the share of resamples in which the row beats {reference}",
        s.how.resamples, s.how.seed
    );
    // The name column fits the longest name, the reference's with its mark.
    const MARK: &str = " (reference)";
    let width = a
        .rows
        .iter()
        .map(|r| r.name.chars().count())
        .chain([reference.chars().count() + MARK.len()])
        .max()
        .unwrap_or(8);
    let _ = writeln!(
        out,
        "{:>4}  {:<width$} {:<36} {:<36} {:>6}",
        "rank",
        "entrant",
        "net return",
        format!("vs {reference}"),
        "P"
    );
    for (rank, &r) in t.ranking.iter().enumerate() {
        let cell = &t.overall[r][NET];
        let (name, vs) = if r == a.reference {
            (format!("{reference}{MARK}"), String::new())
        } else {
            (
                a.rows[r].name.clone(),
                text_cell(cell.vs.as_ref(), net.unit, true),
            )
        };
        let _ = writeln!(
            out,
            "{:>4}  {:<width$} {:<36} {:<36} {:>6}",
            rank + 1,
            name,
            text_cell(cell.value.as_ref(), net.unit, false),
            vs,
            p_cell(cell.vs.as_ref())
        );
    }
    let _ = write!(out, "\n{:<width$}      ", "the other metrics");
    for m in &METRICS[1..] {
        let _ = write!(out, " {:>13}", m.name);
    }
    out.push('\n');
    for &r in &t.ranking {
        let _ = write!(out, "{:<width$}      ", a.rows[r].name);
        for (m, cell) in METRICS.iter().zip(&t.overall[r]).skip(1) {
            let v = cell.value.as_ref().map(|c| m.unit.show(c.estimate));
            let _ = write!(out, " {:>13}", v.as_deref().unwrap_or("n/a"));
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "(trades, cost and tokens summed over the windows; Sharpe, max drawdown and win rate the \
         mean per window)\n\nnet return by the market regime of the window ({}):",
        s.first_symbol
    );
    for RegimePart {
        regime,
        windows: ws,
        cells,
    } in &t.by_regime
    {
        let names: Vec<String> = ws.iter().map(|&w| window_name(w)).collect();
        let parts: Vec<String> = t
            .ranking
            .iter()
            .map(|&r| {
                let v = cells[r][NET]
                    .value
                    .as_ref()
                    .map(|c| net.unit.show(c.estimate));
                format!("{} {}", a.rows[r].name, v.as_deref().unwrap_or("n/a"))
            })
            .collect();
        let _ = writeln!(
            out,
            "- {regime} ({}): {}",
            names.join(" "),
            parts.join(" · ")
        );
    }
    out
}

fn html(a: &Arena<'_>, t: &Table, text_out: &str) -> String {
    let s = &a.settings;
    let reference = &a.rows[a.reference].name;
    let net = &METRICS[NET];
    let curves: Vec<Curve> = a
        .results
        .iter()
        .map(|res| {
            let per_window: Vec<Vec<&Curve>> =
                res.curves.iter().map(|c| c.iter().collect()).collect();
            chained(&per_window, s.initial)
        })
        .collect();
    // Entrants in the palette's colours; baselines dashed by kind: rules dark, flat cash
    // dotted grey, each buy-and-hold in a pattern of its own.
    let (mut entrants, mut holds) = (0, 0);
    let lines: Vec<Line<'_>> = a
        .rows
        .iter()
        .zip(&curves)
        .map(|(row, curve)| {
            let stroke = match row.kind {
                Kind::Entrant => {
                    entrants += 1;
                    Stroke::Solid(entrants - 1)
                }
                Kind::RuleBaseline => Stroke::Dashed(0),
                Kind::FlatCash => Stroke::Dashed(1),
                Kind::BuyAndHold => {
                    holds += 1;
                    Stroke::Dashed(1 + holds)
                }
            };
            Line {
                name: &row.name,
                curve,
                stroke,
            }
        })
        .collect();
    let day = |t: DateTime<Utc>| t.format("%Y-%m-%d %H:%M").to_string();
    let mut h = String::new();
    let _ = write!(
        h,
        "<p>{} rows × {} walk-forward windows of {} bars from {} to {} UTC; every window is a \
         fresh account of {} (fee {} bps, slippage {} bps{}).{} Intervals: {CONFIDENCE_PCT}%, \
         bootstrap over the windows with the repeats nested, {} resamples, seed {}. Reference: \
         <b>{}</b>.</p>",
        a.rows.len(),
        s.spans.len(),
        s.interval,
        s.spans.first().map(|w| day(w.0)).unwrap_or_default(),
        s.spans.last().map(|w| day(w.1)).unwrap_or_default(),
        text::money(s.initial),
        text::num(s.fee_bps),
        text::num(s.slippage_bps),
        if s.blind { "; blind" } else { "" },
        repeats_note(a).map_or_else(String::new, |n| format!(" Repeats: {n}.")),
        s.how.resamples,
        s.how.seed,
        esc(reference),
    );
    let _ = write!(
        h,
        "<p class=\"muted\">The baselines (dashed) are in every arena: buy-and-hold of each \
         symbol (and equal-weight when there are several), flat cash, and the skill's rules run \
         without an LLM where its model is a rule model. Contamination-free studies found \
         buy-and-hold beating most LLM agents: an entrant earns its cost only above them.</p>\
         <h2>Equity over time</h2><p class=\"muted\">Equity after every tick, marked to market; \
         each window starts a fresh account of {}, chained here to what the earlier windows made \
         (the mean over a window's repeats).</p>{}{}",
        text::money(s.initial),
        crate::arena_html::legend(&lines),
        crate::arena_html::equity_chart(s.spans, &lines, s.initial)
    );

    h.push_str(
        "<h2>Leaderboard</h2><table class=\"leaderboard\"><tr><th>#</th>\
         <th class=\"l\">entrant</th><th class=\"l\">kind</th>",
    );
    for m in &METRICS {
        let _ = write!(h, "<th>{}</th>", esc(m.name));
    }
    h.push_str("<th>net return vs reference</th><th>P(beats reference)</th></tr>");
    for (rank, &r) in t.ranking.iter().enumerate() {
        let row = &a.rows[r];
        let class = if r == a.reference {
            " class=\"reference\""
        } else {
            ""
        };
        let _ = write!(
            h,
            "<tr{class}><td>{}</td><td class=\"l name\">{}</td><td class=\"l\">{}</td>",
            rank + 1,
            esc(&row.name),
            kind_text(row.kind)
        );
        for (m, cell) in METRICS.iter().zip(&t.overall[r]) {
            let _ = write!(
                h,
                "<td>{}</td>",
                html_cell(cell.value.as_ref(), m.unit, false)
            );
        }
        let vs = t.overall[r][NET].vs.as_ref();
        if r == a.reference {
            h.push_str("<td class=\"l\">reference</td><td>—</td></tr>");
        } else {
            let _ = write!(
                h,
                "<td>{}</td><td>{}</td></tr>",
                html_cell(vs, net.unit, true),
                p_cell(vs)
            );
        }
    }
    h.push_str(
        "</table><p class=\"muted\">Net return, trades, cost and tokens are sums over the \
         windows; Sharpe, max drawdown and win rate the mean per window. Brackets: the interval. \
         P: the share of bootstrap resamples in which the row's net return beats the \
         reference's.</p>",
    );

    let _ = write!(
        h,
        "<h2>By market regime</h2><p class=\"muted\">Each window's regime is that of {} over \
         the window. Net return summed over the windows of the regime; below it, the difference \
         from the reference.</p><table class=\"regimes\"><tr><th class=\"l\">entrant</th>",
        esc(s.first_symbol)
    );
    for RegimePart {
        regime,
        windows: ws,
        ..
    } in &t.by_regime
    {
        let _ = write!(
            h,
            "<th>{} ({} window{})</th>",
            esc(regime),
            ws.len(),
            if ws.len() == 1 { "" } else { "s" }
        );
    }
    h.push_str("</tr>");
    for &r in &t.ranking {
        let _ = write!(h, "<tr><td class=\"l\">{}</td>", esc(&a.rows[r].name));
        for RegimePart { cells, .. } in &t.by_regime {
            let cell = &cells[r][NET];
            let vs = cell.vs.as_ref().map_or_else(String::new, |d| {
                format!(
                    "<br><span class=\"ci\">vs ref {}</span>",
                    esc(&shown(d, net.unit, true).0)
                )
            });
            let _ = write!(
                h,
                "<td>{}{vs}</td>",
                cell.value
                    .as_ref()
                    .map_or_else(|| "n/a".to_owned(), |c| esc(&net.unit.show(c.estimate)))
            );
        }
        h.push_str("</tr>");
    }
    h.push_str("</table>");

    h.push_str(
        "<h2>Windows</h2><p class=\"muted\">Net return per window (the mean over its \
         repeats).</p><table class=\"windows\"><tr><th class=\"l\">window</th>\
         <th class=\"l\">from</th><th class=\"l\">to</th><th class=\"l\">regime</th>",
    );
    for &r in &t.ranking {
        let _ = write!(h, "<th>{}</th>", esc(&a.rows[r].name));
    }
    h.push_str("</tr>");
    for (w, &(from, to)) in s.spans.iter().enumerate() {
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>\
             <td class=\"l\">{}</td>",
            window_name(w),
            day(from),
            day(to),
            a.regime(w)
        );
        for &r in &t.ranking {
            let v = window_mean(&a.runs(r)[w], net);
            let _ = write!(
                h,
                "<td>{}</td>",
                v.map_or_else(|| "n/a".to_owned(), |d| esc(&net.unit.show(d)))
            );
        }
        h.push_str("</tr>");
    }
    h.push_str(
        "</table><h2>Runs</h2><p class=\"muted\">Each run's own report: its trades, equity, \
         lessons and the exact prompt of its last tick.</p><ul class=\"runs\">",
    );
    for &r in &t.ranking {
        let row = &a.rows[r];
        if row.dir.is_none() {
            continue;
        }
        let _ = write!(h, "<li><b>{}</b>: ", esc(&row.name));
        for (w, repeats) in a.runs(r).iter().enumerate() {
            let _ = write!(h, "{} ", window_name(w));
            for k in 0..repeats.len() {
                if let Some(dir) = run_dir(row, w, k) {
                    let _ = write!(h, "<a href=\"{}/report.html\">r{}</a>", esc(&dir), k + 1);
                }
            }
            h.push(' ');
        }
        h.push_str("</li>");
    }
    h.push_str("</ul>");
    crate::arena_html::page("Arena", &h, text_out)
}

/// `R runs per window of a model that is not built in`, when a row has such a model.
fn repeats_note(a: &Arena<'_>) -> Option<String> {
    let r = a.settings.repeats;
    a.rows.iter().any(|row| !row.deterministic).then(|| {
        format!(
            "{r} run{} per window of a model that is not built in",
            if r == 1 { "" } else { "s" }
        )
    })
}

fn kind_text(kind: Kind) -> &'static str {
    match kind {
        Kind::Entrant => "entrant",
        Kind::RuleBaseline | Kind::BuyAndHold | Kind::FlatCash => "baseline",
    }
}
