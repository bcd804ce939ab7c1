//! The Hyperliquid exchange broker against a local mock speaking the exchange's wire format:
//! the account and fills mapped from recorded API answers (a liquidation included), one signed
//! IOC order per tick under the tick's client order id, no second order when a tick is re-run
//! after a crash, exchange refusals as rule-coded refusals, and an unreachable exchange as a
//! failure, never a rejection.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use common::hl_exchange::{self, TEST_KEY, liquidation_fill, recorded, test_account};
use execution_engine::{Order, OrderIntent, OrderTag};
use hyperliquid::{Action, ClientConfig, Network, RetryPolicy, Signature, Signer, cloid_for};
use live_runner::hl_broker::{
    FillCursor, HlBrokerError, HyperliquidBroker, HyperliquidConfig, signer_from_env,
};
use rust_decimal::Decimal;
use serde_json::{Value, json};
use tick::{Broker, BrokerRefusal, ExecuteError};
use types::{FixedClock, OrderSide, RuleCode, Side};
use uuid::Uuid;
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const DEPLOYMENT: Uuid = Uuid::from_u128(0x00d0_0001);

fn d(s: &str) -> Decimal {
    s.parse().expect("decimal")
}

fn ms(t: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(t).unwrap()
}

fn tick_at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 2, 12, 0, 0).unwrap()
}

fn config(server: &MockServer) -> HyperliquidConfig {
    HyperliquidConfig {
        account: test_account(),
        network: Network::Testnet,
        key_env: "HL_TEST_KEY".to_owned(),
        base_url: Some(server.uri()),
        max_slippage: d("0.01"),
    }
}

fn http() -> ClientConfig {
    ClientConfig::new("http://replaced.invalid")
        .with_timeout(Duration::from_secs(5))
        .with_retry(RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
        })
}

async fn broker(server: &MockServer, cursor: FillCursor) -> HyperliquidBroker {
    HyperliquidBroker::new(
        DEPLOYMENT,
        &config(server),
        Signer::from_hex(TEST_KEY).unwrap(),
        Arc::new(FixedClock(tick_at() + chrono::Duration::seconds(2))),
        cursor,
        &http(),
    )
    .await
    .expect("broker")
}

fn buy_btc(qty: &str) -> Order {
    Order {
        symbol: "BTC".to_owned(),
        side: OrderSide::Buy,
        qty: d(qty),
        leverage: Decimal::ONE,
        reduce_only: false,
        intent: OrderIntent::Open,
        reference_price: d("30000"),
        notional_usd: d(qty) * d("30000"),
        stop: None,
        target: None,
    }
}

fn tag() -> OrderTag {
    OrderTag {
        snapshot_id: Some(tick::snapshot_id(DEPLOYMENT, tick_at())),
        client_order_id: None,
    }
}

#[tokio::test]
async fn the_account_and_its_fills_come_from_the_exchange_with_a_watermark_that_survives_a_restart()
{
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/info"))
        .and(body_partial_json(json!({
            "type": "clearinghouseState",
            "user": test_account().to_string(),
        })))
        .respond_with(ResponseTemplate::new(200).set_body_json(recorded("clearinghouseState")))
        .mount(&server)
        .await;
    // The recorded 500 fills (newest first, as the exchange lists them) and a liquidation
    // after them.
    let mut fills = recorded("userFills").as_array().cloned().unwrap();
    let liq_time = 1_683_245_900_000_i64;
    fills.insert(
        0,
        liquidation_fill("ARB", "1.2", "246.5", liq_time, 77_000_001),
    );
    Mock::given(method("POST"))
        .and(path("/info"))
        .and(body_partial_json(json!({
            "type": "userFillsByTime",
            "user": test_account().to_string(),
        })))
        .respond_with(ResponseTemplate::new(200).set_body_json(Value::Array(fills.clone())))
        .mount(&server)
        .await;

    let start = ms(1_683_245_000_000);
    let mut b = broker(&server, FillCursor::starting_at(start)).await;
    let p = b.portfolio(tick_at()).await.expect("portfolio");
    assert_eq!(p.at, tick_at());
    assert_eq!(p.equity_usd, d("1182.312496"));
    assert_eq!(p.available_margin_usd, d("1010.57173"));
    assert_eq!(p.positions.len(), 12);
    let symbols: Vec<&str> = p.positions.iter().map(|x| x.symbol.as_str()).collect();
    let mut sorted = symbols.clone();
    sorted.sort_unstable();
    assert_eq!(symbols, sorted, "positions ordered by symbol");
    let btc = p.position("BTC").expect("BTC");
    assert_eq!((btc.side, btc.qty), (Side::Short, d("0.00785")));
    assert_eq!(btc.entry_price, d("26951"));
    assert_eq!(btc.leverage, d("20"));
    // mark = positionValue / |szi| = 211.64542 / 0.00785
    assert_eq!(btc.mark_price, d("26961.20"));
    assert_eq!(btc.liquidation_price, Some(d("173198.69592357")));
    assert_eq!(
        (p.realized_pnl_usd, p.fees_paid_usd),
        (Decimal::ZERO, Decimal::ZERO)
    );

    let drained = b.drain_fills().await.expect("fills");
    assert_eq!(drained.len(), 501);
    assert!(
        drained.windows(2).all(|w| w[0].time <= w[1].time),
        "oldest first"
    );
    let ids: std::collections::BTreeSet<&str> = drained.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids.len(), 501, "every fill once, by the exchange's id");
    let first = &drained[0];
    assert_eq!(first.time, ms(1_683_245_555_699));
    assert!(drained[..500].iter().all(|f| !f.liquidation));
    let liq = drained.last().unwrap();
    assert_eq!(liq.id, "77000001");
    assert!(liq.liquidation);
    assert_eq!(
        (liq.symbol.as_str(), liq.side, liq.qty, liq.price),
        ("ARB", OrderSide::Sell, d("246.5"), d("1.2"))
    );
    assert_eq!(liq.snapshot_id, None, "not an order of ours");
    // The SUI close at the head of the recording: px 1.3189, sz 142.7, a sell.
    let sui = drained
        .iter()
        .find(|f| f.time == ms(1_683_245_884_863) && f.symbol == "SUI")
        .expect("the newest recorded fill");
    assert_eq!(
        (sui.side, sui.qty, sui.price),
        (OrderSide::Sell, d("142.7"), d("1.3189"))
    );

    // Lifetime realized PnL and fees are the sums over the fills.
    let closed: Decimal = fills
        .iter()
        .map(|f| d(f["closedPnl"].as_str().unwrap()))
        .sum();
    let fees: Decimal = fills.iter().map(|f| d(f["fee"].as_str().unwrap())).sum();
    let p = b
        .portfolio(tick_at())
        .await
        .expect("portfolio after the fills");
    assert_eq!((p.realized_pnl_usd, p.fees_paid_usd), (closed, fees));

    // Nothing twice: not on the next read, not after a restart from the saved cursor.
    assert!(b.drain_fills().await.expect("again").is_empty());
    let saved = serde_json::to_value(b.cursor()).expect("cursor json");
    let cursor: FillCursor = serde_json::from_value(saved).expect("cursor back");
    assert_eq!(&cursor, b.cursor());
    assert_eq!(cursor.since, ms(liq_time));
    let mut restarted = broker(&server, cursor).await;
    assert!(
        restarted
            .drain_fills()
            .await
            .expect("after restart")
            .is_empty()
    );
    assert_eq!(
        restarted
            .portfolio(tick_at())
            .await
            .unwrap()
            .realized_pnl_usd,
        closed
    );

    // The reads asked for the account's fills from the watermark, less the re-read overlap,
    // never before the deployment's start.
    let requests = server.received_requests().await.unwrap();
    let starts: Vec<i64> = requests
        .iter()
        .filter_map(|r| serde_json::from_slice::<Value>(&r.body).ok())
        .filter(|b| b["type"] == "userFillsByTime")
        .map(|b| b["startTime"].as_i64().unwrap())
        .collect();
    assert_eq!(
        starts,
        vec![
            start.timestamp_millis(),
            liq_time - 60_000,
            liq_time - 60_000
        ]
    );
}

