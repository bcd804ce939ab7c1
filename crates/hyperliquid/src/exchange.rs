//! `ExchangeClient`: signed order placement and cancellation through `POST {base}/exchange`.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use types::{Clock, OrderSide};
use uuid::Uuid;

use crate::error::{HlError, Result, decode};
use crate::format::{round_perp_price, round_size, slippage_price, to_wire};
use crate::http::{ClientConfig, Transport};
use crate::signing::{
    Action, Address, BulkCancel, BulkCancelByCloid, BulkOrder, CancelByCloidWire, CancelWire,
    Cloid, Grouping, Network, OrderTypeWire, OrderWire, Signature, Signer, Tif, Tpsl,
    UpdateLeverage, sign_l1_action,
};
use crate::wire::AssetInfo;

/// The deterministic client order id of the order a deployment places at a tick: the 16 bytes of
/// a UUID v5 with namespace = deployment id and name = `"{tick in Unix ms}:0"`. A retried tick
/// produces the same id, and the exchange refuses a second order with an id it has seen, so a
/// retry can never double an order.
#[must_use]
pub fn cloid_for(deployment_id: Uuid, tick_at: DateTime<Utc>) -> Cloid {
    cloid_for_leg(deployment_id, tick_at, 0)
}

/// Like [`cloid_for`], for the `leg`-th order of one tick (a tick that sends several orders,
/// e.g. a close then an open, numbers them 0, 1, ...). `cloid_for_leg(d, t, 0) == cloid_for(d, t)`.
#[must_use]
pub fn cloid_for_leg(deployment_id: Uuid, tick_at: DateTime<Utc>, leg: u32) -> Cloid {
    let name = format!("{}:{leg}", tick_at.timestamp_millis());
    Cloid(*Uuid::new_v5(&deployment_id, name.as_bytes()).as_bytes())
}

/// An order in the workspace's terms, before rounding to the asset's tick and lot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderRequest {
    /// Asset id and lot size, from [`Meta::asset`](crate::Meta::asset).
    pub asset: AssetInfo,
    /// Buy or sell.
    pub side: OrderSide,
    /// Limit price; rounded to 5 significant figures / max decimals (see [`round_perp_price`]).
    /// For a "market" order use an IOC with [`slippage_price`].
    pub price: Decimal,
    /// Size in base units; rounded toward zero to the lot.
    pub size: Decimal,
    /// The order may only shrink the position on the asset.
    pub reduce_only: bool,
    /// Time in force: `Ioc` for a "market" order, `Gtc` or `Alo` to rest on the book.
    pub tif: Tif,
    /// The client order id to tag the order with; `None` sends none.
    pub cloid: Option<Cloid>,
}

impl OrderRequest {
    /// A "market" order the way the official SDKs send one: an IOC limit `slippage` (a fraction,
    /// e.g. `0.05`) through `reference` (mid or mark), see
    /// [`slippage_price`].
    ///
    /// # Errors
    /// [`HlError::WireNumber`] for a slippage outside `[0, 1)` or an unusable price.
    pub fn ioc_with_slippage(
        asset: AssetInfo,
        side: OrderSide,
        size: Decimal,
        reference: Decimal,
        slippage: Decimal,
        reduce_only: bool,
        cloid: Option<Cloid>,
    ) -> Result<Self> {
        Ok(OrderRequest {
            asset,
            side,
            price: slippage_price(reference, side, slippage, asset.sz_decimals)?,
            size,
            reduce_only,
            tif: Tif::Ioc,
            cloid,
        })
    }

    /// The signed wire form: price and size rounded and formatted.
    ///
    /// # Errors
    /// [`HlError::WireNumber`] for a non-positive price or a size that rounds to zero.
    pub fn to_wire(&self) -> Result<OrderWire> {
        let size = round_size(self.size, self.asset.sz_decimals);
        if size <= Decimal::ZERO {
            return Err(HlError::WireNumber {
                field: "size",
                value: self.size,
                reason: "is below one lot of this asset",
            });
        }
        let price = round_perp_price(self.price, self.asset.sz_decimals)?;
        Ok(OrderWire {
            asset: self.asset.index,
            is_buy: self.side == OrderSide::Buy,
            limit_px: to_wire("price", price)?,
            sz: to_wire("size", size)?,
            reduce_only: self.reduce_only,
            order_type: OrderTypeWire::Limit { tif: self.tif },
            cloid: self.cloid,
        })
    }
}

