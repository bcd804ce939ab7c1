//! Test harness: a fresh PostgreSQL database per test (dropped afterwards) and a mock of
//! Hyperliquid's info endpoint serving `candleSnapshot` in the exchange's wire format.

#![allow(dead_code)]

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Utc};
use db::{PgStore, Store};
use live_runner::metrics::Metrics;
use live_runner::runner::{ModelResolver, Runner, RunnerConfig, default_resolver};
use serde_json::{Value, json};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, Executor, Row};
use types::FixedClock;
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

pub const DEFAULT_TEST_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
const DB_PREFIX: &str = "live_runner_test_";

fn admin_url() -> String {
    std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_TEST_DATABASE_URL.to_owned())
}

fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A migrated database of its own; dropped when the harness is.
pub struct Pg {
    pub store: Store,
    admin: PgConnectOptions,
    name: String,
}

/// A fresh, migrated PostgreSQL database. Fails (never skips) when no server is reachable.
pub async fn postgres() -> Pg {
    let url = admin_url();
    let admin = PgConnectOptions::from_str(&url)
        .unwrap_or_else(|e| panic!("TEST_DATABASE_URL {url:?} is not a PostgreSQL URL: {e}"));
    let mut conn = match admin.connect().await {
        Ok(c) => c,
        Err(e) => panic!(
            "cannot reach PostgreSQL at {url} ({e}).\n\
             The live-runner tests need a server: start it with\n    \
             pg_ctlcluster --skip-systemctl-redirect 15 main start\n\
             (trust auth for user postgres on 127.0.0.1:5432), or point TEST_DATABASE_URL at a \
             server where the user may CREATE DATABASE."
        ),
    };
    let name = format!(
        "{DB_PREFIX}{}_{}",
        unix_secs(),
        uuid::Uuid::new_v4().simple()
    );
    conn.execute(format!("CREATE DATABASE \"{name}\"").as_str())
        .await
        .unwrap_or_else(|e| panic!("CREATE DATABASE {name} on {url}: {e}"));
    conn.close().await.ok();
    let pool = PgPoolOptions::new()
        .max_connections(16)
        .connect_with(admin.clone().database(&name))
        .await
        .unwrap_or_else(|e| panic!("connect to test database {name}: {e}"));
    let store = PgStore::from_pool(pool)
        .await
        .expect("migrate test database");
    Pg {
        store: Store::Postgres(store),
        admin,
        name,
    }
}

impl Pg {
    pub fn pool(&self) -> &sqlx::PgPool {
        match &self.store {
            Store::Postgres(pg) => pg.pool(),
            Store::Sqlite(_) => unreachable!("a PostgreSQL harness"),
        }
    }

    pub async fn count(&self, sql: &str) -> i64 {
        sqlx::query(sql)
            .fetch_one(self.pool())
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .get::<i64, _>(0)
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        let admin = self.admin.clone();
        let name = std::mem::take(&mut self.name);
        let pool = self.pool().clone();
        let dropper = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                pool.close().await;
                if let Ok(mut conn) = admin.connect().await {
                    let _ = conn
                        .execute(
                            format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)").as_str(),
                        )
                        .await;
                }
            });
        });
        let _ = dropper.join();
    }
}

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

pub fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .expect("time")
        .with_timezone(&Utc)
}

/// The mock's BTC price at `ms`: a triangle wave around 30,000 with a 12-hour period
/// (30,000 + 200 × |h mod 12 − 6| for the hour index h), so a 3/5 SMA cross fires every few
/// hours. Integers only: the prices are exact decimals on the wire.
pub fn price_at(ms: i64) -> i64 {
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
            let o = price_at(open);
            let c = price_at(open + len_ms);
            candles.push(json!({
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
            }));
            open += len_ms;
        }
        ResponseTemplate::new(200).set_body_json(Value::Array(candles))
    }
}

pub async fn hyperliquid_mock() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/info"))
        .and(body_partial_json(json!({"type": "candleSnapshot"})))
        .respond_with(Candles)
        .mount(&server)
        .await;
    server
}

/// A runner over `pg` and `hl` whose clock stands at `now`.
pub async fn runner(
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
