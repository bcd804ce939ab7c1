//! The market data of one chat turn: which bars the turn needs, read off its loaded
//! [`ChatData`] ([`bar_needs`]), and the seam that loads them before the tools run
//! ([`ChatMarket`]). The tools stay synchronous — only the loading is async, as a tick's data
//! is loaded before the tick — and this module stays pure: where bars come from (files, an
//! exchange) and how they are cached is the caller's.
//!
//! A turn needs:
//! - for every open position of the caller and every past event of a kind that is among the
//!   upcoming events touching its symbol (only those can be asked about), the bars from one
//!   interval before the event to the event plus the exposure window — what
//!   [`crate::exposure::event_move`] reads;
//! - for every symbol of the caller's deployments (active or paused) and of their open
//!   positions, the last [`RECENT_BARS`] closed bars of [`RECENT_INTERVAL`] up to the turn's
//!   time — the marks of open positions and what a read of the recent market summarises.
//!
//! A source that cannot serve some of them says which ([`LoadedBars::unavailable`]); a source
//! that fails as a whole fails nothing either: the turn runs without those bars and the tools
//! say that what they measure could not be measured.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use db::DeploymentStatus;
use tools::{DerivativesData, MarketData, NoData, Preloaded};
use types::{EventKind, Interval, MarketEvent, TradeStatus};

use crate::data::ChatData;
use crate::exposure::MoveWindow;

/// Closed bars of the recent market a turn loads per symbol.
pub const RECENT_BARS: i32 = 200;

/// The interval of the recent bars.
pub const RECENT_INTERVAL: Interval = Interval::H1;

/// Bars a turn needs: those of `symbol` at `interval` opening in `[from, to)`. `from` and `to`
/// lie on the interval's grid ([`Interval::bucket_start`]) and `to` is at or before the turn's
/// time, so every bar of a need has closed by then.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BarNeed {
    /// The symbol, as the deployment or ledger spells it.
    pub symbol: String,
    /// The bars' interval.
    pub interval: Interval,
    /// Open time of the first bar (UTC), included.
    pub from: DateTime<Utc>,
    /// Close time of the last bar (UTC): bars open before it.
    pub to: DateTime<Utc>,
}

impl BarNeed {
    /// How many bars of the interval fit in `[from, to)`.
    #[must_use]
    pub fn bar_count(&self) -> i64 {
        (self.to - self.from).num_minutes() / self.interval.minutes().max(1)
    }

    /// Whether this need and `other` ask for at least one common bar.
    #[must_use]
    pub fn overlaps(&self, other: &BarNeed) -> bool {
        self.symbol == other.symbol
            && self.interval == other.interval
            && self.from < other.to
            && other.from < self.to
    }

    /// The bars [`crate::exposure::event_move`] reads around an event at `at` measured over
    /// `window`: from the bar that closes at the last grid time at or before `at` to the one
    /// that closes at the last grid time at or before `at + window`. `None` when that window
    /// ends after `now` (the move is not measured) or out of the calendar's range.
    #[must_use]
    pub fn around_event(
        symbol: &str,
        at: DateTime<Utc>,
        window: MoveWindow,
        now: DateTime<Utc>,
    ) -> Option<BarNeed> {
        let end = at.checked_add_signed(window.window)?;
        if end > now {
            return None;
        }
        let step = window.interval.duration();
        let from = window.interval.bucket_start(at).checked_sub_signed(step)?;
        Some(BarNeed {
            symbol: symbol.to_owned(),
            interval: window.interval,
            from,
            to: window.interval.bucket_start(end),
        })
    }

    /// The last `bars` closed bars of `symbol` at `interval` at `now`.
    #[must_use]
    pub fn recent(symbol: &str, interval: Interval, bars: i32, now: DateTime<Utc>) -> BarNeed {
        let to = interval.bucket_start(now);
        let span = interval
            .duration()
            .checked_mul(bars.max(1))
            .unwrap_or(Duration::zero());
        BarNeed {
            symbol: symbol.to_owned(),
            interval,
            from: to.checked_sub_signed(span).unwrap_or(to),
            to,
        }
    }
}

/// Whether event `e` concerns `symbol`: a market-wide event (no symbols) concerns every symbol.
pub(crate) fn touches(e: &MarketEvent, symbol: &str) -> bool {
    e.symbols.is_empty() || e.symbols.iter().any(|s| s == symbol)
}

