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
//!   floats, no locale, no wall clock. Numbers, money and times are written in the styles of
//!   [`types::text`] (money `$12,500.00`); a symbol's bar prices all carry the largest number
//!   of decimals among its bars, so EURUSD `1.07219` keeps its five; ratios have 2 decimals.
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

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt::Write as _;

use chrono::{DateTime, Datelike, Duration, Utc};
use rust_decimal::Decimal;
use serde::Serialize;
use skill_schema::Skill;
use tools::{
    BarsWindow, DataError, LastDecisionSnapshot, OpenOrder, SeriesOrigin, ToolContext,
    UpcomingEvent, news_window, one_line, pct, push_one_line,
};
use types::text;
use types::{Bar, Interval, PortfolioSnapshot, Position, RegimeTag, classify_regime};

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

/// What one deployment's ticks can reuse from the previous tick's rendering: per symbol and
/// interval, the window of bars it showed with their printed rows (a closed bar never changes,
/// so its row never does), the ledger's memory sections with what they rendered to, and the
/// composed system prompt (it changes only with the lessons).
///
/// Keep one per deployment (`tick::TickState` does): the system prompt memo belongs to one
/// skill. The cache only saves work, so the text is byte-identical with or without it:
/// - a bar table is slid (rows of bars that left the window dropped, rows of new bars appended)
///   only when the bars it keeps are the ones the source serves now: both windows are runs of
///   one series ([`tools::SeriesOrigin`]: a source that changes its bars gives them a new id),
///   or, when the source does not vouch for a series, they compare equal bit for bit; a revised
///   bar, a window that is not a slide of the last one or a change in the decimals printed
///   rebuilds the table;
/// - a memory section is reused only for a body identical to the one it was rendered from.
///
/// Tables not used by a tick are dropped at its end, so the cache holds no row of a bar that
/// left the window and its size is bounded by one tick's bars.
#[derive(Debug, Default, Clone)]
pub struct RenderCache {
    /// Per symbol and interval (a deployment has a handful: a linear search beats hashing).
    tables: Vec<BarTable>,
    generation: u64,
    /// The recent-trades and open-positions sections: the body the ledger returned and the
    /// section rendered from it.
    memory: [Option<MemorySectionMemo>; 2],
    /// Length of the last message, to allocate the next one at once.
    text_len: usize,
    pub(crate) system_prompt: Option<(Option<prompt_compose::Lessons>, String)>,
}

#[derive(Debug, Clone)]
struct MemorySectionMemo {
    body: String,
    text: String,
    chars: usize,
}

/// One symbol's bars at one interval as the last tick fetched them, with printed rows.
#[derive(Debug, Clone)]
struct BarTable {
    symbol: String,
    interval: Interval,
    /// The tick (`RenderCache::generation`) that last used it.
    used: u64,
    /// The window the source served (closed bars, oldest first, one per open time).
    bars: Vec<Bar>,
    /// Where `bars` sit in the source's series, when it vouches for one.
    origin: Option<SeriesOrigin>,
    /// Decimals each bar of `bars` needs (`price_dp` of that bar alone).
    dps: Vec<u32>,
    /// `classify_regime(&bars)`, once asked for.
    regime: Option<RegimeTag>,
    /// The rows of `bars[rows_from..rows_from + row_lens.len()]` printed with `rows_dp`
    /// decimals, each starting with `\n`. ASCII only.
    rows: String,
    row_lens: VecDeque<usize>,
    rows_from: usize,
    rows_dp: u32,
}

impl BarTable {
    fn new(symbol: &str, interval: Interval) -> Self {
        Self {
            symbol: symbol.to_owned(),
            interval,
            used: 0,
            bars: Vec::new(),
            origin: None,
            dps: Vec::new(),
            regime: None,
            rows: String::new(),
            row_lens: VecDeque::new(),
            rows_from: 0,
            rows_dp: 0,
        }
    }

