//! Market data from files: what `sim-worker` replays and what tests feed the ledger.
//!
//! - Bars: the backtesting.py CSV layout (unnamed timestamp column, Open, High, Low, Close,
//!   Volume) and Hyperliquid `candleSnapshot` JSON; [`resample`] builds higher timeframes.
//! - Fills: a plain CSV layout and Hyperliquid `userFills` JSON, trimmed to start flat.
//!
//! Every error names the file and, where there is one, the line. Prices stay exact decimals:
//! numbers are parsed from their text, never through floating point. This crate reads files;
//! it holds no trading logic.

mod bars;
mod error;
mod fills;

pub use bars::{detect_interval, load_bars, load_bars_csv, load_bars_hyperliquid, resample};
pub use error::DataError;
pub use fills::{FillsFormat, LoadedFills, load_fills};