/// The symbols a turn reads the market of: those of the caller's active and paused
/// deployments (their `symbols` setting) and of every open position, sorted, each once.
#[must_use]
pub fn market_symbols(data: &ChatData) -> Vec<String> {
    let mut out = BTreeSet::new();
    for d in &data.deployments {
        if d.deployment.status != DeploymentStatus::Stopped
            && let Some(serde_json::Value::Array(symbols)) = d.deployment.config.get("symbols")
        {
            out.extend(
                symbols
                    .iter()
                    .filter_map(serde_json::Value::as_str)
                    .map(str::to_owned),
            );
        }
        out.extend(
            d.trades
                .iter()
                .filter(|t| t.status == TradeStatus::Open)
                .map(|t| t.symbol.clone()),
        );
    }
    out.into_iter().collect()
}

/// The bars a turn over `data` needs, merged: one need per run of overlapping or adjacent
/// windows of one symbol and interval, sorted by symbol, interval and time (see the module's
/// doc for what is needed). `window` is how `your_exposure` measures a move.
#[must_use]
pub fn bar_needs(data: &ChatData, window: MoveWindow) -> Vec<BarNeed> {
    let now = data.now;
    let mut needs = Vec::new();
    for symbol in market_symbols(data) {
        needs.push(BarNeed::recent(&symbol, RECENT_INTERVAL, RECENT_BARS, now));
    }
    let open = data
        .deployments
        .iter()
        .flat_map(|d| d.trades.iter())
        .filter(|t| t.status == TradeStatus::Open);
    for pos in open {
        // A position is marked at the latest bar of the exposure's interval.
        needs.push(BarNeed::recent(
            &pos.symbol,
            window.interval,
            RECENT_BARS,
            now,
        ));
        let kinds: BTreeSet<EventKind> = data
            .upcoming
            .iter()
            .filter(|e| touches(e, &pos.symbol))
            .map(|e| e.kind)
            .collect();
        needs.extend(
            data.past
                .iter()
                .filter(|p| kinds.contains(&p.kind) && touches(p, &pos.symbol))
                .filter_map(|p| BarNeed::around_event(&pos.symbol, p.scheduled_at, window, now)),
        );
    }
    merge_needs(needs)
}

/// `needs` sorted (symbol, interval, from) with overlapping or adjacent windows of one symbol
/// and interval merged into one; empty windows dropped.
#[must_use]
pub fn merge_needs(mut needs: Vec<BarNeed>) -> Vec<BarNeed> {
    needs.sort();
    let mut out: Vec<BarNeed> = Vec::with_capacity(needs.len());
    for n in needs.into_iter().filter(|n| n.from < n.to) {
        match out.last_mut() {
            Some(last)
                if last.symbol == n.symbol && last.interval == n.interval && n.from <= last.to =>
            {
                last.to = last.to.max(n.to);
            }
            _ => out.push(n),
        }
    }
    out
}

/// Bars a source could not serve, and why (one line, for the tool result and the log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BarsUnavailable {
    /// What was asked (a need or a part of one).
    pub need: BarNeed,
    /// Why it is missing: the request's or the file's error, or that it was not asked.
    pub reason: String,
}

/// The first entry of `unavailable` that overlaps `need`.
#[must_use]
pub fn unavailable_for<'a>(
    unavailable: &'a [BarsUnavailable],
    need: &BarNeed,
) -> Option<&'a BarsUnavailable> {
    unavailable.iter().find(|u| u.need.overlaps(need))
}

/// What a [`ChatMarket`] served for a turn.
#[derive(Clone)]
pub struct LoadedBars {
    /// The bars, served through [`MarketData`] (point in time: a bar is read as of when it
    /// closed).
    pub market: Arc<dyn MarketData>,
    /// The needs, or parts of needs, that could not be served; empty when all were. A need the
    /// source answered with no bars (before a symbol's history, a market closed) is not here.
    pub unavailable: Vec<BarsUnavailable>,
}

impl std::fmt::Debug for LoadedBars {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedBars")
            .field("unavailable", &self.unavailable)
            .finish_non_exhaustive()
    }
}

/// A market source that could not serve a turn at all.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct ChatMarketError {
    /// What was being loaded (a source, a request, a file).
    pub what: String,
    /// Why it failed.
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

impl ChatMarketError {
    /// An error loading `what`.
    pub fn new(
        what: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Self {
            what: what.into(),
            source: source.into(),
        }
    }
}