#[tokio::test]
async fn fills_are_paged_past_the_exchanges_cap_of_2000_per_answer() {
    // 2,500 fills one second apart: the first answer holds the 2,000 oldest from startTime.
    let all: Vec<Value> = (0..2500_i64)
        .map(|i| {
            json!({
                "coin": "BTC", "px": "30000", "sz": "0.001", "side": if i % 2 == 0 { "B" } else { "A" },
                "time": 1_700_000_000_000_i64 + i * 1000, "startPosition": "0", "dir": "Open Long",
                "closedPnl": "0.0", "hash": "0x01", "oid": 1, "crossed": true, "fee": "0.01",
                "tid": 10_000 + i,
            })
        })
        .collect();
    struct Paged(Vec<Value>);
    impl wiremock::Respond for Paged {
        fn respond(&self, r: &wiremock::Request) -> ResponseTemplate {
            let body: Value = serde_json::from_slice(&r.body).unwrap();
            let start = body["startTime"].as_i64().unwrap();
            let page: Vec<Value> = self
                .0
                .iter()
                .filter(|f| f["time"].as_i64().unwrap() >= start)
                .take(2000)
                .cloned()
                .collect();
            ResponseTemplate::new(200).set_body_json(Value::Array(page))
        }
    }
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/info"))
        .and(body_partial_json(json!({"type": "userFillsByTime"})))
        .respond_with(Paged(all))
        .expect(2)
        .mount(&server)
        .await;
    let mut b = broker(&server, FillCursor::starting_at(ms(1_700_000_000_000))).await;
    let fills = b.drain_fills().await.expect("fills");
    assert_eq!(fills.len(), 2500);
    assert_eq!(fills.last().unwrap().id, "12499");
    assert_eq!(b.cursor().fees_paid_usd, d("25"));
}

