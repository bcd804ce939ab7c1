//! `assemble_context`: the user message of one tick.
//!
//! Sections, in this order (those marked * only when they have something to say):
//! `## Time`, `## Market context`, `## News (last Nh, top K by relevance)`,
//! `## Upcoming events (next Nh)`*, `## Portfolio`, `## Risk caps (engine-enforced)`,
//! `## Open orders`*, `## Last decision`*, `## Recent trades on this skill (closed)`* and
//! `## Open positions (memory view)`* (memory dial), `## Your turn`.
//!
//! Contracts:
//! - **Deterministic.** Identical inputs give byte-identical text: no map iteration order, no
//!   floats, no locale, no wall clock. Decimals are printed by rules written here (a symbol's
//!   prices all carry the largest number of decimals among its bars, so EURUSD `1.07219` keeps
//!   its five; money is fixed at 2 decimals; ratios at 2).
//! - **Point in time.** Everything is re-checked against `ctx.now` whatever the sources
//!   return: a bar is shown only if it *closed* (`time + interval`) at or before `now`; news only
//!   if published in `[now − lookback, now]`; events only if scheduled in `(now, now + lookahead]`.
//! - **Unknown is not none.** Without a news feed (`tools::NoData`) the News section says
//!   headlines are unknown, not that there were none; with events enabled but no calendar, the
//!   Upcoming events section says the same of events.
//! - **External text is data.** Headlines, sources, event titles and engine details are put on
//!   one line and bounded, so they cannot forge a heading of this message.
//!
//! Token estimates are a cheap deterministic proxy, `ceil(chars / 4)` per section (chars are
//! Unicode scalar values). Exact tokenizer counts belong to the CLI, which can afford a
//! tokenizer; the estimate here is for budgets and dashboards.

use std::fmt::Write as _;

use chrono::{DateTime, Datelike, Duration, Timelike, Utc};
use rust_decimal::Decimal;
use serde::Serialize;
use skill_schema::Skill;
use tools::{
    DataError, LastDecisionSnapshot, OpenOrder, ToolContext, UpcomingEvent, fixed, news_window,
    one_line, pct,
};
use types::{Bar, Interval, PortfolioSnapshot, Position, classify_regime};

/// Higher-timeframe bars fetched per timeframe (the regime window of `classify_regime`).
pub const HTF_FETCH_BARS: usize = 20;
/// Higher-timeframe bars printed per timeframe.
pub const HTF_SHOW_BARS: usize = 6;
/// Most decimals a price is printed with.
pub const MAX_PRICE_DP: u32 = 8;
/// The header line of every bar table.
pub const BAR_TABLE_HEADER: &str = "time o h l c v";

/// The user message and what each section costs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AssembledContext {
    /// The whole message: the sections joined by one blank line, ending with a newline.
    pub text: String,
    /// Each rendered section, in order.
    pub sections: Vec<SectionEstimate>,
    /// `ceil(chars(text) / 4)`.
    pub total_tokens_estimate: u32,
}

/// One rendered section and its estimated size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SectionEstimate {
    /// Stable key: `time`, `market`, `news`, `events`, `portfolio`, `risk_caps`,
    /// `open_orders`, `last_decision`, `recent_trades`, `open_positions`, `your_turn`.
    pub name: &'static str,
    /// Unicode scalar values in the section's text (heading included).
    pub chars: u32,
    /// `ceil(chars / 4)`.
    pub tokens_estimate: u32,
}

/// What one deployment's ticks can reuse from the previous tick's rendering: the rows of bars
/// that are still in the window (a closed bar never changes, so its row never does) and the
/// composed system prompt (it changes only with the lessons).
///
/// Keep one per deployment (`tick::TickState` does): the system prompt memo belongs to one
/// skill. The cache only saves work: a row is reused only for an identical bar printed with the
/// same number of decimals, so the text is byte-identical with or without it. Rows of bars that
/// left the window are dropped on every tick, so its size is bounded by one tick's bars.
#[derive(Debug, Default, Clone)]
pub struct RenderCache {
    /// Per symbol and interval (a deployment has a handful: a linear search beats hashing),
    /// rows sorted by bar open time (a tick's window is a run of consecutive bars).
    rows: Vec<(String, Interval, Vec<CachedRow>)>,
    generation: u64,
    pub(crate) system_prompt: Option<(Option<prompt_compose::Lessons>, String)>,
}