/// Where a chat turn gets its market data, before its tools run.
#[async_trait]
pub trait ChatMarket: Send + Sync {
    /// The bars of `needs` ([`bar_needs`]) for a turn at `now`. Only bars closed by `now` may
    /// be served. What could not be served goes in [`LoadedBars::unavailable`].
    ///
    /// # Errors
    /// [`ChatMarketError`] when nothing can be served; the turn then runs without bars, and
    /// its tools say so.
    async fn load(
        &self,
        needs: &[BarNeed],
        now: DateTime<Utc>,
    ) -> Result<LoadedBars, ChatMarketError>;

    /// Funding and open interest of `symbols` ([`market_symbols`]) as of `now`. The default has
    /// none ([`NoData`]: the tools say they are unknown).
    ///
    /// # Errors
    /// [`ChatMarketError`] when the source failed; the turn then runs with [`NoData`].
    async fn derivatives(
        &self,
        symbols: &[String],
        now: DateTime<Utc>,
    ) -> Result<Arc<dyn DerivativesData>, ChatMarketError> {
        let _ = (symbols, now);
        Ok(Arc::new(NoData))
    }
}

/// A fixed source: the same bars (and derivatives data) whatever a turn needs, for tests and
/// library users who hold their data in memory (a [`Preloaded`] converts into one). Cheap to
/// clone.
#[derive(Clone)]
pub struct FixedMarket {
    market: Arc<dyn MarketData>,
    derivatives: Arc<dyn DerivativesData>,
}

impl std::fmt::Debug for FixedMarket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FixedMarket").finish_non_exhaustive()
    }
}

impl FixedMarket {
    /// `market`'s bars, no derivatives data.
    #[must_use]
    pub fn new(market: Arc<dyn MarketData>) -> Self {
        Self {
            market,
            derivatives: Arc::new(NoData),
        }
    }

    /// With `derivatives` as the funding and open-interest source.
    #[must_use]
    pub fn with_derivatives(mut self, derivatives: Arc<dyn DerivativesData>) -> Self {
        self.derivatives = derivatives;
        self
    }
}

#[async_trait]
impl ChatMarket for FixedMarket {
    async fn load(&self, _: &[BarNeed], _: DateTime<Utc>) -> Result<LoadedBars, ChatMarketError> {
        Ok(LoadedBars {
            market: Arc::clone(&self.market),
            unavailable: Vec::new(),
        })
    }

    async fn derivatives(
        &self,
        _: &[String],
        _: DateTime<Utc>,
    ) -> Result<Arc<dyn DerivativesData>, ChatMarketError> {
        Ok(Arc::clone(&self.derivatives))
    }
}

/// A [`Preloaded`]'s bars and derivatives data, shared (not copied) by every turn.
impl From<Preloaded> for FixedMarket {
    fn from(data: Preloaded) -> Self {
        let data = Arc::new(data);
        Self {
            market: Arc::clone(&data) as Arc<dyn MarketData>,
            derivatives: data,
        }
    }
}

/// The turn's market: `source`'s bars for `data`'s needs and its derivatives data for `data`'s
/// symbols. A failure is logged and leaves the turn without that data: every need of a failed
/// load is unavailable with the error as its reason, a failed derivatives read is [`NoData`].
pub(crate) async fn load_turn_market(
    source: &dyn ChatMarket,
    data: &ChatData,
    window: MoveWindow,
) -> (LoadedBars, Arc<dyn DerivativesData>) {
    let needs = bar_needs(data, window);
    let bars = if needs.is_empty() {
        LoadedBars {
            market: Arc::new(Preloaded::new()),
            unavailable: Vec::new(),
        }
    } else {
        match source.load(&needs, data.now).await {
            Ok(loaded) => {
                for u in &loaded.unavailable {
                    tracing::warn!(
                        symbol = %u.need.symbol,
                        interval = %u.need.interval,
                        from = %u.need.from,
                        to = %u.need.to,
                        reason = %u.reason,
                        "chat turn: bars unavailable"
                    );
                }
                loaded
            }
            Err(e) => {
                tracing::warn!(error = %e, needs = needs.len(), "chat turn: no bars could be loaded");
                let reason = e.to_string();
                LoadedBars {
                    market: Arc::new(Preloaded::new()),
                    unavailable: needs
                        .into_iter()
                        .map(|need| BarsUnavailable {
                            need,
                            reason: reason.clone(),
                        })
                        .collect(),
                }
            }
        }
    };
    let symbols = market_symbols(data);
    let derivatives: Arc<dyn DerivativesData> = if symbols.is_empty() {
        Arc::new(NoData)
    } else {
        match source.derivatives(&symbols, data.now).await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "chat turn: no funding or open interest");
                Arc::new(NoData)
            }
        }
    };
    (bars, derivatives)
}
