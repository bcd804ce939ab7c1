//! Where `serve` and `chat` get the market data of a chat turn ([`chat::ChatMarket`]): the bars
//! the turn needs ([`chat::bar_needs`]: the windows around past events its open positions may
//! be asked about, the recent bars of its symbols) and its symbols' funding and open interest.
//!
//! - [`HyperliquidMarket`] (the default, `--hl-url`): `candleSnapshot` requests for the
//!   windows, cached in memory per (symbol, interval, window) with a bounded size and a time to
//!   live, so a turn asking again for the windows of an earlier one sends nothing; at most
//!   [`MAX_CANDLES_PER_REQUEST`] candles a request and [`MAX_CANDLE_REQUESTS_PER_TURN`]
//!   requests a turn (the newest windows first); `metaAndAssetCtxs` for the current funding
//!   rate and open interest, cached for [`DERIVATIVES_TTL`].
//! - [`BarDirectory`] (`--bars DIR`): bar files, offline; no funding or open interest.
//!
//! Neither fails a turn: what could not be served is reported per window
//! ([`chat::LoadedBars::unavailable`]) and logged, and the turn's tools say what they could not
//! measure.

mod files;
mod hl;

pub use files::{BarDirectory, bar_file_names};
pub use hl::{
    CLOSED_WINDOW_TTL, DERIVATIVES_TTL, FRESH_WINDOW_TTL, HyperliquidMarket, MAX_CACHED_BARS,
    MAX_CANDLE_REQUESTS_PER_TURN, MAX_CANDLES_PER_REQUEST, chat_client_config,
};

/// Why a chat market source could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum MarketSourceError {
    /// `--bars` is not a readable directory.
    #[error("--bars {path}: {reason}")]
    BarDirectory {
        /// The path given.
        path: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// The Hyperliquid client could not be built (a base URL that is not http(s)).
    #[error("--hl-url: {0}")]
    Client(#[from] hyperliquid::HlError),
}
