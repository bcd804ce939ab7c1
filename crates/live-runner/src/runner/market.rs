//! The market data of a tick: Hyperliquid candles, closed bars only, funding and open interest
//! (for a skill that whitelists the derivatives tools), and the event calendar and the news from
//! the store.

use chrono::{DateTime, Duration, Utc};
use db::{EventStore, NewsStore};
use hyperliquid::InfoClient;
use skill_schema::Skill;
use tools::Preloaded;
use types::{Interval, MarketEvent};

use super::RunError;
use super::candles::CandleCache;
use crate::schedule::{bar_length, last_close_at_or_before};

/// Most candles asked for in one candleSnapshot request (the exchange serves at most 5000).
pub(crate) const MAX_CANDLES: i64 = 5000;

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

/// The closed bars a tick at `tick_at` needs, read from the runner's candle cache (shared with
/// every other tick of the same symbols, not copied): the skill's lookback (and every bar since
/// the last tick, for MFE/MAE and the paper broker, and the bars the outcome memory's indicators
/// read, `outcomes::bars_needed`, so a live market snapshot is computed over the bars a backtest
/// would use) at its interval, the lookback at each higher timeframe. The source holds no bar
/// closing after `tick_at` (the forming one included). `now` is the wall-clock time.
pub(super) async fn fetch_market(
    candles: &CandleCache,
    skill: &Skill,
    tick_at: DateTime<Utc>,
    last_tick_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
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
            let n = usize::try_from((n + 2).min(MAX_CANDLES)).unwrap_or(0);
            let bars = candles.closed_bars(symbol, *iv, n, tick_at, now).await?;
            market.insert_shared_bars(symbol, *iv, bars, tick_at);
        }
    }
    Ok(market)
}