/// A reduce-only stop-loss or take-profit trigger order on a position: when the mark reaches
/// `trigger_px` the exchange sends a market order (`isMarket: true`) of `size`, no worse than
/// `max_slippage` from the trigger price.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriggerOrderRequest {
    /// Asset id and lot size, from [`Meta::asset`](crate::Meta::asset).
    pub asset: AssetInfo,
    /// The closing side: a sell for a long's triggers, a buy for a short's.
    pub side: OrderSide,
    /// Size in base units; rounded toward zero to the lot.
    pub size: Decimal,
    /// The trigger price; rounded like a limit price ([`round_perp_price`]).
    pub trigger_px: Decimal,
    /// Stop-loss or take-profit.
    pub tpsl: Tpsl,
    /// The worst fill price once triggered, as a fraction of the trigger price (the wire's `p`).
    pub max_slippage: Decimal,
    /// The client order id to tag the order with.
    pub cloid: Option<Cloid>,
}

impl TriggerOrderRequest {
    /// The signed wire form: `{"a", "b", "p", "s", "r": true, "t": {"trigger": {"isMarket":
    /// true, "triggerPx", "tpsl"}}, "c"?}`, as the official Python SDK builds it.
    ///
    /// # Errors
    /// [`HlError::WireNumber`] for an unusable trigger price or slippage, or a size that rounds
    /// to zero.
    pub fn to_wire(&self) -> Result<OrderWire> {
        let size = round_size(self.size, self.asset.sz_decimals);
        if size <= Decimal::ZERO {
            return Err(HlError::WireNumber {
                field: "size",
                value: self.size,
                reason: "is below one lot of this asset",
            });
        }
        let trigger = round_perp_price(self.trigger_px, self.asset.sz_decimals)?;
        let limit = slippage_price(
            trigger,
            self.side,
            self.max_slippage,
            self.asset.sz_decimals,
        )?;
        Ok(OrderWire {
            asset: self.asset.index,
            is_buy: self.side == OrderSide::Buy,
            limit_px: to_wire("price", limit)?,
            sz: to_wire("size", size)?,
            reduce_only: true,
            order_type: OrderTypeWire::Trigger {
                is_market: true,
                trigger_px: to_wire("trigger price", trigger)?,
                tpsl: self.tpsl,
            },
            cloid: self.cloid,
        })
    }
}

/// What the exchange says about one order or cancel of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrderStatus {
    /// The order rests on the book.
    Resting {
        /// The exchange's order id.
        oid: u64,
        /// The client order id the order was sent with, if any.
        cloid: Option<Cloid>,
    },
    /// The order filled (wholly, or the IOC part that could).
    Filled {
        /// The exchange's order id.
        oid: u64,
        /// Size filled, in base units.
        total_sz: Decimal,
        /// Volume-weighted average fill price, in USD.
        avg_px: Decimal,
        /// The client order id the order was sent with, if any.
        cloid: Option<Cloid>,
    },
    /// A cancel (or other non-order action) succeeded.
    Success,
    /// `waitingForFill`: the exchange accepted the order and has not filled it yet.
    WaitingForFill,
    /// `waitingForTrigger`: a trigger (stop / take-profit) order waits for its trigger price.
    WaitingForTrigger,
    /// The exchange refused this order or cancel; the text is the exchange's.
    Error(String),
}

/// The signed body of `POST /exchange`: `{action, nonce, signature, vaultAddress}`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExchangeRequest<'a> {
    /// The signed action.
    pub action: &'a Action,
    /// The nonce signed with it: milliseconds since the Unix epoch (from the client's clock),
    /// strictly increasing per client; the exchange refuses a reused nonce.
    pub nonce: u64,
    /// The signature over action, nonce and vault address.
    pub signature: Signature,
    /// The vault or subaccount traded for; `None` trades the signer's own account.
    pub vault_address: Option<Address>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "status", content = "response", rename_all = "camelCase")]
enum ResponseWire {
    Ok(OkWire),
    Err(String),
}

#[derive(Debug, Deserialize)]
struct OkWire {
    #[serde(rename = "type")]
    _kind: String,
    #[serde(default)]
    data: Option<DataWire>,
}

