//! The runner's candle cache: one series of closed bars per (symbol, interval), shared by every
//! tick that reads it, so the requests to the exchange grow with the symbols, not with the
//! deployments.
//!
//! A tick at bar close `T` asks for at least `n` of a series' bars closed by `T`
//! ([`CandleCache::closed_bars`]) and gets the series itself (an `Arc`, no copy), which it holds
//! only up to `T` (`tools::Preloaded::insert_shared_bars`): it never sees a bar that closed
//! after it, nor a forming one — the cache holds closed bars only.
//!
//! A series knows up to which close it is complete (`through`): every bar the exchange closed
//! from its first bar to `through` is in it. A read the series serves costs nothing. Otherwise:
//! - with the WebSocket feed ([`MarketFeed::Ws`]) connected and nothing missed, the read waits
//!   (up to the feed's grace) for the feed to close the bar: a candle is closed once an update
//!   of a later candle of its series arrives, and its last update is appended then — once;
//! - else one `candleSnapshot` request fetches what is missing: the bars since `through` when
//!   the series is deep enough (`update`), else the whole window, widened past exchange gaps as
//!   a tick's own fetch was (`backfill`: a new series, a runner just started — mid-bar or not —
//!   or a tick that needs more bars than the series keeps). Reads of one series are
//!   single-flight: while one fetch is in flight, the other ticks of the series wait for it and
//!   are then served from the cache.
//!
//! Gap repair: an update missed by the feed (a candle that opens more than one bar after the
//! last closed one, or a connection lost — the candle forming then is dropped, its last update
//! may be missing) leaves `through` where it was, so the next read fetches the missing bars over
//! REST. Updates are whole candles, so a connection lost and made again within one bar misses
//! nothing.
//!
//! Memory: a series keeps the most bars any read asked for (at most 5,000, the exchange's most
//! in one answer), plus [`MARGIN`] bars.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use chrono::{DateTime, Utc};
use hyperliquid::{CandleFeed, FeedConfig, FeedEvent, InfoClient};
use types::{Bar, Interval};

use super::RunError;
use super::market::{MAX_CANDLES, closed_candles, last_closed_candles};
use crate::metrics::Metrics;
use crate::schedule::{bar_length, last_close_at_or_before};

/// Bars a series keeps beyond the most any read asked for (and by how many it may grow past
/// that before the oldest are dropped).
pub const MARGIN: usize = 64;

/// Where the runner's closed bars come from.
#[derive(Debug, Clone)]
pub enum MarketFeed {
    /// `candleSnapshot` requests only: one per series and bar close, the first a backfill.
    Rest,
    /// Hyperliquid's WebSocket candle subscriptions, with `candleSnapshot` backfill and gap
    /// repair.
    Ws(WsFeed),
}

/// The WebSocket feed's settings.
#[derive(Debug, Clone)]
pub struct WsFeed {
    /// The connection.
    pub feed: FeedConfig,
    /// How long a read waits for the feed to close its bar before fetching it over REST.
    pub grace: Duration,
}

impl WsFeed {
    /// The feed at `url` with a grace of 2 s.
    #[must_use]
    pub fn new(url: impl Into<String>) -> Self {
        WsFeed {
            feed: FeedConfig::new(url),
            grace: Duration::from_secs(2),
        }
    }
}

/// The closed bars of every (symbol, interval) the runner's ticks read.
pub struct CandleCache {
    info: InfoClient,
    metrics: Metrics,
    series: Mutex<BTreeMap<(String, Interval), Arc<Slot>>>,
    /// The WebSocket feed, when the runner has one (its task ends when this is dropped).
    feed: Option<CandleFeed>,
    grace: Duration,
    /// Whether the feed's connection is open.
    connected: AtomicBool,
}

/// One series: its bars behind a lock held for no await, the single-flight lock of its
/// fetches, and a wake-up for reads waiting on the feed.
struct Slot {
    interval: Interval,
    bars: Mutex<Series>,
    fetch: tokio::sync::Mutex<()>,
    closed: tokio::sync::Notify,
}