#[tokio::test]
async fn execute_posts_one_signed_ioc_order_under_the_ticks_client_order_id() {
    let server = MockServer::start().await;
    let account = hl_exchange::account(
        10_000,
        &[("BTC", d("30010"))],
        tick_at().timestamp_millis() + 1500,
    );
    hl_exchange::mount(&server, account.clone()).await;
    let mut b = broker(&server, FillCursor::starting_at(tick_at())).await;
    b.portfolio(tick_at()).await.expect("portfolio");
    assert!(b.drain_fills().await.expect("no fills yet").is_empty());

    let fill = b
        .execute(&buy_btc("0.0123456"), d("30000"), tick_at(), tag())
        .await
        .expect("filled");
    let cloid = cloid_for(DEPLOYMENT, tick_at());
    assert_eq!(fill.client_order_id, Some(cloid.to_string()));
    assert_eq!(
        (fill.side, fill.qty, fill.price),
        (OrderSide::Buy, d("0.01234"), d("30010"))
    );

    let posts = account.lock().unwrap().exchange_posts.clone();
    assert_eq!(posts.len(), 1, "exactly one order");
    let body = &posts[0];
    // A marketable IOC limit 1 % through the mark (5 significant figures), the size rounded
    // toward zero to BTC's 5 decimals, asset 0 from meta, the tick's client order id.
    assert_eq!(
        body["action"],
        json!({
            "type": "order",
            "orders": [{
                "a": 0, "b": true, "p": "30300", "s": "0.01234", "r": false,
                "t": {"limit": {"tif": "Ioc"}}, "c": cloid.to_string()
            }],
            "grouping": "na"
        })
    );
    let nonce = body["nonce"].as_u64().unwrap();
    assert_eq!(
        nonce,
        (tick_at().timestamp_millis() + 2000) as u64,
        "the clock's ms"
    );
    assert_eq!(body["vaultAddress"], Value::Null);
    // The signature is the account's, over exactly this action, nonce and network.
    let action: Action = serde_json::from_value(body["action"].clone()).unwrap();
    let sig: Signature = serde_json::from_value(body["signature"].clone()).unwrap();
    let signer = hyperliquid::recover_signer(&action, nonce, None, Network::Testnet, &sig).unwrap();
    assert_eq!(signer, test_account());
    let mainnet =
        hyperliquid::recover_signer(&action, nonce, None, Network::Mainnet, &sig).unwrap();
    assert_ne!(mainnet, test_account(), "signed for testnet only");
    // It looked the client order id up first.
    let queries = account.lock().unwrap().status_queries.clone();
    assert_eq!(
        queries,
        vec![
            json!({"type": "orderStatus", "user": test_account().to_string(), "oid": cloid.to_string()})
        ]
    );

    // The exchange's fill comes through drain_fills, with its id and this tick's snapshot.
    let fills = b.drain_fills().await.expect("fills");
    assert_eq!(fills.len(), 1);
    let f = &fills[0];
    assert_eq!(f.id, "500001");
    assert_eq!(
        f.snapshot_id,
        Some(tick::snapshot_id(DEPLOYMENT, tick_at()))
    );
    assert_eq!((f.qty, f.price), (d("0.01234"), d("30010")));
    assert_eq!(
        f.fee_usd,
        (d("30010") * d("0.01234") * d("0.00045")).round_dp(6)
    );
    let p = b.portfolio(tick_at()).await.expect("after");
    assert_eq!(
        p.position("BTC").map(|x| (x.side, x.qty)),
        Some((Side::Long, d("0.01234")))
    );
    assert_eq!(p.fees_paid_usd, f.fee_usd);
}

#[tokio::test]
async fn a_tick_rerun_after_a_crash_places_no_second_order() {
    let server = MockServer::start().await;
    let account = hl_exchange::account(
        10_000,
        &[("BTC", d("30010"))],
        tick_at().timestamp_millis() + 1500,
    );
    hl_exchange::mount(&server, account.clone()).await;
    // Guard on top of the mock's own count: at most one order ever reaches the exchange.
    let cursor = FillCursor::starting_at(tick_at());

    // Run 1 places the order, then the process dies before anything is saved.
    let mut first = broker(&server, cursor.clone()).await;
    first.portfolio(tick_at()).await.unwrap();
    first.drain_fills().await.unwrap();
    first
        .execute(&buy_btc("0.01"), d("30000"), tick_at(), tag())
        .await
        .expect("placed");
    drop(first);

    // Run 2 of the same tick, from the same saved cursor.
    let mut again = broker(&server, cursor.clone()).await;
    again.portfolio(tick_at()).await.unwrap();
    let fills = again.drain_fills().await.unwrap();
    assert_eq!(fills.len(), 1, "the first run's fill");
    assert_eq!(
        fills[0].snapshot_id,
        Some(tick::snapshot_id(DEPLOYMENT, tick_at())),
        "it belongs to this tick"
    );
    let fill = again
        .execute(&buy_btc("0.01"), d("30000"), tick_at(), tag())
        .await
        .expect("the existing order is reported");
    assert_eq!((fill.qty, fill.price), (d("0.01"), d("30010")));
    assert_eq!(fill.fee_usd, fills[0].fee_usd);
    assert!(again.drain_fills().await.unwrap().is_empty());

    // Run 3 whose (non-deterministic) model wants the other side: still no second order.
    let mut third = broker(&server, cursor).await;
    third.portfolio(tick_at()).await.unwrap();
    third.drain_fills().await.unwrap();
    let sell = Order {
        side: OrderSide::Sell,
        ..buy_btc("0.01")
    };
    let refusal = third
        .execute(&sell, d("30000"), tick_at(), tag())
        .await
        .map_err(refused)
        .expect_err("another order under the same client order id");
    assert_eq!(refusal.rule, RuleCode::InvalidOrder);
    assert!(
        refusal
            .message
            .contains("already at Hyperliquid as buy 0.01 BTC (filled)"),
        "{}",
        refusal.message
    );

    // A later tick has its own client order id and trades normally.
    let later = tick_at() + chrono::Duration::hours(1);
    let mut next = broker(&server, FillCursor::starting_at(tick_at())).await;
    next.portfolio(later).await.unwrap();
    next.execute(&sell, d("30000"), later, tag())
        .await
        .expect("next tick's order");

    let a = account.lock().unwrap();
    assert_eq!(a.exchange_posts.len(), 2, "one order per tick");
    assert_eq!(
        a.exchange_posts[1]["action"]["orders"][0]["c"],
        json!(cloid_for(DEPLOYMENT, later).to_string())
    );
}

