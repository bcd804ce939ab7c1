//! [`HyperliquidMarket`]: a chat turn's bars from `candleSnapshot`, its symbols' funding and
//! open interest from `metaAndAssetCtxs`, both cached in memory.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chat::{BarNeed, BarsUnavailable, ChatMarket, ChatMarketError, LoadedBars};
use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use hyperliquid::{ClientConfig, InfoClient, MetaAndAssetCtxs};
use lru::LruCache;
use tools::{DerivativesData, FundingRate, OpenInterestPoint, Preloaded};
use types::{Bar, Interval, RetryPolicy};

use super::MarketSourceError;

/// Most candles one `candleSnapshot` request asks for (the exchange answers at most 5000).
pub const MAX_CANDLES_PER_REQUEST: i64 = 5000;

/// Most `candleSnapshot` requests one turn sends; the windows not in the cache beyond these
/// (the oldest: the newest go first) are reported unavailable and asked on a later turn.
pub const MAX_CANDLE_REQUESTS_PER_TURN: usize = 16;

/// Most requests of one turn in flight at once.
const CONCURRENT_REQUESTS: usize = 4;

/// Most bars the window cache holds (about 100 bytes each); the least recently used windows
/// go first.
pub const MAX_CACHED_BARS: usize = 250_000;

/// How long a window that closed well before the turn stays cached: closed bars never change.
pub const CLOSED_WINDOW_TTL: Duration = Duration::from_secs(24 * 3600);

/// How long a window ending within two minutes of the turn's time stays cached: the
/// exchange may not have settled its last candle yet.
pub const FRESH_WINDOW_TTL: Duration = Duration::from_secs(60);

/// A window ending this close to the turn's time is fresh.
const FRESH_MARGIN: chrono::Duration = chrono::Duration::minutes(2);

/// How long one `metaAndAssetCtxs` answer (every asset's current funding rate and open
/// interest) serves the turns after it.
pub const DERIVATIVES_TTL: Duration = Duration::from_secs(60);

/// The client settings of a chat turn's requests to `base_url`: a 5-second attempt, retried
/// once — a turn that waits on the exchange keeps its user waiting.
#[must_use]
pub fn chat_client_config(base_url: &str) -> ClientConfig {
    ClientConfig::new(base_url)
        .with_timeout(Duration::from_secs(5))
        .with_retry(RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(1),
        })
}

/// A cached window's bars and when they expire.
struct Entry {
    bars: Arc<[Bar]>,
    expires: Instant,
}

/// Windows of bars by (symbol, interval, window), least recently used first out, at most
/// [`MAX_CACHED_BARS`] bars in all.
struct WindowCache {
    lru: LruCache<BarNeed, Entry>,
    bars: usize,
    max_bars: usize,
}

impl WindowCache {
    fn new(max_bars: usize) -> Self {
        Self {
            lru: LruCache::unbounded(),
            bars: 0,
            max_bars,
        }
    }

    /// The bars of `window` when cached and not expired at `at`.
    fn get(&mut self, window: &BarNeed, at: Instant) -> Option<Arc<[Bar]>> {
        match self.lru.get(window) {
            Some(e) if e.expires > at => Some(Arc::clone(&e.bars)),
            Some(_) => {
                if let Some(old) = self.lru.pop(window) {
                    self.bars -= old.bars.len();
                }
                None
            }
            None => None,
        }
    }

    fn insert(&mut self, window: BarNeed, bars: Arc<[Bar]>, expires: Instant) {
        if bars.len() > self.max_bars {
            return;
        }
        let n = bars.len();
        if let Some(old) = self.lru.put(window, Entry { bars, expires }) {
            self.bars -= old.bars.len();
        }
        self.bars += n;
        while self.bars > self.max_bars {
            let Some((_, old)) = self.lru.pop_lru() else {
                break;
            };
            self.bars -= old.bars.len();
        }
    }
}

/// A chat turn's market data from Hyperliquid's info endpoint, cached in memory (see the
/// module's doc). Shared by every turn of the process.
pub struct HyperliquidMarket {
    info: InfoClient,
    windows: Mutex<WindowCache>,
    derivatives: Mutex<Option<(Instant, Arc<MetaAndAssetCtxs>)>>,
}

impl std::fmt::Debug for HyperliquidMarket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HyperliquidMarket").finish_non_exhaustive()
    }
}

impl HyperliquidMarket {
    /// A source over the info endpoint of `config.base_url` ([`chat_client_config`] is what
    /// `serve` and `chat` use).
    ///
    /// # Errors
    /// [`MarketSourceError::Client`] for a base URL that is not http(s).
    pub fn new(config: &ClientConfig) -> Result<Self, MarketSourceError> {
        Ok(Self::with_client(InfoClient::new(config)?))
    }

    /// A source over `info`.
    #[must_use]
    pub fn with_client(info: InfoClient) -> Self {
        Self {
            info,
            windows: Mutex::new(WindowCache::new(MAX_CACHED_BARS)),
            derivatives: Mutex::new(None),
        }
    }

