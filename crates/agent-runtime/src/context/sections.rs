//! Each section's rendering, in the order of the message.

use std::fmt::Write as _;

use chrono::{DateTime, Datelike, Duration, Utc};
use rust_decimal::Decimal;
use skill_schema::Skill;
use tools::{LastDecisionSnapshot, OpenOrder, ToolContext, one_line, push_one_line};
use types::text;
use types::{Interval, MarketEvent, PortfolioSnapshot, Position};

use super::cache::RenderCache;
use super::text::{push_about, push_share_of_equity};
use super::view::SymbolBars;
use super::{BAR_TABLE_HEADER, ContextError, HTF_SHOW_BARS, data_err};

pub(super) fn time_section(out: &mut String, now: DateTime<Utc>, interval: Interval) {
    out.push_str("## Time\n");
    text::push_timestamp(out, now);
    out.push_str(" (");
    out.push_str(text::WEEKDAYS[now.weekday().num_days_from_monday() as usize]);
    out.push_str("). Execution timeframe ");
    out.push_str(interval.as_str());
    out.push_str("; every bar below closed at or before this time (rows are bar open times, UTC).");
}

/// Writes the market section; returns its characters.
pub(super) fn market_section(
    out: &mut String,
    skill: &Skill,
    names: &[String],
    symbols: &[SymbolBars<'_>],
    cache: &mut RenderCache,
) -> Result<usize, ContextError> {
    let cfg = &skill.context;
    let interval = cfg.bars_interval;
    // Characters: counted on the headings, the rows (ASCII) by their length.
    let mut chars = 0;
    let mut counted_to = out.len();
    out.push_str("## Market context");
    let mut htf = Vec::with_capacity(4);
    for (symbol, read) in names.iter().zip(symbols) {
        let base = cache.sync_table(symbol, interval, &read.bars);
        if let Some(regime) = read.regime {
            cache.tables[base].set_regime(regime);
        }
        htf.clear();
        for (h, hb) in &read.higher {
            htf.push(cache.sync_table(symbol, *h, hb));
        }
        // As `price_dp` over every bar shown or classified.
        let dp = htf
            .iter()
            .map(|&i| cache.tables[i].max_dp())
            .fold(cache.tables[base].max_dp(), u32::max);
        out.push_str("\n\n");
        let table = &mut cache.tables[base];
        if table.bars.is_empty() {
            let _ = write!(out, "### {symbol} {interval} · no closed bars available");
        } else {
            out.push_str("### ");
            out.push_str(symbol);
            out.push(' ');
            out.push_str(interval.as_str());
            out.push_str(" · regime ");
            out.push_str(table.regime().as_str());
            out.push_str(" · last ");
            text::push_uint(out, table.bars.len() as u64);
            out.push_str(" bars\n");
            out.push_str(BAR_TABLE_HEADER);
            chars += out[counted_to..].chars().count();
            let rows = table.rows(usize::MAX, dp);
            debug_assert!(rows.is_ascii());
            out.push_str(rows);
            chars += rows.len();
            counted_to = out.len();
        }
        for &i in &htf {
            let table = &mut cache.tables[i];
            let h = table.interval;
            out.push('\n');
            if table.bars.is_empty() {
                let _ = write!(out, "#### {symbol} {h} · no closed bars available");
                continue;
            }
            let shown = table.bars.len().min(HTF_SHOW_BARS);
            out.push_str("#### ");
            out.push_str(symbol);
            out.push(' ');
            out.push_str(h.as_str());
            out.push_str(" · regime ");
            out.push_str(table.regime().as_str());
            out.push_str(" (last ");
            text::push_uint(out, table.bars.len() as u64);
            out.push_str(" bars) · last ");
            text::push_uint(out, shown as u64);
            out.push_str(" shown\n");
            out.push_str(BAR_TABLE_HEADER);
            chars += out[counted_to..].chars().count();
            let rows = table.rows(shown, dp);
            debug_assert!(rows.is_ascii());
            out.push_str(rows);
            chars += rows.len();
            counted_to = out.len();
        }
    }
    chars += out[counted_to..].chars().count();
    Ok(chars)
}

pub(super) fn news_section(
    out: &mut String,
    items: &[tools::NewsItem],
    hours: u32,
    top_k: u32,
    symbols: &[String],
) {
    let _ = write!(out, "## News (last {hours}h, top {top_k} by relevance)");
    if items.is_empty() {
        let _ = write!(
            out,
            "\nNo headlines about {} in the last {hours}h.",
            symbols.join(", ")
        );
        return;
    }
    for n in items {
        out.push_str("\n- ");
        text::push_short_time(out, n.time);
        out.push(' ');
        out.push_str(&n.source);
        out.push_str(" [");
        push_about(out, &n.symbols);
        out.push_str("] sentiment ");
        text::push_signed_fixed(out, n.sentiment, 2);
        out.push_str(" importance ");
        text::push_fixed(out, n.importance, 2);
        out.push_str(": ");
        out.push_str(&n.headline);
    }
}

pub(super) fn upcoming_events(
    skill: &Skill,
    ctx: &ToolContext,
) -> Result<Vec<MarketEvent>, ContextError> {
    let ev = &skill.context.events;
    let until = ctx.now + Duration::hours(i64::from(ev.lookahead_hours));
    let mut events: Vec<MarketEvent> = ctx
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

pub(super) fn events_section(
    out: &mut String,
    events: &[MarketEvent],
    now: DateTime<Utc>,
    hours: u32,
) {
    let _ = write!(out, "## Upcoming events (next {hours}h)");
    for e in events {
        out.push_str("\n- ");
        text::push_short_time(out, e.scheduled_at);
        out.push_str(" (in ");
        text::push_duration(out, e.scheduled_at - now);
        out.push_str(") ");
        out.push_str(e.kind.as_str());
        out.push_str(" importance ");
        text::push_fixed(out, e.importance, 2);
        out.push_str(" [");
        push_about(out, &e.symbols);
        out.push_str("]: ");
        out.push_str(&e.title);
    }
}

/// One position. `gross` is the gross exposure and where its text (`$…` and its share of
/// equity) was written: a position whose notional is the same number (bit for bit; the only
/// position's, usually) copies it instead of computing it again.
pub(super) fn position_line(
    out: &mut String,
    p: &Position,
    equity: Decimal,
    gross: (Decimal, std::ops::Range<usize>),
) {
    let notional = p.notional_usd();
    out.push_str("- ");
    out.push_str(&p.symbol);
    out.push(' ');
    out.push_str(p.side.as_str());
    out.push(' ');
    text::push_plain(out, p.qty);
    out.push_str(" @ ");
    text::push_plain(out, p.entry_price);
    out.push_str(" · mark ");
    text::push_plain(out, p.mark_price);
    out.push_str(" · notional ");
    if notional.unpack() == gross.0.unpack() {
        out.extend_from_within(gross.1);
    } else {
        text::push_money(out, notional);
        push_share_of_equity(out, notional, equity);
    }
    out.push_str(" · ");
    text::push_plain(out, p.leverage);
    out.push_str("x · uPnL ");
    text::push_signed_money(out, p.unrealized_pnl_usd);
    out.push_str(" · margin ");
    text::push_money(out, p.margin_usd);
    if let Some(l) = p.liquidation_price {
        out.push_str(" · liq ");
        text::push_plain(out, l);
    }
}

pub(super) fn portfolio_section(out: &mut String, p: &PortfolioSnapshot) {
    let gross = p.gross_exposure_usd();
    out.push_str("## Portfolio\nEquity ");
    text::push_money(out, p.equity_usd);
    out.push_str(" · available margin ");
    text::push_money(out, p.available_margin_usd);
    out.push_str(" · gross exposure ");
    let gross_text = out.len();
    text::push_money(out, gross);
    push_share_of_equity(out, gross, p.equity_usd);
    let gross = (gross, gross_text..out.len());
    out.push_str("\nRealized PnL ");
    text::push_signed_money(out, p.realized_pnl_usd);
    out.push_str(" gross · fees paid ");
    text::push_money(out, p.fees_paid_usd);
    if p.positions.is_empty() {
        out.push_str("\nNo open positions.");
    } else if let [only] = p.positions.as_slice() {
        out.push('\n');
        position_line(out, only, p.equity_usd, gross);
    } else {
        let mut positions: Vec<&Position> = p.positions.iter().collect();
        positions.sort_by(|a, b| a.symbol.cmp(&b.symbol));
        for pos in positions {
            out.push('\n');
            position_line(out, pos, p.equity_usd, gross.clone());
        }
    }
}

/// The risk caps section's text around its two amounts (the caps in dollars, which move with
/// equity): rendered once per skill's caps and kept in the [`super::RenderCache`] (eight
/// numbers formatted a tick were ≈2.4k instructions, #17).
#[derive(Debug, Clone)]
pub(crate) struct RiskText {
    /// The caps it was rendered from. Their `==` (a `Decimal`'s ignores its scale) is exactly
    /// "prints the same": every number here prints by value (`push_plain` normalises,
    /// `push_money` rounds to cents), and a field the section does not print only makes it
    /// stricter.
    caps: skill_schema::RiskCaps,
    /// Up to the position cap's amount.
    head: String,
    /// Between the two amounts.
    mid: String,
    /// After the exposure cap's amount.
    tail: String,
}

impl RiskText {
    fn of(r: &skill_schema::RiskCaps) -> Self {
        let mut head = String::from("## Risk caps (engine-enforced)\n- Max position: ");
        text::push_plain(&mut head, r.max_position_pct);
        head.push_str("% of equity = ");
        let mut mid = String::from(" notional\n- Max total exposure: ");
        text::push_plain(&mut mid, r.max_total_exposure_pct);
        mid.push_str("% of equity = ");
        let mut tail = String::from(" notional\n- Max leverage: ");
        text::push_plain(&mut tail, r.max_leverage);
        tail.push_str("x\n- Order size: ");
        text::push_money(&mut tail, r.min_order_usd);
        tail.push_str(" to ");
        text::push_money(&mut tail, r.max_order_usd);
        tail.push_str(" notional\n- Max orders per hour: ");
        text::push_uint(&mut tail, u64::from(r.max_orders_per_hour));
        tail.push_str("\n- Halts: no new or added risk at a ");
        text::push_plain(&mut tail, r.halt_drawdown_pct);
        tail.push_str("% drawdown from peak equity or a ");
        text::push_plain(&mut tail, r.halt_daily_loss_pct);
        tail.push_str("% loss today (UTC)\n- Allowed symbols: ");
        if r.allowed_symbols.is_empty() {
            tail.push_str("any");
        }
        for (i, s) in r.allowed_symbols.iter().enumerate() {
            if i > 0 {
                tail.push_str(", ");
            }
            tail.push_str(s);
        }
        Self {
            caps: r.clone(),
            head,
            mid,
            tail,
        }
    }
}

pub(super) fn risk_section(
    out: &mut String,
    skill: &Skill,
    equity: Decimal,
    cached: &mut Option<RiskText>,
) {
    let r = &skill.risk;
    let of_equity = |pct_value: Decimal| pct_value * equity / Decimal::ONE_HUNDRED;
    let position_cap = of_equity(r.max_position_pct);
    // The same computation when the two caps are the same number (bit for bit).
    let exposure_cap = if r.max_total_exposure_pct.unpack() == r.max_position_pct.unpack() {
        position_cap
    } else {
        of_equity(r.max_total_exposure_pct)
    };
    let t = match cached {
        Some(t) if t.caps == *r => t,
        _ => cached.insert(RiskText::of(r)),
    };
    out.push_str(&t.head);
    text::push_money(out, position_cap);
    out.push_str(&t.mid);
    text::push_money(out, exposure_cap);
    out.push_str(&t.tail);
}

pub(super) fn orders_section(out: &mut String, orders: &[OpenOrder]) {
    out.push_str("## Open orders");
    for o in orders {
        let side = match o.side {
            types::OrderSide::Buy => "buy",
            types::OrderSide::Sell => "sell",
        };
        out.push_str("\n- ");
        out.push_str(&o.symbol);
        out.push(' ');
        out.push_str(side);
        out.push(' ');
        push_one_line(out, &o.kind);
        out.push(' ');
        text::push_plain(out, o.qty);
        if let Some(p) = o.price {
            out.push_str(" @ ");
            text::push_plain(out, p);
        }
        if o.reduce_only {
            out.push_str(" reduce-only");
        }
        out.push_str(" (placed ");
        text::push_short_time(out, o.placed_at);
        out.push_str(", id ");
        push_one_line(out, &o.id);
        out.push(')');
    }
}

pub(super) fn last_decision_section(out: &mut String, last: &LastDecisionSnapshot) {
    out.push_str("## Last decision\nTick ");
    text::push_timestamp(out, last.tick_at);
    out.push_str(": ");
    match last.proposal.as_deref() {
        Some(p) => {
            out.push_str("proposed ");
            push_one_line(out, p);
        }
        None => out.push_str("no proposal"),
    }
    out.push_str("\nEngine: ");
    out.push_str(last.status.as_str());
    if let Some(rule) = last.rule {
        out.push(' ');
        out.push_str(rule.as_str());
    }
    let before = out.len();
    out.push_str(": ");
    let detail = out.len();
    push_one_line(out, &last.detail);
    if out.len() == detail {
        out.truncate(before);
    }
}

/// The ledger's rendered body (its lines, [`tools::MemorySections`]) under `heading`. A body
/// line that starts with `#` is escaped (`\#`) so rendered reasons can never open a section of
/// their own; an empty body gets the honest `empty` line.
pub(super) fn memory_section(out: &mut String, heading: &str, body: &str, empty: &str) {
    // Lines split at `\n`; a `\r` before it is trailing whitespace, trimmed like `str::lines`
    // would have.
    out.push_str(heading);
    let mut any = false;
    // `body.split('\n')`, each break found with the SIMD `memchr` (the standard library's
    // search goes a word at a time).
    let mut start = 0;
    let pieces = memchr::memchr_iter(b'\n', body.as_bytes())
        .chain(std::iter::once(body.len()))
        .map(|end| {
            // A `\n` is a whole character: both cuts are character boundaries.
            let piece = body.get(start..end).unwrap_or_default();
            start = end + 1;
            piece
        });
    for l in pieces.map(str::trim_end).filter(|l| !l.trim().is_empty()) {
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
}

/// Funding prints and open-interest observations read per symbol for the Derivatives section
/// (the `get_funding_rate` tool's default window).
pub(super) const DERIVATIVES_WINDOW: usize = 24;

/// Hours in a (non-leap) year, for annualising funding (as `get_funding_rate` does).
const HOURS_PER_YEAR: i64 = 8_760;

/// Appends a funding rate (a fraction per period) in percent with 4 decimals and its sign:
/// `-0.0613%`, `+0.0013%`, `0.0000%`.
fn push_rate_pct(out: &mut String, rate: Decimal) {
    match rate.checked_mul(Decimal::ONE_HUNDRED) {
        Some(p) => text::push_signed_fixed(out, p, 4),
        None => out.push('?'),
    }
    out.push('%');
}

/// `## Derivatives`: per symbol, the latest funding print (per period, annualised, the mean
/// over the window) and the latest open interest with its change over the window. Every value
/// is re-checked against `ctx.now`; without a source (`tools::NoData`) it says the data is
/// unknown.
pub(super) fn derivatives_section(out: &mut String, ctx: &ToolContext) -> Result<(), ContextError> {
    out.push_str("## Derivatives (perpetual funding and open interest)");
    if !ctx.derivatives.is_connected() {
        out.push_str(
            "\nNo derivatives source is connected to this deployment: funding and open \
             interest are unknown, not absent.",
        );
        return Ok(());
    }
    for symbol in &ctx.symbols {
        let mut rates = ctx
            .derivatives
            .funding_rates(symbol, ctx.now, DERIVATIVES_WINDOW)
            .map_err(data_err("derivatives"))?;
        rates.retain(|r| r.time <= ctx.now);
        rates.sort_by_key(|r| r.time);
        let skip = rates.len().saturating_sub(DERIVATIVES_WINDOW);
        let rates = &rates[skip..];
        let mut oi = ctx
            .derivatives
            .open_interest(symbol, ctx.now, DERIVATIVES_WINDOW)
            .map_err(data_err("derivatives"))?;
        oi.retain(|p| p.time <= ctx.now);
        oi.sort_by_key(|p| p.time);
        let skip = oi.len().saturating_sub(DERIVATIVES_WINDOW);
        let oi = &oi[skip..];

        out.push_str("\n- ");
        out.push_str(symbol);
        out.push_str(" funding ");
        match rates.last() {
            None => out.push_str("none up to now"),
            Some(latest) => {
                push_rate_pct(out, latest.rate);
                out.push_str(" per ");
                text::push_uint(out, u64::from(latest.period_hours));
                out.push_str("h at ");
                text::push_short_time(out, latest.time);
                if latest.period_hours > 0
                    && let Some(yearly) = latest
                        .rate
                        .checked_mul(Decimal::from(HOURS_PER_YEAR))
                        .and_then(|y| y.checked_div(Decimal::from(latest.period_hours)))
                        .and_then(|y| y.checked_mul(Decimal::ONE_HUNDRED))
                {
                    out.push_str(" (annualised ");
                    text::push_signed_fixed(out, yearly, 2);
                    out.push_str("%)");
                }
                if let Some(mean) = tools::checked_mean(rates.iter().map(|r| r.rate)) {
                    out.push_str(", mean of last ");
                    text::push_uint(out, rates.len() as u64);
                    out.push(' ');
                    push_rate_pct(out, mean);
                }
            }
        }
        out.push_str(" · open interest ");
        match (oi.first(), oi.last()) {
            (Some(first), Some(latest)) => {
                text::push_num(out, latest.oi_base);
                out.push(' ');
                out.push_str(symbol);
                out.push_str(" (");
                text::push_money(out, latest.oi_usd);
                out.push_str(") at ");
                text::push_short_time(out, latest.time);
                if oi.len() > 1
                    && let Some(change) = latest.oi_base.checked_sub(first.oi_base)
                {
                    let at = out.len();
                    out.push_str(", ");
                    if change >= Decimal::ZERO {
                        out.push('+');
                    }
                    if text::push_percent_of(out, change, first.oi_base) {
                        out.push_str(" since ");
                        text::push_short_time(out, first.time);
                    } else {
                        out.truncate(at);
                    }
                }
            }
            _ => out.push_str("none up to now"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    /// A position line that copies the gross exposure's text (its notional is the same number)
    /// reads as one computed on its own; with two positions neither notional is the gross.
    #[test]
    fn a_position_line_copying_the_gross_text_is_the_computed_one() {
        let position = |symbol: &str, qty: i64| Position {
            symbol: symbol.into(),
            side: types::Side::Long,
            qty: Decimal::new(qty, 3),
            entry_price: Decimal::new(650_000, 1),
            leverage: Decimal::TWO,
            mark_price: Decimal::new(671_234, 1),
            liquidation_price: None,
            unrealized_pnl_usd: Decimal::new(1234, 2),
            margin_usd: Decimal::new(100_000, 2),
        };
        for positions in [
            vec![position("BTC", 30)],
            vec![position("ETH", 1500), position("BTC", 30)],
        ] {
            let snapshot = PortfolioSnapshot {
                at: Utc.timestamp_opt(0, 0).unwrap(),
                equity_usd: Decimal::new(1_023_456, 2),
                available_margin_usd: Decimal::new(812_040, 2),
                positions,
                realized_pnl_usd: Decimal::ZERO,
                fees_paid_usd: Decimal::ZERO,
            };
            // One position: its notional is the gross exposure, bit for bit (the copy is taken).
            assert_eq!(
                snapshot.positions.len() == 1,
                snapshot.gross_exposure_usd().unpack()
                    == snapshot.positions[0].notional_usd().unpack()
            );
            let mut text = String::new();
            portfolio_section(&mut text, &snapshot);
            let mut sorted = snapshot.positions.clone();
            sorted.sort_by(|a, b| a.symbol.cmp(&b.symbol));
            let lines: Vec<String> = sorted
                .iter()
                .map(|p| {
                    let mut line = String::new();
                    // A gross that matches no notional: everything computed.
                    position_line(&mut line, p, snapshot.equity_usd, (Decimal::MAX, 0..0));
                    line
                })
                .collect();
            assert!(text.ends_with(&lines.join("\n")), "{text}");
        }
    }
}
