//! The data sources as a blind tick reads them: each wraps the real source, takes the neutral
//! names back on the way in and renames and rescales what it serves.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use tools::{
    DataError, DerivativesData, EventCalendar, FundingRate, MarketData, NewsItem, NewsSource,
    OpenInterestPoint, OpenOrder, PortfolioView,
};
use types::{Bar, EventKind, Interval, MarketEvent, PortfolioSnapshot};

use crate::Blind;

/// Bars with prices × the factor and volume ÷ it (its USD value unchanged).
pub struct BlindMarket {
    inner: Arc<dyn MarketData>,
    blind: Arc<Blind>,
}

impl BlindMarket {
    /// `inner` as a blind tick reads it.
    #[must_use]
    pub fn new(inner: Arc<dyn MarketData>, blind: Arc<Blind>) -> Self {
        Self { inner, blind }
    }
}

impl MarketData for BlindMarket {
    fn bars(
        &self,
        symbol: &str,
        interval: Interval,
        closed_by: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Bar>, DataError> {
        let real = self.blind.real_of(symbol)?;
        let bars = self
            .inner
            .bars_window(real, interval, closed_by, limit)?
            .bars;
        let b = &self.blind;
        Ok(bars
            .iter()
            .map(|bar| Bar {
                time: bar.time,
                open: b.price(real, bar.open),
                high: b.price(real, bar.high),
                low: b.price(real, bar.low),
                close: b.price(real, bar.close),
                volume: b.qty(real, bar.volume),
            })
            .collect())
    }
}

/// The account and working orders, renamed and rescaled ([`Blind::portfolio`]).
pub struct BlindPortfolio {
    inner: Arc<dyn PortfolioView>,
    blind: Arc<Blind>,
}

impl BlindPortfolio {
    /// `inner` as a blind tick reads it.
    #[must_use]
    pub fn new(inner: Arc<dyn PortfolioView>, blind: Arc<Blind>) -> Self {
        Self { inner, blind }
    }
}

impl PortfolioView for BlindPortfolio {
    fn portfolio(&self) -> Result<PortfolioSnapshot, DataError> {
        self.inner.portfolio().map(|p| self.blind.portfolio(&p))
    }

    fn open_orders(&self) -> Result<Vec<OpenOrder>, DataError> {
        let b = &self.blind;
        Ok(self
            .inner
            .open_orders()?
            .into_iter()
            .map(|o| OpenOrder {
                qty: b.qty(&o.symbol, o.qty),
                price: o.price.map(|p| b.price(&o.symbol, p)),
                symbol: b.shown_symbol(&o.symbol),
                ..o
            })
            .collect())
    }
}

/// Headlines with the traded symbols and dates masked in their text ([`Blind::mask`]).
pub struct BlindNews {
    inner: Arc<dyn NewsSource>,
    blind: Arc<Blind>,
}

impl BlindNews {
    /// `inner` as a blind tick reads it.
    #[must_use]
    pub fn new(inner: Arc<dyn NewsSource>, blind: Arc<Blind>) -> Self {
        Self { inner, blind }
    }
}

impl NewsSource for BlindNews {
    fn news(
        &self,
        symbols: &[String],
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        top_k: usize,
    ) -> Result<Vec<NewsItem>, DataError> {
        let b = &self.blind;
        let real: Vec<String> = symbols
            .iter()
            .map(|s| b.real_of(s).map(str::to_owned))
            .collect::<Result<_, _>>()?;
        Ok(self
            .inner
            .news(&real, from, to, top_k)?
            .into_iter()
            .map(|n| NewsItem {
                headline: b.mask(&n.headline),
                source: b.mask(&n.source),
                symbols: n.symbols.iter().map(|s| b.shown_symbol(s)).collect(),
                ..n
            })
            .collect())
    }

    fn is_connected(&self) -> bool {
        self.inner.is_connected()
    }
}

/// Scheduled events with the traded symbols and dates masked in their titles.
pub struct BlindEvents {
    inner: Arc<dyn EventCalendar>,
    blind: Arc<Blind>,
}

impl BlindEvents {
    /// `inner` as a blind tick reads it.
    #[must_use]
    pub fn new(inner: Arc<dyn EventCalendar>, blind: Arc<Blind>) -> Self {
        Self { inner, blind }
    }
}

impl EventCalendar for BlindEvents {
    fn upcoming(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        kinds: &[EventKind],
        min_importance: Decimal,
    ) -> Result<Vec<MarketEvent>, DataError> {
        let b = &self.blind;
        Ok(self
            .inner
            .upcoming(from, to, kinds, min_importance)?
            .into_iter()
            .map(|e| MarketEvent {
                title: b.mask(&e.title),
                source: b.mask(&e.source),
                symbols: e.symbols.iter().map(|s| b.shown_symbol(s)).collect(),
                ..e
            })
            .collect())
    }

    fn is_connected(&self) -> bool {
        self.inner.is_connected()
    }
}

/// Funding (a rate: unchanged) and open interest (base units ÷ the factor; USD unchanged).
pub struct BlindDerivatives {
    inner: Arc<dyn DerivativesData>,
    blind: Arc<Blind>,
}

impl BlindDerivatives {
    /// `inner` as a blind tick reads it.
    #[must_use]
    pub fn new(inner: Arc<dyn DerivativesData>, blind: Arc<Blind>) -> Self {
        Self { inner, blind }
    }
}

impl DerivativesData for BlindDerivatives {
    fn funding_rates(
        &self,
        symbol: &str,
        as_of: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<FundingRate>, DataError> {
        let real = self.blind.real_of(symbol)?;
        self.inner.funding_rates(real, as_of, limit)
    }

    fn open_interest(
        &self,
        symbol: &str,
        as_of: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<OpenInterestPoint>, DataError> {
        let real = self.blind.real_of(symbol)?;
        Ok(self
            .inner
            .open_interest(real, as_of, limit)?
            .into_iter()
            .map(|p| OpenInterestPoint {
                oi_base: self.blind.qty(real, p.oi_base),
                ..p
            })
            .collect())
    }

    fn is_connected(&self) -> bool {
        self.inner.is_connected()
    }
}
