//! `assemble_context`: the user message of one tick.
//!
//! Sections, in this order (those marked * only when they have something to say):
//! `## Time`, `## Market context`, `## News (last Nh, top K by relevance)`,
//! `## Derivatives (perpetual funding and open interest)` (only when the skill whitelists
//! `get_funding_rate` or `get_open_interest`), `## Upcoming events (next Nh)`*, `## Portfolio`, `## Risk caps (engine-enforced)`,
//! `## Open orders`*, `## Last decision`*, `## Recent trades on this skill (closed)`* and
//! `## Open positions (memory view)`* (memory dial), `## Your turn`.
//!
//! Contracts:
//! - **Deterministic.** Identical inputs give byte-identical text: no map iteration order, no
//!   floats, no locale, no wall clock. Numbers, money and times are written in the styles of
//!   [`types::text`] (money `$12,500.00`); a symbol's bar prices all carry the largest number
//!   of decimals among its bars, so EURUSD `1.07219` keeps its five; ratios have 2 decimals.
//! - **Point in time.** Everything is re-checked against `ctx.now` whatever the sources
//!   return: a bar is shown only if it *closed* (`time + interval`) at or before `now`; news only
//!   if published in `[now − lookback, now]`; a funding print or open-interest observation only
//!   if stamped at or before `now`; events only if scheduled in `(now, now + lookahead]`.
//! - **Unknown is not none.** Without a news feed (`tools::NoData`) the News section says
//!   headlines are unknown, not that there were none; with events enabled but no calendar, the
//!   Upcoming events section says the same of events, and without a derivatives source the
//!   Derivatives section says it of funding and open interest.
//! - **External text is data.** Headlines, sources, event titles and engine details are put on
//!   one line and bounded, so they cannot forge a heading of this message.
//!
//! Token estimates are a cheap deterministic proxy, `ceil(chars / 4)` per section (chars are
//! Unicode scalar values). Exact tokenizer counts belong to the CLI, which can afford a
//! tokenizer; the estimate here is for budgets and dashboards.

mod bars;
mod cache;
mod sections;
mod text;
mod trading_memory;
mod view;

use std::fmt::Write as _;

use serde::Serialize;
use skill_schema::Skill;
use tools::{DataError, LastDecisionSnapshot, ToolContext, news_window};
use types::text::push_uint;

pub use bars::{closed_bars, closed_bars_window, closed_bars_window_in};
pub use cache::RenderCache;
use sections::{
    derivatives_section, events_section, last_decision_section, market_section, memory_section,
    news_section, orders_section, portfolio_section, risk_section, time_section, upcoming_events,
};
pub use text::price_dp;
pub use trading_memory::trading_memory_block;
pub use view::{SymbolBars, TickView};

/// A bar of hour `hour` (from the epoch) closing at `close / 10`, for the unit tests.
#[cfg(test)]
fn test_bar(hour: i64, close: i64) -> types::Bar {
    use chrono::TimeZone;
    let close = rust_decimal::Decimal::new(close, 1);
    types::Bar {
        time: chrono::Utc.timestamp_opt(hour * 3600, 0).unwrap(),
        open: close,
        high: close + rust_decimal::Decimal::ONE,
        low: close - rust_decimal::Decimal::ONE,
        close,
        volume: rust_decimal::Decimal::new(hour, 0),
    }
}

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
    /// Stable key: `time`, `market`, `news`, `derivatives`, `events`, `portfolio`, `risk_caps`,
    /// `open_orders`, `last_decision`, `recent_trades`, `open_positions`, `trading_memory`,
    /// `your_turn`.
    pub name: &'static str,
    /// Unicode scalar values in the section's text (heading included).
    pub chars: u32,
    /// `ceil(chars / 4)`.
    pub tokens_estimate: u32,
}

/// Why the context could not be assembled. A tick without its data must not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("assembling the {section} section: {source}")]
pub struct ContextError {
    /// The section being assembled: `market`, `news`, `derivatives`, `events`, `portfolio`, `open orders`,
    /// `recent trades` or `open positions`.
    pub section: &'static str,
    /// The data source's error.
    #[source]
    pub source: DataError,
}