#[tokio::test]
async fn exchange_refusals_become_rule_coded_refusals() {
    let server = MockServer::start().await;
    let account = hl_exchange::account(10_000, &[("BTC", d("30010"))], 0);
    hl_exchange::mount(&server, account.clone()).await;
    for (message, rule) in [
        (
            "Insufficient margin to place order. asset=0",
            RuleCode::InsufficientMargin,
        ),
        (
            "Order must have minimum value of $10. asset=0",
            RuleCode::OrderTooSmall,
        ),
        (
            "Reduce only order would increase position. asset=0",
            RuleCode::InvalidOrder,
        ),
    ] {
        account.lock().unwrap().refuse_with = Some(message.to_owned());
        account.lock().unwrap().orders.clear();
        let mut b = broker(&server, FillCursor::starting_at(tick_at())).await;
        b.portfolio(tick_at()).await.unwrap();
        let refusal = b
            .execute(&buy_btc("0.01"), d("30000"), tick_at(), tag())
            .await
            .map_err(refused)
            .expect_err(message);
        assert_eq!(refusal.rule, rule, "{message}");
        assert_eq!(
            refusal.message,
            format!("Hyperliquid refused the order: {message}")
        );
        // A refusal is an answer: the broker keeps working.
        assert!(b.drain_fills().await.expect("still usable").is_empty());
    }
    // A mark the limit cannot reach: the IOC finds nothing to match.
    account.lock().unwrap().refuse_with = None;
    account.lock().unwrap().orders.clear();
    account
        .lock()
        .unwrap()
        .marks
        .insert("BTC".into(), d("31000"));
    let mut b = broker(&server, FillCursor::starting_at(tick_at())).await;
    let refusal = b
        .execute(&buy_btc("0.01"), d("30000"), tick_at(), tag())
        .await
        .map_err(refused)
        .expect_err("no match within 1 %");
    assert!(
        refusal.message.contains("could not immediately match"),
        "{}",
        refusal.message
    );
    // Neither an unknown coin nor a size below one lot reaches the exchange.
    let posts = account.lock().unwrap().exchange_posts.len();
    let doge = Order {
        symbol: "NOPE".into(),
        ..buy_btc("1")
    };
    let r = b
        .execute(&doge, d("1"), tick_at() + chrono::Duration::hours(1), tag())
        .await;
    assert_eq!(
        r.map_err(refused).unwrap_err().rule,
        RuleCode::UnknownSymbol
    );
    let r = b
        .execute(
            &buy_btc("0.000001"),
            d("30000"),
            tick_at() + chrono::Duration::hours(2),
            tag(),
        )
        .await;
    let r = r.map_err(refused).unwrap_err();
    assert_eq!(r.rule, RuleCode::InvalidOrder);
    assert!(r.message.contains("below one lot"), "{}", r.message);
    assert_eq!(account.lock().unwrap().exchange_posts.len(), posts);
}

#[tokio::test]
async fn an_unreachable_exchange_fails_the_tick_instead_of_recording_a_rejection() {
    let server = MockServer::start().await;
    let account = hl_exchange::account(10_000, &[("BTC", d("30010"))], 0);
    hl_exchange::mount(&server, account.clone()).await;
    account.lock().unwrap().exchange_http_status = Some(502);
    let mut b = broker(&server, FillCursor::starting_at(tick_at())).await;
    b.portfolio(tick_at()).await.unwrap();
    let err = b
        .execute(&buy_btc("0.01"), d("30000"), tick_at(), tag())
        .await
        .expect_err("no answer");
    // Not a refusal: run_tick fails the tick (nothing recorded) and the runner retries it.
    let ExecuteError::Unavailable(unavailable) = err else {
        panic!("an unreachable exchange is not a refusal: {err:?}");
    };
    assert!(unavailable.0.contains("502"), "{}", unavailable.0);
    let a = account.lock().unwrap();
    // Sent (and retried with the same signed body), then looked up again by client order id.
    assert_eq!(a.exchange_posts.len(), 2);
    assert_eq!(
        a.exchange_posts[0], a.exchange_posts[1],
        "a retry resends the same nonce"
    );
    assert_eq!(a.status_queries.len(), 2, "looked up before and after");
}

#[test]
fn the_key_comes_from_the_named_variable_and_may_be_another_accounts() {
    let config = HyperliquidConfig {
        account: test_account(),
        network: Network::Testnet,
        key_env: "HL_KEY_DEPLOYMENT_7".to_owned(),
        base_url: None,
        max_slippage: d("0.01"),
    };
    let missing = signer_from_env(&config, &|_| None).unwrap_err();
    assert!(matches!(missing, HlBrokerError::MissingKey { .. }));
    assert!(
        missing.to_string().contains("HL_KEY_DEPLOYMENT_7"),
        "{missing}"
    );
    let blank = signer_from_env(&config, &|_| Some("  ".into())).unwrap_err();
    assert!(matches!(blank, HlBrokerError::MissingKey { .. }));
    let garbage = "0xnothex0000000000000000000000000000000000000000000000000000000000";
    let invalid = signer_from_env(&config, &|_| Some(garbage.into())).unwrap_err();
    assert!(
        invalid.to_string().contains("HL_KEY_DEPLOYMENT_7"),
        "{invalid}"
    );
    assert!(
        !invalid.to_string().contains("nothex"),
        "never echoes the key: {invalid}"
    );
    let other_key = "0x1123456789012345678901234567890123456789012345678901234567890123";
    // Another account's key is read: it may be an API wallet of the account, which
    // `verify_signer` checks against the exchange (see the agent tests).
    let agent = signer_from_env(&config, &|_| Some(other_key.into())).unwrap();
    assert_ne!(agent.address(), test_account());
    let ok = signer_from_env(&config, &|name| {
        (name == "HL_KEY_DEPLOYMENT_7").then(|| TEST_KEY.to_owned())
    })
    .unwrap();
    assert_eq!(ok.address(), test_account());
    assert_eq!(config.api_url(), hyperliquid::TESTNET_URL);
}

