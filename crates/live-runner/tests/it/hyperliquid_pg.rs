//! A Hyperliquid deployment end to end on a real PostgreSQL against a mock Hyperliquid (candles,
//! account, fills, orders in the exchange's wire format): a scripted model proposes, the order
//! goes to the exchange once per tick — also when the tick is re-run after a crash before or
//! after it was recorded —, a refusal is recorded as a rejection, a liquidation closes the
//! ledger row, and snapshots, fills, ledger rows and the fill watermark land in PostgreSQL. A
//! deployment whose key variable is unset fails alone, naming the variable.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_runtime::{LanguageModel, ModelError, ScriptedModel};
use chrono::{DateTime, Utc};
use common::hl_exchange::{self, TEST_KEY, liquidation_fill, test_account};
use common::{hyperliquid_mock, postgres, price_at, t};
use db::{LedgerStore, RegistryStore, TickStore};
use hyperliquid::{ClientConfig, Network, RetryPolicy, cloid_for};
use live_runner::admin::{self, DeployRequest};
use live_runner::hl_broker::HyperliquidConfig;
use live_runner::metrics::Metrics;
use live_runner::runner::{ModelResolver, Runner, RunnerConfig};
use live_runner::test_support::hyperliquid_deploy;
use model::test_support::{answer, tool_call, tool_turn};
use rust_decimal::Decimal;
use serde_json::Value;
use types::{CloseKind, FixedClock, RuleCode, Side, TradeStatus, Verdict};
use uuid::Uuid;
use wiremock::MockServer;

const OWNER: Uuid = Uuid::from_u128(0x0a11ce);
const KEY_VAR: &str = "HL_E2E_KEY";

/// The skill's model proposes to go long 1,000 USD of BTC every tick (an add when long).
fn always_long() -> ModelResolver {
    Arc::new(|id: &str, skill: &skill_schema::Skill| {
        if id != skill.model {
            return agent_runtime::builtin_model(id, skill)
                .ok_or_else(|| ModelError::UnknownModel(id.to_owned()));
        }
        let propose = tool_turn(vec![tool_call(
            "c1",
            "propose_order",
            r#"{"action":"open_long","symbol":"BTC","size_usd":1000,"leverage":1,"reason":"scripted test proposal"}"#,
        )]);
        let done = answer("done");
        Ok(Arc::new(ScriptedModel::new(vec![propose, done])) as Arc<dyn LanguageModel>)
    })
}

fn env_with_key() -> Arc<dyn live_runner::runner::EnvLookup> {
    Arc::new(|name: &str| (name == KEY_VAR).then(|| TEST_KEY.to_owned()))
}

async fn runner(
    pg: &common::Pg,
    hl: &MockServer,
    now: DateTime<Utc>,
    name: &str,
) -> (Arc<Runner>, Metrics) {
    let info = hyperliquid::InfoClient::new(&ClientConfig::new(hl.uri())).expect("info");
    let mut config = RunnerConfig::new(format!("{name}:{}", Uuid::new_v4()));
    config.once = true;
    config.concurrency = 2;
    let metrics = Metrics::default();
    let runner = Runner::new(
        pg.store.clone(),
        info,
        Arc::new(FixedClock(now)),
        always_long(),
        metrics.clone(),
        config,
    )
    .await
    .expect("runner")
    .with_env(env_with_key())
    .with_exchange_http(
        ClientConfig::new("http://replaced.invalid").with_retry(RetryPolicy {
            max_attempts: 2,
            base_delay: std::time::Duration::from_millis(1),
            max_delay: std::time::Duration::from_millis(2),
        }),
    );
    (Arc::new(runner), metrics)
}

async fn run(pg: &common::Pg, hl: &MockServer, now: DateTime<Utc>, name: &str) -> Metrics {
    let (r, metrics) = runner(pg, hl, now, name).await;
    r.run(std::future::pending()).await.expect("run");
    metrics
}