    /// The closed candles of `window` at `now`: those opening in `[from, to)` and closed by
    /// `now`.
    async fn fetch(&self, window: &BarNeed, now: DateTime<Utc>) -> Result<Arc<[Bar]>, String> {
        let last_open = window.to - window.interval.duration();
        let bars = self
            .info
            .candle_snapshot(&window.symbol, window.interval, window.from, last_open)
            .await
            .map_err(|e| format!("candleSnapshot {} {}: {e}", window.symbol, window.interval))?;
        Ok(bars
            .into_iter()
            .filter(|b| {
                b.time >= window.from && b.time < window.to && b.close_time(window.interval) <= now
            })
            .collect())
    }

    /// The cached `metaAndAssetCtxs`, or a fresh one.
    async fn meta_and_asset_ctxs(&self) -> Result<Arc<MetaAndAssetCtxs>, ChatMarketError> {
        let cached = self
            .derivatives
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .filter(|(expires, _)| *expires > Instant::now())
            .map(|(_, meta)| Arc::clone(meta));
        if let Some(meta) = cached {
            return Ok(meta);
        }
        let meta = Arc::new(
            self.info
                .meta_and_asset_ctxs()
                .await
                .map_err(|e| ChatMarketError::new("metaAndAssetCtxs", e))?,
        );
        *self
            .derivatives
            .lock()
            .unwrap_or_else(PoisonError::into_inner) =
            Some((Instant::now() + DERIVATIVES_TTL, Arc::clone(&meta)));
        Ok(meta)
    }
}

/// `need` in windows of at most [`MAX_CANDLES_PER_REQUEST`] bars, from its start.
fn split(need: &BarNeed) -> Vec<BarNeed> {
    let step = need.interval.duration();
    let Some(span) = step.checked_mul(i32::try_from(MAX_CANDLES_PER_REQUEST).unwrap_or(i32::MAX))
    else {
        return vec![need.clone()];
    };
    let mut out = Vec::new();
    let mut from = need.from;
    while from < need.to {
        let to = from
            .checked_add_signed(span)
            .map_or(need.to, |t| t.min(need.to));
        out.push(BarNeed {
            from,
            to,
            ..need.clone()
        });
        from = to;
    }
    out
}

/// The bars gathered for a turn, by symbol and interval.
#[derive(Default)]
struct Gathered(BTreeMap<(String, Interval), Vec<Bar>>);

impl Gathered {
    fn add(&mut self, window: &BarNeed, bars: &[Bar]) {
        self.0
            .entry((window.symbol.clone(), window.interval))
            .or_default()
            .extend_from_slice(bars);
    }

    fn into_market(self) -> Preloaded {
        let mut market = Preloaded::new();
        for ((symbol, interval), bars) in self.0 {
            market.insert_bars(&symbol, interval, bars);
        }
        market
    }
}

#[async_trait]
impl ChatMarket for HyperliquidMarket {
    /// Each need in windows of at most [`MAX_CANDLES_PER_REQUEST`] candles; a cached window is
    /// served from memory, the others asked newest first, at most
    /// [`MAX_CANDLE_REQUESTS_PER_TURN`] of them, four at once. After a
    /// request fails, the turn's requests not yet sent are not sent (the exchange is down or
    /// throttling): their windows are unavailable with that failure as the reason. Never an
    /// error: what could not be served is in [`LoadedBars::unavailable`].
    async fn load(
        &self,
        needs: &[BarNeed],
        now: DateTime<Utc>,
    ) -> Result<LoadedBars, ChatMarketError> {
        let mut gathered = Gathered::default();
        let mut missing = Vec::new();
        {
            let mut cache = self.windows.lock().unwrap_or_else(PoisonError::into_inner);
            let at = Instant::now();
            for window in needs.iter().flat_map(split) {
                match cache.get(&window, at) {
                    Some(bars) => gathered.add(&window, &bars),
                    None => missing.push(window),
                }
            }
        }
        missing.sort_by(|a, b| b.to.cmp(&a.to).then_with(|| a.cmp(b)));
        let skipped = if missing.len() > MAX_CANDLE_REQUESTS_PER_TURN {
            missing.split_off(MAX_CANDLE_REQUESTS_PER_TURN)
        } else {
            Vec::new()
        };
        let mut unavailable: Vec<BarsUnavailable> = skipped
            .into_iter()
            .map(|need| BarsUnavailable {
                need,
                reason: format!(
                    "not requested: a turn sends at most {MAX_CANDLE_REQUESTS_PER_TURN} candle \
                     requests, the newest windows first"
                ),
            })
            .collect();
        let first_failure: OnceLock<String> = OnceLock::new();
        let results: Vec<(BarNeed, Result<Arc<[Bar]>, String>)> =
            futures_util::stream::iter(missing)
                .map(|window| {
                    let first_failure = &first_failure;
                    async move {
                        if let Some(failure) = first_failure.get() {
                            let reason =
                                format!("not requested after a failed request ({failure})");
                            return (window, Err(reason));
                        }
                        let fetched = self.fetch(&window, now).await;
                        if let Err(e) = &fetched {
                            let _ = first_failure.set(e.clone());
                        }
                        (window, fetched)
                    }
                })
                .buffer_unordered(CONCURRENT_REQUESTS)
                .collect()
                .await;
        let at = Instant::now();
        for (window, fetched) in results {
            match fetched {
                Ok(bars) => {
                    gathered.add(&window, &bars);
                    let ttl = if now - window.to >= FRESH_MARGIN {
                        CLOSED_WINDOW_TTL
                    } else {
                        FRESH_WINDOW_TTL
                    };
                    self.windows
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(window, bars, at + ttl);
                }
                Err(reason) => {
                    tracing::warn!(
                        symbol = %window.symbol,
                        interval = %window.interval,
                        from = %window.from,
                        to = %window.to,
                        %reason,
                        "chat market: candles unavailable"
                    );
                    unavailable.push(BarsUnavailable {
                        need: window,
                        reason,
                    });
                }
            }
        }
        unavailable.sort_by(|a, b| a.need.cmp(&b.need));
        Ok(LoadedBars {
            market: Arc::new(gathered.into_market()),
            unavailable,
        })
    }