#[derive(Debug, Clone)]
struct CachedRow {
    bar: Bar,
    /// Decimals this bar's own prices need.
    dp: u32,
    /// The row as printed with `text.0` decimals.
    text: Option<(u32, String)>,
    /// The tick (`RenderCache::generation`) that last used it.
    used: u64,
}

impl RenderCache {
    /// The cached entry for `bar`, (re)built when missing or when the source now returns a
    /// different bar for the same open time.
    fn row(&mut self, symbol: &str, interval: Interval, bar: &Bar) -> &mut CachedRow {
        let i = match self
            .rows
            .iter()
            .position(|(s, i, _)| *i == interval && s == symbol)
        {
            Some(i) => i,
            None => {
                self.rows.push((symbol.to_owned(), interval, Vec::new()));
                self.rows.len() - 1
            }
        };
        let generation = self.generation;
        let fresh = || CachedRow {
            bar: bar.clone(),
            dp: price_dp(std::iter::once(bar)),
            text: None,
            used: generation,
        };
        let rows = &mut self.rows[i].2;
        let at = match rows.binary_search_by(|r| r.bar.time.cmp(&bar.time)) {
            Ok(at) => {
                if rows[at].bar != *bar {
                    rows[at] = fresh();
                }
                at
            }
            Err(at) => {
                rows.insert(at, fresh());
                at
            }
        };
        let entry = &mut rows[at];
        entry.used = generation;
        entry
    }

    fn evict_unused(&mut self) {
        let generation = self.generation;
        for (_, _, rows) in &mut self.rows {
            rows.retain(|r| r.used == generation);
        }
        self.rows.retain(|(_, _, rows)| !rows.is_empty());
    }
}

/// Why the context could not be assembled. A tick without its data must not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("assembling the {section} section: {source}")]
pub struct ContextError {
    pub section: &'static str,
    #[source]
    pub source: DataError,
}

fn data_err(section: &'static str) -> impl FnOnce(DataError) -> ContextError {
    move |source| ContextError { section, source }
}

/// `ceil(chars / 4)`, the deterministic token proxy.
#[must_use]
pub fn estimate_tokens(text: &str) -> u32 {
    u32::try_from(text.chars().count().div_ceil(4)).unwrap_or(u32::MAX)
}

/// Renders the user message of one tick from the skill's context config and the data sources
/// of `ctx`, as of `ctx.now`. The symbols shown are `ctx.symbols` (callers set them to the
/// skill's `context.symbols`).
///
/// # Errors
/// [`ContextError`] naming the section whose data source failed (bars, news, events, broker,
/// memory). The caller skips the tick rather than run it on missing data.
pub fn assemble_context(
    skill: &Skill,
    ctx: &ToolContext,
    last_decision: Option<&LastDecisionSnapshot>,
) -> Result<AssembledContext, ContextError> {
    assemble_context_cached(skill, ctx, last_decision, &mut RenderCache::default())
}

