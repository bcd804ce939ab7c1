//! `ExchangeClient` against a local wiremock server: the exact signed body for a fixed nonce and
//! the published test key (signatures cross-checked against the official SDK's vectors), and the
//! typed statuses parsed from the exchange's answers.

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use hyperliquid::signing::{BulkOrder, Grouping, OrderTypeWire, OrderWire, agent_signing_hash};
use hyperliquid::{
    Action, Address, AssetInfo, ClientConfig, Cloid, ExchangeClient, HlError, Network,
    OrderRequest, OrderStatus, RetryPolicy, Signer, Tif,
};
use rust_decimal_macros::dec;
use serde_json::{Value, json};
use types::{FixedClock, OrderSide};
use wiremock::matchers::{body_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn vectors() -> Value {
    serde_json::from_str(include_str!("../fixtures/signing_vectors.json")).unwrap()
}

fn vector(name: &str, mainnet: bool) -> Value {
    vectors()["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == name && v["is_mainnet"] == mainnet)
        .unwrap()
        .clone()
}

fn signer() -> Signer {
    Signer::from_hex(vectors()["private_key"].as_str().unwrap()).unwrap()
}

fn client(server: &MockServer, network: Network, nonce_ms: i64) -> ExchangeClient {
    let clock = Arc::new(FixedClock(Utc.timestamp_millis_opt(nonce_ms).unwrap()));
    let config = ClientConfig::new(server.uri()).with_retry(RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(2),
    });
    ExchangeClient::new(&config, signer(), network, clock).unwrap()
}

/// The body the official SDK would post for this vector.
fn expected_body(v: &Value) -> Value {
    json!({
        "action": v["action"],
        "nonce": v["nonce"],
        "signature": v["signature"],
        "vaultAddress": v["vault_address"],
    })
}

fn ok_statuses(kind: &str, statuses: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "status": "ok",
        "response": {"type": kind, "data": {"statuses": statuses}}
    }))
}

fn eth() -> AssetInfo {
    AssetInfo {
        index: 1,
        sz_decimals: 4,
        max_leverage: 50,
    }
}

#[tokio::test]
async fn place_order_posts_the_sdk_signed_body_and_parses_resting() {
    for mainnet in [true, false] {
        let v = vector("order_with_cloid", mainnet);
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/exchange"))
            .and(body_json(expected_body(&v)))
            .respond_with(ok_statuses(
                "order",
                json!([{"resting": {"oid": 77738308, "cloid": "0x00000000000000000000000000000001"}}]),
            ))
            .expect(1)
            .mount(&server)
            .await;
        let network = if mainnet {
            Network::Mainnet
        } else {
            Network::Testnet
        };
        let exchange = client(&server, network, 0); // nonce 0, as in the vector
        let cloid: Cloid = "0x00000000000000000000000000000001".parse().unwrap();
        let status = exchange
            .place_order(&OrderRequest {
                asset: eth(),
                side: OrderSide::Buy,
                price: dec!(100.000),
                size: dec!(100),
                reduce_only: false,
                tif: Tif::Gtc,
                cloid: Some(cloid),
            })
            .await
            .unwrap();
        assert_eq!(
            status,
            OrderStatus::Resting {
                oid: 77_738_308,
                cloid: Some(cloid)
            }
        );
    }
}