/// A series' closed bars, oldest first, one per open time.
#[derive(Default)]
struct Series {
    bars: Arc<[Bar]>,
    /// Every bar the exchange closed from the first in `bars` to this close is in `bars`.
    through: Option<DateTime<Utc>>,
    /// The exchange has no bar before the first in `bars` (a backfill found its history short).
    exhausted: bool,
    /// The most bars a read asked for.
    depth: usize,
    /// The feed's latest update of the candle forming, while the connection that sent it is
    /// open.
    forming: Option<Bar>,
}

/// How a fetch went, for the metrics.
#[derive(Clone, Copy)]
enum Fetch {
    Backfill,
    Update,
}

impl Series {
    /// How many of the bars closed by `at` (a prefix).
    fn closed_by(&self, interval: Interval, at: DateTime<Utc>) -> usize {
        let len = bar_length(interval);
        self.bars.partition_point(|b| b.time + len <= at)
    }

    /// Whether a read of `n` bars closed by `at` is served as the series stands.
    fn serves(&self, interval: Interval, n: usize, at: DateTime<Utc>) -> bool {
        self.through
            .is_some_and(|t| t >= last_close_at_or_before(at, interval))
            && self.deep_enough(interval, n, at)
    }

    fn deep_enough(&self, interval: Interval, n: usize, at: DateTime<Utc>) -> bool {
        self.exhausted || self.closed_by(interval, at) >= n
    }

    /// Whether the feed can still close the bars a read at `at` lacks: the series is complete
    /// up to the forming candle (or none was seen yet since the connection opened).
    fn feed_can_close(&self, interval: Interval, n: usize, at: DateTime<Utc>) -> bool {
        let Some(through) = self.through else {
            return false;
        };
        let missing = last_close_at_or_before(at, interval) - through;
        missing <= bar_length(interval)
            && self.deep_enough(interval, n, at)
            && self.forming.as_ref().is_none_or(|f| f.time <= through)
    }

    /// The bars to keep: the most a read asked for, plus the margin.
    fn capacity(&self) -> usize {
        self.depth.saturating_add(MARGIN)
    }

    /// Merges `fetched` (the exchange's closed bars; they win over the held ones of the same
    /// open times) and drops the oldest past the capacity.
    fn merge(&mut self, fetched: Vec<Bar>) {
        let appends = match (self.bars.last(), fetched.first()) {
            (Some(last), Some(first)) => last.time < first.time,
            _ => true,
        };
        let mut bars: Vec<Bar> = if appends {
            let mut v = Vec::with_capacity(self.bars.len() + fetched.len());
            v.extend_from_slice(&self.bars);
            v.extend(fetched);
            v
        } else {
            let mut by_time: BTreeMap<DateTime<Utc>, Bar> =
                self.bars.iter().map(|b| (b.time, b.clone())).collect();
            for b in fetched {
                by_time.insert(b.time, b);
            }
            by_time.into_values().collect()
        };
        self.trim(&mut bars);
        self.bars = bars.into();
    }

    fn trim(&mut self, bars: &mut Vec<Bar>) {
        let keep = self.capacity();
        if bars.len() > keep.saturating_add(MARGIN) {
            bars.drain(..bars.len() - keep);
            self.exhausted = false;
        }
    }