#[derive(Debug, Deserialize)]
struct DataWire {
    statuses: Vec<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RestingWire {
    oid: u64,
    #[serde(default)]
    cloid: Option<Cloid>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FilledWire {
    oid: u64,
    #[serde(with = "rust_decimal::serde::str")]
    total_sz: Decimal,
    #[serde(with = "rust_decimal::serde::str")]
    avg_px: Decimal,
    #[serde(default)]
    cloid: Option<Cloid>,
}

fn status_from_value(i: usize, v: Value) -> Result<OrderStatus> {
    let path = format!("response.data.statuses[{i}]");
    let invalid = |path: String, message: String| HlError::Decode {
        what: "exchange",
        path,
        message,
    };
    match v {
        Value::String(s) => match s.as_str() {
            "success" => Ok(OrderStatus::Success),
            "waitingForFill" => Ok(OrderStatus::WaitingForFill),
            "waitingForTrigger" => Ok(OrderStatus::WaitingForTrigger),
            other => Err(invalid(path, format!("unknown status {other:?}"))),
        },
        Value::Object(mut map) => {
            if let Some(r) = map.remove("resting") {
                let r: RestingWire = serde_json::from_value(r)
                    .map_err(|e| invalid(format!("{path}.resting"), e.to_string()))?;
                Ok(OrderStatus::Resting {
                    oid: r.oid,
                    cloid: r.cloid,
                })
            } else if let Some(f) = map.remove("filled") {
                let f: FilledWire = serde_json::from_value(f)
                    .map_err(|e| invalid(format!("{path}.filled"), e.to_string()))?;
                Ok(OrderStatus::Filled {
                    oid: f.oid,
                    total_sz: f.total_sz.normalize(),
                    avg_px: f.avg_px.normalize(),
                    cloid: f.cloid,
                })
            } else if let Some(e) = map.remove("error") {
                match e {
                    Value::String(s) => Ok(OrderStatus::Error(s)),
                    other => Ok(OrderStatus::Error(other.to_string())),
                }
            } else {
                let keys: Vec<_> = map.keys().cloned().collect();
                Err(invalid(
                    path,
                    format!("unknown status object with keys {keys:?}"),
                ))
            }
        }
        other => Err(invalid(
            path,
            format!("expected a string or an object, got {other}"),
        )),
    }
}

/// Parses an exchange response into one status per order/cancel sent.
///
/// # Errors
/// [`HlError::Rejected`] for `{"status": "err"}`; [`HlError::Decode`] for an unexpected shape or
/// a status count different from `expected`.
pub fn parse_exchange_response(body: &[u8], expected: usize) -> Result<Vec<OrderStatus>> {
    match decode::<ResponseWire>("exchange", body)? {
        ResponseWire::Err(message) => Err(HlError::Rejected(message)),
        ResponseWire::Ok(ok) => {
            let statuses = ok.data.map(|d| d.statuses).unwrap_or_default();
            if statuses.len() != expected {
                return Err(HlError::Decode {
                    what: "exchange",
                    path: "response.data.statuses".to_owned(),
                    message: format!("{} statuses for {expected} requests", statuses.len()),
                });
            }
            statuses
                .into_iter()
                .enumerate()
                .map(|(i, v)| status_from_value(i, v))
                .collect()
        }
    }
}

/// Signs and sends orders and cancels. Nonces are the clock's Unix milliseconds, bumped to stay
/// strictly increasing per client (the exchange refuses a reused nonce).
///
/// Retries (429, 5xx, connection errors) resend the **same** signed body with the same nonce, so
/// the exchange can never execute it twice; a retry after a lost success answers with an error
/// status, and the caller reconciles by client order id.
pub struct ExchangeClient {
    http: Transport,
    signer: Signer,
    network: Network,
    vault: Option<Address>,
    clock: Arc<dyn Clock>,
    last_nonce: Mutex<Option<u64>>,
}

impl std::fmt::Debug for ExchangeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExchangeClient")
            .field("signer", &self.signer)
            .field("network", &self.network)
            .field("vault", &self.vault)
            .finish_non_exhaustive()
    }
}

impl ExchangeClient {
    /// A client signing with `signer` for `network` (which must match the server the base URL
    /// points at: it is part of what is signed).
    ///
    /// # Errors
    /// [`HlError::BaseUrl`] or [`HlError::Transport`] when the HTTP client cannot be built.
    pub fn new(
        config: &ClientConfig,
        signer: Signer,
        network: Network,
        clock: Arc<dyn Clock>,
    ) -> Result<Self> {
        Ok(ExchangeClient {
            http: Transport::new(config)?,
            signer,
            network,
            vault: None,
            clock,
            last_nonce: Mutex::new(None),
        })
    }

    /// Trade on behalf of a vault or subaccount (`vaultAddress`).
    #[must_use]
    pub fn with_vault(mut self, vault: Address) -> Self {
        self.vault = Some(vault);
        self
    }

    /// The signing account's address.
    #[must_use]
    pub fn address(&self) -> Address {
        self.signer.address()
    }

