//! Info API payloads (`POST /info`) and their conversion into the workspace's types.
//!
//! Prices, sizes and money arrive as decimal strings and are parsed into [`Decimal`] (never
//! through a float); times arrive as Unix milliseconds and become UTC instants. Every parser
//! reports the JSON path of the first bad value.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use types::{Bar, Fill, OrderSide, PortfolioSnapshot, Position, Side};

use crate::error::{HlError, Result, decode};
use crate::ids::Address;

/// A decimal that is a string on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WireDecimal(#[serde(with = "rust_decimal::serde::str")] pub Decimal);

// ---------------------------------------------------------------------------------------------
// candleSnapshot
// ---------------------------------------------------------------------------------------------

/// One candle of `candleSnapshot`: `{t, T, s, i, o, h, l, c, v, n}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candle {
    /// Open time.
    #[serde(rename = "t", with = "chrono::serde::ts_milliseconds")]
    pub open_time: DateTime<Utc>,
    /// Close time as the exchange states it (open time + interval − 1 ms).
    #[serde(rename = "T", with = "chrono::serde::ts_milliseconds")]
    pub close_time: DateTime<Utc>,
    /// Coin (`"BTC"`, `"kPEPE"`).
    #[serde(rename = "s")]
    pub coin: String,
    /// Interval as the exchange spells it (`"1h"`).
    #[serde(rename = "i")]
    pub interval: String,
    /// Open price (`o`, a decimal string), USD.
    #[serde(rename = "o", with = "rust_decimal::serde::str")]
    pub open: Decimal,
    /// Highest price (`h`), USD.
    #[serde(rename = "h", with = "rust_decimal::serde::str")]
    pub high: Decimal,
    /// Lowest price (`l`), USD.
    #[serde(rename = "l", with = "rust_decimal::serde::str")]
    pub low: Decimal,
    /// Close price (`c`), USD; the latest trade while the candle is forming.
    #[serde(rename = "c", with = "rust_decimal::serde::str")]
    pub close: Decimal,
    /// Volume in base units.
    #[serde(rename = "v", with = "rust_decimal::serde::str")]
    pub volume: Decimal,
    /// Number of trades.
    #[serde(rename = "n")]
    pub trades: u64,
}

impl Candle {
    /// The candle as a [`Bar`] (open time; values with trailing zeros stripped).
    #[must_use]
    pub fn to_bar(&self) -> Bar {
        Bar {
            time: self.open_time,
            open: self.open.normalize(),
            high: self.high.normalize(),
            low: self.low.normalize(),
            close: self.close.normalize(),
            volume: self.volume.normalize(),
        }
    }
}

/// Parses a `candleSnapshot` response.
///
/// # Errors
/// [`HlError::Decode`] naming the path of the first bad value.
pub fn parse_candles(body: &[u8]) -> Result<Vec<Candle>> {
    decode("candleSnapshot", body)
}

/// Candles as bars, oldest first, one per open time (a duplicate open time keeps the last one
/// the exchange sent). The newest bar may still be forming: callers show a bar only from its
/// close time on.
#[must_use]
pub fn candles_to_bars(candles: &[Candle]) -> Vec<Bar> {
    let mut by_time: std::collections::BTreeMap<DateTime<Utc>, Bar> = Default::default();
    for c in candles {
        by_time.insert(c.open_time, c.to_bar());
    }
    by_time.into_values().collect()
}

// ---------------------------------------------------------------------------------------------
// WebSocket: the candle subscription
// ---------------------------------------------------------------------------------------------

/// A request sent on the WebSocket: `{"method": "subscribe", "subscription": {...}}` or
/// `{"method": "ping"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "method", rename_all = "camelCase")]
pub enum WsRequest {
    /// Start a subscription.
    Subscribe {
        /// What to subscribe to.
        subscription: WsSubscription,
    },
    /// Keep the connection alive (the server closes one that is silent for a minute); it
    /// answers `{"channel": "pong"}`.
    Ping,
}

/// A subscription of the WebSocket API (only the candle one is used).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum WsSubscription {
    /// `{"type": "candle", "coin": "BTC", "interval": "1h"}`: every update of the coin's
    /// forming candle of that interval, each the candle's whole state so far.
    Candle {
        /// The coin, e.g. `BTC`.
        coin: String,
        /// The interval in Hyperliquid's spelling (`5m`, `1h`, ...).
        interval: String,
    },
}

/// A message the WebSocket API sends, as the candle feed reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WsMessage {
    /// `{"channel": "candle", "data": {t, T, s, i, o, c, h, l, v, n}}`: candle updates (the
    /// data is one candle; an array of them is read too).
    Candles(Vec<Candle>),
    /// `{"channel": "subscriptionResponse", ...}`: a subscription was acknowledged.
    Subscribed,
    /// `{"channel": "pong"}`: the answer to a ping.
    Pong,
    /// `{"channel": "error", "data": "..."}`: the server refused a request.
    Error(String),
    /// Anything else: another channel, or the plain-text greeting a connection opens with.
    Other,
}

#[derive(Deserialize)]
struct WsEnvelope<'a> {
    channel: &'a str,
    #[serde(borrow, default)]
    data: Option<&'a serde_json::value::RawValue>,
}

