//! The market data of a tick: Hyperliquid candles, closed bars only, and the event calendar
//! from the store.

use chrono::{DateTime, Duration, Utc};
use db::EventStore;
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