#[tokio::test]
async fn ioc_reduce_only_action_is_signed_with_the_clock_nonce_and_fills() {
    let v = vector("order_ioc_reduce_only", true);
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/exchange"))
        .and(body_json(expected_body(&v)))
        .respond_with(ok_statuses(
            "order",
            json!([{"filled": {"totalSz": "0.0147", "avgPx": "26951.5", "oid": 189324433}}]),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let exchange = client(&server, Network::Mainnet, 1_677_777_606_040);
    // The vector's price 26951.5 predates the 5-significant-figure rule, so it is sent as a raw
    // typed action rather than through `OrderRequest` (which would round it to 26952).
    let action = Action::Order(BulkOrder {
        orders: vec![OrderWire {
            asset: 0,
            is_buy: false,
            limit_px: "26951.5".into(),
            sz: "0.0147".into(),
            reduce_only: true,
            order_type: OrderTypeWire::Limit { tif: Tif::Ioc },
            cloid: None,
        }],
        grouping: Grouping::Na,
    });
    let statuses = exchange.send(&action).await.unwrap();
    assert_eq!(
        statuses,
        vec![OrderStatus::Filled {
            oid: 189_324_433,
            total_sz: dec!(0.0147),
            avg_px: dec!(26951.5),
            cloid: None
        }]
    );
}

#[tokio::test]
async fn cancel_posts_the_sdk_signed_body() {
    for mainnet in [true, false] {
        let v = vector("cancel", mainnet);
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/exchange"))
            .and(body_json(expected_body(&v)))
            .respond_with(ok_statuses("cancel", json!(["success"])))
            .expect(1)
            .mount(&server)
            .await;
        let network = if mainnet {
            Network::Mainnet
        } else {
            Network::Testnet
        };
        let exchange = client(&server, network, 1_677_777_606_040);
        assert_eq!(
            exchange.cancel(0, 189_324_432).await.unwrap(),
            OrderStatus::Success
        );
    }
}

#[tokio::test]
async fn cancel_by_cloid_body_and_error_status() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/exchange"))
        .respond_with(ok_statuses(
            "cancel",
            json!([{"error": "Order was never placed, already canceled, or filled."}]),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let exchange = client(&server, Network::Testnet, 1_700_000_000_000);
    let cloid: Cloid = "0x1234567890abcdef1234567890abcdef".parse().unwrap();
    let status = exchange.cancel_by_cloid(5, cloid).await.unwrap();
    assert_eq!(
        status,
        OrderStatus::Error("Order was never placed, already canceled, or filled.".into())
    );

    let requests = server.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(
        body["action"],
        json!({"type": "cancelByCloid", "cancels": [{"asset": 5, "cloid": "0x1234567890abcdef1234567890abcdef"}]})
    );
    assert_eq!(body["nonce"], 1_700_000_000_000_u64);
    assert_eq!(body["vaultAddress"], Value::Null);
    // The signature recovers to the test key's address over the action's EIP-712 digest.
    let action: Action = serde_json::from_value(body["action"].clone()).unwrap();
    let hash = hyperliquid::signing::action_hash(&action, 1_700_000_000_000, None).unwrap();
    let sig: hyperliquid::Signature = serde_json::from_value(body["signature"].clone()).unwrap();
    assert_eq!(
        recover(&agent_signing_hash(&hash, Network::Testnet), &sig),
        signer().address()
    );
}

#[tokio::test]
async fn nonces_strictly_increase_under_a_fixed_clock_and_vault_is_sent() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/exchange"))
        .respond_with(ok_statuses("cancel", json!(["success"])))
        .expect(2)
        .mount(&server)
        .await;
    let vault: Address = "0x1719884eb866cb12b2287399b15f7db5e7d775ea"
        .parse()
        .unwrap();
    let exchange = client(&server, Network::Mainnet, 1_000).with_vault(vault);
    exchange.cancel(0, 1).await.unwrap();
    exchange.cancel(0, 2).await.unwrap();
    let requests = server.received_requests().await.unwrap();
    let bodies: Vec<Value> = requests
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert_eq!(bodies[0]["nonce"], 1_000);
    assert_eq!(bodies[1]["nonce"], 1_001);
    assert_eq!(
        bodies[0]["vaultAddress"],
        "0x1719884eb866cb12b2287399b15f7db5e7d775ea"
    );
    // The vault is part of the hash: the signature differs from the no-vault one.
    let action: Action = serde_json::from_value(bodies[0]["action"].clone()).unwrap();
    let with = hyperliquid::signing::action_hash(&action, 1_000, Some(&vault)).unwrap();
    let sig: hyperliquid::Signature =
        serde_json::from_value(bodies[0]["signature"].clone()).unwrap();
    assert_eq!(
        recover(&agent_signing_hash(&with, Network::Mainnet), &sig),
        signer().address()
    );
}

#[tokio::test]
async fn retries_resend_the_identical_signed_body() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/exchange"))
        .respond_with(ResponseTemplate::new(502))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/exchange"))
        .respond_with(ok_statuses("cancel", json!(["success"])))
        .mount(&server)
        .await;
    let exchange = client(&server, Network::Mainnet, 5_000);
    assert_eq!(exchange.cancel(3, 42).await.unwrap(), OrderStatus::Success);
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].body, requests[1].body,
        "same nonce, same signature"
    );
}

#[tokio::test]
async fn whole_request_rejection_and_bad_orders_are_typed_errors() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/exchange"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "status": "err",
            "response": "User or API Wallet 0x14791697260e4c9a71f18484c9f997b308e59325 does not exist."
        })))
        .expect(1)
        .mount(&server)
        .await;
    let exchange = client(&server, Network::Mainnet, 0);
    let order = OrderRequest {
        asset: eth(),
        side: OrderSide::Sell,
        price: dec!(1705.8249),
        size: dec!(0.5),
        reduce_only: true,
        tif: Tif::Ioc,
        cloid: None,
    };
    assert!(matches!(
        exchange.place_order(&order).await,
        Err(HlError::Rejected(m)) if m.contains("does not exist")
    ));
    let sent: Value =
        serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    // 1705.8249 → 5 significant figures 1705.8 (ETH allows 6 − 4 = 2 decimals).
    assert_eq!(
        sent["action"]["orders"][0],
        json!({"a": 1, "b": false, "p": "1705.8", "s": "0.5", "r": true, "t": {"limit": {"tif": "Ioc"}}})
    );

    // A size below one lot never reaches the server.
    let tiny = OrderRequest {
        size: dec!(0.00001),
        ..order
    };
    assert!(matches!(
        exchange.place_order(&tiny).await,
        Err(HlError::WireNumber { field: "size", .. })
    ));
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

fn recover(digest: &[u8; 32], sig: &hyperliquid::Signature) -> Address {
    use k256::ecdsa::{RecoveryId, Signature as K256Sig, VerifyingKey};
    let mut rs = [0u8; 64];
    rs[..32].copy_from_slice(&sig.r);
    rs[32..].copy_from_slice(&sig.s);
    let sig64 = K256Sig::from_slice(&rs).unwrap();
    let recid = RecoveryId::from_byte(sig.v - 27).unwrap();
    let vk = VerifyingKey::recover_from_prehash(digest, &sig64, recid).unwrap();
    let point = vk.to_encoded_point(false);
    let hash = hyperliquid::signing::keccak256(&point.as_bytes()[1..]);
    let mut a = [0u8; 20];
    a.copy_from_slice(&hash[12..]);
    Address(a)
}
