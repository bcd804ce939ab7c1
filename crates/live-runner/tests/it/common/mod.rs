//! Test harness: a fresh PostgreSQL database per test (dropped afterwards) and a mock of
//! Hyperliquid's info endpoint serving `candleSnapshot` in the exchange's wire format.

#![allow(dead_code)]

pub(crate) mod hl_exchange;
pub(crate) mod openapi;
pub(crate) mod serve;
pub(crate) mod ws;

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use db::test_support::pg::TestDatabase;
use db::{PgStore, Store};
use live_runner::metrics::Metrics;
use live_runner::runner::{ModelResolver, Runner, RunnerConfig, default_resolver};
use serde_json::{Value, json};
use sqlx::Row;
use types::FixedClock;
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

pub(crate) const DB_PREFIX: &str = "live_runner_test_";

/// A migrated database of its own; dropped when the harness is.
pub(crate) struct Pg {
    pub store: Store,
    db: TestDatabase,
}

/// A fresh, migrated PostgreSQL database. Fails (never skips) when no server is reachable.
pub(crate) async fn postgres() -> Pg {
    let db = TestDatabase::create(DB_PREFIX, 16).await;
    let store = PgStore::from_pool(db.pool.clone())
        .await
        .expect("migrate test database");
    Pg {
        store: Store::Postgres(store),
        db,
    }
}

impl Pg {
    pub(crate) fn pool(&self) -> &sqlx::PgPool {
        &self.db.pool
    }

    /// A URL of the test database.
    pub(crate) fn url(&self) -> String {
        self.db.url()
    }

    pub(crate) async fn count(&self, sql: &str) -> i64 {
        sqlx::query(sql)
            .fetch_one(self.pool())
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .get::<i64, _>(0)
    }
}

/// A model that never answers: the runner holding it is stuck mid-tick.
pub(crate) struct Stuck;

#[async_trait::async_trait]
impl agent_runtime::LanguageModel for Stuck {
    fn id(&self) -> &str {
        "test/stuck"
    }
    async fn generate(
        &self,
        _: &agent_runtime::ModelRequest,
    ) -> Result<agent_runtime::ModelResponse, agent_runtime::ModelError> {
        std::future::pending().await
    }
}

/// A path relative to the repository root.
pub(crate) fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

pub(crate) fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The exchange's maximum leverage per coin from the recorded Hyperliquid `meta` (BTC and
/// ETH: 50).
pub(crate) fn exchange_max_leverage() -> std::collections::BTreeMap<String, rust_decimal::Decimal> {
    market_data::load_exchange_max_leverage(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../hyperliquid/tests/fixtures/meta.json"),
    )
    .expect("recorded meta")
}

pub(crate) fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .expect("time")
        .with_timezone(&Utc)
}

/// The mock's BTC price at `ms`: a triangle wave around 30,000 with a 12-hour period
/// (30,000 + 200 × |h mod 12 − 6| for the hour index h), so a 3/5 SMA cross fires every few
/// hours. Integers only: the prices are exact decimals on the wire.
pub(crate) fn price_at(ms: i64) -> i64 {
    let h = ms.div_euclid(3_600_000);
    30_000 + 200 * (h.rem_euclid(12) - 6).abs()
}

/// Answers `candleSnapshot` the way Hyperliquid does (see
/// crates/hyperliquid/tests/fixtures/candleSnapshot.json): an array of
/// `{"T","c","h","i","l","n","o","s","t","v"}` with prices as strings, one candle per open time
/// in `[startTime, endTime]`, including the bar still forming.
struct Candles;

impl Respond for Candles {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = match serde_json::from_slice(&request.body) {
            Ok(v) => v,
            Err(_) => return ResponseTemplate::new(400),
        };
        let req = &body["req"];
        let coin = req["coin"].as_str().unwrap_or("BTC").to_owned();
        let interval = req["interval"].as_str().unwrap_or("1h").to_owned();
        let len_ms: i64 = match interval.as_str() {
            "5m" => 300_000,
            "15m" => 900_000,
            "1h" => 3_600_000,
            "4h" => 14_400_000,
            "1d" => 86_400_000,
            "1w" => 604_800_000,
            _ => return ResponseTemplate::new(400),
        };
        let start = req["startTime"].as_i64().unwrap_or(0);
        let end = req["endTime"].as_i64().unwrap_or(0);
        let mut open = start.div_euclid(len_ms) * len_ms;
        if open < start {
            open += len_ms;
        }
        let mut candles = Vec::new();
        while open <= end {
            candles.push(mock_candle(&coin, &interval, open, len_ms));
            open += len_ms;
        }
        ResponseTemplate::new(200).set_body_json(Value::Array(candles))
    }
}

