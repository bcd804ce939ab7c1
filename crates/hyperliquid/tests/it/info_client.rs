//! `InfoClient` against a local wiremock server replaying the real recorded responses: the exact
//! request body we send, and concrete values parsed out of the answers.

use std::time::Duration;

use chrono::{TimeZone, Utc};
use hyperliquid::{Address, ClientConfig, HlError, InfoClient, RetryPolicy};
use rust_decimal_macros::dec;
use serde_json::Value;
use types::{Interval, OrderSide, Side};
use wiremock::matchers::{body_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn fixture(name: &str) -> (Value, Value) {
    let text = match name {
        "candleSnapshot" => include_str!("../fixtures/candleSnapshot.json"),
        "clearinghouseState" => include_str!("../fixtures/clearinghouseState.json"),
        "fundingHistory" => include_str!("../fixtures/fundingHistory.json"),
        "meta" => include_str!("../fixtures/meta.json"),
        "metaAndAssetCtxs" => include_str!("../fixtures/metaAndAssetCtxs.json"),
        "userFills" => include_str!("../fixtures/userFills.json"),
        "activeAssetData" => include_str!("../fixtures/activeAssetData.json"),
        "extraAgents" => include_str!("../fixtures/extraAgents.json"),
        other => panic!("no fixture {other}"),
    };
    let v: Value = serde_json::from_str(text).unwrap();
    (v["request"].clone(), v["response"].clone())
}

/// A server that answers `POST /info` with the fixture's response only when the body is exactly
/// the fixture's recorded request.
async fn serve(name: &str) -> (MockServer, InfoClient) {
    let (request, response) = fixture(name);
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/info"))
        .and(body_json(request))
        .respond_with(ResponseTemplate::new(200).set_body_json(response))
        .expect(1)
        .mount(&server)
        .await;
    let client = InfoClient::new(&fast_config(&server.uri())).unwrap();
    (server, client)
}

fn fast_config(uri: &str) -> ClientConfig {
    ClientConfig::new(uri)
        .with_timeout(Duration::from_secs(5))
        .with_retry(RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
        })
}

fn ms(t: i64) -> chrono::DateTime<Utc> {
    Utc.timestamp_millis_opt(t).unwrap()
}

#[tokio::test]
async fn candle_snapshot_sends_the_recorded_request_and_parses_bars() {
    let (_server, client) = serve("candleSnapshot").await;
    let bars = client
        .candle_snapshot(
            "kPEPE",
            Interval::H1,
            ms(1_684_702_007_000),
            ms(1_684_784_807_000),
        )
        .await
        .unwrap();
    assert_eq!(bars.len(), 24);
    // first candle: t 1684699200000 = 2023-05-21 20:00 UTC, o 0.001601, c 0.001604, v 520665683.0
    let first = &bars[0];
    assert_eq!(
        first.time,
        Utc.with_ymd_and_hms(2023, 5, 21, 20, 0, 0).unwrap()
    );
    assert_eq!(first.open, dec!(0.001601));
    assert_eq!(first.close, dec!(0.001604));
    assert_eq!(first.high, dec!(0.001616));
    assert_eq!(first.volume, dec!(520665683));
    assert_eq!(first.volume.to_string(), "520665683"); // trailing ".0" stripped
    assert_eq!(bars[23].close, dec!(0.00154));
    assert!(
        bars.windows(2)
            .all(|w| w[1].time - w[0].time == Interval::H1.duration())
    );
}

#[tokio::test]
async fn meta_gives_asset_ids_and_lot_sizes() {
    let (_server, client) = serve("meta").await;
    let meta = client.meta().await.unwrap();
    assert_eq!(meta.universe.len(), 28);
    let btc = meta.asset("BTC").unwrap();
    assert_eq!((btc.index, btc.sz_decimals, btc.max_leverage), (0, 5, 50));
    let pepe = meta.asset("kPEPE").unwrap();
    assert_eq!((pepe.index, pepe.sz_decimals), (15, 0));
    assert_eq!(meta.asset("APT").unwrap().index, 27);
    assert!(meta.asset("KPEPE").is_none());
    assert!(matches!(meta.require_asset("NOPE"), Err(HlError::UnknownAsset(c)) if c == "NOPE"));
}