/// [`assemble_context`] reusing the bar rows `cache` rendered on earlier ticks of the same
/// deployment: a closed bar's row never changes, so a tick renders only the bars that are new
/// to it. The text is byte-identical to [`assemble_context`]'s.
///
/// # Errors
/// As [`assemble_context`].
pub fn assemble_context_cached(
    skill: &Skill,
    ctx: &ToolContext,
    last_decision: Option<&LastDecisionSnapshot>,
    cache: &mut RenderCache,
) -> Result<AssembledContext, ContextError> {
    let cfg = &skill.context;
    let mut sections: Vec<(&'static str, String)> = Vec::new();

    sections.push(("time", time_section(ctx.now, cfg.bars_interval)));
    cache.generation = cache.generation.wrapping_add(1);
    let market = market_section(skill, ctx, cache);
    cache.evict_unused();
    sections.push(("market", market?));

    let news = news_window(
        ctx,
        &ctx.symbols,
        cfg.news_lookback_hours,
        cfg.news_top_k as usize,
    )
    .map_err(data_err("news"))?;
    let news = if ctx.news.is_connected() {
        news_section(&news, cfg.news_lookback_hours, cfg.news_top_k, &ctx.symbols)
    } else {
        format!(
            "## News (last {}h, top {} by relevance)\nNo news feed is connected to this \
             deployment: headlines are unknown, not absent.",
            cfg.news_lookback_hours, cfg.news_top_k
        )
    };
    sections.push(("news", news));

    if cfg.events.enabled && !ctx.events.is_connected() {
        sections.push((
            "events",
            format!(
                "## Upcoming events (next {}h)\nNo event calendar is connected to this \
                 deployment: scheduled events are unknown, not absent.",
                cfg.events.lookahead_hours
            ),
        ));
    } else if cfg.events.enabled {
        let events = upcoming_events(skill, ctx)?;
        if !events.is_empty() {
            sections.push((
                "events",
                events_section(&events, ctx.now, cfg.events.lookahead_hours),
            ));
        }
    }

    let portfolio = ctx
        .portfolio
        .portfolio()
        .and_then(|p| tools::check_portfolio(&p).map(|()| p))
        .map_err(data_err("portfolio"))?;
    sections.push(("portfolio", portfolio_section(&portfolio)));
    sections.push(("risk_caps", risk_section(skill, portfolio.equity_usd)));

    let mut orders = ctx
        .portfolio
        .open_orders()
        .map_err(data_err("open orders"))?;
    if !orders.is_empty() {
        orders.sort_by(|a, b| {
            a.symbol
                .cmp(&b.symbol)
                .then(a.placed_at.cmp(&b.placed_at))
                .then_with(|| a.id.cmp(&b.id))
        });
        sections.push(("open_orders", orders_section(&orders)));
    }

    if let Some(last) = last_decision {
        sections.push(("last_decision", last_decision_section(last)));
    }

    if cfg.memory.enabled {
        let k = cfg
            .memory
            .recent_trades_k
            .min(skill_schema::limits::MAX_RECENT_TRADES_K);
        let body = ctx
            .memory
            .recent_trades(k, ctx.now)
            .map_err(data_err("recent trades"))?;
        sections.push((
            "recent_trades",
            memory_section(
                "## Recent trades on this skill (closed)",
                &body,
                "No closed trades on this skill yet.",
            ),
        ));
        if cfg.memory.include_open_positions {
            let body = ctx
                .memory
                .open_positions(ctx.now)
                .map_err(data_err("open positions"))?;
            sections.push((
                "open_positions",
                memory_section(
                    "## Open positions (memory view)",
                    &body,
                    "No open positions in the ledger.",
                ),
            ));
        }
    }

    sections.push((
        "your_turn",
        "## Your turn\nEvaluate against your strategy. Call propose_order exactly once \
         (action no_op to stand aside)."
            .to_owned(),
    ));

    // Each section's characters are counted once; the whole text adds the blank-line joins and
    // the final newline.
    let mut text = String::with_capacity(sections.iter().map(|(_, b)| b.len() + 2).sum());
    let mut estimates = Vec::with_capacity(sections.len());
    let mut total_chars: usize = 0;
    for (i, (name, body)) in sections.iter().enumerate() {
        if i > 0 {
            text.push_str("\n\n");
            total_chars += 2;
        }
        text.push_str(body);
        let chars = body.chars().count();
        total_chars += chars;
        estimates.push(SectionEstimate {
            name,
            chars: u32::try_from(chars).unwrap_or(u32::MAX),
            tokens_estimate: u32::try_from(chars.div_ceil(4)).unwrap_or(u32::MAX),
        });
    }
    text.push('\n');
    total_chars += 1;
    Ok(AssembledContext {
        total_tokens_estimate: u32::try_from(total_chars.div_ceil(4)).unwrap_or(u32::MAX),
        text,
        sections: estimates,
    })
}

// ---------------------------------------------------------------------------------------------
// number and time formatting

/// Decimals needed to print every price of `bars` without loss (trailing zeros ignored),
/// capped at [`MAX_PRICE_DP`].
#[must_use]
pub fn price_dp<'a>(bars: impl IntoIterator<Item = &'a Bar>) -> u32 {
    bars.into_iter()
        .flat_map(|b| [b.open, b.high, b.low, b.close])
        .map(|d| d.normalize().scale())
        .max()
        .unwrap_or(0)
        .min(MAX_PRICE_DP)
}

