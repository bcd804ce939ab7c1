//! The [`ToolContext`]: everything a tick may read, behind data-source traits.
//!
//! The traits are **synchronous**. Both callers pre-load what a tick can ask for: the simulator
//! holds the whole bar/news/funding history in memory, and the live runner fetches the
//! deployment's data before the tick starts (bars of its symbols, news, the broker account,
//! funding and open interest) and serves the tick from that snapshot. A tick therefore never
//! waits on the network inside a tool call, and sim and live run the same code path. A live
//! implementation that must reach the network from inside a call may block; that is its choice.
//!
//! Every method takes the point in time explicitly (`as_of`, `closed_by`, a window): the context
//! is a view *as of* [`ToolContext::now`], and callers of the traits (the tools here,
//! `assemble_context` in `agent-runtime`) re-check every timestamp they receive, so a data source
//! that leaks the future cannot put it in front of the model.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use types::{Bar, EventKind, Interval, MarketEvent, OrderSide, PortfolioSnapshot};

/// Why a data source could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: {message}")]
pub struct DataError {
    /// Which source failed (`market data`, `news`, `broker`, ...).
    pub source_name: String,
    /// What went wrong, for a person (and for the model, when a tool hands it back).
    pub message: String,
}

impl DataError {
    /// A data error of `source_name` saying `message`.
    #[must_use]
    pub fn new(source_name: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            source_name: source_name.into(),
            message: message.into(),
        }
    }
}

/// Whether the tools of this context may act. The trading tick runs in `Trade`; the chat agent
/// runs the same tools in `ReadOnly`, where every tool that could act refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunMode {
    /// The trading tick: `propose_order` may record a proposal.
    Trade,
    /// The chat coach: every tool that could act refuses with [`ToolError::ReadOnly`](crate::ToolError::ReadOnly).
    ReadOnly,
}

impl RunMode {
    /// The mode's text: `"trade"` or `"read_only"` (also its serde form and `Display`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            RunMode::Trade => "trade",
            RunMode::ReadOnly => "read_only",
        }
    }
}

impl fmt::Display for RunMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One news headline.
///
/// `sentiment` is in −1..1 (negative = bearish), `importance` in 0..1; relevance ranking is by
/// importance, then recency, then headline text (see [`rank_news`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewsItem {
    /// When the item was published.
    pub time: DateTime<Utc>,
    /// The headline text, as the feed gave it (external text: data, never instructions).
    pub headline: String,
    /// The publisher or feed name.
    pub source: String,
    /// Sentiment in −1..=1: negative bearish, positive bullish, 0 neutral.
    pub sentiment: Decimal,
    /// Importance in 0..=1 (1 = market-moving); the first key of [`rank_news`].
    pub importance: Decimal,
    /// The symbols the item is about (empty = market-wide).
    pub symbols: Vec<String>,
}

/// Sorts news most relevant first: importance descending, then newest first, then headline, then
/// source, so ties never depend on the order a source returned them in.
pub fn rank_news(items: &mut [NewsItem]) {
    items.sort_by(|a, b| {
        b.importance
            .cmp(&a.importance)
            .then(b.time.cmp(&a.time))
            .then_with(|| a.headline.cmp(&b.headline))
            .then_with(|| a.source.cmp(&b.source))
    });
}

/// A working order on the broker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenOrder {
    /// The broker's order id.
    pub id: String,
    /// The symbol it is for.
    pub symbol: String,
    /// Buy or sell.
    pub side: OrderSide,
    /// `limit`, `stop`, `take_profit`, ... as the broker names it.
    pub kind: String,
    /// Quantity in base units.
    pub qty: Decimal,
    /// Limit or trigger price.
    pub price: Option<Decimal>,
    /// Whether it can only shrink a position.
    pub reduce_only: bool,
    /// When it was placed (UTC).
    pub placed_at: DateTime<Utc>,
}

/// One funding-rate print of a perpetual.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FundingRate {
    /// When the rate was paid (UTC).
    pub time: DateTime<Utc>,
    /// The rate for one funding period, as a fraction (`0.0001` = 0.01 %). Positive: longs pay.
    pub rate: Decimal,
    /// Length of one funding period in hours (1 on Hyperliquid, 8 on most CEXs).
    pub period_hours: u32,
}

/// One open-interest observation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenInterestPoint {
    /// When it was observed (UTC).
    pub time: DateTime<Utc>,
    /// Open interest in base units.
    pub oi_base: Decimal,
    /// Open interest in USD at the time's mark price.
    pub oi_usd: Decimal,
}

