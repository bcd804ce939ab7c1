//! [`Preloaded`]: one in-memory value implementing every data-source trait, for the simulator
//! (which holds its whole history in memory), for a live runner that fetched a tick's data up
//! front, and for tests.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use types::{Bar, EventKind, Interval, MarketEvent, PortfolioSnapshot};

use crate::context::{
    BarsWindow, DataError, DerivativesData, EventCalendar, FundingRate, MarketData, MemorySections,
    NewsItem, NewsSource, OpenInterestPoint, OpenOrder, PortfolioView, SeriesOrigin, rank_news,
};

/// Data held in memory. Every query applies its point-in-time bound itself.
///
/// The memory sections are held as already-rendered text (what the ledger renders for this
/// tick); they are returned as given whatever `as_of` is asked for.
#[derive(Debug, Clone, Default)]
pub struct Preloaded {
    /// By symbol, then interval (looked up by `&str`, without allocating a key).
    bars: BTreeMap<String, BTreeMap<Interval, Series>>,
    /// Every headline held, any order; [`NewsSource::news`] filters by window and symbol and ranks.
    pub news: Vec<NewsItem>,
    /// Every calendar event held; [`EventCalendar::upcoming`] filters by window, kind and importance.
    pub events: Vec<MarketEvent>,
    /// The broker account; `None` makes [`PortfolioView::portfolio`] fail ("no portfolio snapshot
    /// loaded").
    pub portfolio: Option<PortfolioSnapshot>,
    /// Working orders, returned as given.
    pub open_orders: Vec<OpenOrder>,
    /// Funding prints by symbol, any order; served up to `as_of`, oldest first.
    pub funding: BTreeMap<String, Vec<FundingRate>>,
    /// Open-interest observations by symbol, any order; served up to `as_of`, oldest first.
    pub open_interest: BTreeMap<String, Vec<OpenInterestPoint>>,
    /// The rendered "Recent trades" memory section, returned as given (empty = nothing to show).
    pub recent_trades_text: String,
    /// The rendered "Open positions (memory view)" memory section, returned as given.
    pub open_positions_text: String,
}

/// One symbol's bars at one interval, sorted by open time, one per open time, under an id
/// ([`SeriesOrigin`]) that changes whenever they do: a clone shares the id with the same bars.
/// The bars may be shared with other sources (a live runner's candle cache hands every tick of
/// a bar close the same series); only `bars[..end]` belong to this source.
#[derive(Debug, Clone)]
struct Series {
    id: u64,
    bars: Arc<[Bar]>,
    end: usize,
}

impl Series {
    fn held(&self) -> &[Bar] {
        &self.bars[..self.end]
    }
}

impl Preloaded {
    /// An empty source: no bars, no news, no portfolio.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds bars of `symbol` at `interval` (any order; kept sorted by open time, one bar per
    /// open time, the later insert winning).
    pub fn insert_bars(&mut self, symbol: &str, interval: Interval, bars: Vec<Bar>) {
        let by_interval = self.bars.entry(symbol.to_owned()).or_default();
        let held = by_interval.get(&interval).map_or(&[][..], Series::held);
        // The common case, a first series already in strictly increasing time order (what
        // a bar file or a resample gives), is the merge's result as it is.
        let bars = if held.is_empty() && bars.is_sorted_by(|a, b| a.time < b.time) {
            bars
        } else {
            let mut by_time: BTreeMap<DateTime<Utc>, Bar> =
                held.iter().map(|b| (b.time, b.clone())).collect();
            for b in bars {
                by_time.insert(b.time, b);
            }
            by_time.into_values().collect()
        };
        by_interval.insert(
            interval,
            Series {
                id: SeriesOrigin::new_series_id(),
                end: bars.len(),
                bars: bars.into(),
            },
        );
    }

    /// Holds `bars` of `symbol` at `interval` — shared, not copied — in place of any held
    /// before, up to the last one that closed by `closed_by` (a bar closes at its open time +
    /// `interval`): a source for a tick at `closed_by` holds nothing after it. `bars` must be
    /// sorted by open time, one per open time (a live runner's candle cache keeps them so);
    /// bars that are not are copied and merged as [`Preloaded::insert_bars`] merges them.
    pub fn insert_shared_bars(
        &mut self,
        symbol: &str,
        interval: Interval,
        bars: Arc<[Bar]>,
        closed_by: DateTime<Utc>,
    ) {
        if !bars.is_sorted_by(|a, b| a.time < b.time) {
            self.bars
                .entry(symbol.to_owned())
                .or_default()
                .remove(&interval);
            let closed = bars
                .iter()
                .filter(|b| b.close_time(interval) <= closed_by)
                .cloned()
                .collect();
            self.insert_bars(symbol, interval, closed);
            return;
        }
        let end = closed_prefix(&bars, interval, closed_by);
        self.bars.entry(symbol.to_owned()).or_default().insert(
            interval,
            Series {
                id: SeriesOrigin::new_series_id(),
                bars,
                end,
            },
        );
    }