#[test]
fn configs_name_every_problem() {
    let mut config = HyperliquidConfig {
        account: test_account(),
        network: Network::Mainnet,
        key_env: "1BAD-NAME".to_owned(),
        base_url: Some("ftp://x".to_owned()),
        max_slippage: d("0"),
    };
    let problems = config.problems();
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems[0].starts_with("--hl-key-env"));
    assert!(problems[1].starts_with("--hl-url"));
    assert!(problems[2].starts_with("--hl-max-slippage"));
    config.key_env = "HL_KEY".into();
    config.base_url = None;
    config.max_slippage = d("0.02");
    assert!(config.problems().is_empty());
    // Stored without a secret, the network spelled out; unknown keys are refused.
    let v = serde_json::to_value(&config).unwrap();
    assert_eq!(
        v,
        json!({
            "account": test_account().to_string(),
            "network": "mainnet",
            "key_env": "HL_KEY",
            "max_slippage": "0.02"
        })
    );
    let mut typo = v.clone();
    typo["key"] = json!("0xsecret");
    assert!(serde_json::from_value::<HyperliquidConfig>(typo).is_err());
}

/// The refusal an `execute` error must be (an unreachable exchange is not one).
fn refused(e: ExecuteError) -> BrokerRefusal {
    match e {
        ExecuteError::Refused(r) => r,
        ExecuteError::Unavailable(u) => panic!("expected a refusal, got {u}"),
    }
}

/// An open with a stop and a target places them as reduce-only `positionTpsl` trigger orders
/// under the tick's leg-1/leg-2 client order ids, sized to the position; when the exchange
/// executes the stop, the next tick cancels what rests for the gone position and drains the fill
/// as a `stop` fill of no decision.
#[tokio::test]
async fn stops_and_targets_rest_as_trigger_orders_and_their_fills_are_reconciled() {
    let server = MockServer::start().await;
    let account = hl_exchange::account(
        10_000,
        &[("BTC", d("30010"))],
        tick_at().timestamp_millis() + 1500,
    );
    hl_exchange::mount(&server, account.clone()).await;
    let mut b = broker(&server, FillCursor::starting_at(tick_at())).await;
    b.portfolio(tick_at()).await.unwrap();
    b.drain_fills().await.unwrap();
    let order = Order {
        stop: Some(d("28500")),
        target: Some(d("33000")),
        ..buy_btc("0.01")
    };
    let fill = b
        .execute(&order, d("30000"), tick_at(), tag())
        .await
        .expect("filled");
    assert_eq!((fill.qty, fill.trigger), (d("0.01"), None));

    let (sl, tp) = (
        hyperliquid::cloid_for_leg(DEPLOYMENT, tick_at(), 1),
        hyperliquid::cloid_for_leg(DEPLOYMENT, tick_at(), 2),
    );
    {
        let a = account.lock().unwrap();
        assert_eq!(a.exchange_posts.len(), 2, "the entry, then the triggers");
        let action = &a.exchange_posts[1]["action"];
        assert_eq!(action["grouping"], "positionTpsl");
        // Sells of the whole position (0.01), reduce-only, market once triggered; the worst
        // price is 1 % beyond the trigger: 28,500 × 0.99 = 28,215; 33,000 × 0.99 = 32,670.
        assert_eq!(
            action["orders"],
            json!([
                {"a": 0, "b": false, "p": "28215", "s": "0.01", "r": true,
                 "t": {"trigger": {"isMarket": true, "triggerPx": "28500", "tpsl": "sl"}},
                 "c": sl.to_string()},
                {"a": 0, "b": false, "p": "32670", "s": "0.01", "r": true,
                 "t": {"trigger": {"isMarket": true, "triggerPx": "33000", "tpsl": "tp"}},
                 "c": tp.to_string()},
            ])
        );
        // Signed by the account's key like every other action.
        let signature: Signature =
            serde_json::from_value(a.exchange_posts[1]["signature"].clone()).unwrap();
        let action: Action = serde_json::from_value(action.clone()).unwrap();
        let nonce = a.exchange_posts[1]["nonce"].as_u64().unwrap();
        assert_eq!(
            hyperliquid::recover_signer(&action, nonce, None, Network::Testnet, &signature)
                .unwrap(),
            test_account()
        );
        assert_eq!(a.triggers.len(), 2);
    }
    // The end of the tick: the position stands, its triggers stay; the cursor carries them.
    b.drain_fills().await.unwrap();
    b.portfolio(tick_at()).await.unwrap();
    assert_eq!(b.cursor().triggers.len(), 2);
    assert!(account.lock().unwrap().cancels.is_empty());
    let saved: FillCursor =
        serde_json::from_value(serde_json::to_value(b.cursor()).unwrap()).unwrap();

    // Between ticks the mark falls to 28,400: the exchange executes the stop at the mark.
    {
        let mut a = account.lock().unwrap();
        a.fill_time_ms = tick_at().timestamp_millis() + 1_800_000;
        a.fire_triggers("BTC", d("28400"));
        assert!(a.positions["BTC"].0.is_zero(), "stopped out");
    }
    let later = tick_at() + chrono::Duration::hours(1);
    let mut next = broker(&server, saved).await;
    let p = next.portfolio(later).await.unwrap();
    assert!(p.position("BTC").is_none());
    assert!(next.cursor().triggers.is_empty(), "the target is cancelled");
    // Both are cancelled with the position gone (the portfolio read comes before the fills):
    // the exchange refuses the stop's cancel (it filled; logged) and cancels the target's.
    {
        let a = account.lock().unwrap();
        assert_eq!(
            a.cancels,
            vec![
                json!({"asset": 0, "cloid": sl.to_string()}),
                json!({"asset": 0, "cloid": tp.to_string()}),
            ]
        );
        assert!(a.triggers.is_empty());
    }
    let fills = next.drain_fills().await.unwrap();
    assert_eq!(fills.len(), 1);
    let stop = &fills[0];
    assert_eq!(stop.trigger, Some(types::FillTrigger::Stop));
    assert_eq!(stop.snapshot_id, None, "no decision made it");
    assert_eq!(
        (stop.side, stop.qty, stop.price),
        (OrderSide::Sell, d("0.01"), d("28400"))
    );
    assert_eq!(stop.client_order_id, Some(sl.to_string()));
}

