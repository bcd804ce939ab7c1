//! A mock Hyperliquid account speaking the exchange's wire format: `clearinghouseState`,
//! `userFillsByTime`, `orderStatus`, `meta`, `activeAssetData` and `extraAgents` on
//! `POST /info`, signed orders, cancels and `updateLeverage` on `POST /exchange`. Orders fill at the mock's mark when their limit allows it (else the
//! exchange's "could not immediately match" error), move the position and append a fill in the
//! `userFills` shape; a configured refusal answers every order with the exchange's error status.
//! The recorded responses of the hyperliquid crate's fixtures (real API answers) are served
//! where a test wants them verbatim.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use hyperliquid::{Address, Signer};
use rust_decimal::Decimal;
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The published test key of the official SDK's signing tests. Never used for anything real.
pub(crate) const TEST_KEY: &str =
    "0x0123456789012345678901234567890123456789012345678901234567890123";

/// The address of [`TEST_KEY`].
pub(crate) fn test_account() -> Address {
    Signer::from_hex(TEST_KEY).expect("test key").address()
}

/// The recorded response of the hyperliquid crate's fixture `name` (a real API answer).
pub(crate) fn recorded(name: &str) -> Value {
    let text = match name {
        "clearinghouseState" => {
            include_str!("../../../../hyperliquid/tests/fixtures/clearinghouseState.json")
        }
        "userFills" => include_str!("../../../../hyperliquid/tests/fixtures/userFills.json"),
        "meta" => include_str!("../../../../hyperliquid/tests/fixtures/meta.json"),
        other => panic!("no fixture {other}"),
    };
    let v: Value = serde_json::from_str(text).expect("fixture json");
    v["response"].clone()
}

/// A liquidation fill in the documented `userFills` shape (with the `liquidation` object newer
/// API versions attach): the exchange closed a long of `sz` `coin` at `px`.
pub(crate) fn liquidation_fill(coin: &str, px: &str, sz: &str, time_ms: i64, tid: u64) -> Value {
    json!({
        "coin": coin, "px": px, "sz": sz, "side": "A", "time": time_ms,
        "startPosition": sz, "dir": "Liquidated Cross Long", "closedPnl": "-42.5",
        "hash": "0x0000000000000000000000000000000000000000000000000000000000000000",
        "oid": 900_000_001_u64, "crossed": true, "fee": "0.0", "tid": tid,
        "feeToken": "USDC",
        "liquidation": {
            "liquidatedUser": test_account().to_string(),
            "markPx": px,
            "method": "market"
        }
    })
}

/// The mock account's state; tests read and steer it.
#[derive(Debug, Default)]
pub(crate) struct Account {
    /// Cash before unrealized PnL (USD).
    pub cash: Decimal,
    /// Signed size and entry price per coin.
    pub positions: BTreeMap<String, (Decimal, Decimal)>,
    /// Where orders fill, per coin.
    pub marks: BTreeMap<String, Decimal>,
    /// Every fill, oldest first, in the `userFills` wire shape.
    pub fills: Vec<Value>,
    /// Orders by client order id: the `orderStatus` answer's `order.order` and status.
    pub orders: BTreeMap<String, (Value, String)>,
    /// When the exchange's fills happen (Unix ms).
    pub fill_time_ms: i64,
    /// Answer every order with this error status.
    pub refuse_with: Option<String>,
    /// Answer `/exchange` with this HTTP status (e.g. 502) instead.
    pub exchange_http_status: Option<u16>,
    /// Every `/exchange` body received.
    pub exchange_posts: Vec<Value>,
    /// Every `orderStatus` body received.
    pub status_queries: Vec<Value>,
    /// Every `userFillsByTime` body received.
    pub fill_queries: Vec<Value>,
    /// Trigger (stop-loss / take-profit) orders resting, as signed (`{a, b, p, s, r, t, c}`).
    pub triggers: Vec<Value>,
    /// Every `cancelByCloid` cancel received (`{asset, cloid}`).
    pub cancels: Vec<Value>,
    /// The leverage setting per coin (`cross`/`isolated`, value); a coin not listed has
    /// `default_leverage`.
    pub leverage: BTreeMap<String, (String, u32)>,
    /// The setting of a coin never changed. [`account`] makes it isolated 1x, what the tests'
    /// 1x orders ask for (so they see no `updateLeverage`); the exchange's own default is cross.
    pub default_leverage: (String, u32),
    /// Answer every `updateLeverage` with this error.
    pub refuse_leverage_with: Option<String>,
    /// Every `activeAssetData` body received.
    pub asset_queries: Vec<Value>,
    /// The account's approved API wallets, in the `extraAgents` shape.
    pub agents: Vec<Value>,
    /// Every `extraAgents` body received.
    pub agent_queries: Vec<Value>,
    next_oid: u64,
    next_tid: u64,
}

