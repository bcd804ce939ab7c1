//! `InfoClient`: read-only queries of `POST {base}/info`.

use chrono::{DateTime, Utc};
use serde::Serialize;
use types::{Bar, Interval};

use crate::error::Result;
use crate::http::{ClientConfig, Transport};
use crate::ids::{Address, Cloid};
use crate::wire::{
    AccountState, ActiveAssetData, Candle, ClearinghouseState, ExtraAgent, FundingRate, HlFill,
    Meta, MetaAndAssetCtxs, OrderLookup, candles_to_bars, parse_active_asset_data, parse_candles,
    parse_clearinghouse_state, parse_extra_agents, parse_funding_history, parse_meta,
    parse_meta_and_asset_ctxs, parse_order_status, parse_user_fills,
};

/// Most fills one `userFills` / `userFillsByTime` response carries.
pub const USER_FILLS_PAGE: usize = 2000;

/// The JSON bodies of the info requests, `{"type": ..., ...}`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum InfoRequest {
    /// `candleSnapshot`: OHLCV candles of one coin and interval.
    CandleSnapshot {
        /// Coin, interval and time range.
        req: CandleRequest,
    },
    /// `meta`: the perpetuals universe (names, lot decimals, max leverage).
    Meta,
    /// `metaAndAssetCtxs`: the universe plus each asset's live context (mark, funding, OI).
    MetaAndAssetCtxs,
    /// `fundingHistory`: hourly funding rates of one coin.
    #[serde(rename_all = "camelCase")]
    FundingHistory {
        /// The coin, e.g. `BTC`.
        coin: String,
        /// Start, in milliseconds since the Unix epoch.
        start_time: i64,
        /// End, in milliseconds since the Unix epoch; `None` = up to now.
        #[serde(skip_serializing_if = "Option::is_none")]
        end_time: Option<i64>,
    },
    /// `clearinghouseState`: a user's margin summary and open positions.
    ClearinghouseState {
        /// The account's address.
        user: Address,
    },
    /// `userFills`: a user's most recent fills (at most [`USER_FILLS_PAGE`]).
    UserFills {
        /// The account's address.
        user: Address,
    },
    /// `userFillsByTime`: a user's fills in a time range (at most [`USER_FILLS_PAGE`]).
    #[serde(rename_all = "camelCase")]
    UserFillsByTime {
        /// The account's address.
        user: Address,
        /// Start, in milliseconds since the Unix epoch.
        start_time: i64,
        /// End, in milliseconds since the Unix epoch; `None` = up to now.
        #[serde(skip_serializing_if = "Option::is_none")]
        end_time: Option<i64>,
    },
    /// `orderStatus`: the state of one order.
    OrderStatus {
        /// The account's address.
        user: Address,
        /// The order, by exchange or client order id.
        oid: OrderRef,
    },
    /// `activeAssetData`: a user's leverage, margin mode and trade limits on one coin.
    ActiveAssetData {
        /// The account's address.
        user: Address,
        /// The coin, e.g. `BTC`.
        coin: String,
    },
    /// `extraAgents`: the API (agent) wallets a master account approved.
    ExtraAgents {
        /// The master account's address.
        user: Address,
    },
}

/// Which order `orderStatus` asks about: the exchange's order id or the client order id (the
/// `oid` field takes either).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum OrderRef {
    /// The exchange's order id.
    Oid(u64),
    /// The client order id the order was sent with.
    Cloid(Cloid),
}

/// `{"coin", "interval", "startTime", "endTime"}` of a candle snapshot.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CandleRequest {
    /// The coin, e.g. `BTC`.
    pub coin: String,
    /// The candle interval in Hyperliquid's spelling (`5m`, `1h`, `1d`, ...).
    pub interval: String,
    /// Start, in milliseconds since the Unix epoch.
    pub start_time: i64,
    /// End, in milliseconds since the Unix epoch.
    pub end_time: i64,
}

/// A client of the info endpoint. Cheap to clone (shares the connection pool).
#[derive(Debug, Clone)]
pub struct InfoClient {
    http: Transport,
}

impl InfoClient {
    /// A client for `config.base_url`.
    ///
    /// # Errors
    /// [`HlError::BaseUrl`](crate::HlError::BaseUrl) for a URL that is not http(s);
    /// [`HlError::Transport`](crate::HlError::Transport) if the HTTP client cannot be built.
    pub fn new(config: &ClientConfig) -> Result<Self> {
        Ok(InfoClient {
            http: Transport::new(config)?,
        })
    }

    /// Sends any info request and returns the raw 2xx body.
    ///
    /// # Errors
    /// Transport, HTTP status and retry errors (see [`HlError`](crate::HlError)).
    pub async fn raw(&self, request: &InfoRequest) -> Result<Vec<u8>> {
        self.http.post("info", request).await
    }