/// Parses one text message of the WebSocket API.
///
/// # Errors
/// [`HlError::Decode`] when a `candle` message's data is not a candle (or an array of them),
/// naming the path of the first bad value. A message that is not a JSON object with a
/// `channel` is [`WsMessage::Other`], not an error.
pub fn parse_ws_message(text: &str) -> Result<WsMessage> {
    let Ok(envelope) = serde_json::from_str::<WsEnvelope<'_>>(text) else {
        return Ok(WsMessage::Other);
    };
    let data = envelope.data.map_or("null", |d| d.get());
    Ok(match envelope.channel {
        "candle" => {
            let bytes = data.trim_start().as_bytes();
            if bytes.first() == Some(&b'[') {
                WsMessage::Candles(decode("candle", bytes)?)
            } else {
                WsMessage::Candles(vec![decode("candle", bytes)?])
            }
        }
        "subscriptionResponse" => WsMessage::Subscribed,
        "pong" => WsMessage::Pong,
        "error" => WsMessage::Error(
            serde_json::from_str::<String>(data).unwrap_or_else(|_| data.to_owned()),
        ),
        _ => WsMessage::Other,
    })
}

// ---------------------------------------------------------------------------------------------
// meta / metaAndAssetCtxs
// ---------------------------------------------------------------------------------------------

/// The perp universe (`meta`). An asset's index in `universe` is its asset id in orders.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    /// The perps, in asset-id order.
    pub universe: Vec<AssetMeta>,
}

/// One perp of the universe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssetMeta {
    /// The coin's name (`BTC`, `kPEPE`), exact and case-sensitive.
    pub name: String,
    /// Decimals of the size lot.
    pub sz_decimals: u32,
    /// Highest leverage the exchange allows on the coin.
    pub max_leverage: u32,
    /// `onlyIsolated`: the coin trades with isolated margin only (absent = false).
    #[serde(default)]
    pub only_isolated: bool,
    /// `isDelisted`: the coin no longer trades (absent = false).
    #[serde(default)]
    pub is_delisted: bool,
}

/// What an order needs to know about a coin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AssetInfo {
    /// Asset id (`a` in orders).
    pub index: u32,
    /// Decimals of the size lot: sizes are rounded to this many places.
    pub sz_decimals: u32,
    /// Highest leverage the exchange allows on the coin.
    pub max_leverage: u32,
}

impl Meta {
    /// The asset id and lot size of `coin` (exact, case-sensitive name: `kPEPE`).
    #[must_use]
    pub fn asset(&self, coin: &str) -> Option<AssetInfo> {
        let (i, a) = self
            .universe
            .iter()
            .enumerate()
            .find(|(_, a)| a.name == coin)?;
        Some(AssetInfo {
            index: u32::try_from(i).ok()?,
            sz_decimals: a.sz_decimals,
            max_leverage: a.max_leverage,
        })
    }

    /// The highest leverage the exchange allows on each listed coin, by name (delisted coins
    /// left out): what a paper account needs to margin positions as the exchange does.
    #[must_use]
    pub fn max_leverage_by_coin(&self) -> std::collections::BTreeMap<String, Decimal> {
        self.universe
            .iter()
            .filter(|a| !a.is_delisted)
            .map(|a| (a.name.clone(), Decimal::from(a.max_leverage)))
            .collect()
    }

    /// Like [`Meta::asset`], as an error when the coin is unknown.
    ///
    /// # Errors
    /// [`HlError::UnknownAsset`].
    pub fn require_asset(&self, coin: &str) -> Result<AssetInfo> {
        self.asset(coin)
            .ok_or_else(|| HlError::UnknownAsset(coin.to_owned()))
    }
}

/// Parses a `meta` response.
///
/// # Errors
/// [`HlError::Decode`] naming the path of the first bad value.
pub fn parse_meta(body: &[u8]) -> Result<Meta> {
    decode("meta", body)
}

/// Live context of one perp, from `metaAndAssetCtxs` (same order as the universe).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssetCtx {
    /// Current hourly funding rate (a fraction).
    #[serde(with = "rust_decimal::serde::str")]
    pub funding: Decimal,
    /// Open interest in base units.
    #[serde(with = "rust_decimal::serde::str")]
    pub open_interest: Decimal,
    /// `prevDayPx`: the price 24 hours ago, USD.
    #[serde(with = "rust_decimal::serde::str")]
    pub prev_day_px: Decimal,
    /// 24h notional volume in USD.
    #[serde(with = "rust_decimal::serde::str")]
    pub day_ntl_vlm: Decimal,
    /// Current premium of the mark over the oracle (a fraction); `None` when absent or null.
    #[serde(default, with = "rust_decimal::serde::str_option")]
    pub premium: Option<Decimal>,
    /// `oraclePx`: the oracle (index) price, USD.
    #[serde(with = "rust_decimal::serde::str")]
    pub oracle_px: Decimal,
    /// `markPx`: the mark price margin and PnL are computed at, USD.
    #[serde(with = "rust_decimal::serde::str")]
    pub mark_px: Decimal,
    /// `midPx`: the book's mid price, USD; `None` when the book is empty on a side.
    #[serde(default, with = "rust_decimal::serde::str_option")]
    pub mid_px: Option<Decimal>,
    /// `impactPxs`: the impact bid and ask prices, USD; `None` when absent.
    #[serde(default)]
    pub impact_pxs: Option<Vec<WireDecimal>>,
    /// `dayBaseVlm`: 24h volume in base units; `None` when absent.
    #[serde(default, with = "rust_decimal::serde::str_option")]
    pub day_base_vlm: Option<Decimal>,
}