fn dec(v: &Value) -> Decimal {
    v.as_str()
        .unwrap_or_default()
        .parse()
        .unwrap_or(Decimal::ZERO)
}

fn text(d: Decimal) -> String {
    d.normalize().to_string()
}

const LEVERAGE: i64 = 5;

impl Account {
    /// The leverage setting of `coin`.
    pub(crate) fn leverage_of(&self, coin: &str) -> (String, u32) {
        self.leverage
            .get(coin)
            .cloned()
            .unwrap_or_else(|| self.default_leverage.clone())
    }

    fn active_asset_data(&self, body: &Value) -> Value {
        let coin = body["coin"].as_str().unwrap_or_default();
        let (kind, value) = self.leverage_of(coin);
        json!({
            "user": body["user"], "coin": coin,
            "leverage": {"type": kind, "value": value},
            "maxTradeSzs": ["1.0", "1.0"], "availableToTrade": ["1000.0", "1000.0"],
            "markPx": text(self.marks.get(coin).copied().unwrap_or(Decimal::ONE)),
        })
    }

    fn clearinghouse_state(&self) -> Value {
        let mut positions = Vec::new();
        let mut upnl_total = Decimal::ZERO;
        let mut margin_total = Decimal::ZERO;
        let mut ntl_total = Decimal::ZERO;
        for (coin, (szi, entry)) in &self.positions {
            if szi.is_zero() {
                continue;
            }
            let mark = self.marks.get(coin).copied().unwrap_or(*entry);
            let value = szi.abs() * mark;
            let upnl = (mark - entry) * szi;
            // Margin at a fixed 5x (the mock does not model margin per setting); the position
            // reports the coin's leverage setting.
            let margin = value / Decimal::from(LEVERAGE);
            let (kind, lev) = self.leverage_of(coin);
            upnl_total += upnl;
            margin_total += margin;
            ntl_total += value;
            positions.push(json!({
                "position": {
                    "coin": coin, "entryPx": text(*entry),
                    "leverage": {"type": kind, "value": lev},
                    "liquidationPx": null, "marginUsed": text(margin),
                    "maxTradeSzs": ["1", "1"], "positionValue": text(value),
                    "returnOnEquity": "0.0", "szi": text(*szi), "unrealizedPnl": text(upnl)
                },
                "type": "oneWay"
            }));
        }
        let equity = self.cash + upnl_total;
        let summary = json!({
            "accountValue": text(equity), "totalMarginUsed": text(margin_total),
            "totalNtlPos": text(ntl_total), "totalRawUsd": text(self.cash)
        });
        json!({
            "assetPositions": positions,
            "crossMarginSummary": summary,
            "marginSummary": summary,
            "withdrawable": text(equity - margin_total),
        })
    }

    fn order_status(&self, oid: &Value) -> Value {
        let key = oid.as_str().unwrap_or_default();
        match self.orders.get(key) {
            Some((order, status)) => json!({
                "status": "order",
                "order": {"order": order, "status": status, "statusTimestamp": self.fill_time_ms}
            }),
            None => json!({"status": "unknownOid"}),
        }
    }