    /// Candles of `coin` whose open time lies in `[start, end]`, as the exchange sends them.
    ///
    /// # Errors
    /// Transport/status/retry errors, or [`HlError::Decode`](crate::HlError::Decode).
    pub async fn candles(
        &self,
        coin: &str,
        interval: Interval,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<Candle>> {
        let body = self
            .raw(&InfoRequest::CandleSnapshot {
                req: CandleRequest {
                    coin: coin.to_owned(),
                    interval: interval.as_str().to_owned(),
                    start_time: start.timestamp_millis(),
                    end_time: end.timestamp_millis(),
                },
            })
            .await?;
        parse_candles(&body)
    }

    /// Bars of `coin` in `[start, end]`, oldest first, one per open time. The newest bar may
    /// still be forming; show a bar only once its close time has passed.
    ///
    /// # Errors
    /// Transport/status/retry errors, or [`HlError::Decode`](crate::HlError::Decode).
    pub async fn candle_snapshot(
        &self,
        coin: &str,
        interval: Interval,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<Bar>> {
        Ok(candles_to_bars(
            &self.candles(coin, interval, start, end).await?,
        ))
    }

    /// The perp universe.
    ///
    /// # Errors
    /// Transport/status/retry errors, or [`HlError::Decode`](crate::HlError::Decode).
    pub async fn meta(&self) -> Result<Meta> {
        parse_meta(&self.raw(&InfoRequest::Meta).await?)
    }

    /// The perp universe with each asset's live context (mark, oracle, funding, OI, volume).
    ///
    /// # Errors
    /// Transport/status/retry errors, [`HlError::Decode`](crate::HlError::Decode) or
    /// [`HlError::Invalid`](crate::HlError::Invalid).
    pub async fn meta_and_asset_ctxs(&self) -> Result<MetaAndAssetCtxs> {
        parse_meta_and_asset_ctxs(&self.raw(&InfoRequest::MetaAndAssetCtxs).await?)
    }

    /// Funding periods of `coin` from `start` (to `end`, or now), oldest first.
    ///
    /// # Errors
    /// Transport/status/retry errors, or [`HlError::Decode`](crate::HlError::Decode).
    pub async fn funding_history(
        &self,
        coin: &str,
        start: DateTime<Utc>,
        end: Option<DateTime<Utc>>,
    ) -> Result<Vec<FundingRate>> {
        let body = self
            .raw(&InfoRequest::FundingHistory {
                coin: coin.to_owned(),
                start_time: start.timestamp_millis(),
                end_time: end.map(|e| e.timestamp_millis()),
            })
            .await?;
        parse_funding_history(&body)
    }

    /// The user's perp account as the exchange reports it.
    ///
    /// # Errors
    /// Transport/status/retry errors, or [`HlError::Decode`](crate::HlError::Decode).
    pub async fn clearinghouse_state(&self, user: Address) -> Result<ClearinghouseState> {
        parse_clearinghouse_state(&self.raw(&InfoRequest::ClearinghouseState { user }).await?)
    }

    /// The user's account in the workspace's terms (equity, free margin, positions).
    ///
    /// # Errors
    /// As [`InfoClient::clearinghouse_state`], plus [`HlError::Invalid`](crate::HlError::Invalid)
    /// for an unusable position.
    pub async fn account_state(&self, user: Address) -> Result<AccountState> {
        self.clearinghouse_state(user).await?.account_state()
    }

    /// The user's most recent fills (the exchange caps how many), oldest first.
    ///
    /// # Errors
    /// Transport/status/retry errors, or [`HlError::Decode`](crate::HlError::Decode).
    pub async fn user_fills(&self, user: Address) -> Result<Vec<HlFill>> {
        parse_user_fills(&self.raw(&InfoRequest::UserFills { user }).await?)
    }

    /// The status of one of the user's orders, by order id or client order id.
    ///
    /// # Errors
    /// Transport/status/retry errors, or [`HlError::Decode`](crate::HlError::Decode).
    pub async fn order_status(&self, user: Address, oid: OrderRef) -> Result<OrderLookup> {
        parse_order_status(&self.raw(&InfoRequest::OrderStatus { user, oid }).await?)
    }

    /// The user's leverage and margin mode on `coin` (and its trade limits), open position or
    /// not.
    ///
    /// # Errors
    /// Transport/status/retry errors, [`HlError::Decode`](crate::HlError::Decode) or
    /// [`HlError::Invalid`](crate::HlError::Invalid).
    pub async fn active_asset_data(&self, user: Address, coin: &str) -> Result<ActiveAssetData> {
        parse_active_asset_data(
            &self
                .raw(&InfoRequest::ActiveAssetData {
                    user,
                    coin: coin.to_owned(),
                })
                .await?,
        )
    }

    /// The API (agent) wallets `master` approved, with their expiry.
    ///
    /// # Errors
    /// Transport/status/retry errors, or [`HlError::Decode`](crate::HlError::Decode).
    pub async fn extra_agents(&self, master: Address) -> Result<Vec<ExtraAgent>> {
        parse_extra_agents(&self.raw(&InfoRequest::ExtraAgents { user: master }).await?)
    }

    /// The user's fills from `start` (to `end`, or now), oldest first. The exchange returns at
    /// most 2000 fills per request ([`USER_FILLS_PAGE`]): page
    /// by asking again from the newest fill's time.
    ///
    /// # Errors
    /// Transport/status/retry errors, or [`HlError::Decode`](crate::HlError::Decode).
    pub async fn user_fills_by_time(
        &self,
        user: Address,
        start: DateTime<Utc>,
        end: Option<DateTime<Utc>>,
    ) -> Result<Vec<HlFill>> {
        let body = self
            .raw(&InfoRequest::UserFillsByTime {
                user,
                start_time: start.timestamp_millis(),
                end_time: end.map(|e| e.timestamp_millis()),
            })
            .await?;
        parse_user_fills(&body)
    }
}