/// Volume, token-frugal: whole units from 100 up, 2 decimals from 1, else up to 4 significant
/// decimals; trailing zeros dropped.
#[must_use]
pub fn fmt_volume(v: Decimal) -> String {
    let dp = if v.abs() >= Decimal::ONE_HUNDRED {
        0
    } else if v.abs() >= Decimal::ONE {
        2
    } else {
        4
    };
    v.round_dp_with_strategy(dp, rust_decimal::RoundingStrategy::MidpointAwayFromZero)
        .normalize()
        .to_string()
}

/// `$1234.50`, `-$9.70`.
#[must_use]
pub fn usd(d: Decimal) -> String {
    if d.is_sign_negative() && !d.is_zero() {
        format!("-${}", fixed(-d, 2))
    } else {
        format!("${}", fixed(d, 2))
    }
}

/// `+$40.00`, `-$9.70`, `$0.00`.
#[must_use]
pub fn signed_usd(d: Decimal) -> String {
    let r = tools::round2(d);
    if r.is_zero() {
        "$0.00".to_owned()
    } else if r.is_sign_positive() {
        format!("+${}", fixed(r, 2))
    } else {
        format!("-${}", fixed(-r, 2))
    }
}

/// `+0.60`, `-0.30`, `0.00`.
fn signed2(d: Decimal) -> String {
    let r = tools::round2(d);
    if r.is_zero() {
        "0.00".to_owned()
    } else if r.is_sign_positive() {
        format!("+{}", fixed(r, 2))
    } else {
        fixed(r, 2)
    }
}

/// A decimal without trailing zeros (`3x`, `65000.5`).
fn plain(d: Decimal) -> String {
    d.normalize().to_string()
}

/// Compact UTC time for rows: `06-05T10:15`.
#[must_use]
pub fn short_time(t: DateTime<Utc>) -> String {
    // Hand-formatted: chrono's strftime interpreter dominated the bench on ~450 rows a tick.
    format!(
        "{:02}-{:02}T{:02}:{:02}",
        t.month(),
        t.day(),
        t.hour(),
        t.minute()
    )
}

fn bar_time(t: DateTime<Utc>, interval: Interval) -> String {
    match interval {
        Interval::D1 | Interval::W1 => format!("{:04}-{:02}-{:02}", t.year(), t.month(), t.day()),
        _ => short_time(t),
    }
}

/// `6h`, `2h30m`, `45m`.
fn fmt_duration(d: Duration) -> String {
    let minutes = d.num_minutes().max(0);
    match (minutes / 60, minutes % 60) {
        (0, m) => format!("{m}m"),
        (h, 0) => format!("{h}h"),
        (h, m) => format!("{h}h{m:02}m"),
    }
}

// ---------------------------------------------------------------------------------------------
// sections

fn time_section(now: DateTime<Utc>, interval: Interval) -> String {
    format!(
        "## Time\n{} ({}). Execution timeframe {}; every bar below closed at or before this time \
         (rows are bar open times, UTC).",
        now.format("%Y-%m-%dT%H:%M:%SZ"),
        now.format("%A"),
        interval
    )
}