/// Bars of the symbols a deployment trades.
pub trait MarketData: Send + Sync {
    /// Up to `limit` bars of `symbol` at `interval` that **closed** at or before `closed_by`
    /// (a bar's close time is `time + interval`), oldest first.
    ///
    /// # Errors
    /// [`DataError`] when the source cannot answer (unknown symbol, storage failure).
    fn bars(
        &self,
        symbol: &str,
        interval: Interval,
        closed_by: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Bar>, DataError>;

    /// As [`MarketData::bars`] (same bars, same order), borrowed from the source when it holds
    /// them in memory, so a caller that only reads them copies nothing, and with their
    /// [`SeriesOrigin`] when the source can vouch for one. The default returns
    /// [`MarketData::bars`]' vector without an origin; an in-memory source ([`crate::Preloaded`])
    /// overrides it.
    ///
    /// # Errors
    /// As [`MarketData::bars`].
    fn bars_window(
        &self,
        symbol: &str,
        interval: Interval,
        closed_by: DateTime<Utc>,
        limit: usize,
    ) -> Result<BarsWindow<'_>, DataError> {
        self.bars(symbol, interval, closed_by, limit)
            .map(|bars| BarsWindow {
                bars: Cow::Owned(bars),
                origin: None,
            })
    }
}

// `automock` cannot mock `bars_window` (it lends from `self`): the mock expects `bars` and
// keeps the default `bars_window` over it.
#[cfg(feature = "mock")]
mockall::mock! {
    /// A `mockall` mock of [`MarketData`] (feature `mock`): set `expect_bars`; `bars_window`
    /// is the trait's default over `bars`.
    pub MarketData {}
    impl MarketData for MarketData {
        fn bars(
            &self,
            symbol: &str,
            interval: Interval,
            closed_by: DateTime<Utc>,
            limit: usize,
        ) -> Result<Vec<Bar>, DataError>;
    }
}

/// Bars as [`MarketData::bars_window`] serves them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BarsWindow<'a> {
    /// The bars, oldest first: borrowed from the source or owned.
    pub bars: Cow<'a, [Bar]>,
    /// Where `bars` sit in a series of bars the source vouches for, if it does.
    pub origin: Option<SeriesOrigin>,
}

/// A window's place in a series of bars: `bars[i]` is bar number `start + i` of the series
/// `series`.
///
/// The contract a source takes on by giving one: a series id is never used for two different
/// sequences of bars in this process (a source that changes its bars gives them a new id), and
/// the bars of a series are sorted by open time, one per open time. Two windows of one series
/// therefore agree bit for bit on every bar number they share, so a caller that kept the bars of
/// an earlier window need not compare them with a later one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeriesOrigin {
    /// The series' process-unique id ([`SeriesOrigin::new_series_id`]).
    pub series: u64,
    /// The series index of the window's first bar.
    pub start: usize,
}

impl SeriesOrigin {
    /// An id no other series of this process has or will have.
    #[must_use]
    pub fn new_series_id() -> u64 {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(1);
        NEXT.fetch_add(1, Ordering::Relaxed)
    }
}

/// Headlines.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait NewsSource: Send + Sync {
    /// Items published in `[from, to]` about any of `symbols` (or market-wide), at most `top_k`,
    /// most relevant first.
    ///
    /// # Errors
    /// [`DataError`] when the source cannot answer.
    fn news(
        &self,
        symbols: &[String],
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        top_k: usize,
    ) -> Result<Vec<NewsItem>, DataError>;

    /// Whether a feed is behind this source. `false` (only [`NoData`]) makes the News section
    /// say that headlines are unknown, rather than that there were none.
    fn is_connected(&self) -> bool {
        true
    }
}

/// The forward-looking market-event calendar.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait EventCalendar: Send + Sync {
    /// Events scheduled in `(from, to]` of the given kinds (empty = all) with importance at
    /// least `min_importance`.
    ///
    /// # Errors
    /// [`DataError`] when the source cannot answer.
    fn upcoming(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        kinds: &[EventKind],
        min_importance: Decimal,
    ) -> Result<Vec<MarketEvent>, DataError>;

    /// Whether a calendar is behind this source. `false` (only [`NoData`]) makes the Upcoming
    /// events section say that events are unknown, rather than leave it out as "none".
    fn is_connected(&self) -> bool {
        true
    }
}

/// The broker-authoritative account of the deployment.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait PortfolioView: Send + Sync {
    /// Equity, margin and positions.
    ///
    /// # Errors
    /// [`DataError`] when the broker state is unavailable.
    fn portfolio(&self) -> Result<PortfolioSnapshot, DataError>;

    /// Working orders.
    ///
    /// # Errors
    /// [`DataError`] when the broker state is unavailable.
    fn open_orders(&self) -> Result<Vec<OpenOrder>, DataError>;
}

