//! The runner's candle cache: one series per (symbol, interval) shared by every tick, so the
//! requests to the exchange grow with the symbols, not with the deployments (#48 item 1). A
//! mock Hyperliquid counts the `candleSnapshot` requests; a mock WebSocket server feeds candle
//! updates, drops some and closes connections.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use db::TickStore;
use hyperliquid::{ClientConfig, InfoClient};
use live_runner::admin::{self, DeployRequest};
use live_runner::metrics::Metrics;
use live_runner::runner::candles::CandleCache;
use live_runner::runner::{MarketFeed, Runner, RunnerConfig, WsFeed, default_resolver};
use live_runner::test_support::paper_deploy;
use serde_json::Value;
use types::Interval;
use uuid::Uuid;
use wiremock::MockServer;

use crate::common::ws::{WsMock, ws_mock};
use crate::common::{self, hyperliquid_mock, mock_bars, mock_candle, postgres, t};

/// `candleSnapshot` requests the mock received, by `coin interval`.
async fn candle_requests(hl: &MockServer) -> BTreeMap<String, usize> {
    let mut by_series = BTreeMap::new();
    for r in hl.received_requests().await.expect("recorded") {
        let body: Value = serde_json::from_slice(&r.body).expect("json");
        if body["type"] == "candleSnapshot" {
            let key = format!(
                "{} {}",
                body["req"]["coin"].as_str().unwrap_or(""),
                body["req"]["interval"].as_str().unwrap_or("")
            );
            *by_series.entry(key).or_default() += 1;
        }
    }
    by_series
}

/// The difference of two request counts, series by series.
fn since(
    after: &BTreeMap<String, usize>,
    before: &BTreeMap<String, usize>,
) -> BTreeMap<String, usize> {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0)))
        .filter(|(_, v)| *v > 0)
        .collect()
}

/// A clock the test moves.
struct MovingClock(std::sync::Mutex<DateTime<Utc>>);

impl types::Clock for MovingClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().expect("clock")
    }
}

impl MovingClock {
    fn set(&self, to: DateTime<Utc>) {
        *self.0.lock().expect("clock") = to;
    }
}

async fn runner_on(
    pg: &common::Pg,
    hl: &MockServer,
    clock: Arc<MovingClock>,
    concurrency: usize,
    feed: MarketFeed,
) -> Arc<Runner> {
    let info = InfoClient::new(&ClientConfig::new(hl.uri())).expect("info client");
    let mut config = RunnerConfig::new(format!("cache:{}", Uuid::new_v4()));
    config.concurrency = concurrency;
    config.once = true;
    Arc::new(
        Runner::new(
            pg.store.clone(),
            info,
            clock,
            default_resolver(),
            Metrics::default(),
            config,
        )
        .await
        .expect("runner")
        .with_market_feed(feed),
    )
}

fn skill() -> skill_schema::Skill {
    admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).expect("test skill")
}

/// The skill on `symbol` instead of BTC.
fn skill_on(symbol: &str) -> skill_schema::Skill {
    let mut s = skill();
    s.name = format!("{symbol} 1h moving-average cross");
    s.context.symbols = vec![symbol.to_owned()];
    s.risk.allowed_symbols = vec![symbol.to_owned()];
    s.context.memory.reference_symbol = symbol.to_owned();
    s
}

const SYMBOLS: [&str; 10] = [
    "BTC", "ETH", "SOL", "AVAX", "DOGE", "LINK", "ARB", "OP", "SUI", "APT",
];