/// `metaAndAssetCtxs`: the universe and, index for index, each asset's live context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaAndAssetCtxs {
    /// The universe.
    pub meta: Meta,
    /// Each asset's live context, at the same index as in `meta.universe`.
    pub ctxs: Vec<AssetCtx>,
}

impl MetaAndAssetCtxs {
    /// The live context of `coin`.
    #[must_use]
    pub fn ctx(&self, coin: &str) -> Option<&AssetCtx> {
        let i = self.meta.universe.iter().position(|a| a.name == coin)?;
        self.ctxs.get(i)
    }
}

/// Parses a `metaAndAssetCtxs` response: `[meta, [assetCtx, ...]]`.
///
/// # Errors
/// [`HlError::Decode`] for a bad shape or value; [`HlError::Invalid`] when the number of contexts
/// differs from the number of assets.
pub fn parse_meta_and_asset_ctxs(body: &[u8]) -> Result<MetaAndAssetCtxs> {
    let (meta, ctxs): (Meta, Vec<AssetCtx>) = decode("metaAndAssetCtxs", body)?;
    if meta.universe.len() != ctxs.len() {
        return Err(HlError::Invalid {
            what: "metaAndAssetCtxs",
            path: "[1]".to_owned(),
            message: format!(
                "{} asset contexts for {} assets in the universe",
                ctxs.len(),
                meta.universe.len()
            ),
        });
    }
    Ok(MetaAndAssetCtxs { meta, ctxs })
}

// ---------------------------------------------------------------------------------------------
// fundingHistory
// ---------------------------------------------------------------------------------------------

/// One funding payment period of a coin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FundingRate {
    /// The coin.
    pub coin: String,
    /// Funding rate of the period (a fraction; positive: longs pay shorts).
    #[serde(with = "rust_decimal::serde::str")]
    pub funding_rate: Decimal,
    /// Premium of the mark over the oracle in the period (a fraction).
    #[serde(with = "rust_decimal::serde::str")]
    pub premium: Decimal,
    /// When the funding was applied (`time`, Unix milliseconds on the wire), UTC.
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub time: DateTime<Utc>,
}

/// Parses a `fundingHistory` response (oldest first, as the exchange sends it).
///
/// # Errors
/// [`HlError::Decode`] naming the path of the first bad value.
pub fn parse_funding_history(body: &[u8]) -> Result<Vec<FundingRate>> {
    decode("fundingHistory", body)
}

// ---------------------------------------------------------------------------------------------
// clearinghouseState
// ---------------------------------------------------------------------------------------------

/// `clearinghouseState`: the perp account of one user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClearinghouseState {
    /// `assetPositions`: the open positions (the exchange may list zero sizes).
    pub asset_positions: Vec<AssetPosition>,
    /// `marginSummary`: the whole account, cross and isolated.
    pub margin_summary: MarginSummary,
    /// `crossMarginSummary`: the cross-margin part of the account.
    pub cross_margin_summary: MarginSummary,
    /// USD that can be withdrawn now (free collateral).
    #[serde(with = "rust_decimal::serde::str")]
    pub withdrawable: Decimal,
    /// `crossMaintenanceMarginUsed`: maintenance margin of the cross positions, USD; `None`
    /// when absent.
    #[serde(default, with = "rust_decimal::serde::str_option")]
    pub cross_maintenance_margin_used: Option<Decimal>,
    /// Server time of the snapshot (newer API versions).
    #[serde(default, with = "chrono::serde::ts_milliseconds_option")]
    pub time: Option<DateTime<Utc>>,
}

/// `{accountValue, totalMarginUsed, totalNtlPos, totalRawUsd}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MarginSummary {
    /// Equity: collateral plus unrealized PnL.
    #[serde(with = "rust_decimal::serde::str")]
    pub account_value: Decimal,
    /// `totalMarginUsed`: margin locked by positions, USD.
    #[serde(with = "rust_decimal::serde::str")]
    pub total_margin_used: Decimal,
    /// Gross notional of all positions.
    #[serde(with = "rust_decimal::serde::str")]
    pub total_ntl_pos: Decimal,
    /// `totalRawUsd`: the exchange's raw USD balance figure, USD (carried, not interpreted here).
    #[serde(with = "rust_decimal::serde::str")]
    pub total_raw_usd: Decimal,
}

/// `{position, type: "oneWay"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssetPosition {
    /// The position.
    pub position: PositionWire,
    /// `type`: the position mode, `oneWay`.
    #[serde(rename = "type")]
    pub kind: String,
}

/// A position as the exchange reports it. `szi` is signed: negative is short.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PositionWire {
    /// The coin.
    pub coin: String,
    /// Signed size in base units: positive long, negative short.
    #[serde(with = "rust_decimal::serde::str")]
    pub szi: Decimal,
    /// `entryPx`: average entry price, USD; `None` when absent or null.
    #[serde(default, with = "rust_decimal::serde::str_option")]
    pub entry_px: Option<Decimal>,
    /// The position's margin mode and leverage.
    pub leverage: Leverage,
    /// `liquidationPx`: the mark price at which it is liquidated, USD; `None` when the exchange
    /// sends null (no liquidation risk).
    #[serde(default, with = "rust_decimal::serde::str_option")]
    pub liquidation_px: Option<Decimal>,
    /// `marginUsed`: margin locked by the position, USD.
    #[serde(with = "rust_decimal::serde::str")]
    pub margin_used: Decimal,
    /// Notional at the mark price (always positive).
    #[serde(with = "rust_decimal::serde::str")]
    pub position_value: Decimal,
    /// `returnOnEquity`: unrealized PnL over the margin (a fraction).
    #[serde(with = "rust_decimal::serde::str")]
    pub return_on_equity: Decimal,
    /// `unrealizedPnl`: profit or loss at the mark, USD.
    #[serde(with = "rust_decimal::serde::str")]
    pub unrealized_pnl: Decimal,
    /// `maxLeverage`: the coin's highest leverage; `None` when absent.
    #[serde(default)]
    pub max_leverage: Option<u32>,
}