    /// Makes `bars` equal to `window`: a slide when the bars it keeps are unchanged, else a
    /// rebuild.
    fn sync(&mut self, window: &BarsWindow<'_>) {
        let cached_origin = std::mem::replace(&mut self.origin, window.origin);
        let window = &*window.bars;
        // Where the window starts among the cached bars, and whether both are runs of one
        // series (which agree on every bar number they share: no need to compare them).
        let start = match (cached_origin, self.origin) {
            (Some(old), Some(new)) if old.series == new.series => new
                .start
                .checked_sub(old.start)
                .filter(|&start| start <= self.bars.len())
                .map(|start| (start, true)),
            _ => window.first().and_then(|first| {
                self.bars
                    .binary_search_by(|b| b.time.cmp(&first.time))
                    .ok()
                    .map(|start| (start, false))
            }),
        };
        if let Some((start, one_series)) = start {
            let kept = self.bars.len() - start;
            let same = kept <= window.len()
                && if one_series {
                    // A guard against a source breaking the series contract, not a proof.
                    kept == 0
                        || (self.bars[start].time == window[0].time
                            && self.bars[start + kept - 1].time == window[kept - 1].time)
                } else {
                    same_bars(&self.bars[start..], &window[..kept])
                };
            if same {
                if start == 0 && kept == window.len() {
                    return;
                }
                self.drop_front(start);
                for b in &window[kept..] {
                    self.bars.push(b.clone());
                    self.dps.push(bar_dp(b));
                }
                self.regime = None;
                return;
            }
        }
        // First sight, a revised bar, or not a slide of the last window: start over.
        self.bars.clear();
        self.bars.extend_from_slice(window);
        self.dps.clear();
        self.dps.extend(window.iter().map(bar_dp));
        self.regime = None;
        self.rows.clear();
        self.row_lens.clear();
        self.rows_from = 0;
    }

    /// Drops the first `n` bars and their rows.
    fn drop_front(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        self.bars.drain(..n);
        self.dps.drain(..n);
        let rows = self.row_lens.len();
        let gone = n.saturating_sub(self.rows_from).min(rows);
        if gone == rows {
            self.rows.clear();
            self.row_lens.clear();
            self.rows_from = 0;
        } else {
            let bytes: usize = self.row_lens.drain(..gone).sum();
            self.rows.drain(..bytes);
            self.rows_from = self.rows_from + gone - n;
        }
    }

    fn max_dp(&self) -> u32 {
        self.dps.iter().copied().max().unwrap_or(0)
    }

    fn regime(&mut self) -> RegimeTag {
        match self.regime {
            Some(r) => r,
            None => *self.regime.insert(classify_regime(&self.bars)),
        }
    }

    /// The rows of the last `shown` bars printed with `dp` decimals, reusing the rows already
    /// printed with `dp`.
    fn rows(&mut self, shown: usize, dp: u32) -> &str {
        let len = self.bars.len();
        let from = len - shown.min(len);
        let end = self.rows_from + self.row_lens.len();
        if self.rows_dp != dp || self.row_lens.is_empty() || self.rows_from > from || end < from {
            self.rows.clear();
            self.row_lens.clear();
            self.rows_from = from;
            self.rows_dp = dp;
        } else {
            let gone = from - self.rows_from;
            let bytes: usize = self.row_lens.drain(..gone).sum();
            self.rows.drain(..bytes);
            self.rows_from = from;
        }
        for b in &self.bars[self.rows_from + self.row_lens.len()..] {
            let before = self.rows.len();
            push_bar_row(&mut self.rows, b, self.interval, dp);
            self.row_lens.push_back(self.rows.len() - before);
        }
        &self.rows
    }
}

/// Decimals one bar's prices need.
fn bar_dp(bar: &Bar) -> u32 {
    price_dp(std::iter::once(bar))
}

/// Whether the two runs of bars are identical bit for bit (a decimal printed the same but
/// stored differently counts as different: the table is then rebuilt, never wrong).
fn same_bars(a: &[Bar], b: &[Bar]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.time == y.time
                && x.open.unpack() == y.open.unpack()
                && x.high.unpack() == y.high.unpack()
                && x.low.unpack() == y.low.unpack()
                && x.close.unpack() == y.close.unpack()
                && x.volume.unpack() == y.volume.unpack()
        })
}

