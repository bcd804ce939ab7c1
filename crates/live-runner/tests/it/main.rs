//! Integration tests of the live runner: its CLI, the Hyperliquid broker and the runner, reflection and Hyperliquid paths on PostgreSQL.
//!
//! One test binary for the crate: each module below was its own integration-test binary, and
//! linking one binary instead of several is most of what a rebuild costs on a 2-core machine.

mod cli;
mod common;
mod events_pg;
mod hl_broker;
mod hyperliquid_pg;
mod outcomes_pg;
mod reflection_pg;
mod runner_pg;