/// `{"type": "cross" | "isolated", "value": 20, "rawUsd"?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Leverage {
    /// `type`: the margin mode, `cross` or `isolated`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The configured leverage (e.g. 20 for 20x).
    pub value: u32,
    /// `rawUsd`: an isolated position's raw USD balance, USD; `None` when absent (cross margin).
    #[serde(default, with = "rust_decimal::serde::str_option")]
    pub raw_usd: Option<Decimal>,
}

/// The account in the workspace's terms: equity and margin figures plus open positions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountState {
    /// `marginSummary.accountValue`: collateral plus unrealized PnL.
    pub equity_usd: Decimal,
    /// `withdrawable`: collateral not tied up as margin.
    pub available_margin_usd: Decimal,
    /// `marginSummary.totalMarginUsed`.
    pub margin_used_usd: Decimal,
    /// `marginSummary.totalNtlPos`.
    pub total_notional_usd: Decimal,
    /// Open positions (zero sizes dropped), ordered by symbol.
    pub positions: Vec<Position>,
    /// Server time of the snapshot, when the exchange sent one.
    pub time: Option<DateTime<Utc>>,
}

impl AccountState {
    /// The broker-authoritative snapshot at `at`. Hyperliquid's account state carries no
    /// lifetime realized PnL or fees, so the caller supplies them (e.g. summed from fills).
    #[must_use]
    pub fn to_portfolio_snapshot(
        &self,
        at: DateTime<Utc>,
        realized_pnl_usd: Decimal,
        fees_paid_usd: Decimal,
    ) -> PortfolioSnapshot {
        PortfolioSnapshot {
            at,
            equity_usd: self.equity_usd,
            available_margin_usd: self.available_margin_usd,
            positions: self.positions.clone(),
            realized_pnl_usd,
            fees_paid_usd,
        }
    }
}

/// Decimals kept for a mark price derived by division.
const MARK_PRICE_DP: u32 = 8;

impl PositionWire {
    /// The position as a [`Position`]; `None` for a zero size.
    ///
    /// Side from the sign of `szi`; quantity `|szi|`; mark price `positionValue / |szi|`
    /// (rounded to 8 decimals); leverage is the configured leverage value.
    ///
    /// # Errors
    /// [`HlError::Invalid`] when a non-zero position has no entry price (`path` names it).
    pub fn to_position(&self, path: &str) -> Result<Option<Position>> {
        if self.szi.is_zero() {
            return Ok(None);
        }
        let entry = self.entry_px.ok_or_else(|| HlError::Invalid {
            what: "clearinghouseState",
            path: format!("{path}.entryPx"),
            message: format!("{} position of {} has no entry price", self.coin, self.szi),
        })?;
        let qty = self.szi.abs();
        Ok(Some(Position {
            symbol: self.coin.clone(),
            side: if self.szi.is_sign_negative() {
                Side::Short
            } else {
                Side::Long
            },
            qty: qty.normalize(),
            entry_price: entry.normalize(),
            leverage: Decimal::from(self.leverage.value),
            mark_price: (self.position_value / qty)
                .round_dp(MARK_PRICE_DP)
                .normalize(),
            liquidation_price: self.liquidation_px.map(|d| d.normalize()),
            unrealized_pnl_usd: self.unrealized_pnl.normalize(),
            margin_usd: self.margin_used.normalize(),
        }))
    }
}

impl ClearinghouseState {
    /// Equity, margin and positions in the workspace's terms.
    ///
    /// # Errors
    /// [`HlError::Invalid`] for a non-zero position without an entry price.
    pub fn account_state(&self) -> Result<AccountState> {
        let mut positions = Vec::with_capacity(self.asset_positions.len());
        for (i, ap) in self.asset_positions.iter().enumerate() {
            if let Some(p) = ap
                .position
                .to_position(&format!("assetPositions[{i}].position"))?
            {
                positions.push(p);
            }
        }
        positions.sort_by(|a, b| a.symbol.cmp(&b.symbol));
        Ok(AccountState {
            equity_usd: self.margin_summary.account_value.normalize(),
            available_margin_usd: self.withdrawable.normalize(),
            margin_used_usd: self.margin_summary.total_margin_used.normalize(),
            total_notional_usd: self.margin_summary.total_ntl_pos.normalize(),
            positions,
            time: self.time,
        })
    }
}

/// Parses a `clearinghouseState` response.
///
/// # Errors
/// [`HlError::Decode`] naming the path of the first bad value.
pub fn parse_clearinghouse_state(body: &[u8]) -> Result<ClearinghouseState> {
    decode("clearinghouseState", body)
}

// ---------------------------------------------------------------------------------------------
// userFills
// ---------------------------------------------------------------------------------------------