/// 200 deployments over 10 symbols, all due at one bar close: one runner makes one backfill
/// per symbol and interval at the first close and one update per symbol at the next, and the
/// deployments of one symbol are shown the same market.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_bar_close_of_200_deployments_over_10_symbols_makes_a_few_requests_per_symbol() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    // 09:00 and 10:00 close no 4h or daily bar.
    let first = t("2026-06-04T09:00:00Z");
    let mut by_symbol: BTreeMap<&str, Vec<Uuid>> = BTreeMap::new();
    for (i, symbol) in SYMBOLS.iter().cycle().take(200).enumerate() {
        let req = DeployRequest {
            id: Some(Uuid::from_u128(0xcace_0000 + i as u128)),
            ..paper_deploy(Uuid::from_u128(0x0a11ce))
        };
        let d = admin::deploy(
            &pg.store,
            &skill_on(symbol),
            &req,
            first - chrono::Duration::minutes(30),
        )
        .await
        .expect("deploy");
        by_symbol.entry(symbol).or_default().push(d.id);
    }
    let clock = Arc::new(MovingClock(std::sync::Mutex::new(
        first + chrono::Duration::seconds(1),
    )));
    let r = runner_on(&pg, &hl, clock.clone(), 50, MarketFeed::Rest).await;
    r.clone().run(std::future::pending()).await.expect("run");
    assert_eq!(r.metrics().ticks("recorded"), 200);
    let first_close = candle_requests(&hl).await;
    // Each symbol's 1h, 4h and 1d series, backfilled once each.
    let series: Vec<String> = first_close.keys().cloned().collect();
    assert_eq!(series.len(), 30, "{series:?}");
    for (key, n) in &first_close {
        assert_eq!(*n, 1, "{key}: {n} requests");
    }
    assert_eq!(r.metrics().market_requests("backfill"), 30);

    // The next close: one update of each symbol's hourly series; 4h and 1d are served as
    // they stand.
    clock.set(first + chrono::Duration::hours(1) + chrono::Duration::seconds(1));
    r.clone().run(std::future::pending()).await.expect("run");
    assert_eq!(r.metrics().ticks("recorded"), 400);
    let next_close = since(&candle_requests(&hl).await, &first_close);
    let expected: BTreeMap<String, usize> =
        SYMBOLS.iter().map(|s| (format!("{s} 1h"), 1)).collect();
    assert_eq!(next_close, expected);
    assert_eq!(r.metrics().market_requests("update"), 10);

    // The deployments of one symbol saw one market: the same user message.
    for ids in by_symbol.values() {
        let mut contexts = Vec::new();
        for id in [ids[0], ids[ids.len() - 1]] {
            let s = pg.store.list_snapshots(id, 10).await.expect("snapshots");
            let latest = s.iter().max_by_key(|s| s.tick_at).expect("a tick");
            assert_eq!(latest.tick_at, first + chrono::Duration::hours(1));
            contexts.push(latest.context.clone());
        }
        assert_eq!(contexts[0], contexts[1]);
    }
}

/// Concurrent reads of one series at one bar close share one in-flight fetch and the series
/// it fetched (no copy); the next close's reads share one update.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_reads_of_one_series_share_one_fetch() {
    let hl = common::slow_hyperliquid_mock(Duration::from_millis(300)).await;
    let info = InfoClient::new(&ClientConfig::new(hl.uri())).expect("info client");
    let cache = CandleCache::new(info, Metrics::default(), MarketFeed::Rest);
    let at = t("2026-06-10T12:00:00Z");
    let read = |at: DateTime<Utc>| {
        let cache = cache.clone();
        tokio::spawn(async move { cache.closed_bars("BTC", Interval::H1, 100, at, at).await })
    };
    let reads: Vec<_> = (0..50).map(|_| read(at)).collect();
    let mut series = Vec::new();
    for r in reads {
        series.push(r.await.expect("task").expect("bars"));
    }
    assert_eq!(candle_requests(&hl).await.get("BTC 1h"), Some(&1));
    assert!(
        series.iter().all(|s| Arc::ptr_eq(s, &series[0])),
        "one series"
    );
    let expected = mock_bars(Interval::H1, at - chrono::Duration::hours(102), at);
    assert_eq!(&series[0][..], &expected[..]);

    let next = at + chrono::Duration::hours(1);
    let reads: Vec<_> = (0..50).map(|_| read(next)).collect();
    for r in reads {
        let bars = r.await.expect("task").expect("bars");
        assert_eq!(
            bars.last().expect("bars").time,
            at,
            "the bar closing at 13:00"
        );
    }
    assert_eq!(candle_requests(&hl).await.get("BTC 1h"), Some(&2));
}

