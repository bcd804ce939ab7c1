//! Integration tests of the live runner: its CLI, the Hyperliquid broker and the runner, reflection and Hyperliquid paths on PostgreSQL, and the chat coach's server (`serve_*`: real HTTP on PostgreSQL).
//!
//! One test binary for the crate: each module below was its own integration-test binary, and
//! linking one binary instead of several is most of what a rebuild costs on a 2-core machine.

mod alerts_pg;
mod browser;
mod chat_market;
mod chat_page;
mod chat_terminal;
mod cli;
mod common;
mod controls_pg;
mod dashboard_pg;
mod derivatives_pg;
mod events_pg;
mod exit_codes_pg;
mod flag_forms;
mod funding_example_pg;
mod hl_broker;
mod hyperliquid_pg;
mod market_cache_pg;
mod mcp_pg;
mod mcp_serve_pg;
mod memory_cli_pg;
mod model_failures_pg;
mod news_pg;
mod outcomes_pg;
mod pages;
mod parity_pg;
mod reflection_pg;
mod runner_pg;
mod serve_actions;
mod serve_alerts;
mod serve_auth;
mod serve_backtests;
mod serve_chat;
mod serve_cli;
mod serve_controls;
mod serve_conversations;
mod serve_exposure;
mod serve_facts;
mod serve_isolation;
mod serve_lessons;
mod serve_memory;
mod serve_openapi;
mod serve_security;
mod serve_validation;
mod serve_wire;
mod ticks_pg;