    /// Each symbol's current hourly funding rate and open interest (base units, and USD at the
    /// mark price), observed at `now`, from one `metaAndAssetCtxs` (cached for
    /// [`DERIVATIVES_TTL`]). A symbol the exchange does not list has neither.
    async fn derivatives(
        &self,
        symbols: &[String],
        now: DateTime<Utc>,
    ) -> Result<Arc<dyn DerivativesData>, ChatMarketError> {
        let meta = self.meta_and_asset_ctxs().await?;
        let mut out = Preloaded::new();
        for symbol in symbols {
            let Some(ctx) = meta.ctx(symbol) else {
                continue;
            };
            out.funding.insert(
                symbol.clone(),
                vec![FundingRate {
                    time: now,
                    rate: ctx.funding,
                    period_hours: 1,
                }],
            );
            if let Some(oi_usd) = ctx.open_interest.checked_mul(ctx.mark_px) {
                out.open_interest.insert(
                    symbol.clone(),
                    vec![OpenInterestPoint {
                        time: now,
                        oi_base: ctx.open_interest,
                        oi_usd,
                    }],
                );
            }
        }
        Ok(Arc::new(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal::Decimal;

    fn at(h: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 / 3600 * 3600 + h * 3600, 0).unwrap()
    }

    fn window(from: i64, to: i64) -> BarNeed {
        BarNeed {
            symbol: "BTC".into(),
            interval: Interval::H1,
            from: at(from),
            to: at(to),
        }
    }

    fn bars(n: usize) -> Arc<[Bar]> {
        (0..n)
            .map(|i| Bar {
                time: at(i64::try_from(i).unwrap()),
                open: Decimal::ONE,
                high: Decimal::ONE,
                low: Decimal::ONE,
                close: Decimal::ONE,
                volume: Decimal::ONE,
            })
            .collect()
    }

    #[test]
    fn the_cache_expires_entries_and_bounds_its_bars() {
        let t0 = Instant::now();
        let mut cache = WindowCache::new(10);
        cache.insert(window(0, 4), bars(4), t0 + Duration::from_secs(60));
        assert_eq!(cache.get(&window(0, 4), t0).map(|b| b.len()), Some(4));
        // Another window is another key.
        assert!(cache.get(&window(0, 5), t0).is_none());
        // Expired: gone, and its bars no longer count.
        assert!(
            cache
                .get(&window(0, 4), t0 + Duration::from_secs(61))
                .is_none()
        );
        assert_eq!(cache.bars, 0);
        // Over the bound, the least recently used window goes first.
        let later = t0 + Duration::from_secs(3600);
        cache.insert(window(0, 4), bars(4), later);
        cache.insert(window(10, 14), bars(4), later);
        assert!(cache.get(&window(0, 4), t0).is_some());
        cache.insert(window(20, 24), bars(4), later);
        assert!(cache.get(&window(10, 14), t0).is_none());
        assert!(cache.get(&window(0, 4), t0).is_some());
        assert_eq!(cache.bars, 8);
        // A window larger than the whole cache is not kept.
        cache.insert(window(30, 41), bars(11), later);
        assert!(cache.get(&window(30, 41), t0).is_none());
        assert_eq!(cache.bars, 8);
    }

    #[test]
    fn a_long_need_is_split_into_requests_of_at_most_5000_candles() {
        let parts = split(&window(0, 12_001));
        assert_eq!(
            parts,
            [
                window(0, 5000),
                window(5000, 10_000),
                window(10_000, 12_001)
            ]
        );
        assert_eq!(split(&window(3, 7)), [window(3, 7)]);
    }
}