/// Side of a fill on the wire: `"B"` (bid, buy) or `"A"` (ask, sell).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HlSide {
    /// `B`: the bid side, a buy.
    #[serde(rename = "B")]
    Bid,
    /// `A`: the ask side, a sell.
    #[serde(rename = "A")]
    Ask,
}

impl HlSide {
    /// `B` → buy, `A` → sell.
    #[must_use]
    pub const fn order_side(self) -> OrderSide {
        match self {
            HlSide::Bid => OrderSide::Buy,
            HlSide::Ask => OrderSide::Sell,
        }
    }
}

/// Details the exchange attaches to a liquidation fill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiquidationWire {
    /// `liquidatedUser`: the address of the account liquidated; `None` when absent.
    #[serde(default)]
    pub liquidated_user: Option<String>,
    /// `markPx`: the mark price at liquidation, USD; `None` when absent.
    #[serde(default, with = "rust_decimal::serde::str_option")]
    pub mark_px: Option<Decimal>,
    /// How the exchange liquidated (e.g. `market`, `backstop`); `None` when absent.
    #[serde(default)]
    pub method: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FillWire {
    coin: String,
    #[serde(with = "rust_decimal::serde::str")]
    px: Decimal,
    #[serde(with = "rust_decimal::serde::str")]
    sz: Decimal,
    side: HlSide,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    time: DateTime<Utc>,
    #[serde(with = "rust_decimal::serde::str")]
    start_position: Decimal,
    dir: String,
    #[serde(with = "rust_decimal::serde::str")]
    closed_pnl: Decimal,
    hash: String,
    oid: u64,
    #[serde(default)]
    crossed: bool,
    #[serde(with = "rust_decimal::serde::str")]
    fee: Decimal,
    #[serde(default)]
    fee_token: Option<String>,
    #[serde(default)]
    tid: Option<u64>,
    #[serde(default)]
    cloid: Option<String>,
    #[serde(default)]
    liquidation: Option<LiquidationWire>,
}

/// A fill as Hyperliquid reports it, with the fields [`Fill`] has no room for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HlFill {
    /// Stable id: the trade id `tid` when the exchange sends one, else `hash:oid:index` with
    /// `index` the fill's position among the fills of the same transaction hash and order id, in
    /// the order the exchange lists them (which is execution order within a transaction).
    pub id: String,
    /// The coin.
    pub coin: String,
    /// Fill price (`px`), USD.
    pub px: Decimal,
    /// Fill size (`sz`) in base units, positive.
    pub sz: Decimal,
    /// Buy or sell.
    pub side: HlSide,
    /// When the fill happened (`time`, Unix milliseconds on the wire), UTC.
    pub time: DateTime<Utc>,
    /// Signed position before this fill.
    pub start_position: Decimal,
    /// `"Open Long"`, `"Close Short"`, `"Long > Short"`, `"Liquidated Cross Long"`, ...
    pub dir: String,
    /// Realized PnL of the closing part, as the exchange computes it (gross of fees).
    pub closed_pnl: Decimal,
    /// The transaction hash, `0x`-prefixed hex.
    pub hash: String,
    /// The exchange's order id.
    pub oid: u64,
    /// `true` when the fill took liquidity.
    pub crossed: bool,
    /// Fee (negative: rebate), in `fee_token` (USDC for perps).
    pub fee: Decimal,
    /// `feeToken`: the token the fee was paid in; `None` when absent.
    pub fee_token: Option<String>,
    /// The exchange's trade id; `None` when absent (older responses).
    pub tid: Option<u64>,
    /// The client order id of the order, `0x`-prefixed hex; `None` without one.
    pub cloid: Option<String>,
    /// Set on liquidation fills (newer API versions).
    pub liquidation_info: Option<LiquidationWire>,
}

impl HlFill {
    /// Whether the exchange forced this fill: a `liquidation` object on the wire, or a `dir`
    /// that says so ("Liquidated ...", auto-deleveraging).
    #[must_use]
    pub fn is_liquidation(&self) -> bool {
        self.liquidation_info.is_some()
            || self.dir.contains("Liquidat")
            || self.dir.contains("Deleverag")
    }

    /// The fill in the workspace's terms. `snapshot_id` is left empty: mapping a client order id
    /// back to a decision snapshot is the caller's business.
    #[must_use]
    pub fn to_fill(&self) -> Fill {
        Fill {
            id: self.id.clone(),
            symbol: self.coin.clone(),
            side: self.side.order_side(),
            qty: self.sz.normalize(),
            price: self.px.normalize(),
            fee_usd: self.fee.normalize(),
            time: self.time,
            snapshot_id: None,
            client_order_id: self.cloid.clone(),
            liquidation: self.is_liquidation(),
            trigger: None,
        }
    }
}