    /// Applies one update of the feed; true when it closed a bar (appended, or already held).
    fn update(&mut self, interval: Interval, bar: Bar) -> bool {
        let Some(forming) = self.forming.take_if(|f| f.time < bar.time) else {
            // The first update since the connection opened, or the forming candle's next.
            if self.forming.as_ref().is_none_or(|f| f.time == bar.time) {
                self.forming = Some(bar);
            }
            return false;
        };
        // A later candle opened: the one forming is closed, its last update final.
        self.forming = Some(bar);
        let len = bar_length(interval);
        if self.through == Some(forming.time) {
            let mut bars = Vec::with_capacity(self.bars.len() + 1);
            bars.extend_from_slice(&self.bars);
            bars.push(forming.clone());
            self.trim(&mut bars);
            self.bars = bars.into();
            self.through = Some(forming.time + len);
            return true;
        }
        // Held already (fetched), or after a gap the next fetch repairs.
        self.through.is_some_and(|t| forming.time + len <= t)
    }
}

impl CandleCache {
    /// A cache over `info`'s `candleSnapshot` alone ([`MarketFeed::Rest`]).
    #[must_use]
    pub fn rest(info: InfoClient, metrics: Metrics) -> Arc<Self> {
        Arc::new(CandleCache {
            info,
            metrics,
            series: Mutex::new(BTreeMap::new()),
            feed: None,
            grace: Duration::ZERO,
            connected: AtomicBool::new(false),
        })
    }

    /// A cache fed by `feed` (REST for backfill and repair); with [`MarketFeed::Ws`], the feed
    /// starts on the current tokio runtime. Its reads and requests are counted in `metrics`
    /// ([`Metrics::market_reads`], [`Metrics::market_requests`]).
    #[must_use]
    pub fn new(info: InfoClient, metrics: Metrics, feed: MarketFeed) -> Arc<Self> {
        let MarketFeed::Ws(ws) = feed else {
            return Self::rest(info, metrics);
        };
        let (events, mut received) = tokio::sync::mpsc::unbounded_channel();
        let cache = Arc::new(CandleCache {
            info,
            metrics,
            series: Mutex::new(BTreeMap::new()),
            feed: Some(CandleFeed::start(ws.feed, events)),
            grace: ws.grace,
            connected: AtomicBool::new(false),
        });
        let weak: Weak<CandleCache> = Arc::downgrade(&cache);
        tokio::spawn(async move {
            while let Some(event) = received.recv().await {
                let Some(cache) = weak.upgrade() else {
                    return;
                };
                cache.on_feed(event);
            }
        });
        cache
    }

    fn on_feed(&self, event: FeedEvent) {
        match event {
            FeedEvent::Connected => self.connected.store(true, Ordering::SeqCst),
            FeedEvent::Disconnected { .. } => {
                self.connected.store(false, Ordering::SeqCst);
                // Updates may be missing from here on: no forming candle is trusted, and reads
                // waiting on the feed fetch instead.
                for slot in self.slots() {
                    lock(&slot.bars).forming = None;
                    slot.closed.notify_waiters();
                }
            }
            FeedEvent::Candle(candle) => {
                let Ok(interval) = candle.interval.parse::<Interval>() else {
                    return;
                };
                let slot = lock(&self.series)
                    .get(&(candle.coin.clone(), interval))
                    .cloned();
                if let Some(slot) = slot {
                    lock(&slot.bars).update(interval, candle.to_bar());
                    // Woken, a waiting read is served or learns that the feed cannot serve
                    // it (a gap).
                    slot.closed.notify_waiters();
                }
            }
        }
    }

    fn slots(&self) -> Vec<Arc<Slot>> {
        lock(&self.series).values().cloned().collect()
    }

    fn slot(&self, symbol: &str, interval: Interval) -> Arc<Slot> {
        let mut series = lock(&self.series);
        if let Some(slot) = series.get(&(symbol.to_owned(), interval)) {
            return slot.clone();
        }
        let slot = Arc::new(Slot {
            interval,
            bars: Mutex::new(Series::default()),
            fetch: tokio::sync::Mutex::new(()),
            closed: tokio::sync::Notify::new(),
        });
        series.insert((symbol.to_owned(), interval), slot.clone());
        if let Some(feed) = &self.feed {
            feed.subscribe(symbol, interval);
        }
        slot
    }