impl RenderCache {
    /// The table of `symbol` at `interval`, synced with `window` and marked used by this tick.
    fn sync_table(&mut self, symbol: &str, interval: Interval, window: &BarsWindow<'_>) -> usize {
        let i = match self
            .tables
            .iter()
            .position(|t| t.interval == interval && t.symbol == symbol)
        {
            Some(i) => i,
            None => {
                self.tables.push(BarTable::new(symbol, interval));
                self.tables.len() - 1
            }
        };
        let table = &mut self.tables[i];
        table.used = self.generation;
        table.sync(window);
        i
    }

    fn evict_unused(&mut self) {
        let generation = self.generation;
        self.tables.retain(|t| t.used == generation);
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
    let cfg = &skill.context;
    let mut w = Sections::with_capacity(cache.text_len + 64);

    w.begin();
    time_section(&mut w.text, ctx.now, cfg.bars_interval);
    // ASCII only: one char a byte.
    w.end("time", Some(w.text.len() - w.start));

    w.begin();
    cache.generation = cache.generation.wrapping_add(1);
    let market = market_section(&mut w.text, skill, ctx, cache);
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
        text::push_uint(&mut w.text, u64::from(cfg.news_lookback_hours));
        w.text.push_str("h, top ");
        text::push_uint(&mut w.text, u64::from(cfg.news_top_k));
        w.text.push_str(
            " by relevance)\nNo news feed is connected to this deployment: headlines are \
             unknown, not absent.",
        );
    }
    w.end("news", None);

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

    let portfolio = ctx
        .portfolio
        .portfolio()
        .and_then(|p| tools::check_portfolio(&p).map(|()| p))
        .map_err(data_err("portfolio"))?;
    w.begin();
    portfolio_section(&mut w.text, &portfolio);
    w.end("portfolio", None);
    w.begin();
    risk_section(&mut w.text, skill, portfolio.equity_usd);
    w.end("risk_caps", None);

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
        w.begin();
        orders_section(&mut w.text, &orders);
        w.end("open_orders", None);
    }

    if let Some(last) = last_decision {
        w.begin();
        last_decision_section(&mut w.text, last);
        w.end("last_decision", None);
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
        w.begin();
        let chars = memory_section_cached(
            &mut w.text,
            &mut cache.memory[0],
            "## Recent trades on this skill (closed)",
            body,
            "No closed trades on this skill yet.",
        );
        w.end("recent_trades", Some(chars));
        if cfg.memory.include_open_positions {
            let body = ctx
                .memory
                .open_positions(ctx.now)
                .map_err(data_err("open positions"))?;
            w.begin();
            let chars = memory_section_cached(
                &mut w.text,
                &mut cache.memory[1],
                "## Open positions (memory view)",
                body,
                "No open positions in the ledger.",
            );
            w.end("open_positions", Some(chars));
        }
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

// ---------------------------------------------------------------------------------------------
// bar tables (every other number, money and time is written in the styles of `types::text`)

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

fn push_bar_time(out: &mut String, t: DateTime<Utc>, interval: Interval) {
    match interval {
        Interval::D1 | Interval::W1 => text::push_date(out, t),
        _ => text::push_short_time(out, t),
    }
}

/// `\n<time> <open> <high> <low> <close> <volume>`: one row of a bar table.
fn push_bar_row(out: &mut String, b: &Bar, interval: Interval, dp: u32) {
    out.push('\n');
    push_bar_time(out, b.time, interval);
    for price in [b.open, b.high, b.low, b.close] {
        out.push(' ');
        text::push_fixed(out, price, dp);
    }
    out.push(' ');
    text::push_volume(out, b.volume);
}

// ---------------------------------------------------------------------------------------------
// sections

const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

fn time_section(out: &mut String, now: DateTime<Utc>, interval: Interval) {
    out.push_str("## Time\n");
    text::push_timestamp(out, now);
    out.push_str(" (");
    out.push_str(WEEKDAYS[now.weekday().num_days_from_monday() as usize]);
    out.push_str("). Execution timeframe ");
    out.push_str(interval.as_str());
    out.push_str("; every bar below closed at or before this time (rows are bar open times, UTC).");
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
    closed_bars_window(ctx, symbol, interval, limit).map(|w| w.bars.into_owned())
}

/// [`closed_bars`], borrowed from the source when it holds the bars in memory and serves them
/// sorted ([`tools::MarketData::bars_window`]: nothing is copied then), with their place in the
/// source's series when it vouches for one.
///
/// # Errors
/// [`DataError`] when the market-data source fails.
pub fn closed_bars_window<'a>(
    ctx: &'a ToolContext,
    symbol: &str,
    interval: Interval,
    limit: usize,
) -> Result<BarsWindow<'a>, DataError> {
    let BarsWindow { bars, origin } = ctx.market.bars_window(symbol, interval, ctx.now, limit)?;
    // Closed by `now` ⇔ opened by `now − interval` (one subtraction instead of one addition per
    // bar).
    let Some(latest_open) = ctx.now.checked_sub_signed(interval.duration()) else {
        return Ok(BarsWindow {
            bars: Cow::Borrowed(&[]),
            origin: None,
        });
    };
    if bars.is_sorted_by(|a, b| a.time < b.time) {
        // Sorted: the closed bars are a prefix, and a run of the source's series.
        let closed = bars.partition_point(|b| b.time <= latest_open);
        let from = closed.saturating_sub(limit);
        let bars = match bars {
            Cow::Borrowed(all) => Cow::Borrowed(&all[from..closed]),
            Cow::Owned(mut all) => {
                all.truncate(closed);
                all.drain(..from);
                Cow::Owned(all)
            }
        };
        let origin = origin.map(|o| SeriesOrigin {
            series: o.series,
            start: o.start + from,
        });
        return Ok(BarsWindow { bars, origin });
    }
    let mut bars = bars.into_owned();
    bars.retain(|b| b.time <= latest_open);
    bars.sort_by_key(|b| b.time);
    bars.dedup_by_key(|b| b.time);
    let skip = bars.len().saturating_sub(limit);
    bars.drain(..skip);
    Ok(BarsWindow {
        bars: Cow::Owned(bars),
        origin: None,
    })
}