/// Parses a `userFills` (or `userFillsByTime`) response into fills sorted **oldest first**.
///
/// The exchange lists transactions newest first but the fills of one transaction in execution
/// order; sorting is stable by `(time, tid)`, so fills of the same millisecond keep the
/// exchange's order when there is no trade id.
///
/// # Errors
/// [`HlError::Decode`] naming the path of the first bad value.
pub fn parse_user_fills(body: &[u8]) -> Result<Vec<HlFill>> {
    let wire: Vec<FillWire> = decode("userFills", body)?;
    let mut seen: HashMap<(String, u64), u32> = HashMap::new();
    let mut fills: Vec<HlFill> = wire
        .into_iter()
        .map(|w| {
            let id = match w.tid {
                Some(tid) => tid.to_string(),
                None => {
                    let n = seen.entry((w.hash.clone(), w.oid)).or_insert(0);
                    let id = format!("{}:{}:{}", w.hash, w.oid, n);
                    *n += 1;
                    id
                }
            };
            HlFill {
                id,
                coin: w.coin,
                px: w.px,
                sz: w.sz,
                side: w.side,
                time: w.time,
                start_position: w.start_position,
                dir: w.dir,
                closed_pnl: w.closed_pnl,
                hash: w.hash,
                oid: w.oid,
                crossed: w.crossed,
                fee: w.fee,
                fee_token: w.fee_token,
                tid: w.tid,
                cloid: w.cloid,
                liquidation_info: w.liquidation,
            }
        })
        .collect();
    fills.sort_by_key(|f| (f.time, f.tid.unwrap_or(0)));
    Ok(fills)
}

// ---------------------------------------------------------------------------------------------
// orderStatus
// ---------------------------------------------------------------------------------------------

/// One order as `orderStatus` reports it (`order.order` on the wire) with its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderInfo {
    /// The coin.
    pub coin: String,
    /// Buy or sell.
    pub side: HlSide,
    /// `limitPx`: the limit price, USD.
    pub limit_px: Decimal,
    /// Size still open on the book (`sz`; zero once filled or cancelled).
    pub remaining_sz: Decimal,
    /// Size the order was placed with (`origSz`).
    pub orig_sz: Decimal,
    /// The exchange's order id.
    pub oid: u64,
    /// When the order was placed (`timestamp`).
    pub placed_at: DateTime<Utc>,
    /// The client order id the order was sent with; `None` without one.
    pub cloid: Option<crate::ids::Cloid>,
    /// `reduceOnly`: the order may only shrink the position.
    pub reduce_only: bool,
    /// The exchange's status word: `open`, `filled`, `canceled`, `triggered`, `rejected`,
    /// `marginCanceled`, `perpMarginRejected`, `iocCancelRejected`, ...
    pub status: String,
    /// When the order reached that status (`statusTimestamp`).
    pub status_at: DateTime<Utc>,
}

/// The family of an [`OrderInfo::status`] word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderState {
    /// On the book (`open`, `triggered`).
    Open,
    /// `filled`.
    Filled,
    /// Cancelled by the user or the exchange (`canceled`, `marginCanceled`, ...).
    Canceled,
    /// Refused when placed (`rejected`, `perpMarginRejected`, `iocCancelRejected`, ...).
    Rejected,
    /// A status this adapter does not know.
    Other,
}

impl OrderInfo {
    /// How much of the order filled as the status reports it: `origSz − sz` (never negative).
    /// The exact fills (prices, fees) are in `userFills`.
    #[must_use]
    pub fn filled_sz(&self) -> Decimal {
        (self.orig_sz - self.remaining_sz).max(Decimal::ZERO)
    }

    /// The family of the status word.
    #[must_use]
    pub fn state(&self) -> OrderState {
        let s = self.status.as_str();
        match s {
            "open" | "triggered" => OrderState::Open,
            "filled" => OrderState::Filled,
            "canceled" | "scheduledCancel" => OrderState::Canceled,
            "rejected" => OrderState::Rejected,
            _ if s.ends_with("Rejected") => OrderState::Rejected,
            _ if s.ends_with("Canceled") => OrderState::Canceled,
            _ => OrderState::Other,
        }
    }
}