    /// `symbol`'s bars of `interval` holding at least the `n` latest closed by `at` (fewer only
    /// where the exchange's history is shorter), oldest first; the series may hold later bars,
    /// which the caller must not show a tick at `at` (`Preloaded::insert_shared_bars` drops
    /// them). `now` is the wall-clock time, at or after `at`: what a fetch asks up to.
    ///
    /// # Errors
    /// [`RunError::Market`] when a needed `candleSnapshot` fails.
    pub async fn closed_bars(
        &self,
        symbol: &str,
        interval: Interval,
        n: usize,
        at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<Arc<[Bar]>, RunError> {
        let n = n.min(usize::try_from(MAX_CANDLES).unwrap_or(usize::MAX));
        let slot = self.slot(symbol, interval);
        {
            let mut series = lock(&slot.bars);
            series.depth = series.depth.max(n);
            if series.serves(interval, n, at) {
                self.metrics.market_read("cached");
                return Ok(series.bars.clone());
            }
        }
        if self.feed.is_some() && self.wait_for_feed(&slot, n, at).await {
            self.metrics.market_read("feed");
            return Ok(lock(&slot.bars).bars.clone());
        }
        // Single-flight: one fetch of the series at a time; a read that waited for another's
        // is served by it.
        let _fetching = slot.fetch.lock().await;
        {
            let series = lock(&slot.bars);
            if series.serves(interval, n, at) {
                self.metrics.market_read("cached");
                return Ok(series.bars.clone());
            }
        }
        self.fetch(symbol, &slot, n, at.max(now)).await?;
        self.metrics.market_read("fetched");
        Ok(lock(&slot.bars).bars.clone())
    }

    /// Waits (up to the grace) for the feed to close the bars a read of `n` bars at `at`
    /// lacks; false when it cannot or did not.
    async fn wait_for_feed(&self, slot: &Slot, n: usize, at: DateTime<Utc>) -> bool {
        let deadline = tokio::time::Instant::now() + self.grace;
        loop {
            let closed = slot.closed.notified();
            tokio::pin!(closed);
            closed.as_mut().enable();
            {
                let series = lock(&slot.bars);
                if series.serves(slot.interval, n, at) {
                    return true;
                }
                if !self.connected.load(Ordering::SeqCst)
                    || !series.feed_can_close(slot.interval, n, at)
                {
                    return false;
                }
            }
            if tokio::time::timeout_at(deadline, closed).await.is_err() {
                return false;
            }
        }
    }

    /// Fetches what the series lacks for a read of `n` bars at `now`: the bars since its last
    /// close when it is deep enough and that is fewer than a window, else the whole window.
    async fn fetch(
        &self,
        symbol: &str,
        slot: &Slot,
        n: usize,
        now: DateTime<Utc>,
    ) -> Result<(), RunError> {
        let interval = slot.interval;
        let (since, want) = {
            let series = lock(&slot.bars);
            let window = series.depth.max(n);
            let since = series.through.filter(|t| {
                let missing = (now - *t).num_minutes() / interval.minutes().max(1);
                series.deep_enough(interval, n, *t)
                    && usize::try_from(missing).is_ok_and(|m| m <= window)
            });
            (since, window.saturating_add(2))
        };
        let kind = if since.is_some() {
            Fetch::Update
        } else {
            Fetch::Backfill
        };
        let (fetched, exhausted) = match since {
            // From the first bar not held (its open time is the last close).
            Some(from) => {
                self.metrics.market_request("update");
                (
                    closed_candles(&self.info, symbol, interval, from, now).await?,
                    None,
                )
            }
            None => {
                let want = i64::try_from(want).unwrap_or(MAX_CANDLES).min(MAX_CANDLES);
                let (bars, exhausted, requests) =
                    last_closed_candles(&self.info, symbol, interval, want, now).await?;
                for _ in 0..requests {
                    self.metrics.market_request("backfill");
                }
                (bars, Some(exhausted))
            }
        };
        let mut series = lock(&slot.bars);
        match kind {
            Fetch::Update => series.merge(fetched),
            Fetch::Backfill => {
                // The window replaces what was held before it; later bars the feed closed stay.
                let first = fetched.first().map(|b| b.time);
                let kept: Vec<Bar> = series
                    .bars
                    .iter()
                    .filter(|b| first.is_some_and(|f| b.time >= f))
                    .cloned()
                    .collect();
                series.bars = kept.into();
                series.merge(fetched);
                series.exhausted = exhausted.unwrap_or(false);
            }
        }
        let through = last_close_at_or_before(now, interval);
        series.through = Some(series.through.map_or(through, |t| t.max(through)));
        Ok(())
    }
}

/// The lock's value, whether or not a thread panicked holding it (every change to it is made
/// in one assignment).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal::Decimal;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().to_utc()
    }

    fn bar(time: DateTime<Utc>, close: i64) -> Bar {
        Bar {
            time,
            open: Decimal::from(close),
            high: Decimal::from(close),
            low: Decimal::from(close),
            close: Decimal::from(close),
            volume: Decimal::ONE,
        }
    }

    #[test]
    fn the_feed_closes_a_bar_when_the_next_opens_and_leaves_gaps_to_repair() {
        let iv = Interval::H1;
        let h = |k: i64| t("2026-06-10T00:00:00Z") + chrono::Duration::hours(k);
        let mut s = Series {
            through: Some(h(2)),
            depth: 2,
            ..Series::default()
        };
        s.merge(vec![bar(h(0), 100), bar(h(1), 101)]);
        // Updates of the candle opening at 02:00: nothing closes.
        assert!(!s.update(iv, bar(h(2), 1)));
        assert!(!s.update(iv, bar(h(2), 102)));
        assert!(!s.update(iv, bar(h(1), 999)), "an older candle is ignored");
        assert!(!s.serves(iv, 2, h(3)));
        assert!(s.feed_can_close(iv, 2, h(3)));
        // The 03:00 candle opens: 02:00's last update is its close.
        assert!(s.update(iv, bar(h(3), 103)));
        assert!(s.serves(iv, 3, h(3)));
        assert_eq!(s.bars.last().unwrap().close, Decimal::from(102));
        assert_eq!(s.through, Some(h(3)));
        // 04:00's updates were missed: 05:00 opens after a gap. 03:00 is closed by it, but
        // 04:00 is missing, so the feed can no longer close what a read at 05:00 needs.
        assert!(s.update(iv, bar(h(5), 105)));
        assert_eq!(s.bars.len(), 4);
        assert_eq!(s.through, Some(h(4)));
        assert!(!s.serves(iv, 2, h(5)));
        assert!(!s.feed_can_close(iv, 2, h(5)));
    }

    #[test]
    fn a_series_keeps_its_depth_plus_the_margin() {
        let at = |k: i64| t("2026-06-10T00:00:00Z") + chrono::Duration::minutes(5 * k);
        let mut s = Series {
            depth: 10,
            exhausted: true,
            ..Series::default()
        };
        let n = i64::try_from(10 + 2 * MARGIN).unwrap();
        s.merge((0..n).map(|k| bar(at(k), k)).collect());
        assert_eq!(s.bars.len(), 10 + 2 * MARGIN, "within the slack: kept");
        s.merge(vec![bar(at(n), n)]);
        assert_eq!(s.bars.len(), 10 + MARGIN);
        assert_eq!(s.bars.last().unwrap().time, at(n));
        assert!(
            !s.exhausted,
            "the history held no longer starts at the exchange's"
        );
        // A merge out of order replaces by open time.
        s.merge(vec![bar(at(n), -1), bar(at(n - 1), -2)]);
        assert_eq!(s.bars.len(), 10 + MARGIN);
        assert_eq!(s.bars.last().unwrap().close, Decimal::from(-1));
    }
}
