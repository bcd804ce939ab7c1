//! Point in time bar windows: the bars that closed by the tick time.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use tools::{BarsWindow, DataError, MarketData, SeriesOrigin, ToolContext};
use types::{Bar, Interval};

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
    closed_bars_window_in(&*ctx.market, ctx.now, symbol, interval, limit)
}

/// [`closed_bars_window`] of `market` at `now`, without a [`ToolContext`] (for work done off the
/// tick's path on what the tick read: the same bars, read again from the same source).
///
/// # Errors
/// [`DataError`] when the market-data source fails.
pub fn closed_bars_window_in<'a>(
    market: &'a dyn MarketData,
    now: DateTime<Utc>,
    symbol: &str,
    interval: Interval,
    limit: usize,
) -> Result<BarsWindow<'a>, DataError> {
    let BarsWindow { bars, origin } = market.bars_window(symbol, interval, now, limit)?;
    // Closed by `now` ⇔ opened by `now − interval` (one subtraction instead of one addition per
    // bar).
    let Some(latest_open) = now.checked_sub_signed(interval.duration()) else {
        return Ok(BarsWindow {
            bars: Cow::Borrowed(&[]),
            origin: None,
        });
    };
    // A window with an origin is a run of a series, sorted with one bar per open time by the
    // origin's contract ([`SeriesOrigin`]): not checked again bar by bar (≈1k instructions
    // for a 400-bar window, on every read of the tick and of the outcome memory's writer).
    debug_assert!(origin.is_none() || bars.is_sorted_by(|a, b| a.time < b.time));
    if origin.is_some() || bars.is_sorted_by(|a, b| a.time < b.time) {
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

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use chrono::Utc;

    use super::*;
    use crate::context::test_bar as bar;

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