#[tokio::test]
async fn meta_and_asset_ctxs_parses_the_documented_shape() {
    let (_server, client) = serve("metaAndAssetCtxs").await;
    let m = client.meta_and_asset_ctxs().await.unwrap();
    assert_eq!(m.ctxs.len(), 3);
    let btc = m.ctx("BTC").unwrap();
    assert_eq!(btc.mark_px, dec!(26951.0));
    assert_eq!(btc.funding, dec!(0.0000125));
    assert_eq!(btc.open_interest, dec!(688.11));
    assert_eq!(btc.mid_px, Some(dec!(26951.5)));
    let eth = m.ctx("ETH").unwrap();
    assert_eq!(
        (eth.mid_px, eth.premium, eth.impact_pxs.as_ref()),
        (None, None, None)
    );
    assert_eq!(eth.oracle_px, dec!(1706.1));
    assert_eq!(eth.funding, dec!(-0.00002));
    assert!(m.meta.universe[2].only_isolated);
    assert_eq!(m.ctx("kPEPE").unwrap().prev_day_px, dec!(0.001601));
}

#[tokio::test]
async fn funding_history_sends_no_end_time_when_none() {
    let (_server, client) = serve("fundingHistory").await;
    let rates = client
        .funding_history("BTC", ms(1_681_923_833_000), None)
        .await
        .unwrap();
    assert_eq!(rates.len(), 1038);
    assert_eq!(rates[0].funding_rate, dec!(-0.00061334));
    assert_eq!(rates[0].premium, dec!(-0.00091334));
    assert_eq!(rates[0].time, ms(1_683_849_600_048));
    assert_eq!(rates[1037].funding_rate, dec!(0.0000125));
    assert!(rates.iter().all(|r| r.coin == "BTC"));
}

#[tokio::test]
async fn clearinghouse_state_becomes_account_state_and_positions() {
    let (_server, client) = serve("clearinghouseState").await;
    let user: Address = "0x5e9ee1089755c3435139848e47e6635505d5a13a"
        .parse()
        .unwrap();
    let account = client.account_state(user).await.unwrap();
    assert_eq!(account.equity_usd, dec!(1182.312496));
    assert_eq!(account.available_margin_usd, dec!(1010.57173));
    assert_eq!(account.margin_used_usd, dec!(171.740766));
    assert_eq!(account.total_notional_usd, dec!(3434.815334));
    assert_eq!(account.positions.len(), 12);
    let symbols: Vec<_> = account
        .positions
        .iter()
        .map(|p| p.symbol.as_str())
        .collect();
    let mut sorted = symbols.clone();
    sorted.sort_unstable();
    assert_eq!(symbols, sorted, "positions are ordered by symbol");

    let btc = account
        .positions
        .iter()
        .find(|p| p.symbol == "BTC")
        .unwrap();
    assert_eq!(btc.side, Side::Short); // szi -0.00785
    assert_eq!(btc.qty, dec!(0.00785));
    assert_eq!(btc.entry_price, dec!(26951));
    // mark = positionValue / |szi| = 211.64542 / 0.00785 = 26961.2
    assert_eq!(btc.mark_price, dec!(26961.2));
    assert_eq!(btc.liquidation_price, Some(dec!(173198.69592357)));
    assert_eq!(btc.leverage, dec!(20));
    assert_eq!(btc.unrealized_pnl_usd, dec!(-0.08007));
    assert_eq!(btc.margin_usd, dec!(10.582271));

    let eth = account
        .positions
        .iter()
        .find(|p| p.symbol == "ETH")
        .unwrap();
    assert_eq!(
        (eth.side, eth.qty, eth.entry_price),
        (Side::Long, dec!(0.1334), dec!(1705.82))
    );
    // 227.675114 / 0.1334 = 1706.71
    assert_eq!(eth.mark_price, dec!(1706.71));
    assert_eq!(eth.liquidation_price, None);

    let at = Utc.with_ymd_and_hms(2023, 5, 22, 0, 0, 0).unwrap();
    let snap = account.to_portfolio_snapshot(at, dec!(12.5), dec!(0.75));
    assert_eq!(snap.equity_usd, dec!(1182.312496));
    assert_eq!(snap.available_margin_usd, dec!(1010.57173));
    assert_eq!(snap.position("DYDX").unwrap().side, Side::Short);
    assert_eq!(
        (snap.realized_pnl_usd, snap.fees_paid_usd),
        (dec!(12.5), dec!(0.75))
    );
}