/// Bars of `symbol` at `interval` that closed at or before `now`, oldest first, one per open
/// time, at most `limit` (the latest ones).
///
/// # Errors
/// [`DataError`] when the market-data source fails.
pub fn closed_bars(
    ctx: &ToolContext,
    symbol: &str,
    interval: Interval,
    limit: usize,
) -> Result<Vec<Bar>, DataError> {
    let mut bars = ctx.market.bars(symbol, interval, ctx.now, limit)?;
    // Closed by `now` ⇔ opened by `now − interval` (one subtraction instead of one addition per
    // bar).
    match ctx.now.checked_sub_signed(interval.duration()) {
        Some(latest_open) => bars.retain(|b| b.time <= latest_open),
        None => bars.clear(),
    }
    if !bars.is_sorted_by(|a, b| a.time < b.time) {
        bars.sort_by_key(|b| b.time);
        bars.dedup_by_key(|b| b.time);
    }
    let skip = bars.len().saturating_sub(limit);
    Ok(bars.split_off(skip))
}

fn bar_rows(
    out: &mut String,
    cache: &mut RenderCache,
    symbol: &str,
    bars: &[Bar],
    interval: Interval,
    dp: u32,
) {
    out.push_str(BAR_TABLE_HEADER);
    for b in bars {
        let row = cache.row(symbol, interval, b);
        let text = match &row.text {
            Some((row_dp, text)) if *row_dp == dp => text,
            _ => {
                let text = format!(
                    "\n{} {} {} {} {} {}",
                    bar_time(b.time, interval),
                    fixed(b.open, dp),
                    fixed(b.high, dp),
                    fixed(b.low, dp),
                    fixed(b.close, dp),
                    fmt_volume(b.volume)
                );
                &row.text.insert((dp, text)).1
            }
        };
        out.push_str(text);
    }
}

fn market_section(
    skill: &Skill,
    ctx: &ToolContext,
    cache: &mut RenderCache,
) -> Result<String, ContextError> {
    let cfg = &skill.context;
    let interval = cfg.bars_interval;
    let lookback = cfg.bars_lookback as usize;
    let higher = cfg.effective_higher_timeframes();
    let mut out = String::from("## Market context");
    for symbol in &ctx.symbols {
        let bars = closed_bars(ctx, symbol, interval, lookback).map_err(data_err("market"))?;
        let mut htf = Vec::with_capacity(higher.len());
        for &h in &higher {
            let hb = closed_bars(ctx, symbol, h, HTF_FETCH_BARS).map_err(data_err("market"))?;
            htf.push((h, hb));
        }
        // As `price_dp` over every bar shown or classified, from each bar's cached decimals.
        let mut dp = 0;
        for (i, b) in bars.iter().map(|b| (interval, b)).chain(
            htf.iter()
                .flat_map(|(h, hb)| hb.iter().map(move |b| (*h, b))),
        ) {
            dp = dp.max(cache.row(symbol, i, b).dp);
        }
        out.push_str("\n\n");
        if bars.is_empty() {
            let _ = write!(out, "### {symbol} {interval} · no closed bars available");
        } else {
            let _ = writeln!(
                out,
                "### {symbol} {interval} · regime {} · last {} bars",
                classify_regime(&bars),
                bars.len()
            );
            bar_rows(&mut out, cache, symbol, &bars, interval, dp);
        }
        for (h, hb) in &htf {
            out.push('\n');
            if hb.is_empty() {
                let _ = write!(out, "#### {symbol} {h} · no closed bars available");
                continue;
            }
            let shown = &hb[hb.len().saturating_sub(HTF_SHOW_BARS)..];
            let _ = writeln!(
                out,
                "#### {symbol} {h} · regime {} (last {} bars) · last {} shown",
                classify_regime(hb),
                hb.len(),
                shown.len()
            );
            bar_rows(&mut out, cache, symbol, shown, *h, dp);
        }
    }
    Ok(out)
}

