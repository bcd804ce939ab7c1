//! Integration tests of the agent runtime: context assembly (snapshots and properties), the
//! model loop, engine authority, the sma-cross baseline and the `mock` feature.
//!
//! One test binary for the crate: each module below was its own integration-test binary, and
//! linking one binary instead of several is most of what a rebuild costs on a 2-core machine.

mod bounds;
mod common;
mod context;
mod engine_authority;
mod mock;
mod props;
mod run;
mod sma_cross;
