//! Integration tests of the chat coach: its tool catalog, exposure and trades tools, and its memory across conversations.
//!
//! One test binary for the crate: each module below was its own integration-test binary, and
//! linking one binary instead of several is most of what a rebuild costs on a 2-core machine.

mod actions;
mod catalog;
mod conversation;
mod exposure;
mod facts_current;
mod market;
mod memory;
mod modes;
mod trades_detail;
mod turn_endings;