    /// The clock's Unix milliseconds, or one more than the previous nonce if that is not later.
    fn next_nonce(&self) -> u64 {
        let now = u64::try_from(self.clock.now().timestamp_millis()).unwrap_or(0);
        let mut last = self
            .last_nonce
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let next = match *last {
            Some(prev) if prev >= now => prev + 1,
            _ => now,
        };
        *last = Some(next);
        next
    }

    /// The signed request body for `action` at `nonce` (what [`ExchangeClient::send`] posts).
    ///
    /// # Errors
    /// [`HlError::Msgpack`] or [`HlError::Signing`].
    pub fn signed_request<'a>(
        &self,
        action: &'a Action,
        nonce: u64,
    ) -> Result<ExchangeRequest<'a>> {
        let signed = sign_l1_action(
            &self.signer,
            action,
            nonce,
            self.vault.as_ref(),
            self.network,
        )?;
        Ok(ExchangeRequest {
            action,
            nonce,
            signature: signed.signature,
            vault_address: self.vault,
        })
    }

    /// Signs `action` with the next nonce, posts it and parses one status per order/cancel.
    ///
    /// # Errors
    /// Signing, transport/status/retry errors, [`HlError::Rejected`] or [`HlError::Decode`].
    pub async fn send(&self, action: &Action) -> Result<Vec<OrderStatus>> {
        let expected = match action {
            Action::Order(o) => o.orders.len(),
            Action::Cancel(c) => c.cancels.len(),
            Action::CancelByCloid(c) => c.cancels.len(),
            Action::UpdateLeverage(_) => 0,
        };
        let request = self.signed_request(action, self.next_nonce())?;
        let body = self.http.post("exchange", &request).await?;
        parse_exchange_response(&body, expected)
    }

    /// Places several orders in one signed action; one status per order, in order.
    ///
    /// # Errors
    /// [`HlError::WireNumber`] for an unusable price or size, else as [`ExchangeClient::send`].
    pub async fn place_orders(&self, orders: &[OrderRequest]) -> Result<Vec<OrderStatus>> {
        let orders = orders
            .iter()
            .map(OrderRequest::to_wire)
            .collect::<Result<Vec<_>>>()?;
        self.send(&Action::Order(BulkOrder {
            orders,
            grouping: Grouping::Na,
        }))
        .await
    }

    /// Places reduce-only stop-loss / take-profit trigger orders in one signed action grouped
    /// `grouping` (`positionTpsl`: on the whole position); one status per order, in order
    /// (`Resting` or `WaitingForTrigger` when accepted).
    ///
    /// # Errors
    /// [`HlError::WireNumber`] for an unusable price or size, else as [`ExchangeClient::send`].
    pub async fn place_trigger_orders(
        &self,
        orders: &[TriggerOrderRequest],
        grouping: Grouping,
    ) -> Result<Vec<OrderStatus>> {
        let orders = orders
            .iter()
            .map(TriggerOrderRequest::to_wire)
            .collect::<Result<Vec<_>>>()?;
        self.send(&Action::Order(BulkOrder { orders, grouping }))
            .await
    }

    /// Places one order.
    ///
    /// # Errors
    /// As [`ExchangeClient::place_orders`].
    pub async fn place_order(&self, order: &OrderRequest) -> Result<OrderStatus> {
        single(self.place_orders(std::slice::from_ref(order)).await?)
    }

    /// Sets the account's leverage on `asset` (an index of the perp universe) to `leverage`
    /// (a whole number from 1 to the asset's `maxLeverage`), cross margin when `is_cross`, else
    /// isolated: the SDK's `update_leverage`, signed like any L1 action (with the vault address
    /// when trading for one).
    ///
    /// # Errors
    /// [`HlError::Rejected`] with the exchange's message when it refuses (a leverage above the
    /// asset's maximum, a margin mode an open position cannot switch to, too little margin for
    /// the new leverage, ...); otherwise as [`ExchangeClient::send`].
    pub async fn update_leverage(&self, asset: u32, leverage: u32, is_cross: bool) -> Result<()> {
        self.send(&Action::UpdateLeverage(UpdateLeverage {
            asset,
            is_cross,
            leverage,
        }))
        .await
        .map(|_| ())
    }

    /// Cancels an order by exchange order id.
    ///
    /// # Errors
    /// As [`ExchangeClient::send`].
    pub async fn cancel(&self, asset: u32, oid: u64) -> Result<OrderStatus> {
        single(
            self.send(&Action::Cancel(BulkCancel {
                cancels: vec![CancelWire { asset, oid }],
            }))
            .await?,
        )
    }

    /// Cancels an order by client order id.
    ///
    /// # Errors
    /// As [`ExchangeClient::send`].
    pub async fn cancel_by_cloid(&self, asset: u32, cloid: Cloid) -> Result<OrderStatus> {
        single(
            self.send(&Action::CancelByCloid(BulkCancelByCloid {
                cancels: vec![CancelByCloidWire { asset, cloid }],
            }))
            .await?,
        )
    }
}

