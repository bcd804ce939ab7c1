//! Integration tests of the Hyperliquid adapter: signing vectors, number formatting and the info and exchange clients against a mock server.
//!
//! One test binary for the crate: each module below was its own integration-test binary, and
//! linking one binary instead of several is most of what a rebuild costs on a 2-core machine.

mod exchange_client;
mod format_props;
mod info_client;
mod signing_vectors;