    fn user_fills_by_time(&self, start: i64, end: Option<i64>) -> Value {
        // Newest first, as the exchange lists them.
        let fills: Vec<Value> = self
            .fills
            .iter()
            .filter(|f| {
                let t = f["time"].as_i64().unwrap_or(0);
                t >= start && end.is_none_or(|e| t <= e)
            })
            .rev()
            .cloned()
            .collect();
        Value::Array(fills)
    }

    /// Executes one order of a signed `order` action; returns its status object.
    fn place(&mut self, order: &Value) -> Value {
        let universe = recorded("meta")["universe"].clone();
        let asset = order["a"].as_u64().unwrap_or(u64::MAX) as usize;
        let Some(coin) = universe[asset]["name"].as_str().map(str::to_owned) else {
            return json!({"error": format!("Invalid asset {asset}")});
        };
        let is_buy = order["b"].as_bool().unwrap_or(false);
        let limit = dec(&order["p"]);
        let sz = dec(&order["s"]);
        let cloid = order["c"].as_str().map(str::to_owned);
        self.next_oid += 1;
        let oid = 1_000 + self.next_oid;
        let side = if is_buy { "B" } else { "A" };
        let mut wire_order = json!({
            "coin": coin, "side": side, "limitPx": order["p"], "sz": order["s"],
            "oid": oid, "timestamp": self.fill_time_ms, "origSz": order["s"],
            "cloid": cloid, "reduceOnly": order["r"], "orderType": "Limit", "tif": "Ioc",
            "triggerCondition": "N/A", "isTrigger": false, "triggerPx": "0.0",
            "children": [], "isPositionTpsl": false
        });
        let refuse = |me: &mut Account, message: String, status: &str| {
            if let Some(c) = &cloid {
                me.orders
                    .insert(c.clone(), (wire_order.clone(), status.to_owned()));
            }
            json!({ "error": message })
        };
        if let Some(message) = self.refuse_with.clone() {
            return refuse(self, message, "perpMarginRejected");
        }
        if order["t"]["trigger"].is_object() {
            // A trigger order rests until `fire_triggers` executes it.
            if let Some(c) = &cloid {
                wire_order["isTrigger"] = json!(true);
                wire_order["triggerPx"] = order["t"]["trigger"]["triggerPx"].clone();
                self.orders
                    .insert(c.clone(), (wire_order.clone(), "open".to_owned()));
            }
            self.triggers.push(order.clone());
            return json!({"resting": {"oid": oid}});
        }
        let mark = self.marks.get(&coin).copied().unwrap_or(limit);
        if (is_buy && mark > limit) || (!is_buy && mark < limit) {
            return refuse(
                self,
                format!(
                    "Order could not immediately match against any resting orders. asset={asset}"
                ),
                "iocCancelRejected",
            );
        }
        let signed = if is_buy { sz } else { -sz };
        let (start, entry) = self
            .positions
            .get(&coin)
            .copied()
            .unwrap_or((Decimal::ZERO, Decimal::ZERO));
        let after = start + signed;
        let closing = if start.is_zero() || start.is_sign_positive() == is_buy {
            Decimal::ZERO
        } else {
            sz.min(start.abs())
        };
        let closed_pnl = if start.is_sign_positive() {
            (mark - entry) * closing
        } else {
            (entry - mark) * closing
        };
        let new_entry = if after.is_zero() {
            Decimal::ZERO
        } else if closing.is_zero() {
            (entry * start.abs() + mark * sz) / after.abs()
        } else if closing < sz {
            mark
        } else {
            entry
        };
        let fee = (mark * sz * Decimal::new(45, 5)).round_dp(6);
        self.cash += closed_pnl - fee;
        self.positions.insert(coin.clone(), (after, new_entry));
        let dir = if start.is_zero() || start.is_sign_positive() == is_buy {
            if is_buy { "Open Long" } else { "Open Short" }
        } else if !after.is_zero() && after.is_sign_positive() != start.is_sign_positive() {
            if is_buy {
                "Short > Long"
            } else {
                "Long > Short"
            }
        } else if is_buy {
            "Close Short"
        } else {
            "Close Long"
        };
        self.next_tid += 1;
        self.fills.push(json!({
            "coin": coin, "px": text(mark), "sz": text(sz), "side": side,
            "time": self.fill_time_ms, "startPosition": text(start), "dir": dir,
            "closedPnl": text(closed_pnl), "hash": format!("0x{:064x}", oid), "oid": oid,
            "crossed": true, "fee": text(fee), "tid": 500_000 + self.next_tid,
            "feeToken": "USDC", "cloid": cloid
        }));
        wire_order["sz"] = json!("0.0");
        if let Some(c) = &cloid {
            self.orders
                .insert(c.clone(), (wire_order, "filled".to_owned()));
        }
        json!({"filled": {"totalSz": text(sz), "avgPx": text(mark), "oid": oid}})
    }
}