/// Perpetual-futures data: funding and open interest.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait DerivativesData: Send + Sync {
    /// Up to `limit` funding prints of `symbol` at or before `as_of`, oldest first.
    ///
    /// # Errors
    /// [`DataError`] when the source cannot answer.
    fn funding_rates(
        &self,
        symbol: &str,
        as_of: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<FundingRate>, DataError>;

    /// Up to `limit` open-interest observations of `symbol` at or before `as_of`, oldest first.
    ///
    /// # Errors
    /// [`DataError`] when the source cannot answer.
    fn open_interest(
        &self,
        symbol: &str,
        as_of: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<OpenInterestPoint>, DataError>;

    /// Whether a funding/open-interest source is behind this value. `false` (only [`NoData`])
    /// makes the Derivatives section say that funding and open interest are unknown, rather
    /// than that there were none.
    fn is_connected(&self) -> bool {
        true
    }
}

/// The two ADR-0017 memory sections, rendered by the ledger (the `memory-ledger` crate implements
/// this), as of a point in time. Each method returns the section's body lines; the runtime writes
/// the heading (`## Recent trades on this skill (closed)`, `## Open positions (memory view)`) and
/// escapes a body line that starts with `#`. An empty string means "nothing to show" and the runtime writes an honest
/// line instead. Implementations must only use trades closed at or before `as_of` (for
/// `recent_trades`) and positions open at `as_of`, and must keep external text (reasons) on one
/// line each so it cannot forge a prompt heading.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait MemorySections: Send + Sync {
    /// At most `k` closed trades of this deployment, newest entry first.
    ///
    /// # Errors
    /// [`DataError`] when the ledger cannot be read.
    fn recent_trades(&self, k: u32, as_of: DateTime<Utc>) -> Result<String, DataError>;

    /// The ledger's open rows (with mark, MFE/MAE, holding time).
    ///
    /// # Errors
    /// [`DataError`] when the ledger cannot be read.
    fn open_positions(&self, as_of: DateTime<Utc>) -> Result<String, DataError>;
}

/// A source with nothing in it: no news, no events, no funding, no memory. The default for the
/// optional sources of a [`ToolContext`].
#[derive(Debug, Clone, Copy, Default)]
pub struct NoData;

impl NewsSource for NoData {
    fn news(
        &self,
        _: &[String],
        _: DateTime<Utc>,
        _: DateTime<Utc>,
        _: usize,
    ) -> Result<Vec<NewsItem>, DataError> {
        Ok(Vec::new())
    }

    fn is_connected(&self) -> bool {
        false
    }
}

impl EventCalendar for NoData {
    fn upcoming(
        &self,
        _: DateTime<Utc>,
        _: DateTime<Utc>,
        _: &[EventKind],
        _: Decimal,
    ) -> Result<Vec<MarketEvent>, DataError> {
        Ok(Vec::new())
    }

    fn is_connected(&self) -> bool {
        false
    }
}

impl DerivativesData for NoData {
    fn funding_rates(
        &self,
        _: &str,
        _: DateTime<Utc>,
        _: usize,
    ) -> Result<Vec<FundingRate>, DataError> {
        Ok(Vec::new())
    }

    fn open_interest(
        &self,
        _: &str,
        _: DateTime<Utc>,
        _: usize,
    ) -> Result<Vec<OpenInterestPoint>, DataError> {
        Ok(Vec::new())
    }
    fn is_connected(&self) -> bool {
        false
    }
}

impl MemorySections for NoData {
    fn recent_trades(&self, _: u32, _: DateTime<Utc>) -> Result<String, DataError> {
        Ok(String::new())
    }

    fn open_positions(&self, _: DateTime<Utc>) -> Result<String, DataError> {
        Ok(String::new())
    }
}