/// A position closed by the agent takes its resting triggers with it: the tick's closing
/// portfolio read cancels both.
#[tokio::test]
async fn closing_the_position_cancels_its_trigger_orders() {
    let server = MockServer::start().await;
    let account = hl_exchange::account(
        10_000,
        &[("BTC", d("30010"))],
        tick_at().timestamp_millis() + 1500,
    );
    hl_exchange::mount(&server, account.clone()).await;
    let mut b = broker(&server, FillCursor::starting_at(tick_at())).await;
    b.portfolio(tick_at()).await.unwrap();
    let order = Order {
        stop: Some(d("28500")),
        target: Some(d("33000")),
        ..buy_btc("0.01")
    };
    b.execute(&order, d("30000"), tick_at(), tag())
        .await
        .expect("filled");
    b.drain_fills().await.unwrap();
    b.portfolio(tick_at()).await.unwrap();
    let saved = b.cursor().clone();

    let later = tick_at() + chrono::Duration::hours(1);
    let mut next = broker(&server, saved).await;
    next.portfolio(later).await.unwrap();
    assert_eq!(
        next.cursor().triggers.len(),
        2,
        "still open at the tick's start"
    );
    let close = Order {
        side: OrderSide::Sell,
        reduce_only: true,
        intent: OrderIntent::Close,
        ..buy_btc("0.01")
    };
    account.lock().unwrap().fill_time_ms = later.timestamp_millis() + 1500;
    next.execute(&close, d("30000"), later, tag())
        .await
        .expect("closed");
    next.drain_fills().await.unwrap();
    next.portfolio(later).await.unwrap();
    assert!(next.cursor().triggers.is_empty());
    let a = account.lock().unwrap();
    assert!(a.triggers.is_empty(), "nothing rests on the exchange");
    let cancelled: Vec<&str> = a
        .cancels
        .iter()
        .map(|c| c["cloid"].as_str().unwrap())
        .collect();
    assert_eq!(
        cancelled,
        vec![
            hyperliquid::cloid_for_leg(DEPLOYMENT, tick_at(), 1).to_string(),
            hyperliquid::cloid_for_leg(DEPLOYMENT, tick_at(), 2).to_string(),
        ]
    );
}

/// A tick re-run after a crash finds its entry and its trigger orders at the exchange: it places
/// neither again and carries the triggers on.
#[tokio::test]
async fn a_rerun_tick_adopts_its_trigger_orders_instead_of_placing_them_again() {
    let server = MockServer::start().await;
    let account = hl_exchange::account(
        10_000,
        &[("BTC", d("30010"))],
        tick_at().timestamp_millis() + 1500,
    );
    hl_exchange::mount(&server, account.clone()).await;
    let cursor = FillCursor::starting_at(tick_at());
    let order = Order {
        stop: Some(d("28500")),
        ..buy_btc("0.01")
    };
    let mut first = broker(&server, cursor.clone()).await;
    first.portfolio(tick_at()).await.unwrap();
    first
        .execute(&order, d("30000"), tick_at(), tag())
        .await
        .unwrap();
    drop(first);

    let mut again = broker(&server, cursor).await;
    again.portfolio(tick_at()).await.unwrap();
    again.drain_fills().await.unwrap();
    again
        .execute(&order, d("30000"), tick_at(), tag())
        .await
        .expect("the existing order is reported");
    assert_eq!(
        account.lock().unwrap().exchange_posts.len(),
        2,
        "one entry and one trigger action, from the first run only"
    );
    let t = &again.cursor().triggers;
    assert_eq!(t.len(), 1);
    assert_eq!(
        (t[0].kind, t[0].trigger_px, t[0].cloid),
        (
            types::FillTrigger::Stop,
            d("28500"),
            hyperliquid::cloid_for_leg(DEPLOYMENT, tick_at(), 1)
        )
    );
}

/// The signer of an `/exchange` post, recovered from its signature the way the exchange
/// authenticates it (testnet, no vault).
fn post_signer(post: &Value) -> hyperliquid::Address {
    let action: Action = serde_json::from_value(post["action"].clone()).unwrap();
    let sig: Signature = serde_json::from_value(post["signature"].clone()).unwrap();
    let nonce = post["nonce"].as_u64().unwrap();
    hyperliquid::recover_signer(&action, nonce, None, Network::Testnet, &sig).unwrap()
}