#[tokio::test]
async fn user_fills_are_oldest_first_with_stable_ids() {
    let (_server, client) = serve("userFills").await;
    let user: Address = "0xb7b6f3cea3f66bf525f5d8f965f6dbf6d9b017b2"
        .parse()
        .unwrap();
    let fills = client.user_fills(user).await.unwrap();
    assert_eq!(fills.len(), 500);
    assert!(fills.windows(2).all(|w| w[0].time <= w[1].time));

    // The oldest fill is the last one on the wire.
    let oldest = fills[0].to_fill();
    assert_eq!(oldest.symbol, "SUI");
    assert_eq!(oldest.side, OrderSide::Buy); // "B"
    assert_eq!((oldest.price, oldest.qty), (dec!(1.3281), dec!(104.4)));
    assert_eq!(oldest.fee_usd, dec!(0));
    assert_eq!(oldest.time, ms(1_683_245_555_699));
    assert_eq!(
        oldest.id,
        "0xb454293b90fb4745a0dd04017553b9011500b8b3e8cbe540c9ac779d59fff2cc:189315555:0"
    );
    assert!(!oldest.liquidation);
    assert_eq!(fills[0].dir, "Close Short");
    assert_eq!(fills[0].start_position, dec!(-1839.2));
    assert_eq!(fills[0].closed_pnl, dec!(0.089784));

    // The newest transaction: three SUI sells of order 189324432 in execution order
    // (start positions 4623.5 → 4480.8 → 731.7), indexed 0, 1, 2.
    let newest: Vec<_> = fills[497..].iter().collect();
    let hash = "0x3d4770d0527317ef77c404017559cb0103000b34010cc95e97b437cbc3b6087a";
    for (i, f) in newest.iter().enumerate() {
        assert_eq!(f.id, format!("{hash}:189324432:{i}"));
        assert_eq!(f.side.order_side(), OrderSide::Sell); // "A"
    }
    let starts: Vec<_> = newest.iter().map(|f| f.start_position).collect();
    assert_eq!(starts, [dec!(4623.5), dec!(4480.8), dec!(731.7)]);
    assert_eq!(newest[0].px, dec!(1.3189));
    assert_eq!(newest[0].closed_pnl, dec!(-0.25686));

    // Ids are unique even where the API repeats hash, oid and start position.
    let mut ids: Vec<_> = fills.iter().map(|f| f.id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 500);

    assert_eq!(
        fills
            .iter()
            .filter(|f| f.to_fill().side == OrderSide::Buy)
            .count(),
        265
    );
    // Σ closedPnl over the 500 fills, summed exactly: −152.586132
    let total: rust_decimal::Decimal = fills.iter().map(|f| f.closed_pnl).sum();
    assert_eq!(total, dec!(-152.586132));
    assert!(fills.iter().all(|f| !f.to_fill().liquidation));
}