/// What `orderStatus` answered for an order id or client order id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrderLookup {
    /// `{"status": "unknownOid"}`: the exchange has no such order for this user.
    Unknown,
    /// `{"status": "order", "order": {...}}`.
    Found(OrderInfo),
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OrderStatusWire {
    status: String,
    #[serde(default)]
    order: Option<OrderEntryWire>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OrderEntryWire {
    order: OrderWireInfo,
    status: String,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    status_timestamp: DateTime<Utc>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OrderWireInfo {
    coin: String,
    side: HlSide,
    #[serde(with = "rust_decimal::serde::str")]
    limit_px: Decimal,
    #[serde(with = "rust_decimal::serde::str")]
    sz: Decimal,
    oid: u64,
    #[serde(with = "chrono::serde::ts_milliseconds")]
    timestamp: DateTime<Utc>,
    #[serde(with = "rust_decimal::serde::str")]
    orig_sz: Decimal,
    #[serde(default)]
    cloid: Option<crate::ids::Cloid>,
    #[serde(default)]
    reduce_only: bool,
}

/// Parses an `orderStatus` response.
///
/// # Errors
/// [`HlError::Decode`] naming the path of the first bad value, or an unknown top-level status /
/// a found order without its `order` object.
pub fn parse_order_status(body: &[u8]) -> Result<OrderLookup> {
    let wire: OrderStatusWire = decode("orderStatus", body)?;
    match (wire.status.as_str(), wire.order) {
        ("unknownOid", _) => Ok(OrderLookup::Unknown),
        ("order", Some(e)) => Ok(OrderLookup::Found(OrderInfo {
            coin: e.order.coin,
            side: e.order.side,
            limit_px: e.order.limit_px.normalize(),
            remaining_sz: e.order.sz.normalize(),
            orig_sz: e.order.orig_sz.normalize(),
            oid: e.order.oid,
            placed_at: e.order.timestamp,
            cloid: e.order.cloid,
            reduce_only: e.order.reduce_only,
            status: e.status,
            status_at: e.status_timestamp,
        })),
        ("order", None) => Err(HlError::Decode {
            what: "orderStatus",
            path: "order".to_owned(),
            message: "status \"order\" without an order object".to_owned(),
        }),
        (other, _) => Err(HlError::Decode {
            what: "orderStatus",
            path: "status".to_owned(),
            message: format!("unknown status {other:?}"),
        }),
    }
}

// ---------------------------------------------------------------------------------------------
// activeAssetData, extraAgents
// ---------------------------------------------------------------------------------------------

/// `activeAssetData`: a user's settings and limits on one coin — the leverage and margin mode
/// its next order uses, whether or not a position is open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActiveAssetData {
    /// The account asked about.
    pub user: Address,
    /// The coin.
    pub coin: String,
    /// The account's margin mode and leverage on the coin.
    pub leverage: Leverage,
    /// `maxTradeSzs`: the largest buy and sell sizes the account's margin allows, base units;
    /// empty when absent.
    #[serde(default)]
    pub max_trade_szs: Vec<WireDecimal>,
    /// `availableToTrade`: USD available for a buy and a sell; empty when absent.
    #[serde(default)]
    pub available_to_trade: Vec<WireDecimal>,
    /// `markPx`: the coin's mark price, USD; `None` when absent.
    #[serde(default, with = "rust_decimal::serde::str_option")]
    pub mark_px: Option<Decimal>,
}

impl Leverage {
    /// Whether the margin mode is cross (`type` `cross`); `isolated` is not.
    #[must_use]
    pub fn is_cross(&self) -> bool {
        self.kind == "cross"
    }
}

/// Parses an `activeAssetData` response.
///
/// # Errors
/// [`HlError::Decode`] naming the path of the first bad value; [`HlError::Invalid`] for a
/// margin mode other than `cross` / `isolated`.
pub fn parse_active_asset_data(body: &[u8]) -> Result<ActiveAssetData> {
    let data: ActiveAssetData = decode("activeAssetData", body)?;
    if data.leverage.kind != "cross" && data.leverage.kind != "isolated" {
        return Err(HlError::Invalid {
            what: "activeAssetData",
            path: "leverage.type".to_owned(),
            message: format!(
                "margin mode {:?} is neither cross nor isolated",
                data.leverage.kind
            ),
        });
    }
    Ok(data)
}

/// One API (agent) wallet a master account approved (`extraAgents`): its key may sign orders
/// and cancels for the master until `valid_until`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtraAgent {
    /// The agent's address (the address of the key that signs).
    pub address: Address,
    /// The name the master gave it (may be empty).
    #[serde(default)]
    pub name: String,
    /// `validUntil`: when the approval expires (Unix ms on the wire).
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub valid_until: DateTime<Utc>,
}

