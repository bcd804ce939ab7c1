//! Integration tests of the tick: the EURUSD backtest, carried state and reflection, absurd
//! broker accounts, cost properties and the `mock` feature.
//!
//! One test binary for the crate: each module below was its own integration-test binary, and
//! linking one binary instead of several is most of what a rebuild costs on a 2-core machine.

mod absurd_account;
mod account_reads;
mod annotate_tool;
mod backtest;
mod blind;
mod carry_and_reflect;
mod common;
mod costs_prop;
mod mock;
mod outcome_memory;
mod recall_memory;
mod snapshot_text;
mod stops;
mod window_convention;
