//! Integration tests of the memory ledger: recorded cases, Hyperliquid fills, property tests and the rendered memory sections.
//!
//! One test binary for the crate: each module below was its own integration-test binary, and
//! linking one binary instead of several is most of what a rebuild costs on a 2-core machine.

mod cases;
mod common;
mod hyperliquid;
mod props;
mod render;