/// At least `n` of `symbol`'s latest closed candles of `interval` at `now` (by count, not by
/// calendar time): the span of `n` bar lengths up to the last close is asked first and, when an exchange gap left
/// fewer candles in it, widened (doubled, up to [`MAX_CANDLES`] bar lengths) until the count is
/// there or the history ends (a wider span brings no more) — so right after a gap the table
/// shows the bars a backtest of the same bars shows, not only those since the gap. Also
/// whether the history ended short of `n`, and how many requests it took.
pub(crate) async fn last_closed_candles(
    info: &InfoClient,
    symbol: &str,
    interval: Interval,
    n: i64,
    now: DateTime<Utc>,
) -> Result<(Vec<types::Bar>, bool, usize), RunError> {
    let len = bar_length(interval);
    // Spans end at the last close, so a span of `n` bar lengths holds `n` closed bars.
    let last = last_close_at_or_before(now, interval);
    let start_for = |span: i64| last - len * i32::try_from(span).unwrap_or(i32::MAX);
    let mut span = n.max(1);
    let mut closed = closed_candles(info, symbol, interval, start_for(span), now).await?;
    let mut requests = 1;
    let count = |bars: &[types::Bar]| i64::try_from(bars.len()).unwrap_or(i64::MAX);
    while count(&closed) < n && span < MAX_CANDLES {
        span = (span * 2).min(MAX_CANDLES);
        let wider = closed_candles(info, symbol, interval, start_for(span), now).await?;
        requests += 1;
        let grew = wider.len() > closed.len();
        closed = wider;
        if !grew {
            break;
        }
    }
    let short = count(&closed) < n;
    Ok((closed, short, requests))
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

/// Most funding prints `get_funding_rate` may ask for (its `limit` bound): the hours of
/// funding history fetched per symbol.
const FUNDING_HISTORY_HOURS: i64 = 168;

/// Funding and open interest for a tick at `tick_at` of a skill that whitelists
/// `get_funding_rate` or `get_open_interest`, from the info endpoint:
/// - `fundingHistory` of each symbol over the last [`FUNDING_HISTORY_HOURS`] hours up to the
///   tick; a print stamped after `tick_at` is dropped;
/// - `metaAndAssetCtxs` once: each symbol's open interest (base units, and in USD at the mark
///   price), observed when fetched (`observed_at`, seconds after the bar close) and stamped at
///   the tick it is fetched for. An observation more than one bar after the tick (a tick run
///   late) belongs to a later bar and is dropped.
///
/// A failing request fails nothing: it is logged and its data is left out. `None` when every
/// request failed: the tick then runs without a derivatives source (the section says
/// "unknown", the tools answer that there is no data).
pub(super) async fn fetch_derivatives(
    info: &InfoClient,
    skill: &Skill,
    tick_at: DateTime<Utc>,
    observed_at: DateTime<Utc>,
) -> Option<Preloaded> {
    let mut out = Preloaded::new();
    let mut answered = false;
    let start = tick_at - Duration::hours(FUNDING_HISTORY_HOURS);
    for symbol in &skill.context.symbols {
        match info.funding_history(symbol, start, Some(tick_at)).await {
            Ok(prints) => {
                answered = true;
                let mut prints: Vec<_> = prints
                    .into_iter()
                    .filter(|p| p.time <= tick_at && p.coin == *symbol)
                    .collect();
                prints.sort_by_key(|p| p.time);
                // Hyperliquid pays hourly; the period of a print is its gap to the previous.
                let mut previous: Option<DateTime<Utc>> = None;
                let rates = prints
                    .into_iter()
                    .map(|p| {
                        let hours = previous
                            .map_or(1, |t| ((p.time - t).num_minutes() + 30) / 60)
                            .max(1);
                        previous = Some(p.time);
                        tools::FundingRate {
                            time: p.time,
                            rate: p.funding_rate,
                            period_hours: u32::try_from(hours).unwrap_or(u32::MAX),
                        }
                    })
                    .collect();
                out.funding.insert(symbol.clone(), rates);
            }
            Err(e) => {
                tracing::warn!(%symbol, %tick_at, error = %e, "fundingHistory failed: the tick has no funding for it");
            }
        }
    }
    let late = observed_at - tick_at;
    if late < Duration::zero() || late > bar_length(skill.context.bars_interval) {
        tracing::warn!(%tick_at, %observed_at, "open interest observed too far from the tick: left out");
    } else {
        match info.meta_and_asset_ctxs().await {
            Ok(meta) => {
                answered = true;
                for symbol in &skill.context.symbols {
                    let Some(ctx) = meta.ctx(symbol) else {
                        tracing::warn!(%symbol, "metaAndAssetCtxs lists no such asset");
                        continue;
                    };
                    let Some(oi_usd) = ctx.open_interest.checked_mul(ctx.mark_px) else {
                        continue;
                    };
                    out.open_interest.insert(
                        symbol.clone(),
                        vec![tools::OpenInterestPoint {
                            time: tick_at,
                            oi_base: ctx.open_interest,
                            oi_usd,
                        }],
                    );
                }
            }
            Err(e) => {
                tracing::warn!(%tick_at, error = %e, "metaAndAssetCtxs failed: the tick has no open interest");
            }
        }
    }
    answered.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

    /// Hourly candles over the asked span, none in `[gap_from, gap_to)` (open times, ms).
    struct Gapped {
        gap_from: i64,
        gap_to: i64,
    }

    impl Respond for Gapped {
        fn respond(&self, request: &Request) -> ResponseTemplate {
            let body: Value = serde_json::from_slice(&request.body).expect("json body");
            let (start, end) = (
                body["req"]["startTime"].as_i64().expect("start"),
                body["req"]["endTime"].as_i64().expect("end"),
            );
            let len = 3_600_000;
            let mut open = (start + len - 1).div_euclid(len) * len;
            let mut candles = Vec::new();
            while open <= end {
                if !(self.gap_from..self.gap_to).contains(&open) {
                    candles.push(
                        json!({"t": open, "T": open + len - 1, "s": "BTC", "i": "1h",
                        "o": "100", "c": "101", "h": "102", "l": "99", "v": "1", "n": 1}),
                    );
                }
                open += len;
            }
            ResponseTemplate::new(200).set_body_json(candles)
        }
    }

    #[tokio::test]
    async fn after_an_exchange_gap_the_latest_bars_are_fetched_by_count() {
        let now = DateTime::parse_from_rfc3339("2026-06-10T12:00:00Z")
            .unwrap()
            .to_utc();
        let hour = 3_600_000;
        let now_ms = now.timestamp_millis();
        // The exchange was down for the 40 hours before the last 14.
        let gap = Gapped {
            gap_from: now_ms - 54 * hour,
            gap_to: now_ms - 14 * hour,
        };
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/info"))
            .respond_with(gap)
            .mount(&server)
            .await;
        let info = InfoClient::new(&hyperliquid::ClientConfig::new(server.uri())).unwrap();
        let (bars, short, _) = last_closed_candles(&info, "BTC", Interval::H1, 62, now)
            .await
            .unwrap();
        assert!(!short);
        // 62 asked: 14 after the gap in the first span, the widened span reaches past it.
        assert!(bars.len() >= 62, "{} bars", bars.len());
        assert_eq!(bars.last().unwrap().close_time(Interval::H1), now);
        let requests = server.received_requests().await.unwrap();
        assert_eq!(requests.len(), 2, "one widening");

        // A history shorter than asked: the widening stops when nothing more comes.
        let young = Gapped {
            gap_from: 0,
            gap_to: now_ms - 30 * hour,
        };
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/info"))
            .respond_with(young)
            .mount(&server)
            .await;
        let info = InfoClient::new(&hyperliquid::ClientConfig::new(server.uri())).unwrap();
        let (bars, short, requests) = last_closed_candles(&info, "BTC", Interval::H1, 62, now)
            .await
            .unwrap();
        assert_eq!(bars.len(), 30);
        assert!(short, "the history ends short of the count");
        assert_eq!(requests, 2);
        assert_eq!(server.received_requests().await.unwrap().len(), 2);
    }
}