/// Parses an `extraAgents` response: the master's approved agent wallets.
///
/// # Errors
/// [`HlError::Decode`] naming the path of the first bad value.
pub fn parse_extra_agents(body: &[u8]) -> Result<Vec<ExtraAgent>> {
    // The exchange answers `null` for an account that never approved one.
    let agents: Option<Vec<ExtraAgent>> = decode("extraAgents", body)?;
    Ok(agents.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use rust_decimal_macros::dec;

    use super::*;

    #[test]
    fn websocket_messages_are_read_by_channel() {
        // As the exchange sends them (the candle data one object).
        let update = r#"{"channel":"candle","data":{"t":1780567200000,"T":1780570799999,"s":"BTC","i":"1h","o":"65000.5","c":"65100","h":"65200","l":"64900","v":"12.5","n":321}}"#;
        let WsMessage::Candles(candles) = parse_ws_message(update).unwrap() else {
            panic!("a candle message");
        };
        assert_eq!(candles.len(), 1);
        let bar = candles[0].to_bar();
        assert_eq!(
            (bar.open, bar.close, bar.volume),
            (dec!(65000.5), dec!(65100), dec!(12.5))
        );
        assert_eq!(candles[0].interval, "1h");
        let array = r#"{"channel":"candle","data":[{"t":1,"T":2,"s":"ETH","i":"5m","o":"1","c":"1","h":"1","l":"1","v":"0","n":0}]}"#;
        assert!(
            matches!(parse_ws_message(array).unwrap(), WsMessage::Candles(c) if c[0].coin == "ETH")
        );
        let ack = r#"{"channel":"subscriptionResponse","data":{"method":"subscribe","subscription":{"type":"candle","coin":"BTC","interval":"1h"}}}"#;
        assert_eq!(parse_ws_message(ack).unwrap(), WsMessage::Subscribed);
        assert_eq!(
            parse_ws_message(r#"{"channel":"pong"}"#).unwrap(),
            WsMessage::Pong
        );
        assert_eq!(
            parse_ws_message(r#"{"channel":"error","data":"Invalid subscription"}"#).unwrap(),
            WsMessage::Error("Invalid subscription".to_owned())
        );
        assert_eq!(
            parse_ws_message("Websocket connection established.").unwrap(),
            WsMessage::Other
        );
        match parse_ws_message(r#"{"channel":"candle","data":{"t":1,"T":2,"s":"BTC","i":"1h","o":"x","c":"1","h":"1","l":"1","v":"0","n":0}}"#).unwrap_err() {
            HlError::Decode { what, path, .. } => assert_eq!((what, path.as_str()), ("candle", "o")),
            other => panic!("unexpected {other:?}"),
        }
        // Requests as the exchange documents them.
        let subscribe = WsRequest::Subscribe {
            subscription: WsSubscription::Candle {
                coin: "BTC".to_owned(),
                interval: "1h".to_owned(),
            },
        };
        assert_eq!(
            serde_json::to_string(&subscribe).unwrap(),
            r#"{"method":"subscribe","subscription":{"type":"candle","coin":"BTC","interval":"1h"}}"#
        );
        assert_eq!(
            serde_json::to_string(&WsRequest::Ping).unwrap(),
            r#"{"method":"ping"}"#
        );
    }

    #[test]
    fn bad_decimal_names_its_path() {
        let body =
            br#"[{"t":1,"T":2,"s":"BTC","i":"1h","o":"1","h":"2","l":"x1","c":"1","v":"1","n":1}]"#;
        match parse_candles(body).unwrap_err() {
            HlError::Decode { what, path, .. } => {
                assert_eq!(what, "candleSnapshot");
                assert_eq!(path, "[0].l");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn numbers_where_strings_belong_are_refused() {
        // A price as a JSON number could have gone through a float: refuse it.
        let body =
            br#"[{"t":1,"T":2,"s":"BTC","i":"1h","o":1.5,"h":"2","l":"1","c":"1","v":"1","n":1}]"#;
        let err = parse_candles(body).unwrap_err().to_string();
        assert!(err.contains("[0].o"), "{err}");
    }

    #[test]
    fn zero_size_positions_are_dropped_and_missing_entry_is_an_error() {
        let mut p = PositionWire {
            coin: "ETH".into(),
            szi: dec!(0),
            entry_px: None,
            leverage: Leverage {
                kind: "cross".into(),
                value: 5,
                raw_usd: None,
            },
            liquidation_px: None,
            margin_used: dec!(0),
            position_value: dec!(0),
            return_on_equity: dec!(0),
            unrealized_pnl: dec!(0),
            max_leverage: None,
        };
        assert_eq!(p.to_position("p").unwrap(), None);
        p.szi = dec!(-2);
        let err = p.to_position("assetPositions[3].position").unwrap_err();
        assert!(
            err.to_string()
                .contains("assetPositions[3].position.entryPx"),
            "{err}"
        );
        // short 2 @ entry 100, value 190 → mark 190 / 2 = 95
        p.entry_px = Some(dec!(100));
        p.position_value = dec!(190);
        let pos = p.to_position("p").unwrap().unwrap();
        assert_eq!(
            (pos.side, pos.qty, pos.mark_price),
            (Side::Short, dec!(2), dec!(95))
        );
        // a non-terminating division is rounded to 8 decimals: 100 / 3 = 33.33333333
        p.szi = dec!(3);
        p.position_value = dec!(100);
        let pos = p.to_position("p").unwrap().unwrap();
        assert_eq!((pos.side, pos.mark_price), (Side::Long, dec!(33.33333333)));
    }

    #[test]
    fn fills_without_tid_get_group_index_ids_and_sort_oldest_first() {
        // Newest transaction first; within a transaction, execution order.
        let body = br#"[
          {"coin":"SUI","px":"1.5","sz":"1","side":"A","time":2000,"startPosition":"3","dir":"Close Long","closedPnl":"0.1","hash":"0xbb","oid":7,"crossed":true,"fee":"0.01"},
          {"coin":"SUI","px":"1.4","sz":"1","side":"A","time":2000,"startPosition":"2","dir":"Close Long","closedPnl":"0.1","hash":"0xbb","oid":7,"crossed":true,"fee":"0.01"},
          {"coin":"SUI","px":"1.0","sz":"3","side":"B","time":1000,"startPosition":"0","dir":"Open Long","closedPnl":"0.0","hash":"0xaa","oid":5,"crossed":false,"fee":"-0.001"},
          {"coin":"SUI","px":"0.9","sz":"1","side":"A","time":3000,"startPosition":"1","dir":"Liquidated Cross Long","closedPnl":"-0.1","hash":"0xcc","oid":9,"crossed":true,"fee":"0.02"}
        ]"#;
        let fills = parse_user_fills(body).unwrap();
        let ids: Vec<_> = fills.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["0xaa:5:0", "0xbb:7:0", "0xbb:7:1", "0xcc:9:0"]);
        assert!(fills[3].to_fill().liquidation);
        assert!(!fills[0].to_fill().liquidation);
        assert_eq!(fills[0].to_fill().fee_usd, dec!(-0.001));
        assert_eq!(fills[0].to_fill().price, dec!(1));
    }

    #[test]
    fn tid_is_the_id_and_liquidation_object_marks_the_fill() {
        let body = br#"[{"coin":"BTC","px":"60000.0","sz":"0.1","side":"B","time":5,"startPosition":"-0.1","dir":"Close Short","closedPnl":"-5","hash":"0x00","oid":1,"crossed":true,"fee":"2.1","tid":123456789,"feeToken":"USDC","cloid":"0x00000000000000000000000000000001","liquidation":{"liquidatedUser":"0xabc","markPx":"60010.0","method":"market"}}]"#;
        let fills = parse_user_fills(body).unwrap();
        let f = fills[0].to_fill();
        assert_eq!(f.id, "123456789");
        assert!(f.liquidation);
        assert_eq!(
            f.client_order_id.as_deref(),
            Some("0x00000000000000000000000000000001")
        );
        assert_eq!(
            fills[0].liquidation_info.as_ref().unwrap().mark_px,
            Some(dec!(60010))
        );
    }
}