impl Account {
    /// Moves `coin`'s mark to `mark` and executes every resting trigger on it whose trigger
    /// price the mark reached (a sell's stop at or below, its take-profit at or above; a buy's
    /// the other way), as a reduce-only market fill at the mark under the trigger's client order
    /// id; the exchange then drops the position's other triggers with it.
    pub(crate) fn fire_triggers(&mut self, coin: &str, mark: Decimal) {
        self.marks.insert(coin.to_owned(), mark);
        let universe = recorded("meta")["universe"].clone();
        let on_coin = |o: &Value| {
            universe[o["a"].as_u64().unwrap_or(u64::MAX) as usize]["name"].as_str() == Some(coin)
        };
        let hit = self.triggers.iter().position(|o| {
            let t = &o["t"]["trigger"];
            let px = dec(&t["triggerPx"]);
            let sell = !o["b"].as_bool().unwrap_or(false);
            on_coin(o)
                && match (t["tpsl"].as_str(), sell) {
                    (Some("sl"), true) | (Some("tp"), false) => mark <= px,
                    (Some("tp"), true) | (Some("sl"), false) => mark >= px,
                    _ => false,
                }
        });
        let Some(i) = hit else { return };
        let order = self.triggers.remove(i);
        let size = self
            .positions
            .get(coin)
            .map_or(Decimal::ZERO, |(szi, _)| szi.abs())
            .min(dec(&order["s"]));
        let market = json!({
            "a": order["a"], "b": order["b"], "p": text(mark), "s": text(size), "r": true,
            "t": {"limit": {"tif": "Ioc"}}, "c": order["c"],
        });
        self.place(&market);
        // The position is closed: its other triggers are cancelled by the exchange.
        self.triggers.retain(|o| !on_coin(o));
    }
}

/// The mock's shared state.
pub(crate) type Shared = Arc<Mutex<Account>>;

struct Info(Shared);

impl Respond for Info {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
            return ResponseTemplate::new(400);
        };
        let mut a = self.0.lock().expect("mock account");
        let answer = match body["type"].as_str() {
            Some("clearinghouseState") => a.clearinghouse_state(),
            Some("orderStatus") => {
                a.status_queries.push(body.clone());
                a.order_status(&body["oid"])
            }
            Some("userFillsByTime") => {
                a.fill_queries.push(body.clone());
                a.user_fills_by_time(
                    body["startTime"].as_i64().unwrap_or(0),
                    body["endTime"].as_i64(),
                )
            }
            Some("meta") => recorded("meta"),
            Some("activeAssetData") => {
                a.asset_queries.push(body.clone());
                a.active_asset_data(&body)
            }
            Some("extraAgents") => {
                a.agent_queries.push(body.clone());
                Value::Array(a.agents.clone())
            }
            _ => return ResponseTemplate::new(422).set_body_string("unknown request"),
        };
        ResponseTemplate::new(200).set_body_json(answer)
    }
}

