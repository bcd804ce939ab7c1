//! Market data from files: what `sim-worker` replays and what tests feed the ledger.
//!
//! - Bars: the backtesting.py CSV layout (unnamed timestamp column, Open, High, Low, Close,
//!   Volume) and Hyperliquid `candleSnapshot` JSON; [`resample`] builds higher timeframes.
//! - Fills: a plain CSV layout and Hyperliquid `userFills` JSON, trimmed to start flat.
//! - Market events: a calendar as JSON or CSV ([`load_events`]).
//! - Funding rates: Hyperliquid `fundingHistory` JSON or a `time,rate[,premium]` CSV
//!   ([`load_funding`]).
//! - The exchange's maximum leverage per coin: Hyperliquid `meta` or `metaAndAssetCtxs` JSON
//!   ([`load_exchange_max_leverage`]).
//!
//! Every error names the file and, where there is one, the line. Prices stay exact decimals:
//! numbers are parsed from their text, never through floating point. This crate reads files;
//! it holds no trading logic.
//!
//! ```
//! use market_data::{detect_interval, load_bars, resample};
//! use types::Interval;
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/data/EURUSD.csv");
//! let hourly = load_bars(path.as_ref())?;
//! assert_eq!(detect_interval(&hourly), Some(Interval::H1));
//! let four_hourly = resample(&hourly, Interval::H4);
//! assert!(four_hourly.len() * 4 >= hourly.len());
//! assert_eq!(four_hourly[0].open, hourly[0].open);
//! # Ok::<(), market_data::DataError>(())
//! ```

mod bars;
mod error;
mod events;
mod fills;
mod funding;
mod meta;

pub use bars::{
    detect_interval, load_bars, load_bars_csv, load_bars_hyperliquid, parse_bars, resample,
};
pub use error::DataError;
pub use events::load_events;
pub use fills::{FillsFormat, LoadedFills, load_fills};
pub use funding::{FundingPrint, load_funding};
pub use meta::load_exchange_max_leverage;