    /// Builder form of [`Preloaded::insert_bars`].
    #[must_use]
    pub fn with_bars(mut self, symbol: &str, interval: Interval, bars: Vec<Bar>) -> Self {
        self.insert_bars(symbol, interval, bars);
        self
    }

    /// Every bar held for `symbol` at `interval`, oldest first.
    #[must_use]
    pub fn all_bars(&self, symbol: &str, interval: Interval) -> &[Bar] {
        self.series(symbol, interval).map_or(&[], Series::held)
    }

    fn series(&self, symbol: &str, interval: Interval) -> Option<&Series> {
        self.bars
            .get(symbol)
            .and_then(|by_interval| by_interval.get(&interval))
    }
}

/// How many of `bars` (sorted by open time) closed by `closed_by`: they are a prefix, those
/// that opened by `closed_by − interval` (one subtraction instead of one addition per probe).
/// When that instant is out of range, no bar can have closed by `closed_by`.
fn closed_prefix(bars: &[Bar], interval: Interval, closed_by: DateTime<Utc>) -> usize {
    match closed_by.checked_sub_signed(interval.duration()) {
        Some(latest_open) => bars.partition_point(|b| b.time <= latest_open),
        None => 0,
    }
}

impl MarketData for Preloaded {
    fn bars(
        &self,
        symbol: &str,
        interval: Interval,
        closed_by: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Bar>, DataError> {
        Ok(self
            .bars_window(symbol, interval, closed_by, limit)?
            .bars
            .into_owned())
    }

    fn bars_window(
        &self,
        symbol: &str,
        interval: Interval,
        closed_by: DateTime<Utc>,
        limit: usize,
    ) -> Result<BarsWindow<'_>, DataError> {
        let Some(series) = self.series(symbol, interval) else {
            return Ok(BarsWindow {
                bars: Cow::Borrowed(&[]),
                origin: None,
            });
        };
        let all = series.held();
        let closed = closed_prefix(all, interval, closed_by);
        let start = closed.saturating_sub(limit);
        Ok(BarsWindow {
            bars: Cow::Borrowed(&all[start..closed]),
            origin: Some(SeriesOrigin {
                series: series.id,
                start,
            }),
        })
    }
}

impl NewsSource for Preloaded {
    fn news(
        &self,
        symbols: &[String],
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        top_k: usize,
    ) -> Result<Vec<NewsItem>, DataError> {
        let mut items: Vec<NewsItem> = self
            .news
            .iter()
            .filter(|n| n.time >= from && n.time <= to)
            .filter(|n| n.symbols.is_empty() || n.symbols.iter().any(|s| symbols.contains(s)))
            .cloned()
            .collect();
        rank_news(&mut items);
        items.truncate(top_k);
        Ok(items)
    }
}

impl EventCalendar for Preloaded {
    fn upcoming(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        kinds: &[EventKind],
        min_importance: Decimal,
    ) -> Result<Vec<MarketEvent>, DataError> {
        Ok(self
            .events
            .iter()
            .filter(|e| e.scheduled_at > from && e.scheduled_at <= to)
            .filter(|e| kinds.is_empty() || kinds.contains(&e.kind))
            .filter(|e| e.importance >= min_importance)
            .cloned()
            .collect())
    }
}

impl PortfolioView for Preloaded {
    fn portfolio(&self) -> Result<PortfolioSnapshot, DataError> {
        self.portfolio
            .clone()
            .ok_or_else(|| DataError::new("broker", "no portfolio snapshot loaded"))
    }

    fn open_orders(&self) -> Result<Vec<OpenOrder>, DataError> {
        Ok(self.open_orders.clone())
    }
}

impl DerivativesData for Preloaded {
    fn funding_rates(
        &self,
        symbol: &str,
        as_of: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<FundingRate>, DataError> {
        let mut rows: Vec<FundingRate> = self
            .funding
            .get(symbol)
            .map(|v| v.iter().filter(|r| r.time <= as_of).cloned().collect())
            .unwrap_or_default();
        rows.sort_by_key(|r| r.time);
        let skip = rows.len().saturating_sub(limit);
        Ok(rows.split_off(skip))
    }

    fn open_interest(
        &self,
        symbol: &str,
        as_of: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<OpenInterestPoint>, DataError> {
        let mut rows: Vec<OpenInterestPoint> = self
            .open_interest
            .get(symbol)
            .map(|v| v.iter().filter(|r| r.time <= as_of).cloned().collect())
            .unwrap_or_default();
        rows.sort_by_key(|r| r.time);
        let skip = rows.len().saturating_sub(limit);
        Ok(rows.split_off(skip))
    }
}

impl MemorySections for Preloaded {
    fn recent_trades(&self, _k: u32, _as_of: DateTime<Utc>) -> Result<String, DataError> {
        Ok(self.recent_trades_text.clone())
    }

    fn open_positions(&self, _as_of: DateTime<Utc>) -> Result<String, DataError> {
        Ok(self.open_positions_text.clone())
    }
}