/// Everything one tick may read. Cheap to clone (the sources are shared `Arc`s); tools keep a
/// clone.
#[derive(Clone)]
pub struct ToolContext {
    /// The tick time. Nothing after it may reach the model.
    pub now: DateTime<Utc>,
    /// Whether tools may act.
    pub mode: RunMode,
    /// The symbols the deployment trades, in the skill's order.
    pub symbols: Vec<String>,
    /// Bars of the traded symbols.
    pub market: Arc<dyn MarketData>,
    /// The broker-authoritative account and working orders.
    pub portfolio: Arc<dyn PortfolioView>,
    /// Headlines ([`NoData`] when the deployment has no news feed).
    pub news: Arc<dyn NewsSource>,
    /// The market-event calendar ([`NoData`] when none).
    pub events: Arc<dyn EventCalendar>,
    /// Funding and open interest ([`NoData`] when none).
    pub derivatives: Arc<dyn DerivativesData>,
    /// The ledger's memory sections ([`NoData`] when none).
    pub memory: Arc<dyn MemorySections>,
    /// The outcome memory the recall tools and the `<trading_memory>` block read ([`NoData`]
    /// when none: every recall answers with no outcomes).
    pub trade_memory: Arc<dyn crate::recall::TradeMemory>,
    /// Tools started outside the tick (a skill's MCP servers' tools), shared by every tick of a
    /// run; [`crate::build_tools`] offers them after the built-ins, sorted by name. Empty by
    /// default.
    pub external: Arc<[Arc<dyn crate::Tool>]>,
    /// What rewrites the texts this tick shows the model on their way to it — the system prompt,
    /// the user message, every tool result and tool error — when the run is blind (the `blind`
    /// crate); `None` (the default) shows them as written.
    pub lens: Option<Arc<dyn Lens>>,
}

/// Rewrites a text on its way to the model. Blind mode's lens (the `blind` crate) turns dates
/// into days relative to the run's start and real symbols into neutral names; the data itself
/// (prices, sizes) is rewritten by the sources, never by a lens.
pub trait Lens: Send + Sync {
    /// `text` as the model reads it.
    fn show(&self, text: &str) -> String;
}

/// `value` with every string in it replaced by `f` of it (keys, numbers and the shape kept): a
/// lens over a tool's result, or blind mode over a skill's JSON form.
#[must_use]
pub fn map_json_strings(value: serde_json::Value, f: &dyn Fn(&str) -> String) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => Value::String(f(&s)),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| map_json_strings(v, f)).collect())
        }
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, map_json_strings(v, f)))
                .collect(),
        ),
        other => other,
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("now", &self.now)
            .field("mode", &self.mode)
            .field("symbols", &self.symbols)
            .field(
                "external",
                &self.external.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .field("lens", &self.lens.is_some())
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A context with bars and a broker account; news, events, funding/open interest and memory
    /// start empty ([`NoData`]) and are set with the `with_*` methods.
    #[must_use]
    pub fn new(
        now: DateTime<Utc>,
        mode: RunMode,
        symbols: Vec<String>,
        market: Arc<dyn MarketData>,
        portfolio: Arc<dyn PortfolioView>,
    ) -> Self {
        Self {
            now,
            mode,
            symbols,
            market,
            portfolio,
            news: Arc::new(NoData),
            events: Arc::new(NoData),
            derivatives: Arc::new(NoData),
            memory: Arc::new(NoData),
            trade_memory: Arc::new(NoData),
            external: Arc::new([]),
            lens: None,
        }
    }

    /// This context with `external` as its tools started outside the tick (see
    /// [`ToolContext::external`]).
    #[must_use]
    pub fn with_external(mut self, external: Arc<[Arc<dyn crate::Tool>]>) -> Self {
        self.external = external;
        self
    }

    /// This context with `news` as its headline source.
    #[must_use]
    pub fn with_news(mut self, news: Arc<dyn NewsSource>) -> Self {
        self.news = news;
        self
    }

    /// This context with `events` as its event calendar.
    #[must_use]
    pub fn with_events(mut self, events: Arc<dyn EventCalendar>) -> Self {
        self.events = events;
        self
    }

    /// This context with `derivatives` as its funding and open-interest source.
    #[must_use]
    pub fn with_derivatives(mut self, derivatives: Arc<dyn DerivativesData>) -> Self {
        self.derivatives = derivatives;
        self
    }

    /// This context with `memory` as its ledger memory sections.
    #[must_use]
    pub fn with_memory(mut self, memory: Arc<dyn MemorySections>) -> Self {
        self.memory = memory;
        self
    }

    /// This context with `memory` as its outcome memory (recall tools, `<trading_memory>`).
    #[must_use]
    pub fn with_trade_memory(mut self, memory: Arc<dyn crate::recall::TradeMemory>) -> Self {
        self.trade_memory = memory;
        self
    }

    /// Whether `symbol` is one the deployment trades.
    #[must_use]
    pub fn trades_symbol(&self, symbol: &str) -> bool {
        self.symbols.iter().any(|s| s == symbol)
    }

    /// The problem of a tool argument naming a symbol the deployment does not trade. It names
    /// the traded symbols only, never the one given: in a blind run a real name the model
    /// guessed would come back through the lens as its alias, confirming the guess.
    #[must_use]
    pub fn not_traded(&self) -> String {
        format!(
            "symbol: not traded by this deployment; use one of {}",
            self.symbols.join(", ")
        )
    }
}