/// The candle of `coin` opening at `open` (ms) of `interval` (`len_ms` long) in the exchange's
/// wire format, as the mock serves it (and as the WebSocket mock's tests push its last update).
pub(crate) fn mock_candle(coin: &str, interval: &str, open: i64, len_ms: i64) -> Value {
    let (o, c) = mock_open_close(open, len_ms);
    json!({
        "T": open + len_ms - 1,
        "c": c.to_string(),
        "h": (o.max(c) + 10).to_string(),
        "i": interval,
        "l": (o.min(c) - 10).to_string(),
        "n": 100,
        "o": o.to_string(),
        "s": coin,
        "t": open,
        "v": "12.5",
    })
}

/// The mock's open and close of the candle opening at `open` (ms) of `len_ms`; its high and low
/// are 10 beyond them and its volume 12.5.
fn mock_open_close(open: i64, len_ms: i64) -> (i64, i64) {
    (price_at(open), price_at(open + len_ms))
}

/// The candles [`hyperliquid_mock`] serves for `interval`, as bars: every one opening in
/// `[from, to)` — the bars a backtest "of the same bars" reads.
pub(crate) fn mock_bars(
    interval: types::Interval,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Vec<types::Bar> {
    let len_ms = interval.minutes() * 60_000;
    let mut open = from.timestamp_millis().div_euclid(len_ms) * len_ms;
    let mut bars = Vec::new();
    while open < to.timestamp_millis() {
        let (o, c) = mock_open_close(open, len_ms);
        bars.push(types::Bar {
            time: DateTime::from_timestamp_millis(open).expect("time"),
            open: o.into(),
            high: (o.max(c) + 10).into(),
            low: (o.min(c) - 10).into(),
            close: c.into(),
            volume: rust_decimal::Decimal::new(125, 1),
        });
        open += len_ms;
    }
    bars
}

pub(crate) async fn hyperliquid_mock() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/info"))
        .and(body_partial_json(json!({"type": "candleSnapshot"})))
        .respond_with(Candles)
        .mount(&server)
        .await;
    server
}

/// `hyperliquid_mock`, answering every candle request only after `delay`.
pub(crate) async fn slow_hyperliquid_mock(delay: std::time::Duration) -> MockServer {
    struct Delayed(std::time::Duration);
    impl Respond for Delayed {
        fn respond(&self, request: &Request) -> ResponseTemplate {
            Candles.respond(request).set_delay(self.0)
        }
    }
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/info"))
        .and(body_partial_json(json!({"type": "candleSnapshot"})))
        .respond_with(Delayed(delay))
        .mount(&server)
        .await;
    server
}

/// [`runner`] with a tick budget of `budget` (the model loop's deadline; a tick is abandoned
/// at twice it).
pub(crate) async fn runner_with_budget(
    pg: &Pg,
    hl: &MockServer,
    now: DateTime<Utc>,
    name: &str,
    resolver: ModelResolver,
    budget: std::time::Duration,
) -> Arc<Runner> {
    let info = hyperliquid::InfoClient::new(&hyperliquid::ClientConfig::new(hl.uri()))
        .expect("info client");
    let mut config = RunnerConfig::new(format!("{name}:{}", uuid::Uuid::new_v4()));
    config.concurrency = 4;
    config.once = true;
    config.lease_for = chrono::Duration::minutes(4);
    config.tick_budget = budget;
    Arc::new(
        Runner::new(
            pg.store.clone(),
            info,
            Arc::new(FixedClock(now)),
            resolver,
            Metrics::default(),
            config,
        )
        .await
        .expect("runner"),
    )
}

/// A runner over `pg` and `hl` whose clock stands at `now`.
pub(crate) async fn runner(
    pg: &Pg,
    hl: &MockServer,
    now: DateTime<Utc>,
    name: &str,
    concurrency: usize,
    resolver: Option<ModelResolver>,
) -> Arc<Runner> {
    let info = hyperliquid::InfoClient::new(&hyperliquid::ClientConfig::new(hl.uri()))
        .expect("info client");
    let mut config = RunnerConfig::new(format!("{name}:{}", uuid::Uuid::new_v4()));
    config.concurrency = concurrency;
    config.once = true;
    config.lease_for = chrono::Duration::minutes(4);
    Arc::new(
        Runner::new(
            pg.store.clone(),
            info,
            Arc::new(FixedClock(now)),
            resolver.unwrap_or_else(default_resolver),
            Metrics::default(),
            config,
        )
        .await
        .expect("runner"),
    )
}