fn news_section(items: &[tools::NewsItem], hours: u32, top_k: u32, symbols: &[String]) -> String {
    let mut out = format!("## News (last {hours}h, top {top_k} by relevance)");
    if items.is_empty() {
        let _ = write!(
            out,
            "\nNo headlines about {} in the last {hours}h.",
            symbols.join(", ")
        );
        return out;
    }
    for n in items {
        let about = if n.symbols.is_empty() {
            "market-wide".to_owned()
        } else {
            n.symbols.join(", ")
        };
        let _ = write!(
            out,
            "\n- {} {} [{}] sentiment {} importance {}: {}",
            short_time(n.time),
            n.source,
            about,
            signed2(n.sentiment),
            fixed(n.importance, 2),
            n.headline
        );
    }
    out
}

fn upcoming_events(skill: &Skill, ctx: &ToolContext) -> Result<Vec<UpcomingEvent>, ContextError> {
    let ev = &skill.context.events;
    let until = ctx.now + Duration::hours(i64::from(ev.lookahead_hours));
    let mut events: Vec<UpcomingEvent> = ctx
        .events
        .upcoming(ctx.now, until, &ev.kinds, ev.min_importance)
        .map_err(data_err("events"))?
        .into_iter()
        .filter(|e| e.scheduled_at > ctx.now && e.scheduled_at <= until)
        .filter(|e| ev.kinds.is_empty() || ev.kinds.contains(&e.kind))
        .filter(|e| e.importance >= ev.min_importance)
        .filter(|e| e.symbols.is_empty() || e.symbols.iter().any(|s| ctx.trades_symbol(s)))
        .map(|mut e| {
            e.title = one_line(&e.title).chars().take(200).collect();
            e.symbols.sort();
            e.symbols.dedup();
            e
        })
        .collect();
    events.sort_by(|a, b| {
        a.scheduled_at
            .cmp(&b.scheduled_at)
            .then(b.importance.cmp(&a.importance))
            .then_with(|| a.title.cmp(&b.title))
    });
    Ok(events)
}

fn events_section(events: &[UpcomingEvent], now: DateTime<Utc>, hours: u32) -> String {
    let mut out = format!("## Upcoming events (next {hours}h)");
    for e in events {
        let about = if e.symbols.is_empty() {
            "market-wide".to_owned()
        } else {
            e.symbols.join(", ")
        };
        let _ = write!(
            out,
            "\n- {} (in {}) {} importance {} [{}]: {}",
            short_time(e.scheduled_at),
            fmt_duration(e.scheduled_at - now),
            e.kind.as_str(),
            fixed(e.importance, 2),
            about,
            e.title
        );
    }
    out
}

fn position_line(p: &Position, equity: Decimal) -> String {
    let notional = p.notional_usd();
    let share = pct(notional, equity)
        .map_or_else(String::new, |s| format!(" ({}% of equity)", fixed(s, 2)));
    let liq = p
        .liquidation_price
        .map_or_else(String::new, |l| format!(" · liq {}", plain(l)));
    format!(
        "- {} {} {} @ {} · mark {} · notional {}{} · {}x · uPnL {} · margin {}{}",
        p.symbol,
        p.side,
        plain(p.qty),
        plain(p.entry_price),
        plain(p.mark_price),
        usd(notional),
        share,
        plain(p.leverage),
        signed_usd(p.unrealized_pnl_usd),
        usd(p.margin_usd),
        liq
    )
}

fn portfolio_section(p: &PortfolioSnapshot) -> String {
    let gross = p.gross_exposure_usd();
    let share = pct(gross, p.equity_usd)
        .map_or_else(String::new, |s| format!(" ({}% of equity)", fixed(s, 2)));
    let mut out = format!(
        "## Portfolio\nEquity {} · available margin {} · gross exposure {}{}\nRealized PnL {} gross · fees paid {}",
        usd(p.equity_usd),
        usd(p.available_margin_usd),
        usd(gross),
        share,
        signed_usd(p.realized_pnl_usd),
        usd(p.fees_paid_usd)
    );
    let mut positions: Vec<&Position> = p.positions.iter().collect();
    positions.sort_by(|a, b| a.symbol.cmp(&b.symbol));
    if positions.is_empty() {
        out.push_str("\nNo open positions.");
    }
    for pos in positions {
        out.push('\n');
        out.push_str(&position_line(pos, p.equity_usd));
    }
    out
}

