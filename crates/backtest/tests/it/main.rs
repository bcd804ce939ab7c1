//! Integration tests of the backtest: the EURUSD run (fills, determinism, reflection, point in
//! time, batches written behind), blind runs, stops, the outcome memory and its recall, the
//! stored texts, cost properties, and the live runner's halves of the tick compared with it.
//!
//! One test binary for the crate: linking one binary instead of several is most of what a
//! rebuild costs on a 2-core machine.

mod blind;
mod carry_and_reflect;
mod common;
mod costs_prop;
mod eurusd;
mod outcome_memory;
mod recall_memory;
mod snapshot_text;
mod stops;
mod ticks_read;