/// Hourly prints of the requested coin from `startTime` to the tick (the mock ignores
/// `endTime`), 0.0000125 each but 0.00002 for the last one at or before the tick, and one at
/// tick + 30 min (0.0099) that the runner must drop.
pub(crate) struct FundingHistory {
    tick_ms: i64,
}

impl Respond for FundingHistory {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let coin = body["coin"].as_str().unwrap().to_owned();
        let start = body["startTime"].as_i64().unwrap();
        let hour = 3_600_000;
        let mut prints = Vec::new();
        let mut at = start.div_euclid(hour) * hour + hour;
        while at <= self.tick_ms {
            let rate = if at == self.tick_ms {
                "0.00002"
            } else {
                "0.0000125"
            };
            prints
                .push(json!({"coin": coin, "fundingRate": rate, "premium": "0.0001", "time": at}));
            at += hour;
        }
        prints.push(json!({
            "coin": coin, "fundingRate": "0.0099", "premium": "0.0001",
            "time": self.tick_ms + hour / 2,
        }));
        ResponseTemplate::new(200).set_body_json(Value::Array(prints))
    }
}

pub(crate) fn meta_and_asset_ctxs() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../hyperliquid/tests/fixtures/metaAndAssetCtxs.json"
    ))
    .unwrap();
    let recorded: Value = serde_json::from_str(&text).unwrap();
    recorded["response"].clone()
}

/// Mounts `fundingHistory` ([`FundingHistory`] for a tick at `tick`) and `metaAndAssetCtxs`
/// (the documented-shape fixture) on the mock exchange `hl`.
pub(crate) async fn mount_derivatives(hl: &MockServer, tick: DateTime<Utc>) {
    Mock::given(method("POST"))
        .and(path("/info"))
        .and(body_partial_json(json!({"type": "fundingHistory"})))
        .respond_with(FundingHistory {
            tick_ms: tick.timestamp_millis(),
        })
        .mount(hl)
        .await;
    Mock::given(method("POST"))
        .and(path("/info"))
        .and(body_partial_json(json!({"type": "metaAndAssetCtxs"})))
        .respond_with(ResponseTemplate::new(200).set_body_json(meta_and_asset_ctxs()))
        .mount(hl)
        .await;
}

/// The snapshots of a backtest of `skill` (paper, 10,000 USD, margined without the exchange's
/// table) over the bars [`hyperliquid_mock`] serves, ticking `ticks` bar closes from `first`:
/// what a live paper deployment of the skill deployed before `first` must be shown.
pub(crate) async fn backtest_snapshots(
    skill: &skill_schema::Skill,
    first: DateTime<Utc>,
    ticks: i32,
) -> Vec<db::DecisionSnapshot> {
    use db::TickStore;
    let interval = skill.context.bars_interval;
    let from = first - chrono::Duration::days(60);
    let to = first + interval.duration() * ticks;
    let mut market = tools::Preloaded::new();
    for symbol in &skill.context.symbols {
        market.insert_bars(symbol, interval, mock_bars(interval, from, to));
        for h in skill.context.effective_higher_timeframes() {
            market.insert_bars(symbol, h, mock_bars(h, from, to));
        }
    }
    let equity = rust_decimal::Decimal::from(10_000);
    let input = backtest::BacktestInput::for_test(skill.clone(), market)
        .with_offline_reflection()
        .with_range(first, to - interval.duration())
        .with_broker(
            execution_engine::PaperBrokerConfig::for_skill(equity, skill, &Default::default())
                .expect("broker"),
        );
    let sim = db::connect("sqlite::memory:").await.expect("store");
    backtest::register(
        &sim,
        &input,
        serde_json::to_value(skill).expect("json"),
        first,
    )
    .await
    .expect("register");
    let model = agent_runtime::builtin_model(&skill.model, skill).expect("model");
    backtest::run(
        &input,
        model.as_ref(),
        &sim,
        backtest::RunOptions::default(),
    )
    .await
    .expect("backtest")
    .stored()
    .await
    .expect("stored");
    let mut snapshots = sim
        .list_snapshots(input.deployment.deployment_id, 10_000)
        .await
        .expect("snapshots");
    snapshots.sort_by_key(|s| s.tick_at);
    snapshots
}
