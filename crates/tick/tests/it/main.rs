//! Integration tests of the tick: absurd broker accounts, the paper account's reads, the
//! `annotate` tool, flattening a stopped deployment's positions, the `mock` feature and the outcome memory's window convention. (The
//! backtest's tests, and those that compare a live path with it, are the `backtest` crate's.)
//!
//! One test binary for the crate: each module below was its own integration-test binary, and
//! linking one binary instead of several is most of what a rebuild costs on a 2-core machine.

mod absurd_account;
mod account_reads;
mod annotate_tool;
mod common;
mod flatten;
mod mock;
mod ticks_export;
mod window_convention;