async fn deploy(
    pg: &common::Pg,
    hl: &MockServer,
    account: hyperliquid::Address,
    key_env: &str,
    id: Uuid,
    at: DateTime<Utc>,
) -> db::Deployment {
    let skill = admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).expect("skill");
    let config = HyperliquidConfig {
        account,
        network: Network::Testnet,
        key_env: key_env.to_owned(),
        base_url: Some(hl.uri()),
        max_slippage: Decimal::new(1, 2),
    };
    let req = DeployRequest {
        id: Some(id),
        ..hyperliquid_deploy(OWNER, config)
    };
    admin::deploy(&pg.store, &skill, &req, at)
        .await
        .expect("deploy")
}

fn mark_at(at: DateTime<Utc>) -> Decimal {
    Decimal::from(price_at(at.timestamp_millis()))
}

fn set_mark(account: &hl_exchange::Shared, at: DateTime<Utc>) {
    let mut a = account.lock().unwrap();
    a.marks.insert("BTC".into(), mark_at(at));
    a.fill_time_ms = at.timestamp_millis() + 1500;
}

async fn state_json(pg: &common::Pg, id: Uuid) -> Value {
    sqlx::query_scalar::<_, Option<Value>>(
        "SELECT state FROM live_runner_state WHERE deployment_id = $1",
    )
    .bind(id)
    .fetch_one(pg.pool())
    .await
    .expect("state row")
    .unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hyperliquid_deployment_trades_on_the_exchange_once_per_tick_across_crashes() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");
    let account = hl_exchange::account(10_000, &[], 0);
    hl_exchange::mount(&hl, account.clone()).await;
    let id = Uuid::from_u128(0x4100_0001);
    let d = deploy(
        &pg,
        &hl,
        test_account(),
        KEY_VAR,
        id,
        first - chrono::Duration::minutes(30),
    )
    .await;
    assert_eq!(d.broker, db::BrokerKind::Hyperliquid);
    assert_eq!(d.config["hyperliquid"]["key_env"], KEY_VAR);
    assert!(
        !d.config.to_string().contains(&TEST_KEY[2..]),
        "the key is never stored"
    );
    let snapshot = tick::snapshot_id(id, first);
    let cloid = cloid_for(id, first).to_string();
    set_mark(&account, first);

    // Tick 1, attempt 1: the order reaches the exchange, then the process "dies" before the
    // tick is recorded (the snapshot insert fails, as a crash before commit would).
    sqlx::raw_sql(
        "CREATE FUNCTION fail_snapshot() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN RAISE EXCEPTION 'simulated crash'; END $$; \
         CREATE TRIGGER crash BEFORE INSERT ON decision_snapshots \
         FOR EACH ROW EXECUTE FUNCTION fail_snapshot();",
    )
    .execute(pg.pool())
    .await
    .expect("crash trigger");
    let m = run(&pg, &hl, first + chrono::Duration::seconds(2), "crashing").await;
    assert_eq!(m.ticks("failed"), 1);
    assert_eq!(pg.count("SELECT count(*) FROM decision_snapshots").await, 0);
    assert_eq!(pg.count("SELECT count(*) FROM fills").await, 0);
    assert_eq!(
        account.lock().unwrap().exchange_posts.len(),
        1,
        "the order is out"
    );
    sqlx::raw_sql("DROP TRIGGER crash ON decision_snapshots")
        .execute(pg.pool())
        .await
        .expect("drop trigger");

    // Attempt 2 (the runner retries after 30 s): the order is found by its client order id and
    // not placed again; its fill is recorded under this tick's snapshot.
    let m = run(&pg, &hl, first + chrono::Duration::seconds(40), "retry").await;
    assert_eq!(m.ticks("recorded"), 1);
    assert_eq!(
        account.lock().unwrap().exchange_posts.len(),
        1,
        "no second order"
    );
    let snaps = pg.store.list_snapshots(id, 10).await.expect("snapshots");
    assert_eq!(snaps.len(), 1);
    assert_eq!((snaps[0].id, snaps[0].tick_at), (snapshot, first));
    assert!(
        matches!(snaps[0].verdict, Verdict::Executed { .. }),
        "{:?}",
        snaps[0].verdict
    );
    // The re-run read the account from the exchange: the crashed attempt's position is in it.
    assert!(
        snaps[0].context.contains("\n- BTC long "),
        "{}",
        snaps[0].context
    );
    let fills = pg.store.list_fills(id, None).await.expect("fills");
    assert_eq!(fills.len(), 1);
    let f = &fills[0].fill;
    let qty = (Decimal::from(1000) / mark_at(first))
        .round_dp_with_strategy(5, rust_decimal::RoundingStrategy::ToZero);
    assert_eq!(f.id, "500001", "the exchange's trade id");
    assert_eq!((f.qty, f.price), (qty, mark_at(first)));
    assert_eq!(f.snapshot_id, Some(snapshot));
    assert_eq!(f.client_order_id.as_deref(), Some(cloid.as_str()));
    let trades = pg.store.all_trades(id).await.expect("ledger");
    assert_eq!(trades.len(), 1);
    assert_eq!(
        (trades[0].side, trades[0].status, trades[0].open_qty),
        (Side::Long, TradeStatus::Open, qty)
    );
    assert_eq!(trades[0].entry_snapshot_id, Some(snapshot));
    assert_eq!(fills[0].trade_id, Some(trades[0].id));
    // The watermark is in the runner state; there is no paper broker in it.
    let state = state_json(&pg, id).await;
    assert_eq!(state["broker"], Value::Null);
    assert_eq!(
        state["hyperliquid"]["since"],
        Value::String(
            (first + chrono::Duration::milliseconds(1500))
                .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
        ),
        "{state}"
    );
    let equity: Decimal =
        sqlx::query_scalar::<_, String>("SELECT equity_usd::text FROM deployments WHERE id = $1")
            .bind(id)
            .fetch_one(pg.pool())
            .await
            .expect("equity")
            .parse()
            .expect("decimal");
    assert!(
        equity > Decimal::from(9_990) && equity < Decimal::from(10_000),
        "{equity}"
    );

    // A recorded tick without its runner state (the state now commits with the tick; a row
    // from before that, or one lost): the re-run finds the tick recorded, the order at the
    // exchange, the fill already applied — and leaves the state alone.
    sqlx::query(
        "UPDATE live_runner_state SET state = NULL, tick_at = NULL WHERE deployment_id = $1",
    )
    .bind(id)
    .execute(pg.pool())
    .await
    .expect("rewind");
    pg.store
        .set_next_tick_at(id, Some(first))
        .await
        .expect("due again");
    let m = run(
        &pg,
        &hl,
        first + chrono::Duration::seconds(90),
        "after-record",
    )
    .await;
    assert_eq!(m.ticks("already_recorded"), 1);
    assert_eq!(
        account.lock().unwrap().exchange_posts.len(),
        1,
        "still one order"
    );
    assert_eq!(pg.store.list_fills(id, None).await.unwrap().len(), 1);
    assert_eq!(pg.store.all_trades(id).await.unwrap(), trades);

    // Tick 2: the exchange refuses the add; the tick records the rejection with its words.
    let second = first + chrono::Duration::hours(1);
    set_mark(&account, second);
    account.lock().unwrap().refuse_with =
        Some("Insufficient margin to place order. asset=0".into());
    let m = run(&pg, &hl, second + chrono::Duration::seconds(2), "refused").await;
    assert_eq!(m.ticks("recorded"), 1);
    assert!(
        m.render().contains("R12_INSUFFICIENT_MARGIN"),
        "{}",
        m.render()
    );
    let snaps = pg.store.list_snapshots(id, 10).await.unwrap();
    let latest = snaps.iter().find(|s| s.tick_at == second).expect("tick 2");
    match &latest.verdict {
        Verdict::Rejected { rule, detail } => {
            assert_eq!(*rule, RuleCode::InsufficientMargin);
            assert!(
                detail.contains("Insufficient margin to place order"),
                "{detail}"
            );
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert_eq!(account.lock().unwrap().exchange_posts.len(), 2);
    assert_eq!(pg.store.list_fills(id, None).await.unwrap().len(), 1);

    // Between ticks the exchange liquidates the long; tick 3 sees the fill, closes the row as a
    // liquidation, and the model's new order opens a fresh one.
    let third = second + chrono::Duration::hours(1);
    {
        let mut a = account.lock().unwrap();
        a.refuse_with = None;
        a.positions.remove("BTC");
        let liq_ms = (second + chrono::Duration::minutes(30)).timestamp_millis();
        a.fills.push(liquidation_fill(
            "BTC",
            "25000",
            &qty.to_string(),
            liq_ms,
            77_000_001,
        ));
    }
    set_mark(&account, third);
    let m = run(
        &pg,
        &hl,
        third + chrono::Duration::seconds(2),
        "after-liquidation",
    )
    .await;
    assert_eq!(m.ticks("recorded"), 1);
    assert_eq!(
        account.lock().unwrap().exchange_posts.len(),
        3,
        "one order per tick"
    );
    let fills = pg.store.list_fills(id, None).await.unwrap();
    let by_id: BTreeMap<&str, &db::StoredFill> =
        fills.iter().map(|f| (f.fill.id.as_str(), f)).collect();
    assert_eq!(fills.len(), 3, "{:?}", by_id.keys());
    let liq = by_id["77000001"];
    assert!(liq.fill.liquidation);
    assert_eq!(liq.fill.snapshot_id, None);
    let trades = pg.store.all_trades(id).await.unwrap();
    assert_eq!(trades.len(), 2);
    let closed = trades
        .iter()
        .find(|t| t.status == TradeStatus::Closed)
        .expect("closed row");
    assert_eq!(closed.close_kind, Some(CloseKind::Liquidation));
    assert_eq!(closed.exit_price, Some(Decimal::from(25_000)));
    let open = trades
        .iter()
        .find(|t| t.status == TradeStatus::Open)
        .expect("new row");
    assert_eq!(open.entry_snapshot_id, Some(tick::snapshot_id(id, third)));
    assert_eq!(
        account.lock().unwrap().exchange_posts[2]["action"]["orders"][0]["c"],
        Value::String(cloid_for(id, third).to_string())
    );

    // The operator listing shows the exchange deployment and its account.
    let rows = admin::list(&pg.store).await.expect("list");
    let row = rows.iter().find(|r| r.id == id).expect("row");
    assert_eq!(row.broker, "hyperliquid");
    assert_eq!(row.last_tick, Some(third));
    assert_eq!(row.open_positions, 1);
    assert_eq!(
        row.account.as_deref(),
        Some(format!("{}@testnet", test_account()).as_str())
    );
    let table = admin::render_table(&rows);
    assert!(table.contains("hyperliquid"), "{table}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_key_fails_only_its_own_deployment_naming_the_variable() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");
    let account = hl_exchange::account(10_000, &[], 0);
    hl_exchange::mount(&hl, account.clone()).await;
    set_mark(&account, first);
    let created = first - chrono::Duration::minutes(30);
    let good = deploy(
        &pg,
        &hl,
        test_account(),
        KEY_VAR,
        Uuid::from_u128(0x4200_0001),
        created,
    )
    .await;
    let other: hyperliquid::Address = "0x00000000000000000000000000000000000000aa"
        .parse()
        .unwrap();
    let keyless = deploy(
        &pg,
        &hl,
        other,
        "HL_NOT_SET_ANYWHERE",
        Uuid::from_u128(0x4200_0002),
        created,
    )
    .await;

    // One account, one deployment.
    let skill = admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).unwrap();
    let dup = admin::deploy(
        &pg.store,
        &skill,
        &hyperliquid_deploy(
            OWNER,
            HyperliquidConfig {
                account: test_account(),
                network: Network::Testnet,
                key_env: "ANOTHER".into(),
                base_url: None,
                max_slippage: Decimal::new(1, 2),
            },
        ),
        created,
    )
    .await
    .expect_err("the account is taken");
    assert!(dup.to_string().contains(&good.id.to_string()), "{dup}");

    let m = run(&pg, &hl, first + chrono::Duration::seconds(2), "mixed").await;
    assert_eq!(m.ticks("recorded"), 1, "the deployment with its key ticked");
    assert_eq!(m.ticks("failed"), 1, "the keyless one failed");
    assert_eq!(pg.store.list_snapshots(good.id, 5).await.unwrap().len(), 1);
    assert!(
        pg.store
            .list_snapshots(keyless.id, 5)
            .await
            .unwrap()
            .is_empty()
    );
    let again = pg.store.get_deployment(keyless.id).await.unwrap();
    assert_eq!(
        again.next_tick_at,
        Some(first + chrono::Duration::seconds(32)),
        "retried like any failed tick"
    );

    let (r, _) = runner(&pg, &hl, first + chrono::Duration::seconds(40), "direct").await;
    let err = r.tick_deployment(&again).await.expect_err("no key");
    let text = err.to_string();
    assert!(text.contains("HL_NOT_SET_ANYWHERE"), "{text}");
    assert!(text.contains("is not set"), "{text}");
    // Only the deployment with a key reached the exchange.
    let a = account.lock().unwrap();
    assert_eq!(a.exchange_posts.len(), 1);
    assert!(
        a.fill_queries
            .iter()
            .all(|q| q["user"] == Value::String(test_account().to_string())),
        "{:?}",
        a.fill_queries
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_leverage_update_is_the_ticks_rejection_and_no_order_is_sent() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");
    let account = hl_exchange::account(10_000, &[], 0);
    {
        // The exchange's default for an account: cross margin at 20x; the proposal asks 1x.
        let mut a = account.lock().unwrap();
        a.default_leverage = ("cross".to_owned(), 20);
        a.refuse_leverage_with = Some("Invalid leverage value.".into());
    }
    hl_exchange::mount(&hl, account.clone()).await;
    let id = Uuid::from_u128(0x4300_0001);
    deploy(
        &pg,
        &hl,
        test_account(),
        KEY_VAR,
        id,
        first - chrono::Duration::minutes(30),
    )
    .await;
    set_mark(&account, first);
    let m = run(
        &pg,
        &hl,
        first + chrono::Duration::seconds(2),
        "lev-refused",
    )
    .await;
    assert_eq!(m.ticks("recorded"), 1);
    let snaps = pg.store.list_snapshots(id, 10).await.unwrap();
    assert_eq!(snaps.len(), 1);
    match &snaps[0].verdict {
        Verdict::Rejected { rule, detail } => {
            assert_eq!(*rule, RuleCode::InvalidOrder);
            assert!(
                detail.contains("Invalid leverage value.") && detail.contains("1x isolated"),
                "{detail}"
            );
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    {
        let a = account.lock().unwrap();
        assert_eq!(a.exchange_posts.len(), 1, "the update alone");
        assert_eq!(
            a.exchange_posts[0]["action"],
            serde_json::json!({"type": "updateLeverage", "asset": 0, "isCross": false, "leverage": 1})
        );
    }
    assert!(pg.store.list_fills(id, None).await.unwrap().is_empty());

    // The next tick the exchange accepts: the setting, then the order, in that order.
    let second = first + chrono::Duration::hours(1);
    set_mark(&account, second);
    account.lock().unwrap().refuse_leverage_with = None;
    let m = run(&pg, &hl, second + chrono::Duration::seconds(2), "lev-ok").await;
    assert_eq!(m.ticks("recorded"), 1);
    {
        let a = account.lock().unwrap();
        let kinds: Vec<&str> = a
            .exchange_posts
            .iter()
            .map(|p| p["action"]["type"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["updateLeverage", "updateLeverage", "order"]);
        assert_eq!(a.leverage_of("BTC"), ("isolated".to_owned(), 1));
    }
    assert_eq!(pg.store.list_fills(id, None).await.unwrap().len(), 1);
}