/// Writes the market section; returns its characters.
fn market_section(
    out: &mut String,
    skill: &Skill,
    ctx: &ToolContext,
    cache: &mut RenderCache,
) -> Result<usize, ContextError> {
    let cfg = &skill.context;
    let interval = cfg.bars_interval;
    let lookback = cfg.bars_lookback as usize;
    let higher = cfg.effective_higher_timeframes();
    // Characters: counted on the headings, the rows (ASCII) by their length.
    let mut chars = 0;
    let mut counted_to = out.len();
    out.push_str("## Market context");
    let mut htf = Vec::with_capacity(higher.len());
    for symbol in &ctx.symbols {
        let bars =
            closed_bars_window(ctx, symbol, interval, lookback).map_err(data_err("market"))?;
        let base = cache.sync_table(symbol, interval, &bars);
        htf.clear();
        for &h in &higher {
            let hb =
                closed_bars_window(ctx, symbol, h, HTF_FETCH_BARS).map_err(data_err("market"))?;
            htf.push(cache.sync_table(symbol, h, &hb));
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

fn news_section(
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

/// `market-wide`, or the symbols joined by `, `.
fn push_about(out: &mut String, symbols: &[String]) {
    if symbols.is_empty() {
        out.push_str("market-wide");
    }
    for (i, s) in symbols.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(s);
    }
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

fn events_section(out: &mut String, events: &[UpcomingEvent], now: DateTime<Utc>, hours: u32) {
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

/// ` (12.50% of equity)` when the share is defined.
fn push_share_of_equity(out: &mut String, part: Decimal, equity: Decimal) {
    if let Some(share) = pct(part, equity) {
        out.push_str(" (");
        text::push_fixed(out, share, 2);
        out.push_str("% of equity)");
    }
}

/// One position. `gross` is the gross exposure and where its text (`$…` and its share of
/// equity) was written: a position whose notional is the same number (bit for bit; the only
/// position's, usually) copies it instead of computing it again.
fn position_line(
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

fn portfolio_section(out: &mut String, p: &PortfolioSnapshot) {
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

fn risk_section(out: &mut String, skill: &Skill, equity: Decimal) {
    let r = &skill.risk;
    let of_equity = |pct_value: Decimal| pct_value * equity / Decimal::ONE_HUNDRED;
    let position_cap = of_equity(r.max_position_pct);
    // The same computation when the two caps are the same number (bit for bit).
    let exposure_cap = if r.max_total_exposure_pct.unpack() == r.max_position_pct.unpack() {
        position_cap
    } else {
        of_equity(r.max_total_exposure_pct)
    };
    out.push_str("## Risk caps (engine-enforced)\n- Max position: ");
    text::push_plain(out, r.max_position_pct);
    out.push_str("% of equity = ");
    text::push_money(out, position_cap);
    out.push_str(" notional\n- Max total exposure: ");
    text::push_plain(out, r.max_total_exposure_pct);
    out.push_str("% of equity = ");
    text::push_money(out, exposure_cap);
    out.push_str(" notional\n- Max leverage: ");
    text::push_plain(out, r.max_leverage);
    out.push_str("x\n- Order size: ");
    text::push_money(out, r.min_order_usd);
    out.push_str(" to ");
    text::push_money(out, r.max_order_usd);
    out.push_str(" notional\n- Max orders per hour: ");
    text::push_uint(out, u64::from(r.max_orders_per_hour));
    out.push_str("\n- Halts: no new or added risk at a ");
    text::push_plain(out, r.halt_drawdown_pct);
    out.push_str("% drawdown from peak equity or a ");
    text::push_plain(out, r.halt_daily_loss_pct);
    out.push_str("% loss today (UTC)\n- Allowed symbols: ");
    if r.allowed_symbols.is_empty() {
        out.push_str("any");
    }
    for (i, s) in r.allowed_symbols.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(s);
    }
}

fn orders_section(out: &mut String, orders: &[OpenOrder]) {
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

fn last_decision_section(out: &mut String, last: &LastDecisionSnapshot) {
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

/// [`memory_section`], reused when the ledger returned the same body as last time. Returns the
/// section's characters.
fn memory_section_cached(
    out: &mut String,
    memo: &mut Option<MemorySectionMemo>,
    heading: &str,
    body: String,
    empty: &str,
) -> usize {
    if let Some(m) = memo
        && m.body == body
    {
        out.push_str(&m.text);
        return m.chars;
    }
    let start = out.len();
    memory_section(out, heading, &body, empty);
    let text = out[start..].to_owned();
    let chars = text.chars().count();
    *memo = Some(MemorySectionMemo { body, text, chars });
    chars
}

/// The ledger's rendered body under its heading. When the ledger rendered the whole section
/// (heading included, as `memory-ledger`'s renderers do), its heading line is dropped so it is
/// not printed twice. A body line that starts with `#` is escaped (`\#`) so rendered reasons can
/// never open a section of their own.
fn memory_section(out: &mut String, heading: &str, body: &str, empty: &str) {
    // Lines split at `\n`; a `\r` before it is trailing whitespace, trimmed like `str::lines`
    // would have.
    let mut lines = body.split('\n').peekable();
    while lines.peek().is_some_and(|l| l.trim().is_empty()) {
        lines.next();
    }
    if lines.peek().is_some_and(|l| l.trim() == heading) {
        lines.next();
    }
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
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn bar(hour: i64, close: i64) -> Bar {
        let close = Decimal::new(close, 1);
        Bar {
            time: Utc.timestamp_opt(hour * 3600, 0).unwrap(),
            open: close,
            high: close + Decimal::ONE,
            low: close - Decimal::ONE,
            close,
            volume: Decimal::new(hour, 0),
        }
    }

    /// Whatever windows a table is synced with — runs of one series, of a series that changed
    /// id, or without an origin — it holds exactly the window and the rows of its last `shown`
    /// bars, as they print fresh: never a row of a bar that left the window.
    #[test]
    fn a_table_holds_the_window_and_only_its_rows() {
        let series: Vec<Bar> = (0..200).map(|h| bar(h, 10_000 + h * 7 % 13)).collect();
        let mut revised = series.clone();
        revised[57].volume += Decimal::ONE;
        /// (source, its series id if it vouches for one, first, last + 1, shown, dp)
        type Step<'a> = (&'a [Bar], Option<u64>, usize, usize, usize, u32);
        let steps: [Step<'_>; 16] = [
            (&series, Some(1), 0, 5, 24, 1),
            (&series, Some(1), 0, 24, 24, 1),
            (&series, Some(1), 1, 25, 24, 1),
            (&series, Some(1), 2, 26, 6, 1),
            (&series, None, 9, 33, 6, 1),
            (&series, None, 9, 33, 24, 1),
            (&series, Some(1), 40, 64, 24, 3),
            (&revised, Some(2), 41, 65, 24, 3),
            (&revised, Some(2), 41, 65, 24, 3),
            (&revised, Some(2), 44, 68, 24, 3),
            (&series, Some(1), 45, 69, 24, 3),
            (&series, None, 46, 70, 24, 3),
            (&revised, None, 47, 71, 24, 3),
            (&series, Some(1), 20, 44, 24, 3),
            (&series, Some(1), 20, 30, 24, 3),
            (&series, Some(1), 100, 100, 24, 3),
        ];
        for mode in 0..2 {
            let mut table = BarTable::new("X", Interval::H1);
            for (i, &(source, id, from, to, shown, dp)) in steps.iter().enumerate() {
                // Second pass: no source vouches for a series, every slide is compared.
                let id = id.filter(|_| mode == 0);
                let window = &source[from..to];
                table.sync(&BarsWindow {
                    bars: Cow::Borrowed(window),
                    origin: id.map(|series| SeriesOrigin {
                        series,
                        start: from,
                    }),
                });
                let rows = table.rows(shown, dp).to_owned();
                assert_eq!(table.bars, window, "step {i}");
                assert_eq!(
                    table.dps,
                    window.iter().map(bar_dp).collect::<Vec<_>>(),
                    "step {i}"
                );
                let shown_bars = &window[window.len() - shown.min(window.len())..];
                let mut fresh = String::new();
                for b in shown_bars {
                    push_bar_row(&mut fresh, b, Interval::H1, dp);
                }
                assert_eq!(rows, fresh, "step {i}");
                assert_eq!(table.row_lens.len(), shown_bars.len(), "step {i}");
                assert_eq!(table.row_lens.iter().sum::<usize>(), rows.len(), "step {i}");
                assert_eq!(table.regime(), classify_regime(window), "step {i}");
            }
        }
    }

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

    /// `Preloaded` gives each series an id and a new one when its bars change; windows carry
    /// their place in it through `closed_bars_window`.
    #[test]
    fn windows_carry_their_place_in_the_series() {
        let bars: Vec<Bar> = (0..50).map(|h| bar(h, 10_000 + h)).collect();
        let mut data = tools::Preloaded::new().with_bars("X", Interval::H1, bars.clone());
        let at = |data: &tools::Preloaded, hour: i64| {
            ToolContext::new(
                Utc.timestamp_opt(hour * 3600, 0).unwrap(),
                tools::RunMode::Trade,
                vec!["X".into()],
                std::sync::Arc::new(data.clone()),
                std::sync::Arc::new(data.clone()),
            )
        };
        let ctx = at(&data, 30);
        let w = closed_bars_window(&ctx, "X", Interval::H1, 10).unwrap();
        // Closed by hour 30: bars 0..30; the last ten.
        assert_eq!(&*w.bars, &bars[20..30]);
        let first = w.origin.unwrap();
        assert_eq!(first.start, 20);
        let ctx = at(&data, 31);
        let w = closed_bars_window(&ctx, "X", Interval::H1, 10).unwrap();
        assert_eq!(w.origin.unwrap(), SeriesOrigin { start: 21, ..first });
        data.insert_bars("X", Interval::H1, vec![bar(3, 1)]);
        let ctx = at(&data, 31);
        let w = closed_bars_window(&ctx, "X", Interval::H1, 10).unwrap();
        assert_ne!(w.origin.unwrap().series, first.series);
    }
}