pub(crate) fn data_err(section: &'static str) -> impl FnOnce(DataError) -> ContextError {
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

/// [`assemble_context`] reusing what `cache` rendered on earlier ticks of the same deployment:
/// the rows of bars still in the window (a closed bar's row never changes, so a tick renders
/// only the bars that are new to it) and memory sections whose body did not change. The text is
/// byte-identical to [`assemble_context`]'s.
///
/// # Errors
/// As [`assemble_context`].
pub fn assemble_context_cached(
    skill: &Skill,
    ctx: &ToolContext,
    last_decision: Option<&LastDecisionSnapshot>,
    cache: &mut RenderCache,
) -> Result<AssembledContext, ContextError> {
    let view = TickView::read(skill, ctx)?;
    render_context(skill, ctx, &view, last_decision, cache)
}

/// The user message rendered from what the tick read ([`TickView`]: account, bar windows with
/// their regimes, memory bodies); only news, derivatives and events are read here, through `ctx`. Byte-identical
/// to [`assemble_context`] over sources serving what `view` holds.
///
/// # Errors
/// [`ContextError`] when the news, derivatives or event source fails.
pub fn render_context(
    skill: &Skill,
    ctx: &ToolContext,
    view: &TickView<'_>,
    last_decision: Option<&LastDecisionSnapshot>,
    cache: &mut RenderCache,
) -> Result<AssembledContext, ContextError> {
    let cfg = &skill.context;
    let mut w = Sections::with_capacity(cache.text_len + 64);

    w.begin();
    time_section(&mut w.text, ctx.now, cfg.bars_interval);
    // ASCII only: one char a byte.
    w.end("time", Some(w.text.len() - w.start));

    w.begin();
    cache.generation = cache.generation.wrapping_add(1);
    let market = market_section(&mut w.text, skill, &ctx.symbols, &view.symbols, cache);
    cache.evict_unused();
    w.end("market", Some(market?));

    let news = news_window(
        ctx,
        &ctx.symbols,
        cfg.news_lookback_hours,
        cfg.news_top_k as usize,
    )
    .map_err(data_err("news"))?;
    w.begin();
    if ctx.news.is_connected() {
        news_section(
            &mut w.text,
            &news,
            cfg.news_lookback_hours,
            cfg.news_top_k,
            &ctx.symbols,
        );
    } else {
        w.text.push_str("## News (last ");
        push_uint(&mut w.text, u64::from(cfg.news_lookback_hours));
        w.text.push_str("h, top ");
        push_uint(&mut w.text, u64::from(cfg.news_top_k));
        w.text.push_str(
            " by relevance)\nNo news feed is connected to this deployment: headlines are \
             unknown, not absent.",
        );
    }
    w.end("news", None);

    if skill.tools.lists_derivatives_tool() {
        w.begin();
        derivatives_section(&mut w.text, ctx)?;
        w.end("derivatives", None);
    }

    if cfg.events.enabled && !ctx.events.is_connected() {
        w.begin();
        let _ = write!(
            w.text,
            "## Upcoming events (next {}h)\nNo event calendar is connected to this \
             deployment: scheduled events are unknown, not absent.",
            cfg.events.lookahead_hours
        );
        w.end("events", None);
    } else if cfg.events.enabled {
        let events = upcoming_events(skill, ctx)?;
        if !events.is_empty() {
            w.begin();
            events_section(&mut w.text, &events, ctx.now, cfg.events.lookahead_hours);
            w.end("events", None);
        }
    }

    let portfolio = &*view.portfolio;
    w.begin();
    portfolio_section(&mut w.text, portfolio);
    w.end("portfolio", None);
    w.begin();
    risk_section(&mut w.text, skill, portfolio.equity_usd, &mut cache.risk);
    w.end("risk_caps", None);

    if !view.open_orders.is_empty() {
        let mut orders = view.open_orders.clone();
        orders.sort_by(|a, b| {
            a.symbol
                .cmp(&b.symbol)
                .then(a.placed_at.cmp(&b.placed_at))
                .then_with(|| a.id.cmp(&b.id))
        });
        w.begin();
        orders_section(&mut w.text, &orders);
        w.end("open_orders", None);
    }

    if let Some(last) = last_decision {
        w.begin();
        last_decision_section(&mut w.text, last);
        w.end("last_decision", None);
    }

    if let Some(body) = &view.recent_trades {
        w.begin();
        // The body changes only when a trade closes: the section the last tick rendered from
        // the same body is the same text.
        let chars = match &cache.recent_trades {
            Some((was, section, chars)) if was.as_str() == body.as_ref() => {
                w.text.push_str(section);
                *chars
            }
            _ => {
                let start = w.text.len();
                memory_section(
                    &mut w.text,
                    "## Recent trades on this skill (closed)",
                    body,
                    "No closed trades on this skill yet.",
                );
                let section = &w.text[start..];
                let chars = section.chars().count();
                cache.recent_trades = Some((body.to_string(), section.to_owned(), chars));
                chars
            }
        };
        w.end("recent_trades", Some(chars));
        if let Some(body) = &view.open_positions {
            w.begin();
            memory_section(
                &mut w.text,
                "## Open positions (memory view)",
                body,
                "No open positions in the ledger.",
            );
            w.end("open_positions", None);
        }
    }

    if let Some(block) = &view.trading_memory {
        w.begin();
        w.text.push_str(block.trim_end_matches('\n'));
        w.end("trading_memory", None);
    }

    w.begin();
    w.text.push_str(
        "## Your turn\nEvaluate against your strategy. Call propose_order exactly once \
         (action no_op to stand aside).",
    );
    w.end("your_turn", Some(w.text.len() - w.start));

    let out = w.finish();
    cache.text_len = out.text.len();
    Ok(out)
}

/// The message being written: the sections go straight into one buffer, each section's
/// characters counted once (or handed over by a renderer that knows them).
struct Sections {
    text: String,
    estimates: Vec<SectionEstimate>,
    start: usize,
    total_chars: usize,
}

impl Sections {
    fn with_capacity(bytes: usize) -> Self {
        Self {
            text: String::with_capacity(bytes),
            estimates: Vec::with_capacity(12),
            start: 0,
            total_chars: 0,
        }
    }

    /// Starts a section: one blank line after the previous one.
    fn begin(&mut self) {
        if !self.estimates.is_empty() {
            self.text.push_str("\n\n");
            self.total_chars += 2;
        }
        self.start = self.text.len();
    }

    /// Ends the section started last; `chars` when the renderer counted them.
    fn end(&mut self, name: &'static str, chars: Option<usize>) {
        let chars = chars.unwrap_or_else(|| self.text[self.start..].chars().count());
        debug_assert_eq!(chars, self.text[self.start..].chars().count(), "{name}");
        self.total_chars += chars;
        self.estimates.push(SectionEstimate {
            name,
            chars: u32::try_from(chars).unwrap_or(u32::MAX),
            tokens_estimate: u32::try_from(chars.div_ceil(4)).unwrap_or(u32::MAX),
        });
    }

    fn finish(mut self) -> AssembledContext {
        self.text.push('\n');
        self.total_chars += 1;
        AssembledContext {
            total_tokens_estimate: u32::try_from(self.total_chars.div_ceil(4)).unwrap_or(u32::MAX),
            text: self.text,
            sections: self.estimates,
        }
    }
}