fn btc_at(leverage: &str) -> Order {
    Order {
        leverage: d(leverage),
        ..buy_btc("0.01")
    }
}

#[tokio::test]
async fn an_order_at_another_leverage_sets_it_first_once_per_tick() {
    let server = MockServer::start().await;
    let account = hl_exchange::account(
        10_000,
        &[("BTC", d("30010"))],
        tick_at().timestamp_millis() + 1500,
    );
    // A fresh Hyperliquid account: cross margin at 20x.
    account.lock().unwrap().default_leverage = ("cross".to_owned(), 20);
    hl_exchange::mount(&server, account.clone()).await;
    let mut b = broker(&server, FillCursor::starting_at(tick_at())).await;
    b.portfolio(tick_at()).await.expect("portfolio");

    // 3.7x is set as 3x isolated (whole numbers, rounded down: at least the margin checked).
    b.execute(&btc_at("3.7"), d("30000"), tick_at(), tag())
        .await
        .expect("filled");
    let a = account.lock().unwrap().exchange_posts.clone();
    assert_eq!(a.len(), 2, "updateLeverage, then the order");
    assert_eq!(
        a[0]["action"],
        json!({"type": "updateLeverage", "asset": 0, "isCross": false, "leverage": 3})
    );
    assert_eq!(a[0]["vaultAddress"], Value::Null);
    assert_eq!(post_signer(&a[0]), test_account(), "signed by the account");
    assert_eq!(a[1]["action"]["type"], "order");
    assert!(
        a[0]["nonce"].as_u64() < a[1]["nonce"].as_u64(),
        "the update is signed before the order"
    );
    {
        let acct = account.lock().unwrap();
        assert_eq!(acct.leverage_of("BTC"), ("isolated".to_owned(), 3));
        assert_eq!(acct.asset_queries.len(), 1, "no position: activeAssetData");
        assert_eq!(
            acct.asset_queries[0],
            json!({"type": "activeAssetData", "user": test_account().to_string(), "coin": "BTC"})
        );
    }
    // Another order of the same broker (tick) at 3x: the setting is known, nothing re-read.
    let later = tick_at() + chrono::Duration::minutes(5);
    b.execute(&btc_at("3"), d("30000"), later, tag())
        .await
        .expect("filled");
    let acct = account.lock().unwrap();
    assert_eq!(acct.exchange_posts.len(), 3, "only the order");
    assert_eq!(acct.exchange_posts[2]["action"]["type"], "order");
    assert_eq!(acct.asset_queries.len(), 1, "cached for the tick");
}

#[tokio::test]
async fn an_order_at_the_accounts_leverage_sends_no_update() {
    let server = MockServer::start().await;
    let account = hl_exchange::account(
        10_000,
        &[("BTC", d("30010"))],
        tick_at().timestamp_millis() + 1500,
    );
    {
        // An open isolated 2x long: clearinghouseState carries the setting.
        let mut a = account.lock().unwrap();
        a.positions.insert("BTC".into(), (d("0.01"), d("30000")));
        a.leverage.insert("BTC".into(), ("isolated".to_owned(), 2));
    }
    hl_exchange::mount(&server, account.clone()).await;
    let mut b = broker(&server, FillCursor::starting_at(tick_at())).await;
    b.portfolio(tick_at()).await.expect("portfolio");
    b.execute(&btc_at("2"), d("30000"), tick_at(), tag())
        .await
        .expect("filled");
    {
        let a = account.lock().unwrap();
        assert_eq!(a.exchange_posts.len(), 1, "the order alone");
        assert_eq!(a.exchange_posts[0]["action"]["type"], "order");
        assert!(a.asset_queries.is_empty(), "read from clearinghouseState");
    }

    // Without a position the setting comes from activeAssetData; equal: nothing sent either.
    let server = MockServer::start().await;
    let fresh = hl_exchange::account(
        10_000,
        &[("BTC", d("30010"))],
        tick_at().timestamp_millis() + 1500,
    );
    hl_exchange::mount(&server, fresh.clone()).await;
    let mut b = broker(&server, FillCursor::starting_at(tick_at())).await;
    b.portfolio(tick_at()).await.expect("portfolio");
    b.execute(&btc_at("1"), d("30000"), tick_at(), tag())
        .await
        .expect("filled");
    let a = fresh.lock().unwrap();
    assert_eq!(a.asset_queries.len(), 1);
    assert_eq!(a.exchange_posts.len(), 1);
    assert_eq!(a.exchange_posts[0]["action"]["type"], "order");
}