/// The cache fed by `ws`, backfilling and repairing over `hl`.
fn ws_cache(hl: &MockServer, ws: &WsMock, grace: Duration) -> (Arc<CandleCache>, Metrics) {
    let info = InfoClient::new(&ClientConfig::new(hl.uri())).expect("info client");
    let metrics = Metrics::default();
    let feed = MarketFeed::Ws(WsFeed {
        grace,
        ..WsFeed::new(ws.url.clone())
    });
    (CandleCache::new(info, metrics.clone(), feed), metrics)
}

const HOUR_MS: i64 = 3_600_000;

/// An update of BTC's hourly candle opening at `open`: its last (the mock exchange's candle),
/// or an earlier one whose close is off.
fn btc_update(open: DateTime<Utc>, last: bool) -> Value {
    let mut c = mock_candle("BTC", "1h", open.timestamp_millis(), HOUR_MS);
    if !last {
        c["c"] = Value::String("1".to_owned());
    }
    c
}

/// The WebSocket feed closes a bar when the next candle opens (its last update appended, no
/// request); a candle whose updates were dropped, a lost connection and a feed that stays
/// silent past the grace are each repaired with one `candleSnapshot` update — and every read
/// holds the exchange's bars, without a gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_websocket_feed_closes_bars_and_missed_updates_are_repaired_over_rest() {
    let hl = hyperliquid_mock().await;
    let ws = ws_mock().await;
    let (cache, metrics) = ws_cache(&hl, &ws, Duration::from_millis(500));
    let h = |k: i64| t("2026-06-10T12:00:00Z") + chrono::Duration::hours(k);
    let read = |k: i64| {
        let cache = cache.clone();
        async move {
            let bars = cache
                .closed_bars("BTC", Interval::H1, 40, h(k), h(k))
                .await
                .expect("bars");
            let expected = mock_bars(Interval::H1, h(k) - chrono::Duration::hours(42), h(k));
            assert_eq!(
                &bars[bars.len() - 40..],
                &expected[expected.len() - 40..],
                "at {k}h"
            );
            assert_eq!(
                bars.last().expect("bars").time,
                h(k - 1),
                "no bar after {k}h"
            );
        }
    };
    let requests = || async {
        candle_requests(&hl)
            .await
            .get("BTC 1h")
            .copied()
            .unwrap_or(0)
    };

    // The first read backfills (and subscribes).
    read(0).await;
    assert_eq!(requests().await, 1);
    ws.subscribed(1).await;
    assert_eq!(ws.subscriptions(), vec!["BTC 1h".to_owned()]);

    // 12:00's updates, then 13:00's first: 12:00 is closed by the feed.
    ws.candle(&btc_update(h(0), false));
    ws.candle(&btc_update(h(0), true));
    ws.candle(&btc_update(h(1), false));
    read(1).await;
    assert_eq!(requests().await, 1, "served by the feed");
    assert_eq!(
        metrics.market_reads("feed") + metrics.market_reads("cached"),
        1
    );

    // 13:00's last update; every update of 14:00 dropped; 15:00 opens. 13:00 is closed, 14:00
    // is missing: one update request repairs it.
    ws.candle(&btc_update(h(1), true));
    ws.candle(&btc_update(h(3), false));
    read(3).await;
    assert_eq!(requests().await, 2, "one repair");
    assert_eq!(metrics.market_requests("update"), 1);

    // The connection is lost while 15:00 forms: its updates cannot be trusted, the feed
    // reconnects and subscribes again, and 16:00 opening does not close 15:00 — a repair does.
    ws.close_all();
    ws.subscribed(2).await;
    assert_eq!(
        ws.subscriptions(),
        vec!["BTC 1h".to_owned(), "BTC 1h".to_owned()]
    );
    ws.candle(&btc_update(h(4), false));
    read(4).await;
    assert_eq!(requests().await, 3);

    // 16:00's updates come, 17:00's never do: after the grace the read fetches.
    ws.candle(&btc_update(h(4), true));
    let waited = std::time::Instant::now();
    read(5).await;
    assert!(waited.elapsed() >= Duration::from_millis(500));
    assert_eq!(requests().await, 4);
    assert_eq!(metrics.market_reads("fetched"), 4);
}