fn single(mut statuses: Vec<OrderStatus>) -> Result<OrderStatus> {
    // `parse_exchange_response` already checked there is exactly one.
    statuses.pop().ok_or_else(|| HlError::Decode {
        what: "exchange",
        path: "response.data.statuses".to_owned(),
        message: "no status".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use rust_decimal_macros::dec;

    use super::*;

    #[test]
    fn cloids_are_deterministic_per_deployment_tick_and_leg() {
        let d = Uuid::from_u128(0x1234);
        let t = Utc.with_ymd_and_hms(2024, 5, 8, 12, 0, 0).unwrap();
        assert_eq!(cloid_for(d, t), cloid_for(d, t));
        assert_eq!(cloid_for(d, t), cloid_for_leg(d, t, 0));
        assert_ne!(cloid_for(d, t), cloid_for_leg(d, t, 1));
        assert_ne!(cloid_for(d, t), cloid_for(Uuid::from_u128(0x1235), t));
        assert_ne!(
            cloid_for(d, t),
            cloid_for(d, t + chrono::Duration::minutes(5))
        );
        // Stable across releases: the value is a UUID v5 and must never change.
        assert_eq!(
            cloid_for(d, t).to_string(),
            format!("0x{}", Uuid::new_v5(&d, b"1715169600000:0").simple())
        );
    }

    #[test]
    fn order_request_rounds_to_tick_and_lot() {
        let btc = AssetInfo {
            index: 0,
            sz_decimals: 5,
            max_leverage: 50,
        };
        let o = OrderRequest {
            asset: btc,
            side: OrderSide::Sell,
            price: dec!(26951.49),
            size: dec!(0.014769),
            reduce_only: true,
            tif: Tif::Ioc,
            cloid: None,
        };
        let w = o.to_wire().unwrap();
        // 26951.49 → integer (≥ 10 000) 26951; 0.014769 → 5 decimals toward zero 0.01476.
        assert_eq!((w.limit_px.as_str(), w.sz.as_str()), ("26951", "0.01476"));
        assert!(!w.is_buy && w.reduce_only);
        let tiny = OrderRequest {
            size: dec!(0.000009),
            ..o
        };
        assert!(matches!(
            tiny.to_wire(),
            Err(HlError::WireNumber { field: "size", .. })
        ));
    }

    #[test]
    fn statuses_parse_and_errors_are_typed() {
        let body = br#"{"status":"ok","response":{"type":"order","data":{"statuses":[
            {"resting":{"oid":77738308}},
            {"filled":{"totalSz":"0.02","avgPx":"1891.4","oid":77747314}},
            {"error":"Order must have minimum value of $10."}]}}}"#;
        let s = parse_exchange_response(body, 3).unwrap();
        assert_eq!(
            s,
            vec![
                OrderStatus::Resting {
                    oid: 77_738_308,
                    cloid: None
                },
                OrderStatus::Filled {
                    oid: 77_747_314,
                    total_sz: dec!(0.02),
                    avg_px: dec!(1891.4),
                    cloid: None
                },
                OrderStatus::Error("Order must have minimum value of $10.".into()),
            ]
        );
        assert!(matches!(
            parse_exchange_response(br#"{"status":"err","response":"User or API Wallet 0x1 does not exist."}"#, 1),
            Err(HlError::Rejected(m)) if m.contains("does not exist")
        ));
        assert!(parse_exchange_response(body, 1).is_err());
        // updateLeverage: `default` without statuses, or the exchange's refusal.
        assert_eq!(
            parse_exchange_response(br#"{"status":"ok","response":{"type":"default"}}"#, 0)
                .unwrap(),
            vec![]
        );
        assert!(matches!(
            parse_exchange_response(br#"{"status":"err","response":"Cannot switch leverage type with open position."}"#, 0),
            Err(HlError::Rejected(m)) if m == "Cannot switch leverage type with open position."
        ));
        let bad = br#"{"status":"ok","response":{"type":"order","data":{"statuses":[{"filled":{"totalSz":"x","avgPx":"1","oid":1}}]}}}"#;
        let err = parse_exchange_response(bad, 1).unwrap_err().to_string();
        assert!(err.contains("statuses[0].filled"), "{err}");
    }
}