#[tokio::test]
async fn a_refused_leverage_update_refuses_the_order_unsent() {
    let server = MockServer::start().await;
    let account = hl_exchange::account(
        10_000,
        &[("BTC", d("30010"))],
        tick_at().timestamp_millis() + 1500,
    );
    {
        let mut a = account.lock().unwrap();
        a.default_leverage = ("cross".to_owned(), 20);
        a.refuse_leverage_with = Some("Cannot switch leverage type with open position.".into());
    }
    hl_exchange::mount(&server, account.clone()).await;
    let mut b = broker(&server, FillCursor::starting_at(tick_at())).await;
    b.portfolio(tick_at()).await.expect("portfolio");
    let err = b
        .execute(&btc_at("5"), d("30000"), tick_at(), tag())
        .await
        .expect_err("refused");
    match err {
        ExecuteError::Refused(BrokerRefusal { rule, message }) => {
            assert_eq!(rule, RuleCode::InvalidOrder);
            assert!(
                message.contains("Cannot switch leverage type with open position.")
                    && message.contains("5x isolated")
                    && message.contains("not sent"),
                "{message}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    {
        let a = account.lock().unwrap();
        assert_eq!(a.exchange_posts.len(), 1, "the update alone, no order");
        assert_eq!(a.exchange_posts[0]["action"]["type"], "updateLeverage");
        assert!(a.fills.is_empty());
    }
    // Above the asset's maximum (BTC: 50x in meta): refused before anything is sent.
    let later = tick_at() + chrono::Duration::minutes(5);
    let err = b
        .execute(&btc_at("60"), d("30000"), later, tag())
        .await
        .expect_err("refused");
    match err {
        ExecuteError::Refused(BrokerRefusal { rule, message }) => {
            assert_eq!(rule, RuleCode::LeverageCap);
            assert!(message.contains("50x"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(account.lock().unwrap().exchange_posts.len(), 1);
}

/// A second key (not the account's), approved as an API wallet of the account.
const AGENT_KEY: &str = "0x1123456789012345678901234567890123456789012345678901234567890123";

fn agent_broker_parts(valid_until: DateTime<Utc>) -> (hyperliquid::Address, Value) {
    let agent = Signer::from_hex(AGENT_KEY).unwrap().address();
    (
        agent,
        json!({"name": "runner", "address": agent.to_string(),
               "validUntil": valid_until.timestamp_millis()}),
    )
}

async fn agent_broker(server: &MockServer) -> Result<HyperliquidBroker, HlBrokerError> {
    HyperliquidBroker::new(
        DEPLOYMENT,
        &config(server),
        Signer::from_hex(AGENT_KEY).unwrap(),
        Arc::new(FixedClock(tick_at() + chrono::Duration::seconds(2))),
        FillCursor::starting_at(tick_at()),
        &http(),
    )
    .await
}

#[tokio::test]
async fn an_approved_agent_trades_for_the_master_account() {
    let server = MockServer::start().await;
    let account = hl_exchange::account(
        10_000,
        &[("BTC", d("30010"))],
        tick_at().timestamp_millis() + 1500,
    );
    let (agent, entry) = agent_broker_parts(tick_at() + chrono::Duration::days(30));
    account.lock().unwrap().agents = vec![entry];
    hl_exchange::mount(&server, account.clone()).await;
    let mut b = agent_broker(&server).await.expect("an approved agent");
    assert!(
        matches!(b.signer_role(), live_runner::hl_broker::SignerRole::Agent { address, .. } if *address == agent)
    );
    b.portfolio(tick_at()).await.expect("portfolio");
    let mut order = btc_at("2");
    order.stop = Some(d("29000"));
    b.execute(&order, d("30000"), tick_at(), tag())
        .await
        .expect("filled");
    let fills = b.drain_fills().await.expect("fills");
    assert_eq!(
        fills.len(),
        1,
        "the master's fill, read with the master's address"
    );

    let a = account.lock().unwrap();
    let master = Value::String(test_account().to_string());
    assert_eq!(
        a.agent_queries,
        vec![json!({"type": "extraAgents", "user": master})]
    );
    // Every read names the master account.
    for q in a
        .status_queries
        .iter()
        .chain(&a.fill_queries)
        .chain(&a.asset_queries)
    {
        assert_eq!(q["user"], master, "{q}");
    }
    assert!(!a.status_queries.is_empty() && !a.fill_queries.is_empty());
    // updateLeverage, the order and the stop trigger: all signed by the agent, no vault.
    let kinds: Vec<&str> = a
        .exchange_posts
        .iter()
        .map(|p| p["action"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["updateLeverage", "order", "order"]);
    for post in &a.exchange_posts {
        assert_eq!(post["vaultAddress"], Value::Null);
        assert_eq!(post_signer(post), agent, "signed by the agent key");
        assert_ne!(post_signer(post), test_account());
    }
    // The master's account moved.
    assert_eq!(a.positions["BTC"].0, d("0.01"));
}

#[tokio::test]
async fn an_unapproved_or_expired_agent_is_refused_naming_both_addresses() {
    let server = MockServer::start().await;
    let account = hl_exchange::account(10_000, &[("BTC", d("30010"))], 0);
    hl_exchange::mount(&server, account.clone()).await;
    let agent = Signer::from_hex(AGENT_KEY).unwrap().address();

    // Not in extraAgents (another wallet is).
    account.lock().unwrap().agents = vec![json!({"name": "other",
        "address": "0x00000000000000000000000000000000000000aa", "validUntil": 4_102_444_800_000_i64})];
    let err = agent_broker(&server).await.expect_err("not approved");
    assert!(matches!(err, HlBrokerError::NotAnAgent { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains(&agent.to_string()) && text.contains(&test_account().to_string()),
        "{text}"
    );

    // Approved, but the approval ended a second before the clock's now.
    let (_, entry) = agent_broker_parts(tick_at() + chrono::Duration::seconds(1));
    account.lock().unwrap().agents = vec![entry];
    let err = agent_broker(&server).await.expect_err("expired");
    assert!(matches!(err, HlBrokerError::AgentExpired { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains(&agent.to_string())
            && text.contains(&test_account().to_string())
            && text.contains("2026-11-02 12:00:01"),
        "{text}"
    );
    let a = account.lock().unwrap();
    assert!(a.exchange_posts.is_empty(), "nothing signed");
    assert_eq!(a.agent_queries.len(), 2);
}
