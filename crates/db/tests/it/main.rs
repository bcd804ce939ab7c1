//! Integration tests of the stores: the contract suite on SQLite and PostgreSQL, connecting, row-level security and the `mock` feature.
//!
//! One test binary for the crate: each module below was its own integration-test binary, and
//! linking one binary instead of several is most of what a rebuild costs on a 2-core machine.

mod actions;
mod alerts;
mod claim_index;
mod common;
mod connect;
mod contract;
mod controls;
mod conversations;
mod held_lessons;
mod jobs;
mod mock;
mod outcome_memory;
mod outcome_recall;
mod outcome_regrade;
mod prompt_lines;
mod recall_migration;
mod rls;
mod sqlite_baseline;
mod stop_target_migration;
mod ticks_read;
