//! The market data of a tick: Hyperliquid candles, closed bars only, and the event calendar
//! and the news from the store.

use chrono::{DateTime, Duration, Utc};
use db::{EventStore, NewsStore};
use hyperliquid::InfoClient;
use skill_schema::Skill;
use tools::Preloaded;
use types::{Interval, MarketEvent};

use super::RunError;
use crate::schedule::bar_length;

/// Most candles asked for in one candleSnapshot request (the exchange serves at most 5000).
const MAX_CANDLES: i64 = 5000;

/// `symbol`'s candles of `interval` from `start` that closed at or before `now` (the forming
/// one is dropped).
pub(crate) async fn closed_candles(
    info: &InfoClient,
    symbol: &str,
    interval: Interval,
    start: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<Vec<types::Bar>, RunError> {
    let bars = info
        .candle_snapshot(symbol, interval, start, now)
        .await
        .map_err(|source| RunError::Market {
            symbol: symbol.to_owned(),
            interval: interval.as_str(),
            source,
        })?;
    Ok(bars
        .into_iter()
        .filter(|b| b.close_time(interval) <= now)
        .collect())
}

/// The closed bars a tick at `tick_at` needs: the skill's lookback (and every bar since the
/// last tick, for MFE/MAE and the paper broker, and the bars the outcome memory's indicators
/// read, `outcomes::bars_needed`, so a live market snapshot is computed over the bars a backtest
/// would use) at its interval, the lookback at each higher timeframe. Bars closing after
/// `tick_at` (the forming one) are dropped.
pub(super) async fn fetch_market(
    info: &InfoClient,
    skill: &Skill,
    tick_at: DateTime<Utc>,
    last_tick_at: Option<DateTime<Utc>>,
) -> Result<Preloaded, RunError> {
    let interval = skill.context.bars_interval;
    let lookback = i64::from(skill.context.bars_lookback.max(1));
    let since = last_tick_at
        .map(|l| (tick_at - l).num_minutes() / interval.minutes().max(1))
        .unwrap_or(0)
        .max(0);
    let mut market = Preloaded::new();
    let indicators = i64::try_from(outcomes::bars_needed(interval)).unwrap_or(MAX_CANDLES);
    let mut wanted: Vec<(Interval, i64)> = vec![(interval, lookback.max(since).max(indicators))];
    for h in skill.context.effective_higher_timeframes() {
        wanted.push((h, lookback));
    }
    for symbol in &skill.context.symbols {
        for (iv, n) in &wanted {
            let n = (n + 2).min(MAX_CANDLES);
            let start = tick_at - bar_length(*iv) * i32::try_from(n).unwrap_or(i32::MAX);
            let closed = closed_candles(info, symbol, *iv, start, tick_at).await?;
            market.insert_bars(symbol, *iv, closed);
        }
    }
    Ok(market)
}

/// The calendar a tick at `tick_at` may show: the stored events scheduled within the skill's
/// lookahead (`(tick_at, tick_at + lookaheadHours]`) at or above its importance floor; none
/// when the skill's events are off. The kinds and symbols are filtered where the section is
/// written (`agent_runtime`), as for every other calendar.
pub(super) async fn load_events<S: EventStore + Sync>(
    store: &S,
    skill: &Skill,
    tick_at: DateTime<Utc>,
) -> Result<Vec<MarketEvent>, RunError> {
    let cfg = &skill.context.events;
    if !cfg.enabled {
        return Ok(Vec::new());
    }
    let until = tick_at + Duration::hours(i64::from(cfg.lookahead_hours));
    let mut events = store
        .events_between(tick_at, until, Some(cfg.min_importance))
        .await?;
    events.retain(|e| e.scheduled_at > tick_at);
    Ok(events)
}

/// The widest window `fetch_news_sentiment` may ask for, in hours, and its largest top K.
const TOOL_NEWS_HOURS: i64 = 168;
const TOOL_NEWS_TOP_K: u32 = 50;

/// The headlines a tick at `tick_at` may see, point in time: published in the window *and*
/// fetched by this runner at or before `tick_at` (an item published at 11:30 but first fetched
/// at 12:10 was unknown to the 12:00 tick; without the second condition a retried or replayed
/// 12:00 tick would show it, and a feed that backfills old items would leak them into the past).
/// Two reads: the skill's News section window (`newsLookbackHours`, `newsTopK`) and the widest
/// `fetch_news_sentiment` window (168 h, top 50); the tool answers from their union.
pub(super) async fn load_news<S: NewsStore + Sync>(
    store: &S,
    skill: &Skill,
    tick_at: DateTime<Utc>,
) -> Result<Vec<tools::NewsItem>, RunError> {
    let symbols = &skill.context.symbols;
    let lookback = Duration::hours(i64::from(skill.context.news_lookback_hours));
    let top_k = skill.context.news_top_k.min(db::MAX_NEWS_READ);
    let mut items = store
        .news_window(symbols, tick_at - lookback, tick_at, tick_at, top_k)
        .await?;
    let wide = store
        .news_window(
            symbols,
            tick_at - Duration::hours(TOOL_NEWS_HOURS),
            tick_at,
            tick_at,
            TOOL_NEWS_TOP_K,
        )
        .await?;
    for n in wide {
        if !items.iter().any(|i| i.id == n.id) {
            items.push(n);
        }
    }
    Ok(items
        .into_iter()
        .map(|n| tools::NewsItem {
            time: n.published_at,
            headline: n.title,
            source: n.source,
            sentiment: n.sentiment,
            importance: n.importance,
            symbols: n.symbols,
        })
        .collect())
}