fn risk_section(skill: &Skill, equity: Decimal) -> String {
    let r = &skill.risk;
    let of_equity = |pct_value: Decimal| usd(pct_value * equity / Decimal::ONE_HUNDRED);
    let allowed = if r.allowed_symbols.is_empty() {
        "any".to_owned()
    } else {
        r.allowed_symbols.join(", ")
    };
    format!(
        "## Risk caps (engine-enforced)\n\
         - Max position: {}% of equity = {} notional\n\
         - Max total exposure: {}% of equity = {} notional\n\
         - Max leverage: {}x\n\
         - Order size: {} to {} notional\n\
         - Max orders per hour: {}\n\
         - Halts: no new or added risk at a {}% drawdown from peak equity or a {}% loss today (UTC)\n\
         - Allowed symbols: {}",
        plain(r.max_position_pct),
        of_equity(r.max_position_pct),
        plain(r.max_total_exposure_pct),
        of_equity(r.max_total_exposure_pct),
        plain(r.max_leverage),
        usd(r.min_order_usd),
        usd(r.max_order_usd),
        r.max_orders_per_hour,
        plain(r.halt_drawdown_pct),
        plain(r.halt_daily_loss_pct),
        allowed
    )
}

fn orders_section(orders: &[OpenOrder]) -> String {
    let mut out = String::from("## Open orders");
    for o in orders {
        let side = match o.side {
            types::OrderSide::Buy => "buy",
            types::OrderSide::Sell => "sell",
        };
        let price = o
            .price
            .map_or_else(String::new, |p| format!(" @ {}", plain(p)));
        let _ = write!(
            out,
            "\n- {} {} {} {}{}{} (placed {}, id {})",
            o.symbol,
            side,
            one_line(&o.kind),
            plain(o.qty),
            price,
            if o.reduce_only { " reduce-only" } else { "" },
            short_time(o.placed_at),
            one_line(&o.id)
        );
    }
    out
}

fn last_decision_section(last: &LastDecisionSnapshot) -> String {
    let proposal = last.proposal.as_deref().map_or_else(
        || "no proposal".to_owned(),
        |p| format!("proposed {}", one_line(p)),
    );
    let verdict = match last.rule {
        Some(rule) => format!("{} {}", last.status.as_str(), rule),
        None => last.status.as_str().to_owned(),
    };
    let detail = one_line(&last.detail);
    let detail = if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    };
    format!(
        "## Last decision\nTick {}: {}\nEngine: {}{}",
        last.tick_at.format("%Y-%m-%dT%H:%M:%SZ"),
        proposal,
        verdict,
        detail
    )
}

/// The ledger's rendered body under its heading. When the ledger rendered the whole section
/// (heading included, as `memory-ledger`'s renderers do), its heading line is dropped so it is
/// not printed twice. A body line that starts with `#` is escaped (`\#`) so rendered reasons can
/// never open a section of their own.
fn memory_section(heading: &str, body: &str, empty: &str) -> String {
    let mut lines = body.lines().peekable();
    while lines.peek().is_some_and(|l| l.trim().is_empty()) {
        lines.next();
    }
    if lines.peek().is_some_and(|l| l.trim() == heading) {
        lines.next();
    }
    let mut out = String::with_capacity(heading.len() + body.len() + 8);
    out.push_str(heading);
    let mut any = false;
    for l in lines.map(str::trim_end).filter(|l| !l.trim().is_empty()) {
        out.push('\n');
        // A line of the body cannot pass for a heading of this message.
        if l.trim_start().starts_with('#') {
            out.push('\\');
            out.push_str(l.trim_start());
        } else {
            out.push_str(l);
        }
        any = true;
    }
    if !any {
        out.push('\n');
        out.push_str(empty);
    }
    out
}