#[tokio::test]
async fn rate_limit_then_success_is_retried() {
    let (request, response) = fixture("meta");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/info"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "0"))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/info"))
        .and(body_json(request))
        .respond_with(ResponseTemplate::new(200).set_body_json(response))
        .expect(1)
        .mount(&server)
        .await;
    let client = InfoClient::new(&fast_config(&server.uri())).unwrap();
    let meta = client.meta().await.unwrap();
    assert_eq!(meta.universe[1].name, "ETH");
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn server_errors_exhaust_the_bounded_retries() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/info"))
        .respond_with(ResponseTemplate::new(500).set_body_string("internal error"))
        .expect(3)
        .mount(&server)
        .await;
    let client = InfoClient::new(&fast_config(&server.uri())).unwrap();
    match client.meta().await.unwrap_err() {
        HlError::RetriesExhausted {
            endpoint,
            attempts,
            last,
            ..
        } => {
            assert_eq!((endpoint, attempts), ("info", 3));
            assert!(
                matches!(*last, HlError::Status { status: 500, ref body, .. } if body == "internal error")
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/info"))
        .respond_with(
            ResponseTemplate::new(422).set_body_string("Failed to deserialize the JSON body"),
        )
        .expect(1)
        .mount(&server)
        .await;
    let client = InfoClient::new(&fast_config(&server.uri())).unwrap();
    let err = client.meta().await.unwrap_err();
    assert!(
        matches!(err, HlError::Status { status: 422, .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn timeouts_are_retried_then_reported() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/info"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_millis(400)))
        .mount(&server)
        .await;
    let config = fast_config(&server.uri())
        .with_timeout(Duration::from_millis(50))
        .with_retry(RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(1),
        });
    let client = InfoClient::new(&config).unwrap();
    match client.meta().await.unwrap_err() {
        HlError::RetriesExhausted { attempts, last, .. } => {
            assert_eq!(attempts, 2);
            assert!(matches!(*last, HlError::Transport { .. }), "{last:?}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn connection_refused_is_a_typed_transport_error() {
    // Bind then drop a listener to get a local port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = fast_config(&format!("http://127.0.0.1:{port}"));
    let client = InfoClient::new(&config).unwrap();
    match client.meta().await.unwrap_err() {
        HlError::RetriesExhausted { attempts, last, .. } => {
            assert_eq!(attempts, 3);
            assert!(matches!(*last, HlError::Transport { .. }), "{last:?}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn malformed_bodies_name_the_bad_field() {
    let (_, mut response) = fixture("candleSnapshot");
    response[3]["c"] = Value::String("1.2.3".into());
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/info"))
        .respond_with(ResponseTemplate::new(200).set_body_json(response))
        .mount(&server)
        .await;
    let client = InfoClient::new(&fast_config(&server.uri())).unwrap();
    let err = client
        .candle_snapshot("kPEPE", Interval::H1, ms(0), ms(1))
        .await
        .unwrap_err();
    match &err {
        HlError::Decode { what, path, .. } => {
            assert_eq!((*what, path.as_str()), ("candleSnapshot", "[3].c"));
        }
        other => panic!("unexpected {other:?}"),
    }

    // Not JSON at all.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("<html>gateway</html>"))
        .mount(&server)
        .await;
    let client = InfoClient::new(&fast_config(&server.uri())).unwrap();
    let user: Address = "0x5e9ee1089755c3435139848e47e6635505d5a13a"
        .parse()
        .unwrap();
    assert!(matches!(
        client.clearinghouse_state(user).await,
        Err(HlError::Decode {
            what: "clearinghouseState",
            ..
        })
    ));

    // A fill with a side that is neither "B" nor "A".
    let (_, mut fills) = fixture("userFills");
    fills[7]["side"] = Value::String("X".into());
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fills))
        .mount(&server)
        .await;
    let client = InfoClient::new(&fast_config(&server.uri())).unwrap();
    match client.user_fills(user).await.unwrap_err() {
        HlError::Decode { path, .. } => assert_eq!(path, "[7].side"),
        other => panic!("unexpected {other:?}"),
    }
}

/// `orderStatus` looked up by client order id: the documented request (`oid` carries the cloid
/// as a hex string) and the documented answers — a found order (the shape of the API docs'
/// example, not a recording) and `unknownOid`.
#[tokio::test]
async fn order_status_by_cloid_finds_an_order_or_reports_it_unknown() {
    use hyperliquid::{Cloid, HlSide, OrderLookup, OrderRef, OrderState};
    let user: Address = "0x5e9ee1089755c3435139848e47e6635505d5a13a"
        .parse()
        .unwrap();
    let cloid: Cloid = "0x1234567890abcdef1234567890abcdef".parse().unwrap();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/info"))
        .and(body_json(serde_json::json!({
            "type": "orderStatus",
            "user": "0x5e9ee1089755c3435139848e47e6635505d5a13a",
            "oid": "0x1234567890abcdef1234567890abcdef",
        })))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "status": "order",
            "order": {
                "order": {
                    "coin": "ETH", "side": "A", "limitPx": "2412.7", "sz": "0.0",
                    "oid": 1, "timestamp": 1_724_361_546_645_i64,
                    "triggerCondition": "N/A", "isTrigger": false, "triggerPx": "0.0",
                    "children": [], "isPositionTpsl": false, "reduceOnly": true,
                    "orderType": "Market", "origSz": "0.0076", "tif": "FrontendMarket",
                    "cloid": "0x1234567890abcdef1234567890abcdef"
                },
                "status": "filled",
                "statusTimestamp": 1_724_361_546_645_i64
            }
        })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/info"))
        .and(body_json(serde_json::json!({
            "type": "orderStatus",
            "user": "0x5e9ee1089755c3435139848e47e6635505d5a13a",
            "oid": 77_738_308_u64,
        })))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(serde_json::json!({"status": "unknownOid"})),
        )
        .expect(1)
        .mount(&server)
        .await;
    let client = InfoClient::new(&fast_config(&server.uri())).unwrap();
    let OrderLookup::Found(o) = client
        .order_status(user, OrderRef::Cloid(cloid))
        .await
        .unwrap()
    else {
        panic!("the order is known")
    };
    assert_eq!((o.coin.as_str(), o.side, o.oid), ("ETH", HlSide::Ask, 1));
    assert_eq!(
        (o.orig_sz, o.remaining_sz, o.filled_sz()),
        (dec!(0.0076), dec!(0), dec!(0.0076))
    );
    assert_eq!(o.limit_px, dec!(2412.7));
    assert_eq!(o.cloid, Some(cloid));
    assert!(o.reduce_only);
    assert_eq!(o.state(), OrderState::Filled);
    assert_eq!(o.placed_at, ms(1_724_361_546_645));
    assert_eq!(
        client
            .order_status(user, OrderRef::Oid(77_738_308))
            .await
            .unwrap(),
        OrderLookup::Unknown
    );
}

#[test]
fn order_status_words_fall_into_families() {
    use hyperliquid::wire::parse_order_status;
    use hyperliquid::{OrderLookup, OrderState};
    let body = |status: &str| {
        format!(
            r#"{{"status":"order","order":{{"order":{{"coin":"BTC","side":"B","limitPx":"60000","sz":"0.01","oid":5,"timestamp":1,"origSz":"0.01","cloid":null}},"status":"{status}","statusTimestamp":2}}}}"#
        )
    };
    for (word, state) in [
        ("open", OrderState::Open),
        ("triggered", OrderState::Open),
        ("filled", OrderState::Filled),
        ("canceled", OrderState::Canceled),
        ("marginCanceled", OrderState::Canceled),
        ("rejected", OrderState::Rejected),
        ("perpMarginRejected", OrderState::Rejected),
        ("iocCancelRejected", OrderState::Rejected),
        ("somethingNew", OrderState::Other),
    ] {
        let OrderLookup::Found(o) = parse_order_status(body(word).as_bytes()).unwrap() else {
            panic!("{word}: found")
        };
        assert_eq!(o.state(), state, "{word}");
        assert_eq!(o.cloid, None);
        assert_eq!(o.filled_sz(), dec!(0), "{word}");
    }
    let err = parse_order_status(br#"{"status":"weird"}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("weird"), "{err}");
    let err = parse_order_status(br#"{"status":"order"}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("without an order"), "{err}");
}

#[tokio::test]
async fn active_asset_data_gives_the_leverage_setting_of_a_coin() {
    let (_server, client) = serve("activeAssetData").await;
    let user = "0x5e9ee1089755c3435139848e47e6635505d5a13a"
        .parse()
        .unwrap();
    let data = client.active_asset_data(user, "ETH").await.unwrap();
    assert_eq!(data.user, user);
    assert_eq!(data.coin, "ETH");
    assert_eq!((data.leverage.value, data.leverage.is_cross()), (3, false));
    assert_eq!(data.leverage.raw_usd, Some(dec!(-1512.448122)));
    assert_eq!(data.max_trade_szs.len(), 2);
    assert_eq!(data.max_trade_szs[0].0, dec!(2.8131));
    assert_eq!(data.mark_px, Some(dec!(1803.8)));
    // A cross setting, the shape without rawUsd, and a margin mode that is neither.
    let cross = br#"{"user":"0x5e9ee1089755c3435139848e47e6635505d5a13a","coin":"BTC","leverage":{"type":"cross","value":20},"maxTradeSzs":["0.0","0.0"],"availableToTrade":["0.0","0.0"],"markPx":"26951.0"}"#;
    let d = hyperliquid::wire::parse_active_asset_data(cross).unwrap();
    assert_eq!((d.leverage.value, d.leverage.is_cross()), (20, true));
    let odd = br#"{"user":"0x5e9ee1089755c3435139848e47e6635505d5a13a","coin":"BTC","leverage":{"type":"portfolio","value":20}}"#;
    let err = hyperliquid::wire::parse_active_asset_data(odd)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("leverage.type") && err.contains("portfolio"),
        "{err}"
    );
    let bad = br#"{"user":"0x5e9ee1089755c3435139848e47e6635505d5a13a","coin":"BTC","leverage":{"type":"cross","value":"20"}}"#;
    let err = hyperliquid::wire::parse_active_asset_data(bad)
        .unwrap_err()
        .to_string();
    assert!(err.contains("leverage.value"), "{err}");
}

#[tokio::test]
async fn extra_agents_lists_the_approved_agent_wallets_with_expiry() {
    let (_server, client) = serve("extraAgents").await;
    let master = "0x5e9ee1089755c3435139848e47e6635505d5a13a"
        .parse()
        .unwrap();
    let agents = client.extra_agents(master).await.unwrap();
    assert_eq!(agents.len(), 2);
    assert_eq!(agents[0].name, "runner");
    // Mixed-case (checksummed) addresses parse to the same bytes as lowercase ones.
    assert_eq!(
        agents[0].address.to_string(),
        "0xd2a77e1b9f2c8ae0a5bc9d4e2f1a36b0c7e59a10"
    );
    assert_eq!(agents[0].valid_until, ms(1_767_225_600_000));
    assert_eq!(agents[1].name, "");
    assert_eq!(agents[1].valid_until, ms(1_735_689_600_000));
    // An account that never approved one answers null or [].
    assert!(
        hyperliquid::wire::parse_extra_agents(b"null")
            .unwrap()
            .is_empty()
    );
    assert!(
        hyperliquid::wire::parse_extra_agents(b"[]")
            .unwrap()
            .is_empty()
    );
    let err =
        hyperliquid::wire::parse_extra_agents(br#"[{"name":"x","address":"0x12","validUntil":1}]"#)
            .unwrap_err()
            .to_string();
    assert!(err.contains("[0].address"), "{err}");
}