struct Exchange(Shared);

impl Respond for Exchange {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
            return ResponseTemplate::new(400);
        };
        let mut a = self.0.lock().expect("mock account");
        a.exchange_posts.push(body.clone());
        if let Some(status) = a.exchange_http_status {
            return ResponseTemplate::new(status).set_body_string("bad gateway");
        }
        if body["action"]["type"] == "cancelByCloid" {
            let cancels = body["action"]["cancels"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let statuses: Vec<Value> = cancels
                .iter()
                .map(|c| {
                    a.cancels.push(c.clone());
                    let before = a.triggers.len();
                    a.triggers.retain(|o| o["c"] != c["cloid"]);
                    if a.triggers.len() < before {
                        json!("success")
                    } else {
                        json!({"error": "Order was never placed, already canceled, or filled."})
                    }
                })
                .collect();
            return ResponseTemplate::new(200).set_body_json(json!({
                "status": "ok",
                "response": {"type": "cancel", "data": {"statuses": statuses}}
            }));
        }
        if body["action"]["type"] == "updateLeverage" {
            let action = &body["action"];
            if let Some(message) = a.refuse_leverage_with.clone() {
                return ResponseTemplate::new(200)
                    .set_body_json(json!({"status": "err", "response": message}));
            }
            let universe = recorded("meta")["universe"].clone();
            let asset = action["asset"].as_u64().unwrap_or(u64::MAX) as usize;
            let Some(coin) = universe[asset]["name"].as_str().map(str::to_owned) else {
                return ResponseTemplate::new(200)
                    .set_body_json(json!({"status": "err", "response": "Invalid asset"}));
            };
            let kind = if action["isCross"] == json!(true) {
                "cross"
            } else {
                "isolated"
            };
            let value = action["leverage"].as_u64().unwrap_or(0) as u32;
            a.leverage.insert(coin, (kind.to_owned(), value));
            return ResponseTemplate::new(200)
                .set_body_json(json!({"status": "ok", "response": {"type": "default"}}));
        }
        if body["action"]["type"] != "order" {
            return ResponseTemplate::new(200)
                .set_body_json(json!({"status": "err", "response": "unsupported action"}));
        }
        let orders = body["action"]["orders"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let statuses: Vec<Value> = orders.iter().map(|o| a.place(o)).collect();
        ResponseTemplate::new(200).set_body_json(json!({
            "status": "ok",
            "response": {"type": "order", "data": {"statuses": statuses}}
        }))
    }
}

/// Mounts the account's `/info` (the request types above, for any user — tests check the
/// `user` in the recorded queries) and `/exchange` on `server`.
pub(crate) async fn mount(server: &MockServer, account: Shared) {
    for kind in [
        "clearinghouseState",
        "orderStatus",
        "userFillsByTime",
        "meta",
        "activeAssetData",
        "extraAgents",
    ] {
        Mock::given(method("POST"))
            .and(path("/info"))
            .and(body_partial_json(json!({ "type": kind })))
            .respond_with(Info(account.clone()))
            .mount(server)
            .await;
    }
    Mock::given(method("POST"))
        .and(path("/exchange"))
        .respond_with(Exchange(account))
        .mount(server)
        .await;
}

/// A fresh account with `cash` USD and the given marks.
pub(crate) fn account(cash: i64, marks: &[(&str, Decimal)], fill_time_ms: i64) -> Shared {
    Arc::new(Mutex::new(Account {
        cash: Decimal::from(cash),
        marks: marks.iter().map(|(c, m)| ((*c).to_owned(), *m)).collect(),
        fill_time_ms,
        default_leverage: ("isolated".to_owned(), 1),
        ..Account::default()
    }))
}
