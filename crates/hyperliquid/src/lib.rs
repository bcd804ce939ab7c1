//! Hyperliquid exchange adapter: the live runner's only way to Hyperliquid.
//!
//! What it owns:
//! - the wire types of the info API (`POST {base}/info`: `candleSnapshot`, `meta`,
//!   `metaAndAssetCtxs`, `fundingHistory`, `clearinghouseState`, `userFills`, `orderStatus`, `activeAssetData`, `extraAgents`) and their
//!   conversion into the workspace's [`types`] ([`types::Bar`], [`types::Position`],
//!   [`types::Fill`], [`types::PortfolioSnapshot`] via [`AccountState`]) — see [`wire`];
//! - [`InfoClient`], an async reqwest client with a timeout and bounded retries (exponential
//!   backoff with jitter on 429, 5xx and connection errors) — see [`http`];
//! - L1 action signing exactly as the official SDKs do it (msgpack action hash, phantom agent,
//!   EIP-712, secp256k1 r/s/v) — see [`signing`];
//! - [`ExchangeClient`]: signed orders (limit / IOC, reduce-only, client order id), cancels by
//!   order id or client order id, `updateLeverage` (leverage and margin mode per asset), typed
//!   per-order statuses; deterministic client order ids
//!   ([`cloid_for`]) so a retried tick never places a second order;
//! - `ws::CandleFeed` (feature `ws`): the WebSocket candle subscriptions on one connection,
//!   reconnected after a loss, read into the same [`Candle`] as `candleSnapshot`;
//! - the tick/lot rules for prices and sizes on the wire, in `Decimal` — see [`format`](mod@format).
//!
//! What it never does: no database, no prompt text, no risk decisions (the execution engine
//! decides what trades; this crate only carries it out), no floats in prices, sizes or money,
//! no reading of the wall clock (nonces come from the [`types::Clock`] it is given), and it
//! never logs or prints a private key (a [`Signer`]'s `Debug` shows only its address).
//!
//! Cargo features: `client` ([`http`], [`info`]: reqwest, tokio) and `signing` ([`signing`]:
//! k256, sha3, rmp-serde), both on by default — [`exchange`] needs both —, and `ws` (off by
//! default: the WebSocket candle feed, `ws::CandleFeed`, over tokio-tungstenite). Without them the crate
//! is the wire types and parsers ([`wire`], [`ids`], [`format`](mod@format)) — what a reader of saved
//! Hyperliquid files needs.
//!
//! Conventions: prices, sizes and money are `rust_decimal::Decimal` parsed from the wire's
//! strings; times are UTC; fills are returned oldest first; positions are sorted by symbol.
//!
//! An order as the live broker builds and signs it (sending it is `ExchangeClient::send`; the
//! example stays offline and checks the signature the way the exchange does):
//!
//! ```
//! use chrono::{TimeZone, Utc};
//! use hyperliquid::signing::{BulkOrder, Grouping, sign_l1_action};
//! use hyperliquid::{Action, AssetInfo, Network, OrderRequest, Signer, cloid_for, recover_signer};
//! use rust_decimal::Decimal;
//! use types::OrderSide;
//! use uuid::Uuid;
//!
//! let signer = Signer::from_hex(&"01".repeat(32))?; // a throwaway key
//! let at = Utc.with_ymd_and_hms(2026, 6, 4, 10, 0, 0).unwrap();
//! let btc = AssetInfo { index: 0, sz_decimals: 5, max_leverage: 40 };
//! // A marketable IOC 5 % through the mark, under the tick's deterministic client order id.
//! let cloid = cloid_for(Uuid::from_u128(7), at);
//! let order = OrderRequest::ioc_with_slippage(
//!     btc, OrderSide::Buy, Decimal::new(123_456, 8), Decimal::from(65_000), Decimal::new(5, 2),
//!     false, Some(cloid),
//! )?;
//! let wire = order.to_wire()?;
//! assert_eq!((wire.sz.as_str(), wire.limit_px.as_str()), ("0.00123", "68250"));
//!
//! let action = Action::Order(BulkOrder { orders: vec![wire], grouping: Grouping::Na });
//! let nonce = 1_780_567_200_000;
//! let signed = sign_l1_action(&signer, &action, nonce, None, Network::Testnet)?;
//! let by = recover_signer(&action, nonce, None, Network::Testnet, &signed.signature)?;
//! assert_eq!(by, signer.address());
//! # Ok::<(), hyperliquid::HlError>(())
//! ```

pub mod error;
#[cfg(all(feature = "client", feature = "signing"))]
pub mod exchange;
pub mod format;
#[cfg(feature = "client")]
pub mod http;
pub mod ids;
#[cfg(feature = "client")]
pub mod info;
#[cfg(feature = "signing")]
pub mod signing;
pub mod wire;
#[cfg(feature = "ws")]
pub mod ws;

pub use error::{HlError, Result};
#[cfg(all(feature = "client", feature = "signing"))]
pub use exchange::{
    ExchangeClient, ExchangeRequest, OrderRequest, OrderStatus, TriggerOrderRequest, cloid_for,
    cloid_for_leg, parse_exchange_response,
};
#[cfg(feature = "client")]
pub use http::{ClientConfig, DEFAULT_RETRY, RetryPolicy};
pub use ids::{Address, Cloid, MAINNET_URL, Network, TESTNET_URL};
#[cfg(feature = "client")]
pub use info::{CandleRequest, InfoClient, InfoRequest, OrderRef, USER_FILLS_PAGE};
#[cfg(feature = "signing")]
pub use signing::{Action, Grouping, Signature, Signer, Tif, Tpsl, UpdateLeverage, recover_signer};
pub use wire::{
    AccountState, ActiveAssetData, AssetCtx, AssetInfo, AssetMeta, Candle, ClearinghouseState,
    ExtraAgent, FundingRate, HlFill, HlSide, Leverage, Meta, MetaAndAssetCtxs, OrderInfo,
    OrderLookup, OrderState,
};
#[cfg(feature = "ws")]
pub use ws::{CandleFeed, FeedConfig, FeedEvent, ws_url};
