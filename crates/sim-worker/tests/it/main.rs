//! Integration tests of the `sim-worker` binary's subcommands: run, skill, ledger, notes and the
//! outcome memory (`annotate`, `memory-stats`).
//!
//! One test binary for the crate: each module below was its own integration-test binary, and
//! linking one binary instead of several is most of what a rebuild costs on a 2-core machine.

mod ab_windows_cli;
mod arena_cli;
mod blind_cli;
mod budget_cli;
mod cassette_cli;
mod common;
mod flag_forms_cli;
mod funding_cli;
mod jobs_cli;
mod ledger_cli;
mod lessons_cli;
mod mcp_cli;
mod mcp_serve;
mod memory_cli;
mod meta_cli;
mod model_failures_cli;
mod notes_cli;
mod page;
mod parity_cli;
#[cfg(target_os = "linux")]
mod placement_cli;
mod run_cli;
mod score_cli;
mod skill_cli;
mod text_styles_cli;
mod ticks_cli;
mod xbackend_cli;