/// A runner restarted mid-bar rebuilds its cache: the first tick after the restart backfills,
/// the next is served by the WebSocket feed, and what the model is shown at each tick is what
/// a backtest of the same bars shows (no bar missing, none twice, none forming).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_runner_restarted_mid_bar_rebuilds_its_cache_without_a_gap() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let ws = ws_mock().await;
    let skill = skill();
    let first = t("2026-06-04T09:00:00Z");
    let d = admin::deploy(
        &pg.store,
        &skill,
        &DeployRequest {
            id: Some(Uuid::from_u128(0x5e5)),
            ..paper_deploy(Uuid::from_u128(0x0a11ce))
        },
        first - chrono::Duration::minutes(30),
    )
    .await
    .expect("deploy");
    let ws_feed = || {
        MarketFeed::Ws(WsFeed {
            grace: Duration::from_secs(5),
            ..WsFeed::new(ws.url.clone())
        })
    };

    // The runner before the restart ticks 09:00.
    let clock = Arc::new(MovingClock(std::sync::Mutex::new(first)));
    let before = runner_on(&pg, &hl, clock.clone(), 4, ws_feed()).await;
    before
        .clone()
        .run(std::future::pending())
        .await
        .expect("run");
    assert_eq!(before.metrics().ticks("recorded"), 1);
    drop(before);

    // Restarted at 09:30: the feed's first updates are of the candle forming then.
    let restarted_at = first + chrono::Duration::minutes(30);
    clock.set(restarted_at);
    let after = runner_on(&pg, &hl, clock.clone(), 4, ws_feed()).await;
    after
        .clone()
        .run(std::future::pending())
        .await
        .expect("run");
    let at_restart = candle_requests(&hl).await;
    clock.set(first + chrono::Duration::hours(1));
    after
        .clone()
        .run(std::future::pending())
        .await
        .expect("run");
    assert_eq!(after.metrics().ticks("recorded"), 1);
    assert!(after.metrics().market_requests("backfill") >= 1, "rebuilt");
    // 10:00 forms and closes on the feed (the restarted runner's three subscriptions after
    // the first runner's).
    ws.subscribed(6).await;
    ws.candle(&btc_update(first + chrono::Duration::hours(1), false));
    ws.candle(&btc_update(first + chrono::Duration::hours(1), true));
    ws.candle(&btc_update(first + chrono::Duration::hours(2), false));
    let before_11 = candle_requests(&hl).await;
    clock.set(first + chrono::Duration::hours(2));
    after
        .clone()
        .run(std::future::pending())
        .await
        .expect("run");
    assert_eq!(after.metrics().ticks("recorded"), 2);
    assert_eq!(
        since(&candle_requests(&hl).await, &before_11),
        BTreeMap::new(),
        "11:00 served by the feed"
    );
    assert!(since(&before_11, &at_restart).contains_key("BTC 1h"));

    // What the model saw at 09:00, 10:00 and 11:00 is what a backtest of the exchange's bars
    // shows.
    let mut live = pg.store.list_snapshots(d.id, 10).await.expect("live");
    live.sort_by_key(|s| s.tick_at);
    assert_eq!(live.len(), 3);
    let simulated = common::backtest_snapshots(&skill, first, 3).await;
    for (l, s) in live.iter().zip(&simulated) {
        assert_eq!(l.tick_at, s.tick_at);
        assert_eq!(
            l.system_prompt, s.system_prompt,
            "system prompt at {}",
            l.tick_at
        );
        assert_eq!(l.context, s.context, "user message at {}", l.tick_at);
    }
}
